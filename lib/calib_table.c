/* calib_table.c - the calibration table file (formats/tpuc-calib.5): read,
 * write, look up.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "calib.h"

void calib_add(struct calib_table *t, const char *name, double threshold,
	       double min, double max)
{
	grow_array((void **)&t->e, &t->cap, t->n + 1, sizeof *t->e);
	struct calib_entry *e = &t->e[t->n++];
	e->name = xstrdup(name);
	e->threshold = threshold;
	e->min = min;
	e->max = max;
}

void calib_table_free(struct calib_table *t)
{
	if (!t)
		return;
	for (int i = 0; i < t->n; i++)
		free(t->e[i].name);
	free(t->e);
	free(t->path);
	free(t);
}

const struct calib_entry *calib_find(const struct calib_table *t, const char *name)
{
	for (int i = 0; i < t->n; i++)
		if (!strcmp(t->e[i].name, name))
			return &t->e[i];
	return NULL;
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
	struct calib_table *t = xcalloc(1, sizeof *t);
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
		if (!(th > 0) || mn > mx) {
			rc = err_set("'%s': line %d: threshold must be positive and min <= max",
				     tf.shown, tf.line);
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

int calib_table_write_named(const char *path, const struct calib_table *t, const char *graph)
{
	struct out_file o;
	if (out_open(&o, path) < 0)
		return -1;
	fprintf(o.fp, "# tpuc calibration table (formats/tpuc-calib.5)\n");
	if (graph && graph[0] && !strchr(graph, '\n'))
		fprintf(o.fp, "# graph %s\n", graph);
	fprintf(o.fp, "# name threshold min max\n");
	for (int i = 0; i < t->n; i++)
		fprintf(o.fp, "%s %.9g %.9g %.9g\n", t->e[i].name, t->e[i].threshold,
			t->e[i].min, t->e[i].max);
	return out_commit(&o);
}
