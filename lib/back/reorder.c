/* reorder.c - weight-reorder: merge per-channel requantisation parameters
 * (the ops with OPF_COEFF in lib/ir/op_traits.h) into one coefficient tensor,
 * transpose Gemm weights so that output features lead, merge the groups of
 * grouped INT8 Convs the cube runs faster merged, fill the cube's lanes of
 * narrow Convs and pack the narrow rows of depthwise Convs
 * (lib/back/reorder.h).
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
 * faster so (a k that does not divide G: split_groups, with its Slices and
 * Concat timed too), the largest weight of a lane within an eighth of
 * local memory.  The products added are the same and the zeros
 * add nothing, so the results are bit for bit the grouped Conv's.  The op
 * records the grouped Conv's work as its attribute "own". */
/* A new weight holding output channels [o0, o1) of the grouped Conv
 * weight w (groups of ocg output channels) with k neighbouring groups
 * merged: [o1 - o0, k x icg, KH, KW], each channel's values at its group's
 * place in the merged one, zeros elsewhere; returns it. */
static int merged_weight(struct ir_graph *g, int w, int64_t ocg, int64_t o0, int64_t o1, int64_t k)
{
	const struct ir_tensor *wt = &g->tensors[w];
	int64_t icg = wt->shape[1], taps = wt->shape[2] * wt->shape[3], kic = k * icg;
	int8_t *v = xcalloc((size_t)((o1 - o0) * kic * taps), 1);
	const int8_t *src = wt->data;
	for (int64_t o = o0; o < o1; o++) {
		int64_t sub = (o - o0) / ocg % k;   /* its group's place in the merged one */
		memcpy(v + ((o - o0) * kic + sub * icg) * taps, src + o * icg * taps,
		       (size_t)(icg * taps));
	}
	char *name = graph_unique_name(g, wt->name, 2);
	int t = graph_add_weight(g, name, DT_I8, 4,
				 (int64_t[]){ o1 - o0, kic, wt->shape[2], wt->shape[3] }, v);
	free(name);
	free(v);
	g->tensors[t].scale = g->tensors[w].scale;
	g->tensors[t].zero_point = g->tensors[w].zero_point;
	return t;
}

struct around;
static int split_groups(struct ir_graph *g, int oi, const struct chip *c, int64_t k,
			struct around *a);

/* Cycles by the cost model of a Conv of `groups` groups of icg input
 * channels and taps taps to oc of y's positions, its weights' DMA too. */
static int64_t part_cost(const struct chip *c, const struct ir_tensor *x, const struct ir_tensor *y,
			 int64_t oc, int64_t groups, int64_t icg, int64_t taps)
{
	int64_t pos = y->shape[0] * y->shape[2] * y->shape[3];
	return cost_cube(c, x->dtype, groups, oc / groups, pos, icg * taps) +
	       cost_dma(c, oc * icg * taps);
}

/* Cycles of the Conv of G groups with k neighbouring groups merged when k
 * does not divide G (split_groups): the first G - G mod k groups merged
 * by k, the last G mod k merged into one, the Slices of the input for the
 * two and the Concat of their outputs. */
static int64_t uneven_cost(const struct chip *c, const struct ir_tensor *x,
			   const struct ir_tensor *y, int64_t G, int64_t icg, int64_t taps, int64_t k)
{
	int64_t g1 = G - G % k, r = G % k, ocg = y->shape[1] / G;
	return part_cost(c, x, y, g1 * ocg, g1 / k, k * icg, taps) +
	       part_cost(c, x, y, r * ocg, 1, r * icg, taps) +
	       cost_vector(c, x->dtype, g1 * icg, x->shape[0], x->shape[2], x->shape[3], 1) +
	       cost_vector(c, x->dtype, r * icg, x->shape[0], x->shape[2], x->shape[3], 1) +
	       cost_vector(c, y->dtype, y->shape[1], y->shape[0], y->shape[2], y->shape[3], 1);
}

