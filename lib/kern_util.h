/* kern_util.h - helpers shared by the reference kernels in lib/ops/: the
 * input rows an H-sliced window kernel reads, and broadcasting strides.
 */
#ifndef TPUC_KERN_UTIL_H
#define TPUC_KERN_UTIL_H

#include <stdint.h>

#include "op.h"

/* The input rows one invocation of a window kernel (conv, pooling) reads,
 * for a window of KH taps with stride SH, dilation DH (from 1) and top
 * padding PT, given k's output view and row offsets. */
struct kern_rows {
	int64_t first;   /* view row of the first real input row read */
	int64_t n;       /* real input rows read, from view row first on */
	int pt, pb;      /* padding rows before and after them */
	int64_t full_h;  /* rows of the whole input */
};
/* Fails naming the op when input view 0 does not hold every real row the
 * output rows need, or when they read padding only. */
int kern_window_rows(const struct kern *k, int kh, int sh, int dh, int pt,
		     struct kern_rows *r);

/* Strides (in elements) to read V, which broadcasts to the RANK-dimensional
 * SHAPE numpy-style: 0 along broadcast axes.  V's rank is at most RANK. */
void kern_bcast_strides(const struct view *v, int rank, const int64_t *shape,
			int64_t *stride);

/* Bounds [*lo, *hi] of op's fused activation (do_relu, relu_limit > 0 the
 * upper bound): y = min(max(x, lo), hi); without one, -inf and inf. */
void kern_act_bounds(const struct ir_op *op, float *lo, float *hi);

/* y[i] = min(max(x[i], lo), hi) for n elements (NaN stays NaN); y may be x. */
void kern_clamp(const struct kern *k, float *y, const float *x, int64_t n, float lo, float hi);

/* Per-channel affine y = act(x * a[c] + b[c]) over k's input 0 and output 0
 * (channel axis 1, any rank >= 2); a or b may be NULL (1 and 0). */
int kern_channel_affine(const struct kern *k, const float *a, const float *b);

/* 1 if input view i is a graph weight read in place (its data is the
 * tensor's own payload), so it is the same on every call. */
int kern_is_const(const struct kern *k, int i);

/* Fail naming k's op unless every present input and output view is f32. */
int kern_need_f32(const struct kern *k);

/* Threads for a loop of n independent items of about `work` operations each:
 * k->nthreads, or 1 when the loop is too small to share. */
int kern_threads(const struct kern *k, int64_t n, int64_t work);

#endif
