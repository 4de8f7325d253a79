/* import_detect.c - the ONNX converters of MaxUnpool and RoiAlign
 * (lib/ops/detect.c): their attributes written out with ONNX's defaults;
 * MaxUnpool's output_shape input, when given, becomes attribute
 * output_shape when constant, and stays input 2 when not.
 */
#include "front/import_ops.h"
#include "front/import_util.h"
#include "ir/ir.h"

int cv_maxunpool(struct imp *im, struct ir_op *op)
{
	int64_t v[2 * IR_MAX_RANK];
	int n;
	static const char *const names[] = { "kernel_shape", "strides", "pads" };
	if (!attr_find(im->node, "kernel_shape"))
		return node_err(im, "attribute 'kernel_shape' is required");
	for (int i = 0; i < 3; i++) {
		if (!attr_find(im->node, names[i]))
			continue;
		if (attr_ints(im, names[i], v, 2 * IR_MAX_RANK, &n) < 0)
			return -1;
		op_set_ints(op, names[i], n, v);
	}
	if (op->n_in > 2 && op->in[2] >= 0 && !im->g->tensors[op->in[2]].data)
		return 0;   /* output_shape at run time: input 2 */
	if (op->n_in > 2 && op->in[2] >= 0) {
		if (const_ints(im, op->in[2], "output_shape", v, IR_MAX_RANK, &n) < 0)
			return -1;
		op_set_ints(op, "output_shape", n, v);
	}
	op->n_in = 2;
	return 0;
}

int cv_roialign(struct imp *im, struct ir_op *op)
{
	char mode[16], ct[24];
	if (attr_str(im, "mode", "avg", mode, sizeof mode) < 0 ||
	    attr_str(im, "coordinate_transformation_mode",
		     im->opset >= 16 ? "half_pixel" : "output_half_pixel", ct, sizeof ct) < 0)
		return -1;
	op_set_str(op, "mode", mode);
	op_set_str(op, "coordinate_transformation_mode", ct);
	if (put_int(im, op, "output_height", 1) < 0 || put_int(im, op, "output_width", 1) < 0 ||
	    put_int(im, op, "sampling_ratio", 0) < 0)
		return -1;
	return put_float(im, op, "spatial_scale", 1.0);
}
