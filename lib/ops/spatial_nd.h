/* spatial_nd.h - Conv, MaxPool and AveragePool over 3-D volumes (rank-5
 * inputs [N, C, D, H, W]) for ir-run: shape inference and one kernel of
 * any float dtype, oneDNN's for an f32 Conv (lib/ops/spatial_nd.c).
 * conv.c and pool.c hand rank-5 ops to these; the chip has no 3-D form
 * (top2tpu keeps them on the host).
 */
#ifndef TPUC_SPATIAL_ND_H
#define TPUC_SPATIAL_ND_H

#include "ir/op.h"
#include "ir/op_traits.h"

/* The spatial axes of a 3-D op (rank-5 input). */

int spatial_nd_infer(struct ir_graph *g, struct ir_op *op);
int spatial_nd_run(struct kern *k);
/* 3-D ConvTranspose (lib/ops/deconv_nd.c). */
int deconv_nd_infer(struct ir_graph *g, struct ir_op *op);
int deconv_nd_run(struct kern *k);

#endif
