/* qdq.c - the ONNX quantisation operators as the model states them:
 * QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear.
 *
 * QuantizeLinear(x, scale, zero_point) = saturate(round(x / scale) +
 * zero_point), rounding half to even, in the dtype of zero_point (u8 when
 * absent); DequantizeLinear(q, scale, zero_point) = (q - zero_point) *
 * scale.  scale and zero_point are scalars (per tensor) or 1-D along the
 * attribute axis (per axis, default 1).  DynamicQuantizeLinear computes a
 * u8 scale and zero point from the range of x (including 0) and quantises.
 *
 * In a Top graph these ops stand where the model is quantised; top-opt's
 * fold-qdq pass (lib/passes/pass_fold_qdq.c) turns a Quantize/Dequantize
 * pair into an annotation of the float tensor, and constant folding turns
 * a Dequantize of a constant into a float weight (formats/tpuc-quant.5).
 * What remains runs as here, in float, in every dialect.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ir/op.h"
#include "back/lower.h"

static int q_axis(const struct ir_op *op, int rank)
{
	return norm_axis(op_int(op, "axis", 1), rank);
}

/* Parameter tensor P (scale or zero point) against input X on op's axis:
 * a scalar (or of one element), or 1-D of X's size on it. */
static int check_param(const struct ir_op *op, const struct ir_tensor *x,
		       const struct ir_tensor *p, const char *what)
{
	int64_t np = tensor_numel(p);
	if (p->rank > 1)
		return op_error(op, "%s must be a scalar or 1-D", what);
	if (np == 1)
		return 0;
	int a = x->rank ? q_axis(op, x->rank) : -1;
	if (a < 0)
		return op_error(op, "axis %lld is out of range for rank %d",
				(long long)op_int(op, "axis", 1), x->rank);
	if (x->shape[a] != np)
		return op_error(op, "%s has %lld elements, axis %d has %lld", what,
				(long long)np, a, (long long)x->shape[a]);
	return 0;
}

/* Scale S and zero point Z (may be NULL) each per tensor or per axis (a
 * per-axis zero point with a scalar scale is MatMulInteger's per-row
 * one). */
static int check_params(const struct ir_op *op, const struct ir_tensor *x,
			const struct ir_tensor *s, const struct ir_tensor *z)
{
	if (s->dtype != DT_F32)
		return op_error(op, "scale must be f32, not %s", dtype_name(s->dtype));
	if (check_param(op, x, s, "scale") < 0 || (z && check_param(op, x, z, "zero_point") < 0))
		return -1;
	if (z && tensor_numel(z) != tensor_numel(s) && tensor_numel(z) != 1 && tensor_numel(s) != 1)
		return op_error(op, "zero_point's shape differs from scale's");
	return 0;
}

static int quantize_infer(struct ir_graph *g, struct ir_op *op)
{
	const struct ir_tensor *x = op_in(g, op, 0), *s = op_in(g, op, 1), *z = op_in(g, op, 2);
	if (x->dtype != DT_F32)
		return op_error(op, "input must be f32, not %s", dtype_name(x->dtype));
	if (z && z->dtype != DT_I8 && z->dtype != DT_U8)
		return op_error(op, "zero_point must be i8 or u8, not %s", dtype_name(z->dtype));
	if (check_params(op, x, s, z) < 0)
		return -1;
	op_set_out(g, op, 0, z ? z->dtype : DT_U8, x->rank, x->shape);
	return 0;
}

static int dequantize_infer(struct ir_graph *g, struct ir_op *op)
{
	const struct ir_tensor *x = op_in(g, op, 0), *s = op_in(g, op, 1), *z = op_in(g, op, 2);
	if (x->dtype != DT_I8 && x->dtype != DT_U8 && x->dtype != DT_I32)
		return op_error(op, "input must be i8, u8 or i32, not %s", dtype_name(x->dtype));
	if (z && z->dtype != x->dtype)
		return op_error(op, "zero_point is %s, the input %s", dtype_name(z->dtype),
				dtype_name(x->dtype));
	if (check_params(op, x, s, z) < 0)
		return -1;
	op_set_out(g, op, 0, DT_F32, x->rank, x->shape);
	return 0;
}

