/* codegen_group.c - code generation for local layer groups
 * (back/codegen_group.h): ops [first, first + n_ops) run slice by slice along H
 * of the last op's output; per slice, the rows each tensor needs are found
 * backwards with the ops' slicing rules, the group's inputs are loaded at
 * those rows, every op computes its rows from local memory (halo rows are
 * computed again by the neighbouring slice), and the last op's rows are
 * stored, with the rows of other results read after the group.  Weights
 * stay in local memory for the whole group.
 */
#include <stdlib.h>
#include <string.h>

#include "ir/base.h"
#include "back/addr.h"
#include "back/codegen_group.h"
#include "back/codegen_gten.h"
#include "back/codegen_head.h"
#include "ir/op.h"
#include "chip/cost.h"

#ifndef LG_SLACK_PCT
#define LG_SLACK_PCT 3
#endif

void cg_group_free(struct group *G)
{
	if (!G)
		return;
	free(G->rnext);
	for (int j = 0; j < G->nt; j++)
		free(G->gt[j].cover);
	FREE_ALL(G->gt, G->wt, G->wfirst, G->waddr, G->loaded, G->wdone, G->ix, G->inplace, G);
}

/* Whether tensor T is read by an op from FROM on or is a graph output. */
static int used_from(const struct gen *cg, int t, int from)
{
	const struct ir_graph *g = cg->g;
	if (cg->cx)
		return cg->cx->last_use[t] >= from;
	for (int o = 0; o < g->n_outputs; o++)
		if (g->outputs[o] == t)
			return 1;
	for (int k = from; k < g->n_ops; k++)
		for (int i = 0; i < g->ops[k].n_in; i++)
			if (g->ops[k].in[i] == t)
				return 1;
	return 0;
}

/* The group of ops [first, first + n), or NULL with a message when they
 * cannot form one: ops with chip kernels and operands that fit a command,
 * one result for the last, no tensor read both sliced and whole.  Results
 * read after the group or graph outputs are stored as well (GT_MIDOUT). */
/* The entry of tensor t in a group's index (open addressing, cap a power
 * of two): t -1 when free; ix the index in gt, or -2 - index in wt. */
struct tix {
	int t, ix;
};

static struct tix *tix_slot(struct tix *tab, int cap, int t)
{
	unsigned h = (unsigned)t * 2654435761u;
	for (unsigned i = (h >> 7) & (unsigned)(cap - 1);; i = (i + 1) & (unsigned)(cap - 1))
		if (tab[i].t < 0 || tab[i].t == t)
			return &tab[i];
}

struct group *cg_group_new(const struct gen *cg, int first, int n)
{
	const struct ir_graph *g = cg->g;
	struct group *G = xcalloc(1, sizeof *G);
	G->first = first;
	G->n_ops = n;
	int cap = 0, wcap = 0, fcap = 0, tcap = 64;
	while (tcap < 4 * n * ISA_MAX_OPERANDS)
		tcap *= 2;
	struct tix *tab = xmalloc(sizeof *tab * (size_t)tcap);
	for (int i = 0; i < tcap; i++)
		tab[i].t = -1;
	G->ix = xmalloc(sizeof *G->ix * (size_t)n * ISA_MAX_OPERANDS);
	for (int k = first; k < first + n; k++) {
		const struct ir_op *op = &g->ops[k];
		/* an op of several results (Split) runs over whole tensors; a
		 * Transpose whose input rows run along axis 3 slices only when
		 * that input is loaded, written before the group */
		int ax = isa_slice_axis(g, op, 0);
		if (!cg_sliceable(g, op) || op->n_out != 1 ||
		    (ax != 2 && !(ax == 3 && cg_producer(cg, op->in[0]) < first)))
			G->whole = 1;
	}
	for (int k = first; k < first + n; k++) {
		const struct ir_op *op = &g->ops[k];
		int *ix = &G->ix[(size_t)(k - first) * ISA_MAX_OPERANDS];
		/* several results only before the last op: they stay local */
		if (!op_defs[op->type]->run_tpu || op->n_out < 1 ||
		    (op->n_out != 1 && k == first + n - 1) || op->n_in < 1 || op->in[0] < 0 ||
		    op->n_in + op->n_out > ISA_MAX_OPERANDS) {
			err_set("op '%s' (%s) cannot run in a local layer group", op->name,
				op_name(op->type));
			goto bad;
		}
		for (int i = 0; i < ISA_MAX_OPERANDS; i++)
			ix[i] = -1;
		for (int i = 0; i < op->n_in; i++) {
			int t = op->in[i];
			if (t < 0)
				continue;
			struct tix *e = tix_slot(tab, tcap, t);
			if (cg_is_weight(g, t)) {
				if (e->t < 0) {
					grow_array((void **)&G->wt, &wcap, G->nw + 1, sizeof *G->wt);
					grow_array((void **)&G->wfirst, &fcap, G->nw + 1, sizeof *G->wfirst);
					G->wfirst[G->nw] = k;
					*e = (struct tix){ t, -2 - G->nw };
					G->wt[G->nw++] = t;
				}
				ix[i] = -2 - e->ix;
				continue;
			}
			int sl = !G->whole && cg_input_sliced(g, op, i);
			int ax = sl ? isa_slice_axis(g, op, i) : 2;
			if (e->t >= 0) {
				struct gten *x = &G->gt[e->ix];
				if (!G->whole && (x->role == GT_BCAST) == sl) {
					err_set("tensor '%s' is read both sliced and whole in a layer group",
						g->tensors[t].name);
					goto bad;
				}
				if (sl && x->role == GT_IN && x->axis != ax) {
					err_set("tensor '%s' is read in rows of two axes in a layer group",
						g->tensors[t].name);
					goto bad;
				}
				if (x->role != GT_IN && x->role != GT_BCAST)
					x->p1 = k;   /* the last op of the group reading it */
				ix[i] = e->ix;
				continue;
			}
			grow_array((void **)&G->gt, &cap, G->nt + 1, sizeof *G->gt);
			memset(&G->gt[G->nt], 0, sizeof *G->gt);
			G->gt[G->nt].t = t;
			G->gt[G->nt].role = sl ? GT_IN : GT_BCAST;
			G->gt[G->nt].axis = ax;
			G->gt[G->nt].r0 = k;
			*e = (struct tix){ t, G->nt };
			ix[i] = G->nt++;
		}
		for (int o = 0; o < op->n_out; o++) {
			grow_array((void **)&G->gt, &cap, G->nt + 1, sizeof *G->gt);
			memset(&G->gt[G->nt], 0, sizeof *G->gt);
			G->gt[G->nt].t = op->out[o];
			G->gt[G->nt].p0 = G->gt[G->nt].p1 = k;
			G->gt[G->nt].role = k == first + n - 1 ? GT_OUT : GT_MID;
			*tix_slot(tab, tcap, op->out[o]) = (struct tix){ op->out[o], G->nt };
			ix[op->n_in + o] = G->nt++;
		}
	}
	free(tab);
	tab = NULL;
	/* Intermediate results read after the group are stored as well. */
	for (int j = 0; j < G->nt; j++)
		if (G->gt[j].role == GT_MID && used_from(cg, G->gt[j].t, first + n))
			G->gt[j].role = GT_MIDOUT;
	G->waddr = xcalloc((size_t)G->nw + 1, sizeof *G->waddr);
	G->loaded = xcalloc((size_t)(G->nw + G->nt) + 1, sizeof *G->loaded);
	G->wdone = xcalloc((size_t)G->nw + 1, sizeof *G->wdone);
	G->inplace = xcalloc((size_t)n + 1, sizeof *G->inplace);
	for (int j = 0; j < G->nt; j++)
		G->gt[j].alias = -1;
	return G;
bad:
	free(tab);
	cg_group_free(G);
	return NULL;
}

/* The first output row of slice s: s * rows, or head + (s - 1) * rows
 * after a short slice 0 of head rows. */
static int slice_start(const struct group *G, int s)
{
	return G->head && s > 0 ? G->head + (s - 1) * G->rows : s * G->rows;
}

