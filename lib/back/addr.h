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
 * address 0: weights packed in tensor order, each 64-byte aligned, but for
 * the coefficient runs of each layer group (addr_runs), placed together at
 * the place of their first weight; g->coeff_bytes is its size (a multiple
 * of 64).  The neuron region follows
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

/* Coefficient runs (formats/tpuc-isa.5, GLOBAL MEMORY): weights small
 * enough that the DMA start-up outweighs their bytes (a whole load moves at
 * most dma_latency * ddr_bpc bytes), of lane shape 1, C, 1, W, that a layer
 * group reads, lie one after the other in DDR, each at the previous one's
 * address plus its channels padded to whole slots (addr_run_stride), so
 * that codegen loads a run with one DMA command into consecutive local
 * memory.  A run holds weights of one dtype and W, in the order the group
 * first reads them (wt), at most ADDR_RUN_LATENCIES DMA start-ups' worth
 * of bytes, and a weight follows another only when the other's padding
 * moves at most half a start-up's worth of bytes, its padded
 * channels end at a multiple of ADDR_ALIGN bytes in DDR and its bytes per
 * lane in local memory are a multiple of ADDR_ALIGN too (no gap before the
 * next one in local memory). */
#define ADDR_RUN_LATENCIES 4
/* DDR bytes from weight t's address to the next weight of its run. */
int64_t addr_run_stride(const struct ir_graph *g, const struct chip *c, int t);
/* Whether weight t may take part in a run at all (small, lane shape 1, C, 1, W). */
int addr_run_member(const struct ir_graph *g, const struct chip *c, int t);
/* The runs of a group reading weights wt[0 .. n) in that order (distinct
 * tensors): next[i] = the index in wt of the weight after wt[i] in its run,
 * -1 for none; a weight with no predecessor heads its run.  skip, when not
 * NULL, marks tensors (by tensor index) to leave out. */
void addr_runs(const struct ir_graph *g, const struct chip *c, const int *wt, int n,
	       const char *skip, int *next);

/* Whether copy piece p (lib/chip/isa_copy.h) can lie in place: one run
 * that is a whole tensor, the source (a Concat's or Reshape's input) or
 * else the destination (a Slice's or Split's output), which goes inside
 * the other tensor at a multiple of ADDR_ALIGN bytes (a destination only
 * host ops read, directly or through such copies, at any byte), and is no
 * graph input or output.  *inner and *outer receive the two tensors, *off the
 * inner one's byte offset in the outer.  addr_assign nests such tensors
 * when both are in DDR and no later copy took the inner one first. */
struct isa_piece;
int addr_copy_nest(const struct ir_graph *g, const struct isa_piece *p, int *inner, int *outer,
		   int64_t *off);

/* Human-readable size: "512 B", "3.50 KiB", "1.53 MiB", "11.2 MiB",
 * "1.00 GiB" (three significant digits). */
void addr_fmt_size(char *buf, size_t cap, int64_t bytes);

#endif
