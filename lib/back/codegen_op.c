/* codegen_op.c - code generation for one op at a time (back/codegen_op.h):
 * its output cut into slices of rows along H and, when the weights do not
 * fit, into chunks of output channels, double buffered so that the DMA
 * engine moves one step's data while the compute engine runs another.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "back/addr.h"
#include "ir/base.h"
#include "back/codegen_op.h"
#include "ir/op.h"
#include "chip/cost.h"
#include "chip/isa_copy.h"

/* 1 if output channel c (axis 1) of op depends only on channel c of its
 * activations: an elementwise rule (slice_h_same), a Concat or Slice off
 * axis 1, a Transpose that keeps axes 0 and 1; one output of rank 2 or
 * more. */
static int chanwise(const struct ir_graph *g, const struct ir_op *op)
{
	int64_t v[IR_MAX_RANK];
	if (op->n_out != 1 || op->n_in < 1 || op->in[0] < 0 || g->tensors[op->out[0]].rank < 2)
		return 0;
	int r = g->tensors[op->out[0]].rank, n;
	if (op_defs[op->type]->slice_h == slice_h_same)
		return 1;
	switch (op->type) {
	case OP_CONCAT:
		n = (int)op_int(op, "axis", 1);
		return (n < 0 ? n + r : n) != 1;
	case OP_SLICE:
		if (!(n = op_ints(op, "axes", v, IR_MAX_RANK)))
			return op_ints(op, "starts", v, IR_MAX_RANK) <= 1;
		for (int i = 0; i < n; i++)
			if ((v[i] < 0 ? v[i] + r : v[i]) == 1)
				return 0;
		return 1;
	case OP_TRANSPOSE:
		return op_ints(op, "perm", v, IR_MAX_RANK) == r && v[0] == 0 && v[1] == 1;
	default:
		return 0;
	}
}

/* How input i of a chanwise op goes with chunks of oc output channels: 1
 * split (an activation, or a weight in the activation layout, of the
 * output's rank with oc channels; a weight in the weight layout whose first
 * axis lies under the output's channels), 0 whole (broadcast along the
 * channels), -1 neither. */
static int chan_input(const struct ir_graph *g, const struct ir_op *op, int i, int64_t oc)
{
	int t = op->in[i];
	if (t < 0)
		return 0;
	const struct ir_tensor *a = &g->tensors[t], *y = &g->tensors[op->out[0]];
	int h = 1 - (y->rank - a->rank);   /* a's axis under the output's channels */
	if (!isa_weight_layout(a) && a->rank == y->rank && a->shape[1] == oc)
		return 1;
	if (h < 0 || a->shape[h] == 1)
		return 0;
	return isa_weight_layout(a) && h == 0 && a->shape[0] == oc ? 1 : -1;
}

/* How input i of a MatMul goes with chunks of oc output channels (axis 1:
 * rows M of a rank-3 output, a batch axis of a higher one): A is split; B
 * is split when it is a batch operand of the output's rank (4 or more) with
 * oc channels, whole when it has no such axis or size 1 there; -1 else.
 * The int8 parameters (inputs 2 to 4, per column or one) stay whole. */
static int matmul_input(const struct ir_graph *g, const struct ir_op *op, int i, int64_t oc)
{
	const struct ir_tensor *y = &g->tensors[op->out[0]], *a = &g->tensors[op->in[i]];
	if (i >= 2)
		return 0;
	if (i == 0)
		return !isa_weight_layout(a) && a->rank == y->rank && a->shape[1] == oc ? 1 : -1;
	if (y->rank < 4 || a->rank < y->rank || a->shape[1] == 1)
		return 0;
	return !isa_weight_layout(a) && a->shape[1] == oc ? 1 : -1;
}

/* Output channels of a MatMul of rank 3 or more that runs in chunks of
 * them (matmul_input), else 0. */
