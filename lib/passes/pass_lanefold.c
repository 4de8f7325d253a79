/* pass_lanefold.c - merge-layout's batch fold: attention over many small
 * batches of few heads runs on all lanes.
 *
 * Axis 1 is the chip's lanes (formats/tpuc-isa.5, lane shape).  Window
 * attention (Swin, MaxViT) and any attention of few heads over a batch
 * works on tensors [B, heads, M, N] (or [1, B, heads, M, N] around a mask)
 * whose lane axis holds only the heads: 3 of 64 lanes for Swin-T's first
 * stage.  The ops on such a tensor that treat its leading axes (all but
 * the last two) as a batch of independent matrices - a MatMul of two such
 * tensors, Softmax and LayerNormalization over the last axis, a Transpose
 * of the last two axes, elementwise ops - give the same values on its
 * view [1, B * heads, M, N], where every lane has work.  A Reshape between
 * the two is a view (a copy in place in the back end).
 *
 * A YOLO head's decode is the same shape of problem: [1, anchors, H, W, K]
 * after its Transpose, 3 lanes busy; its Sigmoid, Slices and Concat of the
 * last axis and elementwise ops (Pow too) run on [1, anchors * H, W, K],
 * its anchors [1, anchors, 1, 1, 2] tiled, its grid [1, 1, H, W, 2] on the
 * row view [anchors, H * W, 2].
 *
 * The fold starts at a batched MatMul of two activations or a Softmax (the
 * attention's own ops), or at any op it folds whose output has rank 5 or
 * more and that has no constant varying along the leading axes (the YOLO
 * head's Sigmoid; a 5-D tensor keeps its axes past 3 in W and axis 1
 * alone on the lanes), and spreads to the ops next to a folded one: one
 * reading a view of a folded tensor, or one whose output only such a view
 * reads.  A folded op reads views of its activation inputs and writes
 * through a view of its old output; merge-layout's other patterns then
 * merge the views met on the way and drop those that cancel.
 *
 * A constant operand that broadcasts over the leading axes cannot follow
 * the fold as it is.  When it is 1 on a prefix of them only (a relative
 * position bias [1, heads, M, N] on [B, heads, M, N]) the op runs on the
 * row view [B, heads * M, N] instead, the constant as [1, heads * M, N]:
 * the same bytes, broadcast over axis 0, and heads * M rows on the lanes.
 * Otherwise (a window mask [1, windows, 1, M, N]: it varies by window, not
 * by head) the constant is tiled to the folded view, at most the size of
 * the activation it meets.  Either is done only where the op's lane axis
 * is narrower than the widest chip's lanes: Swin's mask Add on
 * [1, 64, 3, M, N] and MaxViT's bias Add on [1, 64, 2, M, N] have every
 * lane busy already and stay where they are (tiled, Swin's mask would be
 * read three times over).  The values are the same, bit for bit.
 *
 * The attention's output leaves the fold by a Transpose [0, 2, 1, 3] of
 * [B, heads, M, D] between two views; it runs on [1, B, heads, M, D]
 * (batch_view_transpose), the batch on the lanes, instead of the heads.
 * A Transpose between two views whose tensors have unit axes (MaxViT's
 * heads split for its one window at 7 x 7, [1, 1, 49, heads, D]) runs on
 * the views without them, batch 1 first (unit_view_transpose).
 *
 * Ops that work row by row along the last axis (LayerNormalization, a
 * MatMul by a constant, biases, residual Adds, pointwise ops, a Slice of
 * the last axis) on [1, windows, tokens, C] with few windows (MaxViT: 16
 * or 4 of 64 lanes) run on the row view [1, windows * tokens, C] when the
 * run of them meets other ops only at views (rowview_pattern).
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chip/chip.h"
#include "ir/base.h"
#include "passes/lanefold.h"

/* The folded shape of t in f: [1, P, M, N], P the product of the leading
 * axes, when t is a static activation of rank 4 or more and P exceeds its
 * lane axis; else 0. */
static int fold_shape(const struct ir_tensor *t, int64_t f[4])
{
	if (t->dyn || t->data || t->rank < 4)
		return 0;
	int r = t->rank;
	int64_t p = 1;
	for (int d = 0; d + 2 < r; d++) {
		if (t->shape[d] <= 0)
			return 0;
		p *= t->shape[d];
	}
	if (p <= t->shape[1] || t->shape[r - 2] <= 0 || t->shape[r - 1] <= 0)
		return 0;
	f[0] = 1, f[1] = p, f[2] = t->shape[r - 2], f[3] = t->shape[r - 1];
	return 1;
}

static int same_lead(const struct ir_tensor *a, const struct ir_tensor *b)
{
	if (a->rank != b->rank)
		return 0;
	for (int d = 0; d + 2 < a->rank; d++)
		if (a->shape[d] != b->shape[d])
			return 0;
	return 1;
}

