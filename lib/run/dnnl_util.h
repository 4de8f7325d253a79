/* dnnl_util.h - the oneDNN 2.6 plumbing behind the float kernels: one CPU
 * engine and stream per process, and helpers that run a convolution or a
 * matrix product over plain row-major float32 buffers, reordering to
 * oneDNN's preferred layouts at the edges.
 */
#ifndef TPUC_DNNL_UTIL_H
#define TPUC_DNNL_UTIL_H

#include <stdint.h>

#include <dnnl.h>

/* The process's CPU engine and stream (created on first use), for callers
 * that build their own primitives (the interpreter's plan, lib/run/plan.c).
 * Returns 0, or -1 with a message when oneDNN cannot start. */
int dnnl_get_engine(dnnl_engine_t *engine, dnnl_stream_t *stream);

/* An activation fused after a product: y = min(max(x, lo), hi). */
enum dnnl_act_kind { DNNL_ACT_NONE, DNNL_ACT_RELU, DNNL_ACT_CLIP };
struct dnnl_act {
	enum dnnl_act_kind kind;
	float lo, hi;                /* DNNL_ACT_CLIP bounds */
};
/* The fused activation of an op's do_relu / relu_limit attributes
 * (relu_limit <= 0 or absent: plain ReLU). */
struct ir_op;
struct dnnl_act dnnl_act_from_op(const struct ir_op *op);

/* One 2-D convolution, NCHW.  The source is an [n, ic, ih, iw] window of a
 * larger buffer with element strides src_stride (src_stride[3] must be 1);
 * weights are dense [oc, ic/group, kh, kw], bias [oc] or NULL, the
 * destination dense [n, oc, oh, ow].  Padding must be consistent:
 * oh == (ih + pt + pb - ((kh - 1) * dh + 1)) / sh + 1 (likewise ow). */
struct dnnl_conv {
	int64_t n, ic, ih, iw;       /* source window, elements */
	int64_t src_stride[4];       /* elements between neighbours per axis */
	int64_t oc, oh, ow;          /* destination */
	int kh, kw;                  /* kernel */
	int sh, sw;                  /* strides */
	int dh, dw;                  /* dilations, counting from 1 as ONNX */
	int pt, pl, pb, pr;          /* zero padding, rows and columns */
	int group;
	struct dnnl_act act;
	int const_weights;           /* 1: w never changes while the cache is on */
};
/* Run c with nthreads threads.  Returns 0, or -1 with a message. */
int dnnl_conv_f32(const struct dnnl_conv *c, const float *src, const float *w,
		  const float *bias, float *dst, int nthreads);

/* One 3-D convolution, NCDHW, every buffer dense: source [n, ic, d, h, w]
 * (src_dims; src_full the buffer's own extents, which may be larger where
 * trailing planes, rows or columns are read by no window), weights
 * [oc, ic/group, kd, kh, kw], bias [oc] or NULL, destination
 * [n, oc, od, oh, ow].  Per spatial axis i (depth, height, width): kernel
 * k, stride s, dilation d (counting from 1), padding pl before and pr
 * after, with dst[i] == (src[i] + pl + pr - ((k - 1) * d + 1)) / s + 1. */
struct dnnl_conv3d {
	int64_t n, ic, src[3];       /* source extents, elements */
	int64_t src_full[3];         /* the buffer's extents (>= src) */
	int64_t oc, dst[3];          /* destination */
	int64_t k[3], s[3], d[3], pl[3], pr[3];
	int group;
	struct dnnl_act act;
	int const_weights;           /* 1: w never changes while the cache is on */
};
/* Run c with nthreads threads.  Returns 0, or -1 with a message. */
int dnnl_conv3d_f32(const struct dnnl_conv3d *c, const float *src, const float *w,
		    const float *bias, float *dst, int nthreads);

/* The same convolution on int8: source s8 (or u8 when SRC_U8), weights
 * s8, destination the exact s32 accumulators (no bias, scale or
 * activation; c->act is ignored), dense NHWC [n, oh, ow, oc]: oneDNN's
 * own int8 layout, as is a source given NHWC by its strides, so that
 * neither is reordered.  Exact only where dnnl_int8_exact(). */
int dnnl_conv_s8(const struct dnnl_conv *c, const void *src, int src_u8, const int8_t *w,
		 int32_t *dst, int nthreads);
/* 1 when oneDNN's int8 products are exact s32 sums on this CPU (it has
 * VNNI: without it oneDNN halves s8 weights against overflow) and the
 * environment does not turn them off (TPUC_DNNL_INT8=0); the int8
 * kernels then use them, else their own C loops. */
int dnnl_int8_exact(void);
/* Allow (1) or forbid (0) those products from now on, whatever
 * TPUC_DNNL_INT8 says: the unit tests compare both kernels. */
void dnnl_int8_allow(int on);

/* Batched matrix product dst = alpha * a · b (+ dst when accumulate), then
 * act.  All three have the same rank r (2 to 12); the last two axes are
 * [m, k], [k, n] and [m, n]; batch axes of a and b are equal or 1
 * (broadcast), dst has the broadcast batch shape and is dense.  Strides of a
 * and b are in elements (a transpose is a stride swap). */
struct dnnl_matmul {
	int rank;
	int64_t a_dims[12], a_stride[12];
	int64_t b_dims[12], b_stride[12];
	int64_t c_dims[12];
	float alpha;
	int accumulate;              /* 1: add the product to dst's contents */
	struct dnnl_act act;
	int const_b;                 /* 1: b never changes while the cache is on */
};
int dnnl_matmul_f32(const struct dnnl_matmul *m, const float *a, const float *b,
		    float *dst, int nthreads);

/* The same product on int8 (A and B s8, or u8 when flagged), into the
 * exact s32 sums (alpha, accumulate and act are ignored).  Exact only where
 * dnnl_int8_exact(). */
int dnnl_matmul_s8(const struct dnnl_matmul *m, const void *a, int a_u8, const void *b, int b_u8,
		   int32_t *dst, int nthreads);

/* Weights reordered to oneDNN's layouts are kept between calls, keyed by
 * the caller's buffer, while the cache is on: dnnl_weights_cache(1) empties
 * and starts it, (0) empties and stops it.  Only buffers flagged constant
 * are cached, and they must keep their address and contents while it is on
 * (the interpreter turns it on for graph weights between interp_init and
 * interp_free). */
void dnnl_weights_cache(int on);

/* Dense row-major strides of a shape, in elements. */
void dnnl_dense_strides(int rank, const int64_t *dims, int64_t *stride);

#endif
