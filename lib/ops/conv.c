/* conv.c - Conv: 2-D convolution with stride, padding, dilation and groups
 * (depthwise included); y = conv(x, w) + b, then optional fused ReLU
 * (attributes do_relu, relu_limit).  Inputs x [N,C,H,W], w [OC,C/g,KH,KW],
 * optional b [OC]; output [N,OC,OH,OW].
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ir/op.h"
#include "run/dnnl_util.h"
#include "ops/kern_util.h"
#include "ops/spatial_nd.h"
#include "back/lower.h"
#include "quant/quant.h"

static int conv_infer(struct ir_graph *g, struct ir_op *op)
{
	struct spatial s;
	/* Tpu int8: [x, w, bias, multiplier, shift] or [x, w, coeff] */
	if (op_in(g, op, 0)->rank == SPATIAL_ND + 2)
		return spatial_nd_infer(g, op);   /* 3-D */
	if (spatial_get(g, op, &s) < 0)
		return -1;
	const struct ir_tensor *x = op_in(g, op, 0), *w = op_in(g, op, 1);
	if (x->rank != 4 || w->rank != 4)
		return op_error(op, "only 2-D convolution (4-D input and weight) is supported");
	if (x->shape[1] != w->shape[1] * s.group || w->shape[0] % s.group)
		return op_error(op, "channels %lld, weight [%lld,%lld,..] and group %d disagree",
				(long long)x->shape[1], (long long)w->shape[0],
				(long long)w->shape[1], s.group);
	const struct ir_tensor *b = op_in(g, op, 2);
	if (b && g->dialect == DIALECT_TOP && tensor_numel(b) != w->shape[0])
		return op_error(op, "bias has %lld values for %lld output channels",
				(long long)tensor_numel(b), (long long)w->shape[0]);
	int64_t shape[4] = {
		x->shape[0], w->shape[0],
		spatial_out((int)x->shape[2], s.kh, s.sh, s.dh, s.pt, s.pb, 0),
		spatial_out((int)x->shape[3], s.kw, s.sw, s.dw, s.pl, s.pr, 0),
	};
	if (shape[2] < 1 || shape[3] < 1)
		return op_error(op, "kernel larger than the padded input");
	op_set_out(g, op, 0, quant_acc_dtype(g, op, x->dtype), 4, shape);
	return 0;
}

static int64_t conv_macs(const struct ir_graph *g, const struct ir_op *op)
{
	const struct ir_tensor *w = &g->tensors[op->in[1]];
	const struct ir_tensor *y = &g->tensors[op->out[0]];
	return tensor_numel(y) * w->shape[1] * w->shape[2] * w->shape[3];
}

/* 1 when C is a 1x1 convolution of stride 1 without padding or groups,
 * over whole rows: a product of the weights [oc, ic] and each image's
 * [ic, h * w] in NCHW as it is, with no reorder of either side. */
static int conv_is_pointwise(const struct dnnl_conv *c)
{
	return c->kh == 1 && c->kw == 1 && c->sh == 1 && c->sw == 1 && c->group == 1 &&
	       c->pt == 0 && c->pb == 0 && c->pl == 0 && c->pr == 0 && c->ih == c->oh &&
	       c->iw == c->ow && c->src_stride[2] == c->iw && c->oh * c->ow > 0 && c->ic > 0;
}

/* conv_f32 of a pointwise C (conv_is_pointwise) on oneDNN's matrix
 * product, then the bias and the fused activation. */
static int conv_f32_pointwise(struct kern *k, const struct dnnl_conv *c, const float *src)
{
	int64_t p = c->oh * c->ow;
	struct dnnl_matmul mm = {
		.rank = 3, .a_dims = { 1, c->oc, c->ic }, .a_stride = { c->oc * c->ic, c->ic, 1 },
		.b_dims = { c->n, c->ic, p }, .b_stride = { c->src_stride[0], c->src_stride[1], 1 },
		.c_dims = { c->n, c->oc, p }, .alpha = 1,
	};
	float *y = k->out[0].data;
	if (dnnl_matmul_f32(&mm, k->in[1].data, src, y, k->nthreads) < 0)
		return op_error(k->op, "%s", err_msg());
	const float *b = k->in[2].data;
	float lo, hi;
	kern_act_bounds(k->op, &lo, &hi);
	int nt = kern_threads(k, c->n * c->oc, p);
	#pragma omp parallel for num_threads(nt) schedule(static)
	for (int64_t no = 0; no < c->n * c->oc; no++) {
		float t = b ? b[no % c->oc] : 0.0f, *yr = y + no * p;
		#pragma omp simd
		for (int64_t i = 0; i < p; i++) {
			float v = yr[i] + t;
			yr[i] = v < lo ? lo : v > hi ? hi : v;
		}
	}
	return 0;
}