/* The most lanes of any chip (lib/chip): an op whose lane axis has as
 * many channels already uses every lane of every chip. */
static int64_t widest_lanes(void)
{
	int64_t n = 1;
	for (int i = 0; chip_list[i]; i++)
		n = chip_list[i]->lanes > n ? chip_list[i]->lanes : n;
	return n;
}

/* Does constant c, broadcast onto a tensor of its rank or more, vary
 * along one of that tensor's leading axes (all but the last two), so that
 * its fold is tiled? */
static int tiled(const struct ir_tensor *c)
{
	for (int d = 0; d + 2 < c->rank; d++)
		if (c->shape[d] != 1)
			return 1;
	return 0;
}

/* The row view of y for a binary op with constant c that varies along
 * y's leading axes from axis j on but is 1 before it (a [1, heads, M, N]
 * bias on [B, heads, M, N]): y as [A, L, N], A the product of the axes
 * before j, L of those from j to the last but one, and c as [1, L, N'] (N'
 * its last extent): the same bytes, broadcast over A alone, no tiling.
 * Only where L exceeds y's lane axis.  Returns 1 and fills yv, cv. */
static int row_view(const struct ir_tensor *y, const struct ir_tensor *c, int64_t yv[3], int64_t cv[3])
{
	int r = y->rank, j = 0;
	int64_t cs[IR_MAX_RANK], a = 1, l = 1;
	if (c->rank > r)
		return 0;
	for (int d = 0; d < r; d++)
		cs[d] = d < r - c->rank ? 1 : c->shape[d - (r - c->rank)];
	while (j < r - 1 && cs[j] == 1)
		j++;
	if (j == 0 || j >= r - 1)
		return 0;
	for (int d = 0; d < r - 1; d++) {
		if (d >= j && cs[d] != y->shape[d])
			return 0;
		*(d < j ? &a : &l) *= y->shape[d];
	}
	if (l <= y->shape[1])
		return 0;
	yv[0] = a, yv[1] = l, yv[2] = y->shape[r - 1];
	cv[0] = 1, cv[1] = l, cv[2] = cs[r - 1];
	return 1;
}

/* Binary op's constant operand, else -1. */
static int const_input(const struct ir_graph *g, const struct ir_op *op)
{
	if (op->n_in != 2 || op->in[0] < 0 || op->in[1] < 0)
		return -1;
	return g->tensors[op->in[0]].data ? op->in[0] : g->tensors[op->in[1]].data ? op->in[1] : -1;
}

/* Does the last-axis attribute `name` (default def) of op, rank r, name
 * the last axis? */
static int on_last(const struct ir_op *op, const char *name, int64_t def, int r)
{
	int64_t a = op_int(op, name, def);
	return a == r - 1 || a == -1;
}

/* May op run on the folded view of its output (which has one)?  Every
 * activation input is of the output's shape (a MatMul's: its leading
 * axes; a Transpose's: the last two swapped); a constant broadcasts as
 * the op says and is tiled by fold_op; a Slice or Concat works on the last
 * two axes only (renumbered on the view). */
static int foldable(const struct ir_graph *g, const struct ir_op *op)
{
	int64_t f[4];
	if (op->n_out != 1 || op->n_in < 1 || op->in[0] < 0 || !fold_shape(&g->tensors[op->out[0]], f))
		return 0;
	const struct ir_tensor *y = &g->tensors[op->out[0]], *x = &g->tensors[op->in[0]];
	int r = y->rank;
	for (int k = 0; k < op->n_in; k++) {
		if (op->in[k] < 0)
			return 0;
		const struct ir_tensor *t = &g->tensors[op->in[k]];
		if (!t->data && !fold_shape(t, f))
			return 0;
	}
	if (pass_is_pointwise(op->type))
		return op->n_in == 1 && same_lead(x, y) && !x->data;
	switch (op->type) {
	case OP_ADD: case OP_SUB: case OP_MUL: case OP_DIV: case OP_MAX: case OP_MIN: case OP_POW:
		if (op->n_in != 2 || op_int(op, "do_relu", 0))
			return 0;
		for (int k = 0; k < 2; k++) {
			const struct ir_tensor *c = &g->tensors[op->in[k]];
			if (c->dyn || c->rank > r)
				return 0;
			if (!c->data && (c->rank != r || memcmp(c->shape, y->shape, sizeof(int64_t) * (size_t)r)))
				return 0;
			if (c->data && y->shape[1] >= widest_lanes() && tiled(c))
				return 0;
		}
		return !g->tensors[op->in[0]].data || !g->tensors[op->in[1]].data;
	case OP_SOFTMAX:
		return op->n_in == 1 && !x->data && same_lead(x, y) && on_last(op, "axis", -1, r);
	case OP_SLICE: {
		int64_t a[IR_MAX_RANK];
		int na = op_ints(op, "axes", a, IR_MAX_RANK);
		if (op->n_in != 1 || x->data || !same_lead(x, y) || !na)
			return 0;
		for (int k = 0; k < na; k++)
			if ((a[k] < 0 ? a[k] + r : a[k]) < r - 2)
				return 0;
		return 1;
	}
	case OP_CONCAT: {
		int64_t a = op_int(op, "axis", 0);
		if ((a < 0 ? a + r : a) < r - 2)
			return 0;
		for (int k = 0; k < op->n_in; k++)
			if (g->tensors[op->in[k]].data || !same_lead(&g->tensors[op->in[k]], y))
				return 0;
		return 1;
	}
	case OP_LAYERNORM:
		for (int k = 1; k < op->n_in; k++)
			if (!g->tensors[op->in[k]].data || g->tensors[op->in[k]].rank > 1)
				return 0;
		return !x->data && same_lead(x, y) && on_last(op, "axis", -1, r);
	case OP_TRANSPOSE: {
		int64_t p[IR_MAX_RANK];
		if (op->n_in != 1 || x->data || op_ints(op, "perm", p, IR_MAX_RANK) != r)
			return 0;
		for (int d = 0; d + 2 < r; d++)
			if (p[d] != d)
				return 0;
		return p[r - 2] == r - 1 && p[r - 1] == r - 2;
	}
	case OP_MATMUL: {
		if (op->n_in != 2)
			return 0;
		const struct ir_tensor *b = &g->tensors[op->in[1]];
		return !x->data && !b->data && same_lead(x, y) && same_lead(b, y);
	}
	default:
		return 0;
	}
}

