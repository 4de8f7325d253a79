/* xformer_i8.c - int8 Softmax and LayerNormalization (xformer_i8.h).
 *
 * Softmax: the input codes of a row differ from the row's largest code by
 * d in [0, 255], and exp(x - max) = exp(-s_in * d) exactly for the
 * quantised input, so one table of 256 entries in Q15 ("lut", computed at
 * lowering from the input's scale) gives every exponential; the row's sum
 * is an exact integer, and each output code is
 *   q = (T[d] * R + sum * 2^15) / (sum * 2^16) + zp
 * (integer division, rounding half up), R = round(2^16 / s_out) the
 * attribute "out_mult".  No float arithmetic runs in the kernel.
 *
 * LayerNormalization: the row's sums of (q - zp) and (q - zp)^2 are exact
 * integers; the row's mean and 1 / sqrt(var + eps) are one scalar each,
 * computed in double (the vector unit's per-row scalar), and each element
 * (q - zp - mean) * s_in * rstd * Scale[i] + B[i] is rounded to the
 * output's grid.  Scale and B stay f32 weights.
 *
 * Both kernels are the same code in ir-run and tpu-sim, so the two agree
 * bit for bit; rows are independent (the ops' slice_h allows H slices only
 * when the normalised axes are not H).
 */
#include "ops/xformer_i8.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>

#include "ops/kern_util.h"
#include "ir/base.h"
#include "quant/quant.h"

#define SOFTMAX_LUT 256

/* 1 if Top tensor T is an f32 activation already lowered to i8 or u8: the
 * int8 forms read it as it is.  A float input (graph input, output of a
 * float op) would need a quantising Cast that costs more precision than
 * the float op keeps, so the op then follows its input into float, as
 * the ops that only move values do (lower_default). */
static int q_act(const struct lower_ctx *lc, int t)
{
	if (t < 0 || lc->top->tensors[t].data || lc->top->tensors[t].dtype != DT_F32 || lc->map[t] < 0)
		return 0;
	const struct ir_tensor *h = &lc->tpu->tensors[lc->map[t]];
	return quant_is_q(h->dtype) && h->scale > 0;
}

/* 1 if the table gives part P of tensor T (a Slice or Gather of it) less
 * than half T's threshold: T's codes would give P fewer levels than P's
 * own scale (a ViT's class token beside its other tokens). */
static int part_smaller(const struct lower_ctx *lc, int t, int p)
{
	const struct calib_entry *et = lc->tab ? calib_find(lc->tab, lc->top->tensors[t].name) : NULL;
	const struct calib_entry *ep = lc->tab ? calib_find(lc->tab, lc->top->tensors[p].name) : NULL;
	return !et || !ep || ep->threshold < 0.5 * et->threshold;
}

/* 1 if every reader of Top tensor T is an int8 op that quantises its
 * input (a MatMul, Gemm or Conv, or one of this file's ops; up to DEPTH
 * ops that move codes before it) and T is no graph output: the int8
 * output of OP is then what its readers would have made of a float one,
 * and no precision is lost by producing it in int8.  (A residual stream
 * read by an Add keeps its float form.) */
static int read_as_int8_within(const struct lower_ctx *lc, int t, int depth)
{
	if (lc->is_output[t] || !lc->opmode)
		return 0;
	int n = 0;
	for (int i = 0; i < lc->top->n_ops; i++) {
		const struct ir_op *c = &lc->top->ops[i];
		for (int j = 0; j < c->n_in; j++) {
			if (c->in[j] != t)
				continue;
			int mover = c->type == OP_TRANSPOSE || c->type == OP_RESHAPE ||
				    c->type == OP_SQUEEZE || c->type == OP_UNSQUEEZE ||
				    c->type == OP_FLATTEN ||
				    ((c->type == OP_SLICE || c->type == OP_GATHER) &&
				     c->n_out == 1 && !part_smaller(lc, t, c->out[0]));
			int ok = lc->opmode[i] == MODE_INT8 &&
				 (c->type == OP_MATMUL || c->type == OP_GEMM || c->type == OP_CONV ||
				  c->type == OP_SOFTMAX || c->type == OP_DIV ||
				  (mover && j == 0 && c->n_out == 1 && depth < 8 &&
				   read_as_int8_within(lc, c->out[0], depth + 1)));
			if (!ok)
				return 0;
			n++;
		}
	}
	return n > 0;
}

