/* plan.h - the fast path of interp_run for Top graphs: a plan of oneDNN
 * primitives built once and run many times (lib/run/plan.c).
 */
#ifndef TPUC_PLAN_H
#define TPUC_PLAN_H

#include "ir/ir.h"
#include "run/plan_mem.h"


/* The plan for G, a Top graph, over the activations in VAL (an op
 * without a float kernel, or one that writes a weight, is an error): with
 * FUSE, ops fold into their producer's primitive and dead tensors' buffers
 * are reused (only the graph outputs stay readable); with MATERIALISE, each
 * op's outputs are copied to VAL after its steps (for a callback).
 * NTHREADS is the kernels' thread count.  NULL with a message on error. */
struct plan *plan_build(const struct ir_graph *g, void **val, int nthreads, int fuse,
			int materialise);
/* Run p's steps on VAL's inputs, calling CB (if not NULL) after each
 * op's last step as interp_run describes; adds to OP_MS when set.
 * Returns 0, CB's negative result, or -1 with a message. */
int plan_run(struct plan *p, double *op_ms, int (*cb)(int op, void *user), void *user);
/* Tensor t of the last run into OUT (f32, plain, tensor_numel(t) floats),
 * when the plan holds it in another layout only.  Returns 1 when copied,
 * 0 when VAL[t] already holds it, -1 with a message on error. */
int plan_get(const struct plan *p, int t, float *out);

#endif