static int is_shape(const struct ir_tensor *t, const int64_t f[4])
{
	return t->rank == 4 && !t->dyn && !memcmp(t->shape, f, sizeof(int64_t) * 4);
}

/* Is op i next to a folded tensor: an activation input that is a view of
 * its folded shape, or an output only a view to its folded shape reads? */
static int next_to_fold(const struct ir_graph *g, int i)
{
	const struct ir_op *op = &g->ops[i];
	int64_t f[4];
	for (int k = 0; k < op->n_in; k++) {
		int t = op->in[k], p = pass_producer(g, t);
		if (p >= 0 && g->ops[p].type == OP_RESHAPE && fold_shape(&g->tensors[t], f) &&
		    is_shape(&g->tensors[g->ops[p].in[0]], f))
			return 1;
	}
	int y = op->out[0], j = pass_sole_reader(g, y, i + 1);
	return j >= 0 && g->ops[j].type == OP_RESHAPE && fold_shape(&g->tensors[y], f) &&
	       is_shape(&g->tensors[g->ops[j].out[0]], f);
}

/* A view keeps its tensor's quantisation parameters. */
static void copy_quant(struct ir_tensor *to, const struct ir_tensor *from)
{
	to->scale = from->scale;
	to->zero_point = from->zero_point;
	to->qdtype = from->qdtype;
}

/* A new tensor like t of shape f, named after it. */
static int fold_tensor(struct ir_graph *g, int t, int rank, const int64_t f[4])
{
	char base[512];
	snprintf(base, sizeof base, "%s_fold", g->tensors[t].name);
	char *name = graph_unique_name(g, base, 1);
	int k = graph_add_tensor(g, name, g->tensors[t].dtype, rank, f);
	free(name);
	copy_quant(&g->tensors[k], &g->tensors[t]);
	return k;
}

/* Constant c broadcast onto y (rank r) as a constant for y's folded view
 * [1, P, M, N]: its last two axes as they are, its leading axes tiled to
 * y's (or left out when they are all 1).  Returns the new weight. */
static int fold_const(struct ir_graph *g, int c, const struct ir_tensor *y, const int64_t f[4])
{
	const struct ir_tensor *ct = &g->tensors[c];
	int r = y->rank;
	int64_t cs[IR_MAX_RANK];
	for (int d = 0; d < r; d++)
		cs[d] = d < r - ct->rank ? 1 : ct->shape[d - (r - ct->rank)];
	int lead = tiled(ct);
	int64_t shape[4] = { 1, lead ? f[1] : 1, cs[r - 2], cs[r - 1] };
	size_t row = (size_t)(cs[r - 2] * cs[r - 1]) * dtype_size(ct->dtype);
	size_t n = (size_t)shape[1];
	char *data = xmalloc(row * n + 1);
	for (size_t p = 0; p < n; p++) {
		/* p's index along y's leading axes, then c's block there */
		size_t q = p, src = 0, stride = 1;
		for (int d = r - 3; d >= 0; d--) {
			size_t i = q % (size_t)y->shape[d];
			q /= (size_t)y->shape[d];
			src += (cs[d] == 1 ? 0 : i) * stride;
			stride *= (size_t)cs[d];
		}
		memcpy(data + p * row, (const char *)ct->data + src * row, row);
	}
	char base[512];
	snprintf(base, sizeof base, "%s_fold", ct->name);
	char *name = graph_unique_name(g, base, 1);
	int k = graph_add_weight(g, name, ct->dtype, 4, shape, data);
	copy_quant(&g->tensors[k], &g->tensors[c]);
	free(name);
	free(data);
	return k;
}

