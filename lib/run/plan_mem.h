/* plan_mem.h - the plan of oneDNN primitives that runs Top graphs for the
 * interpreter (lib/run/interp.c): its structure, tensor versions and steps
 * (lib/run/plan_mem.c).  Built and run by lib/run/plan.c, with
 * lib/run/plan_fuse.c (ops folded into a primitive as post-ops) and
 * lib/run/plan_ops.c (one op as primitives).  Not used elsewhere.
 */
#ifndef TPUC_PLAN_MEM_H
#define TPUC_PLAN_MEM_H

#include <string.h>

#include <dnnl.h>

#include "ir/ir.h"

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

/* A Top graph as steps (see lib/run/plan.c). */
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
	struct pdcache *pdcache;   /* descriptors made so far (plan_pdcache.h) */
	int *dying_start, *dying;  /* per op i: the tensors whose last op it is,
				      dying[dying_start[i] .. dying_start[i + 1]) */
	int npool, cappool;
	struct pbuf { void *buf; size_t size; } *pool;   /* buffers of dead tensors */
	size_t fresh, reused;      /* bytes of activation buffers allocated, reused */
};

/* Free p's primitives and buffers (not it->val's); NULL is a no-op. */
void plan_free(struct plan *p);

/* A new step of KIND for op OP (-1: the final reorders). */
struct pstep *plan_step(struct plan *p, enum pstep_kind kind, int op);
/* An op plan_dnnl_op leaves to its kernel: a kernel step on plain buffers,
 * its inputs made plain first. */
int plan_kernel(struct plan *p, int opi);
/* After the steps of op i: release the buffers of tensors no later op reads. */
void plan_release(struct plan *p, int i);

/* ---- building blocks of the steps ---- */

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

#endif
