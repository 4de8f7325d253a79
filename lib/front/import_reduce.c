/* import_reduce.c - ONNX converters (lib/front/import_ops.h) for reductions
 * and normalisations: Reduce*, ArgMax, Softmax, LayerNormalization, LRN,
 * LpNormalization, MeanVarianceNormalization.
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

/* Reduce*: keepdims, axes (attribute or input), noop_with_empty_axes. */
int cv_reduce(struct imp *im, struct ir_op *op)
{
	int64_t axes[IR_MAX_RANK], noop;
	int n;
	if (put_bool(im, op, "keepdims", 1) < 0 || attr_bool(im, "noop_with_empty_axes", 0, &noop) < 0)
		return -1;
	if (axes_from(im, op, 1, axes, &n, known_rank(im, op->in[0])) < 0)
		return -1;
	if (n == -2) {   /* the axes at run time: input 1 */
		if (noop)
			op_set_int(op, "noop", 1);
	} else if (n > 0) {
		op_set_ints(op, "axes", n, axes);
	} else if (n == 0 || noop) {
		op_set_ints(op, "axes", 0, axes);
		op_set_int(op, "noop", noop != 0);
	}
	return 0;
}

int cv_argmax(struct imp *im, struct ir_op *op)
{
	int64_t axis;
	int r = known_rank(im, op->in[0]);
	if (attr_int(im, "axis", 0, &axis) < 0 || norm_axes(im, &axis, 1, r) < 0)
		return -1;
	op_set_int(op, "axis", axis);
	return put_bool(im, op, "keepdims", 1) < 0 ? -1 : put_bool(im, op, "select_last_index", 0);
}

/* Softmax family: before opset 13 the input is flattened to 2-D at axis
 * (default 1); from 13 on it normalises along axis alone (default -1). */
int cv_softmax(struct imp *im, struct ir_op *op)
{
	int64_t axis;
	int r = known_rank(im, op->in[0]);
	if (attr_int(im, "axis", im->opset < 13 ? 1 : -1, &axis) < 0 || norm_axes(im, &axis, 1, r) < 0)
		return -1;
	op_set_int(op, "axis", axis);
	if (im->opset < 13 && axis != r - 1)
		op_set_int(op, "coerce2d", 1);
	return 0;
}

/* LayerNormalization: axis made non-negative, epsilon; stash_type 1 only. */
int cv_layernorm(struct imp *im, struct ir_op *op)
{
	int64_t axis, stash;
	if (attr_int(im, "axis", -1, &axis) < 0 || norm_axes(im, &axis, 1, known_rank(im, op->in[0])) < 0 ||
	    attr_int(im, "stash_type", 1, &stash) < 0 || put_epsilon(im, op) < 0)
		return -1;
	if (stash != 1)
		return node_err(im, "stash_type %lld is not supported", (long long)stash);
	op_set_int(op, "axis", axis);
	return 0;
}

int cv_epsilon(struct imp *im, struct ir_op *op) { return put_epsilon(im, op); }

int cv_lrn(struct imp *im, struct ir_op *op)
{
	if (!attr_find(im->node, "size"))
		return node_err(im, "attribute 'size' is missing");
	return put_int(im, op, "size", 1) < 0 || put_float(im, op, "alpha", 1e-4) < 0 ||
	       put_float(im, op, "beta", 0.75) < 0 || put_float(im, op, "bias", 1.0) < 0 ? -1 : 0;
}

int cv_lpnorm(struct imp *im, struct ir_op *op)
{
	int64_t axis;
	if (attr_int(im, "axis", -1, &axis) < 0 || norm_axes(im, &axis, 1, known_rank(im, op->in[0])) < 0)
		return -1;
	op_set_int(op, "axis", axis);
	return put_int(im, op, "p", 2);
}

int cv_mvn(struct imp *im, struct ir_op *op)
{
	int64_t axes[IR_MAX_RANK] = { 0, 2, 3 };
	int n = 3;
	if (attr_find(im->node, "axes") && attr_ints(im, "axes", axes, IR_MAX_RANK, &n) < 0)
		return -1;
	if (norm_axes(im, axes, n, known_rank(im, op->in[0])) < 0)
		return -1;
	op_set_ints(op, "axes", n, axes);
	return 0;
}
