/* calib_noise.h - per-layer noise report (calibrate --noise-report), as
 * RKNN's and Hailo's accuracy analysers give one: for each op the search
 * could keep in float (calib_search.h), the SQNR against the float graph
 *   alone   of its output with only this op in the searched mode (its own
 *           noise: its inputs are float);
 *   full    of its output with the whole graph in the searched mode (the
 *           noise it receives plus its own);
 *   output  of the graph outputs with only this op in the searched mode
 *           (what its noise does to the answer);
 * then the SQNR of the graph outputs with the whole graph in the mode, and
 * the ops to keep in float: those whose alone SQNR is below KEEP_DB, most
 * harmful to the output first.  SQNR = 10 log10(sum a^2 / sum (a - b)^2)
 * over the samples, in dB; "inf" when equal.
 */
#ifndef TPUC_CALIB_NOISE_H
#define TPUC_CALIB_NOISE_H

#include <stdio.h>

#include "calib/calib_search.h"

#define CALIB_NOISE_KEEP_DB 30.0

/* Write the report for the first O->samples samples of the NFILES archives
 * SAMPLES with the thresholds of TAB to FP. */
int calib_noise_report(const struct ir_graph *top, int nfiles, const struct npz *samples,
		       const char *const *files, const struct calib_table *tab,
		       const struct calib_search_opts *o, double keep_db, FILE *fp);

#endif