/* 1 if every reader of Top tensor T is an int8 op that quantises its
 * input, directly or through ops that only move its codes (Transpose,
 * Reshape, Squeeze, Unsqueeze, Flatten; a Slice or Gather whose part
 * reaches at least half as far as the whole: a LayerNormalization read by
 * the Transpose before an attention MatMul). */
static int read_as_int8(const struct lower_ctx *lc, int t)
{
	return read_as_int8_within(lc, t, 0);
}

/* The float form of OP in the dtype its input has. */
static int follow_float(struct lower_ctx *lc, const struct ir_op *op)
{
	enum ir_mode m;
	struct lower_ctx f = *lc;
	if (lower_inputs_float(lc, op, &m)) {
		f.mode = m;
		return lower_default(&f, op);
	}
	return lower_fallback(lc, op);
}

int softmax_lower(struct lower_ctx *lc, const struct ir_op *op)
{
	if (lc->mode != MODE_INT8)
		return lower_default(lc, op);
	if (op->n_in != 1 || op->n_out != 1 || !q_act(lc, op->in[0]) || !read_as_int8(lc, op->out[0]))
		return follow_float(lc, op);
	enum ir_dtype dt;
	float s_out;
	int zp, x = lower_act_io(lc, op, &dt, &s_out, &zp);
	if (x < 0)
		return -1;
	double s_in = lc->tpu->tensors[x].scale, r = ldexp(1.0, 16) / s_out;
	if (!(s_in > 0) || !(r >= 1) || r >= ldexp(1.0, 31))
		return lower_fallback(lc, op);
	int64_t lut[SOFTMAX_LUT];
	for (int d = 0; d < SOFTMAX_LUT; d++)
		lut[d] = (int64_t)lrint(ldexp(exp(-s_in * d), 15));
	int y = lower_output(lc, op->out[0], dt, s_out, zp);
	int o = lower_emit(lc, op, 1, &x, 1, &y);
	op_set_ints(&lc->tpu->ops[o], "lut", SOFTMAX_LUT, lut);
	op_set_int(&lc->tpu->ops[o], "out_mult", (int64_t)lrint(r));
	return 0;
}

/* Rows of X: OUTER * INNER rows of N elements INNER apart. */
static int rows(const struct kern *k, int64_t *outer, int64_t *n, int64_t *inner)
{
	const struct view *x = &k->in[0];
	int r = x->rank, axis = norm_axis(op_int(k->op, "axis", -1), r);
	if (axis < 0)
		return op_error(k->op, "axis out of range");
	*outer = *n = *inner = 1;
	for (int d = 0; d < axis; d++)
		*outer *= x->shape[d];
	if (op_int(k->op, "coerce2d", 0)) {
		for (int d = axis; d < r; d++)
			*n *= x->shape[d];
	} else {
		*n = x->shape[axis];
		for (int d = axis + 1; d < r; d++)
			*inner *= x->shape[d];
	}
	return 0;
}

