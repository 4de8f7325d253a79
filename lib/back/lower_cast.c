/* lower_cast.c - float Casts moved before the copies they follow, and
 * Casts for host ops moved beside the chip op reading the same input
 * (lib/back/lower_cast.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "back/lower_cast.h"
#include "chip/isa.h"
#include "ir/base.h"
#include "ir/op.h"
#include "quant/quant.h"

/* 1 when dtype dt is a float type. */
static int float_dt(enum ir_dtype dt)
{
	return dt == DT_F32 || dt == DT_F16 || dt == DT_BF16;
}

static char *host_only(const struct ir_graph *g);

/* The ops among the first n0 reading each of the nt tensors, ascending,
 * each op once: those of tensor t are (*ro)[(*rs)[t] .. (*rs)[t + 1]).
 * The caller frees *rs and *ro. */
static void readers_of(const struct ir_graph *g, int n0, int nt, int **rs, int **ro)
{
	int *start = xcalloc((size_t)nt + 2, sizeof(int));
	int *last = xmalloc(sizeof(int) * ((size_t)nt + 1));   /* the last op counted */
	for (int t = 0; t < nt; t++)
		last[t] = -1;
	for (int o = 0; o < n0; o++)
		for (int j = 0; j < g->ops[o].n_in; j++) {
			int t = g->ops[o].in[j];
			if (t >= 0 && t < nt && last[t] != o) {
				last[t] = o;
				start[t + 1]++;
			}
		}
	for (int t = 0; t < nt; t++) {
		start[t + 1] += start[t];
		last[t] = -1;
	}
	int *fill = xmalloc(sizeof(int) * ((size_t)nt + 1));
	memcpy(fill, start, sizeof(int) * (size_t)nt);
	int *ops = xmalloc(sizeof(int) * ((size_t)start[nt] + 1));
	for (int o = 0; o < n0; o++)
		for (int j = 0; j < g->ops[o].n_in; j++) {
			int t = g->ops[o].in[j];
			if (t >= 0 && t < nt && last[t] != o) {
				last[t] = o;
				ops[fill[t]++] = o;
			}
		}
	FREE_ALL(fill, last);
	*rs = start;
	*ro = ops;
}

/* Whether op k is a Cast of one tensor whose result has y's type, scale
 * and zero point. */
static int cast_alike(const struct ir_graph *g, int k, const struct ir_tensor *y)
{
	const struct ir_op *op = &g->ops[k];
	if (op->type != OP_CAST || op->n_in != 1 || op->n_out != 1 || op->in[0] < 0)
		return 0;
	const struct ir_tensor *z = &g->tensors[op->out[0]];
	return z->dtype == y->dtype && z->scale == y->scale && z->zero_point == y->zero_point;
}

/* The Casts of a pass's graph, before it moves any: for each tensor, how
 * many Casts of the kind asked last read it or a Slice of it read only by
 * them (sliced_alike). */
struct cast_kind {
	enum ir_dtype dtype;
	float scale;
	int zero_point;
};
struct cast_count {
	const int *prod, *uses, *rs, *ro;
	int nt;
	int *n;                  /* per tensor, -1 not counted yet */
	struct cast_kind *kind;  /* per tensor: the kind counted */
};

/* The number of Casts like Cast op c (the same result type and scale) of
 * the tensor c's Slice reads: of a Slice of it read only by them, or of
 * the tensor itself; 0 when c's input is no such Slice. */
