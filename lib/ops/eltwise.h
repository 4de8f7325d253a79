/* eltwise.h - the broadcasting elementwise kernel of lib/ops/eltwise.c for
 * any dtype, exported for the importer's constant folder, which evaluates
 * integer Add and Mul (shape arithmetic) that the float kernels refuse.
 */
#ifndef TPUC_ELTWISE_H
#define TPUC_ELTWISE_H

#include "ir/op.h"

/* Run k's op (Add, Sub, Mul, Div, Pow, Mod, Max, Min, Sum, Mean, a
 * comparison, And/Or/Xor, BitShift, PRelu or Where) over views of any
 * numeric dtype with numpy broadcasting: floats computed in double, integers
 * in int64.  Returns -1 naming the op for other ops. */
int eltwise_run_any(struct kern *k);

#endif
