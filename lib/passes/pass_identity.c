/* pass_identity.c - remove-identity: drop ops that pass their input through
 * unchanged: Identity, Reshape or Flatten whose output shape equals
 * their input shape, a Pad of zero on every side (torch exports one
 * before each AveragePool), and a forward Slice that keeps every element
 * (Swin's crop back from a window multiple the input already was).
 */
#include <string.h>

#include "passes/passes.h"

static int same_shape(const struct ir_tensor *a, const struct ir_tensor *b)
{
	/* a dynamic extent's shape[] is a bound or 1, not the extent */
	return !a->dyn && !b->dyn && a->rank == b->rank && !memcmp(a->shape, b->shape, sizeof(int64_t) * (size_t)a->rank);
}

/* A Pad (pads as an attribute) that adds nothing on any side. */
static int zero_pad(const struct ir_op *op)
{
	int64_t p[2 * IR_MAX_RANK];
	if (op->type != OP_PAD || op->n_in != 1)
		return 0;
	int n = op_ints(op, "pads", p, 2 * IR_MAX_RANK);
	if (n <= 0 || n > 2 * IR_MAX_RANK)
		return 0;
	for (int k = 0; k < n; k++)
		if (p[k])
			return 0;
	return 1;
}

/* A Slice (bounds as attributes) of positive steps whose output has its
 * input's shape: it starts at 0 and keeps every element. */
static int whole_slice(const struct ir_graph *g, const struct ir_op *op)
{
	int64_t st[IR_MAX_RANK];
	if (op->type != OP_SLICE || op->n_in != 1 || op->n_out != 1)
		return 0;
	int n = op_ints(op, "steps", st, IR_MAX_RANK);
	if (n < 0 || n > IR_MAX_RANK)
		return 0;
	for (int k = 0; k < n; k++)
		if (st[k] <= 0)
			return 0;
	return same_shape(&g->tensors[op->in[0]], &g->tensors[op->out[0]]);
}

static int identity_pattern(struct ir_graph *g, int i)
{
	const struct ir_op *op = &g->ops[i];
	if (op->n_in < 1 || op->n_out != 1 || op->in[0] < 0)
		return 0;
	if (op->type == OP_IDENTITY || zero_pad(op) || whole_slice(g, op) ||
	    ((op->type == OP_RESHAPE || op->type == OP_FLATTEN) &&
	     same_shape(&g->tensors[op->in[0]], &g->tensors[op->out[0]])))
		return pass_bypass(g, i);
	return 0;
}

int pass_remove_identity(struct ir_graph *g)
{
	static const pattern_fn pats[] = { identity_pattern };
	return rewrite_run(g, "remove-identity", pats, 1);
}