static int merge_groups(struct ir_graph *g, int oi, const struct chip *c, struct around *a)
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
	/* the best k dividing G, and the best other k (uneven) */
	int64_t best_k = 1, best = conv_cost(c, x, y, G, icg, taps, 1), uk = 0, ucy = 0, uneven = 0;
	for (int64_t k = 2; k <= G; k++) {
		if (ceil_div(oc, c->lanes) * isa_pitch(c, DT_I8, k * icg * taps) > c->lmem_bytes / 8)
			continue;
		int64_t cy = G % k ? uneven_cost(c, x, y, G, icg, taps, k)
				   : conv_cost(c, x, y, G / k, k * icg, taps, 1);
		if (G % k && (!uk || cy < ucy)) {
			uk = k;
			ucy = cy;
		} else if (!(G % k) && cy < best) {
			best = cy;
			best_k = k;
		}
	}
	/* two Convs, Slices and a Concat: only for a tenth less than one Conv */
	if (uk && 10 * (best - ucy) >= best) {
		best = ucy;
		best_k = uk;
		uneven = 1;
	}
	/* a real saving only: a tenth of the grouped Conv's time */
	if (best_k == 1 || 10 * (conv_cost(c, x, y, G, icg, taps, 1) - best) <
				   conv_cost(c, x, y, G, icg, taps, 1))
		return 0;
	if (uneven)
		return split_groups(g, oi, c, best_k, a);
	int64_t k = best_k;
	int t = merged_weight(g, op->in[1], ocg, 0, oc, k);
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

/* A new activation tensor NAME_TAG of shape [N, C, H, W] with tensor
 * like's dtype, scale and zero point; returns it. */
static int add_like(struct ir_graph *g, int like, const char *name, const char *tag,
		    const int64_t shape[4])
{
	char base[512];
	snprintf(base, sizeof base, "%s_%s", name, tag);
	char *u = graph_unique_name(g, base, 2);
	int t = graph_add_tensor(g, u, g->tensors[like].dtype, 4, shape);
	free(u);
	g->tensors[t].scale = g->tensors[like].scale;
	g->tensors[t].zero_point = g->tensors[like].zero_point;
	return t;
}

/* Op type t named NAME_TAG reading n_in tensors in and writing out, placed
 * as op like is; returns it. */
static int add_op_like(struct ir_graph *g, int like, enum op_type t, const char *tag,
		       int n_in, const int *in, int out)
{
	char base[512];
	snprintf(base, sizeof base, "%s_%s", g->ops[like].name, tag);
	int k = graph_add_op(g, t, base, n_in, in, 1, &out);
	g->ops[k].place = g->ops[like].place;
	return k;
}

/* A Concat along axis of the k tensors parts into out, all of one scale
 * and zero point: int8 multipliers 2^30 and shifts 30 copy each part
 * unchanged (lib/ops/concat.c); returns the op. */
static int concat_same(struct ir_graph *g, int oi, const char *tag, int axis, int k,
		       const int *parts, int out)
{
	int c = add_op_like(g, oi, OP_CONCAT, tag, k, parts, out);
	int64_t *m = xmalloc(sizeof *m * (size_t)k), *sh = xmalloc(sizeof *sh * (size_t)k);
	for (int j = 0; j < k; j++) {
		m[j] = (int64_t)1 << 30;
		sh[j] = 30;
	}
	op_set_int(&g->ops[c], "axis", axis);
	op_set_ints(&g->ops[c], "multipliers", k, m);
	op_set_ints(&g->ops[c], "shifts", k, sh);
	free(m);
	free(sh);
	return c;
}

/* A Slice of x along axes 2 and 3 to rows [r0, r1) and columns [c0, c1),
 * into a new tensor of y's kind; returns the tensor. */
static int slice_hw(struct ir_graph *g, int oi, int x, int like, const char *tag,
		    int64_t r0, int64_t r1, int64_t c0, int64_t c1)
{
	const struct ir_tensor *xt = &g->tensors[x];
	int64_t shape[4] = { xt->shape[0], xt->shape[1], r1 - r0, c1 - c0 };
	int t = add_like(g, like, g->tensors[like].name, tag, shape);
	int k = add_op_like(g, oi, OP_SLICE, tag, 1, &x, t);
	op_set_ints(&g->ops[k], "starts", 2, (int64_t[]){ r0, c0 });
	op_set_ints(&g->ops[k], "ends", 2, (int64_t[]){ r1, c1 });
	op_set_ints(&g->ops[k], "axes", 2, (int64_t[]){ 2, 3 });
	return t;
}

