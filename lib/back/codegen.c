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
	struct plan p;             /* single op: its cut */
	struct layout L;           /* single op */
	struct group *G;           /* local group, else NULL */
	int64_t base, need;        /* region: bytes [base, base + need) of every lane */
	int64_t xlo, xhi;          /* xhi > xlo: the unit before's result it reads
				      where that unit left it (gen's keep), bytes
				      [xlo, xhi) outside its region */
	uint32_t last_cmp;         /* its last compute command, once generated */
	uint32_t upto_cmp;         /* the largest last_cmp of the units up to this one */
	int started;               /* a load of its inputs has been emitted */
	int host;                  /* a host op: one host command, tensors in DDR */
	int acts_first;            /* local group: its activations at its base's
				      end, its weights towards the far end */
	unsigned char *keep;       /* per weight (unit_weight's order): a later
				      unit reads it where this one loads it */
	int nkeep;
};

/* A weight unit j reads where unit k loaded the same bytes (kept_plan):
 * bytes [lo, hi) of every lane, held from k through j. */
struct kept {
	int k, j;
	int64_t lo, hi;
};

/* Units whose regions a new unit's region is checked against. */
#define AHEAD 8
/* Units whose weights load ahead at most (held_place's work grows with
 * the units between). */
#define FAR 64

/* A weight loaded ahead of its unit, outside that unit's region: bytes
 * [lo, hi) of every lane, held from unit `from` (the one computing while
 * it loads) through unit `user`, which reads it.  They lie clear of the
 * region of unit user + 1 too: that unit's inputs load while `user` runs,
 * clear only of user's own region (unit_prefetch's avoid). */
struct held {
	int64_t lo, hi;
	int from, user;
};

/* Units loaded ahead while unit i computes: i + 1 .. last in their own
 * regions (see gen_all), the weights of the units after it where they fit
 * (held). */
struct ahead {
	struct unit *un;
	int i, last, n;            /* n: units in all */
	struct held *h;            /* weights loaded ahead, in load order */
	int nh, caph;
	int scan;                  /* units before it have all their weights in */
	uint32_t old_wait;         /* the latest last compute of the units of the
				      weights held ahead dropped from h (prune) */
	int far;                   /* unit_freed loads the weights of units after
				      the next too */
	int far_done;              /* it did */
	int rows;                  /* loads of rows for the next unit (unit_rows) */
};

static uint32_t region_wait(const struct ahead *a, int upto, int64_t lo, int64_t hi);
static int load_ahead(struct gen *cg, struct ahead *a, int64_t *b, int start);

/* Whether every weight unit u loads whole is loaded. */
static int unit_weights_in(const struct gen *cg, const struct unit *u)
{
	if (u->host)
		return 1;
	if (u->G)
		return cg_group_weights_loaded(u->G);
	const struct ir_op *op = &cg->g->ops[u->first];
	for (int i = 0; i < op->n_in && !u->L.p.flat; i++) {
		const struct opnd *o = &u->L.od[i];
		if (o->t >= 0 && !o->sliced && !o->split && cg_is_weight(cg->g, o->t) &&
		    !u->L.loaded[i])
			return 0;
	}
	return 1;
}

/* Load unit u's whole inputs within *b (NULL: all); with `final`, at least
 * its first op's whatever they cost.  The first load waits for `wait`. */
static int unit_load(struct gen *cg, struct unit *u, uint32_t wait, int only_before, int64_t *b,
		     const int64_t *avoid, int final)
{
	int had = cg->n_dma, rc;
	if (u->host)
		return 0;
	if (u->G)
		rc = (final ? cg_group_load(cg, u->G, wait, only_before, u->first, NULL, NULL,
					    avoid) : 0) ||
		     cg_group_load(cg, u->G, cg->n_dma > had ? 0 : wait, only_before,
				   u->first + u->n_ops, NULL, b, avoid);
	else
		rc = cg_op_load(cg, &u->L, wait, only_before, final ? NULL : b, avoid);
	if (cg->n_dma > had)
		u->started = 1;
	return rc ? -1 : 0;
}

/* The loader of struct prefetch (cg_prefetch): the next unit's inputs
 * outside the current unit's region, then, once all its weights are in,
 * the weights of the units after it whose regions no unit from the
 * current one on uses, in order, within the budget. */
static int unit_prefetch(struct gen *cg, struct prefetch *pf, int64_t budget, int final)
{
	struct ahead *a = pf->u;
	int64_t *b = budget >= 0 ? &budget : NULL, avoid[2] = { pf->lo, pf->hi };
	int start = a->last + 1;
	for (int j = a->i + 1; j <= a->last; j++) {
		struct unit *u = &a->un[j];
		uint32_t wait = u->started ? 0 : j == a->i + 1 ? pf->wait :
				region_wait(a, a->i, u->base, u->base + u->need);
		if (unit_load(cg, u, wait, j == a->i + 1 ? pf->only_before : 0,
			      b, avoid, final && j == a->i + 1) < 0)
			return -1;
		if (j == a->i + 1 && u->started)
			pf->wait = 0;
		if (b && *b <= 0)
			return 0;
		if (!unit_weights_in(cg, u)) {
			/* the rest of its weights lie in use: elsewhere */
			start = j;
			break;
		}
	}
	/* Within a budget only: loads past it would hold up the DMA
	 * commands that follow in the stream. */
	return b ? load_ahead(cg, a, b, start) : 0;
}

