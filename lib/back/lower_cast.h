/* lower_cast.h - float Casts moved before the copies they follow, so that
 * the copies stay copies in place (lib/back/lower_cast.c). */
#ifndef TPUC_LOWER_CAST_H
#define TPUC_LOWER_CAST_H

#include "ir/ir.h"

/* A Cast between float types of the result of a copy op (a Concat along
 * an axis with only axes of size 1 before it, a Reshape: isa_is_copy)
 * that only the Cast reads becomes a Cast of each of the copy's inputs,
 * just before it, the copy writing the Cast's result (a detector's bf16
 * heads joined and then widened to its f32 output: each head widened,
 * and stored straight into the output by addr-assign's copies in place).
 * Repeated through chains of copies.  A quantising Cast (to i8 or u8) of
 * a Transpose of float input goes before it too: a TensorFlow model's NHWC
 * input is transposed as int8, a quarter of the bytes.  The values are
 * unchanged: a Cast acts on each element alone.  Returns 0. */
int lower_cast_copies(struct ir_graph *g);

#endif
