/* registry.c - the operator table: one op_def per line of OP_LIST (lib/ir/ir.h),
 * each defined by its file in lib/ops/.  Declared in lib/ir/op.h, so that the
 * stages below reach the operators only through this table. */
#include "ir/op.h"

#define X_DECL(e, c, s) extern const struct op_def op_def_##e;
OP_LIST(X_DECL)
#undef X_DECL

#define X_ENTRY(e, c, s) [OP_##e] = &op_def_##e,
const struct op_def *const op_defs[OP_COUNT] = { OP_LIST(X_ENTRY) };
#undef X_ENTRY
