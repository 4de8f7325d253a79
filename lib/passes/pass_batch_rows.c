/* pass_batch_rows.c - batch-rows: identical elementwise ops on rows of one
 * tensor become one op on all those rows.
 *
 * An exporter that unrolls a loop over classes (torchvision's SSD
 * post-processing: for each class its column of the scores, a threshold
 * compare, then NonZero, TopK ... on the host) leaves one chain per class
 * that differs from the next only in the index it slices.  Each chain is a
 * few chip commands over a few thousand elements, the column loaded
 * strided, then a host barrier: the chip spends its time on DMA start-ups
 * class after class.
 *
 * The ops E_i(row c_i, constants), for rows c_i of one tensor X along axis
 * a (a row: a one-wide, static Slice of X, or a view of one, strided: X
 * has axes of more than one element before a; E elementwise with the same
 * type, attributes and one-element constants for every i), become one op
 * U = E(T) on T, the Transpose of X viewed as [1, L, C, M] to [1, C, L,
 * M] viewed as [1, C, L * M] (L, M the products of X's extents before and
 * after a, C its extent along a; without M when it is 1): the rows along
 * the lanes, each one contiguous run.  When the rows used span less than
 * half of C, T is first sliced to them.  Each E_i's result becomes the
 * view of its row of U, and the Slices giving the rows read them from T:
 * copies addr-assign puts in place (at any byte where only the host reads
 * them).  T and U go right after the op computing X, so that layer
 * grouping can keep X in local memory for them.  Repeated until no such
 * ops are left, so that a chain (a compare, then another op) batches op by
 * op.  A row that is one run already (an image of a batch) is left as it
 * is.  The values are the same bit for bit: only the place where each
 * element is computed changes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/base.h"
#include "ir/op.h"
#include "passes/passes.h"
#include "passes/rewrite.h"

/* Ops worth batching: at least this many, with rows spanning at most
 * twice as many (the rows between are computed for nothing). */
#define BATCH_MIN_OPS 2

/* Row c of x along axis ax: what an op input is when it is a row. */
struct row {
	int x, ax;
	int64_t c;
	int slice;        /* the Slice op taking it */
};

/* Is tensor t a row of an activation: the one-wide, static Slice of one
 * axis (attribute form, step 1), or one view of such a Slice's result?
 * Fills *r.  Returns 1 or 0. */
static int row_of(const struct ir_graph *g, int t, struct row *r)
{
	int s = pass_producer(g, t);
	if (s >= 0 && pass_is_view(g->ops[s].type) && g->ops[s].n_in >= 1 && g->ops[s].in[0] >= 0)
		s = pass_producer(g, g->ops[s].in[0]);
	if (s < 0 || g->ops[s].type != OP_SLICE || g->ops[s].n_in != 1 || g->ops[s].n_out != 1)
		return 0;
	const struct ir_op *op = &g->ops[s];
	int x = op->in[0];
	if (x < 0 || g->tensors[x].data || g->tensors[x].dyn || g->tensors[op->out[0]].dyn)
		return 0;
	int64_t st[2], en[2], ax[2] = { 0 }, sp[2] = { 1 };
	int rank = g->tensors[x].rank;
	if (op_ints(op, "starts", st, 2) != 1 || op_ints(op, "ends", en, 2) != 1 ||
	    op_ints(op, "axes", ax, 2) > 1 || op_ints(op, "steps", sp, 2) > 1 || sp[0] != 1)
		return 0;
	int a = norm_axis(ax[0], rank);
	if (a < 0)
		return 0;
	int64_t dim = g->tensors[x].shape[a], lead = 1;
	int64_t c = st[0] < 0 ? st[0] + dim : st[0], e = en[0] < 0 ? en[0] + dim : en[0];
	for (int d = 0; d < a; d++)
		lead *= g->tensors[x].shape[d];
	/* a row that is one run already (an image of a batch) lies in place
	 * as it is */
	if (c < 0 || c >= dim || e != c + 1 || dim < 2 || lead < 2)
		return 0;
	*r = (struct row){ x, a, c, s };
	return 1;
}

