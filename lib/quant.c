/* quant.c - int8 scales, quantisation, multiplier/shift selection and the
 * per-channel parameter access shared by the integer kernels
 * (formats/tpuc-quant.5).
 */
#include "quant.h"

#include <math.h>
#include <string.h>

#include "base.h"
#include "ops/opcommon.h"

float quant_act_scale(double threshold)
{
	if (!(threshold >= QUANT_MIN_THRESHOLD))
		threshold = QUANT_MIN_THRESHOLD;
	return (float)(threshold / QUANT_QMAX);
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

int quant_run_f32(struct kern *k)
{
	const struct op_def *d = op_defs[k->op->type];
	if (!d->run_f32)
		return op_error(k->op, "no float kernel");
	return d->run_f32(k);
}
