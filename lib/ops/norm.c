/* norm.c - normalisations, f32 (LayerNormalization also f64, in double):
 * LayerNormalization (axis, epsilon; inputs
 * X, Scale, optional B; optional outputs Mean and InvStdDev),
 * InstanceNormalization (epsilon; per-channel scale and B), LRN (size,
 * alpha, beta, bias; across channels), LpNormalization (axis, p of 1 or 2)
 * and MeanVarianceNormalization (axes; (x - mean) / (std + 1e-9)).
 * Statistics are accumulated in double.
 */
#include <math.h>
#include <string.h>

#include "ir/convert.h"
#include "ops/kern_util.h"
#include "ir/op.h"
#include "quant/quant.h"
#include "ops/xformer_i8.h"

static int need_f32_in(struct ir_graph *g, struct ir_op *op)
{
	for (int i = 0; i < op->n_in; i++) {
		const struct ir_tensor *t = op_in(g, op, i);
		if (t && t->dtype != DT_F32)
			return op_error(op, "input %d is %s (f32 only)", i, dtype_name(t->dtype));
	}
	return 0;
}

/* ---- LayerNormalization ---- */

static int layernorm_infer(struct ir_graph *g, struct ir_op *op)
{
	const struct ir_tensor *x = op_in(g, op, 0), *s = op_in(g, op, 1), *b = op_in(g, op, 2);
	enum ir_dtype dt = x->dtype;   /* f32, or f64 computed in double */
	if (dt == DT_F64 && (s->dtype != DT_F64 || (b && b->dtype != DT_F64)))
		return op_error(op, "scale and bias must be f64 as the input is");
	if (dt != DT_F64 && need_f32_in(g, op) < 0)
		return -1;
	int axis = norm_axis(op_int(op, "axis", -1), x->rank);
	if (axis < 0)
		return op_error(op, "axis out of range");
	int64_t n = 1, shape[IR_MAX_RANK];
	for (int d = axis; d < x->rank; d++)
		n *= x->shape[d];
	if ((tensor_numel(s) != n && tensor_numel(s) != 1) ||
	    (b && tensor_numel(b) != n && tensor_numel(b) != 1))
		return op_error(op, "scale and bias must hold one value or one per normalised element");
	op_set_out(g, op, 0, dt, x->rank, x->shape);
	for (int d = 0; d < x->rank; d++)
		shape[d] = d < axis ? x->shape[d] : 1;
	for (int i = 1; i < op->n_out && i < 3; i++)
		op_set_out(g, op, i, dt, x->rank, shape);
	return 0;
}

/* f64: rows of N elements normalised in double (dtype_get / dtype_set). */
static int layernorm_f64(struct kern *k, int64_t outer, int64_t n, double eps)
{
	const struct view *x = &k->in[0], *s = &k->in[1], *b = k->n_in > 2 ? &k->in[2] : NULL;
	int ss = view_numel(s) > 1, bs = b && b->data && view_numel(b) > 1;
	for (int64_t o = 0; o < outer; o++) {
		double sum = 0, sq = 0;
		for (int64_t i = 0; i < n; i++)
			sum += dtype_get(x->data, DT_F64, o * n + i);
		double mean = sum / (double)n;
		for (int64_t i = 0; i < n; i++) {
			double dv = dtype_get(x->data, DT_F64, o * n + i) - mean;
			sq += dv * dv;
		}
		double inv = 1.0 / sqrt(sq / (double)n + eps);
		for (int64_t i = 0; i < n; i++)
			dtype_set(k->out[0].data, DT_F64, o * n + i,
				  (dtype_get(x->data, DT_F64, o * n + i) - mean) * inv *
				  dtype_get(s->data, DT_F64, ss ? i : 0) +
				  (b && b->data ? dtype_get(b->data, DT_F64, bs ? i : 0) : 0.0));
		if (k->n_out > 1)
			dtype_set(k->out[1].data, DT_F64, o, mean);
		if (k->n_out > 2)
			dtype_set(k->out[2].data, DT_F64, o, inv);
	}
	return 0;
}

