/* lower_kin.c - splits along the reduction axis (lib/back/lower_kin.h).
 *
 * Codegen cuts an op into rows and chunks of output channels; what it
 * cannot cut is the axis the op sums over.  A Conv or ConvTranspose (one
 * group) whose one output channel's weights, or one input row across all
 * channels, fill a lane, and a Gemm or MatMul whose rows of K do, become G partial ops over
 * parts of K (input channels of a Conv, columns of A and rows of B of a
 * MatMul), each reading a Slice of the activation and its part of the
 * weights, and the sum of the partial results:
 *
 *  - f32, bf16, f16: the partial ops write f32 (the bias, or Gemm's C, in
 *    the first only), Adds in f32 sum them, then the fused ReLU as a Clip
 *    and a Cast to the op's dtype.  The sum is the unsplit one's up to f32
 *    rounding;
 *  - int8: the partial ops write their raw int32 accumulators (attribute
 *    acc = 1, dtype i32: lib/quant/quant.h quant_acc_dtype), Adds sum them
 *    exactly in int32 and a Cast with the op's bias, multiplier and shift
 *    as inputs requantises the sum to the op's output: the same bits as
 *    the unsplit op's kernel.
 *
 * Parts hold a multiple of the lanes where K allows; their count is the
 * least for which, by the lane layout (lib/chip/isa.h isa_lane_bytes), one
 * step of a partial op (its input rows, a lane's worth of output channels'
 * weights or of a MatMul's columns, one output row), double buffered, fills
 * at most half of local memory; a MatMul whose columns alone are too many
 * is left to lower_fit's column blocks.  An op whose single part of one channel still does not fit is
 * left alone for codegen to name.
 *
 * A Conv or ConvTranspose of several groups first runs as parts of whole
 * groups concatenated along the channels (lower_groups); a part of one
 * group is then an op of one group, which the above splits along K.
 */
#include <stdlib.h>
#include <string.h>

#include "back/lower_kin.h"
#include "back/lower_split.h"
#include "chip/isa.h"
#include "ir/base.h"
#include "ir/op.h"
#include "quant/quant.h"

struct kin {
	struct ir_graph *g;
	int i;
	kin_note_fn note;
	void *ctx;
};

/* The op's reduction: axis of input 0 (ax) and of input 1 (bx) that sum,
 * and K; 0 when op is not a Conv, Gemm or MatMul this file splits. */
static int kin_axes(const struct ir_graph *g, const struct ir_op *op, int *ax, int *bx, int64_t *k)
{
	if (op->n_out != 1 || op->n_in < 2 || op->in[0] < 0 || op->in[1] < 0)
		return 0;
	const struct ir_tensor *a = &g->tensors[op->in[0]], *b = &g->tensors[op->in[1]];
	switch (op->type) {
	case OP_CONV:
		if (op_int(op, "group", 1) != 1 || a->rank != 4 || b->rank != 4 || !b->data)
			return 0;
		*ax = 1;
		*bx = 1;
		break;
	case OP_CONVTRANSPOSE:
		/* the weight is [C_in, C_out, KH, KW], in int8 [C_out, C_in, KH, KW] */
		if (op_int(op, "group", 1) != 1 || a->rank != 4 || b->rank != 4 || !b->data)
			return 0;
		*ax = 1;
		*bx = b->dtype == DT_I8 ? 1 : 0;
		break;
	case OP_GEMM:
		if (op_int(op, "transA", 0) || a->rank != 2 || b->rank != 2 || !b->data)
			return 0;
		*ax = 1;
		*bx = op_int(op, "transB", 0) ? 1 : 0;
		break;
	case OP_MATMUL:
		if (a->rank < 2 || b->rank < 2 || a->data)
			return 0;
		*ax = a->rank - 1;
		*bx = b->rank - 2;
		break;
	default:
		return 0;
	}
	*k = a->shape[*ax];
	return *k >= 2 && b->shape[*bx] == *k;
}

static int64_t lane_bytes(const struct chip *c, enum ir_dtype dt, int rank, const int64_t *shape,
			  int weight)
{
	int64_t s[4];
	isa_lane_shape(rank, shape, weight, s);
	return isa_lane_bytes(c, dt, s);
}

/* Bytes per lane of one step of the op with kg of K: input 0's rows for
 * one output row, input 1 (a weight: a lane's worth of output channels),
 * one output row at 4 bytes an element; double buffered. */
