/* convtranspose.c - 2-D ConvTranspose (NCHW, weight [C_in, C_out/group,
 * KH, KW], optional bias; attributes kernel_shape, strides, dilations,
 * pads [top, left, bottom, right] resolved by the importer, output_padding,
 * group) and GlobalMaxPool (any rank >= 3).  f32, plain C: each input pixel
 * scatters into the output window it feeds.  Int8 ConvTranspose takes its
 * weight per output channel in Conv's layout [C_out, C_in/group, KH, KW]
 * (formats/tpuc-quant.5); int8 GlobalMaxPool takes the max of the codes.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/kern_util.h"
#include "ops/spatial_nd.h"
#include "back/lower.h"
#include "ir/op.h"
#include "quant/quant.h"

struct deconv {
	int64_t kh, kw, sh, sw, dh, dw, pt, pl, pb, pr, oph, opw, group;
};

static int deconv_get(const struct ir_op *op, struct deconv *d)
{
	int64_t v[4];
	d->kh = d->kw = 0;
	if (op_ints(op, "kernel_shape", v, 4) == 2)
		d->kh = v[0], d->kw = v[1];
	d->sh = d->sw = d->dh = d->dw = 1;
	d->pt = d->pl = d->pb = d->pr = d->oph = d->opw = 0;
	if (op_ints(op, "strides", v, 4) == 2)
		d->sh = v[0], d->sw = v[1];
	if (op_ints(op, "dilations", v, 4) == 2)
		d->dh = v[0], d->dw = v[1];
	if (op_ints(op, "pads", v, 4) == 4)
		d->pt = v[0], d->pl = v[1], d->pb = v[2], d->pr = v[3];
	if (op_ints(op, "output_padding", v, 4) == 2)
		d->oph = v[0], d->opw = v[1];
	d->group = op_int(op, "group", 1);
	if (d->kh < 1 || d->kw < 1 || d->sh < 1 || d->sw < 1 || d->dh < 1 || d->dw < 1 || d->group < 1)
		return op_error(op, "kernel, strides, dilations or group out of range");
	/* bounded so the output extents cannot overflow */
	const int64_t all[] = { d->kh, d->kw, d->sh, d->sw, d->dh, d->dw, d->group,
				d->pt, d->pl, d->pb, d->pr, d->oph, d->opw };
	for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
		if (all[i] < 0 || all[i] > (1 << 24))
			return op_error(op, "kernel, strides, dilations, pads or group out of range");
	return 0;
}

static int deconv_infer(struct ir_graph *g, struct ir_op *op)
{
	/* Tpu int8: [x, w, bias, multiplier, shift] or [x, w, coeff] */
	const struct ir_tensor *x = op_in(g, op, 0), *w = op_in(g, op, 1), *b = op_in(g, op, 2);
	struct deconv d;
	if (x->rank == SPATIAL_ND + 2 && (g->dialect == DIALECT_TOP || op->place == PLACE_HOST))
		return deconv_nd_infer(g, op);   /* 3-D */
	if (deconv_get(op, &d) < 0)
		return -1;
	/* Tpu int8 (an i8 weight): the weight is [C_out, C_in/group, KH, KW] */
	int q = g->dialect == DIALECT_TPU && w->dtype == DT_I8;
	if ((!q && (x->dtype != DT_F32 || w->dtype != DT_F32)) || x->rank != 4 || w->rank != 4)
		return op_error(op, "needs f32 4-D input and weight");
	int64_t cin = q ? w->shape[1] * d.group : w->shape[0];
	if (cin != x->shape[1] || x->shape[1] % d.group || (q && w->shape[0] % d.group) ||
	    w->shape[2] != d.kh || w->shape[3] != d.kw)
		return op_error(op, "weight '%s' does not fit the input", w->name);
	int64_t c = q ? w->shape[0] : w->shape[1] * d.group;
	if (b && g->dialect == DIALECT_TOP && tensor_numel(b) != c)
		return op_error(op, "bias must have one value per output channel");
	int64_t shape[4] = {
		x->shape[0], c,
		d.sh * (x->shape[2] - 1) + d.oph + (d.kh - 1) * d.dh + 1 - d.pt - d.pb,
		d.sw * (x->shape[3] - 1) + d.opw + (d.kw - 1) * d.dw + 1 - d.pl - d.pr,
	};
	if (shape[2] < 1 || shape[3] < 1)
		return op_error(op, "empty output");
	op_set_out(g, op, 0, q ? quant_acc_dtype(g, op, x->dtype) == DT_I32 ? DT_I32 : DT_F32 : DT_F32,
		   4, shape);
	return 0;
}

