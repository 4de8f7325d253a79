/* convert.c - dtype conversion by value, and f16 / bf16 rounding. */
#include <math.h>
#include <string.h>

#include "ir/convert.h"

float f16_to_float(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff, bits;
	if (e == 0x1f) {
		bits = sign | 0x7f800000 | (m << 13);
	} else if (e) {
		bits = sign | ((e + 112) << 23) | (m << 13);
	} else if (m) {
		float v = ldexpf((float)m, -24);
		return sign ? -v : v;
	} else {
		bits = sign;
	}
	float f;
	memcpy(&f, &bits, 4);
	return f;
}

uint16_t float_to_f16(float f)
{
	uint32_t x;
	memcpy(&x, &f, 4);
	uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
	uint32_t ax = x & 0x7fffffff;
	if (ax > 0x7f800000)
		return sign | 0x7e00;                        /* NaN */
	if (ax >= 0x477ff000)
		return sign | 0x7c00;                        /* rounds to inf */
	if (ax < 0x38800000) {                               /* subnormal or zero */
		float a;
		memcpy(&a, &ax, 4);
		return sign | (uint16_t)lrintf(a * 16777216.0f);   /* 2^24, ties even */
	}
	uint32_t r = ax + 0xfff + ((ax >> 13) & 1);          /* round to nearest even */
	return sign | (uint16_t)((r - 0x38000000) >> 13);
}

float bf16_to_float(uint16_t h)
{
	uint32_t bits = (uint32_t)h << 16;
	float f;
	memcpy(&f, &bits, 4);
	return f;
}

uint16_t float_to_bf16(float f)
{
	uint32_t x;
	memcpy(&x, &f, 4);
	if ((x & 0x7fffffff) > 0x7f800000)
		return (uint16_t)((x >> 16) | 0x40);
	return (uint16_t)((x + 0x7fff + ((x >> 16) & 1)) >> 16);
}

double dtype_get(const void *p, enum ir_dtype t, int64_t i)
{
	switch (t) {
	case DT_F32: return ((const float *)p)[i];
	case DT_F16: return f16_to_float(((const uint16_t *)p)[i]);
	case DT_BF16: return bf16_to_float(((const uint16_t *)p)[i]);
	case DT_I8: return ((const int8_t *)p)[i];
	case DT_U8: return ((const uint8_t *)p)[i];
	case DT_I16: return ((const int16_t *)p)[i];
	case DT_I32: return ((const int32_t *)p)[i];
	case DT_I64: return (double)((const int64_t *)p)[i];
	case DT_BOOL: return ((const uint8_t *)p)[i] != 0;
	case DT_F64: return ((const double *)p)[i];
	case DT_U16: return ((const uint16_t *)p)[i];
	case DT_U32: return ((const uint32_t *)p)[i];
	case DT_U64: return (double)((const uint64_t *)p)[i];
	default: return 0;
	}
}

int64_t dtype_get_int(const void *p, enum ir_dtype t, int64_t i)
{
	switch (t) {
	case DT_I8: return ((const int8_t *)p)[i];
	case DT_U8: return ((const uint8_t *)p)[i];
	case DT_I16: return ((const int16_t *)p)[i];
	case DT_I32: return ((const int32_t *)p)[i];
	case DT_I64: return ((const int64_t *)p)[i];
	case DT_BOOL: return ((const uint8_t *)p)[i] != 0;
	case DT_U16: return ((const uint16_t *)p)[i];
	case DT_U32: return ((const uint32_t *)p)[i];
	case DT_U64: return (int64_t)((const uint64_t *)p)[i];   /* the bits; see convert.h */
	default: return (int64_t)dtype_get(p, t, i);
	}
}

/* Integer range of T as doubles (for saturation). */
static void int_range(enum ir_dtype t, double *lo, double *hi)
{
	switch (t) {
	case DT_I8: *lo = INT8_MIN; *hi = INT8_MAX; break;
	case DT_U8: *lo = 0; *hi = UINT8_MAX; break;
	case DT_I16: *lo = INT16_MIN; *hi = INT16_MAX; break;
	case DT_I32: *lo = INT32_MIN; *hi = INT32_MAX; break;
	case DT_U16: *lo = 0; *hi = UINT16_MAX; break;
	case DT_U32: *lo = 0; *hi = UINT32_MAX; break;
	case DT_U64: *lo = 0; *hi = 18446744073709551615.0; break;
	default: *lo = -9223372036854775808.0; *hi = 9223372036854775807.0; break;
	}
}

