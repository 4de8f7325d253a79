/* layergroup.c - layer grouping (lib/layergroup.h): runs of consecutive ops
 * become local groups when the cost model says they finish sooner together
 * than one by one.
 */
#include <stdint.h>
#include <stdlib.h>

#include "base.h"
#include "codegen.h"
#include "layergroup.h"
#include "op.h"

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

int lg_groups(const struct ir_graph *g, struct lg_group **out, int *n)
{
	struct lg_group *v = xmalloc(sizeof *v * (size_t)(g->n_ops + 1));
	int k = 0;
	for (int i = 0; i < g->n_ops; i++) {
		const struct ir_op *op = &g->ops[i];
		if (op->group < 0 || op->place == PLACE_NONE) {
			free(v);
			return err_set("op '%s' (%s) has no layer group", op->name, op_name(op->type));
		}
		if (k && op->group == g->ops[v[k - 1].first].group) {
			if (op->place != v[k - 1].place) {
				free(v);
				return err_set("op '%s' (%s): placement differs within group %d",
					       op->name, op_name(op->type), op->group);
			}
			v[k - 1].n_ops++;
			continue;
		}
		for (int j = 0; j < k; j++)
			if (g->ops[v[j].first].group == op->group) {
				free(v);
				return err_set("op '%s' (%s): group %d is not a run of consecutive ops",
					       op->name, op_name(op->type), op->group);
			}
		v[k].first = i;
		v[k].n_ops = 1;
		v[k].place = op->place;
		k++;
	}
	*out = v;
	*n = k;
	return 0;
}
