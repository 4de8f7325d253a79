/* dynrun.c - ops run on run-time shapes (lib/ir/dynrun.h). */
#include "ir/dynrun.h"

#include <stdlib.h>
#include <string.h>

#include "ir/base.h"
#include "ir/op.h"

int graph_dynamic(const struct ir_graph *g)
{
	for (int i = 0; i < g->n_tensors; i++) {
		const struct ir_tensor *t = &g->tensors[i];
		if (t->dyn || (!t->data && tensor_numel(t) == 0))
			return 1;
	}
	return 0;
}

void dynrun_init(struct dynrun *r, const struct ir_graph *g, void **val, int adopt)
{
	memset(r, 0, sizeof *r);
	r->g = g;
	r->rt = *g;
	/* g's name index stays g's: rt finds its tensors by scanning */
	memset(&r->rt.names, 0, sizeof r->rt.names);
	r->rt.n_named = 0;
	r->rt.tensors = xmalloc(sizeof *r->rt.tensors * (size_t)(g->n_tensors + 1));
	memcpy(r->rt.tensors, g->tensors, sizeof *g->tensors * (size_t)g->n_tensors);
	r->rt.cap_tensors = g->n_tensors;
	r->val = val;
	r->adopt = adopt;
	r->cap = xcalloc((size_t)g->n_tensors + 1, sizeof *r->cap);
	r->mine = xcalloc((size_t)g->n_tensors + 1, 1);
	for (int t = 0; adopt && t < g->n_tensors; t++)
		if (!g->tensors[t].data)
			r->cap[t] = tensor_bytes(&g->tensors[t]);
}

void dynrun_free(struct dynrun *r)
{
	for (int t = 0; r->mine && t < r->g->n_tensors; t++)
		if (r->mine[t] && !r->adopt) {
			free(r->val[t]);
			r->val[t] = NULL;
		}
	free(r->rt.tensors);
	name_index_free(&r->rt.names);
	free(r->cap);
	free(r->mine);
	memset(r, 0, sizeof *r);
}

/* Make val[t] hold BYTES, keeping the KEEP bytes it holds: a buffer of
 * the caller's that dynrun may not replace (ADOPT 0) fits already.  A
 * buffer grows at least twofold (a loop's stacked outputs grow row by
 * row). */
static void *reserve(struct dynrun *r, int t, size_t bytes, size_t keep)
{
	if (r->val[t] && r->cap[t] >= bytes)
		return r->val[t];
	if (r->val[t] && !r->adopt && !r->mine[t])
		return r->val[t];
	size_t cap = r->cap[t] && bytes < 2 * r->cap[t] && keep ? 2 * r->cap[t] : bytes ? bytes : 1;
	void *p = xaligned(cap);
	memset(p, 0, cap);
	if (r->val[t] && keep)
		memcpy(p, r->val[t], keep < r->cap[t] ? keep : r->cap[t]);
	if (r->adopt || r->mine[t])
		free(r->val[t]);
	r->val[t] = p;
	r->cap[t] = cap;
	r->mine[t] = 1;
	return r->val[t];
}

/* kern.out_grow for dynrun_op's kernels. */
static void *grow(struct kern *k, int i, size_t bytes)
{
	struct dynrun *r = k->grow_ctx;
	int t = k->op->out[i];
	return reserve(r, t, bytes, (size_t)view_numel(&k->out[i]) * dtype_size(k->out[i].dtype));
}

void *dynrun_set_shape(struct dynrun *r, int t, int rank, const int64_t *shape)
{
	struct ir_tensor *x = &r->rt.tensors[t];
	x->rank = rank;
	memcpy(x->shape, shape, sizeof(int64_t) * (size_t)rank);
	x->dyn = 0;
	return reserve(r, t, tensor_bytes(x), 0);
}

/* Run-time shape inference of OP: its inputs shown as constants of their
 * run-time shapes and values. */
static int infer_rt(struct dynrun *r, const struct ir_op *op)
{
	struct ir_graph *rt = &r->rt;
	for (int j = 0; j < op->n_in; j++) {
		int t = op->in[j];
		if (t >= 0 && !r->g->tensors[t].data) {
			rt->tensors[t].data = r->val[t];
			rt->tensors[t].nbytes = tensor_bytes(&rt->tensors[t]);
		}
	}
	int rc = op_infer(rt, (struct ir_op *)op);
	for (int j = 0; j < op->n_in; j++) {
		int t = op->in[j];
		if (t >= 0 && !r->g->tensors[t].data) {
			rt->tensors[t].data = NULL;
			rt->tensors[t].nbytes = 0;
		}
	}
	return rc;
}

int dynrun_op(struct dynrun *r, int i, int (*run)(struct kern *k), int nthreads)
{
	const struct ir_graph *g = r->g;
	const struct ir_op *op = &g->ops[i];
	struct ir_graph *rt = &r->rt;
	int dyn = 0;
	for (int j = 0; j < op->n_in + op->n_out; j++) {
		int t = j < op->n_in ? op->in[j] : op->out[j - op->n_in];
		dyn |= t >= 0 && g->tensors[t].dyn;
	}
	if (dyn) {
		if (infer_rt(r, op) < 0)
			return -1;
		for (int j = 0; j < op->n_out; j++)
			reserve(r, op->out[j], tensor_bytes(&rt->tensors[op->out[j]]), 0);
	}
	/* nothing to compute for outputs without elements */
	int empty = op->n_out > 0;
	for (int j = 0; j < op->n_out && empty; j++) {
		const struct ir_tensor *t = &rt->tensors[op->out[j]];
		empty = !t->dyn && tensor_numel(t) == 0;
	}
	if (empty)
		return 0;
	struct kern k;
	kern_from_graph(&k, rt, op, r->val);
	k.nthreads = nthreads;
	if (dyn) {
		k.out_grow = grow;
		k.grow_ctx = r;
	}
	int rc = run(&k);
	for (int j = 0; j < op->n_out && rc == 0 && dyn; j++) {
		struct ir_tensor *t = &rt->tensors[op->out[j]];
		memcpy(t->shape, k.out[j].shape, sizeof t->shape);
		t->dyn = 0;
	}
	kern_done(&k);
	return rc;
}
