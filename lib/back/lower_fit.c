/* lower_fit.c - ops that no cut of codegen fits in local memory become
 * several ops that each fit (lib/back/lower_fit.h).  Codegen slices an op
 * along H and chunks its output channels; what it cannot cut that way is
 * rewritten here, in the Tpu graph, so that ir-run on the Tpu IR and
 * tpu-sim run the same ops:
 *
 *  - an elementwise op whose rows are too long (a [1,2,200000] Relu: one
 *    row fills more than a lane) runs on its tensors reshaped to
 *    [1, C, H, W] with C the lanes (or the largest power of two dividing
 *    the element count) and W at most REFOLD_W: Reshape its inputs, the op,
 *    Reshape the result back.  The values do not move, so the results are
 *    the same bits.  An operand with as many elements as the output, a
 *    weight too (MaxViT's relative position bias), folds the same way.
 *    So does one that fits but leaves most lanes idle (refold_spreads: a
 *    [450, 2] tensor has 450 rows of 2 lanes), and a Concat or Slice of
 *    such a tensor along another axis runs with a leading axis of 1, the
 *    first axis over the lanes (spread_copy); both first, so that such a
 *    Concat need not be cut into parts.  An elementwise op runs so only
 *    where no chip op beside it keeps the rows in N (the Reshape back
 *    would cost a local group what the op saves), and a Slice or Concat
 *    the DMA engine moves alone (a column copy) only beside such an op,
 *    in a chain (spread_plan).  Where one refolded op reads
 *    another's result, the Reshape back and the Reshape in cancel, across
 *    any views between them (refold_cancel): the second op reads the
 *    first's folded result itself, so that layergroup can keep a chain
 *    of them (a detector's box decode) in one local group;
 *  - a commutative binary op whose first operand is a weight takes its
 *    activation first, as codegen slices along the first operand's rows;
 *  - a MatMul of a 2-D B whose A has batch axes before its rows runs on A
 *    reshaped to [1, rows, K], so that the rows spread over the lanes;
 *  - a MatMul whose B (or output) is too large runs on column blocks of B:
 *    Slice (or a new weight) per block, a MatMul per block into a part of
 *    the output, a Concat of the parts along the last axis.  Each output
 *    element is the same dot product, so the same bits too;
 *  - a Conv, Gemm or MatMul whose reduction over input channels (K) is
 *    what does not fit runs as partial ops over parts of K and their sum
 *    at full precision (lib/back/lower_kin.c);
 *  - a Conv of several groups runs on parts of its groups
 *    (lib/back/lower_kin.c);
 *  - an op whose windows along an axis do not fit (a Conv, pooling or
 *    ConvTranspose row too wide, a Pad, DepthToSpace or Resize) runs on
 *    blocks of its output along that axis (lib/back/lower_wsplit.c);
 *  - an op whose elements along some output axis are computed each on
 *    their own (images or windows along axis 0, the kept axes of a
 *    reduction, any axis of a Transpose) runs on parts of that axis,
 *    concatenated (lib/back/lower_axsplit.c);
 *  - a reduction (a global pool too), Softmax, LogSoftmax, ArgMax or a
 *    normalisation whose rows do not fit runs in stages over shorter rows
 *    (lib/back/lower_rows.c);
 *  - a bidirectional LSTM, GRU or RNN runs as one op per direction
 *    (rnn_directions).
 *
 * An op that none of these cuts (an LSTM or GRU whose recurrent weights
 * fill a lane) runs on the host as a last resort, its float kernel between
 * Casts (host_fallback).  An op with more operands than a command takes
 * is judged as lower_split_wide will narrow it (split_fits).
 *
 * The fit of an op that reads weights is tested with 7/8 of the chip's
 * local memory, leaving room for what weight-reorder adds (merged
 * coefficients); of the others with all of it.  What still does not fit
 * is left to codegen, which names the op.
 */
#include <stdlib.h>
#include <string.h>

#include "back/codegen.h"
#include "back/lower_fit.h"
#include "back/lower_kin.h"
#include "back/lower_rows.h"
#include "back/lower_axsplit.h"
#include "back/lower_split.h"
#include "back/lower_wsplit.h"
#include "chip/isa.h"
#include "chip/isa_copy.h"
#include "ir/convert.h"
#include "ir/base.h"
#include "ir/op.h"
#include "passes/rewrite.h"
#include "quant/quant.h"

#define REFOLD_W 1024   /* elements per row of a refolded tensor, at most */

struct fit {
	struct ir_graph *g;
	int n0;                 /* ops before the pass */
	int *owner, *after;     /* per new op: the op it serves, and 1 if after it */
	int cap_o, cap_a;
};

static void note(struct fit *f, int k, int owner, int after)
{
	int i = k - f->n0;
	grow_array((void **)&f->owner, &f->cap_o, i + 1, sizeof *f->owner);
	grow_array((void **)&f->after, &f->cap_a, i + 1, sizeof *f->after);
	f->owner[i] = owner;
	f->after[i] = after;
}

