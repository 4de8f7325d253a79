/* plan_mem.c - the plan of oneDNN primitives behind interp_run for Top
 * graphs (lib/run/plan_mem.h): the tensor versions and buffers it keeps and
 * its steps.  Building and running it is lib/run/plan.c.
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
 * op's outputs are copied there before it is called.
 */

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dnnl.h>
#include <dnnl_debug.h>

#include "ir/base.h"
#include "run/dnnl_util.h"
#include "run/plan_mem.h"
#include "run/plan_pdcache.h"
#include "ir/op.h"

/* ---- steps and kept memories ---- */

int plan_fail(const struct ir_op *op, const char *what, dnnl_status_t st)
{
	if (op)
		return err_set("op '%s' (%s): oneDNN: %s: %s", op->name, op_name(op->type),
			       what, dnnl_status2str(st));
	return err_set("oneDNN: %s: %s", what, dnnl_status2str(st));
}

/* Dense row-major f32 layout of tensor t (rank 0 as [1]). */
void plan_plain_md(const struct ir_tensor *t, dnnl_memory_desc_t *md)
{
	dnnl_dims_t d, s;
	int r = t->rank ? t->rank : 1;
	for (int i = 0; i < r; i++)
		d[i] = t->rank ? t->shape[i] : 1;
	dnnl_dense_strides(r, d, s);
	dnnl_memory_desc_init_by_strides(md, r, d, dnnl_f32, s);
}

int plan_keep_mem(struct plan *p, dnnl_memory_t m)
{
	grow_array((void **)&p->mem, &p->capmem, p->nmem + 1, sizeof *p->mem);
	p->mem[p->nmem++] = m;
	return 0;
}

struct pstep *plan_step(struct plan *p, enum pstep_kind kind, int op)
{
	grow_array((void **)&p->s, &p->cap, p->n + 1, sizeof *p->s);
	struct pstep *s = &p->s[p->n++];
	memset(s, 0, sizeof *s);
	s->kind = kind;
	s->op = op;
	return s;
}

/* A primitive step for pd (destroyed here) with args. */
int plan_prim(struct plan *p, const struct ir_op *op, int opi, dnnl_primitive_desc_t pd,
		     int nargs, const dnnl_exec_arg_t *args)
{
	dnnl_primitive_t prim;
	dnnl_status_t st = dnnl_primitive_create(&prim, pd);
	dnnl_primitive_desc_destroy(pd);
	if (st != dnnl_success)
		return plan_fail(op, "cannot create primitive", st);
	struct pstep *s = plan_step(p, PS_PRIM, opi);
	s->prim = prim;
	s->nargs = nargs;
	memcpy(s->args, args, (size_t)nargs * sizeof *args);
	return 0;
}

int plan_reorder(struct plan *p, int opi, dnnl_memory_t from, dnnl_memory_t to)
{
	const dnnl_memory_desc_t *fmd, *tmd;
	dnnl_memory_get_memory_desc(from, &fmd);
	dnnl_memory_get_memory_desc(to, &tmd);
	dnnl_primitive_desc_t pd;
	dnnl_status_t st = dnnl_reorder_primitive_desc_create(&pd, fmd, p->eng, tmd, p->eng, NULL);
	if (st != dnnl_success)
		return plan_fail(NULL, "reorder unavailable", st);
	dnnl_exec_arg_t args[2] = { { DNNL_ARG_FROM, from }, { DNNL_ARG_TO, to } };
	return plan_prim(p, NULL, opi, pd, 2, args);
}

/* ---- tensor versions and the buffers they use ---- */

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
int ver_add(struct plan *p, int t, const dnnl_memory_desc_t *md, struct pver **out)
{
	struct ptensor *pt = &p->t[t];
	if (pt->n == PLAN_VERS)
		return err_set("tensor '%s': too many layouts", p->g->tensors[t].name);
	struct pver *v = &pt->v[pt->n];
	dnnl_memory_desc_t pmd;
	plan_plain_md(&p->g->tensors[t], &pmd);
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
		return plan_fail(NULL, "cannot create memory", st);
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
int ver_alias(struct plan *p, int t, struct pver *v, struct pver **out)
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
		return plan_fail(NULL, "cannot create memory", st);
	pt->n = 1;
	*out = nv;
	return 0;
}


/* Tensor t in layout md: an existing version, or a new one filled by a
 * reorder step from version 0. */
int ver_get(struct plan *p, int opi, int t, const dnnl_memory_desc_t *md, struct pver **out)
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
int ver_plain(struct plan *p, int opi, int t)
{
	const struct ir_tensor *ten = &p->g->tensors[t];
	if (ten->dtype != DT_F32 || p->t[t].n == 0)
		return 0;
	dnnl_memory_desc_t md;
	struct pver *v;
	plan_plain_md(ten, &md);
	return ver_get(p, opi, t, &md, &v);
}

/* ---- building and running the plan ---- */

/* 1 when oneDNN chose a reference implementation for pd (slow: the kernel,
 * on plain buffers, is better), and then destroys pd. */
int plan_ref_impl(dnnl_primitive_desc_t pd)
{
	const char *impl = NULL;
	if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) != dnnl_success ||
	    !impl || strncmp(impl, "ref", 3))
		return 0;
	dnnl_primitive_desc_destroy(pd);
	return 1;
}

/* An op plan_dnnl_op leaves to its kernel: a kernel step on plain buffers,
 * its inputs made plain first. */
int plan_kernel(struct plan *p, int opi)
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
		plan_plain_md(t, &pt->v[0].md);
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

void plan_free(struct plan *p)
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
	pdcache_free(&p->pdcache);
	FREE_ALL(p->dying_start, p->dying, p->mem, p->s, p->t, p->skip, p);
}

/* After the steps of op i: the buffers of tensors no later op reads. */
void plan_release(struct plan *p, int i)
{
	for (int k = p->dying_start[i]; k < p->dying_start[i + 1]; k++)
		ver_release(p, p->dying[k]);
}
