/* anydtype.c - ir-run's kernels of the f32-only operators for the other
 * dtypes ONNX gives them (u8 Add, i8 Clip, f64 MatMul, u8 MaxPool ...):
 * element by element through dtype_get/dtype_set, floats in double and
 * integers in int64, as ONNX Runtime computes each dtype in itself.  Slow
 * and simple: they exist for exactness, not speed.  The chip has none of
 * these dtypes for these ops (top2tpu refuses them, lib/back/lower_dtype.c).
 */
#include "ops/anydtype.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ir/base.h"
#include "ir/convert.h"
#include "ops/eltwise.h"
#include "ops/kern_util.h"

int kern_all_f32(const struct kern *k)
{
	for (int i = 0; i < k->n_in; i++)
		if (k->in[i].data && k->in[i].dtype != DT_F32)
			return 0;
	for (int i = 0; i < k->n_out; i++)
		if (k->out[i].dtype != DT_F32)
			return 0;
	return 1;
}

/* Accumulates in double for the float dtypes, in int64 (wrapping) for the
 * integer ones. */
struct acc {
	int fl;
	double d;
	int64_t i;
};

static void acc_zero(struct acc *a, enum ir_dtype dt)
{
	a->fl = dtype_is_float(dt);
	a->d = 0;
	a->i = 0;
}

static void acc_mac(struct acc *a, const struct view *x, int64_t i, const struct view *y, int64_t j)
{
	if (a->fl)
		a->d += dtype_get(x->data, x->dtype, i) * dtype_get(y->data, y->dtype, j);
	else
		a->i = (int64_t)((uint64_t)a->i + (uint64_t)dtype_get_int(x->data, x->dtype, i) *
					       (uint64_t)dtype_get_int(y->data, y->dtype, j));
}

static void acc_store(const struct acc *a, const struct view *y, int64_t o)
{
	if (a->fl)
		dtype_set(y->data, y->dtype, o, a->d);
	else
		dtype_set_int(y->data, y->dtype, o, a->i);
}

int matmul_run_any(struct kern *k)
{
	const struct view *a = &k->in[0], *b = &k->in[1], *y = &k->out[0];
	/* numpy's promotion: A [k] is [1, k], B [k] is [k, 1] */
	int64_t ash[IR_MAX_RANK + 1], bsh[IR_MAX_RANK + 1];
	int ra = a->rank, rb = b->rank;
	memcpy(ash, a->shape, sizeof(int64_t) * (size_t)ra);
	memcpy(bsh, b->shape, sizeof(int64_t) * (size_t)rb);
	if (ra == 1)
		ash[1] = ash[0], ash[0] = 1, ra = 2;
	if (rb == 1)
		bsh[1] = 1, rb = 2;
	int64_t m = ash[ra - 2], kk = ash[ra - 1], n = bsh[rb - 1];
	int r = (ra > rb ? ra : rb) - 2;   /* batch axes, aligned from the right */
	int64_t bat[IR_MAX_RANK], sa[IR_MAX_RANK], sb[IR_MAX_RANK], nb = 1;
	int64_t pa = m * kk, pb = kk * n;
	for (int d = r - 1; d >= 0; d--) {
		int da = d - (r - (ra - 2)), db = d - (r - (rb - 2));
		int64_t ea = da >= 0 ? ash[da] : 1, eb = db >= 0 ? bsh[db] : 1;
		bat[d] = ea > eb ? ea : eb;
		sa[d] = ea == 1 ? 0 : pa;
		sb[d] = eb == 1 ? 0 : pb;
		pa *= ea;
		pb *= eb;
		nb *= bat[d];
	}
	for (int64_t bi = 0; bi < nb; bi++) {
		int64_t oa = 0, ob = 0, t = bi;
		for (int d = r - 1; d >= 0; d--) {
			int64_t id = t % bat[d];
			t /= bat[d];
			oa += id * sa[d];
			ob += id * sb[d];
		}
		for (int64_t i = 0; i < m; i++)
			for (int64_t j = 0; j < n; j++) {
				struct acc s;
				acc_zero(&s, y->dtype);
				for (int64_t p = 0; p < kk; p++)
					acc_mac(&s, a, oa + i * kk + p, b, ob + p * n + j);
				acc_store(&s, y, (bi * m + i) * n + j);
			}
	}
	return 0;
}

