/* lower_dtype.c - what ir-run computes and the chip lacks.  top2tpu refuses
 * a Top graph holding an f64, u16, u32 or u64 tensor (ONNX's double and
 * wide unsigned integers), with one line naming the tensor
 * (man/man1/top2tpu.1).  An op the chip has no form for runs on the host
 * (PLACE_HOST): codegen gives it a host command and tpu-sim runs it with
 * the interpreter's float kernel on its tensors in DDR (formats/tpuc-isa.5,
 * HOST COMMANDS).
 */
#include <stdlib.h>

#include "back/lower_dtype.h"
#include "back/lower.h"

#include "ir/base.h"
#include "ir/op.h"
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
	return 0;
}

int lower_on_host(const struct ir_graph *top, const struct ir_op *op)
{
	const struct op_def *d = op_defs[op->type];
	if (!d->run_f32)
		return 0;
	if (!d->lower && !d->run_tpu)
		return 1;
	if ((op->type == OP_CONV || op->type == OP_MAXPOOL || op->type == OP_AVGPOOL ||
	     op->type == OP_CONVTRANSPOSE) && top->tensors[op->in[0]].rank == 5)
		return 1;
	if ((op->type == OP_RESHAPE || op->type == OP_EXPAND || op->type == OP_TILE) &&
	    op->n_in > 1 && op->in[1] >= 0)
		return 1;
	if (op->type == OP_CONV && !top->tensors[op->in[1]].data)
		return 1;
	if (!op_has(op->type, OPF_F32_ONLY))
		return 0;
	for (int j = 0; j < op->n_in + op->n_out; j++) {
		int ti = j < op->n_in ? op->in[j] : op->out[j - op->n_in];
		if (ti >= 0 && top->tensors[ti].dtype != DT_F32)
			return 1;
	}
	return 0;
}

int lower_host(struct lower_ctx *lc, const struct ir_op *op)
{
	int *in = xcalloc((size_t)op->n_in + 1, sizeof *in);
	int *out = xcalloc((size_t)op->n_out + 1, sizeof *out);
	int rc = 0;
	for (int i = 0; i < op->n_in && rc == 0; i++)
		if ((in[i] = op->in[i] < 0 ? -1 : lower_float_input(lc, op, op->in[i], DT_F32)) < 0 &&
		    op->in[i] >= 0)
			rc = -1;
	if (rc == 0) {
		for (int i = 0; i < op->n_out; i++)
			out[i] = lower_output(lc, op->out[i], lc->top->tensors[op->out[i]].dtype, 0, 0);
		int k = lower_emit(lc, op, op->n_in, in, op->n_out, out);
		lc->tpu->ops[k].place = PLACE_HOST;
	}
	free(in);
	free(out);
	return rc;
}
