/* plan_ops.c - one op of a Top graph as oneDNN primitives for the
 * plan (lib/run/plan_mem.h): Conv, pooling, binary and elementwise ops,
 * Concat, Gemm, MatMul, Softmax, reductions, Slice, Transpose, Resize and
 * LayerNormalization, each in the layouts oneDNN prefers where it can.
 */
#include <stdlib.h>
#include <string.h>

#include <dnnl.h>

#include "ir/base.h"
#include "run/dnnl_util.h"
#include "run/plan_fuse.h"
#include "run/plan_mem.h"
#include "run/plan_ops.h"
#include "run/plan_pdcache.h"
#include "ir/op.h"

/* ---- helpers ---- */

/* 1 when every input and output of op is f32 and no output is empty. */
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

/* 1 when op has one input and one output, both f32, the input an
 * activation the plan already holds. */
static int one_in_out(const struct plan *p, const struct ir_op *op)
{
	return op->n_in == 1 && op->n_out == 1 && all_f32(p->g, op) && is_act(p->g, op->in[0]) &&
	       p->t[op->in[0]].n > 0;
}

/* Weight tensor t reordered once into layout want (kept by the plan). */
static int const_mem(struct plan *p, const dnnl_memory_desc_t *user, const void *data,
		     const dnnl_memory_desc_t *want, dnnl_memory_t *out)
{
	dnnl_memory_t um, m;
	dnnl_status_t st = dnnl_memory_create(&um, user, p->eng, (void *)data);
	if (st != dnnl_success)
		return plan_fail(NULL, "cannot create memory", st);
	if (dnnl_memory_desc_equal(user, want)) {
		*out = um;
		return plan_keep_mem(p, um);
	}
	st = dnnl_memory_create(&m, want, p->eng, DNNL_MEMORY_ALLOCATE);
	if (st != dnnl_success) {
		dnnl_memory_destroy(um);
		return plan_fail(NULL, "cannot create memory", st);
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
		return plan_fail(NULL, "cannot reorder weights", st);
	*out = m;
	return 0;
}

/* The plain (dense row-major) f32 layout of dims d of rank r. */
static void dense_md(dnnl_memory_desc_t *md, int r, const dnnl_dims_t d)
{
	dnnl_dims_t st;
	dnnl_dense_strides(r, d, st);
	dnnl_memory_desc_init_by_strides(md, r, d, dnnl_f32, st);
}

/* A memory over it->val[t] (made to hold t first) seen with dense dims d
 * of rank r, kept by the plan. */
static int plain_view(struct plan *p, int opi, int t, int r, const int64_t *d, dnnl_memory_t *m)
{
	dnnl_memory_desc_t md;
	dnnl_dims_t dims;
	for (int i = 0; i < r; i++)
		dims[i] = d[i];
	dense_md(&md, r, dims);
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
	plan_plain_md(&p->g->tensors[y], &md);
	if (ver_add(p, y, &md, &v) < 0)
		return -1;
	return plain_view(p, -1, y, r, d, m);
}

/* The primitive descriptor for op descriptor DESC with ATTR (NULL: none);
 * NULL when oneDNN has no implementation, or only a reference one. */
static dnnl_primitive_desc_t prim_desc(struct plan *p, const_dnnl_op_desc_t desc,
				       const_dnnl_primitive_attr_t attr)
{
	dnnl_primitive_desc_t pd;
	if (dnnl_primitive_desc_create(&pd, desc, attr, p->eng, NULL) != dnnl_success ||
	    plan_ref_impl(pd))
		return NULL;
	return pd;
}

/* The key of the descriptor for op descriptor DESC (DESC_SIZE bytes) with
 * post-ops PO (plan_pdcache.h): DESC's bytes, then each post-op's kind,
 * function and arguments (a binary post-op's layout, not which weight it
 * reads).  The caller frees it; its length in *LEN. */
static unsigned char *pd_key(const void *desc, size_t desc_size, const struct postops *po,
			     size_t *len)
{
	unsigned char *k = xmalloc(desc_size + sizeof po->n + (size_t)po->n * sizeof po->e[0]);
	unsigned char *w = k;
#define PUT(x) (memcpy(w, &(x), sizeof(x)), w += sizeof(x))
	memcpy(w, desc, desc_size);
	w += desc_size;
	PUT(po->n);
	for (int i = 0; i < po->n; i++) {
		PUT(po->e[i].sum);
		PUT(po->e[i].alg);
		PUT(po->e[i].a);
		PUT(po->e[i].b);
		if (po->e[i].sum == 2)
			PUT(po->e[i].md);
	}
#undef PUT
	*len = (size_t)(w - k);
	return k;
}

/* prim_desc() for DESC, an op OPI of one output, with the ops after it
 * that fold in as post-ops after INIT (NULL: OPI's own activation): the
 * longest chain oneDNN takes, down to none (none only, unless p->fuse).
 * *C is the chain of the descriptor returned. */
static dnnl_primitive_desc_t fused_desc(struct plan *p, int opi, const_dnnl_op_desc_t desc,
					size_t desc_size, const struct postops *init,
					struct chain *c)
{
	dnnl_primitive_desc_t pd = NULL;
	for (int fuse = p->fuse; fuse >= 0 && !pd; fuse--) {
		chain_build(p, opi, fuse, 0, init, c);
		if (fuse && c->nskip == 0)
			continue;
		/* DESC_SIZE 0: not cached */
		size_t klen = 0;
		unsigned char *key = desc_size ? pd_key(desc, desc_size, &c->po, &klen) : NULL;
		if (key && pdcache_get(p->pdcache, key, klen, &pd)) {
			free(key);
			continue;
		}
		dnnl_primitive_attr_t attr = po_attr(&c->po);
		if (!attr) {
			free(key);
			continue;
		}
		pd = prim_desc(p, desc, attr);
		dnnl_primitive_attr_destroy(attr);
		if (key)
			pdcache_put(&p->pdcache, key, klen, pd);
		free(key);
	}
	return pd;
}

/* The step of op OPI running PD (destroyed here) with ARGS, NARGS of them
 * and room for PLAN_ARGS, and the post-op arguments of chain C, whose ops
 * it takes.  Returns 1, or -1. */
static int step_chain(struct plan *p, int opi, dnnl_primitive_desc_t pd, const struct chain *c,
		      dnnl_exec_arg_t *args, int nargs)
{
	chain_take(p, c);
	int na = chain_args(p, c, args, nargs);
	if (na < 0) {
		dnnl_primitive_desc_destroy(pd);
		return -1;
	}
	return plan_prim(p, &p->g->ops[opi], opi, pd, na, args) < 0 ? -1 : 1;
}

/* The step of op OPI copying memory FROM, kept by the plan from here on,
 * into a new version of its output in layout YMD.  Returns 1, or -1. */
static int step_reorder(struct plan *p, int opi, dnnl_memory_t from,
			const dnnl_memory_desc_t *ymd)
{
	struct pver *yv;
	plan_keep_mem(p, from);
	if (ver_add(p, p->g->ops[opi].out[0], ymd, &yv) < 0)
		return -1;
	return plan_reorder(p, opi, from, yv->mem) < 0 ? -1 : 1;
}

/* The step of op OPI running PD (destroyed here) from memory SRC into a new
 * version of its output in the layout PD chose.  Returns 1, or -1. */
static int step_src_dst(struct plan *p, int opi, dnnl_primitive_desc_t pd, dnnl_memory_t src)
{
	const struct ir_op *op = &p->g->ops[opi];
	struct pver *yv;
	if (ver_add(p, op->out[0], dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0), &yv) < 0) {
		dnnl_primitive_desc_destroy(pd);
		return -1;
	}
	dnnl_exec_arg_t args[2] = { { DNNL_ARG_SRC, src }, { DNNL_ARG_DST, yv->mem } };
	return plan_prim(p, op, opi, pd, 2, args) < 0 ? -1 : 1;
}

