/* activation.c - elementwise activations: Relu (max(x, 0)) and Clip
 * (min(max(x, min), max); attributes min and max, absent = unbounded).
 */
#include "opcommon.h"

static int act_infer(struct ir_graph *g, struct ir_op *op)
{
	if (op_check_arity(g, op, 1, 1) < 0)
		return -1;
	return infer_same(g, op);
}

const struct op_def op_def_RELU = {
	.slice_h = slice_h_same,
	.name = "Relu",
	.infer = act_infer,
};

const struct op_def op_def_CLIP = {
	.slice_h = slice_h_same,
	.name = "Clip",
	.infer = act_infer,
};