static int sliced_alike(const struct ir_graph *g, struct cast_count *cc, int c)
{
	const struct ir_op *cast = &g->ops[c];
	int p = cc->prod[cast->in[0]];
	if (p < 0 || g->ops[p].type != OP_SLICE || g->ops[p].n_in != 1 || cc->uses[cast->in[0]] != 1)
		return 0;
	int x = g->ops[p].in[0], n = 0;
	const struct ir_tensor *y = &g->tensors[cast->out[0]];
	struct cast_kind *had = &cc->kind[x];
	if (cc->n[x] >= 0 && had->dtype == y->dtype && had->scale == y->scale &&
	    had->zero_point == y->zero_point) {
		n = cc->n[x];
	} else {
		/* a Cast of the whole tensor made for earlier ones counts */
		for (int i = cc->rs[x]; i < cc->rs[x + 1]; i++) {
			int k = cc->ro[i];
			const struct ir_op *op = &g->ops[k];
			if (op->type != OP_SLICE || op->n_in != 1) {
				n += cast_alike(g, k, y);
				continue;
			}
			for (int j = 0; j < op->n_out; j++) {
				int s = op->out[j];
				if (s < 0 || s >= cc->nt || cc->prod[s] != k || cc->uses[s] != 1)
					continue;
				for (int r = cc->rs[s]; r < cc->rs[s + 1]; r++)
					n += cast_alike(g, cc->ro[r], y);
			}
		}
		cc->n[x] = n;
		*had = (struct cast_kind){ y->dtype, y->scale, y->zero_point };
	}
	/* the whole Cast must not do more than twice the work of the parts */
	if (2 * (int64_t)n * tensor_numel(&g->tensors[cast->in[0]]) < tensor_numel(&g->tensors[x]))
		return 0;
	return n;
}

/* Whether Cast op k is like Cast op c (result type, scale, attributes). */
static int cast_same(const struct ir_graph *g, int k, int c)
{
	return cast_alike(g, k, &g->tensors[g->ops[c].out[0]]) &&
	       !strcmp(op_str(&g->ops[k], "to", ""), op_str(&g->ops[c], "to", ""));
}

/* A Cast op of tensor x like Cast op c, other than c, or -1: the first of
 * the pass's first ops reading x (rs, ro) that still is one, else the
 * first the pass added (nhead[x], then nnext[k - n0]). */
static int cast_of(const struct ir_graph *g, const int *rs, const int *ro, const int *nhead,
		   const int *nnext, int n0, int x, int c)
{
	for (int i = rs[x]; i < rs[x + 1]; i++) {
		int k = ro[i];
		if (k != c && g->ops[k].n_in == 1 && g->ops[k].in[0] == x && cast_same(g, k, c))
			return k;
	}
	for (int k = nhead[x]; k >= 0; k = nnext[k - n0])
		if (k != c && cast_same(g, k, c))
			return k;
	return -1;
}

/* One pass: each Cast between float types whose input only it reads, the
 * result of a copy op (isa_is_copy) of float inputs that is no graph
 * output, becomes a Cast of each of the copy's inputs, put just before
 * the copy (one for an input it reads twice), which then writes the
 * Cast's result; so does one of a Slice when sliced_alike counts two or
 * more and only host ops read its result (through copies), all of them
 * then sharing one Cast.  Returns 1 if any changed. */
