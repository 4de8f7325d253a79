/* lanefold.h - merge-layout's lane views (lib/passes/pass_lanefold.c):
 * ops on [B, heads, M, N] tensors run on their view [1, B * heads, M, N],
 * row-wise ops on a narrow lane axis on the row view [1, rows, N]. */
#ifndef TPUC_LANEFOLD_H
#define TPUC_LANEFOLD_H
#include "passes/passes.h"

/* A merge-layout pattern: op i, a batched MatMul, Softmax or an op next
 * to one already folded, runs on the folded views of its tensors.  Returns
 * 1 if it rewrote, 0 if not. */
int lanefold_pattern(struct ir_graph *g, int i);
/* A merge-layout pattern: op i, which works row by row along the last
 * axis of a tensor whose lane axis is narrow, runs on its row view [1, P,
 * N] when every op it meets outside such ops is a view; a view back to
 * the shape of the view it reads is that view's input.  Returns 1 if it
 * rewrote, 0 if not. */
int rowview_pattern(struct ir_graph *g, int i);
#endif