static int64_t matmul_split(const struct ir_graph *g, const struct ir_op *op)
{
	if ((op->n_in != 2 && op->n_in != 5) || op->n_out != 1 || op->in[0] < 0 || op->in[1] < 0)
		return 0;
	const struct ir_tensor *y = &g->tensors[op->out[0]];
	if (y->rank < 3 || y->shape[1] < 2 || matmul_input(g, op, 0, y->shape[1]) < 0 ||
	    matmul_input(g, op, 1, y->shape[1]) < 0)
		return 0;
	return y->shape[1];
}

/* Output channels of op when it can run in chunks of them, else 0: a Conv
 * of one group or a Gemm with B [N,K] (transB = 1), with weights and an
 * optional rank-1 bias, every weight whose first axis has that many entries
 * split with the output; or a chanwise op whose inputs all split or
 * broadcast (chan_input). */
static int64_t splittable(const struct ir_graph *g, const struct ir_op *op)
{
	if (op->type == OP_MATMUL)
		return matmul_split(g, op);
	if (chanwise(g, op)) {
		int64_t oc = g->tensors[op->out[0]].shape[1];
		for (int i = 0; i < op->n_in; i++)
			if (chan_input(g, op, i, oc) < 0)
				return 0;
		return oc > 1 ? oc : 0;
	}
	if (op->n_in < 2 || !cg_is_weight(g, op->in[1]) || op->n_out != 1)
		return 0;
	const struct ir_tensor *w = &g->tensors[op->in[1]], *y = &g->tensors[op->out[0]];
	if (op->type == OP_CONV) {
		if (op_int(op, "group", 1) != 1 || y->rank != 4)
			return 0;
	} else if (op->type == OP_GEMM) {
		if (!op_int(op, "transB", 0) || y->rank != 2 || w->rank != 2)
			return 0;
		if (op->n_in > 2 && op->in[2] >= 0 && g->tensors[op->in[2]].rank != 1 &&
		    !(cg_is_weight(g, op->in[2]) && g->tensors[op->in[2]].rank == 2 &&
		      g->tensors[op->in[2]].shape[1] == 3))
			return 0;
	} else {
		return 0;
	}
	return w->shape[0] == y->shape[1] ? w->shape[0] : 0;
}

/* Whether input i is split with the output channels (oc from splittable). */
static int input_split(const struct ir_graph *g, const struct ir_op *op, int i, int64_t oc)
{
	int t = op->in[i];
	if (oc <= 0 || t < 0)
		return 0;
	if (op->type == OP_MATMUL)
		return matmul_input(g, op, i, oc) == 1;
	if (chanwise(g, op))
		return chan_input(g, op, i, oc) == 1;
	return i > 0 && cg_is_weight(g, t) && g->tensors[t].rank >= 1 &&
	       g->tensors[t].shape[0] == oc;
}

/* Fill p->max_in and p->need for the cut in p. */
static void footprint(const struct gen *cg, const struct ir_op *op, struct plan *p)
{
	const struct ir_graph *g = cg->g;
	int sl = cg_sliceable(g, op);
	int64_t oc = p->chunks > 1 ? splittable(g, op) : 0;
	int oh = (int)g->tensors[op->out[0]].shape[2];
	int mi = 0;
	if (sl)
		for (int s = 0; s < p->n_slices; s++) {
			int a, b, o1 = (s + 1) * p->rows < oh ? (s + 1) * p->rows : oh;
			cg_in_rows(cg, op, s * p->rows, o1, &a, &b);
			if (b - a > mi)
				mi = b - a;
		}
	int64_t fixed = 0, per = 0;
	for (int i = 0; i < op->n_in; i++) {
		int t = op->in[i];
		if (t < 0)
			continue;
		if (sl && cg_input_sliced(g, op, i))
			per += cg_held_bytes(cg, t, isa_slice_axis(g, op, i), mi,
					     input_split(g, op, i, oc) ? p->chans : -1);
		else if (input_split(g, op, i, oc))
			per += cg_lane_bytes(cg, t, -1, p->chans);
		else
			fixed += cg_lane_bytes(cg, t, -1, -1);
	}
	for (int i = 0; i < op->n_out; i++)
		per += cg_lane_bytes(cg, op->out[i], sl ? p->rows : -1, oc ? p->chans : -1);
	p->max_in = mi;
	p->need = fixed + (int64_t)p->bufs * per;
}

