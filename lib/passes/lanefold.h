/* lanefold.h - merge-layout's batch fold (lib/passes/pass_lanefold.c):
 * ops on [B, heads, M, N] tensors run on their view [1, B * heads, M, N]. */
#ifndef TPUC_LANEFOLD_H
#define TPUC_LANEFOLD_H
#include "passes/passes.h"

/* A merge-layout pattern: op i, a batched MatMul, Softmax or an op next
 * to one already folded, runs on the folded views of its tensors.  Returns
 * 1 if it rewrote, 0 if not. */
int lanefold_pattern(struct ir_graph *g, int i);
#endif
