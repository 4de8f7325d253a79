/* lower_order.h - the ops that only feed graph outputs moved up to just
 * after what they read (lib/back/lower_order.c). */
#ifndef TPUC_LOWER_ORDER_H
#define TPUC_LOWER_ORDER_H

#include "ir/ir.h"

/* Reorder g's ops: an op whose results only one graph output's ops read
 * (a detector head's Conv and decode, whose input the rest of the network
 * reads on; the op nearest a graph output, through ops of one activation,
 * that joins several activations makes each of them an output of its own)
 * goes just after the last op of no such cone, or of another, that writes
 * what it reads, in the order the ops had among themselves; every other
 * op (and an If, Loop or Scan) keeps its place.  The result's bytes then leave for DDR while the rest of the
 * network computes instead of after it.  A valid topological order, the
 * values unchanged.  Returns the number of ops that moved up. */
int lower_outputs_early(struct ir_graph *g);

#endif