/* Op i runs on folded views: each activation input through a new Reshape
 * before it, each constant tiled (fold_const), its output through a new
 * Reshape after it.  Returns op i's new index. */
static int fold_op(struct ir_graph *g, int i)
{
	int y = g->ops[i].out[0], c = const_input(g, &g->ops[i]), rank = 4;
	int64_t f[4], cv[3];
	fold_shape(&g->tensors[y], f);
	if (c >= 0 && tiled(&g->tensors[c]) && row_view(&g->tensors[y], &g->tensors[c], f, cv))
		rank = 3;
	for (int k = 0; k < g->ops[i].n_in; k++) {
		int t = g->ops[i].in[k], nt;
		int64_t tf[4];
		if (g->tensors[t].data) {
			if (g->ops[i].type == OP_LAYERNORM)
				continue;
			if (rank == 3) {
				char base[512];
				snprintf(base, sizeof base, "%s_rows", g->tensors[t].name);
				char *name = graph_unique_name(g, base, 1);
				nt = graph_add_weight(g, name, g->tensors[t].dtype, 3, cv, g->tensors[t].data);
				free(name);
				copy_quant(&g->tensors[nt], &g->tensors[t]);
			} else {
				nt = fold_const(g, t, &g->tensors[y], f);
			}
		} else {
			int same = -1;
			for (int j = 0; j < k; j++)
				same = g->ops[i].in[j] == t && same < 0 ? j : same;
			if (same >= 0) {
				g->ops[i].in[k] = g->ops[i].in[same];
				continue;
			}
			if (rank == 3)
				memcpy(tf, f, sizeof tf);
			else
				fold_shape(&g->tensors[t], tf);
			nt = fold_tensor(g, t, rank, tf);
			char base[512];
			snprintf(base, sizeof base, "%s_fold", g->ops[i].name);
			int v = pass_insert_after(g, i - 1, OP_RESHAPE, base, t, nt);
			op_set_ints(&g->ops[v], "shape", rank, tf);
			i++;
		}
		g->ops[i].in[k] = nt;
	}
	struct ir_op *op = &g->ops[i];
	int r = g->tensors[y].rank;
	if (op->type == OP_SOFTMAX || op->type == OP_LAYERNORM) {
		op_set_int(op, "axis", 3);
	} else if (op->type == OP_CONCAT) {
		int64_t a = op_int(op, "axis", 0);
		op_set_int(op, "axis", (a < 0 ? a + r : a) - (r - 4));
	} else if (op->type == OP_SLICE) {
		int64_t a[IR_MAX_RANK];
		int na = op_ints(op, "axes", a, IR_MAX_RANK);
		for (int k = 0; k < na; k++)
			a[k] = (a[k] < 0 ? a[k] + r : a[k]) - (r - 4);
		op_set_ints(op, "axes", na, a);
	} else if (op->type == OP_TRANSPOSE) {
		op_set_ints(op, "perm", 4, (int64_t[]){ 0, 1, 3, 2 });
	}
	int yf = fold_tensor(g, y, rank, f);
	g->ops[i].out[0] = yf;
	char base[512];
	snprintf(base, sizeof base, "%s_unfold", g->ops[i].name);
	int v = pass_insert_after(g, i, OP_RESHAPE, base, yf, y);
	op_set_ints(&g->ops[v], "shape", g->tensors[y].rank, g->tensors[y].shape);
	pass_index_drop();
	return i;
}

/* The widest vector unit of any chip, bytes (lib/chip). */
static int64_t widest_vec(void)
{
	int64_t n = 1;
	for (int i = 0; chip_list[i]; i++)
		n = chip_list[i]->vec_bytes > n ? chip_list[i]->vec_bytes : n;
	return n;
}

/* Bytes per lane a tensor of rank 4 or more, shape `shape` and elements
 * of `size` bytes, takes on the widest chip (formats/tpuc-isa.5, lane
 * shape: N = axis 0, C = axis 1 on the lanes, H = axis 2, W the rest, its
 * rows padded to the vector unit). */
static int64_t lane_cost(int r, const int64_t *shape, int64_t size)
{
	int64_t w = 1, l = widest_lanes(), v = widest_vec();
	for (int d = 3; d < r; d++)
		w *= shape[d];
	return shape[0] * ((shape[1] + l - 1) / l) * shape[2] * ((w * size + v - 1) / v * v);
}

static int64_t lane_bytes(int r, const int64_t *shape, int64_t size);

