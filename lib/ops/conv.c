/* conv.c - Conv: 2-D convolution with stride, padding, dilation and groups
 * (depthwise included); y = conv(x, w) + b, then optional fused ReLU
 * (attributes do_relu, relu_limit).  Inputs x [N,C,H,W], w [OC,C/g,KH,KW],
 * optional b [OC]; output [N,OC,OH,OW].
 */
#include "opcommon.h"

static int conv_infer(struct ir_graph *g, struct ir_op *op)
{
	struct spatial s;
	if (op_check_arity(g, op, 2, 3) < 0 || spatial_get(g, op, &s) < 0)
		return -1;
	const struct ir_tensor *x = op_in(g, op, 0), *w = op_in(g, op, 1);
	if (x->rank != 4 || w->rank != 4)
		return op_error(op, "only 2-D convolution (4-D input and weight) is supported");
	if (x->shape[1] != w->shape[1] * s.group || w->shape[0] % s.group)
		return op_error(op, "channels %lld, weight [%lld,%lld,..] and group %d disagree",
				(long long)x->shape[1], (long long)w->shape[0],
				(long long)w->shape[1], s.group);
	const struct ir_tensor *b = op_in(g, op, 2);
	if (b && tensor_numel(b) != w->shape[0])
		return op_error(op, "bias has %lld values for %lld output channels",
				(long long)tensor_numel(b), (long long)w->shape[0]);
	int64_t shape[4] = {
		x->shape[0], w->shape[0],
		spatial_out((int)x->shape[2], s.kh, s.sh, s.dh, s.pt, s.pb, 0),
		spatial_out((int)x->shape[3], s.kw, s.sw, s.dw, s.pl, s.pr, 0),
	};
	if (shape[2] < 1 || shape[3] < 1)
		return op_error(op, "kernel larger than the padded input");
	op_set_out(g, op, 0, x->dtype, 4, shape);
	return 0;
}

static int64_t conv_macs(const struct ir_graph *g, const struct ir_op *op)
{
	const struct ir_tensor *w = &g->tensors[op->in[1]];
	const struct ir_tensor *y = &g->tensors[op->out[0]];
	return tensor_numel(y) * w->shape[1] * w->shape[2] * w->shape[3];
}

const struct op_def op_def_CONV = {
	.slice_h = slice_h_window,
	.name = "Conv",
	.infer = conv_infer,
	.macs = conv_macs,
};
