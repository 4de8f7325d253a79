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

#include "ir/ir.h"
#include "passes/rewrite.h"

#define PASSES_DEFAULT \
	"remove-identity,fold-const,fold-qdq,merge-layout,fold-pad,fold-affine,fold-bn,deconv-to-conv,fuse-act,fuse-gelu,fuse-swish," \
	"fuse-layernorm,nest-concat,batch-rows,merge-layout,dce"

struct pass {
	const char *name;
	/* Returns the number of rewrites made, or -1 after err_set(). */
	int (*run)(struct ir_graph *g);
	const char *desc;            /* one line for --help */
};

/* The pass table, ending with a {NULL} entry. */
extern const struct pass pass_table[];

/* Split a comma-separated list into table entries (NULL list: the default
 * pipeline), any number of them, into *out (a new array the caller frees;
 * NULL on failure).  Returns the count, or -1 with "unknown pass 'x'" or
 * "empty pass name" as the message. */
int passes_parse(const char *list, const struct pass ***out);

/* Run the pipeline in list (NULL: the default) over g, a Top graph, then
 * re-infer shapes.  Returns 0 or -1 after err_set(); on failure g may be
 * partly rewritten. */
int passes_run(struct ir_graph *g, const char *list);
/* The same; rewrites (an entry per pass of the pipeline) receives each
 * pass's rewrite count in pipeline order. */
int passes_run_counted(struct ir_graph *g, const char *list, int *rewrites);

/* Fold op i when it is constant: every input a weight (or the op reads
 * only shapes: Shape, Size, EyeLike), a kernel to run it (its float
 * reference kernel; for integer Add and Mul the any-dtype kernel of
 * lib/ops/eltwise.c) and at most max_bytes of outputs.  The kernel runs
 * once, the outputs become weights and the op is marked dead.  Returns 1 if
 * folded, 0 if not, -1 after err_set() when the kernel fails. */
int pass_fold_op(struct ir_graph *g, int i, size_t max_bytes);

/* The passes, each in lib/passes/pass_*.c. */
int pass_remove_identity(struct ir_graph *g);
int pass_fold_bn(struct ir_graph *g);
int pass_deconv_to_conv(struct ir_graph *g);
int pass_fuse_act(struct ir_graph *g);
int pass_dce(struct ir_graph *g);
int pass_fold_const(struct ir_graph *g);
int pass_fuse_gelu(struct ir_graph *g);
int pass_fuse_swish(struct ir_graph *g);
int pass_fuse_layernorm(struct ir_graph *g);
int pass_merge_layout(struct ir_graph *g);
int pass_fold_affine(struct ir_graph *g);
int pass_fold_qdq(struct ir_graph *g);
int pass_fold_pad(struct ir_graph *g);
int pass_nest_concat(struct ir_graph *g);
int pass_batch_rows(struct ir_graph *g);

#endif