static int layernorm_run(struct kern *k)
{
	const struct view *x = &k->in[0];
	int axis = norm_axis(op_int(k->op, "axis", -1), x->rank);
	double eps = op_float(k->op, "epsilon", 1e-5);
	int64_t outer = 1, n = 1;
	for (int d = 0; d < x->rank; d++)
		*(d < axis ? &outer : &n) *= x->shape[d];
	if (x->dtype == DT_F64)
		return layernorm_f64(k, outer, n, eps);
	const float *xd = x->data, *s = k->in[1].data, *b = k->n_in > 2 ? k->in[2].data : NULL;
	int ss = view_numel(&k->in[1]) > 1, bs = b && view_numel(&k->in[2]) > 1;
	float *y = k->out[0].data;
	float *mo = k->n_out > 1 ? k->out[1].data : NULL, *io = k->n_out > 2 ? k->out[2].data : NULL;
	int nt = kern_threads(k, outer, n * 4);

	#pragma omp parallel for num_threads(nt) schedule(static)
	for (int64_t o = 0; o < outer; o++) {
		const float *xp = xd + o * n;
		float *yp = y + o * n;
		double sum = 0, sq = 0;
		for (int64_t i = 0; i < n; i++)
			sum += xp[i];
		float mean = (float)(sum / (double)n);
		for (int64_t i = 0; i < n; i++) {
			double dv = xp[i] - mean;
			sq += dv * dv;
		}
		float inv = (float)(1.0 / sqrt(sq / (double)n + eps));
		for (int64_t i = 0; i < n; i++)
			yp[i] = (xp[i] - mean) * inv * s[ss ? i : 0] + (b ? b[bs ? i : 0] : 0.0f);
		if (mo)
			mo[o] = mean;
		if (io)
			io[o] = inv;
	}
	return 0;
}

/* ---- InstanceNormalization ---- */

static int instnorm_infer(struct ir_graph *g, struct ir_op *op)
{
	if (need_f32_in(g, op) < 0)
		return -1;
	const struct ir_tensor *x = op_in(g, op, 0);
	if (x->rank < 3)
		return op_error(op, "input must have rank 3 or more");
	if (tensor_numel(op_in(g, op, 1)) != x->shape[1] || tensor_numel(op_in(g, op, 2)) != x->shape[1])
		return op_error(op, "scale and B must have one value per channel");
	return infer_same(g, op);
}

static int instnorm_run(struct kern *k)
{
	const struct view *x = &k->in[0];
	double eps = op_float(k->op, "epsilon", 1e-5);
	int64_t c = x->shape[1], nc = x->shape[0] * c, n = view_numel(x) / (nc ? nc : 1);
	const float *xd = x->data, *s = k->in[1].data, *b = k->in[2].data;
	float *y = k->out[0].data;
	int nt = kern_threads(k, nc, n * 4);

	#pragma omp parallel for num_threads(nt) schedule(static)
	for (int64_t o = 0; o < nc; o++) {
		const float *xp = xd + o * n;
		float *yp = y + o * n;
		double sum = 0, sq = 0;
		for (int64_t i = 0; i < n; i++)
			sum += xp[i];
		double mean = sum / (double)n;
		for (int64_t i = 0; i < n; i++)
			sq += (xp[i] - mean) * (xp[i] - mean);
		float a = (float)(s[o % c] / sqrt(sq / (double)n + eps));
		float bb = (float)(b[o % c] - mean * a);
		for (int64_t i = 0; i < n; i++)
			yp[i] = xp[i] * a + bb;
	}
	return 0;
}

/* ---- LRN ---- */

static int lrn_infer(struct ir_graph *g, struct ir_op *op)
{
	if (need_f32_in(g, op) < 0)
		return -1;
	if (op_in(g, op, 0)->rank < 2 || op_int(op, "size", 0) < 1)
		return op_error(op, "needs rank 2 or more and a positive size");
	return infer_same(g, op);
}

