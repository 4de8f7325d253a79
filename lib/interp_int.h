/* interp_int.h - what the parts of the interpreter share: lib/interp.c (the
 * API and the per-op run) and the plan of oneDNN primitives for Top graphs,
 * in lib/interp_plan.c (tensor versions, steps, build, run),
 * lib/interp_plan_fuse.c (ops folded into a primitive as post-ops) and
 * lib/interp_plan_ops.c (one op as primitives).  Not used elsewhere.
 */
#ifndef TPUC_INTERP_INT_H
#define TPUC_INTERP_INT_H

#include <string.h>

#include <dnnl.h>

#include "interp.h"
#include "ir.h"

#define PLAN_VERS 4                /* layouts one tensor may be held in */
#define PLAN_ARGS 16               /* arguments of one primitive step, at most */
#define PO_MAX 8                   /* post-ops of one primitive, at most */

/* One copy of a tensor in one layout. */
struct pver {
	dnnl_memory_desc_t md;
	dnnl_memory_t mem;
	void *buf;                 /* it->val[t] for the plain layout, else the plan's */
	int owned;                 /* 1: the plan frees buf (or passes it on) */
	int poolable;              /* 1: buf may serve another tensor once t is dead */
	size_t size;               /* bytes of buf when owned */
};

/* The versions of one tensor; version 0 is where its producer writes. */
struct ptensor {
	int n;                     /* versions so far (0: not yet produced) */
	struct pver v[PLAN_VERS];
};

enum pstep_kind {
	PS_PRIM,                   /* execute a oneDNN primitive */
	PS_KERN,                   /* run the op's run_f32 kernel on it->val */
	PS_NOP,                    /* nothing: the op is done by earlier steps */
};

/* One step of a planned run. */
struct pstep {
	enum pstep_kind kind;
	int op;                    /* op index; -1 for the final reorders */
	int last;                  /* the op's last step: its callback follows */
	dnnl_primitive_t prim;
	int nargs;
	dnnl_exec_arg_t args[PLAN_ARGS];
};

/* A Top graph as steps (see lib/interp_plan.c). */
struct plan {
	int fuse, materialise;     /* plan_build's flags */
	int nthreads;              /* the thread count it was built for */
	const struct ir_graph *g;
	void **val;                /* the interpreter's it->val */
	dnnl_engine_t eng;
	dnnl_stream_t strm;
	struct ptensor *t;         /* per tensor */
	unsigned char *skip;       /* per op: fused into an earlier op */
	int n, cap;
	struct pstep *s;           /* the steps, n of them, in order */
	int nmem, capmem;
	dnnl_memory_t *mem;        /* weights in primitive layouts, biases */
	int *last;                 /* per tensor: the last op that reads it (INT_MAX:
				      a graph output), for reusing its buffer */
	struct pdcache *pdcache;   /* descriptors made so far (interp_pdcache.c) */
	int *dying_start, *dying;  /* per op i: the tensors whose last op it is,
				      dying[dying_start[i] .. dying_start[i + 1]) */
	int npool, cappool;
	struct pbuf { void *buf; size_t size; } *pool;   /* buffers of dead tensors */
	size_t fresh, reused;      /* bytes of activation buffers allocated, reused */
};

/* ---- the plan as interp_run uses it (interp_plan.c) ---- */

/* The plan for it->g, a Top graph, over the activations in it->val (an op
 * without a float kernel, or one that writes a weight, is an error): with
 * FUSE, ops fold into their producer's primitive and dead tensors' buffers
 * are reused (only the graph outputs stay readable); with MATERIALISE, each
 * op's outputs are copied to it->val after its steps (for a callback).
 * NULL with a message on error. */
struct plan *plan_build(struct interp *it, int fuse, int materialise);
/* Run p's steps on it->val's inputs, calling CB (if not NULL) after each
 * op's last step as interp_run describes; adds to it->op_ms when set.
 * Returns 0, CB's negative result, or -1 with a message. */
int plan_run(struct interp *it, struct plan *p,
	     int (*cb)(struct interp *it, int op, void *user), void *user);
/* Tensor t of the last run into OUT (f32, plain, tensor_numel(t) floats),
 * when the plan holds it in another layout only.  Returns 1 when copied,
 * 0 when it->val[t] already holds it, -1 with a message on error. */
