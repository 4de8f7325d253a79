/* codegen_head.c - a local group run whole loads its input in pieces of
 * rows, and its first ops, a chain of sliceable ops, compute each piece's
 * rows as it arrives (back/codegen_head.h): which ops, how many pieces,
 * the steps in order and their cost; the group's code generation
 * (codegen_group.c) emits them.
 */
#include <stdlib.h>
#include <string.h>

#include "ir/base.h"
#include "back/codegen_head.h"
#include "ir/op.h"
#include "chip/cost.h"

/* The head of a whole group in row pieces: ops first .. first + m - 1, a
 * chain whose op k + 1 reads op k's result as its only activation (input
 * 0), each sliceable along H, the first reading a group input x that is
 * not loaded yet (N = 1, held whole).  Their tensors stay whole in local
 * memory; x loads in n pieces of rows and each op computes its rows not
 * computed yet that the rows ready so far give, so that the computes of
 * one piece run under the load of the next.  Returns m, 0 when G has no
 * such head; *xj gets x's index in gt.  With laid 0, before G is laid
 * out: the chain its ops would make, its bytes and x's state unseen. */
int cg_head_chain(const struct gen *cg, const struct group *G, int *xj, int laid)
{
	const struct ir_graph *g = cg->g;
	if (!G->whole || (laid && G->n_slices != 1))
		return 0;
	int m = 0;
	for (int k = G->first; k < G->first + G->n_ops - 1; k++) {
		const struct ir_op *op = &g->ops[k];
		if (!cg_sliceable(g, op) || op->n_out != 1 || isa_slice_axis(g, op, 0) != 2 ||
		    G->inplace[k - G->first])
			break;
		int act = 0;
		for (int i = 1; i < op->n_in; i++)
			act += op->in[i] >= 0 && !cg_is_weight(g, op->in[i]);
		const struct gten *x = &G->gt[opnd_ix(G, k, 0)], *y = &G->gt[opnd_ix(G, k, op->n_in)];
		if (act || y->role != GT_MID || y->alias >= 0 || g->tensors[y->t].shape[0] != 1)
			break;
		if (k == G->first) {
			int64_t s[4];
			cg_lane_shape(g, x->t, s);
			if (x->role != GT_BCAST || (laid && G->loaded[G->nw + opnd_ix(G, k, 0)]) ||
			    s[0] != 1 || s[2] != g->tensors[x->t].shape[2])
				return 0;
			*xj = opnd_ix(G, k, 0);
		} else if (op->in[0] != g->ops[k - 1].out[0]) {
			break;
		}
		/* The pieces interleave the chain's ops, so that the bytes the
		 * plan lets a result share with a tensor read before it
		 * (codegen_group.c's mid_pack) may still be read: its bytes must be its own. */
		int64_t lo = y->addr[0], hi = lo + cg_lane_bytes(cg, y->t, -1, -1);
		int clash = 0;
		if (!laid) {
			m++;
			continue;
		}
		for (int i = 0; i <= m && !clash; i++) {
			const struct gten *z = i < m ? &G->gt[opnd_ix(G, G->first + i, g->ops[G->first + i].n_in)]
						     : &G->gt[*xj];
			int64_t zlo = z->addr[0], zhi = zlo + cg_lane_bytes(cg, z->t, -1, -1);
			clash = lo < zhi && zlo < hi;
		}
		if (clash)
			break;
		m++;
	}
	return m;
}

/* The rows of each of the chain's m results that piece p of n needs
 * (need[i], op first + i), and the input rows *xin. */
static void head_rows(const struct gen *cg, const struct group *G, int m, int p, int n,
		      int *need, int *xin)
{
	const struct ir_graph *g = cg->g;
	int H = (int)g->tensors[g->ops[G->first + m - 1].out[0]].shape[2];
	need[m - 1] = (int)((int64_t)H * (p + 1) / n);
	for (int i = m - 1; i >= 0; i--) {
		const struct ir_op *op = &g->ops[G->first + i];
		int a, e, h = (int)g->tensors[op->in[0]].shape[2];
		cg_in_rows(cg, op, 0, need[i], &a, &e);
		e = e > h || p == n - 1 ? h : e;
		if (i > 0)
			need[i - 1] = e;
		else
			*xin = e;
	}
}

