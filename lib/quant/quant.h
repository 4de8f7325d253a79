/* quant.h - the chip's int8 arithmetic, implemented once and shared by the
 * lowering (choosing scales, multipliers and shifts), the integer kernels in
 * lib/ops/ (ir-run) and the simulator.  The rules are specified in
 * formats/tpuc-quant.5; in short:
 *
 *   real = scale * (q - zp)               (zp 0 unless --asymmetric)
 *   q    = sat8(round_half_away(x / scale) + zp)          quantise
 *   acc  = sum((q_x - zp_x) * q_w) + bias                 int32, exact
 *   out  = clamp(round_shift((int64)acc * mult, shift) + zp_out, lo, hi)
 *   round_shift(p, s) = (p + 2^(s-1)) >> s  (s > 0; p for s = 0)  half up
 *   mult / 2^shift ~ real multiplier, mult in [2^30, 2^31) when shift < 62
 *
 * Worked example: s_in = 0.05, s_w = 0.01, s_out = 0.1 give the real
 * multiplier 0.005 = 1374389535 / 2^38, so quant_multiplier() returns
 * mult 1374389535, shift 38, and an accumulator of 300 requantises to
 * round_shift(300 * 1374389535, 38) = 2 (300 * 0.005 = 1.5, which rounds up).
 */
#ifndef TPUC_QUANT_H
#define TPUC_QUANT_H

#include <stdint.h>

#include "ir/op.h"

#define QUANT_QMAX 127
#define QUANT_QMIN (-128)
#define QUANT_MAX_SHIFT 62
/* Thresholds below this are raised to it, so that no scale is zero. */
#define QUANT_MIN_THRESHOLD 1e-6

#define QUANT_UMAX 255   /* u8 activations: q in [0, 255], zero point 0 */

/* Activation scale for a calibration threshold: max(t, min) / 127. */
float quant_act_scale(double threshold);
/* The activation dtype and scale for a tensor with calibration THRESHOLD
 * and observed minimum MIN: u8 with max(t, min) / 255 when MIN >= 0 (one
 * more bit for ReLU-like outputs, still symmetric: zero point 0), else i8
 * with max(t, min) / 127 (formats/tpuc-quant.5). */
enum ir_dtype quant_act_dtype(double min);
float quant_act_scale_dt(double threshold, enum ir_dtype dt);

/* 1 if DT is a float dtype the Tpu kernels compute in f32 (f32, bf16, f16). */
static inline int quant_is_float(enum ir_dtype dt)
{
	return dt == DT_F32 || dt == DT_BF16 || dt == DT_F16;
}

/* 1 if DT is a quantised activation dtype (i8 or u8). */
static inline int quant_is_q(enum ir_dtype dt)
{
	return dt == DT_I8 || dt == DT_U8;
}

/* Representable range of quantised dtype DT: [-128, 127] or [0, 255]. */
static inline void quant_range(enum ir_dtype dt, int *lo, int *hi)
{
	*lo = dt == DT_U8 ? 0 : QUANT_QMIN;
	*hi = dt == DT_U8 ? QUANT_UMAX : QUANT_QMAX;
}

/* Element I of an i8 or u8 buffer P. */
static inline int quant_get(const void *p, enum ir_dtype dt, int64_t i)
{
	return dt == DT_U8 ? ((const uint8_t *)p)[i] : ((const int8_t *)p)[i];
}

/* Store V (already within DT's range) as element I of an i8 or u8 buffer. */
static inline void quant_put(void *p, enum ir_dtype dt, int64_t i, int v)
{
	if (dt == DT_U8)
		((uint8_t *)p)[i] = (uint8_t)v;
	else
		((int8_t *)p)[i] = (int8_t)v;
}
/* Symmetric per-tensor (or per-channel) weight scale: max|w| / 127 over
 * N values; 1/127 when they are all zero. */
float quant_weight_scale(const float *w, int64_t n);

