/* plan_ops.h - one op of the plan as oneDNN primitives (lib/run/plan_ops.c). */
#ifndef TPUC_PLAN_OPS_H
#define TPUC_PLAN_OPS_H

#include "run/plan_mem.h"

/* ---- one op as oneDNN primitives ---- */

/* Plan op opi with oneDNN primitives (and the ops after it they fold in):
 * 1 when planned, 0 when the op (or this case of it) is for its kernel,
 * -1 with a message on error. */
int plan_dnnl_op(struct plan *p, int opi);

#endif
