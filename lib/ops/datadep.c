/* datadep.c - the operators whose output extents follow from their input's
 * data, not its shape (formats/tpuc-ir.5, "Dynamic dimensions"): shape
 * inference gives an upper bound and marks the dimension dynamic, and the
 * kernel writes the extent it found into its output view's shape.  The
 * importer folds them when every input is a constant; the chip has no form
 * for them, so top2tpu places them on the host.  Any numeric dtype.
 *
 *   NonZero  X -> int64 [rank, n]: the indices of X's non-zero elements,
 *       one column per element in row-major order (n <= X's elements).
 *   Compress  X, condition (1-D) -> X's slices along attribute axis (or,
 *       without it, X's elements in one row) whose condition is non-zero;
 *       the slices past the condition's end are dropped.
 *   Unique  X -> Y, indices, inverse_indices, counts: the distinct
 *       elements (or slices along attribute axis) in ascending order
 *       (sorted 1) or in order of first occurrence (sorted 0), the index of
 *       each one's first occurrence, the position in Y of each element of X,
 *       and how often each occurs.
 *   NonMaxSuppression  boxes [B, N, 4], scores [B, C, N], and optional
 *       scalars max_output_boxes_per_class (0 when absent), iou_threshold,
 *       score_threshold -> int64 [n, 3] rows (batch, class, box): per batch
 *       and class, boxes whose score passes score_threshold in descending
 *       order of score (ties in box order), each kept unless its IoU with a
 *       kept one exceeds iou_threshold, at most max_output_boxes_per_class;
 *       attribute center_point_box 1 reads boxes as [x_c, y_c, w, h], else
 *       as two corners [y1, x1, y2, x2] in either order.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ir/base.h"
#include "ir/convert.h"
#include "ir/op.h"

/* x as slices along axis (attribute "axis" when the op has it), or, without
 * it, one row of all its elements. */
struct slices {
	const struct view *x;
	int axis;            /* -1: no axis */
	int64_t outer, n, inner;
};

static int slices_of(const struct ir_op *op, const struct view *x, struct slices *s)
{
	*s = (struct slices){ x, -1, 1, view_numel(x), 1 };
	if (!op_attr(op, "axis"))
		return 0;
	s->axis = norm_axis(op_int(op, "axis", 0), x->rank);
	if (s->axis < 0)
		return op_error(op, "axis %lld is out of range for rank %d",
				(long long)op_int(op, "axis", 0), x->rank);
	s->n = x->shape[s->axis];
	for (int d = 0; d < s->axis; d++)
		s->outer *= x->shape[d];
	for (int d = s->axis + 1; d < x->rank; d++)
		s->inner *= x->shape[d];
	return 0;
}

/* The shape of x with `len` slices along s's axis, or [len] without one. */
static int kept_shape(const struct slices *s, const struct ir_tensor *x, int64_t len,
		      int64_t *shape)
{
	if (s->axis < 0) {
		shape[0] = len;
		return 1;
	}
	memcpy(shape, x->shape, sizeof(int64_t) * (size_t)x->rank);
	shape[s->axis] = len;
	return x->rank;
}

/* The same for a view: its shape set for `len` slices. */
static void keep_view(const struct slices *s, struct view *y, int64_t len)
{
	if (s->axis < 0)
		y->shape[0] = len;
	else
		y->shape[s->axis] = len;
}

/* Copy slice I of s (each of its outer rows) to P; returns P after it. */
static char *copy_slices(const struct slices *s, int64_t o, int64_t i, char *p)
{
	size_t es = dtype_size(s->x->dtype), nb = es * (size_t)s->inner;
	memcpy(p, (const char *)s->x->data + es * (size_t)((o * s->n + i) * s->inner), nb);
	return p + nb;
}

/* Compare slice a and b of s, element by element in row-major order of the
 * other axes. */
static int slice_cmp(const struct slices *s, int64_t a, int64_t b)
{
	const struct view *x = s->x;
	int fl = dtype_is_float(x->dtype);
	for (int64_t o = 0; o < s->outer; o++)
		for (int64_t i = 0; i < s->inner; i++) {
			int64_t ia = (o * s->n + a) * s->inner + i, ib = (o * s->n + b) * s->inner + i;
			if (fl) {
				double va = dtype_get(x->data, x->dtype, ia), vb = dtype_get(x->data, x->dtype, ib);
				if (va != vb)
					return va < vb ? -1 : 1;
			} else {
				int64_t va = dtype_get_int(x->data, x->dtype, ia);
				int64_t vb = dtype_get_int(x->data, x->dtype, ib);
				if (x->dtype == DT_U64 && va != vb)
					return (uint64_t)va < (uint64_t)vb ? -1 : 1;
				if (va != vb)
					return va < vb ? -1 : 1;
			}
		}
	return 0;
}