/* The inner loops of both kernels: scatter input plane XVAL(i) (ih x iw,
 * rows from k->in_row0) through kernel plane W (d.kh x d.kw, weights as
 * WT) into output plane ACC (oh x ow, rows from k->out_row0). */
#define DECONV_SCATTER(ACC, W, WT, XVAL) \
	for (int64_t y0 = 0; y0 < ih; y0++) \
		for (int64_t ky = 0; ky < d.kh; ky++) { \
			int64_t yy = (y0 + k->in_row0) * d.sh - d.pt + ky * d.dh - k->out_row0; \
			if (yy < 0 || yy >= oh) \
				continue; \
			for (int64_t kx = 0; kx < d.kw; kx++) { \
				WT wv_ = (W)[ky * d.kw + kx]; \
				for (int64_t x0 = 0; x0 < iw; x0++) { \
					int64_t xx = x0 * d.sw - d.pl + kx * d.dw; \
					if (xx >= 0 && xx < ow) \
						(ACC)[yy * ow + xx] += XVAL(y0 * iw + x0) * wv_; \
				} \
			} \
		}

static int deconv_run(struct kern *k)
{
	if (k->in[0].rank == SPATIAL_ND + 2)
		return deconv_nd_run(k);
	if (kern_need_f32(k) < 0)
		return -1;
	struct deconv d;
	if (deconv_get(k->op, &d) < 0)
		return -1;
	const struct view *x = &k->in[0], *w = &k->in[1], *y = &k->out[0];
	const float *xd = x->data, *wd = w->data, *bd = k->n_in > 2 ? k->in[2].data : NULL;
	float *yd = y->data;
	int64_t n = x->shape[0], ci = x->shape[1], ih = x->shape[2], iw = x->shape[3];
	int64_t co = y->shape[1], oh = y->shape[2], ow = y->shape[3];
	int64_t cig = ci / d.group, cog = co / d.group;
	int nt = kern_threads(k, n * co, ih * iw * cig * d.kh * d.kw);

	#pragma omp parallel for num_threads(nt) schedule(static)
	for (int64_t no = 0; no < n * co; no++) {
		int64_t b = no / co, oc = no % co, g = oc / cog, ocl = oc % cog;
		float *yp = yd + no * oh * ow;
		for (int64_t i = 0; i < oh * ow; i++)
			yp[i] = bd ? bd[oc] : 0.0f;
		for (int64_t c = g * cig; c < (g + 1) * cig; c++) {
			const float *xp = xd + (b * ci + c) * ih * iw;
			const float *wp = wd + (c * cog + ocl) * d.kh * d.kw;
#define X_F32(i) xp[i]
			DECONV_SCATTER(yp, wp, float, X_F32);
#undef X_F32
		}
	}
	return 0;
}

/* numel(x) x C_out/group x KH x KW, in either weight layout. */
static int64_t deconv_macs(const struct ir_graph *g, const struct ir_op *op)
{
	const struct ir_tensor *x = &g->tensors[op->in[0]], *w = &g->tensors[op->in[1]];
	const struct ir_tensor *y = &g->tensors[op->out[0]];
	int64_t grp = op_int(op, "group", 1);
	if (grp < 1 || y->rank != 4 || w->rank != 4)
		return 0;
	return tensor_numel(x) * (y->shape[1] / grp) * w->shape[2] * w->shape[3];
}

