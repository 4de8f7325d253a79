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
	struct ir_tensor *y = &g->tensors[op->out[0]];
	int64_t v[IR_MAX_RANK], n = tensor_numel(y);
	if (op->type != OP_GATHER || y->dyn || y->data || n > IR_MAX_RANK ||
	    known_values(g, op->out[0], v) != (n ? (1u << n) - 1 : 0u))
		return 0;
	tensor_set_data(y, v, sizeof *v * (size_t)n);
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
