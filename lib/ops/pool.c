/* pool.c - MaxPool, AveragePool and GlobalAveragePool over NCHW tensors.
 * Attributes kernel_shape, strides, pads, ceil_mode, dilations,
 * count_include_pad (AveragePool: the divisor counts the taps inside the
 * input, or inside the padded input).
 */
#include <math.h>
#include <stdlib.h>

#include "ops/anydtype.h"
#include "ops/kern_util.h"
#include "ops/spatial_nd.h"
#include "ir/op.h"
#include "back/lower.h"
#include "quant/quant.h"

static int pool_infer(struct ir_graph *g, struct ir_op *op)
{
	struct spatial s;
	if (op_in(g, op, 0)->rank == SPATIAL_ND + 2 && op->n_out == 1)
		return spatial_nd_infer(g, op);   /* 3-D */
	if (spatial_get(g, op, &s) < 0)
		return -1;
	const struct ir_tensor *x = op_in(g, op, 0);
	if (x->rank != 4)
		return op_error(op, "only 2-D pooling (4-D input) is supported");
	int64_t shape[4];
	if (pool_out_shape(op, x, &s, shape) < 0)
		return -1;
	op_set_out(g, op, 0, x->dtype, 4, shape);
	return 0;
}

static int gap_infer(struct ir_graph *g, struct ir_op *op)
{
	const struct ir_tensor *x = op_in(g, op, 0);
	if (x->rank < 3)
		return op_error(op, "input needs spatial axes");
	int64_t shape[IR_MAX_RANK];
	for (int i = 0; i < x->rank; i++)
		shape[i] = i < 2 ? x->shape[i] : 1;
	op_set_out(g, op, 0, x->dtype, x->rank, shape);
	return 0;
}

/* One add (or compare) per input element in the window. */
static int64_t pool_macs(const struct ir_graph *g, const struct ir_op *op)
{
	int64_t k[2] = { 1, 1 };
	op_ints(op, "kernel_shape", k, 2);
	return tensor_numel(&g->tensors[op->out[0]]) * k[0] * k[1];
}

static int64_t gap_macs(const struct ir_graph *g, const struct ir_op *op)
{
	return tensor_numel(&g->tensors[op->in[0]]);
}

/* Float reference of MaxPool and AveragePool in whole-input coordinates, so
 * that H-slices give the rows of the whole result.  Taps outside the input
 * are skipped; AveragePool with count_include_pad divides by the taps inside
 * the padded input [-pt, H + pb) x [-pl, W + pr) (ceil_mode windows that run
 * past it count only that part), as PyTorch and ONNX do. */
/* Taps t in [0, k) with start + t * d inside [lo, hi): sets [*t0, *t1). */
static void tap_range(int64_t start, int k, int d, int64_t lo, int64_t hi, int *t0, int *t1)
{
	int64_t a = start < lo ? (lo - start + d - 1) / d : 0;
	int64_t b = start < hi ? (hi - start + d - 1) / d : 0;
	*t0 = (int)(a < k ? a : k);
	*t1 = (int)(b < k ? b : k);
	if (*t1 < *t0)
		*t1 = *t0;
}