/* Rows each activation holds in slice s (output rows from slice_start). */
static void group_rows(const struct gen *cg, struct group *G, int s)
{
	const struct ir_graph *g = cg->g;
	for (int j = 0; j < G->nt; j++) {
		G->gt[j].lo = 1 << 30;
		G->gt[j].hi = 0;
	}
	if (G->whole) {
		for (int j = 0; j < G->nt; j++) {
			int64_t ls[4];
			cg_lane_shape(g, G->gt[j].t, ls);
			G->gt[j].lo = 0;
			G->gt[j].hi = (int)ls[2];
		}
		return;
	}
	const struct ir_op *last = &g->ops[G->first + G->n_ops - 1];
	int oh = (int)g->tensors[last->out[0]].shape[2];
	struct gten *y = &G->gt[opnd_ix(G, G->first + G->n_ops - 1, last->n_in)];
	int rows = G->head && s == 0 ? G->head : G->rows;
	y->lo = slice_start(G, s);
	y->hi = y->lo + rows < oh ? y->lo + rows : oh;
	for (int k = G->first + G->n_ops - 1; k >= G->first; k--) {
		const struct ir_op *op = &g->ops[k];
		struct gten *o = &G->gt[opnd_ix(G, k, op->n_in)];
		if (o->cover && o->cover[s + 1] > o->cover[s]) {
			/* a stored intermediate: its share of the rows too */
			if (o->cover[s] < o->lo)
				o->lo = o->cover[s];
			if (o->cover[s + 1] > o->hi)
				o->hi = o->cover[s + 1];
		}
		if (o->hi <= o->lo)
			continue;
		int a, b;
		cg_in_rows(cg, op, o->lo, o->hi, &a, &b);
		for (int i = 0; i < op->n_in; i++) {
			int j = op->in[i] >= 0 && !cg_is_weight(g, op->in[i]) ? opnd_ix(G, k, i) : -1;
			if (j < 0 || G->gt[j].role == GT_BCAST || b <= a)
				continue;
			if (a < G->gt[j].lo)
				G->gt[j].lo = a;
			if (b > G->gt[j].hi)
				G->gt[j].hi = b;
		}
	}
	for (int j = 0; j < G->nt; j++)
		if (G->gt[j].hi <= G->gt[j].lo)
			G->gt[j].lo = G->gt[j].hi = 0;
}

/* The outermost Concat result holding gt[j] (group_alias), j if none;
 * *off gets gt[j]'s bytes from its start. */
static int gt_root(const struct group *G, int j, int64_t *off)
{
	*off = 0;
	for (; G->gt[j].alias >= 0; j = G->gt[j].alias)
		*off += G->gt[j].aoff;
	return j;
}

/* Whether Concat op k of G may hold inputs in its result: a copy
 * (isa_is_copy) along the channels of a rank-4 result of up to 65535
 * channels that is an intermediate of the group. */
static int alias_candidate(const struct gen *cg, const struct group *G, int k)
{
	const struct ir_graph *g = cg->g;
	const struct ir_op *op = &g->ops[k];
	if (op->type != OP_CONCAT || !isa_is_copy(g, op))
		return 0;
	const struct ir_tensor *y = &g->tensors[op->out[0]];
	int64_t ax = op_int(op, "axis", 1);
	return y->rank == 4 && (ax == 1 || ax == -3) && y->shape[1] < 1 << 16 &&
	       G->gt[opnd_ix(G, k, op->n_in)].role == GT_MID;
}

/* Concats of G whose inputs are written in place inside their result, at
 * their channel slot: each input an intermediate of the group starting on
 * a whole channel slot (a multiple of lanes), held by no other Concat and
 * holding the result's rows in every slice, where the result holds the
 * same rows in every slice (the channel slot stride is N x H rows).  The
 * Concat's command then writes only the slots of the other inputs, and
 * none when there are none.  Per slice s, lo[s * nt + j] and hi[...] are
 * the rows gt[j] holds (group_plan). */
static void group_alias(const struct gen *cg, struct group *G, const int *lo, const int *hi)
{
	const struct ir_graph *g = cg->g;
	int n = G->n_slices, nt = G->nt, lanes = cg->c->lanes;
	for (int k = G->first + G->n_ops - 1; k >= G->first; k--) {
		const struct ir_op *op = &g->ops[k];
		if (!alias_candidate(cg, G, k))
			continue;
		int yj = opnd_ix(G, k, op->n_in), same = 1;
		for (int s = 0; s < n && same; s++)
			same = hi[s * nt + yj] - lo[s * nt + yj] == G->gt[yj].maxrows;
		if (!same)
			continue;
		int64_t ls[4], c0 = 0, cmin = g->tensors[op->out[0]].shape[1], cmax = 0;
		cg_lane_shape(g, op->out[0], ls);
		int64_t slot = ls[0] * G->gt[yj].maxrows *
			       isa_pitch(cg->c, g->tensors[op->out[0]].dtype, ls[3]);
		int held = 0;
		for (int i = 0; i < op->n_in; i++) {
			int j = opnd_ix(G, k, i), ok = j >= 0 && G->gt[j].role == GT_MID &&
						       G->gt[j].alias < 0 && c0 % lanes == 0;
			for (int i2 = 0; i2 < i && ok; i2++)
				ok = op->in[i2] != op->in[i];
			for (int s = 0; s < n && ok; s++)
				ok = lo[s * nt + j] == lo[s * nt + yj] && hi[s * nt + j] == hi[s * nt + yj];
			int64_t c = g->tensors[op->in[i]].shape[1];
			if (ok) {
				G->gt[j].alias = yj;
				G->gt[j].aoff = c0 / lanes * slot;
				held++;
			} else {
				cmin = c0 < cmin ? c0 : cmin;
				cmax = c0 + c > cmax ? c0 + c : cmax;
			}
			c0 += c;
		}
		if (!held)
			continue;
		/* the other inputs' slots, whole */
		cmin = cmin / lanes * lanes;
		cmax = (cmax + lanes - 1) / lanes * lanes;
		if (cmax > c0)
			cmax = c0;
		if (cmax <= cmin)
			cmin = cmax = 0;
		G->inplace[k - G->first] = 1 + cmin + (cmax << 16);
	}
}

/* Offsets of G's intermediates in one region, by lifetime: two share
 * bytes only when one is last read before the other is written (the ops
 * of a slice run in order on the compute engine, and no DMA command
 * touches them); the results of G's first m ops live until the last of
 * them.  Returns the region's bytes. */
static int64_t mid_pack_live(const struct gen *cg, struct group *G, int m)
{
	int64_t total = 0;
	/* an intermediate held in a Concat's result (group_alias) lives in
	 * its outermost holder, which lives as long as all it holds */
	int *lo = xmalloc(sizeof *lo * ((size_t)G->nt + 1)), *hi = xmalloc(sizeof *hi * ((size_t)G->nt + 1));
	for (int j = 0; j < G->nt; j++) {
		lo[j] = G->gt[j].p0;
		hi[j] = G->gt[j].p1;
	}
	for (int j = 0; j < G->nt; j++) {
		int64_t o;
		int r = gt_root(G, j, &o);
		lo[r] = lo[r] < G->gt[j].p0 ? lo[r] : G->gt[j].p0;
		hi[r] = hi[r] > G->gt[j].p1 ? hi[r] : G->gt[j].p1;
	}
	for (int j = 0; j < G->nt; j++)
		if (G->gt[j].p0 < G->first + m && hi[j] < G->first + m - 1)
			hi[j] = G->first + m - 1;
	for (int j = 0; j < G->nt; j++) {
		struct gten *x = &G->gt[j];
		if (x->role != GT_MID || x->alias >= 0)
			continue;
		x->size = cg_lane_bytes(cg, x->t, x->maxrows, -1);
		/* the lowest offset clear of every intermediate live with it */
		int64_t off = 0;
		for (int again = 1; again;) {
			again = 0;
			for (int i = 0; i < j; i++) {
				const struct gten *y = &G->gt[i];
				if (y->role != GT_MID || y->alias >= 0 || lo[i] > hi[j] || lo[j] > hi[i])
					continue;
				if (off < y->off + y->size && y->off < off + x->size) {
					off = y->off + y->size;
					again = 1;
				}
			}
		}
		x->off = off;
		if (off + x->size > total)
			total = off + x->size;
	}
	for (int j = 0; j < G->nt; j++) {
		int64_t o;
		int r = gt_root(G, j, &o);
		if (r != j)
			G->gt[j].off = G->gt[r].off + o;
	}
	FREE_ALL(lo, hi);
	return total;
}