int plan_get(const struct plan *p, int t, float *out);
/* Free p's primitives and buffers (not it->val's); NULL is a no-op. */
void plan_free(struct plan *p);

/* ---- building blocks of the steps (interp_plan.c) ---- */

/* Set "op 'NAME' (TYPE): oneDNN: WHAT: STATUS" (without the op part when
 * OP is NULL) and return -1. */
int plan_fail(const struct ir_op *op, const char *what, dnnl_status_t st);
/* Dense row-major f32 layout of tensor t (rank 0 as [1]). */
void plan_plain_md(const struct ir_tensor *t, dnnl_memory_desc_t *md);
/* Keep memory m until the plan is freed.  Returns 0. */
int plan_keep_mem(struct plan *p, dnnl_memory_t m);
/* A primitive step of op OPI for PD (destroyed here) with NARGS ARGS (at
 * most PLAN_ARGS); OP names it in messages.  Returns 0 or -1. */
int plan_prim(struct plan *p, const struct ir_op *op, int opi, dnnl_primitive_desc_t pd,
	      int nargs, const dnnl_exec_arg_t *args);
/* A reorder step of op OPI (-1: the final reorders) from memory FROM to
 * memory TO.  Returns 0 or -1. */
int plan_reorder(struct plan *p, int opi, dnnl_memory_t from, dnnl_memory_t to);
/* 1 when oneDNN chose a reference implementation for pd (slow: the kernel,
 * on plain buffers, is better), and then destroys pd; else 0. */
int plan_ref_impl(dnnl_primitive_desc_t pd);
/* Add a version of tensor t in layout md (in it->val[t] when md is plain,
 * else a new or reused buffer); its contents are for the caller to
 * produce.  *OUT points into p until the plan is freed.  Returns 0 or -1. */
int ver_add(struct plan *p, int t, const dnnl_memory_desc_t *md, struct pver **out);
/* Make tensor t's first version take over the buffer of version v of
 * another tensor (whose value is dead by then).  Returns 0 or -1. */
int ver_alias(struct plan *p, int t, struct pver *v, struct pver **out);
/* Tensor t in layout md: an existing version, or a new one filled by a
 * reorder step of op OPI from version 0.  Returns 0, or -1 (also when t
 * has not been produced yet). */
int ver_get(struct plan *p, int opi, int t, const dnnl_memory_desc_t *md, struct pver **out);
/* Make it->val[t] hold tensor t after op OPI's steps (non-f32 tensors
 * always live there).  Returns 0 or -1. */
int ver_plain(struct plan *p, int opi, int t);

/* 1 when tensor t is an activation (not absent, not a weight). */
static inline int is_act(const struct ir_graph *g, int t)
{
	return t >= 0 && !g->tensors[t].data;
}

/* 1 when tensors a and b are both f32 of the same shape. */
static inline int same_shape(const struct ir_tensor *a, const struct ir_tensor *b)
{
	return a->rank == b->rank && a->dtype == DT_F32 && b->dtype == DT_F32 &&
	       !memcmp(a->shape, b->shape, sizeof a->shape[0] * (size_t)a->rank);
}

/* ---- post-ops and the ops fused as post-ops (interp_plan_fuse.c) ---- */

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

/* 1 when the primitive descriptor for the op descriptor DESC (DESC_SIZE
 * bytes, 0: no caching) with post-ops PO was made before: *PD its clone,
 * or NULL when oneDNN refused it; 0 when it is not known. */
int pdcache_get(struct plan *p, const void *desc, size_t desc_size, const struct postops *po,
		dnnl_primitive_desc_t *pd);
/* Keep a clone of PD (NULL: refused) under that key. */
void pdcache_put(struct plan *p, const void *desc, size_t desc_size, const struct postops *po,
		 const_dnnl_primitive_desc_t pd);
/* Drop them all (plan_build's end). */
void pdcache_free(struct plan *p);

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

/* ---- one op as oneDNN primitives (interp_plan_ops.c) ---- */

/* Plan op opi with oneDNN primitives (and the ops after it they fold in):
 * 1 when planned, 0 when the op (or this case of it) is for its kernel,
 * -1 with a message on error. */
int plan_dnnl_op(struct plan *p, int opi);

#endif