/* Is op i a Transpose between two views: a Reshape alone reads its
 * output, and its input is a Reshape's output that op i alone reads (new
 * views around it merge with those: no copy more)?  *p gets its perm. */
static int viewed_transpose(const struct ir_graph *g, int i, int64_t *p)
{
	const struct ir_op *op = &g->ops[i];
	if (op->type != OP_TRANSPOSE || op->n_in != 1 || op->n_out != 1 || op->in[0] < 0)
		return 0;
	int x = op->in[0], y = op->out[0];
	const struct ir_tensor *xt = &g->tensors[x], *yt = &g->tensors[y];
	int r = xt->rank, px = pass_producer(g, x), ry = pass_sole_reader(g, y, i + 1);
	return r >= 3 && r < IR_MAX_RANK && !xt->dyn && !yt->dyn && !xt->data &&
	       op_ints(op, "perm", p, IR_MAX_RANK) == r && px >= 0 &&
	       g->ops[px].type == OP_RESHAPE && pass_sole_reader(g, x, px + 1) == i &&
	       ry >= 0 && g->ops[ry].type == OP_RESHAPE;
}

/* Transpose i (between two views, viewed_transpose) runs on views of
 * rank r of its input and output, xv and yv, with perm pv: only when they
 * take fewer bytes per lane than its tensors do.  The values are the
 * same. */
static int transpose_on_views(struct ir_graph *g, int i, int r, const int64_t *xv,
			      const int64_t *yv, const int64_t *pv)
{
	int x = g->ops[i].in[0], y = g->ops[i].out[0];
	const struct ir_tensor *xt = &g->tensors[x], *yt = &g->tensors[y];
	int64_t es = (int64_t)dtype_size(xt->dtype);
	if (lane_bytes(r, xv, es) + lane_bytes(r, yv, es) >=
	    lane_bytes(xt->rank, xt->shape, es) + lane_bytes(yt->rank, yt->shape, es))
		return 0;
	char base[512];
	snprintf(base, sizeof base, "%s_rows", xt->name);
	char *name = graph_unique_name(g, base, 1);
	int nx = graph_add_tensor(g, name, xt->dtype, r, xv);
	free(name);
	copy_quant(&g->tensors[nx], &g->tensors[x]);
	snprintf(base, sizeof base, "%s_rows", g->tensors[y].name);
	name = graph_unique_name(g, base, 1);
	int ny = graph_add_tensor(g, name, g->tensors[y].dtype, r, yv);
	free(name);
	copy_quant(&g->tensors[ny], &g->tensors[y]);
	snprintf(base, sizeof base, "%s_rows", g->ops[i].name);
	int v = pass_insert_after(g, i - 1, OP_RESHAPE, base, x, nx);
	op_set_ints(&g->ops[v], "shape", r, xv);
	i++;
	g->ops[i].in[0] = nx;
	g->ops[i].out[0] = ny;
	op_set_ints(&g->ops[i], "perm", r, pv);
	snprintf(base, sizeof base, "%s_unrows", g->ops[i].name);
	v = pass_insert_after(g, i, OP_RESHAPE, base, ny, y);
	op_set_ints(&g->ops[v], "shape", g->tensors[y].rank, g->tensors[y].shape);
	pass_index_drop();
	return 1;
}

/* A Transpose between two views that leaves more leading rows than
 * lanes on axis 1 ([B, heads, M, D] -> [B, M, heads, D] after a folded
 * attention's MatMul: 3 of 64 lanes in use, every window a row of its own)
 * runs on the view [1, B, heads, M, D] with every axis moved one on: the
 * batch on the lanes, the move within a lane.  Only when its input and
 * output take fewer bytes per lane so. */
static int batch_view_transpose(struct ir_graph *g, int i)
{
	int64_t p[IR_MAX_RANK], xv[IR_MAX_RANK], yv[IR_MAX_RANK], pv[IR_MAX_RANK];
	if (!viewed_transpose(g, i, p))
		return 0;
	const struct ir_tensor *xt = &g->tensors[g->ops[i].in[0]];
	const struct ir_tensor *yt = &g->tensors[g->ops[i].out[0]];
	int r = xt->rank;
	if (r < 4 || xt->shape[0] <= xt->shape[1])
		return 0;
	xv[0] = yv[0] = 1;
	pv[0] = 0;
	for (int d = 0; d < r; d++) {
		xv[d + 1] = xt->shape[d];
		yv[d + 1] = yt->shape[d];
		pv[d + 1] = p[d] + 1;
	}
	return transpose_on_views(g, i, r + 1, xv, yv, pv);
}

/* A Transpose between two views whose tensors have unit axes
 * ([1, 1, 49, 16, 32] -> [1, 1, 16, 49, 32]: MaxViT's heads split for
 * its one window at 7 x 7, one lane of 64 in use) runs on the views
 * without them, batch 1 first ([1, 49, 16, 32] -> [1, 16, 49, 32]: 49
 * and 16 lanes), the same elements in the same order.  Only when its
 * input and output take fewer bytes per lane so. */
