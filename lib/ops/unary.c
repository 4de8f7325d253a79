/* unary.c - elementwise operators of one input: math functions (Sqrt, Exp,
 * Log, Erf, Tanh, trigonometry ...), activations with float attributes
 * (Sigmoid, HardSigmoid alpha/beta, HardSwish, Elu, Selu, LeakyRelu, Celu,
 * ThresholdedRelu, Softplus, Softsign, Mish, Shrink), the fused forms top-opt
 * makes (Gelu, approximate "none" or "tanh"; SiLU, x * sigmoid(x)) and the
 * predicates IsNaN, IsInf and Not.  Float ops take f32, and f64 computed in
 * double (UNARY_DOUBLE_OPS); Neg, Abs and Sign also take integers.
 */
#include <math.h>
#include <string.h>

#include "ir/convert.h"
#include "ops/kern_util.h"
#include "ir/op.h"
#include "back/lower.h"
#include "quant/quant.h"
#include "ir/scalar.h"

/* Attributes of the op, with ONNX's defaults (the importer writes them out). */
struct uparam {
	float alpha, beta, gamma, bias, lambd;
	int neg, pos;       /* IsInf: detect_negative, detect_positive */
	int tanh_gelu;      /* Gelu: approximate "tanh" */
};

static void uparam_get(const struct ir_op *op, struct uparam *p)
{
	float a = 1.0f;
	switch (op->type) {
	case OP_HARDSIGMOID: a = 0.2f; break;
	case OP_LEAKYRELU: a = 0.01f; break;
	case OP_SELU: a = 1.67326319217681884765625f; break;
	default: break;
	}
	p->alpha = (float)op_float(op, "alpha", a);
	p->beta = (float)op_float(op, "beta", 0.5);
	p->gamma = (float)op_float(op, "gamma", 1.05070102214813232421875);
	p->bias = (float)op_float(op, "bias", 0);
	p->lambd = (float)op_float(op, "lambd", 0.5);
	p->neg = (int)op_int(op, "detect_negative", 1);
	p->pos = (int)op_int(op, "detect_positive", 1);
	p->tanh_gelu = op->type == OP_GELU && !strcmp(op_str(op, "approximate", "none"), "tanh");
}

/* fmaxf(0, fminf(1, v)) (NaN gives 1) as two selects, which the compiler
 * vectorises where it leaves fmaxf and fminf to libm; the same value for
 * every v but -0, which the callers never pass.  It carries unary_f32's
 * optimize attribute: gcc inlines no function whose options differ from
 * its caller's, and a call per element neither inlined nor vectorised
 * made HardSwish a fifth of a float PP-OCRv4 recogniser's run. */
__attribute__((optimize("no-trapping-math")))
static inline float clamp01(float v)
{
	float c = __builtin_isgreater(v, 0.0f) ? v : 0.0f;
	return __builtin_isless(v, 1.0f) ? c : 1.0f;
}

/* The float ops: X(ENUM, f(x)), one line each; the kernel's switch, its
 * loops and the op_defs below all come from this list.  P holds the
 * attributes (struct uparam). */
#define UNARY_FLOAT_OPS(X) \
	X(SQRT, sqrtf(x)) X(EXP, expf(x)) X(LOG, logf(x)) X(ERF, erff(x)) X(TANH, tanhf(x)) \
	X(SIGMOID, scalar_sigmoid(x)) \
	X(HARDSIGMOID, clamp01(p->alpha * x + p->beta)) \
	X(HARDSWISH, x * clamp01(x / 6.0f + 0.5f)) \
	X(SILU, scalar_silu(x)) \
	X(GELU, scalar_gelu(x, p->tanh_gelu)) \
	X(NEG, -x) \
	X(ABS, fabsf(x)) \
	X(RECIPROCAL, 1.0f / x) \
	X(FLOOR, floorf(x)) X(CEIL, ceilf(x)) X(ROUND, nearbyintf(x)) \
	X(SIGN, x > 0 ? 1.0f : x < 0 ? -1.0f : x == 0 ? 0.0f : x) \
	X(SOFTPLUS, scalar_softplus(x)) \
	X(SOFTSIGN, scalar_softsign(x)) \
	X(MISH, scalar_mish(x)) \
	X(ELU, x < 0 ? p->alpha * expm1f(x) : x) \
	X(SELU, p->gamma * (x <= 0 ? p->alpha * expm1f(x) : x)) \
	X(LEAKYRELU, x >= 0 ? x : p->alpha * x) \
	X(CELU, fmaxf(0.0f, x) + fminf(0.0f, p->alpha * expm1f(x / p->alpha))) \
	X(THRESHOLDEDRELU, x > p->alpha ? x : 0.0f) \
	X(SHRINK, x < -p->lambd ? x + p->bias : x > p->lambd ? x - p->bias : 0.0f) \
	X(SIN, sinf(x)) X(COS, cosf(x)) X(TAN, tanf(x)) \
	X(ASIN, asinf(x)) X(ACOS, acosf(x)) X(ATAN, atanf(x)) \
	X(SINH, sinhf(x)) X(COSH, coshf(x)) \
	X(ASINH, asinhf(x)) X(ACOSH, acoshf(x)) X(ATANH, atanhf(x))

