/* kern_util.h - helpers shared by the reference kernels in lib/ops/: the
 * input rows an H-sliced window kernel reads, broadcasting strides, and
 * walks over reduced axes.
 */
#ifndef TPUC_KERN_UTIL_H
#define TPUC_KERN_UTIL_H

#include <stdint.h>

#include "ir/op.h"

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
/* A windowed op's geometry (spatial_get) and the rows of its slice
 * (kern_window_rows); F32 also requires f32 views (kern_need_f32). */
int kern_window(struct kern *k, int f32, struct spatial *s, struct kern_rows *r);

/* Strides (in elements) to read V, which broadcasts to the RANK-dimensional
 * SHAPE numpy-style: 0 along broadcast axes.  V's rank is at most RANK. */
void kern_bcast_strides(const struct view *v, int rank, const int64_t *shape,
			int64_t *stride);

/* A dense tensor's axes split by a mask into reduced and kept ones, to walk
 * each reduction: reduction o (0 to nout - 1, kept axes in order) starts at
 * element kern_reduce_base(rd, o), and kern_reduce_next() steps through
 * its count elements. */
struct kern_reduce {
	int nr, nk;                              /* reduced axes, kept axes */
	int64_t rs[IR_MAX_RANK], rn[IR_MAX_RANK];  /* reduced axes: stride, size (elements) */
	int64_t ks[IR_MAX_RANK], kn[IR_MAX_RANK];  /* kept axes: stride, size (elements) */
	int64_t count;                           /* elements in one reduction */
	int64_t nout;                            /* reductions */
};
/* Split the axes of SHAPE (rank RANK, dense) by MASK (nonzero: reduced). */
void kern_reduce_init(struct kern_reduce *rd, int rank, const int64_t *shape, const int *mask);
/* The element reduction o starts at. */
int64_t kern_reduce_base(const struct kern_reduce *rd, int64_t o);
/* Step the row-major index idx (rank r) of an element of SHAPE to the
 * next element (all 0 after the last). */
static inline void kern_index_next(int r, const int64_t *shape, int64_t *idx)
{
	for (int d = r - 1; d >= 0; d--) {
		if (++idx[d] < shape[d])
			return;
		idx[d] = 0;
	}
}

/* Step element offset *off to the next element of its reduction; idx holds
 * rd->nr counters, all 0 at the reduction's start. */
static inline void kern_reduce_next(const struct kern_reduce *rd, int64_t *idx, int64_t *off)
{
	for (int d = rd->nr - 1; d >= 0; d--) {
		*off += rd->rs[d];
		if (++idx[d] < rd->rn[d])
			return;
		*off -= rd->rs[d] * rd->rn[d];
		idx[d] = 0;
	}
}

/* Y = op(A, B) broadcast numpy-style, as rows: the output's axes with the
 * trailing ones merged while each operand is dense or one value over them
 * (a per-channel operand [N,C,1,1] gives rows of H * W), into SHAPE, and
 * A's and B's strides over them (kern_bcast_strides) into SA and SB.
 * Returns the rank of SHAPE (at least 1); a row runs along its last axis,
 * and kern_bcast_row finds where row o starts. */
int kern_bcast_rows(const struct view *a, const struct view *b, const struct view *y,
		    int64_t *shape, int64_t *sa, int64_t *sb);

/* Where row o of an output of SHAPE (rank R; a row runs along the
 * last axis) starts in two operands read with broadcast strides SA and SB
 * (kern_bcast_strides): *oa and *ob, in elements. */
static inline void kern_bcast_row(int r, const int64_t *shape, const int64_t *sa,
				  const int64_t *sb, int64_t o, int64_t *oa, int64_t *ob)
{
	*oa = *ob = 0;
	for (int d = r - 2; d >= 0; d--) {
		int64_t i = o % shape[d];
		o /= shape[d];
		*oa += i * sa[d];
		*ob += i * sb[d];
	}
}

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

/* dst[c * dst_stride + r] = src[r * src_stride + c] for ROWS x COLS bytes
 * (a byte matrix transposed, e.g. NCHW <-> NHWC planes of int8 data),
 * by 16 x 16 blocks in SSE2 where the CPU has it. */
void kern_transpose8(const void *src, int64_t rows, int64_t cols, int64_t src_stride,
		     void *dst, int64_t dst_stride);

/* Threads for a loop of n independent items of about `work` operations each:
 * k->nthreads, or 1 when the loop is too small to share. */
int kern_threads(const struct kern *k, int64_t n, int64_t work);

#endif