/* Stable merge sort of idx[0..n) by cmp(ctx, a, b). */
static void merge_sort(int64_t *idx, int64_t n, const void *ctx,
		       int (*cmp)(const void *ctx, int64_t a, int64_t b))
{
	int64_t *tmp = xmalloc(sizeof *tmp * (size_t)(n + 1));
	for (int64_t w = 1; w < n; w *= 2) {
		for (int64_t lo = 0; lo < n; lo += 2 * w) {
			int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
			int64_t i = lo, j = mid, k = lo;
			while (i < mid && j < hi)
				tmp[k++] = cmp(ctx, idx[j], idx[i]) < 0 ? idx[j++] : idx[i++];
			while (i < mid)
				tmp[k++] = idx[i++];
			while (j < hi)
				tmp[k++] = idx[j++];
		}
		memcpy(idx, tmp, sizeof *idx * (size_t)n);
	}
	free(tmp);
}

static int slice_cmp_ctx(const void *ctx, int64_t a, int64_t b)
{
	return slice_cmp(ctx, a, b);
}

/* ---- NonZero ---- */

static int nonzero_infer(struct ir_graph *g, struct ir_op *op)
{
	const struct ir_tensor *x = op_in(g, op, 0);
	op_set_out(g, op, 0, DT_I64, 2, (int64_t[]){ x->rank, tensor_numel(x) });
	op_set_dyn(g, op, 0, 2);
	return 0;
}

static int nonzero_run(struct kern *k)
{
	const struct view *x = &k->in[0];
	struct view *y = &k->out[0];
	int64_t count = view_numel(x), nnz = 0;
	for (int64_t i = 0; i < count; i++)
		nnz += dtype_get(x->data, x->dtype, i) != 0;
	int64_t *v = y->data, at = 0;
	for (int64_t i = 0; i < count; i++) {
		if (dtype_get(x->data, x->dtype, i) == 0)
			continue;
		int64_t rest = i;
		for (int d = x->rank - 1; d >= 0; d--) {
			v[d * nnz + at] = rest % x->shape[d];
			rest /= x->shape[d];
		}
		at++;
	}
	y->shape[1] = nnz;
	return 0;
}

/* ---- Compress ---- */

static int compress_infer(struct ir_graph *g, struct ir_op *op)
{
	const struct ir_tensor *x = op_in(g, op, 0), *c = op_in(g, op, 1);
	struct view xv = { .rank = x->rank, .dtype = x->dtype };
	memcpy(xv.shape, x->shape, sizeof xv.shape);
	struct slices s;
	if (slices_of(op, &xv, &s) < 0)
		return -1;
	if (c->rank != 1)
		return op_error(op, "condition must be 1-D, it has rank %d", c->rank);
	if (c->shape[0] > s.n && !c->dyn)
		return op_error(op, "condition has %lld values, the axis %lld",
				(long long)c->shape[0], (long long)s.n);
	int64_t shape[IR_MAX_RANK];
	int rank = kept_shape(&s, x, c->shape[0] < s.n ? c->shape[0] : s.n, shape);
	op_set_out(g, op, 0, x->dtype, rank, shape);
	op_set_dyn(g, op, 0, s.axis < 0 ? 1 : x->dyn | 1u << s.axis);
	return 0;
}

static int compress_run(struct kern *k)
{
	const struct view *x = &k->in[0], *c = &k->in[1];
	struct slices s;
	if (slices_of(k->op, x, &s) < 0)
		return -1;
	int64_t nc = c->shape[0] < s.n ? c->shape[0] : s.n, keep = 0;
	char *p = k->out[0].data;
	for (int64_t o = 0; o < s.outer; o++)
		for (int64_t i = 0; i < nc; i++)
			if (dtype_get(c->data, c->dtype, i) != 0) {
				p = copy_slices(&s, o, i, p);
				keep += o == 0;
			}
	keep_view(&s, &k->out[0], keep);
	return 0;
}

/* ---- Unique ---- */