static int64_t step_bytes(const struct ir_graph *g, const struct ir_op *op, const struct chip *c,
			  int ax, int bx, int64_t kg)
{
	const struct ir_tensor *a = &g->tensors[op->in[0]], *b = &g->tensors[op->in[1]];
	const struct ir_tensor *y = &g->tensors[op->out[0]];
	int64_t as[IR_MAX_RANK], bs[IR_MAX_RANK], ys[IR_MAX_RANK];
	memcpy(as, a->shape, sizeof as);
	memcpy(bs, b->shape, sizeof bs);
	memcpy(ys, y->shape, sizeof ys);
	as[ax] = kg;
	bs[bx] = kg;
	int wb = b->data != NULL;
	if (op->type == OP_CONV) {
		int64_t kh = b->shape[2], dh = 1, d[2];
		if (op_ints(op, "dilations", d, 2) == 2)
			dh = d[0];
		as[0] = ys[0] = 1;
		as[2] = (kh - 1) * dh + 1 < a->shape[2] ? (kh - 1) * dh + 1 : a->shape[2];
		ys[2] = 1;
		bs[0] = bs[0] < c->lanes ? bs[0] : c->lanes;
		ys[1] = bs[0];
	} else if (op->type == OP_CONVTRANSPOSE) {
		int64_t s[2] = { 1, 1 };
		op_ints(op, "strides", s, 2);
		int64_t rows = ceil_div(b->shape[2], s[0] > 0 ? s[0] : 1) + 1;
		as[0] = ys[0] = 1;
		as[2] = rows < a->shape[2] ? rows : a->shape[2];
		ys[2] = s[0] > 0 ? s[0] : 1;
	} else if (op->type == OP_GEMM) {
		int n = bx == 1 ? 0 : 1;
		bs[n] = bs[n] < c->lanes ? bs[n] : c->lanes;
		ys[1] = bs[n];
	} else {
		/* a MatMul: lower_fit's column blocks take care of N, so only
		 * a lane's worth of B's columns counts */
		bs[b->rank - 1] = bs[b->rank - 1] < c->lanes ? bs[b->rank - 1] : c->lanes;
		ys[y->rank - 1] = ys[y->rank - 1] < c->lanes ? ys[y->rank - 1] : c->lanes;
		if (y->rank >= 4 && a->rank == y->rank)
			as[2] = ys[2] = 1;
	}
	int64_t need = lane_bytes(c, a->dtype, a->rank, as, 0) +
		       lane_bytes(c, b->dtype, b->rank, bs, wb && isa_weight_layout(b)) +
		       lane_bytes(c, DT_F32, y->rank, ys, 0);
	return 2 * need;
}

/* Elements per part, or 0 when no split makes a step fit or none is
 * needed. */
static int64_t part_size(const struct ir_graph *g, const struct ir_op *op, const struct chip *c,
			 int ax, int bx, int64_t k)
{
	int64_t budget = c->lmem_bytes / 2;
	if (step_bytes(g, op, c, ax, bx, k) <= budget)
		return 0;
	for (int64_t parts = 2; parts <= k; parts++) {
		int64_t kg = ceil_div(k, parts);
		if (kg > c->lanes)
			kg = ceil_div(kg, c->lanes) * c->lanes;
		if (kg >= k || ceil_div(k, kg) != parts)
			continue;
		if (step_bytes(g, op, c, ax, bx, kg) <= budget)
			return kg;
	}
	return 0;
}

/* An op of type t over in[0..n) into a new tensor like `like` of dtype dt
 * (accumulator: no scale); returns the tensor. */
static int add_op(struct kin *s, enum op_type t, const char *sfx, const int *in, int n, int like,
		  enum ir_dtype dt)
{
	struct ir_graph *g = s->g;
	char base[512];
	snprintf(base, sizeof base, "%s_%s", g->tensors[like].name, sfx);
	struct ir_tensor acc = g->tensors[like];
	acc.dtype = dt;
	acc.scale = 0;
	acc.zero_point = 0;
	int y = split_new_tensor(g, base, &acc, acc.rank, acc.shape);
	int k = graph_add_op(g, t, g->tensors[y].name, n, in, 1, &y);
	s->note(s->ctx, k, s->i);
	return y;
}

/* Requantisation parameter j (0 bias, 1 multiplier, 2 shift) of int8 op
 * i, shaped to broadcast to its output along axis cax. */
