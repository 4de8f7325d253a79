/* reorder.c - weight-reorder: merge per-channel requantisation parameters
 * (the ops with OPF_COEFF in lib/ir/op_traits.h) into one coefficient tensor,
 * transpose Gemm weights so that output features lead, and merge the groups
 * of grouped INT8 Convs the cube runs faster merged (lib/back/reorder.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chip/chip.h"
#include "chip/isa.h"
#include "ir/base.h"
#include "ir/op.h"
#include "ir/op_traits.h"
#include "back/reorder.h"

/* How many ops read tensor t. */
static int readers(const struct ir_graph *g, int t)
{
	int n = 0;
	for (int i = 0; i < g->n_ops; i++)
		for (int j = 0; j < g->ops[i].n_in; j++)
			n += g->ops[i].in[j] == t;
	return n;
}

static int is_i32_vector(const struct ir_graph *g, int t, int64_t n)
{
	if (t < 0)
		return 0;
	const struct ir_tensor *x = &g->tensors[t];
	return x->data && x->dtype == DT_I32 && tensor_numel(x) == n;
}

/* [x, w, bias, mult, shift] -> [x, w, coeff [OC,3]]. */
static int merge_coeff(struct ir_graph *g, int oi)
{
	struct ir_op *op = &g->ops[oi];
	if (op->n_in != 5)
		return 0;
	int64_t oc = tensor_numel(&g->tensors[op->in[3]]);
	for (int i = 3; i < 5; i++)
		if (!is_i32_vector(g, op->in[i], oc))
			return err_set("op '%s' (%s): input %d is not an i32 weight of %lld values",
				       op->name, op_name(op->type), i, (long long)oc);
	if (op->in[2] >= 0 && !is_i32_vector(g, op->in[2], oc))
		return err_set("op '%s' (%s): bias is not an i32 weight of %lld values",
			       op->name, op_name(op->type), (long long)oc);
	int32_t *c = xmalloc(sizeof(int32_t) * (size_t)(3 * oc));
	const int32_t *b = op->in[2] >= 0 ? g->tensors[op->in[2]].data : NULL;
	const int32_t *m = g->tensors[op->in[3]].data, *s = g->tensors[op->in[4]].data;
	for (int64_t i = 0; i < oc; i++) {
		c[3 * i] = b ? b[i] : 0;
		c[3 * i + 1] = m[i];
		c[3 * i + 2] = s[i];
	}
	size_t len = strlen(op->name) + 8;
	char *base = xmalloc(len);
	snprintf(base, len, "%s_coeff", op->name);
	char *name = graph_unique_name(g, base, 2);
	int t = graph_add_weight(g, name, DT_I32, 2, (int64_t[]){ oc, 3 }, c);
	free(base);
	free(name);
	free(c);
	op = &g->ops[oi];
	op->in[2] = t;
	op->n_in = 3;
	return 0;
}

/* Gemm with a weight B [K,N] and transB = 0: B becomes [N,K], transB = 1. */
static int transpose_gemm(struct ir_graph *g, int oi)
{
	struct ir_op *op = &g->ops[oi];
	if (op->n_in < 2 || op_int(op, "transB", 0) || op->in[1] < 0)
		return 0;
	int bt = op->in[1];
	struct ir_tensor *b = &g->tensors[bt];
	if (!b->data || b->rank != 2)
		return 0;
	int64_t k = b->shape[0], n = b->shape[1];
	size_t es = dtype_size(b->dtype);
	unsigned char *t = xmalloc(b->nbytes ? b->nbytes : 1);
	const unsigned char *src = b->data;
	for (int64_t i = 0; i < k; i++)
		for (int64_t j = 0; j < n; j++)
			memcpy(t + (size_t)(j * k + i) * es, src + (size_t)(i * n + j) * es, es);
	if (readers(g, bt) > 1) {
		char *name = graph_unique_name(g, b->name, 2);
		bt = graph_add_weight(g, name, b->dtype, 2, (int64_t[]){ n, k }, t);
		free(name);
		g->tensors[bt].scale = g->tensors[op->in[1]].scale;
		g->tensors[bt].zero_point = g->tensors[op->in[1]].zero_point;
		g->ops[oi].in[1] = bt;
	} else {
		tensor_set_data(b, t, b->nbytes);
		b->shape[0] = n;
		b->shape[1] = k;
	}
	free(t);
	op_set_int(&g->ops[oi], "transB", 1);
	return 0;
}

/* Cycles by the cost model of a Conv over x [N, IC, ...] to y [N, OC, OH,
 * OW] with weights [OC, icg, KH, KW] in `groups` groups, run whole, plus
 * the DMA of its weights: how merge_groups weighs a grouping. */
