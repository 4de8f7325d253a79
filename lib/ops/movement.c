/* movement.c - operators that move elements without arithmetic, for any
 * dtype: Transpose (perm), Squeeze and Unsqueeze (axes, non-negative),
 * Gather (axis), Slice (starts, ends, axes, steps), Split (axis, split: the
 * size of each output), Expand (shape), Tile (repeats), DepthToSpace
 * (blocksize, mode DCR or CRD) and SpaceToDepth (blocksize); and the shape
 * producers Shape (start, end), Size, ConstantOfShape (shape, dtype, value
 * or value_int; or the shape as input 0 at run time) and Range (inputs
 * start, limit, delta), which the importer folds into weights when their
 * inputs are constants; else their extents are dynamic (formats/tpuc-ir.5).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ir/convert.h"
#include "ir/op.h"
#include "ops/runtime_shape.h"
#include "ops/kern_util.h"
#include "quant/quant.h"
#include "ops/xformer_i8.h"

/* ---- shared copy helpers ---- */

static void copy_elem(char *y, const char *x, size_t es)
{
	switch (es) {
	case 1: *y = *x; break;
	case 2: memcpy(y, x, 2); break;
	case 4: memcpy(y, x, 4); break;
	case 8: memcpy(y, x, 8); break;
	default: memcpy(y, x, es); break;
	}
}

/* Fill dense y (rank r, shape) from x: element i of y is x[base + sum(i_d *
 * st[d])], all in elements of es bytes. */
static void strided_copy(void *y, const void *x, size_t es, int r, const int64_t *shape,
			 const int64_t *st, int64_t base)
{
	int64_t n = 1;
	for (int d = 0; d < r; d++)
		n *= shape[d];
	if (n == 0)
		return;
	if (r == 0) {
		copy_elem(y, (const char *)x + (size_t)base * es, es);
		return;
	}
	int64_t inner = shape[r - 1], sin = st[r - 1];
	int64_t idx[IR_MAX_RANK] = { 0 }, off = base;
	char *yp = y;
	const char *xp = x;
	for (int64_t o = 0; o < n / inner; o++) {
		if (sin == 1) {
			memcpy(yp, xp + (size_t)off * es, (size_t)inner * es);
			yp += (size_t)inner * es;
		} else {
			for (int64_t i = 0; i < inner; i++, yp += es)
				copy_elem(yp, xp + (size_t)(off + i * sin) * es, es);
		}
		for (int d = r - 2; d >= 0; d--) {
			off += st[d];
			if (++idx[d] < shape[d])
				break;
			off -= st[d] * shape[d];
			idx[d] = 0;
		}
	}
}

static void dense_strides(int r, const int64_t *shape, int64_t *st)
{
	int64_t s = 1;
	for (int d = r - 1; d >= 0; d--) {
		st[d] = s;
		s *= shape[d];
	}
}

/* y = transpose(x viewed with rank r and shape vs, perm). */
static void permute_copy(void *y, const void *x, size_t es, int r, const int64_t *vs, const int64_t *perm)
{
	int64_t vst[IR_MAX_RANK], shape[IR_MAX_RANK], st[IR_MAX_RANK];
	dense_strides(r, vs, vst);
	for (int d = 0; d < r; d++) {
		shape[d] = vs[perm[d]];
		st[d] = vst[perm[d]];
	}
	strided_copy(y, x, es, r, shape, st, 0);
}

static int copy_same(struct kern *k)
{
	const struct view *x = &k->in[0], *y = &k->out[0];
	if (y->data != x->data)
		memcpy(y->data, x->data, (size_t)view_numel(y) * dtype_size(y->dtype));
	return 0;
}

/* ---- Transpose ---- */

static int transpose_infer(struct ir_graph *g, struct ir_op *op)
{
	const struct ir_tensor *x = op_in(g, op, 0);
	int64_t perm[IR_MAX_RANK], shape[IR_MAX_RANK];
	int seen[IR_MAX_RANK] = { 0 };
	int n = op_ints(op, "perm", perm, IR_MAX_RANK);
	if (n != x->rank)
		return op_error(op, "perm has %d values for rank %d", n, x->rank);
	for (int d = 0; d < n; d++) {
		if (perm[d] < 0 || perm[d] >= n || seen[perm[d]]++)
			return op_error(op, "perm is not a permutation");
		shape[d] = x->shape[perm[d]];
	}
	op_set_out(g, op, 0, x->dtype, n, shape);
	return 0;
}

static int transpose_run(struct kern *k)
{
	int64_t perm[IR_MAX_RANK];
	const struct view *x = &k->in[0];
	op_ints(k->op, "perm", perm, IR_MAX_RANK);
	permute_copy(k->out[0].data, x->data, dtype_size(x->dtype), x->rank, x->shape, perm);
	return 0;
}

/* ---- Squeeze, Unsqueeze ---- */

