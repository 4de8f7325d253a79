/* lower_nsplit.c - an op too large for local memory split along its first
 * axis (lib/back/lower_nsplit.h).
 *
 * Codegen cuts an op along H and into chunks of output channels, but keeps
 * the first axis (N) whole in every lane: an op over many images, or over
 * the windows of a Swin block ([64, 3, 49, 32]), may not fit however its
 * rows are cut.  When each index of the first axis is computed on its own
 * (elementwise ops, windows and matmuls over a batch, normalisations and
 * transposes that leave axis 0 in place), the op becomes P ops over
 * consecutive parts of that axis: a Slice of each input that has it (a
 * part of a weight of that shape), the op on the part, and a Concat of the
 * results along axis 0.  Each element is computed as before, so the bits
 * are the same.  P is the least number of parts for which one part fits,
 * by codegen's own test on the op with the part's shapes.
 */
#include <stdlib.h>
#include <string.h>

#include "back/codegen.h"
#include "back/lower_nsplit.h"
#include "back/lower_split.h"
#include "ir/base.h"
#include "ir/op.h"
#include "quant/quant.h"

/* 1 when attribute `name` of op names axis 0 of a rank-r tensor. */
static int attr_has_axis0(const struct ir_op *op, const char *name, int r)
{
	const struct ir_attr *a = op_attr(op, name);
	if (!a)
		return 0;
	if (a->kind == ATTR_INT)
		return norm_axis(a->i, r) == 0;
	if (a->kind != ATTR_INTS)
		return 0;
	for (int j = 0; j < a->n; j++)
		if (norm_axis(a->ints[j], r) == 0)
			return 1;
	return 0;
}

/* Whether op computes each index of axis 0 alone, and if so which inputs
 * are cut with it (cut[j]): activations and, for elementwise ops, weights
 * of the output's rank whose axis 0 is the output's. */
static int independent(const struct ir_graph *g, const struct ir_op *op, int *cut)
{
	const struct op_def *d = op_defs[op->type];
	if (!d->slice_h || op->n_in < 1 || op->n_out < 1 || op->in[0] < 0)
		return 0;
	const struct ir_tensor *y = &g->tensors[op->out[0]];
	int r = y->rank;
	int64_t n = y->shape[0];
	if (r < 2 || n < 2 || attr_has_axis0(op, "axis", r) || attr_has_axis0(op, "axes", r))
		return 0;
	if (op->type == OP_MATMUL && r < 3)
		return 0;   /* axis 0 of a 2-D MatMul is A's rows, not B's */
	if (op->type == OP_TRANSPOSE) {
		int64_t p[IR_MAX_RANK];
		if (op_ints(op, "perm", p, IR_MAX_RANK) < 1 || p[0] != 0)
			return 0;
	}
	for (int j = 0; j < op->n_out; j++) {
		const struct ir_tensor *o = &g->tensors[op->out[j]];
		if (o->rank != r || o->shape[0] != n)
			return 0;
	}
	int same = d->slice_h == slice_h_same, acts = 0;
	for (int j = 0; j < op->n_in; j++) {
		cut[j] = 0;
		if (op->in[j] < 0)
			continue;
		const struct ir_tensor *x = &g->tensors[op->in[j]];
		int full = x->rank == r && x->shape[0] == n;
		/* an elementwise op's activation may come second (ViT's bias
		 * Add); any other op's is its first input */
		if (j == 0 && !same && (!full || x->data))
			return 0;
		if (x->data && !same)
			continue;       /* a Conv's weights, a per-channel parameter */
		if (full)
			cut[j] = 1;
		else if (x->rank == r && x->shape[0] != 1)
			return 0;       /* neither cut with it nor broadcast */
		acts += full && !x->data;
	}
	return acts > 0;
}

/* Whether op i fits with `part` indices of axis 0 in place of n: the shapes
 * of its cut inputs and outputs are set to the part's for codegen's test,
 * then put back. */
