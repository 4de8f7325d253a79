/* lower_dtype.h - top2tpu's refusal of dtypes the chip lacks
 * (lib/back/lower_dtype.c). */
#ifndef TPUC_LOWER_DTYPE_H
#define TPUC_LOWER_DTYPE_H

#include "ir/ir.h"

/* -1 with a message naming the tensor or op when TOP holds an f64, u16,
 * u32 or u64 tensor, an f32-only op (OPF_F32_ONLY) holds another dtype, a
 * Conv or pooling is 3-D or a Conv's weight is not a constant; else 0. */
int lower_dtype_check(const struct ir_graph *top);

#endif