/* The bytes unit u uses while it runs: its region, and with the result
 * of the unit before it reads in place, the span over both. */
static int64_t unit_lo(const struct unit *u)
{
	return u->xhi > u->xlo && u->xlo < u->base ? u->xlo : u->base;
}

static int64_t unit_hi(const struct unit *u)
{
	return u->xhi > u->xlo && u->xhi > u->base + u->need ? u->xhi : u->base + u->need;
}

static int overlap(const struct unit *a, const struct unit *b)
{
	return unit_lo(a) < unit_hi(b) && unit_lo(b) < unit_hi(a);
}

/* The last compute command of a unit before `upto` that uses local bytes
 * [lo, hi): its region, or a weight loaded ahead for it, overlaps them.
 * Regions from the latest unit back, until no earlier unit has a later
 * command (a scan of every unit per call is quadratic in the units). */
static uint32_t region_wait(const struct ahead *a, int upto, int64_t lo, int64_t hi)
{
	const struct unit *un = a->un;
	uint32_t w = 0;
	for (int j = upto - 1; j >= 0 && un[j].upto_cmp > w; j--)
		if (unit_lo(&un[j]) < hi && lo < unit_hi(&un[j]) && un[j].last_cmp > w)
			w = un[j].last_cmp;
	for (int k = a->nh - 1; k >= 0; k--) {
		const struct held *h = &a->h[k];
		if (h->user < upto && h->lo < hi && lo < h->hi && un[h->user].last_cmp > w)
			w = un[h->user].last_cmp;
	}
	return w > a->old_wait ? w : a->old_wait;
}

/* Drop the weights held for units before `before` from a->h, their
 * units' last computes folded into a->old_wait, which every later load
 * then waits for: long finished by then, and h stays short (its scans run
 * for every weight placed). */
static void held_prune(struct ahead *a, int before)
{
	int n = 0;
	for (int k = 0; k < a->nh; k++) {
		const struct held *h = &a->h[k];
		if (h->user >= before)
			a->h[n++] = *h;
		else if (a->un[h->user].last_cmp > a->old_wait)
			a->old_wait = a->un[h->user].last_cmp;
	}
	a->nh = n;
}

/* Whether local bytes [lo, hi) are free of the regions of units from..to
 * and of the weights held ahead for units from `from` on but unit `own`
 * (-1: none). */
static int clear_of(const struct ahead *a, int64_t lo, int64_t hi, int from, int to, int own)
{
	for (int k = from; k <= to && k < a->n; k++)
		if (!a->un[k].host && unit_lo(&a->un[k]) < hi && lo < unit_hi(&a->un[k]))
			return 0;
	for (int k = 0; k < a->nh; k++)
		if (a->h[k].user >= from && a->h[k].user != own && a->h[k].lo < hi &&
		    lo < a->h[k].hi)
			return 0;
	return 1;
}

/* A place for `size` bytes held while units from..user run (and user + 1's
 * inputs load): clear of their regions and of the other weights held then,
 * at an edge of a free range (the bottom of local memory, or next to what
 * is in use); of those, the one whose last user finishes first (ties: the
 * lowest).  -1 when none is free. */
static int64_t held_place(const struct gen *cg, const struct ahead *a, int64_t size, int from,
			  int user)
{
	int64_t lmem = cg->c->lmem_bytes, best = -1;
	uint32_t best_w = 0;
	int n = 0, cap = 2 * (a->n + a->nh) + 2;
	int64_t *cand = xmalloc(sizeof *cand * (size_t)cap);
	cand[n++] = 0;
	cand[n++] = (lmem - size) / LMEM_ALIGN * LMEM_ALIGN;
	for (int k = from; k <= user + 1 && k < a->n; k++) {
		cand[n++] = align_to(unit_hi(&a->un[k]), LMEM_ALIGN);
		cand[n++] = (unit_lo(&a->un[k]) - size) / LMEM_ALIGN * LMEM_ALIGN;
	}
	for (int k = 0; k < a->nh; k++)
		if (a->h[k].user >= from) {
			cand[n++] = align_to(a->h[k].hi, LMEM_ALIGN);
			cand[n++] = (a->h[k].lo - size) / LMEM_ALIGN * LMEM_ALIGN;
		}
	for (int k = 0; k < n; k++) {
		int64_t lo = cand[k];
		if (lo < 0 || lo + size > lmem || !clear_of(a, lo, lo + size, from, user + 1, -1))
			continue;
		uint32_t w = region_wait(a, from, lo, lo + size);
		if (best < 0 || w < best_w || (w == best_w && lo < best)) {
			best = lo;
			best_w = w;
		}
	}
	free(cand);
	return best;
}

