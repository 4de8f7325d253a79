/* import_datadep.c - the ONNX operators whose output shape depends on the
 * values of their inputs: NonZero, Compress, Unique and NonMaxSuppression.
 * The IR has static shapes, so these are computed at import when every
 * input they read is a constant (an initializer, a Constant node, a --bind
 * array or a folded subgraph), and their outputs become weights; with a
 * run-time input they are refused with one line saying which input must be
 * a constant.  Used by the dispatcher lib/front/onnx_import.c.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "front/import_ops.h"
#include "front/import_util.h"
#include "ir/base.h"
#include "ir/convert.h"
#include "ir/ir.h"

int is_datadep_op(const char *type)
{
	return !strcmp(type, "NonZero") || !strcmp(type, "Compress") || !strcmp(type, "Unique") ||
	       !strcmp(type, "NonMaxSuppression");
}

/* Output I of the node, named NAME (may be unnamed: skipped), as a weight. */
static int put_output(struct imp *im, int i, enum ir_dtype dt, int rank, const int64_t *shape,
		      const void *data)
{
	const Onnx__NodeProto *n = im->node;
	if ((size_t)i >= n->n_output || !n->output[i] || !*n->output[i])
		return 0;
	const char *name = n->output[i];
	int64_t count = 1;
	for (int d = 0; d < rank; d++)
		count *= shape[d];
	if (!count)
		return node_err(im, "output '%s' has no elements: zero-sized tensors are not supported",
				name);
	int k = graph_add_weight(im->g, name, dt, rank, shape, data);
	set_known(im, k);
	name_index_set(&im->tensors, name, k);
	return 0;
}

/* ---- ordering of slices (Unique) and of scores (NonMaxSuppression) ---- */

struct slices {
	const struct ir_tensor *x;
	int64_t outer, n, inner;
};

/* x as slices along *axis (made non-negative), or, without has_axis, as
 * one row of all its elements; -1 with a message when axis is out of
 * range. */
static int slices_along(struct imp *im, const struct ir_tensor *x, int has_axis, int64_t *axis,
			struct slices *s)
{
	*s = (struct slices){ x, 1, tensor_numel(x), 1 };
	if (!has_axis)
		return 0;
	if (*axis < -x->rank || *axis >= x->rank)
		return node_err(im, "axis %lld is out of range for rank %d", (long long)*axis, x->rank);
	if (*axis < 0)
		*axis += x->rank;
	s->n = x->shape[*axis];
	for (int d = 0; d < *axis; d++)
		s->outer *= x->shape[d];
	for (int d = (int)*axis + 1; d < x->rank; d++)
		s->inner *= x->shape[d];
	return 0;
}

/* Compare slice a and b of s along its axis, element by element in
 * row-major order of the other axes. */
