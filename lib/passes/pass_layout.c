/* pass_layout.c - merge-layout: data-movement chains collapse.
 *   Transpose(Transpose(x, p1), p2) becomes one Transpose of the composed
 *   permutation; a Transpose of the identity permutation goes;
 *   a chain of Reshape, Flatten, Squeeze and Unsqueeze becomes one Reshape
 *   to the last shape, removed when that is x's shape;
 *   a Transpose that moves only dimensions of size 1 (the others keep their
 *   order: [1,197,256] -> [197,1,256]) moves no data and becomes a Reshape,
 *   which then merges with the views around it.
 * The inner op must have no other reader and not be a graph output.
 * A Transpose of a view that merges runs of adjacent axes of a Transpose's
 * output permutes the runs before the view, where the two Transposes merge
 * (regroup_pattern).  A Transpose of a view that splits axes of a
 * Transpose's output into runs of adjacent axes reads the first one's
 * input split the same way, and the two become one (split_pattern).
 *
 * A Reshape that keeps the last axis but leaves 1 on axis 1, where x had
 * more ([1,197,256] -> [197,1,256]: torchvision's attention works with the
 * sequence first), moves past the ops after it that work row by row along
 * the last axis (a MatMul by a constant [K, N], an elementwise op whose
 * other operand broadcasts along that axis only, a Slice of that axis,
 * LayerNormalization and Softmax over it), so that they run on x's shape,
 * and merges with the view it meets.  Axis 1 is the chip's lanes
 * (formats/tpuc-isa.5, lane shape): with 1 there, every row of the
 * projection, its bias and the Q/K/V split ran in one lane of 64.  Every
 * reader must be such an op; the values are the same.
 *
 * A Gather of one constant index becomes a Slice of that index (and a
 * Reshape dropping the axis when the index is a scalar): Swin picks Q, K
 * and V out of one tensor so.  From an axis of one element it is the input
 * itself, or the Reshape alone (torchvision's detection transform picks
 * its only image so).
 *
 * A view that drops leading unit axes, a chain of elementwise ops and a
 * view back (the same transform normalises its image between a Squeeze
 * and an Unsqueeze) become the chain alone, on the 4-D tensor: the views
 * were two copies that relaid the image across the lanes and back.  A Slice is a copy the back end can put in
 * place (addr-assign) and moves as one run of the axis.
 *
 * Attention over many batches of few heads runs on the view [1, batches *
 * heads, M, N] of its tensors: lanefold_pattern (pass_lanefold.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/base.h"
#include "ir/convert.h"
#include "ir/op.h"
#include "passes/lanefold.h"
#include "passes/passes.h"

/* The producer of op i's input 0 when it is of a type `want` accepts and
 * only op i reads its output; else -1. */
static int inner_op(const struct ir_graph *g, int i, int (*want)(enum op_type))
{
	int x = g->ops[i].in[0], p = pass_producer(g, x);
	if (p < 0 || !want(g->ops[p].type) || g->ops[p].n_out != 1 || pass_uses(g, x) != 1 ||
	    pass_is_output(g, x))
		return -1;
	return p;
}

static int is_transpose(enum op_type t)
{
	return t == OP_TRANSPOSE;
}

/* When op i is a Transpose of one input that is the sole result of a view
 * (inner_op) of a tensor, that view; else -1. */
static int view_transposed(const struct ir_graph *g, int i)
{
	const struct ir_op *op = &g->ops[i];
	if (op->type != OP_TRANSPOSE || op->n_in != 1 || op->n_out != 1 || op->in[0] < 0)
		return -1;
	int rv = inner_op(g, i, pass_is_view);
	return rv >= 0 && g->ops[rv].in[0] >= 0 ? rv : -1;
}

/* A new tensor of g of rank and shape, named after tensor `like` and
 * suffix (made unique), of like's dtype. */
static int tensor_after(struct ir_graph *g, int like, const char *suffix, int rank,
			const int64_t *shape)
{
	char base[512];
	snprintf(base, sizeof base, "%s%s", g->tensors[like].name, suffix);
	char *name = graph_unique_name(g, base, 1);
	int t = graph_add_tensor(g, name, g->tensors[like].dtype, rank, shape);
	free(name);
	return t;
}

