/* import_shape.c - ONNX converters (lib/front/import_ops.h) for shape and
 * data movement: Pad, Reshape, Concat, Flatten, Transpose, Squeeze,
 * Unsqueeze, Gather, Slice, Split, Expand, Tile, DepthToSpace, Shape,
 * ConstantOfShape, Resize, Upsample.
 */
#include <limits.h>
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

/* Pad: pads and value from attributes (opset < 11) or constant inputs;
 * mode constant, reflect or edge (value is then unused). */
int cv_pad(struct imp *im, struct ir_op *op)
{
	int64_t pads[2 * IR_MAX_RANK];
	int n;
	double value = 0;
	char mode[16];
	if (attr_str(im, "mode", "constant", mode, sizeof mode) < 0)
		return -1;
	if (strcmp(mode, "constant") && strcmp(mode, "reflect") && strcmp(mode, "edge"))
		return node_err(im, "mode '%s' is not supported (constant, reflect or edge)", mode);
	if (im->opset < 11) {
		if (attr_ints(im, "pads", pads, 2 * IR_MAX_RANK, &n) < 0 ||
		    attr_bound(im, "value", 0, &value) < 0)
			return -1;
	} else {
		if (attr_absent(im, "pads") < 0 || attr_absent(im, "value") < 0)
			return -1;
		if (op->n_in < 2 || op->in[1] < 0)
			return node_err(im, "input pads is missing");
		/* pads or value at run time: inputs 1 and 2 stay */
		int rt = !im->g->tensors[op->in[1]].data ||
			 (op->n_in > 2 && op->in[2] >= 0 && !im->g->tensors[op->in[2]].data);
		if (rt && (op->n_in < 4 || op->in[3] < 0)) {
			op->n_in = op->n_in < 3 ? op->n_in : 3;
			op_set_str(op, "mode", mode);
			return 0;
		}
		if (const_ints(im, op->in[1], "pads", pads, 2 * IR_MAX_RANK, &n) < 0)
			return -1;
		if (op->n_in > 2 && op->in[2] >= 0 && const_scalar(im, op->in[2], "constant_value", &value) < 0)
			return -1;
	}
	const struct ir_tensor *x = known_tensor(im, op->in[0]);
	/* Opset 18: the pads of the listed axes only; the others get none. */
	if (op->n_in > 3 && op->in[3] >= 0) {
		int64_t axes[IR_MAX_RANK], full[2 * IR_MAX_RANK] = { 0 };
		int na;
		if (!x)
			return node_err(im, "the input shape is unknown");
		if (const_ints(im, op->in[3], "axes", axes, IR_MAX_RANK, &na) < 0 ||
		    norm_axes(im, axes, na, x->rank) < 0)
			return -1;
		if (n != 2 * na)
			return node_err(im, "pads has %d values for %d axes", n, na);
		for (int i = 0; i < na; i++) {
			full[axes[i]] = pads[i];
			full[x->rank + axes[i]] = pads[na + i];
		}
		n = 2 * x->rank;
		memcpy(pads, full, sizeof(int64_t) * (size_t)n);
	}
	if (x && n != 2 * x->rank)
		return node_err(im, "pads has %d values for a rank-%d input", n, x->rank);
	op->n_in = 1;
	op_set_ints(op, "pads", n, pads);
	op_set_float(op, "value", value);
	op_set_str(op, "mode", mode);
	return 0;
}

/* Reshape: the constant shape input, with 0 and -1 resolved against the
 * input's shape, becomes attribute "shape". */