/* Operand addresses for plan p with the op's region at base: whole
 * operands first, then each buffer's sliced and split operands. */
void cg_op_lay_out(const struct gen *cg, int oi, const struct plan *p, int64_t base, int high,
		   struct layout *L)
{
	const struct ir_graph *g = cg->g;
	const struct ir_op *op = &g->ops[oi];
	int n_op = op->n_in + op->n_out;
	memset(L, 0, sizeof *L);
	L->op = oi;
	L->sl = cg_sliceable(g, op);
	L->oc = p->chunks > 1 ? splittable(g, op) : 0;
	L->p = *p;
	L->base = base;
	int64_t at = base;
	for (int i = 0; i < n_op; i++) {
		struct opnd *o = &L->od[i];
		o->t = i < op->n_in ? op->in[i] : op->out[i - op->n_in];
		o->addr[0] = o->addr[1] = ISA_NO_ADDR;
		if (o->t < 0 || p->flat)
			continue;
		cg_lane_shape(g, o->t, o->s);
		o->sliced = L->sl && (i >= op->n_in || cg_input_sliced(g, op, i));
		o->split = L->oc && (i >= op->n_in || input_split(g, op, i, L->oc));
		if (!o->sliced && !o->split)
			o->addr[0] = o->addr[1] = cg_place(&at, cg_lane_bytes(cg, o->t, -1, -1), base,
							    p->need, high);
	}
	for (int b = 0; b < p->bufs; b++)
		for (int i = 0; i < n_op; i++) {
			struct opnd *o = &L->od[i];
			if (o->t < 0 || (!o->sliced && !o->split))
				continue;
			int64_t size = cg_held_bytes(cg, o->t, isa_slice_axis(g, op, i),
						     !o->sliced ? -1 : i >= op->n_in ? p->rows : p->max_in,
						     o->split ? p->chans : -1);
			o->addr[b] = cg_place(&at, size, base, p->need, high);
		}
	if (p->bufs == 1)
		for (int i = 0; i < n_op; i++)
			L->od[i].addr[1] = L->od[i].addr[0];
}

/* The op's unsplit, unsliced inputs not loaded yet; the first waits for
 * `wait`.  With only_before >= 0, only weights and activations written by
 * ops before that op (whose stores are already in the stream). */
int cg_op_load(struct gen *cg, struct layout *L, uint32_t wait, int only_before,
	       int64_t *budget, const int64_t *avoid)
{
	const struct ir_op *op = &cg->g->ops[L->op];
	for (int i = 0; i < op->n_in && !L->p.flat; i++) {
		struct opnd *o = &L->od[i];
		if (o->t < 0 || o->sliced || o->split || L->loaded[i])
			continue;
		if (only_before >= 0 && !cg_is_weight(cg->g, o->t)) {
			int prod = cg_producer(cg, o->t);
			if (prod < L->op && prod >= only_before)
				continue;
		}
		int r = cg_load_whole(cg, o->t, o->addr[0], &wait, budget, avoid,
				      cg_is_weight(cg->g, o->t) ? &L->done[i] : NULL);
		if (r < 0 || r == CG_STOP)
			return r < 0 ? -1 : 0;
		L->loaded[i] = r == CG_LOADED;
	}
	return 0;
}

/* Generate the op of layout L: its remaining whole loads (the first waits
 * for `wait`), then per step (chunk j, slice s): the chunk's weights when s
 * is 0, the slice's input rows, the compute, the output rows and channels.
 * Step t uses buffer t % bufs for rows and outputs, buffer j % bufs for the
 * chunk's weights; its loads wait for the compute of step t - bufs, which
 * is after the last reader of either buffer.  Between each compute and its
 * store, the next unit's whole inputs (pf) load for as many DMA cycles as
 * the compute leaves the DMA engine free, by the cost model; at the last
 * step, at least its first op's. */
