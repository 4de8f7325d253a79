/* unary.c - elementwise operators of one input: math functions (Sqrt, Exp,
 * Log, Erf, Tanh, trigonometry ...), activations with float attributes
 * (Sigmoid, HardSigmoid alpha/beta, HardSwish, Elu, Selu, LeakyRelu, Celu,
 * ThresholdedRelu, Softplus, Softsign, Mish, Shrink), the fused forms top-opt
 * makes (Gelu, approximate "none" or "tanh"; SiLU, x * sigmoid(x)) and the
 * predicates IsNaN, IsInf and Not.  Float ops take f32; Neg, Abs and Sign also take integers.
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

/* The float function of op type t. */
static inline float ufn(enum op_type t, float x, const struct uparam *p)
{
	switch (t) {
	case OP_SQRT: return sqrtf(x);
	case OP_EXP: return expf(x);
	case OP_LOG: return logf(x);
	case OP_ERF: return erff(x);
	case OP_TANH: return tanhf(x);
	case OP_SIGMOID: return scalar_sigmoid(x);
	case OP_HARDSIGMOID: return fmaxf(0.0f, fminf(1.0f, p->alpha * x + p->beta));
	case OP_HARDSWISH: return x * fmaxf(0.0f, fminf(1.0f, x / 6.0f + 0.5f));
	case OP_SILU: return scalar_silu(x);
	case OP_GELU: return scalar_gelu(x, p->tanh_gelu);
	case OP_NEG: return -x;
	case OP_ABS: return fabsf(x);
	case OP_RECIPROCAL: return 1.0f / x;
	case OP_FLOOR: return floorf(x);
	case OP_CEIL: return ceilf(x);
	case OP_ROUND: return nearbyintf(x);
	case OP_SIGN: return x > 0 ? 1.0f : x < 0 ? -1.0f : x == 0 ? 0.0f : x;
	case OP_SOFTPLUS: return scalar_softplus(x);
	case OP_SOFTSIGN: return scalar_softsign(x);
	case OP_MISH: return scalar_mish(x);
	case OP_ELU: return x < 0 ? p->alpha * expm1f(x) : x;
	case OP_SELU: return p->gamma * (x <= 0 ? p->alpha * expm1f(x) : x);
	case OP_LEAKYRELU: return x >= 0 ? x : p->alpha * x;
	case OP_CELU: return fmaxf(0.0f, x) + fminf(0.0f, p->alpha * expm1f(x / p->alpha));
	case OP_THRESHOLDEDRELU: return x > p->alpha ? x : 0.0f;
	case OP_SHRINK: return x < -p->lambd ? x + p->bias : x > p->lambd ? x - p->bias : 0.0f;
	case OP_SIN: return sinf(x);
	case OP_COS: return cosf(x);
	case OP_TAN: return tanf(x);
	case OP_ASIN: return asinf(x);
	case OP_ACOS: return acosf(x);
	case OP_ATAN: return atanf(x);
	case OP_SINH: return sinhf(x);
	case OP_COSH: return coshf(x);
	case OP_ASINH: return asinhf(x);
	case OP_ACOSH: return acoshf(x);
	case OP_ATANH: return atanhf(x);
	default: return x;
	}
}

static int is_int_dtype(enum ir_dtype t)
{
	return t == DT_I8 || t == DT_U8 || t == DT_I16 || t == DT_I32 || t == DT_I64;
}

static int unary_infer(struct ir_graph *g, struct ir_op *op)
{
	if (op_check_arity(g, op, 1, 1) < 0)
		return -1;
	const struct ir_tensor *x = op_in(g, op, 0);
	enum ir_dtype out = x->dtype;
	switch (op->type) {
	case OP_NOT:
		if (x->dtype != DT_BOOL)
			return op_error(op, "input must be bool, not %s", dtype_name(x->dtype));
		break;
	case OP_ISNAN: case OP_ISINF:
		if (x->dtype != DT_F32)
			return op_error(op, "input must be f32, not %s", dtype_name(x->dtype));
		out = DT_BOOL;
		break;
	case OP_NEG: case OP_ABS: case OP_SIGN:
		if (x->dtype != DT_F32 && !is_int_dtype(x->dtype))
			return op_error(op, "dtype %s is not supported", dtype_name(x->dtype));
		break;
	default:
		if (x->dtype != DT_F32)
			return op_error(op, "dtype %s is not supported (f32 only)", dtype_name(x->dtype));
		break;
	}
	op_set_out(g, op, 0, out, x->rank, x->shape);
	return 0;
}