static int64_t conv_cost(const struct chip *c, const struct ir_tensor *x, const struct ir_tensor *y,
			 int64_t groups, int64_t icg, int64_t taps, size_t wsize)
{
	int64_t oc = y->shape[1], pos = y->shape[0] * y->shape[2] * y->shape[3], cy;
	if (groups > 1 && icg == 1) {
		enum ir_dtype dt = dtype_size(x->dtype) >= dtype_size(y->dtype) ? x->dtype : y->dtype;
		cy = cost_vector(c, dt, oc, y->shape[0], y->shape[2], y->shape[3], taps);
	} else {
		cy = cost_cube(c, x->dtype, groups, oc / groups, pos, icg * taps);
	}
	return cy + cost_dma(c, oc * icg * taps * (int64_t)wsize);
}

/* An INT8 Conv of G groups with few channels per group runs with as many
 * cube passes as groups, each on a few lanes: k neighbouring groups become
 * one, its weights block-diagonal (zeros between the groups' blocks), when
 * the cost model times the Conv and the DMA of its weights (k times larger)
 * faster so; k divides G, the largest weight of a lane stays within an
 * eighth of local memory.  The products added are the same and the zeros
 * add nothing, so the results are bit for bit the grouped Conv's.  The op
 * records the grouped Conv's work as its attribute "own". */
static int merge_groups(struct ir_graph *g, int oi, const struct chip *c)
{
	struct ir_op *op = &g->ops[oi];
	int64_t G = op_int(op, "group", 1);
	if (!c || G < 2 || op->n_in < 2 || op->in[0] < 0 || op->in[1] < 0)
		return 0;
	const struct ir_tensor *x = &g->tensors[op->in[0]], *w = &g->tensors[op->in[1]];
	const struct ir_tensor *y = &g->tensors[op->out[0]];
	if (!w->data || w->rank != 4 || x->rank != 4 || y->rank != 4 ||
	    (x->dtype != DT_I8 && x->dtype != DT_U8) || w->dtype != DT_I8 ||
	    y->shape[1] != w->shape[0] || w->shape[0] % G || x->shape[1] != w->shape[1] * G)
		return 0;
	int64_t oc = w->shape[0], icg = w->shape[1], ocg = oc / G, taps = w->shape[2] * w->shape[3];
	int64_t best_k = 1, best = conv_cost(c, x, y, G, icg, taps, 1);
	for (int64_t k = 2; k <= G; k++) {
		if (G % k || ceil_div(oc, c->lanes) * isa_pitch(c, DT_I8, k * icg * taps) >
			     c->lmem_bytes / 8)
			continue;
		int64_t cy = conv_cost(c, x, y, G / k, k * icg, taps, 1);
		if (cy < best) {
			best = cy;
			best_k = k;
		}
	}
	/* a real saving only: a tenth of the grouped Conv's time */
	if (best_k == 1 || 10 * (conv_cost(c, x, y, G, icg, taps, 1) - best) <
				   conv_cost(c, x, y, G, icg, taps, 1))
		return 0;
	int64_t k = best_k, kic = k * icg;
	int8_t *v = xcalloc((size_t)(oc * kic * taps), 1);
	const int8_t *src = w->data;
	for (int64_t o = 0; o < oc; o++) {
		int64_t sub = o / ocg % k;   /* its group's place in the merged one */
		memcpy(v + (o * kic + sub * icg) * taps, src + o * icg * taps, (size_t)(icg * taps));
	}
	char *name = graph_unique_name(g, w->name, 2);
	int t = graph_add_weight(g, name, DT_I8, 4, (int64_t[]){ oc, kic, w->shape[2], w->shape[3] },
				 v);
	free(name);
	free(v);
	g->tensors[t].scale = g->tensors[op->in[1]].scale;
	g->tensors[t].zero_point = g->tensors[op->in[1]].zero_point;
	op = &g->ops[oi];
	op_own_set(g, op);
	op->in[1] = t;
	op_set_int(op, "group", G / k);
	return 0;
}

/* Weight t (a per output channel weight [OC, ...]) b times along axis 0,
 * as a new weight of its dtype, scale and zero point; returns it. */
static int tile_rows(struct ir_graph *g, int t, int64_t b)
{
	const struct ir_tensor *x = &g->tensors[t];
	int64_t shape[IR_MAX_RANK];
	size_t nb = tensor_bytes(x);
	memcpy(shape, x->shape, sizeof(int64_t) * (size_t)x->rank);
	shape[0] *= b;
	char *v = xmalloc(nb * (size_t)b + 1);
	for (int64_t i = 0; i < b; i++)
		memcpy(v + nb * (size_t)i, x->data, nb);
	char *name = graph_unique_name(g, x->name, 2);
	int r = graph_add_weight(g, name, x->dtype, x->rank, shape, v);
	free(name);
	free(v);
	g->tensors[r].scale = g->tensors[t].scale;
	g->tensors[r].zero_point = g->tensors[t].zero_point;
	return r;
}

