/* import_signal.c - ONNX converters (lib/front/import_ops.h) of the audio
 * front-end operators (lib/ops/signal.c): their scalar inputs, which fix
 * output shapes, become attributes when constant (a window's size and
 * STFT's frame_step and frame_length stay inputs when not: the extents
 * they fix are dynamic); attribute output_datatype becomes the dtype name.
 * The signal and STFT's window stay run-time inputs.
 */
#include <math.h>

#include "front/import_ops.h"
#include "front/import_util.h"
#include "ir/op.h"

/* Attribute output_datatype (an ONNX data type, default float) as the IR
 * attribute "dtype". */
static int put_dtype(struct imp *im, struct ir_op *op)
{
	int64_t t;
	if (attr_int(im, "output_datatype", 1, &t) < 0)
		return -1;
	int dt = t >= INT32_MIN && t <= INT32_MAX ? dtype_from_onnx((int32_t)t) : -1;
	if (dt < 0 || dt == DT_BOOL)
		return node_err(im, "output_datatype %lld is not a numeric type", (long long)t);
	op_set_str(op, "dtype", dtype_name((enum ir_dtype)dt));
	return 0;
}

/* Constant input i holding one integer, as attribute NAME. */
static int put_scalar_int(struct imp *im, struct ir_op *op, int i, const char *name)
{
	double v;
	if (const_scalar(im, op->in[i], name, &v) < 0)
		return -1;
	if (!(v >= -9e15 && v <= 9e15) || v != floor(v))
		return node_err(im, "%s must be an integer, not %g", name, v);
	op_set_int(op, name, (int64_t)v);
	return 0;
}

int cv_window(struct imp *im, struct ir_op *op)
{
	if (im->g->tensors[op->in[0]].data) {   /* else the size at run time: input 0 */
		if (put_scalar_int(im, op, 0, "size") < 0)
			return -1;
		op->n_in = 0;
	}
	if (put_dtype(im, op) < 0)
		return -1;
	return put_bool(im, op, "periodic", 1);
}

int cv_melweightmatrix(struct imp *im, struct ir_op *op)
{
	static const char *const ints[] = { "num_mel_bins", "dft_length", "sample_rate" };
	for (int i = 0; i < 3; i++)
		if (put_scalar_int(im, op, i, ints[i]) < 0)
			return -1;
	double lo, hi;
	if (const_scalar(im, op->in[3], "lower_edge_hertz", &lo) < 0 ||
	    const_scalar(im, op->in[4], "upper_edge_hertz", &hi) < 0 || put_dtype(im, op) < 0)
		return -1;
	op_set_float(op, "lower_edge_hertz", lo);
	op_set_float(op, "upper_edge_hertz", hi);
	op->n_in = 0;
	return 0;
}

int cv_dft(struct imp *im, struct ir_op *op)
{
	if (im->opset >= 20)
		return node_err(im, "the opset %d form (axis as an input) is not supported", im->opset);
	if (op->n_in > 1 && op->in[1] >= 0 && put_scalar_int(im, op, 1, "dft_length") < 0)
		return -1;
	op->n_in = 1;
	if (put_int(im, op, "axis", 1) < 0 || put_bool(im, op, "inverse", 0) < 0)
		return -1;
	return put_bool(im, op, "onesided", 0);
}

int cv_stft(struct imp *im, struct ir_op *op)
{
	int step = op->in[1], len = op->n_in > 3 ? op->in[3] : -1;
	int rt = !im->g->tensors[step].data || (len >= 0 && !im->g->tensors[len].data);
	if (rt) {   /* [signal, window, frame_step, frame_length], read at run time */
		int in[4] = { op->in[0], op->n_in > 2 ? op->in[2] : -1, step, len };
		op_set_inputs(op, 4, in);
		return put_bool(im, op, "onesided", 1);
	}
	if (put_scalar_int(im, op, 1, "frame_step") < 0)
		return -1;
	if (len >= 0 && put_scalar_int(im, op, 3, "frame_length") < 0)
		return -1;
	int win = op->n_in > 2 ? op->in[2] : -1;
	op->in[1] = win;
	op->n_in = win >= 0 ? 2 : 1;
	return put_bool(im, op, "onesided", 1);
}
