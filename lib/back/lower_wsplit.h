/* lower_wsplit.h - an op whose windows along an axis do not fit local
 * memory runs on blocks of its output along that axis
 * (lib/back/lower_wsplit.c). */
#ifndef TPUC_LOWER_WSPLIT_H
#define TPUC_LOWER_WSPLIT_H

#include "back/lower_split.h"
#include "chip/chip.h"
#include "ir/ir.h"

/* Rewrite op i of Tpu graph g, an op with a window rule (op_def.
 * split_window: Conv, MaxPool, AveragePool, ConvTranspose along W; Pad,
 * DepthToSpace, SpaceToDepth, Resize), into parts over blocks of its
 * output along the outermost axis where a block fits chip c: 1 when
 * rewritten (op i is then the Concat of the blocks), 0 when not such an op
 * or no block fits. */
int lower_wsplit(struct ir_graph *g, int i, const struct chip *c, kin_note_fn note, void *ctx);

#endif
