/* batchnorm.c - BatchNormalization (inference form):
 * y = (x - mean[c]) / sqrt(var[c] + epsilon) * scale[c] + B[c].
 * Inputs x, scale, B, mean, var; top-opt folds it into a conv or turns it
 * into Scale.  One whose parameters are not constants (graph inputs)
 * reaches the Tpu dialect as itself, a float op (the fallback mode in
 * int8), run by the same kernel slice by slice along H, its parameters
 * whole (never in chunks of channels: bn_slice_h is not slice_h_same).
 */
#include <math.h>
#include <stdlib.h>

#include "ops/kern_util.h"
#include "ir/op.h"
#include "quant/quant.h"

static int bn_infer(struct ir_graph *g, struct ir_op *op)
{
	const struct ir_tensor *x = op_in(g, op, 0);
	if (x->rank < 2)
		return op_error(op, "input must have a channel axis");
	for (int i = 1; i < 5; i++)
		if (tensor_numel(op_in(g, op, i)) != x->shape[1])
			return op_error(op, "parameter %d does not have %lld channels", i,
					(long long)x->shape[1]);
	return infer_same(g, op);
}

/* Float reference: y = x * a[c] + b[c] with a = scale / sqrt(var + epsilon)
 * and b = B - mean * a. */
static int bn_f32(struct kern *k)
{
	if (kern_need_f32(k) < 0)
		return -1;
	int64_t c = k->in[0].shape[1];
	double eps = op_float(k->op, "epsilon", 1e-5);
	const float *sc = k->in[1].data, *bb = k->in[2].data, *mean = k->in[3].data,
		    *var = k->in[4].data;
	float *a = xmalloc((size_t)c * 2 * sizeof *a), *b = a + c;
	for (int64_t i = 0; i < c; i++) {
		a[i] = (float)(sc[i] / sqrt((double)var[i] + eps));
		b[i] = (float)(bb[i] - (double)mean[i] * a[i]);
	}
	int rc = kern_channel_affine(k, a, b);
	free(a);
	return rc;
}

static void bn_slice_h(const struct ir_graph *g, const struct ir_op *op,
		       int oh0, int oh1, int *ih0, int *ih1)
{
	*ih0 = oh0;
	*ih1 = oh1;
}

const struct op_def op_def_BATCHNORM = {
	.run_f32 = bn_f32,
	.run_tpu = quant_run_f32,
	.infer = bn_infer,
	.slice_h = bn_slice_h, .split_axis = split_axis_chan,
};