static int requant_param(struct ir_graph *g, int i, int j, int cax)
{
	const struct ir_op *op = &g->ops[i];
	const struct ir_tensor *y = &g->tensors[op->out[0]];
	int t = op->n_in > 2 + j ? op->in[2 + j] : -1;
	int64_t n = t >= 0 ? tensor_numel(&g->tensors[t]) : 1, shape[IR_MAX_RANK];
	int rank = y->rank;
	for (int d = 0; d < rank; d++)
		shape[d] = 1;
	if (n > 1)
		shape[cax] = n;
	int32_t zero = 0;
	const void *data = t >= 0 ? g->tensors[t].data : &zero;
	static const char *const what[3] = { "bias", "multiplier", "shift" };
	char base[512];
	snprintf(base, sizeof base, "%s_%s", op->name ? op->name : "op", what[j]);
	char *name = graph_unique_name(g, base, 1);
	int w = graph_add_weight(g, name, DT_I32, rank, shape, data);
	free(name);
	return w;
}

/* Whether grouped op i fits with ng of its groups in place of all. */
static int groups_fit(const struct ir_graph *g, int i, const struct chip *c, int wax, int64_t ng)
{
	const struct ir_op *op = &g->ops[i];
	int64_t groups = op_int(op, "group", 1), n = op->n_in + op->n_out;
	int64_t(*shape)[IR_MAX_RANK] = xmalloc(sizeof *shape * (size_t)(n + 1));
	const int64_t **sh = xcalloc((size_t)n + 1, sizeof *sh);
	for (int j = 0; j < n; j++) {
		int t = j < op->n_in ? op->in[j] : op->out[j - op->n_in];
		int ax = j == 1 ? wax : j == 0 || j >= op->n_in ? 1 : 0;
		if (t < 0 || g->tensors[t].rank <= ax || tensor_numel(&g->tensors[t]) == 1)
			continue;
		memcpy(shape[j], g->tensors[t].shape, sizeof shape[j]);
		shape[j][ax] = shape[j][ax] / groups * ng;
		sh[j] = shape[j];
	}
	int ok = split_fits(g, c, i, sh) == 1;
	free(sh);
	free(shape);
	return ok;
}

int lower_groups(struct ir_graph *g, int i, const struct chip *c, kin_note_fn note, void *ctx)
{
	const struct ir_op *op = &g->ops[i];
	int64_t groups = op_int(op, "group", 1);
	if ((op->type != OP_CONV && op->type != OP_CONVTRANSPOSE) || groups < 2 || op->n_out != 1 ||
	    op->n_in < 2 || op->in[0] < 0 || op->in[1] < 0 || !g->tensors[op->in[1]].data ||
	    g->tensors[op->in[0]].rank != 4 || g->tensors[op->in[1]].rank != 4 ||
	    op->place == PLACE_HOST)
		return 0;
	const struct ir_tensor *w = &g->tensors[op->in[1]];
	int64_t cout = g->tensors[op->out[0]].shape[1], cin = g->tensors[op->in[0]].shape[1];
	if (cout % groups || cin % groups || w->shape[0] % groups)
		return 0;
	int64_t lo = 1, hi = groups;   /* the most groups that fit: lo (or 1), hi does not */
	while (hi - lo > 1) {
		int64_t mid = lo + (hi - lo) / 2;
		if (groups_fit(g, i, c, 0, mid))
			lo = mid;
		else
			hi = mid;
	}
	int64_t ng = lo, parts = ceil_div(groups, ng);
	int64_t cig = cin / groups, cog = cout / groups, wg = w->shape[0] / groups;
	int n_in = op->n_in, yt = op->out[0];
	int *pout = xmalloc(sizeof *pout * (size_t)parts), *in = xmalloc(sizeof *in * (size_t)n_in);
	for (int64_t p = 0; p < parts; p++) {
		int64_t g0 = p * ng, g1 = g0 + ng < groups ? g0 + ng : groups;
		memcpy(in, g->ops[i].in, sizeof *in * (size_t)n_in);
		in[0] = split_slice(g, in[0], 1, g0 * cig, g1 * cig, "g", note, ctx, i);
		in[1] = graph_weight_slice(g, in[1], 0, g0 * wg, g1 * wg, "g");
		for (int j = 2; j < n_in; j++) {
			const struct ir_tensor *t = in[j] >= 0 ? &g->tensors[in[j]] : NULL;
			if (t && t->data && t->rank >= 1 && t->shape[0] == cout && cout > 1)
				in[j] = graph_weight_slice(g, in[j], 0, g0 * cog, g1 * cog, "g");
		}
		int yp = split_part_tensor(g, yt, 1, (g1 - g0) * cog, "g", g0 * cog);
		int k = split_part_op(g, i, in, n_in, yp);
		op_set_int(&g->ops[k], "group", g1 - g0);
		note(ctx, k, i);
		pout[p] = yp;
	}
	split_concat(g, i, pout, (int)parts, 1);
	free(pout);
	free(in);
	return 1;
}

