/* codegen.c - an addressed Tpu graph to DMA and compute command streams
 * (lib/codegen.h), layer group by layer group: the driver and the helpers
 * its parts share (lib/codegen_int.h).  A single op runs from local memory
 * in steps (lib/codegen_op.c); a local group runs all its ops per slice,
 * keeping intermediate results in local memory (lib/codegen_group.c).  The
 * rules are in formats/tpuc-isa.5 (LAYER GROUPS, CODE GENERATION).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "codegen.h"
#include "codegen_int.h"
#include "layergroup.h"
#include "op.h"
#include "sim.h"

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

/* Output rows [oh0, oh1) need input rows [*a, *b). */
void cg_in_rows(const struct gen *cg, const struct ir_op *op, int oh0, int oh1, int *a, int *b)
{
	op_defs[op->type]->slice_h(cg->g, op, oh0, oh1, a, b);
	if (*b < *a)
		*b = *a;
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
	d->wait = wait;
	d->ddr = (uint32_t)ddr;
	d->lmem = lmem;
	d->n = (int)blk[0];
	d->c = (int)blk[1];
	d->h = (int)blk[2];
	d->w = (int)blk[3];
	d->cstride = (uint32_t)cs;
	d->nstride = (uint32_t)ns;
	cg->dma_cycles += sim_dma_cycles(cg->c, d);
	return 0;
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
		return cg_emit_dma_raw(cg, kind, x->dtype, ddr + ((int64_t)c0 * s[2] * s[3] + h0 * inner) * es,
				       lmem, blk, s[2] * s[3], x->shape[3] * inner, wait, x->name);
	}
	if (h0 < 0) {
		h0 = 0;
		h1 = (int)s[2];
	}
	if (h1 <= h0 || c1 <= c0)
		return 0;
	ddr += ((int64_t)c0 * s[2] * s[3] + (int64_t)h0 * s[3]) * es;
	int64_t blk[4] = { s[0], c1 - c0, h1 - h0, s[3] };
	return cg_emit_dma_raw(cg, kind, x->dtype, ddr, lmem, blk, s[2] * s[3], s[1] * s[2] * s[3],
			       wait, x->name);
}