static int squeeze_infer(struct ir_graph *g, struct ir_op *op)
{
	const struct ir_tensor *x = op_in(g, op, 0);
	int64_t axes[IR_MAX_RANK], shape[IR_MAX_RANK];
	int mask[IR_MAX_RANK] = { 0 }, rank = 0;
	int n = op_param_ints(g, NULL, op, 1, "axes", axes, IR_MAX_RANK);
	if (n == -1)
		return -1;
	if (n == -2) {
		/* axes at run time: a known rank, dynamic extents */
		int na = (int)tensor_numel(op_in(g, op, 1));
		rank = op->type == OP_SQUEEZE ? x->rank - na : x->rank + na;
		if (rank < 0 || rank > IR_MAX_RANK)
			return op_error(op, "%d axes do not fit rank %d", na, x->rank);
		for (int d = 0; d < rank; d++)
			shape[d] = d < x->rank ? x->shape[d] : 1;
		op_set_out(g, op, 0, x->dtype, rank, shape);
		op_set_dyn(g, op, 0, rank ? (1u << rank) - 1 : 0);
		return 0;
	}
	if (op->type == OP_SQUEEZE) {
		for (int i = 0; i < n; i++) {
			int a = norm_axis(axes[i], x->rank);
			if (a < 0 || x->shape[a] != 1)
				return op_error(op, "axis %lld is not a dimension of size 1", (long long)axes[i]);
			mask[a] = 1;
		}
		for (int d = 0; d < x->rank; d++)
			if (!mask[d] && !(n == 0 && x->shape[d] == 1))
				shape[rank++] = x->shape[d];
	} else {
		int r = x->rank + n, j = 0;
		if (r > IR_MAX_RANK)
			return op_error(op, "rank %d exceeds %d", r, IR_MAX_RANK);
		for (int i = 0; i < n; i++) {
			int a = norm_axis(axes[i], r);
			if (a < 0 || mask[a]++)
				return op_error(op, "axis %lld out of range or repeated", (long long)axes[i]);
		}
		for (int d = 0; d < r; d++)
			shape[d] = mask[d] ? 1 : x->shape[j++];
		rank = r;
	}
	op_set_out(g, op, 0, x->dtype, rank, shape);
	return 0;
}

/* ---- Gather ---- */

static int gather_infer(struct ir_graph *g, struct ir_op *op)
{
	const struct ir_tensor *x = op_in(g, op, 0), *ix = op_in(g, op, 1);
	int axis = norm_axis(op_int(op, "axis", 0), x->rank);
	if (axis < 0)
		return op_error(op, "axis out of range");
	if (ix->dtype != DT_I64 && ix->dtype != DT_I32)
		return op_error(op, "indices must be int32 or int64");
	int rank = x->rank - 1 + ix->rank, n = 0;
	if (rank > IR_MAX_RANK)
		return op_error(op, "rank %d exceeds %d", rank, IR_MAX_RANK);
	int64_t shape[IR_MAX_RANK];
	for (int d = 0; d < axis; d++)
		shape[n++] = x->shape[d];
	for (int d = 0; d < ix->rank; d++)
		shape[n++] = ix->shape[d];
	for (int d = axis + 1; d < x->rank; d++)
		shape[n++] = x->shape[d];
	op_set_out(g, op, 0, x->dtype, rank, shape);
	return 0;
}

static int gather_run(struct kern *k)
{
	const struct view *x = &k->in[0], *ix = &k->in[1];
	int axis = norm_axis(op_int(k->op, "axis", 0), x->rank);
	size_t es = dtype_size(x->dtype);
	int64_t outer = 1, inner = 1, dim = x->shape[axis], ni = view_numel(ix);
	for (int d = 0; d < axis; d++)
		outer *= x->shape[d];
	for (int d = axis + 1; d < x->rank; d++)
		inner *= x->shape[d];
	size_t row = (size_t)inner * es;
	char *y = k->out[0].data;
	for (int64_t j = 0; j < ni; j++) {
		int64_t i = ix->dtype == DT_I64 ? ((const int64_t *)ix->data)[j]
						: ((const int32_t *)ix->data)[j];
		if (i < 0)
			i += dim;
		if (i < 0 || i >= dim)
			return op_error(k->op, "index %lld out of range [0, %lld)", (long long)i,
					(long long)dim);
		for (int64_t o = 0; o < outer; o++)
			memcpy(y + (size_t)(o * ni + j) * row,
			       (const char *)x->data + (size_t)(o * dim + i) * row, row);
	}
	return 0;
}

/* ---- Slice ---- */

/* Starts, ends, axes and steps: attributes, or (a run-time slice,
 * formats/tpuc-ir.5 "Dynamic dimensions") inputs 1 to 4, absent ones -1. */
struct slice_par {
	int ns, na, np;              /* counts of starts (= ends), axes, steps; 0: absent */
	int64_t s[IR_MAX_RANK], e[IR_MAX_RANK], a[IR_MAX_RANK], p[IR_MAX_RANK];
};

/* Fill SP for op; 1 when known, 0 when an input is known only at run
 * time (G's shape inference), -1 on error. */
