/* concat.c - Concat: joins its inputs along attribute axis. */
#include "opcommon.h"

static int concat_infer(struct ir_graph *g, struct ir_op *op)
{
	if (op_check_arity(g, op, 1, OP_MAX_IO) < 0)
		return -1;
	const struct ir_tensor *x = op_in(g, op, 0);
	int axis = norm_axis(op_int(op, "axis", 1), x->rank);
	if (axis < 0)
		return op_error(op, "axis out of range");
	int64_t shape[IR_MAX_RANK];
	for (int i = 0; i < x->rank; i++)
		shape[i] = x->shape[i];
	shape[axis] = 0;
	for (int i = 0; i < op->n_in; i++) {
		const struct ir_tensor *t = op_in(g, op, i);
		if (!t || t->rank != x->rank)
			return op_error(op, "inputs differ in rank");
		for (int d = 0; d < x->rank; d++)
			if (d != axis && t->shape[d] != x->shape[d])
				return op_error(op, "input '%s' differs off the concat axis", t->name);
		shape[axis] += t->shape[axis];
	}
	op_set_out(g, op, 0, x->dtype, x->rank, shape);
	return 0;
}

const struct op_def op_def_CONCAT = {
	.name = "Concat",
	.infer = concat_infer,
};