/* The step of op OPI running PD (destroyed here) from its input, seen as
 * plain dims XD of rank R, to its output, plain, seen as dims YD.
 * Returns 1, or -1. */
static int step_plain(struct plan *p, int opi, dnnl_primitive_desc_t pd, int r,
		      const int64_t *xd, const int64_t *yd)
{
	const struct ir_op *op = &p->g->ops[opi];
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

/* ---- the ops: each returns 1 when planned, 0 to fall back to the
 * kernel, -1 on error ---- */

/* Conv, with the ops after it that fold in as post-ops (plan_fuse.c),
 * by Winograd's algorithm where it pays. */
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
	plan_plain_md(x, &x_plain);
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
		pd = prim_desc(p, &cd, attr);
		dnnl_primitive_attr_destroy(attr);
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
	dnnl_exec_arg_t args[PLAN_ARGS] = {
		{ DNNL_ARG_SRC, xv->mem }, { DNNL_ARG_WEIGHTS, wm }, { DNNL_ARG_DST, yv->mem },
		{ DNNL_ARG_BIAS, bm },
	};
	return step_chain(p, opi, pd, &c, args, b ? 4 : 3);
fail:
	dnnl_primitive_desc_destroy(pd);
	return -1;
}

/* MaxPool, AveragePool, GlobalAveragePool on the input's layout. */
static int plan_pool(struct plan *p, int opi)
{
	const struct ir_graph *g = p->g;
	const struct ir_op *op = &g->ops[opi];
	if (!one_in_out(p, op))
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
	const struct pver *x0 = &p->t[op->in[0]].v[0];
	dnnl_pooling_v2_desc_t pdesc;
	dnnl_primitive_desc_t pd;
	if (dnnl_pooling_v2_forward_desc_init(&pdesc, dnnl_forward_inference, alg, &x0->md,
					      &any_y, strides, kernel, dil, pad_l, pad_r) != dnnl_success ||
	    !(pd = prim_desc(p, &pdesc, NULL)))
		return 0;
	return step_src_dst(p, opi, pd, x0->mem);
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
		dnnl_dims_t d;
		int off = y->rank - tb->rank;
		for (int i = 0; i < y->rank; i++)
			d[i] = i < off ? 1 : tb->shape[i - off];
		dense_md(&bmd, y->rank, d);
	}
	dnnl_alg_kind_t alg = op->type == OP_ADD ? dnnl_binary_add :
		op->type == OP_MUL ? dnnl_binary_mul : op->type == OP_SUB ? dnnl_binary_sub :
		op->type == OP_DIV ? dnnl_binary_div : op->type == OP_MAX ? dnnl_binary_max :
		dnnl_binary_min;
	dnnl_binary_desc_t bd;
	struct chain c;
	dnnl_primitive_desc_t pd;
	memset(&bd, 0, sizeof bd);
	if (dnnl_binary_desc_init(&bd, alg, &av->md, &bmd, &av->md) != dnnl_success ||
	    !(pd = fused_desc(p, opi, &bd, sizeof bd, NULL, &c)))
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
	dnnl_exec_arg_t args[PLAN_ARGS] = {
		{ DNNL_ARG_SRC_0, av->mem }, { DNNL_ARG_SRC_1, bmem }, { DNNL_ARG_DST, yv->mem },
	};
	return step_chain(p, opi, pd, &c, args, 3);
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
	    p->t[op->in[0]].n == 0 || plan_exact_output(g, op) || !po_fold(g, op, &own) ||
	    !same_shape(&g->tensors[op->in[0]], &g->tensors[op->out[0]]))
		return 0;
	/* the first function is the primitive's, the others its post-ops */
	rest.n = own.n - 1;
	memcpy(rest.e, own.e + 1, sizeof rest.e[0] * (size_t)rest.n);
	const struct pver *xv = &p->t[op->in[0]].v[0];
	dnnl_eltwise_desc_t ed;
	struct chain c;
	dnnl_primitive_desc_t pd;
	memset(&ed, 0, sizeof ed);
	if (dnnl_eltwise_forward_desc_init(&ed, dnnl_forward_inference, own.e[0].alg, &xv->md,
					   own.e[0].a, own.e[0].b) != dnnl_success ||
	    !(pd = fused_desc(p, opi, &ed, sizeof ed, &rest, &c)))
		return 0;
	struct pver *yv;
	if (ver_add(p, c.out, &xv->md, &yv) < 0) {
		dnnl_primitive_desc_destroy(pd);
		return -1;
	}
	dnnl_exec_arg_t args[PLAN_ARGS] = { { DNNL_ARG_SRC, xv->mem }, { DNNL_ARG_DST, yv->mem } };
	return step_chain(p, opi, pd, &c, args, 2);
}