/* How a depthwise Conv over x [N, C, H, W] to [N, C, OH, OW] runs on k
 * blocks of its output rows side by side (pack_rows); sizes in elements. */
struct packing {
	int64_t k;      /* blocks */
	int64_t ohb;    /* output rows of a block, ceil(OH / k) */
	int64_t rin;    /* input rows of a block with its halo */
	int64_t rows;   /* rows of the padded input the blocks are cut from */
	int64_t wb;     /* columns of a block with the zeros after it */
	int64_t owp;    /* output columns of the packed Conv */
};

/* The packing in k blocks of the Conv with attributes s over x to oh x ow;
 * 0 when a block would be empty or the rows too wide. */
static int packing_get(const struct spatial *s, int64_t w, int64_t oh, int64_t ow, int64_t k,
		       struct packing *p)
{
	int64_t right = (ow - 1) * s->sw - s->pl + s->kw - w;   /* columns read past the map */
	int64_t gap = s->pl > right ? s->pl : right;
	p->k = k;
	p->ohb = ceil_div(oh, k);
	p->rin = (p->ohb - 1) * s->sh + s->kh;
	p->rows = (k - 1) * p->ohb * s->sh + p->rin;
	p->wb = ceil_div(w + gap, s->sw) * s->sw;
	p->owp = (k * p->wb + s->pl - s->kw) / s->sw + 1;
	return (k - 1) * p->ohb < oh && k * p->wb < (1 << 15);
}

/* Output rows of block j of p, of oh in all. */
static int64_t block_rows(const struct packing *p, int64_t j, int64_t oh)
{
	return (j + 1) * p->ohb > oh ? oh - j * p->ohb : p->ohb;
}

/* Cycles by the cost model of a depthwise Conv of ch channels with `taps`
 * taps to oh x ow, run on the blocks of p side by side with the vector ops
 * that pack (Pad, k Slices, Concat along W) and unpack them (k Slices,
 * Concat along H); p NULL: the Conv alone. */
static int64_t pack_cost(const struct chip *c, enum ir_dtype dt, int64_t ch, int64_t n,
			 int64_t oh, int64_t ow, int64_t taps, const struct packing *p)
{
	if (!p)
		return cost_vector(c, dt, ch, n, oh, ow, taps);
	int64_t cy = cost_vector(c, dt, ch, n, p->ohb, p->owp, taps) +
		     cost_vector(c, dt, ch, n, p->rows, p->wb, 1) +
		     p->k * cost_vector(c, dt, ch, n, p->rin, p->wb, 1) +
		     cost_vector(c, dt, ch, n, p->rin, p->k * p->wb, 1) +
		     cost_vector(c, dt, ch, n, oh, ow, 1);
	for (int64_t j = 0; j < p->k; j++)
		cy += cost_vector(c, dt, ch, n, block_rows(p, j, oh), ow, 1);
	return cy;
}

/* An INT8 depthwise Conv (one input channel per group, stride and
 * dilation 1) whose output rows are much narrower than the vector unit
 * runs each row in one vector step per tap, most of its elements idle.  Its output rows are cut
 * into k blocks of ohb = ceil(OH / k) rows, and the input rows each block
 * reads (its halo included; zeros beyond the map) put side by side along
 * W, wb columns apart (a multiple of the stride, with zeros after the map
 * for the columns the Conv reads past it and before the next block): a
 * Pad (pads above and below, the zeros after), k Slices and a Concat along
 * W.  The Conv then runs over ohb rows of the k blocks, pads only left
 * (pl); output columns j x wb / sw .. + OW - 1 are block j's, the others
 * are not read.  k Slices and a Concat along H put the rows back.  Every
 * output kept reads at each tap the value it read before, so the results
 * are the Conv's bit for bit.  k (at most 7, a Concat's inputs) is the one
 * the cost model times fastest with the packing ops, when it saves a
 * tenth.  (Strided Convs stay: the geometry holds, but the packing ops
 * keep their neighbours from running in slices, and mobilenet_v3_large and
 * efficientnet_b3 lost more DMA overlap than the Convs saved.)  Adds the
 * packing ops from *pre on and the unpacking ones from *post on (as many
 * as *n_pre, *n_post); returns 0, also when the Conv stays (counts 0). */