static int dynquant_infer(struct ir_graph *g, struct ir_op *op)
{
	const struct ir_tensor *x = op_in(g, op, 0);
	if (x->dtype != DT_F32)
		return op_error(op, "input must be f32, not %s", dtype_name(x->dtype));
	op_set_out(g, op, 0, DT_U8, x->rank, x->shape);
	op_set_out(g, op, 1, DT_F32, 0, NULL);
	op_set_out(g, op, 2, DT_U8, 0, NULL);
	return 0;
}

/* Element I's index along the parameters of view X: 0 per tensor, else
 * its coordinate on the axis. */
struct chan {
	int64_t inner, n;
};

static struct chan chan_of(const struct kern *k, const struct view *x, const struct view *s,
			   const struct view *z)
{
	struct chan c = { 1, 1 };
	int64_t n = view_numel(s);
	if (z->data && view_numel(z) > n)
		n = view_numel(z);
	if (n <= 1)
		return c;
	int a = q_axis(k->op, x->rank);
	for (int i = a + 1; i < x->rank; i++)
		c.inner *= x->shape[i];
	c.n = x->shape[a];
	return c;
}

/* Parameter index of channel CH in view P: per tensor or per axis. */
static int64_t at(const struct view *p, int64_t ch)
{
	return view_numel(p) > 1 ? ch : 0;
}

static int64_t zp_at(const struct view *z, int64_t c)
{
	if (!z->data)
		return 0;
	switch (z->dtype) {
	case DT_I8: return ((const int8_t *)z->data)[c];
	case DT_U8: return ((const uint8_t *)z->data)[c];
	case DT_I32: return ((const int32_t *)z->data)[c];
	default: return 0;
	}
}

static void store_q(void *y, enum ir_dtype dt, int64_t i, double v)
{
	double lo = dt == DT_I8 ? -128 : 0, hi = dt == DT_I8 ? 127 : 255;
	v = v < lo ? lo : v > hi ? hi : v;
	if (dt == DT_I8)
		((int8_t *)y)[i] = (int8_t)v;
	else
		((uint8_t *)y)[i] = (uint8_t)v;
}

/* ONNX: saturate(round_half_even(x / scale) + zero_point), the division in
 * f32 as onnxruntime does it. */
static int quantize_run(struct kern *k)
{
	const struct view *x = &k->in[0], *s = &k->in[1], *z = &k->in[2], *y = &k->out[0];
	const float *xv = x->data, *sv = s->data;
	struct chan c = chan_of(k, x, s, z);
	for (int64_t i = 0, n = view_numel(x); i < n; i++) {
		int64_t ch = c.n > 1 ? (i / c.inner) % c.n : 0;
		float q = xv[i] / sv[at(s, ch)];
		double r = isnan(q) ? 0 : rint((double)q) + (double)zp_at(z, at(z, ch));
		store_q(y->data, y->dtype, i, r);
	}
	return 0;
}

static int dequantize_run(struct kern *k)
{
	const struct view *x = &k->in[0], *s = &k->in[1], *z = &k->in[2];
	const float *sv = s->data;
	float *y = k->out[0].data;
	struct chan c = chan_of(k, x, s, z);
	for (int64_t i = 0, n = view_numel(x); i < n; i++) {
		int64_t ch = c.n > 1 ? (i / c.inner) % c.n : 0;
		int64_t q = zp_at(x, i);
		y[i] = (float)(q - zp_at(z, at(z, ch))) * sv[at(s, ch)];
	}
	return 0;
}

