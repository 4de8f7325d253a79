/* runtime_shape.h - the run-time check of a Reshape, Expand or Tile shape
 * operand that is a graph input or computed (lib/ops/runtime_shape.c). */
#ifndef TPUC_RUNTIME_SHAPE_H
#define TPUC_RUNTIME_SHAPE_H

#include "ir/op.h"

/* 0 when k's op has no run-time shape operand (input 1), or when its value
 * gives the output shape the graph holds; else -1 naming the op. */
int runtime_shape_check(const struct kern *k);

#endif