/* mid_pack_live, with the results of a whole group's head (cg_head_chain)
 * each in bytes of its own, so that its pieces (head_emit) may interleave its
 * ops, where that fits the bytes the region takes without (which it
 * keeps, so that the footprint is layergroup's): in code generation only,
 * as heads run in pieces only there. */
static int64_t mid_pack(const struct gen *cg, struct group *G)
{
	int64_t plain = mid_pack_live(cg, G, 0);
	int xj, m = cg->estimate ? 0 : cg_head_chain(cg, G, &xj, 0);
	if (m < 2)
		return plain;
	for (m = m > HEAD_MAX_OPS ? HEAD_MAX_OPS : m; m >= 2; m--)
		if (mid_pack_live(cg, G, m) <= plain)
			return plain;
	mid_pack_live(cg, G, 0);   /* the offsets without */
	return plain;
}

/* The rows each stored intermediate of a sliced G stores per slice: from
 * the first row slice s needs (0 for slice 0) to the first the next needs
 * (all of it for the last), so that the slices store every row once;
 * group_rows then computes those rows too.  One that no op of G reads (a
 * side branch, such as a residual block's projection before a cut) has its
 * rows shared out in proportion to the slices' rows of G's result, not all
 * computed by the last slice.  A whole group stores them whole. */
static void group_cover(const struct gen *cg, struct group *G)
{
	int n = G->n_slices, any = 0;
	for (int j = 0; j < G->nt; j++) {
		free(G->gt[j].cover);
		G->gt[j].cover = NULL;
		any |= G->gt[j].role == GT_MIDOUT;
	}
	if (G->whole || !any)
		return;
	const struct ir_graph *g = cg->g;
	int64_t oh = g->tensors[g->ops[G->first + G->n_ops - 1].out[0]].shape[2];
	int *lo = xmalloc(sizeof *lo * (size_t)G->nt * (size_t)n + 1);
	for (int s = 0; s < n; s++) {
		group_rows(cg, G, s);
		for (int j = 0; j < G->nt; j++)
			lo[(size_t)j * n + s] = G->gt[j].hi > G->gt[j].lo ? G->gt[j].lo : -1;
	}
	for (int j = 0; j < G->nt; j++) {
		struct gten *x = &G->gt[j];
		if (x->role != GT_MIDOUT)
			continue;
		int64_t ls[4];
		cg_lane_shape(cg->g, x->t, ls);
		x->cover = xmalloc(sizeof *x->cover * (size_t)(n + 1));
		x->cover[0] = 0;
		int read = 0;
		for (int s = 1; s < n; s++)
			read |= lo[(size_t)j * n + s] >= 0;
		for (int s = 1; s < n; s++) {
			int a = lo[(size_t)j * n + s];
			if (!read)   /* no op of G reads it: its rows in step with G's result's */
				a = (int)(ls[2] * s * G->rows / oh);
			x->cover[s] = a > x->cover[s - 1] ? a : x->cover[s - 1];
		}
		x->cover[n] = (int)ls[2];
	}
	free(lo);
}

/* Bytes per lane of one buffer of x (not GT_MID): whole when broadcast,
 * else its most rows along its axis. */
static int64_t gten_bytes(const struct gen *cg, const struct gten *x)
{
	if (x->role == GT_BCAST)
		return cg_lane_bytes(cg, x->t, -1, -1);
	return x->role == GT_IN ? cg_held_bytes(cg, x->t, x->axis, x->maxrows, -1)
				: cg_lane_bytes(cg, x->t, x->maxrows, -1);
}

/* Rows per slice, slices and buffers of G: n_slices of ceil(OH / n_slices)
 * rows, or with head > 0 a first slice of head rows and n_slices - 1 of
 * ceil((OH - head) / (n_slices - 1)); fills maxrows and need. */
static void group_plan(const struct gen *cg, struct group *G, int n_slices, int head, int bufs)
{
	const struct ir_graph *g = cg->g;
	int oh = G->whole ? 1 : (int)g->tensors[g->ops[G->first + G->n_ops - 1].out[0]].shape[2];
	G->n_slices = n_slices;
	G->head = n_slices > 1 && head > 0 && head < oh ? head : 0;
	G->rows = G->head ? (oh - G->head + n_slices - 2) / (n_slices - 1) :
			    (oh + n_slices - 1) / n_slices;
	G->bufs = bufs;
	group_cover(cg, G);
	int nt = G->nt;
	int *lo = xmalloc(sizeof *lo * ((size_t)nt * (size_t)n_slices + 1));
	int *hi = xmalloc(sizeof *hi * ((size_t)nt * (size_t)n_slices + 1));
	for (int j = 0; j < nt; j++) {
		G->gt[j].maxrows = 0;
		G->gt[j].alias = -1;
	}
	memset(G->inplace, 0, sizeof *G->inplace * (size_t)G->n_ops);
	for (int s = 0; s < n_slices; s++) {
		group_rows(cg, G, s);
		for (int j = 0; j < nt; j++) {
			lo[(size_t)s * nt + j] = G->gt[j].lo;
			hi[(size_t)s * nt + j] = G->gt[j].hi;
			if (G->gt[j].hi - G->gt[j].lo > G->gt[j].maxrows)
				G->gt[j].maxrows = G->gt[j].hi - G->gt[j].lo;
		}
	}
	/* in place only where that takes no more local memory: a result
	 * holding its inputs lives from the first one's write, and the room
	 * left is where later groups' weights load early */
	int cats = 0;
	for (int k = G->first; k < G->first + G->n_ops; k++)
		cats += cg->g->ops[k].type == OP_CONCAT;
	int64_t apart = cats ? mid_pack(cg, G) : 0;
	if (cats)
		group_alias(cg, G, lo, hi);
	if (cats && mid_pack(cg, G) > apart) {
		for (int j = 0; j < nt; j++)
			G->gt[j].alias = -1;
		memset(G->inplace, 0, sizeof *G->inplace * (size_t)G->n_ops);
	}
	FREE_ALL(lo, hi);
	int64_t need = 0;
	for (int i = 0; i < G->nw; i++)
		need += cg_lane_bytes(cg, G->wt[i], -1, -1);
	for (int j = 0; j < G->nt; j++) {
		const struct gten *x = &G->gt[j];
		if (x->role == GT_MID)
			continue;
		int copies = x->role == GT_BCAST ? 1 : bufs;
		need += copies * gten_bytes(cg, x);
	}
	need += mid_pack(cg, G);
	G->need = need;
}

/* G's buffers of its inputs and stored results, placed from *at
 * (cg_place). */
static void lay_bufs(const struct gen *cg, struct group *G, int64_t *at, int64_t base, int high)
{
	for (int b = 0; b < G->bufs; b++)
		for (int j = 0; j < G->nt; j++) {
			struct gten *x = &G->gt[j];
			if (x->role != GT_IN && x->role != GT_OUT && x->role != GT_MIDOUT)
				continue;
			x->addr[b] = cg_place(at, gten_bytes(cg, x), base,
					      G->need, high);
		}
	if (G->bufs == 1)
		for (int j = 0; j < G->nt; j++)
			G->gt[j].addr[1] = G->gt[j].addr[0];
}

/* The region of G's results kept local, placed from *at: they share it by
 * lifetime (mid_pack). */
static void lay_mids(const struct gen *cg, struct group *G, int64_t *at, int64_t base, int high)
{
	uint32_t mid = cg_place(at, mid_pack(cg, G), base, G->need, high);
	for (int j = 0; j < G->nt; j++) {
		struct gten *x = &G->gt[j];
		if (x->role == GT_MID)
			x->addr[0] = x->addr[1] = mid + (uint32_t)x->off;
	}
}

