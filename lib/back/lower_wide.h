/* lower_wide.h - ops with more operands than a compute command has slots
 * become ones that fit (lib/back/lower_wide.c). */
#ifndef TPUC_LOWER_WIDE_H
#define TPUC_LOWER_WIDE_H

#include "ir/ir.h"

/* A Concat, Sum, Max or Min of many inputs into a tree of narrower ops of
 * the same type, each new op just before the op it feeds; an LSTM, GRU or
 * RNN without its absent inputs and unused outputs (attributes slots,
 * out_slots) and, an LSTM still too wide, with B and P packed (bp).  -1
 * naming the op when one still does not fit. */
int lower_split_wide(struct ir_graph *g);

#endif
