/* interp.c - the reference interpreter: whole-tensor buffers for every
 * activation, each op run by its dialect's kernel hook in graph order; for
 * Top graphs, a plan of oneDNN primitives built once (the middle of this
 * file) runs instead, with the kernels for the ops it does not cover.
 */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include <dnnl.h>
#include <dnnl_debug.h>

#include "base.h"
#include "convert.h"
#include "dnnl_util.h"
#include "interp.h"
#include "op.h"

int interp_init(struct interp *it, const struct ir_graph *g, int nthreads)
{
	memset(it, 0, sizeof *it);
	if (g->dialect != DIALECT_TOP && g->dialect != DIALECT_TPU)
		return err_set("graph has no runnable dialect");
	it->g = g;
	it->nthreads = nthreads > 0 ? nthreads : 1;
	dnnl_weights_cache(1);
	omp_set_num_threads(it->nthreads);
	it->val = xcalloc((size_t)g->n_tensors, sizeof *it->val);
	for (int i = 0; i < g->n_tensors; i++) {
		const struct ir_tensor *t = &g->tensors[i];
		if (t->data) {
			it->val[i] = t->data;
			continue;
		}
		size_t n = tensor_bytes(t);
		it->val[i] = xaligned(n);
		memset(it->val[i], 0, n);
	}
	return 0;
}

/* ---- the fast path for Top graphs: a plan of oneDNN primitives ----
 *
 * At the first interp_run (and again when the thread count or the kind of
 * run changes) a Top graph is turned into a list of steps: oneDNN
 * primitives created once for convolutions, pooling, binary ops,
 * activations and concatenation, each reading and writing activations in
 * the layout oneDNN chose (format_tag_any), with reorders only where a
 * consumer wants another layout; every other op runs its run_f32 kernel on
 * the plain row-major buffers in it->val.  A tensor may have several
 * copies ("versions") in different layouts; version 0 is where its
 * producer writes.  When the run has no callback and it->keep_all is 0,
 * an Add of a convolution's output and an earlier tensor is fused into the
 * convolution as a sum post-op (the conv writes the Add's output, which
 * first receives a copy of the other operand), with the Add's activation
 * after it.  Graph outputs always end in it->val; with a callback, every
 * op's outputs are copied there before it is called. */

#define PLAN_VERS 4                /* layouts one tensor may be held in */
#define PLAN_ARGS 16

struct pver {
	dnnl_memory_desc_t md;
	dnnl_memory_t mem;
	void *buf;                 /* it->val[t] for the plain layout, else the plan's */
	int owned;                 /* 1: the plan frees buf (or passes it on) */
	int poolable;              /* 1: buf may serve another tensor once t is dead */
	size_t size;               /* bytes of buf when owned */
};

struct ptensor {
	int n;                     /* versions so far (0: not yet produced) */
	struct pver v[PLAN_VERS];
};

enum pstep_kind { PS_PRIM, PS_KERN, PS_NOP };

struct pstep {
	enum pstep_kind kind;
	int op;                    /* op index; -1 for the final reorders */
	int last;                  /* the op's last step: its callback follows */
	dnnl_primitive_t prim;
	int nargs;
	dnnl_exec_arg_t args[PLAN_ARGS];
};

struct plan {
	int fuse, materialise, nthreads;
	const struct ir_graph *g;
	void **val;
	dnnl_engine_t eng;
	dnnl_stream_t strm;
	struct ptensor *t;         /* per tensor */
	unsigned char *skip;       /* per op: fused into an earlier op */
	int n, cap;
	struct pstep *s;
	int nmem, capmem;
	dnnl_memory_t *mem;        /* weights in primitive layouts, biases */
	int *last;                 /* per tensor: the last op that reads it (INT_MAX:
				      a graph output), for reusing its buffer */
	int npool, cappool;
	struct pbuf { void *buf; size_t size; } *pool;   /* buffers of dead tensors */
	size_t fresh, reused;      /* bytes of activation buffers allocated, reused */
};

static int dnnl_fail(const struct ir_op *op, const char *what, dnnl_status_t st)
{
	if (op)
		return err_set("op '%s' (%s): oneDNN: %s: %s", op->name, op_name(op->type),
			       what, dnnl_status2str(st));
	return err_set("oneDNN: %s: %s", what, dnnl_status2str(st));
}

/* Dense row-major f32 layout of tensor t (rank 0 as [1]). */
static void plain_md(const struct ir_tensor *t, dnnl_memory_desc_t *md)
{
	dnnl_dims_t d, s;
	int r = t->rank ? t->rank : 1;
	for (int i = 0; i < r; i++)
		d[i] = t->rank ? t->shape[i] : 1;
	dnnl_dense_strides(r, d, s);
	dnnl_memory_desc_init_by_strides(md, r, d, dnnl_f32, s);
}

static int plan_keep_mem(struct plan *p, dnnl_memory_t m)
{
	grow_array((void **)&p->mem, &p->capmem, p->nmem + 1, sizeof *p->mem);
	p->mem[p->nmem++] = m;
	return 0;
}

static struct pstep *plan_step(struct plan *p, enum pstep_kind kind, int op)
{
	grow_array((void **)&p->s, &p->cap, p->n + 1, sizeof *p->s);
	struct pstep *s = &p->s[p->n++];
	memset(s, 0, sizeof *s);
	s->kind = kind;
	s->op = op;
	return s;
}

/* A primitive step for pd (destroyed here) with args. */
static int plan_prim(struct plan *p, const struct ir_op *op, int opi, dnnl_primitive_desc_t pd,
		     int nargs, const dnnl_exec_arg_t *args)
{
	dnnl_primitive_t prim;
	dnnl_status_t st = dnnl_primitive_create(&prim, pd);
	dnnl_primitive_desc_destroy(pd);
	if (st != dnnl_success)
		return dnnl_fail(op, "cannot create primitive", st);
	struct pstep *s = plan_step(p, PS_PRIM, opi);
	s->prim = prim;
	s->nargs = nargs;
	memcpy(s->args, args, (size_t)nargs * sizeof *args);
	return 0;
}

static int plan_reorder(struct plan *p, int opi, dnnl_memory_t from, dnnl_memory_t to)
{
	const dnnl_memory_desc_t *fmd, *tmd;
	dnnl_memory_get_memory_desc(from, &fmd);
	dnnl_memory_get_memory_desc(to, &tmd);
	dnnl_primitive_desc_t pd;
	dnnl_status_t st = dnnl_reorder_primitive_desc_create(&pd, fmd, p->eng, tmd, p->eng, NULL);
	if (st != dnnl_success)
		return dnnl_fail(NULL, "reorder unavailable", st);
	dnnl_exec_arg_t args[2] = { { DNNL_ARG_FROM, from }, { DNNL_ARG_TO, to } };
	return plan_prim(p, NULL, opi, pd, 2, args);
}

/* 1 when layout md pads some axis (blocked channels beyond C): such a
 * buffer's padding must stay zero, so it is not handed on. */
static int md_padded(const dnnl_memory_desc_t *md)
{
	for (int i = 0; i < md->ndims; i++)
		if (md->padded_dims[i] != md->dims[i])
			return 1;
	return 0;
}

/* The smallest pooled buffer of at least n bytes, taken from the pool, or
 * NULL.  Its contents are whatever a dead tensor left there. */
static void *pool_take(struct plan *p, size_t n)
{
	int best = -1;
	for (int i = 0; i < p->npool; i++)
		if (p->pool[i].size >= n && (best < 0 || p->pool[i].size < p->pool[best].size))
			best = i;
	if (best < 0)
		return NULL;
	void *b = p->pool[best].buf;
	p->pool[best] = p->pool[--p->npool];
	return b;
}

/* Add a version of tensor t in layout md (in it->val[t] when md is plain);
 * its contents are for the caller to produce. */
static int ver_add(struct plan *p, int t, const dnnl_memory_desc_t *md, struct pver **out)
{
	struct ptensor *pt = &p->t[t];
	if (pt->n == PLAN_VERS)
		return err_set("tensor '%s': too many layouts", p->g->tensors[t].name);
	struct pver *v = &pt->v[pt->n];
	dnnl_memory_desc_t pmd;
	plain_md(&p->g->tensors[t], &pmd);
	v->md = *md;
	if (dnnl_memory_desc_equal(md, &pmd)) {
		v->buf = p->val[t];
		v->owned = 0;
	} else {
		v->size = dnnl_memory_desc_get_size(md);
		v->poolable = p->fuse && !md_padded(md);
		v->buf = v->poolable ? pool_take(p, v->size) : NULL;
		if (v->buf) {
			p->reused += v->size;
		} else {
			v->buf = xaligned(v->size ? v->size : 1);
			memset(v->buf, 0, v->size);
			p->fresh += v->size;
		}
		v->owned = 1;
	}
	dnnl_status_t st = dnnl_memory_create(&v->mem, md, p->eng, v->buf);
	if (st != dnnl_success) {
		if (v->owned)
			free(v->buf);
		return dnnl_fail(NULL, "cannot create memory", st);
	}
	pt->n++;
	*out = v;
	return 0;
}

/* The buffers of tensor t, which no step after this point reads, go to the
 * pool for tensors made later (only when the plan fuses: otherwise every
 * activation must stay readable). */
static void ver_release(struct plan *p, int t)
{
	struct ptensor *pt = &p->t[t];
	for (int i = 0; i < pt->n; i++) {
		struct pver *v = &pt->v[i];
		if (!v->owned || !v->poolable)
			continue;
		grow_array((void **)&p->pool, &p->cappool, p->npool + 1, sizeof *p->pool);
		p->pool[p->npool++] = (struct pbuf){ v->buf, v->size };
		v->owned = 0;
	}
}

/* Make tensor t's first version take over the buffer of version v of
 * another tensor (whose value is dead by then). */
static int ver_alias(struct plan *p, int t, struct pver *v, struct pver **out)
{
	struct ptensor *pt = &p->t[t];
	if (pt->n != 0)
		return err_set("tensor '%s' is written twice", p->g->tensors[t].name);
	struct pver *nv = &pt->v[0];
	nv->md = v->md;
	nv->buf = v->buf;
	nv->owned = v->owned;
	nv->poolable = v->poolable;
	nv->size = v->size;
	v->owned = 0;
	dnnl_status_t st = dnnl_memory_create(&nv->mem, &nv->md, p->eng, nv->buf);
	if (st != dnnl_success)
		return dnnl_fail(NULL, "cannot create memory", st);
	pt->n = 1;
	*out = nv;
	return 0;
}

/* 1 when no op after op `after` but op `except` reads tensor t and it is
 * not a graph output. */
static int unread_after(const struct ir_graph *g, int t, int after, int except)
{
	for (int i = 0; i < g->n_outputs; i++)
		if (g->outputs[i] == t)
			return 0;
	for (int i = after + 1; i < g->n_ops; i++)
		for (int j = 0; i != except && j < g->ops[i].n_in; j++)
			if (g->ops[i].in[j] == t)
				return 0;
	return 1;
}

/* Tensor t in layout md: an existing version, or a new one filled by a
 * reorder step from version 0. */
static int ver_get(struct plan *p, int opi, int t, const dnnl_memory_desc_t *md, struct pver **out)
{
	struct ptensor *pt = &p->t[t];
	if (pt->n == 0)
		return err_set("tensor '%s' is read before it is written", p->g->tensors[t].name);
	for (int i = 0; i < pt->n; i++)
		if (dnnl_memory_desc_equal(&pt->v[i].md, md)) {
			*out = &pt->v[i];
			return 0;
		}
	if (ver_add(p, t, md, out) < 0)
		return -1;
	return plan_reorder(p, opi, pt->v[0].mem, (*out)->mem);
}

/* Make it->val[t] hold tensor t (non-f32 tensors always live there). */
static int ver_plain(struct plan *p, int opi, int t)
{
	const struct ir_tensor *ten = &p->g->tensors[t];
	if (ten->dtype != DT_F32 || p->t[t].n == 0)
		return 0;
	dnnl_memory_desc_t md;
	struct pver *v;
	plain_md(ten, &md);
	return ver_get(p, opi, t, &md, &v);
}

/* 1 when oneDNN chose a reference implementation for pd (slow: the kernel,
 * on plain buffers, is better), and then destroys pd. */
static int ref_impl(dnnl_primitive_desc_t pd)
{
	const char *impl = NULL;
	if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) != dnnl_success ||
	    !impl || strncmp(impl, "ref", 3))
		return 0;
	dnnl_primitive_desc_destroy(pd);
	return 1;
}

