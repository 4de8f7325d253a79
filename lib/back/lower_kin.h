/* lower_kin.h - a Conv, Gemm or MatMul whose reduction over input channels
 * (K) does not fit local memory becomes partial ops over parts of K and
 * their sum at full precision (lib/back/lower_kin.c). */
#ifndef TPUC_LOWER_KIN_H
#define TPUC_LOWER_KIN_H

#include "back/lower_split.h"
#include "chip/chip.h"
#include "ir/ir.h"

/* Rewrite op i of Tpu graph g when its reduction axis is what keeps it
 * from fitting the local memory of chip c: 1 when rewritten (op i then is
 * the last op of the rewrite, writing the same output), 0 when it is not
 * such an op or splitting K would not make it fit. */
int lower_kin(struct ir_graph *g, int i, const struct chip *c, kin_note_fn note, void *ctx);

#endif