/* ONNX: the range [min(0, min x), max(0, max x)] onto 0..255. */
static int dynquant_run(struct kern *k)
{
	const struct view *x = &k->in[0];
	const float *xv = x->data;
	int64_t n = view_numel(x);
	float lo = 0, hi = 0;
	for (int64_t i = 0; i < n; i++) {
		lo = xv[i] < lo ? xv[i] : lo;
		hi = xv[i] > hi ? xv[i] : hi;
	}
	float scale = (hi - lo) / 255.0f;
	double zp = 0;
	if (scale > 0) {
		zp = rint((double)(-lo / scale));
		zp = zp < 0 ? 0 : zp > 255 ? 255 : zp;
	}
	for (int64_t i = 0; i < n; i++)
		store_q(k->out[0].data, DT_U8, i,
			scale > 0 ? rint((double)(xv[i] / scale)) + zp : zp);
	*(float *)k->out[1].data = scale;
	*(uint8_t *)k->out[2].data = (uint8_t)zp;
	return 0;
}

/* What stays of the model's quantisation after top-opt runs in f32 on the
 * chip too: its integer tensors are data, not scaled activations. */
static int qdq_lower(struct lower_ctx *lc, const struct ir_op *op)
{
	int *in = xmalloc(sizeof(int) * (size_t)(op->n_in + op->n_out + 1)), *out = in + op->n_in;
	int rc = 0;
	lc->mode = MODE_F32;
	for (int i = 0; i < op->n_in; i++) {
		int t = op->in[i];
		const struct ir_tensor *s = t >= 0 ? &lc->top->tensors[t] : NULL;
		if (!s)
			in[i] = -1;
		else if (s->dtype == DT_F32)
			in[i] = lower_float_input(lc, op, t, DT_F32);
		else if (s->data)
			in[i] = lower_value(lc, t);
		else if ((in[i] = lc->map[t]) < 0 || lc->tpu->tensors[in[i]].dtype != s->dtype)
			rc = op_error(op, "input '%s' is not produced as %s before its use", s->name,
				      dtype_name(s->dtype));
		if (rc < 0 || (s && in[i] < 0)) {
			free(in);
			return -1;
		}
	}
	/* the codes are data here: no scale on the Tpu tensors */
	for (int i = 0; i < op->n_out; i++)
		out[i] = lower_output(lc, op->out[i], lc->top->tensors[op->out[i]].dtype, 0, 0);
	lower_emit(lc, op, op->n_in, in, op->n_out, out);
	free(in);
	return 0;
}

/* Parts along any axis; per-axis scales and zero points cut with their
 * axis. */
static int qdq_split_axis(const struct ir_graph *g, const struct ir_op *op, int ax, int *in_ax)
{
	int r = g->tensors[op->in[0]].rank, axis = norm_axis(op_int(op, "axis", 1), r);
	split_axis_x0(g, op, ax, in_ax);
	for (int j = 1; j < op->n_in; j++) {
		if (op->in[j] < 0 || tensor_numel(&g->tensors[op->in[j]]) == 1)
			continue;
		if (axis != ax)
			continue;
		if (g->tensors[op->in[j]].rank != 1)
			return 0;
		in_ax[j] = 0;
	}
	return 1;
}

const struct op_def op_def_QUANTIZELINEAR = {
	.infer = quantize_infer,
	.run_f32 = quantize_run,
	.run_const = quantize_run,
	.run_tpu = quantize_run,
	.lower = qdq_lower, .split_axis = qdq_split_axis,
};

const struct op_def op_def_DEQUANTIZELINEAR = {
	.infer = dequantize_infer,
	.run_f32 = dequantize_run,
	.run_const = dequantize_run,
	.run_tpu = dequantize_run,
	.lower = qdq_lower, .split_axis = qdq_split_axis,
};

const struct op_def op_def_DYNAMICQUANTIZELINEAR = {
	.infer = dynquant_infer,
	.run_f32 = dynquant_run,
	.run_const = dynquant_run,
	.run_tpu = dynquant_run,
	.lower = qdq_lower,
};