/* Weight i of unit u (in its op's or group's order): its tensor (-1 for
 * an absent operand), -2 past the last; *state 0 when none of it is
 * loaded, 1 when some channels are, 2 when all are or it is not a weight
 * loaded whole; *at its local address. */
static int unit_weight(const struct gen *cg, const struct unit *u, int i, int *state,
		       int64_t *at)
{
	*state = 2;
	if (u->host)
		return -2;
	if (u->G) {
		int t = cg_group_weight(u->G, i, state);
		if (t < 0)
			return -2;
		*at = cg_group_weight_at(u->G, i);
		return t;
	}
	const struct ir_op *op = &cg->g->ops[u->first];
	if (i >= op->n_in || u->L.p.flat)
		return -2;
	const struct opnd *o = &u->L.od[i];
	if (o->t >= 0 && !o->sliced && !o->split && cg_is_weight(cg->g, o->t))
		*state = u->L.loaded[i] ? 2 : u->L.done[i] ? 1 : 0;
	*at = o->addr[0];
	return o->t;
}

/* Load (the rest of) unit u's weight i (tensor t), at local address at
 * when at >= 0 (it then reads it there), else where it is; the first
 * command waits for `wait`; within *b (NULL: all) as cg_load_whole. */
static int unit_load_weight(struct gen *cg, struct unit *u, int i, int t, int64_t at,
			    uint32_t wait, int64_t *b)
{
	if (u->G)
		return cg_group_load_weight(cg, u->G, i, at, wait, b);
	struct opnd *o = &u->L.od[i];
	int had = cg->n_dma;
	int r = cg_load_whole(cg, t, at >= 0 ? at : o->addr[0], &wait, b, NULL, &u->L.done[i]);
	if (at >= 0 && cg->n_dma > had)
		o->addr[0] = o->addr[1] = (uint32_t)at;
	u->L.loaded[i] = r == CG_LOADED;
	return r;
}

/* A program on cg's context left the plain schedule (codegen_departs): a
 * load into a group's freed bytes, or another layout timed faster. */
static void departed(const struct gen *cg)
{
	if (cg->cx)
		cg->cx->departs++;
}

long codegen_departs(struct codegen_ctx *cx, int reset)
{
	long n = cx->departs;
	if (reset)
		cx->departs = 0;
	return n;
}

/* The freed loader of struct prefetch (cg_prefetch_freed): the weights
 * not loaded yet of the next unit, then of the units after it up to
 * AHEAD on, that lie partly in the current unit's region, where all those
 * bytes are bytes of the current unit (weights, inputs, results kept
 * local) read for the last time by compute command `upto` or before, and,
 * for a unit after the next, the whole weight is clear of the regions of
 * the units between and of the weights held for them: each loads at its
 * own place once those bytes are free (and the units before are done
 * with them), in the units' order, within `budget` DMA cycles (the last
 * one in parts, as cg_load_whole).  A weight of a unit after the next is
 * held (struct held) until its unit runs, so that nothing loaded ahead
 * meanwhile takes its bytes. */
static int unit_freed(struct gen *cg, struct prefetch *pf, const struct freed *fr, int n,
		      uint32_t upto, int64_t budget)
{
	struct ahead *a = pf->u;
	if (a->i + 1 >= a->n || !n)
		return 0;
	for (int j = a->i + 1; j < a->n && j - a->i <= (a->far ? AHEAD : 1); j++) {
		struct unit *u = &a->un[j];
		for (int i = 0; !u->host; i++) {
			int state;
			int64_t lo = 0;
			int t = unit_weight(cg, u, i, &state, &lo);
			if (t == -2)
				break;
			if (state != 0)
				continue;
			int64_t hi = lo + cg_lane_bytes(cg, t, -1, -1);
			int64_t x = lo > pf->lo ? lo : pf->lo, end = hi < pf->hi ? hi : pf->hi;
			if (x >= end)
				continue;   /* outside the region: the ordinary prefetch's */
			if (j > a->i + 1 && !clear_of(a, lo, hi, a->i + 1, j - 1, -1))
				continue;   /* a unit between uses its bytes */
			/* the first span ending past x, then spans without a gap */
			int k0 = 0, k1 = n;
			while (k0 < k1) {
				int m = (k0 + k1) / 2;
				if (fr[m].hi <= x)
					k0 = m + 1;
				else
					k1 = m;
			}
			uint32_t w = 0;
			for (int k = k0; k < n && x < end && fr[k].lo <= x; k++) {
				if (fr[k].cmd > w)
					w = fr[k].cmd;
				x = fr[k].hi;
			}
			if (x < end || w > upto)
				continue;
			uint32_t rw = region_wait(a, a->i, lo, hi);
			int had = cg->n_dma;
			int r = unit_load_weight(cg, u, i, t, -1, rw > w ? rw : w, &budget);
			if (cg->n_dma > had)
				departed(cg);
			if (r < 0)
				return -1;
			if (j > a->i + 1 && cg->n_dma > had) {
				grow_array((void **)&a->h, &a->caph, a->nh + 1, sizeof *a->h);
				a->h[a->nh++] = (struct held){ lo, hi, a->i, j };
				a->far_done = 1;
			}
			if (r == CG_STOP || budget <= 0)
				return 0;
		}
	}
	return 0;
}