static int unique_infer(struct ir_graph *g, struct ir_op *op)
{
	const struct ir_tensor *x = op_in(g, op, 0);
	struct view xv = { .rank = x->rank, .dtype = x->dtype };
	memcpy(xv.shape, x->shape, sizeof xv.shape);
	struct slices s;
	if (slices_of(op, &xv, &s) < 0)
		return -1;
	int64_t shape[IR_MAX_RANK];
	int rank = kept_shape(&s, x, s.n, shape);
	op_set_out(g, op, 0, x->dtype, rank, shape);
	op_set_dyn(g, op, 0, s.axis < 0 ? 1 : x->dyn | 1u << s.axis);
	/* inverse_indices: one per element or slice of X, as dynamic as those */
	int n_dyn = s.axis < 0 ? x->dyn != 0 : (int)(x->dyn >> s.axis & 1);
	for (int i = 1; i < op->n_out; i++) {
		op_set_out(g, op, i, DT_I64, 1, (int64_t[]){ s.n });
		if (i != 2 || n_dyn)
			op_set_dyn(g, op, i, 1);
	}
	return 0;
}

static int unique_run(struct kern *k)
{
	struct slices s;
	if (slices_of(k->op, &k->in[0], &s) < 0)
		return -1;
	int sorted = (int)op_int(k->op, "sorted", 1);
	int64_t n = s.n;
	int64_t *order = xmalloc(sizeof *order * (size_t)(n + 1));
	for (int64_t i = 0; i < n; i++)
		order[i] = i;
	merge_sort(order, n, &s, slice_cmp_ctx);
	/* groups of equal slices in sorted order: the first (smallest) index
	 * and the count of each; group[i] is slice i's */
	int64_t *first = xmalloc(sizeof *first * (size_t)(n + 1));
	int64_t *count = xmalloc(sizeof *count * (size_t)(n + 1));
	int64_t *group = xmalloc(sizeof *group * (size_t)(n + 1));
	int64_t m = 0;
	for (int64_t i = 0; i < n; i++) {
		if (!i || slice_cmp(&s, order[i - 1], order[i])) {
			first[m] = order[i];
			count[m++] = 0;
		}
		count[m - 1]++;
		group[order[i]] = m - 1;
	}
	/* the group at each output position; sorted 0: first occurrences' order */
	int64_t *at = xmalloc(sizeof *at * (size_t)(m + 1));
	int64_t *pos = xmalloc(sizeof *pos * (size_t)(m + 1));
	for (int64_t j = 0; j < m; j++)
		at[j] = j;
	if (!sorted) {
		int64_t q = 0;
		for (int64_t i = 0; i < n; i++)
			if (first[group[i]] == i)
				at[q++] = group[i];
	}
	for (int64_t j = 0; j < m; j++)
		pos[at[j]] = j;
	char *p = k->out[0].data;
	for (int64_t o = 0; o < s.outer; o++)
		for (int64_t j = 0; j < m; j++)
			p = copy_slices(&s, o, first[at[j]], p);
	keep_view(&s, &k->out[0], m);
	for (int i = 1; i < k->n_out; i++) {
		int64_t *v = k->out[i].data;
		if (!v)
			continue;
		for (int64_t j = 0; j < (i == 2 ? n : m); j++)
			v[j] = i == 1 ? first[at[j]] : i == 2 ? pos[group[j]] : count[at[j]];
		k->out[i].shape[0] = i == 2 ? n : m;
	}
	FREE_ALL(order, first, count, group, at, pos);
	return 0;
}

/* ---- NonMaxSuppression ---- */

/* Input I of k, a scalar, or DEF when absent. */
static double scalar_in(const struct kern *k, int i, double def)
{
	return i < k->n_in && k->in[i].data && view_numel(&k->in[i]) > 0
	       ? dtype_get(k->in[i].data, k->in[i].dtype, 0) : def;
}