int64_t cg_load_cycles(const struct gen *cg, int t)
{
	return cost_dma(cg->c, (int64_t)tensor_bytes(&cg->g->tensors[t]));
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

int cg_producer(const struct ir_graph *g, int t)
{
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

/* ---- the whole graph ---- */

/* What codegen generates in one piece: a single op (global placement) or
 * a local layer group, with its region of local memory. */
struct unit {
	int first, n_ops;
	struct layout L;           /* single op */
	struct group *G;           /* local group, else NULL */
	int64_t base, need;        /* region: bytes [base, base + need) of every lane */
	uint32_t last_cmp;         /* its last compute command, once generated */
};

int cg_prefetch(struct gen *cg, struct prefetch *pf, int64_t budget, int final)
{
	struct unit *u = pf->u;
	if (!u)
		return 0;
	int had = cg->n_dma, rc;
	int64_t *b = budget >= 0 ? &budget : NULL, avoid[2] = { pf->lo, pf->hi };
	if (u->G)
		rc = (final ? cg_group_load(cg, u->G, pf->wait, pf->only_before, u->first, NULL,
					    NULL, avoid) : 0) ||
		     cg_group_load(cg, u->G, cg->n_dma > had ? 0 : pf->wait, pf->only_before,
				   u->first + u->n_ops, NULL, b, avoid);
	else
		rc = cg_op_load(cg, &u->L, pf->wait, pf->only_before, final ? NULL : b, avoid);
	if (cg->n_dma > had)
		pf->wait = 0;
	return rc ? -1 : 0;
}

static int overlap(const struct unit *a, const struct unit *b)
{
	return a->base < b->base + b->need && b->base < a->base + a->need;
}

/* The last compute command of a unit before `upto` whose region overlaps u. */
static uint32_t region_wait(const struct unit *un, int upto, const struct unit *u)
{
	uint32_t w = 0;
	for (int j = 0; j < upto; j++)
		if (overlap(&un[j], u) && un[j].last_cmp > w)
			w = un[j].last_cmp;
	return w;
}

/* Plan unit u (ops [first, first + n)) and place its region at the low or
 * the high end of local memory. */
static int unit_plan(struct gen *cg, struct unit *u, int first, int n, int high)
{
	u->first = first;
	u->n_ops = n;
	if (n > 1) {
		int64_t cy;
		if (!(u->G = cg_group_new(cg->g, first, n)) || cg_group_choose(cg, u->G, &cy) < 0)
			return -1;
		u->need = cg_group_need(u->G);
	} else {
		struct plan p;
		if (cg_op_check(cg->g, first) < 0 || cg_op_plan(cg, first, &p, NULL) < 0)
			return -1;
		u->need = p.need;
		u->base = high ? (cg->c->lmem_bytes - p.need) / LMEM_ALIGN * LMEM_ALIGN : 0;
		cg_op_lay_out(cg, first, &p, u->base, high, &u->L);
	}
	u->base = high ? (cg->c->lmem_bytes - u->need) / LMEM_ALIGN * LMEM_ALIGN : 0;
	if (u->G)
		cg_group_lay_out(cg, u->G, u->base, high);
	return 0;
}

/* Every layer group in order.  Consecutive units take their regions from
 * opposite ends of local memory; the second's weights that lie outside the
 * first's region are loaded while the first computes. */
static int gen_all(struct gen *cg, const struct lg_group *grp, int n_grp)
{
	struct unit *un = xcalloc((size_t)n_grp + 1, sizeof *un);
	int rc = -1;
	for (int i = 0; i < n_grp; i++) {
		int n = grp[i].place == PLACE_LOCAL ? grp[i].n_ops : 1;
		if (n == 1 && grp[i].n_ops > 1)
			return err_set("layer group %d: more than one op in global memory", i);
		if (unit_plan(cg, &un[i], grp[i].first, n, i % 2) < 0)
			goto out;
	}
	for (int i = 0; i < n_grp; i++) {
		struct unit *u = &un[i];
		struct prefetch pf = { 0 };
		if (i + 1 < n_grp) {
			pf.u = &un[i + 1];
			pf.wait = region_wait(un, i, pf.u);
			pf.only_before = u->first + u->n_ops - 1;
			pf.lo = u->base;
			pf.hi = u->base + u->need;
		}
		uint32_t wait = region_wait(un, i, u);
		if (u->G) {
			if (cg_group_gen(cg, u->G, wait, &pf, &u->last_cmp) < 0)
				goto out;
		} else {
			if (cg_op_gen(cg, &u->L, wait, &pf) < 0)
				goto out;
			u->last_cmp = u->L.last_cmp;
		}
	}
	rc = 0;
out:
	for (int i = 0; i < n_grp; i++)
		cg_group_free(un[i].G);
	free(un);
	return rc;
}

int codegen_op_fits(const struct ir_graph *g, const struct chip *c, int i)
{
	struct gen cg = { .g = g, .c = c, .estimate = 1 };
	struct plan p;
	if (cg_op_check(g, i) < 0)
		return -1;
	int rc = cg_op_plan(&cg, i, &p, NULL);
	return rc == -2 ? 0 : rc < 0 ? -1 : 1;
}

int64_t codegen_group_cycles(const struct ir_graph *g, const struct chip *c, int first, int n)
{
	struct gen cg = { .g = g, .c = c, .estimate = 1 };
	int64_t cy = -1;
	if (n == 1) {
		struct plan p;
		if (cg_op_check(g, first) < 0 || cg_op_plan(&cg, first, &p, &cy) < 0)
			return -1;
		return cy;
	}
	struct group *G = cg_group_new(g, first, n);
	int rc = G ? cg_group_choose(&cg, G, &cy) : -1;
	cg_group_free(G);
	return rc < 0 ? rc : cy;
}

/* Bytes of tensor T, or -1 when they pass LIMIT (computed without
 * overflow: the IR's shapes are not bounded). */
static int64_t bytes_within(const struct ir_tensor *t, int64_t limit)
{
	int64_t n = (int64_t)dtype_size(t->dtype);
	for (int i = 0; i < t->rank; i++)
		if (t->shape[i] < 0 || __builtin_mul_overflow(n, t->shape[i], &n) || n > limit)
			return -1;
	return n;
}

/* The DDR the IR declares fits chip C: both regions' sizes, and every
 * tensor's bytes, without overflow. */
static int check_ddr(const struct ir_graph *g, const struct chip *c)
{
	if (g->coeff_bytes < 0 || g->neuron_bytes < 0 || g->coeff_bytes > c->ddr_bytes ||
	    g->neuron_bytes > c->ddr_bytes - g->coeff_bytes)
		return err_set("the DDR regions (%lld bytes of coefficients, %lld of activations) "
			       "do not fit the %lld bytes of chip %s", (long long)g->coeff_bytes,
			       (long long)g->neuron_bytes, (long long)c->ddr_bytes, c->name);
	for (int i = 0; i < g->n_tensors; i++)
		if (bytes_within(&g->tensors[i], c->ddr_bytes) < 0)
			return err_set("tensor '%s' is larger than the %lld bytes of DDR of chip %s",
				       g->tensors[i].name, (long long)c->ddr_bytes, c->name);
	return 0;
}

int codegen(const struct ir_graph *g, const struct chip *c, struct tmodel **out)
{
	*out = NULL;
	struct lg_group *grp;
	int n_grp;
	if (check_ddr(g, c) < 0 || lg_groups(g, &grp, &n_grp) < 0)
		return -1;

	/* Regions: coefficients at [0, coeff_bytes), activations after; the
	 * results a local group keeps in local memory need none. */
	char *local = xcalloc((size_t)g->n_tensors + 1, 1);
	for (int i = 0; i < n_grp; i++)
		for (int k = grp[i].first; grp[i].place == PLACE_LOCAL && k < grp[i].first + grp[i].n_ops - 1; k++)
			for (int j = 0; j < g->ops[k].n_out; j++)
				local[g->ops[k].out[j]] = 1;
	for (int i = 0; i < g->n_tensors; i++) {
		const struct ir_tensor *t = &g->tensors[i];
		if (local[i] && t->addr < 0)
			continue;
		/* check_ddr bounded the regions and the tensor: no overflow */
		int64_t lo = t->data ? 0 : g->coeff_bytes;
		int64_t hi = t->data ? g->coeff_bytes : g->coeff_bytes + g->neuron_bytes;
		int64_t bytes = (int64_t)tensor_bytes(t);
		if (t->addr < lo || t->addr > hi || bytes > hi - t->addr) {
			free(grp);
			free(local);
			if (t->addr < 0)
				return err_set("tensor '%s' has no address (run addr-assign)", t->name);
			return err_set("tensor '%s' (%lld bytes at %lld) lies outside its DDR region "
				       "[%lld, %lld) (run addr-assign)", t->name, (long long)bytes,
				       (long long)t->addr, (long long)lo, (long long)hi);
		}
	}

	free(local);
	struct gen cg = { .g = g, .c = c };
	int rc = gen_all(&cg, grp, n_grp);
	free(grp);
	if (rc < 0) {
		cg_free(&cg);
		return -1;
	}
	if (cg.n_dma >= (1 << 24) || cg.n_cmp >= (1 << 24)) {
		cg_free(&cg);
		return err_set("the model needs more than 2^24 commands");
	}

	struct tmodel *m = xcalloc(1, sizeof *m);
	m->name = xstrdup(g->name ? g->name : "");
	m->chip = xstrdup(c->name);
	m->mode = xstrdup(g->mode ? g->mode : "");
	m->coeff_addr = 0;
	m->coeff_bytes = g->coeff_bytes;
	m->neuron_addr = g->coeff_bytes;
	m->neuron_bytes = g->neuron_bytes;
	m->dma = cg.dma;
	m->n_dma = cg.n_dma;
	m->cmp = cg.cmp;
	m->n_cmp = cg.n_cmp;
	m->loc = cg.loc;
	m->coeff = xaligned((size_t)g->coeff_bytes + 1);
	memset(m->coeff, 0, (size_t)g->coeff_bytes + 1);
	m->g = graph_clone(g);
	for (int i = 0; i < m->g->n_tensors; i++) {
		struct ir_tensor *t = &m->g->tensors[i];
		if (!t->data)
			continue;
		unsigned char *dst = (unsigned char *)m->coeff + t->addr;
		memcpy(dst, t->data, t->nbytes);
		if (t->owns_data)
			free(t->data);
		t->data = dst;
		t->owns_data = 0;
	}
	*out = m;
	return 0;
}