static int pack_rows(struct ir_graph *g, int oi, const struct chip *c, int *pre, int *n_pre,
		     int *post, int *n_post)
{
	struct ir_op *op = &g->ops[oi];
	struct spatial s;
	*n_pre = *n_post = 0;
	if (!c || op->n_in < 2 || op->n_out != 1 || op->in[0] < 0 || op->in[1] < 0 ||
	    spatial_get(g, op, &s) < 0 || s.group < 2 || s.dh != 1 || s.dw != 1 ||
	    s.sh != 1 || s.sw != 1)
		return 0;
	const struct ir_tensor *x = &g->tensors[op->in[0]], *w = &g->tensors[op->in[1]];
	const struct ir_tensor *y = &g->tensors[op->out[0]];
	if (x->rank != 4 || y->rank != 4 || w->rank != 4 || w->shape[1] != 1 ||
	    w->shape[0] != s.group || x->shape[1] != s.group || y->shape[1] != s.group ||
	    (x->dtype != DT_I8 && x->dtype != DT_U8) || (y->dtype != DT_I8 && y->dtype != DT_U8) ||
	    y->shape[2] < 2)
		return 0;
	int64_t n = y->shape[0], ch = y->shape[1], oh = y->shape[2], ow = y->shape[3];
	int64_t h = x->shape[2], wd = x->shape[3], taps = (int64_t)s.kh * s.kw;
	int64_t base = pack_cost(c, y->dtype, ch, n, oh, ow, taps, NULL), best = base;
	struct packing p = { 0 }, q;
	for (int64_t k = 2; k <= 7 && k <= oh; k++) {
		if (!packing_get(&s, wd, oh, ow, k, &q))
			continue;
		int64_t cy = pack_cost(c, y->dtype, ch, n, oh, ow, taps, &q);
		if (cy < best) {
			best = cy;
			p = q;
		}
	}
	if (!p.k || 10 * (base - best) < base)
		return 0;
	int64_t k = p.k, zp = x->zero_point;
	int xt = op->in[0], yt = op->out[0];
	char yname[400];
	snprintf(yname, sizeof yname, "%s", g->tensors[yt].name);
	/* pack: Pad, k Slices, Concat along W (rows past those the Conv reads
	 * are not padded, the Slices leave them) */
	int64_t below = p.rows - h - s.pt;
	below = below < 0 ? 0 : below;
	int64_t padded[4] = { n, ch, h + s.pt + below, p.wb };
	int pt = add_like(g, xt, yname, "rows_pad", padded);
	int first = add_op_like(g, oi, OP_PAD, "rows_pad", 1, &xt, pt);
	op_set_ints(&g->ops[first], "pads", 8, (int64_t[]){ 0, 0, s.pt, 0, 0, 0, below, p.wb - wd });
	op_set_float(&g->ops[first], "value", (double)zp);
	int *parts = xmalloc(sizeof *parts * (size_t)k);
	char tag[64];
	for (int64_t j = 0; j < k; j++) {
		int64_t r0 = j * p.ohb * s.sh;
		snprintf(tag, sizeof tag, "rows_block%lld", (long long)j);
		parts[j] = slice_hw(g, oi, pt, xt, tag, r0, r0 + p.rin, 0, p.wb);
	}
	int64_t packed[4] = { n, ch, p.rin, k * p.wb };
	int pk = add_like(g, xt, yname, "rows_packed", packed);
	int last = concat_same(g, oi, "rows_pack", 3, (int)k, parts, pk);
	*pre = first;
	*n_pre = last - first + 1;
	/* the Conv over the packed rows */
	int64_t out[4] = { n, ch, p.ohb, p.owp };
	int ot = add_like(g, yt, yname, "rows_conv", out);
	op = &g->ops[oi];
	op_own_set(g, op);
	op->in[0] = pk;
	op->out[0] = ot;
	op_set_ints(op, "pads", 4, (int64_t[]){ 0, s.pl, 0, 0 });
	/* unpack: k Slices, Concat along H */
	for (int64_t j = 0; j < k; j++) {
		int64_t c0 = j * p.wb / s.sw;
		snprintf(tag, sizeof tag, "rows_unblock%lld", (long long)j);
		parts[j] = slice_hw(g, oi, ot, yt, tag, 0, block_rows(&p, j, oh), c0, c0 + ow);
		if (j == 0)
			*post = g->n_ops - 1;
	}
	last = concat_same(g, oi, "rows_unpack", 2, (int)k, parts, yt);
	*n_post = last - *post + 1;
	free(parts);
	return 0;
}

