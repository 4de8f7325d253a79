/* binary.c - elementwise Add and Mul with numpy broadcasting; Add may carry
 * a fused ReLU (do_relu, relu_limit).
 */
#include <stdlib.h>

#include "ops/anydtype.h"
#include "ops/eltwise.h"
#include "ops/kern_util.h"
#include "ir/op.h"
#include "back/lower.h"
#include "quant/quant.h"

static int binary_infer(struct ir_graph *g, struct ir_op *op)
{
	const struct ir_tensor *a = op_in(g, op, 0), *b = op_in(g, op, 1);
	int64_t shape[IR_MAX_RANK];
	int rank;
	if (broadcast_shape(a->rank, a->shape, b->rank, b->shape, &rank, shape) < 0)
		return op_error(op, "shapes of '%s' and '%s' do not broadcast", a->name, b->name);
	if (g->dialect == DIALECT_TOP && a->dtype != b->dtype)
		return op_error(op, "inputs differ in dtype (%s, %s)", dtype_name(a->dtype),
				dtype_name(b->dtype));
	op_set_out(g, op, 0, a->dtype, rank, shape);
	return 0;
}

static int64_t binary_macs(const struct ir_graph *g, const struct ir_op *op)
{
	return tensor_numel(&g->tensors[op->out[0]]);
}

/* Float reference with numpy broadcasting, then the fused activation. */
static int binary_f32(struct kern *k, int mul)
{
	if (!kern_all_f32(k))
		return eltwise_run_any(k);   /* u8 Add, i32 Mul ... */
	if (kern_need_f32(k) < 0)
		return -1;
	const struct view *a = &k->in[0], *b = &k->in[1], *y = &k->out[0];
	const float *ad = a->data, *bd = b->data;
	float *yd = y->data, lo, hi;
	int64_t n = view_numel(y);
	kern_act_bounds(k->op, &lo, &hi);
	if (n == 0)
		return 0;
	if (view_numel(a) == n && view_numel(b) == n) {
		#pragma omp simd
		for (int64_t i = 0; i < n; i++) {
			float v = mul ? ad[i] * bd[i] : ad[i] + bd[i];
			yd[i] = v < lo ? lo : v > hi ? hi : v;
		}
		return 0;
	}
	int64_t sa[IR_MAX_RANK], sb[IR_MAX_RANK], shape[IR_MAX_RANK];
	int r = kern_bcast_rows(a, b, y, shape, sa, sb);
	int64_t inner = shape[r - 1], ia = sa[r - 1], ib = sb[r - 1];
	int nt = kern_threads(k, n / inner, inner);

	#pragma omp parallel for num_threads(nt) schedule(static)
	for (int64_t o = 0; o < n / inner; o++) {
		int64_t oa, ob;
		kern_bcast_row(r, shape, sa, sb, o, &oa, &ob);
		const float *pa = ad + oa, *pb = bd + ob;
		float *yp = yd + o * inner;
		if (ia == 1 && ib <= 1) {   /* the common rows, vectorised */
			#pragma omp simd
			for (int64_t i = 0; i < inner; i++) {
				float v = mul ? pa[i] * pb[i * ib] : pa[i] + pb[i * ib];
				yp[i] = v < lo ? lo : v > hi ? hi : v;
			}
			continue;
		}
		for (int64_t i = 0; i < inner; i++) {
			float v = mul ? pa[i * ia] * pb[i * ib] : pa[i * ia] + pb[i * ib];
			yp[i] = v < lo ? lo : v > hi ? hi : v;
		}
	}
	return 0;
}

static int add_f32(struct kern *k)
{
	return binary_f32(k, 0);
}

static int mul_f32(struct kern *k)
{
	return binary_f32(k, 1);
}

/* Int8 lowering.  Add rescales each input to the output scale with one
 * shared shift: y = round_shift(qa * ma + qb * mb, rshift) (attributes
 * multipliers, rshift); Mul requantises the product:
 * y = round_shift(qa * qb * multiplier, rshift).  Both then clamp to the
 * fused activation's bounds (formats/tpuc-quant.5). */
