/* lower_split.c - tensors, Slices and Concats for the splits of
 * lower_fit.c, lower_kin.c and lower_wsplit.c (lib/back/lower_split.h). */
#include <stdlib.h>
#include <string.h>

#include "back/lower_split.h"
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

void split_concat(struct ir_graph *g, int i, const int *parts, int n, int64_t axis)
{
	struct ir_op *o = &g->ops[i];
	op_clear_attrs(o);
	o->type = OP_CONCAT;
	op_set_inputs(o, n, parts);
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