static int is_act(const struct ir_graph *g, int t)
{
	return t >= 0 && !g->tensors[t].data;
}

/* ---- post-ops and the ops fused into a primitive as post-ops ---- */

#define PO_MAX 8

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

static int po_add(struct postops *po, int sum, dnnl_alg_kind_t alg, float a, float b)
{
	if (po->n == PO_MAX)
		return 0;
	po->e[po->n].sum = sum;
	po->e[po->n].alg = alg;
	po->e[po->n].a = a;
	po->e[po->n].b = b;
	po->e[po->n].t = -1;
	po->n++;
	return 1;
}

/* The op's fused activation (do_relu, relu_limit > 0 the upper bound). */
static int po_act(struct postops *po, const struct ir_op *op)
{
	if (!op_int(op, "do_relu", 0))
		return 1;
	double lim = op_float(op, "relu_limit", 0);
	return lim > 0 ? po_add(po, 0, dnnl_eltwise_clip, 0.0f, (float)lim) :
			 po_add(po, 0, dnnl_eltwise_relu, 0.0f, 0.0f);
}

/* The function of a one-input elementwise op (then its activation) as
 * eltwise post-ops; 0 when oneDNN has no such function. */
static int po_unary(struct postops *po, const struct ir_op *op)
{
	float a = (float)op_float(op, "alpha", op->type == OP_HARDSIGMOID ? 0.2 :
				  op->type == OP_LEAKYRELU ? 0.01 : 1.0);
	int ok;
	switch (op->type) {
	case OP_RELU: ok = po_add(po, 0, dnnl_eltwise_relu, 0, 0); break;
	case OP_CLIP: {
		float lo = (float)op_float(op, "min", -FLT_MAX), hi = (float)op_float(op, "max", FLT_MAX);
		if (!(lo <= hi) || lo == -INFINITY || hi == INFINITY)
			return 0;
		ok = po_add(po, 0, dnnl_eltwise_clip, lo, hi);
		break;
	}
	case OP_SIGMOID: ok = po_add(po, 0, dnnl_eltwise_logistic, 0, 0); break;
	case OP_TANH: ok = po_add(po, 0, dnnl_eltwise_tanh, 0, 0); break;
	case OP_EXP: ok = po_add(po, 0, dnnl_eltwise_exp, 0, 0); break;
	case OP_LOG: ok = po_add(po, 0, dnnl_eltwise_log, 0, 0); break;
	case OP_SQRT: ok = po_add(po, 0, dnnl_eltwise_sqrt, 0, 0); break;
	case OP_ABS: ok = po_add(po, 0, dnnl_eltwise_abs, 0, 0); break;
	case OP_NEG: ok = po_add(po, 0, dnnl_eltwise_linear, -1, 0); break;
	case OP_HARDSWISH: ok = po_add(po, 0, dnnl_eltwise_hardswish, 0, 0); break;
	case OP_SILU: ok = po_add(po, 0, dnnl_eltwise_swish, 1, 0); break;
	case OP_GELU:
		ok = po_add(po, 0, strcmp(op_str(op, "approximate", "none"), "tanh") ?
			    dnnl_eltwise_gelu_erf : dnnl_eltwise_gelu_tanh, 0, 0);
		break;
	case OP_LEAKYRELU: ok = po_add(po, 0, dnnl_eltwise_relu, a, 0); break;
	case OP_ELU: ok = po_add(po, 0, dnnl_eltwise_elu, a, 0); break;
	case OP_HARDSIGMOID:
		ok = po_add(po, 0, dnnl_eltwise_linear, a, (float)op_float(op, "beta", 0.5)) &&
		     po_add(po, 0, dnnl_eltwise_clip, 0, 1);
		break;
	default: return 0;
	}
	return ok && po_act(po, op);
}

/* po_unary, and Pow by a constant 2 (a square, as its kernel computes it). */
static int po_fold(const struct ir_graph *g, const struct ir_op *op, struct postops *po)
{
	if (op->type != OP_POW)
		return op->n_in == 1 && po_unary(po, op);
	if (op->n_in != 2 || op->in[1] < 0 || !g->tensors[op->in[1]].data ||
	    g->tensors[op->in[1]].dtype != DT_F32 || tensor_numel(&g->tensors[op->in[1]]) != 1 ||
	    ((const float *)g->tensors[op->in[1]].data)[0] != 2.0f)
		return 0;
	return po_add(po, 0, dnnl_eltwise_square, 0, 0) && po_act(po, op);
}

static dnnl_primitive_attr_t po_attr(const struct postops *po)
{
	dnnl_primitive_attr_t attr;
	dnnl_post_ops_t ops;
	if (dnnl_primitive_attr_create(&attr) != dnnl_success)
		return NULL;
	if (dnnl_post_ops_create(&ops) != dnnl_success) {
		dnnl_primitive_attr_destroy(attr);
		return NULL;
	}
	int bad = 0;
	for (int i = 0; i < po->n; i++)
		bad |= (po->e[i].sum == 1 ? dnnl_post_ops_append_sum(ops, 1.0f) :
			po->e[i].sum == 2 ? dnnl_post_ops_append_binary(ops, po->e[i].alg,
									&po->e[i].md) :
			dnnl_post_ops_append_eltwise(ops, 1.0f, po->e[i].alg, po->e[i].a,
						     po->e[i].b)) != dnnl_success;
	bad |= dnnl_primitive_attr_set_post_ops(attr, ops) != dnnl_success;
	dnnl_post_ops_destroy(ops);
	if (bad) {
		dnnl_primitive_attr_destroy(attr);
		return NULL;
	}
	return attr;
}

/* The ops that read tensor t after op `after` (at most max, distinct),
 * their count (max + 1 when there are more), or -1 when t is a graph
 * output. */
static int readers(const struct ir_graph *g, int t, int after, int *ops, int max)
{
	for (int i = 0; i < g->n_outputs; i++)
		if (g->outputs[i] == t)
			return -1;
	int n = 0;
	for (int i = after + 1; i < g->n_ops; i++)
		for (int j = 0; j < g->ops[i].n_in; j++)
			if (g->ops[i].in[j] == t) {
				if (n == max)
					return max + 1;
				ops[n++] = i;
				break;
			}
	return n;
}

static int same_shape(const struct ir_tensor *a, const struct ir_tensor *b)
{
	return a->rank == b->rank && a->dtype == DT_F32 && b->dtype == DT_F32 &&
	       !memcmp(a->shape, b->shape, sizeof a->shape[0] * (size_t)a->rank);
}

/* Op o as a binary post-op after tensor cur (the dst): Add, Mul, Sub or
 * Div of cur (first for Sub and Div) and an f32 weight that broadcasts to
 * cur's shape.  0 when it is not one. */
static int po_binary(const struct ir_graph *g, const struct ir_op *o, int cur, struct postops *po)
{
	const struct ir_tensor *ct = &g->tensors[cur];
	if (o->n_in != 2 || o->n_out != 1 || po->n == PO_MAX || ct->rank < 1 ||
	    !(o->type == OP_ADD || o->type == OP_MUL || o->type == OP_SUB || o->type == OP_DIV) ||
	    (o->in[0] != cur && (o->type == OP_SUB || o->type == OP_DIV)) || o->in[0] == o->in[1])
		return 0;
	int w = o->in[0] == cur ? o->in[1] : o->in[0];
	if (w < 0 || !g->tensors[w].data || g->tensors[w].dtype != DT_F32 ||
	    g->tensors[w].rank > ct->rank || !same_shape(ct, &g->tensors[o->out[0]]))
		return 0;
	const struct ir_tensor *wt = &g->tensors[w];
	dnnl_dims_t d, st;
	int off = ct->rank - wt->rank;
	for (int i = 0; i < ct->rank; i++) {
		d[i] = i < off ? 1 : wt->shape[i - off];
		if (d[i] != 1 && d[i] != ct->shape[i])
			return 0;
	}
	dnnl_dense_strides(ct->rank, d, st);
	dnnl_memory_desc_init_by_strides(&po->e[po->n].md, ct->rank, d, dnnl_f32, st);
	po->e[po->n].sum = 2;
	po->e[po->n].alg = o->type == OP_ADD ? dnnl_binary_add : o->type == OP_MUL ?
			   dnnl_binary_mul : o->type == OP_SUB ? dnnl_binary_sub : dnnl_binary_div;
	po->e[po->n].t = w;
	po->n++;
	return po_act(po, o);
}

/* 1 when tensor t is a scalar f32 weight within 1e-6 (relative) of v. */
static int scalar_is(const struct ir_graph *g, int t, double v)
{
	if (t < 0 || !g->tensors[t].data || g->tensors[t].dtype != DT_F32 ||
	    tensor_numel(&g->tensors[t]) != 1)
		return 0;
	return fabs(((const float *)g->tensors[t].data)[0] - v) <= 1e-6 * fabs(v);
}

/* The other input of two-input op o, or -1 when neither is t. */
static int other_in(const struct ir_op *o, int t)
{
	if (o->n_in != 2)
		return -1;
	return o->in[0] == t ? o->in[1] : o->in[1] == t ? o->in[0] : -1;
}

/* The GELU subgraph x * 0.5 * (1 + Erf(x / sqrt 2)) on x = cur, as PyTorch
 * exports it (Div or Mul by the constant, Erf, Add 1, and the two Muls in
 * either order), each op the only reader of the tensor before it.  Sets
 * ops[5] and returns the index of the op writing the result, or -1. */
static int match_gelu(const struct ir_graph *g, int cur, int after, int *ops)
{
	int rd[2], n = readers(g, cur, after, rd, 2), one;
	if (n != 2)
		return -1;
	for (int k = 0; k < 2; k++) {
		const struct ir_op *d = &g->ops[rd[k]], *m1 = &g->ops[rd[1 - k]];
		if (d->n_out != 1 || d->in[0] != cur ||
		    !((d->type == OP_DIV && scalar_is(g, d->in[1], M_SQRT2)) ||
		      (d->type == OP_MUL && scalar_is(g, other_in(d, cur), M_SQRT1_2))))
			continue;
		int e, a, m2;
		if (readers(g, d->out[0], after, &e, 1) != 1 || g->ops[e].type != OP_ERF ||
		    readers(g, g->ops[e].out[0], after, &a, 1) != 1 || g->ops[a].type != OP_ADD ||
		    !scalar_is(g, other_in(&g->ops[a], g->ops[e].out[0]), 1.0) ||
		    m1->type != OP_MUL || m1->n_out != 1 ||
		    readers(g, m1->out[0], after, &m2, 1) != 1 || g->ops[m2].type != OP_MUL ||
		    g->ops[m2].n_out != 1 || op_int(&g->ops[e], "do_relu", 0) ||
		    op_int(&g->ops[a], "do_relu", 0) || op_int(m1, "do_relu", 0))
			continue;
		int aout = g->ops[a].out[0], mout = m1->out[0];
		/* x * (1 + erf) then * 0.5, or x * 0.5 then * (1 + erf) */
		if (!((other_in(m1, cur) == aout && scalar_is(g, other_in(&g->ops[m2], mout), 0.5) &&
		       readers(g, aout, after, &one, 1) == 1) ||
		      (scalar_is(g, other_in(m1, cur), 0.5) && other_in(&g->ops[m2], mout) == aout &&
		       readers(g, aout, after, &one, 1) == 1)))
			continue;
		ops[0] = rd[k];
		ops[1] = e;
		ops[2] = a;
		ops[3] = rd[1 - k];
		ops[4] = m2;
		return m2;
	}
	return -1;
}

/* 1 for a Sigmoid that writes a graph output: its kernel saturates to
 * exactly 0 and 1 as onnxruntime does, oneDNN's logistic does not, and a
 * saturated probability is what a user compares. */
static int exact_output(const struct ir_graph *g, const struct ir_op *op)
{
	if (op->type != OP_SIGMOID)
		return 0;
	for (int i = 0; i < g->n_outputs; i++)
		if (g->outputs[i] == op->out[0])
			return 1;
	return 0;
}

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

