/* calib_table.c - the calibration table file (formats/tpuc-calib.5): read,
 * write, look up.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ir/base.h"
#include "quant/calib_table.h"
#include "quant/quant.h"

struct calib_table *calib_table_new(void)
{
	struct calib_table *t = xcalloc(1, sizeof *t);
	t->indexed = 1;
	return t;
}

void calib_add(struct calib_table *t, const char *name, double threshold,
	       double min, double max)
{
	grow_array((void **)&t->e, &t->cap, t->n + 1, sizeof *t->e);
	struct calib_entry *e = &t->e[t->n++];
	e->name = xstrdup(name);
	e->threshold = threshold;
	e->min = min;
	e->max = max;
	if (t->indexed)
		name_index_put(&t->index, name, t->n - 1);
}

void calib_table_free(struct calib_table *t)
{
	if (!t)
		return;
	for (int i = 0; i < t->n; i++)
		free(t->e[i].name);
	free(t->e);
	name_index_free(&t->index);
	free(t->path);
	free(t);
}

const struct calib_entry *calib_find(const struct calib_table *t, const char *name)
{
	if (!t->indexed) {
		for (int i = 0; i < t->n; i++)
			if (!strcmp(t->e[i].name, name))
				return &t->e[i];
		return NULL;
	}
	int i = name_index_get(&t->index, name);
	return i >= 0 ? &t->e[i] : NULL;
}

/* Parse one number field; 0 on success. */
static int parse_num(const char *s, double *v)
{
	char *end;
	errno = 0;
	*v = strtod(s, &end);
	return end == s || *end || errno == ERANGE || !isfinite(*v) ? -1 : 0;
}

int calib_table_read(const char *path, struct calib_table **out)
{
	struct text_file tf;
	if (text_open(&tf, path) < 0)
		return -1;
	struct calib_table *t = calib_table_new();
	t->path = xstrdup(tf.shown);
	char *f[4];
	int n, rc = 0;
	while (rc == 0 && (n = text_fields(&tf, f, 4)) > 0) {
		double th, mn, mx;
		if (n != 4 || parse_num(f[1], &th) < 0 || parse_num(f[2], &mn) < 0 ||
		    parse_num(f[3], &mx) < 0) {
			rc = err_set("'%s': line %d: expected 'name threshold min max'", tf.shown,
				     tf.line);
			break;
		}
		if (!(th >= QUANT_MIN_THRESHOLD && th <= CALIB_MAX_THRESHOLD)) {
			rc = err_set("'%s': line %d: threshold %g is out of range [%g, %.9g]",
				     tf.shown, tf.line, th, QUANT_MIN_THRESHOLD, CALIB_MAX_THRESHOLD);
			break;
		}
		if (mn > mx) {
			rc = err_set("'%s': line %d: min %g is above max %g", tf.shown, tf.line,
				     mn, mx);
			break;
		}
		if (calib_find(t, f[0])) {
			rc = err_set("'%s': line %d: tensor '%s' listed twice", tf.shown, tf.line,
				     f[0]);
			break;
		}
		calib_add(t, f[0], th, mn, mx);
	}
	text_close(&tf);
	if (rc < 0) {
		calib_table_free(t);
		return -1;
	}
	*out = t;
	return 0;
}

int calib_table_write(const char *path, const struct calib_table *t,
		      const struct ir_graph *g)
{
	return calib_table_write_named(path, t, g ? g->name : NULL);
}

void calib_table_print(FILE *fp, const struct calib_table *t, const char *graph)
{
	fprintf(fp, "# tpuc calibration table (formats/tpuc-calib.5)\n");
	if (graph && graph[0] && !strchr(graph, '\n'))
		fprintf(fp, "# graph %s\n", graph);
	fprintf(fp, "# name threshold min max\n");
	for (int i = 0; i < t->n; i++)
		fprintf(fp, "%s %.9g %.9g %.9g\n", t->e[i].name, t->e[i].threshold,
			t->e[i].min, t->e[i].max);
}

int calib_table_write_named(const char *path, const struct calib_table *t, const char *graph)
{
	struct out_file o;
	if (out_open(&o, path) < 0)
		return -1;
	calib_table_print(o.fp, t, graph);
	return out_commit(&o);
}