/* G's broadcast inputs, placed from *at. */
static void lay_bcast(const struct gen *cg, struct group *G, int64_t *at, int64_t base, int high)
{
	for (int j = 0; j < G->nt; j++) {
		struct gten *x = &G->gt[j];
		if (x->role == GT_BCAST)
			x->addr[0] = x->addr[1] = cg_place(at, cg_lane_bytes(cg, x->t, -1, -1),
							   base, G->need, high);
	}
}

/* G's weights placed from *at, in the order their ops first read them. */
static void lay_weights(const struct gen *cg, struct group *G, int64_t *at, int64_t base,
			int high)
{
	/* a coefficient run takes one block at its first weight's place,
	 * its weights in run order upwards, so that one DMA loads it */
	if (!G->rnext) {
		G->rnext = xmalloc(sizeof *G->rnext * ((size_t)G->nw + 1));
		addr_runs(cg->g, cg->c, G->wt, G->nw, NULL, G->rnext);
	}
	char *follows = xcalloc((size_t)G->nw + 1, 1);
	for (int i = 0; i < G->nw; i++)
		if (G->rnext[i] >= 0)
			follows[G->rnext[i]] = 1;
	for (int i = 0; i < G->nw; i++) {
		if (follows[i])
			continue;
		int64_t size = 0;
		for (int j = i; j >= 0; j = G->rnext[j])
			size += cg_lane_bytes(cg, G->wt[j], -1, -1);
		int64_t a = cg_place(at, size, base, G->need, high);
		for (int j = i; j >= 0; j = G->rnext[j]) {
			G->waddr[j] = (uint32_t)a;
			a += cg_lane_bytes(cg, G->wt[j], -1, -1);
		}
	}
	free(follows);
}

void cg_group_lay_out(const struct gen *cg, struct group *G, int64_t base, int high,
		      int acts_first)
{
	int64_t at = base;
	if (acts_first) {
		lay_bufs(cg, G, &at, base, high);
		lay_mids(cg, G, &at, base, high);
		lay_bcast(cg, G, &at, base, high);
		lay_weights(cg, G, &at, base, high);
	} else {
		lay_weights(cg, G, &at, base, high);
		lay_bcast(cg, G, &at, base, high);
		lay_mids(cg, G, &at, base, high);
		lay_bufs(cg, G, &at, base, high);
	}
}

/* Load weight i of G and the weights after it in its coefficient run that
 * lie right after it in DDR and in local memory, are not loaded yet, are
 * read by op `upto` or before (the ops that wait for the load) and fit the
 * budget, with one DMA command: 1 when two or more were loaded, 0 when not
 * (the caller loads weight i alone), -1 on error. */
static int load_run(struct gen *cg, struct group *G, int i, int upto, uint32_t *wait,
		    uint32_t *wready, int64_t *budget, const int64_t *avoid)
{
	const struct ir_graph *g = cg->g;
	if (G->no_runs || !G->rnext || G->rnext[i] < 0 || G->wdone[i])
		return 0;
	int64_t s[4], lanes = cg->c->lanes;
	cg_lane_shape(g, G->wt[i], s);
	int64_t es = (int64_t)dtype_size(g->tensors[G->wt[i]].dtype), row = s[3] * es;
	int64_t chans = 0, hi = G->waddr[i], ddr_next = g->tensors[G->wt[i]].addr;
	int n = 0, last = i;
	for (int j = i; j >= 0; j = G->rnext[j]) {
		int t = G->wt[j];
		int64_t r[4], a = g->tensors[t].addr;
		cg_lane_shape(g, t, r);
		if (j != i && (G->loaded[j] || G->wdone[j] || G->waddr[j] != hi || G->wfirst[j] > upto ||
			       (a != ddr_next && !(cg->estimate && a < 0 && ddr_next < 0))))
			break;
		int64_t c = chans + r[1], end = hi + isa_lane_bytes(cg->c, g->tensors[t].dtype, r);
		if (c >= 1 << 16 || (avoid && G->waddr[j] < avoid[1] && avoid[0] < end) ||
		    (budget && cost_dma(cg->c, c * row) > *budget))
			break;
		n++;
		last = j;
		hi = end;
		chans += (r[1] + lanes - 1) / lanes * lanes;
		ddr_next = a < 0 ? -1 : a + addr_run_stride(g, cg->c, t);
	}
	if (n < 2)
		return 0;
	int64_t r[4];
	cg_lane_shape(g, G->wt[last], r);
	chans += r[1] - (r[1] + lanes - 1) / lanes * lanes;   /* the last one's own channels */
	int64_t blk[4] = { 1, chans, 1, s[3] }, ddr = g->tensors[G->wt[i]].addr;
	const struct ir_tensor *x = &g->tensors[G->wt[i]];
	if (cg_emit_dma_raw(cg, ISA_DMA_LOAD, x->dtype, ddr < 0 ? 0 : ddr, G->waddr[i], blk, s[3],
			    chans * s[3], *wait, x->name) < 0)
		return -1;
	*wait = 0;
	if (budget)
		*budget -= cost_dma(cg->c, chans * row);
	for (int j = i;; j = G->rnext[j]) {
		G->loaded[j] = 1;
		if (wready)
			wready[G->wfirst[j] - G->first] = (uint32_t)cg->n_dma;
		if (j == last)
			break;
	}
	return 1;
}

/* Load rows [r0, r1) of tensor t (lane shape N = 1) into its whole
 * layout at local address addr: one DMA command per channel slot, the
 * first waiting for *wait (then 0). */
static int load_rows(struct gen *cg, int t, int64_t addr, int r0, int r1, uint32_t *wait)
{
	int64_t s[4], lanes = cg->c->lanes;
	cg_lane_shape(cg->g, t, s);
	int64_t pitch = isa_pitch(cg->c, cg->g->tensors[t].dtype, s[3]);
	for (int64_t c0 = 0; c0 < s[1]; c0 += lanes) {
		int c1 = (int)(c0 + lanes < s[1] ? c0 + lanes : s[1]);
		uint32_t at = (uint32_t)(addr + (c0 / lanes * s[2] + r0) * pitch);
		if (cg_emit_dma(cg, ISA_DMA_LOAD, t, r0, r1, (int)c0, c1, at, *wait) < 0)
			return -1;
		*wait = 0;
	}
	return 0;
}

int cg_group_load_rows(struct gen *cg, struct group *G, int t, int rows, uint32_t *wait,
		       int64_t budget, const int64_t *avoid)
{
	const struct ir_tensor *x = &cg->g->tensors[t];
	int64_t s[4];
	cg_lane_shape(cg->g, t, s);
	if (x->rank != 4 || s[0] != 1 || s[2] != x->shape[2] || s[3] != x->shape[3])
		return 0;
	for (int j = 0; j < G->nt; j++) {
		struct gten *y = &G->gt[j];
		if (y->t != t || y->role != GT_BCAST || G->loaded[G->nw + j])
			continue;
		int64_t lo = y->addr[0], hi = lo + cg_lane_bytes(cg, t, -1, -1);
		if (avoid && lo < avoid[1] && avoid[0] < hi)
			return 0;
		/* as many rows as the budget leaves after a start-up per slot */
		int64_t lanes = cg->c->lanes, slots = (s[1] + lanes - 1) / lanes;
		int64_t row = s[1] * s[3] * (int64_t)dtype_size(x->dtype);
		int64_t fit = (budget - slots * cg->c->dma_latency) * cg->c->ddr_bpc / row;
		int r1 = fit < rows - y->ahead ? y->ahead + (int)(fit > 0 ? fit : 0) : rows;
		if (r1 <= y->ahead || r1 >= s[2] ||
		    (r1 - y->ahead) * row < PART_LATENCIES * slots * cg->c->dma_latency * cg->c->ddr_bpc)
			return 0;
		if (load_rows(cg, t, lo, y->ahead, r1, wait) < 0)
			return -1;
		y->ahead = r1;
		return 1;
	}
	return 0;
}

