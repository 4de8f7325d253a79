/* runtime_shape.h - a Reshape, Expand or Tile shape operand that is a graph
 * input or computed (lib/ops/runtime_shape.c). */
#ifndef TPUC_RUNTIME_SHAPE_H
#define TPUC_RUNTIME_SHAPE_H

#include "ir/op.h"

/* 0 when k's op has no run-time shape operand (input 1) checked against a
 * declared shape, or when its value gives the output shape the graph
 * holds; else -1 naming the op. */
int runtime_shape_check(const struct kern *k);
/* The output shape of op (Reshape, Expand, Tile) from the N values V of its
 * shape operand and an input of rank XR, shape XS: into WANT, RANK; -1 with
 * a message naming the op when they do not fit. */
int runtime_shape_want(const struct ir_op *op, int xr, const int64_t *xs, const int64_t *v, int n,
		       int64_t *want, int *rank);
/* Shape inference of a Reshape, Expand or Tile whose shape is input 1 with
 * no declared shape: from its value when known, else rank known and every
 * extent dynamic. */
int runtime_shape_infer(struct ir_graph *g, struct ir_op *op);

#endif