/* Float modes: like Conv, the inputs in the mode's dtype but a constant
 * bias kept f32 (it is added to an f32 accumulator).  Int8 (constant
 * weight and bias, else the fallback float mode): the weight is
 * reordered to [C_out, C_in/group, KH, KW] (output channel oc = g * cog + o
 * reads input channels g * cig ...) and quantised per output channel, with
 * bias, multiplier and shift as i32 [C_out] inputs 2..4, as Conv. */
static int deconv_lower(struct lower_ctx *lc, const struct ir_op *op)
{
	if (lc->mode != MODE_INT8)
		return lower_float_bias(lc, op, 2);
	const struct ir_tensor *w = &lc->top->tensors[op->in[1]];
	const struct ir_tensor *b = op->n_in > 2 && op->in[2] >= 0 ? &lc->top->tensors[op->in[2]] : NULL;
	if (!w->data || w->dtype != DT_F32 || w->rank != 4 || (b && (!b->data || b->dtype != DT_F32)))
		return lower_fallback(lc, op);
	int64_t grp = op_int(op, "group", 1);
	int64_t ci = w->shape[0], cog = w->shape[1], kk = w->shape[2] * w->shape[3];
	if (grp < 1 || ci % grp)
		return op_error(op, "group %lld does not divide %lld input channels",
				(long long)grp, (long long)ci);
	int64_t cig = ci / grp, co = cog * grp, per = cig * kk;
	const float *wd = w->data;
	float *wp = xmalloc(sizeof(float) * (size_t)(co * per + 1));
	for (int64_t oc = 0; oc < co; oc++) {
		int64_t g = oc / cog, o = oc % cog;
		for (int64_t c = 0; c < cig; c++)
			memcpy(wp + (oc * cig + c) * kk, wd + ((g * cig + c) * cog + o) * kk,
			       sizeof(float) * (size_t)kk);
	}
	int64_t shape[4] = { co, cig, w->shape[2], w->shape[3] };
	struct lower_pc pc = {
		.w = wp, .wname = w->name, .wrank = 4, .wshape = shape,
		.b = b ? b->data : NULL, .bname = b ? b->name : NULL,
		.channels = co, .per = per, .cstride = per, .estride = 1,
	};
	int rc = lower_per_channel(lc, op, &pc);
	free(wp);
	return rc < 0 ? -1 : 0;
}

/* Int8: exact int32 accumulation of (x - zx) * w over every input pixel and
 * tap that reaches an output pixel (integer adds: the order does not change
 * the result), the bias added with saturation, then per-channel
 * requantisation with the output's zero point (quant_requant_zp).  Both
 * kernels run on slices along H (deconv_slice_h): input rows in_row0 + r
 * scatter into output rows out_row0 + r', those outside the slice dropped;
 * every output row of the slice receives its taps in the same order as
 * over whole tensors, so slices give the same bits. */