int cv_reshape(struct imp *im, struct ir_op *op)
{
	int64_t shape[IR_MAX_RANK], allowzero;
	int n;
	if (attr_bool(im, "allowzero", 0, &allowzero) < 0)
		return -1;
	if (op->in[1] >= 0 && !im->g->tensors[op->in[1]].data) {
		op_set_int(op, "allowzero", allowzero);
		return cv_runtime_shape(im, op, "shape");   /* import_runtime.c */
	}
	if (const_ints(im, op->in[1], "shape", shape, IR_MAX_RANK, &n) < 0)
		return -1;
	const struct ir_tensor *x = known_tensor(im, op->in[0]);
	if (!x)
		return node_err(im, "the input shape is unknown");
	if (x->dyn) {
		/* 0 and -1 resolve against extents known at run time: the shape
		 * stays input 1 (lib/ops/runtime_shape.c) */
		op_set_int(op, "allowzero", allowzero);
		return 0;
	}
	int infer_at = -1;
	int64_t rest = 1;
	for (int i = 0; i < n; i++) {
		if (shape[i] == 0 && !allowzero) {
			if (i >= x->rank)
				return node_err(im, "shape[%d] is 0 but the input has rank %d", i, x->rank);
			shape[i] = x->shape[i];
		}
		if (shape[i] == -1) {
			if (infer_at >= 0)
				return node_err(im, "shape has more than one -1");
			infer_at = i;
		} else if (shape[i] < 0 || shape[i] > IR_MAX_DIM) {
			return node_err(im, "shape[%d] is %lld, out of range [0, %d]", i,
					(long long)shape[i], IR_MAX_DIM);
		} else if (__builtin_mul_overflow(rest, shape[i], &rest)) {
			return node_err(im, "the shape's element count overflows");
		}
	}
	int64_t numel = tensor_numel(x);
	if (infer_at >= 0) {
		if (rest == 0 || numel % rest)
			return node_err(im, "cannot reshape %lld elements with -1", (long long)numel);
		shape[infer_at] = numel / rest;
	} else if (rest != numel) {
		return node_err(im, "cannot reshape %lld elements to %lld", (long long)numel, (long long)rest);
	}
	op->n_in = 1;
	op_set_ints(op, "shape", n, shape);
	return 0;
}

/* Concat and Flatten: "axis", made non-negative when the rank is known.
 * Flatten's axis may equal the rank. */
int cv_axis(struct imp *im, struct ir_op *op, int required, int64_t def, int rank_plus)
{
	int64_t axis;
	if (required && !attr_find(im->node, "axis"))
		return node_err(im, "attribute 'axis' is missing");
	if (attr_int(im, "axis", def, &axis) < 0)
		return -1;
	const struct ir_tensor *x = known_tensor(im, op->in[0]);
	if (x) {
		if (axis < -x->rank || axis >= x->rank + rank_plus)
			return node_err(im, "axis %lld is out of range for rank %d", (long long)axis, x->rank);
		if (axis < 0)
			axis += x->rank;
	}
	op_set_int(op, "axis", axis);
	return 0;
}

int cv_concat(struct imp *im, struct ir_op *op) { return cv_axis(im, op, 1, 0, 0); }
int cv_flatten(struct imp *im, struct ir_op *op) { return cv_axis(im, op, 0, 1, 1); }

int cv_transpose(struct imp *im, struct ir_op *op)
{
	int64_t perm[IR_MAX_RANK];
	int n, r = known_rank(im, op->in[0]);
	if (attr_ints(im, "perm", perm, IR_MAX_RANK, &n) < 0)
		return -1;
	if (!attr_find(im->node, "perm")) {
		if (r < 0)
			return node_err(im, "the input shape is unknown");
		for (n = 0; n < r; n++)
			perm[n] = r - 1 - n;
	}
	op_set_ints(op, "perm", n, perm);
	return 0;
}

/* Squeeze: absent axes squeeze every dimension of size 1. */
int cv_squeeze(struct imp *im, struct ir_op *op)
{
	int64_t axes[IR_MAX_RANK];
	int n;
	const struct ir_tensor *x = known_tensor(im, op->in[0]);
	if (!x)
		return node_err(im, "the input shape is unknown");
	if (axes_from(im, op, 1, axes, &n, x->rank) < 0)
		return -1;
	if (n == -2)
		return 0;   /* the axes at run time: input 1 */
	if (n < 0)
		for (int d = n = 0; d < x->rank; d++)
			if (x->shape[d] == 1)
				axes[n++] = d;
	op_set_ints(op, "axes", n, axes);
	return 0;
}

int cv_unsqueeze(struct imp *im, struct ir_op *op)
{
	int64_t axes[IR_MAX_RANK];
	int n, r = known_rank(im, op->in[0]);
	const Onnx__AttributeProto *a = attr_find(im->node, "axes");
	if (r < 0)
		return node_err(im, "the input shape is unknown");
	if (a) {
		if (attr_ints(im, "axes", axes, IR_MAX_RANK, &n) < 0)
			return -1;
	} else if (op->n_in > 1 && op->in[1] >= 0 && !im->g->tensors[op->in[1]].data) {
		return 0;   /* the axes at run time: input 1 */
	} else if (op->n_in > 1 && op->in[1] >= 0) {
		if (const_ints(im, op->in[1], "axes", axes, IR_MAX_RANK, &n) < 0)
			return -1;
	} else {
		return node_err(im, "axes are missing");
	}
	op->n_in = 1;
	if (norm_axes(im, axes, n, r + n) < 0)
		return -1;
	op_set_ints(op, "axes", n, axes);
	return 0;
}

