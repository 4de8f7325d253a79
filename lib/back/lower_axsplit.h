/* lower_axsplit.h - an op that does not fit local memory split into parts
 * along one of its output axes, each computed alone
 * (lib/back/lower_axsplit.c). */
#ifndef TPUC_LOWER_AXSPLIT_H
#define TPUC_LOWER_AXSPLIT_H

#include "back/lower_split.h"
#include "chip/chip.h"
#include "ir/ir.h"

/* Rewrite op i of Tpu graph g into ops over parts of one output axis (the
 * op's rule, op_split_axis) and a Concat of their results (op i becomes
 * the Concat of its first output); new ops are given to note, placed
 * before op i.  1 when rewritten, 0 when no axis of op i can be cut or no
 * part of one fits chip c. */
int lower_axsplit(struct ir_graph *g, int i, const struct chip *c, kin_note_fn note, void *ctx);

#endif