static void kin_note(void *ctx, int k, int owner)
{
	note(ctx, k, owner, 0);
}

static int add_reshape(struct fit *f, int x, int y, int owner, int after)
{
	struct ir_graph *g = f->g;
	char base[512];
	snprintf(base, sizeof base, "%s_refold", g->tensors[y].name);
	char *name = graph_unique_name(g, base, 1);
	int k = graph_add_op(g, OP_RESHAPE, name, 1, &x, 1, &y);
	free(name);
	op_set_ints(&g->ops[k], "shape", g->tensors[y].rank, g->tensors[y].shape);
	note(f, k, owner, after);
	return k;
}

/* The shape elementwise op i (slice_h_same, not Scale) whose inputs are
 * of its output's shape or single values runs on refolded, into shape;
 * 0 when it is not such an op or already has that shape. */
static int refold_shape(const struct ir_graph *g, int i, const struct chip *c, int64_t shape[4])
{
	const struct ir_op *op = &g->ops[i];
	if (op_defs[op->type]->slice_h != slice_h_same || op->type == OP_SCALE || op->n_out != 1)
		return 0;
	const struct ir_tensor *y = &g->tensors[op->out[0]];
	int64_t e = tensor_numel(y);
	if (e < 1)
		return 0;
	for (int j = 0; j < op->n_in; j++) {
		if (op->in[j] < 0)
			continue;
		const struct ir_tensor *x = &g->tensors[op->in[j]];
		/* an operand with as many elements as the output broadcasts
		 * only over axes of 1: its elements are in the output's order */
		if (tensor_numel(x) != 1 && tensor_numel(x) != e)
			return 0;
	}
	int64_t ch = 1, rest, w;
	while (ch < c->lanes && e % (ch * 2) == 0)
		ch *= 2;
	rest = e / ch;
	for (w = rest < REFOLD_W ? rest : REFOLD_W; w > 1 && rest % w; w--)
		;
	shape[0] = 1;
	shape[1] = ch;
	shape[2] = rest / w;
	shape[3] = w;
	return !(y->rank == 4 && !memcmp(shape, y->shape, 4 * sizeof *shape));
}

/* Vector cycles of elementwise op i over lane shape s (cost_vector on the
 * wider of input 0 and the output). */
static int64_t refold_cost(const struct ir_graph *g, int i, const struct chip *c, const int64_t s[4])
{
	const struct ir_op *op = &g->ops[i];
	enum ir_dtype dt = g->tensors[op->out[0]].dtype;
	if (op->n_in > 0 && op->in[0] >= 0 && dtype_size(g->tensors[op->in[0]].dtype) > dtype_size(dt))
		dt = g->tensors[op->in[0]].dtype;
	return cost_vector(c, dt, s[1], s[0], s[2], s[3], 1);
}

/* Whether elementwise op i on the chip, which fits, leaves most lanes idle
 * where refolded it would not: a tensor of rank 2 or 3 has its first axis
 * in N, one row per element of it ([450, 4] boxes: 450 rows of 4 lanes),
 * so where its second axis fills at most half the lanes it runs refolded
 * when that at least halves its vector cycles.  (A long second axis
 * already fills the lanes: the Reshapes a local group copies would cost
 * more than the shorter rows save.) */
static int refold_spreads(const struct ir_graph *g, int i, const struct chip *c, const int64_t shape[4])
{
	const struct ir_op *op = &g->ops[i];
	const struct ir_tensor *y = &g->tensors[op->out[0]];
	if (op->place == PLACE_HOST || y->rank < 2 || y->rank > 3 || y->shape[0] < 2 || tensor_dyn(y))
		return 0;
	int64_t s[4];
	isa_lane_shape(y->rank, y->shape, 0, s);
	return 2 * s[1] <= c->lanes && 2 * refold_cost(g, i, c, shape) < refold_cost(g, i, c, s);
}

/* Elementwise op i refolded as above, when it does not fit or (SPREAD)
 * when refold_spreads.  0 when it is not such an op. */
static int refold(struct fit *f, int i, const struct chip *c, int spread)
{
	struct ir_graph *g = f->g;
	int64_t shape[4];
	if (!refold_shape(g, i, c, shape) || (spread && !refold_spreads(g, i, c, shape)))
		return 0;
	for (int j = 0; j < g->ops[i].n_in; j++) {
		int t = g->ops[i].in[j];
		if (t < 0 || tensor_numel(&g->tensors[t]) == 1)
			continue;
		char base[512];
		snprintf(base, sizeof base, "%s_refold", g->tensors[t].name);
		int r;
		if (g->tensors[t].data) {
			/* a weight (MaxViT's relative position bias): the same
			 * bytes under the folded shape */
			char *name = graph_unique_name(g, base, 1);
			r = graph_add_weight(g, name, g->tensors[t].dtype, 4, shape, g->tensors[t].data);
			free(name);
			g->tensors[r].scale = g->tensors[t].scale;
			g->tensors[r].zero_point = g->tensors[t].zero_point;
		} else {
			r = split_new_tensor(g, base, &g->tensors[t], 4, shape);
			add_reshape(f, t, r, i, 0);
		}
		g->ops[i].in[j] = r;
	}
	int out = g->ops[i].out[0];
	char base[512];
	snprintf(base, sizeof base, "%s_refold", g->tensors[out].name);
	int r = split_new_tensor(g, base, &g->tensors[out], 4, shape);
	g->ops[i].out[0] = r;
	add_reshape(f, r, out, i, 1);
	return 1;
}