static int flat_gen(struct gen *cg, struct layout *L, uint32_t wait, struct prefetch *pf);

int cg_op_gen(struct gen *cg, struct layout *L, uint32_t wait, struct prefetch *pf)
{
	const struct ir_graph *g = cg->g;
	const struct ir_op *op = &g->ops[L->op];
	const struct plan *p = &L->p;
	struct opnd *od = L->od;
	int sl = L->sl, n_op = op->n_in + op->n_out, n = p->n_slices * p->chunks;
	if (p->flat)
		return flat_gen(cg, L, wait, pf);
	int oh = (int)g->tensors[op->out[0]].shape[2];
	int had = cg->n_dma;
	if (cg_op_load(cg, L, wait, -1, NULL, NULL) < 0)
		return -1;
	if (cg->n_dma > had)
		wait = 0;

	uint32_t *cmp_id = xmalloc(sizeof(uint32_t) * (size_t)(n + 1));
	uint32_t *load_end = xmalloc(sizeof(uint32_t) * (size_t)(n + 1));
	int64_t *load_cy = xmalloc(sizeof(int64_t) * (size_t)(n + 1));
	int rc = -1;
#define SLICE(t) ((t) % p->n_slices)
#define CHUNK(t) ((t) / p->n_slices)
#define OROW0(t) (SLICE(t) * p->rows)
#define OROW1(t) (OROW0(t) + p->rows < oh ? OROW0(t) + p->rows : oh)
#define CH0(t) (CHUNK(t) * p->chans)
#define CH1(t) (CH0(t) + p->chans < L->oc ? CH0(t) + p->chans : (int)L->oc)
	for (int s = 0; s < n + p->bufs; s++) {
		if (s < n) {
			uint32_t w = s >= p->bufs ? cmp_id[s - p->bufs] : wait;
			int a = 0, b = 0;
			if (sl)
				cg_in_rows(cg, op, OROW0(s), OROW1(s), &a, &b);
			for (int i = 0; i < op->n_in; i++) {
				struct opnd *o = &od[i];
				if (o->t < 0 || (!o->sliced && !(o->split && SLICE(s) == 0)))
					continue;
				int buf = (o->sliced ? s : CHUNK(s)) % p->bufs;
				if (cg_emit_dma_ax(cg, ISA_DMA_LOAD, o->t, isa_slice_axis(g, op, i),
						   o->sliced ? a : -1, b, o->split ? CH0(s) : -1, CH1(s),
						   o->addr[buf], w) < 0)
					goto out;
				w = 0;
			}
			wait = 0;
			load_end[s] = (uint32_t)cg->n_dma;
			load_cy[s] = cg->dma_cycles;
		}
		/* Compute step c once steps up to c + bufs - 1 are loaded. */
		int c = s - p->bufs + 1;
		if (c < 0 || c >= n)
			continue;
		struct isa_cmp *k = cg_new_cmp(cg, L->op, load_end[c]);
		for (int i = 0; i < n_op; i++) {
			/* Split weights change per chunk, everything else per step. */
			int buf = (i < op->n_in && !od[i].sliced ? CHUNK(c) : c) % p->bufs;
			k->addr[i] = od[i].addr[buf];
		}
		for (int i = 0; i < n_op; i++) {
			if (od[i].t >= 0 && od[i].sliced)
				k->sliced |= 1u << i;
			if (od[i].t >= 0 && od[i].split)
				k->chsplit |= 1u << i;
		}
		if (sl) {
			int a, b;
			cg_in_rows(cg, op, OROW0(c), OROW1(c), &a, &b);
			k->out_row0 = OROW0(c);
			k->out_rows = OROW1(c) - OROW0(c);
			k->in_row0 = a;
			k->in_rows = b - a;
			for (int i = 0; i < n_op; i++)
				if (k->sliced >> i & 1) {
					k->row0[i] = i < op->n_in ? a : k->out_row0;
					k->rows[i] = i < op->n_in ? b - a : k->out_rows;
				}
		} else {
			k->out_rows = (int)od[op->n_in].s[2];
			k->in_rows = (int)od[0].s[2];
		}
		if (L->oc) {
			k->ch0 = CH0(c);
			k->chans = CH1(c) - CH0(c);
		}
		cmp_id[c] = k->id;
		/* The DMA engine is free for what the compute leaves over. */
		int64_t spare = cost_cmp_cycles(cg->c, g, k) - (cg->dma_cycles - load_cy[c]);
		if (cg_prefetch(cg, pf, spare > 0 ? spare : 0, c == n - 1) < 0)
			goto out;
		for (int i = 0; i < op->n_out; i++) {
			struct opnd *o = &od[op->n_in + i];
			if (cg_emit_dma(cg, ISA_DMA_STORE, o->t, sl ? OROW0(c) : -1, OROW1(c),
				     L->oc ? CH0(c) : -1, CH1(c), o->addr[c % p->bufs],
				     i == 0 ? k->id : 0) < 0)
				goto out;
		}
	}
#undef SLICE
#undef CHUNK
#undef OROW0
#undef OROW1
#undef CH0
#undef CH1
	L->last_cmp = cmp_id[n - 1];
	rc = 0;
out:
	free(cmp_id);
	free(load_end);
	free(load_cy);
	return rc;
}

