/* lower_kin.h - a Conv, Gemm or MatMul whose reduction over input channels
 * (K) does not fit local memory becomes partial ops over parts of K and
 * their sum at full precision; a grouped Conv first parts of its groups
 * (lib/back/lower_kin.c). */
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

/* Rewrite op i of Tpu graph g, a Conv or ConvTranspose of several groups
 * that does not fit chip c, into parts of whole groups (the most that fit,
 * one group at least, which is then an op of one group that lower_kin
 * splits along K), each reading its groups' input channels, weights and
 * per-channel parameters, concatenated along the channels: 1 when
 * rewritten, 0 when op i is not such an op. */
int lower_groups(struct ir_graph *g, int i, const struct chip *c, kin_note_fn note, void *ctx);

#endif