/* Float reference on oneDNN.  Works on the input rows this invocation holds:
 * the top and bottom padding of the slice follow from the row offsets, and
 * rows (or columns) no window reads are left out of the source. */
static int conv_f32(struct kern *k)
{
	struct spatial s;
	struct kern_rows r;
	if (k->in[0].rank == SPATIAL_ND + 2)
		return spatial_nd_run(k);
	if (kern_window(k, 1, &s, &r) < 0)
		return -1;
	const struct view *x = &k->in[0], *y = &k->out[0];
	int64_t ih = x->shape[2], iw = x->shape[3];
	if (view_numel(y) == 0)
		return 0;
	struct dnnl_conv c = {
		.n = x->shape[0], .ic = x->shape[1], .ih = r.n, .iw = iw,
		.src_stride = { x->shape[1] * ih * iw, ih * iw, iw, 1 },
		.oc = y->shape[1], .oh = y->shape[2], .ow = y->shape[3],
		.kh = s.kh, .kw = s.kw, .sh = s.sh, .sw = s.sw, .dh = s.dh, .dw = s.dw,
		.pt = r.pt, .pb = r.pb, .pl = s.pl,
		.group = s.group, .act = dnnl_act_from_op(k->op),
		.const_weights = kern_is_const(k, 1),
	};
	int64_t pr = (c.ow - 1) * s.sw + (int64_t)(s.kw - 1) * s.dw + 1 - iw - s.pl;
	if (pr < 0) {
		c.iw += pr;
		pr = 0;
	}
	c.pr = (int)pr;
	const float *src = (const float *)x->data + r.first * iw;
	if (conv_is_pointwise(&c))
		return conv_f32_pointwise(k, &c, src);
	if (dnnl_conv_f32(&c, src, k->in[1].data, k->in[2].data, y->data, k->nthreads) < 0)
		return op_error(k->op, "%s", err_msg());
	return 0;
}

/* Int8 lowering: weights per output channel (axis 0), bias, multiplier and
 * shift as i32 [OC] inputs 2..4 (formats/tpuc-quant.5). */
static int conv_lower(struct lower_ctx *lc, const struct ir_op *op)
{
	if (lc->mode != MODE_INT8)
		return lower_float_bias(lc, op, 2);
	const struct ir_tensor *w = &lc->top->tensors[op->in[1]];
	const struct ir_tensor *b = op->n_in > 2 && op->in[2] >= 0 ? &lc->top->tensors[op->in[2]] : NULL;
	if (!w->data || w->dtype != DT_F32 || (b && (!b->data || b->dtype != DT_F32)))
		return op_error(op, "int8 lowering needs constant f32 weights and bias");
	int64_t oc = w->shape[0], per = tensor_numel(w) / oc;
	struct lower_pc pc = {
		.w = w->data, .wname = w->name, .wrank = w->rank, .wshape = w->shape,
		.b = b ? b->data : NULL, .bname = b ? b->name : NULL,
		.channels = oc, .per = per, .cstride = per, .estride = 1,
	};
	return lower_per_channel(lc, op, &pc) < 0 ? -1 : 0;
}

/* ---- int8 kernel ----
 * Exact int32 accumulation, then per-channel requantisation.  For speed the
 * input window of a tile of output rows is unfolded (im2col) into
 * col[K][P], K = IC/group * KH * KW taps and P positions, and blocks of 4
 * output channels accumulate acc[o][p] += w[o][k] * col[k][p] in long
 * contiguous loops the compiler vectorises (integer adds: the order does
 * not change the result).  Rows are whole-tensor rows offset by
 * k->out_row0 and k->in_row0 (op.h).  The input and output are i8 or u8
 * with zero points zx, zy: col holds q - zx in int16 (so padding, whose
 * value is the zero point, contributes 0: the zero-point correction of the
 * accumulator, exact), and zy is added after requantisation. */

