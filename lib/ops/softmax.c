/* softmax.c - Softmax, LogSoftmax and Hardmax along attribute axis
 * (non-negative); with coerce2d=1 (ONNX opsets before 13) they normalise over
 * every axis from axis on, as one flattened row.  f32; f64 in double.
 */
#include <math.h>
#include <string.h>

#include "ops/kern_util.h"
#include "ir/op.h"
#include "quant/quant.h"
#include "ops/xformer_i8.h"

static int softmax_infer(struct ir_graph *g, struct ir_op *op)
{
	const struct ir_tensor *x = op_in(g, op, 0);
	if (x->dtype != DT_F32 && x->dtype != DT_F64)
		return op_error(op, "dtype %s is not supported (f32 or f64)", dtype_name(x->dtype));
	if (x->rank == 0 || norm_axis(op_int(op, "axis", -1), x->rank) < 0)
		return op_error(op, "axis out of range");
	return infer_same(g, op);
}

/* f64: the same in double throughout. */
static int softmax_f64(struct kern *k, int64_t outer, int64_t n, int64_t inner)
{
	const double *xd = k->in[0].data;
	double *yd = k->out[0].data;
	enum op_type t = k->op->type;
	for (int64_t o = 0; o < outer * inner; o++) {
		const double *xp = xd + (o / inner) * n * inner + o % inner;
		double *yp = yd + (o / inner) * n * inner + o % inner;
		double mx = -INFINITY, sum = 0;
		int64_t arg = 0;
		for (int64_t i = 0; i < n; i++)
			if (xp[i * inner] > mx) {
				mx = xp[i * inner];
				arg = i;
			}
		for (int64_t i = 0; i < n && t != OP_HARDMAX; i++)
			sum += exp(xp[i * inner] - mx);
		for (int64_t i = 0; i < n; i++)
			yp[i * inner] = t == OP_HARDMAX ? i == arg : t == OP_SOFTMAX ?
					exp(xp[i * inner] - mx) / sum : xp[i * inner] - mx - log(sum);
	}
	return 0;
}

static int softmax_f32(struct kern *k)
{
	if (k->in[0].dtype != DT_F64 && kern_need_f32(k) < 0)
		return -1;
	const struct view *x = &k->in[0];
	enum op_type t = k->op->type;
	int r = x->rank, axis = norm_axis(op_int(k->op, "axis", -1), r);
	if (axis < 0)
		return op_error(k->op, "axis out of range");
	int64_t outer = 1, n = 1, inner = 1;
	for (int d = 0; d < axis; d++)
		outer *= x->shape[d];
	if (op_int(k->op, "coerce2d", 0)) {
		for (int d = axis; d < r; d++)
			n *= x->shape[d];
	} else {
		n = x->shape[axis];
		for (int d = axis + 1; d < r; d++)
			inner *= x->shape[d];
	}
	if (x->dtype == DT_F64)
		return softmax_f64(k, outer, n, inner);
	const float *xd = x->data;
	float *yd = k->out[0].data;
	int nt = kern_threads(k, outer * inner, n * 8);

	#pragma omp parallel for num_threads(nt) schedule(static)
	for (int64_t o = 0; o < outer * inner; o++) {
		const float *xp = xd + (o / inner) * n * inner + o % inner;
		float *yp = yd + (o / inner) * n * inner + o % inner;
		float mx = -INFINITY;
		int64_t arg = 0;
		for (int64_t i = 0; i < n; i++)
			if (xp[i * inner] > mx) {
				mx = xp[i * inner];
				arg = i;
			}
		if (t == OP_HARDMAX) {
			for (int64_t i = 0; i < n; i++)
				yp[i * inner] = i == arg;
			continue;
		}
		double sum = 0;
		for (int64_t i = 0; i < n; i++) {
			float e = expf(xp[i * inner] - mx);
			sum += e;
			if (t == OP_SOFTMAX)
				yp[i * inner] = e;
		}
		if (t == OP_SOFTMAX) {
			float inv = (float)(1.0 / sum);
			for (int64_t i = 0; i < n; i++)
				yp[i * inner] *= inv;
		} else {
			float ls = (float)log(sum);
			for (int64_t i = 0; i < n; i++)
				yp[i * inner] = xp[i * inner] - mx - ls;
		}
	}
	return 0;
}

static int64_t softmax_macs(const struct ir_graph *g, const struct ir_op *op)
{
	return 3 * tensor_numel(&g->tensors[op->out[0]]);
}

/* Rows along H are independent unless the op normalises across them:
 * axis 2, or from axis 2 or before with coerce2d. */
static void softmax_slice_h(const struct ir_graph *g, const struct ir_op *op,
			    int oh0, int oh1, int *ih0, int *ih1)
{
	int axis = norm_axis(op_int(op, "axis", -1), g->tensors[op->in[0]].rank);
	int ok = op_int(op, "coerce2d", 0) ? axis > 2 : axis != 2;
	*ih0 = ok ? oh0 : -1;
	*ih1 = ok ? oh1 : 0;
}

/* Parts along any axis it does not normalise. */
static int softmax_split_axis(const struct ir_graph *g, const struct ir_op *op, int ax, int *in_ax)
{
	int axis = norm_axis(op_int(op, "axis", -1), g->tensors[op->in[0]].rank);
	if (op_int(op, "coerce2d", 0) ? ax >= axis : ax == axis)
		return 0;
	return split_axis_x0(g, op, ax, in_ax);
}

const struct op_def op_def_SOFTMAX = {
	.infer = softmax_infer, .run_f32 = softmax_f32, .lower = softmax_lower, .run_tpu = softmax_tpu,
	.macs = softmax_macs,
	.slice_h = softmax_slice_h, .split_axis = softmax_split_axis,
};

const struct op_def op_def_LOGSOFTMAX = {
	.infer = softmax_infer, .run_f32 = softmax_f32, .run_tpu = quant_run_f32,
	.macs = softmax_macs,
	.slice_h = softmax_slice_h, .split_axis = softmax_split_axis,
};

const struct op_def op_def_HARDMAX = {
	.infer = softmax_infer, .run_f32 = softmax_f32, .run_tpu = quant_run_f32,
	.macs = softmax_macs,
	.slice_h = softmax_slice_h, .split_axis = softmax_split_axis,
};