int gemm_run_any(struct kern *k)
{
	const struct view *a = &k->in[0], *b = &k->in[1], *y = &k->out[0];
	const struct view *c = k->n_in > 2 && k->in[2].data ? &k->in[2] : NULL;
	int ta = (int)op_int(k->op, "transA", 0), tb = (int)op_int(k->op, "transB", 0);
	double alpha = op_float(k->op, "alpha", 1), beta = op_float(k->op, "beta", 1);
	int64_t m = y->shape[0], n = y->shape[1], kk = a->shape[ta ? 0 : 1], st[2] = { 0, 0 };
	if (c)
		kern_bcast_strides(c, 2, y->shape, st);
	int fl = dtype_is_float(y->dtype);
	for (int64_t i = 0; i < m; i++)
		for (int64_t j = 0; j < n; j++) {
			struct acc s;
			acc_zero(&s, y->dtype);
			for (int64_t p = 0; p < kk; p++)
				acc_mac(&s, a, ta ? p * m + i : i * kk + p, b, tb ? j * kk + p : p * n + j);
			int64_t o = i * n + j, co = i * st[0] + j * st[1];
			if (fl)
				dtype_set(y->data, y->dtype, o,
					  alpha * s.d + (c ? beta * dtype_get(c->data, c->dtype, co) : 0));
			else
				dtype_set_int(y->data, y->dtype, o,
					      (int64_t)(alpha * (double)s.i +
							(c ? beta * (double)dtype_get_int(c->data, c->dtype, co) : 0)));
		}
	return 0;
}

int clip_run_any(struct kern *k)
{
	const struct view *x = &k->in[0], *y = &k->out[0];
	int relu = k->op->type == OP_RELU;
	const struct ir_attr *mn = op_attr(k->op, "min"), *mx = op_attr(k->op, "max");
	double lo = relu ? 0 : op_float(k->op, "min", 0), hi = op_float(k->op, "max", 0);
	int has_lo = relu || mn, has_hi = !relu && mx;
	int64_t n = view_numel(y);
	for (int64_t i = 0; i < n; i++) {
		if (dtype_is_float(x->dtype)) {
			double v = dtype_get(x->data, x->dtype, i);
			if (has_lo && v < lo)
				v = lo;
			if (has_hi && v > hi)
				v = hi;
			dtype_set(y->data, y->dtype, i, v);
		} else {
			int64_t v = dtype_get_int(x->data, x->dtype, i);
			if (has_lo && (double)v < lo)
				v = (int64_t)ceil(lo);
			if (has_hi && (double)v > hi)
				v = (int64_t)floor(hi);
			dtype_set_int(y->data, y->dtype, i, v);
		}
	}
	return 0;
}

int pool_run_any(struct kern *k)
{
	const struct view *x = &k->in[0], *y = &k->out[0];
	struct spatial s;
	if (x->rank != 4 || spatial_get(k->g, k->op, &s) < 0)
		return op_error(k->op, "needs a 4-D input and its window");
	int mx = k->op->type == OP_MAXPOOL;
	int incl = (int)op_int(k->op, "count_include_pad", 0);
	int64_t h = x->shape[2], w = x->shape[3], oh = y->shape[2], ow = y->shape[3];
	int fl = dtype_is_float(x->dtype);
	for (int64_t p = 0; p < x->shape[0] * x->shape[1]; p++)
		for (int64_t i = 0; i < oh; i++)
			for (int64_t j = 0; j < ow; j++) {
				double best = -INFINITY, sum = 0;
				int64_t ibest = INT64_MIN, taps = 0, ptaps = 0;
				for (int a = 0; a < s.kh; a++)
					for (int b = 0; b < s.kw; b++) {
						int64_t r = i * s.sh - s.pt + (int64_t)a * s.dh;
						int64_t c = j * s.sw - s.pl + (int64_t)b * s.dw;
						if (r >= -s.pt && r < h + s.pb && c >= -s.pl && c < w + s.pr)
							ptaps++;
						if (r < 0 || r >= h || c < 0 || c >= w)
							continue;
						int64_t e = (p * h + r) * w + c;
						taps++;
						if (fl) {
							double v = dtype_get(x->data, x->dtype, e);
							sum += v;
							best = v > best || isnan(v) ? v : best;
						} else {
							int64_t v = dtype_get_int(x->data, x->dtype, e);
							ibest = v > ibest ? v : ibest;
						}
					}
				int64_t o = (p * oh + i) * ow + j;
				if (!mx)
					dtype_set(y->data, y->dtype, o, sum / (double)(incl ? ptaps : taps));
				else if (fl)
					dtype_set(y->data, y->dtype, o, best);
				else
					dtype_set_int(y->data, y->dtype, o, ibest);
			}
	return 0;
}
