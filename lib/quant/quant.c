/* quant.c - int8 scales, quantisation, multiplier/shift selection and the
 * per-channel parameter access shared by the integer kernels
 * (formats/tpuc-quant.5).
 */
#include "quant/quant.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ir/base.h"
#include "ir/convert.h"
#include "ir/op.h"

float quant_act_scale(double threshold)
{
	if (!(threshold >= QUANT_MIN_THRESHOLD))
		threshold = QUANT_MIN_THRESHOLD;
	return (float)(threshold / QUANT_QMAX);
}

enum ir_dtype quant_act_dtype(double min)
{
	return min >= 0 ? DT_U8 : DT_I8;
}

float quant_act_scale_dt(double threshold, enum ir_dtype dt)
{
	if (!(threshold >= QUANT_MIN_THRESHOLD))
		threshold = QUANT_MIN_THRESHOLD;
	return (float)(threshold / (dt == DT_U8 ? QUANT_UMAX : QUANT_QMAX));
}

float quant_weight_scale(const float *w, int64_t n)
{
	float m = 0;
	for (int64_t i = 0; i < n; i++) {
		float a = fabsf(w[i]);
		if (a > m)
			m = a;
	}
	return m > 0 ? m / QUANT_QMAX : 1.0f / QUANT_QMAX;
}

int8_t quant_f32_to_i8_one(float x, float scale)
{
	double v = round((double)x / (double)scale);
	if (v != v)
		return 0;
	return (int8_t)(v < QUANT_QMIN ? QUANT_QMIN : v > QUANT_QMAX ? QUANT_QMAX : v);
}

void quant_f32_to_i8(const float *x, int8_t *q, int64_t n, float scale)
{
	for (int64_t i = 0; i < n; i++)
		q[i] = quant_f32_to_i8_one(x[i], scale);
}

void quant_i8_to_f32(const int8_t *q, float *x, int64_t n, float scale)
{
	for (int64_t i = 0; i < n; i++)
		x[i] = scale * (float)q[i];
}

int quant_f32_to_q_one(float x, float scale, enum ir_dtype dt)
{
	int lo, hi;
	quant_range(dt, &lo, &hi);
	double v = round((double)x / (double)scale);
	if (v != v)
		return 0;
	return v < lo ? lo : v > hi ? hi : (int)v;
}

int quant_f32_to_qz_one(float x, float scale, int zp, enum ir_dtype dt)
{
	int lo, hi;
	quant_range(dt, &lo, &hi);
	double v = round((double)x / (double)scale);
	if (v != v)
		return zp;
	v += zp;
	return v < lo ? lo : v > hi ? hi : (int)v;
}

/* quant_f32_to_q into TY, in a form the compiler vectorises (no libm
 * call, no conversion that may trap, quiet comparisons): v clamped to
 * +-1024 (which saturates any dtype either way), rounded to nearest even
 * by adding 1.5 * 2^52, whose low bits are then the integer; ties moved
 * away from zero.  The same integer as round(v) for every v; NaN gives
 * the zero point.  Blocks of int32 first, then narrowed: the compiler
 * keeps full-width vectors of doubles that way. */
#define F32_TO_Q(NAME, TY)                                                                      \
__attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))                            \
static void NAME(const float *x, TY *q, int64_t n, double scale, int zp, int lo, int hi)        \
{                                                                                               \
	int32_t t[256];                                                                         \
	for (int64_t i0 = 0; i0 < n; i0 += 256) {                                               \
		int m = n - i0 < 256 ? (int)(n - i0) : 256;                                     \
		const float *xb = x + i0;                                                       \
		_Pragma("omp simd")                                                             \
		for (int i = 0; i < m; i++) {                                                   \
			double v = (double)xb[i] / scale;                                       \
			double c = __builtin_isless(v, -1024.0) ? -1024.0 : v;                  \
			c = __builtin_isgreater(c, 1024.0) ? 1024.0 : c;                        \
			double u = c + 0x1.8p52, d = c - (u - 0x1.8p52);                        \
			int64_t bits;                                                           \
			memcpy(&bits, &u, sizeof bits);                                         \
			int32_t r = (int32_t)bits;                                              \
			r += (d == 0.5 && __builtin_isgreater(c, 0.0)) -                        \
			     (d == -0.5 && __builtin_isless(c, 0.0));                           \
			r = v == v ? r + zp : zp;                                               \
			r = r < lo ? lo : r;                                                    \
			t[i] = r > hi ? hi : r;                                                 \
		}                                                                               \
		_Pragma("omp simd")                                                             \
		for (int i = 0; i < m; i++)                                                     \
			q[i0 + i] = (TY)t[i];                                                   \
	}                                                                                       \
}
F32_TO_Q(f32_to_i8, int8_t)
F32_TO_Q(f32_to_u8, uint8_t)