static int cast_pass(struct ir_graph *g)
{
	int n0 = g->n_ops, nt = g->n_tensors, any = 0;
	int *prod = xmalloc(sizeof(int) * (size_t)(nt + 1));
	int *uses = xcalloc((size_t)nt + 1, sizeof(int));
	char *host = NULL;     /* host_only, once a Cast of a Slice asks */
	for (int t = 0; t < nt; t++)
		prod[t] = -1;
	for (int o = 0; o < n0; o++) {
		const struct ir_op *op = &g->ops[o];
		for (int j = 0; j < op->n_in; j++)
			if (op->in[j] >= 0)
				uses[op->in[j]]++;
		for (int j = 0; j < op->n_out; j++)
			prod[op->out[j]] = o;
	}
	for (int i = 0; i < g->n_outputs; i++)
		uses[g->outputs[i]] += 2;
	int *rs, *ro;
	readers_of(g, n0, nt, &rs, &ro);
	struct cast_count cc = { prod, uses, rs, ro, nt, xmalloc(sizeof(int) * ((size_t)nt + 1)),
				 xmalloc(sizeof(struct cast_kind) * ((size_t)nt + 1)) };
	for (int t = 0; t < nt; t++)
		cc.n[t] = -1;
	/* the Casts this pass adds of each tensor, in order */
	int *nhead = xmalloc(sizeof(int) * ((size_t)nt + 1)), *ntail = xmalloc(sizeof(int) * ((size_t)nt + 1));
	int *nnext = NULL, ncap = 0;
	for (int t = 0; t < nt; t++)
		nhead[t] = ntail[t] = -1;
	/* share[c]: Cast c of a Slice for the host joins a shared Cast,
	 * decided before any moves (they change what sliced_alike counts) */
	char *share = xcalloc((size_t)n0 + 1, 1);
	for (int c = 0; c < n0; c++) {
		const struct ir_op *op = &g->ops[c];
		int p = op->type == OP_CAST && op->n_in == 1 && op->n_out == 1 && op->in[0] >= 0 ?
			prod[op->in[0]] : -1;
		if (p < 0 || g->ops[p].type != OP_SLICE)
			continue;
		if (!host)
			host = host_only(g);
		share[c] = host[op->out[0]] && sliced_alike(g, &cc, c) >= 2;
	}
	/* owner[k - n0]: the copy new op k goes before */
	int *owner = NULL, cap = 0;
	for (int c = 0; c < n0; c++) {
		struct ir_op *cast = &g->ops[c];
		if (cast->type != OP_CAST || cast->n_in != 1 || cast->n_out != 1 || cast->in[0] < 0)
			continue;
		int m = cast->in[0], y = cast->out[0], p = prod[m];
		enum ir_dtype yd = g->tensors[y].dtype;
		int quant = (yd == DT_I8 || yd == DT_U8) && p >= 0 && g->ops[p].n_in == 1 &&
			    (g->ops[p].type == OP_TRANSPOSE || g->ops[p].type == OP_PAD ||
			     g->ops[p].type == OP_RESHAPE);
		if (p < 0 || uses[m] != 1 || g->tensors[m].data ||
		    !float_dt(g->tensors[m].dtype) || (!float_dt(yd) && !quant))
			continue;
		int nin = quant ? 1 : isa_is_copy(g, &g->ops[p]);
		/* a Slice of a tensor other Casts to the same type read
		 * Slices of too, for the host alone (the rows top-opt's
		 * batch-rows batched, each read in place): one Cast of the
		 * whole tensor serves them all */
		int shared = !quant && nin == 0 && share[c];
		if (shared)
			nin = 1;
		if (nin <= 0 || nin != g->ops[p].n_in)
			continue;
		int *in = xmalloc(sizeof(int) * (size_t)(nin + 1)), ok = 1;
		for (int j = 0; j < nin && ok; j++)
			ok = !g->tensors[g->ops[p].in[j]].data;
		for (int j = 0; j < nin && ok; j++) {
			int x = g->ops[p].in[j], seen = -1;
			for (int q = 0; q < j && seen < 0; q++)
				if (g->ops[p].in[q] == x)
					seen = q;
			if (seen >= 0) {       /* one Cast for an input read twice */
				in[j] = in[seen];
				continue;
			}
			int had = shared ? cast_of(g, rs, ro, nhead, nnext, n0, x, c) : -1;
			if (had >= 0 && had < n0 && had > p)
				had = -1;      /* made after the Slice: not there yet */
			if (had >= 0) {
				in[j] = g->ops[had].out[0];
				if (had >= n0 && owner[had - n0] > p)
					owner[had - n0] = p;     /* before the first Slice */
				continue;
			}
			char base[512];
			snprintf(base, sizeof base, "%s_%s", g->tensors[x].name,
				 dtype_name(g->tensors[y].dtype));
			char *name = graph_unique_name(g, base, 1);
			/* a copy: graph_add_tensor may move the tensors */
			int64_t shape[IR_MAX_RANK];
			int rank = g->tensors[x].rank;
			memcpy(shape, g->tensors[x].shape, sizeof(int64_t) * (size_t)rank);
			in[j] = graph_add_tensor(g, name, g->tensors[y].dtype, rank, shape);
			g->tensors[in[j]].scale = g->tensors[y].scale;
			g->tensors[in[j]].zero_point = g->tensors[y].zero_point;
			free(name);
			int k = graph_add_op(g, OP_CAST, g->tensors[in[j]].name, 1, &x, 1, &in[j]);
			cast = &g->ops[c];     /* graph_add_op may move the ops */
			op_copy_attrs(&g->ops[k], cast);
			grow_array((void **)&owner, &cap, k - n0 + 1, sizeof *owner);
			owner[k - n0] = p;
			grow_array((void **)&nnext, &ncap, k - n0 + 1, sizeof *nnext);
			nnext[k - n0] = -1;
			if (x < nt) {
				if (ntail[x] >= 0)
					nnext[ntail[x] - n0] = k;
				else
					nhead[x] = k;
				ntail[x] = k;
			}
		}
		if (ok) {
			/* a constant Pad now fills codes: its value quantised on
			 * the Cast's scale, as int8 lowering stores a Pad's */
			if (quant && g->ops[p].type == OP_PAD && !strcmp(op_str(&g->ops[p], "mode", "constant"), "constant"))
				op_set_float(&g->ops[p], "value",
					     quant_f32_to_qz_one((float)op_float(&g->ops[p], "value", 0),
								 g->tensors[y].scale, g->tensors[y].zero_point, yd));
			op_set_inputs(&g->ops[p], nin, in);
			g->ops[p].out[0] = y;
			g->ops[c].type = OP_COUNT;    /* dropped by graph_compact */
			uses[m] = 0;
			any = 1;
		}
		free(in);
	}
	if (any) {
		graph_place_before(g, n0, owner);   /* each new op just before its copy */
		graph_compact(g);
	}
	FREE_ALL(owner, prod, uses, host, share, rs, ro, cc.n, cc.kind, nhead, ntail, nnext);
	return any;
}