/* Ops added around op i of the first n: pre[i] .. pre[i] + n_pre[i] - 1
 * go right before it, post[i] .. post[i] + n_post[i] - 1 right after. */
struct around {
	int pre, n_pre, post, n_post;
};

/* Put the ops added around each op i of the first n in place. */
static void place_around(struct ir_graph *g, int n, const struct around *a)
{
	struct ir_op *ops = xmalloc(sizeof *ops * (size_t)g->n_ops);
	int k = 0;
	for (int i = 0; i < n; i++) {
		for (int j = 0; j < a[i].n_pre; j++)
			ops[k++] = g->ops[a[i].pre + j];
		ops[k++] = g->ops[i];
		for (int j = 0; j < a[i].n_post; j++)
			ops[k++] = g->ops[a[i].post + j];
	}
	memcpy(g->ops, ops, sizeof *ops * (size_t)k);
	free(ops);
}

/* A Slice of x along axis 1 to channels [c0, c1), into a new tensor of
 * x's kind; returns the tensor. */
static int slice_chans(struct ir_graph *g, int oi, int x, const char *tag, int64_t c0, int64_t c1)
{
	const struct ir_tensor *xt = &g->tensors[x];
	int64_t shape[4] = { xt->shape[0], c1 - c0, xt->shape[2], xt->shape[3] };
	int t = add_like(g, x, g->tensors[x].name, tag, shape);
	int k = add_op_like(g, oi, OP_SLICE, tag, 1, &x, t);
	op_set_ints(&g->ops[k], "starts", 1, (int64_t[]){ c0 });
	op_set_ints(&g->ops[k], "ends", 1, (int64_t[]){ c1 });
	op_set_ints(&g->ops[k], "axes", 1, (int64_t[]){ 1 });
	return t;
}

/* merge_groups with k not dividing G: the first G1 = G - G mod k groups
 * merged by k into one Conv (G1 / k groups) over a Slice of the input's
 * first G1 x IC/G channels, the last r = G mod k merged into a second
 * Conv (one group) over a Slice of the others, their outputs joined by a
 * Concat along the channels.  Per output channel inputs (bias,
 * multipliers, shifts) are cut with the channels; each Conv's attribute
 * "own" is its share of the grouped Conv's work.  The Slices go before op
 * oi, the second Conv and the Concat after (a).  Bit for bit the grouped
 * Conv's, as for merge_groups. */