/* Concat or Slice i on the chip (COPIES: also one the DMA engine moves
 * alone, isa_copy_pieces), of rank 2 or 3, that copies along axes
 * other than the first while the first is long ([675, 1, 1] box
 * coordinates joined into [675, 1, 4]): the first axis is N, one row per
 * element of it, on a few lanes.  It runs on its tensors with a leading
 * axis of 1 ([1, 675, 1, 1]), the first axis then over the lanes, its axis
 * attributes one further, when the second axis fills at most half the
 * lanes and the spread at least halves its vector cycles:
 * Reshape the inputs, the op, Reshape the result back.  The values do not
 * move, so the results are the same bits.  Without APPLY only says so:
 * 1, or 2 for a DMA copy.  0 when it is not such an op. */
static int spread_copy(struct fit *f, int i, const struct chip *c, int apply, int copies)
{
	struct ir_graph *g = f->g;
	const struct ir_op *op = &g->ops[i];
	if ((op->type != OP_CONCAT && op->type != OP_SLICE) || op->place == PLACE_HOST ||
	    op->n_out != 1 || op->out[0] < 0)
		return 0;
	struct isa_piece *pc = NULL;
	int copy = isa_copy_pieces(g, op, &pc);
	free(pc);
	if (copy > 0 && !copies)
		return 0;   /* the DMA engine moves it alone, strided (codegen) */
	const struct ir_tensor *y = &g->tensors[op->out[0]];
	int r = y->rank;
	if (r < 2 || r > 3 || y->shape[0] < 2 || tensor_dyn(y))
		return 0;
	int64_t ax[IR_MAX_RANK];
	int n_ax;
	if (op->type == OP_CONCAT) {
		ax[0] = op_int(op, "axis", 1);
		n_ax = 1;
	} else {
		if (op->n_in != 1)
			return 0;   /* starts and ends as inputs: not lowered so */
		n_ax = op_ints(op, "axes", ax, IR_MAX_RANK);
	}
	if (n_ax < 1)
		return 0;
	for (int k = 0; k < n_ax; k++) {
		if (ax[k] < 0)
			ax[k] += r;
		if (ax[k] <= 0 || ax[k] >= r)
			return 0;   /* along the first axis: rows of N already */
		ax[k]++;
	}
	for (int j = 0; j < op->n_in; j++)
		if (op->in[j] < 0 || tensor_dyn(&g->tensors[op->in[j]]) || g->tensors[op->in[j]].rank != r)
			return 0;
	int64_t shape[IR_MAX_RANK + 1], s[4], t[4];
	shape[0] = 1;
	memcpy(shape + 1, y->shape, sizeof *shape * (size_t)r);
	isa_lane_shape(r, y->shape, 0, s);
	isa_lane_shape(r + 1, shape, 0, t);
	if (2 * s[1] > c->lanes || 2 * cost_vector(c, y->dtype, t[1], t[0], t[2], t[3], 1) >=
	    cost_vector(c, y->dtype, s[1], s[0], s[2], s[3], 1))
		return 0;
	if (!apply)
		return copy > 0 ? 2 : 1;
	for (int j = 0; j < g->ops[i].n_in; j++) {
		int x = g->ops[i].in[j];
		memcpy(shape + 1, g->tensors[x].shape, sizeof *shape * (size_t)r);
		char base[512];
		snprintf(base, sizeof base, "%s_spread", g->tensors[x].name);
		int q;
		if (g->tensors[x].data) {
			char *name = graph_unique_name(g, base, 1);
			q = graph_add_weight(g, name, g->tensors[x].dtype, r + 1, shape, g->tensors[x].data);
			free(name);
			g->tensors[q].scale = g->tensors[x].scale;
			g->tensors[q].zero_point = g->tensors[x].zero_point;
		} else {
			q = split_new_tensor(g, base, &g->tensors[x], r + 1, shape);
			add_reshape(f, x, q, i, 0);
		}
		g->ops[i].in[j] = q;
	}
	if (g->ops[i].type == OP_CONCAT)
		op_set_int(&g->ops[i], "axis", ax[0]);
	else
		op_set_ints(&g->ops[i], "axes", n_ax, ax);
	int out = g->ops[i].out[0];
	memcpy(shape + 1, g->tensors[out].shape, sizeof *shape * (size_t)r);
	char base[512];
	snprintf(base, sizeof base, "%s_spread", g->tensors[out].name);
	int q = split_new_tensor(g, base, &g->tensors[out], r + 1, shape);
	g->ops[i].out[0] = q;
	add_reshape(f, q, out, i, 1);
	return 1;
}