/* Whether weight x holds a row per output channel of oc. */
static int per_row(const struct ir_tensor *x, int64_t oc)
{
	return x->rank >= 1 && x->shape[0] == oc;
}

/* Cycles by the cost model of a Conv of one group over x to OC channels
 * of OH x OW with K = IC x KH x KW, and the DMA of its weights, plus
 * (b > 1) the DepthToWidth of its output back to `width` columns. */
static int64_t fill_cost(const struct chip *c, const struct ir_tensor *x, const struct ir_tensor *y,
			 int64_t oc, int64_t ow, int64_t k, int64_t b)
{
	int64_t n = y->shape[0], oh = y->shape[2];
	int64_t cy = cost_cube(c, x->dtype, 1, oc, n * oh * ow, k) + cost_dma(c, oc * k);
	if (b > 1)
		cy += cost_vector(c, y->dtype, y->shape[1], n, oh, y->shape[3], 1);
	return cy;
}

/* An INT8 Conv of one group whose output channels leave most of the
 * cube's lanes idle (16 of 64) computes b neighbouring output columns per
 * position instead: b blocks of the output channels, block j with the
 * kernel shifted j x stride columns right in a kernel of KW + (b - 1) x
 * stride columns (zeros elsewhere), stride b x stride along W, then a
 * DepthToWidth puts block j back as column j of every b.  b is the one the
 * cost model times fastest (Conv, its weights' DMA and the DepthToWidth),
 * a real saving only (a tenth); dilation 1 along W, weights of a lane
 * within an eighth of local memory.  The zeros add nothing: the results
 * are the Conv's bit for bit.  Returns the DepthToWidth op added, -1 when
 * the Conv stays.  The Conv records its work before as attribute "own";
 * its per output channel weights (bias, multipliers, shifts: rows of OC)
 * are tiled b times. */
