/* reorder.h - weight-reorder: put a lowered Tpu graph's weights into the
 * chip's layout (formats/tpuc-isa.5, WEIGHT LAYOUT).
 */
#ifndef TPUC_REORDER_H
#define TPUC_REORDER_H

#include "ir/ir.h"

/* Rewrite G (dialect tpu, stage lowered) in place and set its stage to
 * reordered:
 *  - INT8 Conv, ConvTranspose, Gemm, Scale and MatMul with inputs [x, w,
 *    bias, multiplier, shift] (i32 [OC] each; MatMul [N] or [1]) get one coefficient tensor i32 [OC,3] "OPNAME_coeff"
 *    holding bias, multiplier, shift per channel: inputs [x, w, coeff];
 *  - Gemm with transB = 0 and a weight B [K,N] gets B transposed to [N,K]
 *    and transB = 1 (output features lead, one per lane);
 *  - Conv weights stay OIHW (output channels on the lanes);
 *  - an INT8 Conv of G groups may have k neighbouring groups merged into
 *    one (weights [OC, k*IC/G, KH, KW] block-diagonal, group G/k; a k not
 *    dividing G: two Convs over Slices of the input, joined by a Concat)
 *    when the cost model of g->chip times it and the DMA of its weights a
 *    tenth faster: bit for bit the same results;
 *  - an INT8 Conv of one group whose output channels leave the cube's
 *    lanes idle computes neighbouring columns as blocks of channels, a
 *    DepthToWidth after it;
 *  - an INT8 depthwise Conv of stride 1 over narrow rows runs on blocks of
 *    rows packed side by side (Pad, Slices, Concat before it; Slices and a
 *    Concat after).
 * A weight shared by several ops is copied before it is changed.  Returns 0,
 * or -1 with a message naming the op. */
int weight_reorder(struct ir_graph *g);

#endif
