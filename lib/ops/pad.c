/* pad.c - Pad: attribute pads lists every axis' begin counts then every
 * axis' end counts, as ONNX does; mode constant fills with value, reflect
 * mirrors the input about its first and last element, edge repeats them.
 */
#include <string.h>

#include "ir/convert.h"
#include "ir/op.h"
#include "back/lower.h"
#include "quant/quant.h"

enum pad_mode { PAD_CONSTANT, PAD_REFLECT, PAD_EDGE };

/* The op's mode, or -1 when it is none of constant, reflect, edge. */
static int pad_mode(const struct ir_op *op)
{
	const char *m = op_str(op, "mode", "constant");
	return !strcmp(m, "constant") ? PAD_CONSTANT : !strcmp(m, "reflect") ? PAD_REFLECT
	       : !strcmp(m, "edge") ? PAD_EDGE : -1;
}

/* The element of an axis of n elements that position i reads, i counted
 * from the axis' first input element (so negative in the begin pad): i
 * itself inside [0, n); outside, -1 (the fill) in constant mode, the
 * nearest end in edge mode, the mirror image about the nearest end in
 * reflect mode.  Needs -n < i < 2n - 1 for reflect (pads below n, checked
 * by pad_infer), n >= 1 for edge. */
static int64_t pad_src(int mode, int64_t i, int64_t n)
{
	if (i >= 0 && i < n)
		return i;
	if (mode == PAD_CONSTANT)
		return -1;
	if (mode == PAD_EDGE)
		return i < 0 ? 0 : n - 1;
	return i < 0 ? -i : 2 * (n - 1) - i;
}

static int pad_infer(struct ir_graph *g, struct ir_op *op)
{
	const struct ir_tensor *x = op_in(g, op, 0), *v = op_in(g, op, 2);
	int64_t pads[2 * IR_MAX_RANK];
	int n = op_param_ints(g, NULL, op, 1, "pads", pads, 2 * IR_MAX_RANK);
	int mode = pad_mode(op);
	if (mode < 0)
		return op_error(op, "mode '%s' is not supported (constant, reflect or edge)",
				op_str(op, "mode", ""));
	if (v && tensor_numel(v) != 1 && !v->dyn)
		return op_error(op, "the constant value must hold one value");
	if (n == -2) {   /* pads at run time: every extent dynamic */
		op_set_out(g, op, 0, x->dtype, x->rank, x->shape);
		op_set_dyn(g, op, 0, x->rank ? (1u << x->rank) - 1 : 0);
		return 0;
	}
	if (n != 2 * x->rank)
		return n == -1 ? -1 : op_error(op, "pads has %d values for a rank-%d input", n, x->rank);
	int64_t shape[IR_MAX_RANK];
	for (int i = 0; i < x->rank; i++) {
		if (pads[i] < 0 || pads[i + x->rank] < 0)
			return op_error(op, "negative pads (cropping) are not supported");
		if (pads[i] > IR_MAX_DIM || pads[i + x->rank] > IR_MAX_DIM)
			return op_error(op, "pads of axis %d exceed %d", i, IR_MAX_DIM);
		if (mode == PAD_EDGE && x->shape[i] == 0 && pads[i] + pads[i + x->rank] > 0)
			return op_error(op, "axis %d is empty: edge padding has nothing to copy", i);
		int64_t widest = pads[i] > pads[i + x->rank] ? pads[i] : pads[i + x->rank];
		if (mode == PAD_REFLECT && widest > 0 && widest >= x->shape[i])
			return op_error(op, "reflect pads of axis %d must be smaller than its size %lld",
					i, (long long)x->shape[i]);
		shape[i] = x->shape[i] + pads[i] + pads[i + x->rank];
	}
	op_set_out(g, op, 0, x->dtype, x->rank, shape);
	return 0;
}

/* Reference and Tpu kernel for any dtype.  Each innermost output row is
 * either all fill (constant mode, an outer index in the padding) or a
 * mapped input row: its begin and end pads element by element, the input
 * row in the middle at once.  A slice along H (pad_slice_h, constant mode)
 * maps its rows by their whole-tensor numbers: output row out_row0 + r reads
 * input row out_row0 + r - pt, view row out_row0 + r - pt - in_row0. */
static int pad_run(struct kern *k)
{
	const struct view *x = &k->in[0], *y = &k->out[0];
	int r = x->rank, mode = pad_mode(k->op);
	int64_t pads[2 * IR_MAX_RANK];
	if (op_param_ints(k->g, k, k->op, 1, "pads", pads, 2 * IR_MAX_RANK) != 2 * r ||
	    x->dtype != y->dtype || mode < 0)
		return op_error(k->op, "pads, mode or dtypes disagree with the tensors");
	size_t es = dtype_size(y->dtype);
	int64_t n = view_numel(y);
	float value = k->n_in > 2 && k->in[2].data ? (float)dtype_get(k->in[2].data, k->in[2].dtype, 0)
						     : (float)op_float(k->op, "value", 0);
	char fill[8];
	dtype_convert(fill, y->dtype, &value, DT_F32, 1);
	if (n == 0)
		return 0;
	if (r == 0) {
		memcpy(y->data, x->data, es);
		return 0;
	}
	if (r >= 4)
		pads[2] += k->in_row0 - k->out_row0;
	int64_t xs[IR_MAX_RANK], s = 1;
	for (int d = r - 1; d >= 0; d--) {
		xs[d] = s;
		s *= x->shape[d];
	}
	int64_t yin = y->shape[r - 1], xin = x->shape[r - 1], pb = pads[r - 1];
	for (int64_t o = 0; o < n / yin; o++) {
		char *dst = (char *)y->data + (size_t)(o * yin) * es;
		int64_t rest = o, src = 0;
		for (int d = r - 2; d >= 0 && src >= 0; d--) {
			int64_t i = pad_src(mode, rest % y->shape[d] - pads[d], x->shape[d]);
			src = i < 0 ? -1 : src + i * xs[d];
			rest /= y->shape[d];
		}
		const char *row = (const char *)x->data + (size_t)(src < 0 ? 0 : src) * es;
		for (int64_t j = 0; j < yin; j++) {
			if (src >= 0 && j == pb && xin > 0) {
				memcpy(dst + (size_t)j * es, row, (size_t)xin * es);
				j += xin - 1;
				continue;
			}
			int64_t i = src < 0 ? -1 : pad_src(mode, j - pb, xin);
			memcpy(dst + (size_t)j * es, i < 0 ? fill : row + (size_t)i * es, es);
		}
	}
	return 0;
}