void quant_f32_to_q(const float *x, void *q, int64_t n, float scale, int zp, enum ir_dtype dt)
{
	int lo, hi;
	quant_range(dt, &lo, &hi);
	if (dt == DT_U8)
		f32_to_u8(x, q, n, scale, zp, lo, hi);
	else
		f32_to_i8(x, q, n, scale, zp, lo, hi);
}

void quant_q_to_f32(const void *q, enum ir_dtype dt, float *x, int64_t n, float scale, int zp)
{
	const uint8_t *u = q;
	const int8_t *s = q;
	if (dt == DT_U8) {
		#pragma omp simd
		for (int64_t i = 0; i < n; i++)
			x[i] = scale * (float)(u[i] - zp);
	} else {
		#pragma omp simd
		for (int64_t i = 0; i < n; i++)
			x[i] = scale * (float)(s[i] - zp);
	}
}

void quant_act_asym(double lo, double hi, float *scale, int *zp)
{
	if (!(lo <= 0))
		lo = 0;
	if (!(hi >= 0))
		hi = 0;
	double range = hi - lo;
	if (!(range >= QUANT_MIN_THRESHOLD))
		range = QUANT_MIN_THRESHOLD;
	*scale = (float)(range / QUANT_UMAX);
	double z = round(-lo / (double)*scale);
	*zp = z < 0 ? 0 : z > QUANT_UMAX ? QUANT_UMAX : (int)z;
}

/* The shift for REAL: the largest <= 62 with round(REAL * 2^shift) < 2^31. */
static int pick_shift(double real, int32_t *shift)
{
	if (!isfinite(real) || real < 0 || real >= 2147483647.5)
		return err_set("requantisation multiplier %g out of range", real);
	if (real == 0) {
		*shift = 0;
		return 0;
	}
	int e;
	frexp(real, &e);            /* real = f * 2^e, f in [0.5, 1) */
	int s = 31 - e;             /* real * 2^s in [2^30, 2^31) */
	if (s > QUANT_MAX_SHIFT)
		s = QUANT_MAX_SHIFT;
	if (s < 0)
		s = 0;
	if (round(ldexp(real, s)) >= 2147483648.0)   /* rounding reached 2^31 */
		s--;
	*shift = s;
	return 0;
}

int quant_multiplier(double real, int32_t *mult, int32_t *shift)
{
	if (pick_shift(real, shift) < 0)
		return -1;
	*mult = (int32_t)round(ldexp(real, *shift));
	return 0;
}

int quant_multipliers_common(const double *real, int n, int32_t *mult, int32_t *shift)
{
	double big = 0;
	for (int i = 0; i < n; i++) {
		if (!isfinite(real[i]) || real[i] < 0)
			return err_set("requantisation multiplier %g out of range", real[i]);
		if (real[i] > big)
			big = real[i];
	}
	if (pick_shift(big, shift) < 0)
		return -1;
	for (int i = 0; i < n; i++)
		mult[i] = (int32_t)round(ldexp(real[i], *shift));
	return 0;
}

int32_t quant_bias(double b, double s_in, double s_w)
{
	double v = round(b / (s_in * s_w));
	if (v != v)
		return 0;
	return v >= 2147483647.0 ? INT32_MAX : v <= -2147483648.0 ? INT32_MIN : (int32_t)v;
}

void quant_relu_bounds(const struct ir_op *op, float out_scale, int *lo, int *hi)
{
	*lo = QUANT_QMIN;
	*hi = QUANT_QMAX;
	if (!op_int(op, "do_relu", 0))
		return;
	*lo = 0;
	double limit = op_float(op, "relu_limit", 0);
	if (limit > 0)
		*hi = quant_f32_to_i8_one((float)limit, out_scale);
}

void quant_out_bounds(const struct ir_op *op, enum ir_dtype dt, float out_scale, int zp,
		      int *lo, int *hi)
{
	quant_range(dt, lo, hi);
	if (!op_int(op, "do_relu", 0))
		return;
	*lo = zp < *lo ? *lo : zp > *hi ? *hi : zp;
	double limit = op_float(op, "relu_limit", 0);
	if (limit > 0)
		*hi = quant_f32_to_qz_one((float)limit, out_scale, zp, dt);
}