static int slice_cmp(const struct slices *s, int64_t a, int64_t b)
{
	const struct ir_tensor *x = s->x;
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
static void merge_sort(int64_t *idx, int64_t *tmp, int64_t n, const void *ctx,
		       int (*cmp)(const void *ctx, int64_t a, int64_t b))
{
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
}

static int slice_cmp_ctx(const void *ctx, int64_t a, int64_t b)
{
	return slice_cmp(ctx, a, b);
}

/* ---- the operators ---- */

static int nonzero(struct imp *im, const struct ir_tensor *x)
{
	int64_t count = tensor_numel(x), nnz = 0;
	for (int64_t i = 0; i < count; i++)
		nnz += dtype_get(x->data, x->dtype, i) != 0;
	int r = x->rank;
	int64_t *y = xcalloc((size_t)(r * nnz) + 1, sizeof *y), k = 0;
	for (int64_t i = 0; i < count; i++) {
		if (dtype_get(x->data, x->dtype, i) == 0)
			continue;
		int64_t rest = i;
		for (int d = r - 1; d >= 0; d--) {
			y[d * nnz + k] = rest % x->shape[d];
			rest /= x->shape[d];
		}
		k++;
	}
	int rc = put_output(im, 0, DT_I64, 2, (int64_t[]){ r, nnz }, y);
	free(y);
	return rc;
}

/* Output 0 of Compress or Unique: x with `len` slices left along axis,
 * or, without has_axis, `len` elements in one row, from y. */
static int put_kept(struct imp *im, const struct ir_tensor *x, int has_axis, int64_t axis,
		    int64_t len, const void *y)
{
	int64_t shape[IR_MAX_RANK] = { len };
	int rank = 1;
	if (has_axis) {
		rank = x->rank;
		memcpy(shape, x->shape, sizeof shape);
		shape[axis] = len;
	}
	return put_output(im, 0, x->dtype, rank, shape, y);
}

static int compress(struct imp *im, const struct ir_tensor *x, const struct ir_tensor *c)
{
	int64_t axis = 0;
	int has_axis = attr_find(im->node, "axis") != NULL;
	if (attr_int(im, "axis", 0, &axis) < 0)
		return -1;
	if (c->rank != 1)
		return node_err(im, "condition must be 1-D, it has rank %d", c->rank);
	struct slices s;
	if (slices_along(im, x, has_axis, &axis, &s) < 0)
		return -1;
	if (c->shape[0] > s.n)
		return node_err(im, "condition has %lld values, the axis %lld",
				(long long)c->shape[0], (long long)s.n);
	int64_t keep = 0;
	for (int64_t i = 0; i < c->shape[0]; i++)
		keep += dtype_get(c->data, c->dtype, i) != 0;
	size_t es = dtype_size(x->dtype);
	char *y = xmalloc(es * (size_t)(s.outer * keep * s.inner) + 1), *p = y;
	for (int64_t o = 0; o < s.outer; o++)
		for (int64_t i = 0; i < c->shape[0]; i++)
			if (dtype_get(c->data, c->dtype, i) != 0) {
				size_t nb = es * (size_t)s.inner;
				memcpy(p, (const char *)x->data + es * (size_t)((o * s.n + i) * s.inner), nb);
				p += nb;
			}
	int rc = put_kept(im, x, has_axis, axis, keep, y);
	free(y);
	return rc;
}

static int unique(struct imp *im, const struct ir_tensor *x)
{
	int64_t sorted = 1, axis = 0;
	int has_axis = attr_find(im->node, "axis") != NULL;
	if (attr_int(im, "sorted", 1, &sorted) < 0 || attr_int(im, "axis", 0, &axis) < 0)
		return -1;
	struct slices s;
	if (slices_along(im, x, has_axis, &axis, &s) < 0)
		return -1;
	int64_t n = s.n;
	int64_t *order = xmalloc(sizeof *order * (size_t)(n + 1));
	int64_t *tmp = xmalloc(sizeof *tmp * (size_t)(n + 1));
	for (int64_t i = 0; i < n; i++)
		order[i] = i;
	merge_sort(order, tmp, n, &s, slice_cmp_ctx);
	/* groups of equal slices, in sorted order: first index (stable: the
	 * smallest) and count; group[i] is the group of slice i */
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
	/* sorted = 0: the groups in the order of their first occurrence */
	int64_t *pos = xmalloc(sizeof *pos * (size_t)(m + 1));   /* output position of group */
	int64_t *at = xmalloc(sizeof *at * (size_t)(m + 1));     /* group at output position */
	for (int64_t j = 0; j < m; j++)
		at[j] = j;
	if (!sorted) {
		int64_t k = 0;
		for (int64_t i = 0; i < n; i++)
			if (first[group[i]] == i)
				at[k++] = group[i];
	}
	for (int64_t j = 0; j < m; j++)
		pos[at[j]] = j;
	size_t es = dtype_size(x->dtype);
	char *y = xmalloc(es * (size_t)(s.outer * m * s.inner) + 1), *p = y;
	for (int64_t o = 0; o < s.outer; o++)
		for (int64_t j = 0; j < m; j++) {
			size_t nb = es * (size_t)s.inner;
			memcpy(p, (const char *)x->data + es * (size_t)((o * s.n + first[at[j]]) * s.inner), nb);
			p += nb;
		}
	int64_t *ind = xmalloc(sizeof *ind * (size_t)(m + 1));
	int64_t *cnt = xmalloc(sizeof *cnt * (size_t)(m + 1));
	int64_t *inv = xmalloc(sizeof *inv * (size_t)(n + 1));
	for (int64_t j = 0; j < m; j++) {
		ind[j] = first[at[j]];
		cnt[j] = count[at[j]];
	}
	for (int64_t i = 0; i < n; i++)
		inv[i] = pos[group[i]];
	int rc = put_kept(im, x, has_axis, axis, m, y);
	if (!rc)
		rc = put_output(im, 1, DT_I64, 1, (int64_t[]){ m }, ind);
	if (!rc)
		rc = put_output(im, 2, DT_I64, 1, (int64_t[]){ n }, inv);
	if (!rc)
		rc = put_output(im, 3, DT_I64, 1, (int64_t[]){ m }, cnt);
	free(y);
	free(ind);
	free(cnt);
	free(inv);
	free(pos);
	free(at);
	free(first);
	free(count);
	free(group);
	free(order);
	free(tmp);
	return rc;
}

struct nms_scores {
	const struct ir_tensor *t;
	int64_t base;
};

/* Higher score first; equal scores keep the box order (the sort is stable). */
static int score_cmp(const void *ctx, int64_t a, int64_t b)
{
	const struct nms_scores *s = ctx;
	double va = dtype_get(s->t->data, s->t->dtype, s->base + a);
	double vb = dtype_get(s->t->data, s->t->dtype, s->base + b);
	return va > vb ? -1 : va < vb ? 1 : 0;
}

/* Box I of batch B as y1, x1, y2, x2 with y1 <= y2, x1 <= x2. */
static void nms_box(const struct ir_tensor *bx, int64_t b, int64_t i, int center, double *o)
{
	int64_t base = (b * bx->shape[1] + i) * 4;
	double v[4];
	for (int k = 0; k < 4; k++)
		v[k] = dtype_get(bx->data, bx->dtype, base + k);
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

static int nms(struct imp *im, const int *in, int n_in)
{
	const struct ir_tensor *bx = &im->g->tensors[in[0]], *sc = &im->g->tensors[in[1]];
	int64_t center = 0, max_out = 0;
	double thr = 0, score_thr = -INFINITY;
	if (attr_int(im, "center_point_box", 0, &center) < 0)
		return -1;
	if (bx->rank != 3 || bx->shape[2] != 4 || sc->rank != 3 || sc->shape[0] != bx->shape[0] ||
	    sc->shape[2] != bx->shape[1])
		return node_err(im, "boxes must be [B, N, 4] and scores [B, C, N]");
	if (n_in > 2 && in[2] >= 0) {
		double v;
		if (const_scalar(im, in[2], "max_output_boxes_per_class", &v) < 0)
			return -1;
		max_out = (int64_t)v;
	}
	if (n_in > 3 && in[3] >= 0 && const_scalar(im, in[3], "iou_threshold", &thr) < 0)
		return -1;
	if (n_in > 4 && in[4] >= 0 && const_scalar(im, in[4], "score_threshold", &score_thr) < 0)
		return -1;
	int64_t nb = bx->shape[0], nc = sc->shape[1], n = bx->shape[1];
	int64_t per = max_out < n ? max_out : n;
	if (per < 0)
		per = 0;
	int64_t *sel = xmalloc(sizeof *sel * (size_t)(3 * nb * nc * per + 1)), ns = 0;
	int64_t *order = xmalloc(sizeof *order * (size_t)(n + 1));
	int64_t *tmp = xmalloc(sizeof *tmp * (size_t)(n + 1));
	int64_t *kept = xmalloc(sizeof *kept * (size_t)(n + 1));
	for (int64_t b = 0; b < nb; b++)
		for (int64_t c = 0; c < nc; c++) {
			struct nms_scores s = { sc, (b * nc + c) * n };
			int64_t m = 0;
			for (int64_t i = 0; i < n; i++)
				if (dtype_get(sc->data, sc->dtype, s.base + i) > score_thr)
					order[m++] = i;
			merge_sort(order, tmp, m, &s, score_cmp);
			int64_t nk = 0;
			for (int64_t i = 0; i < m && nk < per; i++) {
				double a[4], o[4];
				nms_box(bx, b, order[i], (int)center, a);
				int ok = 1;
				for (int64_t j = 0; j < nk && ok; j++) {
					nms_box(bx, b, kept[j], (int)center, o);
					ok = iou(a, o) <= thr;
				}
				if (!ok)
					continue;
				kept[nk++] = order[i];
				sel[3 * ns] = b;
				sel[3 * ns + 1] = c;
				sel[3 * ns + 2] = order[i];
				ns++;
			}
		}
	int rc = put_output(im, 0, DT_I64, 2, (int64_t[]){ ns, 3 }, sel);
	free(sel);
	free(order);
	free(tmp);
	free(kept);
	return rc;
}

int import_datadep(struct imp *im)
{
	const Onnx__NodeProto *n = im->node;
	const char *type = n->op_type;
	int is_nms = !strcmp(type, "NonMaxSuppression");
	int min_in = !strcmp(type, "Compress") || is_nms ? 2 : 1;
	int max_in = is_nms ? 5 : min_in;
	int max_out = !strcmp(type, "Unique") ? 4 : 1;
	static const char *const attrs[][3] = {
		{ "NonZero" }, { "Compress", "axis" }, { "Unique", "sorted", "axis" },
		{ "NonMaxSuppression", "center_point_box" },
	};
	if ((!strcmp(type, "NonZero") && im->opset < 9) || (!strcmp(type, "Compress") && im->opset < 9) ||
	    (!strcmp(type, "Unique") && im->opset < 11) || (is_nms && im->opset < 10))
		return node_err(im, "unsupported operator in opset %d", im->opset);
	for (size_t i = 0; i < n->n_attribute; i++) {
		const char *an = n->attribute[i]->name ? n->attribute[i]->name : "";
		int ok = 0;
		for (size_t r = 0; r < sizeof attrs / sizeof attrs[0]; r++)
			if (!strcmp(attrs[r][0], type))
				for (int j = 1; j < 3 && attrs[r][j]; j++)
					ok |= !strcmp(attrs[r][j], an);
		if (!ok)
			return node_err(im, "attribute '%s' is not supported", an);
	}
	if ((int)n->n_input < min_in || (int)n->n_input > max_in)
		return node_err(im, "%zu inputs, expected %d to %d", n->n_input, min_in, max_in);
	if (node_outputs(im, max_out) < 0)
		return -1;
	int in[5];
	for (size_t i = 0; i < n->n_input; i++) {
		if (resolve_input(im, n->input[i], &in[i]) < 0)
			return -1;
		if (in[i] < 0 && (int)i < min_in)
			return node_err(im, "input %zu is required", i);
		if (in[i] < 0)
			continue;
		if (!known_tensor(im, in[i]))
			return node_err(im, "input %zu has no known shape", i);
		if (!im->g->tensors[in[i]].data)
			return node_err(im, "input '%s' must be a constant: the output shape depends on "
					"its values, and tpuc has static shapes", n->input[i]);
	}
	if (!strcmp(type, "NonZero"))
		return nonzero(im, &im->g->tensors[in[0]]);
	if (!strcmp(type, "Compress"))
		return compress(im, &im->g->tensors[in[0]], &im->g->tensors[in[1]]);
	if (!strcmp(type, "Unique"))
		return unique(im, &im->g->tensors[in[0]]);
	return nms(im, in, (int)n->n_input);
}