static int slice_params(const struct ir_graph *g, const struct kern *k, const struct ir_op *op,
			struct slice_par *sp)
{
	memset(sp, 0, sizeof *sp);
	if (op->n_in < 2) {
		sp->ns = op_ints(op, "starts", sp->s, IR_MAX_RANK);
		if (op_ints(op, "ends", sp->e, IR_MAX_RANK) != sp->ns)
			return op_error(op, "starts, ends, axes and steps differ in length");
		sp->na = op_ints(op, "axes", sp->a, IR_MAX_RANK);
		sp->np = op_ints(op, "steps", sp->p, IR_MAX_RANK);
		return 1;
	}
	int64_t *dst[4] = { sp->s, sp->e, sp->a, sp->p };
	int n[4], known = 1;
	for (int i = 0; i < 4; i++) {
		n[i] = op_param_ints(g, k, op, i + 1, NULL, dst[i], IR_MAX_RANK);
		if (n[i] == -1)
			return -1;
		known &= n[i] != -2;
	}
	sp->ns = n[0];
	sp->na = n[2];
	sp->np = n[3];
	if (known && n[0] != n[1])
		return op_error(op, "starts, ends, axes and steps differ in length");
	return known;
}

/* Per axis of x: first index, step and count of the slice. */
static int slice_resolve(const struct ir_op *op, const struct slice_par *sp, int r,
			 const int64_t *shape, int64_t *start, int64_t *step, int64_t *count)
{
	int ns = sp->ns, na = sp->na, np = sp->np;
	if ((na && na != ns) || (np && np != ns))
		return op_error(op, "starts, ends, axes and steps differ in length");
	for (int d = 0; d < r; d++) {
		start[d] = 0;
		step[d] = 1;
		count[d] = shape[d];
	}
	int seen[IR_MAX_RANK] = { 0 };
	for (int i = 0; i < ns; i++) {
		int ax = norm_axis(na ? sp->a[i] : i, r);
		if (ax < 0 || seen[ax]++)
			return op_error(op, "axis out of range or repeated");
		int64_t dim = shape[ax], st = np ? sp->p[i] : 1, b = sp->s[i], en = sp->e[i];
		if (st == 0)
			return op_error(op, "step is 0");
		/* saturate first: INT64_MAX and INT64_MIN mean "to the end" */
		b = b > IR_MAX_DIM ? IR_MAX_DIM : b < -(int64_t)IR_MAX_DIM - 1 ? -(int64_t)IR_MAX_DIM - 1 : b;
		en = en > IR_MAX_DIM ? IR_MAX_DIM : en < -(int64_t)IR_MAX_DIM - 1 ? -(int64_t)IR_MAX_DIM - 1 : en;
		if (b < 0)
			b += dim;
		if (en < 0)
			en += dim;
		if (st > 0) {
			b = b < 0 ? 0 : b > dim ? dim : b;
			en = en < 0 ? 0 : en > dim ? dim : en;
			count[ax] = en > b ? (en - b + st - 1) / st : 0;
		} else {
			b = b < 0 ? 0 : b > dim - 1 ? dim - 1 : b;
			en = en < -1 ? -1 : en > dim - 1 ? dim - 1 : en;
			count[ax] = b > en ? (b - en - st - 1) / -st : 0;
		}
		start[ax] = b;
		step[ax] = st;
	}
	return 0;
}

static int slice_infer(struct ir_graph *g, struct ir_op *op)
{
	const struct ir_tensor *x = op_in(g, op, 0);
	int64_t start[IR_MAX_RANK], step[IR_MAX_RANK], count[IR_MAX_RANK];
	struct slice_par sp;
	int known = slice_params(g, NULL, op, &sp);
	if (known < 0)
		return -1;
	if (!known) {
		/* run-time starts, ends or steps: at most the whole axis, on the
		 * axes given as a constant (all when they are run-time too) */
		op_set_out(g, op, 0, x->dtype, x->rank, x->shape);
		uint32_t dims = 0;
		if (sp.na == -2) {
			dims = x->rank ? (1u << x->rank) - 1 : 0;
		} else {
			int n = sp.na ? sp.na : (int)tensor_numel(&g->tensors[op->in[1]]);
			for (int i = 0; i < n && i < IR_MAX_RANK; i++) {
				int ax = norm_axis(sp.na ? sp.a[i] : i, x->rank);
				if (ax < 0)
					return op_error(op, "axis out of range");
				dims |= 1u << ax;
			}
		}
		op_set_dyn(g, op, 0, dims);
		return 0;
	}
	if (slice_resolve(op, &sp, x->rank, x->shape, start, step, count) < 0)
		return -1;
	op_set_out(g, op, 0, x->dtype, x->rank, count);
	/* A dynamic axis sliced keeps at most what it holds at run time:
	 * [0:100] of Faster R-CNN's detections is fewer than 100 rows when
	 * fewer were found, which no probe with a larger extent shows. */
	for (int i = 0; i < sp.ns; i++) {
		int ax = norm_axis(sp.na ? sp.a[i] : i, x->rank);
		if (x->dyn >> ax & 1)
			op_set_dyn(g, op, 0, 1u << ax);
	}
	return 0;
}

