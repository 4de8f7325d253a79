/* isa_copy.h - ops the DMA engine performs alone as copies of runs of
 * elements (lib/chip/isa_copy.c). */
#ifndef TPUC_ISA_COPY_H
#define TPUC_ISA_COPY_H

#include <stdint.h>

#include "ir/ir.h"

/* A copy op as runs of elements: reps runs of n elements each, run r of
 * tensor src from element src_at + r * src_step into tensor dst from
 * element dst_at + r * dst_step (reps >= 1; the steps are element
 * distances, unused when reps is 1). */
struct isa_piece {
	int src, dst;
	int64_t src_at, dst_at, n;
	int64_t reps, src_step, dst_step;
};
/* The pieces of a copy op into *out (the caller frees it): those of
 * isa_is_copy, a Split along an axis with only axes of size 1 before it
 * (each output a run of the input), a Concat along any axis (per input, a
 * run per index of the axes before it), a Slice cutting one axis with
 * step 1 (a run per index of the axes before it; by a larger step, that
 * for each index taken, at most ISA_COPY_MAX_RUNS), a Gather of constant
 * indices (per run of consecutive indices, a run per index of the axes
 * before the gathered one; at most ISA_COPY_MAX_RUNS such index runs), a
 * Transpose that only moves axes of size 1 (one run); the runs per index
 * of the outer axes are one strided piece.  Inputs and outputs of one
 * dtype, scale and zero point.  Returns the count, 0 when op is not such
 * a copy. */
#define ISA_COPY_MAX_RUNS 4096
int isa_copy_pieces(const struct ir_graph *g, const struct ir_op *op, struct isa_piece **out);

#endif