static int deconv_tpu(struct kern *k)
{
	if (quant_is_float(k->out[0].dtype))
		return quant_run_f32(k);
	const struct view *xv = &k->in[0], *wv = &k->in[1], *yv = &k->out[0];
	struct deconv d;
	if (deconv_get(k->op, &d) < 0)
		return -1;
	int raw = yv->dtype == DT_I32;   /* a partial sum (attribute acc) */
	if (!quant_is_q(xv->dtype) || wv->dtype != DT_I8 || (!quant_is_q(yv->dtype) && !raw))
		return op_error(k->op, "int8 kernel needs i8 or u8 input and output, i8 weight");
	int64_t n = xv->shape[0], ci = xv->shape[1], ih = xv->shape[2], iw = xv->shape[3];
	int64_t co = yv->shape[1], oh = yv->shape[2], ow = yv->shape[3];
	if (wv->rank != 4 || ci % d.group || co % d.group || wv->shape[0] != co ||
	    wv->shape[1] != ci / d.group || wv->shape[2] != d.kh || wv->shape[3] != d.kw)
		return op_error(k->op, "int8 weight must be [C_out, C_in/group, KH, KW]");
	if (!raw && quant_check_channel_params(k, 2, co) < 0)
		return -1;
	int lo, hi, zx = xv->zero_point, zy = yv->zero_point;
	quant_out_bounds(k->op, yv->dtype, yv->scale, zy, &lo, &hi);
	int64_t cig = ci / d.group, cog = co / d.group, kk = d.kh * d.kw;
	const int8_t *wd = wv->data;
	int nt = kern_threads(k, n * co, ih * iw * cig * kk), err = 0;

	#pragma omp parallel num_threads(nt) reduction(max:err)
	{
		int32_t *acc = xmalloc(sizeof(int32_t) * (size_t)(oh * ow + 1));
		#pragma omp for schedule(static)
		for (int64_t no = 0; no < n * co; no++) {
			int64_t b = no / co, oc = no % co, g = oc / cog;
			int32_t bias = 0, mult = 0, shift = 0;
			if (!raw && quant_channel_params(k, 2, (int)oc, &bias, &mult, &shift) < 0) {
				err = 1;
				continue;
			}
			memset(acc, 0, sizeof(int32_t) * (size_t)(oh * ow));
			for (int64_t c = 0; c < cig; c++) {
				int64_t xp = (b * ci + g * cig + c) * ih * iw;
				const int8_t *wp = wd + (oc * cig + c) * kk;
#define X_Q(i) (quant_get(xv->data, xv->dtype, xp + (i)) - zx)
				DECONV_SCATTER(acc, wp, int32_t, X_Q);
#undef X_Q
			}
			int64_t y0 = no * oh * ow;
			if (raw)
				memcpy((int32_t *)yv->data + y0, acc, sizeof *acc * (size_t)(oh * ow));
			for (int64_t i = 0; i < oh * ow && !raw; i++)
				quant_put(yv->data, yv->dtype, y0 + i,
					  quant_requant_zp(quant_add_sat32(acc[i], bias), mult, shift, zy, lo, hi));
		}
		free(acc);
	}
	return err ? -1 : 0;
}

/* ---- GlobalMaxPool ---- */

static int gmaxpool_infer(struct ir_graph *g, struct ir_op *op)
{
	const struct ir_tensor *x = op_in(g, op, 0);
	if (x->dtype != DT_F32 || x->rank < 3)
		return op_error(op, "needs an f32 input of rank 3 or more");
	int64_t shape[IR_MAX_RANK];
	for (int d = 0; d < x->rank; d++)
		shape[d] = d < 2 ? x->shape[d] : 1;
	op_set_out(g, op, 0, DT_F32, x->rank, shape);
	return 0;
}

static int gmaxpool_run(struct kern *k)
{
	const struct view *x = &k->in[0];
	int64_t nc = x->shape[0] * x->shape[1], n = nc ? view_numel(x) / nc : 0;
	const float *xd = x->data;
	float *y = k->out[0].data;
	for (int64_t o = 0; o < nc; o++) {
		float m = -INFINITY;
		for (int64_t i = 0; i < n; i++)
			m = xd[o * n + i] > m ? xd[o * n + i] : m;
		y[o] = m;
	}
	return 0;
}

/* Int8: the output keeps the input's dtype, scale and zero point
 * (lower_default), so the max of the codes is the quantised max. */
static int gmaxpool_tpu(struct kern *k)
{
	const struct view *x = &k->in[0], *y = &k->out[0];
	if (quant_is_float(y->dtype))
		return quant_run_f32(k);
	if (!quant_is_q(x->dtype) || y->dtype != x->dtype || y->zero_point != x->zero_point)
		return op_error(k->op, "int8 kernel needs i8 or u8 input and output of one dtype and zero point");
	int64_t nc = x->shape[0] * x->shape[1], n = nc ? view_numel(x) / nc : 0;
	for (int64_t o = 0; o < nc; o++) {
		int m = INT32_MIN;
		for (int64_t i = 0; i < n; i++) {
			int v = quant_get(x->data, x->dtype, o * n + i);
			m = v > m ? v : m;
		}
		quant_put(y->data, y->dtype, o, m);
	}
	return 0;
}

