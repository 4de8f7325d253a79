/* task_check.h - task-level checks of a model output against a reference
 * (npz-compare --task): does the lowered model still give the answer the
 * float one gives, beside how close the numbers are.
 *
 *   class  a classifier's scores [1, C] (C >= 2): the top-1 class agrees,
 *          unless the reference's top two are within TASK_TIE of its
 *          spread, then the reference's top-1 is in B's top 2; top-5
 *          overlap reported
 *   ctc    a text recogniser's per-step class scores [1, T, C]: the
 *          greedy CTC decodings (argmax per step, repeats merged, blank
 *          class 0 dropped) are equal
 *   map    a probability map [1, 1, H, W] (or [H, W]): the binary maps at
 *          0.5 agree on at least TASK_MAP_AGREE of the pixels
 *   seg    per-pixel class scores [1, C, H, W]: the argmax maps agree on at
 *          least TASK_MAP_AGREE of the pixels
 *   score  one number (a probability): |a - b| <= TASK_SCORE_ABS and both
 *          on the same side of 0.5
 *
 * task_pick chooses by shape and by the reference's values: one number is
 * a score; [1, C] a class; [1, T, C] whose rows are distributions (each
 * sums to 1, no value below 0) ctc; [1, 1, H, W] with values in [0, 1] a
 * map; [1, C, H, W] (H, W >= 8) whose pixels are distributions over C seg;
 * anything else none (judged by cosine alone).
 */
#ifndef TPUC_TASK_CHECK_H
#define TPUC_TASK_CHECK_H

#include <stddef.h>
#include <stdint.h>

enum task { TASK_NONE, TASK_AUTO, TASK_CLASS, TASK_CTC, TASK_MAP, TASK_SEG, TASK_SCORE };

#define TASK_SCORE_ABS 0.02
#define TASK_MAP_AGREE 0.99
#define TASK_TIE 0.01

/* The task named S ("auto", "none", "class", ...), or -1. */
int task_from_name(const char *s);
const char *task_name(enum task t);

/* The check for a reference A of shape SHAPE[0..RANK-1] (N values). */
enum task task_pick(const int64_t *shape, int rank, const float *a, int64_t n);

/* Check B against the reference A for task T (not NONE or AUTO): 1 when
 * it passes, 0 when not, -1 when the shape does not fit T (WHAT says
 * why).  WHAT gets a short account either way, e.g.
 * "top-1 281 = 281, top-5 5/5". */
int task_check(enum task t, const int64_t *shape, int rank, const float *a, const float *b,
	       int64_t n, char *what, size_t cap);

#endif