static void clear_attrs(struct ir_op *op)
{
	for (int k = op->n_attr - 1; k >= 0; k--)
		op_del_attr(op, op->attr[k].name);
}

/* Does permutation p (rank r) of x keep the order of x's dimensions of
 * size other than 1?  Then the transpose is a reshape. */
static int moves_units_only(const struct ir_tensor *x, const int64_t *p, int r)
{
	int64_t last = -1;
	for (int d = 0; d < r; d++) {
		if (p[d] < 0 || p[d] >= x->rank)
			return 0;
		if (x->shape[p[d]] == 1 && !(x->dyn >> p[d] & 1))
			continue;
		if (p[d] < last)
			return 0;
		last = p[d];
	}
	return 1;
}

static int layout_pattern(struct ir_graph *g, int i)
{
	struct ir_op *op = &g->ops[i];
	if (op->n_in < 1 || op->n_out != 1 || op->in[0] < 0)
		return 0;
	if (op->type == OP_TRANSPOSE) {
		int64_t p1[IR_MAX_RANK], p2[IR_MAX_RANK], p[IR_MAX_RANK];
		int r = op_ints(op, "perm", p2, IR_MAX_RANK), ident = 1;
		for (int d = 0; d < r; d++)
			ident &= p2[d] == d;
		if (ident)
			return pass_bypass(g, i);
		const struct ir_tensor *x = &g->tensors[op->in[0]], *y = &g->tensors[op->out[0]];
		if (r == x->rank && !y->dyn && moves_units_only(x, p2, r)) {
			op->type = OP_RESHAPE;
			clear_attrs(op);
			op_set_ints(op, "shape", y->rank, y->shape);
			return 1;
		}
		int q = inner_op(g, i, is_transpose);
		if (q < 0 || op_ints(&g->ops[q], "perm", p1, IR_MAX_RANK) != r)
			return 0;
		/* y[d] = t[p2[d]] = x[p1[p2[d]]] */
		for (int d = 0; d < r; d++) {
			p[d] = p1[p2[d]];
			ident &= p[d] == d;
		}
		op->in[0] = g->ops[q].in[0];
		g->ops[q].type = OP_COUNT;
		op_set_ints(op, "perm", r, p);
		if (ident)
			pass_bypass(g, i);
		return 1;
	}
	if (pass_is_view(op->type)) {
		/* a view of a view becomes one Reshape to the output's shape:
		 * not when that shape is known only at run time */
		const struct ir_tensor *y = &g->tensors[op->out[0]];
		int q = y->dyn ? -1 : inner_op(g, i, pass_is_view);
		if (q < 0 && !y->dyn) {
			/* a view back to the shape a view of other readers
			 * started from (lanefold's unfold, then a fold for each
			 * reader): that view's input itself */
			int p = pass_producer(g, op->in[0]);
			if (p < 0 || !pass_is_view(g->ops[p].type) || g->ops[p].n_out != 1 ||
			    g->ops[p].in[0] < 0 || pass_is_output(g, op->out[0]) ||
			    !pass_same_shape(&g->tensors[g->ops[p].in[0]], y))
				return 0;
			op->in[0] = g->ops[p].in[0];
			return pass_bypass(g, i);
		}
		if (q < 0)
			return 0;
		op->in[0] = g->ops[q].in[0];
		g->ops[q].type = OP_COUNT;
		op->type = OP_RESHAPE;
		clear_attrs(op);
		op_set_ints(op, "shape", y->rank, y->shape);
		if (pass_same_shape(&g->tensors[op->in[0]], y))
			pass_bypass(g, i);
		return 1;
	}
	return 0;
}

/* 1 when the axes of FINE, in order, split the axes of COARSE: axes
 * [first[j], first[j + 1]) of FINE multiply to axis j of COARSE (unit axes
 * of FINE after the last run allowed); fills first[0 .. rank + 1). */
static int axis_runs(const struct ir_tensor *coarse, const struct ir_tensor *fine, int *first)
{
	int m = coarse->rank, n = fine->rank, a = 0;
	for (int j = 0; j < m; j++) {
		int64_t prod = a < n ? fine->shape[a] : 0;
		first[j] = a++;
		while (a < n && prod < coarse->shape[j])
			prod *= fine->shape[a++];
		if (prod != coarse->shape[j])
			return 0;
	}
	while (a < n && fine->shape[a] == 1)
		a++;
	first[m] = n;
	return a == n;
}