static int slice_run(struct kern *k)
{
	const struct view *x = &k->in[0];
	int64_t start[IR_MAX_RANK], step[IR_MAX_RANK], count[IR_MAX_RANK], st[IR_MAX_RANK];
	struct slice_par sp;
	if (slice_params(k->g, k, k->op, &sp) < 0 ||
	    slice_resolve(k->op, &sp, x->rank, x->shape, start, step, count) < 0)
		return -1;
	int64_t base = 0;
	dense_strides(x->rank, x->shape, st);
	for (int d = 0; d < x->rank; d++) {
		base += start[d] * st[d];
		st[d] *= step[d];
	}
	strided_copy(k->out[0].data, x->data, dtype_size(x->dtype), x->rank, count, st, base);
	return 0;
}

/* In int8 a Gather of an activation moves its codes (a ViT's class token,
 * x[:, 0]); a Gather from a table of weights (an embedding) keeps the
 * float form, since one scale for the whole table would cost its small
 * rows their precision. */
static int gather_lower(struct lower_ctx *lc, const struct ir_op *op)
{
	if (lc->mode == MODE_INT8 && op->n_in > 0 && op->in[0] >= 0 &&
	    lc->top->tensors[op->in[0]].data)
		return lower_fallback(lc, op);
	return lower_default(lc, op);
}

/* ---- Split ---- */

static int split_infer(struct ir_graph *g, struct ir_op *op)
{
	const struct ir_tensor *x = op_in(g, op, 0);
	int axis = norm_axis(op_int(op, "axis", 0), x->rank);
	if (axis < 0)
		return op_error(op, "axis out of range");
	int64_t shape[IR_MAX_RANK], total = 0;
	int64_t *sizes = xcalloc((size_t)op->n_out + 1, sizeof *sizes);
	/* the sizes as attribute split, or as input 1 (at run time) */
	int n = op_param_ints(g, NULL, op, 1, "split", sizes, op->n_out);
	if (n == -2) {   /* extents along axis decided at run time */
		free(sizes);
		for (int i = 0; i < op->n_out; i++) {
			op_set_out(g, op, i, x->dtype, x->rank, x->shape);
			op_set_dyn(g, op, i, 1u << axis);
		}
		return 0;
	}
	if (n == -1 || (n != 0 && n != op->n_out)) {
		free(sizes);
		return n == -1 ? -1 : op_error(op, "split has %d sizes for %d outputs", n, op->n_out);
	}
	if (n == 0) {
		if (op->n_out < 1 || x->shape[axis] % op->n_out) {
			free(sizes);
			return op_error(op, "dimension %lld does not split into %d equal parts",
					(long long)x->shape[axis], op->n_out);
		}
		n = op->n_out;
		for (int i = 0; i < n; i++)
			sizes[i] = x->shape[axis] / n;
	}
	memcpy(shape, x->shape, sizeof shape);
	for (int i = 0; i < n; i++) {
		if (sizes[i] < 0) {
			free(sizes);
			return op_error(op, "negative split size");
		}
		shape[axis] = sizes[i];
		total += sizes[i];
		op_set_out(g, op, i, x->dtype, x->rank, shape);
	}
	free(sizes);
	if (total != x->shape[axis])
		return op_error(op, "split sizes add up to %lld, the axis has %lld",
				(long long)total, (long long)x->shape[axis]);
	return 0;
}

static int split_run(struct kern *k)
{
	const struct view *x = &k->in[0];
	int axis = norm_axis(op_int(k->op, "axis", 0), x->rank);
	size_t es = dtype_size(x->dtype);
	int64_t outer = 1, inner = 1, off = 0;
	for (int d = 0; d < axis; d++)
		outer *= x->shape[d];
	for (int d = axis + 1; d < x->rank; d++)
		inner *= x->shape[d];
	for (int i = 0; i < k->n_out; i++) {
		const struct view *y = &k->out[i];
		size_t row = (size_t)(y->shape[axis] * inner) * es;
		for (int64_t o = 0; o < outer; o++)
			memcpy((char *)y->data + (size_t)o * row,
			       (const char *)x->data + ((size_t)(o * x->shape[axis] + off) * inner) * es, row);
		off += y->shape[axis];
	}
	return 0;
}

/* ---- Expand, Tile ---- */

static int expand_infer(struct ir_graph *g, struct ir_op *op)
{
	if (op->n_in > 1 && op->in[1] >= 0 && !op_attr(op, "shape"))
		return runtime_shape_infer(g, op);
	const struct ir_tensor *x = op_in(g, op, 0);
	int64_t s[IR_MAX_RANK], shape[IR_MAX_RANK];
	int n = op_ints(op, "shape", s, IR_MAX_RANK + 1), rank;
	if (n > IR_MAX_RANK)
		return op_error(op, "rank exceeds %d", IR_MAX_RANK);
	if (broadcast_shape(x->rank, x->shape, n, s, &rank, shape) < 0)
		return op_error(op, "shape does not broadcast with the input");
	op_set_out(g, op, 0, x->dtype, rank, shape);
	return 0;
}