/* Concat of 4-D activations along channels, in the layouts they have. */
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
	    plan_ref_impl(pd))
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
	plan_plain_md(a, &a_md);
	plan_plain_md(y, &y_md);
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
	dnnl_dims_t add, bdd, ydd;
	for (int i = 0; i < r; i++) {
		add[i] = ad[i];
		bdd[i] = bd[i];
		ydd[i] = y->shape[i];
	}
	dnnl_memory_desc_t a_md, b_md, any_b, y_md;
	dense_md(&a_md, r, add);
	dense_md(&b_md, r, bdd);
	dnnl_memory_desc_init_by_tag(&any_b, r, bdd, dnnl_f32, dnnl_format_tag_any);
	dense_md(&y_md, r, ydd);
	int cb = !is_act(g, op->in[1]);
	dnnl_matmul_desc_t md;
	struct chain c;
	dnnl_primitive_desc_t pd;
	if (dnnl_matmul_desc_init(&md, &a_md, cb ? &any_b : &b_md, NULL, &y_md) != dnnl_success ||
	    !(pd = fused_desc(p, opi, &md, 0, NULL, &c)))
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
	dnnl_exec_arg_t args[PLAN_ARGS] = {
		{ DNNL_ARG_SRC, am }, { DNNL_ARG_WEIGHTS, bm }, { DNNL_ARG_DST, ym },
	};
	return step_chain(p, opi, pd, &c, args, 3);
}

