/* import_datadep.c - the ONNX operators whose output extents depend on the
 * values of their inputs: NonZero, Compress, Unique and NonMaxSuppression
 * (lib/ops/datadep.c).  Their outputs have dynamic dimensions
 * (formats/tpuc-ir.5); with every input a constant (an initializer, a
 * Constant node, a --bind array or a folded subgraph) the import folds
 * them like any op.  Used by the table lib/front/import_table.c.
 */
#include <string.h>

#include "front/import_ops.h"
#include "front/import_util.h"
#include "ir/ir.h"

int cv_datadep(struct imp *im, struct ir_op *op)
{
	const char *type = im->node->op_type;
	int min = !strcmp(type, "Unique") ? 11 : !strcmp(type, "NonMaxSuppression") ? 10 : 9;
	if (im->opset < min)
		return node_err(im, "unsupported operator in opset %d", im->opset);
	if (attr_find(im->node, "axis")) {
		int64_t axis;
		if (attr_int(im, "axis", 0, &axis) < 0)
			return -1;
		op_set_int(op, "axis", axis);
	}
	if (!strcmp(type, "Unique"))
		return put_int(im, op, "sorted", 1);
	if (!strcmp(type, "NonMaxSuppression"))
		return put_int(im, op, "center_point_box", 0);
	return 0;
}