static int pool_f32_common(struct kern *k, int is_max)
{
	struct spatial s;
	struct kern_rows r;
	if (k->in[0].rank == SPATIAL_ND + 2)
		return spatial_nd_run(k);
	if (!kern_all_f32(k))
		return pool_run_any(k);   /* u8 MaxPool ... */
	if (kern_window(k, 1, &s, &r) < 0)
		return -1;
	const struct view *x = &k->in[0], *y = &k->out[0];
	int64_t planes = x->shape[0] * x->shape[1], ih = x->shape[2], iw = x->shape[3];
	int64_t oh = y->shape[2], ow = y->shape[3], full = r.full_h;
	int incl = (int)op_int(k->op, "count_include_pad", 0);
	const float *xd = x->data;
	float *yd = y->data;
	int nt = kern_threads(k, planes, oh * ow * s.kh * s.kw);
	if (oh * ow == 0)
		return 0;

	/* One output row at a time: for each tap, every output column whose
	 * tap lies inside the input, so the inner loop has no tests. */
	#pragma omp parallel num_threads(nt)
	{
		float *mx = xmalloc((size_t)ow * sizeof *mx);
		double *sum = xmalloc((size_t)ow * sizeof *sum);
		#pragma omp for schedule(static)
		for (int64_t p = 0; p < planes; p++) {
			const float *xp = xd + p * ih * iw;
			float *yp = yd + p * oh * ow;
			for (int64_t i = 0; i < oh; i++) {
				int64_t h0 = (k->out_row0 + i) * s.sh - s.pt;
				int a0, a1, pa0, pa1;
				tap_range(h0, s.kh, s.dh, 0, full, &a0, &a1);
				tap_range(h0, s.kh, s.dh, -s.pt, full + s.pb, &pa0, &pa1);
				for (int64_t j = 0; j < ow; j++) {
					mx[j] = -INFINITY;
					sum[j] = 0;
				}
				for (int a = a0; a < a1; a++) {
					const float *row = xp + (h0 + (int64_t)a * s.dh - k->in_row0) * iw;
					for (int b = 0; b < s.kw; b++) {
						/* columns j with 0 <= j*sw - pl + b*dw < iw */
						int64_t off = (int64_t)b * s.dw - s.pl;
						int64_t j0 = off >= 0 ? 0 : (-off + s.sw - 1) / s.sw;
						int64_t j1 = iw - off <= 0 ? 0 : (iw - off + s.sw - 1) / s.sw;
						j1 = j1 < ow ? j1 : ow;
						if (is_max) {
							#pragma omp simd
							for (int64_t j = j0; j < j1; j++) {
								float v = row[off + j * s.sw];
								mx[j] = v > mx[j] || v != v ? v : mx[j];
							}
						} else {
							#pragma omp simd
							for (int64_t j = j0; j < j1; j++)
								sum[j] += row[off + j * s.sw];
						}
					}
				}
				for (int64_t j = 0; j < ow; j++) {
					if (is_max) {
						yp[i * ow + j] = mx[j];
						continue;
					}
					int64_t w0 = j * s.sw - s.pl;
					int b0, b1;
					if (incl) {
						tap_range(w0, s.kw, s.dw, -s.pl, iw + s.pr, &b0, &b1);
						a0 = pa0;
						a1 = pa1;
					} else {
						tap_range(w0, s.kw, s.dw, 0, iw, &b0, &b1);
					}
					int64_t cnt = (int64_t)(a1 - a0) * (b1 - b0);
					yp[i * ow + j] = (float)(sum[j] / (double)(cnt ? cnt : 1));
				}
			}
		}
		free(mx);
		free(sum);
	}
	return 0;
}

static int maxpool_f32(struct kern *k)
{
	return pool_f32_common(k, 1);
}

static int avgpool_f32(struct kern *k)
{
	return pool_f32_common(k, 0);
}

/* Mean over every axis after the first two. */
static int gap_f32(struct kern *k)
{
	if (kern_need_f32(k) < 0)
		return -1;
	const struct view *x = &k->in[0];
	int64_t planes = x->shape[0] * x->shape[1], n = view_numel(x) / (planes ? planes : 1);
	const float *xd = x->data;
	float *yd = k->out[0].data;
	int nt = kern_threads(k, planes, n);

	#pragma omp parallel for num_threads(nt) schedule(static)
	for (int64_t p = 0; p < planes; p++) {
		double sum = 0;
		for (int64_t i = 0; i < n; i++)
			sum += xd[p * n + i];
		yd[p] = (float)(sum / (double)n);
	}
	return 0;
}

/* Int8 lowering of the averaging pools: the output scale comes from the
 * table and the window sum is requantised by multiplier / 2^rshift ~
 * s_in / (s_out * taps) (attributes multiplier, rshift).  AveragePool needs
 * every window to count the same taps (no partial windows at the edges). */