/* Transpose(Reshape(Transpose(x))) where the Reshape only merges runs of
 * adjacent axes (MaxViT's grid partition, [1,7,7,4,4,C] -> [1,49,16,C],
 * then its swap of the two merged axes): the second Transpose moves the
 * runs before the Reshape instead, where it merges with the first; the
 * Reshape to the old output follows.  One Transpose goes, and the run
 * ends at a view. */
static int regroup_pattern(struct ir_graph *g, int i)
{
	const struct ir_op *op = &g->ops[i];
	int64_t q[IR_MAX_RANK], p[IR_MAX_RANK];
	int rv = view_transposed(g, i);
	if (rv < 0)
		return 0;
	int z = op->in[0], y = g->ops[rv].in[0];
	const struct ir_tensor *zt = &g->tensors[z], *yt = &g->tensors[y];
	int m = zt->rank, n = yt->rank;
	if (zt->dyn || yt->dyn || yt->data || g->tensors[op->out[0]].dyn ||
	    op_ints(op, "perm", q, IR_MAX_RANK) != m || inner_op(g, rv, is_transpose) < 0)
		return 0;
	/* axes [first[j], first[j + 1]) of y make axis j of z */
	int first[IR_MAX_RANK + 1];
	if (!axis_runs(zt, yt, first))
		return 0;
	int k = 0;
	for (int j = 0; j < m; j++)
		for (int d = first[q[j]]; d < first[q[j] + 1]; d++)
			p[k++] = d;
	int64_t shape[IR_MAX_RANK];
	for (int d = 0; d < n; d++)
		shape[d] = yt->shape[p[d]];
	int t = tensor_after(g, op->out[0], "_runs", n, shape);
	g->tensors[t].scale = g->tensors[z].scale;
	g->tensors[t].zero_point = g->tensors[z].zero_point;
	g->tensors[t].qdtype = g->tensors[z].qdtype;
	/* the Reshape goes; the Transpose reads y and a new view follows */
	g->ops[rv].type = OP_COUNT;
	struct ir_op *o = &g->ops[i];
	int out = o->out[0];
	o->in[0] = y;
	o->out[0] = t;
	op_set_ints(o, "perm", n, p);
	char base[512];
	snprintf(base, sizeof base, "%s_view", o->name);
	int v = pass_insert_after(g, i, OP_RESHAPE, base, t, out);
	op_set_ints(&g->ops[v], "shape", g->tensors[out].rank, g->tensors[out].shape);
	pass_index_drop();
	return 1;
}

/* Transpose(Reshape(Transpose(x, p1)), p2) where the Reshape only splits
 * axes of the first Transpose's output into runs of adjacent axes
 * (MaxViT's grid departition: [1,4,49,C] -> [1,49,4,C] by its swap, then
 * [1,7,7,2,2,C] and the Transpose back to channels first): x splits the
 * same way instead, a view, and one Transpose of the split x makes the
 * second one's output.  One Transpose goes, and x's producers meet a view
 * (the row view of the ops before it: rowview_pattern). */
