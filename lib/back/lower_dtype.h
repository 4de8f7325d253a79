/* lower_dtype.h - what the chip lacks (lib/back/lower_dtype.c): top2tpu
 * refuses the dtypes it has no form for, and places on the host the ops it
 * cannot run. */
#ifndef TPUC_LOWER_DTYPE_H
#define TPUC_LOWER_DTYPE_H

#include "ir/ir.h"

/* -1 with a message naming the tensor when TOP holds an f64, u16, u32 or
 * u64 tensor; else 0. */
int lower_dtype_check(const struct ir_graph *top);

/* The float dtype a mode computes in: f32, bf16 or f16 (int8: f32). */
enum ir_dtype lower_float_dtype(enum ir_mode m);

/* 1 for the arithmetic of the vector unit whose constant operands (a
 * bias, a scale, LayerNormalization's Scale and B, a box decode's grid)
 * stay f32 in float modes unless exact in the mode: the kernel computes in
 * f32 and only the result is rounded to bf16 or f16, as for Conv's and
 * Gemm's bias.  The cube's weights (Conv, Gemm, MatMul) and tables that
 * are only read (Gather) take the mode's dtype. */
int lower_f32_constants(enum op_type t);

/* 1 when op of TOP runs on the host (PLACE_HOST): it has a float kernel
 * but no chip form (no lowering and no chip kernel: MaxUnpool, RoiAlign,
 * DFT, GridSample, ...), it is 3-D (a rank-5 Conv, ConvTranspose or
 * pooling), it has an operand its chip form takes as an attribute given at
 * run time (more inputs than OP_IO's tpu_max_in: Reshape's shape, Slice's
 * starts, TopK's k ...) or a run-time Conv weight, it is an f32-only op
 * (OPF_F32_ONLY) holding another dtype, it reads or writes a dynamic tensor
 * (formats/tpuc-ir.5) or one without elements, or one that SHAPE_VAL (from
 * lower_shape_values, or NULL) marks; else 0. */
struct ir_op;
int lower_on_host(const struct ir_graph *top, const struct ir_op *op, const char *shape_val);

/* Per tensor of TOP, 1 if it is an integer value computed at run time from
 * a dynamic shape (Shape or Size of a dynamic tensor, and the integer
 * arithmetic on it: the sizes a Reshape or a TopK of run-time k takes):
 * shape arithmetic, which runs on the host as TPU-MLIR's shape ops run on
 * the CPU.  The caller frees the array. */
char *lower_shape_values(const struct ir_graph *top);

/* The subgraph attributes of OP (If's two branches, a Loop's or Scan's
 * body) into SUB, their count returned (at most 2). */
int lower_bodies(const struct ir_op *op, struct ir_graph **sub);

#endif