/* MatMul i of a 2-D B whose A has batch axes before its rows
 * ([197, 1, 768], as torchvision's ViT exports its projections): the batch
 * axes hold every row in one lane (the lanes take axis 1), so it runs on
 * A reshaped to [1, rows, K], the rows over the lanes, and the result
 * reshaped back.  The bytes do not move: the same bits.  0 when A has no
 * such axes. */
static int refold_matmul(struct fit *f, int i)
{
	struct ir_graph *g = f->g;
	const struct ir_op *op = &g->ops[i];
	if (op->type != OP_MATMUL || op->n_out != 1 || op->n_in < 2 || op->in[0] < 0 ||
	    op->in[1] < 0 || g->tensors[op->in[1]].rank != 2)
		return 0;
	const struct ir_tensor *a = &g->tensors[op->in[0]], *y = &g->tensors[op->out[0]];
	int r = a->rank;
	if (r < 3 || y->rank != r || a->data)
		return 0;
	int64_t rows = 1, lead = 1;
	for (int d = 0; d < r - 1; d++)
		rows *= a->shape[d];
	for (int d = 0; d < r - 2; d++)
		lead *= a->shape[d];
	if (lead == 1)
		return 0;
	int64_t as[3] = { 1, rows, a->shape[r - 1] }, ys[3] = { 1, rows, y->shape[r - 1] };
	char base[512];
	snprintf(base, sizeof base, "%s_rows", a->name);
	int at = split_new_tensor(g, base, a, 3, as);
	add_reshape(f, g->ops[i].in[0], at, i, 0);
	snprintf(base, sizeof base, "%s_rows", g->tensors[g->ops[i].out[0]].name);
	int yt = split_new_tensor(g, base, &g->tensors[g->ops[i].out[0]], 3, ys);
	int out = g->ops[i].out[0];
	g->ops[i].in[0] = at;
	g->ops[i].out[0] = yt;
	add_reshape(f, yt, out, i, 1);
	return 1;
}

/* MatMul i whose B has the output's columns on its last axis: blocks of
 * columns, each small enough that B's block holds at most a quarter of
 * local memory per lane.  0 when it is not such a MatMul or one block
 * would hold all. */
static int matmul_cols(struct fit *f, int i, const struct chip *c)
{
	struct ir_graph *g = f->g;
	const struct ir_op *op = &g->ops[i];
	if (op->type != OP_MATMUL || op->n_out != 1 || op->n_in < 2 || op->in[0] < 0 || op->in[1] < 0)
		return 0;
	const struct ir_tensor *b = &g->tensors[op->in[1]], *y = &g->tensors[op->out[0]];
	int64_t n = y->shape[y->rank - 1];
	if (b->rank < 2 || b->shape[b->rank - 1] != n || n < 2)
		return 0;
	for (int j = 2; j < op->n_in; j++) {
		if (op->in[j] < 0)
			continue;
		const struct ir_tensor *p = &g->tensors[op->in[j]];
		int64_t np = tensor_numel(p);
		if (!p->data || (np != 1 && (p->rank != 1 || np != n)))
			return 0;
	}
	/* B's bytes per lane and per column, in the activation layout */
	int64_t s[4];
	isa_lane_shape(b->rank, b->shape, isa_weight_layout(b), s);
	int64_t per_col = ceil_div(s[1], c->lanes) * s[0] * s[2] * (int64_t)dtype_size(b->dtype);
	if (isa_weight_layout(b))
		per_col = ceil_div(b->shape[0], c->lanes) * (int64_t)dtype_size(b->dtype) *
			  (tensor_numel(b) / b->shape[0] / n);
	int64_t ys[4];
	isa_lane_shape(y->rank, y->shape, 0, ys);
	per_col += ceil_div(ys[1], c->lanes) * ys[0] * (y->rank >= 4 ? 1 : ys[2]) *
		   (int64_t)dtype_size(y->dtype);
	int64_t cols = c->lmem_bytes / 4 / (per_col > 0 ? per_col : 1);
	int64_t vec = c->vec_bytes / (int64_t)dtype_size(b->dtype);
	cols = cols / vec * vec;
	if (cols < 1)
		cols = 1;
	if (cols >= n)
		return 0;
	int parts = (int)ceil_div(n, cols);
	int *pout = xmalloc(sizeof *pout * (size_t)parts);
	for (int p = 0; p < parts; p++) {
		int64_t c0 = p * cols, c1 = c0 + cols < n ? c0 + cols : n;
		op = &g->ops[i];
		int n_in = op->n_in;
		int *in = xmalloc(sizeof *in * (size_t)n_in);
		memcpy(in, op->in, sizeof *in * (size_t)n_in);
		if (g->tensors[in[1]].data)
			in[1] = graph_weight_slice(g, in[1], g->tensors[in[1]].rank - 1, c0, c1, "cols");
		else
			in[1] = split_slice(g, in[1], -1, c0, c1, "cols", kin_note, f, i);
		for (int j = 2; j < n_in; j++)
			if (in[j] >= 0 && tensor_numel(&g->tensors[in[j]]) == n)
				in[j] = graph_weight_slice(g, in[j], g->tensors[in[j]].rank - 1, c0, c1, "cols");
		int yt = split_part_tensor(g, g->ops[i].out[0], -1, c1 - c0, "cols", c0);
		note(f, split_part_op(g, i, in, n_in, yt), i, 0);
		free(in);
		pout[p] = yt;
	}
	/* op i becomes the Concat of the parts */
	split_concat(g, i, pout, parts, -1);
	free(pout);
	return 1;
}

