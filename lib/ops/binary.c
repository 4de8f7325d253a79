/* binary.c - elementwise Add and Mul with numpy broadcasting; Add may carry
 * a fused ReLU (do_relu, relu_limit).
 */
#include "opcommon.h"

static int binary_infer(struct ir_graph *g, struct ir_op *op)
{
	if (op_check_arity(g, op, 2, 2) < 0)
		return -1;
	const struct ir_tensor *a = op_in(g, op, 0), *b = op_in(g, op, 1);
	int64_t shape[IR_MAX_RANK];
	int rank;
	if (broadcast_shape(a->rank, a->shape, b->rank, b->shape, &rank, shape) < 0)
		return op_error(op, "shapes of '%s' and '%s' do not broadcast", a->name, b->name);
	op_set_out(g, op, 0, a->dtype, rank, shape);
	return 0;
}

static int64_t binary_macs(const struct ir_graph *g, const struct ir_op *op)
{
	return tensor_numel(&g->tensors[op->out[0]]);
}

const struct op_def op_def_ADD = {
	.slice_h = slice_h_same,
	.name = "Add",
	.infer = binary_infer,
	.macs = binary_macs,
};

const struct op_def op_def_MUL = {
	.slice_h = slice_h_same,
	.name = "Mul",
	.infer = binary_infer,
	.macs = binary_macs,
};