static int unit_view_transpose(struct ir_graph *g, int i)
{
	int64_t p[IR_MAX_RANK], xv[IR_MAX_RANK], yv[IR_MAX_RANK], pv[IR_MAX_RANK];
	int at[IR_MAX_RANK];
	if (!viewed_transpose(g, i, p))
		return 0;
	const struct ir_tensor *xt = &g->tensors[g->ops[i].in[0]];
	int r = xt->rank, k = 1;
	for (int d = 0; d < r; d++) {
		at[d] = xt->shape[d] == 1 ? -1 : k;
		if (at[d] > 0)
			xv[k++] = xt->shape[d];
	}
	if (k < 3 || k == r)
		return 0;   /* one axis left (merge-layout's), or no unit axis */
	xv[0] = yv[0] = 1;
	pv[0] = 0;
	for (int d = 0, n = 1; d < r; d++)
		if (at[p[d]] > 0) {
			pv[n] = at[p[d]];
			yv[n++] = xt->shape[p[d]];
		}
	return transpose_on_views(g, i, k, xv, yv, pv);
}

int lanefold_pattern(struct ir_graph *g, int i)
{
	const struct ir_op *op = &g->ops[i];
	if (batch_view_transpose(g, i) || unit_view_transpose(g, i))
		return 1;
	if (!foldable(g, op))
		return 0;
	int c = const_input(g, op);
	int seed = op->type == OP_MATMUL || op->type == OP_SOFTMAX ||
		   (g->tensors[op->out[0]].rank >= 5 && (c < 0 || !tiled(&g->tensors[c])));
	if (!seed && !next_to_fold(g, i))
		return 0;
	fold_op(g, i);
	return 1;
}

/* ---- the row view ---- */

/* Bytes per lane of a static tensor on the widest chip, its lane shape as
 * formats/tpuc-isa.5 gives it (rank 3: N, C, W; rank 4 and more: N, C, H,
 * W the rest). */
static int64_t lane_bytes(int r, const int64_t *shape, int64_t size)
{
	if (r >= 4)
		return lane_cost(r, shape, size);
	int64_t s[4] = { r == 3 ? shape[0] : 1, r == 3 ? shape[1] : 1, 1, r == 3 ? shape[2] : 1 };
	return lane_cost(4, s, size);
}

/* The row view of t: [1, P, N], P the product of its axes but the last. */
static void rows_shape(const struct ir_tensor *t, int64_t v[3])
{
	v[0] = 1, v[1] = 1, v[2] = t->shape[t->rank - 1];
	for (int d = 0; d + 1 < t->rank; d++)
		v[1] *= t->shape[d];
}

/* Is op one that works row by row along the last axis of its output y,
 * rank 4 or more, whose lane axis is narrower than the widest chip's
 * lanes and whose row view [1, P, N] takes fewer bytes per lane: a
 * pointwise op, an elementwise op of activations of y's shape and
 * constants that vary along the last axis alone (rank 3 at most), a
 * MatMul by a constant [K, N], LayerNormalization over the last axis, a
 * Slice of the last axis? */
static int row_op(const struct ir_graph *g, const struct ir_op *op)
{
	if (op->type == OP_COUNT || op->n_out != 1 || op->n_in < 1 || op->in[0] < 0 || op->out[0] < 0)
		return 0;
	/* x: its first activation (a bias Add may read the constant first) */
	int ax = 0;
	while (ax + 1 < op->n_in && op->in[ax] >= 0 && g->tensors[op->in[ax]].data)
		ax++;
	if (op->in[ax] < 0)
		return 0;
	const struct ir_tensor *y = &g->tensors[op->out[0]], *x = &g->tensors[op->in[ax]];
	int r = y->rank;
	int64_t v[3];
	if (r < 4 || y->dyn || x->dyn || x->data || x->rank != r || y->shape[1] >= widest_lanes())
		return 0;
	for (int d = 0; d + 1 < r; d++)
		if (x->shape[d] != y->shape[d])
			return 0;
	rows_shape(y, v);
	int64_t es = (int64_t)dtype_size(y->dtype);
	if (lane_bytes(3, v, es) >= lane_bytes(r, y->shape, es))
		return 0;
	if (pass_is_pointwise(op->type))
		return op->n_in == 1;
	switch (op->type) {
	case OP_ADD: case OP_SUB: case OP_MUL: case OP_DIV: case OP_MAX: case OP_MIN:
		if (op->n_in != 2 || op->in[1] < 0)
			return 0;
		for (int k = 0; k < 2; k++) {
			const struct ir_tensor *c = &g->tensors[op->in[k]];
			if (!c->data) {
				if (!pass_same_shape(c, y))
					return 0;
				continue;
			}
			if (c->dyn || c->rank > 3)
				return 0;
			for (int d = 0; d + 1 < c->rank; d++)
				if (c->shape[d] != 1)
					return 0;
		}
		return 1;
	case OP_MATMUL: {
		const struct ir_tensor *b = op->n_in == 2 && op->in[1] >= 0 ? &g->tensors[op->in[1]] : NULL;
		return b && b->data && b->rank == 2;
	}
	case OP_LAYERNORM:
		for (int k = 1; k < op->n_in; k++)
			if (op->in[k] >= 0 && (!g->tensors[op->in[k]].data || g->tensors[op->in[k]].rank > 1))
				return 0;
		return on_last(op, "axis", -1, r);
	case OP_SLICE: {
		int64_t a[IR_MAX_RANK];
		return op->n_in == 1 && op_ints(op, "axes", a, IR_MAX_RANK) == 1 &&
		       (a[0] == r - 1 || a[0] == -1);
	}
	default:
		return 0;
	}
}