/* Slice: starts, ends, axes from attributes (opset < 10) or constant
 * inputs with optional axes and steps. */
int cv_slice(struct imp *im, struct ir_op *op)
{
	int64_t v[4][IR_MAX_RANK];
	int n[4] = { 0, 0, 0, 0 };
	static const char *const names[4] = { "starts", "ends", "axes", "steps" };
	int r = known_rank(im, op->in[0]);
	if (im->opset < 10) {
		for (int i = 0; i < 3; i++)
			if (attr_ints(im, names[i], v[i], IR_MAX_RANK, &n[i]) < 0)
				return -1;
	} else {
		/* a run-time start, end, axis or step: all four stay inputs */
		for (int i = 0; i < 4; i++)
			if (op->n_in > i + 1 && op->in[i + 1] >= 0 && !im->g->tensors[op->in[i + 1]].data)
				return 0;
		for (int i = 0; i < 4; i++) {
			if (attr_absent(im, names[i]) < 0)
				return -1;
			if (op->n_in > i + 1 && op->in[i + 1] >= 0 &&
			    const_ints(im, op->in[i + 1], names[i], v[i], IR_MAX_RANK, &n[i]) < 0)
				return -1;
		}
	}
	if (n[0] != n[1] || (n[2] && n[2] != n[0]) || (n[3] && n[3] != n[0]))
		return node_err(im, "starts, ends, axes and steps differ in length");
	if (!n[2])
		for (n[2] = 0; n[2] < n[0]; n[2]++)
			v[2][n[2]] = n[2];
	for (int i = 0; i < n[2]; i++) {
		if (r < 0 || v[2][i] < -r || v[2][i] >= r)
			return node_err(im, "axis out of range or input shape unknown");
		if (v[2][i] < 0)
			v[2][i] += r;
	}
	if (!n[3])
		for (n[3] = 0; n[3] < n[0]; n[3]++)
			v[3][n[3]] = 1;
	op->n_in = 1;
	for (int i = 0; i < 4; i++)
		op_set_ints(op, names[i], n[i], v[i]);
	return 0;
}

int cv_split(struct imp *im, struct ir_op *op)
{
	int64_t axis;
	int n = 0, cap = op->n_out + 1;   /* one size per output */
	if (attr_int(im, "axis", 0, &axis) < 0 || norm_axes(im, &axis, 1, known_rank(im, op->in[0])) < 0)
		return -1;
	int64_t *split = xcalloc((size_t)cap, sizeof *split);
	if (attr_find(im->node, "split")) {
		if (attr_ints(im, "split", split, cap, &n) < 0)
			goto bad;
	} else if (op->n_in > 1 && op->in[1] >= 0 && !im->g->tensors[op->in[1]].data &&
		   tensor_numel(&im->g->tensors[op->in[1]]) != 0) {
		op_set_int(op, "axis", axis);   /* the sizes at run time: input 1 */
		free(split);
		return 0;
	} else if (op->n_in > 1 && op->in[1] >= 0) {
		if (const_ints(im, op->in[1], "split", split, cap, &n) < 0)
			goto bad;
	}
	/* Opset 18: num_outputs equal parts, the last one smaller. */
	int64_t parts;
	if (attr_int(im, "num_outputs", 0, &parts) < 0)
		goto bad;
	if (attr_find(im->node, "num_outputs")) {
		const struct ir_tensor *x = known_tensor(im, op->in[0]);
		int rc = 0;
		if (n)
			rc = node_err(im, "num_outputs and split are both given");
		else if (parts != op->n_out)
			rc = node_err(im, "num_outputs %lld is not the node's %d outputs",
				      (long long)parts, op->n_out);
		else if (!x)
			rc = node_err(im, "the input shape is unknown");
		else if (parts > x->shape[axis])
			rc = node_err(im, "num_outputs %lld is more than the axis length %lld",
				      (long long)parts, (long long)x->shape[axis]);
		if (rc < 0)
			goto bad;
		int64_t len = x->shape[axis], each = (len + parts - 1) / parts, left = len;
		for (n = 0; n < parts; n++) {
			split[n] = each < left ? each : left;
			left -= split[n];
		}
	}
	op->n_in = 1;
	op_set_int(op, "axis", axis);
	if (n)
		op_set_ints(op, "split", n, split);
	free(split);
	return 0;
bad:
	free(split);
	return -1;
}

