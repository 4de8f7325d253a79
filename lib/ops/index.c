/* index.c - operators driven by index tensors, for any data dtype:
 * GatherElements and ScatterElements (axis; reduction none, add or mul),
 * GatherND and ScatterND (batch_dims; reduction), OneHot (depth, axis;
 * input 1 the [off, on] values), TopK (k, axis, largest, sorted; values and
 * int64 indices, ties in index order), CumSum (axis, exclusive, reverse),
 * Trilu (upper, k) and EyeLike (dtype, k; shape from its input).
 */
#include <stdlib.h>
#include <string.h>

#include "ir/convert.h"
#include "ir/op.h"
#include "ops/kern_util.h"
#include "quant/quant.h"

static int64_t ld_index(const struct view *v, int64_t i)
{
	return v->dtype == DT_I64 ? ((const int64_t *)v->data)[i] : ((const int32_t *)v->data)[i];
}

static int is_index(enum ir_dtype t)
{
	return t == DT_I64 || t == DT_I32;
}

static void dense_strides(int r, const int64_t *shape, int64_t *st)
{
	int64_t s = 1;
	for (int d = r - 1; d >= 0; d--) {
		st[d] = s;
		s *= shape[d];
	}
}

/* dst[i] (op) src[j] for element size es and dtype t: reduction 0 none,
 * 1 add, 2 mul. */
static void combine(void *dst, const void *src, enum ir_dtype t, int red)
{
	if (!red) {
		memcpy(dst, src, dtype_size(t));
		return;
	}
	double a = dtype_get(dst, t, 0), b = dtype_get(src, t, 0);
	double r = red == 1 ? a + b : a * b;
	if (t == DT_F32) {
		*(float *)dst = (float)r;
	} else {
		int64_t v = (int64_t)r;
		dtype_convert(dst, t, &v, DT_I64, 1);
	}
}

static int reduction(const struct ir_op *op)
{
	const char *r = op_str(op, "reduction", "none");
	return !strcmp(r, "add") ? 1 : !strcmp(r, "mul") ? 2 : 0;
}

/* ---- GatherElements, ScatterElements ---- */

static int elements_infer(struct ir_graph *g, struct ir_op *op)
{
	int scatter = op->type == OP_SCATTERELEMENTS;
	const struct ir_tensor *x = op_in(g, op, 0), *ix = op_in(g, op, 1);
	if (!is_index(ix->dtype))
		return op_error(op, "indices must be int32 or int64");
	if (ix->rank != x->rank || norm_axis(op_int(op, "axis", 0), x->rank) < 0)
		return op_error(op, "indices rank or axis does not fit the data");
	if (scatter) {
		const struct ir_tensor *u = op_in(g, op, 2);
		if (!shapes_agree(u, ix))
			return op_error(op, "updates must have the shape of indices");
		return infer_same(g, op);
	}
	op_set_out(g, op, 0, x->dtype, ix->rank, ix->shape);
	return 0;
}

static int elements_run(struct kern *k)
{
	const struct view *x = &k->in[0], *ix = &k->in[1], *y = &k->out[0];
	int scatter = k->op->type == OP_SCATTERELEMENTS, r = x->rank;
	int axis = norm_axis(op_int(k->op, "axis", 0), r), red = reduction(k->op);
	size_t es = dtype_size(x->dtype);
	int64_t xs[IR_MAX_RANK], idx[IR_MAX_RANK] = { 0 }, n = view_numel(ix);
	dense_strides(r, x->shape, xs);
	if (scatter)
		memcpy(y->data, x->data, (size_t)view_numel(x) * es);
	for (int64_t e = 0; e < n; e++) {
		int64_t j = ld_index(ix, e), off = 0;
		if (j < 0)
			j += x->shape[axis];
		if (j < 0 || j >= x->shape[axis])
			return op_error(k->op, "index %lld out of range", (long long)j);
		for (int d = 0; d < r; d++)
			off += (d == axis ? j : idx[d]) * xs[d];
		if (scatter)
			combine((char *)y->data + (size_t)off * es,
				(const char *)k->in[2].data + (size_t)e * es, x->dtype, red);
		else
			memcpy((char *)y->data + (size_t)e * es, (const char *)x->data + (size_t)off * es, es);
		kern_index_next(r, ix->shape, idx);
	}
	return 0;
}