/* Load the weights not loaded yet of the units from `start` on, in order,
 * each where it fits beside what the units up to its own use
 * (held_place), within the DMA budget *b (a weight in parts when the
 * budget ends in it, the rest where its first part went); the first that
 * does not fit or exceed the budget stops it.  Their units then read them
 * there. */
static int load_ahead(struct gen *cg, struct ahead *a, int64_t *b, int start)
{
	/* past the units whose weights are in, once (a scan from each step
	 * would be quadratic in the units) */
	while (a->scan < a->n && unit_weights_in(cg, &a->un[a->scan]))
		a->scan++;
	if (start < a->scan)
		start = a->scan;
	for (int j = start; j < a->n && j - a->i <= FAR && *b > 0; j++) {
		struct unit *u = &a->un[j];
		for (int i = 0; !u->host; i++) {
			int state;
			int64_t at = -1, now;
			int t = unit_weight(cg, u, i, &state, &now);
			if (t == -2)
				break;
			if (state == 2)
				continue;
			if (state == 0 && i < u->nkeep && u->keep[i])
				return 0;   /* a later unit reads it where it is */
			int64_t size = cg_lane_bytes(cg, t, -1, -1);
			uint32_t wait = 0;
			if (state == 0) {
				if ((at = held_place(cg, a, size, a->i, j)) < 0)
					return 0;
				wait = region_wait(a, a->i, at, at + size);
			}
			int had = cg->n_dma;
			int r = unit_load_weight(cg, u, i, t, at, wait, b);
			if (r < 0)
				return -1;
			if (at >= 0 && cg->n_dma > had) {
				grow_array((void **)&a->h, &a->caph, a->nh + 1, sizeof *a->h);
				a->h[a->nh++] = (struct held){ at, at + size, a->i, j };
			}
			if (r != CG_LOADED)
				return 0;
		}
	}
	return 0;
}

/* Weight i of unit u when it is a weight loaded whole: its tensor, *at
 * its local address; -1 when it is not, -2 past the last. */
static int whole_weight(const struct gen *cg, const struct unit *u, int i, int64_t *at)
{
	int state;
	if (u->host)
		return -2;
	if (u->G) {
		int t = cg_group_weight(u->G, i, &state);
		*at = t >= 0 ? cg_group_weight_at(u->G, i) : 0;
		return t < 0 ? -2 : t;
	}
	const struct ir_op *op = &cg->g->ops[u->first];
	if (i >= op->n_in || u->L.p.flat)
		return -2;
	const struct opnd *o = &u->L.od[i];
	*at = o->addr[0];
	return o->t >= 0 && !o->sliced && !o->split && cg_is_weight(cg->g, o->t) ? o->t : -1;
}

/* Whether weights a and b hold the same values in the same layout. */
static int same_weight(const struct ir_graph *g, int a, int b)
{
	const struct ir_tensor *x = &g->tensors[a], *y = &g->tensors[b];
	if (a == b)
		return 1;
	if (x->dtype != y->dtype || x->rank != y->rank || x->scale != y->scale ||
	    x->zero_point != y->zero_point || !x->data || !y->data ||
	    memcmp(x->shape, y->shape, sizeof *x->shape * (size_t)x->rank))
		return 0;
	return !memcmp(x->data, y->data, tensor_bytes(x));
}

/* Whether local bytes [lo, hi) lie clear of what units from..to (of n)
 * use while they run (unit_lo, unit_hi); host units use none. */
static int units_clear(const struct unit *un, int n, int64_t lo, int64_t hi, int from, int to)
{
	for (int m = from; m <= to && m < n; m++)
		if (!un[m].host && unit_lo(&un[m]) < hi && lo < unit_hi(&un[m]))
			return 0;
	return 1;
}

static int kept_by_k(const void *a, const void *b)
{
	const struct kept *x = a, *y = b;
	return x->k != y->k ? (x->k > y->k) - (x->k < y->k) : (x->j > y->j) - (x->j < y->j);
}

/* Weights that a unit reads where an earlier unit, at most FAR before,
 * loads the same values (a detector's score threshold, one per class, all
 * equal), when no unit in between uses those bytes, nor the unit itself
 * and the one after it unless the unit lays that weight out there itself
 * (struct held's rule): the later unit loads nothing and reads them
 * there, and the earlier one loads its weight where it is laid out
 * (load_ahead moves it nowhere).
 * Returns the pairs (struct kept) by k, *n of them. */