/* The same in double, for f64 tensors (ONNX Runtime computes them in
 * double): X(ENUM, f(x)) over double x. */
#define UNARY_DOUBLE_OPS(X) \
	X(SQRT, sqrt(x)) X(EXP, exp(x)) X(LOG, log(x)) X(ERF, erf(x)) X(TANH, tanh(x)) \
	X(SIGMOID, x >= 0 ? 1 / (1 + exp(-x)) : exp(x) / (1 + exp(x))) \
	X(HARDSIGMOID, fmax(0.0, fmin(1.0, (double)p->alpha * x + (double)p->beta))) \
	X(HARDSWISH, x * fmax(0.0, fmin(1.0, x / 6 + 0.5))) \
	X(SILU, x / (1 + exp(-x))) \
	X(GELU, p->tanh_gelu ? 0.5 * x * (1 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))) \
			     : 0.5 * x * (1 + erf(x * 0.7071067811865476))) \
	X(NEG, -x) X(ABS, fabs(x)) X(RECIPROCAL, 1 / x) \
	X(FLOOR, floor(x)) X(CEIL, ceil(x)) X(ROUND, nearbyint(x)) \
	X(SIGN, x > 0 ? 1.0 : x < 0 ? -1.0 : x) \
	X(SOFTPLUS, x > 0 ? x + log1p(exp(-x)) : log1p(exp(x))) \
	X(SOFTSIGN, x / (1 + fabs(x))) \
	X(MISH, x * tanh(x > 0 ? x + log1p(exp(-x)) : log1p(exp(x)))) \
	X(ELU, x < 0 ? p->alpha * expm1(x) : x) \
	X(SELU, p->gamma * (x <= 0 ? p->alpha * expm1(x) : x)) \
	X(LEAKYRELU, x >= 0 ? x : p->alpha * x) \
	X(CELU, fmax(0.0, x) + fmin(0.0, p->alpha * expm1(x / p->alpha))) \
	X(THRESHOLDEDRELU, x > p->alpha ? x : 0.0) \
	X(SHRINK, x < -p->lambd ? x + p->bias : x > p->lambd ? x - p->bias : 0.0) \
	X(SIN, sin(x)) X(COS, cos(x)) X(TAN, tan(x)) \
	X(ASIN, asin(x)) X(ACOS, acos(x)) X(ATAN, atan(x)) \
	X(SINH, sinh(x)) X(COSH, cosh(x)) \
	X(ASINH, asinh(x)) X(ACOSH, acosh(x)) X(ATANH, atanh(x))

/* The function of op type t, in float (ufn) and in double (ufn64). */
#define X_FN(e, f) case OP_##e: return f;
#define UNARY_FN(name, type, list) \
	static inline __attribute__((always_inline)) type name(enum op_type t, type x, \
							      const struct uparam *p) \
	{ \
		switch (t) { \
		list(X_FN) \
		default: return x; \
		} \
	}
UNARY_FN(ufn, float, UNARY_FLOAT_OPS)
UNARY_FN(ufn64, double, UNARY_DOUBLE_OPS)
#undef UNARY_FN
#undef X_FN

static int is_int_dtype(enum ir_dtype t)
{
	return t == DT_I8 || t == DT_U8 || t == DT_I16 || t == DT_I32 || t == DT_I64;
}

