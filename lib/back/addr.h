/* addr.h - addr-assign: global memory (DDR) addresses for every tensor of a
 * grouped Tpu graph (formats/tpuc-isa.5, GLOBAL MEMORY).
 */
#ifndef TPUC_ADDR_H
#define TPUC_ADDR_H

#include <stddef.h>
#include <stdint.h>

#include "chip/chip.h"
#include "ir/ir.h"

#define ADDR_ALIGN 64   /* every tensor starts on a 64-byte boundary */

/* Assign ir_tensor.addr for every tensor of G (dialect tpu, stage grouped)
 * and set the stage to addressed.  The coefficient region comes first, from
 * address 0: weights packed in tensor order, each 64-byte aligned;
 * g->coeff_bytes is its size (a multiple of 64).  The neuron region follows
 * at address coeff_bytes: activations (graph inputs and outputs included)
 * share memory when their lifetimes do not overlap, placed largest first at
 * the lowest offset free over their lifetime (first fit); g->neuron_bytes
 * is its size.  A tensor lives from the op that writes it (graph inputs:
 * before the first op) to the last op that reads it (graph outputs: after
 * the last op), widened to the first and last op of those ops' layer
 * groups (ir_op.group), whose ops run interleaved.  Results of the ops of a
 * local group other than its last stay in local memory and keep addr -1,
 * unless an op after the group reads them or they are graph outputs (the
 * group stores them too).  Copies go in place (formats/tpuc-isa.5, GLOBAL
 * MEMORY): a Concat's input inside its output, a Reshape's input at its
 * output, a Slice's output inside its input, the outermost tensor placed
 * for all of their lifetimes, so that codegen moves nothing for them.
 * Fails when the regions exceed the chip's DDR. */
int addr_assign(struct ir_graph *g, const struct chip *c);

/* Whether copy piece p (lib/chip/isa_copy.h) can lie in place: one run
 * that is a whole tensor, the source (a Concat's or Reshape's input) or
 * else the destination (a Slice's or Split's output), which goes inside
 * the other tensor at a multiple of ADDR_ALIGN bytes, and is no graph
 * input or output.  *inner and *outer receive the two tensors, *off the
 * inner one's byte offset in the outer.  addr_assign nests such tensors
 * when both are in DDR and no later copy took the inner one first. */
struct isa_piece;
int addr_copy_nest(const struct ir_graph *g, const struct isa_piece *p, int *inner, int *outer,
		   int64_t *off);

/* Human-readable size: "512 B", "3.50 KiB", "1.53 MiB", "11.2 MiB",
 * "1.00 GiB" (three significant digits). */
void addr_fmt_size(char *buf, size_t cap, int64_t bytes);

#endif
