/* import_ops.h - the converters of ONNX nodes into Top ops, one family per
 * file (lib/front/import_*.c), listed in the table of lib/front/import_table.c.
 * Each fills the op the dispatcher (lib/front/onnx_import.c) created for the
 * node: attributes checked and copied, constant inputs made attributes.
 * Returns 0, or -1 with a message naming the node.
 */
#ifndef TPUC_IMPORT_OPS_H
#define TPUC_IMPORT_OPS_H

#include "front/import_util.h"
#include "ir/ir.h"

/* lib/front/import_conv.c */
int cv_spatial(struct imp *im, struct ir_op *op, enum spatial_kind kind);
/* 3-D (rank-5) Conv and pooling (import_spatial_nd.c). */
int cv_spatial_nd(struct imp *im, struct ir_op *op, enum spatial_kind kind);
int cv_conv(struct imp *im, struct ir_op *op);
int cv_maxpool(struct imp *im, struct ir_op *op);
int cv_avgpool(struct imp *im, struct ir_op *op);
int cv_batchnorm(struct imp *im, struct ir_op *op);
int cv_gemm(struct imp *im, struct ir_op *op);
int cv_convtranspose(struct imp *im, struct ir_op *op);
int cv_rnn(struct imp *im, struct ir_op *op);

/* lib/front/import_elementwise.c */
int cv_clip(struct imp *im, struct ir_op *op);
int cv_cast(struct imp *im, struct ir_op *op);
int cv_alpha1(struct imp *im, struct ir_op *op);
int cv_leakyrelu(struct imp *im, struct ir_op *op);
int cv_hardsigmoid(struct imp *im, struct ir_op *op);
int cv_selu(struct imp *im, struct ir_op *op);
int cv_shrink(struct imp *im, struct ir_op *op);
int cv_gelu(struct imp *im, struct ir_op *op);
/* GroupNormalization as Reshape, LayerNormalization, Reshape, Mul, Add
 * (lib/front/import_groupnorm.c): the index of its first op, or -1. */
int import_groupnorm(struct imp *im, const char *out0);
/* NonZero, Compress, Unique, NonMaxSuppression: outputs whose extents
 * depend on the data (lib/front/import_datadep.c). */
int cv_datadep(struct imp *im, struct ir_op *op);
int cv_maxunpool(struct imp *im, struct ir_op *op);
int cv_roialign(struct imp *im, struct ir_op *op);
int cv_convtranspose_nd(struct imp *im, struct ir_op *op);   /* 3-D, import_deconv_nd.c */
int cv_isinf(struct imp *im, struct ir_op *op);
int cv_mod(struct imp *im, struct ir_op *op);
int cv_bitshift(struct imp *im, struct ir_op *op);
int cv_dropout(struct imp *im, struct ir_op *op);
int cv_castlike(struct imp *im, struct ir_op *op);

/* lib/front/import_shape.c */
int cv_pad(struct imp *im, struct ir_op *op);
int cv_reshape(struct imp *im, struct ir_op *op);
int cv_axis(struct imp *im, struct ir_op *op, int required, int64_t def, int rank_plus);
int cv_concat(struct imp *im, struct ir_op *op);
int cv_flatten(struct imp *im, struct ir_op *op);
int cv_transpose(struct imp *im, struct ir_op *op);
int cv_squeeze(struct imp *im, struct ir_op *op);
int cv_unsqueeze(struct imp *im, struct ir_op *op);
int cv_slice(struct imp *im, struct ir_op *op);
int cv_split(struct imp *im, struct ir_op *op);
int cv_const_list(struct imp *im, struct ir_op *op, const char *name);
int cv_expand(struct imp *im, struct ir_op *op);
int cv_tile(struct imp *im, struct ir_op *op);
int cv_depthtospace(struct imp *im, struct ir_op *op);
int cv_blocksize(struct imp *im, struct ir_op *op);
int cv_shape(struct imp *im, struct ir_op *op);
int cv_constantofshape(struct imp *im, struct ir_op *op);
int cv_resize_common(struct imp *im, struct ir_op *op, const float *scales, int ns,
			    const int64_t *sizes_in, int nz, const float *roi, int nr);
int cv_resize(struct imp *im, struct ir_op *op);
int cv_upsample(struct imp *im, struct ir_op *op);

/* lib/front/import_reduce.c */
int cv_reduce(struct imp *im, struct ir_op *op);
int cv_argmax(struct imp *im, struct ir_op *op);
int cv_softmax(struct imp *im, struct ir_op *op);
int cv_layernorm(struct imp *im, struct ir_op *op);
int cv_epsilon(struct imp *im, struct ir_op *op);
int cv_lrn(struct imp *im, struct ir_op *op);
int cv_lpnorm(struct imp *im, struct ir_op *op);
int cv_mvn(struct imp *im, struct ir_op *op);

/* lib/front/import_index.c */
int cv_axis0(struct imp *im, struct ir_op *op);
int put_reduction(struct imp *im, struct ir_op *op);
int cv_scatterelements(struct imp *im, struct ir_op *op);
int cv_gathernd(struct imp *im, struct ir_op *op);
int cv_scatternd(struct imp *im, struct ir_op *op);
int cv_onehot(struct imp *im, struct ir_op *op);
int cv_topk(struct imp *im, struct ir_op *op);
int cv_cumsum(struct imp *im, struct ir_op *op);
int cv_trilu(struct imp *im, struct ir_op *op);
int cv_eyelike(struct imp *im, struct ir_op *op);
int cv_loss(struct imp *im, struct ir_op *op);

/* lib/front/import_quant.c */
int cv_qaxis(struct imp *im, struct ir_op *op);
int cv_qlinearconv(struct imp *im, struct ir_op *op);
int cv_convinteger(struct imp *im, struct ir_op *op);
int cv_qlinearmatmul(struct imp *im, struct ir_op *op);
int cv_matmulinteger(struct imp *im, struct ir_op *op);
int cv_qlinearadd(struct imp *im, struct ir_op *op);
int cv_qlinearmul(struct imp *im, struct ir_op *op);
int cv_qlinearsigmoid(struct imp *im, struct ir_op *op);
int cv_qlinearleakyrelu(struct imp *im, struct ir_op *op);
int cv_qlinearavgpool(struct imp *im, struct ir_op *op);
int cv_qlineargavgpool(struct imp *im, struct ir_op *op);
int cv_qlinearconcat(struct imp *im, struct ir_op *op);
/* Reshape, Expand, Tile with a run-time shape operand (import_runtime.c) */
int cv_runtime_shape(struct imp *im, struct ir_op *op, const char *what);
int cv_gridsample(struct imp *im, struct ir_op *op);   /* import_sample.c */
int cv_reversesequence(struct imp *im, struct ir_op *op);   /* import_sample.c */
/* audio front ends (import_signal.c) */
int cv_window(struct imp *im, struct ir_op *op);
int cv_melweightmatrix(struct imp *im, struct ir_op *op);
int cv_dft(struct imp *im, struct ir_op *op);
int cv_stft(struct imp *im, struct ir_op *op);
int quant_direct_in(struct imp *im, enum op_type t, int *x);
int quant_direct_out(struct imp *im, int k, int p);

#endif