int cg_head_plan(const struct gen *cg, const struct group *G, int m, int xj, int n,
		 struct head_step **steps)
{
	const struct ir_graph *g = cg->g;
	int *need = xcalloc((size_t)m + 1, sizeof *need), *done = xcalloc((size_t)m + 1, sizeof *done);
	struct head_step *st = xmalloc(sizeof *st * ((size_t)n * ((size_t)m + 2) + 1));
	int ns = 0, xdone = G->gt[xj].ahead;
	for (int p = 0; p < n; p++) {
		int xin = 0;
		head_rows(cg, G, m, p, n, need, &xin);
		if (xin > xdone) {
			st[ns++] = (struct head_step){ HEAD_LOAD, xdone, xin, 0, 0 };
			xdone = xin;
		}
		if (p == 0)
			st[ns++] = (struct head_step){ HEAD_WEIGHTS, 0, 0, 0, 0 };
		for (int i = 0; i < m; i++) {
			const struct ir_op *op = &g->ops[G->first + i];
			if (need[i] <= done[i])
				continue;
			int a, e, h = (int)g->tensors[op->in[0]].shape[2];
			cg_in_rows(cg, op, done[i], need[i], &a, &e);
			st[ns++] = (struct head_step){ G->first + i, done[i], need[i], a, e > h ? h : e };
			done[i] = need[i];
		}
	}
	FREE_ALL(need, done);
	*steps = st;
	return ns;
}

void cg_head_cmd(const struct gen *cg, const struct group *G, const struct head_step *st,
		 struct isa_cmp *c)
{
	const struct ir_graph *g = cg->g;
	const struct ir_op *op = &g->ops[st->op];
	c->out_row0 = st->r0;
	c->out_rows = st->r1 - st->r0;
	c->in_row0 = st->a;
	c->in_rows = st->e - st->a;
	for (int j = 0; j < op->n_in + op->n_out; j++) {
		int t = j < op->n_in ? op->in[j] : op->out[j - op->n_in];
		if (t < 0)
			continue;
		if (cg_is_weight(g, t)) {
			c->addr[j] = G->waddr[opnd_ix(G, st->op, j)];
			continue;
		}
		c->addr[j] = G->gt[opnd_ix(G, st->op, j)].addr[0];
		c->sliced |= 1u << j;
		c->row0[j] = 0;
		c->rows[j] = (int)g->tensors[t].shape[2];
	}
}

/* Cycles from the head's first load to its last compute in n pieces, as
 * the two engines run the steps. */
static int64_t head_time(const struct gen *cg, const struct group *G, int m, int xj, int n)
{
	const struct ir_graph *g = cg->g;
	const struct gten *x = &G->gt[xj];
	int64_t s[4];
	cg_lane_shape(g, x->t, s);
	int64_t row = s[1] * s[3] * (int64_t)dtype_size(g->tensors[x->t].dtype);
	int64_t slots = (s[1] + cg->c->lanes - 1) / cg->c->lanes, dma_t = 0, cmp_t = 0;
	struct head_step *st;
	int ns = cg_head_plan(cg, G, m, xj, n, &st);
	for (int i = 0; i < ns; i++) {
		if (st[i].op == HEAD_LOAD) {
			dma_t += slots * cost_dma(cg->c, (st[i].r1 - st[i].r0) * row / slots);
		} else if (st[i].op == HEAD_WEIGHTS) {
			for (int w = 0; w < G->nw; w++)
				if (!G->loaded[w] && G->wfirst[w] < G->first + m)
					dma_t += cg_load_cycles(cg, G->wt[w]);
		} else {
			struct isa_cmp c;
			memset(&c, 0, sizeof c);
			c.layer = (uint32_t)st[i].op;
			cg_head_cmd(cg, G, &st[i], &c);
			cmp_t = (cmp_t > dma_t ? cmp_t : dma_t) + cost_cmp_cycles(cg->c, g, &c);
		}
	}
	free(st);
	return cmp_t;
}

void cg_head_choose(const struct gen *cg, const struct group *G, int *m, int xj, int *n)
{
	int bm = *m > HEAD_MAX_OPS ? HEAD_MAX_OPS : *m;
	int64_t best_gain = 0;
	*n = 1;
	for (int k = 1; k <= bm; k++) {
		int64_t one = head_time(cg, G, k, xj, 1);
		int H = (int)cg->g->tensors[cg->g->ops[G->first + k - 1].out[0]].shape[2];
		for (int p = 2; p <= HEAD_MAX_PIECES && p <= H; p++) {
			int64_t cy = head_time(cg, G, k, xj, p);
			if (one - cy > best_gain) {
				best_gain = one - cy;
				*n = p;
				*m = k;
			}
		}
	}
}
