/* groups.c - the layer groups of a grouped graph (lib/back/groups.h). */
#include <stdlib.h>

#include "back/groups.h"
#include "ir/base.h"

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
