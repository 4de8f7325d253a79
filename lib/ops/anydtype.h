/* anydtype.h - ir-run's kernels of the f32-only operators (OPF_F32_ONLY:
 * the chip computes them in f32 only) for the other dtypes ONNX gives them:
 * floats computed in double, integers in int64 (lib/ops/anydtype.c).  The
 * f32 kernels hand such views to these.
 */
#ifndef TPUC_ANYDTYPE_H
#define TPUC_ANYDTYPE_H

#include "ir/op.h"

/* Which dtypes these take: op_takes_dtype (ir/op_traits.h). */
/* 1 when every present view of k is f32. */
int kern_all_f32(const struct kern *k);

int matmul_run_any(struct kern *k);   /* MatMul, numpy's vector promotion */
int gemm_run_any(struct kern *k);     /* Gemm: transA, transB, alpha, beta, C */
int clip_run_any(struct kern *k);     /* Clip: attributes min, max; Relu */
int pool_run_any(struct kern *k);     /* MaxPool and AveragePool on NCHW */

#endif
