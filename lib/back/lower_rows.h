/* lower_rows.h - reductions and normalisations whose one row does not fit
 * a lane, computed in stages (lib/back/lower_rows.c). */
#ifndef TPUC_LOWER_ROWS_H
#define TPUC_LOWER_ROWS_H

#include "back/lower_split.h"
#include "chip/chip.h"
#include "ir/ir.h"

/* Rewrite op i of Tpu graph g, a reduction (Reduce*, ArgMax, ArgMin, the
 * global pools),
 * CumSum, Softmax, LogSoftmax, Hardmax or normalisation (LayerNormalization,
 * InstanceNormalization, MeanVarianceNormalization, LpNormalization) that
 * no cut fits on chip c because of
 * the axes it reduces over, into stages that each reduce less (op i
 * becomes the last stage; the others are given to note, placed before
 * it).  1 when rewritten, 0 when op i is not such an op. */
int lower_rows(struct ir_graph *g, int i, const struct chip *c, kin_note_fn note, void *ctx);

#endif
