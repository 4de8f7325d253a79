/* codegen_util.c - the helpers the parts of code generation share
 * (lib/back/codegen_util.h): lane shapes and bytes, slicing rules, DMA and
 * compute commands, local placement.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "back/codegen_util.h"
#include "back/groups.h"
#include "chip/cost.h"
#include "ir/base.h"
#include "ir/op.h"

int cg_is_weight(const struct ir_graph *g, int t)
{
	return t >= 0 && g->tensors[t].data != NULL;
}

void cg_lane_shape(const struct ir_graph *g, int t, int64_t s[4])
{
	const struct ir_tensor *x = &g->tensors[t];
	isa_lane_shape(x->rank, x->shape, x->data != NULL, s);
}

/* Bytes per lane of tensor t with `rows` rows in place of its H (rows < 0:
 * all) and `chans` channels in place of its C (chans <= 0: all), rounded up
 * for the next region. */
int64_t cg_lane_bytes(const struct gen *cg, int t, int64_t rows, int64_t chans)
{
	int64_t s[4];
	cg_lane_shape(cg->g, t, s);
	if (rows >= 0)
		s[2] = rows;
	if (chans > 0)
		s[1] = chans;
	return align_to(isa_lane_bytes(cg->c, cg->g->tensors[t].dtype, s), LMEM_ALIGN);
}

/* The answers of cg_in_rows on a context's graph (codegen_ctx's rows):
 * the search asks the same op for the same rows many times, and a slicing
 * rule reads the op's attributes by name.  Open addressing on (op, rows). */
struct rows_memo {
	int k, oh0, oh1, a, b;    /* k = -1: empty */
};

static struct rows_memo *rows_slot(struct rows_memo *tab, int cap, int k, int oh0, int oh1)
{
	uint64_t h = ((uint64_t)(unsigned)k << 40 ^ (uint64_t)(unsigned)oh0 << 20 ^ (unsigned)oh1) *
		     0x9e3779b97f4a7c15ull;
	for (unsigned i = (unsigned)(h >> 40) & (unsigned)(cap - 1);; i = (i + 1) & (unsigned)(cap - 1))
		if (tab[i].k < 0 || (tab[i].k == k && tab[i].oh0 == oh0 && tab[i].oh1 == oh1))
			return &tab[i];
}

/* cx's memo empty with room for cap answers (the old one not freed). */
static void rows_memo_new(struct codegen_ctx *cx, int cap)
{
	cx->rows = xmalloc(sizeof *cx->rows * (size_t)cap);
	for (int i = 0; i < cap; i++)
		cx->rows[i].k = -1;
	cx->rows_cap = cap;
	cx->rows_used = 0;
}

void cg_in_rows(const struct gen *cg, const struct ir_op *op, int oh0, int oh1, int *a, int *b)
{
	struct codegen_ctx *cx = cg->cx;
	struct rows_memo *m = NULL;
	int k = (int)(op - cg->g->ops);
	if (cx) {
		if (2 * (cx->rows_used + 1) > cx->rows_cap) {
			struct rows_memo *old = cx->rows;
			int cap = cx->rows_cap;
			rows_memo_new(cx, 2 * cap);
			for (int i = 0; i < cap; i++)
				if (old[i].k >= 0) {
					const struct rows_memo *e = &old[i];
					*rows_slot(cx->rows, cx->rows_cap, e->k, e->oh0, e->oh1) = *e;
					cx->rows_used++;
				}
			free(old);
		}
		m = rows_slot(cx->rows, cx->rows_cap, k, oh0, oh1);
		if (m->k >= 0) {
			*a = m->a;
			*b = m->b;
			return;
		}
	}
	op_defs[op->type]->slice_h(cg->g, op, oh0, oh1, a, b);
	if (*b < *a)
		*b = *a;
	if (m) {
		*m = (struct rows_memo){ k, oh0, oh1, *a, *b };
		cx->rows_used++;
	}
}

/* Bytes per lane of operand t of op holding `rows` entries of its slice
 * axis (rows < 0: all) and `chans` channels (chans <= 0: all). */
