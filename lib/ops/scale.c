/* scale.c - Scale: per-channel affine y = x * scale[c] + bias[c] (channel
 * axis 1), with optional fused ReLU; what a BatchNormalization becomes when
 * it cannot fold into a conv.  Inputs x, scale [C], bias [C].
 */
#include "ops/kern_util.h"
#include "ir/op.h"
#include "back/lower.h"
#include "quant/quant.h"

static int scale_infer(struct ir_graph *g, struct ir_op *op)
{
	/* Tpu int8: [x, scale, bias, multiplier, shift] or [x, scale, coeff] */
	const struct ir_tensor *x = op_in(g, op, 0);
	if (x->rank < 2)
		return op_error(op, "input must have a channel axis");
	for (int i = 1; i < (g->dialect == DIALECT_TOP ? 3 : 2); i++)
		if (tensor_numel(op_in(g, op, i)) != x->shape[1])
			return op_error(op, "parameter %d does not have %lld channels", i,
					(long long)x->shape[1]);
	return infer_same(g, op);
}

static int64_t scale_macs(const struct ir_graph *g, const struct ir_op *op)
{
	return tensor_numel(&g->tensors[op->out[0]]);
}

/* Float reference: y = act(x * scale[c] + bias[c]). */
static int scale_f32(struct kern *k)
{
	if (kern_need_f32(k) < 0)
		return -1;
	return kern_channel_affine(k, k->in[1].data, k->in[2].data);
}

/* Int8 lowering: the scale vector is quantised per channel like a conv
 * weight [C] (so each becomes +-127), the bias to i32; requantisation per
 * channel (formats/tpuc-quant.5). */
static int scale_lower(struct lower_ctx *lc, const struct ir_op *op)
{
	if (lc->mode != MODE_INT8)
		return lower_default(lc, op);
	const struct ir_tensor *w = &lc->top->tensors[op->in[1]];
	const struct ir_tensor *b = &lc->top->tensors[op->in[2]];
	if (!w->data || !b->data || w->dtype != DT_F32 || b->dtype != DT_F32)
		return op_error(op, "int8 lowering needs constant f32 scale and bias");
	struct lower_pc pc = {
		.w = w->data, .wname = w->name, .wrank = w->rank, .wshape = w->shape,
		.b = b->data, .bname = b->name,
		.channels = tensor_numel(w), .per = 1, .cstride = 1, .estride = 1,
	};
	return lower_per_channel(lc, op, &pc) < 0 ? -1 : 0;
}

static int scale_tpu(struct kern *k)
{
	if (quant_is_float(k->out[0].dtype))
		return quant_run_f32(k);
	const struct view *x = &k->in[0], *w = &k->in[1], *y = &k->out[0];
	if (!quant_is_q(x->dtype) || w->dtype != DT_I8 || !quant_is_q(y->dtype))
		return op_error(k->op, "int8 kernel needs i8 or u8 input and output, i8 scale");
	int64_t n = x->shape[0], c = x->shape[1], inner = view_numel(x) / (n * c > 0 ? n * c : 1);
	if (view_numel(w) != c)
		return op_error(k->op, "int8 scale must have %lld channels", (long long)c);
	if (quant_check_channel_params(k, 2, c) < 0)
		return -1;
	int lo, hi;
	quant_out_bounds(k->op, y->dtype, y->scale, y->zero_point, &lo, &hi);
	const int8_t *wd = w->data;
	int zx = x->zero_point, zy = y->zero_point;
	for (int64_t ch = 0; ch < c; ch++) {
		int32_t bias, mult, shift;
		if (quant_channel_params(k, 2, (int)ch, &bias, &mult, &shift) < 0)
			return -1;
		for (int64_t b = 0; b < n; b++) {
			int64_t p0 = (b * c + ch) * inner;
			for (int64_t i = 0; i < inner; i++)
				quant_put(y->data, y->dtype, p0 + i,
					  quant_requant_zp((quant_get(x->data, x->dtype, p0 + i) - zx) * wd[ch] + bias,
							   mult, shift, zy, lo, hi));
		}
	}
	return 0;
}

const struct op_def op_def_SCALE = {
	.infer = scale_infer, .run_f32 = scale_f32, .lower = scale_lower, .run_tpu = scale_tpu,
	.macs = scale_macs, .slice_h = slice_h_same, .split_axis = split_axis_chan,
};