/* Expand, Tile: the constant second input becomes attribute `name`. */
int cv_const_list(struct imp *im, struct ir_op *op, const char *name)
{
	int64_t v[IR_MAX_RANK];
	int n;
	if (op->in[1] >= 0 && !im->g->tensors[op->in[1]].data)
		return cv_runtime_shape(im, op, name);   /* import_runtime.c */
	if (const_ints(im, op->in[1], name, v, IR_MAX_RANK, &n) < 0)
		return -1;
	op->n_in = 1;
	op_set_ints(op, name, n, v);
	return 0;
}

int cv_expand(struct imp *im, struct ir_op *op) { return cv_const_list(im, op, "shape"); }
int cv_tile(struct imp *im, struct ir_op *op) { return cv_const_list(im, op, "repeats"); }

int cv_depthtospace(struct imp *im, struct ir_op *op)
{
	char mode[8];
	if (put_int(im, op, "blocksize", 0) < 0 || attr_str(im, "mode", "DCR", mode, sizeof mode) < 0)
		return -1;
	if (strcmp(mode, "DCR") && strcmp(mode, "CRD"))
		return node_err(im, "mode '%s' is not supported", mode);
	op_set_str(op, "mode", mode);
	return 0;
}

int cv_blocksize(struct imp *im, struct ir_op *op) { return put_int(im, op, "blocksize", 0); }

int cv_shape(struct imp *im, struct ir_op *op)
{
	if (attr_find(im->node, "start") && put_int(im, op, "start", 0) < 0)
		return -1;
	if (attr_find(im->node, "end") && put_int(im, op, "end", 0) < 0)
		return -1;
	return 0;
}

/* ConstantOfShape: the constant shape input and the value tensor become
 * attributes shape, dtype and value (floats) or value_int (integers). */
int cv_constantofshape(struct imp *im, struct ir_op *op)
{
	int64_t shape[IR_MAX_RANK];
	int n;
	const struct ir_tensor *st = &im->g->tensors[op->in[0]];
	if (st->data || st->dyn) {   /* a run-time shape stays input 0 */
		if (const_ints(im, op->in[0], "shape", shape, IR_MAX_RANK, &n) < 0)
			return -1;
		op->n_in = 0;
		op_set_ints(op, "shape", n, shape);
	} else if (st->rank != 1 || st->shape[0] > IR_MAX_RANK) {
		return node_err(im, "shape must be 1-D, of at most %d values", IR_MAX_RANK);
	}
	const Onnx__AttributeProto *a = attr_find(im->node, "value");
	enum ir_dtype dt = DT_F32;
	double fv = 0;
	int64_t iv = 0;
	if (a) {
		struct decoded d;
		if (!a->t || tensor_decode(a->t, &d) < 0 || d.nbytes != dtype_size(d.dt))
			return node_err(im, "value must be a tensor of one element");
		dt = d.dt;
		if (dt == DT_F32 || dt == DT_F16 || dt == DT_BF16) {
			float f;
			dtype_convert(&f, DT_F32, d.data, dt, 1);
			fv = f;
		} else {
			dtype_convert(&iv, DT_I64, d.data, dt, 1);
		}
		free(d.tmp);
	}
	op_set_str(op, "dtype", dtype_name(dt));
	op_set_float(op, "value", fv);
	op_set_int(op, "value_int", iv);
	return 0;
}

/* Resize (opset 10: X, scales; 11+: X, roi, scales, sizes) and Upsample
 * (7: scales attribute; 9: scales input): the output shape is resolved
 * into sizes; scales stay when given, since the coordinate mapping uses
 * them. */
int cv_resize_common(struct imp *im, struct ir_op *op, const float *scales, int ns,
			    const int64_t *sizes_in, int nz, const float *roi, int nr)
{
	const struct ir_tensor *x = known_tensor(im, op->in[0]);
	if (!x)
		return node_err(im, "the input shape is unknown");
	int64_t sizes[IR_MAX_RANK];
	if (nz) {
		if (nz != x->rank)
			return node_err(im, "sizes has %d values for rank %d", nz, x->rank);
		memcpy(sizes, sizes_in, sizeof(int64_t) * (size_t)nz);
	} else if (ns) {
		if (ns != x->rank)
			return node_err(im, "scales has %d values for rank %d", ns, x->rank);
		for (int d = 0; d < ns; d++) {
			if (!(scales[d] > 0))
				return node_err(im, "scales must be positive");
			sizes[d] = (int64_t)floor((double)x->shape[d] * (double)scales[d]);
		}
		op_set_floats(op, "scales", ns, scales);
	} else {
		return node_err(im, "neither scales nor sizes is given");
	}
	op_set_ints(op, "sizes", x->rank, sizes);
	if (nr)
		op_set_floats(op, "roi", nr, roi);
	op->n_in = 1;
	return 0;
}