/* The one Cast reading tensor t, or -1 (none, several, or an output):
 * rd[t] is the first op reading t. */
static int sole_cast(const struct ir_graph *g, const int *uses, const int *rd, int t)
{
	if (uses[t] != 1 || rd[t] < 0)
		return -1;
	const struct ir_op *op = &g->ops[rd[t]];
	return op->type == OP_CAST && op->n_in == 1 ? rd[t] : -1;
}

/* Each float activation whose readers are all single-input Slices, each
 * read only by a quantising Cast, all to one dtype, scale and zero point,
 * and together at least as many elements as it holds (the windows of
 * lower_depth's plane Convs): one Cast of it before the first Slice, the
 * Slices copying its codes.  Returns 1 if any changed. */
static int slice_casts(struct ir_graph *g)
{
	int n0 = g->n_ops, nt = g->n_tensors, any = 0;
	int *uses = xcalloc((size_t)nt + 1, sizeof(int));
	for (int o = 0; o < n0; o++)
		for (int j = 0; j < g->ops[o].n_in; j++)
			if (g->ops[o].in[j] >= 0)
				uses[g->ops[o].in[j]]++;
	for (int i = 0; i < g->n_outputs; i++)
		uses[g->outputs[i]] += 2;
	/* rd[t]: the first op reading t; a tensor whose Slices this pass
	 * moves is read by the Cast it adds alone */
	int *rs, *ro;
	readers_of(g, n0, nt, &rs, &ro);
	int *rd = xmalloc(sizeof(int) * ((size_t)nt + 1));
	for (int t = 0; t < nt; t++)
		rd[t] = rs[t] < rs[t + 1] ? ro[rs[t]] : -1;
	int *owner = NULL, cap = 0;
	for (int x = 0; x < nt; x++) {
		const struct ir_tensor *tx = &g->tensors[x];
		if (!uses[x] || tx->data || !float_dt(tx->dtype))
			continue;
		int ok = 1, nr = 0, c0 = -1;
		int64_t sum = 0;
		for (int i = rs[x]; i < rs[x + 1] && ok; i++) {
			const struct ir_op *op = &g->ops[ro[i]];
			int c = op->type == OP_SLICE && op->n_in == 1 && op->n_out == 1 ?
				sole_cast(g, uses, rd, op->out[0]) : -1;
			enum ir_dtype yd = c >= 0 ? g->tensors[g->ops[c].out[0]].dtype : DT_F32;
			ok = c >= 0 && (yd == DT_I8 || yd == DT_U8);
			if (ok && c0 >= 0) {
				const struct ir_tensor *a = &g->tensors[g->ops[c0].out[0]];
				const struct ir_tensor *b = &g->tensors[g->ops[c].out[0]];
				ok = a->dtype == b->dtype && a->scale == b->scale &&
				     a->zero_point == b->zero_point;
			}
			if (ok) {
				c0 = c0 < 0 ? c : c0;
				nr++;
				sum += tensor_numel(&g->tensors[op->out[0]]);
			}
		}
		if (!ok || nr != uses[x] || sum < tensor_numel(tx))
			continue;
		/* one Cast of x, a twin of the first Cast's result */
		const struct ir_tensor *y0 = &g->tensors[g->ops[c0].out[0]];
		enum ir_dtype dt = y0->dtype;
		float scale = y0->scale;
		int zp = y0->zero_point;
		char base[512];
		snprintf(base, sizeof base, "%s_%s", tx->name, dtype_name(dt));
		char *name = graph_unique_name(g, base, 1);
		int64_t shape[IR_MAX_RANK];
		int rank = tx->rank;
		memcpy(shape, tx->shape, sizeof(int64_t) * (size_t)rank);
		int q = graph_add_tensor(g, name, dt, rank, shape);
		g->tensors[q].scale = scale;
		g->tensors[q].zero_point = zp;
		free(name);
		int k = graph_add_op(g, OP_CAST, g->tensors[q].name, 1, &x, 1, &q);
		op_copy_attrs(&g->ops[k], &g->ops[c0]);
		grow_array((void **)&owner, &cap, k - n0 + 1, sizeof *owner);
		owner[k - n0] = ro[rs[x]];
		rd[x] = k;
		for (int i = rs[x]; i < rs[x + 1]; i++) {
			struct ir_op *op = &g->ops[ro[i]];
			int c = sole_cast(g, uses, rd, op->out[0]);
			op->in[0] = q;
			op->out[0] = g->ops[c].out[0];
			g->ops[c].type = OP_COUNT;   /* dropped by graph_compact */
		}
		any = 1;
	}
	if (any) {
		graph_place_before(g, n0, owner);
		graph_compact(g);
	}
	FREE_ALL(owner, uses, rs, ro, rd);
	return any;
}