/* A commutative binary op whose first operand is a weight (a bias added
 * as Add(b, x), as torchvision's ViT and MaxViT export it): codegen slices
 * an op along the rows of its first input, so the activation goes first.
 * The int8 Add's per-operand multipliers swap with them; the sum, product,
 * max or min is the same bits. */
static int swap_operands(struct ir_graph *g, int i)
{
	struct ir_op *op = &g->ops[i];
	if ((op->type != OP_ADD && op->type != OP_MUL && op->type != OP_MAX && op->type != OP_MIN) ||
	    op->n_in != 2 || op->in[0] < 0 || op->in[1] < 0 || !g->tensors[op->in[0]].data ||
	    g->tensors[op->in[1]].data)
		return 0;
	int64_t m[2];
	const struct ir_attr *a = op_attr(op, "multipliers");
	if (a && (a->kind != ATTR_INTS || op_ints(op, "multipliers", m, 2) != 2))
		return 0;
	int in[2] = { op->in[1], op->in[0] };
	op_set_inputs(op, 2, in);
	if (a) {
		int64_t sw[2] = { m[1], m[0] };
		op_set_ints(op, "multipliers", 2, sw);
	}
	return 1;
}

/* Tensor x as an f32 tensor for a host op: a Cast before op `owner` (by
 * value from bf16 or f16, dequantised from i8 or u8), or for a weight an
 * f32 copy; x itself when it is f32 or an integer tensor without a scale. */
static int host_f32(struct fit *f, int x, int owner)
{
	struct ir_graph *g = f->g;
	const struct ir_tensor *t = &g->tensors[x];
	if (t->dtype == DT_F32 || (!quant_is_float(t->dtype) && !(quant_is_q(t->dtype) && t->scale != 0)))
		return x;
	char base[512];
	snprintf(base, sizeof base, "%s_f32", t->name);
	if (t->data) {
		int64_t n = tensor_numel(t);
		float *v = xmalloc(sizeof *v * (size_t)(n + 1));
		dtype_convert(v, DT_F32, t->data, t->dtype, n);
		char *name = graph_unique_name(g, base, 1);
		int w = graph_add_weight(g, name, DT_F32, t->rank, t->shape, v);
		free(name);
		free(v);
		return w;
	}
	struct ir_tensor like = *t;
	like.dtype = DT_F32;
	like.scale = 0;
	like.zero_point = 0;
	int y = split_new_tensor(g, base, &like, t->rank, t->shape);
	int k = graph_add_op(g, OP_CAST, g->tensors[y].name, 1, &x, 1, &y);
	op_set_str(&g->ops[k], "to", "f32");
	note(f, k, owner, 0);
	return y;
}

/* The last resort for an op that nothing cuts (an LSTM or GRU whose
 * recurrent weights fill a lane): it runs on the host, as the ops the
 * chip has no form for do (lib/back/lower_dtype.c), its float kernel on
 * f32 tensors with Casts at the boundary, marked PLACE_HOST.  Only an op
 * in its float form (no i8 weight of an int8 kernel); 0 otherwise. */
static int host_fallback(struct fit *f, int i)
{
	struct ir_graph *g = f->g;
	const struct ir_op *op = &g->ops[i];
	if (!op_defs[op->type]->run_f32 || op->place == PLACE_HOST)
		return 0;
	for (int j = 0; j < op->n_in; j++) {
		const struct ir_tensor *x = op->in[j] >= 0 ? &g->tensors[op->in[j]] : NULL;
		if (x && x->data && (quant_is_q(x->dtype) || x->dtype == DT_I16 || x->dtype == DT_I32))
			return 0;
	}
	for (int j = 0; j < g->ops[i].n_in; j++)
		if (g->ops[i].in[j] >= 0) {
			int x = host_f32(f, g->ops[i].in[j], i);
			g->ops[i].in[j] = x;
		}
	for (int j = 0; j < g->ops[i].n_out; j++) {
		int y = g->ops[i].out[j];
		const struct ir_tensor *t = &g->tensors[y];
		if (t->dtype == DT_F32 || (!quant_is_float(t->dtype) && !quant_is_q(t->dtype)))
			continue;
		char base[512];
		snprintf(base, sizeof base, "%s_f32", t->name);
		struct ir_tensor like = *t;
		like.dtype = DT_F32;
		like.scale = 0;
		like.zero_point = 0;
		int h = split_new_tensor(g, base, &like, t->rank, t->shape);
		g->ops[i].out[j] = h;
		int k = graph_add_op(g, OP_CAST, g->tensors[y].name, 1, &h, 1, &y);
		op_set_str(&g->ops[k], "to", dtype_name(g->tensors[y].dtype));
		note(f, k, i, 1);
	}
	g->ops[i].place = PLACE_HOST;
	return 1;
}