/* Broadcast inputs of G not loaded yet that ops before op `before` read
 * first (with only_before >= 0: written by ops before that op only), as
 * cg_group_load loads them. */
static int load_bcast(struct gen *cg, struct group *G, uint32_t *wait, int only_before,
		      int before, uint32_t *wready, int64_t *budget, const int64_t *avoid)
{
	for (int j = 0; j < G->nt; j++) {
		struct gten *x = &G->gt[j];
		if (x->role != GT_BCAST || G->loaded[G->nw + j] || x->r0 >= before)
			continue;
		if (only_before >= 0 && cg_producer(cg, x->t) >= only_before)
			continue;
		if (x->ahead) {
			/* the rows the unit before stored last */
			if (budget)
				continue;
			int64_t s[4];
			cg_lane_shape(cg->g, x->t, s);
			if (load_rows(cg, x->t, x->addr[0], x->ahead, (int)s[2], wait) < 0)
				return -1;
			G->loaded[G->nw + j] = 1;
			if (wready)
				wready[x->r0 - G->first] = (uint32_t)cg->n_dma;
			continue;
		}
		int r = cg_load_whole(cg, x->t, x->addr[0], wait, budget, avoid, NULL);
		if (r < 0 || r == CG_STOP)
			return r < 0 ? -1 : 1;
		G->loaded[G->nw + j] = r == CG_LOADED;
		if (r == CG_LOADED && wready)
			wready[x->r0 - G->first] = (uint32_t)cg->n_dma;
	}
	return 0;
}

/* Weights and broadcast inputs of ops up to op `upto` not loaded yet (with
 * only_before >= 0: broadcast inputs written by ops before that op only),
 * in the order of the ops that read them first, so that an op waits only
 * for its own; the first waits for `wait`.  wready[k - first], when not
 * NULL, gets the last DMA command loading op k's weights or broadcast
 * inputs.  A coefficient run's weights load with one command where they
 * can (load_run). */
int cg_group_load(struct gen *cg, struct group *G, uint32_t wait, int only_before,
		  int upto, uint32_t *wready, int64_t *budget, const int64_t *avoid)
{
	for (int i = 0; i < G->nw; i++) {
		if (G->loaded[i] || G->wfirst[i] > upto)
			continue;
		/* the broadcast inputs of the ops before, in op order */
		int b = load_bcast(cg, G, &wait, only_before, G->wfirst[i], wready, budget, avoid);
		if (b)
			return b < 0 ? -1 : 0;
		int m = load_run(cg, G, i, upto, &wait, wready, budget, avoid);
		if (m < 0)
			return -1;
		if (m)
			continue;
		int r = cg_load_whole(cg, G->wt[i], G->waddr[i], &wait, budget, avoid,
				      &G->wdone[i]);
		if (r < 0 || r == CG_STOP)
			return r < 0 ? -1 : 0;
		if (r == CG_SKIP)
			continue;
		G->loaded[i] = 1;
		if (wready)
			wready[G->wfirst[i] - G->first] = (uint32_t)cg->n_dma;
	}
	int b = load_bcast(cg, G, &wait, only_before, upto + 1, wready, budget, avoid);
	return b < 0 ? -1 : 0;
}

/* One compute command for op k of G in slice s (buffer b). */
static void group_cmp(struct gen *cg, const struct group *G, int k, int b, uint32_t wait)
{
	const struct ir_graph *g = cg->g;
	const struct ir_op *op = &g->ops[k];
	struct isa_cmp *c = cg_new_cmp(cg, k, wait);
	const struct gten *y = &G->gt[opnd_ix(G, k, op->n_in)];
	int a = 0, e;
	if (G->whole) {
		int64_t ls[4];
		cg_lane_shape(g, op->in[0], ls);
		e = (int)ls[2];
	} else {
		cg_in_rows(cg, op, y->lo, y->hi, &a, &e);
	}
	c->out_row0 = y->lo;
	c->out_rows = y->hi - y->lo;
	c->in_row0 = a;
	c->in_rows = e - a;
	for (int i = 0; i < op->n_in + op->n_out; i++) {
		int t = i < op->n_in ? op->in[i] : op->out[i - op->n_in];
		if (t < 0)
			continue;
		if (cg_is_weight(g, t)) {
			c->addr[i] = G->waddr[opnd_ix(G, k, i)];
			continue;
		}
		const struct gten *x = &G->gt[opnd_ix(G, k, i)];
		c->addr[i] = x->addr[b];
		if (i == op->n_in && G->inplace[k - G->first]) {
			/* the slots of the inputs not in place (group_alias) */
			int64_t w = G->inplace[k - G->first] - 1, c0 = w & 0xffff;
			int64_t ls[4];
			cg_lane_shape(g, t, ls);
			c->ch0 = (int)c0;
			c->chans = (int)((w >> 16) - c0);
			c->chsplit = 1u << i;
			c->addr[i] += (uint32_t)(c0 / cg->c->lanes * ls[0] * (y->hi - y->lo) *
						 isa_pitch(cg->c, g->tensors[t].dtype, ls[3]));
		}
		if (x->role != GT_BCAST && !G->whole) {
			c->sliced |= 1u << i;
			c->row0[i] = x->lo;
			c->rows[i] = x->hi - x->lo;
		}
	}
}

/* Store slice c's share of the stored intermediate x (rows held as
 * group_rows(c) left them), after compute command `wait` wrote them: its
 * cover rows when they are one run of local memory (one channel slot and
 * N = 1), else every row it holds (a halo row is then written twice, with
 * the same values). */
static int midout_store(struct gen *cg, const struct group *G, const struct gten *x, int c,
			uint32_t wait)
{
	int64_t ls[4];
	cg_lane_shape(cg->g, x->t, ls);
	uint32_t at = x->addr[c % G->bufs];
	int a = x->lo, b = x->hi;
	if (x->cover && ls[0] == 1 && ls[1] <= cg->c->lanes) {
		a = x->cover[c];
		b = x->cover[c + 1];
		at += (uint32_t)((a - x->lo) * isa_pitch(cg->c, cg->g->tensors[x->t].dtype, ls[3]));
	}
	if (b <= a)
		return 0;
	return cg_emit_dma(cg, ISA_DMA_STORE, x->t, a, b, -1, -1, at, wait);
}