static int lrn_run(struct kern *k)
{
	const struct view *x = &k->in[0];
	int64_t size = op_int(k->op, "size", 1);
	double alpha = op_float(k->op, "alpha", 1e-4), beta = op_float(k->op, "beta", 0.75);
	double bias = op_float(k->op, "bias", 1.0);
	int64_t n = x->shape[0], c = x->shape[1], inner = n * c > 0 ? view_numel(x) / (n * c) : 0;
	int64_t lo = (size - 1) / 2, hi = size - 1 - lo;
	const float *xd = x->data;
	float *y = k->out[0].data;
	for (int64_t b = 0; b < n; b++)
		for (int64_t ch = 0; ch < c; ch++)
			for (int64_t i = 0; i < inner; i++) {
				double sq = 0;
				for (int64_t j = ch - lo; j <= ch + hi; j++)
					if (j >= 0 && j < c) {
						double v = xd[(b * c + j) * inner + i];
						sq += v * v;
					}
				int64_t at = (b * c + ch) * inner + i;
				y[at] = (float)(xd[at] / pow(bias + alpha / (double)size * sq, beta));
			}
	return 0;
}

/* ---- LpNormalization, MeanVarianceNormalization ---- */

static int lpnorm_infer(struct ir_graph *g, struct ir_op *op)
{
	if (need_f32_in(g, op) < 0)
		return -1;
	const struct ir_tensor *x = op_in(g, op, 0);
	if (op->type == OP_LPNORMALIZATION) {
		int64_t p = op_int(op, "p", 2);
		if (norm_axis(op_int(op, "axis", -1), x->rank) < 0 || (p != 1 && p != 2))
			return op_error(op, "axis out of range or p not 1 or 2");
	} else {
		int64_t axes[IR_MAX_RANK];
		int n = op_ints(op, "axes", axes, IR_MAX_RANK);
		for (int i = 0; i < n; i++)
			if (norm_axis(axes[i], x->rank) < 0)
				return op_error(op, "axis out of range");
	}
	return infer_same(g, op);
}

/* Normalise x over the axes in mask: Lp (p) or mean/variance (p == 0). */
static void norm_axes(const struct view *x, float *y, const int *mask, int p)
{
	struct kern_reduce rd;
	kern_reduce_init(&rd, x->rank, x->shape, mask);
	int64_t count = rd.count;
	const float *xd = x->data;
	for (int64_t o = 0; o < rd.nout; o++) {
		int64_t base = kern_reduce_base(&rd, o);
		double a = 0, b = 0;
		for (int pass = 0; pass < 2; pass++) {
			int64_t idx[IR_MAX_RANK] = { 0 }, off = base;
			for (int64_t i = 0; i < count; i++) {
				double v = xd[off];
				if (pass == 0) {
					a += p == 1 ? fabs(v) : p == 2 ? v * v : v;
					b += v * v;
				} else if (p) {
					y[off] = (float)(v / a);
				} else {
					y[off] = (float)((v - a) / (b + 1e-9));
				}
				kern_reduce_next(&rd, idx, &off);
			}
			if (pass == 0) {
				if (p == 2) {
					a = sqrt(a);
				} else if (p == 0) {
					a /= (double)count;
					b = b / (double)count - a * a;
					b = sqrt(b > 0 ? b : 0);
				}
			}
		}
	}
}

static int lpnorm_run(struct kern *k)
{
	const struct view *x = &k->in[0];
	int mask[IR_MAX_RANK] = { 0 };
	if (k->op->type == OP_LPNORMALIZATION) {
		mask[norm_axis(op_int(k->op, "axis", -1), x->rank)] = 1;
		norm_axes(x, k->out[0].data, mask, (int)op_int(k->op, "p", 2));
		return 0;
	}
	int64_t axes[IR_MAX_RANK] = { 0, 2, 3 };
	int n = op_ints(k->op, "axes", axes, IR_MAX_RANK);
	if (!op_attr(k->op, "axes"))
		n = 3;
	for (int i = 0; i < n; i++) {
		int a = norm_axis(axes[i], x->rank);
		if (a < 0)
			return op_error(k->op, "axis out of range");
		mask[a] = 1;
	}
	norm_axes(x, k->out[0].data, mask, 0);
	return 0;
}

