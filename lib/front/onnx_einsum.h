/* onnx_einsum.h - ONNX Einsum written, at import, as existing Top ops
 * (ReduceSum, Transpose, Reshape, MatMul), so that no later stage needs an
 * op of its own for it.
 *
 * "bhid,bhjd->bhij" over x [2,4,8,16] and y [2,4,8,16] becomes
 *   Transpose y perm=[0,1,3,2]; MatMul x, y^T -> [2,4,8,8]
 * and "bid,de->bie" with a constant [16,32] weight one MatMul whose B is
 * that weight, the form INT8 lowering quantises per channel.
 */
#ifndef TPUC_ONNX_EINSUM_H
#define TPUC_ONNX_EINSUM_H

#include <stddef.h>

#include "ir/ir.h"

/* Add to g the ops that compute Einsum EQ (eq[0..len), blanks ignored)
 * over tensors in[0..n_in), whose shapes must be set, into tensor out.
 * Supported: any number of operands; explicit ("->") and implicit output
 * (the indices that occur once, in ASCII order, after "..."); indices
 * summed away, shared batch indices, broadcasting (size 1 against n, and
 * "..." anywhere in a term), transposes.  An index repeated within one
 * term (a diagonal or trace) is refused.  The last op added writes out and
 * is named NAME, the others NAME_<what> after the tensor each writes.
 * Shapes are left for the caller to infer.  Returns 0, or -1 after
 * err_set() with a message that names no node (the caller prefixes it). */
int onnx_einsum(struct ir_graph *g, const char *name, const char *eq, size_t len,
		int n_in, const int *in, int out);

#endif