static int binary_lower(struct lower_ctx *lc, const struct ir_op *op, int mul)
{
	if (lc->mode != MODE_INT8)
		return lower_default(lc, op);
	int in[2];
	float s_out;
	enum ir_dtype dt;
	int zp;
	for (int i = 0; i < 2; i++)
		if ((in[i] = lower_act_input(lc, op, op->in[i])) < 0)
			return -1;
	if (lower_table_act(lc, op, op->out[0], &dt, &s_out, &zp) < 0)
		return -1;
	double sa = lc->tpu->tensors[in[0]].scale, sb = lc->tpu->tensors[in[1]].scale;
	double real[2] = { sa / s_out, sb / s_out };
	int32_t m[2], shift;
	int rc = mul ? quant_multiplier(sa * sb / s_out, m, &shift)
		     : quant_multipliers_common(real, 2, m, &shift);
	if (rc < 0) {
		char why[256];
		snprintf(why, sizeof why, "%s", err_msg());
		return op_error(op, "%s", why);
	}
	int y = lower_output(lc, op->out[0], dt, s_out, zp);
	int k = lower_emit(lc, op, 2, in, 1, &y);
	struct ir_op *o = &lc->tpu->ops[k];
	if (mul) {
		op_set_int(o, "multiplier", m[0]);
	} else {
		int64_t mv[2] = { m[0], m[1] };
		op_set_ints(o, "multipliers", 2, mv);
	}
	op_set_int(o, "rshift", shift);
	return 0;
}

static int add_lower(struct lower_ctx *lc, const struct ir_op *op)
{
	/* one output scale for inputs far apart (an additive -1e4 mask on
	 * attention scores) would wipe out the smaller one */
	if (lc->mode == MODE_INT8 && lower_ranges_apart(lc, op))
		return lower_fallback(lc, op);
	return binary_lower(lc, op, 0);
}

static int mul_lower(struct lower_ctx *lc, const struct ir_op *op)
{
	if (lc->mode == MODE_INT8 && lower_nonfinite_weight(lc, op))
		return lower_fallback(lc, op);
	return binary_lower(lc, op, 1);
}

/* binary_tpu's arithmetic on dense inputs of the output's shape (i8 or u8
 * each, types TA, TB, TY), in a form the compiler vectorises: the same
 * integers, element by element. */
#define BINARY_DENSE(NAME, TA, TB, TY)                                                          \
__attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))                       \
static void NAME(const void *av, const void *bv, void *yv, int64_t n, int mul, int64_t za,      \
		 int64_t zb, int64_t ma, int64_t mb, int shift, int zy, int lo, int hi)           \
{                                                                                               \
	const TA *a = av;                                                                       \
	const TB *b = bv;                                                                       \
	TY *y = yv;                                                                             \
	int64_t round = shift > 0 ? (int64_t)1 << (shift - 1) : 0;                              \
	if (mul) {                                                                              \
		_Pragma("omp simd")                                                             \
		for (int64_t i = 0; i < n; i++) {                                               \
			int64_t v = ((((int64_t)a[i] - za) * ((int64_t)b[i] - zb) * ma + round)  \
				     >> shift) + zy;                                            \
			y[i] = (TY)(v < lo ? lo : v > hi ? hi : v);                             \
		}                                                                               \
	} else {                                                                                \
		_Pragma("omp simd")                                                             \
		for (int64_t i = 0; i < n; i++) {                                               \
			int64_t v = (((((int64_t)a[i] - za) * ma + ((int64_t)b[i] - zb) * mb)    \
				      + round) >> shift) + zy;                                  \
			y[i] = (TY)(v < lo ? lo : v > hi ? hi : v);                             \
		}                                                                               \
	}                                                                                       \
}
BINARY_DENSE(dense_sss, int8_t, int8_t, int8_t)
BINARY_DENSE(dense_ssu, int8_t, int8_t, uint8_t)
BINARY_DENSE(dense_sus, int8_t, uint8_t, int8_t)
BINARY_DENSE(dense_suu, int8_t, uint8_t, uint8_t)
BINARY_DENSE(dense_uss, uint8_t, int8_t, int8_t)
BINARY_DENSE(dense_usu, uint8_t, int8_t, uint8_t)
BINARY_DENSE(dense_uus, uint8_t, uint8_t, int8_t)
BINARY_DENSE(dense_uuu, uint8_t, uint8_t, uint8_t)

typedef void binary_dense_fn(const void *, const void *, void *, int64_t, int, int64_t, int64_t,
			     int64_t, int64_t, int, int, int, int);
/* Indexed by 4 * (A u8) + 2 * (B u8) + (Y u8). */
static binary_dense_fn *const binary_dense[8] = {
	dense_sss, dense_ssu, dense_sus, dense_suu, dense_uss, dense_usu, dense_uus, dense_uuu,
};

/* The int8 kernel for both, with numpy broadcasting over the views; each
 * input's zero point is subtracted before the products and the output's
 * added after the rounding shift. */