static void chain_build(const struct plan *p, int opi, int fuse, int sum,
			const struct postops *init, struct chain *c)
{
	const struct ir_graph *g = p->g;
	int cur = g->ops[opi].out[0];
	memset(c, 0, sizeof *c);
	c->sum_src = c->sum_op = -1;
	if (init)
		c->po = *init;
	else
		po_act(&c->po, &g->ops[opi]);
	while (fuse && c->nskip < PO_MAX - 2) {
		int rd[2], n = readers(g, cur, opi, rd, 2);
		const struct ir_tensor *ct = &g->tensors[cur];
		struct postops po = c->po;
		int unary = n == 1 && g->ops[rd[0]].n_out == 1 && g->ops[rd[0]].in[0] == cur &&
			    same_shape(ct, &g->tensors[g->ops[rd[0]].out[0]]) &&
			    !exact_output(g, &g->ops[rd[0]]);
		if (unary && !po_fold(g, &g->ops[rd[0]], &po)) {
			unary = 0;
			po = c->po;
		}
		int gelu[5], gl = n == 2 && c->nskip < PO_MAX - 6 ? match_gelu(g, cur, opi, gelu) : -1;
		if (unary) {
			c->skip[c->nskip++] = rd[0];
			cur = g->ops[rd[0]].out[0];
		} else if (gl >= 0) {
			if (!po_add(&po, 0, dnnl_eltwise_gelu_erf, 0, 0) || !po_act(&po, &g->ops[gl]))
				break;
			for (int i = 0; i < 5; i++)
				c->skip[c->nskip++] = gelu[i];
			cur = g->ops[gl].out[0];
		} else if (n == 1 && po_binary(g, &g->ops[rd[0]], cur, &po)) {
			c->skip[c->nskip++] = rd[0];
			cur = g->ops[rd[0]].out[0];
		} else if (n == 2) {
			/* x * f(x): f one of the readers, the Mul the other */
			int u = g->ops[rd[0]].type == OP_MUL ? rd[1] : rd[0];
			int m = u == rd[0] ? rd[1] : rd[0];
			const struct ir_op *uo = &g->ops[u], *mo = &g->ops[m];
			int fu, one;
			if (mo->type != OP_MUL || mo->n_in != 2 || mo->n_out != 1 ||
			    uo->n_in != 1 || uo->n_out != 1 || op_int(uo, "do_relu", 0) ||
			    !((mo->in[0] == cur && mo->in[1] == uo->out[0]) ||
			      (mo->in[1] == cur && mo->in[0] == uo->out[0])) ||
			    readers(g, uo->out[0], opi, &fu, 1) != 1 ||
			    !same_shape(ct, &g->tensors[mo->out[0]]))
				break;
			if (uo->type == OP_SIGMOID)
				one = po_add(&po, 0, dnnl_eltwise_swish, 1, 0);
			else if (uo->type == OP_HARDSIGMOID &&
				 fabs(op_float(uo, "alpha", 0.2) - 1.0 / 6) < 1e-6 &&
				 op_float(uo, "beta", 0.5) == 0.5)
				one = po_add(&po, 0, dnnl_eltwise_hardswish, 0, 0);
			else
				break;
			if (!one || !po_act(&po, mo))
				break;
			c->skip[c->nskip++] = u;
			c->skip[c->nskip++] = m;
			cur = mo->out[0];
		} else if (n == 1 && sum && c->sum_src < 0 && g->ops[rd[0]].type == OP_ADD &&
			   g->ops[rd[0]].n_in == 2 && g->ops[rd[0]].n_out == 1) {
			const struct ir_op *add = &g->ops[rd[0]];
			int r = add->in[0] == cur ? add->in[1] : add->in[0];
			if (add->in[0] == add->in[1] || !is_act(g, r) || p->t[r].n == 0 ||
			    !same_shape(ct, &g->tensors[r]) ||
			    !same_shape(ct, &g->tensors[add->out[0]]) ||
			    !po_add(&po, 1, dnnl_alg_kind_undef, 0, 0) || !po_act(&po, add))
				break;
			c->sum_src = r;
			c->sum_op = rd[0];
			c->skip[c->nskip++] = rd[0];
			cur = add->out[0];
		} else {
			break;
		}
		c->po = po;
	}
	c->out = cur;
}

/* Append to args the weights of the chain's binary post-ops (memories over
 * their data, kept by the plan); returns the new count, -1 on error. */
static int chain_args(struct plan *p, const struct chain *c, dnnl_exec_arg_t *args, int n)
{
	for (int i = 0; i < c->po.n; i++) {
		if (c->po.e[i].sum != 2)
			continue;
		dnnl_memory_t m;
		if (n == PLAN_ARGS)
			return err_set("too many post-op arguments");
		if (dnnl_memory_create(&m, &c->po.e[i].md, p->eng,
				       p->g->tensors[c->po.e[i].t].data) != dnnl_success)
			return err_set("oneDNN: cannot create memory");
		plan_keep_mem(p, m);
		args[n++] = (dnnl_exec_arg_t){ DNNL_ARG_ATTR_MULTIPLE_POST_OP(i) | DNNL_ARG_SRC_1, m };
	}
	return n;
}

/* Mark the ops of a chain as done by the primitive. */
static void chain_take(struct plan *p, const struct chain *c)
{
	for (int i = 0; i < c->nskip; i++)
		p->skip[c->skip[i]] = 1;
}

static int all_f32(const struct ir_graph *g, const struct ir_op *op)
{
	for (int i = 0; i < op->n_in; i++)
		if (op->in[i] >= 0 && g->tensors[op->in[i]].dtype != DT_F32)
			return 0;
	for (int i = 0; i < op->n_out; i++)
		if (g->tensors[op->out[i]].dtype != DT_F32 || tensor_numel(&g->tensors[op->out[i]]) == 0)
			return 0;
	return 1;
}

/* Weight tensor t reordered once into layout want (kept by the plan). */
static int const_mem(struct plan *p, const dnnl_memory_desc_t *user, const void *data,
		     const dnnl_memory_desc_t *want, dnnl_memory_t *out)
{
	dnnl_memory_t um, m;
	dnnl_status_t st = dnnl_memory_create(&um, user, p->eng, (void *)data);
	if (st != dnnl_success)
		return dnnl_fail(NULL, "cannot create memory", st);
	if (dnnl_memory_desc_equal(user, want)) {
		*out = um;
		return plan_keep_mem(p, um);
	}
	st = dnnl_memory_create(&m, want, p->eng, DNNL_MEMORY_ALLOCATE);
	if (st != dnnl_success) {
		dnnl_memory_destroy(um);
		return dnnl_fail(NULL, "cannot create memory", st);
	}
	plan_keep_mem(p, m);
	dnnl_primitive_desc_t pd;
	dnnl_primitive_t prim;
	st = dnnl_reorder_primitive_desc_create(&pd, user, p->eng, want, p->eng, NULL);
	if (st == dnnl_success) {
		st = dnnl_primitive_create(&prim, pd);
		dnnl_primitive_desc_destroy(pd);
	}
	if (st == dnnl_success) {
		dnnl_exec_arg_t args[2] = { { DNNL_ARG_FROM, um }, { DNNL_ARG_TO, m } };
		st = dnnl_primitive_execute(prim, p->strm, 2, args);
		dnnl_stream_wait(p->strm);
		dnnl_primitive_destroy(prim);
	}
	dnnl_memory_destroy(um);
	if (st != dnnl_success)
		return dnnl_fail(NULL, "cannot reorder weights", st);
	*out = m;
	return 0;
}

/* 1 when a conv of spatial attributes s and weight w is one the plan
 * computes by Winograd's algorithm: 3x3, stride 1, no dilation or groups,
 * 16 channels or more in and out, unless TPUC_WINOGRAD=0. */
static int wino_conv(const struct spatial *s, const struct ir_tensor *w)
{
	const char *e = getenv("TPUC_WINOGRAD");
	if (e && !strcmp(e, "0"))
		return 0;
	return s->kh == 3 && s->kw == 3 && s->sh == 1 && s->sw == 1 && s->dh == 1 &&
	       s->dw == 1 && s->group == 1 && w->shape[0] >= 16 && w->shape[1] >= 16;
}

/* Conv: 1 when planned, 0 to fall back to the kernel, -1 on error. */
static int plan_conv(struct plan *p, int opi)
{
	const struct ir_graph *g = p->g;
	const struct ir_op *op = &g->ops[opi];
	struct spatial s;
	if (op->n_in < 2 || op->n_out != 1 || !all_f32(g, op) || !is_act(g, op->in[0]) ||
	    is_act(g, op->in[1]) || (op->n_in > 2 && is_act(g, op->in[2])) ||
	    spatial_get(g, op, &s) < 0)
		return 0;
	const struct ir_tensor *x = &g->tensors[op->in[0]], *w = &g->tensors[op->in[1]];
	const struct ir_tensor *y = &g->tensors[op->out[0]];
	const struct ir_tensor *b = op->n_in > 2 && op->in[2] >= 0 ? &g->tensors[op->in[2]] : NULL;
	if (x->rank != 4 || w->rank != 4 || y->rank != 4 || tensor_numel(x) == 0 || s.group < 1)
		return 0;
	int64_t pb = (y->shape[2] - 1) * s.sh + (int64_t)(s.kh - 1) * s.dh + 1 - x->shape[2] - s.pt;
	int64_t pr = (y->shape[3] - 1) * s.sw + (int64_t)(s.kw - 1) * s.dw + 1 - x->shape[3] - s.pl;
	if (pb < -s.sh || pr < -s.sw)   /* oneDNN takes rows no window reads as negative padding */
		return 0;
	int grp = s.group > 1;
	dnnl_dims_t xd = { x->shape[0], x->shape[1], x->shape[2], x->shape[3] };
	dnnl_dims_t yd = { y->shape[0], y->shape[1], y->shape[2], y->shape[3] };
	dnnl_dims_t wd = { w->shape[0], w->shape[1], w->shape[2], w->shape[3] };
	dnnl_dims_t gwd = { s.group, w->shape[0] / s.group, w->shape[1], w->shape[2], w->shape[3] };
	dnnl_dims_t bd = { y->shape[1] };
	dnnl_memory_desc_t any_x, any_w, any_y, w_md, b_md, y_md;
	/* few input channels (an image): oneDNN's kernels for a plain source
	 * beat a reorder to its blocked layouts */
	dnnl_memory_desc_t x_plain;
	plain_md(x, &x_plain);
	int plain_src = x->shape[1] < 8 && p->t[op->in[0]].n > 0 &&
			dnnl_memory_desc_equal(&p->t[op->in[0]].v[0].md, &x_plain);
	dnnl_memory_desc_init_by_tag(&any_x, 4, xd, dnnl_f32,
				     plain_src ? dnnl_abcd : dnnl_format_tag_any);
	dnnl_memory_desc_init_by_tag(&any_y, 4, yd, dnnl_f32, dnnl_format_tag_any);
	dnnl_memory_desc_init_by_tag(&any_w, grp ? 5 : 4, grp ? gwd : wd, dnnl_f32,
				     dnnl_format_tag_any);
	dnnl_memory_desc_init_by_tag(&w_md, grp ? 5 : 4, grp ? gwd : wd, dnnl_f32,
				     grp ? dnnl_goihw : dnnl_oihw);
	dnnl_memory_desc_init_by_tag(&b_md, 1, bd, dnnl_f32, dnnl_x);
	dnnl_dims_t strides = { s.sh, s.sw }, dil = { s.dh - 1, s.dw - 1 };
	dnnl_dims_t pad_l = { s.pt, s.pl }, pad_r = { pb, pr };

	/* Winograd where oneDNN has it (3x3, stride 1, enough channels: fewer
	 * products, results within float rounding), else direct; each with the
	 * ops that fold in as post-ops, else alone.  With a sum the dst takes
	 * the layout oneDNN picks for the conv alone. */
	int wino = wino_conv(&s, w);
	struct chain c;
	dnnl_primitive_desc_t pd = NULL;
	dnnl_status_t st;
	for (int ai = wino ? 0 : 1; ai < 2 && !pd; ai++)
	for (int fuse = p->fuse; fuse >= 0 && !pd; fuse--) {
		dnnl_alg_kind_t alg = ai == 0 ? dnnl_convolution_winograd : dnnl_convolution_direct;
		const dnnl_memory_desc_t *src = &any_x, *dst = &any_y;
		chain_build(p, opi, fuse, 1, NULL, &c);
		if (fuse && c.nskip == 0)
			continue;
		dnnl_convolution_desc_t cd;
		st = dnnl_dilated_convolution_forward_desc_init(&cd, dnnl_forward_inference, alg,
			src, &any_w, b ? &b_md : NULL, dst, strides, dil, pad_l, pad_r);
		if (st != dnnl_success)
			continue;
		if (c.sum_src >= 0) {
			struct chain alone;
			dnnl_primitive_desc_t pd0;
			chain_build(p, opi, 0, 0, NULL, &alone);
			dnnl_primitive_attr_t a0 = po_attr(&alone.po);
			if (!a0)
				continue;
			st = dnnl_primitive_desc_create(&pd0, &cd, a0, p->eng, NULL);
			dnnl_primitive_attr_destroy(a0);
			if (st != dnnl_success)
				continue;
			y_md = *dnnl_primitive_desc_query_md(pd0, dnnl_query_dst_md, 0);
			dnnl_primitive_desc_destroy(pd0);
			st = dnnl_dilated_convolution_forward_desc_init(&cd, dnnl_forward_inference,
				alg, src, &any_w, b ? &b_md : NULL, &y_md, strides, dil, pad_l,
				pad_r);
			if (st != dnnl_success)
				continue;
		}
		dnnl_primitive_attr_t attr = po_attr(&c.po);
		if (!attr)
			continue;
		st = dnnl_primitive_desc_create(&pd, &cd, attr, p->eng, NULL);
		dnnl_primitive_attr_destroy(attr);
		if (st != dnnl_success || ref_impl(pd))
			pd = NULL;
	}
	if (!pd)
		return 0;

	const dnnl_memory_desc_t *want_x = dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0);
	const dnnl_memory_desc_t *want_w = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
	const dnnl_memory_desc_t *want_y = dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
	dnnl_memory_t wm, bm = NULL;
	struct pver *xv, *yv;
	if (const_mem(p, &w_md, w->data, want_w, &wm) < 0 ||
	    (b && const_mem(p, &b_md, b->data, &b_md, &bm) < 0) ||
	    ver_get(p, opi, op->in[0], want_x, &xv) < 0)
		goto fail;
	if (c.sum_src >= 0) {
		/* the output receives the other operand, then the sum; the
		 * conv adds in place when nothing reads the operand after */
		int r = c.sum_src;
		struct pver *rv = &p->t[r].v[0];
		if (rv->buf != p->val[r] && r != op->in[0] && dnnl_memory_desc_equal(&rv->md, want_y) &&
		    unread_after(g, r, opi, c.sum_op)) {
			if (ver_alias(p, c.out, rv, &yv) < 0)
				goto fail;
		} else if (ver_add(p, c.out, want_y, &yv) < 0 ||
			   plan_reorder(p, opi, rv->mem, yv->mem) < 0) {
			goto fail;
		}
	} else if (ver_add(p, c.out, want_y, &yv) < 0) {
		goto fail;
	}
	chain_take(p, &c);
	dnnl_exec_arg_t args[PLAN_ARGS] = {
		{ DNNL_ARG_SRC, xv->mem }, { DNNL_ARG_WEIGHTS, wm }, { DNNL_ARG_DST, yv->mem },
		{ DNNL_ARG_BIAS, bm },
	};
	int na = chain_args(p, &c, args, b ? 4 : 3);
	if (na < 0)
		goto fail;
	return plan_prim(p, op, opi, pd, na, args) < 0 ? -1 : 1;