static int split_groups(struct ir_graph *g, int oi, const struct chip *c, int64_t k,
			struct around *a)
{
	struct ir_op *op = &g->ops[oi];
	int64_t G = op_int(op, "group", 1);
	int xt = op->in[0], yt = op->out[0], w = op->in[1];
	int64_t oc = g->tensors[w].shape[0], icg = g->tensors[w].shape[1], ocg = oc / G;
	int64_t g1 = G - G % k, r = G % k, oa = g1 * ocg;
	op_own_set(g, op);
	int64_t own[2];
	op_ints(op, "own", own, 2);
	int64_t own_a[2] = { own[0] / G * g1, own[1] * g1 / G };
	int64_t own_b[2] = { own[0] - own_a[0], own[1] - own_a[1] };
	/* the input's two parts */
	int xa = slice_chans(g, oi, xt, "groups_head", 0, g1 * icg);
	a->pre = g->n_ops - 1;
	int xb = slice_chans(g, oi, xt, "groups_tail", g1 * icg, G * icg);
	a->n_pre = 2;
	/* the two Convs' inputs */
	int n_in = g->ops[oi].n_in;
	int *in_a = xmalloc(sizeof *in_a * (size_t)n_in), *in_b = xmalloc(sizeof *in_b * (size_t)n_in);
	in_a[0] = xa;
	in_b[0] = xb;
	in_a[1] = merged_weight(g, w, ocg, 0, oa, k);
	in_b[1] = merged_weight(g, w, ocg, oa, oc, r);
	for (int j = 2; j < n_in; j++) {
		int t = g->ops[oi].in[j];
		in_a[j] = in_b[j] = t;
		if (t >= 0 && per_row(&g->tensors[t], oc)) {
			in_a[j] = graph_weight_slice(g, t, 0, 0, oa, "head");
			in_b[j] = graph_weight_slice(g, t, 0, oa, oc, "tail");
		}
	}
	const struct ir_tensor *y = &g->tensors[yt];
	int64_t sa[4] = { y->shape[0], oa, y->shape[2], y->shape[3] };
	int64_t sb[4] = { y->shape[0], oc - oa, y->shape[2], y->shape[3] };
	int ya = add_like(g, yt, g->tensors[yt].name, "groups_head", sa);
	int yb = add_like(g, yt, g->tensors[yt].name, "groups_tail", sb);
	/* the second Conv: the op's attributes, one group */
	char base[512];
	snprintf(base, sizeof base, "%s_groups_tail", g->ops[oi].name);
	int kb = graph_add_op(g, OP_CONV, base, n_in, in_b, 1, &yb);
	op_copy_attrs(&g->ops[kb], &g->ops[oi]);
	g->ops[kb].place = g->ops[oi].place;
	op_set_int(&g->ops[kb], "group", 1);
	op_set_ints(&g->ops[kb], "own", 2, own_b);
	a->post = kb;
	op = &g->ops[oi];
	op_set_inputs(op, n_in, in_a);
	op->out[0] = ya;
	op_set_int(op, "group", g1 / k);
	op_set_ints(op, "own", 2, own_a);
	int parts[2] = { ya, yb };
	concat_same(g, oi, "groups_join", 1, 2, parts, yt);
	a->n_post = 2;
	free(in_a);
	free(in_b);
	(void)c;
	return 0;
}

int weight_reorder(struct ir_graph *g)
{
	int int8 = g->mode == MODE_INT8;
	const struct chip *chip = g->chip ? chip_find(g->chip) : NULL;
	int n0 = g->n_ops, any = 0;
	struct around *a = xcalloc((size_t)n0 + 1, sizeof *a);
	for (int i = 0; i < n0; i++) {
		enum op_type t = g->ops[i].type;
		int on_chip = int8 && t == OP_CONV && g->ops[i].place != PLACE_HOST;
		if (on_chip && merge_groups(g, i, chip, &a[i]) < 0)
			goto fail;
		if (a[i].n_post)
			;   /* split in two Convs */
		else if (on_chip && (a[i].post = fill_lanes(g, i, chip)) >= 0)
			a[i].n_post = 1;
		else if (on_chip && pack_rows(g, i, chip, &a[i].pre, &a[i].n_pre, &a[i].post,
					      &a[i].n_post) < 0)
			goto fail;
		any |= a[i].n_pre || a[i].n_post;
		if (int8 && op_has(t, OPF_COEFF) &&
		    merge_coeff(g, i) < 0)
			goto fail;
		if (t == OP_GEMM && transpose_gemm(g, i) < 0)
			goto fail;
	}
	if (any)
		place_around(g, n0, a);
	free(a);
	graph_compact(g);
	g->stage = STAGE_REORDERED;
	return ir_verify(g);
fail:
	free(a);
	return -1;
}
