/* codegen_op.c - code generation for one op at a time (lib/codegen_int.h):
 * its output cut into slices of rows along H and, when the weights do not
 * fit, into chunks of output channels, double buffered so that the DMA
 * engine moves one step's data while the compute engine runs another.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addr.h"
#include "base.h"
#include "codegen_int.h"
#include "op.h"
#include "sim.h"

/* Output channels of op when it can run in chunks of them, else 0: a Conv
 * of one group or a Gemm with B [N,K] (transB = 1), with weights and an
 * optional rank-1 bias; every weight whose first axis has that many entries
 * is split with the output. */
static int64_t splittable(const struct ir_graph *g, const struct ir_op *op)
{
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
	return oc > 0 && i > 0 && cg_is_weight(g, t) && g->tensors[t].rank >= 1 &&
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
			per += cg_lane_bytes(cg, t, mi, -1);
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
		if (o->t < 0)
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
			int64_t size = cg_lane_bytes(cg, o->t, !o->sliced ? -1 : i >= op->n_in ? p->rows :
						     p->max_in, o->split ? p->chans : -1);
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
	for (int i = 0; i < op->n_in; i++) {
		struct opnd *o = &L->od[i];
		if (o->t < 0 || o->sliced || o->split || L->loaded[i])
			continue;
		if (only_before >= 0 && !cg_is_weight(cg->g, o->t)) {
			int prod = -1;
			for (int j = 0; j < L->op && prod < 0; j++)
				for (int k = 0; k < cg->g->ops[j].n_out; k++)
					if (cg->g->ops[j].out[k] == o->t)
						prod = j;
			if (prod >= only_before)
				continue;
		}
		if (avoid && o->addr[0] < avoid[1] &&
		    avoid[0] < o->addr[0] + cg_lane_bytes(cg, o->t, -1, -1))
			continue;
		if (budget) {
			int64_t cy = cg_load_cycles(cg, o->t);
			if (cy > *budget)
				return 0;
			*budget -= cy;
		}
		if (cg_emit_dma(cg, ISA_DMA_LOAD, o->t, -1, -1, -1, -1, o->addr[0], wait) < 0)
			return -1;
		L->loaded[i] = 1;
		wait = 0;
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
int cg_op_gen(struct gen *cg, struct layout *L, uint32_t wait, struct prefetch *pf)
{
	const struct ir_graph *g = cg->g;
	const struct ir_op *op = &g->ops[L->op];
	const struct plan *p = &L->p;
	struct opnd *od = L->od;
	int sl = L->sl, n_op = op->n_in + op->n_out, n = p->n_slices * p->chunks;
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
				if (cg_emit_dma(cg, ISA_DMA_LOAD, o->t, o->sliced ? a : -1, b,
					     o->split ? CH0(s) : -1, CH1(s), o->addr[buf], w) < 0)
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
		int64_t spare = sim_cmp_cycles(cg->c, g, k) - (cg->dma_cycles - load_cy[c]);
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

/* Cycles of plan p for op oi generated alone, by the cost model. */
static int64_t plan_cycles(const struct gen *cg, int oi, const struct plan *p)
{
	struct gen t = { .g = cg->g, .c = cg->c, .estimate = cg->estimate };
	struct layout L;
	cg_op_lay_out(cg, oi, p, 0, 0, &L);
	struct prefetch none = { 0 };
	int64_t cy = cg_op_gen(&t, &L, 0, &none) < 0 ? -1 :
		     sim_time(cg->c, cg->g, t.dma, t.n_dma, t.cmp, t.n_cmp);
	cg_free(&t);
	return cy;
}

/* The cut of op oi with the fewest cycles by the cost model, generated
 * alone, among those that fit (ties: fewer steps): slices along H with all
 * output channels; only when none fits, chunks of output channels (a
 * multiple of the lanes) too; last, one row per slice in one buffer.
 * Fails naming the op when nothing fits. */
int cg_op_plan(const struct gen *cg, int oi, struct plan *best, int64_t *cycles)
{
	const struct ir_graph *g = cg->g;
	const struct ir_op *op = &g->ops[oi];
	int lanes = cg->c->lanes;
	int oh = cg_sliceable(g, op) ? (int)g->tensors[op->out[0]].shape[2] : 1;
	int64_t oc = splittable(g, op), best_t = -1, least = -1;
	int max_chunks = oc ? (int)ceil_div(oc, lanes) : 1;
	struct plan p = { 0 };
	for (int pass = 0; pass < 3 && best_t < 0; pass++)
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
				if (best_t < 0 || cy < best_t) {
					best_t = cy;
					*best = p;
				}
			}
		}
	if (best_t >= 0) {
		if (cycles)
			*cycles = best_t;
		return 0;
	}
	char need[32], have[32];
	addr_fmt_size(need, sizeof need, least);
	addr_fmt_size(have, sizeof have, cg->c->lmem_bytes);
	return err_set("op '%s' (%s) does not fit local memory: it needs at least %s per lane, "
		       "chip '%s' has %s", op->name, op_name(op->type), need, cg->c->name, have);
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