static struct kept *kept_plan(const struct gen *cg, struct unit *un, int n_un, int *n)
{
	struct kept *kp = NULL;
	int nk = 0, cap = 0;
	for (int j = 0; j < n_un; j++) {
		int64_t at;
		for (int i = 0, t; (t = whole_weight(cg, &un[j], i, &at)) != -2; i++) {
			int state;
			if (t < 0 || (unit_weight(cg, &un[j], i, &state, &at), state != 0))
				continue;
			int64_t size = cg_lane_bytes(cg, t, -1, -1), lo = -1;
			int k = j - 1, i2 = -1;
			for (; k >= 0 && j - k <= FAR && i2 < 0; k--) {
				for (int q = 0, t2; i2 < 0 && (t2 = whole_weight(cg, &un[k], q, &lo)) != -2; q++)
					if (t2 >= 0 && same_weight(cg->g, t, t2))
						i2 = q;
				if (i2 >= 0)
					break;
			}
			if (i2 < 0)
				continue;
			/* clear of the units between, and of this one and the
			 * next but where it lays the weight out itself (the same
			 * bytes): the next one's inputs load into its region
			 * while this one runs, clear only of this one's */
			if (!units_clear(un, n_un, lo, lo + size, k + 1, j - 1) ||
			    (lo != at && !units_clear(un, n_un, lo, lo + size, j, j + 1)))
				continue;
			if (un[j].G)
				cg_group_weight_kept(un[j].G, i, lo);
			else {
				un[j].L.od[i].addr[0] = un[j].L.od[i].addr[1] = (uint32_t)lo;
				un[j].L.loaded[i] = 1;
			}
			if (i2 >= un[k].nkeep) {
				int old = un[k].nkeep;
				grow_array((void **)&un[k].keep, &un[k].nkeep, i2 + 1, 1);
				memset(un[k].keep + old, 0, (size_t)(un[k].nkeep - old));
			}
			un[k].keep[i2] = 1;
			grow_array((void **)&kp, &cap, nk + 1, sizeof *kp);
			kp[nk++] = (struct kept){ k, j, lo, lo + size };
		}
	}
	if (nk)
		qsort(kp, (size_t)nk, sizeof *kp, kept_by_k);
	*n = nk;
	return kp;
}

/* Plan unit u (ops [first, first + n)): its cut and bytes per lane. */
static int unit_plan(struct gen *cg, struct unit *u, int first, int n)
{
	u->first = first;
	u->n_ops = n;
	if (cg->g->ops[first].place == PLACE_HOST) {
		u->host = 1;     /* no local memory: need 0 */
		return 0;
	}
	if (n > 1) {
		int64_t cy;
		if (!(u->G = cg_group_new(cg, first, n)))
			return -1;
		int rc = cg_group_choose(cg, u->G, &cy);
		if (rc < 0)
			return rc;
		u->need = cg_group_need(u->G);
	} else {
		if (cg_op_check(cg->g, first) < 0)
			return -1;
		int rc = cg_op_plan(cg, first, &u->p, NULL);
		if (rc < 0)
			return rc;
		u->need = u->p.need;
	}
	return 0;
}

/* Lay unit u out at its base (mirrored when high, see cg_place). */
static void unit_place(struct gen *cg, struct unit *u, int high)
{
	if (u->host)
		return;
	if (u->G)
		cg_group_lay_out(cg, u->G, u->base, high, u->acts_first);
	else
		cg_op_lay_out(cg, u->first, &u->p, u->base, high, &u->L);
}


/* The base of unit j: the bottom or the top of local memory, whichever
 * stays clear of more units right before it, so that its inputs can load
 * while they compute; ties go to the end opposite the one before's (the
 * bottom for even j).  The middle stays for weights held ahead
 * (load_ahead). */
static int64_t unit_base(const struct gen *cg, const struct unit *un, int j)
{
	int64_t lmem = cg->c->lmem_bytes, need = un[j].need;
	int64_t top = (lmem - need) / LMEM_ALIGN * LMEM_ALIGN;
	int64_t cand[2] = { j % 2 ? top : 0, j % 2 ? 0 : top }, best = cand[0];
	int best_l = -1;
	for (int i = 0; i < 2; i++) {
		int64_t b = cand[i];
		if (b < 0 || b + need > lmem)
			continue;
		int l = 0;
		for (int k = j - 1; k >= 0 && k >= j - AHEAD; k--, l++)
			if (b < un[k].base + un[k].need && un[k].base < b + need)
				break;
		if (l > best_l) {
			best_l = l;
			best = b;
		}
	}
	return best;
}

/* The rows loader of struct prefetch (cg_prefetch_rows): the next unit,
 * a local group, reads t whole. */
