/* calib_table.h - the calibration table (formats/tpuc-calib.5): one
 * threshold and the observed range per tensor, written by calibrate and
 * read by top2tpu and calibrate --search-qtable.  The calibration that
 * makes it is lib/calib/calib.h.
 */
#ifndef TPUC_CALIB_TABLE_H
#define TPUC_CALIB_TABLE_H

#include <stdio.h>

#include "ir/ir.h"
#include "ir/name_index.h"

struct calib_entry {
	char *name;          /* tensor name (no spaces) */
	double threshold;    /* symmetric clipping bound, > 0 (real units) */
	double min, max;     /* observed extremes over all samples (real units) */
};

struct calib_table {
	char *path;                  /* file it was read from, for messages; NULL if built */
	int n, cap;
	struct calib_entry *e;       /* in graph order */
	struct name_index index;     /* name -> entry; empty when the table was
					built by hand (calib_find then searches
					linearly) */
	int indexed;                 /* 1 if index is kept (calib_table_new) */
};

/* Largest threshold a table may give: FLT_MAX as "%.9g" writes it (real
 * models hold -FLT_MAX as an attention mask, so minmax can give it). */
#define CALIB_MAX_THRESHOLD 3.40282347e+38

/* Read a table (formats/tpuc-calib.5) from PATH ("-" is stdin).  Errors name
 * the file and the line.  The caller frees *T with calib_table_free. */
int calib_table_read(const char *path, struct calib_table **t);
/* Write T atomically to PATH (NULL or "-" is stdout), deterministically:
 * "%.9g" numbers, a fixed header naming the graph G (may be NULL). */
int calib_table_write(const char *path, const struct calib_table *t,
		      const struct ir_graph *g);
void calib_table_free(struct calib_table *t);
/* An empty table with a name index (calib_find in constant time); free it
 * with calib_table_free. */
struct calib_table *calib_table_new(void);
/* The entry for tensor NAME, or NULL. */
const struct calib_entry *calib_find(const struct calib_table *t, const char *name);
/* Append an entry (the name is copied). */
void calib_add(struct calib_table *t, const char *name, double threshold,
	       double min, double max);

/* Write T to PATH with a header naming the graph GRAPH (may be NULL). */
int calib_table_write_named(const char *path, const struct calib_table *t, const char *graph);
/* The text of calib_table_write_named, to FP (for a caller that commits
 * the file itself, e.g. together with another). */
void calib_table_print(FILE *fp, const struct calib_table *t, const char *graph);

#endif
