/* import_index.c - ONNX converters (lib/front/import_ops.h) for index ops:
 * ScatterElements, GatherND, ScatterND, OneHot, TopK, CumSum, Trilu, EyeLike,
 * the losses.
 */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "front/import_ops.h"
#include "front/import_util.h"
#include "ir/base.h"
#include "ir/convert.h"
#include "ir/op.h"
#include "onnx.pb-c.h"

int cv_axis0(struct imp *im, struct ir_op *op)
{
	int64_t axis;
	if (attr_int(im, "axis", 0, &axis) < 0 || norm_axes(im, &axis, 1, known_rank(im, op->in[0])) < 0)
		return -1;
	op_set_int(op, "axis", axis);
	return 0;
}

int put_reduction(struct imp *im, struct ir_op *op)
{
	char red[16];
	if (attr_str(im, "reduction", "none", red, sizeof red) < 0)
		return -1;
	if (strcmp(red, "none") && strcmp(red, "add") && strcmp(red, "mul"))
		return node_err(im, "reduction '%s' is not supported", red);
	op_set_str(op, "reduction", red);
	return 0;
}

int cv_scatterelements(struct imp *im, struct ir_op *op)
{
	op->type = OP_SCATTERELEMENTS;
	return cv_axis0(im, op) < 0 ? -1 : put_reduction(im, op);
}

int cv_gathernd(struct imp *im, struct ir_op *op) { return put_int(im, op, "batch_dims", 0); }
int cv_scatternd(struct imp *im, struct ir_op *op) { return put_reduction(im, op); }

/* OneHot: the constant depth becomes an attribute, a run-time one input
 * 2; values become input 1. */
int cv_onehot(struct imp *im, struct ir_op *op)
{
	double depth;
	int64_t axis;
	int r = known_rank(im, op->in[0]);
	if (attr_int(im, "axis", -1, &axis) < 0 || norm_axes(im, &axis, 1, r < 0 ? r : r + 1) < 0)
		return -1;
	int d = op->in[1];
	op->in[1] = op->in[2];
	if (!im->g->tensors[d].data) {   /* depth at run time: input 2 */
		op->in[2] = d;
	} else {
		if (const_scalar(im, d, "depth", &depth) < 0)
			return -1;
		op->n_in = 2;
		op_set_int(op, "depth", (int64_t)depth);
	}
	op_set_int(op, "axis", axis);
	return 0;
}

/* TopK: k from the attribute (opset < 10) or the constant input; a
 * run-time k stays input 1 (the output's extent along axis is then
 * dynamic). */
int cv_topk(struct imp *im, struct ir_op *op)
{
	int64_t kv[1], axis;
	int n = 1;
	if (attr_int(im, "axis", -1, &axis) < 0 || norm_axes(im, &axis, 1, known_rank(im, op->in[0])) < 0)
		return -1;
	if (im->opset >= 10 && op->n_in > 1 && op->in[1] >= 0 &&
	    !im->g->tensors[op->in[1]].data) {   /* k at run time */
		op_set_int(op, "axis", axis);
		return put_int(im, op, "largest", 1) < 0 ? -1 : put_int(im, op, "sorted", 1);
	}
	if (im->opset < 10) {
		if (attr_int(im, "k", -1, &kv[0]) < 0)
			return -1;
	} else if (const_ints(im, op->in[1], "K", kv, 1, &n) < 0) {
		return -1;
	}
	if (n != 1)
		return node_err(im, "K must hold one value");
	op->n_in = 1;
	op_set_int(op, "k", kv[0]);
	op_set_int(op, "axis", axis);
	return put_int(im, op, "largest", 1) < 0 ? -1 : put_int(im, op, "sorted", 1);
}

int cv_cumsum(struct imp *im, struct ir_op *op)
{
	double axis;
	if (im->g->tensors[op->in[1]].data) {   /* else the axis at run time: input 1 */
		if (const_scalar(im, op->in[1], "axis", &axis) < 0)
			return -1;
		int64_t a = (int64_t)axis;
		if (norm_axes(im, &a, 1, known_rank(im, op->in[0])) < 0)
			return -1;
		op->n_in = 1;
		op_set_int(op, "axis", a);
	}
	return put_int(im, op, "exclusive", 0) < 0 ? -1 : put_int(im, op, "reverse", 0);
}

int cv_trilu(struct imp *im, struct ir_op *op)
{
	double kk = 0;
	if (op->n_in < 2 || op->in[1] < 0 || im->g->tensors[op->in[1]].data) {
		/* else k at run time: input 1 */
		if (op->n_in > 1 && op->in[1] >= 0 && const_scalar(im, op->in[1], "k", &kk) < 0)
			return -1;
		op->n_in = 1;
		op_set_int(op, "k", (int64_t)kk);
	}
	return put_int(im, op, "upper", 1);
}

int cv_eyelike(struct imp *im, struct ir_op *op)
{
	int64_t dt;
	if (put_int(im, op, "k", 0) < 0 || attr_int(im, "dtype", -1, &dt) < 0)
		return -1;
	if (dt >= 0) {
		int d = dtype_from_onnx((int32_t)dt);
		if (d < 0)
			return node_err(im, "dtype %s is not supported", onnx_dtype_name((int32_t)dt));
		op_set_str(op, "dtype", dtype_name((enum ir_dtype)d));
	}
	return 0;
}

/* The loss operators: reduction, and ignore_index only when given. */
int cv_loss(struct imp *im, struct ir_op *op)
{
	char red[16];
	if (attr_str(im, "reduction", "mean", red, sizeof red) < 0)
		return -1;
	op_set_str(op, "reduction", red);
	if (attr_find(im->node, "ignore_index"))
		return put_int(im, op, "ignore_index", 0);
	return 0;
}
