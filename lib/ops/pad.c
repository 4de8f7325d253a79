/* pad.c - Pad (constant mode): attribute pads lists every axis' begin
 * counts then every axis' end counts, as ONNX does; value is the fill.
 */
#include <string.h>

#include "opcommon.h"

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

const struct op_def op_def_PAD = {
	.name = "Pad",
	.infer = pad_infer,
};
