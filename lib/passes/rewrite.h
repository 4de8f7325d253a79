/* rewrite.h - the fixed-point pattern driver the passes of
 * lib/passes/passes.h are written with, and the graph helpers their
 * patterns share (lib/passes/rewrite.c).
 */
#ifndef TPUC_REWRITE_H
#define TPUC_REWRITE_H

#include "ir/ir.h"

#define REWRITE_MAX_SWEEPS 64    /* fixed-point iteration cap */

/* A pattern: looks at live op `op`; returns 1 if it changed the graph, 0 if
 * not, -1 after err_set(). */
typedef int (*pattern_fn)(struct ir_graph *g, int op);

/* Apply patterns to every live op, last op first, until a sweep changes
 * nothing; fail after REWRITE_MAX_SWEEPS sweeps.  Compacts the graph at the
 * end.  Returns the number of rewrites or -1; `name` is for messages. */
int rewrite_run(struct ir_graph *g, const char *name, const pattern_fn *pats, int n);

/* ---- helpers for patterns (dead ops are ignored) ---- */

/* The live op that produces tensor t, or -1 (graph input, weight). */
int pass_producer(const struct ir_graph *g, int t);
/* pass_producer, pass_uses and pass_readers answer from an index of the
 * graph, built on the first question after a change; a pass that changes
 * op inputs or outputs outside rewrite_run and the helpers here calls this
 * before asking again or calling a helper that changes the graph. */
void pass_index_drop(void);
/* A number that differs after every drop, build or change of the index:
 * what a pattern remembers of g holds while it stays the same. */
unsigned pass_index_gen(void);
/* The live ops that read tensor t, ascending, each once: their count, the
 * list in *ops (valid until the graph changes). */
int pass_readers(const struct ir_graph *g, int t, const int **ops);
/* Called by a pattern that changed the graph only through the helpers
 * that keep the index (pass_kill, pass_set_input, pass_replace_uses,
 * pass_add_weight, pass_make_scale), and asked nothing before them of a
 * graph it had changed otherwise: rewrite_run then keeps the index
 * rather than rebuilding it, and a pattern that fires on each op of a
 * long chain costs time linear in it. */
void pass_index_kept(void);
/* Mark op dead (type OP_COUNT), keeping the index. */
void pass_kill(struct ir_graph *g, int op);
/* Make input j of op read tensor t, keeping the index. */
void pass_set_input(struct ir_graph *g, int op, int j, int t);
/* How many live op inputs read tensor t, plus one if it is a graph output. */
int pass_uses(const struct ir_graph *g, int t);
int pass_is_output(const struct ir_graph *g, int t);
int pass_is_input(const struct ir_graph *g, int t);
/* The live op at or after op `from` that reads tensor t when it is t's
 * one reader and t is no graph output; else -1. */
int pass_sole_reader(const struct ir_graph *g, int t, int from);
/* Do a and b have the same static shape?  (A dynamic extent's shape[] is
 * a bound or 1, not the extent: never the same.) */
int pass_same_shape(const struct ir_tensor *a, const struct ir_tensor *b);
/* Make every live op input and graph output that reads `from` read `to`;
 * keeps the index (in time linear in the readers) when it is built. */
void pass_replace_uses(struct ir_graph *g, int from, int to);
/* Remove a single-input, single-output op whose output equals its input,
 * keeping the output's name when it is a graph output.  Returns 1 if the
 * op was removed, 0 if it must stay (it copies a graph input or weight to
 * a graph output). */
int pass_bypass(struct ir_graph *g, int op);
/* The f32 payload of constant input idx of op, made private to the op
 * (copied into a new weight if another op shares it) and writable; NULL
 * when the input is absent, not a weight or not f32. */
float *pass_weight_mut(struct ir_graph *g, int op, int idx);
/* The f32 bias (input 2, n values) of op, private and writable as
 * pass_weight_mut gives it; a zero bias "<op>_bias" is added first when the
 * op has none. */
float *pass_bias_mut(struct ir_graph *g, int op, int64_t n);
/* Add a zero-filled f32 weight named after base (made unique); keeps
 * the index. */
int pass_add_weight(struct ir_graph *g, const char *base, int rank, const int64_t *shape);
/* Make op a Scale of x (y = x * s[k] + t[k] along axis 1, c channels)
 * with two new zero-filled weights named after it, returned in *s and *t
 * for the caller to fill; the op's attributes stay; keeps the index.
 * Returns 0. */
int pass_make_scale(struct ir_graph *g, int op, int x, int64_t c, float **s, float **t);
/* Add a one-input, one-output op of type t reading tensor x and writing y
 * right after op `at` (the ops after it move up one); its name is base,
 * made unique.  Returns its index, at + 1. */
int pass_insert_after(struct ir_graph *g, int at, enum op_type t, const char *base, int x, int y);
/* Is t an operator of one input that maps each element alone (Relu,
 * Exp, Cast, Clip ...)?  Views and row-wise rewrites move such ops
 * freely between shapes. */
int pass_is_pointwise(enum op_type t);
/* Is t a view: Reshape, Flatten, Squeeze or Unsqueeze (the values in the
 * same order, another shape)? */
int pass_is_view(enum op_type t);
/* Per-type op counts of the live ops of g (counts has OP_COUNT entries). */
void pass_count_ops(const struct ir_graph *g, int *counts);

#endif