static int fill_lanes(struct ir_graph *g, int oi, const struct chip *c)
{
	struct ir_op *op = &g->ops[oi];
	struct spatial s;
	if (!c || op->n_in < 2 || op->n_out != 1 || op->in[0] < 0 || op->in[1] < 0 ||
	    spatial_get(g, op, &s) < 0 || s.group != 1 || s.dw != 1)
		return -1;
	const struct ir_tensor *x = &g->tensors[op->in[0]], *w = &g->tensors[op->in[1]];
	const struct ir_tensor *y = &g->tensors[op->out[0]];
	if (!w->data || w->rank != 4 || x->rank != 4 || y->rank != 4 || w->dtype != DT_I8 ||
	    (x->dtype != DT_I8 && x->dtype != DT_U8) || y->shape[1] != w->shape[0] ||
	    w->shape[3] != s.kw || y->shape[3] < 2)
		return -1;
	for (int j = 2; j < op->n_in; j++)
		if (op->in[j] >= 0 && (!g->tensors[op->in[j]].data ||
				       (!per_row(&g->tensors[op->in[j]], y->shape[1]) &&
					tensor_numel(&g->tensors[op->in[j]]) != 1)))
			return -1;
	int64_t oc = w->shape[0], ic = w->shape[1], kh = w->shape[2], kw = w->shape[3];
	int64_t ow = y->shape[3], iw = x->shape[3];
	int64_t base = fill_cost(c, x, y, oc, ow, ic * kh * kw, 1), best = base, bb = 1;
	for (int64_t b = 2; b <= c->lanes && b <= ow; b++) {
		int64_t kwb = kw + (b - 1) * s.sw;
		if (ceil_div(b * oc, c->lanes) * isa_pitch(c, DT_I8, ic * kh * kwb) > c->lmem_bytes / 8 ||
		    b * s.sw >= (1 << 15) || b * oc >= (1 << 16))
			continue;
		int64_t cy = fill_cost(c, x, y, b * oc, ceil_div(ow, b), ic * kh * kwb, b);
		if (cy < best) {
			best = cy;
			bb = b;
		}
	}
	if (bb == 1 || 10 * (base - best) < base)
		return -1;
	int64_t b = bb, kwb = kw + (b - 1) * s.sw, wb = ceil_div(ow, b);
	int64_t pr = (wb - 1) * b * s.sw + kwb - s.pl - iw;
	pr = pr < 0 ? 0 : pr;
	int64_t ws[4] = { b * oc, ic, kh, kwb };
	int8_t *v = xcalloc((size_t)(ws[0] * ic * kh * kwb), 1);
	const int8_t *src = w->data;
	for (int64_t j = 0; j < b; j++)
		for (int64_t o = 0; o < oc; o++)
			for (int64_t i = 0; i < ic; i++)
				for (int64_t r = 0; r < kh; r++)
					memcpy(v + (((j * oc + o) * ic + i) * kh + r) * kwb + j * s.sw,
					       src + ((o * ic + i) * kh + r) * kw, (size_t)kw);
	char *name = graph_unique_name(g, w->name, 2);
	int wt = graph_add_weight(g, name, DT_I8, 4, ws, v);
	free(name);
	free(v);
	g->tensors[wt].scale = g->tensors[op->in[1]].scale;
	g->tensors[wt].zero_point = g->tensors[op->in[1]].zero_point;
	op_own_set(g, &g->ops[oi]);
	int n_in = g->ops[oi].n_in, yt = g->ops[oi].out[0];
	int *in = xmalloc(sizeof *in * (size_t)n_in);
	memcpy(in, g->ops[oi].in, sizeof *in * (size_t)n_in);
	in[1] = wt;
	for (int j = 2; j < n_in; j++)
		if (in[j] >= 0 && per_row(&g->tensors[in[j]], oc))
			in[j] = tile_rows(g, in[j], b);
	int64_t mid[4] = { g->tensors[yt].shape[0], b * oc, g->tensors[yt].shape[2], wb };
	char base_name[512];
	snprintf(base_name, sizeof base_name, "%s_fill", g->tensors[yt].name);
	name = graph_unique_name(g, base_name, 2);
	int t = graph_add_tensor(g, name, g->tensors[yt].dtype, 4, mid);
	free(name);
	g->tensors[t].scale = g->tensors[yt].scale;
	g->tensors[t].zero_point = g->tensors[yt].zero_point;
	op = &g->ops[oi];
	op_set_inputs(op, n_in, in);
	free(in);
	op->out[0] = t;
	op_set_ints(op, "kernel_shape", 2, (int64_t[]){ kh, kwb });
	op_set_ints(op, "strides", 2, (int64_t[]){ s.sh, b * s.sw });
	op_set_ints(op, "dilations", 2, (int64_t[]){ s.dh, 1 });
	op_set_ints(op, "pads", 4, (int64_t[]){ s.pt, s.pl, s.pb, pr });
	snprintf(base_name, sizeof base_name, "%s_columns", op->name);
	name = graph_unique_name(g, base_name, 2);
	int k = graph_add_op(g, OP_DEPTHTOWIDTH, name, 1, &t, 1, &yt);
	free(name);
	op_set_int(&g->ops[k], "blocksize", b);
	op_set_int(&g->ops[k], "width", ow);
	g->ops[k].place = g->ops[oi].place;
	return k;
}

/* Put op after[i] (>= 0) right after op i, for every op i of the first n. */
static void place_after(struct ir_graph *g, int n, const int *after)
{
	struct ir_op *ops = xmalloc(sizeof *ops * (size_t)g->n_ops);
	int k = 0;
	for (int i = 0; i < n; i++) {
		ops[k++] = g->ops[i];
		if (after[i] >= 0)
			ops[k++] = g->ops[after[i]];
	}
	memcpy(g->ops, ops, sizeof *ops * (size_t)k);
	free(ops);
}

int weight_reorder(struct ir_graph *g)
{
	int int8 = g->mode == MODE_INT8;
	const struct chip *chip = g->chip ? chip_find(g->chip) : NULL;
	int n0 = g->n_ops, any = 0;
	int *after = xmalloc(sizeof *after * (size_t)(n0 + 1));
	for (int i = 0; i < n0; i++) {
		enum op_type t = g->ops[i].type;
		after[i] = -1;
		if (int8 && t == OP_CONV && g->ops[i].place != PLACE_HOST && merge_groups(g, i, chip) < 0)
			goto fail;
		if (int8 && t == OP_CONV && g->ops[i].place != PLACE_HOST &&
		    (after[i] = fill_lanes(g, i, chip)) >= 0)
			any = 1;
		if (int8 && op_has(t, OPF_COEFF) &&
		    merge_coeff(g, i) < 0)
			goto fail;
		if (t == OP_GEMM && transpose_gemm(g, i) < 0)
			goto fail;
	}
	if (any)
		place_after(g, n0, after);
	free(after);
	graph_compact(g);
	g->stage = STAGE_REORDERED;
	return ir_verify(g);
fail:
	free(after);
	return -1;
}