/* A Resize or Upsample whose scales, sizes or roi is not a constant keeps
 * them as inputs [X, roi, scales, sizes] (absent ones -1), whatever the
 * opset's layout, and its output extents are dynamic (lib/ops/resize.c);
 * 1 then, else 0.  Opset 18's axes need constants. */
static int resize_at_run_time(struct imp *im, struct ir_op *op)
{
	int rt = 0;
	for (int i = 1; i < op->n_in; i++)
		rt |= op->in[i] >= 0 && !im->g->tensors[op->in[i]].data;
	if (!rt || attr_find(im->node, "axes"))
		return 0;
	int in[4] = { op->in[0], -1, -1, -1 };
	if (op->type == OP_RESIZE && im->opset >= 11 && !strcmp(im->node->op_type, "Resize"))
		for (int i = 1; i < op->n_in && i < 4; i++)
			in[i] = op->in[i];
	else
		in[2] = op->in[1];
	op_set_inputs(op, 4, in);
	op->type = OP_RESIZE;
	return 1;
}

/* Opset 18's keep_aspect_ratio_policy with sizes (KEEP 1: not_larger, 2:
 * not_smaller): one scale for the NA axes AXES, the least (or greatest) of
 * sizes / input extent there, in float as ONNX Runtime computes it; those
 * axes' extents become the input's times that scale, rounded half away
 * from zero, and the coordinate mapping takes that scale (the others keep
 * theirs, scale 1). */
static int resize_keep_ratio(struct imp *im, struct ir_op *op, int keep, const int64_t *axes,
			     int na, const int64_t *sizes, const float *roi, int nr)
{
	const struct ir_tensor *x = known_tensor(im, op->in[0]);
	if (!x)
		return node_err(im, "the input shape is unknown");
	float s = keep == 1 ? INFINITY : 0, sc[IR_MAX_RANK];
	for (int i = 0; i < na; i++) {
		if (x->shape[axes[i]] < 1 || sizes[axes[i]] < 1)
			return node_err(im, "keep_aspect_ratio_policy needs positive sizes and extents");
		float r = (float)sizes[axes[i]] / (float)x->shape[axes[i]];
		s = keep == 1 ? fminf(s, r) : fmaxf(s, r);
	}
	int64_t out[IR_MAX_RANK];
	for (int d = 0; d < x->rank; d++) {
		sc[d] = 1;
		out[d] = x->shape[d];
	}
	for (int i = 0; i < na; i++) {
		sc[axes[i]] = s;
		out[axes[i]] = (int64_t)roundf(s * (float)x->shape[axes[i]]);
		if (out[axes[i]] < 1)
			return node_err(im, "keep_aspect_ratio_policy gives an empty axis %lld",
					(long long)axes[i]);
	}
	if (cv_resize_common(im, op, sc, x->rank, NULL, 0, roi, nr) < 0)
		return -1;
	op_set_ints(op, "sizes", x->rank, out);
	return 0;
}