#define CONV_OB 4                 /* output channels per accumulation block */
#define CONV_TILE_BYTES (4 << 20) /* im2col bytes per tile of output rows */

struct conv_i8 {
	const void *x;               /* i8 or u8 input, dtype xdt */
	const int8_t *w;
	void *y;                     /* i8 or u8 output, dtype ydt */
	enum ir_dtype xdt, ydt;
	int zx, zy;                  /* zero points of input and output */
	struct spatial s;
	int64_t c, xh, iw, oc, oh, ow, icg, ocg, kk;   /* kk: taps per output */
	int64_t full_h, in_row0, out_row0;
	int lo, hi;
	const struct kern *k;
};

/* Unfold input rows for output rows [r0, r0 + nr) of group g, batch b. */
static void conv_im2col(const struct conv_i8 *cv, int64_t b, int64_t g, int64_t r0,
			int64_t nr, int16_t *col)
{
	const struct spatial *s = &cv->s;
	int64_t p = nr * cv->ow;
	for (int64_t ic = 0; ic < cv->icg; ic++) {
		int64_t plane = ((b * cv->c + g * cv->icg + ic) * cv->xh) * cv->iw;
		for (int ky = 0; ky < s->kh; ky++)
			for (int kx = 0; kx < s->kw; kx++) {
				int16_t *dst = col + ((ic * s->kh + ky) * s->kw + kx) * p;
				int64_t off = (int64_t)kx * s->dw - s->pl;
				for (int64_t r = 0; r < nr; r++, dst += cv->ow) {
					int64_t ih = (cv->out_row0 + r0 + r) * s->sh - s->pt + (int64_t)ky * s->dh;
					if (ih < 0 || ih >= cv->full_h) {
						memset(dst, 0, sizeof *dst * (size_t)cv->ow);
						continue;
					}
					int64_t row = plane + (ih - cv->in_row0) * cv->iw;
					if (cv->xdt == DT_U8) {
						const uint8_t *xr = (const uint8_t *)cv->x + row;
						for (int64_t j = 0; j < cv->ow; j++) {
							int64_t iw = j * s->sw + off;
							dst[j] = iw >= 0 && iw < cv->iw ? (int16_t)(xr[iw] - cv->zx) : 0;
						}
					} else {
						const int8_t *xr = (const int8_t *)cv->x + row;
						for (int64_t j = 0; j < cv->ow; j++) {
							int64_t iw = j * s->sw + off;
							dst[j] = iw >= 0 && iw < cv->iw ? (int16_t)(xr[iw] - cv->zx) : 0;
						}
					}
				}
			}
	}
}

/* acc[i][p] = sum_k w[i][k] * col[k][p] for NO (<= CONV_OB) channels. */
__attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
static void conv_accumulate(const int8_t *w, int64_t kk, int no, const int16_t *col,
			    int64_t p, int32_t *acc)
{
	memset(acc, 0, sizeof *acc * (size_t)(p * no));
	int32_t *a0 = acc, *a1 = acc + p, *a2 = acc + 2 * p, *a3 = acc + 3 * p;
	for (int64_t t = 0; t < kk; t++) {
		const int16_t *cr = col + t * p;
		int32_t w0 = w[t], w1 = no > 1 ? w[kk + t] : 0;
		int32_t w2 = no > 2 ? w[2 * kk + t] : 0, w3 = no > 3 ? w[3 * kk + t] : 0;
		if (no == CONV_OB) {
			#pragma omp simd
			for (int64_t i = 0; i < p; i++) {
				int32_t v = cr[i];
				a0[i] += w0 * v;
				a1[i] += w1 * v;
				a2[i] += w2 * v;
				a3[i] += w3 * v;
			}
		} else {
			for (int o = 0; o < no; o++) {
				int32_t wo = w[o * kk + t];
				int32_t *ao = acc + o * p;
				#pragma omp simd
				for (int64_t i = 0; i < p; i++)
					ao[i] += wo * cr[i];
			}
		}
	}
}

