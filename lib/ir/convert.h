/* convert.h - element conversion between IR dtypes by value (Cast, npz
 * inputs, interpreter outputs), including the 16-bit float formats.
 */
#ifndef TPUC_CONVERT_H
#define TPUC_CONVERT_H

#include <stdint.h>

#include "ir/ir.h"

/* Convert N elements of SRC (dtype ST) into DST (dtype DT) by value, as
 * ONNX Cast does: floats to integers truncate toward zero and saturate to
 * the destination's range (NaN gives 0); anything to bool gives x != 0;
 * f16 and bf16 round to nearest even.  SRC and DST must not overlap unless
 * they are the same buffer with the same dtype. */
void dtype_convert(void *dst, enum ir_dtype dt, const void *src, enum ir_dtype st, int64_t n);

/* 1 for the float dtypes (f32, f16, bf16, f64). */
static inline int dtype_is_float(enum ir_dtype t)
{
	return t == DT_F32 || t == DT_F16 || t == DT_BF16 || t == DT_F64;
}

/* Element I of a buffer of dtype T as a double. */
double dtype_get(const void *p, enum ir_dtype t, int64_t i);
/* Element I of a buffer of dtype T as an integer: exact for the integer
 * dtypes (u64 above INT64_MAX gives its bits, so that integer arithmetic
 * that wraps stays right), 0 or 1 for bool, (int64_t)dtype_get() for the
 * float ones. */
int64_t dtype_get_int(const void *p, enum ir_dtype t, int64_t i);

/* Store V as element I of a buffer of dtype T with Cast's rules (see
 * dtype_convert): floats round to the format, integers truncate toward zero
 * and saturate, NaN gives 0. */
void dtype_set(void *p, enum ir_dtype t, int64_t i, double v);
/* Store integer V as element I: integer dtypes keep the low bits (wrap, as
 * integer arithmetic does), bool gives V != 0, float dtypes convert. */
void dtype_set_int(void *p, enum ir_dtype t, int64_t i, int64_t v);

/* Round the N f32 values of V in place to the nearest value of the float
 * dtype T (bf16 or f16: nearest even; f32 and f64 leave them). */
void dtype_round(float *v, int64_t n, enum ir_dtype t);

float f16_to_float(uint16_t h);
uint16_t float_to_f16(float f);
float bf16_to_float(uint16_t h);
uint16_t float_to_bf16(float f);

#endif
