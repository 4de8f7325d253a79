/* calib.h - calibration: per-tensor activation statistics gathered by
 * running the float Top graph over sample inputs, the threshold search (min/max
 * or KL divergence) and the calibration table file (formats/tpuc-calib.5).
 *
 * Worked example, what calibrate does:
 *
 *   struct calib_table *t;
 *   if (calib_run(g, &samples, "calib.npz", &opts, &t) < 0 ||
 *       calib_table_write("m.table", t, g) < 0)
 *           fprintf(stderr, "calibrate: %s\n", err_msg());
 *   calib_table_free(t);
 */
#ifndef TPUC_CALIB_H
#define TPUC_CALIB_H

#include "ir.h"
#include "npz.h"

struct calib_entry {
	char *name;          /* tensor name (no spaces) */
	double threshold;    /* symmetric clipping bound, > 0 (real units) */
	double min, max;     /* observed extremes over all samples (real units) */
};

struct calib_table {
	char *path;                  /* file it was read from, for messages; NULL if built */
	int n, cap;
	struct calib_entry *e;       /* in graph order */
};

enum calib_method { CALIB_KLD, CALIB_MINMAX };

struct calib_opts {
	enum calib_method method;
	int64_t max_samples;         /* use at most this many samples; <= 0: all */
	int nthreads;                /* interpreter threads */
	int progress;                /* 1: a progress line on stderr */
	const char *prog;            /* program name for the progress line */
};

/* Read a table (formats/tpuc-calib.5) from PATH ("-" is stdin).  Errors name
 * the file and the line.  The caller frees *T with calib_table_free. */
int calib_table_read(const char *path, struct calib_table **t);
/* Write T atomically to PATH (NULL or "-" is stdout), deterministically:
 * "%.9g" numbers, a fixed header naming the graph G (may be NULL). */
int calib_table_write(const char *path, const struct calib_table *t,
		      const struct ir_graph *g);
void calib_table_free(struct calib_table *t);
/* The entry for tensor NAME, or NULL. */
const struct calib_entry *calib_find(const struct calib_table *t, const char *name);
/* Append an entry (the name is copied). */
void calib_add(struct calib_table *t, const char *name, double threshold,
	       double min, double max);

/* Run the Top graph G (stage origin or canonical, f32) over the samples in
 * SAMPLES (each graph input with samples on axis 0; FILE names it in
 * messages) and build *T: one entry per f32 activation tensor (graph inputs
 * and op outputs, weights excluded) in graph order.  Thresholds follow
 * OPTS->method (see formats/tpuc-calib.5). */
int calib_run(const struct ir_graph *g, const struct npz *samples, const char *file,
	      const struct calib_opts *opts, struct calib_table **t);

/* The KL-divergence threshold search over a histogram of |x|: HIST has NBINS
 * bins of width BIN_WIDTH starting at 0.  Returns the threshold (the upper
 * edge of the chosen number of bins, at least 128 bins), as TensorRT and
 * ncnn do with 128 quantisation levels.  Exposed for tests. */
double calib_kld_threshold(const uint64_t *hist, int nbins, double bin_width);

#endif
