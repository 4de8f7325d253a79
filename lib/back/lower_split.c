/* lower_split.c - tensors, Slices and Concats for the splits of
 * lower_fit.c, lower_kin.c and lower_wsplit.c (lib/back/lower_split.h). */
#include <stdlib.h>
#include <string.h>

#include "back/codegen.h"
#include "back/lower_split.h"
#include "back/lower_wide.h"
#include "chip/isa.h"
#include "ir/base.h"
#include "ir/op.h"
#include "quant/quant.h"

int split_new_tensor(struct ir_graph *g, const char *base, const struct ir_tensor *like, int rank,
		     const int64_t *shape)
{
	/* like may point into g->tensors, which adding a tensor moves */
	enum ir_dtype dt = like->dtype;
	float scale = like->scale;
	int zp = like->zero_point;
	char *name = graph_unique_name(g, base, 1);
	int t = graph_add_tensor(g, name, dt, rank, shape);
	free(name);
	g->tensors[t].scale = scale;
	g->tensors[t].zero_point = zp;
	return t;
}

int split_part_tensor(struct ir_graph *g, int t, int axis, int64_t len, const char *tag, int64_t at)
{
	const struct ir_tensor *x = &g->tensors[t];
	int64_t shape[IR_MAX_RANK];
	memcpy(shape, x->shape, sizeof shape);
	shape[axis < 0 ? axis + x->rank : axis] = len;
	char base[512];
	snprintf(base, sizeof base, "%s_%s%lld", x->name, tag, (long long)at);
	return split_new_tensor(g, base, x, x->rank, shape);
}

int split_slice(struct ir_graph *g, int x, int axis, int64_t k0, int64_t k1, const char *tag,
		kin_note_fn note, void *ctx, int owner)
{
	int p = split_part_tensor(g, x, axis, k1 - k0, tag, k0);
	int k = graph_add_op(g, OP_SLICE, g->tensors[p].name, 1, &x, 1, &p);
	int64_t st = k0, en = k1, ax = axis, one = 1;
	op_set_ints(&g->ops[k], "starts", 1, &st);
	op_set_ints(&g->ops[k], "ends", 1, &en);
	op_set_ints(&g->ops[k], "axes", 1, &ax);
	op_set_ints(&g->ops[k], "steps", 1, &one);
	note(ctx, k, owner);
	return p;
}

int split_part_op(struct ir_graph *g, int i, const int *in, int n, int y)
{
	int k = graph_add_op(g, g->ops[i].type, g->tensors[y].name, n, in, 1, &y);
	op_copy_attrs(&g->ops[k], &g->ops[i]);
	return k;
}

/* Concat op i's attributes: axis, and unit requantisation of n parts. */
static void concat_attrs(struct ir_graph *g, int i, int n, int64_t axis)
{
	struct ir_op *o = &g->ops[i];
	op_set_int(o, "axis", axis);
	if (quant_is_q(g->tensors[o->out[0]].dtype)) {
		int64_t *mul = xmalloc(sizeof *mul * (size_t)n), *shf = xmalloc(sizeof *shf * (size_t)n);
		for (int p = 0; p < n; p++) {
			mul[p] = (int64_t)1 << 30;
			shf[p] = 30;
		}
		op_set_ints(o, "multipliers", n, mul);
		op_set_ints(o, "shifts", n, shf);
		free(mul);
		free(shf);
	}
}

void split_concat(struct ir_graph *g, int i, const int *parts, int n, int64_t axis)
{
	struct ir_op *o = &g->ops[i];
	op_clear_attrs(o);
	o->type = OP_CONCAT;
	op_set_inputs(o, n, parts);
	o->n_out = 1;
	concat_attrs(g, i, n, axis);
}

int split_concat_new(struct ir_graph *g, int y, const int *parts, int n, int64_t axis)
{
	int k = graph_add_op(g, OP_CONCAT, g->tensors[y].name, n, parts, 1, &y);
	concat_attrs(g, k, n, axis);
	return k;
}

int split_fits(const struct ir_graph *g, const struct chip *c, int i,
	       const int64_t *const *shape)
{
	const struct ir_op *op = &g->ops[i];
	int n = op->n_in + op->n_out;
	struct ir_graph *s = graph_new(g->dialect, g->stage);
	s->mode = g->mode;
	int *map = xmalloc(sizeof *map * (size_t)(n + 1));
	for (int j = 0; j < n; j++) {
		int t = j < op->n_in ? op->in[j] : op->out[j - op->n_in];
		map[j] = -1;
		if (t < 0)
			continue;
		/* an operand twice (Mul(x, x)) is one tensor */
		for (int q = 0; q < j && map[j] < 0; q++)
			if ((q < op->n_in ? op->in[q] : op->out[q - op->n_in]) == t)
				map[j] = map[q];
		if (map[j] >= 0)
			continue;
		const struct ir_tensor *x = &g->tensors[t];
		map[j] = graph_add_tensor(s, x->name, x->dtype, x->rank,
					  shape && shape[j] ? shape[j] : x->shape);
		struct ir_tensor *y = &s->tensors[map[j]];
		y->scale = x->scale;
		y->zero_point = x->zero_point;
		y->qdtype = x->qdtype;
		/* the payload is only looked at, never read: borrowed */
		y->data = x->data;
		y->nbytes = x->data ? tensor_bytes(y) : 0;
	}
	int k = graph_add_op(s, op->type, op->name, op->n_in, map, op->n_out, map + op->n_in);
	op_copy_attrs(&s->ops[k], op);
	s->ops[k].place = op->place;
	int rc = codegen_op_fits(s, c, k);
	if (rc < 0 && op->n_in + op->n_out > ISA_MAX_OPERANDS) {
		/* too wide for a command: judged as lower_split_wide makes it,
		 * the narrowed op the last of its type */
		err_set("%s", "");
		if (lower_split_wide(s) == 0)
			for (int q = s->n_ops - 1; q >= 0; q--)
				if (s->ops[q].type == op->type) {
					rc = codegen_op_fits(s, c, q);
					break;
				}
	}
	free(map);
	graph_free(s);
	return rc;
}