fail:
	dnnl_primitive_desc_destroy(pd);
	return -1;
}

/* MaxPool, AveragePool, GlobalAveragePool on the input's layout. */
static int plan_pool(struct plan *p, int opi)
{
	const struct ir_graph *g = p->g;
	const struct ir_op *op = &g->ops[opi];
	if (op->n_in != 1 || op->n_out != 1 || !all_f32(g, op) || !is_act(g, op->in[0]))
		return 0;
	const struct ir_tensor *x = &g->tensors[op->in[0]], *y = &g->tensors[op->out[0]];
	if (x->rank != 4 || y->rank != 4 || tensor_numel(x) == 0)
		return 0;
	struct spatial s = { .kh = (int)x->shape[2], .kw = (int)x->shape[3], .sh = 1, .sw = 1,
			     .dh = 1, .dw = 1 };
	dnnl_alg_kind_t alg = dnnl_pooling_avg_exclude_padding;
	if (op->type != OP_GAVGPOOL) {
		if (spatial_get(g, op, &s) < 0)
			return 0;
		if (op->type == OP_MAXPOOL)
			alg = dnnl_pooling_max;
		else if (op_int(op, "count_include_pad", 0))
			alg = dnnl_pooling_avg_include_padding;
	}
	int64_t pb = (y->shape[2] - 1) * s.sh + (int64_t)(s.kh - 1) * s.dh + 1 - x->shape[2] - s.pt;
	int64_t pr = (y->shape[3] - 1) * s.sw + (int64_t)(s.kw - 1) * s.dw + 1 - x->shape[3] - s.pl;
	if (pb < -s.sh || pr < -s.sw)
		return 0;
	/* windows past the given padding (ceil_mode) count differently */
	if (alg == dnnl_pooling_avg_include_padding && (pb != s.pb || pr != s.pr))
		return 0;
	dnnl_dims_t yd = { y->shape[0], y->shape[1], y->shape[2], y->shape[3] };
	dnnl_dims_t strides = { s.sh, s.sw }, kernel = { s.kh, s.kw };
	dnnl_dims_t dil = { s.dh - 1, s.dw - 1 }, pad_l = { s.pt, s.pl }, pad_r = { pb, pr };
	dnnl_memory_desc_t any_y;
	dnnl_memory_desc_init_by_tag(&any_y, 4, yd, dnnl_f32, dnnl_format_tag_any);
	if (p->t[op->in[0]].n == 0)
		return 0;
	const struct pver *x0 = &p->t[op->in[0]].v[0];
	dnnl_pooling_v2_desc_t pdesc;
	dnnl_primitive_desc_t pd;
	if (dnnl_pooling_v2_forward_desc_init(&pdesc, dnnl_forward_inference, alg, &x0->md,
					      &any_y, strides, kernel, dil, pad_l, pad_r) != dnnl_success ||
	    dnnl_primitive_desc_create(&pd, &pdesc, NULL, p->eng, NULL) != dnnl_success ||
	    ref_impl(pd))
		return 0;
	struct pver *yv;
	if (ver_add(p, op->out[0], dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0), &yv) < 0) {
		dnnl_primitive_desc_destroy(pd);
		return -1;
	}
	dnnl_exec_arg_t args[2] = { { DNNL_ARG_SRC, x0->mem }, { DNNL_ARG_DST, yv->mem } };
	return plan_prim(p, op, opi, pd, 2, args) < 0 ? -1 : 1;
}

/* Add, Mul, Sub and Div with a fused activation.  Input 0 (or 1 for Add
 * and Mul, which commute) has the output's shape; the other is the same
 * shape, taken in the same layout, or broadcasts from a plain layout. */
static int plan_binary(struct plan *p, int opi)
{
	const struct ir_graph *g = p->g;
	const struct ir_op *op = &g->ops[opi];
	if (op->n_in != 2 || op->n_out != 1 || !all_f32(g, op) || op->in[0] < 0 || op->in[1] < 0)
		return 0;
	const struct ir_tensor *y = &g->tensors[op->out[0]];
	int a = op->in[0], b = op->in[1];
	const struct ir_tensor *ta = &g->tensors[a], *tb = &g->tensors[b];
	size_t sz = sizeof y->shape[0] * (size_t)y->rank;
	int commute = op->type == OP_ADD || op->type == OP_MUL || op->type == OP_MAX ||
		      op->type == OP_MIN;
	if (commute && (ta->rank != y->rank || memcmp(ta->shape, y->shape, sz))) {
		int t = a;
		a = b;
		b = t;
		ta = &g->tensors[a];
		tb = &g->tensors[b];
	}
	if (ta->rank != y->rank || memcmp(ta->shape, y->shape, sz) || !is_act(g, a) ||
	    tb->rank > y->rank || y->rank < 1 || y->rank > 6 || p->t[a].n == 0 || p->t[b].n == 0)
		return 0;
	const struct pver *av = &p->t[a].v[0];
	struct pver *bv;
	dnnl_memory_desc_t bmd;
	int same = tb->rank == y->rank && !memcmp(tb->shape, y->shape, sz);
	if (same) {
		bmd = av->md;
	} else {
		/* the broadcast operand, plain, with leading 1s up to y's rank */
		dnnl_dims_t d, st;
		int off = y->rank - tb->rank;
		for (int i = 0; i < y->rank; i++)
			d[i] = i < off ? 1 : tb->shape[i - off];
		dnnl_dense_strides(y->rank, d, st);
		dnnl_memory_desc_init_by_strides(&bmd, y->rank, d, dnnl_f32, st);
	}
	struct chain c;
	dnnl_primitive_desc_t pd = NULL;
	for (int fuse = p->fuse; fuse >= 0 && !pd; fuse--) {
		chain_build(p, opi, fuse, 0, NULL, &c);
		if (fuse && c.nskip == 0)
			continue;
		dnnl_primitive_attr_t attr = po_attr(&c.po);
		if (!attr)
			continue;
		dnnl_binary_desc_t bd;
		dnnl_alg_kind_t alg = op->type == OP_ADD ? dnnl_binary_add :
			op->type == OP_MUL ? dnnl_binary_mul : op->type == OP_SUB ? dnnl_binary_sub :
			op->type == OP_DIV ? dnnl_binary_div : op->type == OP_MAX ? dnnl_binary_max :
			dnnl_binary_min;
		dnnl_status_t st = dnnl_binary_desc_init(&bd, alg, &av->md, &bmd, &av->md);
		if (st == dnnl_success)
			st = dnnl_primitive_desc_create(&pd, &bd, attr, p->eng, NULL);
		dnnl_primitive_attr_destroy(attr);
		if (st != dnnl_success || ref_impl(pd))
			pd = NULL;
	}
	if (!pd)
		return 0;
	struct pver *yv;
	dnnl_memory_t bmem;
	if (same) {
		if (ver_get(p, opi, b, &bmd, &bv) < 0)
			goto fail;
		bmem = bv->mem;
	} else {
		/* a plain view of b's buffer (version 0 of a broadcast operand
		 * comes from a kernel or is a weight: plain) */
		if (ver_plain(p, opi, b) < 0)
			goto fail;
		if (dnnl_memory_create(&bmem, &bmd, p->eng, p->val[b]) != dnnl_success) {
			err_set("oneDNN: cannot create memory");
			goto fail;
		}
		plan_keep_mem(p, bmem);
	}
	if (ver_add(p, c.out, &av->md, &yv) < 0)
		goto fail;
	chain_take(p, &c);
	dnnl_exec_arg_t args[PLAN_ARGS] = {
		{ DNNL_ARG_SRC_0, av->mem }, { DNNL_ARG_SRC_1, bmem }, { DNNL_ARG_DST, yv->mem },
	};
	int na = chain_args(p, &c, args, 3);
	if (na < 0)
		goto fail;
	return plan_prim(p, op, opi, pd, na, args) < 0 ? -1 : 1;
fail:
	dnnl_primitive_desc_destroy(pd);
	return -1;
}

/* One-input elementwise ops oneDNN has (po_unary), with the ops after them
 * that fold in as post-ops, on the input's layout. */
static int plan_eltwise(struct plan *p, int opi)
{
	const struct ir_graph *g = p->g;
	const struct ir_op *op = &g->ops[opi];
	struct postops own = { 0 }, rest = { 0 };
	if (op->n_out != 1 || !all_f32(g, op) || !is_act(g, op->in[0]) ||
	    p->t[op->in[0]].n == 0 || exact_output(g, op) || !po_fold(g, op, &own) ||
	    !same_shape(&g->tensors[op->in[0]], &g->tensors[op->out[0]]))
		return 0;
	/* the first function is the primitive's, the others its post-ops */
	rest.n = own.n - 1;
	memcpy(rest.e, own.e + 1, sizeof rest.e[0] * (size_t)rest.n);
	const struct pver *xv = &p->t[op->in[0]].v[0];
	struct chain c;
	dnnl_primitive_desc_t pd = NULL;
	for (int fuse = p->fuse; fuse >= 0 && !pd; fuse--) {
		chain_build(p, opi, fuse, 0, &rest, &c);
		if (fuse && c.nskip == 0)
			continue;
		dnnl_primitive_attr_t attr = po_attr(&c.po);
		if (!attr)
			continue;
		dnnl_eltwise_desc_t ed;
		dnnl_status_t st = dnnl_eltwise_forward_desc_init(&ed, dnnl_forward_inference,
			own.e[0].alg, &xv->md, own.e[0].a, own.e[0].b);
		if (st == dnnl_success)
			st = dnnl_primitive_desc_create(&pd, &ed, attr, p->eng, NULL);
		dnnl_primitive_attr_destroy(attr);
		if (st != dnnl_success || ref_impl(pd))
			pd = NULL;
	}
	if (!pd)
		return 0;
	struct pver *yv;
	if (ver_add(p, c.out, &xv->md, &yv) < 0) {
		dnnl_primitive_desc_destroy(pd);
		return -1;
	}
	chain_take(p, &c);
	dnnl_exec_arg_t args[PLAN_ARGS] = { { DNNL_ARG_SRC, xv->mem }, { DNNL_ARG_DST, yv->mem } };
	int na = chain_args(p, &c, args, 2);
	if (na < 0) {
		dnnl_primitive_desc_destroy(pd);
		return -1;
	}
	return plan_prim(p, op, opi, pd, na, args) < 0 ? -1 : 1;
}