int quant_check_channel_params(const struct kern *k, int first, int64_t channels)
{
	if (first + 2 < k->n_in && k->in[first + 1].data && k->in[first + 2].data) {
		for (int i = 0; i < 3; i++) {
			const struct view *v = &k->in[first + i];
			if (!v->data || v->dtype != DT_I32 || view_numel(v) != channels)
				return op_error(k->op, "int8 parameter %d must be i32 [%lld]",
						first + i, (long long)channels);
		}
		return 0;
	}
	const struct view *v = first < k->n_in ? &k->in[first] : NULL;
	if (!v || !v->data || v->dtype != DT_I32 || v->rank != 2 || v->shape[0] != channels ||
	    v->shape[1] != 3)
		return op_error(k->op, "int8 parameters missing: need bias, multiplier and shift "
				"(i32 [%lld] each) or a coefficient tensor i32 [%lld,3]",
				(long long)channels, (long long)channels);
	return 0;
}

int quant_channel_params(const struct kern *k, int first, int c,
			 int32_t *bias, int32_t *mult, int32_t *shift)
{
	if (first + 2 < k->n_in && k->in[first + 1].data && k->in[first + 2].data) {
		if (c < 0 || c >= view_numel(&k->in[first]))
			return op_error(k->op, "channel %d out of range", c);
		*bias = k->in[first].data ? ((const int32_t *)k->in[first].data)[c] : 0;
		*mult = ((const int32_t *)k->in[first + 1].data)[c];
		*shift = ((const int32_t *)k->in[first + 2].data)[c];
		return 0;
	}
	const struct view *v = &k->in[first];
	if (!v->data || v->rank != 2 || v->shape[1] != 3 || c < 0 || c >= v->shape[0])
		return op_error(k->op, "no int8 parameters for channel %d", c);
	const int32_t *p = (const int32_t *)v->data + 3 * (int64_t)c;
	*bias = p[0];
	*mult = p[1];
	*shift = p[2];
	return 0;
}

int quant_chan_init(struct quant_chan *q, const struct kern *k, int first, int64_t np, int64_t n)
{
	q->n = n;
	q->bias = xmalloc(sizeof(int64_t) * (size_t)(4 * n + 1));
	q->round = q->bias + n;
	q->shift = q->round + n;
	q->mult = (int32_t *)(q->shift + n);
	for (int64_t c = 0; c < n; c++) {
		int32_t b, m, s;
		if ((c == 0 || np != 1) &&
		    quant_channel_params(k, first, np == 1 ? 0 : (int)c, &b, &m, &s) < 0) {
			quant_chan_free(q);
			return -1;
		}
		if (np == 1 && c > 0) {
			q->bias[c] = q->bias[0];
			q->mult[c] = q->mult[0];
			q->round[c] = q->round[0];
			q->shift[c] = q->shift[0];
			continue;
		}
		q->bias[c] = b;
		q->mult[c] = m;
		q->round[c] = s > 0 ? (int64_t)1 << (s - 1) : 0;
		q->shift[c] = s > 0 ? s : 0;
	}
	return 0;
}

void quant_chan_free(struct quant_chan *q)
{
	free(q->bias);
	memset(q, 0, sizeof *q);
}

/* One row of quant_requant_rows into TY. */
#define REQUANT_ROW(NAME, TY)                                                                   \
__attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))                            \
static void NAME(const int32_t *a, const struct quant_chan *q, int zp, int lo, int hi, TY *y)   \
{                                                                                               \
	const int64_t *bias = q->bias, *rnd = q->round, *sh = q->shift;                         \
	const int32_t *mult = q->mult;                                                          \
	_Pragma("omp simd")                                                                     \
	for (int64_t c = 0; c < q->n; c++) {                                                    \
		int64_t v = (int64_t)a[c] + bias[c];                                            \
		int32_t s = (int32_t)(v < INT32_MIN ? INT32_MIN : v > INT32_MAX ? INT32_MAX : v); \
		v = (((int64_t)s * mult[c] + rnd[c]) >> sh[c]) + zp;                            \
		y[c] = (TY)(v < lo ? lo : v > hi ? hi : v);                                     \
	}                                                                                       \
}
REQUANT_ROW(requant_row_i8, int8_t)
REQUANT_ROW(requant_row_u8, uint8_t)

