/* ir_cut.c - cut a graph at named tensors (lib/ir_cut.h).
 */
#include "passes/ir_cut.h"

#include <stdlib.h>
#include <string.h>

#include "ir/base.h"

/* NAME without ir-print's decoration: "%x", "%\"a/b\"" and "\"a/b\"" are
 * x and a/b.  A malloc'd copy. */
static char *bare(const char *name)
{
	const char *p = name[0] == '%' ? name + 1 : name;
	size_t n = strlen(p);
	if (n >= 2 && p[0] == '"' && p[n - 1] == '"')
		return strndup(p + 1, n - 2);
	return xstrdup(p);
}

static void add_out(int **out, int *n, int *cap, int t)
{
	for (int i = 0; i < *n; i++)
		if ((*out)[i] == t)
			return;
	grow_array((void **)out, cap, *n + 1, sizeof **out);
	(*out)[(*n)++] = t;
}

int ir_cut(struct ir_graph *g, int n, const char *const *names)
{
	if (g->stage >= STAGE_GROUPED)
		return err_set("ir-cut takes IR before layergroup; this is at stage %s",
			       g->stage == STAGE_GROUPED ? "grouped" : "addressed");
	int *out = NULL, n_out = 0, cap = 0;
	for (int i = 0; i < n; i++) {
		char *name = bare(names[i]);
		int t = graph_find_tensor(g, name), op = -1;
		if (t < 0)
			for (int j = 0; j < g->n_ops && op < 0; j++)
				if (g->ops[j].name && !strcmp(g->ops[j].name, name))
					op = j;
		if (t < 0 && op < 0) {
			err_set("no tensor or op '%s' in the graph (ir-print lists them)", name);
			goto fail;
		}
		if (t >= 0 && g->tensors[t].data) {
			err_set("'%s' is a weight, not an activation", name);
			goto fail;
		}
		if (t >= 0) {
			for (int j = 0; j < g->n_inputs; j++)
				if (g->inputs[j] == t) {
					err_set("'%s' is a graph input: nothing before it to keep", name);
					goto fail;
				}
			add_out(&out, &n_out, &cap, t);
		} else {
			for (int k = 0; k < g->ops[op].n_out; k++)
				if (g->ops[op].out[k] >= 0)
					add_out(&out, &n_out, &cap, g->ops[op].out[k]);
		}
		free(name);
		continue;
fail:
		free(name);
		free(out);
		return -1;
	}
	if (!n_out) {
		free(out);
		return err_set("no tensor to cut at");
	}

	/* What the outputs need, walking the ops (in topological order) back. */
	char *need = xcalloc((size_t)g->n_tensors, 1);
	for (int i = 0; i < n_out; i++)
		need[out[i]] = 1;
	for (int i = g->n_ops - 1; i >= 0; i--) {
		struct ir_op *op = &g->ops[i];
		int live = 0;
		for (int k = 0; k < op->n_out; k++)
			live |= op->out[k] >= 0 && need[op->out[k]];
		if (!live) {
			op->type = OP_COUNT;   /* graph_compact drops it */
			continue;
		}
		for (int k = 0; k < op->n_in; k++)
			if (op->in[k] >= 0)
				need[op->in[k]] = 1;
	}
	int *in = xmalloc(sizeof *in * (size_t)(g->n_inputs + 1)), n_in = 0;
	for (int i = 0; i < g->n_inputs; i++)
		if (need[g->inputs[i]])
			in[n_in++] = g->inputs[i];
	graph_set_io(g, n_in, in, n_out, out);
	graph_compact(g);
	free(in);
	free(need);
	free(out);
	return 0;
}