/* Output channels [o0, o0 + no) of batch b, rows [r0, r0 + nr), from col. */
static int conv_block(const struct conv_i8 *cv, int64_t b, int64_t o0, int no, int64_t r0,
		      int64_t nr, const int16_t *col, int32_t *acc)
{
	int64_t p = nr * cv->ow;
	conv_accumulate(cv->w + o0 * cv->kk, cv->kk, no, col, p, acc);
	if (cv->ydt == DT_I32) {   /* a partial sum (attribute acc): the raw accumulator */
		for (int o = 0; o < no; o++)
			memcpy((int32_t *)cv->y + ((b * cv->oc + o0 + o) * cv->oh + r0) * cv->ow,
			       acc + o * p, sizeof *acc * (size_t)p);
		return 0;
	}
	for (int o = 0; o < no; o++) {
		int32_t bias, mult, shift;
		if (quant_channel_params(cv->k, 2, (int)(o0 + o), &bias, &mult, &shift) < 0)
			return -1;
		int64_t y0 = ((b * cv->oc + o0 + o) * cv->oh + r0) * cv->ow;
		const int32_t *ap = acc + o * p;
		for (int64_t i = 0; i < p; i++)
			quant_put(cv->y, cv->ydt, y0 + i, quant_requant_zp(quant_add_sat32(ap[i], bias),
									 mult, shift, cv->zy, cv->lo, cv->hi));
	}
	return 0;
}

/* The input rows and columns conv_dnnl's output rows read, with their
 * padding, as one dense NHWC buffer [n, hp, wp, c]: padding taps hold the
 * input's zero point, as in conv_im2col, so oneDNN runs without padding of
 * its own and the zero point's share of every window is the same. */
static void conv_pack_nhwc(const struct conv_i8 *cv, int64_t n, int64_t hp, int64_t wp,
			   unsigned char *pk, int nt)
{
	const struct spatial *s = &cv->s;
	int64_t c = cv->c, iw = cv->iw;
	int64_t j0 = s->pl < wp ? s->pl : wp;                    /* first real column */
	int64_t j1 = s->pl + iw < wp ? s->pl + iw : wp;          /* after the last */
	unsigned char z = (unsigned char)cv->zx;
	#pragma omp parallel for num_threads(nt) schedule(static)
	for (int64_t br = 0; br < n * hp; br++) {
		int64_t b = br / hp, r = br % hp;
		unsigned char *dst = pk + br * wp * c;
		int64_t ih = cv->out_row0 * s->sh - s->pt + r;
		if (ih < 0 || ih >= cv->full_h) {
			memset(dst, z, (size_t)(wp * c));
			continue;
		}
		memset(dst, z, (size_t)(j0 * c));
		if (j1 < wp)
			memset(dst + j1 * c, z, (size_t)((wp - j1) * c));
		const unsigned char *x = (const unsigned char *)cv->x +
					 ((b * c) * cv->xh + ih - cv->in_row0) * iw - s->pl;
		kern_transpose8(x + j0, c, j1 - j0, cv->xh * iw, dst + j0 * c, c);
	}
}

#define CONV_TILE_Q (32 << 10)   /* bytes of requantised NHWC rows per step of conv_dnnl */

/* The same on oneDNN's int8 convolution (s32 accumulators, exact where
 * dnnl_int8_exact()) over the packed input, then tpuc's requantisation
 * (quant_requant_rows, per output channel) from oneDNN's NHWC
 * accumulators into the NCHW output.  The zero point's share,
 * zx * sum(w) per channel, is taken off with the bias.  Returns 1 when
 * done, 0 when it does not apply, -1 on error. */