static int avg_lower_common(struct lower_ctx *lc, const struct ir_op *op, int64_t taps)
{
	enum ir_dtype dt;
	float s_out;
	int zp, x = lower_act_io(lc, op, &dt, &s_out, &zp);
	if (x < 0)
		return -1;
	int32_t m, shift;
	if (quant_multiplier((double)lc->tpu->tensors[x].scale / ((double)s_out * taps),
			     &m, &shift) < 0) {
		char why[256];
		snprintf(why, sizeof why, "%s", err_msg());
		return op_error(op, "%s", why);
	}
	int y = lower_output(lc, op->out[0], dt, s_out, zp);
	int k = lower_emit(lc, op, 1, &x, 1, &y);
	struct ir_op *o = &lc->tpu->ops[k];
	op_set_int(o, "multiplier", m);
	op_set_int(o, "rshift", shift);
	return 0;
}

static int avgpool_lower(struct lower_ctx *lc, const struct ir_op *op)
{
	if (lc->mode != MODE_INT8)
		return lower_default(lc, op);
	struct spatial s;
	if (spatial_get(lc->top, op, &s) < 0)
		return -1;
	const struct ir_tensor *x = &lc->top->tensors[op->in[0]];
	const struct ir_tensor *y = &lc->top->tensors[op->out[0]];
	int incl = (int)op_int(op, "count_include_pad", 0);
	int pads = s.pt || s.pl || s.pb || s.pr;
	int64_t eh = (y->shape[2] - 1) * s.sh + (int64_t)(s.kh - 1) * s.dh + 1;
	int64_t ew = (y->shape[3] - 1) * s.sw + (int64_t)(s.kw - 1) * s.dw + 1;
	/* one divisor for every window, or the fallback float mode */
	if ((pads && !incl) || eh > x->shape[2] + s.pt + s.pb || ew > x->shape[3] + s.pl + s.pr)
		return lower_fallback(lc, op);
	return avg_lower_common(lc, op, (int64_t)s.kh * s.kw);
}

static int gap_lower(struct lower_ctx *lc, const struct ir_op *op)
{
	if (lc->mode != MODE_INT8)
		return lower_default(lc, op);
	const struct ir_tensor *x = &lc->top->tensors[op->in[0]];
	int64_t taps = 1;
	for (int i = 2; i < x->rank; i++)
		taps *= x->shape[i];
	return avg_lower_common(lc, op, taps);
}

/* The int8 window kernel in whole-input row coordinates (H-slices give the
 * whole result's rows): MaxPool takes the largest tap inside the input;
 * AveragePool sums q - zx over the taps inside (padding, at the zero point,
 * adds 0), requantises and adds the output's zero point. */
