/* plan_fuse.h - ops folded into a oneDNN primitive of the plan as
 * post-ops (lib/run/plan_fuse.c).
 */
#ifndef TPUC_PLAN_FUSE_H
#define TPUC_PLAN_FUSE_H

#include <dnnl.h>

#include "ir/ir.h"
#include "run/plan_mem.h"

/* ---- post-ops and the ops fused as post-ops ---- */

/* Index the readers of every tensor of G (unchanged until _end) for the
 * fusion matchers: plan_build brackets its work with these. */
void fuse_readers_begin(const struct ir_graph *g);
void fuse_readers_end(void);

struct postops {
	int n;
	struct {
		int sum;               /* 1: a sum post-op, 2: binary alg with weight t,
					  0: eltwise alg(a, b) */
		dnnl_alg_kind_t alg;
		float a, b;
		int t;                 /* binary: the weight tensor */
		dnnl_memory_desc_t md; /* binary: its layout, broadcast to the dst */
	} e[PO_MAX];
};

/* What a primitive for op opi computes: its own activation (or INIT), then, when the
 * plan fuses, the ops after it that fold in as post-ops while each is the
 * only reader of the tensor before it: one-input elementwise ops,
 * x * Sigmoid(x) (swish) and x * HardSigmoid(x) (hard-swish) and, with
 * SUM set, one Add of an earlier tensor (a sum post-op, then the Add's
 * activation). */
struct chain {
	struct postops po;
	int out;                   /* the tensor the primitive finally writes */
	int sum_src, sum_op;       /* the tensor a sum adds and its Add; -1 none */
	int nskip, skip[PO_MAX];   /* the ops folded in */
};

/* Append op's fused activation (do_relu; relu_limit > 0 the upper bound)
 * to po.  0 when po is full, else 1. */
int po_act(struct postops *po, const struct ir_op *op);
/* Append the function of one-input elementwise op (then its activation),
 * or of Pow by a constant 2 (a square), to po.  0 when oneDNN has no such
 * function or po is full, else 1. */
int po_fold(const struct ir_graph *g, const struct ir_op *op, struct postops *po);
/* A primitive attribute holding po's post-ops (the caller destroys it), or
 * NULL when oneDNN refuses them. */
dnnl_primitive_attr_t po_attr(const struct postops *po);
/* 1 for a Sigmoid that writes a graph output: its kernel saturates to
 * exactly 0 and 1 as onnxruntime does, oneDNN's logistic does not. */
int plan_exact_output(const struct ir_graph *g, const struct ir_op *op);
/* Fill c for op opi (see struct chain); INIT (or NULL: the op's
 * activation) starts its post-ops.  Marks nothing: see chain_take. */
void chain_build(const struct plan *p, int opi, int fuse, int sum,
		 const struct postops *init, struct chain *c);
/* Append to args (N used) the weights of the chain's binary post-ops
 * (memories over their data, kept by the plan); returns the new count, -1
 * on error. */
int chain_args(struct plan *p, const struct chain *c, dnnl_exec_arg_t *args, int n);
/* Mark the ops of a chain as done by the primitive. */
void chain_take(struct plan *p, const struct chain *c);

#endif