int64_t cg_held_bytes(const struct gen *cg, int t, int axis, int64_t rows, int64_t chans)
{
	if (axis == 2 || rows < 0 || cg_is_weight(cg->g, t))
		return cg_lane_bytes(cg, t, rows, chans);
	int64_t s[4];
	isa_held_shape(&cg->g->tensors[t], axis, rows, s);
	if (chans > 0)
		s[1] = chans;
	return align_to(isa_lane_bytes(cg->c, cg->g->tensors[t].dtype, s), LMEM_ALIGN);
}

/* 1 if op can run in slices along H: a slice_h rule that does not refuse
 * the op (a first row < 0), input 0 and the outputs of rank 4 or more with
 * one H > 1 (input 0 along its slice axis, isa_slice_axis: 2, or 3 when N
 * is 1), other activations of input 0's rank and H (sliced too) or
 * broadcast along H; for elementwise rules (slice_h_same) the weights
 * broadcast along H as well. */
/* B of a MatMul whose output has rank 4: its axis 2 is K, not the rows M
 * the slices cut, so it is read whole. */
static int matmul_whole_b(const struct ir_graph *g, const struct ir_op *op, int i)
{
	return op->type == OP_MATMUL && i == 1 && g->tensors[op->out[0]].rank == 4;
}

int cg_sliceable(const struct ir_graph *g, const struct ir_op *op)
{
	const struct op_def *d = op_defs[op->type];
	if (!d->slice_h || op->n_in < 1 || op->in[0] < 0 || cg_is_weight(g, op->in[0]))
		return 0;
	const struct ir_tensor *x = &g->tensors[op->in[0]], *y = &g->tensors[op->out[0]];
	int ax = isa_slice_axis(g, op, 0);
	if (x->rank < 4 || y->rank < 4 || y->shape[2] < 2 || ax < 2 || ax > 3 ||
	    x->shape[ax] < 2 || (ax == 3 && x->shape[0] != 1))
		return 0;
	for (int i = 0; i < op->n_out; i++) {
		const struct ir_tensor *o = &g->tensors[op->out[i]];
		if (o->rank < 4 || o->shape[2] != y->shape[2])
			return 0;
	}
	for (int i = 1; i < op->n_in; i++) {
		int t = op->in[i];
		if (t < 0)
			continue;
		const struct ir_tensor *a = &g->tensors[t];
		int h = 2 - (y->rank - a->rank);   /* a's axis under the output's H */
		if (cg_is_weight(g, t)) {
			/* Scale's parameters are per channel, whatever their shape */
			if (d->slice_h == slice_h_same && h >= 0 && a->shape[h] > 1 &&
			    op->type != OP_SCALE)
				return 0;
			continue;
		}
		if (cg_input_sliced(g, op, i) || matmul_whole_b(g, op, i))
			continue;
		if (h >= 0 && h < a->rank && a->shape[h] > 1)
			return 0;
	}
	int a, b;
	d->slice_h(g, op, 0, 1, &a, &b);
	return a >= 0;
}

/* Whether input i of a sliceable op holds slice rows. */
int cg_input_sliced(const struct ir_graph *g, const struct ir_op *op, int i)
{
	int t = op->in[i];
	if (t < 0 || cg_is_weight(g, t))
		return 0;
	if (i == 0)
		return 1;
	if (matmul_whole_b(g, op, i))
		return 0;
	const struct ir_tensor *a = &g->tensors[t], *x = &g->tensors[op->in[0]];
	return isa_slice_axis(g, op, 0) == 2 && a->rank >= 4 && a->rank == x->rank &&
	       a->shape[2] == x->shape[2];
}

static struct isa_dma *new_dma(struct gen *cg)
{
	if (cg->n_dma == cg->cap_dma)
		grow_array((void **)&cg->dma, &cg->cap_dma, cg->n_dma + 1, sizeof *cg->dma);
	struct isa_dma *d = &cg->dma[cg->n_dma++];
	memset(d, 0, sizeof *d);
	d->id = (uint32_t)cg->n_dma;
	return d;
}