static int binary_tpu(struct kern *k, int mul)
{
	if (quant_is_float(k->out[0].dtype))
		return quant_run_f32(k);
	const struct view *a = &k->in[0], *b = &k->in[1], *y = &k->out[0];
	if (!quant_is_q(a->dtype) || !quant_is_q(b->dtype) || !quant_is_q(y->dtype))
		return op_error(k->op, "int8 kernel needs i8 or u8 inputs and output");
	int64_t ma = 0, mb = 0, mv[2];
	if (mul) {
		ma = op_int(k->op, "multiplier", -1);
	} else if (op_ints(k->op, "multipliers", mv, 2) == 2) {
		ma = mv[0];
		mb = mv[1];
	} else {
		ma = -1;
	}
	int shift = (int)op_int(k->op, "rshift", -1);
	if (ma < 0 || mb < 0 || ma > INT32_MAX || mb > INT32_MAX || shift < 0 ||
	    shift > QUANT_MAX_SHIFT)
		return op_error(k->op, "int8 attributes %s and rshift missing or out of range",
				mul ? "multiplier" : "multipliers");
	int lo, hi;
	quant_out_bounds(k->op, y->dtype, y->scale, y->zero_point, &lo, &hi);
	int64_t za = a->zero_point, zb = b->zero_point;
	int zy = y->zero_point;
	int64_t n = view_numel(y);
	if (n == 0)
		return 0;
	if (view_numel(a) == n && view_numel(b) == n) {
		binary_dense[4 * (a->dtype == DT_U8) + 2 * (b->dtype == DT_U8) + (y->dtype == DT_U8)](
			a->data, b->data, y->data, n, mul, za, zb, ma, mb, shift, zy, lo, hi);
		return 0;
	}
	/* broadcast: row by row (kern_bcast_rows), each operand's row read
	 * in place when dense, else gathered, then the dense kernel */
	int64_t sa[IR_MAX_RANK], sb[IR_MAX_RANK], shape[IR_MAX_RANK];
	int r = kern_bcast_rows(a, b, y, shape, sa, sb);
	int64_t inner = shape[r - 1];
	uint8_t *ra = xmalloc((size_t)(2 * inner) + 1), *rb = ra + inner;
	binary_dense_fn *fn = binary_dense[4 * (a->dtype == DT_U8) + 2 * (b->dtype == DT_U8) +
					   (y->dtype == DT_U8)];
	for (int64_t o = 0; o < n / inner; o++) {
		int64_t oa, ob;
		kern_bcast_row(r, shape, sa, sb, o, &oa, &ob);
		const uint8_t *pa = (const uint8_t *)a->data + oa, *pb = (const uint8_t *)b->data + ob;
		if (sa[r - 1] != 1) {
			for (int64_t i = 0; i < inner; i++)
				ra[i] = pa[i * sa[r - 1]];
			pa = ra;
		}
		if (sb[r - 1] != 1) {
			for (int64_t i = 0; i < inner; i++)
				rb[i] = pb[i * sb[r - 1]];
			pb = rb;
		}
		fn(pa, pb, (uint8_t *)y->data + o * inner, inner, mul, za, zb, ma, mb, shift, zy, lo, hi);
	}
	free(ra);
	return 0;
}

/* Two i32 partial sums of a split reduction (lib/back/lower_kin.c), of
 * the same shape: their exact sum, saturated. */
static int add_i32(struct kern *k)
{
	const struct view *a = &k->in[0], *b = &k->in[1], *y = &k->out[0];
	int64_t n = view_numel(y);
	if (a->dtype != DT_I32 || b->dtype != DT_I32 || view_numel(a) != n || view_numel(b) != n)
		return op_error(k->op, "int32 kernel needs two i32 inputs of the output's shape");
	const int32_t *ad = a->data, *bd = b->data;
	int32_t *yd = y->data;
	for (int64_t i = 0; i < n; i++)
		yd[i] = quant_add_sat32(ad[i], bd[i]);
	return 0;
}

static int add_tpu(struct kern *k)
{
	if (k->out[0].dtype == DT_I32)
		return add_i32(k);
	return binary_tpu(k, 0);
}

static int mul_tpu(struct kern *k)
{
	return binary_tpu(k, 1);
}

const struct op_def op_def_ADD = {
	.infer = binary_infer, .run_f32 = add_f32, .run_const = eltwise_run_any,
	.lower = add_lower, .run_tpu = add_tpu, .macs = binary_macs, .slice_h = slice_h_same,
};

const struct op_def op_def_MUL = {
	.infer = binary_infer, .run_f32 = mul_f32, .run_const = eltwise_run_any,
	.lower = mul_lower, .run_tpu = mul_tpu, .macs = binary_macs, .slice_h = slice_h_same,
};