/* A bidirectional LSTM, GRU or RNN whose two directions together do not
 * fit: one op per direction (forward, then reverse) on that direction's
 * W, R, B, P and initial states, their outputs concatenated along the
 * direction axis.  A weight [2, G*H, K] lies with its directions across
 * the lanes, so each lane holds a whole direction; a weight [1, G*H, K]
 * spreads its G*H rows over the lanes instead.  The directions never
 * read each other's values, so the bits are the same.  0 when op i is
 * not such an op. */
static int rnn_directions(struct fit *f, int i)
{
	struct ir_graph *g = f->g;
	struct ir_op *op = &g->ops[i];
	if ((op->type != OP_LSTM && op->type != OP_GRU && op->type != OP_RNN) ||
	    strcmp(op_str(op, "direction", "forward"), "bidirectional") || op_attr(op, "slots") ||
	    op_attr(op, "activation_alpha") || op_attr(op, "activation_beta") || op->n_out < 1 ||
	    op->out[0] < 0)
		return 0;
	int layout = (int)op_int(op, "layout", 0), n_in = op->n_in, n_out = op->n_out;
	int n_act = op->type == OP_LSTM ? 3 : op->type == OP_GRU ? 2 : 1;
	const struct ir_attr *os = op_attr(op, "out_slots");
	/* the direction axis of each output: Y [T, D, N, H] (layout 1:
	 * [N, T, D, H]), Y_h and Y_c [D, N, H] ([N, D, H]) */
	int64_t *ax = xmalloc(sizeof *ax * (size_t)(n_out + 1));
	for (int j = 0; j < n_out; j++) {
		int slot = os && os->kind == ATTR_INTS && j < os->n ? (int)os->ints[j] : j;
		ax[j] = slot == 0 ? 1 + layout : layout;
	}
	/* activations named per direction keep their own half */
	char *acts = xstrdup(op_str(op, "activations", ""));
	int n_names = *acts ? 1 : 0;
	for (const char *s = acts; *s; s++)
		n_names += *s == ',';
	int *in = xmalloc(sizeof *in * (size_t)(n_in + 1));
	int *parts = xmalloc(sizeof *parts * (size_t)(2 * n_out + 1));
	for (int d = 0; d < 2; d++) {
		memcpy(in, g->ops[i].in, sizeof *in * (size_t)n_in);
		for (int j = 1; j < n_in; j++) {
			/* X (0) and sequence_lens (4) serve both directions;
			 * initial_h and initial_c (5, 6) lie as Y_h */
			int a = j == 4 ? -1 : j >= 5 && j <= 6 ? layout : 0;
			if (in[j] < 0 || a < 0)
				continue;
			in[j] = g->tensors[in[j]].data ? graph_weight_slice(g, in[j], a, d, d + 1, "dir")
						       : split_slice(g, in[j], a, d, d + 1, "dir", kin_note, f, i);
		}
		int *out = parts + d * n_out;
		for (int j = 0; j < n_out; j++)
			out[j] = g->ops[i].out[j] < 0 ? -1
						      : split_part_tensor(g, g->ops[i].out[j], (int)ax[j], 1, "dir", d);
		int k = graph_add_op(g, g->ops[i].type, g->tensors[out[0]].name, n_in, in, n_out, out);
		op_copy_attrs(&g->ops[k], &g->ops[i]);
		op_set_str(&g->ops[k], "direction", d ? "reverse" : "forward");
		if (n_names == 2 * n_act) {   /* names d * n_act .. (d + 1) * n_act - 1 */
			char *s = acts, *e;
			for (int q = 0; q < d * n_act; q++)
				s = strchr(s, ',') + 1;
			e = s;
			for (int q = 0; q < n_act - 1; q++)
				e = strchr(e, ',') + 1;
			e += strcspn(e, ",");
			char c = *e;
			*e = 0;
			op_set_str(&g->ops[k], "activations", s);
			*e = c;
		}
		note(f, k, i, 0);
	}
	for (int j = n_out - 1; j >= 0; j--) {
		int two[2] = { parts[j], parts[n_out + j] };
		if (two[0] < 0)
			continue;
		if (j == 0)
			split_concat(g, i, two, 2, ax[0]);
		else
			note(f, split_concat_new(g, g->ops[i].out[j], two, 2, ax[j]), i, 0);
	}
	free(acts);
	free(in);
	free(parts);
	free(ax);
	return 1;
}

/* 1 when op i reads a weight (whose coefficients weight-reorder may add to). */
static int has_weight(const struct ir_graph *g, int i)
{
	const struct ir_op *op = &g->ops[i];
	for (int j = 0; j < op->n_in; j++)
		if (op->in[j] >= 0 && g->tensors[op->in[j]].data)
			return 1;
	return 0;
}