static int fits(int64_t v, int bits)
{
	return v >= 0 && v < ((int64_t)1 << bits);
}

int cg_emit_dma_raw(struct gen *cg, int kind, enum ir_dtype dt, int64_t ddr, uint32_t lmem,
		    const int64_t blk[4], int64_t cs, int64_t ns, uint32_t wait, const char *name)
{
	if (!fits(blk[0], 16) || !fits(blk[1], 16) || !fits(blk[2], 16) || !fits(blk[3], 16) ||
	    !fits(cs, 32) || !fits(ns, 32) || !fits(ddr, 32))
		return err_set("tensor '%s': shape or address out of the DMA engine's range", name);
	struct isa_dma *d = new_dma(cg);
	d->op = kind;
	d->dtype = dt;
	/* the first transfer after a host command waits for it: the host
	 * wrote DDR (the DMA engine runs in order, so the rest follow) */
	d->wait = wait > cg->host_wait ? wait : cg->host_wait;
	cg->host_wait = 0;
	d->ddr = (uint32_t)ddr;
	d->lmem = lmem;
	d->n = (int)blk[0];
	d->c = (int)blk[1];
	d->h = (int)blk[2];
	d->w = (int)blk[3];
	d->cstride = (uint32_t)cs;
	d->nstride = (uint32_t)ns;
	cg->dma_cycles += cost_dma_cycles(cg->c, d);
	return 0;
}

/* Block blk as DMAs of fewer channels than the 16-bit field holds: a
 * multiple of the lanes each, so that every part keeps channel c in lane
 * c mod lanes and starts whole slots (of blk[0] x blk[2] rows) later in
 * local memory.  Only the first waits: the DMA engine runs in order. */
static int emit_dma_parts(struct gen *cg, int kind, enum ir_dtype dt, int64_t ddr, uint32_t lmem,
			  const int64_t blk[4], int64_t cs, int64_t ns, uint32_t wait,
			  const char *name)
{
	int64_t lanes = cg->c->lanes, most = ((1 << 16) - 1) / lanes * lanes;
	if (blk[1] <= most)
		return cg_emit_dma_raw(cg, kind, dt, ddr, lmem, blk, cs, ns, wait, name);
	int64_t slot = blk[0] * blk[2] * isa_pitch(cg->c, dt, blk[3]);
	for (int64_t c = 0; c < blk[1]; c += most) {
		int64_t b[4] = { blk[0], blk[1] - c < most ? blk[1] - c : most, blk[2], blk[3] };
		int64_t at = lmem + c / lanes * slot;
		if (at > UINT32_MAX)
			return err_set("tensor '%s': shape or address out of the DMA engine's range", name);
		if (cg_emit_dma_raw(cg, kind, dt, ddr + c * cs * (int64_t)dtype_size(dt), (uint32_t)at,
				    b, cs, ns, c ? 0 : wait, name) < 0)
			return -1;
	}
	return 0;
}

void cg_ctx_forward(struct codegen_ctx *cx)
{
	const struct ir_graph *g = cx->g;
	cx->fwd = lg_forwards(g);
	cx->fwd_skip = xcalloc((size_t)g->n_ops + 1, 1);
	for (int t = 0; t < g->n_tensors; t++)
		if (cx->fwd[t].copy >= 0)
			cx->fwd_skip[cx->fwd[t].copy] = 1;
}

/* What a load of t reads in place of t (lg_forwards), NULL: t itself. */
static const struct lg_fwd *forward_of(const struct gen *cg, int t)
{
	const struct codegen_ctx *cx = cg->cx;
	return !cg->estimate && cx && cx->fwd && cx->fwd[t].copy >= 0 ? &cx->fwd[t] : NULL;
}

int cg_copy_skipped(const struct gen *cg, int k)
{
	return !cg->estimate && cg->cx && cg->cx->fwd_skip && cg->cx->fwd_skip[k];
}

/* Move rows [h0, h1) (all when h0 < 0) and channels [c0, c1) (all when
 * c0 < 0) of tensor t between DDR and local address lmem. */
