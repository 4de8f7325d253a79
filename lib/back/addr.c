/* addr.c - addr-assign: coefficient packing and lifetime-based reuse of
 * activation memory (lib/back/addr.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "back/addr.h"
#include "back/groups.h"
#include "chip/isa.h"
#include "chip/isa_copy.h"
#include "ir/base.h"

struct live {
	int t;            /* tensor index */
	int first, last;  /* op indices: written by first, last read by last */
	int64_t size;     /* bytes, aligned */
	int64_t off;      /* offset in the neuron region, -1 unplaced */
};

/* A placed tensor: its bytes [off, end) over ops [first, last]. */
struct placed {
	int64_t off, end;
	int first, last;
};

/* Largest first; ties by first use, then tensor index (deterministic). */
static int by_size(const void *a, const void *b)
{
	const struct live *x = a, *y = b;
	if (x->size != y->size)
		return x->size > y->size ? -1 : 1;
	if (x->first != y->first)
		return x->first < y->first ? -1 : 1;
	return x->t - y->t;
}

void addr_fmt_size(char *buf, size_t cap, int64_t bytes)
{
	static const char *const unit[] = { "KiB", "MiB", "GiB", "TiB" };
	if (bytes < 1024) {
		snprintf(buf, cap, "%lld B", (long long)bytes);
		return;
	}
	double v = (double)bytes / 1024;
	int u = 0;
	while (v >= 1023.995 && u < 3) {
		v /= 1024;
		u++;
	}
	snprintf(buf, cap, v >= 99.95 ? "%.0f %s" : v >= 9.995 ? "%.1f %s" : "%.2f %s", v, unit[u]);
}


/* The tensor at the top of t's chain of parents (par, tensor-indexed, -1
 * none), with t's byte offset in it in *off. */
static int alias_root(const int *par, const int64_t *poff, int t, int64_t *off)
{
	*off = 0;
	while (par[t] >= 0) {
		*off += poff[t];
		t = par[t];
	}
	return t;
}

/* 1 when tensor t is a graph input or output. */
static int graph_io(const struct ir_graph *g, int t)
{
	for (int i = 0; i < g->n_inputs; i++)
		if (g->inputs[i] == t)
			return 1;
	for (int i = 0; i < g->n_outputs; i++)
		if (g->outputs[i] == t)
			return 1;
	return 0;
}

/* 1 when only host ops read tensor t, directly or through at most depth
 * copies (isa_is_copy) whose results only host ops read so: the chip's
 * DMA engine never moves it, and the host reads DDR at any byte. */
static int host_read(const struct ir_graph *g, int t, int depth)
{
	int n = 0;
	for (int o = 0; o < g->n_ops; o++) {
		const struct ir_op *op = &g->ops[o];
		for (int j = 0; j < op->n_in; j++) {
			if (op->in[j] != t)
				continue;
			n++;
			if (op->place == PLACE_HOST)
				continue;
			if (depth <= 0 || op->n_out != 1 || isa_is_copy(g, op) != op->n_in ||
			    !host_read(g, op->out[0], depth - 1))
				return 0;
		}
	}
	return n > 0 && !graph_io(g, t);
}

int addr_copy_nest(const struct ir_graph *g, const struct isa_piece *p, int *inner, int *outer,
		   int64_t *off)
{
	const struct ir_tensor *x = &g->tensors[p->src], *y = &g->tensors[p->dst];
	int64_t es = (int64_t)dtype_size(x->dtype);
	if (p->reps != 1 || x->data || y->data || x->dyn || y->dyn)
		return 0;
	if (p->src_at == 0 && p->n == tensor_numel(x)) {
		*inner = p->src, *outer = p->dst, *off = p->dst_at * es;
	} else if (p->dst_at == 0 && p->n == tensor_numel(y)) {
		*inner = p->dst, *outer = p->src, *off = p->src_at * es;
	} else {
		return 0;
	}
	/* a part taken out (a Slice's output) that only the host reads may
	 * start at any byte */
	int any = *inner == p->dst && host_read(g, *inner, 2);
	return (*off % ADDR_ALIGN == 0 || any) && !graph_io(g, *inner);
}

/* In-place copies: for each copy op the DMA engine performs alone
 * (isa_copy_pieces), the last ones first, each piece addr_copy_nest
 * takes puts its inner tensor inside its outer one, when both are in DDR
 * (idx >= 0), the inner one is inside no other yet (or only at offset 0
 * of one of its own size, which then goes inside instead) and the outer
 * one is not inside it.  par[t] and poff[t] receive the outer tensor and t's
 * byte offset in it. */
