/* activation.c - elementwise activations: Relu (max(x, 0)) and Clip
 * (min(max(x, min), max); attributes min and max, absent = unbounded).
 */
#include <math.h>

#include "ops/anydtype.h"
#include "ops/kern_util.h"
#include "ir/op.h"
#include "back/lower.h"
#include "quant/quant.h"

static int act_infer(struct ir_graph *g, struct ir_op *op)
{
	return infer_same(g, op);
}

/* Float references; min and max default to no bound. */
static int clamp_f32(struct kern *k, float lo, float hi)
{
	if (!kern_all_f32(k))
		return clip_run_any(k);   /* i8 Clip ... */
	if (kern_need_f32(k) < 0)
		return -1;
	kern_clamp(k, k->out[0].data, k->in[0].data, view_numel(&k->out[0]), lo, hi);
	return 0;
}

static int relu_f32(struct kern *k)
{
	return clamp_f32(k, 0.0f, INFINITY);
}

static int clip_f32(struct kern *k)
{
	return clamp_f32(k, (float)op_float(k->op, "min", -INFINITY),
			 (float)op_float(k->op, "max", INFINITY));
}

/* Int8 kernels: the output keeps the input's scale and zero point z
 * (lower_default), so Relu is max(q, z) and Clip clamps to its bounds
 * quantised with that scale and zero point (formats/tpuc-quant.5). */
static int clamp_i8(struct kern *k, int lo, int hi)
{
	enum ir_dtype dt = k->in[0].dtype;
	if (!quant_is_q(dt) || k->out[0].dtype != dt)
		return op_error(k->op, "int8 kernel needs i8 or u8 input and the same output");
	const void *x = k->in[0].data;
	void *y = k->out[0].data;
	int64_t n = view_numel(&k->out[0]);
	for (int64_t i = 0; i < n; i++) {
		int v = quant_get(x, dt, i);
		quant_put(y, dt, i, v < lo ? lo : v > hi ? hi : v);
	}
	return 0;
}

static int relu_tpu(struct kern *k)
{
	if (quant_is_float(k->out[0].dtype))
		return quant_run_f32(k);
	return clamp_i8(k, k->in[0].zero_point, QUANT_UMAX);
}

static int clip_tpu(struct kern *k)
{
	if (quant_is_float(k->out[0].dtype))
		return quant_run_f32(k);
	float s = k->in[0].scale;
	enum ir_dtype dt = k->in[0].dtype;
	const struct ir_attr *mn = op_attr(k->op, "min"), *mx = op_attr(k->op, "max");
	int lo, hi;
	quant_range(dt, &lo, &hi);
	int z = k->in[0].zero_point;
	if (mn)
		lo = quant_f32_to_qz_one((float)op_float(k->op, "min", 0), s, z, dt);
	if (mx)
		hi = quant_f32_to_qz_one((float)op_float(k->op, "max", 0), s, z, dt);
	return clamp_i8(k, lo, hi);
}

const struct op_def op_def_RELU = {
	.infer = act_infer, .run_f32 = relu_f32, .lower = lower_default, .run_tpu = relu_tpu,
	.slice_h = slice_h_same,
};

const struct op_def op_def_CLIP = {
	.infer = act_infer, .run_f32 = clip_f32, .lower = lower_default, .run_tpu = clip_tpu,
	.slice_h = slice_h_same,
};
