/* pass_dce.c - dce: remove ops none of whose outputs is read by another op
 * or is a graph output; compaction then drops the weights they used.
 */
#include "passes/passes.h"

static int dead_pattern(struct ir_graph *g, int i)
{
	const struct ir_op *op = &g->ops[i];
	for (int j = 0; j < op->n_out; j++)
		if (pass_uses(g, op->out[j]))
			return 0;
	g->ops[i].type = OP_COUNT;
	return 1;
}

static int count_weights(const struct ir_graph *g)
{
	int n = 0;
	for (int i = 0; i < g->n_tensors; i++)
		n += g->tensors[i].data != NULL;
	return n;
}

/* Counts removed ops and removed weights. */
int pass_dce(struct ir_graph *g)
{
	static const pattern_fn pats[] = { dead_pattern };
	int w = count_weights(g);
	int r = rewrite_run(g, "dce", pats, 1);
	return r < 0 ? -1 : r + w - count_weights(g);
}
