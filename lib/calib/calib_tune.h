/* calib_tune.h - per-tensor threshold tuning against each layer's output
 * error (calibrate --tune), as TPU-MLIR's auto-tune does.
 *
 * For every activation with a threshold T and at least one reader, each
 * candidate threshold f T (f in CALIB_TUNE_FACTORS) quantises the
 * activation as top2tpu would (u8 when its calibrated min is >= 0, else
 * i8, symmetric; with asymmetric, u8 with a zero point); every reader op runs its float kernel on that input
 * (its other inputs float) and the candidate's error is the sum over
 * readers and samples of |y_q - y|^2 / |y|^2.  The threshold becomes the
 * candidate with the smallest error when that is at least 1% below the
 * calibrated threshold's; the min and max stay.  Deterministic: the same
 * samples give the same table.
 */
#ifndef TPUC_CALIB_TUNE_H
#define TPUC_CALIB_TUNE_H

#include <stdint.h>

#include "ir/ir.h"
#include "ir/npz.h"
#include "quant/calib_table.h"

/* Samples calibrate --tune runs on (fewer when -n gives fewer). */
#define CALIB_TUNE_SAMPLES 8

struct calib_tune_opts {
	int64_t samples;        /* tune on the first this many samples (> 0) */
	int nthreads;
	int progress;           /* 1: progress on stderr */
	int asymmetric;         /* 1: quantise as top2tpu --asymmetric does */
};

struct calib_tune_result {
	int tuned;              /* activations considered */
	int changed;            /* thresholds that moved */
};

/* Tune the thresholds of TAB in place on the samples of the NFILES
 * archives SAMPLES (first axis: samples, as calib_collect reads them). */
int calib_tune(const struct ir_graph *g, int nfiles, const struct npz *samples,
	       const char *const *files, struct calib_table *tab,
	       const struct calib_tune_opts *o, struct calib_tune_result *res);

#endif
