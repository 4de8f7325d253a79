/* lower_dtype.h - what the chip lacks (lib/back/lower_dtype.c): top2tpu
 * refuses the dtypes it has no form for, and places on the host the ops it
 * cannot run. */
#ifndef TPUC_LOWER_DTYPE_H
#define TPUC_LOWER_DTYPE_H

#include "ir/ir.h"

/* -1 with a message naming the tensor when TOP holds an f64, u16, u32 or
 * u64 tensor; else 0. */
int lower_dtype_check(const struct ir_graph *top);

/* 1 when op of TOP runs on the host (PLACE_HOST): it has a float kernel
 * but no chip form (no lowering and no chip kernel: MaxUnpool, RoiAlign,
 * DFT, GridSample, ...), it is 3-D (a rank-5 Conv, ConvTranspose or
 * pooling), its shape input (Reshape, Expand, Tile) or Conv weight is not
 * a constant, or it is an f32-only op (OPF_F32_ONLY) holding another
 * dtype; else 0. */
struct ir_op;
int lower_on_host(const struct ir_graph *top, const struct ir_op *op);

/* The subgraph attributes of OP (If's two branches, a Loop's or Scan's
 * body) into SUB, their count returned (at most 2). */
int lower_bodies(const struct ir_op *op, struct ir_graph **sub);

#endif