static int unit_rows(struct gen *cg, struct prefetch *pf, int t, int rows, int64_t budget)
{
	struct ahead *a = pf->u;
	struct unit *u = &a->un[a->i + 1];
	if (!u->G)
		return 0;
	uint32_t wait = u->started ? 0 : pf->wait;
	int64_t avoid[2] = { pf->lo, pf->hi };
	int r = cg_group_load_rows(cg, u->G, t, rows, &wait, budget, avoid);
	if (r > 0) {
		u->started = 1;
		pf->wait = 0;
		a->rows++;
	}
	return r < 0 ? -1 : 0;
}

/* Every layer group in order.  Consecutive units take their regions from
 * opposite ends of local memory; the second's weights that lie outside the
 * first's region are loaded while the first computes, and in the first's
 * last slice those over its weights read for the last time (unit_freed).
 * acts_first lays every local group out with its activations at its
 * base's end (cg_group_lay_out); `freed` 0: no weights load where a
 * group's bytes died, 1: the next unit's, 2: those of the units after it
 * too; with `rows`, the rows a sliced group has stored of a result the
 * next group reads whole load into that group's copy while the later
 * slices compute (unit_rows), *rows getting how many loads did;
 * *overlaps gets 1 when either layout choice can matter (the regions of
 * two neighbours, one a local group, overlap), plus 2 when weights of a
 * unit after the next loaded where a group's bytes died.  With
 * cg->keepw, weights kept (kept_plan), or 1 with nothing generated when
 * none is.  -2 when a group does not fit local memory, -1 on other
 * errors. */
static int gen_all(struct gen *cg, const struct lg_group *grp, int n_grp, int acts_first,
		   int freed, int *rows, int *overlaps)
{
	struct unit *un = xcalloc((size_t)n_grp + 1, sizeof *un);
	struct ahead ah = { un, 0, 0, n_grp, NULL, 0, 0, 0, 0, freed > 1, 0, 0 };
	struct kept *kp = NULL;
	int rc = -1;
	for (int i = 0; i < n_grp; i++) {
		int n = grp[i].place == PLACE_LOCAL ? grp[i].n_ops : 1;
		if (n == 1 && grp[i].n_ops > 1) {
			err_set("layer group %d: more than one op in global memory", i);
			goto out;
		}
		int prc = unit_plan(cg, &un[i], grp[i].first, n);
		if (prc < 0) {
			rc = prc;
			goto out;
		}
		un[i].base = unit_base(cg, un, i);
	}
	*overlaps = 0;
	for (int i = 0; i < n_grp; i++) {
		un[i].acts_first = acts_first && un[i].G;
		unit_place(cg, &un[i], i % 2);
		if (i && (un[i].G || un[i - 1].G) && overlap(&un[i - 1], &un[i]))
			*overlaps = 1;
	}
	/* with cg->keep, a group's result that the next group reads whole is
	 * read where it lies (cg_group_hand_over) */
	for (int i = 0; cg->keep && i + 1 < n_grp; i++)
		if (un[i].G && un[i + 1].G &&
		    cg_group_hand_over(cg, un[i].G, un[i + 1].G, un[i + 1].base, &un[i + 1].xlo,
				       &un[i + 1].xhi))
			cg->kept++;
	int nk = 0, kq = 0;
	if (cg->keepw && !(kp = kept_plan(cg, un, n_grp, &nk))) {
		rc = 1;    /* nothing kept: the program without */
		goto out;
	}
	for (int i = 0; i < n_grp; i++) {
		struct unit *u = &un[i];
		struct prefetch pf = { 0 };
		ah.i = i;
		ah.last = i + 1;
		held_prune(&ah, i - 1);
		/* the weights kept from this unit on: nothing loads over them */
		for (; kq < nk && kp[kq].k == i; kq++) {
			grow_array((void **)&ah.h, &ah.caph, ah.nh + 1, sizeof *ah.h);
			ah.h[ah.nh++] = (struct held){ kp[kq].lo, kp[kq].hi, i, kp[kq].j };
		}
		/* Units after the next whose regions no unit from i on uses, nor
		 * a weight held for another. */
		while (ah.last + 1 < n_grp && ah.last + 1 - i <= AHEAD) {
			const struct unit *v = &un[ah.last + 1];
			int clear = clear_of(&ah, v->base, v->base + v->need, i, -1, ah.last + 1);
			for (int k = i; k <= ah.last && clear; k++)
				clear = !overlap(&un[k], v);
			if (!clear)
				break;
			ah.last++;
		}
		if (i + 1 < n_grp) {
			pf.u = &ah;
			pf.load = unit_prefetch;
			pf.freed = freed ? unit_freed : NULL;
			pf.rows = rows ? unit_rows : NULL;
			pf.wait = region_wait(&ah, i, un[i + 1].base, un[i + 1].base + un[i + 1].need);
			pf.only_before = u->first;
			pf.lo = unit_lo(u);
			pf.hi = unit_hi(u);
		}
		uint32_t wait = region_wait(&ah, i, u->base, u->base + u->need);
		if (u->host) {
			/* after every transfer so far (the stores of its inputs);
			 * the next transfer waits for it */
			struct isa_cmp *k = cg_new_cmp(cg, u->first, (uint32_t)cg->n_dma);
			k->n_in = k->n_out = 0;
			u->last_cmp = cg->host_wait = k->id;
		} else if (u->G) {
			if (cg_group_gen(cg, u->G, wait, &pf, &u->last_cmp) < 0)
				goto out;
		} else {
			if (cg_op_gen(cg, &u->L, wait, &pf) < 0)
				goto out;
			u->last_cmp = u->L.last_cmp;
		}
		u->upto_cmp = i && un[i - 1].upto_cmp > u->last_cmp ? un[i - 1].upto_cmp : u->last_cmp;
	}
	*overlaps |= ah.far_done << 1;
	rc = 0;
out:
	for (int i = 0; i < n_grp; i++) {
		cg_group_free(un[i].G);
		free(un[i].keep);
	}
	free(kp);
	if (rows)
		*rows = ah.rows;
	free(ah.h);
	free(un);
	return rc;
}

