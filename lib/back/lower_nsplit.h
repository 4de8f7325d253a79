/* lower_nsplit.h - an op that does not fit local memory, and computes each
 * index of its first axis on its own, split along that axis
 * (lib/back/lower_nsplit.c). */
#ifndef TPUC_LOWER_NSPLIT_H
#define TPUC_LOWER_NSPLIT_H

#include "back/lower_kin.h"
#include "chip/chip.h"
#include "ir/ir.h"

/* Rewrite op i of Tpu graph g into ops over parts of its first axis and a
 * Concat of their results (op i becomes the Concat of its first output);
 * new ops are given to note, placed before op i.  1 when rewritten, 0 when
 * op i is not such an op or no part of that axis fits chip c. */
int lower_nsplit(struct ir_graph *g, int i, const struct chip *c, kin_note_fn note, void *ctx);

#endif