/* One pass over the graph's ops: each that does not fit is rewritten
 * (SPREAD: each op spread_plan marks is refolded or spread instead),
 * and the new ops are put before or after the op they serve, in the order
 * made (a stable bucket sort by owner).  Returns 1 if any op changed. */
static int fit_pass(struct ir_graph *g, const struct chip *chip, const char *spread)
{
	struct chip c = *chip;
	c.lmem_bytes = chip->lmem_bytes / 8 * 7;
	struct fit f = { .g = g, .n0 = g->n_ops };
	int any = 0;
	for (int i = 0; i < f.n0; i++) {
		if (spread) {
			if (spread[i])
				any |= refold(&f, i, chip, 1) || spread_copy(&f, i, chip, 1, 1);
			continue;
		}
		/* the margin only where weight-reorder adds to the op */
		const struct chip *cc = has_weight(g, i) ? &c : chip;
		int rc = split_fits(g, cc, i, NULL);
		if (rc != 0)
			continue;
		/* parts of the batch first: they cost copies only, where
		 * parts of K cost partial sums */
		if (swap_operands(g, i) || refold(&f, i, chip, 0) || refold_matmul(&f, i) ||
		    lower_axsplit(g, i, cc, kin_note, &f) ||
		    lower_groups(g, i, cc, kin_note, &f) || lower_kin(g, i, chip, kin_note, &f) ||
		    lower_wsplit(g, i, cc, kin_note, &f) ||
		    matmul_cols(&f, i, chip) || lower_rows(g, i, cc, kin_note, &f) ||
		    rnn_directions(&f, i) || (split_fits(g, chip, i, NULL) == 0 && host_fallback(&f, i)))
			any = 1;
	}
	err_set("%s", "");
	if (any) {
		int n = g->n_ops, m = n - f.n0;
		/* first[i], first[i + 1]: op i's new ops, in the order made */
		int *first = xcalloc((size_t)f.n0 + 2, sizeof *first), *by = xmalloc(sizeof *by * (size_t)(m + 1));
		for (int j = 0; j < m; j++)
			first[f.owner[j] + 2]++;
		for (int i = 0; i < f.n0; i++)
			first[i + 2] += first[i + 1];
		for (int j = 0; j < m; j++)
			by[first[f.owner[j] + 1]++] = f.n0 + j;
		struct ir_op *ops = xmalloc(sizeof *ops * (size_t)n);
		int k = 0;
		for (int i = 0; i < f.n0; i++) {
			for (int q = first[i]; q < first[i + 1]; q++)
				if (!f.after[by[q] - f.n0])
					ops[k++] = g->ops[by[q]];
			ops[k++] = g->ops[i];
			for (int q = first[i]; q < first[i + 1]; q++)
				if (f.after[by[q] - f.n0])
					ops[k++] = g->ops[by[q]];
		}
		memcpy(g->ops, ops, sizeof *ops * (size_t)n);
		free(ops);
		free(first);
		free(by);
		/* ops a rewrite left dead, and weights no op reads any more */
		graph_compact(g);
	}
	free(f.owner);
	free(f.after);
	return any;
}

/* Passes until every op fits or none changes: a part made by one split
 * (a MatMul's part of K) may need another (its columns), a Softmax's
 * stages their own splits.  Each pass only makes smaller ops, and a few
 * suffice; the bound keeps a bug from looping. */
/* Whether op is a view on the chip: a Reshape (its shape an attribute),
 * Flatten, Squeeze or Unsqueeze of one input, of static shapes, whose
 * result is its input's bytes in the same order. */
static int chip_view(const struct ir_graph *g, const struct ir_op *op)
{
	return pass_is_view(op->type) && op->place != PLACE_HOST && op->n_in == 1 &&
	       op->n_out == 1 && op->in[0] >= 0 && op->out[0] >= 0 &&
	       !tensor_dyn(&g->tensors[op->in[0]]) && !tensor_dyn(&g->tensors[op->out[0]]);
}

/* Views on the chip that follow a view (refold_cancel): a Reshape,
 * Flatten, Squeeze or Unsqueeze whose input is another's result.  Where
 * the second's result has the first's input's shape, dtype, scale and zero
 * point and is no graph output, the second is dropped, its readers reading
 * the first's input; otherwise a second Reshape reads the first's input
 * itself (one view for two).  The first goes too once nothing reads its
 * result.  A chain of refolded ops with views between them (a detector's
 * box decode: the refold's Reshape back, an Unsqueeze, the next op's
 * Reshape in) then reads the folded tensors, and a local group copies one
 * Reshape where it copied several.  Views all, so the values are the same
 * bits.  Returns how many views were dropped or shortened. */