/* Softmax and LogSoftmax on plain buffers, as [outer, n, inner] along 1. */
static int plan_softmax(struct plan *p, int opi)
{
	const struct ir_graph *g = p->g;
	const struct ir_op *op = &g->ops[opi];
	if (!one_in_out(p, op))
		return 0;
	const struct ir_tensor *x = &g->tensors[op->in[0]];
	int r = x->rank, axis = (int)op_int(op, "axis", -1);
	axis += axis < 0 ? r : 0;
	if (r < 1 || axis < 0 || axis >= r || tensor_numel(x) == 0)
		return 0;
	int64_t d[3] = { 1, 1, 1 };
	for (int i = 0; i < r; i++)
		d[i < axis ? 0 : i == axis || op_int(op, "coerce2d", 0) ? 1 : 2] *= x->shape[i];
	dnnl_dims_t dd = { d[0], d[1], d[2] };
	dnnl_memory_desc_t md;
	dense_md(&md, 3, dd);
	dnnl_softmax_desc_t sd;   /* dnnl_logsoftmax_desc_t is the same type */
	dnnl_primitive_desc_t pd;
	dnnl_status_t st = op->type == OP_SOFTMAX ?
		dnnl_softmax_forward_desc_init(&sd, dnnl_forward_inference, &md, 1) :
		dnnl_logsoftmax_forward_desc_init(&sd, dnnl_forward_inference, &md, 1);
	if (st != dnnl_success || !(pd = prim_desc(p, &sd, NULL)))
		return 0;
	return step_plain(p, opi, pd, 3, d, d);
}

/* ReduceMean, ReduceMax, ReduceMin, ReduceSum over attribute axes (absent:
 * all) on plain buffers. */
static int plan_reduce(struct plan *p, int opi)
{
	const struct ir_graph *g = p->g;
	const struct ir_op *op = &g->ops[opi];
	if (!one_in_out(p, op))
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
	dnnl_dims_t xdd, ydd;
	for (int i = 0; i < r; i++) {
		xd[i] = xdd[i] = x->shape[i];
		yd[i] = ydd[i] = mask[i] ? 1 : x->shape[i];
	}
	dnnl_memory_desc_t xmd, ymd;
	dense_md(&xmd, r, xdd);
	dense_md(&ymd, r, ydd);
	dnnl_alg_kind_t alg = op->type == OP_REDUCEMEAN ? dnnl_reduction_mean :
			      op->type == OP_REDUCEMAX ? dnnl_reduction_max :
			      op->type == OP_REDUCEMIN ? dnnl_reduction_min : dnnl_reduction_sum;
	dnnl_reduction_desc_t rd;
	dnnl_primitive_desc_t pd;
	if (dnnl_reduction_desc_init(&rd, alg, &xmd, &ymd, 0, 0) != dnnl_success ||
	    !(pd = prim_desc(p, &rd, NULL)))
		return 0;
	return step_plain(p, opi, pd, r, xd, yd);
}

