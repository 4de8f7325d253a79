/* calib_search.h - mixed-precision search (calibrate --search-qtable):
 * which ops to keep in a float mode so that the lowered graph's outputs
 * reach a cosine against the float Top graph on calibration samples.
 *
 * The samples split in two: the first SAMPLES are the fit set, the next
 * HOLDOUT the held-out set.  A graph "reaches" the goal on a set when the
 * score of every output on every sample of it is at least the goal: the
 * cosine against float, or for an output of one number (a probability or
 * a score, where a cosine says nothing) 1 - (1 - goal) |err| / 0.02, and
 * -1 when the two are on different sides of 0.5; and -1 too when the
 * answer changes as npz-compare --task auto judges it: a class whose
 * top-1 is clear (ahead of the second by 4 times the noise per score the
 * goal's cosine allows), CTC text, a binary or class map.
 *
 * The search (formats/tpuc-quant.5, "Mixed precision"):
 *   1. the whole graph in MODE: done if it reaches the goal on both sets;
 *   2. sensitivity, on the fit set: for each candidate op (in int8 one
 *      whose lowering is more than a copy: Conv, Gemm, Add, pools...; in
 *      bf16 or f16 every op), the score with only that op in MODE and
 *      every other op in KEEP; most damaging first;
 *   3. the smallest count k of the most damaging ops in KEEP that reaches
 *      the goal on the fit set, then on both sets (binary searches), then
 *      each of those k, least damaging first, goes back to MODE if both
 *      sets still reach the goal without it.
 * The score reported as expected on unseen input is the held-out one.
 *
 * With state pairs (calibrate --frames N --state OUT=IN, lib/run/frames.h)
 * the samples are frames, recorded with the states the float graph meets
 * (frames_record): a candidate graph runs over the frames of a set in
 * order from the state recorded at the set's (or its file's) first frame,
 * its own state outputs feeding its state inputs after, so that the score
 * sees the error a quantised state gathers over frames; every output,
 * the state's included, is scored on every frame, and a set's frames are
 * never reordered: a set is a sequence.
 */
#ifndef TPUC_CALIB_SEARCH_H
#define TPUC_CALIB_SEARCH_H

#include "calib/calib.h"
#include "back/lower.h"
#include "run/frames.h"

struct calib_search_opts {
	const char *chip;            /* lowering target, e.g. "tpu-a" */
	enum ir_mode mode;        /* the graph's mode, e.g. MODE_INT8 */
	enum ir_mode keep;        /* the mode of the ops kept, e.g. MODE_F32 */
	double expected_cos;         /* goal: smallest cosine over samples and
					outputs >= this */
	int64_t samples;             /* fit on the first this many samples; <= 0 all */
	int64_t holdout;             /* select on at most this many samples after
					them (fewer when the files hold fewer) */
	int signed_only;             /* as lower_opts */
	int asymmetric;              /* as lower_opts: search for --asymmetric */
	int nthreads;
	int progress;                /* 1: progress on stderr */
	const char *prog;
	const struct frames *fr;     /* NULL, or state pairs: the samples are the
					frames of sequences (one per file), and a
					graph runs over each set's frames in order
					with its own state fed back */
};

#define CALIB_SCORE_ABS 0.02   /* a one-number output: the error that scores the goal */

struct calib_search_result {
	double base_cos;             /* the whole graph in MODE (fit and held out) */
	double cos;                  /* with the qtable, on the fit set */
	double held_cos;             /* with the qtable, on the held-out set: the
					score expected on unseen input */
	int64_t fit_samples, held_samples;
	int scores;                  /* outputs of one number, scored by error */
	int kept;                    /* ops in the qtable */
	int candidates;              /* ops the search could keep */
	int evaluations;             /* lowered graphs run */
	int reached;                 /* 1 if cos and held_cos >= expected_cos */
};

/* The samples of NFILES sample files (a stack along a new first axis, or
 * the batch of the graph's first input): FIRST[f] is file f's first sample;
 * the total is returned. */
int64_t calib_sample_starts(const struct ir_graph *top, int nfiles, const struct npz *samples,
			    int64_t *first);

/* Search on the samples of the NFILES archives SAMPLES (as calib_collect)
 * with the thresholds of TAB; *Q gets the qtable (empty when the whole
 * graph reaches the goal; every candidate when even that does not, with
 * RES->reached 0).  The caller frees *Q with qtable_free. */
int calib_search_qtable(const struct ir_graph *top, int nfiles, const struct npz *samples,
			const char *const *files, const struct calib_table *tab,
			const struct calib_search_opts *o, struct qtable **q,
			struct calib_search_result *res);

#endif
