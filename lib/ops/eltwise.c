/* eltwise.c - broadcasting elementwise operators of two or more inputs:
 * arithmetic (Sub, Div, Pow, Mod with attribute fmod), the variadic Max,
 * Min, Sum and Mean, comparisons (Equal, Greater, Less, GreaterOrEqual,
 * LessOrEqual, giving bool), logic (And, Or, Xor on bool), BitShift
 * (attribute direction), PRelu (slope broadcast to X) and Where.  f32 has a
 * fast path; other dtypes compute in double or int64 (lib/ops/eltwise.h).
 */
#include <limits.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>

#include "ir/convert.h"
#include "ops/eltwise.h"
#include "ops/kern_util.h"
#include "ir/op.h"
#include "quant/quant.h"
#include "ops/xformer_i8.h"

static int is_compare(enum op_type t)
{
	return t == OP_EQUAL || t == OP_GREATER || t == OP_LESS || t == OP_GREATEROREQUAL ||
	       t == OP_LESSOREQUAL;
}

static int is_logic(enum op_type t)
{
	return t == OP_AND || t == OP_OR || t == OP_XOR;
}

static int eltwise_infer(struct ir_graph *g, struct ir_op *op)
{
	int rank = 0;
	int64_t shape[IR_MAX_RANK];
	const struct ir_tensor *x = op_in(g, op, op->type == OP_WHERE ? 1 : 0);
	for (int i = 0; i < op->n_in; i++) {
		const struct ir_tensor *t = op_in(g, op, i);
		if (!t)
			return op_error(op, "input %d is absent", i);
		if (broadcast_shape(rank, shape, t->rank, t->shape, &rank, shape) < 0)
			return op_error(op, "shape of '%s' does not broadcast", t->name);
		if (op->type == OP_WHERE) {
			if (i == 0 && t->dtype != DT_BOOL)
				return op_error(op, "condition must be bool");
			if (i > 0 && t->dtype != x->dtype)
				return op_error(op, "X and Y differ in dtype");
		} else if (op->type != OP_POW && t->dtype != x->dtype) {
			return op_error(op, "inputs differ in dtype (%s, %s)", dtype_name(x->dtype),
					dtype_name(t->dtype));
		}
	}
	if (is_logic(op->type) && x->dtype != DT_BOOL)
		return op_error(op, "inputs must be bool");
	if (op->type == OP_BITSHIFT && x->dtype != DT_U8 && x->dtype != DT_U16 &&
	    x->dtype != DT_U32 && x->dtype != DT_U64)
		return op_error(op, "dtype %s is not supported (unsigned integers only)",
				dtype_name(x->dtype));
	if (op->type == OP_PRELU) {
		const struct ir_tensor *s = op_in(g, op, 1);
		if (rank != x->rank || memcmp(shape, x->shape, sizeof(int64_t) * (size_t)rank))
			return op_error(op, "slope '%s' does not broadcast to X", s->name);
	}
	enum ir_dtype out = is_compare(op->type) ? DT_BOOL : x->dtype;
	op_set_out(g, op, 0, out, rank, shape);
	return 0;
}

/* ---- generic path: any dtype, element by element ---- */

static double fmod_py(double a, double b)
{
	double r = fmod(a, b);
	return r != 0 && (r < 0) != (b < 0) ? r + b : r;
}

/* The ops written the same in the float and the integer domain (v the N
 * operand values, r the first of them, t the op): PRelu, the comparisons,
 * Sum and Mean. */
#define SAME_IN_BOTH_DOMAINS                                                  \
	case OP_PRELU: return v[0] < 0 ? v[0] * v[1] : v[0];                  \
	case OP_EQUAL: return v[0] == v[1];                                   \
	case OP_GREATER: return v[0] > v[1];                                  \
	case OP_LESS: return v[0] < v[1];                                     \
	case OP_GREATEROREQUAL: return v[0] >= v[1];                          \
	case OP_LESSOREQUAL: return v[0] <= v[1];                             \
	case OP_SUM: case OP_MEAN:                                            \
		for (int i = 1; i < n; i++)                                   \
			r += v[i];                                            \
		return t == OP_MEAN ? r / n : r;