static int split_pattern(struct ir_graph *g, int i)
{
	const struct ir_op *op = &g->ops[i];
	int64_t p1[IR_MAX_RANK], p2[IR_MAX_RANK];
	int rv = view_transposed(g, i);
	if (rv < 0)
		return 0;
	int t1 = inner_op(g, rv, is_transpose);
	if (t1 < 0 || g->ops[t1].in[0] < 0)
		return 0;
	int x = g->ops[t1].in[0], y = g->ops[rv].in[0], z = op->in[0];
	const struct ir_tensor *xt = &g->tensors[x], *yt = &g->tensors[y], *zt = &g->tensors[z];
	int m = yt->rank, n = zt->rank;
	if (xt->dyn || yt->dyn || zt->dyn || xt->data || g->tensors[op->out[0]].dyn ||
	    xt->rank != m || op_ints(&g->ops[t1], "perm", p1, IR_MAX_RANK) != m ||
	    op_ints(op, "perm", p2, IR_MAX_RANK) != n)
		return 0;
	/* axes [first[j], first[j + 1]) of z split axis j of y */
	int first[IR_MAX_RANK + 1];
	if (!axis_runs(yt, zt, first))
		return 0;
	/* x's axis p1[j] splits as y's axis j: its run starts at xs[p1[j]] */
	int inv[IR_MAX_RANK], xs[IR_MAX_RANK], src[IR_MAX_RANK], k = 0;
	for (int d = 0; d < m; d++)
		inv[d] = -1;
	for (int j = 0; j < m; j++) {
		if (p1[j] < 0 || p1[j] >= m || inv[p1[j]] >= 0)
			return 0;
		inv[p1[j]] = j;
	}
	int64_t shape[IR_MAX_RANK];
	for (int d = 0; d < m; d++) {
		int j = inv[d];
		xs[d] = k;
		for (int e = first[j]; e < first[j + 1]; e++)
			shape[k++] = zt->shape[e];
	}
	/* z's axis e of run j is x''s axis xs[p1[j]] + (e - first[j]) */
	for (int j = 0; j < m; j++)
		for (int e = first[j]; e < first[j + 1]; e++)
			src[e] = xs[p1[j]] + e - first[j];
	int64_t p[IR_MAX_RANK];
	for (int d = 0; d < n; d++) {
		if (p2[d] < 0 || p2[d] >= n)
			return 0;
		p[d] = src[p2[d]];
	}
	int xv = tensor_after(g, x, "_split", n, shape);
	g->tensors[xv].scale = g->tensors[x].scale;
	g->tensors[xv].zero_point = g->tensors[x].zero_point;
	g->tensors[xv].qdtype = g->tensors[x].qdtype;
	/* the first Transpose becomes the view; the Reshape goes */
	struct ir_op *v = &g->ops[t1];
	v->type = OP_RESHAPE;
	clear_attrs(v);
	v->out[0] = xv;
	op_set_ints(v, "shape", n, shape);
	g->ops[rv].type = OP_COUNT;
	g->ops[i].in[0] = xv;
	op_set_ints(&g->ops[i], "perm", n, p);
	pass_index_drop();
	return 1;
}

/* The lane axis of a rank-r tensor (formats/tpuc-isa.5): 1 from rank 2. */
static int64_t lanes_of(const struct ir_tensor *t)
{
	return t->rank >= 2 ? t->shape[1] : t->rank == 1 ? t->shape[0] : 1;
}

/* Does axis attribute `name` of op (default def) name the last of r axes? */
static int last_axis(const struct ir_op *op, const char *name, int64_t def, int r)
{
	int64_t a = op_int(op, name, def);
	return a == r - 1 || a == -1;
}

/* May op, which reads y (rank ry, last extent k), run on a tensor of rank
 * rx with y's last axis instead? */
static int row_wise(const struct ir_graph *g, const struct ir_op *op, int y, int rx)
{
	const struct ir_tensor *yt = &g->tensors[y];
	int ry = yt->rank;
	int64_t k = yt->shape[ry - 1];
	if (op->n_out != 1 || op->in[0] < 0)
		return 0;
	if (pass_is_pointwise(op->type))
		return op->n_in == 1;
	switch (op->type) {
	case OP_MATMUL: {
		const struct ir_tensor *b = op->n_in == 2 && op->in[1] >= 0 ? &g->tensors[op->in[1]] : NULL;
		return op->in[0] == y && b && b->data && b->rank == 2 && b->shape[0] == k;
	}
	case OP_ADD: case OP_SUB: case OP_MUL: case OP_DIV: {
		if (op->n_in != 2)
			return 0;
		for (int j = 0; j < 2; j++) {
			if (op->in[j] == y)
				continue;
			const struct ir_tensor *c = &g->tensors[op->in[j]];
			if (c->dyn || c->rank > rx)
				return 0;
			for (int d = 0; d + 1 < c->rank; d++)
				if (c->shape[d] != 1)
					return 0;
			if (c->rank && c->shape[c->rank - 1] != 1 && c->shape[c->rank - 1] != k)
				return 0;
		}
		return 1;
	}
	case OP_SLICE: {
		int64_t a[IR_MAX_RANK];
		int n = op_ints(op, "axes", a, IR_MAX_RANK);
		if (op->n_in != 1 || n != 1 || (a[0] != ry - 1 && a[0] != -1))
			return 0;
		return 1;
	}
	case OP_LAYERNORM:
		return op->in[0] == y && last_axis(op, "axis", -1, ry);
	case OP_SOFTMAX:
		return op->n_in == 1 && last_axis(op, "axis", -1, ry);
	default:
		return 0;
	}
}

