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

/* Op's attribute "own" [MACs, weight bytes]: the work of the network's op
 * before a rewrite makes it multiply zeros too (op_macs, tpu-sim's
 * roofline bound); kept when set already. */
static void own_set(const struct ir_graph *g, struct ir_op *op)
{
	int64_t own[2] = { op_macs(g, op), 0 };
	if (op_attr(op, "own"))
		return;
	for (int j = 1; j < op->n_in; j++)
		if (op->in[j] >= 0 && g->tensors[op->in[j]].data)
			own[1] += (int64_t)g->tensors[op->in[j]].nbytes;
	op_set_ints(op, "own", 2, own);
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
	own_set(g, op);
	op->in[1] = t;
	op_set_int(op, "group", G / k);
	return 0;
}

int weight_reorder(struct ir_graph *g)
{
	int int8 = g->mode == MODE_INT8;
	const struct chip *chip = g->chip ? chip_find(g->chip) : NULL;
	for (int i = 0; i < g->n_ops; i++) {
		enum op_type t = g->ops[i].type;
		if (int8 && t == OP_CONV && g->ops[i].place != PLACE_HOST && merge_groups(g, i, chip) < 0)
			return -1;
		if (int8 && op_has(t, OPF_COEFF) &&
		    merge_coeff(g, i) < 0)
			return -1;
		if (t == OP_GEMM && transpose_gemm(g, i) < 0)
			return -1;
	}
	graph_compact(g);
	g->stage = STAGE_REORDERED;
	return ir_verify(g);
}
