/* match_act.h - the one matcher of decomposed activations: top-opt's
 * fuse-gelu and fuse-swish rewrite what it finds into one op, and the
 * interpreter's plan (lib/run/plan_fuse.c) folds the same subgraphs into a
 * oneDNN post-op.  Also the small graph questions the passes' patterns
 * share (lib/passes/match_act.c).
 */
#ifndef TPUC_MATCH_ACT_H
#define TPUC_MATCH_ACT_H

#include "ir/ir.h"

#define ACT_MATCH_MAX 16

/* A decomposed activation found ending at op `last`. */
struct act_match {
	enum op_type type;       /* OP_GELU, OP_SILU or OP_HARDSWISH */
	int tanh;                /* OP_GELU: the tanh approximation */
	int x;                   /* the tensor it is applied to */
	int n;                   /* ops[0..n): the pattern's ops but the last */
	int ops[ACT_MATCH_MAX];
};

/* 1 when op `last` ends a decomposed activation (below) applied to a
 * tensor x, with m filled; else 0.  Every tensor inside the pattern is
 * read once, by the pattern, and is no graph output; no op but the last
 * carries a fused activation (the last one's do_relu is the caller's to
 * judge).  The forms:
 *   GELU       x * 0.5 * (1 + erf(x / sqrt 2)) (the two Muls in either
 *              order; Div by sqrt 2 or Mul by 1 / sqrt 2), and
 *              0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)));
 *   SiLU       x * Sigmoid(x);
 *   HardSwish  x * HardSigmoid(x) with alpha 1/6 and beta 1/2, and
 *              x * Relu6(x + 3) / 6 (Div by 6 or Mul by 1/6; the Relu6 a
 *              Clip or fused into the Add). */
int match_act(const struct ir_graph *g, int last, struct act_match *m);
int match_gelu(const struct ir_graph *g, int last, struct act_match *m);
int match_swish(const struct ir_graph *g, int last, struct act_match *m);

/* ---- helpers the patterns share ---- */

/* 1 and *v when tensor t is a one-element f32 weight. */
int match_scalar(const struct ir_graph *g, int t, float *v);
/* 1 when a is within 1e-4 (relative) of b. */
int match_near(float a, double b);
/* The live op of type t producing tensor x, its only reader being one op
 * and x no graph output; else -1. */
int match_only_use(const struct ir_graph *g, int x, enum op_type t);
/* match_only_use for an op that carries no fused activation (do_relu). */
int match_plain_use(const struct ir_graph *g, int x, enum op_type t);
/* For a binary op: the index (0 or 1) of the input equal to t, else -1. */
int match_side(const struct ir_op *op, int t);

#endif