static void alias_copies(const struct ir_graph *g, const int *idx, int *par, int64_t *poff)
{
	for (int o = g->n_ops - 1; o >= 0; o--) {
		const struct ir_op *op = &g->ops[o];
		struct isa_piece *pc;
		if (op->place == PLACE_HOST)
			continue;
		int np = isa_copy_pieces(g, op, &pc);
		for (int i = 0; i < np; i++) {
			int in, out;
			int64_t off, ignore;
			if (!addr_copy_nest(g, &pc[i], &in, &out, &off) || idx[in] < 0 || idx[out] < 0)
				continue;
			/* an inner tensor already at offset 0 of one of its size
			 * (a Reshape's input: Slice -> Reshape) takes that one
			 * along */
			int64_t at;
			int r = alias_root(par, poff, in, &at);
			if (r != in && (at != 0 || tensor_bytes(&g->tensors[r]) != tensor_bytes(&g->tensors[in])))
				continue;
			if (idx[r] < 0 || alias_root(par, poff, out, &ignore) == r)
				continue;
			par[r] = out;
			poff[r] = off;
		}
		free(pc);
	}
}

int addr_run_member(const struct ir_graph *g, const struct chip *c, int t)
{
	const struct ir_tensor *x = &g->tensors[t];
	int64_t s[4];
	if (!x->data || x->dyn)
		return 0;
	isa_lane_shape(x->rank, x->shape, 1, s);
	return s[0] == 1 && s[2] == 1 &&
	       (int64_t)tensor_bytes(x) <= (int64_t)c->dma_latency * c->ddr_bpc;
}

int64_t addr_run_stride(const struct ir_graph *g, const struct chip *c, int t)
{
	const struct ir_tensor *x = &g->tensors[t];
	int64_t s[4];
	isa_lane_shape(x->rank, x->shape, 1, s);
	return (s[1] + c->lanes - 1) / c->lanes * c->lanes * s[3] * (int64_t)dtype_size(x->dtype);
}

/* Whether weight u may follow weight t in a run (both members). */
static int run_follows(const struct ir_graph *g, const struct chip *c, int t, int u)
{
	const struct ir_tensor *x = &g->tensors[t], *y = &g->tensors[u];
	int64_t s[4], r[4];
	isa_lane_shape(x->rank, x->shape, 1, s);
	isa_lane_shape(y->rank, y->shape, 1, r);
	int64_t stride = addr_run_stride(g, c, t);
	/* the padding t's last slot adds costs at most half the start-up
	 * that loading u with t saves */
	return x->dtype == y->dtype && s[3] == r[3] && stride % ADDR_ALIGN == 0 &&
	       2 * (stride - (int64_t)tensor_bytes(x)) <= (int64_t)c->dma_latency * c->ddr_bpc &&
	       isa_lane_bytes(c, x->dtype, s) % ADDR_ALIGN == 0;
}

void addr_runs(const struct ir_graph *g, const struct chip *c, const int *wt, int n,
	       const char *skip, int *next)
{
	/* per open run: its last weight (index in wt) and the bytes it moves */
	int *last = xmalloc(sizeof(int) * (size_t)(n + 1));
	int64_t *bytes = xmalloc(sizeof(int64_t) * (size_t)(n + 1));
	int n_open = 0;
	int64_t cap = (int64_t)ADDR_RUN_LATENCIES * c->dma_latency * c->ddr_bpc;
	for (int i = 0; i < n; i++) {
		next[i] = -1;
		int t = wt[i];
		if ((skip && skip[t]) || !addr_run_member(g, c, t))
			continue;
		int64_t b = addr_run_stride(g, c, t);   /* what the run's DMA moves */
		int j = 0;
		while (j < n_open && !run_follows(g, c, wt[last[j]], t))
			j++;
		if (j < n_open && bytes[j] + b <= cap) {
			next[last[j]] = i;
			last[j] = i;
			bytes[j] += b;
			continue;
		}
		if (j == n_open)
			n_open++;
		last[j] = i;   /* a new run, in place of a full one */
		bytes[j] = b;
	}
	free(last);
	free(bytes);
}

/* Place the coefficients: tensor order, the runs of each group (addr_runs)
 * together at their first weight's place.  Returns the region's size. */