static int pool_i8_common(struct kern *k, int is_max)
{
	struct spatial s;
	struct kern_rows r;
	if (kern_window(k, 0, &s, &r) < 0)
		return -1;
	const struct view *x = &k->in[0], *y = &k->out[0];
	if (!quant_is_q(x->dtype) || !quant_is_q(y->dtype) || (is_max && x->dtype != y->dtype))
		return op_error(k->op, "int8 kernel needs i8 or u8 input and output");
	int lo, hi;
	quant_range(y->dtype, &lo, &hi);
	int32_t m = 0;
	int shift = 0;
	if (!is_max) {
		int64_t mv = op_int(k->op, "multiplier", -1);
		shift = (int)op_int(k->op, "rshift", -1);
		if (mv < 0 || mv > INT32_MAX || shift < 0 || shift > QUANT_MAX_SHIFT)
			return op_error(k->op, "int8 attributes multiplier and rshift missing "
					"or out of range");
		m = (int32_t)mv;
	}
	int64_t planes = x->shape[0] * x->shape[1], ih = x->shape[2], iw = x->shape[3];
	int64_t oh = y->shape[2], ow = y->shape[3], full = r.full_h;
	int zx = x->zero_point, zy = y->zero_point;
	for (int64_t p = 0; p < planes; p++) {
		int64_t xp = p * ih * iw, yp = p * oh * ow;
		for (int64_t i = 0; i < oh; i++) {
			int64_t h0 = (k->out_row0 + i) * s.sh - s.pt;
			for (int64_t j = 0; j < ow; j++) {
				int64_t w0 = j * s.sw - s.pl;
				int mx = lo;
				int32_t sum = 0;
				for (int a = 0; a < s.kh; a++) {
					int64_t h = h0 + (int64_t)a * s.dh;
					if (h < 0 || h >= full)
						continue;
					int64_t row = xp + (h - k->in_row0) * iw;
					for (int b = 0; b < s.kw; b++) {
						int64_t w = w0 + (int64_t)b * s.dw;
						if (w < 0 || w >= iw)
							continue;
						int v = quant_get(x->data, x->dtype, row + w);
						if (v > mx)
							mx = v;
						sum += v - zx;
					}
				}
				quant_put(y->data, y->dtype, yp + i * ow + j,
					  is_max ? mx : quant_requant_zp(sum, m, shift, zy, lo, hi));
			}
		}
	}
	return 0;
}

static int maxpool_tpu(struct kern *k)
{
	if (quant_is_float(k->out[0].dtype))
		return quant_run_f32(k);
	return pool_i8_common(k, 1);
}

static int avgpool_tpu(struct kern *k)
{
	if (quant_is_float(k->out[0].dtype))
		return quant_run_f32(k);
	return pool_i8_common(k, 0);
}

/* Int8 GlobalAveragePool: int32 sum of each plane, then requantise. */
static int gap_tpu(struct kern *k)
{
	if (quant_is_float(k->out[0].dtype))
		return quant_run_f32(k);
	const struct view *x = &k->in[0], *y = &k->out[0];
	if (!quant_is_q(x->dtype) || !quant_is_q(y->dtype))
		return op_error(k->op, "int8 kernel needs i8 or u8 input and output");
	int lo, hi;
	quant_range(y->dtype, &lo, &hi);
	int64_t mv = op_int(k->op, "multiplier", -1);
	int shift = (int)op_int(k->op, "rshift", -1);
	if (mv < 0 || mv > INT32_MAX || shift < 0 || shift > QUANT_MAX_SHIFT)
		return op_error(k->op, "int8 attributes multiplier and rshift missing or out of range");
	int64_t planes = x->shape[0] * x->shape[1], n = view_numel(x) / (planes ? planes : 1);
	int zx = x->zero_point, zy = y->zero_point;
	for (int64_t p = 0; p < planes; p++) {
		int32_t sum = 0;
		for (int64_t i = 0; i < n; i++)
			sum += quant_get(x->data, x->dtype, p * n + i) - zx;
		quant_put(y->data, y->dtype, p, quant_requant_zp(sum, (int32_t)mv, shift, zy, lo, hi));
	}
	return 0;
}

const struct op_def op_def_MAXPOOL = {
	.infer = pool_infer, .run_f32 = maxpool_f32, .lower = lower_default,
	.run_tpu = maxpool_tpu, .macs = pool_macs, .slice_h = slice_h_window,
	.split_axis = split_axis_batch, .split_window = split_window_spatial,
};

const struct op_def op_def_AVGPOOL = {
	.infer = pool_infer, .run_f32 = avgpool_f32, .lower = avgpool_lower,
	.run_tpu = avgpool_tpu, .macs = pool_macs, .slice_h = slice_h_window,
	.split_axis = split_axis_batch, .split_window = split_window_spatial,
};

const struct op_def op_def_GAVGPOOL = {
	.infer = gap_infer, .run_f32 = gap_f32, .lower = gap_lower, .run_tpu = gap_tpu,
	.macs = gap_macs, .split_axis = split_axis_nc,
};