int lower_cast_copies(struct ir_graph *g)
{
	slice_casts(g);
	/* each pass moves a Cast back over one copy; chains are short, the
	 * bound keeps a bug from looping */
	for (int pass = 0; pass < 16 && cast_pass(g); pass++)
		;
	return 0;
}

/* hostonly[t] for each tensor t of g (the caller frees it): 1 when t is
 * read, only by ops placed on the host or by copies (isa_is_copy: a
 * Reshape, a Slice addr-assign puts in place) whose results are so, and is
 * no graph output. */
static char *host_only(const struct ir_graph *g)
{
	int nt = g->n_tensors;
	char *h = xcalloc((size_t)nt + 1, 1), *chip = xcalloc((size_t)nt + 1, 1);
	for (int i = 0; i < g->n_outputs; i++)
		chip[g->outputs[i]] = 1;
	/* last op first: every reader of an op's results comes after it */
	for (int o = g->n_ops - 1; o >= 0; o--) {
		const struct ir_op *op = &g->ops[o];
		for (int j = 0; j < op->n_out; j++)
			if (op->out[j] >= 0)
				h[op->out[j]] &= !chip[op->out[j]];
		int via = op->place == PLACE_HOST ||
			  (op->n_out == 1 && op->out[0] >= 0 && h[op->out[0]] &&
			   (op->type == OP_SLICE || isa_is_copy(g, op) == op->n_in));
		for (int j = 0; j < op->n_in; j++)
			if (op->in[j] >= 0) {
				h[op->in[j]] = 1;
				chip[op->in[j]] |= !via;
			}
	}
	for (int t = 0; t < nt; t++)
		h[t] &= !chip[t];
	free(chip);
	return h;
}