/* A copy op in flat chunks (the last fallback): rows of FLAT_ROW bytes
 * (fewer when half of local memory is less, a multiple of the vector
 * width), up to half of local memory per lane; a chunk is a block
 * [1, C, H, W] of C * H * W consecutive elements, channel c holding H rows
 * of W. */
#define FLAT_ROW 4096

/* Row width w (elements of dtype dt) and most rows per lane *rmax. */
static void flat_geom(const struct gen *cg, enum ir_dtype dt, int64_t *w, int64_t *rmax)
{
	int64_t half = cg->c->lmem_bytes / 2, row = FLAT_ROW < half ? FLAT_ROW : half;
	row = row / cg->c->vec_bytes * cg->c->vec_bytes;
	if (row < cg->c->vec_bytes)
		row = cg->c->vec_bytes;
	*w = row / (int64_t)dtype_size(dt);
	*rmax = half / row > 1 ? half / row : 1;
}

/* Elements of the chunk `at` elements into a tensor of `total`, with
 * block shape blk; rmax rows per lane at most. */
static int64_t flat_chunk(const struct gen *cg, int64_t total, int64_t at, int64_t w,
			  int64_t rmax, int64_t blk[4])
{
	int64_t left = total - at, lanes = cg->c->lanes;
	blk[0] = 1;
	if (left >= lanes * w) {
		int64_t h = left / (lanes * w);
		blk[1] = lanes;
		blk[2] = h < rmax ? h : rmax;
		blk[3] = w;
	} else if (left >= w) {
		blk[1] = left / w;
		blk[2] = 1;
		blk[3] = w;
	} else {
		blk[1] = 1;
		blk[2] = 1;
		blk[3] = left;
	}
	return blk[1] * blk[2] * blk[3];
}

/* One load and store of a copy: block blk from element src of the source
 * with channel and batch strides scs, sns (elements) to element dst of the
 * destination with dcs, dns. */
struct flat_step {
	int64_t src, dst, blk[4], scs, sns, dcs, dns;
};

/* The steps of copy piece pc (elements of dtype dt) into *out (the
 * caller frees it); returns their count.  A piece of several runs whose
 * run fits one block row and half of local memory moves strided: run r
 * of a block is its channel r mod lanes, batch item r / lanes (cstride the
 * run's step, nstride lanes steps), so that one command moves up to
 * lanes x (half of local memory / row pitch) runs however short they are;
 * the runs left once that many fit one block (and C's 16 bits) move as
 * one block [1, C, 1, L], run r in channel r, the same bytes in the same
 * lane slots with no second command for a count not a multiple of lanes.
 * Otherwise each run moves in flat chunks. */
/* 1 when copy piece pc finds its bytes in place: addr-assign put its
 * destination's run where the source's lies (lib/back/addr.c).  Before
 * addresses (timing for layergroup), when addr-assign can put it so. */