/* ---- GatherND, ScatterND ---- */

static int nd_infer(struct ir_graph *g, struct ir_op *op)
{
	int scatter = op->type == OP_SCATTERND;
	const struct ir_tensor *x = op_in(g, op, 0), *ix = op_in(g, op, 1);
	int b = (int)op_int(op, "batch_dims", 0);
	if (!is_index(ix->dtype) || ix->rank < 1)
		return op_error(op, "indices must be int32 or int64 of rank 1 or more");
	int64_t kd = ix->shape[ix->rank - 1];
	if (b < 0 || b >= ix->rank || b + kd > x->rank)
		return op_error(op, "batch_dims or the index depth does not fit the data");
	if (scatter)
		return infer_same(g, op);
	int64_t shape[IR_MAX_RANK];
	int rank = 0;
	for (int d = 0; d < ix->rank - 1; d++)
		shape[rank++] = ix->shape[d];
	for (int d = b + (int)kd; d < x->rank; d++)
		shape[rank++] = x->shape[d];
	if (rank > IR_MAX_RANK)
		return op_error(op, "result rank too large");
	op_set_out(g, op, 0, x->dtype, rank, shape);
	return 0;
}

static int nd_run(struct kern *k)
{
	const struct view *x = &k->in[0], *ix = &k->in[1], *y = &k->out[0];
	int scatter = k->op->type == OP_SCATTERND, red = reduction(k->op);
	int b = (int)op_int(k->op, "batch_dims", 0);
	int64_t kd = ix->shape[ix->rank - 1], xs[IR_MAX_RANK], batch = 1, inner = 1;
	size_t es = dtype_size(x->dtype);
	dense_strides(x->rank, x->shape, xs);
	for (int d = 0; d < b; d++)
		batch *= x->shape[d];
	for (int d = b + (int)kd; d < x->rank; d++)
		inner *= x->shape[d];
	int64_t nidx = view_numel(ix) / (kd ? kd : 1), per = nidx / (batch ? batch : 1);
	if (scatter)
		memcpy(y->data, x->data, (size_t)view_numel(x) * es);
	for (int64_t i = 0; i < nidx; i++) {
		int64_t off = (i / (per ? per : 1)) * (b ? xs[b - 1] : 0);
		for (int64_t j = 0; j < kd; j++) {
			int64_t v = ld_index(ix, i * kd + j), dim = x->shape[b + j];
			if (v < 0)
				v += dim;
			if (v < 0 || v >= dim)
				return op_error(k->op, "index %lld out of range", (long long)v);
			off += v * xs[b + j];
		}
		for (int64_t e = 0; e < inner; e++) {
			if (scatter)
				combine((char *)y->data + (size_t)(off + e) * es,
					(const char *)k->in[2].data + (size_t)(i * inner + e) * es, x->dtype, red);
			else
				memcpy((char *)y->data + (size_t)(i * inner + e) * es,
				       (const char *)x->data + (size_t)(off + e) * es, es);
		}
	}
	return 0;
}

/* ---- OneHot ---- */

static int onehot_infer(struct ir_graph *g, struct ir_op *op)
{
	const struct ir_tensor *ix = op_in(g, op, 0), *v = op_in(g, op, 1);
	int64_t depth = 0, shape[IR_MAX_RANK];
	int n = op_param_ints(g, NULL, op, 2, "depth", &depth, 1);   /* -2: at run time */
	int r = ix->rank + 1, axis = norm_axis(op_int(op, "axis", -1), r);
	if (n == -2)
		depth = 1;
	if (n == -1 || depth < 1 || axis < 0 || r > IR_MAX_RANK || tensor_numel(v) != 2)
		return n == -1 ? -1 : op_error(op, "depth, axis or values out of range");
	for (int d = 0, j = 0; d < r; d++)
		shape[d] = d == axis ? depth : ix->shape[j++];
	op_set_out(g, op, 0, v->dtype, r, shape);
	if (n == -2)
		op_set_dyn(g, op, 0, 1u << axis);
	return 0;
}