/* Appends op o, then the Casts placed after it (after[o], a chain through
 * next[], latest first), each followed by its own, to order[*k]; stack has
 * room for every op. */
static void emit_after(int o, const int *after, const int *next, int *order, int *k,
		       int *stack)
{
	int sp = 0;
	stack[sp++] = o;
	while (sp > 0) {
		int v = stack[--sp], base = sp;
		order[(*k)++] = v;
		for (int c = after[v]; c >= 0; c = next[c])
			stack[sp++] = c;
		for (int i = base, j = sp - 1; i < j; i++, j--) {   /* the first on top */
			int t = stack[i];
			stack[i] = stack[j];
			stack[j] = t;
		}
	}
}

int lower_cast_hoist(struct ir_graph *g)
{
	int n = g->n_ops, nt = g->n_tensors, moved = 0;
	char *host = host_only(g);
	/* last[t]: the last op on the chip so far reading t after its
	 * producer; after[q]: the Casts to put just after op q */
	int *last = xmalloc(sizeof(int) * (size_t)(nt + 1));
	int *after = xmalloc(sizeof(int) * (size_t)(n + 1));
	int *next = xmalloc(sizeof(int) * (size_t)(n + 1));
	char *gone = xcalloc((size_t)n + 1, 1);
	for (int t = 0; t < nt; t++)
		last[t] = -1;
	for (int o = 0; o < n; o++)
		after[o] = next[o] = -1;
	for (int c = 0; c < n; c++) {
		const struct ir_op *op = &g->ops[c];
		if (op->type == OP_CAST && op->place != PLACE_HOST && op->n_in == 1 &&
		    op->n_out == 1 && op->in[0] >= 0 && !g->tensors[op->in[0]].data &&
		    host[op->out[0]]) {
			int q = last[op->in[0]];
			if (q >= 0 && q != c - 1) {
				next[c] = after[q];   /* a later Cast goes first */
				after[q] = c;
				gone[c] = 1;
				moved++;
			}
		}
		if (op->place != PLACE_HOST)
			for (int j = 0; j < op->n_in; j++)
				if (op->in[j] >= 0)
					last[op->in[j]] = c;
		for (int j = 0; j < op->n_out; j++)
			if (op->out[j] >= 0)
				last[op->out[j]] = -1;
	}
	if (moved) {
		int *order = xmalloc(sizeof(int) * (size_t)(n + 1)), k = 0;
		int *stack = xmalloc(sizeof(int) * (size_t)(n + 1));
		struct ir_op *ops = xmalloc(sizeof *ops * (size_t)(n + 1));
		for (int o = 0; o < n; o++)
			if (!gone[o])
				emit_after(o, after, next, order, &k, stack);
		for (int i = 0; i < n; i++)
			ops[i] = g->ops[order[i]];
		memcpy(g->ops, ops, sizeof *ops * (size_t)n);
		free(ops);
		free(stack);
		free(order);
	}
	free(gone);
	free(next);
	free(after);
	free(last);
	free(host);
	return moved;
}
