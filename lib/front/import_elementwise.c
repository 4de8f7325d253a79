/* import_elementwise.c - ONNX converters (lib/front/import_ops.h) for
 * elementwise and activation ops: Clip, Cast, CastLike, the ops with an alpha
 * or a bias attribute, Mod, BitShift, IsInf, Dropout.
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

/* Clip: bounds from attributes (opset < 11) or constant inputs; absent
 * bounds are -FLT_MAX and FLT_MAX.  Only the data input remains.  Bounds
 * computed at run time make it Max(x, min) followed by Min(., max). */
int cv_clip(struct imp *im, struct ir_op *op)
{
	double lo = -FLT_MAX, hi = FLT_MAX;
	int dyn_lo = op->n_in > 1 && op->in[1] >= 0 && !im->g->tensors[op->in[1]].data;
	int dyn_hi = op->n_in > 2 && op->in[2] >= 0 && !im->g->tensors[op->in[2]].data;
	if (im->opset >= 11 && (dyn_lo || dyn_hi)) {
		int x = op->in[0], mx = op->n_in > 2 ? op->in[2] : -1, k = (int)(op - im->g->ops);
		if (op->n_in > 1 && op->in[1] >= 0) {
			op->type = OP_MAX;
			op->n_in = 2;
			if (mx >= 0) {
				int in[2] = { -1, mx };
				return import_extra_op(im, k, OP_MIN, 2, in, "clip_min");
			}
			return 0;
		}
		op->type = OP_MIN;
		op->in[1] = mx;
		op->n_in = 2;
		(void)x;
		return 0;
	}
	if (im->opset < 11) {
		if (attr_bound(im, "min", lo, &lo) < 0 || attr_bound(im, "max", hi, &hi) < 0)
			return -1;
	} else {
		if (attr_absent(im, "min") < 0 || attr_absent(im, "max") < 0)
			return -1;
		if (op->n_in > 1 && op->in[1] >= 0 && const_scalar(im, op->in[1], "min", &lo) < 0)
			return -1;
		if (op->n_in > 2 && op->in[2] >= 0 && const_scalar(im, op->in[2], "max", &hi) < 0)
			return -1;
	}
	op->n_in = 1;
	op_set_float(op, "min", lo);
	op_set_float(op, "max", hi);
	return 0;
}

int cv_cast(struct imp *im, struct ir_op *op)
{
	int64_t to;
	if (attr_int(im, "to", 0, &to) < 0)
		return -1;
	int dt = dtype_from_onnx((int32_t)to);
	if (dt < 0)
		return node_err(im, "cast to %s is not supported", onnx_dtype_name((int32_t)to));
	op_set_str(op, "to", dtype_name((enum ir_dtype)dt));
	return 0;
}

int cv_alpha1(struct imp *im, struct ir_op *op) { return put_float(im, op, "alpha", 1.0); }
int cv_leakyrelu(struct imp *im, struct ir_op *op) { return put_float(im, op, "alpha", 0.01); }

int cv_hardsigmoid(struct imp *im, struct ir_op *op)
{
	return put_float(im, op, "alpha", 0.2) < 0 ? -1 : put_float(im, op, "beta", 0.5);
}

int cv_selu(struct imp *im, struct ir_op *op)
{
	return put_float(im, op, "alpha", 1.67326319217681884765625) < 0 ? -1
	       : put_float(im, op, "gamma", 1.05070102214813232421875);
}

/* Gelu (opset 20): approximate "none" (erf) or "tanh". */
int cv_gelu(struct imp *im, struct ir_op *op)
{
	char a[8];
	if (attr_str(im, "approximate", "none", a, sizeof a) < 0)
		return -1;
	if (strcmp(a, "none") && strcmp(a, "tanh"))
		return node_err(im, "approximate '%s' is not supported (none or tanh)", a);
	op_set_str(op, "approximate", a);
	return 0;
}

int cv_shrink(struct imp *im, struct ir_op *op)
{
	return put_float(im, op, "bias", 0) < 0 ? -1 : put_float(im, op, "lambd", 0.5);
}

int cv_isinf(struct imp *im, struct ir_op *op)
{
	return put_bool(im, op, "detect_negative", 1) < 0 ? -1 : put_bool(im, op, "detect_positive", 1);
}

int cv_mod(struct imp *im, struct ir_op *op) { return put_int(im, op, "fmod", 0); }

int cv_bitshift(struct imp *im, struct ir_op *op)
{
	char dir[16];
	if (attr_str(im, "direction", "", dir, sizeof dir) < 0)
		return -1;
	if (strcmp(dir, "LEFT") && strcmp(dir, "RIGHT"))
		return node_err(im, "direction must be LEFT or RIGHT");
	op_set_str(op, "direction", dir);
	return 0;
}

/* Dropout at inference is Identity; its mask output is a constant of
 * ones.  So is Dropout in training mode with a ratio of 0, as PyTorch
 * exports F.dropout(x, p, training=self.training) from a model whose p is
 * 0 (torchvision's Swin attention): nothing is dropped, nothing scaled. */
int cv_dropout(struct imp *im, struct ir_op *op)
{
	if (op->n_in > 2 && op->in[2] >= 0) {
		const struct ir_tensor *tm = &im->g->tensors[op->in[2]];
		if (!tm->data || tensor_numel(tm) != 1)
			return node_err(im, "training_mode must be a constant scalar");
		if (dtype_get(tm->data, tm->dtype, 0) != 0) {
			const struct ir_tensor *r = op->in[1] >= 0 ? &im->g->tensors[op->in[1]] : NULL;
			if (!r || !r->data || tensor_numel(r) != 1 || dtype_get(r->data, r->dtype, 0) != 0)
				return node_err(im, "training_mode with a ratio other than 0 drops at random, "
						    "which is not supported");
		}
	}
	op->type = OP_IDENTITY;
	op->n_in = 1;
	if (op->n_out > 1) {
		const struct ir_tensor *x = known_tensor(im, op->in[0]);
		if (!x)
			return node_err(im, "the input shape is unknown");
		struct ir_tensor *m = &im->g->tensors[op->out[1]];
		m->dtype = DT_BOOL;
		m->rank = x->rank;
		memcpy(m->shape, x->shape, sizeof m->shape);
		size_t nb = tensor_bytes(m);
		m->data = xaligned(nb ? nb : 1);
		memset(m->data, 1, nb ? nb : 1);
		m->nbytes = nb;
		m->owns_data = 1;
		set_known(im, op->out[1]);
		op->n_out = 1;
	}
	return 0;
}

/* CastLike: a Cast to the type of input 1. */
int cv_castlike(struct imp *im, struct ir_op *op)
{
	op->type = OP_CAST;
	op_set_str(op, "to", dtype_name(im->g->tensors[op->in[1]].dtype));
	op->n_in = 1;
	return 0;
}
