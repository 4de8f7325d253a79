/* import_table.h - the table of ONNX operators the importer takes
 * (lib/front/import_table.c), read by the dispatcher lib/front/onnx_import.c.
 */
#ifndef TPUC_IMPORT_TABLE_H
#define TPUC_IMPORT_TABLE_H

#include <stddef.h>

#include "front/import_util.h"
#include "ir/ir.h"

#define ANY (1 << 16)      /* max_in: any number of inputs */
#define FROM_DEF (-1)      /* min_in and max_in: the IR op's (lib/ir/op_traits.h OP_IO) */

/* What the importer accepts for each ONNX operator.  attrs lists every
 * attribute it understands (others are refused); convert writes the IR
 * attributes and may drop inputs that became attributes, or change the op
 * (Upsample becomes Resize, Dropout Identity, a Clip with bounds computed
 * at run time Max and Min). */
struct node_rule {
	const char *onnx;                  /* ONNX op_type */
	int min_in, max_in;                /* input count before rewriting, or FROM_DEF */
	const char *attrs[12];
	int (*convert)(struct imp *im, struct ir_op *op);
	const char *ir;                    /* IR op name, when not the ONNX name */
	int max_out;                       /* outputs accepted (0: the IR op's) */
};

extern const struct node_rule node_rules[];
extern const size_t n_node_rules;

#endif
