/* pass_fold_qdq.c - fold-qdq: keep the model's own quantisation as
 * annotations (formats/tpuc-quant.5, "Pre-quantised models").
 *
 * The pattern, as TVM's QNN pattern tables and onnxruntime's QDQ
 * transformer read a QDQ model: a DequantizeLinear of a QuantizeLinear of
 * float tensor X, both per tensor with the same constant scale and zero
 * point, is X as the model quantised it.  X takes the scale, zero point
 * and integer dtype (its qdtype), the Dequantize is bypassed and the
 * Quantize dropped when nothing else reads it.  top2tpu then lowers the
 * ops around X in int8 with these parameters in place of a calibration
 * table's.  A pair it cannot fold (per-axis activations, scales computed
 * at run time, X already annotated otherwise) stays and runs in float.
 * Dequantize of a constant (weights, biases) is fold-const's: the weight
 * becomes float, and lowering requantises it per channel (max |w| / 127,
 * which is the model's scale when its weights are symmetric and reach
 * +-127, as onnxruntime's quantiser writes them).
 */
#include <math.h>

#include "ir/op.h"
#include "passes/passes.h"

/* The constant scalar value of input IDX of OP as a double: a scale (f32)
 * or a zero point (i8, u8; absent is 0).  -1 if not a constant scalar. */
static int param(const struct ir_graph *g, const struct ir_op *op, int idx, double *v)
{
	*v = 0;
	if (idx >= op->n_in || op->in[idx] < 0)
		return idx == 2 ? 0 : -1;
	const struct ir_tensor *t = &g->tensors[op->in[idx]];
	if (!t->data || tensor_numel(t) != 1)
		return -1;
	switch (t->dtype) {
	case DT_F32: *v = *(const float *)t->data; return 0;
	case DT_I8: *v = *(const int8_t *)t->data; return 0;
	case DT_U8: *v = *(const uint8_t *)t->data; return 0;
	default: return -1;
	}
}

static int qdq_pattern(struct ir_graph *g, int i)
{
	struct ir_op *d = &g->ops[i];
	if (d->type != OP_DEQUANTIZELINEAR || d->n_in < 2 || d->in[0] < 0)
		return 0;
	int q = d->in[0], p = pass_producer(g, q);
	if (p < 0 || g->ops[p].type != OP_QUANTIZELINEAR)
		return 0;
	const struct ir_op *qo = &g->ops[p];
	double qs, qz, ds, dz;
	if (param(g, qo, 1, &qs) < 0 || param(g, qo, 2, &qz) < 0 ||
	    param(g, d, 1, &ds) < 0 || param(g, d, 2, &dz) < 0)
		return 0;
	if ((float)qs != (float)ds || qz != dz || !((float)qs > 0) || !isfinite((float)qs))
		return 0;
	int x = qo->in[0], y = d->out[0];
	struct ir_tensor *X = &g->tensors[x];
	enum ir_dtype dt = g->tensors[q].dtype;
	if (X->data || X->dtype != DT_F32)
		return 0;
	if (X->qdtype != DT_F32 && (X->qdtype != dt || X->scale != (float)qs ||
				    X->zero_point != (int)qz))
		return 0;
	if (pass_is_output(g, y) && (pass_producer(g, x) < 0 || pass_is_output(g, x)))
		return 0;
	X->qdtype = dt;
	X->scale = (float)qs;
	X->zero_point = (int)qz;
	op_set_inputs(d, 1, &x);
	if (!pass_bypass(g, i))
		return 0;
	if (pass_is_output(g, y)) {
		/* the producer of x now writes y */
		g->tensors[y].qdtype = dt;
		g->tensors[y].scale = (float)qs;
		g->tensors[y].zero_point = (int)qz;
	}
	if (pass_uses(g, q) == 0)
		g->ops[p].type = OP_COUNT;
	return 1;
}

int pass_fold_qdq(struct ir_graph *g)
{
	static const pattern_fn pats[] = { qdq_pattern };
	return rewrite_run(g, "fold-qdq", pats, 1);
}