int cv_resize(struct imp *im, struct ir_op *op)
{
	char mode[32], ct[32], nm[32];
	float scales[IR_MAX_RANK], roi[2 * IR_MAX_RANK];
	int64_t sizes[IR_MAX_RANK];
	int ns = 0, nz = 0, nr = 0;
	if (attr_str(im, "mode", "nearest", mode, sizeof mode) < 0 ||
	    attr_str(im, "coordinate_transformation_mode", im->opset < 11 ? "asymmetric" : "half_pixel",
		     ct, sizeof ct) < 0 ||
	    attr_str(im, "nearest_mode", im->opset < 11 ? "simple" : "round_prefer_floor", nm, sizeof nm) < 0 ||
	    put_float(im, op, "cubic_coeff_a", -0.75) < 0 || put_int(im, op, "exclude_outside", 0) < 0 ||
	    put_float(im, op, "extrapolation_value", 0) < 0)
		return -1;
	op_set_str(op, "mode", mode);
	op_set_str(op, "coordinate_transformation_mode", ct);
	op_set_str(op, "nearest_mode", nm);
	if (resize_at_run_time(im, op))
		return 0;
	if (im->opset < 11) {
		if (const_floats(im, op->n_in > 1 ? op->in[1] : -1, "scales", scales, IR_MAX_RANK, &ns) < 0)
			return -1;
	} else {
		if (const_floats(im, op->n_in > 1 ? op->in[1] : -1, "roi", roi, 2 * IR_MAX_RANK, &nr) < 0 ||
		    const_floats(im, op->n_in > 2 ? op->in[2] : -1, "scales", scales, IR_MAX_RANK, &ns) < 0)
			return -1;
		if (op->n_in > 3 && op->in[3] >= 0 &&
		    const_ints(im, op->in[3], "sizes", sizes, IR_MAX_RANK, &nz) < 0)
			return -1;
		if (strcmp(ct, "tf_crop_and_resize"))
			nr = 0;
	}
	/* Opset 18: antialias, keep_aspect_ratio_policy, and scales or sizes
	 * for the listed axes only (the others keep their size). */
	int64_t aa, axes[IR_MAX_RANK];
	int na = 0;
	char pol[16];
	if (attr_bool(im, "antialias", 0, &aa) < 0 ||
	    attr_str(im, "keep_aspect_ratio_policy", "stretch", pol, sizeof pol) < 0)
		return -1;
	if (aa && strcmp(mode, "nearest"))
		op_set_int(op, "antialias", 1);
	int keep = !strcmp(pol, "not_larger") ? 1 : !strcmp(pol, "not_smaller") ? 2 : 0;
	if (!keep && strcmp(pol, "stretch"))
		return node_err(im, "keep_aspect_ratio_policy '%s' is not one of stretch, not_larger, "
				"not_smaller", pol);
	if (attr_find(im->node, "axes")) {
		const struct ir_tensor *x = known_tensor(im, op->in[0]);
		if (!x)
			return node_err(im, "the input shape is unknown");
		if (attr_ints(im, "axes", axes, IR_MAX_RANK, &na) < 0 || norm_axes(im, axes, na, x->rank) < 0)
			return -1;
		if ((ns && ns != na) || (nz && nz != na) || nr)
			return node_err(im, "scales, sizes or roi do not match axes");
		float fs[IR_MAX_RANK];
		int64_t fz[IR_MAX_RANK];
		for (int d = 0; d < x->rank; d++)
			fs[d] = 1, fz[d] = x->shape[d];
		for (int i = 0; i < na; i++) {
			if (ns)
				fs[axes[i]] = scales[i];
			if (nz)
				fz[axes[i]] = sizes[i];
		}
		if (ns)
			memcpy(scales, fs, sizeof fs), ns = x->rank;
		if (nz)
			memcpy(sizes, fz, sizeof fz), nz = x->rank;
	} else {
		for (int i = 0; i < nz; i++)
			axes[i] = i;
		na = nz;
	}
	if (keep && nz)
		return resize_keep_ratio(im, op, keep, axes, na, sizes, roi, nr);
	return cv_resize_common(im, op, scales, ns, sizes, nz, roi, nr);
}

int cv_upsample(struct imp *im, struct ir_op *op)
{
	char mode[32];
	float scales[IR_MAX_RANK];
	int ns = 0;
	if (attr_str(im, "mode", "nearest", mode, sizeof mode) < 0)
		return -1;
	if (im->opset >= 9 && resize_at_run_time(im, op)) {
		op_set_str(op, "mode", !strcmp(mode, "bilinear") ? "linear" : mode);
		op_set_str(op, "coordinate_transformation_mode", "asymmetric");
		op_set_str(op, "nearest_mode", "simple");
		return 0;
	}
	if (im->opset < 9) {
		const Onnx__AttributeProto *a = attr_find(im->node, "scales");
		if (!a || a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS || a->n_floats > IR_MAX_RANK)
			return node_err(im, "attribute 'scales' is missing or malformed");
		ns = (int)a->n_floats;
		memcpy(scales, a->floats, sizeof(float) * (size_t)ns);
	} else if (attr_absent(im, "scales") < 0 ||
		   const_floats(im, op->n_in > 1 ? op->in[1] : -1, "scales", scales, IR_MAX_RANK, &ns) < 0) {
		return -1;
	}
	op->type = OP_RESIZE;
	op_set_str(op, "mode", !strcmp(mode, "bilinear") ? "linear" : mode);
	op_set_str(op, "coordinate_transformation_mode", "asymmetric");
	op_set_str(op, "nearest_mode", "simple");
	return cv_resize_common(im, op, scales, ns, NULL, 0, NULL, 0);
}
