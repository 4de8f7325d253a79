/* passes.h - named canonicalisation passes over Top IR, and the pattern
 * rewriter most of them are built on.
 *
 * A pass is a function over the whole graph, listed by name in one table so
 * that a pipeline is text: "remove-identity,fold-bn,fuse-act,dce".  A pattern
 * is a small function that looks at one op and rewrites the graph around it;
 * rewrite_run() applies a set of patterns to a fixed point.  Patterns delete
 * an op by marking it dead (type OP_COUNT); the driver compacts the graph
 * when the pass ends.
 */
#ifndef TPUC_PASSES_H
#define TPUC_PASSES_H

#include "ir.h"

#define PASSES_DEFAULT \
	"remove-identity,fold-const,merge-layout,fold-affine,fold-bn,fuse-act,fuse-gelu,fuse-swish," \
	"fuse-layernorm,dce"
#define PASSES_MAX 64            /* passes in one pipeline */
#define REWRITE_MAX_SWEEPS 64    /* fixed-point iteration cap */

struct pass {
	const char *name;
	/* Returns the number of rewrites made, or -1 after err_set(). */
	int (*run)(struct ir_graph *g);
	const char *desc;            /* one line for --help */
};

/* The pass table, ending with a {NULL} entry. */
extern const struct pass pass_table[];

/* Split a comma-separated list into table entries (NULL list: the default
 * pipeline).  Returns the count, or -1 with "unknown pass 'x'" or "empty
 * pass name" as the message. */
int passes_parse(const char *list, const struct pass **out, int max);

/* Run the pipeline in list (NULL: the default) over g, a Top graph, then
 * re-infer shapes.  Returns 0 or -1 after err_set(); on failure g may be
 * partly rewritten. */
int passes_run(struct ir_graph *g, const char *list);
/* The same; rewrites (PASSES_MAX entries) receives each pass's rewrite
 * count in pipeline order. */
int passes_run_counted(struct ir_graph *g, const char *list, int *rewrites);

/* A pattern: looks at live op `op`; returns 1 if it changed the graph, 0 if
 * not, -1 after err_set(). */
typedef int (*pattern_fn)(struct ir_graph *g, int op);

/* Apply patterns to every live op, last op first, until a sweep changes
 * nothing; fail after REWRITE_MAX_SWEEPS sweeps.  Compacts the graph at the
 * end.  Returns the number of rewrites or -1; `name` is for messages. */
int rewrite_run(struct ir_graph *g, const char *name, const pattern_fn *pats, int n);

/* ---- helpers for patterns (O(ops) scans; dead ops are ignored) ---- */

/* The live op that produces tensor t, or -1 (graph input, weight). */
int pass_producer(const struct ir_graph *g, int t);
/* pass_producer and pass_uses answer from an index of the graph; a pass
 * that changes op inputs or outputs outside rewrite_run and the helpers
 * here calls this before asking again. */
void pass_index_drop(void);
/* How many live op inputs read tensor t, plus one if it is a graph output. */
int pass_uses(const struct ir_graph *g, int t);
int pass_is_output(const struct ir_graph *g, int t);
int pass_is_input(const struct ir_graph *g, int t);
/* Make every live op input and graph output that reads `from` read `to`. */
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
/* Add a zero-filled f32 weight named after base (made unique). */
int pass_add_weight(struct ir_graph *g, const char *base, int rank, const int64_t *shape);
/* Fold op i when it is constant: every input a weight (or the op reads
 * only shapes: Shape, Size, EyeLike), a kernel to run it (its float
 * reference kernel; for integer Add and Mul the any-dtype kernel of
 * lib/ops/eltwise.c) and at most max_bytes of outputs.  The kernel runs
 * once, the outputs become weights and the op is marked dead.  Returns 1 if
 * folded, 0 if not, -1 after err_set() when the kernel fails. */
int pass_fold_op(struct ir_graph *g, int i, size_t max_bytes);

/* Per-type op counts of the live ops of g (counts has OP_COUNT entries). */
void pass_count_ops(const struct ir_graph *g, int *counts);

/* The passes, each in lib/pass_*.c. */
int pass_remove_identity(struct ir_graph *g);
int pass_fold_bn(struct ir_graph *g);
int pass_fuse_act(struct ir_graph *g);
int pass_dce(struct ir_graph *g);
int pass_fold_const(struct ir_graph *g);
int pass_fuse_gelu(struct ir_graph *g);
int pass_fuse_swish(struct ir_graph *g);
int pass_fuse_layernorm(struct ir_graph *g);
int pass_merge_layout(struct ir_graph *g);
int pass_fold_affine(struct ir_graph *g);

#endif