/* Concat of 4-D activations along channels, in the layouts they have. */
static int md_like(const dnnl_memory_desc_t *md, int r, const dnnl_dims_t d,
		   dnnl_memory_desc_t *out);

static int plan_concat(struct plan *p, int opi)
{
	const struct ir_graph *g = p->g;
	const struct ir_op *op = &g->ops[opi];
	const struct ir_tensor *y = &g->tensors[op->out[0]];
	if (op->n_out != 1 || op->n_in < 2 || op->n_in > PLAN_ARGS - 1 || !all_f32(g, op) ||
	    y->rank != 4 || (op_int(op, "axis", 1) != 1 && op_int(op, "axis", 1) != -3))
		return 0;
	/* every input in the layout of the largest one (where it has a like
	 * for other dims), so that oneDNN's copy need not be a reference one */
	dnnl_memory_desc_t mds[PLAN_ARGS], lead, ymd;
	struct pver *xv[PLAN_ARGS], *yv;
	int big = -1;
	for (int i = 0; i < op->n_in; i++) {
		if (!is_act(g, op->in[i]) || p->t[op->in[i]].n == 0 ||
		    g->tensors[op->in[i]].rank != 4 || tensor_numel(&g->tensors[op->in[i]]) == 0)
			return 0;
		if (big < 0 || tensor_numel(&g->tensors[op->in[i]]) >
			       tensor_numel(&g->tensors[op->in[big]]))
			big = i;
	}
	lead = p->t[op->in[big]].v[0].md;
	dnnl_dims_t yd = { y->shape[0], y->shape[1], y->shape[2], y->shape[3] };
	for (int i = 0; i < op->n_in; i++) {
		const struct ir_tensor *t = &g->tensors[op->in[i]];
		dnnl_dims_t d = { t->shape[0], t->shape[1], t->shape[2], t->shape[3] };
		if (!md_like(&lead, 4, d, &mds[i]))
			mds[i] = p->t[op->in[i]].v[0].md;
	}
	dnnl_primitive_desc_t pd;
	if (dnnl_concat_primitive_desc_create(&pd, md_like(&lead, 4, yd, &ymd) ? &ymd : NULL,
					      op->n_in, 1, mds, NULL, p->eng) != dnnl_success ||
	    ref_impl(pd))
		return 0;
	int rc = 0;
	for (int i = 0; i < op->n_in && rc == 0; i++)
		rc = ver_get(p, opi, op->in[i], &mds[i], &xv[i]);
	if (rc < 0 ||
	    ver_add(p, op->out[0], dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0), &yv) < 0) {
		dnnl_primitive_desc_destroy(pd);
		return -1;
	}
	dnnl_exec_arg_t args[PLAN_ARGS];
	for (int i = 0; i < op->n_in; i++)
		args[i] = (dnnl_exec_arg_t){ DNNL_ARG_MULTIPLE_SRC + i, xv[i]->mem };
	args[op->n_in] = (dnnl_exec_arg_t){ DNNL_ARG_DST, yv->mem };
	return plan_prim(p, op, opi, pd, op->n_in + 1, args) < 0 ? -1 : 1;
}

/* Gemm with constant B (either orientation), no transA, alpha 1, and C
 * absent or a constant row of N (beta 1): a matmul with bias on plain
 * [M,K] x [K,N] -> [M,N], B reordered once. */
static int plan_gemm(struct plan *p, int opi)
{
	const struct ir_graph *g = p->g;
	const struct ir_op *op = &g->ops[opi];
	if (op->n_in < 2 || op->n_out != 1 || !all_f32(g, op) || !is_act(g, op->in[0]) ||
	    is_act(g, op->in[1]) || op_int(op, "transA", 0) || op_float(op, "alpha", 1) != 1)
		return 0;
	const struct ir_tensor *a = &g->tensors[op->in[0]], *b = &g->tensors[op->in[1]];
	const struct ir_tensor *y = &g->tensors[op->out[0]];
	const struct ir_tensor *c = op->n_in > 2 && op->in[2] >= 0 ? &g->tensors[op->in[2]] : NULL;
	if (a->rank != 2 || b->rank != 2 || y->rank != 2 || p->t[op->in[0]].n == 0 ||
	    tensor_numel(a) == 0)
		return 0;
	int64_t n = y->shape[1], k = a->shape[1];
	int tb = op_int(op, "transB", 0) != 0;
	if (c && (c->data == NULL || tensor_numel(c) != n || op_float(op, "beta", 1) != 1 ||
		  (c->rank == 2 && c->shape[0] != 1)))
		return 0;
	dnnl_dims_t bd = { k, n }, cd = { 1, n };
	dnnl_dims_t bs = { tb ? 1 : n, tb ? k : 1 };
	dnnl_memory_desc_t a_md, b_md, any_b, c_md, y_md;
	plain_md(a, &a_md);
	plain_md(y, &y_md);
	dnnl_memory_desc_init_by_strides(&b_md, 2, bd, dnnl_f32, bs);
	dnnl_memory_desc_init_by_tag(&any_b, 2, bd, dnnl_f32, dnnl_format_tag_any);
	dnnl_memory_desc_init_by_tag(&c_md, 2, cd, dnnl_f32, dnnl_ab);
	dnnl_matmul_desc_t md;
	dnnl_primitive_desc_t pd;
	struct postops po = { 0 };
	po_act(&po, op);
	dnnl_primitive_attr_t attr = po_attr(&po);
	if (!attr)
		return 0;
	dnnl_status_t st = dnnl_matmul_desc_init(&md, &a_md, &any_b, c ? &c_md : NULL, &y_md);
	if (st == dnnl_success)
		st = dnnl_primitive_desc_create(&pd, &md, attr, p->eng, NULL);
	dnnl_primitive_attr_destroy(attr);
	if (st != dnnl_success)
		return 0;
	dnnl_memory_t bm, cm = NULL;
	struct pver *av, *yv;
	if (const_mem(p, &b_md, b->data,
		      dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0), &bm) < 0 ||
	    (c && const_mem(p, &c_md, c->data, &c_md, &cm) < 0) ||
	    ver_get(p, opi, op->in[0], &a_md, &av) < 0 ||
	    ver_add(p, op->out[0], &y_md, &yv) < 0) {
		dnnl_primitive_desc_destroy(pd);
		return -1;
	}
	dnnl_exec_arg_t args[4] = {
		{ DNNL_ARG_SRC, av->mem }, { DNNL_ARG_WEIGHTS, bm }, { DNNL_ARG_DST, yv->mem },
		{ DNNL_ARG_BIAS, cm },
	};
	return plan_prim(p, op, opi, pd, c ? 4 : 3, args) < 0 ? -1 : 1;
}

/* A memory over it->val[t] (made to hold t first) seen with dense dims d
 * of rank r, kept by the plan. */
static int plain_view(struct plan *p, int opi, int t, int r, const int64_t *d, dnnl_memory_t *m)
{
	dnnl_memory_desc_t md;
	dnnl_dims_t dims, st;
	for (int i = 0; i < r; i++)
		dims[i] = d[i];
	dnnl_dense_strides(r, dims, st);
	dnnl_memory_desc_init_by_strides(&md, r, dims, dnnl_f32, st);
	if (!p->g->tensors[t].data && ver_plain(p, opi, t) < 0)
		return -1;
	if (dnnl_memory_create(m, &md, p->eng, p->val[t]) != dnnl_success)
		return err_set("oneDNN: cannot create memory");
	return plan_keep_mem(p, *m);
}

/* The output of a primitive that writes it->val[y] (plain), seen with
 * dense dims d of rank r. */
static int plain_out(struct plan *p, int y, int r, const int64_t *d, dnnl_memory_t *m)
{
	dnnl_memory_desc_t md;
	struct pver *v;
	plain_md(&p->g->tensors[y], &md);
	if (ver_add(p, y, &md, &v) < 0)
		return -1;
	return plain_view(p, -1, y, r, d, m);
}

/* MatMul of plain operands of rank 2 or more (batch axes broadcast), a
 * constant B reordered once. */
static int plan_matmul(struct plan *p, int opi)
{
	const struct ir_graph *g = p->g;
	const struct ir_op *op = &g->ops[opi];
	if (op->n_in != 2 || op->n_out != 1 || !all_f32(g, op) || op->in[0] < 0 || op->in[1] < 0)
		return 0;
	const struct ir_tensor *a = &g->tensors[op->in[0]], *b = &g->tensors[op->in[1]];
	const struct ir_tensor *y = &g->tensors[op->out[0]];
	int r = y->rank;
	if (a->rank < 2 || b->rank < 2 || r > 12 || a->rank > r || b->rank > r ||
	    tensor_numel(a) == 0 || tensor_numel(b) == 0 || !is_act(g, op->in[0]) ||
	    p->t[op->in[0]].n == 0 || (is_act(g, op->in[1]) && p->t[op->in[1]].n == 0))
		return 0;
	int64_t ad[12], bd[12];
	for (int i = 0; i < r; i++) {
		ad[i] = i < r - a->rank ? 1 : a->shape[i - (r - a->rank)];
		bd[i] = i < r - b->rank ? 1 : b->shape[i - (r - b->rank)];
	}
	dnnl_dims_t add, bdd, ydd, ast, bst, yst;
	for (int i = 0; i < r; i++) {
		add[i] = ad[i];
		bdd[i] = bd[i];
		ydd[i] = y->shape[i];
	}
	dnnl_dense_strides(r, add, ast);
	dnnl_dense_strides(r, bdd, bst);
	dnnl_dense_strides(r, ydd, yst);
	dnnl_memory_desc_t a_md, b_md, any_b, y_md;
	dnnl_memory_desc_init_by_strides(&a_md, r, add, dnnl_f32, ast);
	dnnl_memory_desc_init_by_strides(&b_md, r, bdd, dnnl_f32, bst);
	dnnl_memory_desc_init_by_tag(&any_b, r, bdd, dnnl_f32, dnnl_format_tag_any);
	dnnl_memory_desc_init_by_strides(&y_md, r, ydd, dnnl_f32, yst);
	int cb = !is_act(g, op->in[1]);
	struct chain c;
	dnnl_primitive_desc_t pd = NULL;
	for (int fuse = p->fuse; fuse >= 0 && !pd; fuse--) {
		chain_build(p, opi, fuse, 0, NULL, &c);
		if (fuse && c.nskip == 0)
			continue;
		dnnl_primitive_attr_t attr = po_attr(&c.po);
		if (!attr)
			continue;
		dnnl_matmul_desc_t md;
		dnnl_status_t st = dnnl_matmul_desc_init(&md, &a_md, cb ? &any_b : &b_md, NULL, &y_md);
		if (st == dnnl_success)
			st = dnnl_primitive_desc_create(&pd, &md, attr, p->eng, NULL);
		dnnl_primitive_attr_destroy(attr);
		if (st != dnnl_success || ref_impl(pd))
			pd = NULL;
	}
	if (!pd)
		return 0;
	dnnl_memory_t am, bm, ym;
	if (plain_view(p, opi, op->in[0], r, ad, &am) < 0 ||
	    (cb ? const_mem(p, &b_md, b->data,
			    dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0), &bm) :
		  plain_view(p, opi, op->in[1], r, bd, &bm)) < 0 ||
	    plain_out(p, c.out, r, y->shape, &ym) < 0) {
		dnnl_primitive_desc_destroy(pd);
		return -1;
	}
	chain_take(p, &c);
	dnnl_exec_arg_t args[PLAN_ARGS] = {
		{ DNNL_ARG_SRC, am }, { DNNL_ARG_WEIGHTS, bm }, { DNNL_ARG_DST, ym },
	};
	int na = chain_args(p, &c, args, 3);
	if (na < 0) {
		dnnl_primitive_desc_destroy(pd);
		return -1;
	}
	return plan_prim(p, op, opi, pd, na, args) < 0 ? -1 : 1;
}

