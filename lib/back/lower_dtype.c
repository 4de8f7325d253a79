/* lower_dtype.c - what ir-run computes and the chip lacks: top2tpu refuses
 * a Top graph holding an f64, u16, u32 or u64 tensor (ONNX's double and
 * wide unsigned integers), an op the chip computes in f32 only
 * (OPF_F32_ONLY) holding any other dtype, a 3-D Conv or pooling, and a Conv
 * whose weight is not a constant, with one line naming the tensor or op
 * (man/man1/top2tpu.1).
 */
#include "back/lower_dtype.h"

#include "ir/base.h"
#include "ir/op_traits.h"

static int chip_lacks(enum ir_dtype t)
{
	return t == DT_F64 || t == DT_U16 || t == DT_U32 || t == DT_U64;
}

int lower_dtype_check(const struct ir_graph *top)
{
	for (int i = 0; i < top->n_tensors; i++) {
		const struct ir_tensor *t = &top->tensors[i];
		if (chip_lacks(t->dtype))
			return err_set("tensor '%s': dtype %s is not supported on the chip "
				       "(no f64, u16, u32 or u64; ir-run computes in it)",
				       t->name, dtype_name(t->dtype));
	}
	for (int i = 0; i < top->n_ops; i++) {
		const struct ir_op *op = &top->ops[i];
		if ((op->type == OP_CONV || op->type == OP_MAXPOOL || op->type == OP_AVGPOOL ||
		     op->type == OP_CONVTRANSPOSE) &&
		    top->tensors[op->in[0]].rank == 5)
			return err_set("op '%s' (%s): 3-D (rank-5 input) is not supported on the chip "
				       "(ir-run computes it)", op->name, op_name(op->type));
		if ((op->type == OP_RESHAPE || op->type == OP_EXPAND || op->type == OP_TILE) &&
		    op->n_in > 1 && op->in[1] >= 0)
			return err_set("op '%s' (%s): '%s' is not a constant: the chip needs shapes "
				       "fixed (ir-run checks it at run time)", op->name,
				       op_name(op->type), top->tensors[op->in[1]].name);
		if (op->type == OP_CONV && !top->tensors[op->in[1]].data)
			return err_set("op '%s' (Conv): weight '%s' is not a constant: the chip "
				       "needs constant weights (ir-run computes it)", op->name,
				       top->tensors[op->in[1]].name);
		if (!op_has(op->type, OPF_F32_ONLY))
			continue;
		for (int j = 0; j < op->n_in + op->n_out; j++) {
			int ti = j < op->n_in ? op->in[j] : op->out[j - op->n_in];
			if (ti >= 0 && top->tensors[ti].dtype != DT_F32)
				return err_set("op '%s' (%s): dtype %s is not supported on the chip "
					       "(f32 only; ir-run computes in it)", op->name,
					       op_name(op->type), dtype_name(top->tensors[ti].dtype));
		}
	}
	return 0;
}
