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
	void *buf;
	size_t len;
	const char *shown = !strcmp(path, "-") ? "<stdin>" : path;
	if (file_read_all(path, &buf, &len) < 0)
		return -1;
	struct calib_table *t = xcalloc(1, sizeof *t);
	t->path = xstrdup(shown);
	char *p = buf, *endp = p + len;
	int line = 0, rc = 0;
	if (memchr(p, '\0', len))
		rc = err_set("'%s': not a text file", shown);
	if (rc == 0 && len > 0 && endp[-1] != '\n')
		rc = err_set("'%s': truncated: the last line has no newline", shown);
	while (rc == 0 && p < endp) {
		char *nl = memchr(p, '\n', (size_t)(endp - p));
		*nl = '\0';
		line++;
		char *s = p;
		p = nl + 1;
		while (*s == ' ' || *s == '\t' || *s == '\r')
			s++;
		if (*s == '#' || *s == '\0')
			continue;
		char *f[5];
		int n = 0;
		for (char *tok = strtok(s, " \t\r"); tok; tok = strtok(NULL, " \t\r"))
			if (n < 5)
				f[n++] = tok;
			else
				n++;
		double th, mn, mx;
		if (n != 4 || parse_num(f[1], &th) < 0 || parse_num(f[2], &mn) < 0 ||
		    parse_num(f[3], &mx) < 0) {
			rc = err_set("'%s': line %d: expected 'name threshold min max'", shown, line);
			break;
		}
		if (!(th > 0) || mn > mx) {
			rc = err_set("'%s': line %d: threshold must be positive and min <= max",
				     shown, line);
			break;
		}
		if (calib_find(t, f[0])) {
			rc = err_set("'%s': line %d: tensor '%s' listed twice", shown, line, f[0]);
			break;
		}
		calib_add(t, f[0], th, mn, mx);
	}
	free(buf);
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