static int piece_in_place(const struct gen *cg, const struct isa_piece *pc)
{
	const struct ir_tensor *x = &cg->g->tensors[pc->src], *y = &cg->g->tensors[pc->dst];
	int64_t es = (int64_t)dtype_size(x->dtype), off;
	int inner, outer;
	if (cg->estimate && (x->addr < 0 || y->addr < 0))
		return addr_copy_nest(cg->g, pc, &inner, &outer, &off);
	return x->addr >= 0 && y->addr >= 0 && (pc->reps == 1 || pc->src_step == pc->dst_step) &&
	       x->addr + pc->src_at * es == y->addr + pc->dst_at * es;
}

static int64_t flat_steps(const struct gen *cg, const struct isa_piece *pc, enum ir_dtype dt,
			  struct flat_step **out)
{
	int64_t w, rmax, lanes = cg->c->lanes, half = cg->c->lmem_bytes / 2, n = 0, cap = 0;
	int64_t len = pc->n, reps = pc->reps, ss = pc->src_step, ds = pc->dst_step;
	struct flat_step *v = NULL;
	*out = NULL;
	if (len <= 0 || reps <= 0 || piece_in_place(cg, pc))
		return 0;
	flat_geom(cg, dt, &w, &rmax);
	if (reps > 1 && ss == len && ds == len) {  /* the runs abut on both sides: one run */
		len *= reps;
		reps = 1;
	}
	int64_t pitch = isa_pitch(cg->c, dt, len), most = pitch ? half / pitch : 0;
	int strided = reps > 1 && len < (1 << 16) && most >= 1 && ss >= 0 && ds >= 0 &&
		      lanes * ss <= UINT32_MAX && lanes * ds <= UINT32_MAX;
	if (most > (1 << 16) - 1)
		most = (1 << 16) - 1;
	for (int64_t r = 0; r < reps;) {
		int64_t at = 0, total = strided ? 1 : len;
		do {
			if (n == cap) {
				cap = cap ? 2 * cap : 16;
				v = xrealloc(v, sizeof *v * (size_t)cap);
			}
			struct flat_step *st = &v[n++];
			st->src = pc->src_at + r * ss + at;
			st->dst = pc->dst_at + r * ds + at;
			if (strided) {
				int64_t left = reps - r, k = left / lanes < most ? left / lanes : most;
				if (left <= lanes * most && left < (1 << 16))
					k = 0;  /* the rest in one block, run r in channel r */
				st->blk[0] = k ? k : 1;
				st->blk[1] = k ? lanes : left;
				st->blk[2] = 1;
				st->blk[3] = len;
				st->scs = ss;
				st->dcs = ds;
				st->sns = lanes * ss;
				st->dns = lanes * ds;
				r += st->blk[0] * st->blk[1];
				break;
			}
			at += flat_chunk(cg, total, at, w, rmax, st->blk);
			st->scs = st->dcs = st->blk[2] * st->blk[3];
			st->sns = st->dns = st->blk[1] * st->scs;
		} while (at < total);
		if (!strided)
			r++;
	}
	*out = v;
	return n;
}

static void flat_plan(const struct gen *cg, const struct ir_op *op, struct plan *p)
{
	int64_t need = 0;
	memset(p, 0, sizeof *p);
	p->flat = 1;
	p->bufs = 1;
	p->chunks = 1;
	p->rows = 1;
	struct isa_piece *pc;
	int np = isa_copy_pieces(cg->g, op, &pc);
	for (int i = 0; i < np; i++) {
		enum ir_dtype dt = cg->g->tensors[pc[i].src].dtype;
		struct flat_step *st;
		int64_t ns = flat_steps(cg, &pc[i], dt, &st);
		for (int64_t j = 0; j < ns; j++) {
			int64_t nd = align_to(isa_lane_bytes(cg->c, dt, st[j].blk), LMEM_ALIGN);
			if (nd > need)
				need = nd;
			if (st[j].blk[2] > p->rows)
				p->rows = (int)st[j].blk[2];
		}
		p->n_slices += (int)ns;
		free(st);
	}
	free(pc);
	p->need = need;
}

