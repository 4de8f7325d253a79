/* lower_dtype.c - what ir-run computes and the chip lacks.  top2tpu refuses
 * a Top graph holding an f64, u16, u32 or u64 tensor (ONNX's double and
 * wide unsigned integers), with one line naming the tensor
 * (man/man1/top2tpu.1).  An op the chip has no form for runs on the host
 * (PLACE_HOST): codegen gives it a host command and tpu-sim runs it with
 * the interpreter's float kernel on its tensors in DDR (formats/tpuc-isa.5,
 * HOST COMMANDS).  Lowering such an op is lower_host in lower.c, which
 * builds on the lowering context.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "back/lower_dtype.h"

#include "ir/base.h"
#include "ir/op.h"
#include "ir/op_traits.h"

static int chip_lacks(enum ir_dtype t)
{
	return t == DT_F64 || t == DT_U16 || t == DT_U32 || t == DT_U64;
}

int lower_bodies(const struct ir_op *op, struct ir_graph **sub)
{
	int n = 0;
	for (int j = 0; j < op->n_attr && n < 2; j++)
		if (op->attr[j].kind == ATTR_GRAPH)
			sub[n++] = op->attr[j].graph;
	return n;
}

enum ir_dtype lower_float_dtype(enum ir_mode m)
{
	return m == MODE_BF16 ? DT_BF16 : m == MODE_F16 ? DT_F16 : DT_F32;
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

char *lower_shape_values(const struct ir_graph *top)
{
	char *mark = xcalloc((size_t)top->n_tensors + 1, 1);
	for (int i = 0; i < top->n_ops; i++) {
		const struct ir_op *op = &top->ops[i];
		int from = (op->type == OP_SHAPE || op->type == OP_SIZE) && top->tensors[op->in[0]].dyn;
		for (int j = 0; j < op->n_in && !from; j++)
			from = op->in[j] >= 0 && mark[op->in[j]];
		for (int j = 0; j < op->n_out && from; j++) {
			enum ir_dtype dt = top->tensors[op->out[j]].dtype;
			mark[op->out[j]] = dt != DT_F32 && dt != DT_F16 && dt != DT_BF16 && dt != DT_F64;
		}
	}
	return mark;
}

int lower_on_host(const struct ir_graph *top, const struct ir_op *op, const char *shape_val)
{
	const struct op_def *d = op_defs[op->type];
	if (!d->run_f32)
		return 0;
	if (!d->lower && !d->run_tpu)
		return 1;
	/* a dynamic or empty tensor: the chip's commands have static extents */
	for (int j = 0; j < op->n_in + op->n_out; j++) {
		int ti = j < op->n_in ? op->in[j] : op->out[j - op->n_in];
		const struct ir_tensor *t = ti >= 0 ? &top->tensors[ti] : NULL;
		if (t && (t->dyn || (!t->data && tensor_numel(t) == 0) || (shape_val && shape_val[ti])))
			return 1;
	}
	struct ir_graph *sub[2];
	if (lower_bodies(op, sub))
		return 1;      /* control flow: If, Loop, Scan */
	if ((op->type == OP_CONV || op->type == OP_MAXPOOL || op->type == OP_AVGPOOL ||
	     op->type == OP_CONVTRANSPOSE) && top->tensors[op->in[0]].rank == 5)
		return 1;
	/* an operand the chip's form takes as an attribute, given at run time
	 * (Reshape's shape, Slice's starts, TopK's k, Trilu's k ...) */
	int n_in = 0;
	for (int j = 0; j < op->n_in; j++)
		if (op->in[j] >= 0)
			n_in = j + 1;
	if (n_in > op_io_of(op->type).tpu_max_in)
		return 1;
	if (op->type == OP_CONV && !top->tensors[op->in[1]].data)
		return 1;
	if (!op_has(op->type, OPF_F32_ONLY))
		return 0;
	/* f16 and bf16 tensors (a model stored in half precision) are float
	 * to the chip: the op computes in the mode's float dtype */
	for (int j = 0; j < op->n_in + op->n_out; j++) {
		int ti = j < op->n_in ? op->in[j] : op->out[j - op->n_in];
		enum ir_dtype dt = ti >= 0 ? top->tensors[ti].dtype : DT_F32;
		if (dt != DT_F32 && dt != DT_F16 && dt != DT_BF16)
			return 1;
	}
	return 0;
}

int lower_f32_constants(enum op_type t)
{
	switch (t) {
	case OP_ADD: case OP_SUB: case OP_MUL: case OP_DIV: case OP_POW: case OP_SUM:
	case OP_MEAN: case OP_PRELU: case OP_SCALE: case OP_LAYERNORM: case OP_INSTANCENORM:
	case OP_BATCHNORM:
		return 1;
	default:
		return 0;
	}
}
