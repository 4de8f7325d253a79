/* pool.c - MaxPool, AveragePool and GlobalAveragePool over NCHW tensors.
 * Attributes kernel_shape, strides, pads, ceil_mode, dilations (MaxPool),
 * count_include_pad (AveragePool).
 */
#include "opcommon.h"

static int pool_infer(struct ir_graph *g, struct ir_op *op)
{
	struct spatial s;
	if (op_check_arity(g, op, 1, 1) < 0 || spatial_get(g, op, &s) < 0)
		return -1;
	if (op->n_out > 1)
		return op_error(op, "the Indices output is not supported");
	const struct ir_tensor *x = op_in(g, op, 0);
	if (x->rank != 4)
		return op_error(op, "only 2-D pooling (4-D input) is supported");
	int64_t shape[4] = {
		x->shape[0], x->shape[1],
		spatial_out((int)x->shape[2], s.kh, s.sh, s.dh, s.pt, s.pb, s.ceil_mode),
		spatial_out((int)x->shape[3], s.kw, s.sw, s.dw, s.pl, s.pr, s.ceil_mode),
	};
	if (shape[2] < 1 || shape[3] < 1)
		return op_error(op, "window larger than the padded input");
	op_set_out(g, op, 0, x->dtype, 4, shape);
	return 0;
}

static int gap_infer(struct ir_graph *g, struct ir_op *op)
{
	if (op_check_arity(g, op, 1, 1) < 0)
		return -1;
	const struct ir_tensor *x = op_in(g, op, 0);
	if (x->rank < 3)
		return op_error(op, "input needs spatial axes");
	int64_t shape[IR_MAX_RANK];
	for (int i = 0; i < x->rank; i++)
		shape[i] = i < 2 ? x->shape[i] : 1;
	op_set_out(g, op, 0, x->dtype, x->rank, shape);
	return 0;
}

/* One add (or compare) per input element in the window. */
static int64_t pool_macs(const struct ir_graph *g, const struct ir_op *op)
{
	int64_t k[2] = { 1, 1 };
	op_ints(op, "kernel_shape", k, 2);
	return tensor_numel(&g->tensors[op->out[0]]) * k[0] * k[1];
}

static int64_t gap_macs(const struct ir_graph *g, const struct ir_op *op)
{
	return tensor_numel(&g->tensors[op->in[0]]);
}

const struct op_def op_def_MAXPOOL = {
	.slice_h = slice_h_window,
	.name = "MaxPool",
	.infer = pool_infer,
	.macs = pool_macs,
};

const struct op_def op_def_AVGPOOL = {
	.slice_h = slice_h_window,
	.name = "AveragePool",
	.infer = pool_infer,
	.macs = pool_macs,
};

const struct op_def op_def_GAVGPOOL = {
	.name = "GlobalAveragePool",
	.infer = gap_infer,
	.macs = gap_macs,
};