/* Elementwise ops whose batch runs each row alone: those of one input,
 * and those of two that broadcast (the other input a constant scalar). */
static int batchable(enum op_type t, int n_in)
{
	if (pass_is_pointwise(t))
		return n_in == 1;
	switch (t) {
	case OP_ADD: case OP_SUB: case OP_MUL: case OP_DIV: case OP_POW: case OP_MAX:
	case OP_MIN: case OP_EQUAL: case OP_GREATER: case OP_LESS: case OP_GREATEROREQUAL:
	case OP_LESSOREQUAL: case OP_AND: case OP_OR:
		return n_in == 2;
	default:
		return 0;
	}
}

/* Op i as a member of a batch: which input is its row (*p) and that row.
 * Every other input is a constant of one element.  Returns 1 or 0. */
static int member(const struct ir_graph *g, int i, int *p, struct row *r)
{
	const struct ir_op *op = &g->ops[i];
	if (op->type == OP_COUNT || !batchable(op->type, op->n_in) || op->n_out != 1 ||
	    g->tensors[op->out[0]].dyn)
		return 0;
	int found = -1;
	for (int j = 0; j < op->n_in; j++) {
		int t = op->in[j];
		if (t < 0)
			return 0;
		if (g->tensors[t].data) {
			if (tensor_numel(&g->tensors[t]) != 1)
				return 0;
			continue;
		}
		if (found >= 0 || !row_of(g, t, r))
			return 0;
		found = j;
	}
	if (found < 0 || !pass_same_shape(&g->tensors[op->out[0]], &g->tensors[op->in[found]]))
		return 0;
	for (int j = 0; j < op->n_in; j++)   /* constants broadcast on the batch's rank, 3 */
		if (j != found && g->tensors[op->in[j]].rank > 3)
			return 0;
	*p = found;
	return 1;
}

static int attr_same(const struct ir_attr *a, const struct ir_attr *b)
{
	if (strcmp(a->name, b->name) || a->kind != b->kind)
		return 0;
	switch (a->kind) {
	case ATTR_INT: return a->i == b->i;
	case ATTR_FLOAT: return a->f == b->f;
	case ATTR_INTS: return a->n == b->n && !memcmp(a->ints, b->ints, sizeof(int64_t) * (size_t)a->n);
	case ATTR_FLOATS: return a->n == b->n && !memcmp(a->floats, b->floats, sizeof(float) * (size_t)a->n);
	case ATTR_STR: return !strcmp(a->s, b->s);
	default: return 0;
	}
}

static int const_same(const struct ir_graph *g, int s, int t)
{
	const struct ir_tensor *a = &g->tensors[s], *b = &g->tensors[t];
	return s == t || (a->dtype == b->dtype && a->rank == b->rank &&
			  !memcmp(a->shape, b->shape, sizeof(int64_t) * (size_t)a->rank) &&
			  a->nbytes == b->nbytes && !memcmp(a->data, b->data, a->nbytes));
}

/* Do ops i and j (members reading rows ri, rj at input pi, pj) compute
 * the same function of their rows? */
static int same_work(const struct ir_graph *g, int i, int pi, const struct row *ri, int j, int pj,
		     const struct row *rj)
{
	const struct ir_op *a = &g->ops[i], *b = &g->ops[j];
	if (a->type != b->type || a->n_in != b->n_in || pi != pj || ri->x != rj->x || ri->ax != rj->ax ||
	    a->n_attr != b->n_attr || g->tensors[a->out[0]].dtype != g->tensors[b->out[0]].dtype ||
	    !pass_same_shape(&g->tensors[a->in[pi]], &g->tensors[b->in[pj]]))
		return 0;
	for (int k = 0; k < a->n_attr; k++) {
		const struct ir_attr *o = op_attr(b, a->attr[k].name);
		if (!o || !attr_same(&a->attr[k], o))
			return 0;
	}
	for (int k = 0; k < a->n_in; k++)
		if (k != pi && !const_same(g, a->in[k], b->in[k]))
			return 0;
	return 1;
}