static int onehot_run(struct kern *k)
{
	const struct view *ix = &k->in[0], *v = &k->in[1], *y = &k->out[0];
	int axis = norm_axis(op_int(k->op, "axis", -1), ix->rank + 1);
	int64_t depth = y->shape[axis], outer = 1, inner = 1;
	size_t es = dtype_size(y->dtype);
	for (int d = 0; d < axis; d++)
		outer *= ix->shape[d];
	for (int d = axis; d < ix->rank; d++)
		inner *= ix->shape[d];
	for (int64_t o = 0; o < outer; o++)
		for (int64_t c = 0; c < depth; c++)
			for (int64_t i = 0; i < inner; i++) {
				double iv = dtype_get(ix->data, ix->dtype, o * inner + i);
				int64_t j = (int64_t)iv;
				if (j < 0)
					j += depth;
				memcpy((char *)y->data + (size_t)((o * depth + c) * inner + i) * es,
				       (const char *)v->data + (j == c ? es : 0), es);
			}
	return 0;
}

/* ---- TopK ---- */

static int topk_infer(struct ir_graph *g, struct ir_op *op)
{
	const struct ir_tensor *x = op_in(g, op, 0), *kt = op_in(g, op, 1);
	int axis = norm_axis(op_int(op, "axis", -1), x->rank);
	int64_t kk = op_int(op, "k", -1), shape[IR_MAX_RANK];
	if (axis < 0)
		return op_error(op, "axis out of range");
	/* k as input 1: a run-time k gives a dynamic extent of at most the axis' */
	int dyn_k = kt && !kt->data;
	if (kt && tensor_numel(kt) != 1 && !kt->dyn)
		return op_error(op, "K must hold one value");
	kk = dyn_k ? x->shape[axis] : kt ? dtype_get_int(kt->data, kt->dtype, 0) : kk;
	if (kk < 0 || (kk > x->shape[axis] && !x->dyn))
		return op_error(op, "k %lld out of range [0, %lld]", (long long)kk,
				(long long)x->shape[axis]);
	if (x->dtype == DT_BOOL || x->dtype == DT_F16 || x->dtype == DT_BF16)
		return op_error(op, "dtype %s is not supported", dtype_name(x->dtype));
	memcpy(shape, x->shape, sizeof shape);
	shape[axis] = kk;
	for (int i = 0; i < op->n_out; i++) {
		op_set_out(g, op, i, i ? DT_I64 : x->dtype, x->rank, shape);
		if (dyn_k)
			op_set_dyn(g, op, i, 1u << axis);
	}
	return 0;
}

struct topk_item {
	double v;
	int64_t i;
};

static int topk_largest(const void *a, const void *b)
{
	const struct topk_item *p = a, *q = b;
	return p->v > q->v ? -1 : p->v < q->v ? 1 : (p->i > q->i) - (p->i < q->i);
}

static int topk_smallest(const void *a, const void *b)
{
	const struct topk_item *p = a, *q = b;
	return p->v < q->v ? -1 : p->v > q->v ? 1 : (p->i > q->i) - (p->i < q->i);
}

