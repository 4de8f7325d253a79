/* lower_share.c - one int8 scale for a Concat and the inputs it only
 * copies: each input quantised to the Concat's own scale by the op that
 * makes it, as TPU-MLIR's calibration gives a Concat's inputs its
 * threshold, so the Concat moves codes (a copy in place) instead of
 * requantising every input.
 */
#include "back/lower_share.h"

#include <math.h>
#include <stdlib.h>

#include "ir/base.h"
#include "ir/op.h"

/* The int8 step (scale) of Top tensor t under lc's table; 0 when it has
 * none. */
static double step_of(const struct lower_ctx *lc, int t)
{
	enum ir_dtype dt;
	float s;
	int zp;
	if (!calib_find(lc->tab, lc->top->tensors[t].name) || lower_table_act((struct lower_ctx *)lc,
									 NULL, t, &dt, &s, &zp) < 0)
		return 0;
	return s;
}

struct calib_table *lower_share_concat(const struct lower_ctx *lc)
{
	const struct ir_graph *top = lc->top;
	const struct calib_table *tab = lc->tab;
	if (!tab)
		return NULL;
	int nt = top->n_tensors;
	int *readers = xcalloc((size_t)nt + 1, sizeof *readers);
	char *fixed = xcalloc((size_t)nt + 1, 1);   /* not to change: io, taken */
	for (int o = 0; o < top->n_ops; o++)
		for (int j = 0; j < top->ops[o].n_in; j++)
			if (top->ops[o].in[j] >= 0)
				readers[top->ops[o].in[j]]++;
	for (int i = 0; i < top->n_inputs; i++)
		fixed[top->inputs[i]] = 1;
	for (int i = 0; i < top->n_outputs; i++)
		fixed[top->outputs[i]] = 1;
	struct calib_table *cp = calib_table_new();
	for (int i = 0; i < tab->n; i++)
		calib_add(cp, tab->e[i].name, tab->e[i].threshold, tab->e[i].min, tab->e[i].max);
	cp->path = tab->path ? xstrdup(tab->path) : NULL;
	struct lower_ctx now = *lc;
	now.tab = cp;
	int shared = 0;
	for (int o = top->n_ops - 1; o >= 0; o--) {
		const struct ir_op *op = &top->ops[o];
		if (op->type != OP_CONCAT || op->n_out != 1 || (lc->opmode && lc->opmode[o] != MODE_INT8) ||
		    top->tensors[op->out[0]].dtype != DT_F32 ||
		    lower_ranges_apart((struct lower_ctx *)lc, op))
			continue;
		const struct ir_tensor *y = &top->tensors[op->out[0]];
		const struct calib_entry *ey = calib_find(cp, y->name);
		if (!ey || ((y->qdtype == DT_I8 || y->qdtype == DT_U8) && y->scale > 0))
			continue;
		double sy = step_of(&now, op->out[0]);
		for (int j = 0; j < op->n_in; j++) {
			int t = op->in[j];
			if (t < 0 || fixed[t])
				continue;
			const struct ir_tensor *x = &top->tensors[t];
			struct calib_entry *ex = (struct calib_entry *)calib_find(cp, x->name);
			if (x->data || x->dtype != DT_F32 || !ex || ((x->qdtype == DT_I8 || x->qdtype == DT_U8) && x->scale > 0))
				continue;
			double sx = step_of(lc, t);
			if (readers[t] > 1 && !(sy <= LOWER_SHARE_RATIO * sx && sx <= LOWER_SHARE_RATIO * sy))
				continue;
			ex->threshold = ey->threshold;
			ex->min = ey->min;
			ex->max = ey->max;
			fixed[t] = 1;
			shared++;
		}
	}
	free(readers);
	free(fixed);
	if (!shared) {
		calib_table_free(cp);
		return NULL;
	}
	return cp;
}