/* Slice with steps of 1: a reorder from a window of the input, in its
 * layout, to an output of the same layout. */
static int plan_slice(struct plan *p, int opi)
{
	const struct ir_graph *g = p->g;
	const struct ir_op *op = &g->ops[opi];
	if (!one_in_out(p, op))
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
		plan_plain_md(y, &ymd);
	dnnl_memory_t sm;
	if (dnnl_memory_create(&sm, &sub, p->eng, xv->buf) != dnnl_success)
		return 0;
	return step_reorder(p, opi, sm, &ymd);
}

/* Transpose as one reorder: the input seen through permuted strides (its
 * own when its layout has no blocking, else the plain ones) into a plain
 * output. */
static int plan_transpose(struct plan *p, int opi)
{
	const struct ir_graph *g = p->g;
	const struct ir_op *op = &g->ops[opi];
	int64_t perm[IR_MAX_RANK];
	if (!one_in_out(p, op))
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
	plan_plain_md(y, &ymd);
	if (dnnl_memory_desc_init_by_strides(&vmd, r, vd, dnnl_f32, vs) != dnnl_success ||
	    dnnl_memory_create(&vm, &vmd, p->eng, xv ? xv->buf : p->val[op->in[0]]) != dnnl_success)
		return err_set("oneDNN: cannot create memory");
	return step_reorder(p, opi, vm, &ymd);
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
	    dnnl_success || !(pd = prim_desc(p, &rd, NULL)))
		return 0;
	return step_src_dst(p, opi, pd, xv->mem);
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
	dnnl_dims_t dd = { d[0], d[1] }, cd = { d[1] };
	dnnl_memory_desc_t md, cmd;
	dense_md(&md, 2, dd);
	dnnl_memory_desc_init_by_tag(&cmd, 1, cd, dnnl_f32, dnnl_x);
	dnnl_layer_normalization_desc_t ld;
	dnnl_primitive_desc_t pd;
	if (dnnl_layer_normalization_forward_desc_init(&ld, dnnl_forward_inference, &md, NULL,
			(float)op_float(op, "epsilon", 1e-5),
			dnnl_use_scale | (bi ? dnnl_use_shift : 0)) != dnnl_success ||
	    !(pd = prim_desc(p, &ld, NULL)))
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

/* The planner of op opi by its type. */
int plan_dnnl_op(struct plan *p, int opi)
{
	switch (p->g->ops[opi].type) {
	case OP_CONV: return plan_conv(p, opi);
	case OP_MAXPOOL: case OP_AVGPOOL: case OP_GAVGPOOL: return plan_pool(p, opi);
	case OP_ADD: case OP_MUL: case OP_SUB: case OP_DIV: return plan_binary(p, opi);
	case OP_RELU: case OP_CLIP: case OP_SIGMOID: case OP_TANH: case OP_EXP:
	case OP_LOG: case OP_SQRT: case OP_ABS: case OP_NEG: case OP_HARDSWISH:
	case OP_LEAKYRELU: case OP_ELU: case OP_HARDSIGMOID: case OP_POW:
	case OP_GELU: case OP_SILU:
		return plan_eltwise(p, opi);
	case OP_SLICE: return plan_slice(p, opi);
	case OP_LAYERNORM: return plan_layernorm(p, opi);
	case OP_TRANSPOSE: return plan_transpose(p, opi);
	case OP_RESIZE: return plan_resize(p, opi);
	case OP_CONCAT: return plan_concat(p, opi);
	case OP_GEMM: return plan_gemm(p, opi);
	case OP_MATMUL: return plan_matmul(p, opi);
	case OP_SOFTMAX: case OP_LOGSOFTMAX: return plan_softmax(p, opi);
	case OP_REDUCEMEAN: case OP_REDUCEMAX: case OP_REDUCEMIN: case OP_REDUCESUM:
		return plan_reduce(p, opi);
	default: return 0;
	}
}