static int expand_run(struct kern *k)
{
	const struct view *x = &k->in[0], *y = &k->out[0];
	int r = y->rank, off = y->rank - x->rank;
	int64_t xs[IR_MAX_RANK], st[IR_MAX_RANK];
	if (runtime_shape_check(k) < 0)
		return -1;
	dense_strides(x->rank, x->shape, xs);
	for (int d = 0; d < r; d++)
		st[d] = d < off || x->shape[d - off] == 1 ? 0 : xs[d - off];
	strided_copy(y->data, x->data, dtype_size(x->dtype), r, y->shape, st, 0);
	return 0;
}

static int tile_infer(struct ir_graph *g, struct ir_op *op)
{
	if (op->n_in > 1 && op->in[1] >= 0 && !op_attr(op, "repeats"))
		return runtime_shape_infer(g, op);
	const struct ir_tensor *x = op_in(g, op, 0);
	int64_t rep[IR_MAX_RANK], shape[IR_MAX_RANK];
	int n = op_ints(op, "repeats", rep, IR_MAX_RANK);
	if (n != x->rank)
		return op_error(op, "repeats has %d values for rank %d", n, x->rank);
	for (int d = 0; d < n; d++) {
		if (rep[d] < 0)
			return op_error(op, "negative repeat");
		shape[d] = x->shape[d] * rep[d];
	}
	op_set_out(g, op, 0, x->dtype, n, shape);
	return 0;
}

static int tile_run(struct kern *k)
{
	const struct view *x = &k->in[0], *y = &k->out[0];
	int r = y->rank;
	size_t es = dtype_size(x->dtype);
	int64_t n = view_numel(y), xs[IR_MAX_RANK], idx[IR_MAX_RANK] = { 0 };
	if (runtime_shape_check(k) < 0)
		return -1;
	if (n == 0)
		return 0;
	dense_strides(r, x->shape, xs);
	char *yp = y->data;
	for (int64_t e = 0; e < n; e++, yp += es) {
		int64_t off = 0;
		for (int d = 0; d < r; d++)
			off += (idx[d] % x->shape[d]) * xs[d];
		copy_elem(yp, (const char *)x->data + (size_t)off * es, es);
		kern_index_next(r, y->shape, idx);
	}
	return 0;
}

/* ---- DepthToSpace, SpaceToDepth ---- */

static int d2s_infer(struct ir_graph *g, struct ir_op *op)
{
	const struct ir_tensor *x = op_in(g, op, 0);
	int64_t b = op_int(op, "blocksize", 0), shape[4];
	if (x->rank != 4 || b < 1)
		return op_error(op, "needs a 4-D input and a positive blocksize");
	memcpy(shape, x->shape, sizeof shape);
	if (op->type == OP_DEPTHTOSPACE) {
		if (x->shape[1] % (b * b))
			return op_error(op, "channels not divisible by blocksize^2");
		shape[1] /= b * b;
		shape[2] *= b;
		shape[3] *= b;
	} else {
		if (x->shape[2] % b || x->shape[3] % b)
			return op_error(op, "height or width not divisible by blocksize");
		shape[1] *= b * b;
		shape[2] /= b;
		shape[3] /= b;
	}
	op_set_out(g, op, 0, x->dtype, 4, shape);
	return 0;
}

static int d2s_run(struct kern *k)
{
	const struct view *x = &k->in[0];
	int64_t b = op_int(k->op, "blocksize", 1);
	int64_t n = x->shape[0], c = x->shape[1], h = x->shape[2], w = x->shape[3];
	size_t es = dtype_size(x->dtype);
	if (k->op->type == OP_SPACETODEPTH) {
		int64_t vs[6] = { n, c, h / b, b, w / b, b }, perm[6] = { 0, 3, 5, 1, 2, 4 };
		permute_copy(k->out[0].data, x->data, es, 6, vs, perm);
	} else if (!strcmp(op_str(k->op, "mode", "DCR"), "CRD")) {
		int64_t vs[6] = { n, c / (b * b), b, b, h, w }, perm[6] = { 0, 1, 4, 2, 5, 3 };
		permute_copy(k->out[0].data, x->data, es, 6, vs, perm);
	} else {
		int64_t vs[6] = { n, b, b, c / (b * b), h, w }, perm[6] = { 0, 3, 4, 1, 5, 2 };
		permute_copy(k->out[0].data, x->data, es, 6, vs, perm);
	}
	return 0;
}

/* ---- Shape, Size, ConstantOfShape, Range ---- */

static int shape_infer(struct ir_graph *g, struct ir_op *op)
{
	const struct ir_tensor *x = op_in(g, op, 0);
	int64_t b, e, n;
	if (op->type == OP_SIZE) {
		op_set_out(g, op, 0, DT_I64, 0, NULL);
		return 0;
	}
	shape_op_range(op, x->rank, &b, &e);
	n = e - b;
	op_set_out(g, op, 0, DT_I64, 1, &n);
	return 0;
}