struct codegen_ctx *codegen_ctx_new(const struct ir_graph *g, const struct chip *c)
{
	struct codegen_ctx *cx = xcalloc(1, sizeof *cx);
	cx->g = g;
	cx->c = c;
	cg_ctx_init(cx);
	cg_group_ctx_init(cx);
	return cx;
}

void codegen_ctx_free(struct codegen_ctx *cx)
{
	if (!cx)
		return;
	cg_ctx_fini(cx);
	cg_group_ctx_fini(cx);
	free(cx);
}

int codegen_op_fits(const struct ir_graph *g, const struct chip *c, int i)
{
	struct gen cg = { .g = g, .c = c, .estimate = 1 };
	if (g->ops[i].place == PLACE_HOST)
		return 1;
	if (cg_op_check(g, i) < 0)
		return -1;
	int rc = cg_op_plan(&cg, i, NULL, NULL);
	return rc == -2 ? 0 : rc < 0 ? -1 : 1;
}

int64_t codegen_group_cycles(struct codegen_ctx *cx, int first, int n)
{
	const struct ir_graph *g = cx->g;
	struct gen cg = { .g = g, .c = cx->c, .cx = cx, .estimate = 1 };
	int64_t cy = -1;
	if (n == 1 && g->ops[first].place == PLACE_HOST)
		return 0;
	if (n == 1) {
		struct plan p;
		if (cg_op_check(g, first) < 0 || cg_op_plan(&cg, first, &p, &cy) < 0)
			return -1;
		return cy;
	}
	struct group *G = cg_group_new(&cg, first, n);
	int rc = G ? cg_group_choose(&cg, G, &cy) : -1;
	cg_group_free(G);
	return rc < 0 ? rc : cy;
}

/* The program of the runs grp[0..n_grp) in *cg, the fastest by the cost
 * model of: the local groups laid out with their weights first, the
 * weights of the next units loading where a group's bytes died (gen_all's
 * freed); when neighbouring regions overlap (else the three are the
 * same), the activations first so and the weights first without those
 * loads (a group's last slice then keeps the DMA engine for its stores
 * and the next unit's first loads); when a unit after the next had
 * weights loaded so, the same with the next unit's alone (the DMA engine
 * runs its commands in order: a load for a later unit may hold up the
 * next one's).  In codegen itself, where some group's slice count was not
 * its fastest, each of those again with every group at its fastest count
 * (gen's fastest), and where a slice followed a slice that prefetched,
 * with the slices' prefetch budgets not charged for that prefetch (gen's
 * credit), and both.  Ties go to the earlier.  Between
 * codegen_plain_schedule(1) and (0), the third only.  Then, unless
 * estimating for layergroup, the fastest with gen_all's early row loads,
 * kept when faster and some rows loaded early, then that with results
 * handed over in local memory (gen's keep), kept when faster and some
 * were.  *cycles gets its time.  As gen_all returns. */
