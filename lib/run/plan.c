/* plan.c - the fast path of interp_run for Top graphs (lib/run/plan.h).
 *
 * At the first interp_run (and again when the thread count or the kind of
 * run changes) a Top graph is turned into a list of steps: oneDNN
 * primitives created once for convolutions, pooling, binary ops,
 * activations and concatenation, each reading and writing activations in
 * the layout oneDNN chose (format_tag_any), with reorders only where a
 * consumer wants another layout; every other op runs its run_f32 kernel on
 * the plain row-major buffers in val.  A tensor may have several
 * copies ("versions") in different layouts; version 0 is where its
 * producer writes (lib/run/plan_mem.c).  When the run has no callback and
 * keep_all is 0, an Add of a convolution's output and an earlier tensor is
 * fused into the convolution as a sum post-op (lib/run/plan_fuse.c).  The
 * primitives of each op are lib/run/plan_ops.c.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dnnl.h>

#include "ir/base.h"
#include "ir/op.h"
#include "run/dnnl_util.h"
#include "run/plan.h"
#include "run/plan_fuse.h"
#include "run/plan_mem.h"
#include "run/plan_ops.h"
#include "run/plan_pdcache.h"

static struct plan *plan_build_indexed(const struct ir_graph *g, void **val, int nthreads,
				       int fuse, int materialise);

struct plan *plan_build(const struct ir_graph *g, void **val, int nthreads, int fuse,
			int materialise)
{
	fuse_readers_begin(g);
	struct plan *p = plan_build_indexed(g, val, nthreads, fuse, materialise);
	fuse_readers_end();
	if (p)
		pdcache_free(&p->pdcache);
	return p;
}

static struct plan *plan_build_indexed(const struct ir_graph *g, void **val, int nthreads,
				       int fuse, int materialise)
{
	struct plan *p = xcalloc(1, sizeof *p);
	p->g = g;
	p->val = val;
	p->fuse = fuse;
	p->materialise = materialise;
	p->nthreads = nthreads;
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
	/* The tensors each op is the last to read, by op (counting sort). */
	p->dying_start = xcalloc((size_t)g->n_ops + 2, sizeof *p->dying_start);
	p->dying = xmalloc(((size_t)g->n_tensors + 1) * sizeof *p->dying);
	for (int t = 0; t < g->n_tensors; t++)
		if (p->last[t] >= 0 && p->last[t] < g->n_ops)
			p->dying_start[p->last[t] + 1]++;
	for (int i = 0; i < g->n_ops; i++)
		p->dying_start[i + 1] += p->dying_start[i];
	{
		int *fill = xmalloc(((size_t)g->n_ops + 1) * sizeof *fill);
		memcpy(fill, p->dying_start, (size_t)g->n_ops * sizeof *fill);
		for (int t = 0; t < g->n_tensors; t++)
			if (p->last[t] >= 0 && p->last[t] < g->n_ops)
				p->dying[fill[p->last[t]]++] = t;
		free(fill);
	}
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
		pt->v[0].buf = val[t];
		if (g->tensors[t].dtype != DT_F32)
			continue;
		plan_plain_md(&g->tensors[t], &pt->v[0].md);
		if (dnnl_memory_create(&pt->v[0].mem, &pt->v[0].md, p->eng, val[t]) != dnnl_success) {
			err_set("oneDNN: cannot create memory");
			goto fail;
		}
	}
	for (int i = 0; i < g->n_ops; i++) {
		const struct ir_op *op = &g->ops[i];
		int first = p->n;
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
		int rc = plan_dnnl_op(p, i);
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

int plan_run(struct plan *p, double *op_ms, int (*cb)(int op, void *user), void *user)
{
	const struct ir_graph *g = p->g;
	for (int i = 0; i < p->n; i++) {
		const struct pstep *s = &p->s[i];
		double t0 = op_ms ? now_seconds() : 0;
		if (s->kind == PS_PRIM) {
			dnnl_status_t st = dnnl_primitive_execute(s->prim, p->strm, s->nargs, s->args);
			if (st != dnnl_success)
				return plan_fail(s->op >= 0 ? &g->ops[s->op] : NULL,
						 "execution failed", st);
		} else if (s->kind == PS_KERN) {
			const struct ir_op *op = &g->ops[s->op];
			struct kern k;
			dnnl_stream_wait(p->strm);
			kern_from_graph(&k, g, op, p->val);
			k.nthreads = p->nthreads;
			int krc = op_defs[op->type]->run_f32(&k);
			kern_done(&k);
			if (krc < 0)
				return -1;
		}
		if (op_ms) {
			dnnl_stream_wait(p->strm);
			op_ms[s->op >= 0 ? s->op : g->n_ops - 1] += (now_seconds() - t0) * 1e3;
		}
		if (s->last && cb) {
			dnnl_stream_wait(p->strm);
			int rc = cb(s->op, user);
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
int plan_get(const struct plan *p, int t, float *out)
{
	const struct ptensor *pt = &p->t[t];
	if (p->g->tensors[t].dtype != DT_F32 || pt->n == 0)
		return 0;
	dnnl_memory_desc_t md;
	plan_plain_md(&p->g->tensors[t], &md);
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
	return st == dnnl_success ? 1 : plan_fail(NULL, "reorder failed", st);
}