/* Softmax and LogSoftmax on plain buffers, as [outer, n, inner] along 1. */
static int plan_softmax(struct plan *p, int opi)
{
	const struct ir_graph *g = p->g;
	const struct ir_op *op = &g->ops[opi];
	if (op->n_in != 1 || op->n_out != 1 || !all_f32(g, op) || !is_act(g, op->in[0]) ||
	    p->t[op->in[0]].n == 0)
		return 0;
	const struct ir_tensor *x = &g->tensors[op->in[0]];
	int r = x->rank, axis = (int)op_int(op, "axis", -1);
	axis += axis < 0 ? r : 0;
	if (r < 1 || axis < 0 || axis >= r || tensor_numel(x) == 0)
		return 0;
	int64_t d[3] = { 1, 1, 1 };
	for (int i = 0; i < r; i++)
		d[i < axis ? 0 : i == axis || op_int(op, "coerce2d", 0) ? 1 : 2] *= x->shape[i];
	dnnl_dims_t dd = { d[0], d[1], d[2] }, st;
	dnnl_dense_strides(3, dd, st);
	dnnl_memory_desc_t md;
	dnnl_memory_desc_init_by_strides(&md, 3, dd, dnnl_f32, st);
	dnnl_primitive_desc_t pd;
	dnnl_status_t s2;
	if (op->type == OP_SOFTMAX) {
		dnnl_softmax_desc_t sd;
		s2 = dnnl_softmax_forward_desc_init(&sd, dnnl_forward_inference, &md, 1);
		if (s2 == dnnl_success)
			s2 = dnnl_primitive_desc_create(&pd, &sd, NULL, p->eng, NULL);
	} else {
		dnnl_logsoftmax_desc_t sd;
		s2 = dnnl_logsoftmax_forward_desc_init(&sd, dnnl_forward_inference, &md, 1);
		if (s2 == dnnl_success)
			s2 = dnnl_primitive_desc_create(&pd, &sd, NULL, p->eng, NULL);
	}
	if (s2 != dnnl_success || ref_impl(pd))
		return 0;
	dnnl_memory_t xm, ym;
	if (plain_view(p, opi, op->in[0], 3, d, &xm) < 0 ||
	    plain_out(p, op->out[0], 3, d, &ym) < 0) {
		dnnl_primitive_desc_destroy(pd);
		return -1;
	}
	dnnl_exec_arg_t args[2] = { { DNNL_ARG_SRC, xm }, { DNNL_ARG_DST, ym } };
	return plan_prim(p, op, opi, pd, 2, args) < 0 ? -1 : 1;
}

/* ReduceMean, ReduceMax, ReduceMin, ReduceSum over attribute axes (absent:
 * all) on plain buffers. */
static int plan_reduce(struct plan *p, int opi)
{
	const struct ir_graph *g = p->g;
	const struct ir_op *op = &g->ops[opi];
	if (op->n_in != 1 || op->n_out != 1 || !all_f32(g, op) || !is_act(g, op->in[0]) ||
	    p->t[op->in[0]].n == 0)
		return 0;
	const struct ir_tensor *x = &g->tensors[op->in[0]];
	int r = x->rank, mask[IR_MAX_RANK] = { 0 };
	int64_t axes[IR_MAX_RANK];
	const struct ir_attr *at = op_attr(op, "axes");
	if (r < 1 || tensor_numel(x) == 0 || (at && at->n == 0 && op_int(op, "noop", 0)))
		return 0;
	int n = op_ints(op, "axes", axes, IR_MAX_RANK);
	if (!at || at->n == 0)
		for (int i = 0; i < r; i++)
			mask[i] = 1;
	for (int i = 0; i < n; i++) {
		int a = (int)(axes[i] < 0 ? axes[i] + r : axes[i]);
		if (a < 0 || a >= r)
			return 0;
		mask[a] = 1;
	}
	int64_t xd[IR_MAX_RANK], yd[IR_MAX_RANK];
	dnnl_dims_t xdd, ydd, xst, yst;
	for (int i = 0; i < r; i++) {
		xd[i] = xdd[i] = x->shape[i];
		yd[i] = ydd[i] = mask[i] ? 1 : x->shape[i];
	}
	dnnl_dense_strides(r, xdd, xst);
	dnnl_dense_strides(r, ydd, yst);
	dnnl_memory_desc_t xmd, ymd;
	dnnl_memory_desc_init_by_strides(&xmd, r, xdd, dnnl_f32, xst);
	dnnl_memory_desc_init_by_strides(&ymd, r, ydd, dnnl_f32, yst);
	dnnl_alg_kind_t alg = op->type == OP_REDUCEMEAN ? dnnl_reduction_mean :
			      op->type == OP_REDUCEMAX ? dnnl_reduction_max :
			      op->type == OP_REDUCEMIN ? dnnl_reduction_min : dnnl_reduction_sum;
	dnnl_reduction_desc_t rd;
	dnnl_primitive_desc_t pd;
	if (dnnl_reduction_desc_init(&rd, alg, &xmd, &ymd, 0, 0) != dnnl_success ||
	    dnnl_primitive_desc_create(&pd, &rd, NULL, p->eng, NULL) != dnnl_success ||
	    ref_impl(pd))
		return 0;
	dnnl_memory_t xm, ym;
	if (plain_view(p, opi, op->in[0], r, xd, &xm) < 0 ||
	    plain_out(p, op->out[0], r, yd, &ym) < 0) {
		dnnl_primitive_desc_destroy(pd);
		return -1;
	}
	dnnl_exec_arg_t args[2] = { { DNNL_ARG_SRC, xm }, { DNNL_ARG_DST, ym } };
	return plan_prim(p, op, opi, pd, 2, args) < 0 ? -1 : 1;
}

/* A dense layout for dims d (rank r) like md's: the same order of axes,
 * or the same channel blocking of a 4-D tensor; 0 when md is neither. */
static int md_like(const dnnl_memory_desc_t *md, int r, const dnnl_dims_t d,
		   dnnl_memory_desc_t *out)
{
	if (md->format_kind != dnnl_blocked || md->ndims != r || md->data_type != dnnl_f32)
		return 0;
	const dnnl_blocking_desc_t *b = &md->format_desc.blocking;
	if (b->inner_nblks == 0) {
		int order[DNNL_MAX_NDIMS];
		for (int i = 0; i < r; i++)
			order[i] = i;
		for (int i = 1; i < r; i++)   /* axes by falling stride, stable */
			for (int j = i; j > 0 && b->strides[order[j]] > b->strides[order[j - 1]]; j--) {
				int t = order[j];
				order[j] = order[j - 1];
				order[j - 1] = t;
			}
		dnnl_dims_t st;
		int64_t n = 1;
		for (int i = r - 1; i >= 0; i--) {
			st[order[i]] = n;
			n *= d[order[i]] > 0 ? d[order[i]] : 1;
		}
		return dnnl_memory_desc_init_by_strides(out, r, d, dnnl_f32, st) == dnnl_success;
	}
	if (r == 4 && b->inner_nblks == 1 && b->inner_idxs[0] == 1 &&
	    (b->inner_blks[0] == 8 || b->inner_blks[0] == 16) && b->strides[0] >= b->strides[1] &&
	    b->strides[1] >= b->strides[2] && b->strides[2] >= b->strides[3])
		return dnnl_memory_desc_init_by_tag(out, 4, d, dnnl_f32, b->inner_blks[0] == 8 ?
						    dnnl_aBcd8b : dnnl_aBcd16b) == dnnl_success;
	return 0;
}

/* Slice with steps of 1: a reorder from a window of the input, in its
 * layout, to an output of the same layout. */
static int plan_slice(struct plan *p, int opi)
{
	const struct ir_graph *g = p->g;
	const struct ir_op *op = &g->ops[opi];
	if (op->n_in != 1 || op->n_out != 1 || !all_f32(g, op) || !is_act(g, op->in[0]) ||
	    p->t[op->in[0]].n == 0)
		return 0;
	const struct ir_tensor *x = &g->tensors[op->in[0]], *y = &g->tensors[op->out[0]];
	int64_t st[IR_MAX_RANK], en[IR_MAX_RANK], ax[IR_MAX_RANK], sp[IR_MAX_RANK];
	int r = x->rank;
	int ns = op_ints(op, "starts", st, IR_MAX_RANK), ne = op_ints(op, "ends", en, IR_MAX_RANK);
	int na = op_ints(op, "axes", ax, IR_MAX_RANK), np = op_ints(op, "steps", sp, IR_MAX_RANK);
	if (r < 1 || y->rank != r || ns != ne || (na && na != ns) || (np && np != ns) ||
	    tensor_numel(y) == 0)
		return 0;
	dnnl_dims_t off = { 0 }, yd;
	for (int i = 0; i < r; i++)
		yd[i] = y->shape[i];
	for (int i = 0; i < ns; i++) {
		int64_t a = na ? ax[i] : i;
		a += a < 0 ? r : 0;
		if (a < 0 || a >= r || (np && sp[i] != 1))
			return 0;
		int64_t b = st[i] < 0 ? st[i] + x->shape[a] : st[i];
		off[a] = b < 0 ? 0 : b > x->shape[a] ? x->shape[a] : b;
		if (off[a] + yd[a] > x->shape[a])
			return 0;
	}
	const struct pver *xv = &p->t[op->in[0]].v[0];
	dnnl_memory_desc_t sub, ymd;
	if (dnnl_memory_desc_init_submemory(&sub, &xv->md, yd, off) != dnnl_success)
		return 0;
	if (!md_like(&xv->md, r, yd, &ymd))
		plain_md(y, &ymd);
	dnnl_memory_t sm;
	struct pver *yv;
	if (dnnl_memory_create(&sm, &sub, p->eng, xv->buf) != dnnl_success)
		return 0;
	plan_keep_mem(p, sm);
	if (ver_add(p, op->out[0], &ymd, &yv) < 0)
		return -1;
	return plan_reorder(p, opi, sm, yv->mem) < 0 ? -1 : 1;
}

/* Transpose as one reorder: the input seen through permuted strides (its
 * own when its layout has no blocking, else the plain ones) into a plain
 * output. */
static int plan_transpose(struct plan *p, int opi)
{
	const struct ir_graph *g = p->g;
	const struct ir_op *op = &g->ops[opi];
	int64_t perm[IR_MAX_RANK];
	if (op->n_in != 1 || op->n_out != 1 || !all_f32(g, op) || !is_act(g, op->in[0]) ||
	    p->t[op->in[0]].n == 0)
		return 0;
	const struct ir_tensor *x = &g->tensors[op->in[0]], *y = &g->tensors[op->out[0]];
	int r = x->rank;
	if (r < 1 || op_ints(op, "perm", perm, IR_MAX_RANK) != r || tensor_numel(x) == 0)
		return 0;
	const struct pver *xv = &p->t[op->in[0]].v[0];
	const dnnl_blocking_desc_t *bk = &xv->md.format_desc.blocking;
	dnnl_dims_t xs, vd, vs;
	if (xv->md.format_kind == dnnl_blocked && bk->inner_nblks == 0 && xv->md.ndims == r) {
		for (int i = 0; i < r; i++)
			xs[i] = bk->strides[i];
	} else {
		dnnl_dims_t xd;
		for (int i = 0; i < r; i++)
			xd[i] = x->shape[i];
		dnnl_dense_strides(r, xd, xs);
		if (ver_plain(p, opi, op->in[0]) < 0)
			return -1;
		xv = NULL;
	}
	for (int i = 0; i < r; i++) {
		vd[i] = y->shape[i];
		vs[i] = xs[perm[i]];
	}
	dnnl_memory_desc_t vmd, ymd;
	dnnl_memory_t vm;
	struct pver *yv;
	plain_md(y, &ymd);
	if (dnnl_memory_desc_init_by_strides(&vmd, r, vd, dnnl_f32, vs) != dnnl_success ||
	    dnnl_memory_create(&vm, &vmd, p->eng, xv ? xv->buf : p->val[op->in[0]]) != dnnl_success)
		return err_set("oneDNN: cannot create memory");
	plan_keep_mem(p, vm);
	if (ver_add(p, op->out[0], &ymd, &yv) < 0)
		return -1;
	return plan_reorder(p, opi, vm, yv->mem) < 0 ? -1 : 1;
}

/* Resize of the two spatial axes of a 4-D tensor by whole factors, nearest,
 * where the coordinate rule picks input index floor(i / factor) as
 * oneDNN's nearest does: asymmetric with floor, half_pixel with rounding. */
