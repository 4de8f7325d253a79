/* cast.c - Cast: converts between dtypes (attribute "to", a dtype name as in
 * formats/tpuc-ir.5).  In the Tpu dialect it quantises float to integer and
 * back using the tensors' scale and zero point (formats/tpuc-quant.5).
 */
#include <string.h>

#include "opcommon.h"

static int cast_infer(struct ir_graph *g, struct ir_op *op)
{
	if (op_check_arity(g, op, 1, 1) < 0)
		return -1;
	const struct ir_tensor *x = op_in(g, op, 0);
	int dt = dtype_from_name(op_str(op, "to", ""));
	if (dt < 0)
		return op_error(op, "attribute 'to' names no dtype");
	op_set_out(g, op, 0, (enum ir_dtype)dt, x->rank, x->shape);
	return 0;
}

const struct op_def op_def_CAST = {
	.slice_h = slice_h_same,
	.name = "Cast",
	.infer = cast_infer,
};
