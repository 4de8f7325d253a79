/* pass_fold_const.c - fold-const: an op whose inputs are all weights (or
 * that reads only static shapes: Shape, Size, EyeLike; or a Gather of the
 * static extents of a Shape) is run once with its float reference kernel,
 * and its outputs become weights; the op goes.  Outputs
 * other than f32 need the op's run_const kernel (Add and Mul have one).  Outputs over
 * FOLD_MAX_BYTES stay computed at run time.
 */
#include <stdlib.h>
#include <string.h>

#include "ir/base.h"
#include "ir/convert.h"
#include "ir/op.h"
#include "passes/passes.h"

#define FOLD_MAX_BYTES (64 << 20)

/* A Gather of constant indices from Shape(x) of a dynamic x that picks
 * only static extents of x (PyTorch's x.size(1) of a tensor whose first
 * dimension is dynamic): those extents, as a weight.  1 when folded. */
static int fold_static_extents(struct ir_graph *g, int i)
{
	struct ir_op *op = &g->ops[i];
	const struct ir_tensor *ix = op->n_in > 1 && op->in[1] >= 0 ? &g->tensors[op->in[1]] : NULL;
	struct ir_tensor *y = &g->tensors[op->out[0]];
	if (op->type != OP_GATHER || !ix || !ix->data || ix->rank > 1 || y->dyn ||
	    g->tensors[op->in[0]].data || op_int(op, "axis", 0) != 0)
		return 0;
	int p = i - 1;
	while (p >= 0 && (g->ops[p].type == OP_COUNT || g->ops[p].n_out != 1 ||
			  g->ops[p].out[0] != op->in[0]))
		p--;
	if (p < 0 || g->ops[p].type != OP_SHAPE)
		return 0;
	const struct ir_tensor *x = &g->tensors[g->ops[p].in[0]];
	int64_t b = op_int(&g->ops[p], "start", 0), e = op_int(&g->ops[p], "end", x->rank);
	b = b < 0 ? b + x->rank : b;
	e = e < 0 ? e + x->rank : e;
	b = b < 0 ? 0 : b > x->rank ? x->rank : b;
	e = e < b ? b : e > x->rank ? x->rank : e;
	int64_t n = tensor_numel(ix), len = e - b;
	int64_t *v = xmalloc(sizeof *v * (size_t)(n + 1));
	for (int64_t k = 0; k < n; k++) {
		int64_t j = dtype_get_int(ix->data, ix->dtype, k);
		j = j < 0 ? j + len : j;
		if (j < 0 || j >= len || (x->dyn >> (b + j) & 1)) {
			free(v);
			return 0;
		}
		v[k] = x->shape[b + j];
	}
	tensor_set_data(y, v, sizeof *v * (size_t)n);
	free(v);
	op->type = OP_COUNT;
	return 1;
}

int pass_fold_op(struct ir_graph *g, int i, size_t max_bytes)
{
	struct ir_op *op = &g->ops[i];
	if (fold_static_extents(g, i))
		return 1;
	/* Shape, Size and EyeLike read only a shape: a static one */
	int shape_only = (op->type == OP_SHAPE || op->type == OP_SIZE || op->type == OP_EYELIKE) &&
			 !g->tensors[op->in[0]].dyn;
	for (int j = 0; j < op->n_in && !shape_only; j++)
		if (op->in[j] >= 0 && !g->tensors[op->in[j]].data)
			return 0;
	int (*run)(struct kern *) = op_defs[op->type]->run_f32;
	int ints = 0;
	size_t total = 0;
	for (int j = 0; j < op->n_out; j++) {
		const struct ir_tensor *t = &g->tensors[op->out[j]];
		ints |= t->dtype != DT_F32;
		total += tensor_bytes(t);
	}
	if (ints && op_defs[op->type]->run_const)
		run = op_defs[op->type]->run_const;
	if (!run || total > max_bytes)
		return 0;
	void **vals = xcalloc((size_t)g->n_tensors, sizeof *vals);
	for (int j = 0; j < op->n_in; j++)
		if (op->in[j] >= 0)
			vals[op->in[j]] = g->tensors[op->in[j]].data;
	for (int j = 0; j < op->n_out; j++) {
		size_t nb = tensor_bytes(&g->tensors[op->out[j]]);
		vals[op->out[j]] = xaligned(nb ? nb : 1);
		memset(vals[op->out[j]], 0, nb ? nb : 1);
	}
	struct kern k;
	kern_from_graph(&k, g, op, vals);
	int rc = run(&k);
	for (int j = 0; j < op->n_out; j++) {
		struct ir_tensor *t = &g->tensors[op->out[j]];
		if (rc < 0) {
			free(vals[op->out[j]]);
			continue;
		}
		/* a dynamic output (NonZero's ...) takes the extents its kernel gave */
		if (t->dyn) {
			memcpy(t->shape, k.out[j].shape, sizeof t->shape);
			t->dyn = 0;
		}
		t->data = vals[op->out[j]];
		t->nbytes = tensor_bytes(t);
		t->owns_data = 1;
	}
	kern_done(&k);
	free(vals);
	if (rc < 0)
		return -1;
	op->type = OP_COUNT;
	return 1;
}

/* An op that reads at least one tensor, folded when constant. */
static int fold_pattern(struct ir_graph *g, int i)
{
	const struct ir_op *op = &g->ops[i];
	int any = 0;
	for (int j = 0; j < op->n_in; j++)
		any |= op->in[j] >= 0;
	return any ? pass_fold_op(g, i, FOLD_MAX_BYTES) : 0;
}

/* One pass in graph order folds whole chains: each op sees its producers
 * already folded. */
int pass_fold_const(struct ir_graph *g)
{
	int n = 0;
	for (int i = 0; i < g->n_ops; i++) {
		if (g->ops[i].type == OP_COUNT)
			continue;
		int r = fold_pattern(g, i);
		if (r < 0)
			return -1;
		n += r;
	}
	if (n)
		graph_compact(g);
	return n;
}