/* Quantise one value: round half away from zero of x / scale (computed in
 * double), saturated to [-128, 127]; NaN gives 0. */
int8_t quant_f32_to_i8_one(float x, float scale);
void quant_f32_to_i8(const float *x, int8_t *q, int64_t n, float scale);
/* Dequantise: scale * q in float. */
void quant_i8_to_f32(const int8_t *q, float *x, int64_t n, float scale);
/* The same for dtype DT (i8 or u8): round_half_away(x / scale) saturated
 * to DT's range, NaN gives 0. */
int quant_f32_to_q_one(float x, float scale, enum ir_dtype dt);
/* With zero point ZP (asymmetric): round_half_away(x / scale) + ZP,
 * saturated to DT's range, NaN gives ZP; and the inverse scale * (q - ZP)
 * in single precision. */
int quant_f32_to_qz_one(float x, float scale, int zp, enum ir_dtype dt);
void quant_f32_to_q(const float *x, void *q, int64_t n, float scale, int zp, enum ir_dtype dt);
void quant_q_to_f32(const void *q, enum ir_dtype dt, float *x, int64_t n, float scale, int zp);

/* Asymmetric u8 parameters for the real range [LO, HI], widened to hold 0
 * (so that real 0, the padding value, is exact): scale = (hi - lo) / 255
 * (at least 1e-6 / 255), zero point = round_half_away(-lo / scale) clamped
 * to [0, 255] (formats/tpuc-quant.5). */
void quant_act_asym(double lo, double hi, float *scale, int *zp);

/* Integer multiplier and right shift for a real multiplier REAL >= 0:
 * mult = round_half_away(REAL * 2^shift) with shift the largest value
 * <= 62 that keeps mult < 2^31 (so mult >= 2^30 unless REAL < 2^-32).
 * Fails for REAL >= 2^31 or not finite. */
int quant_multiplier(double real, int32_t *mult, int32_t *shift);
/* The same for several reals sharing one shift (Add): the shift is chosen
 * for the largest; returns it in *shift. */
int quant_multipliers_common(const double *real, int n, int32_t *mult, int32_t *shift);
/* Bias in accumulator units: round_half_away(b / (s_in * s_w)), saturated
 * to int32. */
int32_t quant_bias(double b, double s_in, double s_w);

/* round_shift(p, s): p / 2^s rounded half up (toward +inf on ties). */
static inline int64_t quant_round_shift(int64_t p, int shift)
{
	if (shift <= 0)
		return p;
	/* gcc and clang shift signed values arithmetically (floor). */
	return (p + ((int64_t)1 << (shift - 1))) >> shift;
}

static inline int quant_clamp(int64_t v, int lo, int hi)
{
	return v < lo ? lo : v > hi ? hi : (int)v;
}

/* Requantise an accumulator and add the output zero point ZP:
 * clamp(round_shift(acc * mult, shift) + ZP, lo, hi). */
static inline int quant_requant_zp(int64_t acc, int32_t mult, int32_t shift, int zp, int lo, int hi)
{
	return quant_clamp(quant_round_shift(acc * mult, shift) + zp, lo, hi);
}

/* Requantise an int32 accumulator into [lo, hi]. */
static inline int quant_requant_int(int32_t acc, int32_t mult, int32_t shift, int lo, int hi)
{
	return quant_clamp(quant_round_shift((int64_t)acc * mult, shift), lo, hi);
}

/* The same into an int8 (bounds within [-128, 127]). */
static inline int8_t quant_requant(int32_t acc, int32_t mult, int32_t shift, int lo, int hi)
{
	return (int8_t)quant_requant_int(acc, mult, shift, lo, hi);
}

/* Saturating int32 addition (bias onto an accumulator). */
static inline int32_t quant_add_sat32(int32_t a, int32_t b)
{
	int64_t s = (int64_t)a + b;
	return s > INT32_MAX ? INT32_MAX : s < INT32_MIN ? INT32_MIN : (int32_t)s;
}