int softmax_tpu(struct kern *k)
{
	const struct view *x = &k->in[0], *y = &k->out[0];
	if (!quant_is_q(y->dtype))
		return quant_run_f32(k);
	if (!quant_is_q(x->dtype))
		return op_error(k->op, "int8 kernel needs i8 or u8 input and output");
	int64_t lut[SOFTMAX_LUT];
	if (op_ints(k->op, "lut", lut, SOFTMAX_LUT) != SOFTMAX_LUT)
		return op_error(k->op, "int8 attribute lut must hold %d entries", SOFTMAX_LUT);
	for (int d = 0; d < SOFTMAX_LUT; d++)
		if (lut[d] < 0 || lut[d] > 32768 || (d && lut[d] > lut[d - 1]))
			return op_error(k->op, "int8 attribute lut must fall from at most 32768 to 0");
	int64_t mult = op_int(k->op, "out_mult", 0);
	if (mult < 1 || mult >= (int64_t)1 << 31)
		return op_error(k->op, "int8 attribute out_mult must be in [1, 2^31)");
	if (lut[0] < 1)
		return op_error(k->op, "int8 attribute lut must start above 0");
	int64_t outer, n, inner;
	if (rows(k, &outer, &n, &inner) < 0)
		return -1;
	if (n > (int64_t)1 << 30)
		return op_error(k->op, "int8 softmax over more than 2^30 elements");
	int lo, hi;
	quant_range(y->dtype, &lo, &hi);
	int zp = y->zero_point;
	int nt = kern_threads(k, outer * inner, n * 4);

	#pragma omp parallel for num_threads(nt) schedule(static)
	for (int64_t o = 0; o < outer * inner; o++) {
		int64_t base = (o / inner) * n * inner + o % inner;
		int mx = INT_MIN;
		for (int64_t i = 0; i < n; i++) {
			int c = quant_get(x->data, x->dtype, base + i * inner);
			mx = c > mx ? c : mx;
		}
		int64_t sum = 0;
		for (int64_t i = 0; i < n; i++)
			sum += lut[mx - quant_get(x->data, x->dtype, base + i * inner)];
		/* sum >= lut[0] > 0: the largest code is in the row */
		int64_t den = sum << 16, half = sum << 15;
		for (int64_t i = 0; i < n; i++) {
			int64_t t = lut[mx - quant_get(x->data, x->dtype, base + i * inner)];
			quant_put(y->data, y->dtype, base + i * inner,
				  quant_clamp((t * mult + half) / den + zp, lo, hi));
		}
	}
	return 0;
}

int layernorm_lower(struct lower_ctx *lc, const struct ir_op *op)
{
	if (lc->mode != MODE_INT8)
		return lower_default(lc, op);
	const struct ir_graph *g = lc->top;
	if (!q_act(lc, op->in[0]) || op->n_out != 1 || !read_as_int8(lc, op->out[0]))
		return follow_float(lc, op);
	int ok = 1;
	for (int i = 1; i < op->n_in && ok; i++)
		ok = op->in[i] < 0 || (g->tensors[op->in[i]].data && g->tensors[op->in[i]].dtype == DT_F32);
	if (!ok)
		return lower_fallback(lc, op);
	enum ir_dtype dt;
	float s_out;
	int zp, in[3] = { -1, -1, -1 };
	if ((in[0] = lower_act_io(lc, op, &dt, &s_out, &zp)) < 0)
		return -1;
	for (int i = 1; i < op->n_in; i++)
		if (op->in[i] >= 0 && (in[i] = lower_float_input(lc, op, op->in[i], DT_F32)) < 0)
			return -1;
	int y = lower_output(lc, op->out[0], dt, s_out, zp);
	lower_emit(lc, op, op->n_in, in, 1, &y);
	return 0;
}

int layernorm_tpu(struct kern *k)
{
	const struct view *x = &k->in[0], *y = &k->out[0];
	if (!quant_is_q(y->dtype))
		return quant_run_f32(k);
	if (!quant_is_q(x->dtype) || k->n_out != 1)
		return op_error(k->op, "int8 kernel needs i8 or u8 input and one i8 or u8 output");
	for (int i = 1; i < k->n_in; i++)
		if (k->in[i].data && k->in[i].dtype != DT_F32)
			return op_error(k->op, "int8 kernel needs f32 Scale and B");
	int axis = norm_axis(op_int(k->op, "axis", -1), x->rank);
	if (axis < 0)
		return op_error(k->op, "axis out of range");
	double eps = op_float(k->op, "epsilon", 1e-5), s_in = x->scale;
	int64_t outer = 1, n = 1;
	for (int d = 0; d < x->rank; d++)
		*(d < axis ? &outer : &n) *= x->shape[d];
	if (n > (int64_t)1 << 40)
		return op_error(k->op, "int8 layer normalisation over too many elements");
	const float *s = k->in[1].data, *b = k->n_in > 2 ? k->in[2].data : NULL;
	int ss = view_numel(&k->in[1]) > 1, bs = b && view_numel(&k->in[2]) > 1;
	int zx = x->zero_point, zy = y->zero_point;
	float s_out = y->scale;
	int nt = kern_threads(k, outer, n * 4);

	#pragma omp parallel for num_threads(nt) schedule(static)
	for (int64_t o = 0; o < outer; o++) {
		int64_t s1 = 0, s2 = 0;
		for (int64_t i = 0; i < n; i++) {
			int64_t c = quant_get(x->data, x->dtype, o * n + i) - zx;
			s1 += c;
			s2 += c * c;
		}
		double mean = (double)s1 / (double)n;
		double var = (double)s2 / (double)n - mean * mean;
		double rs = s_in / sqrt((var > 0 ? var : 0) * s_in * s_in + eps);
		for (int64_t i = 0; i < n; i++) {
			double c = quant_get(x->data, x->dtype, o * n + i) - zx;
			float v = (float)((c - mean) * rs) * s[ss ? i : 0] + (b ? b[bs ? i : 0] : 0.0f);
			quant_put(y->data, y->dtype, o * n + i, quant_f32_to_qz_one(v, s_out, zy, y->dtype));
		}
	}
	return 0;
}

