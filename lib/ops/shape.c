/* shape.c - data-movement ops that only change the view of a tensor:
 * Flatten (attribute axis), Reshape (attribute shape, already resolved:
 * no 0 or -1) and Identity.  In memory they are copies.
 */
#include <string.h>

#include "ir/op.h"
#include "ops/runtime_shape.h"
#include "back/lower.h"
#include "quant/quant.h"

static int flatten_infer(struct ir_graph *g, struct ir_op *op)
{
	const struct ir_tensor *x = op_in(g, op, 0);
	int64_t axis = op_int(op, "axis", 1);
	if (axis < 0)
		axis += x->rank;
	if (axis < 0 || axis > x->rank)
		return op_error(op, "axis out of range");
	int64_t shape[2] = { 1, 1 };
	for (int i = 0; i < x->rank; i++)
		shape[i >= axis] *= x->shape[i];
	op_set_out(g, op, 0, x->dtype, 2, shape);
	return 0;
}

static int reshape_infer(struct ir_graph *g, struct ir_op *op)
{
	/* a second input: the shape at run time (lib/ops/runtime_shape.c) */
	if (op->n_in > 1 && op->in[1] >= 0 && !op_attr(op, "shape"))
		return runtime_shape_infer(g, op);
	const struct ir_tensor *x = op_in(g, op, 0);
	int64_t shape[IR_MAX_RANK];
	int n = op_ints(op, "shape", shape, IR_MAX_RANK);
	if (n > IR_MAX_RANK)
		return op_error(op, "rank %d exceeds %d", n, IR_MAX_RANK);
	int64_t numel = 1;
	for (int i = 0; i < n; i++) {
		if (shape[i] < 0)
			return op_error(op, "shape must be resolved (no -1)");
		numel *= shape[i];
	}
	if (numel != tensor_numel(x))
		return op_error(op, "cannot reshape %lld elements to %lld",
				(long long)tensor_numel(x), (long long)numel);
	op_set_out(g, op, 0, x->dtype, n, shape);
	return 0;
}

static int identity_infer(struct ir_graph *g, struct ir_op *op)
{
	return infer_same(g, op);
}

/* Reference of Flatten, Reshape and Identity for any dtype: row-major data
 * is the same under every view, so it is a copy. */
static int copy_f32(struct kern *k)
{
	const struct view *x = &k->in[0], *y = &k->out[0];
	if (x->dtype != y->dtype || view_numel(x) != view_numel(y))
		return op_error(k->op, "input and output differ in dtype or size");
	if (runtime_shape_check(k) < 0)
		return -1;
	if (y->data != x->data)
		memcpy(y->data, x->data, (size_t)view_numel(y) * dtype_size(y->dtype));
	return 0;
}

const struct op_def op_def_FLATTEN = {
	.infer = flatten_infer, .run_f32 = copy_f32, .lower = lower_default,
	.run_tpu = copy_f32,
};

const struct op_def op_def_RESHAPE = {
	.infer = reshape_infer, .run_f32 = copy_f32, .lower = lower_default,
	.run_tpu = copy_f32,
};

const struct op_def op_def_IDENTITY = {
	.infer = identity_infer, .run_f32 = copy_f32, .lower = lower_default,
	.run_tpu = copy_f32,
};