/* Op j reads x instead of y (the Reshape's input and output) and writes a
 * tensor of x's leading axes, which a new Reshape right after it makes
 * its old output. */
static void sink_into(struct ir_graph *g, int j, int x, int y)
{
	struct ir_op *op = &g->ops[j];
	int rx = g->tensors[x].rank, ry = g->tensors[y].rank;
	for (int k = 0; k < op->n_in; k++)
		if (op->in[k] == y)
			op->in[k] = x;
	if (op->type == OP_SLICE)
		op_set_ints(op, "axes", 1, (int64_t[]){ rx - 1 });
	else if (op->type == OP_LAYERNORM || op->type == OP_SOFTMAX)
		op_set_int(op, "axis", rx - 1);
	int z = op->out[0];
	int64_t shape[IR_MAX_RANK];
	memcpy(shape, g->tensors[x].shape, sizeof shape);
	shape[rx - 1] = g->tensors[z].shape[ry - 1];
	int zr = tensor_after(g, z, "_rows", rx, shape);
	g->ops[j].out[0] = zr;
	char base[512];
	snprintf(base, sizeof base, "%s_view", g->ops[j].name);
	int k = pass_insert_after(g, j, OP_RESHAPE, base, zr, z);
	op_set_ints(&g->ops[k], "shape", g->tensors[z].rank, g->tensors[z].shape);
}

static int sink_pattern(struct ir_graph *g, int i)
{
	const struct ir_op *op = &g->ops[i];
	if (op->type != OP_RESHAPE || op->n_out != 1 || op->in[0] < 0)
		return 0;
	int x = op->in[0], y = op->out[0];
	const struct ir_tensor *xt = &g->tensors[x], *yt = &g->tensors[y];
	if (xt->dyn || yt->dyn || xt->rank < 2 || yt->rank < 2 || xt->data ||
	    xt->shape[xt->rank - 1] != yt->shape[yt->rank - 1] || lanes_of(yt) != 1 ||
	    lanes_of(xt) <= 1 || pass_is_output(g, y))
		return 0;
	int n = pass_uses(g, y), seen = 0, total = 0;
	int *users = xmalloc(sizeof *users * (size_t)(n + 1));
	for (int j = i + 1; j < g->n_ops && total < n; j++) {
		const struct ir_op *u = &g->ops[j];
		int reads = 0;
		for (int k = 0; k < u->n_in && u->type != OP_COUNT; k++)
			reads += u->in[k] == y;
		if (!reads)
			continue;
		if (!row_wise(g, u, y, xt->rank)) {
			free(users);
			return 0;
		}
		users[seen++] = j;
		total += reads;
	}
	if (!seen || total != n) {
		free(users);
		return 0;
	}
	/* last reader first: each new Reshape goes in after its reader */
	for (int k = seen - 1; k >= 0; k--)
		sink_into(g, users[k], x, y);
	g->ops[i].type = OP_COUNT;
	free(users);
	pass_index_drop();
	return 1;
}