static int conv_dnnl(struct kern *k, const struct conv_i8 *cv)
{
	const struct view *xv = &k->in[0];
	int raw = cv->ydt == DT_I32;
	if (!dnnl_int8_exact() || (raw && cv->zx))
		return 0;
	const struct spatial *s = &cv->s;
	int64_t n = xv->shape[0], c = cv->c, oc = cv->oc, plane = cv->oh * cv->ow;
	int64_t hp = (cv->oh - 1) * s->sh + (int64_t)(s->kh - 1) * s->dh + 1;
	int64_t wp = (cv->ow - 1) * s->sw + (int64_t)(s->kw - 1) * s->dw + 1;
	struct dnnl_conv d = {
		.n = n, .ic = c, .ih = hp, .iw = wp,
		.src_stride = { hp * wp * c, 1, wp * c, c },
		.oc = oc, .oh = cv->oh, .ow = cv->ow,
		.kh = s->kh, .kw = s->kw, .sh = s->sh, .sw = s->sw, .dh = s->dh, .dw = s->dw,
		.group = s->group, .const_weights = kern_is_const(k, 1),
	};
	int nt = k->nthreads > 0 ? k->nthreads : 1, err = 0;
	struct quant_chan q = { 0 };
	if (!raw && quant_chan_init(&q, k, 2, oc, oc) < 0)
		return -1;
	if (!raw && cv->zx)
		for (int64_t o = 0; o < oc; o++) {
			int64_t sum = 0;
			const int8_t *wo = cv->w + o * cv->kk;
			#pragma omp simd reduction(+:sum)
			for (int64_t t = 0; t < cv->kk; t++)
				sum += wo[t];
			q.bias[o] -= cv->zx * sum;
		}
	unsigned char *pk = xaligned((size_t)(n * hp * wp * c) + 64);
	int32_t *acc = xaligned(sizeof *acc * (size_t)(n * plane * oc) + 64);
	conv_pack_nhwc(cv, n, hp, wp, pk, nt);
	if (dnnl_conv_s8(&d, pk, cv->xdt == DT_U8, cv->w, acc, nt) < 0) {
		err = op_error(k->op, "%s", err_msg());
		goto out;
	}
	/* tiles of positions (CONV_TILE_Q bytes): requantised NHWC rows, then each
	 * channel's run of positions stored into its NCHW plane */
	int64_t tile = CONV_TILE_Q / oc / 16 * 16;
	tile = tile < 16 ? 16 : tile;
	int64_t ntile = (plane + tile - 1) / tile;
	size_t es = raw ? sizeof(int32_t) : 1;
	#pragma omp parallel num_threads(nt)
	{
		unsigned char *tmp = xmalloc(es * (size_t)(tile * oc));
		#pragma omp for schedule(static)
		for (int64_t bt = 0; bt < n * ntile; bt++) {
			int64_t b = bt / ntile, p0 = bt % ntile * tile;
			int64_t np = plane - p0 < tile ? plane - p0 : tile;
			const int32_t *a = acc + (b * plane + p0) * oc;
			unsigned char *y = (unsigned char *)cv->y + (b * oc * plane + p0) * es;
			if (raw) {
				for (int64_t o = 0; o < oc; o++)
					for (int64_t p = 0; p < np; p++)
						((int32_t *)y)[o * plane + p] = a[p * oc + o];
				continue;
			}
			quant_requant_rows(a, np, &q, cv->zy, cv->lo, cv->hi, tmp, cv->ydt);
			kern_transpose8(tmp, np, oc, oc, y, plane);
		}
		free(tmp);
	}
	err = 1;
out:
	free(pk);
	free(acc);
	quant_chan_free(&q);
	return err;
}

