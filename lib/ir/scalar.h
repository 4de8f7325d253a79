/* scalar.h - the float functions of one value that more than one kernel
 * computes: the unary ops' kernels and the LUTs built from them
 * (lib/ops/unary.c), the gates of LSTM, GRU and RNN (lib/ops/rnn.c).  One
 * definition each, so the interpreter, the INT8 tables tpu-sim reads and
 * the recurrent ops agree to the bit.
 */
#ifndef TPUC_IR_SCALAR_H
#define TPUC_IR_SCALAR_H

#include <math.h>

/* The logistic function as onnxruntime computes it (MLAS): a rational
 * approximation on x clamped to [-18, 18], the result clamped to [0, 1].
 * It differs from 1 / (1 + exp(-x)) by under 1e-7, but saturated outputs
 * become exactly 0 and 1 as in the framework, which matters to a model
 * whose output is a saturated sigmoid. */
static inline float scalar_sigmoid(float x)
{
	float v = x < -18.0f ? -18.0f : x > 18.0f ? 18.0f : x, s = v * v;
	float p = ((((4.37031012579801e-11f * s + 1.15627324459942e-07f) * s +
		     6.08574864600143e-05f) * s + 8.51377133304701e-03f) * s +
		   2.48287947061529e-01f) * v;
	float q = ((((6.10247389755681e-13f * s + 5.76102136993427e-09f) * s +
		     6.29106785017040e-06f) * s + 1.70198817374094e-03f) * s +
		   1.16817656904453e-01f) * s + 9.93151921023180e-01f;
	float y = p / q + 0.5f;
	return y < 0.0f ? 0.0f : y > 1.0f ? 1.0f : y;
}

static inline float scalar_silu(float x)
{
	return x * scalar_sigmoid(x);
}

/* log(1 + e^x) without overflow for large x. */
static inline float scalar_softplus(float x)
{
	return x > 0 ? x + log1pf(expf(-x)) : log1pf(expf(x));
}

static inline float scalar_softsign(float x)
{
	return x / (1.0f + fabsf(x));
}

/* Mish (ONNX opset 18): x * tanh(softplus(x)). */
static inline float scalar_mish(float x)
{
	return x * tanhf(scalar_softplus(x));
}

/* Gelu, exact (erf) or with approximate "tanh" when TANH_FORM. */
static inline float scalar_gelu(float x, int tanh_form)
{
	if (tanh_form)
		return 0.5f * x * (1.0f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)));
	return 0.5f * x * (1.0f + erff(x * 0.7071067811865476f));
}

#endif