static int shape_run(struct kern *k)
{
	const struct view *x = &k->in[0];
	int64_t *y = k->out[0].data, b, e;
	if (k->op->type == OP_SIZE) {
		y[0] = view_numel(x);
		return 0;
	}
	shape_op_range(k->op, x->rank, &b, &e);
	for (int64_t d = b; d < e; d++)
		y[d - b] = x->shape[d];
	return 0;
}

static int cos_infer(struct ir_graph *g, struct ir_op *op)
{
	int64_t shape[IR_MAX_RANK];
	const struct ir_attr *a = op_attr(op, "shape");
	const struct ir_tensor *st = op_in(g, op, 0);
	/* the shape as input 0 (formats/tpuc-ir.5, "Dynamic dimensions"): its
	 * values at run time, every extent dynamic before */
	int n = st ? (int)tensor_numel(st) : a ? a->n : 0;
	if (n > IR_MAX_RANK || (st && (st->rank != 1 || st->dyn)))
		return op_error(op, "the shape must be 1-D, of at most %d values", IR_MAX_RANK);
	uint32_t known = 0;
	if (st && !st->data) {   /* the parts known before run time are static */
		known = known_values(g, op->in[0], shape);
		for (int i = 0; i < n; i++)
			if (!(known >> i & 1))
				shape[i] = 1;
	} else if (st) {
		for (int i = 0; i < n; i++)
			shape[i] = dtype_get_int(st->data, st->dtype, i);
	} else {
		op_ints(op, "shape", shape, IR_MAX_RANK);
	}
	for (int i = 0; i < n; i++)
		if (shape[i] < 0)
			return op_error(op, "negative dimension");
	int dt = dtype_from_name(op_str(op, "dtype", "f32"));
	if (dt < 0)
		return op_error(op, "attribute 'dtype' names no dtype");
	op_set_out(g, op, 0, (enum ir_dtype)dt, n, shape);
	if (st && !st->data)
		op_set_dyn(g, op, 0, (n ? (1u << n) - 1 : 0) & ~known);
	return 0;
}

static int cos_run(struct kern *k)
{
	const struct view *y = &k->out[0];
	int64_t n = view_numel(y);
	size_t es = dtype_size(y->dtype);
	char one[8];
	if (y->dtype == DT_F32 || y->dtype == DT_F16 || y->dtype == DT_BF16) {
		float v = (float)op_float(k->op, "value", 0);
		dtype_convert(one, y->dtype, &v, DT_F32, 1);
	} else {
		int64_t v = op_int(k->op, "value_int", 0);
		dtype_convert(one, y->dtype, &v, DT_I64, 1);
	}
	for (int64_t i = 0; i < n; i++)
		memcpy((char *)y->data + (size_t)i * es, one, es);
	return 0;
}

/* Range's three scalar inputs: 1 when all are constants (their values
 * in v), 0 when one is known only at run time, -1 on error. */
static int range_values(const struct ir_graph *g, const struct ir_op *op, double *v)
{
	int known = 1;
	for (int i = 0; i < 3; i++) {
		const struct ir_tensor *t = &g->tensors[op->in[i]];
		if (tensor_numel(t) != 1 && !t->dyn)
			return op_error(op, "input %d must be a scalar", i);
		if (t->data)
			v[i] = dtype_get(t->data, t->dtype, 0);
		known &= t->data != NULL;
	}
	return known;
}

static int range_infer(struct ir_graph *g, struct ir_op *op)
{
	double v[3];
	int known = range_values(g, op, v);
	if (known < 0)
		return -1;
	if (!known) {   /* a run-time length (formats/tpuc-ir.5, "Dynamic dimensions") */
		op_set_out(g, op, 0, g->tensors[op->in[0]].dtype, 1, (int64_t[]){ 1 });
		op_set_dyn(g, op, 0, 1);
		return 0;
	}
	if (v[2] == 0)
		return op_error(op, "delta is 0");
	double len = ceil((v[1] - v[0]) / v[2]);
	int64_t n = len > 0 ? len < 9e18 ? (int64_t)len : INT64_MAX : 0;
	op_set_out(g, op, 0, g->tensors[op->in[0]].dtype, 1, &n);
	return 0;
}

static int range_run(struct kern *k)
{
	const struct view *y = &k->out[0];
	int64_t n = view_numel(y);
	double s = dtype_get(k->in[0].data, k->in[0].dtype, 0);
	double d = dtype_get(k->in[2].data, k->in[2].dtype, 0);
	for (int64_t i = 0; i < n; i++) {
		if (y->dtype == DT_F32) {
			((float *)y->data)[i] = (float)s + (float)i * (float)d;
		} else {
			int64_t v = (int64_t)s + i * (int64_t)d;
			dtype_convert((char *)y->data + (size_t)i * dtype_size(y->dtype), y->dtype, &v,
				      DT_I64, 1);
		}
	}
	return 0;
}

