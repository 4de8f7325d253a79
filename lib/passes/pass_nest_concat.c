/* pass_nest_concat.c - nest-concat: a Concat whose inputs include, one
 * after another, all the inputs of an earlier Concat along the same axis
 * reads that Concat's result in their place.  A DenseNet block joins all
 * its feature maps again for every layer ([x0..xk], then [x0..xk+1]):
 * rewritten, each join is the previous one and the new map, so that
 * addr-assign can put every Concat's result inside the next one's and the
 * copies stop growing with the square of the block's length.  The values
 * are the same bit for bit: a Concat only moves elements.
 */
#include "ir/op.h"
#include "passes/passes.h"

/* The axis of Concat op, normalised to its output's rank (-1 if bad). */
static int concat_axis(const struct ir_graph *g, const struct ir_op *op)
{
	return norm_axis(op_int(op, "axis", 1), g->tensors[op->out[0]].rank);
}

/* 1 if the n inputs of d equal those of op from position at on. */
static int same_run(const struct ir_op *op, int at, const struct ir_op *d)
{
	if (at + d->n_in > op->n_in)
		return 0;
	for (int j = 0; j < d->n_in; j++)
		if (op->in[at + j] != d->in[j] || d->in[j] < 0)
			return 0;
	return 1;
}

static int nest_pattern(struct ir_graph *g, int i)
{
	struct ir_op *op = &g->ops[i];
	if (op->type != OP_CONCAT || op->n_in < 3 || op->n_out != 1)
		return 0;
	int ax = concat_axis(g, op);
	if (ax < 0)
		return 0;
	/* the longest earlier Concat (it comes first, so its result is
	 * there when op runs) whose inputs are a run of op's */
	int best = -1, at = 0;
	for (int k = 0; k < i; k++) {
		const struct ir_op *d = &g->ops[k];
		if (d->type != OP_CONCAT || d->n_in < 2 || d->n_in >= op->n_in || d->n_out != 1 ||
		    (best >= 0 && d->n_in <= g->ops[best].n_in) || concat_axis(g, d) != ax ||
		    g->tensors[d->out[0]].dtype != g->tensors[op->out[0]].dtype)
			continue;
		for (int j = 0; j + d->n_in <= op->n_in; j++)
			if (same_run(op, j, d)) {
				best = k;
				at = j;
				break;
			}
	}
	if (best < 0)
		return 0;
	int len = g->ops[best].n_in;
	op->in[at] = g->ops[best].out[0];
	for (int j = at + len; j < op->n_in; j++)
		op->in[j - len + 1] = op->in[j];
	op->n_in -= len - 1;
	return 1;
}

int pass_nest_concat(struct ir_graph *g)
{
	static const pattern_fn pats[] = { nest_pattern };
	return rewrite_run(g, "nest-concat", pats, 1);
}