int cg_emit_dma(struct gen *cg, int kind, int t, int h0, int h1, int c0, int c1,
		uint32_t lmem, uint32_t wait)
{
	return cg_emit_dma_ax(cg, kind, t, 2, h0, h1, c0, c1, lmem, wait);
}

/* The same with the rows along IR axis `axis` (2, or 3 for N = 1). */
int cg_emit_dma_ax(struct gen *cg, int kind, int t, int axis, int h0, int h1, int c0, int c1,
		   uint32_t lmem, uint32_t wait)
{
	const struct ir_tensor *x = &cg->g->tensors[t];
	int64_t s[4], es = (int64_t)dtype_size(x->dtype);
	cg_lane_shape(cg->g, t, s);
	int64_t ddr = cg->estimate && x->addr < 0 ? 0 : x->addr;
	if (c0 < 0) {
		c0 = 0;
		c1 = (int)s[1];
	}
	if (axis == 3 && h0 >= 0 && !cg_is_weight(cg->g, t)) {
		/* Rows of axis 3: one run of (h1 - h0) * inner elements per
		 * (c, h), the H rows as the block's N (N = 1). */
		int64_t inner = 1;
		for (int d = 4; d < x->rank; d++)
			inner *= x->shape[d];
		if (h1 <= h0 || c1 <= c0)
			return 0;
		int64_t blk[4] = { s[2], c1 - c0, 1, (h1 - h0) * inner };
		return emit_dma_parts(cg, kind, x->dtype, ddr + ((int64_t)c0 * s[2] * s[3] + h0 * inner) * es,
				       lmem, blk, s[2] * s[3], x->shape[3] * inner, wait, x->name);
	}
	if (h0 < 0) {
		h0 = 0;
		h1 = (int)s[2];
	}
	if (h1 <= h0 || c1 <= c0)
		return 0;
	int64_t blk[4] = { s[0], c1 - c0, h1 - h0, s[3] };
	const struct lg_fwd *f = kind == ISA_DMA_LOAD && axis == 2 ? forward_of(cg, t) : NULL;
	if (f) {
		ddr = cg->g->tensors[f->src].addr + (f->at + c0 * f->cs + (int64_t)h0 * s[3]) * es;
		return emit_dma_parts(cg, kind, x->dtype, ddr, lmem, blk, f->cs, f->ns, wait,
				       x->name);
	}
	ddr += ((int64_t)c0 * s[2] * s[3] + (int64_t)h0 * s[3]) * es;
	return emit_dma_parts(cg, kind, x->dtype, ddr, lmem, blk, s[2] * s[3], s[1] * s[2] * s[3],
			       wait, x->name);
}

int64_t cg_load_cycles(const struct gen *cg, int t)
{
	return cost_dma(cg->c, (int64_t)tensor_bytes(&cg->g->tensors[t]));
}

int cg_load_whole(struct gen *cg, int t, int64_t addr, uint32_t *wait, int64_t *budget,
		  const int64_t *avoid, int *done)
{
	if (avoid && addr < avoid[1] && avoid[0] < addr + cg_lane_bytes(cg, t, -1, -1))
		return CG_SKIP;
	int64_t s[4], lanes = cg->c->lanes;
	cg_lane_shape(cg->g, t, s);
	int c0 = done ? *done : 0, c1 = (int)s[1];
	/* bytes of one channel slot (lanes channels) */
	int64_t slot = lanes * s[0] * s[2] * s[3] * (int64_t)dtype_size(cg->g->tensors[t].dtype);
	if (budget) {
		int64_t cy = cost_dma(cg->c, (c1 - c0) * (slot / lanes));
		if (cy > *budget) {
			/* whole slots that fit, when worth a command of their own */
			int64_t n = (*budget - cg->c->dma_latency) * cg->c->ddr_bpc / slot;
			if (!done || c0 % lanes || n < 1 || c0 + n * lanes >= c1 ||
			    cost_dma(cg->c, n * slot) < PART_LATENCIES * cg->c->dma_latency)
				return CG_STOP;
			c1 = c0 + (int)(n * lanes);
			cy = cost_dma(cg->c, n * slot);
		}
		*budget -= cy;
	}
	uint32_t at = (uint32_t)(addr + c0 / lanes * s[0] * s[2] * isa_pitch(cg->c, cg->g->tensors[t].dtype, s[3]));
	if (cg_emit_dma(cg, ISA_DMA_LOAD, t, -1, -1, c0, c1, at, *wait) < 0)
		return -1;
	*wait = 0;
	if (done)
		*done = c1;
	return c1 == (int)s[1] ? CG_LOADED : CG_STOP;
}