/* Int8 lowering: the output keeps the input's scale (reflect and edge only
 * move values) and the fill value is stored quantised with it (so the Tpu
 * op's value is in int8 units), when the Pad runs on codes: a Pad of a
 * float input (the network's input, quantised after the Pad) keeps its
 * value. */
static int pad_lower(struct lower_ctx *lc, const struct ir_op *op)
{
	if (lower_default(lc, op) < 0)
		return -1;
	if (lc->mode == MODE_INT8) {
		struct ir_op *o = &lc->tpu->ops[lc->tpu->n_ops - 1];
		const struct ir_tensor *x = &lc->tpu->tensors[o->in[0]];
		if (!dtype_is_float(x->dtype))
			op_set_float(o, "value", quant_f32_to_qz_one((float)op_float(op, "value", 0),
								     x->scale, x->zero_point, x->dtype));
	}
	return 0;
}

/* Slicing rule along H (axis 2) of a constant Pad: output rows [oh0, oh1)
 * hold input rows [oh0 - pt, oh1 - pt), clamped to the input, one row at
 * least (a slice wholly in the pad reads a row it does not use); the
 * other rows are the fill.  Reflect and edge pads are refused (a first row
 * < 0): their pad rows copy rows a slice would not hold. */
static void pad_slice_h(const struct ir_graph *g, const struct ir_op *op, int oh0, int oh1,
			int *ih0, int *ih1)
{
	const struct ir_tensor *x = &g->tensors[op->in[0]];
	int64_t pads[2 * IR_MAX_RANK];
	*ih0 = *ih1 = -1;
	if (pad_mode(op) != PAD_CONSTANT || x->rank < 4 || x->shape[2] < 1 ||
	    op_param_ints(g, NULL, op, 1, "pads", pads, 2 * IR_MAX_RANK) != 2 * x->rank)
		return;
	int64_t h = x->shape[2], a = oh0 - pads[2], b = oh1 - pads[2];
	a = a < 0 ? 0 : a > h - 1 ? h - 1 : a;
	b = b > h ? h : b <= a ? a + 1 : b;
	*ih0 = (int)a;
	*ih1 = (int)b;
}

/* Parts along an axis it does not pad. */
static int pad_split_axis(const struct ir_graph *g, const struct ir_op *op, int ax, int *in_ax)
{
	int64_t pads[2 * IR_MAX_RANK];
	int r = g->tensors[op->in[0]].rank;
	if (op_ints(op, "pads", pads, 2 * IR_MAX_RANK) != 2 * r || pads[ax] || pads[ax + r])
		return 0;
	return split_axis_x0(g, op, ax, in_ax);
}

/* Parts along a padded axis: output [o0, o1) holds input entries [o0 -
 * begin, o1 - begin) of the axis, clamped to the input, with the pads only
 * where the part meets the input's edge.  A part wholly in a pad, or one
 * whose reflecting pad reaches past its window, is refused. */
static int pad_split_window(const struct ir_graph *g, const struct ir_op *op, int ax, int64_t o0,
			    int64_t o1, int64_t *i0, int64_t *i1, struct ir_op *part)
{
	int64_t pads[2 * IR_MAX_RANK];
	const struct ir_tensor *x = &g->tensors[op->in[0]];
	int r = x->rank;
	if (op_ints(op, "pads", pads, 2 * IR_MAX_RANK) != 2 * r || pad_mode(op) < 0)
		return 0;
	int64_t a = o0 - pads[ax], b = o1 - pads[ax];
	*i0 = a > 0 ? a : 0;
	*i1 = b < x->shape[ax] ? b : x->shape[ax];
	int64_t left = *i0 - a, right = b - *i1;
	if (*i1 <= *i0 || (pad_mode(op) == PAD_REFLECT && (left >= *i1 - *i0 || right >= *i1 - *i0)))
		return 0;
	if (part) {
		pads[ax] = left;
		pads[ax + r] = right;
		op_set_ints(part, "pads", 2 * r, pads);
	}
	return 1;
}

const struct op_def op_def_PAD = {
	.infer = pad_infer, .run_f32 = pad_run, .lower = pad_lower, .run_tpu = pad_run,
	.slice_h = pad_slice_h, .split_axis = pad_split_axis, .split_window = pad_split_window,
};
