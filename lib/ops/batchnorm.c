/* batchnorm.c - BatchNormalization (inference form):
 * y = (x - mean[c]) / sqrt(var[c] + epsilon) * scale[c] + B[c].
 * Inputs x, scale, B, mean, var; top-opt folds it into a conv or turns it
 * into Scale, so it never reaches the Tpu dialect.
 */
#include "opcommon.h"

static int bn_infer(struct ir_graph *g, struct ir_op *op)
{
	if (op_check_arity(g, op, 5, 5) < 0)
		return -1;
	const struct ir_tensor *x = op_in(g, op, 0);
	if (x->rank < 2)
		return op_error(op, "input must have a channel axis");
	for (int i = 1; i < 5; i++)
		if (tensor_numel(op_in(g, op, i)) != x->shape[1])
			return op_error(op, "parameter %d does not have %lld channels", i,
					(long long)x->shape[1]);
	if (op->n_out > 1)
		return op_error(op, "training mode (extra outputs) is not supported");
	return infer_same(g, op);
}

const struct op_def op_def_BATCHNORM = {
	.name = "BatchNormalization",
	.infer = bn_infer,
};