struct isa_cmp *cg_new_cmp(struct gen *cg, int k, uint32_t wait)
{
	const struct ir_op *op = &cg->g->ops[k];
	if (cg->n_cmp == cg->cap_cmp) {
		int cap = cg->cap_cmp;
		grow_array((void **)&cg->cmp, &cg->cap_cmp, cg->n_cmp + 1, sizeof *cg->cmp);
		grow_array((void **)&cg->loc, &cap, cg->n_cmp + 1, sizeof *cg->loc);
	}
	struct isa_cmp *c = &cg->cmp[cg->n_cmp];
	cg->loc[cg->n_cmp] = xstrdup(op->name);
	cg->n_cmp++;
	memset(c, 0, sizeof *c);
	c->opcode = op->type;
	c->id = (uint32_t)cg->n_cmp;
	c->wait = wait;
	c->layer = (uint32_t)k;
	c->n_in = op->n_in;
	c->n_out = op->n_out;
	for (int i = 0; i < ISA_MAX_OPERANDS; i++)
		c->addr[i] = ISA_NO_ADDR;
	return c;
}

uint32_t cg_place(int64_t *at, int64_t size, int64_t base, int64_t need, int high)
{
	int64_t a = *at;
	*at += size;
	return (uint32_t)(high ? base + need - (a - base) - size : a);
}

void cg_ctx_init(struct codegen_ctx *cx)
{
	const struct ir_graph *g = cx->g;
	rows_memo_new(cx, 4096);
	cx->prod = xmalloc(sizeof *cx->prod * ((size_t)g->n_tensors + 1));
	for (int t = 0; t < g->n_tensors; t++)
		cx->prod[t] = -1;
	for (int k = g->n_ops - 1; k >= 0; k--)
		for (int i = 0; i < g->ops[k].n_out; i++)
			if (g->ops[k].out[i] >= 0)
				cx->prod[g->ops[k].out[i]] = k;
}

void cg_ctx_fini(struct codegen_ctx *cx)
{
	free(cx->prod);
	free(cx->rows);
	free(cx->fwd);
	free(cx->fwd_skip);
}

int cg_producer(const struct gen *cg, int t)
{
	const struct ir_graph *g = cg->g;
	if (cg->cx)
		return cg->cx->prod[t];
	for (int k = 0; k < g->n_ops; k++)
		for (int i = 0; i < g->ops[k].n_out; i++)
			if (g->ops[k].out[i] == t)
				return k;
	return -1;
}

void cg_free(struct gen *cg)
{
	free(cg->dma);
	free(cg->cmp);
	for (int j = 0; j < cg->n_cmp; j++)
		free(cg->loc[j]);
	free(cg->loc);
}

int cg_prefetch(struct gen *cg, struct prefetch *pf, int64_t budget, int final)
{
	return pf->u ? pf->load(cg, pf, budget, final) : 0;
}

int cg_prefetch_freed(struct gen *cg, struct prefetch *pf, const struct freed *fr, int n,
		      uint32_t upto, int64_t budget)
{
	return pf->u && pf->freed ? pf->freed(cg, pf, fr, n, upto, budget) : 0;
}

int cg_prefetch_rows(struct gen *cg, struct prefetch *pf, int t, int rows, int64_t budget)
{
	return pf->u && pf->rows ? pf->rows(cg, pf, t, rows, budget) : 0;
}