static int refold_cancel(struct ir_graph *g)
{
	int dropped = 0;
	pass_index_drop();
	for (int i = 0; i < g->n_ops; i++) {
		/* a Reshape that now reads a view's input may meet another */
		while (chip_view(g, &g->ops[i])) {
			const struct ir_op *r2 = &g->ops[i];
			int p = pass_producer(g, r2->in[0]);
			if (p < 0 || !chip_view(g, &g->ops[p]))
				break;
			int x = g->ops[p].in[0], y = r2->out[0], mid = r2->in[0], gone = 0;
			const struct ir_tensor *tx = &g->tensors[x], *ty = &g->tensors[y];
			if (tx->dtype != ty->dtype || tx->scale != ty->scale ||
			    tx->zero_point != ty->zero_point)
				break;
			if (pass_same_shape(tx, ty) && !pass_is_output(g, y)) {
				pass_kill(g, i);
				pass_replace_uses(g, y, x);
				gone = 1;
			} else if (r2->type == OP_RESHAPE) {
				pass_set_input(g, i, 0, x);
			} else {
				break;
			}
			if (pass_uses(g, mid) == 0)
				pass_kill(g, p);
			dropped++;
			if (gone)
				break;
		}
	}
	if (dropped)
		graph_compact(g);
	pass_index_drop();
	return dropped;
}

/* Whether op i, which leaves most lanes idle, may run spread: refolded
 * (refold_spreads, 1) or with a leading axis of 1 (spread_copy, 1 or 2
 * for a DMA copy). */
static int spread_can(struct fit *f, int i, const struct chip *c)
{
	int64_t shape[4];
	if (refold_shape(f->g, i, c, shape) && refold_spreads(f->g, i, c, shape))
		return 1;
	return spread_copy(f, i, c, 0, 1);
}

/* Whether the op at the far end of tensor t, through the views on the
 * chip between them, leaves the layout of t free: none (a graph input,
 * output or weight), a host op, a copy the DMA engine moves alone, or an
 * op that may run spread itself (can).  BACK: towards t's producer, else
 * towards its readers.  A chip op that keeps t's rows in N (a Softmax over
 * [700, 21]) would pay the Reshape back in a local group: one op spread
 * alone beside it costs more than it saves. */
static int spread_free(const struct ir_graph *g, int t, int back, const char *can, int depth,
		       int *chain)
{
	if (depth > 8)
		return 0;
	if (back) {
		int p = pass_producer(g, t);
		if (p >= 0 && can[p] == 1)
			*chain = 1;
		if (p < 0 || g->ops[p].place == PLACE_HOST || can[p])
			return 1;
		if (chip_view(g, &g->ops[p]))
			return spread_free(g, g->ops[p].in[0], 1, can, depth + 1, chain);
		struct isa_piece *pc = NULL;
		int copy = isa_copy_pieces(g, &g->ops[p], &pc);
		free(pc);
		return copy > 0;
	}
	const int *rd;
	int n = pass_readers(g, t, &rd);
	for (int q = 0; q < n; q++) {
		int k = rd[q];
		const struct ir_op *op = &g->ops[k];
		if (can[k] == 1)
			*chain = 1;
		if (op->place == PLACE_HOST || can[k])
			continue;
		if (chip_view(g, op)) {
			if (!spread_free(g, op->out[0], 0, can, depth + 1, chain))
				return 0;
			continue;
		}
		struct isa_piece *pc = NULL;
		int copy = isa_copy_pieces(g, op, &pc);
		free(pc);
		if (copy <= 0)
			return 0;
	}
	return 1;
}

/* The ops to run spread (1 each in the result, the caller frees it): the
 * Concats and Slices spread_can takes that the DMA engine cannot move
 * alone; its elementwise ops whose inputs and results are spread_free;
 * and the DMA copies spread_free beside one of those (in a chain: else
 * the DMA moves them sooner than a load, compute and store). */
static char *spread_plan(struct ir_graph *g, const struct chip *c)
{
	struct fit f = { .g = g, .n0 = g->n_ops };
	char *can = xcalloc((size_t)g->n_ops + 1, 1), *take = xcalloc((size_t)g->n_ops + 1, 1);
	pass_index_drop();
	for (int i = 0; i < g->n_ops; i++)
		can[i] = (char)spread_can(&f, i, c);
	for (int i = 0; i < g->n_ops; i++) {
		const struct ir_op *op = &g->ops[i];
		int chain = 0;
		take[i] = can[i] != 0;
		if (can[i] == 1 && (op->type == OP_CONCAT || op->type == OP_SLICE))
			continue;   /* computed, not moved: cut into parts else */
		for (int j = 0; j < op->n_in && take[i]; j++)
			if (op->in[j] >= 0 && !g->tensors[op->in[j]].data)
				take[i] = (char)spread_free(g, op->in[j], 1, can, 0, &chain);
		if (take[i])
			take[i] = (char)spread_free(g, op->out[0], 0, can, 0, &chain);
		if (can[i] == 2 && !chain)
			take[i] = 0;   /* a copy alone: the DMA engine moves it */
	}
	pass_index_drop();
	free(can);
	free(f.owner);
	free(f.after);
	return take;
}

int lower_fit(struct ir_graph *g, const struct chip *chip)
{
	char *take = spread_plan(g, chip);
	fit_pass(g, chip, take);
	free(take);
	for (int pass = 0; pass < 8 && fit_pass(g, chip, NULL); pass++)
		;
	refold_cancel(g);
	return 0;
}
