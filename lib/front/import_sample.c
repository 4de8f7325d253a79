/* import_sample.c - the ONNX converters of GridSample (lib/ops/gridsample.c)
 * and ReverseSequence (lib/ops/linalg.c): their attributes written out
 * with ONNX's defaults. */
#include "front/import_ops.h"
#include "front/import_util.h"
#include "ir/op.h"

int cv_gridsample(struct imp *im, struct ir_op *op)
{
	char mode[16], pad[16];
	if (attr_str(im, "mode", im->opset >= 20 ? "linear" : "bilinear", mode, sizeof mode) < 0 ||
	    attr_str(im, "padding_mode", "zeros", pad, sizeof pad) < 0)
		return -1;
	op_set_str(op, "mode", mode);
	op_set_str(op, "padding_mode", pad);
	return put_bool(im, op, "align_corners", 0);
}

int cv_reversesequence(struct imp *im, struct ir_op *op)
{
	return put_int(im, op, "batch_axis", 1) < 0 ? -1 : put_int(im, op, "time_axis", 0);
}