static int nms_infer(struct ir_graph *g, struct ir_op *op)
{
	const struct ir_tensor *bx = op_in(g, op, 0), *sc = op_in(g, op, 1);
	/* extents checked where static (they are again at run time) */
	if (bx->rank != 3 || sc->rank != 3 || (bx->shape[2] != 4 && !(bx->dyn & 4)) ||
	    (sc->shape[0] != bx->shape[0] && !((sc->dyn | bx->dyn) & 1)) ||
	    (sc->shape[2] != bx->shape[1] && !(sc->dyn & 4) && !(bx->dyn & 2))) {
		char b[160], c[160];
		shape_str(b, sizeof b, bx->rank, bx->shape);
		shape_str(c, sizeof c, sc->rank, sc->shape);
		return op_error(op, "boxes must be [B, N, 4] and scores [B, C, N], they are %s and %s",
				b, c);
	}
	for (int i = 2; i < op->n_in; i++) {
		const struct ir_tensor *t = op_in(g, op, i);
		if (t && tensor_numel(t) != 1 && !t->dyn)
			return op_error(op, "input %d must hold one value", i);
	}
	int64_t n = bx->shape[1], per = n;
	const struct ir_tensor *m = op_in(g, op, 2);
	if (!m)
		per = 0;
	else if (m->data && tensor_numel(m) == 1)
		per = dtype_get_int(m->data, m->dtype, 0);
	per = per < 0 ? 0 : per < n ? per : n;
	op_set_out(g, op, 0, DT_I64, 2, (int64_t[]){ bx->shape[0] * sc->shape[1] * per, 3 });
	op_set_dyn(g, op, 0, 1);
	return 0;
}

/* Higher score first; equal scores keep the box order (the sort is stable). */
static int score_cmp(const void *ctx, int64_t a, int64_t b)
{
	const double *s = ctx;
	return s[a] > s[b] ? -1 : s[a] < s[b] ? 1 : 0;
}

/* The N boxes of batch B as y1, x1, y2, x2 with y1 <= y2, x1 <= x2, four
 * doubles per box. */
static void nms_boxes(const struct view *bx, int64_t b, int center, double *o)
{
	int64_t n = bx->shape[1];
	for (int64_t i = 0; i < n; i++, o += 4) {
		double v[4];
		for (int k = 0; k < 4; k++)
			v[k] = dtype_get(bx->data, bx->dtype, (b * n + i) * 4 + k);
		if (center) {   /* x_center, y_center, width, height */
			o[0] = v[1] - v[3] / 2;
			o[2] = v[1] + v[3] / 2;
			o[1] = v[0] - v[2] / 2;
			o[3] = v[0] + v[2] / 2;
		} else {
			o[0] = fmin(v[0], v[2]);
			o[2] = fmax(v[0], v[2]);
			o[1] = fmin(v[1], v[3]);
			o[3] = fmax(v[1], v[3]);
		}
	}
}

static double iou(const double *a, const double *b)
{
	double aa = (a[2] - a[0]) * (a[3] - a[1]), ab = (b[2] - b[0]) * (b[3] - b[1]);
	if (aa <= 0 || ab <= 0)
		return 0;
	double h = fmin(a[2], b[2]) - fmax(a[0], b[0]), w = fmin(a[3], b[3]) - fmax(a[1], b[1]);
	if (h <= 0 || w <= 0)
		return 0;
	double inter = h * w;
	return inter / (aa + ab - inter);
}

/* The boxes kept so far in one class, indexed so that a new box is compared
 * only with those that can overlap it: the finite ones sorted by x1 (a kept
 * box overlaps [x1, x2) only if its own x1 lies in (x1 - widest, x2)), the
 * rest (a NaN or infinite corner, whose IoU the comparison must still see)
 * in a list of their own.  Boxes of no area overlap nothing and are left
 * out.  Which kept box suppresses does not matter, only whether one does, so
 * the answer is the one of comparing every pair.  A box with a non-finite
 * corner, or a threshold below 0 (where boxes apart suppress each other), is
 * compared with every kept box. */
struct nms_kept {
	const double *box;   /* the batch's boxes, 4 doubles each */
	int64_t *by_x, n_x;  /* finite kept boxes, ascending x1 */
	int64_t *odd, n_odd; /* kept boxes with a non-finite corner */
	int64_t *all, n_all; /* every kept box */
	double widest;       /* largest x2 - x1 among by_x */
};

static int finite_box(const double *a)
{
	return isfinite(a[0]) && isfinite(a[1]) && isfinite(a[2]) && isfinite(a[3]);
}

static int nms_suppressed(const struct nms_kept *kp, const double *a, double thr)
{
	if (!(thr >= 0) || !finite_box(a)) {
		for (int64_t j = 0; j < kp->n_all; j++)
			if (!(iou(a, kp->box + 4 * kp->all[j]) <= thr))
				return 1;
		return 0;
	}
	for (int64_t j = 0; j < kp->n_odd; j++)
		if (!(iou(a, kp->box + 4 * kp->odd[j]) <= thr))
			return 1;
	int64_t lo = 0, hi = kp->n_x;   /* first x1 > a's x1 - widest */
	double from = a[1] - kp->widest;
	while (lo < hi) {
		int64_t mid = lo + (hi - lo) / 2;
		if (kp->box[4 * kp->by_x[mid] + 1] > from)
			hi = mid;
		else
			lo = mid + 1;
	}
	for (int64_t j = lo; j < kp->n_x && kp->box[4 * kp->by_x[j] + 1] < a[3]; j++)
		if (!(iou(a, kp->box + 4 * kp->by_x[j]) <= thr))
			return 1;
	return 0;
}

