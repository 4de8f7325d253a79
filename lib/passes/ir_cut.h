/* ir_cut.h - cut a graph at named tensors: they become its outputs, and
 * every op, weight and graph input they do not need is dropped (ir-cut).
 */
#ifndef TPUC_IR_CUT_H
#define TPUC_IR_CUT_H

#include "ir/ir.h"

/* Make the N tensors NAMES[] (as ir-print shows them: with or without the
 * leading '%' and the quotes; an op's name stands for its outputs) G's
 * outputs, in that order, and drop what they do not depend on.  G must be
 * at a stage before grouped.  -1 with a message naming the first name that
 * is no tensor or op of G, a weight, or a graph input. */
int ir_cut(struct ir_graph *g, int n, const char *const *names);

#endif
