/* ir_print.h - a graph of any dialect and stage as readable text: MLIR-like
 * lines, one op a line, or Graphviz DOT.  ir-print is a thin main over it.
 *
 * The text form (man/man1/ir-print.1 gives it in full):
 *
 *   // tpuc ir: dialect top, stage canonical, 2 ops, 5 tensors
 *   func @net(%x: f32[1,3,8,8]) -> (%z: f32[1,4,8,8]) {
 *     %z = Conv(%x, @w, @b) {strides=[1,1], pads=[1,1,1,1], do_relu=1} : (f32[1,3,8,8], f32[4,3,3,3], f32[4]) -> f32[1,4,8,8]
 *     ...
 *   }
 *
 * Activations are %name, weights @name, absent optional inputs `none`;
 * names that are not plain identifiers are quoted.  Quantised types carry
 * their scale (`i8[1,64,56,56]<scale=0.0123>`); ops of a grouped or
 * addressed graph end in a comment with group, placement and addresses.
 */
#ifndef TPUC_IR_PRINT_H
#define TPUC_IR_PRINT_H

#include <stdio.h>

#include "ir/ir.h"

/* Print g as text to f: the header comment, the func line, one line per op
 * in graph order (each starting with two spaces and `%` or `@`), and `}`.
 * Returns 0, or -1 with a message when writing fails. */
int ir_print_text(FILE *f, const struct ir_graph *g);

/* Print g as a Graphviz digraph to f: one box per op, one ellipse per graph
 * input and output, one edge per activation from producer to consumer
 * labelled with its name and type; weights are listed inside the op box.
 * Returns 0, or -1 with a message when writing fails. */
int ir_print_dot(FILE *f, const struct ir_graph *g);

#endif