static void nms_keep(struct nms_kept *kp, int64_t i)
{
	const double *a = kp->box + 4 * i;
	kp->all[kp->n_all++] = i;
	if (!finite_box(a)) {
		kp->odd[kp->n_odd++] = i;
		return;
	}
	if (!((a[2] - a[0]) * (a[3] - a[1]) > 0))
		return;
	int64_t lo = 0, hi = kp->n_x;   /* after every x1 <= a's */
	while (lo < hi) {
		int64_t mid = lo + (hi - lo) / 2;
		if (kp->box[4 * kp->by_x[mid] + 1] > a[1])
			hi = mid;
		else
			lo = mid + 1;
	}
	memmove(kp->by_x + lo + 1, kp->by_x + lo, sizeof *kp->by_x * (size_t)(kp->n_x - lo));
	kp->by_x[lo] = i;
	kp->n_x++;
	kp->widest = fmax(kp->widest, a[3] - a[1]);
}

static int nms_run(struct kern *k)
{
	const struct view *bx = &k->in[0], *sc = &k->in[1];
	if (bx->shape[2] != 4 || sc->shape[0] != bx->shape[0] || sc->shape[2] != bx->shape[1])
		return op_error(k->op, "boxes must be [B, N, 4] and scores [B, C, N]");
	int center = (int)op_int(k->op, "center_point_box", 0);
	double thr = scalar_in(k, 3, 0), score_thr = scalar_in(k, 4, -INFINITY);
	int64_t nb = bx->shape[0], nc = sc->shape[1], n = bx->shape[1];
	const struct view *mo = k->n_in > 2 && k->in[2].data && view_numel(&k->in[2]) ? &k->in[2] : NULL;
	int64_t per = mo ? dtype_get_int(mo->data, mo->dtype, 0) : 0;   /* INT64_MAX: all */
	per = per < 0 ? 0 : per < n ? per : n;
	int64_t *sel = k->out[0].data, ns = 0;
	int64_t *order = xmalloc(sizeof *order * (size_t)(n + 1));
	double *score = xmalloc(sizeof *score * (size_t)(n + 1));
	double *box = xmalloc(sizeof *box * 4 * (size_t)(n + 1));
	struct nms_kept kp = { .box = box, .by_x = xmalloc(sizeof *kp.by_x * (size_t)(n + 1)),
			       .odd = xmalloc(sizeof *kp.odd * (size_t)(n + 1)),
			       .all = xmalloc(sizeof *kp.all * (size_t)(n + 1)) };
	for (int64_t b = 0; b < nb; b++) {
		nms_boxes(bx, b, center, box);
		for (int64_t c = 0; c < nc; c++) {
			int64_t m = 0;
			for (int64_t i = 0; i < n; i++) {
				score[i] = dtype_get(sc->data, sc->dtype, (b * nc + c) * n + i);
				if (score[i] > score_thr)
					order[m++] = i;
			}
			merge_sort(order, m, score, score_cmp);
			kp.n_x = kp.n_odd = kp.n_all = 0;
			kp.widest = 0;
			for (int64_t i = 0, nk = 0; i < m && nk < per; i++) {
				if (nms_suppressed(&kp, box + 4 * order[i], thr))
					continue;
				nms_keep(&kp, order[i]);
				nk++;
				sel[3 * ns] = b;
				sel[3 * ns + 1] = c;
				sel[3 * ns + 2] = order[i];
				ns++;
			}
		}
	}
	k->out[0].shape[0] = ns;
	FREE_ALL(order, score, box, kp.by_x, kp.odd, kp.all);
	return 0;
}

const struct op_def op_def_NONZERO = { .infer = nonzero_infer, .run_f32 = nonzero_run,
				       .run_const = nonzero_run };
const struct op_def op_def_COMPRESS = { .infer = compress_infer, .run_f32 = compress_run,
					.run_const = compress_run };
const struct op_def op_def_UNIQUE = { .infer = unique_infer, .run_f32 = unique_run,
				      .run_const = unique_run };
const struct op_def op_def_NMS = { .infer = nms_infer, .run_f32 = nms_run, .run_const = nms_run };
