/* calib_search.h - mixed-precision search (calibrate --search-qtable):
 * which ops to keep in a float mode so that the lowered graph's outputs
 * reach a cosine against the float Top graph on calibration samples.
 *
 * The samples split in two: the first SAMPLES are the fit set, the next
 * HOLDOUT the held-out set.  A graph "reaches" the goal on a set when its
 * score there is at least the goal: the 10th percentile over the samples
 * (the ceil(n / 10)th smallest: one odd sample in ten does not decide)
 * of each sample's smallest score over the outputs, or -1 when any
 * sample's answer changed.  The score of an output: the cosine against
 * float, or for an output of one number (a probability or
 * a score, where a cosine says nothing) 1 - (1 - goal) |err| / 0.02, and
 * -1 when the two are on different sides of 0.5; and -1 too when the
 * answer changes as npz-compare --task auto judges it: a class whose
 * top-1 is clear (ahead of the second by 4 times the noise per score the
 * goal's cosine allows), CTC text, a binary or class map.
 *
 * The search (formats/tpuc-quant.5, "Mixed precision"):
 *   1. the whole graph in MODE: done if it reaches the goal on both sets
 *      as one and on the held-out set alone (and, by step 4, on the
 *      samples after them);
 *   2. sensitivity, on the fit set: for each candidate op (in int8 one
 *      whose lowering is more than a copy: Conv, Gemm, Add, pools...; in
 *      bf16 or f16 every op), the score with only that op in MODE and
 *      every other op in KEEP; most damaging first;
 *   3. the smallest count k of the most damaging ops in KEEP that reaches
 *      the goal on both sets as one and on the held-out set alone (a
 *      binary search), then each of those k, least damaging first, goes
 *      back to MODE if the goal is still reached so without it;
 *   4. when the samples after the two sets (below) score that choice
 *      below the goal, the search would expect less than it claims: step
 *      3 (or 1) once more with those samples held out too, so that the
 *      choice reaches the goal on them as well and none is left unseen.
 * Both sets as one: an odd sample among the few fit samples is spared
 * too; the held-out set alone: its score is the one reported as expected
 * when no sample is left unseen, so it must reach the goal (among all
 * samples an odd held-out sample in ten could hide behind fit samples
 * that score well: blazeface_back's 28 held out scored 0.978 where the
 * 32 as one reached 0.98, and its test input gave 0.979).  The held-out set chose the count and the pruning, so its score
 * flatters the result (the pruning stops just above the goal there); the
 * samples after the two sets (up to UNSEEN), which no step sees, score
 * the result alone: theirs is the score expected on unseen input, the
 * held-out set's when there are none.
 *
 * With state pairs (calibrate --frames N --state OUT=IN, lib/run/frames.h)
 * the samples are frames, recorded with the states the float graph meets
 * (frames_record): a candidate graph runs over the frames of a set in
 * order from the state recorded at the set's (or its file's) first frame,
 * its own state outputs feeding its state inputs after, so that the score
 * sees the error a quantised state gathers over frames; every output,
 * the state's included, is scored on every frame, and a set's frames are
 * never reordered: a set is a sequence.  Frames are not independent
 * samples: none is spared, so both sets as one reach the goal when each
 * does, each run as its own sequence.
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
	double expected_cos;         /* goal: the score of each set >= this;
					<= -1: by the outputs' answers,
					CALIB_GOAL_MAPS or CALIB_GOAL_INT8 */
	int64_t samples;             /* fit on the first this many samples; <= 0 all */
	int64_t holdout;             /* select on at most this many samples after
					them (fewer when the files hold fewer) */
	int64_t unseen;              /* score the result on at most this many
					samples after those; < 0: all the files
					hold (none with FR) */
	int signed_only;             /* as lower_opts */
	int asymmetric;              /* as lower_opts: search for --asymmetric */
	int nthreads;
	int progress;                /* 1: progress on stderr */
	const char *prog;
	const struct frames *fr;     /* NULL, or state pairs: the samples are the
					frames of sequences (one per file), and a
					graph runs over each set's frames in order
					with its own state fed back */
	const struct calib_table *const *alts;   /* NULL, or NALTS other tables
					for the same graph: the search takes the
					one that scores the whole graph in MODE
					highest (ties: the earlier, TAB first) */
	int nalts;
	int nsame;                   /* alts[0 .. nsame) are of TAB's kind (TAB
					before calibrate --tune); the rest of
					another (the samples' quartiles), taken
					only when higher than the best of TAB's
					kind by more than 1 - the goal */
	int tuned_last;              /* 1: alts[nalts - 1] (of the other kind)
					is alts[nalts - 2] still to be tuned:
					TUNE tunes it, and it is scored, only
					when alts[nalts - 2] comes within
					1 - the goal of the best of TAB's kind;
					else it is never scored nor taken */
	int (*tune)(void *arg, int a);   /* tunes alts[a] in place; < 0 on error */
	void *tune_arg;
};

#define CALIB_SCORE_ABS 0.02   /* a one-number output: the error that scores the goal */
/* The int8 goals by the graph outputs' answers (issue 12's bars): 0.98
 * when every output is a CTC text or a map (npz-compare --task ctc, map,
 * seg: OCR, detection and segmentation), whose answer the search checks
 * step by step or pixel by pixel besides the cosine, or when the outputs
 * are a detector's boxes and scores per anchor (each [1, A, K] with A >=
 * CALIB_ANCHOR_RATIO K, and K >= 4 in one of those on each A: a box);
 * 0.99 for anything else. */
#define CALIB_GOAL_MAPS 0.98
#define CALIB_GOAL_INT8 0.99
#define CALIB_ANCHOR_RATIO 8

struct calib_search_result {
	double base_cos;             /* the whole graph in MODE (both sets as one) */
	double cos;                  /* with the qtable, on the fit set */
	double held_cos;             /* with the qtable, on the held-out set: the
					score expected on unseen input */
	double held_lowest;          /* the smallest over the held-out samples */
	double unseen_cos;           /* with the qtable, on the samples no step of
					the search saw (1 when none) */
	double unseen_lowest;        /* the smallest over them */
	int64_t fit_samples, held_samples, unseen_samples;
	int scores;                  /* outputs of one number, scored by error */
	int kept;                    /* ops in the qtable */
	int candidates;              /* ops the search could keep */
	int evaluations;             /* lowered graphs run */
	double goal;                 /* the goal searched for (expected_cos, or
					the one the outputs' answers chose) */
	int reached;                 /* 1 if both sets as one and the held-out
					set alone reach the goal */
	int took;                    /* -1: the search ran on TAB; else on
					o->alts[took] */
	int tuned_last;              /* 1 if alts[nalts - 1] was tuned (tuned_last) */
	int reselected;              /* 1 if step 4 selected again with the
					unseen samples held out too, as they
					scored the first choice below the goal
					(then unseen_samples is 0) */
	double first_unseen_cos;     /* if reselected: the first choice's score
					on its first_unseen_samples unseen */
	int64_t first_unseen_samples;
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