static int topk_run(struct kern *k)
{
	const struct view *x = &k->in[0], *y = &k->out[0];
	int axis = norm_axis(op_int(k->op, "axis", -1), x->rank);
	int64_t kk = y->shape[axis], n = x->shape[axis], outer = 1, inner = 1;
	int largest = (int)op_int(k->op, "largest", 1);
	size_t es = dtype_size(x->dtype);
	for (int d = 0; d < axis; d++)
		outer *= x->shape[d];
	for (int d = axis + 1; d < x->rank; d++)
		inner *= x->shape[d];
	struct topk_item *it = malloc(sizeof *it * (size_t)(n ? n : 1));
	if (!it)
		return op_error(k->op, "out of memory");
	for (int64_t o = 0; o < outer; o++)
		for (int64_t i = 0; i < inner; i++) {
			for (int64_t j = 0; j < n; j++) {
				it[j].v = dtype_get(x->data, x->dtype, (o * n + j) * inner + i);
				it[j].i = j;
			}
			qsort(it, (size_t)n, sizeof *it, largest ? topk_largest : topk_smallest);
			for (int64_t j = 0; j < kk; j++) {
				int64_t at = (o * kk + j) * inner + i;
				memcpy((char *)y->data + (size_t)at * es,
				       (const char *)x->data + (size_t)((o * n + it[j].i) * inner + i) * es, es);
				if (k->n_out > 1)
					((int64_t *)k->out[1].data)[at] = it[j].i;
			}
		}
	free(it);
	return 0;
}

/* ---- CumSum ---- */

static int cumsum_infer(struct ir_graph *g, struct ir_op *op)
{
	const struct ir_tensor *x = op_in(g, op, 0);
	int64_t axis = 0;
	int n = op_param_ints(g, NULL, op, 1, "axis", &axis, 1);   /* -2: at run time */
	if (n == -1 || (n >= 0 && norm_axis(axis, x->rank) < 0))
		return n == -1 ? -1 : op_error(op, "axis out of range");
	if (x->dtype == DT_BOOL)
		return op_error(op, "dtype %s is not supported", dtype_name(x->dtype));
	return infer_same(g, op);
}

static int cumsum_run(struct kern *k)
{
	const struct view *x = &k->in[0], *y = &k->out[0];
	int64_t a = 0;
	if (op_param_ints(k->g, k, k->op, 1, "axis", &a, 1) < 0)
		return -1;
	int axis = norm_axis(a, x->rank);
	if (axis < 0)
		return op_error(k->op, "axis %lld out of range", (long long)a);
	int excl = (int)op_int(k->op, "exclusive", 0), rev = (int)op_int(k->op, "reverse", 0);
	int64_t n = x->shape[axis], outer = 1, inner = 1;
	for (int d = 0; d < axis; d++)
		outer *= x->shape[d];
	for (int d = axis + 1; d < x->rank; d++)
		inner *= x->shape[d];
	for (int64_t o = 0; o < outer; o++)
		for (int64_t i = 0; i < inner; i++) {
			double acc = 0;
			int64_t iacc = 0;
			for (int64_t s = 0; s < n; s++) {
				int64_t j = rev ? n - 1 - s : s, at = (o * n + j) * inner + i;
				double v = dtype_get(x->data, x->dtype, at);
				if (!dtype_is_float(x->dtype))
					v = (double)dtype_get_int(x->data, x->dtype, at);
				if (x->dtype == DT_F32) {
					if (!excl)
						acc += (float)v;
					((float *)y->data)[at] = (float)acc;
					if (excl)
						acc += (float)v;
				} else if (dtype_is_float(x->dtype)) {
					if (!excl)
						acc += v;
					dtype_set(y->data, y->dtype, at, acc);
					if (excl)
						acc += v;
				} else {
					if (!excl)
						iacc += (int64_t)v;
					dtype_convert((char *)y->data + (size_t)at * dtype_size(y->dtype),
						      y->dtype, &iacc, DT_I64, 1);
					if (excl)
						iacc += (int64_t)v;
				}
			}
		}
	return 0;
}

/* ---- Trilu, EyeLike ---- */

static int trilu_infer(struct ir_graph *g, struct ir_op *op)
{
	const struct ir_tensor *x = op_in(g, op, 0);
	if (op->type == OP_EYELIKE) {
		int dt = dtype_from_name(op_str(op, "dtype", dtype_name(x->dtype)));
		if (x->rank != 2 || dt < 0)
			return op_error(op, "needs a 2-D input and a known dtype");
		op_set_out(g, op, 0, (enum ir_dtype)dt, 2, x->shape);
		return 0;
	}
	if (x->rank < 2)
		return op_error(op, "input must have rank 2 or more");
	return infer_same(g, op);
}

