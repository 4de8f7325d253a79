/* lower_wsplit.h - a Conv or pooling whose one output row does not fit
 * local memory runs on column blocks (lib/back/lower_wsplit.c). */
#ifndef TPUC_LOWER_WSPLIT_H
#define TPUC_LOWER_WSPLIT_H

#include "back/lower_split.h"
#include "chip/chip.h"
#include "ir/ir.h"

/* Rewrite op i of Tpu graph g (a Conv, MaxPool or AveragePool) when one
 * output row with the input rows its windows read does not fit the local
 * memory of chip c, or a row is longer than a DMA block: 1 when rewritten
 * (op i is then the Concat of the blocks), 0 when not such an op or no cut
 * along W fits. */
int lower_wsplit(struct ir_graph *g, int i, const struct chip *c, kin_note_fn note, void *ctx);

#endif
