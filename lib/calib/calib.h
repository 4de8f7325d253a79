/* calib.h - calibration: per-tensor activation statistics gathered by
 * running the float Top graph over sample inputs and the threshold search
 * (min/max or KL divergence), giving the calibration table of
 * lib/quant/calib_table.h (formats/tpuc-calib.5).
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

#include <stdio.h>

#include "ir/ir.h"
#include "ir/npz.h"

#include "quant/calib_table.h"

enum calib_method { CALIB_KLD, CALIB_MINMAX, CALIB_PERCENTILE, CALIB_MSE };

#define CALIB_BINS 2048     /* histogram bins over [0, 2^exp) */
#define CALIB_MIN_PERCENTILE 50   /* smallest --percentile: below, most values clip */

struct calib_opts {
	enum calib_method method;
	double percentile;           /* CALIB_PERCENTILE: in [50, 100], e.g. 99.99 */
	int64_t max_samples;         /* use at most this many samples; <= 0: all */
	int shard, nshards;          /* this run takes shard SHARD (1-based) of
					NSHARDS of the samples; 0, 0: all */
	int nthreads;                /* interpreter threads */
	int progress;                /* 1: a progress bar on stderr */
	const char *prog;            /* program name for the progress line */
	int pooled;                  /* kld: one search over all samples' values
					pooled, for a mixed-precision search,
					not the samples' own thresholds */
};

/* Statistics of one calibration run, or of several merged: everything the
 * thresholds are computed from, and exactly mergeable (formats/tpuc-calib.5,
 * "Partial statistics").  Tensor s has the histogram hist[s * CALIB_BINS ...]
 * of its nonzero |x|, bin b counting [b, b+1) * 2^(exp[s] - 11); the range
 * 2^exp[s] is the smallest power of two above every |x| seen, so two
 * histograms merge exactly by summing adjacent bins of the finer one. */
struct calib_stats {
	char *path;                  /* file read from, for messages; NULL if collected */
	char *graph;                 /* graph name ("" if none) */
	enum calib_method method;
	double percentile;
	int64_t samples;             /* samples observed */
	int n;                       /* tensors, in graph order */
	char **names;
	double *min, *max;           /* extremes of the finite values seen; +inf, -inf
					when none */
	int *exp;                    /* histogram range 2^exp; CALIB_NO_EXP when empty */
	uint64_t *zeros;             /* exact zeros seen (not in hist) */
	uint64_t *hist;              /* n * CALIB_BINS counts */
	/* kld: each sample's own threshold of each tensor (the samples where
	 * the tensor holds a nonzero value): sv[s * cap + k], k < nsv[s], in
	 * no particular order (a merge appends) */
	int pooled;                  /* kld: as calib_opts (not in parts) */
	int64_t cap;                 /* slots per tensor in sv */
	int64_t *nsv;                /* per tensor: thresholds in sv */
	double *sv;
};
#define CALIB_NO_EXP (-100000)

/* Run the Top graph G (stage origin or canonical, f32) over the samples of
 * the NFILES archives SAMPLES (each graph input with samples on axis 0;
 * FILES name them in messages; samples are numbered across the files in
 * order) and build *T: one entry per f32 activation tensor (graph inputs
 * and op outputs, weights excluded) in graph order.  Thresholds follow
 * OPTS->method (see formats/tpuc-calib.5). */
int calib_run(const struct ir_graph *g, const struct npz *samples, const char *file,
	      const struct calib_opts *opts, struct calib_table **t);
int calib_run_files(const struct ir_graph *g, int nfiles, const struct npz *samples,
		    const char *const *files, const struct calib_opts *opts,
		    struct calib_table **t);

/* The statistics half of calib_run_files, for OPTS's shard of the samples
 * (all of them when nshards is 0).  The caller frees *ST. */
int calib_collect(const struct ir_graph *g, int nfiles, const struct npz *samples,
		  const char *const *files, const struct calib_opts *opts,
		  struct calib_stats **st);
/* Add SRC into DST: same graph, method and tensors required (errors name
 * SRC_NAME).  Exact: the result does not depend on the order of merging. */
int calib_stats_merge(struct calib_stats *dst, const struct calib_stats *src,
		      const char *src_name);
/* The table from statistics: thresholds by ST's method. */
int calib_stats_table(const struct calib_stats *st, int nthreads, struct calib_table **t);
/* Partial statistics files (formats/tpuc-calib.5): write atomically to PATH
 * (NULL or "-": stdout), read from PATH ("-": stdin). */
int calib_stats_write(const char *path, const struct calib_stats *st);
int calib_stats_read(const char *path, struct calib_stats **st);
void calib_stats_free(struct calib_stats *st);

/* Threshold searches over a histogram HIST of NBINS bins of width BIN_WIDTH
 * from 0 (exact zeros not counted), exposed for tests.  Percentile: the
 * upper edge of the first bin where the count, ZEROS included, reaches P
 * percent of all values.  MSE: the bin edge i * BIN_WIDTH (i >= 1) that
 * minimises the expected squared error of quantising to LEVELS steps above
 * zero (127 for i8, 255 for u8), values taken at bin centres: clipped values
 * cost (c - T)^2, the others (T / LEVELS)^2 / 12. */
double calib_percentile_threshold(const uint64_t *hist, int nbins, double bin_width,
				  uint64_t zeros, double p);
double calib_mse_threshold(const uint64_t *hist, int nbins, double bin_width, int levels);

/* The KL-divergence threshold search over a histogram of |x|: HIST has NBINS
 * bins of width BIN_WIDTH starting at 0.  Returns the threshold (the upper
 * edge of the chosen number of bins, at least 128 bins), as TensorRT and
 * ncnn do with 128 quantisation levels.  Exposed for tests. */
double calib_kld_threshold(const uint64_t *hist, int nbins, double bin_width);

#endif