/* A new activation named after base (made unique). */
static int new_tensor(struct ir_graph *g, const char *base, const char *tag, enum ir_dtype dt,
		      int rank, const int64_t *shape)
{
	char buf[512];
	snprintf(buf, sizeof buf, "%s_%s", base, tag);
	char *name = graph_unique_name(g, buf, 1);
	int t = graph_add_tensor(g, name, dt, rank, shape);
	free(name);
	return t;
}

static void set_slice(struct ir_op *op, int ax, int64_t s, int64_t e)
{
	op_clear_attrs(op);
	op_set_ints(op, "starts", 1, (int64_t[]){ s });
	op_set_ints(op, "ends", 1, (int64_t[]){ e });
	op_set_ints(op, "axes", 1, (int64_t[]){ ax });
	op_set_ints(op, "steps", 1, (int64_t[]){ 1 });
}

/* Add op of type ty reading x and writing a new tensor of shape (rank,
 * shape) named after name; returns the op.  *owner grows by its place. */
static int add_op(struct ir_graph *g, enum op_type ty, const char *name, const char *tag, int x,
		  enum ir_dtype dt, int rank, const int64_t *shape, int before, int **owner,
		  int *cap, int n0)
{
	int y = new_tensor(g, name, tag, dt, rank, shape);
	int k = graph_add_op(g, ty, g->tensors[y].name, 1, &x, 1, &y);
	grow_array((void **)owner, cap, k - n0 + 1, sizeof **owner);
	(*owner)[k - n0] = before;
	return k;
}

/* A view (Reshape) of x as (rank, shape), named after base. */
static int add_view(struct ir_graph *g, const char *base, int x, int rank, const int64_t *shape,
		    int before, int **owner, int *cap, int n0)
{
	int k = add_op(g, OP_RESHAPE, base, "v", x, g->tensors[x].dtype, rank, shape, before, owner,
		       cap, n0);
	op_set_ints(&g->ops[k], "shape", rank, shape);
	return g->ops[k].out[0];
}

/* Op at (one result) becomes the view, as its result's shape, of row c
 * of t along axis b, which a new Slice put before it takes. */
static void as_row_view(struct ir_graph *g, int at, int t, int b, int64_t c, int **owner,
			int *cap, int n0)
{
	int y = g->ops[at].out[0], rank = g->tensors[t].rank;
	int64_t shape[IR_MAX_RANK];
	memcpy(shape, g->tensors[t].shape, sizeof shape);
	shape[b] = 1;
	char name[512];
	snprintf(name, sizeof name, "%s", g->tensors[y].name);
	int k = add_op(g, OP_SLICE, name, "row", t, g->tensors[y].dtype, rank, shape, at, owner, cap, n0);
	set_slice(&g->ops[k], b, c, c + 1);
	struct ir_op *op = &g->ops[at];
	int w = g->ops[k].out[0];
	op->type = OP_RESHAPE;
	op_clear_attrs(op);
	op_set_inputs(op, 1, &w);
	op_set_ints(op, "shape", g->tensors[y].rank, g->tensors[y].shape);
}

/* Batch op i and the ops after it doing the same work on other rows of
 * its row's tensor, if there are enough.  Returns 1 if it did. */