/* The run of row ops connected to op i through their activations, their
 * outputs in out[0 .. return value), or 0 when an op outside the run that
 * is not a view produces an input of theirs or reads an output (or a graph
 * input or output is one): the new views merge with views, where any
 * other op would meet the run through a copy.  (A Transpose there costs
 * more than the run saves: MaxViT's grid attention, 997,318 -> 1,023,713
 * cycles on tpu-a in INT8.)  Refusal is a property of the whole run: a
 * refused run is walked to its end once and its ops remembered
 * (`refused`) until the graph changes, so that the ops of a long run
 * (a chain of 10,000 Adds) are not each walked along it again. */
static struct {
	const struct ir_graph *g;
	unsigned gen;
	int n_ops, cap, stamp;
	char *no;                      /* op k: in a run found refused */
	int *seen;                     /* op k: walked by the call of this stamp */
	int *walk, *stack;             /* the ops walked, in order; those to walk */
} refused;

static int row_region(const struct ir_graph *g, int i, int *out)
{
	if (refused.g != g || refused.gen != pass_index_gen() || refused.n_ops != g->n_ops) {
		if (g->n_ops + 1 > refused.cap) {
			FREE_ALL(refused.no, refused.seen, refused.walk, refused.stack);
			refused.cap = g->n_ops + 1;
			refused.no = xmalloc((size_t)refused.cap);
			refused.seen = xcalloc((size_t)refused.cap, sizeof *refused.seen);
			refused.walk = xmalloc(sizeof *refused.walk * (size_t)refused.cap);
			refused.stack = xmalloc(sizeof *refused.stack * (size_t)refused.cap);
			refused.stamp = 0;
		}
		memset(refused.no, 0, (size_t)g->n_ops + 1);
		refused.g = g;
		refused.gen = pass_index_gen();
		refused.n_ops = g->n_ops;
	}
	if (refused.no[i])
		return 0;
	if (++refused.stamp == INT_MAX) {
		memset(refused.seen, 0, sizeof *refused.seen * (size_t)refused.cap);
		refused.stamp = 1;
	}
	int *seen = refused.seen, *stack = refused.stack, stamp = refused.stamp;
	int n = 1, m = 0, nw = 0, ok = 1;
	stack[0] = i;
	seen[i] = stamp;
	while (n > 0) {
		int cur = stack[--n];
		const struct ir_op *op = &g->ops[cur];
		int y = op->out[0];
		out[m++] = y;
		refused.walk[nw++] = cur;
		for (int k = 0; k < op->n_in; k++) {
			int t = op->in[k];
			if (t < 0 || g->tensors[t].data)
				continue;
			int p = pass_producer(g, t);
			if (p < 0)
				ok = 0;
			else if (row_op(g, &g->ops[p])) {
				if (seen[p] != stamp)
					seen[p] = stamp, stack[n++] = p;
			} else if (!pass_is_view(g->ops[p].type))
				ok = 0;
		}
		if (pass_is_output(g, y))
			ok = 0;
		const int *rd;
		int nr = pass_readers(g, y, &rd);
		for (int q = 0; q < nr; q++) {
			int j = rd[q];
			const struct ir_op *u = &g->ops[j];
			if (row_op(g, u)) {
				if (seen[j] != stamp)
					seen[j] = stamp, stack[n++] = j;
			} else if (!pass_is_view(u->type))
				ok = 0;
		}
	}
	/* refused: every op of the run, walked whole */
	for (int k = 0; !ok && k < nw; k++)
		refused.no[refused.walk[k]] = 1;
	return ok ? m : 0;
}

/* A new rank-3 tensor of shape v named after t ("_rows"), with t's dtype
 * and quantisation. */
static int rows_tensor(struct ir_graph *g, int t, const int64_t v[3])
{
	char base[512];
	snprintf(base, sizeof base, "%s_rows", g->tensors[t].name);
	char *name = graph_unique_name(g, base, 1);
	int nt = graph_add_tensor(g, name, g->tensors[t].dtype, 3, v);
	free(name);
	copy_quant(&g->tensors[nt], &g->tensors[t]);
	return nt;
}