static int64_t place_coeffs(struct ir_graph *g, const struct chip *c)
{
	int *after = xmalloc(sizeof(int) * (size_t)(g->n_tensors + 1));
	char *inrun = xcalloc((size_t)g->n_tensors + 1, 1);  /* 1 member, 2 follows another */
	for (int i = 0; i < g->n_tensors; i++)
		after[i] = -1;
	struct lg_group *grp = NULL;
	int n_grp = 0;
	if (lg_groups(g, &grp, &n_grp) < 0)
		n_grp = 0;   /* no groups: no runs (codegen names the fault) */
	int *wt = NULL, *next = NULL, cap = 0;
	int *stamp = xmalloc(sizeof(int) * (size_t)(g->n_tensors + 1));
	for (int i = 0; i < g->n_tensors; i++)
		stamp[i] = -1;
	for (int k = 0; k < n_grp; k++) {
		if (grp[k].place != PLACE_LOCAL)
			continue;
		int n = 0;
		for (int o = grp[k].first; o < grp[k].first + grp[k].n_ops; o++)
			for (int i = 0; i < g->ops[o].n_in; i++) {
				int t = g->ops[o].in[i];
				if (t < 0 || !g->tensors[t].data || stamp[t] == k)
					continue;
				stamp[t] = k;
				if (n == cap) {
					cap = cap ? 2 * cap : 64;
					wt = xrealloc(wt, sizeof(int) * (size_t)cap);
					next = xrealloc(next, sizeof(int) * (size_t)cap);
				}
				wt[n++] = t;
			}
		addr_runs(g, c, wt, n, inrun, next);
		for (int i = 0; i < n; i++)
			if (next[i] >= 0) {
				after[wt[i]] = wt[next[i]];
				inrun[wt[i]] |= 1;
				inrun[wt[next[i]]] = 3;
			}
	}
	int64_t at = 0;
	for (int i = 0; i < g->n_tensors; i++)
		g->tensors[i].addr = -1;
	for (int i = 0; i < g->n_tensors; i++) {
		struct ir_tensor *t = &g->tensors[i];
		if (!t->data || t->addr >= 0 || inrun[i] & 2)
			continue;
		int u = i;
		for (;;) {
			g->tensors[u].addr = at;
			if (after[u] < 0)
				break;
			at += addr_run_stride(g, c, u);
			u = after[u];
		}
		at += align_to((int64_t)tensor_bytes(&g->tensors[u]), ADDR_ALIGN);
	}
	FREE_ALL(after, inrun, grp, wt, next, stamp);
	return at;
}