static int plan_resize(struct plan *p, int opi)
{
	const struct ir_graph *g = p->g;
	const struct ir_op *op = &g->ops[opi];
	if (op->n_out != 1 || op->n_in < 1 || !is_act(g, op->in[0]) || p->t[op->in[0]].n == 0 ||
	    g->tensors[op->in[0]].dtype != DT_F32 || g->tensors[op->out[0]].dtype != DT_F32)
		return 0;
	for (int i = 1; i < op->n_in; i++)
		if (is_act(g, op->in[i]))
			return 0;
	const struct ir_tensor *x = &g->tensors[op->in[0]], *y = &g->tensors[op->out[0]];
	const char *mode = op_str(op, "mode", "nearest");
	const char *ct = op_str(op, "coordinate_transformation_mode", "half_pixel");
	const char *nm = op_str(op, "nearest_mode", "round_prefer_floor");
	int floor_rule = !strcmp(ct, "asymmetric") && !strcmp(nm, "floor");
	int half_rule = (!strcmp(ct, "half_pixel") || !strcmp(ct, "pytorch_half_pixel")) &&
			(!strcmp(nm, "round_prefer_floor") || !strcmp(nm, "round_prefer_ceil"));
	if (strcmp(mode, "nearest") || !(floor_rule || half_rule) || x->rank != 4 || y->rank != 4 ||
	    x->shape[0] != y->shape[0] || x->shape[1] != y->shape[1] || tensor_numel(x) == 0)
		return 0;
	for (int i = 2; i < 4; i++)
		if (y->shape[i] % x->shape[i] || y->shape[i] < x->shape[i] ||
		    (half_rule && !strcmp(ct, "pytorch_half_pixel") && y->shape[i] == 1))
			return 0;
	const struct pver *xv = &p->t[op->in[0]].v[0];
	dnnl_dims_t yd = { y->shape[0], y->shape[1], y->shape[2], y->shape[3] };
	dnnl_memory_desc_t ymd;
	if (!md_like(&xv->md, 4, yd, &ymd))
		dnnl_memory_desc_init_by_tag(&ymd, 4, yd, dnnl_f32, dnnl_format_tag_any);
	dnnl_resampling_desc_t rd;
	dnnl_primitive_desc_t pd;
	if (dnnl_resampling_forward_desc_init(&rd, dnnl_forward_inference,
					      dnnl_resampling_nearest, NULL, &xv->md, &ymd) !=
	    dnnl_success || dnnl_primitive_desc_create(&pd, &rd, NULL, p->eng, NULL) != dnnl_success ||
	    ref_impl(pd))
		return 0;
	struct pver *yv;
	if (ver_add(p, op->out[0], dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0), &yv) < 0) {
		dnnl_primitive_desc_destroy(pd);
		return -1;
	}
	dnnl_exec_arg_t args[2] = { { DNNL_ARG_SRC, xv->mem }, { DNNL_ARG_DST, yv->mem } };
	return plan_prim(p, op, opi, pd, 2, args) < 0 ? -1 : 1;
}

/* LayerNormalization over the axes from `axis` on, with a Scale (and B) of
 * those axes' size, output Y only: oneDNN's layer normalisation of plain
 * [outer, n]. */
static int plan_layernorm(struct plan *p, int opi)
{
	const struct ir_graph *g = p->g;
	const struct ir_op *op = &g->ops[opi];
	if (op->n_in < 2 || op->n_in > 3 || op->n_out != 1 || !all_f32(g, op) ||
	    !is_act(g, op->in[0]) || p->t[op->in[0]].n == 0 || is_act(g, op->in[1]) ||
	    (op->n_in > 2 && op->in[2] >= 0 && is_act(g, op->in[2])))
		return 0;
	const struct ir_tensor *x = &g->tensors[op->in[0]];
	const struct ir_tensor *sc = &g->tensors[op->in[1]];
	const struct ir_tensor *bi = op->n_in > 2 && op->in[2] >= 0 ? &g->tensors[op->in[2]] : NULL;
	int r = x->rank, axis = (int)op_int(op, "axis", -1);
	axis += axis < 0 ? r : 0;
	if (r < 1 || axis < 0 || axis >= r || tensor_numel(x) == 0)
		return 0;
	int64_t d[2] = { 1, 1 };
	for (int i = 0; i < r; i++)
		d[i < axis ? 0 : 1] *= x->shape[i];
	if (tensor_numel(sc) != d[1] || (bi && tensor_numel(bi) != d[1]))
		return 0;
	dnnl_dims_t dd = { d[0], d[1] }, st, cd = { d[1] };
	dnnl_dense_strides(2, dd, st);
	dnnl_memory_desc_t md, cmd;
	dnnl_memory_desc_init_by_strides(&md, 2, dd, dnnl_f32, st);
	dnnl_memory_desc_init_by_tag(&cmd, 1, cd, dnnl_f32, dnnl_x);
	dnnl_layer_normalization_desc_t ld;
	dnnl_primitive_desc_t pd;
	if (dnnl_layer_normalization_forward_desc_init(&ld, dnnl_forward_inference, &md, NULL,
			(float)op_float(op, "epsilon", 1e-5),
			dnnl_use_scale | (bi ? dnnl_use_shift : 0)) != dnnl_success ||
	    dnnl_primitive_desc_create(&pd, &ld, NULL, p->eng, NULL) != dnnl_success ||
	    ref_impl(pd))
		return 0;
	dnnl_memory_t xm, ym, sm, bm = NULL;
	if (plain_view(p, opi, op->in[0], 2, d, &xm) < 0 ||
	    plain_out(p, op->out[0], 2, d, &ym) < 0 ||
	    const_mem(p, &cmd, sc->data, &cmd, &sm) < 0 ||
	    (bi && const_mem(p, &cmd, bi->data, &cmd, &bm) < 0)) {
		dnnl_primitive_desc_destroy(pd);
		return -1;
	}
	dnnl_exec_arg_t args[4] = {
		{ DNNL_ARG_SRC, xm }, { DNNL_ARG_DST, ym }, { DNNL_ARG_SCALE, sm },
		{ DNNL_ARG_SHIFT, bm },
	};
	return plan_prim(p, op, opi, pd, bi ? 4 : 3, args) < 0 ? -1 : 1;
}

/* Any other op: its kernel on plain buffers. */
static int plan_kernel(struct plan *p, int opi)
{
	const struct ir_graph *g = p->g;
	const struct ir_op *op = &g->ops[opi];
	for (int i = 0; i < op->n_in; i++)
		if (is_act(g, op->in[i]) && ver_plain(p, opi, op->in[i]) < 0)
			return -1;
	for (int i = 0; i < op->n_out; i++) {
		const struct ir_tensor *t = &g->tensors[op->out[i]];
		struct ptensor *pt = &p->t[op->out[i]];
		/* the kernel writes val[t]: plain for f32, as is for others */
		plain_md(t, &pt->v[0].md);
		pt->v[0].buf = p->val[op->out[i]];
		pt->v[0].owned = 0;
		if (t->dtype == DT_F32 && dnnl_memory_create(&pt->v[0].mem, &pt->v[0].md, p->eng,
							      pt->v[0].buf) != dnnl_success)
			return err_set("oneDNN: cannot create memory");
		pt->n = 1;
	}
	plan_step(p, PS_KERN, opi);
	return 0;
}

static void plan_free(struct plan *p)
{
	if (!p)
		return;
	for (int i = 0; i < p->n; i++)
		if (p->s[i].prim)
			dnnl_primitive_destroy(p->s[i].prim);
	for (int t = 0; p->t && t < p->g->n_tensors; t++)
		for (int i = 0; i < p->t[t].n; i++) {
			if (p->t[t].v[i].mem)
				dnnl_memory_destroy(p->t[t].v[i].mem);
			if (p->t[t].v[i].owned)
				free(p->t[t].v[i].buf);
		}
	for (int i = 0; i < p->nmem; i++)
		dnnl_memory_destroy(p->mem[i]);
	for (int i = 0; i < p->npool; i++)
		free(p->pool[i].buf);
	free(p->pool);
	free(p->last);
	free(p->mem);
	free(p->s);
	free(p->t);
	free(p->skip);
	free(p);
}

/* After the steps of op i: the buffers of tensors no later op reads. */
static void plan_release(struct plan *p, int i)
{
	for (int t = 0; t < p->g->n_tensors; t++)
		if (p->last[t] == i)
			ver_release(p, t);
}

static struct plan *plan_build(struct interp *it, int fuse, int materialise)
{
	const struct ir_graph *g = it->g;
	struct plan *p = xcalloc(1, sizeof *p);
	p->g = g;
	p->val = it->val;
	p->fuse = fuse;
	p->materialise = materialise;
	p->nthreads = it->nthreads;
	p->t = xcalloc((size_t)(g->n_tensors ? g->n_tensors : 1), sizeof *p->t);
	p->skip = xcalloc((size_t)(g->n_ops ? g->n_ops : 1), 1);
	p->last = xmalloc((size_t)(g->n_tensors ? g->n_tensors : 1) * sizeof *p->last);
	for (int t = 0; t < g->n_tensors; t++)
		p->last[t] = -1;
	for (int i = 0; i < g->n_ops; i++) {
		for (int j = 0; j < g->ops[i].n_in; j++)
			if (g->ops[i].in[j] >= 0)
				p->last[g->ops[i].in[j]] = i;
		for (int j = 0; j < g->ops[i].n_out; j++)   /* read by none: dead at once */
			if (p->last[g->ops[i].out[j]] < i)
				p->last[g->ops[i].out[j]] = i;
	}
	for (int i = 0; i < g->n_outputs; i++)
		p->last[g->outputs[i]] = INT_MAX;
	const char *env = getenv("TPUC_PLAN");
	int show = env && !strcmp(env, "show");
	if (dnnl_get_engine(&p->eng, &p->strm) < 0)
		goto fail;
	/* weights and graph inputs: plain, where they are */
	for (int t = 0; t < g->n_tensors; t++) {
		int input = 0;
		for (int i = 0; i < g->n_inputs; i++)
			input |= g->inputs[i] == t;
		if (!g->tensors[t].data && !input)
			continue;
		struct ptensor *pt = &p->t[t];
		pt->n = 1;
		pt->v[0].buf = it->val[t];
		if (g->tensors[t].dtype != DT_F32)
			continue;
		plain_md(&g->tensors[t], &pt->v[0].md);
		if (dnnl_memory_create(&pt->v[0].mem, &pt->v[0].md, p->eng, it->val[t]) != dnnl_success) {
			err_set("oneDNN: cannot create memory");
			goto fail;
		}
	}
	for (int i = 0; i < g->n_ops; i++) {
		const struct ir_op *op = &g->ops[i];
		int first = p->n, rc = 0;
		if (!op_defs[op->type]->run_f32) {
			err_set("op '%s' (%s): no float kernel", op->name, op_name(op->type));
			goto fail;
		}
		for (int j = 0; j < op->n_out; j++)
			if (g->tensors[op->out[j]].data) {
				err_set("op '%s' (%s): writes weight '%s'", op->name,
					op_name(op->type), g->tensors[op->out[j]].name);
				goto fail;
			}
		if (p->skip[i]) {
			plan_release(p, i);
			continue;
		}
		switch (op->type) {
		case OP_CONV: rc = plan_conv(p, i); break;
		case OP_MAXPOOL: case OP_AVGPOOL: case OP_GAVGPOOL: rc = plan_pool(p, i); break;
		case OP_ADD: case OP_MUL: case OP_SUB: case OP_DIV: rc = plan_binary(p, i); break;
		case OP_RELU: case OP_CLIP: case OP_SIGMOID: case OP_TANH: case OP_EXP:
		case OP_LOG: case OP_SQRT: case OP_ABS: case OP_NEG: case OP_HARDSWISH:
		case OP_LEAKYRELU: case OP_ELU: case OP_HARDSIGMOID: case OP_POW:
		case OP_GELU: case OP_SILU:
			rc = plan_eltwise(p, i);
			break;
		case OP_SLICE: rc = plan_slice(p, i); break;
		case OP_LAYERNORM: rc = plan_layernorm(p, i); break;
		case OP_TRANSPOSE: rc = plan_transpose(p, i); break;
		case OP_RESIZE: rc = plan_resize(p, i); break;
		case OP_CONCAT: rc = plan_concat(p, i); break;
		case OP_GEMM: rc = plan_gemm(p, i); break;
		case OP_MATMUL: rc = plan_matmul(p, i); break;
		case OP_SOFTMAX: case OP_LOGSOFTMAX: rc = plan_softmax(p, i); break;
		case OP_REDUCEMEAN: case OP_REDUCEMAX: case OP_REDUCEMIN: case OP_REDUCESUM:
			rc = plan_reduce(p, i);
			break;
		default: break;
		}
		if (rc < 0 || (rc == 0 && plan_kernel(p, i) < 0))
			goto fail;
		if (show)
			fprintf(stderr, "plan: op %d %s '%s': %s, %d step%s\n", i, op_name(op->type),
				op->name, rc ? "oneDNN" : "kernel", p->n - first,
				p->n - first == 1 ? "" : "s");
		if (materialise)
			for (int j = 0; j < op->n_out; j++)
				if (ver_plain(p, i, op->out[j]) < 0)
					goto fail;
		if (p->n == first)
			plan_step(p, PS_NOP, i);
		p->s[p->n - 1].last = 1;
		plan_release(p, i);
	}
	for (int i = 0; i < g->n_outputs; i++)
		if (ver_plain(p, -1, g->outputs[i]) < 0)
			goto fail;
	if (show)
		fprintf(stderr, "plan: %d steps; activations in oneDNN layouts: %zu bytes "
			"allocated, %zu bytes in reused buffers\n", p->n, p->fresh, p->reused);
	return p;
fail:
	plan_free(p);
	return NULL;
}