static int batch_from(struct ir_graph *g, int i)
{
	int pi, n = g->n_ops, n0 = g->n_ops;
	struct row ri;
	if (!member(g, i, &pi, &ri))
		return 0;
	int *mem = xmalloc(sizeof(int) * (size_t)n), nm = 0;
	struct row *rows = xmalloc(sizeof *rows * (size_t)n);
	int64_t lo = ri.c, hi = ri.c;
	for (int j = i; j < n; j++) {
		int pj;
		struct row rj;
		if (!member(g, j, &pj, &rj) || !same_work(g, i, pi, &ri, j, pj, &rj))
			continue;
		mem[nm] = j;
		rows[nm++] = rj;
		lo = rj.c < lo ? rj.c : lo;
		hi = rj.c > hi ? rj.c : hi;
	}
	if (nm < BATCH_MIN_OPS || hi == lo || hi - lo + 1 > 2 * (int64_t)nm) {
		free(mem);
		free(rows);
		return 0;
	}
	/* T: x as [1, C, R], the rows along the lanes, each one run of R */
	const struct ir_tensor *xt = &g->tensors[ri.x];
	int rank = xt->rank, a = ri.ax, x = ri.x, b = 1;   /* b: the rows' axis in T */
	enum ir_dtype dt = xt->dtype;   /* xt moves as tensors are added */
	int64_t lead = 1, tail = 1, cn = xt->shape[a], shape[IR_MAX_RANK];
	int first = rows[0].slice;
	for (int d = 0; d < rank; d++)
		if (d != a)
			*(d < a ? &lead : &tail) *= xt->shape[d];
	for (int k = 0; k < nm; k++)
		first = rows[k].slice < first ? rows[k].slice : first;
	/* the batch goes right after x's producer, so that layer grouping
	 * may keep x in local memory for it */
	int px = pass_producer(g, x);
	first = px >= 0 && px + 1 < first ? px + 1 : first;
	int *owner = NULL, cap = 0;
	char base[512];
	snprintf(base, sizeof base, "%s_rows", g->tensors[x].name);
	/* [1, L, C, M] -> [1, C, L, M]; without M when it is 1 */
	int r4 = tail > 1 ? 4 : 3;
	int v = add_view(g, base, x, r4, (int64_t[]){ 1, lead, cn, tail }, first, &owner, &cap,
			 n0);
	int kt = add_op(g, OP_TRANSPOSE, base, "t", v, dt, r4,
			(int64_t[]){ 1, cn, lead, tail }, first, &owner, &cap, n0);
	op_set_ints(&g->ops[kt], "perm", r4, (int64_t[]){ 0, 2, 1, 3 });
	int t = g->ops[kt].out[0];
	if (r4 == 4)
		t = add_view(g, base, t, 3, (int64_t[]){ 1, cn, lead * tail }, first, &owner,
			     &cap, n0);
	rank = 3;
	memcpy(shape, g->tensors[t].shape, sizeof shape);
	int kx = t;
	if (2 * (hi - lo + 1) < shape[b]) {   /* else the whole axis: no copy */
		shape[b] = hi - lo + 1;
		int k = add_op(g, OP_SLICE, g->tensors[t].name, "span", t, g->tensors[t].dtype, rank,
			       shape, first, &owner, &cap, n0);
		set_slice(&g->ops[k], b, lo, hi + 1);
		kx = g->ops[k].out[0];
	}
	else
		lo = 0, hi = shape[b] - 1;
	/* U: the op on every row at once */
	int in[8];
	const struct ir_op *e = &g->ops[i];
	int ne = e->n_in;
	memcpy(in, e->in, sizeof(int) * (size_t)ne);
	in[pi] = kx;
	char ub[512];
	snprintf(ub, sizeof ub, "%s_batch", g->tensors[e->out[0]].name);
	char *uname = graph_unique_name(g, ub, 1);
	int u = graph_add_tensor(g, uname, g->tensors[e->out[0]].dtype, rank, shape);
	int ku = graph_add_op(g, e->type, uname, ne, in, 1, &u);
	free(uname);
	op_copy_attrs(&g->ops[ku], &g->ops[i]);
	grow_array((void **)&owner, &cap, ku - n0 + 1, sizeof *owner);
	owner[ku - n0] = first;
	/* the rows from T, each member the view of its row of U */
	for (int k = 0; k < nm; k++) {
		int s = rows[k].slice;
		if (g->ops[s].type == OP_SLICE && g->ops[s].in[0] == x)
			as_row_view(g, s, t, b, rows[k].c, &owner, &cap, n0);
		as_row_view(g, mem[k], u, b, rows[k].c - lo, &owner, &cap, n0);
	}
	graph_place_before(g, n0, owner);
	pass_index_drop();
	free(owner);
	free(mem);
	free(rows);
	return 1;
}

int pass_batch_rows(struct ir_graph *g)
{
	int done = 0;
	for (int again = 1; again;) {
		again = 0;
		for (int i = 0; i < g->n_ops && !again; i++)
			again = batch_from(g, i);
		done += again;
	}
	if (done)
		graph_compact(g);
	return done;
}