static int trilu_run(struct kern *k)
{
	const struct view *x = &k->in[0], *y = &k->out[0];
	int64_t kk = 0, r = y->shape[y->rank - 2], c = y->shape[y->rank - 1];
	if (op_param_ints(k->g, k, k->op, 1, "k", &kk, 1) < 0)
		return -1;
	int64_t n = view_numel(y);
	size_t es = dtype_size(y->dtype);
	int eye = k->op->type == OP_EYELIKE, upper = (int)op_int(k->op, "upper", 1);
	char one[8];
	int64_t v1 = 1;
	dtype_convert(one, y->dtype, &v1, DT_I64, 1);
	for (int64_t e = 0; e < n; e++) {
		int64_t i = (e / c) % r, j = e % c;
		char *dst = (char *)y->data + (size_t)e * es;
		if (eye) {
			if (j - i == kk)
				memcpy(dst, one, es);
			else
				memset(dst, 0, es);
		} else if (upper ? j - i >= kk : j - i <= kk) {
			memcpy(dst, (const char *)x->data + (size_t)e * es, es);
		} else {
			memset(dst, 0, es);
		}
	}
	return 0;
}

/* Splitting rules along an output axis (lib/back/lower_axsplit.c): any
 * axis but the one the op gathers, scatters, sorts or sums along (every
 * input of GatherElements and ScatterElements cut with it); Trilu along
 * an axis before the matrix. */
static int axis_split_axis(const struct ir_graph *g, const struct ir_op *op, int ax, int *in_ax)
{
	int r = g->tensors[op->in[0]].rank;
	int64_t def = op->type == OP_TOPK ? -1 : 0;
	if (norm_axis(op_int(op, "axis", def), r) == ax)
		return 0;
	for (int j = 0; j < op->n_in; j++)
		in_ax[j] = op->type == OP_TOPK || op->type == OP_CUMSUM ? (j ? -1 : ax) : ax;
	return 1;
}

static int trilu_split_axis(const struct ir_graph *g, const struct ir_op *op, int ax, int *in_ax)
{
	return ax < g->tensors[op->in[0]].rank - 2 && split_axis_x0(g, op, ax, in_ax);
}

const struct op_def op_def_GATHERELEMENTS = { .infer = elements_infer, .run_f32 = elements_run, .run_tpu = quant_run_f32, .split_axis = axis_split_axis };
const struct op_def op_def_SCATTERELEMENTS = { .infer = elements_infer, .run_f32 = elements_run, .run_tpu = quant_run_f32, .split_axis = axis_split_axis };
const struct op_def op_def_GATHERND = { .infer = nd_infer, .run_f32 = nd_run, .run_tpu = quant_run_f32 };
const struct op_def op_def_SCATTERND = { .infer = nd_infer, .run_f32 = nd_run, .run_tpu = quant_run_f32 };
const struct op_def op_def_ONEHOT = { .infer = onehot_infer, .run_f32 = onehot_run, .run_tpu = quant_run_f32 };
const struct op_def op_def_TOPK = { .infer = topk_infer, .run_f32 = topk_run, .run_tpu = quant_run_f32, .split_axis = axis_split_axis };
const struct op_def op_def_CUMSUM = { .infer = cumsum_infer, .run_f32 = cumsum_run, .run_tpu = quant_run_f32, .split_axis = axis_split_axis };
const struct op_def op_def_TRILU = { .infer = trilu_infer, .run_f32 = trilu_run, .run_tpu = quant_run_f32, .split_axis = trilu_split_axis };
const struct op_def op_def_EYELIKE = { .infer = trilu_infer, .run_f32 = trilu_run, .run_tpu = quant_run_f32 };