static int plan_run(struct interp *it, struct plan *p,
		    int (*cb)(struct interp *it, int op, void *user), void *user)
{
	const struct ir_graph *g = it->g;
	for (int i = 0; i < p->n; i++) {
		const struct pstep *s = &p->s[i];
		double t0 = it->op_ms ? now_seconds() : 0;
		if (s->kind == PS_PRIM) {
			dnnl_status_t st = dnnl_primitive_execute(s->prim, p->strm, s->nargs, s->args);
			if (st != dnnl_success)
				return dnnl_fail(s->op >= 0 ? &g->ops[s->op] : NULL,
						 "execution failed", st);
		} else if (s->kind == PS_KERN) {
			const struct ir_op *op = &g->ops[s->op];
			struct kern k;
			dnnl_stream_wait(p->strm);
			kern_from_graph(&k, g, op, it->val);
			k.nthreads = it->nthreads;
			if (op_defs[op->type]->run_f32(&k) < 0)
				return -1;
		}
		if (it->op_ms) {
			dnnl_stream_wait(p->strm);
			it->op_ms[s->op >= 0 ? s->op : g->n_ops - 1] += (now_seconds() - t0) * 1e3;
		}
		if (s->last && cb) {
			dnnl_stream_wait(p->strm);
			int rc = cb(it, s->op, user);
			if (rc < 0)
				return rc;
		}
	}
	dnnl_stream_wait(p->strm);
	return 0;
}

/* Tensor t of the last planned run into out (f32, plain), when the plan
 * holds it in another layout only.  Returns 1 when copied, 0 when val[t]
 * already holds it, -1 on error. */
static int plan_get(const struct plan *p, int t, float *out)
{
	const struct ptensor *pt = &p->t[t];
	if (p->g->tensors[t].dtype != DT_F32 || pt->n == 0)
		return 0;
	dnnl_memory_desc_t md;
	plain_md(&p->g->tensors[t], &md);
	for (int i = 0; i < pt->n; i++)
		if (dnnl_memory_desc_equal(&pt->v[i].md, &md))
			return 0;
	dnnl_memory_t m;
	dnnl_primitive_desc_t pd;
	dnnl_primitive_t prim;
	if (dnnl_memory_create(&m, &md, p->eng, out) != dnnl_success)
		return err_set("oneDNN: cannot create memory");
	dnnl_status_t st = dnnl_reorder_primitive_desc_create(&pd, &pt->v[0].md, p->eng, &md,
							      p->eng, NULL);
	if (st == dnnl_success) {
		st = dnnl_primitive_create(&prim, pd);
		dnnl_primitive_desc_destroy(pd);
	}
	if (st == dnnl_success) {
		dnnl_exec_arg_t args[2] = { { DNNL_ARG_FROM, pt->v[0].mem }, { DNNL_ARG_TO, m } };
		st = dnnl_primitive_execute(prim, p->strm, 2, args);
		dnnl_stream_wait(p->strm);
		dnnl_primitive_destroy(prim);
	}
	dnnl_memory_destroy(m);
	return st == dnnl_success ? 1 : dnnl_fail(NULL, "reorder failed", st);
}

static int is_weight(const struct interp *it, int t)
{
	return it->g->tensors[t].data != NULL;
}

static void shape_str(char *buf, size_t cap, int rank, const int64_t *shape)
{
	size_t n = (size_t)snprintf(buf, cap, "[");
	for (int i = 0; i < rank && n < cap; i++)
		n += (size_t)snprintf(buf + n, cap - n, "%s%lld", i ? "," : "", (long long)shape[i]);
	if (n < cap)
		snprintf(buf + n, cap - n, "]");
}

/* Store N elements of array A, from element OFF on, into tensor T's buffer:
 * by value, or quantised with T's scale when T is an integer tensor with a
 * scale and A holds floats. */
static void store(struct interp *it, int t, const struct npz_array *a, int64_t off, int64_t n)
{
	const struct ir_tensor *ten = &it->g->tensors[t];
	const char *src = (const char *)a->data + (size_t)off * dtype_size(a->dtype);
	int quant = ten->scale != 0 && ten->dtype != DT_F32 && ten->dtype != DT_F16 &&
		    ten->dtype != DT_BF16 && ten->dtype != DT_BOOL &&
		    (a->dtype == DT_F32 || a->dtype == DT_F16 || a->dtype == DT_BF16);
	if (!quant) {
		dtype_convert(it->val[t], ten->dtype, src, a->dtype, n);
		return;
	}
	/* q = round_half_away(x / scale) + zero_point, saturated (quant.h). */
	int64_t *q = xmalloc((size_t)(n ? n : 1) * sizeof *q);
	for (int64_t i = 0; i < n; i++) {
		double v = round(dtype_get(src, a->dtype, i) / ten->scale) + ten->zero_point;
		q[i] = isnan(v) ? 0 : v < -9e18 ? (int64_t)-9e18 : v > 9e18 ? (int64_t)9e18 : (int64_t)v;
	}
	dtype_convert(it->val[t], ten->dtype, q, DT_I64, n);
	free(q);
}

/* The array for graph input t, checked against its shape: SAMPLE < 0 takes
 * the whole array; otherwise the array holds samples on axis 0 (either as
 * an extra leading axis or as batches of the input's first axis). */
static int set_one(struct interp *it, const struct npz *in, const char *file, int t, int64_t sample)
{
	const struct ir_tensor *ten = &it->g->tensors[t];
	const struct npz_array *a = npz_find(in, ten->name);
	char want[IR_MAX_RANK * 21 + 3], got[IR_MAX_RANK * 21 + 3];
	if (!a)
		return err_set("'%s': no array for graph input '%s'", file, ten->name);
	if (a->dtype == DT_BF16 || (int)a->dtype >= DT_COUNT)
		return err_set("'%s': array '%s' has an unusable dtype", file, ten->name);
	int64_t n = tensor_numel(ten), off = 0;
	shape_str(want, sizeof want, ten->rank, ten->shape);
	shape_str(got, sizeof got, a->rank, a->shape);
	int ok;
	if (sample < 0) {
		ok = a->rank == ten->rank &&
		     !memcmp(a->shape, ten->shape, (size_t)ten->rank * sizeof ten->shape[0]);
	} else if (a->rank == ten->rank + 1) {
		ok = !memcmp(a->shape + 1, ten->shape, (size_t)ten->rank * sizeof ten->shape[0]);
		if (ok && sample >= a->shape[0])
			return err_set("'%s': sample %lld out of range: array '%s' holds %lld",
				       file, (long long)sample, ten->name, (long long)a->shape[0]);
		off = sample * n;
	} else {
		ok = a->rank == ten->rank && ten->rank > 0 && ten->shape[0] > 0 &&
		     !memcmp(a->shape + 1, ten->shape + 1,
			     (size_t)(ten->rank - 1) * sizeof ten->shape[0]) &&
		     a->shape[0] % ten->shape[0] == 0;
		if (ok && (sample + 1) * ten->shape[0] > a->shape[0])
			return err_set("'%s': sample %lld out of range: array '%s' holds %lld",
				       file, (long long)sample, ten->name,
				       (long long)(a->shape[0] / ten->shape[0]));
		off = sample * n;
	}
	if (!ok) {
		if (sample < 0)
			return err_set("'%s': array '%s' has shape %s, graph input expects %s",
				       file, ten->name, got, want);
		return err_set("'%s': array '%s' has shape %s, expected samples of %s",
			       file, ten->name, got, want);
	}
	store(it, t, a, off, n);
	return 0;
}

int interp_set_inputs(struct interp *it, const struct npz *in, const char *file)
{
	for (int i = 0; i < it->g->n_inputs; i++)
		if (set_one(it, in, file, it->g->inputs[i], -1) < 0)
			return -1;
	return 0;
}

int interp_set_sample(struct interp *it, const struct npz *in, const char *file, int64_t index)
{
	if (index < 0)
		return err_set("'%s': negative sample index %lld", file, (long long)index);
	for (int i = 0; i < it->g->n_inputs; i++)
		if (set_one(it, in, file, it->g->inputs[i], index) < 0)
			return -1;
	return 0;
}

/* 1 unless TPUC_PLAN=0 asks for the per-op kernels only (for comparison). */
static int plan_wanted(const struct ir_graph *g)
{
	const char *e = getenv("TPUC_PLAN");
	return g->dialect == DIALECT_TOP && !(e && !strcmp(e, "0"));
}

int interp_run(struct interp *it, int (*cb)(struct interp *it, int op, void *user), void *user)
{
	const struct ir_graph *g = it->g;
	omp_set_num_threads(it->nthreads);
	if (plan_wanted(g)) {
		struct plan *p = it->priv;
		int fuse = !cb && !it->keep_all, mat = cb != NULL;
		if (p && (p->fuse != fuse || p->materialise != mat || p->nthreads != it->nthreads)) {
			plan_free(p);
			it->priv = p = NULL;
		}
		if (!p && !(it->priv = p = plan_build(it, fuse, mat)))
			return -1;
		return plan_run(it, p, cb, user);
	}
	for (int i = 0; i < g->n_ops; i++) {
		const struct ir_op *op = &g->ops[i];
		const struct op_def *d = op_defs[op->type];
		int (*run)(struct kern *) = g->dialect == DIALECT_TOP ? d->run_f32 : d->run_tpu;
		if (!run)
			return err_set("op '%s' (%s): no %s kernel", op->name, op_name(op->type),
				       g->dialect == DIALECT_TOP ? "float" : "tpu");
		for (int j = 0; j < op->n_out; j++)
			if (is_weight(it, op->out[j]))
				return err_set("op '%s' (%s): writes weight '%s'", op->name,
					       op_name(op->type), g->tensors[op->out[j]].name);
		struct kern k;
		kern_from_graph(&k, g, op, it->val);
		k.nthreads = it->nthreads;
		double t0 = it->op_ms ? now_seconds() : 0;
		if (run(&k) < 0)
			return -1;
		if (it->op_ms)
			it->op_ms[i] += (now_seconds() - t0) * 1e3;
		if (cb) {
			int rc = cb(it, i, user);
			if (rc < 0)
				return rc;
		}
	}
	return 0;
}

float *interp_get_f32(const struct interp *it, int t)
{
	const struct ir_tensor *ten = &it->g->tensors[t];
	int64_t n = tensor_numel(ten);
	float *out = xmalloc((size_t)(n ? n : 1) * sizeof *out);
	const void *src = it->val[t];
	if (it->priv) {
		int rc = plan_get(it->priv, t, out);
		if (rc != 0) {
			if (rc < 0)   /* cannot happen short of memory exhaustion */
				memset(out, 0, (size_t)n * sizeof *out);
			return out;
		}
	}
	switch (ten->dtype) {
	case DT_I8: case DT_U8: case DT_I16: case DT_I32:
		if (ten->scale != 0) {
			for (int64_t i = 0; i < n; i++)
				out[i] = ten->scale * (float)(dtype_get(src, ten->dtype, i) - ten->zero_point);
			return out;
		}
		break;
	default:
		break;
	}
	dtype_convert(out, DT_F32, src, ten->dtype, n);
	return out;
}

void interp_free(struct interp *it)
{
	if (it->val)
		for (int i = 0; i < it->g->n_tensors; i++)
			if (!is_weight(it, i))
				free(it->val[i]);
	free(it->val);
	plan_free(it->priv);
	memset(it, 0, sizeof *it);
	dnnl_weights_cache(0);
}
