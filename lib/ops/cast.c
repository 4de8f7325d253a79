/* cast.c - Cast: converts between dtypes (attribute "to", a dtype name as in
 * formats/tpuc-ir.5).  In the Tpu dialect it quantises float to integer and
 * back using the tensors' scale and zero point (formats/tpuc-quant.5).
 */
#include <stdlib.h>
#include <string.h>

#include "ir/convert.h"
#include "ir/op.h"
#include "ops/kern_util.h"
#include "back/lower.h"
#include "quant/quant.h"

static int cast_infer(struct ir_graph *g, struct ir_op *op)
{
	/* Tpu: [x] or, requantising an i32 accumulator, [x, bias, multiplier, shift] */
	if (op->n_in != 1 && op->n_in != 4)
		return op_error(op, "takes 1 input, or 4 to requantise");
	const struct ir_tensor *x = op_in(g, op, 0);
	int dt = dtype_from_name(op_str(op, "to", ""));
	if (dt < 0)
		return op_error(op, "attribute 'to' names no dtype");
	op_set_out(g, op, 0, (enum ir_dtype)dt, x->rank, x->shape);
	return 0;
}

/* Top dialect reference: conversion by value (lib/ir/convert.h). */
static int cast_f32(struct kern *k)
{
	const struct view *x = &k->in[0], *y = &k->out[0];
	dtype_convert(y->data, y->dtype, x->data, x->dtype, view_numel(y));
	return 0;
}

/* Tpu dialect: f32 (bf16, f16) to i8 or u8 quantises with the output's
 * scale, i8 or u8 to f32 (bf16, f16) dequantises with the input's
 * (lib/quant/quant.h); other pairs, and integer tensors without a scale, convert
 * by value (f32 to bf16/f16 rounding to nearest even). */
/* Tpu, inputs [acc, bias, multiplier, shift]: the i32 accumulator of a
 * split reduction (lib/back/lower_kin.c) plus bias, requantised to the i8
 * or u8 output as the unsplit op's kernel would (quant_requant_zp, the
 * fused ReLU of attributes do_relu and relu_limit included); the three
 * parameters are i32 tensors that broadcast to the output (one per output
 * channel or one for all). */
static int cast_requant(struct kern *k)
{
	const struct view *x = &k->in[0], *y = &k->out[0];
	if (x->dtype != DT_I32 || !quant_is_q(y->dtype))
		return op_error(k->op, "requantisation needs an i32 input and an i8 or u8 output");
	int r = y->rank;
	int64_t st[3][IR_MAX_RANK], n = view_numel(y);
	for (int j = 0; j < 3; j++) {
		const struct view *p = &k->in[1 + j];
		if (!p->data || p->dtype != DT_I32 || p->rank > r)
			return op_error(k->op, "requantisation parameter %d must be i32", 1 + j);
		kern_bcast_strides(p, r, y->shape, st[j]);
	}
	if (view_numel(x) != n)
		return op_error(k->op, "accumulator and output differ in size");
	int lo, hi;
	quant_out_bounds(k->op, y->dtype, y->scale, y->zero_point, &lo, &hi);
	const int32_t *acc = x->data;
	int64_t idx[IR_MAX_RANK] = { 0 };
	for (int64_t e = 0; e < n; e++) {
		int64_t o[3] = { 0, 0, 0 };
		for (int a = 0; a < r; a++)
			for (int j = 0; j < 3; j++)
				o[j] += idx[a] * st[j][a];
		int32_t bias = ((const int32_t *)k->in[1].data)[o[0]];
		int32_t mult = ((const int32_t *)k->in[2].data)[o[1]];
		int32_t shift = ((const int32_t *)k->in[3].data)[o[2]];
		quant_put(y->data, y->dtype, e, quant_requant_zp(quant_add_sat32(acc[e], bias), mult,
								  shift, y->zero_point, lo, hi));
		for (int a = r - 1; a >= 0 && ++idx[a] == y->shape[a]; a--)
			idx[a] = 0;
	}
	return 0;
}

static int cast_tpu(struct kern *k)
{
	const struct view *x = &k->in[0], *y = &k->out[0];
	int64_t n = view_numel(y);
	if (k->n_in == 4)
		return cast_requant(k);
	if (x->dtype == DT_F32 && quant_is_q(y->dtype) && y->scale != 0) {
		quant_f32_to_q(x->data, y->data, n, y->scale, y->zero_point, y->dtype);
	} else if (quant_is_q(x->dtype) && x->scale != 0 && y->dtype == DT_F32) {
		quant_q_to_f32(x->data, x->dtype, y->data, n, x->scale, x->zero_point);
	} else if ((quant_is_float(x->dtype) && quant_is_q(y->dtype) && y->scale != 0) ||
		   (quant_is_q(x->dtype) && x->scale != 0 && quant_is_float(y->dtype))) {
		/* bf16/f16 <-> i8/u8 (mixed precision): through f32, exactly as
		 * the two Casts would */
		float *f = xmalloc(sizeof(float) * (size_t)(n + 1));
		if (quant_is_q(y->dtype)) {
			dtype_convert(f, DT_F32, x->data, x->dtype, n);
			quant_f32_to_q(f, y->data, n, y->scale, y->zero_point, y->dtype);
		} else {
			quant_q_to_f32(x->data, x->dtype, f, n, x->scale, x->zero_point);
			dtype_convert(y->data, y->dtype, f, DT_F32, n);
		}
		free(f);
	} else
		return cast_f32(k);
	return 0;
}

const struct op_def op_def_CAST = {
	.infer = cast_infer, .run_f32 = cast_f32, .lower = lower_default, .run_tpu = cast_tpu,
	.slice_h = slice_h_same,
};
