/* lower_order.c - the ops that only feed graph outputs moved up to just
 * after what they read (lib/back/lower_order.h).
 */
#include <stdlib.h>
#include <string.h>

#include "back/lower_order.h"
#include "ir/base.h"

/* Sort key of op i: the index of the op after which it goes, then 0 for
 * an op that stays, 1 for one that moves, then its old index. */
struct key {
	int at, moves, old;
};

static int key_cmp(const void *a, const void *b)
{
	const struct key *x = a, *y = b;
	if (x->at != y->at)
		return x->at < y->at ? -1 : 1;
	if (x->moves != y->moves)
		return x->moves - y->moves;
	return (x->old > y->old) - (x->old < y->old);
}

int lower_outputs_early(struct ir_graph *g)
{
	int n = g->n_ops, nt = g->n_tensors, moved = 0, ids = 0;
	if (n < 2)
		return 0;
	/* cone[t]: the output whose ops alone read tensor t (-2: none yet,
	 * -1: several); op_cone[o] the same for op o's results */
	int *prod = xmalloc(sizeof(int) * (size_t)(nt + 1));
	int *cone = xmalloc(sizeof(int) * (size_t)(nt + 1));
	int *op_cone = xmalloc(sizeof(int) * (size_t)(n + 1));
	/* near[t]: t reaches a graph output through ops of one activation */
	char *near = xcalloc((size_t)nt + 1, 1);
	for (int t = 0; t < nt; t++)
		prod[t] = -1, cone[t] = -2;
	for (int i = 0; i < g->n_outputs; i++) {
		cone[g->outputs[i]] = cone[g->outputs[i]] == -2 ? ids++ : -1;
		near[g->outputs[i]] = 1;
	}
	for (int o = 0; o < n; o++)
		for (int j = 0; j < g->ops[o].n_out; j++)
			if (g->ops[o].out[j] >= 0)
				prod[g->ops[o].out[j]] = o;
	for (int o = n - 1; o >= 0; o--) {
		const struct ir_op *op = &g->ops[o];
		int c = -2, acts = 0, out = 0;
		for (int j = 0; j < op->n_out; j++) {
			int t = op->out[j];
			if (t < 0 || cone[t] == -2)
				continue;
			c = c == -2 || c == cone[t] ? cone[t] : -1;
			out |= near[t];
		}
		op_cone[o] = c < 0 ? -1 : c;
		for (int j = 0; j < op->n_in; j++)
			acts += op->in[j] >= 0 && !g->tensors[op->in[j]].data;
		for (int j = 0; j < op->n_in; j++) {
			int x = op->in[j];
			if (x < 0 || g->tensors[x].data)
				continue;
			/* the op nearest a graph output that joins several
			 * activations (the heads' Concat, perhaps under a
			 * dequantising Cast): each input its own */
			int join = out && acts > 1 && c >= 0;
			int cx = join ? ids++ : c < 0 ? -1 : c;
			cone[x] = cone[x] == -2 || cone[x] == cx ? cx : -1;
			near[x] |= out && acts == 1 && c >= 0;
		}
	}
	/* more than one cone: each cone's ops go just after the last op of
	 * another cone or none they read, in their order */
	struct key *k = xmalloc(sizeof *k * (size_t)n);
	for (int o = 0; o < n; o++) {
		k[o] = (struct key){ .at = o, .moves = 0, .old = o };
		/* an op with bodies stays: they may read outer tensors by name */
		enum op_type ty = g->ops[o].type;
		if (op_cone[o] < 0 || ids < 2 || ty == OP_IF || ty == OP_LOOP || ty == OP_SCAN)
			continue;
		int at = -1;
		for (int j = 0; j < g->ops[o].n_in; j++) {
			int t = g->ops[o].in[j], p = t >= 0 ? prod[t] : -1;
			int pa = p < 0 ? -1 : op_cone[p] == op_cone[o] ? k[p].at : p;
			at = pa > at ? pa : at;
		}
		k[o].at = at;
		k[o].moves = 1;
	}
	qsort(k, (size_t)n, sizeof *k, key_cmp);
	struct ir_op *ops = xmalloc(sizeof *ops * (size_t)n);
	for (int i = 0; i < n; i++) {
		ops[i] = g->ops[k[i].old];
		moved += k[i].old != i;
	}
	memcpy(g->ops, ops, sizeof *ops * (size_t)n);
	free(ops);
	free(k);
	free(prod);
	free(cone);
	free(op_cone);
	free(near);
	return moved;
}
