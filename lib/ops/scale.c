/* scale.c - Scale: per-channel affine y = x * scale[c] + bias[c] (channel
 * axis 1), with optional fused ReLU; what a BatchNormalization becomes when
 * it cannot fold into a conv.  Inputs x, scale [C], bias [C].
 */
#include "opcommon.h"

static int scale_infer(struct ir_graph *g, struct ir_op *op)
{
	if (op_check_arity(g, op, 3, 3) < 0)
		return -1;
	const struct ir_tensor *x = op_in(g, op, 0);
	if (x->rank < 2)
		return op_error(op, "input must have a channel axis");
	for (int i = 1; i < 3; i++)
		if (tensor_numel(op_in(g, op, i)) != x->shape[1])
			return op_error(op, "parameter %d does not have %lld channels", i,
					(long long)x->shape[1]);
	return infer_same(g, op);
}

static int64_t scale_macs(const struct ir_graph *g, const struct ir_op *op)
{
	return tensor_numel(&g->tensors[op->out[0]]);
}

const struct op_def op_def_SCALE = {
	.slice_h = slice_h_same,
	.name = "Scale",
	.infer = scale_infer,
	.macs = scale_macs,
};
