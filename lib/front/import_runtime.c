/* import_runtime.c - shape operands ONNX allows at run time (Reshape's
 * shape, Expand's shape, Tile's repeats) that are not constants: the
 * node's output shape is taken as the model declares it (a graph output or
 * a value_info entry), written as the op's attribute like a folded
 * constant's, and the operand stays an input: ir-run checks at run time
 * that its value gives that shape
 * (lib/ops/runtime_shape.c).  Without a static shape declared for the
 * output, the output's extents are dynamic (formats/tpuc-ir.5).
 */
#include <string.h>

#include "front/import_ops.h"
#include "front/import_util.h"
#include "ir/op.h"

/* The static shape the model declares for tensor NAME, or -1. */
static int declared_shape(const struct imp *im, const char *name, int *rank, int64_t *shape)
{
	const Onnx__GraphProto *gp = im->gp;
	for (size_t l = 0; l < 2; l++) {
		size_t n = l ? gp->n_value_info : gp->n_output;
		Onnx__ValueInfoProto *const *v = l ? gp->value_info : gp->output;
		for (size_t i = 0; i < n; i++) {
			if (!v[i]->name || strcmp(v[i]->name, name) || !v[i]->type ||
			    !v[i]->type->tensor_type || !v[i]->type->tensor_type->shape)
				continue;
			const Onnx__TensorShapeProto *sp = v[i]->type->tensor_type->shape;
			if (sp->n_dim > IR_MAX_RANK)
				return -1;
			for (size_t d = 0; d < sp->n_dim; d++) {
				const Onnx__TensorShapeProto__Dimension *dm = sp->dim[d];
				if (dm->value_case != ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE ||
				    dm->dim_value < 1 || dm->dim_value > IR_MAX_DIM)
					return -1;
				shape[d] = dm->dim_value;
			}
			*rank = (int)sp->n_dim;
			return 0;
		}
	}
	return -1;
}

int cv_runtime_shape(struct imp *im, struct ir_op *op, const char *what)
{
	const struct ir_tensor *x = known_tensor(im, op->in[0]);
	const struct ir_tensor *p = &im->g->tensors[op->in[1]];
	int64_t shape[IR_MAX_RANK];
	int rank;
	if (!x)
		return node_err(im, "the input's shape is unknown");
	if (p->dtype != DT_I64 || p->rank != 1)
		return node_err(im, "%s must be a 1-D int64 tensor", what);
	/* no shape declared (or an input of dynamic extents): the output's
	 * extents are dynamic, found from the value at run time */
	if (x->dyn || declared_shape(im, im->g->tensors[op->out[0]].name, &rank, shape) < 0)
		return 0;
	if (op->type == OP_TILE) {
		if (rank != x->rank)
			return node_err(im, "the declared output has rank %d, the input %d", rank, x->rank);
		for (int d = 0; d < rank; d++) {
			if (shape[d] % x->shape[d])
				return node_err(im, "the declared output shape is no tiling of the input");
			shape[d] /= x->shape[d];
		}
	}
	op_set_ints(op, op->type == OP_TILE ? "repeats" : "shape", rank, shape);
	return 0;
}
