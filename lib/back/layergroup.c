/* layergroup.c - layer grouping (lib/back/layergroup.h): runs of consecutive ops
 * become local groups when the cost model says they finish sooner together
 * than one by one.
 */
#include <stdint.h>
#include <stdlib.h>

#include "ir/base.h"
#include "back/codegen.h"
#include "back/codegen_group.h"
#include "back/layergroup.h"
#include "ir/op.h"

/* Whether op k may be part of a local group at all: a chip kernel and one
 * output (the rest is checked by codegen: groups of ops that all slice
 * along H run in slices, others in one step over whole tensors). */
static int groupable(const struct ir_graph *g, int k)
{
	const struct ir_op *op = &g->ops[k];
	return op_defs[op->type]->run_tpu && op->n_out == 1;
}

int layergroup(struct ir_graph *g, const struct chip *c, int max_ops)
{
	int n = g->n_ops;
	int64_t *single = xmalloc(sizeof *single * (size_t)(n + 1));
	const int64_t unknown = INT64_MAX / 4;
	for (int i = 0; i < n; i++) {
		g->ops[i].group = -1;
		g->ops[i].place = PLACE_NONE;
		/* An op that cannot run alone is left to codegen to report. */
		single[i] = max_ops > 1 ? codegen_group_cycles(g, c, i, 1) : 0;
		if (single[i] < 0)
			single[i] = unknown;
	}
	int id = 0;
	codegen_uses_begin(g);
	for (int i = 0; i < n; id++) {
		int best = i + 1;
		int64_t sum = single[i], best_save = 0;
		for (int j = i + 2; j <= n && j - i <= max_ops && groupable(g, i); j++) {
			if (!groupable(g, j - 1))
				break;
			sum += single[j - 1];
			int64_t cy = codegen_group_cycles(g, c, i, j - i);
			if (cy == -2)
				break;   /* longer runs need more local memory still */
			if (cy >= 0 && sum < unknown && sum - cy > best_save) {
				best_save = sum - cy;
				best = j;
			}
		}
		for (int k = i; k < best; k++) {
			g->ops[k].group = id;
			g->ops[k].place = best - i > 1 ? PLACE_LOCAL : PLACE_GLOBAL;
		}
		i = best;
	}
	codegen_uses_end();
	free(single);
	err_set("%s", "");
	g->stage = STAGE_GROUPED;
	return 0;
}