int addr_assign(struct ir_graph *g, const struct chip *c)
{
	/* Coefficients. */
	int64_t at = place_coeffs(g, c);
	g->coeff_bytes = at;

	/* Lifetimes of activations, in ops widened to whole layer groups: the
	 * ops of a local group run slice by slice, interleaved. */
	int *gfirst = xmalloc(sizeof(int) * (size_t)(g->n_ops + 1));
	int *glast = xmalloc(sizeof(int) * (size_t)(g->n_ops + 1));
	for (int o = 0; o < g->n_ops; o++) {
		int same = o > 0 && g->ops[o].group >= 0 && g->ops[o].group == g->ops[o - 1].group;
		gfirst[o] = same ? gfirst[o - 1] : o;
	}
	for (int o = g->n_ops - 1; o >= 0; o--) {
		int same = o + 1 < g->n_ops && g->ops[o].group >= 0 &&
			   g->ops[o].group == g->ops[o + 1].group;
		glast[o] = same ? glast[o + 1] : o;
	}
	int nt = g->n_tensors;
	/* The last op reading each tensor, n_ops for graph outputs. */
	int *used = xmalloc(sizeof(int) * (size_t)(nt + 1));
	for (int i = 0; i < nt; i++)
		used[i] = -1;
	for (int o = 0; o < g->n_ops; o++)
		for (int j = 0; j < g->ops[o].n_in; j++)
			if (g->ops[o].in[j] >= 0)
				used[g->ops[o].in[j]] = o;
	for (int i = 0; i < g->n_outputs; i++)
		used[g->outputs[i]] = g->n_ops;
	struct live *lv = xmalloc(sizeof *lv * (size_t)(nt + 1));
	int *idx = xmalloc(sizeof(int) * (size_t)(nt + 1));
	for (int i = 0; i < nt; i++)
		idx[i] = -1;
	int n = 0;
	for (int i = 0; i < g->n_inputs; i++) {
		int t = g->inputs[i];
		if (g->tensors[t].data || g->tensors[t].dyn || idx[t] >= 0)
			continue;
		idx[t] = n;
		lv[n++] = (struct live){ t, -1, -1, 0, -1 };
	}
	/* a tensor a local group loads from a copy's source (lg_forwards)
	 * keeps that source alive through the group */
	struct lg_fwd *fwd = lg_forwards(g);
	for (int o = 0; o < g->n_ops; o++) {
		const struct ir_op *op = &g->ops[o];
		for (int j = 0; j < op->n_in; j++) {
			int t = op->in[j];
			if (t >= 0 && idx[t] >= 0 && glast[o] > lv[idx[t]].last)
				lv[idx[t]].last = glast[o];
			if (t >= 0 && fwd[t].copy >= 0 && idx[fwd[t].src] >= 0 &&
			    glast[o] > lv[idx[fwd[t].src]].last)
				lv[idx[fwd[t].src]].last = glast[o];
		}
		/* Results a local group keeps in local memory need no DDR: those
		 * of its ops but the last that no op after the group reads. */
		int local_mid = op->place == PLACE_LOCAL && glast[o] != o;
		for (int j = 0; j < op->n_out; j++) {
			int t = op->out[j];
			/* a dynamic tensor lives in the host's memory, not in DDR */
			if (g->tensors[t].data || g->tensors[t].dyn || idx[t] >= 0 ||
			    (local_mid && used[t] <= glast[o]))
				continue;
			idx[t] = n;
			lv[n++] = (struct live){ t, gfirst[o], glast[o], 0, -1 };
		}
	}
	for (int i = 0; i < g->n_outputs; i++) {
		int t = g->outputs[i];
		if (idx[t] >= 0)
			lv[idx[t]].last = g->n_ops;
	}
	for (int i = 0; i < n; i++)
		lv[i].size = align_to((int64_t)tensor_bytes(&g->tensors[lv[i].t]), ADDR_ALIGN);

	/* A tensor inside another (alias_copies) widens the lifetime of the
	 * outermost one, which alone is placed; the inner ones go last. */
	int *par = xmalloc(sizeof(int) * (size_t)(nt + 1));
	int64_t *poff = xmalloc(sizeof(int64_t) * (size_t)(nt + 1));
	for (int i = 0; i < nt; i++)
		par[i] = -1;
	alias_copies(g, idx, par, poff);
	for (int i = 0; i < n; i++) {
		int64_t off;
		struct live *r = &lv[idx[alias_root(par, poff, lv[i].t, &off)]];
		if (r->first > lv[i].first)
			r->first = lv[i].first;
		if (r->last < lv[i].last)
			r->last = lv[i].last;
	}
	int nroot = 0;
	for (int i = 0; i < n; i++)
		if (par[lv[i].t] < 0) {
			struct live l = lv[i];
			lv[i] = lv[nroot];
			lv[nroot++] = l;
		}

	/* Largest first, each at the lowest offset free over its lifetime.
	 * The placed tensors are kept in order of offset (busy), so a tensor
	 * walks them from offset 0 up to the first gap wide enough over its
	 * lifetime and stops there: no sort per tensor.  The order among
	 * tensors at the same offset does not change the gap found. */
	qsort(lv, (size_t)nroot, sizeof *lv, by_size);
	struct placed *busy = xmalloc(sizeof *busy * (size_t)(n + 1));
	int nb = 0;
	int64_t top = 0;
	for (int i = 0; i < nroot; i++) {
		int64_t off = 0, size = lv[i].size;
		int first = lv[i].first, last = lv[i].last;
		for (int j = 0; j < nb && busy[j].off < off + size; j++)
			if (busy[j].first <= last && first <= busy[j].last && busy[j].end > off)
				off = busy[j].end;
		lv[i].off = off;
		if (off + size > top)
			top = off + size;
		/* after every placed tensor at an offset <= off */
		int lo = 0, hi = nb;
		while (lo < hi) {
			int mid = lo + (hi - lo) / 2;
			if (busy[mid].off <= off)
				lo = mid + 1;
			else
				hi = mid;
		}
		memmove(&busy[lo + 1], &busy[lo], sizeof *busy * (size_t)(nb - lo));
		busy[lo] = (struct placed){ off, off + size, first, last };
		nb++;
	}
	for (int i = 0; i < nroot; i++)
		g->tensors[lv[i].t].addr = g->coeff_bytes + lv[i].off;
	for (int i = nroot; i < n; i++) {
		int64_t off;
		int r = alias_root(par, poff, lv[i].t, &off);
		g->tensors[lv[i].t].addr = g->tensors[r].addr + off;
	}
	g->neuron_bytes = top;
	free(fwd);
	free(par);
	free(poff);
	free(busy);
	free(used);
	free(idx);
	free(lv);
	free(gfirst);
	free(glast);

	if (g->coeff_bytes + g->neuron_bytes > c->ddr_bytes) {
		char need[32], have[32];
		addr_fmt_size(need, sizeof need, g->coeff_bytes + g->neuron_bytes);
		addr_fmt_size(have, sizeof have, c->ddr_bytes);
		return err_set("the model needs %s of global memory, chip '%s' has %s",
			       need, c->name, have);
	}
	g->stage = STAGE_ADDRESSED;
	return 0;
}