/* Generate a flat copy: per step of each piece (flat_steps) a load into
 * the op's region and a store from it to the output, the pieces one after
 * the other; the DMA engine runs them in order, so only the first load
 * waits (for `wait`).  pf's inputs load after the last store. */
static int flat_gen(struct gen *cg, struct layout *L, uint32_t wait, struct prefetch *pf)
{
	const struct ir_op *op = &cg->g->ops[L->op];
	uint32_t lmem = (uint32_t)L->base;
	struct isa_piece *pc = NULL;
	int np = cg_copy_skipped(cg, L->op) ? 0 : isa_copy_pieces(cg->g, op, &pc), rc = 0;
	for (int i = 0; i < np && !rc; i++) {
		const struct ir_tensor *x = &cg->g->tensors[pc[i].src];
		const struct ir_tensor *y = &cg->g->tensors[pc[i].dst];
		int64_t es = (int64_t)dtype_size(x->dtype);
		int64_t xa = cg->estimate && x->addr < 0 ? 0 : x->addr;
		int64_t ya = cg->estimate && y->addr < 0 ? 0 : y->addr;
		struct flat_step *st;
		int64_t ns = flat_steps(cg, &pc[i], x->dtype, &st);
		for (int64_t j = 0; j < ns && !rc; j++) {
			if (cg_emit_dma_raw(cg, ISA_DMA_LOAD, x->dtype, xa + st[j].src * es, lmem,
					    st[j].blk, st[j].scs, st[j].sns, wait, x->name) < 0 ||
			    cg_emit_dma_raw(cg, ISA_DMA_STORE, y->dtype, ya + st[j].dst * es, lmem,
					    st[j].blk, st[j].dcs, st[j].dns, 0, y->name) < 0)
				rc = -1;
			wait = 0;
		}
		free(st);
	}
	free(pc);
	if (rc)
		return -1;
	L->last_cmp = 0;
	return cg_prefetch(cg, pf, -1, 1);
}

/* Cycles of plan p for op oi generated alone, by the cost model. */
static int64_t plan_cycles(const struct gen *cg, int oi, const struct plan *p)
{
	struct gen t = { .g = cg->g, .c = cg->c, .estimate = cg->estimate };
	struct layout L;
	cg_op_lay_out(cg, oi, p, 0, 0, &L);
	struct prefetch none = { 0 };
	int64_t cy = cg_op_gen(&t, &L, 0, &none) < 0 ? -1 :
		     cost_time(cg->c, cg->g, t.dma, t.n_dma, t.cmp, t.n_cmp);
	cg_free(&t);
	return cy;
}

/* 1 when an operand of op has rows longer than a DMA block's 16-bit W
 * field: no cut along H or the channels moves it, only flat chunks (copy
 * ops) or a rewrite in lower_fit (refolded elementwise ops, K parts).  An
 * input sliced along axis 3 (a Transpose's) moves in blocks of its slice's
 * rows instead. */
static int rows_too_long(const struct ir_graph *g, const struct ir_op *op)
{
	int sl = cg_sliceable(g, op);
	for (int i = 0; i < op->n_in + op->n_out; i++) {
		int t = i < op->n_in ? op->in[i] : op->out[i - op->n_in];
		int64_t s[4];
		if (t < 0 || (sl && i < op->n_in && cg_input_sliced(g, op, i) &&
			      isa_slice_axis(g, op, i) == 3))
			continue;
		cg_lane_shape(g, t, s);
		if (s[3] >= (1 << 16))
			return 1;
	}
	return 0;
}

/* The cut of op oi with the fewest cycles by the cost model, generated
 * alone, among those that fit (ties: fewer steps): slices along H with all
 * output channels; only when none fits, chunks of output channels (a
 * multiple of the lanes) too; last, one row per slice in one buffer.
 * With best NULL, only whether one fits: the first that does (generated
 * once, so that a cut the ISA cannot encode still fails).  Fails naming
 * the op when nothing fits. */