int lower_kin(struct ir_graph *g, int i, const struct chip *c, kin_note_fn note, void *ctx)
{
	const struct ir_op *op = &g->ops[i];
	int ax, bx;
	int64_t k;
	if (!kin_axes(g, op, &ax, &bx, &k))
		return 0;
	enum ir_dtype ydt = g->tensors[op->out[0]].dtype;
	int q = quant_is_q(ydt);
	if (q) {
		if (op->n_in != 5 || op->in[3] < 0 || op->in[4] < 0)
			return 0;
	} else if (!quant_is_float(ydt)) {
		return 0;
	}
	int64_t kg = part_size(g, op, c, ax, bx, k);
	if (kg <= 0)
		return 0;
	struct kin s = { .g = g, .i = i, .note = note, .ctx = ctx };
	int yt = op->out[0], parts = (int)ceil_div(k, kg);
	enum ir_dtype adt = q ? DT_I32 : DT_F32;
	int acc = -1;
	for (int p = 0; p < parts; p++) {
		int64_t k0 = p * kg, k1 = k0 + kg < k ? k0 + kg : k;
		int in[3], n = 2;
		in[0] = split_slice(g, g->ops[i].in[0], ax, k0, k1, "k", note, ctx, i);
		int b = g->ops[i].in[1];
		in[1] = g->tensors[b].data ? graph_weight_slice(g, b, bx, k0, k1, "k")
					   : split_slice(g, b, bx, k0, k1, "k", note, ctx, i);
		if (!q && p == 0 && g->ops[i].n_in > 2 && g->ops[i].in[2] >= 0)
			in[n++] = g->ops[i].in[2];
		char sfx[32];
		snprintf(sfx, sizeof sfx, "k%lld", (long long)k0);
		int pt = add_op(&s, g->ops[i].type, sfx, in, n, yt, adt);
		/* the partial op: the attributes of op i but the fused ReLU */
		struct ir_op *o = &g->ops[g->n_ops - 1];
		for (int a = 0; a < g->ops[i].n_attr; a++) {
			const struct ir_attr *at = &g->ops[i].attr[a];
			if (strcmp(at->name, "do_relu") && strcmp(at->name, "relu_limit"))
				op_copy_attr(o, at);
		}
		if (q)
			op_set_int(o, "acc", 1);
		if (acc < 0) {
			acc = pt;
		} else {
			int two[2] = { acc, pt };
			acc = add_op(&s, OP_ADD, "sum", two, 2, pt, adt);
		}
	}
	/* op i becomes the last step: the requantising Cast (int8), or a Clip
	 * for the fused ReLU and a Cast to the op's dtype */
	struct ir_op *o = &g->ops[i];
	int relu = (int)op_int(o, "do_relu", 0);
	double limit = op_float(o, "relu_limit", 0);
	if (q) {
		int cax = o->type == OP_CONV ? 1 : g->tensors[yt].rank - 1;
		int in[4] = { acc, requant_param(g, i, 0, cax), requant_param(g, i, 1, cax),
			      requant_param(g, i, 2, cax) };
		o = &g->ops[i];
		op_set_inputs(o, 4, in);
	} else {
		if (relu) {
			acc = add_op(&s, OP_CLIP, "relu", &acc, 1, acc, DT_F32);
			op_set_float(&g->ops[g->n_ops - 1], "min", 0.0);
			if (limit > 0)
				op_set_float(&g->ops[g->n_ops - 1], "max", limit);
		}
		o = &g->ops[i];
		op_set_inputs(o, 1, &acc);
	}
	op_clear_attrs(o);
	o->type = OP_CAST;
	op_set_str(o, "to", dtype_name(ydt));
	if (q && relu) {
		op_set_int(o, "do_relu", 1);
		if (limit > 0)
			op_set_float(o, "relu_limit", limit);
	}
	return 1;
}