/* Output rows [oh0, oh1) receive taps from input rows i with
 * i * sh - pt + ky * dh in [oh0, oh1) for some tap ky: i from
 * ceil((oh0 + pt - (kh - 1) * dh) / sh) to floor((oh1 - 1 + pt) / sh).  Rows
 * no input reaches (a stride above the kernel) still take one input row,
 * so that every slice reads something. */
static void deconv_slice_h(const struct ir_graph *g, const struct ir_op *op,
			   int oh0, int oh1, int *ih0, int *ih1)
{
	struct deconv d;
	int64_t h = g->tensors[op->in[0]].shape[2];
	if (deconv_get(op, &d) < 0) {
		*ih0 = -1;
		*ih1 = 0;
		return;
	}
	int64_t lo = oh0 + d.pt - (d.kh - 1) * d.dh, hi = oh1 - 1 + d.pt;
	lo = lo <= 0 ? 0 : (lo + d.sh - 1) / d.sh;
	hi = hi < 0 ? 0 : hi / d.sh + 1;
	if (hi > h)
		hi = h;
	if (lo >= h)
		lo = h - 1;
	if (hi <= lo)
		hi = lo + 1;
	*ih0 = (int)lo;
	*ih1 = (int)hi;
}

static int64_t floor_div(int64_t n, int64_t d)
{
	return n >= 0 ? n / d : -((-n + d - 1) / d);
}

/* Parts along W: output columns [o0, o1) come from the input columns
 * whose windows reach them (one at least); the part's left pad crops what
 * its columns write before o0, its right pad what they write after o1, or,
 * when they do not reach o1, its output_padding adds the columns only the
 * bias reaches. */
static int deconv_split_window(const struct ir_graph *g, const struct ir_op *op, int ax,
			       int64_t o0, int64_t o1, int64_t *i0, int64_t *i1, struct ir_op *part)
{
	const struct ir_tensor *x = &g->tensors[op->in[0]];
	struct deconv d;
	if (ax != 3 || x->rank != 4 || op->place == PLACE_HOST || deconv_get(op, &d) < 0)
		return 0;
	int64_t iw = x->shape[3], ext = (d.kw - 1) * d.dw;
	int64_t a = floor_div(o0 + d.pl - ext, d.sw), b = floor_div(o1 - 1 + d.pl, d.sw) + 1;
	a = a < 0 ? 0 : a >= iw ? iw - 1 : a;
	b = b > iw ? iw : b <= a ? a + 1 : b;
	*i0 = a;
	*i1 = b;
	if (part) {
		int64_t pl = o0 + d.pl - a * d.sw, full = (b - a - 1) * d.sw + ext + 1;
		int64_t pr = full - pl - (o1 - o0), opw = 0;
		if (pr < 0) {
			opw = -pr;
			pr = 0;
		}
		int64_t pads[4] = { d.pt, pl, d.pb, pr }, outpad[2] = { d.oph, opw };
		op_set_ints(part, "pads", 4, pads);
		op_set_ints(part, "output_padding", 2, outpad);
	}
	return 1;
}

const struct op_def op_def_CONVTRANSPOSE = {
	.infer = deconv_infer,
	.run_f32 = deconv_run,
	.lower = deconv_lower,
	.run_tpu = deconv_tpu,
	.macs = deconv_macs,
	.slice_h = deconv_slice_h,
	.split_axis = split_axis_batch, .split_window = deconv_split_window,
};

const struct op_def op_def_GMAXPOOL = {
	.infer = gmaxpool_infer, .run_f32 = gmaxpool_run, .lower = lower_default,
	.run_tpu = gmaxpool_tpu, .split_axis = split_axis_nc,
};