/* Slicing rules (codegen): output rows along H.  Transpose: rows of input
 * axis perm[2] (lib/chip/isa.h, isa_slice_axis), refused (first row -1) unless
 * that axis is 2 or 3.  Slice: the same rows when the slice leaves H
 * alone, else refused.  Split: below, likewise. */
static void transpose_slice_h(const struct ir_graph *g, const struct ir_op *op,
			      int oh0, int oh1, int *ih0, int *ih1)
{
	int64_t perm[IR_MAX_RANK];
	int r = g->tensors[op->in[0]].rank;
	int ok = op_ints(op, "perm", perm, IR_MAX_RANK) == r && r >= 4 &&
		 (perm[2] == 2 || perm[2] == 3);
	*ih0 = ok ? oh0 : -1;
	*ih1 = ok ? oh1 : -1;
}

static void slice_slice_h(const struct ir_graph *g, const struct ir_op *op,
			  int oh0, int oh1, int *ih0, int *ih1)
{
	int64_t a[IR_MAX_RANK], st[IR_MAX_RANK];
	int r = g->tensors[op->in[0]].rank;
	int na = op_ints(op, "axes", a, IR_MAX_RANK);
	int ok = na || op_ints(op, "starts", st, IR_MAX_RANK) <= 2;   /* no axes: 0, 1, ... */
	for (int i = 0; i < na; i++)
		if (norm_axis(a[i], r) == 2)
			ok = 0;
	*ih0 = ok ? oh0 : -1;
	*ih1 = ok ? oh1 : -1;
}

/* Split: the same rows in every output when the split leaves H alone. */
static void split_slice_h(const struct ir_graph *g, const struct ir_op *op,
			  int oh0, int oh1, int *ih0, int *ih1)
{
	int r = g->tensors[op->in[0]].rank;
	int ok = norm_axis(op_int(op, "axis", 0), r) != 2;
	*ih0 = ok ? oh0 : -1;
	*ih1 = ok ? oh1 : -1;
}

/* Splitting rules along an output axis (lib/back/lower_axsplit.c).
 * Transpose: the input axis it comes from.  Slice: an axis the slice
 * leaves whole.  Split: any axis but the one it splits.  Gather: an axis
 * of the data before or after the gathered one, or one of the indices
 * (the data read whole).  Expand: any axis (the input's part, or all of
 * it where it broadcasts).  Tile: an axis not repeated.  DepthToSpace, SpaceToDepth: the batch. */
static int transpose_split_axis(const struct ir_graph *g, const struct ir_op *op, int ax,
				int *in_ax)
{
	int64_t perm[IR_MAX_RANK];
	int r = g->tensors[op->in[0]].rank;
	if (op_ints(op, "perm", perm, IR_MAX_RANK) != r)
		return 0;
	return split_axis_x0(g, op, (int)perm[ax], in_ax);
}

static int slice_split_axis(const struct ir_graph *g, const struct ir_op *op, int ax, int *in_ax)
{
	const struct ir_tensor *x = &g->tensors[op->in[0]];
	int64_t start[IR_MAX_RANK], step[IR_MAX_RANK], count[IR_MAX_RANK];
	struct slice_par sp;
	if (slice_params(g, NULL, op, &sp) != 1 ||
	    slice_resolve(op, &sp, x->rank, x->shape, start, step, count) < 0)
		return 0;
	return start[ax] == 0 && step[ax] == 1 && count[ax] == x->shape[ax] &&
	       split_axis_x0(g, op, ax, in_ax);
}

static int split_split_axis(const struct ir_graph *g, const struct ir_op *op, int ax, int *in_ax)
{
	int r = g->tensors[op->in[0]].rank;
	return norm_axis(op_int(op, "axis", 0), r) != ax && split_axis_x0(g, op, ax, in_ax);
}

static int gather_split_axis(const struct ir_graph *g, const struct ir_op *op, int ax, int *in_ax)
{
	int r = g->tensors[op->in[0]].rank, q = g->tensors[op->in[1]].rank;
	int axis = norm_axis(op_int(op, "axis", 0), r);
	if (axis < 0)
		return 0;
	in_ax[0] = ax < axis ? ax : ax >= axis + q ? ax - q + 1 : -1;
	in_ax[1] = ax >= axis && ax < axis + q ? ax - axis : -1;
	return 1;
}

static int expand_split_axis(const struct ir_graph *g, const struct ir_op *op, int ax, int *in_ax)
{
	const struct ir_tensor *x = &g->tensors[op->in[0]], *y = &g->tensors[op->out[0]];
	int a = ax - (y->rank - x->rank);
	/* an axis the input broadcasts along reads the input whole (the part
	 * takes its shape attribute from the part: lib/back/lower_axsplit.c) */
	if (a >= 0 && x->shape[a] != 1)
		return x->shape[a] == y->shape[ax] && split_axis_x0(g, op, a, in_ax);
	for (int j = 0; j < op->n_in; j++)
		in_ax[j] = -1;
	return 1;
}