void quant_requant_rows(const int32_t *acc, int64_t rows, const struct quant_chan *q, int zp,
			int lo, int hi, void *y, enum ir_dtype ydt)
{
	for (int64_t r = 0; r < rows; r++) {
		if (ydt == DT_U8)
			requant_row_u8(acc + r * q->n, q, zp, lo, hi, (uint8_t *)y + r * q->n);
		else
			requant_row_i8(acc + r * q->n, q, zp, lo, hi, (int8_t *)y + r * q->n);
	}
}

int quant_run_unary(struct kern *k)
{
	const struct view *x = &k->in[0], *y = &k->out[0];
	if (!quant_is_q(y->dtype))   /* float, or bool (Not, IsNaN) */
		return quant_run_f32(k);
	int64_t lut[256];
	if (!quant_is_q(x->dtype) || !quant_is_q(y->dtype))
		return op_error(k->op, "int8 kernel needs i8 or u8 input and output");
	if (op_ints(k->op, "lut", lut, 256) != 256)
		return op_error(k->op, "int8 attribute lut must hold 256 codes");
	int lo, hi;
	quant_range(y->dtype, &lo, &hi);
	for (int i = 0; i < 256; i++)
		if (lut[i] < lo || lut[i] > hi)
			return op_error(k->op, "lut code %lld out of %s range", (long long)lut[i],
					dtype_name(y->dtype));
	const uint8_t *xb = x->data;
	int64_t n = view_numel(y);
	for (int64_t i = 0; i < n; i++)
		quant_put(y->data, y->dtype, i, (int)lut[xb[i]]);
	return 0;
}

int quant_run_f32(struct kern *k)
{
	const struct op_def *d = op_defs[k->op->type];
	if (!d->run_f32)
		return op_error(k->op, "no float kernel");
	int half = 0;
	for (int i = 0; i < k->n_in; i++)
		half |= k->in[i].data && (k->in[i].dtype == DT_BF16 || k->in[i].dtype == DT_F16);
	for (int i = 0; i < k->n_out; i++)
		half |= k->out[i].dtype == DT_BF16 || k->out[i].dtype == DT_F16;
	if (!half)
		return d->run_f32(k);
	struct kern w = *k;
	w.in = xcalloc((size_t)k->n_in + 1, sizeof *w.in);
	w.out = xcalloc((size_t)k->n_out + 1, sizeof *w.out);
	memcpy(w.in, k->in, sizeof *w.in * (size_t)k->n_in);
	memcpy(w.out, k->out, sizeof *w.out * (size_t)k->n_out);
	void **tmp = xcalloc((size_t)(k->n_in + k->n_out) + 1, sizeof *tmp);
	for (int i = 0; i < k->n_in; i++) {
		struct view *v = &w.in[i];
		if (!v->data || (v->dtype != DT_BF16 && v->dtype != DT_F16))
			continue;
		int64_t n = view_numel(v);
		tmp[i] = xmalloc(sizeof(float) * (size_t)(n + 1));
		dtype_convert(tmp[i], DT_F32, v->data, v->dtype, n);
		v->data = tmp[i];
		v->dtype = DT_F32;
	}
	for (int i = 0; i < k->n_out; i++) {
		struct view *v = &w.out[i];
		if (v->dtype != DT_BF16 && v->dtype != DT_F16)
			continue;
		tmp[k->n_in + i] = xcalloc((size_t)view_numel(v) + 1, sizeof(float));
		v->data = tmp[k->n_in + i];
		v->dtype = DT_F32;
	}
	int rc = d->run_f32(&w);
	for (int i = 0; i < k->n_out; i++)
		if (rc == 0 && tmp[k->n_in + i])
			dtype_convert(k->out[i].data, k->out[i].dtype, tmp[k->n_in + i], DT_F32,
				      view_numel(&k->out[i]));
	for (int i = 0; i < k->n_in + k->n_out; i++)
		free(tmp[i]);
	free(tmp);
	free(w.in);
	free(w.out);
	return rc;
}

enum ir_dtype quant_acc_dtype(const struct ir_graph *g, const struct ir_op *op, enum ir_dtype x)
{
	return g->dialect == DIALECT_TPU && quant_is_q(x) && op_int(op, "acc", 0) ? DT_I32 : x;
}
