/* pad.c - Pad (constant mode): attribute pads lists every axis' begin
 * counts then every axis' end counts, as ONNX does; value is the fill.
 */
#include <string.h>

#include "convert.h"
#include "opcommon.h"
#include "lower.h"
#include "quant.h"

static int pad_infer(struct ir_graph *g, struct ir_op *op)
{
	if (op_check_arity(g, op, 1, 1) < 0)
		return -1;
	const struct ir_tensor *x = op_in(g, op, 0);
	int64_t pads[2 * IR_MAX_RANK];
	int n = op_ints(op, "pads", pads, 2 * IR_MAX_RANK);
	if (n != 2 * x->rank)
		return op_error(op, "pads has %d values for a rank-%d input", n, x->rank);
	if (strcmp(op_str(op, "mode", "constant"), "constant"))
		return op_error(op, "only constant padding is supported");
	int64_t shape[IR_MAX_RANK];
	for (int i = 0; i < x->rank; i++) {
		if (pads[i] < 0 || pads[i + x->rank] < 0)
			return op_error(op, "negative pads (cropping) are not supported");
		shape[i] = x->shape[i] + pads[i] + pads[i + x->rank];
	}
	op_set_out(g, op, 0, x->dtype, x->rank, shape);
	return 0;
}

/* Reference for any dtype: fill with value (converted to the dtype), then
 * copy each innermost row of the input to its place. */
static int pad_f32(struct kern *k)
{
	const struct view *x = &k->in[0], *y = &k->out[0];
	int r = x->rank;
	int64_t pads[2 * IR_MAX_RANK];
	if (op_ints(k->op, "pads", pads, 2 * IR_MAX_RANK) != 2 * r || x->dtype != y->dtype)
		return op_error(k->op, "pads or dtypes disagree with the tensors");
	size_t es = dtype_size(y->dtype);
	int64_t n = view_numel(y), xn = view_numel(x);
	float value = (float)op_float(k->op, "value", 0);
	char fill[8];
	dtype_convert(fill, y->dtype, &value, DT_F32, 1);
	for (int64_t i = 0; i < n; i++)
		memcpy((char *)y->data + (size_t)i * es, fill, es);
	if (xn == 0)
		return 0;
	if (r == 0) {
		memcpy(y->data, x->data, es);
		return 0;
	}
	int64_t ys[IR_MAX_RANK], inner = x->shape[r - 1];
	int64_t s = 1;
	for (int d = r - 1; d >= 0; d--) {
		ys[d] = s;
		s *= y->shape[d];
	}
	for (int64_t o = 0; o < xn / inner; o++) {
		int64_t rest = o, off = pads[r - 1];
		for (int d = r - 2; d >= 0; d--) {
			off += (rest % x->shape[d] + pads[d]) * ys[d];
			rest /= x->shape[d];
		}
		memcpy((char *)y->data + (size_t)off * es,
		       (const char *)x->data + (size_t)(o * inner) * es, (size_t)inner * es);
	}
	return 0;
}

/* Int8 lowering: the output keeps the input's scale and the fill value is
 * stored quantised with it (so the Tpu op's value is in int8 units). */
static int pad_lower(struct lower_ctx *lc, const struct ir_op *op)
{
	if (lower_default(lc, op) < 0)
		return -1;
	if (lc->mode == LOWER_INT8) {
		struct ir_op *o = &lc->tpu->ops[lc->tpu->n_ops - 1];
		const struct ir_tensor *x = &lc->tpu->tensors[o->in[0]];
		op_set_float(o, "value", quant_f32_to_qz_one((float)op_float(op, "value", 0),
							     x->scale, x->zero_point, x->dtype));
	}
	return 0;
}

const struct op_def op_def_PAD = {
	.name = "Pad",
	.run_f32 = pad_f32,
	.lower = pad_lower,
	.run_tpu = pad_f32,
	.infer = pad_infer,
};
