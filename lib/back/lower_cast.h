/* lower_cast.h - float Casts moved before the copies they follow, so that
 * the copies stay copies in place, and Casts for host ops moved beside the
 * chip op reading the same input (lib/back/lower_cast.c). */
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
 * a Transpose, Pad or Reshape of float input goes before it too: a
 * TensorFlow model's NHWC input is transposed as int8, a quarter of the
 * bytes; and the quantising Casts, on one dtype, scale and zero point, of
 * Slices that are all of a float tensor's readers and together hold at
 * least its elements become one Cast of it (lower_depth's windows of a
 * video network's input).  The values are
 * unchanged: a Cast acts on each element alone.  Returns 0. */
int lower_cast_copies(struct ir_graph *g);

/* A Cast on the chip whose result only host ops read (lower_host's f32
 * boundary, emitted just before the host op) moves back to just after the
 * last op on the chip before it that reads the same input, so that the two
 * ops stand side by side and layergroup can run them as one local group,
 * the input loaded once (a detector's score column per class, compared to
 * the threshold on the chip and widened for the host's GatherND).  Only
 * the order changes.  Returns the number of Casts moved. */
int lower_cast_hoist(struct ir_graph *g);

#endif