static int conv_tpu(struct kern *k)
{
	if (quant_is_float(k->out[0].dtype))
		return quant_run_f32(k);
	const struct view *xv = &k->in[0], *wv = &k->in[1], *yv = &k->out[0];
	struct conv_i8 cv = { .k = k };
	struct kern_rows rows;
	if (spatial_get(k->g, k->op, &cv.s) < 0)
		return -1;
	int raw = yv->dtype == DT_I32;
	if (!quant_is_q(xv->dtype) || wv->dtype != DT_I8 || (!quant_is_q(yv->dtype) && !raw))
		return op_error(k->op, "int8 kernel needs i8 or u8 input and output, i8 weight");
	if (view_numel(yv) == 0)
		return 0;
	if (kern_window_rows(k, cv.s.kh, cv.s.sh, cv.s.dh, cv.s.pt, &rows) < 0)
		return -1;
	cv.x = xv->data;
	cv.w = wv->data;
	cv.y = yv->data;
	cv.xdt = xv->dtype;
	cv.ydt = yv->dtype;
	cv.zx = xv->zero_point;
	cv.zy = yv->zero_point;
	cv.c = xv->shape[1];
	cv.xh = xv->shape[2];
	cv.iw = xv->shape[3];
	cv.oc = yv->shape[1];
	cv.oh = yv->shape[2];
	cv.ow = yv->shape[3];
	cv.icg = wv->shape[1];
	cv.ocg = cv.oc / cv.s.group;
	cv.kk = cv.icg * cv.s.kh * cv.s.kw;
	cv.full_h = rows.full_h;
	cv.in_row0 = k->in_row0;
	cv.out_row0 = k->out_row0;
	if (cv.icg * cv.s.group != cv.c || cv.ocg * cv.s.group != cv.oc)
		return op_error(k->op, "channels and group disagree");
	if (!raw && quant_check_channel_params(k, 2, cv.oc) < 0)
		return -1;
	quant_out_bounds(k->op, yv->dtype, yv->scale, yv->zero_point, &cv.lo, &cv.hi);
	int done = conv_dnnl(k, &cv);
	if (done)
		return done < 0 ? -1 : 0;

	/* Tiles of output rows whose unfolded input fits CONV_TILE_BYTES. */
	int64_t tile = CONV_TILE_BYTES / ((int64_t)sizeof(int16_t) * cv.kk * cv.ow);
	tile = tile < 1 ? 1 : tile > cv.oh ? cv.oh : tile;
	int64_t nb = xv->shape[0], ntiles = (cv.oh + tile - 1) / tile;
	int64_t nob = (cv.ocg + CONV_OB - 1) / CONV_OB;
	size_t colsz = sizeof(int16_t) * (size_t)(cv.kk * tile * cv.ow), accsz = (size_t)(CONV_OB * tile * cv.ow);
	int nt = k->nthreads > 0 ? k->nthreads : 1, err = 0;
	if (cv.s.group == 1) {
		/* one unfolded tile shared by the threads, each taking channel blocks */
		int16_t *col = xmalloc(colsz);
		for (int64_t b = 0; b < nb; b++)
			for (int64_t t = 0; t < ntiles; t++) {
				int64_t r0 = t * tile, nr = r0 + tile > cv.oh ? cv.oh - r0 : tile;
				conv_im2col(&cv, b, 0, r0, nr, col);
				#pragma omp parallel num_threads(nt) reduction(max:err)
				{
					int32_t *acc = xmalloc(sizeof(int32_t) * accsz);
					#pragma omp for schedule(static)
					for (int64_t ob = 0; ob < nob; ob++) {
						int64_t o0 = ob * CONV_OB;
						int no = (int)(cv.oc - o0 < CONV_OB ? cv.oc - o0 : CONV_OB);
						if (conv_block(&cv, b, o0, no, r0, nr, col, acc) < 0)
							err = 1;
					}
					free(acc);
				}
			}
		free(col);
	} else {
		/* grouped and depthwise: each thread unfolds its own groups */
		#pragma omp parallel num_threads(nt) reduction(max:err)
		{
			int16_t *col = xmalloc(colsz);
			int32_t *acc = xmalloc(sizeof(int32_t) * accsz);
			#pragma omp for collapse(2) schedule(static)
			for (int64_t b = 0; b < nb; b++)
				for (int64_t g = 0; g < cv.s.group; g++)
					for (int64_t t = 0; t < ntiles; t++) {
						int64_t r0 = t * tile, nr = r0 + tile > cv.oh ? cv.oh - r0 : tile;
						conv_im2col(&cv, b, g, r0, nr, col);
						for (int64_t ob = 0; ob < nob; ob++) {
							int64_t o0 = g * cv.ocg + ob * CONV_OB;
							int64_t left = (g + 1) * cv.ocg - o0;
							int no = (int)(left < CONV_OB ? left : CONV_OB);
							if (conv_block(&cv, b, o0, no, r0, nr, col, acc) < 0)
								err = 1;
						}
					}
			free(col);
			free(acc);
		}
	}
	return err ? -1 : 0;
}

const struct op_def op_def_CONV = {
	.infer = conv_infer, .run_f32 = conv_f32, .lower = conv_lower, .run_tpu = conv_tpu,
	.macs = conv_macs, .slice_h = slice_h_window, .split_axis = split_axis_batch,
	.split_window = split_window_spatial,
};