/* y = f(x) elementwise, f32 in and out, the switch hoisted out of the loop. */
#define UNARY_CASE(T)                                                         \
	case T:                                                               \
		_Pragma("omp parallel for num_threads(nt) schedule(static)")  \
		for (int64_t i = 0; i < n; i++)                               \
			y[i] = ufn(T, x[i], &p);                              \
		break;

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
		const float *x = xv->data;
		uint8_t *y = yv->data;
		for (int64_t i = 0; i < n; i++)
			y[i] = t == OP_ISNAN ? isnan(x[i]) != 0
					     : isinf(x[i]) && (x[i] > 0 ? p.pos : p.neg);
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
	UNARY_CASE(OP_SQRT) UNARY_CASE(OP_EXP) UNARY_CASE(OP_LOG) UNARY_CASE(OP_ERF)
	UNARY_CASE(OP_TANH) UNARY_CASE(OP_SIGMOID) UNARY_CASE(OP_HARDSIGMOID)
	UNARY_CASE(OP_HARDSWISH) UNARY_CASE(OP_NEG) UNARY_CASE(OP_ABS)
	UNARY_CASE(OP_GELU) UNARY_CASE(OP_SILU)
	UNARY_CASE(OP_RECIPROCAL) UNARY_CASE(OP_FLOOR) UNARY_CASE(OP_CEIL)
	UNARY_CASE(OP_ROUND) UNARY_CASE(OP_SIGN) UNARY_CASE(OP_SOFTPLUS)
	UNARY_CASE(OP_SOFTSIGN) UNARY_CASE(OP_MISH) UNARY_CASE(OP_ELU) UNARY_CASE(OP_SELU)
	UNARY_CASE(OP_LEAKYRELU) UNARY_CASE(OP_CELU) UNARY_CASE(OP_THRESHOLDEDRELU)
	UNARY_CASE(OP_SHRINK) UNARY_CASE(OP_SIN) UNARY_CASE(OP_COS) UNARY_CASE(OP_TAN)
	UNARY_CASE(OP_ASIN) UNARY_CASE(OP_ACOS) UNARY_CASE(OP_ATAN) UNARY_CASE(OP_SINH)
	UNARY_CASE(OP_COSH) UNARY_CASE(OP_ASINH) UNARY_CASE(OP_ACOSH) UNARY_CASE(OP_ATANH)
	default:
		return op_error(k->op, "not a unary operator");
	}
	return 0;
}

static int64_t unary_macs(const struct ir_graph *g, const struct ir_op *op)
{
	return tensor_numel(&g->tensors[op->out[0]]);
}

#define UNARY_DEF(E)                                                         \
	const struct op_def op_def_##E = {                                   \
		.infer = unary_infer,                                        \
		.run_f32 = unary_f32,                                        \
		.lower = lower_unary_lut,                                    \
		.run_tpu = quant_run_unary,                                  \
		.macs = unary_macs,                                          \
		.slice_h = slice_h_same,                                     \
	};

UNARY_DEF(SQRT)
UNARY_DEF(EXP)
UNARY_DEF(LOG)
UNARY_DEF(ERF)
UNARY_DEF(TANH)
UNARY_DEF(SIGMOID)
UNARY_DEF(HARDSIGMOID)
UNARY_DEF(HARDSWISH)
UNARY_DEF(NEG)
UNARY_DEF(ABS)
UNARY_DEF(RECIPROCAL)
UNARY_DEF(FLOOR)
UNARY_DEF(CEIL)
UNARY_DEF(ROUND)
UNARY_DEF(SIGN)
UNARY_DEF(SOFTPLUS)
UNARY_DEF(SOFTSIGN)
UNARY_DEF(MISH)
UNARY_DEF(ELU)
UNARY_DEF(SELU)
UNARY_DEF(LEAKYRELU)
UNARY_DEF(CELU)
UNARY_DEF(THRESHOLDEDRELU)
UNARY_DEF(SHRINK)
UNARY_DEF(SIN)
UNARY_DEF(COS)
UNARY_DEF(TAN)
UNARY_DEF(ASIN)
UNARY_DEF(ACOS)
UNARY_DEF(ATAN)
UNARY_DEF(SINH)
UNARY_DEF(COSH)
UNARY_DEF(ASINH)
UNARY_DEF(ACOSH)
UNARY_DEF(ATANH)
UNARY_DEF(NOT)
UNARY_DEF(ISNAN)
UNARY_DEF(ISINF)
UNARY_DEF(GELU)
UNARY_DEF(SILU)