/* One result in the float domain from n operand values. */
static double comb_d(enum op_type t, const double *v, int n, int fmod_c)
{
	double r = v[0];
	switch (t) {
	case OP_ADD: return v[0] + v[1];
	case OP_SUB: return v[0] - v[1];
	case OP_MUL: return v[0] * v[1];
	case OP_DIV: return v[0] / v[1];
	case OP_POW: return pow(v[0], v[1]);
	case OP_MOD: return fmod_c ? fmod(v[0], v[1]) : fmod_py(v[0], v[1]);
	SAME_IN_BOTH_DOMAINS
	case OP_MAX:
		for (int i = 1; i < n; i++)
			r = isnan(v[i]) || (!isnan(r) && v[i] > r) ? v[i] : r;
		return r;
	case OP_MIN:
		for (int i = 1; i < n; i++)
			r = isnan(v[i]) || (!isnan(r) && v[i] < r) ? v[i] : r;
		return r;
	default: return 0;
	}
}

static int64_t ipow(int64_t b, int64_t e)
{
	if (e < 0)
		return (int64_t)pow((double)b, (double)e);
	int64_t r = 1;
	while (e) {
		if (e & 1)
			r *= b;
		b *= b;
		e >>= 1;
	}
	return r;
}

/* One result in the integer domain of u64, whose values V holds as their
 * bits: the ops where the sign matters (others wrap the same either way). */
static int comb_u64(enum op_type t, const int64_t *v, int n, int64_t *res)
{
	const uint64_t a = (uint64_t)v[0], b = n > 1 ? (uint64_t)v[1] : 0;
	uint64_t r = a;
	switch (t) {
	case OP_DIV: *res = b ? (int64_t)(a / b) : 0; return 1;
	case OP_MOD: *res = b ? (int64_t)(a % b) : 0; return 1;
	case OP_EQUAL: *res = a == b; return 1;
	case OP_GREATER: *res = a > b; return 1;
	case OP_LESS: *res = a < b; return 1;
	case OP_GREATEROREQUAL: *res = a >= b; return 1;
	case OP_LESSOREQUAL: *res = a <= b; return 1;
	case OP_MAX: case OP_MIN:
		for (int i = 1; i < n; i++)
			if (t == OP_MAX ? (uint64_t)v[i] > r : (uint64_t)v[i] < r)
				r = (uint64_t)v[i];
		*res = (int64_t)r;
		return 1;
	case OP_MEAN: {
		unsigned __int128 s = 0;
		for (int i = 0; i < n; i++)
			s += (uint64_t)v[i];
		*res = (int64_t)(uint64_t)(s / (unsigned)n);
		return 1;
	}
	default: return 0;
	}
}

/* One result in the integer domain. */
static int64_t comb_i(enum op_type t, const int64_t *v, int n, int fmod_c, int left)
{
	int64_t r = v[0];
	switch (t) {
	case OP_ADD: return (int64_t)((uint64_t)v[0] + (uint64_t)v[1]);
	case OP_SUB: return (int64_t)((uint64_t)v[0] - (uint64_t)v[1]);
	case OP_MUL: return (int64_t)((uint64_t)v[0] * (uint64_t)v[1]);
	case OP_DIV: return v[1] ? v[0] / v[1] : 0;
	case OP_POW: return ipow(v[0], v[1]);
	case OP_MOD:
		if (!v[1])
			return 0;
		r = v[0] % v[1];
		return !fmod_c && r != 0 && (r < 0) != (v[1] < 0) ? r + v[1] : r;
	SAME_IN_BOTH_DOMAINS
	case OP_AND: return v[0] && v[1];
	case OP_OR: return v[0] || v[1];
	case OP_XOR: return !v[0] != !v[1];
	case OP_BITSHIFT:
		return v[1] >= 64 ? 0 : left ? (int64_t)((uint64_t)v[0] << v[1]) : (int64_t)((uint64_t)v[0] >> v[1]);
	case OP_MAX:
		for (int i = 1; i < n; i++)
			r = v[i] > r ? v[i] : r;
		return r;
	case OP_MIN:
		for (int i = 1; i < n; i++)
			r = v[i] < r ? v[i] : r;
		return r;
	default: return 0;
	}
}