static int i64_cmp(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

static int freed_cmp(const void *a, const void *b)
{
	const struct freed *x = a, *y = b;
	return (x->lo > y->lo) - (x->lo < y->lo);
}

/* The local bytes of G that no DMA command reads and that a compute
 * command reads last, once the last slice's are emitted (cmd[k - first]:
 * op k's last compute so far): its weights, broadcast inputs, input
 * buffers and the region of its results kept local (bytes two of those
 * share by lifetime free after the later reader).  Into *out (malloc'd):
 * disjoint spans sorted by address, each with the compute after which it
 * is free; returns their count. */
static int group_freed(const struct gen *cg, const struct group *G, const uint32_t *cmd,
		       struct freed **out)
{
	const struct ir_graph *g = cg->g;
	int *lastr = xmalloc(sizeof *lastr * ((size_t)G->nt + 1)), n = 0;
	for (int j = 0; j < G->nt; j++)
		lastr[j] = -1;
	struct freed *raw = xcalloc((size_t)(G->nw + 2 * G->nt) + 1, sizeof *raw);
	for (int k = G->first; k < G->first + G->n_ops; k++)
		for (int i = 0; i < g->ops[k].n_in; i++) {
			int t = g->ops[k].in[i];
			if (t < 0)
				continue;
			int j = opnd_ix(G, k, i);
			if (!cg_is_weight(g, t)) {
				lastr[j] = k;
				continue;
			}
			raw[j].lo = G->waddr[j];
			raw[j].hi = G->waddr[j] + cg_lane_bytes(cg, t, -1, -1);
			raw[j].cmd = cmd[k - G->first];
		}
	n = G->nw;
	for (int j = 0; j < G->nt; j++) {
		const struct gten *x = &G->gt[j];
		if (lastr[j] < 0 || (x->role != GT_MID && x->role != GT_IN && x->role != GT_BCAST))
			continue;
		uint32_t c = cmd[lastr[j] - G->first];
		if (x->role == GT_MID)
			raw[n++] = (struct freed){ x->addr[0], x->addr[0] + x->size, c };
		for (int b = 0; x->role != GT_MID && b < (x->role == GT_IN ? G->bufs : 1); b++)
			raw[n++] = (struct freed){ x->addr[b], x->addr[b] + gten_bytes(cg, x), c };
	}
	free(lastr);
	/* the pieces between every two span ends, each free after the latest
	 * command of the spans over it */
	int64_t *at = xmalloc(sizeof *at * (size_t)(2 * n + 1));
	for (int k = 0; k < n; k++) {
		at[2 * k] = raw[k].lo;
		at[2 * k + 1] = raw[k].hi;
	}
	qsort(at, (size_t)(2 * n), sizeof *at, i64_cmp);
	qsort(raw, (size_t)n, sizeof *raw, freed_cmp);
	struct freed *fr = xcalloc((size_t)(2 * n) + 1, sizeof *fr);
	int m = 0;
	for (int e = 0; e + 1 < 2 * n; e++) {
		if (at[e] == at[e + 1])
			continue;
		int over = 0;
		uint32_t c = 0;
		for (int k = 0; k < n && raw[k].lo <= at[e]; k++)
			if (raw[k].hi > at[e]) {
				over = 1;
				c = raw[k].cmd > c ? raw[k].cmd : c;
			}
		if (over)
			fr[m++] = (struct freed){ at[e], at[e + 1], c };
	}
	FREE_ALL(at, raw);
	*out = fr;
	return m;
}

/* Generate G: the first op's weights and the broadcast inputs (the first
 * load waits for `wait`), slice 0's input rows, the other ops' weights in
 * op order (each op's first compute waits for its own), then per slice the
 * inputs' rows, every op's compute, the output's rows, double buffered as
 * for single ops.  Between a slice's computes and its store, the next
 * unit's whole inputs (pf) load for as many DMA cycles as the computes
 * leave the DMA engine free; at the last slice, at least its first op's. */
/* G's first m ops in n pieces of rows under the loads of input xj
 * (cg_head_plan); cmd[k - first] gets op k's last command; the first load
 * waits for *wait (then 0). */
static int head_emit(struct gen *cg, struct group *G, int m, int xj, int n, uint32_t *wait,
		     uint32_t *wready, uint32_t *cmd)
{
	struct head_step *st;
	int ns = cg_head_plan(cg, G, m, xj, n, &st), rc = -1;
	uint32_t w = 0;
	for (int i = 0; i < ns; i++) {
		if (st[i].op == HEAD_LOAD) {
			if (load_rows(cg, G->gt[xj].t, G->gt[xj].addr[0], st[i].r0, st[i].r1, wait) < 0)
				goto out;
			w = (uint32_t)cg->n_dma;
		} else if (st[i].op == HEAD_WEIGHTS) {
			G->loaded[G->nw + xj] = 1;
			if (cg_group_load(cg, G, *wait, -1, G->first + m - 1, wready, NULL, NULL) < 0)
				goto out;
			*wait = 0;
			/* also the rows the unit before loaded (ahead) */
			w = (uint32_t)cg->n_dma;
		} else {
			struct isa_cmp *c = cg_new_cmp(cg, st[i].op, w);
			w = 0;
			cg_head_cmd(cg, G, &st[i], c);
			cmd[st[i].op - G->first] = (uint32_t)cg->n_cmp;
		}
	}
	rc = 0;
out:
	free(st);
	return rc;
}

int cg_group_gen(struct gen *cg, struct group *G, uint32_t wait, struct prefetch *pf,
		 uint32_t *last_cmp)
{
	int had = cg->n_dma, n = G->n_slices, rc = -1, last_op = G->first + G->n_ops - 1;
	uint32_t *wready = xcalloc((size_t)G->n_ops + 1, sizeof *wready);
	uint32_t *cmd = xcalloc((size_t)G->n_ops + 1, sizeof *cmd);
	uint32_t *slice_last = xcalloc((size_t)n + 1, sizeof *slice_last);
	uint32_t *load_end = xcalloc((size_t)n + 1, sizeof *load_end);
	int64_t *load_cy = xcalloc((size_t)n + 1, sizeof *load_cy);
	struct freed *fr = NULL;
	int nfr = 0, xj = -1, hm = cg->head ? cg_head_chain(cg, G, &xj, 1) : 0;
	int hn = 1;
	if (hm)
		cg_head_choose(cg, G, &hm, xj, &hn);
	if (hn > 1) {
		if (head_emit(cg, G, hm, xj, hn, &wait, wready, cmd) < 0)
			goto out;
		cg->heads++;
	} else {
		hm = 0;
	}
	if (cg_group_load(cg, G, wait, -1, G->first, wready, NULL, NULL) < 0)
		goto out;
	if (cg->n_dma > had)
		wait = 0;
	int oj = -1;
	int64_t pf_prev = 0;
	for (int j = 0; j < G->nt; j++)
		if (G->gt[j].role == GT_OUT)
			oj = j;
	for (int s = 0; s < n + G->bufs; s++) {
		if (s < n) {
			uint32_t w = s >= G->bufs ? slice_last[s - G->bufs] : wait;
			group_rows(cg, G, s);
			for (int j = 0; j < G->nt; j++) {
				const struct gten *x = &G->gt[j];
				if (x->role != GT_IN || x->hi <= x->lo || G->loaded[G->nw + j])
					continue;
				if (cg_emit_dma_ax(cg, ISA_DMA_LOAD, x->t, x->axis, x->lo, x->hi, -1, -1,
					     x->addr[s % G->bufs], w) < 0)
					goto out;
				w = 0;
			}
			/* A wait not used yet passes to the next load. */
			if (cg->n_dma > had)
				wait = 0;
			load_end[s] = (uint32_t)cg->n_dma;
			load_cy[s] = cg->dma_cycles;
			if (s == 0 && cg_group_load(cg, G, wait, -1, last_op, wready, NULL, NULL) < 0)
				goto out;
		}
		int c = s - G->bufs + 1;
		if (c < 0 || c >= n)
			continue;
		group_rows(cg, G, c);
		uint32_t w = load_end[c], first_cmp = (uint32_t)cg->n_cmp + 1;
		/* with cg->credit, not counting the previous slice's own
		 * prefetch, which ran under that slice's computes */
		int64_t spare = -(cg->dma_cycles - load_cy[c]) + (cg->credit ? pf_prev : 0);
		int64_t dma0 = cg->dma_cycles;
		cg->credits += pf_prev > 0;
		for (int k = G->first + hm; k <= last_op; k++) {
			const struct gten *y = &G->gt[opnd_ix(G, k, cg->g->ops[k].n_in)];
			int64_t win = G->inplace[k - G->first] - 1;
			if (y->hi <= y->lo || (win >= 0 && (win & 0xffff) == win >> 16))
				continue;
			if (c == 0 && wready[k - G->first] > w)
				w = wready[k - G->first];
			group_cmp(cg, G, k, c % G->bufs, w);
			cmd[k - G->first] = (uint32_t)cg->n_cmp;
			spare += cost_cmp_cycles(cg->c, cg->g, &cg->cmp[cg->n_cmp - 1]);
			w = 0;
		}
		slice_last[c] = (uint32_t)cg->n_cmp;
		/* The DMA engine is free for what the computes leave over: first
		 * for the next unit's copy of the rows stored so far, then for
		 * its other inputs. */
		const struct gten *y = &G->gt[oj];
		int64_t pf_at = cg->dma_cycles;
		if (c > 0 && spare > 0 && cg_prefetch_rows(cg, pf, y->t, y->lo, spare) < 0)
			goto out;
		spare -= cg->dma_cycles - dma0;
		if (cg_prefetch(cg, pf, spare > 0 ? spare : 0, c == n - 1) < 0)
			goto out;
		pf_prev = cg->dma_cycles - pf_at;
		if (c == n - 1 && pf->u && pf->freed)
			nfr = group_freed(cg, G, cmd, &fr);
		/* the compute cycles of the slice's ops from each on */
		int64_t after = 0, pend = 0;
		for (int k = G->first; nfr && k <= last_op; k++)
			if (cmd[k - G->first] >= first_cmp)
				after += cost_cmp_cycles(cg->c, cg->g, &cg->cmp[cmd[k - G->first] - 1]);
		/* the stored intermediates in the order they are computed; in
		 * the last slice, after each op, the next unit's weights that
		 * lie where the group's bytes read for the last time lay, for
		 * as many DMA cycles as the ops after it leave (pend: those of
		 * the loads before, not done by then) */
		for (int k = G->first; k <= last_op; k++) {
			for (int j = 0; j < G->nt; j++)
				if (G->gt[j].role == GT_MIDOUT && G->gt[j].p0 == k &&
				    midout_store(cg, G, &G->gt[j], c, cmd[k - G->first]) < 0)
					goto out;
			if (!nfr)
				continue;
			int64_t cy = cmd[k - G->first] >= first_cmp ?
				     cost_cmp_cycles(cg->c, cg->g, &cg->cmp[cmd[k - G->first] - 1]) : 0;
			after -= cy;
			pend = pend > cy ? pend - cy : 0;
			int64_t before = cg->dma_cycles;
			if (after - pend > 0 &&
			    cg_prefetch_freed(cg, pf, fr, nfr, cmd[k - G->first], after - pend) < 0)
				goto out;
			pend += cg->dma_cycles - before;
		}
		if (!G->keep_out &&
		    cg_emit_dma(cg, ISA_DMA_STORE, y->t, y->lo, y->hi, -1, -1, y->addr[c % G->bufs],
				slice_last[c]) < 0)
			goto out;
	}
	*last_cmp = slice_last[n - 1];
	rc = 0;
out:
	FREE_ALL(wready, cmd, slice_last, load_end, load_cy, fr);
	return rc;
}

/* Cycles of G at n slices, generated alone; -1 on error. */
static int64_t group_cycles(const struct gen *cg, struct group *G)
{
	struct gen t = { .g = cg->g, .c = cg->c, .estimate = cg->estimate, .head = cg->head };
	uint32_t last;
	memset(G->loaded, 0, sizeof *G->loaded * (size_t)(G->nw + G->nt));
	memset(G->wdone, 0, sizeof *G->wdone * (size_t)G->nw);
	cg_group_lay_out(cg, G, 0, 0, 0);
	struct prefetch none = { 0 };
	int64_t cy = cg_group_gen(&t, G, 0, &none, &last) < 0 ? -1 :
		     cost_time(cg->c, cg->g, t.dma, t.n_dma, t.cmp, t.n_cmp);
	cg_free(&t);
	memset(G->loaded, 0, sizeof *G->loaded * (size_t)(G->nw + G->nt));
	memset(G->wdone, 0, sizeof *G->wdone * (size_t)G->nw);
	return cy;
}

/* Time G at n slices into cy_n[n] (-1 when it does not fit) and need_n[n],
 * unless timed already; *best and *best_t follow the fastest.  -1 on
 * errors. */
static int time_count(const struct gen *cg, struct group *G, int n, int64_t *cy_n,
		      int64_t *need_n, int *best, int64_t *best_t)
{
	if (cy_n[n] != -2)
		return 0;
	cy_n[n] = -1;
	group_plan(cg, G, n, 0, n > 1 ? 2 : 1);
	if (G->need > cg->c->lmem_bytes)
		return 0;
	int64_t cy = group_cycles(cg, G);
	if (cy < 0)
		return -1;
	cy_n[n] = cy;
	need_n[n] = G->need;
	if (*best_t < 0 || cy < *best_t) {
		*best_t = cy;
		*best = n;
	}
	return 0;
}

/* The choices cg_group_choose made on a context's graph (codegen_ctx's
 * choice): open addressing on (first, n); slices 0 for none that fits,
 * negative with no_runs. */
struct choice {
	int first, n, slices, head;
	int64_t cycles;
};

static struct choice *choice_slot(const struct codegen_ctx *cx, int first, int n)
{
	struct choice *tab = cx->choice;
	unsigned h = ((unsigned)first * 2654435761u) ^ ((unsigned)n * 40503u), mask;
	mask = (unsigned)cx->choice_cap - 1;
	for (unsigned i = h & mask;; i = (i + 1) & mask)
		if (tab[i].n == 0 || (tab[i].first == first && tab[i].n == n))
			return &tab[i];
}

static void choice_put(struct codegen_ctx *cx, int first, int n, int slices, int head,
		       int64_t cycles)
{
	if (2 * (cx->choice_used + 1) > cx->choice_cap) {
		struct choice *old = cx->choice;
		int cap = cx->choice_cap;
		cx->choice_cap *= 2;
		cx->choice = xcalloc((size_t)cx->choice_cap, sizeof *cx->choice);
		cx->choice_used = 0;
		for (int i = 0; i < cap; i++)
			if (old[i].n)
				choice_put(cx, old[i].first, old[i].n, old[i].slices, old[i].head,
					   old[i].cycles);
		free(old);
	}
	struct choice *m = choice_slot(cx, first, n);
	if (!m->n)
		cx->choice_used++;
	*m = (struct choice){ first, n, slices, head, cycles };
}

void cg_group_ctx_init(struct codegen_ctx *cx)
{
	const struct ir_graph *g = cx->g;
	cx->last_use = xmalloc(sizeof *cx->last_use * ((size_t)g->n_tensors + 1));
	for (int t = 0; t < g->n_tensors; t++)
		cx->last_use[t] = -1;
	for (int k = 0; k < g->n_ops; k++)
		for (int i = 0; i < g->ops[k].n_in; i++)
			if (g->ops[k].in[i] >= 0)
				cx->last_use[g->ops[k].in[i]] = k;
	for (int o = 0; o < g->n_outputs; o++)
		cx->last_use[g->outputs[o]] = g->n_ops;
	cx->choice_cap = 1024;
	cx->choice_used = 0;
	cx->choice = xcalloc((size_t)cx->choice_cap, sizeof *cx->choice);
}

void cg_group_ctx_fini(struct codegen_ctx *cx)
{
	free(cx->last_use);
	free(cx->choice);
}

/* The slice count of G that the cost model times fastest among those that
 * fit; *cycles gets its time.  -1 with a message when none fits. */
int cg_group_choose(struct gen *cg, struct group *G, int64_t *cycles)
{
	const struct ir_graph *g = cg->g;
	const struct ir_op *last = &g->ops[G->first + G->n_ops - 1];
	int oh = G->whole ? 1 : (int)g->tensors[last->out[0]].shape[2], best = 0;
	/* the memo holds the counts chosen with the slack */
	int memo_on = cg->cx && !cg->fastest;
	struct choice *m = memo_on ? choice_slot(cg->cx, G->first, G->n_ops) : NULL;
	if (m && m->n) {
		if (!m->slices) {
			err_set("layer group of '%s' .. '%s' does not fit local memory",
				g->ops[G->first].name, last->name);
			return -2;
		}
		int s = m->slices < 0 ? -m->slices : m->slices;
		G->no_runs = m->slices < 0;
		group_plan(cg, G, s, m->head, s > 1 ? 2 : 1);
		*cycles = m->cycles;
		return 0;
	}
	/* The slice counts with distinct rows per slice.  When the run one op
	 * shorter was chosen already (the search grows runs an op at a time),
	 * a descent from its count along the list; else a coarse sweep (the
	 * first four, then each a quarter more slices than the last timed,
	 * and the last) and then every count between the neighbours of the
	 * fastest: the time is near unimodal in the count, and each count
	 * timed is a whole generation of the group. */
	int64_t best_t = -1, *cy_n = xmalloc(sizeof *cy_n * (size_t)(oh + 1));
	int64_t *need_n = xmalloc(sizeof *need_n * (size_t)(oh + 1));
	int *cand = xmalloc(sizeof *cand * (size_t)(oh + 1)), nc = 0, rc = 0;
	for (int n = 1; n <= oh; n++) {
		cy_n[n] = -2;    /* not timed */
		int rows = (oh + n - 1) / n;
		if ((oh + rows - 1) / rows == n)
			cand[nc++] = n;
	}
	struct choice *h = memo_on && G->n_ops > 2 ? choice_slot(cg->cx, G->first, G->n_ops - 1)
						   : NULL;
	if (h && h->n && h->slices > 0) {
		int i = 0;
		while (i + 1 < nc && cand[i + 1] <= h->slices)
			i++;
		for (int step = 0; step < nc && rc == 0; step++) {
			rc = time_count(cg, G, cand[i], cy_n, need_n, &best, &best_t);
			int up = i + 1 < nc ? i + 1 : i, dn = i > 0 ? i - 1 : i;
			if (rc == 0)
				rc = time_count(cg, G, cand[up], cy_n, need_n, &best, &best_t);
			if (rc == 0)
				rc = time_count(cg, G, cand[dn], cy_n, need_n, &best, &best_t);
			int b = cand[i] == best ? i : cand[up] == best ? up : cand[dn] == best ? dn : -1;
			if (b < 0 && best_t < 0 && i + 1 < nc)
				b = up;    /* none fits yet: fewer rows */
			if (b < 0 || b == i)
				break;
			i = b;
		}
	}
	for (int pass = 0, lo = 0, hi = nc - 1; pass < 2 && rc == 0 && best_t < 0; pass++) {
		int prev = 0;
		for (int i = lo; i <= hi && rc == 0; i++) {
			int n = cand[i];
			if (pass == 0 && i >= 4 && i < nc - 1 && 4 * n < 5 * prev)
				continue;
			prev = n;
			rc = time_count(cg, G, n, cy_n, need_n, &best, &best_t);
		}
		if (best_t < 0)
			break;
		/* between the timed counts either side of the fastest */
		int b = 0;
		while (cand[b] != best)
			b++;
		for (lo = b; lo > 0 && cy_n[cand[lo - 1]] == -2; lo--)
			;
		for (hi = b; hi < nc - 1 && cy_n[cand[hi + 1]] == -2; hi++)
			;
		best_t = pass == 0 ? -1 : best_t;   /* the second pass runs */
	}
	free(cand);
	if (rc < 0) {
		FREE_ALL(cy_n, need_n);
		return -1;
	}
	best_t = -1;
	for (int n = 1; n <= oh; n++)
		if (cy_n[n] >= 0 && (best_t < 0 || cy_n[n] < best_t)) {
			best_t = cy_n[n];
			best = n;
		}
	/* Of the cuts within SLACK of the fastest, the one needing the least
	 * local memory: room for later groups' weights to load early (unless
	 * cg->fastest). */
	int64_t slack = cg->fastest ? 0 : best_t * LG_SLACK_PCT / 100;
	int fastest = best;
	for (int n = 1; n <= oh && best_t >= 0; n++)
		if (cy_n[n] >= 0 && cy_n[n] <= best_t + slack && need_n[n] < need_n[best])
			best = n;
	cg->slacked += best != fastest;
	if (best_t >= 0)
		best_t = cy_n[best];
	free(cy_n);
	free(need_n);
	if (best_t < 0) {
		err_set("layer group of '%s' .. '%s' does not fit local memory",
			g->ops[G->first].name, last->name);
		if (memo_on)
			choice_put(cg->cx, G->first, G->n_ops, 0, 0, -1);
		return -2;
	}
	/* A short first slice (a half or a quarter of the others' rows, the
	 * count kept): the computes start once fewer rows have loaded, where
	 * the cost model times that faster and it fits. */
	int head = 0, rows = (oh + best - 1) / best;
	for (int q = 2; best > 1 && !G->whole && q <= 4; q *= 2) {
		int hd = (rows + q - 1) / q;
		if (hd >= rows || (oh - hd + best - 2) / (best - 1) * (best - 1) - (oh - hd) >=
				 (oh - hd + best - 2) / (best - 1))
			continue;   /* no shorter first slice, or a last slice empty */
		group_plan(cg, G, best, hd, 2);
		int64_t cy = G->need > cg->c->lmem_bytes ? -2 : group_cycles(cg, G);
		if (cy == -1)
			return -1;
		if (cy >= 0 && cy < best_t) {
			best_t = cy;
			head = hd;
		}
	}
	group_plan(cg, G, best, head, best > 1 ? 2 : 1);
	/* Coefficient runs load later ops' weights ahead of the next op's:
	 * where the compute engine then waits longer than the start-ups
	 * saved, every weight loads alone. */
	int runs = 0;
	for (int i = 0; G->rnext && i < G->nw; i++)
		runs |= G->rnext[i] >= 0;
	if (runs) {
		G->no_runs = 1;
		int64_t alone = group_cycles(cg, G);
		if (alone >= 0 && alone < best_t)
			best_t = alone;
		else
			G->no_runs = 0;
	}
	*cycles = best_t;
	if (memo_on)
		choice_put(cg->cx, G->first, G->n_ops, G->no_runs ? -best : best, head, best_t);
	return 0;
}

int cg_group_weights_loaded(const struct group *G)
{
	for (int i = 0; i < G->nw; i++)
		if (!G->loaded[i])
			return 0;
	return 1;
}

int cg_group_weight(const struct group *G, int i, int *state)
{
	if (i < 0 || i >= G->nw)
		return -1;
	*state = G->loaded[i] ? 2 : G->wdone[i] ? 1 : 0;
	return G->wt[i];
}

int64_t cg_group_weight_at(const struct group *G, int i)
{
	return G->waddr[i];
}

int cg_group_load_weight(struct gen *cg, struct group *G, int i, int64_t addr, uint32_t wait,
			 int64_t *budget)
{
	uint32_t keep = G->waddr[i];
	int had = cg->n_dma;
	if (addr >= 0)
		G->waddr[i] = (uint32_t)addr;
	int r = cg_load_whole(cg, G->wt[i], G->waddr[i], &wait, budget, NULL, &G->wdone[i]);
	if (cg->n_dma == had)
		G->waddr[i] = keep;   /* nothing loaded: its place stays */
	if (r == CG_LOADED)
		G->loaded[i] = 1;
	return r;
}

int cg_group_hand_over(const struct gen *cg, struct group *A, struct group *B, int64_t b_base,
		       int64_t *lo, int64_t *hi)
{
	int oj = -1, bj = -1;
	if (A->n_slices != 1 || B->n_slices != 1 || B->first != A->first + A->n_ops)
		return 0;
	for (int j = 0; j < A->nt; j++)
		if (A->gt[j].role == GT_OUT)
			oj = j;
	if (oj < 0)
		return 0;
	for (int j = 0; j < B->nt; j++)
		if (B->gt[j].t == A->gt[oj].t)
			bj = j;
	if (bj < 0 || B->gt[bj].ahead || B->loaded[B->nw + bj])
		return 0;
	/* read whole: broadcast, or in B's one slice every row along H */
	int64_t a = A->gt[oj].addr[0], size = cg_lane_bytes(cg, A->gt[oj].t, -1, -1), ls[4];
	cg_lane_shape(cg->g, A->gt[oj].t, ls);
	if (B->gt[bj].role != GT_BCAST &&
	    (B->gt[bj].role != GT_IN || B->gt[bj].axis != 2 || B->gt[bj].maxrows != ls[2]))
		return 0;
	if (size > gten_bytes(cg, &A->gt[oj]) || (a < b_base + B->need && b_base < a + size))
		return 0;
	B->gt[bj].addr[0] = B->gt[bj].addr[1] = (uint32_t)a;
	B->loaded[B->nw + bj] = 1;
	A->keep_out = !used_from(cg, A->gt[oj].t, B->first + B->n_ops);
	*lo = a;
	*hi = a + size;
	return 1;
}

void cg_group_weight_kept(struct group *G, int i, int64_t addr)
{
	G->waddr[i] = (uint32_t)addr;
	G->loaded[i] = 1;
}

int64_t cg_group_need(const struct group *G)
{
	return G->need;
}