static int tile_split_axis(const struct ir_graph *g, const struct ir_op *op, int ax, int *in_ax)
{
	int64_t rep[IR_MAX_RANK];
	int n = op_ints(op, "repeats", rep, IR_MAX_RANK);
	return ax < n && rep[ax] == 1 && split_axis_x0(g, op, ax, in_ax);
}

/* Tile along a repeated axis: a block within one repetition reads the
 * input entries it copies once (repeats 1 there), a block of whole
 * repetitions the whole input as many times; a block across a
 * repetition's end is refused. */
static int tile_split_window(const struct ir_graph *g, const struct ir_op *op, int ax, int64_t o0,
			     int64_t o1, int64_t *i0, int64_t *i1, struct ir_op *part)
{
	int64_t rep[IR_MAX_RANK], n = g->tensors[op->in[0]].shape[ax];
	int r = g->tensors[op->in[0]].rank;
	if (op_ints(op, "repeats", rep, IR_MAX_RANK) != r || n < 1)
		return 0;
	if (o0 / n == (o1 - 1) / n) {
		*i0 = o0 % n;
		*i1 = (o1 - 1) % n + 1;
		rep[ax] = 1;
	} else if (o0 % n == 0 && o1 % n == 0) {
		*i0 = 0;
		*i1 = n;
		rep[ax] = (o1 - o0) / n;
	} else {
		return 0;
	}
	if (part)
		op_set_ints(part, "repeats", r, rep);
	return 1;
}

/* DepthToSpace along H or W: output entries [o0, o1), on block
 * boundaries, come from input entries [o0 / b, o1 / b); SpaceToDepth from
 * [o0 * b, o1 * b). */
static int d2s_split_window(const struct ir_graph *g, const struct ir_op *op, int ax, int64_t o0,
			    int64_t o1, int64_t *i0, int64_t *i1, struct ir_op *part)
{
	int64_t b = op_int(op, "blocksize", 1);
	if (ax < 2 || b < 1)
		return 0;
	if (op->type == OP_SPACETODEPTH) {
		*i0 = o0 * b;
		*i1 = o1 * b;
		return 1;
	}
	*i0 = o0 / b;
	*i1 = o1 / b;
	return o0 % b == 0 && o1 % b == 0;
}

/* Transpose, Squeeze and Unsqueeze follow their input's dtype in int8
 * (attention's head split and merge stay int8): xformer_i8.c. */
const struct op_def op_def_TRANSPOSE = { .infer = transpose_infer, .run_f32 = transpose_run, .lower = lower_default, .run_tpu = move_codes_tpu, .slice_h = transpose_slice_h, .split_axis = transpose_split_axis };
const struct op_def op_def_SQUEEZE = { .infer = squeeze_infer, .run_f32 = copy_same, .lower = lower_default, .run_tpu = move_codes_tpu };
const struct op_def op_def_UNSQUEEZE = { .infer = squeeze_infer, .run_f32 = copy_same, .lower = lower_default, .run_tpu = move_codes_tpu };
const struct op_def op_def_GATHER = { .infer = gather_infer, .run_f32 = gather_run, .lower = gather_lower, .run_tpu = quant_run_f32, .split_axis = gather_split_axis };
const struct op_def op_def_SLICE = { .infer = slice_infer, .run_f32 = slice_run, .lower = lower_default, .run_tpu = quant_run_f32, .slice_h = slice_slice_h, .split_axis = slice_split_axis };
const struct op_def op_def_SPLIT = { .infer = split_infer, .run_f32 = split_run, .lower = lower_default, .run_tpu = quant_run_f32, .slice_h = split_slice_h, .split_axis = split_split_axis };
const struct op_def op_def_EXPAND = { .infer = expand_infer, .run_f32 = expand_run, .lower = lower_default, .run_tpu = quant_run_f32, .split_axis = expand_split_axis };
const struct op_def op_def_TILE = { .infer = tile_infer, .run_f32 = tile_run, .lower = lower_default, .run_tpu = quant_run_f32, .split_axis = tile_split_axis, .split_window = tile_split_window };
const struct op_def op_def_DEPTHTOSPACE = { .infer = d2s_infer, .run_f32 = d2s_run, .lower = lower_default, .run_tpu = quant_run_f32, .split_axis = split_axis_batch, .split_window = d2s_split_window };
const struct op_def op_def_SPACETODEPTH = { .infer = d2s_infer, .run_f32 = d2s_run, .lower = lower_default, .run_tpu = quant_run_f32, .split_axis = split_axis_batch, .split_window = d2s_split_window };
const struct op_def op_def_SHAPE = { .infer = shape_infer, .run_f32 = shape_run, .run_tpu = quant_run_f32 };
const struct op_def op_def_SIZE = { .infer = shape_infer, .run_f32 = shape_run, .run_tpu = quant_run_f32 };
const struct op_def op_def_CONSTANTOFSHAPE = { .infer = cos_infer, .run_f32 = cos_run, .run_tpu = quant_run_f32 };
const struct op_def op_def_RANGE = { .infer = range_infer, .run_f32 = range_run, .run_tpu = quant_run_f32 };