static int gen_variants(struct gen *cg, const struct lg_group *grp, int n_grp, int64_t *cycles)
{
	struct gen init = *cg;
	int plain_only = cg->cx && cg->cx->plain;
	/* per variant: gen_all's freed (the layout: activations first for 1) */
	static const int freed[] = { 2, 2, 0, 1 };
	int differ;
	int rc = gen_all(cg, grp, n_grp, 0, plain_only ? 0 : freed[0], NULL, &differ);
	int best = 0, best_m = 0;
	if (rc < 0)
		return rc;
	*cycles = cost_time(cg->c, cg->g, cg->dma, cg->n_dma, cg->cmp, cg->n_cmp);
	long heads = cg->heads;   /* in every variant tried */
	/* v 1, 2: the other layouts; v 3: the next unit's weights alone into
	 * dead bytes; each again (from v 0), in the program itself (not
	 * layergroup's estimates), with every group at its fastest slice count
	 * where some group's count was chosen for its smaller need of local
	 * memory (m & 1), and with the slices' prefetch budgets not charged for
	 * the slice before's prefetch (m & 2) */
	int fast_too = !cg->estimate && !plain_only && cg->slacked;
	int credit_too = !cg->estimate && !plain_only && cg->credits;
	for (int m = 0; m < 4; m++) {
		if (((m & 1) && !fast_too) || ((m & 2) && !credit_too))
			continue;
		for (int v = m ? 0 : 1; v <= 3; v++) {
			if (v && (plain_only || !(differ & (v < 3 ? 1 : 2))))
				continue;
			struct gen alt = init;
			alt.fastest = m & 1;
			alt.credit = (m & 2) != 0;
			int ov;
			if (gen_all(&alt, grp, n_grp, v == 1, plain_only ? 0 : freed[v], NULL,
				    v ? &ov : &differ) < 0) {
				cg_free(&alt);
				return -1;
			}
			int64_t cy = cost_time(alt.c, alt.g, alt.dma, alt.n_dma, alt.cmp, alt.n_cmp);
			heads += alt.heads;
			if (cy < *cycles) {
				cg_free(cg);
				*cg = alt;
				*cycles = cy;
				departed(cg);
				best = v;
				best_m = m;
			} else {
				cg_free(&alt);
			}
		}
	}
	/* not when layergroup estimates (its runs timed in pairs do not see
	 * what a result kept for the next group costs the units after it):
	 * the fastest with the rows the next unit reads whole loading as they
	 * are stored, then that with the results the next group reads whole
	 * read where they lie in local memory (gen's keep), then that with
	 * the weights an earlier unit loaded with the same values read where
	 * they lie (gen's keepw; gen_all returns 1 when there are none), each
	 * kept when faster */
	int with_rows = 0, with_keep = 0;
	for (int keep = 0; keep < 3 && !cg->estimate; keep++) {
		struct gen alt = init;
		alt.fastest = best_m & 1;
		alt.credit = (best_m & 2) != 0;
		alt.keep = keep == 1 || (keep == 2 && with_keep);
		alt.keepw = keep == 2;
		int ov, rows = 0;
		int r = gen_all(&alt, grp, n_grp, best == 1, plain_only ? 0 : freed[best],
				keep && !with_rows ? NULL : &rows, &ov);
		if (r != 0) {
			cg_free(&alt);
			if (r < 0)
				return -1;
			continue;
		}
		int64_t cy = cost_time(alt.c, alt.g, alt.dma, alt.n_dma, alt.cmp, alt.n_cmp);
		if (cy < *cycles && (keep == 2 || (keep ? alt.kept > 0 : rows > 0))) {
			cg_free(cg);
			*cg = alt;
			*cycles = cy;
			with_rows |= !keep;
			with_keep |= keep == 1;
		} else {
			cg_free(&alt);
		}
	}
	cg->heads = heads;
	return 0;
}

/* The fastest of gen_variants' programs, in code generation (not
 * layergroup's estimates, whose grouping stays as without) with the heads
 * of whole groups in row pieces (codegen_head.c) and, when some group's was,
 * without: the pieces time only the head's own load and computes, not the
 * loads they delay. */
static int gen_best(struct gen *cg, const struct lg_group *grp, int n_grp, int64_t *cycles)
{
	struct gen init = *cg;
	cg->head = !cg->estimate;
	int rc = gen_variants(cg, grp, n_grp, cycles);
	if (rc < 0 || !cg->heads)
		return rc;
	struct gen alt = init;
	int64_t cy;
	rc = gen_variants(&alt, grp, n_grp, &cy);
	if (rc < 0) {
		cg_free(&alt);
		return rc;
	}
	if (cy < *cycles) {
		cg_free(cg);
		*cg = alt;
		*cycles = cy;
	} else {
		cg_free(&alt);
	}
	return 0;
}

void codegen_plain_schedule(struct codegen_ctx *cx, int on)
{
	cx->plain = on;
}

int64_t codegen_runs_cycles(struct codegen_ctx *cx, const struct lg_group *grp, int n_grp)
{
	struct gen cg = { .g = cx->g, .c = cx->c, .cx = cx, .estimate = 1 };
	int64_t cy;
	int rc = gen_best(&cg, grp, n_grp, &cy);
	cg_free(&cg);
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
		if ((local[i] || t->dyn) && t->addr < 0)
			continue;   /* local memory only; a dynamic tensor: the host's memory */
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
	struct codegen_ctx *cx = codegen_ctx_new(g, c);
	struct gen cg = { .g = g, .c = c, .cx = cx };
	cg_ctx_forward(cx);
	int64_t cycles;
	int rc = gen_best(&cg, grp, n_grp, &cycles);
	codegen_ctx_free(cx);
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