int cg_op_plan(const struct gen *cg, int oi, struct plan *best, int64_t *cycles)
{
	const struct ir_graph *g = cg->g;
	const struct ir_op *op = &g->ops[oi];
	int lanes = cg->c->lanes;
	int oh = cg_sliceable(g, op) ? (int)g->tensors[op->out[0]].shape[2] : 1;
	int64_t oc = splittable(g, op), best_t = -1, least = -1;
	int max_chunks = oc ? (int)ceil_div(oc, lanes) : 1;
	struct plan p = { 0 };
	int passes = rows_too_long(g, op) ? 0 : 3;
	struct isa_piece *pcs;
	int npc = isa_copy_pieces(g, op, &pcs), moved = 0;
	for (int i = 0; i < npc; i++)
		moved += !piece_in_place(cg, &pcs[i]);
	free(pcs);
	if (npc > 0 && !moved)
		passes = 0;     /* a copy in place: the flat plan, no steps */
	for (int pass = 0; pass < passes && best_t < 0; pass++)
		for (int ch = pass == 1 ? 2 : 1; ch <= (pass == 1 ? max_chunks : 1) && best_t < 0; ch++) {
			int chans = ch > 1 ? (int)(ceil_div(ceil_div(oc, lanes), ch) * lanes) : 0;
			if (ch > 1 && (chans >= oc || ceil_div(oc, chans) != ch))
				continue;
			for (int n = 1; n <= oh; n++) {
				int rows = (oh + n - 1) / n;
				if ((oh + rows - 1) / rows != n || (pass == 2 && n < oh))
					continue;
				p.n_slices = n;
				p.rows = rows;
				p.chunks = ch;
				p.chans = chans;
				p.bufs = n * ch > 1 && pass < 2 ? 2 : 1;
				footprint(cg, op, &p);
				if (least < 0 || p.need < least)
					least = p.need;
				if (p.need > cg->c->lmem_bytes)
					continue;
				int64_t cy = plan_cycles(cg, oi, &p);
				if (cy < 0)
					return -1;
				if (!best)
					return 0;   /* only whether one fits */
				if (best_t < 0 || cy < best_t) {
					best_t = cy;
					*best = p;
				}
			}
		}
	if (npc > 0 && (best_t < 0 || best)) {
		/* a copy: by the DMA engine alone when nothing else fits or
		 * when that finishes first */
		int64_t cy;
		flat_plan(cg, op, &p);
		if ((cy = plan_cycles(cg, oi, &p)) < 0)
			return -1;
		if (best_t < 0 || cy < best_t) {
			best_t = cy;
			if (best)
				*best = p;
		}
	}
	if (best_t >= 0) {
		if (cycles)
			*cycles = best_t;
		return 0;
	}
	if (!passes) {
		err_set("op '%s' (%s) does not fit local memory: it has rows longer than a DMA "
			"block's 65535 elements", op->name, op_name(op->type));
		return -2;
	}
	char need[32], have[32];
	addr_fmt_size(need, sizeof need, least);
	addr_fmt_size(have, sizeof have, cg->c->lmem_bytes);
	err_set("op '%s' (%s) does not fit local memory: it needs at least %s per lane, "
		"chip '%s' has %s", op->name, op_name(op->type), need, cg->c->name, have);
	return -2;
}

/* Check that op oi can be generated at all. */
int cg_op_check(const struct ir_graph *g, int oi)
{
	const struct ir_op *op = &g->ops[oi];
	if (!op_defs[op->type]->run_tpu)
		return err_set("op '%s' (%s) has no chip kernel", op->name, op_name(op->type));
	if (op->n_in + op->n_out > ISA_MAX_OPERANDS)
		return err_set("op '%s' (%s) has %d operands, a compute command takes %d",
			       op->name, op_name(op->type), op->n_in + op->n_out, ISA_MAX_OPERANDS);
	if (op->n_in < 1 || op->in[0] < 0)
		return err_set("op '%s' (%s) has no input", op->name, op_name(op->type));
	return 0;
}