static int gather_pattern(struct ir_graph *g, int i)
{
	const struct ir_op *op = &g->ops[i];
	if (op->type != OP_GATHER || op->n_in != 2 || op->n_out != 1 || op->in[0] < 0 || op->in[1] < 0)
		return 0;
	const struct ir_tensor *x = &g->tensors[op->in[0]], *ix = &g->tensors[op->in[1]];
	int ax = norm_axis(op_int(op, "axis", 0), x->rank);
	/* the Reshape after it takes a static shape */
	if (ax < 0 || x->data || x->dyn || g->tensors[op->out[0]].dyn || !ix->data || ix->rank > 1 ||
	    tensor_numel(ix) != 1 ||
	    (ix->dtype != DT_I64 && ix->dtype != DT_I32))
		return 0;
	int64_t v = dtype_get_int(ix->data, ix->dtype, 0), dim = x->shape[ax];
	v = v < 0 ? v + dim : v;
	if (v < 0 || v >= dim)
		return 0;
	int y = op->out[0], t = y, scalar = ix->rank == 0;
	if (dim == 1) {
		/* the whole axis: the input itself, or a view without the axis */
		if (!scalar)
			return pass_bypass(g, i);
		struct ir_op *r = &g->ops[i];
		r->type = OP_RESHAPE;
		r->n_in = 1;
		clear_attrs(r);
		op_set_ints(r, "shape", g->tensors[y].rank, g->tensors[y].shape);
		pass_index_drop();
		return 1;
	}
	if (scalar) {
		int64_t shape[IR_MAX_RANK];
		memcpy(shape, x->shape, sizeof shape);
		shape[ax] = 1;
		t = tensor_after(g, y, "_slice", g->tensors[op->in[0]].rank, shape);
	}
	struct ir_op *s = &g->ops[i];
	s->type = OP_SLICE;
	s->n_in = 1;
	s->out[0] = t;
	clear_attrs(s);
	op_set_ints(s, "starts", 1, (int64_t[]){ v });
	op_set_ints(s, "ends", 1, (int64_t[]){ v + 1 });
	op_set_ints(s, "axes", 1, (int64_t[]){ ax });
	op_set_ints(s, "steps", 1, (int64_t[]){ 1 });
	if (scalar) {
		char base[512];
		snprintf(base, sizeof base, "%s_view", g->ops[i].name);
		int k = pass_insert_after(g, i, OP_RESHAPE, base, t, y);
		op_set_ints(&g->ops[k], "shape", g->tensors[y].rank, g->tensors[y].shape);
	}
	pass_index_drop();
	return 1;
}

/* May op, which reads t (of rank r), run on t with leading unit axes
 * added?  An elementwise op whose output has t's shape and whose other
 * operand has rank r at most: broadcasting aligns trailing axes, so
 * leading ones change nothing. */
static int lead_wise(const struct ir_graph *g, const struct ir_op *op, int t)
{
	if (op->n_out != 1 || op->in[0] < 0 || !pass_same_shape(&g->tensors[op->out[0]], &g->tensors[t]))
		return 0;
	if (pass_is_pointwise(op->type))
		return op->n_in == 1 && op->in[0] == t;
	switch (op->type) {
	case OP_ADD: case OP_SUB: case OP_MUL: case OP_DIV:
		if (op->n_in != 2 || op->in[1] < 0 || (op->in[0] != t && op->in[1] != t))
			return 0;
		return !g->tensors[op->in[op->in[0] == t]].dyn &&
		       g->tensors[op->in[op->in[0] == t]].rank <= g->tensors[t].rank;
	default:
		return 0;
	}
}

/* A view dropping leading unit axes of x (a detection transform's Squeeze
 * of the batch), a chain of elementwise ops each the only reader of the
 * one before (lead_wise), then a view back to x's shape: the chain runs
 * on x's shape and both views go.  The values are the same; the ops keep
 * x's lanes, where the views made two copies relaying them out. */
static int unit_chain_pattern(struct ir_graph *g, int i)
{
	const struct ir_op *op = &g->ops[i];
	if (!pass_is_view(op->type) || op->n_out != 1 || op->in[0] < 0)
		return 0;
	int x = op->in[0], y = op->out[0];
	const struct ir_tensor *xt = &g->tensors[x], *yt = &g->tensors[y];
	int k = xt->rank - yt->rank;
	if (xt->dyn || yt->dyn || xt->data || k <= 0 ||
	    memcmp(xt->shape + k, yt->shape, sizeof(int64_t) * (size_t)yt->rank))
		return 0;
	for (int d = 0; d < k; d++)
		if (xt->shape[d] != 1)
			return 0;
	int n = 0, cap = 8, *chain = xmalloc(sizeof *chain * (size_t)cap), t = y, j = i, end = -1;
	while (end < 0) {
		if ((j = pass_sole_reader(g, t, j + 1)) < 0)
			break;
		const struct ir_op *u = &g->ops[j];
		if (pass_is_view(u->type)) {
			if (u->n_out == 1 && n > 0 && pass_same_shape(&g->tensors[u->out[0]], &g->tensors[x]))
				end = j;
			break;
		}
		if (!lead_wise(g, u, t))
			break;
		if (n == cap)
			chain = xrealloc(chain, sizeof *chain * (size_t)(cap *= 2));
		chain[n++] = j;
		t = u->out[0];
	}
	if (end < 0) {
		free(chain);
		return 0;
	}
	/* the chain's tensors take x's rank; each is read by the next alone */
	for (int c = 0; c < n; c++) {
		struct ir_op *u = &g->ops[chain[c]];
		for (int q = 0; q < u->n_in; q++)
			if (u->in[q] == y)
				u->in[q] = x;
		struct ir_tensor *z = &g->tensors[u->out[0]];
		memcpy(z->shape, g->tensors[x].shape, sizeof(int64_t) * (size_t)g->tensors[x].rank);
		z->rank = g->tensors[x].rank;
	}
	g->ops[i].type = OP_COUNT;
	free(chain);
	pass_index_drop();
	pass_bypass(g, end);
	return 1;
}