static int64_t norm_macs(const struct ir_graph *g, const struct ir_op *op)
{
	return 4 * tensor_numel(&g->tensors[op->out[0]]);
}

/* Rows along H are independent when the normalised axes all follow it. */
static void layernorm_slice_h(const struct ir_graph *g, const struct ir_op *op,
			      int oh0, int oh1, int *ih0, int *ih1)
{
	int ok = norm_axis(op_int(op, "axis", -1), g->tensors[op->in[0]].rank) > 2;
	*ih0 = ok ? oh0 : -1;
	*ih1 = ok ? oh1 : 0;
}

/* LayerNormalization: parts along the axes before those it normalises
 * (its scale and bias read whole).  InstanceNormalization: along the
 * batch, or the channels with their scale and bias.  LRN: along any axis
 * but the channels it sums across.  LpNormalization and
 * MeanVarianceNormalization: along any axis they do not normalise. */
static int layernorm_split_axis(const struct ir_graph *g, const struct ir_op *op, int ax,
				int *in_ax)
{
	int axis = norm_axis(op_int(op, "axis", -1), g->tensors[op->in[0]].rank);
	return ax < axis && split_axis_x0(g, op, ax, in_ax);
}

static int instnorm_split_axis(const struct ir_graph *g, const struct ir_op *op, int ax,
			       int *in_ax)
{
	return ax <= 1 && split_axis_chan(g, op, ax, in_ax);
}

static int lrn_split_axis(const struct ir_graph *g, const struct ir_op *op, int ax, int *in_ax)
{
	return ax != 1 && split_axis_x0(g, op, ax, in_ax);
}

static int lpnorm_split_axis(const struct ir_graph *g, const struct ir_op *op, int ax, int *in_ax)
{
	int r = g->tensors[op->in[0]].rank;
	if (op->type == OP_LPNORMALIZATION)
		return ax != norm_axis(op_int(op, "axis", -1), r) && split_axis_x0(g, op, ax, in_ax);
	int64_t axes[IR_MAX_RANK] = { 0, 2, 3 };
	int n = op_attr(op, "axes") ? op_ints(op, "axes", axes, IR_MAX_RANK) : 3;
	for (int i = 0; i < n; i++)
		if (norm_axis(axes[i], r) == ax)
			return 0;
	return split_axis_x0(g, op, ax, in_ax);
}

const struct op_def op_def_LAYERNORM = {
	.infer = layernorm_infer, .run_f32 = layernorm_run, .lower = layernorm_lower,
	.run_tpu = layernorm_tpu,
	.macs = norm_macs,
	.slice_h = layernorm_slice_h, .split_axis = layernorm_split_axis,
};

const struct op_def op_def_INSTANCENORM = {
	.infer = instnorm_infer, .run_f32 = instnorm_run, .run_tpu = quant_run_f32,
	.macs = norm_macs, .split_axis = instnorm_split_axis,
};

const struct op_def op_def_LRN = {
	.infer = lrn_infer, .run_f32 = lrn_run, .run_tpu = quant_run_f32, .macs = norm_macs,
	.split_axis = lrn_split_axis,
};

const struct op_def op_def_LPNORMALIZATION = {
	.infer = lpnorm_infer, .run_f32 = lpnorm_run, .run_tpu = quant_run_f32,
	.macs = norm_macs, .split_axis = lpnorm_split_axis,
};

const struct op_def op_def_MVN = {
	.infer = lpnorm_infer, .run_f32 = lpnorm_run, .run_tpu = quant_run_f32,
	.macs = norm_macs, .split_axis = lpnorm_split_axis,
};