/* Output bounds of an op with a fused activation: [-128, 127], or with
 * do_relu [0, 127], or [0, q(relu_limit)] when relu_limit > 0, q quantising
 * with the output scale OUT_SCALE. */
void quant_relu_bounds(const struct ir_op *op, float out_scale, int *lo, int *hi);
/* The same for an output of dtype DT (i8 or u8) with zero point ZP: DT's
 * range, narrowed by the fused activation (lo = ZP with do_relu, hi =
 * quantise(relu_limit) with the output's scale and zero point). */
void quant_out_bounds(const struct ir_op *op, enum ir_dtype dt, float out_scale, int zp,
		      int *lo, int *hi);

/* Per-channel parameters of Conv, Gemm and Scale in either Tpu form: inputs
 * FIRST, FIRST+1, FIRST+2 are bias, multiplier, shift (i32 [C] each; stage
 * lowered), or input FIRST alone is the coefficient tensor i32 [C,3] holding
 * bias, multiplier, shift per channel (stage reordered and later).  Fails
 * naming the op when neither form is present or C is out of range. */
int quant_channel_params(const struct kern *k, int first, int c,
			 int32_t *bias, int32_t *mult, int32_t *shift);
/* The output dtype of a Conv, Gemm or MatMul on input dtype X: i32 for a
 * partial sum over a part of the input channels (attribute acc = 1, made by
 * lib/back/lower_kin.c) of i8 or u8 inputs, whose kernel then writes the
 * raw int32 accumulator without bias or requantisation; X otherwise. */
enum ir_dtype quant_acc_dtype(const struct ir_graph *g, const struct ir_op *op, enum ir_dtype x);

/* Check the form and channel count of those parameters once per kernel. */
int quant_check_channel_params(const struct kern *k, int first, int64_t channels);

/* Per-channel requantisation prepared for quant_requant_rows: each
 * channel's bias (plus whatever correction the caller adds to it, in
 * accumulator units), multiplier, and shift as the rounding term 2^(s-1)
 * and the shift taken (both 0 for s <= 0, which round_shift leaves alone). */
struct quant_chan {
	int64_t n;                   /* channels */
	int64_t *bias, *round, *shift;   /* [n] each, one allocation with mult */
	int32_t *mult;                   /* [n] */
};
/* Fill Q for N channels from k's parameters at input FIRST in either form
 * (quant_channel_params): channel c takes parameter c, or parameter 0 for
 * all when NP is 1.  Fails naming the op; free with quant_chan_free. */
int quant_chan_init(struct quant_chan *q, const struct kern *k, int first, int64_t np, int64_t n);
void quant_chan_free(struct quant_chan *q);
/* ROWS rows of q->n accumulators each (dense) into i8 or u8 (YDT), dense:
 * y[r][c] = clamp(round_shift(sat32(acc[r][c] + bias[c]) * mult[c],
 * shift[c]) + ZP, LO, HI), the same integers as quant_requant_zp of
 * quant_add_sat32, in a form the compiler vectorises. */
void quant_requant_rows(const int32_t *acc, int64_t rows, const struct quant_chan *q, int zp,
			int lo, int hi, void *y, enum ir_dtype ydt);

/* Tpu ops on float tensors reuse the op's float reference kernel
 * (run_f32).  With bf16 or f16 tensors (modes bf16, f16) every such input
 * is widened to f32 exactly, run_f32 computes in f32, and every bf16 or f16
 * output is rounded to nearest even from the f32 result
 * (formats/tpuc-quant.5). */
int quant_run_f32(struct kern *k);
/* Elementwise unary ops (Sigmoid, SiLU, HardSwish, Tanh, Exp, GELU...):
 * with float outputs quant_run_f32; in int8 a lookup: y = lut[x & 255],
 * the attribute lut holding the 256 output codes for the input codes
 * 0..255 (i8 codes as their two's-complement byte). */
int quant_run_unary(struct kern *k);

#endif
