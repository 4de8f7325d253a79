/* codegen.c - an addressed Tpu graph to DMA and compute command streams
 * (lib/back/codegen.h), layer group by layer group: the driver (the helpers
 * its parts share are lib/back/codegen_util.c).  A single op runs from local memory
 * in steps (lib/back/codegen_op.c); a local group runs all its ops per slice,
 * keeping intermediate results in local memory (lib/back/codegen_group.c).  The
 * rules are in formats/tpuc-isa.5 (LAYER GROUPS, CODE GENERATION).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/base.h"
#include "back/codegen.h"
#include "back/codegen_group.h"
#include "back/codegen_op.h"
#include "back/codegen_util.h"
#include "back/groups.h"
#include "ir/op.h"
#include "chip/cost.h"

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

/* The loader of struct prefetch for a unit (cg_prefetch). */
static int unit_prefetch(struct gen *cg, struct prefetch *pf, int64_t budget, int final)
{
	struct unit *u = pf->u;
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
		if (!(u->G = cg_group_new(cg->g, first, n)))
			return -1;
		int rc = cg_group_choose(cg, u->G, &cy);
		if (rc < 0)
			return rc;
		u->need = cg_group_need(u->G);
	} else {
		struct plan p;
		if (cg_op_check(cg->g, first) < 0)
			return -1;
		int rc = cg_op_plan(cg, first, &p, NULL);
		if (rc < 0)
			return rc;
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
 * first's region are loaded while the first computes.  -2 when a group
 * does not fit local memory, -1 on other errors. */
static int gen_all(struct gen *cg, const struct lg_group *grp, int n_grp)
{
	struct unit *un = xcalloc((size_t)n_grp + 1, sizeof *un);
	int rc = -1;
	for (int i = 0; i < n_grp; i++) {
		int n = grp[i].place == PLACE_LOCAL ? grp[i].n_ops : 1;
		if (n == 1 && grp[i].n_ops > 1) {
			err_set("layer group %d: more than one op in global memory", i);
			goto out;
		}
		int prc = unit_plan(cg, &un[i], grp[i].first, n, i % 2);
		if (prc < 0) {
			rc = prc;
			goto out;
		}
	}
	for (int i = 0; i < n_grp; i++) {
		struct unit *u = &un[i];
		struct prefetch pf = { 0 };
		if (i + 1 < n_grp) {
			pf.u = &un[i + 1];
			pf.load = unit_prefetch;
			pf.wait = region_wait(un, i, &un[i + 1]);
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

int64_t codegen_runs_cycles(const struct ir_graph *g, const struct chip *c,
			    const struct lg_group *grp, int n_grp)
{
	struct gen cg = { .g = g, .c = c, .estimate = 1 };
	int64_t cy = gen_all(&cg, grp, n_grp);
	if (!cy)
		cy = cost_time(c, g, cg.dma, cg.n_dma, cg.cmp, cg.n_cmp);
	cg_free(&cg);
	return cy;
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
	codegen_uses_begin(g);
	int rc = gen_all(&cg, grp, n_grp);
	codegen_uses_end();
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
	m->mode = g->mode;
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