static int unary_infer(struct ir_graph *g, struct ir_op *op)
{
	const struct ir_tensor *x = op_in(g, op, 0);
	enum ir_dtype out = x->dtype;
	switch (op->type) {
	case OP_NOT:
		if (x->dtype != DT_BOOL)
			return op_error(op, "input must be bool, not %s", dtype_name(x->dtype));
		break;
	case OP_ISNAN: case OP_ISINF:
		if (x->dtype != DT_F32 && x->dtype != DT_F64)
			return op_error(op, "input must be f32 or f64, not %s", dtype_name(x->dtype));
		out = DT_BOOL;
		break;
	case OP_NEG: case OP_ABS: case OP_SIGN:
		if (x->dtype != DT_F32 && x->dtype != DT_F64 && !is_int_dtype(x->dtype))
			return op_error(op, "dtype %s is not supported", dtype_name(x->dtype));
		break;
	default:
		if (x->dtype != DT_F32 && x->dtype != DT_F64)
			return op_error(op, "dtype %s is not supported (f32 or f64)", dtype_name(x->dtype));
		break;
	}
	op_set_out(g, op, 0, out, x->rank, x->shape);
	return 0;
}

/* y = f(x) elementwise, f32 in and out, the switch hoisted out of the loop. */
#define UNARY_CASE(T)                                                         \
	case T:                                                               \
		_Pragma("omp parallel for simd num_threads(nt) schedule(static)") \
		for (int64_t i = 0; i < n; i++)                               \
			y[i] = ufn(T, x[i], &p);                              \
		break;

/* no-trapping-math: the selects of clamp01 vectorise (the values are the
 * same; only floating-point exception flags may differ) */
__attribute__((optimize("no-trapping-math")))
static int unary_f32(struct kern *k)
{
	const struct view *xv = &k->in[0], *yv = &k->out[0];
	int64_t n = view_numel(yv);
	enum op_type t = k->op->type;
	if (t == OP_NOT) {
		const uint8_t *x = xv->data;
		uint8_t *y = yv->data;
		for (int64_t i = 0; i < n; i++)
			y[i] = !x[i];
		return 0;
	}
	if (t == OP_ISNAN || t == OP_ISINF) {
		struct uparam p;
		uparam_get(k->op, &p);
		uint8_t *y = yv->data;
		for (int64_t i = 0; i < n; i++) {
			double x = dtype_get(xv->data, xv->dtype, i);
			y[i] = t == OP_ISNAN ? isnan(x) != 0 : isinf(x) && (x > 0 ? p.pos : p.neg);
		}
		return 0;
	}
	if (xv->dtype == DT_F64 && yv->dtype == DT_F64) {
		struct uparam p;
		uparam_get(k->op, &p);
		const double *x = xv->data;
		double *y = yv->data;
		for (int64_t i = 0; i < n; i++)
			y[i] = ufn64(t, x[i], &p);
		return 0;
	}
	if (xv->dtype != DT_F32) {
		/* Integer Neg, Abs, Sign: exact in int64. */
		for (int64_t i = 0; i < n; i++) {
			int64_t v = (int64_t)dtype_get(xv->data, xv->dtype, i);
			int64_t r = t == OP_NEG ? -v : t == OP_ABS ? (v < 0 ? -v : v) : (v > 0) - (v < 0);
			dtype_convert((char *)yv->data + (size_t)i * dtype_size(yv->dtype), yv->dtype,
				      &r, DT_I64, 1);
		}
		return 0;
	}
	if (kern_need_f32(k) < 0)
		return -1;
	struct uparam p;
	uparam_get(k->op, &p);
	const float *x = xv->data;
	float *y = yv->data;
	int nt = kern_threads(k, n, 16);
	switch (t) {
#define X_LOOP(e, f) UNARY_CASE(OP_##e)
	UNARY_FLOAT_OPS(X_LOOP)
#undef X_LOOP
	default:
		return op_error(k->op, "not a unary operator");
	}
	return 0;
}

static int64_t unary_macs(const struct ir_graph *g, const struct ir_op *op)
{
	return tensor_numel(&g->tensors[op->out[0]]);
}

#define UNARY_DEF(E) const struct op_def op_def_##E = { \
	.infer = unary_infer, .run_f32 = unary_f32, .lower = lower_unary_lut, \
	.run_tpu = quant_run_unary, .macs = unary_macs, \
	.slice_h = slice_h_same, \
};

#define X_DEF(e, f) UNARY_DEF(e)
UNARY_FLOAT_OPS(X_DEF)
#undef X_DEF
UNARY_DEF(NOT) UNARY_DEF(ISNAN) UNARY_DEF(ISINF)