/* The row view of activation t for op i: the source of the views that
 * produce t when it has that shape, else an existing Reshape of that
 * source to it before op i, else a new one right after the source's
 * producer, where every later reader finds it (*i moves on).  Returns the
 * tensor. */
static int row_input(struct ir_graph *g, int *i, int t)
{
	int64_t v[3];
	rows_shape(&g->tensors[t], v);
	int s = t, p;
	while ((p = pass_producer(g, s)) >= 0 && pass_is_view(g->ops[p].type) && g->ops[p].in[0] >= 0 &&
	       !g->tensors[g->ops[p].in[0]].dyn)
		s = g->ops[p].in[0];
	const struct ir_tensor *st = &g->tensors[s];
	if (st->rank == 3 && !memcmp(st->shape, v, sizeof v))
		return s;
	for (int j = 0; j < *i; j++) {
		const struct ir_op *u = &g->ops[j];
		if (u->type == OP_RESHAPE && u->n_in >= 1 && u->in[0] == s && u->n_out == 1 &&
		    g->tensors[u->out[0]].rank == 3 && !memcmp(g->tensors[u->out[0]].shape, v, sizeof v))
			return u->out[0];
	}
	int nt = rows_tensor(g, t, v);
	char base[512];
	snprintf(base, sizeof base, "%s_rows", g->ops[*i].name);
	int k = pass_insert_after(g, pass_producer(g, s), OP_RESHAPE, base, s, nt);
	op_set_ints(&g->ops[k], "shape", 3, v);
	(*i)++;
	return nt;
}

/* Drop the views that produce t, from t back, while nothing reads their
 * results: a view left without readers would keep the ones before it
 * from having a sole reader (other patterns ask for one). */
static void drop_unread_views(struct ir_graph *g, int t)
{
	int p;
	while (t >= 0 && pass_uses(g, t) == 0 && (p = pass_producer(g, t)) >= 0 &&
	       pass_is_view(g->ops[p].type) && g->ops[p].n_out == 1) {
		g->ops[p].type = OP_COUNT;
		t = g->ops[p].in[0];
		pass_index_drop();
	}
}

/* Op i, a row op, runs on row views: its activations through views (its
 * input's source when a view of the row shape produces it), its output
 * through a new view after it.  Returns op i's new index. */
static int row_rewrite(struct ir_graph *g, int i)
{
	int r = g->tensors[g->ops[i].out[0]].rank;
	for (int k = 0; k < g->ops[i].n_in; k++) {
		int t = g->ops[i].in[k];
		if (t < 0 || g->tensors[t].data)
			continue;
		int nt = row_input(g, &i, t);
		g->ops[i].in[k] = nt;
		pass_index_drop();
		drop_unread_views(g, t);
	}
	struct ir_op *o = &g->ops[i];
	if (o->type == OP_SLICE)
		op_set_ints(o, "axes", 1, (int64_t[]){ 2 });
	else if (o->type == OP_LAYERNORM)
		op_set_int(o, "axis", 2);
	int y = o->out[0];
	int64_t v[3];
	rows_shape(&g->tensors[y], v);
	int ny = rows_tensor(g, y, v);
	g->ops[i].out[0] = ny;
	char base[512];
	snprintf(base, sizeof base, "%s_unrows", g->ops[i].name);
	int k = pass_insert_after(g, i, OP_RESHAPE, base, ny, y);
	op_set_ints(&g->ops[k], "shape", r, g->tensors[y].shape);
	pass_index_drop();
	return i;
}

int rowview_pattern(struct ir_graph *g, int i)
{
	const struct ir_op *op = &g->ops[i];
	/* a view back to the shape of the view it reads is that view's input */
	if (pass_is_view(op->type) && op->n_in >= 1 && op->in[0] >= 0 && op->n_out == 1) {
		int p = pass_producer(g, op->in[0]);
		if (p < 0 || !pass_is_view(g->ops[p].type) || g->ops[p].in[0] < 0 ||
		    pass_is_output(g, op->out[0]) ||
		    !pass_same_shape(&g->tensors[g->ops[p].in[0]], &g->tensors[op->out[0]]))
			return 0;
		int t = op->in[0];
		g->ops[i].in[0] = g->ops[p].in[0];
		int rc = pass_bypass(g, i);
		drop_unread_views(g, t);
		return rc;
	}
	if (!row_op(g, op))
		return 0;
	/* the whole run at once: a part of it would meet the rest by copies */
	int *out = xmalloc(sizeof *out * (size_t)(g->n_ops + 1));
	int m = row_region(g, i, out);
	for (int k = 0; k < m; k++)
		row_rewrite(g, pass_producer(g, out[k]));
	free(out);
	return m > 0;
}
