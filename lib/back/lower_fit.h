/* lower_fit.h - ops that no cut of codegen fits in local memory become
 * several ops that fit (lib/back/lower_fit.c). */
#ifndef TPUC_LOWER_FIT_H
#define TPUC_LOWER_FIT_H

#include "chip/chip.h"
#include "ir/ir.h"

/* Rewrite the ops of Tpu graph g that no cut fits in the local memory of
 * chip c into ops that fit and compute the same values: elementwise ops on
 * refolded tensors, MatMuls in blocks of columns, global pools rows first;
 * also ops on [rows, few] tensors that leave most lanes idle, refolded or
 * with a leading axis of 1.  What still does not fit is left for codegen
 * to name. */
int lower_fit(struct ir_graph *g, const struct chip *c);

#endif