static int part_fits(struct ir_graph *g, int i, const struct chip *c, const int *cut,
		     int64_t n, int64_t part)
{
	struct ir_op *op = &g->ops[i];
	for (int j = 0; j < op->n_in; j++)
		if (cut[j])
			g->tensors[op->in[j]].shape[0] = part;
	for (int j = 0; j < op->n_out; j++)
		g->tensors[op->out[j]].shape[0] = part;
	int ok = codegen_op_fits(g, c, i) == 1;
	for (int j = 0; j < op->n_in; j++)
		if (cut[j])
			g->tensors[op->in[j]].shape[0] = n;
	for (int j = 0; j < op->n_out; j++)
		g->tensors[op->out[j]].shape[0] = n;
	return ok;
}

int lower_nsplit(struct ir_graph *g, int i, const struct chip *c, kin_note_fn note, void *ctx)
{
	struct ir_op *op = &g->ops[i];
	int n_in = op->n_in, n_out = op->n_out;
	int *cut = xcalloc((size_t)n_in + 1, sizeof *cut);
	int64_t n = op->n_out > 0 && op->out[0] >= 0 ? g->tensors[op->out[0]].shape[0] : 0;
	/* the largest part that fits: parts of ceil(n / P) for the least P */
	int64_t part = 0;
	if (independent(g, op, cut))
		for (int64_t p = 2; p <= n && !part; p++) {
			int64_t s = ceil_div(n, p);
			if (ceil_div(n, s) == p && part_fits(g, i, c, cut, n, s))
				part = s;
		}
	if (!part) {
		free(cut);
		return 0;
	}
	int parts = (int)ceil_div(n, part);
	int *outs = xmalloc(sizeof *outs * (size_t)parts * (size_t)n_out);
	int *in = xmalloc(sizeof *in * (size_t)n_in), *out = xmalloc(sizeof *out * (size_t)n_out);
	for (int p = 0; p < parts; p++) {
		int64_t n0 = p * part, n1 = n0 + part < n ? n0 + part : n;
		op = &g->ops[i];
		memcpy(in, op->in, sizeof *in * (size_t)n_in);
		for (int j = 0; j < n_in; j++) {
			if (!cut[j])
				continue;
			if (g->tensors[in[j]].data) {
				in[j] = graph_weight_slice(g, in[j], 0, n0, n1, "n");
				continue;
			}
			in[j] = split_slice(g, in[j], 0, n0, n1, "n", note, ctx, i);
		}
		for (int j = 0; j < n_out; j++)
			out[j] = split_part_tensor(g, g->ops[i].out[j], 0, n1 - n0, "n", n0);
		int k = graph_add_op(g, g->ops[i].type, g->tensors[out[0]].name, n_in, in, n_out, out);
		op_copy_attrs(&g->ops[k], &g->ops[i]);
		note(ctx, k, i);
		for (int j = 0; j < n_out; j++)
			outs[j * parts + p] = out[j];
	}
	/* op i becomes the Concat of its first output's parts, and each other
	 * output gets a Concat of its own, also placed before op i */
	int64_t *mul = xmalloc(sizeof *mul * (size_t)parts), *shf = xmalloc(sizeof *shf * (size_t)parts);
	for (int p = 0; p < parts; p++) {
		mul[p] = (int64_t)1 << 30;
		shf[p] = 30;
	}
	for (int j = n_out - 1; j >= 0; j--) {
		int y = g->ops[i].out[j], k = i;
		if (j > 0)
			k = graph_add_op(g, OP_CONCAT, g->tensors[y].name, parts, outs + j * parts, 1, &y);
		struct ir_op *o = &g->ops[k];
		if (j == 0) {
			op_clear_attrs(o);
			o->type = OP_CONCAT;
			op_set_inputs(o, parts, outs);
			o->n_out = 1;
		}
		op_set_int(o, "axis", 0);
		if (quant_is_q(g->tensors[y].dtype)) {
			op_set_ints(o, "multipliers", parts, mul);
			op_set_ints(o, "shifts", parts, shf);
		}
		if (j > 0)
			note(ctx, k, i);
	}
	free(mul);
	free(shf);
	free(outs);
	free(in);
	free(out);
	free(cut);
	return 1;
}