int eltwise_run_any(struct kern *k)
{
	enum op_type t = k->op->type;
	const struct view *y = &k->out[0];
	int n = k->n_in, r = y->rank;
	if (n < 1)
		return op_error(k->op, "no inputs");
	switch (t) {
	case OP_ADD: case OP_SUB: case OP_MUL: case OP_DIV: case OP_POW: case OP_MOD:
	case OP_MAX: case OP_MIN: case OP_SUM: case OP_MEAN: case OP_EQUAL: case OP_GREATER:
	case OP_LESS: case OP_GREATEROREQUAL: case OP_LESSOREQUAL: case OP_AND: case OP_OR:
	case OP_XOR: case OP_BITSHIFT: case OP_PRELU: case OP_WHERE:
		break;
	default:
		return op_error(k->op, "not an elementwise operator");
	}
	int64_t (*st)[IR_MAX_RANK] = xcalloc((size_t)n, sizeof *st), idx[IR_MAX_RANK] = { 0 };
	int64_t *off = xcalloc((size_t)n, sizeof *off), *vi = xcalloc((size_t)n, sizeof *vi);
	double *vd = xcalloc((size_t)n, sizeof *vd);
	for (int i = 0; i < n; i++)
		kern_bcast_strides(&k->in[i], r, y->shape, st[i]);
	int64_t total = view_numel(y);
	int fmod_c = (int)op_int(k->op, "fmod", 0);
	int left = !strcmp(op_str(k->op, "direction", "LEFT"), "LEFT");
	int fdom = dtype_is_float(is_compare(t) ? k->in[0].dtype : y->dtype);
	int u64 = k->in[t == OP_WHERE ? 1 : 0].dtype == DT_U64;
	size_t es = dtype_size(y->dtype);
	for (int64_t e = 0; e < total; e++) {
		if (t == OP_WHERE) {
			int c = ((const uint8_t *)k->in[0].data)[off[0]] != 0;
			const struct view *s = &k->in[c ? 1 : 2];
			memcpy((char *)y->data + (size_t)e * es,
			       (const char *)s->data + (size_t)off[c ? 1 : 2] * es, es);
		} else if (fdom) {
			for (int i = 0; i < n; i++)
				vd[i] = dtype_get(k->in[i].data, k->in[i].dtype, off[i]);
			double res = comb_d(t, vd, n, fmod_c);
			if (dtype_is_float(y->dtype))
				dtype_set(y->data, y->dtype, e, res);
			else
				dtype_set_int(y->data, y->dtype, e, (int64_t)res);
		} else {
			for (int i = 0; i < n; i++)
				vi[i] = dtype_get_int(k->in[i].data, k->in[i].dtype, off[i]);
			int64_t res;
			if (!(u64 && comb_u64(t, vi, n, &res)))
				res = comb_i(t, vi, n, fmod_c, left);
			dtype_set_int(y->data, y->dtype, e, res);
		}
		/* Advance the odometer and every input's offset. */
		for (int d = r - 1; d >= 0; d--) {
			for (int i = 0; i < n; i++)
				off[i] += st[i][d];
			if (++idx[d] < y->shape[d])
				break;
			for (int i = 0; i < n; i++)
				off[i] -= st[i][d] * y->shape[d];
			idx[d] = 0;
		}
	}
	free(st);
	free(off);
	free(vi);
	free(vd);
	return 0;
}

/* ---- f32 fast path: two f32 inputs, f32 output ---- */

#define ROW_LOOP(EXPR)                                                        \
	for (int64_t i = 0; i < inner; i++) {                                 \
		float u = ap[i * sa_in], v = bp[i * sb_in];                   \
		(void)v;                                                      \
		yp[i] = (EXPR);                                               \
	}