int div_lower(struct lower_ctx *lc, const struct ir_op *op)
{
	if (lc->mode != MODE_INT8)
		return lower_default(lc, op);
	const struct ir_tensor *c = op->n_in == 2 && op->in[1] >= 0 ? &lc->top->tensors[op->in[1]] : NULL;
	double v = c && c->data && c->dtype == DT_F32 && tensor_numel(c) == 1 ? ((const float *)c->data)[0] : 0;
	if (op->n_out != 1 || !q_act(lc, op->in[0]) || !(v > 0) || !isfinite(v) ||
	    lc->top->tensors[op->out[0]].rank != lc->top->tensors[op->in[0]].rank)
		return lower_fallback(lc, op);
	int in[2] = { lc->map[op->in[0]], lower_value(lc, op->in[1]) };
	const struct ir_tensor *x = &lc->tpu->tensors[in[0]];
	float s = (float)(x->scale / v);
	if (!(s > 0) || !isfinite(s))
		return lower_fallback(lc, op);
	int y = lower_output(lc, op->out[0], x->dtype, s, x->zero_point);
	lower_emit(lc, op, 2, in, 1, &y);
	return 0;
}

int div_tpu(struct kern *k)
{
	const struct view *x = &k->in[0], *y = &k->out[0];
	/* the rescaling form only: quantised codes (a scale), not a plain
	 * integer Div of u8 or i8 tensors */
	if (!quant_is_q(y->dtype) || !(y->scale > 0) || !(x->scale > 0))
		return quant_run_f32(k);
	int64_t n = view_numel(y);
	if (x->dtype != y->dtype || x->zero_point != y->zero_point || view_numel(x) != n)
		return op_error(k->op, "int8 kernel needs input and output of one dtype, zero point "
				"and size");
	for (int64_t i = 0; i < n; i++)
		quant_put(y->data, y->dtype, i, quant_get(x->data, x->dtype, i));
	return 0;
}

int move_codes_tpu(struct kern *k)
{
	if (k->n_in < 1 || k->n_out != 1 || !quant_is_q(k->out[0].dtype))
		return quant_run_f32(k);
	const struct view *x = &k->in[0], *y = &k->out[0];
	if (x->dtype != y->dtype || x->zero_point != y->zero_point)
		return op_error(k->op, "int8 kernel needs input and output of one dtype and zero point");
	int64_t nx = view_numel(x), ny = view_numel(y);
	float *fx = xmalloc(sizeof(float) * (size_t)(nx + 1));
	float *fy = xmalloc(sizeof(float) * (size_t)(ny + 1));
	for (int64_t i = 0; i < nx; i++)
		fx[i] = (float)quant_get(x->data, x->dtype, i);
	struct kern w = *k;
	struct view *in = xcalloc((size_t)k->n_in + 1, sizeof *in);
	for (int i = 0; i < k->n_in; i++)
		in[i] = k->in[i];
	in[0].data = fx;
	in[0].dtype = DT_F32;
	struct view out = *y;
	out.data = fy;
	out.dtype = DT_F32;
	w.in = in;
	w.out = &out;
	int rc = op_defs[k->op->type]->run_f32(&w);
	for (int64_t i = 0; rc == 0 && i < ny; i++)
		quant_put(y->data, y->dtype, i, (int)fy[i]);
	free(fx);
	free(fy);
	free(in);
	return rc;
}