void dtype_set_int(void *p, enum ir_dtype t, int64_t i, int64_t v)
{
	switch (t) {
	case DT_I8: ((int8_t *)p)[i] = (int8_t)v; break;
	case DT_U8: ((uint8_t *)p)[i] = (uint8_t)v; break;
	case DT_I16: ((int16_t *)p)[i] = (int16_t)v; break;
	case DT_I32: ((int32_t *)p)[i] = (int32_t)v; break;
	case DT_I64: ((int64_t *)p)[i] = v; break;
	case DT_BOOL: ((uint8_t *)p)[i] = v != 0; break;
	case DT_U16: ((uint16_t *)p)[i] = (uint16_t)v; break;
	case DT_U32: ((uint32_t *)p)[i] = (uint32_t)v; break;
	case DT_U64: ((uint64_t *)p)[i] = (uint64_t)v; break;
	default: dtype_set(p, t, i, (double)v); break;
	}
}

/* Store integer V saturated to T's range (Cast between integer dtypes). */
static void put_int(void *p, enum ir_dtype t, int64_t i, int64_t v)
{
	double lo, hi;
	int_range(t, &lo, &hi);
	if (t == DT_U64)
		v = v < 0 ? 0 : v;
	else if (t != DT_I64 && t != DT_BOOL)
		v = v < (int64_t)lo ? (int64_t)lo : v > (int64_t)hi ? (int64_t)hi : v;
	dtype_set_int(p, t, i, v);
}

void dtype_set(void *p, enum ir_dtype t, int64_t i, double v)
{
	switch (t) {
	case DT_F32: ((float *)p)[i] = (float)v; return;
	case DT_F16: ((uint16_t *)p)[i] = float_to_f16((float)v); return;
	case DT_BF16: ((uint16_t *)p)[i] = float_to_bf16((float)v); return;
	case DT_BOOL: ((uint8_t *)p)[i] = v != 0; return;
	case DT_F64: ((double *)p)[i] = v; return;
	default: break;
	}
	double lo, hi;
	int_range(t, &lo, &hi);
	v = isnan(v) ? 0 : trunc(v);
	if (t == DT_U64) {
		((uint64_t *)p)[i] = v <= 0 ? 0 : v >= hi ? UINT64_MAX : (uint64_t)v;
		return;
	}
	if (v <= lo)
		put_int(p, t, i, t == DT_I64 ? INT64_MIN : (int64_t)lo);
	else if (v >= hi)
		put_int(p, t, i, t == DT_I64 ? INT64_MAX : (int64_t)hi);
	else
		put_int(p, t, i, (int64_t)v);
}

void dtype_round(float *v, int64_t n, enum ir_dtype t)
{
	for (int64_t i = 0; i < n && t == DT_BF16; i++)
		v[i] = bf16_to_float(float_to_bf16(v[i]));
	for (int64_t i = 0; i < n && t == DT_F16; i++)
		v[i] = f16_to_float(float_to_f16(v[i]));
}

void dtype_convert(void *dst, enum ir_dtype dt, const void *src, enum ir_dtype st, int64_t n)
{
	if (dt == st) {
		if (dst != src)
			memmove(dst, src, (size_t)n * dtype_size(dt));
		return;
	}
	/* the pairs every bf16/f16 operator takes (widen, compute, round) in
	 * loops the compiler vectorises; the same functions as one by one */
	if (st == DT_F32 && (dt == DT_BF16 || dt == DT_F16)) {
		const float *s = src;
		uint16_t *d = dst;
		if (dt == DT_BF16)
			#pragma omp simd
			for (int64_t i = 0; i < n; i++)
				d[i] = float_to_bf16(s[i]);
		else
			for (int64_t i = 0; i < n; i++)
				d[i] = float_to_f16(s[i]);
		return;
	}
	if (dt == DT_F32 && (st == DT_BF16 || st == DT_F16)) {
		const uint16_t *s = src;
		float *d = dst;
		if (st == DT_BF16)
			#pragma omp simd
			for (int64_t i = 0; i < n; i++)
				d[i] = bf16_to_float(s[i]);
		else
			for (int64_t i = 0; i < n; i++)
				d[i] = f16_to_float(s[i]);
		return;
	}
	for (int64_t i = 0; i < n; i++) {
		if (!dtype_is_float(st) && !dtype_is_float(dt))
			put_int(dst, dt, i, dtype_get_int(src, st, i));
		else
			dtype_set(dst, dt, i, dtype_get(src, st, i));
	}
}