static int eltwise_f32(struct kern *k)
{
	enum op_type t = k->op->type;
	const struct view *a = &k->in[0], *b = &k->in[1], *y = &k->out[0];
	if (k->n_in != 2 || a->dtype != DT_F32 || b->dtype != DT_F32 || y->dtype != DT_F32 ||
	    !(t == OP_SUB || t == OP_DIV || t == OP_POW || t == OP_MAX || t == OP_MIN ||
	      t == OP_SUM || t == OP_MEAN || t == OP_PRELU))
		return eltwise_run_any(k);
	int64_t n = view_numel(y);
	if (n == 0)
		return 0;
	int r = y->rank;
	int64_t sa[IR_MAX_RANK], sb[IR_MAX_RANK];
	int64_t inner = r ? y->shape[r - 1] : 1;
	kern_bcast_strides(a, r, y->shape, sa);
	kern_bcast_strides(b, r, y->shape, sb);
	int64_t sa_in = r ? sa[r - 1] : 0, sb_in = r ? sb[r - 1] : 0;
	/* Pow by a constant 2 (variance in LayerNorm) is a square. */
	int square = t == OP_POW && view_numel(b) == 1 && ((const float *)b->data)[0] == 2.0f;
	int nt = kern_threads(k, n / inner, inner);
	const float *ad = a->data, *bd = b->data;
	float *yd = y->data;

	#pragma omp parallel for num_threads(nt) schedule(static)
	for (int64_t o = 0; o < n / inner; o++) {
		int64_t oa, ob;
		kern_bcast_row(r, y->shape, sa, sb, o, &oa, &ob);
		const float *ap = ad + oa, *bp = bd + ob;
		float *yp = yd + o * inner;
		switch (t) {
		case OP_SUB: ROW_LOOP(u - v) break;
		case OP_DIV: ROW_LOOP(u / v) break;
		case OP_POW:
			if (square) {
				ROW_LOOP(u * u)
			} else {
				ROW_LOOP(powf(u, v))
			}
			break;
		case OP_MAX: ROW_LOOP(isnan(u) || isnan(v) ? u + v : u > v ? u : v) break;
		case OP_MIN: ROW_LOOP(isnan(u) || isnan(v) ? u + v : u < v ? u : v) break;
		case OP_SUM: ROW_LOOP(u + v) break;
		case OP_MEAN: ROW_LOOP((u + v) / 2) break;
		case OP_PRELU: ROW_LOOP(u < 0 ? u * v : u) break;
		default: break;
		}
	}
	return 0;
}

static int64_t eltwise_macs(const struct ir_graph *g, const struct ir_op *op)
{
	return tensor_numel(&g->tensors[op->out[0]]) * (op->n_in > 1 ? op->n_in - 1 : 1);
}

/* Div by a positive constant in int8 rescales: xformer_i8.c. */
const struct op_def op_def_DIV = {
	.infer = eltwise_infer, .run_f32 = eltwise_f32, .lower = div_lower,
	.run_tpu = div_tpu, .macs = eltwise_macs, .slice_h = slice_h_same,
};

#define ELTWISE_DEF(E) const struct op_def op_def_##E = { \
	.infer = eltwise_infer, .run_f32 = eltwise_f32, \
	.run_tpu = quant_run_f32, .macs = eltwise_macs, \
	.slice_h = slice_h_same, \
};

ELTWISE_DEF(SUB) ELTWISE_DEF(POW) ELTWISE_DEF(MOD) ELTWISE_DEF(MAX)
ELTWISE_DEF(MIN) ELTWISE_DEF(SUM) ELTWISE_DEF(MEAN) ELTWISE_DEF(EQUAL) ELTWISE_DEF(GREATER)
ELTWISE_DEF(LESS) ELTWISE_DEF(GREATEROREQUAL) ELTWISE_DEF(LESSOREQUAL) ELTWISE_DEF(AND)
ELTWISE_DEF(OR) ELTWISE_DEF(XOR) ELTWISE_DEF(BITSHIFT) ELTWISE_DEF(PRELU) ELTWISE_DEF(WHERE)