/* A Transpose of [1, A, ...] of rank 5 or more that keeps axes 0 and 1
 * (a YOLO head's [1, 3, 85, H, W] to [1, 3, H, W, 85]) transposes A
 * independent blocks: it runs on the view [A, ...] with perm[2..] less one,
 * batch first, whose lane axis is the input's axis 2 and the output's
 * axis 2 (85 and H channels, not 3), between two views.  Only when both
 * exceed A.  The values are the same. */
static int batch_transpose_pattern(struct ir_graph *g, int i)
{
	const struct ir_op *op = &g->ops[i];
	int64_t p[IR_MAX_RANK];
	if (op->type != OP_TRANSPOSE || op->n_in != 1 || op->n_out != 1 || op->in[0] < 0)
		return 0;
	int x = op->in[0], y = op->out[0];
	const struct ir_tensor *xt = &g->tensors[x], *yt = &g->tensors[y];
	int r = xt->rank;
	if (r < 5 || xt->dyn || yt->dyn || xt->data || op_ints(op, "perm", p, IR_MAX_RANK) != r ||
	    p[0] != 0 || p[1] != 1 || xt->shape[0] != 1 || xt->shape[1] <= 1 ||
	    xt->shape[2] <= xt->shape[1] || yt->shape[2] <= yt->shape[1])
		return 0;
	/* the shapes copied: graph_add_tensor may move g->tensors */
	int64_t q[IR_MAX_RANK], xs[IR_MAX_RANK], ys[IR_MAX_RANK];
	for (int d = 1; d < r; d++) {
		q[d - 1] = p[d] - 1;
		xs[d - 1] = xt->shape[d];
		ys[d - 1] = yt->shape[d];
	}
	int xv = tensor_after(g, x, "_blocks", r - 1, xs);
	int yv = tensor_after(g, y, "_blocks", r - 1, ys);
	for (int k = 0; k < 2; k++) {   /* a view keeps its quantisation */
		struct ir_tensor *to = &g->tensors[k ? yv : xv], *from = &g->tensors[k ? y : x];
		to->scale = from->scale;
		to->zero_point = from->zero_point;
		to->qdtype = from->qdtype;
	}
	char base[512];
	snprintf(base, sizeof base, "%s_view", g->ops[i].name);
	int v = pass_insert_after(g, i - 1, OP_RESHAPE, base, x, xv);
	op_set_ints(&g->ops[v], "shape", r - 1, g->tensors[x].shape + 1);
	i = v + 1;
	g->ops[i].in[0] = xv;
	g->ops[i].out[0] = yv;
	op_set_ints(&g->ops[i], "perm", r - 1, q);
	snprintf(base, sizeof base, "%s_unview", g->ops[i].name);
	v = pass_insert_after(g, i, OP_RESHAPE, base, yv, y);
	op_set_ints(&g->ops[v], "shape", r, g->tensors[y].shape);
	return 1;
}

int pass_merge_layout(struct ir_graph *g)
{
	static const pattern_fn pats[] = { layout_pattern, sink_pattern, gather_pattern,
					   unit_chain_pattern, lanefold_pattern, rowview_pattern,
					   regroup_pattern, split_pattern, batch_transpose_pattern };
	return rewrite_run(g, "merge-layout", pats, 9);
}
