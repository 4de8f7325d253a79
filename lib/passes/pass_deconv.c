/* pass_deconv.c - deconv-to-conv: a ConvTranspose whose square kernel
 * equals its stride (no pads, dilations, output padding or groups), the
 * upsampling of segmentation and text-detection heads, writes each input
 * pixel's KxK taps into a block of the output that no other pixel touches:
 *
 *     y[n, co, h*K + i, w*K + j] = b[co] + sum_ci x[n, ci, h, w] * W[ci, co, i, j]
 *
 * which is a 1x1 Conv to Co*K*K channels (channel (co*K + i)*K + j) and a
 * DepthToSpace (CRD) of block K.  The chip's cube fills its lanes with
 * output channels (formats/tpuc-isa.5, COST MODEL): a ConvTranspose to one
 * channel used one lane in 64 at each of its K*K taps, the Conv uses K*K
 * lanes once, and weight-reorder can fill the rest.  The multiply-adds are
 * the same ones; the DepthToSpace moves elements unchanged.
 *
 * A Relu or Clip from 0 that reads the ConvTranspose alone moves before the
 * DepthToSpace (it acts element by element), so that fuse-act folds it into
 * the Conv.
 */
#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/base.h"
#include "ir/op.h"
#include "passes/passes.h"

/* K when op is a ConvTranspose this pass rewrites, else 0. */
static int64_t deconv_block(const struct ir_graph *g, const struct ir_op *op)
{
	if (op->type != OP_CONVTRANSPOSE || op->n_in < 2 || op->n_out != 1 || op->in[1] < 0)
		return 0;
	const struct ir_tensor *x = &g->tensors[op->in[0]], *w = &g->tensors[op->in[1]];
	const struct ir_tensor *y = &g->tensors[op->out[0]];
	const struct ir_tensor *b = op->n_in > 2 && op->in[2] >= 0 ? &g->tensors[op->in[2]] : NULL;
	if (x->rank != 4 || x->dtype != DT_F32 || x->dyn || !w->data || w->dtype != DT_F32 ||
	    w->rank != 4 || (b && (!b->data || b->dtype != DT_F32 || tensor_numel(b) != w->shape[1])))
		return 0;
	int64_t k[2], s[2], d[2] = { 1, 1 }, p[4] = { 0, 0, 0, 0 }, o[2] = { 0, 0 };
	if (op_ints(op, "kernel_shape", k, 2) != 2 || op_ints(op, "strides", s, 2) != 2)
		return 0;
	op_ints(op, "dilations", d, 2);
	op_ints(op, "pads", p, 4);
	op_ints(op, "output_padding", o, 2);
	if (k[0] != k[1] || s[0] != k[0] || s[1] != k[1] || k[0] < 2 || d[0] != 1 || d[1] != 1 ||
	    p[0] || p[1] || p[2] || p[3] || o[0] || o[1] || op_int(op, "group", 1) != 1 ||
	    w->shape[0] != x->shape[1] || w->shape[2] != k[0] || w->shape[3] != k[0] ||
	    y->rank != 4 || y->shape[2] != x->shape[2] * k[0] || y->shape[3] != x->shape[3] * k[0])
		return 0;
	return k[0];
}

static int deconv_pattern(struct ir_graph *g, int i)
{
	int64_t kb = deconv_block(g, &g->ops[i]);
	if (!kb)
		return 0;
	const struct ir_op *op = &g->ops[i];
	const struct ir_tensor *x = &g->tensors[op->in[0]], *w = &g->tensors[op->in[1]];
	int has_b = op->n_in > 2 && op->in[2] >= 0;
	int64_t ci = w->shape[0], co = w->shape[1], kk = kb * kb, oc = co * kk;
	int64_t wshape[4] = { oc, ci, 1, 1 }, tshape[4] = { x->shape[0], oc, x->shape[2], x->shape[3] };
	char base[512];

	/* W'[(co*K + i)*K + j, ci] = W[ci, co, i, j]; b'[(co*K + i)*K + j] = b[co] */
	snprintf(base, sizeof base, "%s_taps", g->tensors[op->in[1]].name);
	int tw = pass_add_weight(g, base, 4, wshape);
	const float *wd = g->tensors[g->ops[i].in[1]].data;
	float *nw = g->tensors[tw].data;
	for (int64_t c = 0; c < ci; c++)
		for (int64_t o = 0; o < co; o++)
			for (int64_t t = 0; t < kk; t++)
				nw[(o * kk + t) * ci + c] = wd[(c * co + o) * kk + t];
	int tb = -1;
	if (has_b) {
		snprintf(base, sizeof base, "%s_taps", g->tensors[g->ops[i].in[2]].name);
		tb = pass_add_weight(g, base, 1, &oc);
		const float *bd = g->tensors[g->ops[i].in[2]].data;
		float *nb = g->tensors[tb].data;
		for (int64_t o = 0; o < oc; o++)
			nb[o] = bd[o / kk];
	}
	snprintf(base, sizeof base, "%s_taps", g->tensors[g->ops[i].out[0]].name);
	char *tname = graph_unique_name(g, base, 1);
	int taps = graph_add_tensor(g, tname, DT_F32, 4, tshape);
	free(tname);

	/* the DepthToSpace, right after op i, writes the ConvTranspose's output */
	snprintf(base, sizeof base, "%s_space", g->ops[i].name);
	int dk = pass_insert_after(g, i, OP_DEPTHTOSPACE, base, taps, g->ops[i].out[0]);
	op_set_int(&g->ops[dk], "blocksize", kb);
	op_set_str(&g->ops[dk], "mode", "CRD");

	struct ir_op *cv = &g->ops[i];
	cv->type = OP_CONV;
	cv->in[1] = tw;
	if (has_b)
		cv->in[2] = tb;
	cv->out[0] = taps;
	op_set_ints(cv, "kernel_shape", 2, (int64_t[]){ 1, 1 });
	op_set_ints(cv, "strides", 2, (int64_t[]){ 1, 1 });
	op_set_ints(cv, "dilations", 2, (int64_t[]){ 1, 1 });
	op_set_ints(cv, "pads", 4, (int64_t[]){ 0, 0, 0, 0 });
	op_set_int(cv, "group", 1);
	op_del_attr(cv, "output_padding");
	pass_index_drop();
	return 1;
}

/* DepthToSpace -> Relu (or Clip from 0), the Relu its only reader, from a
 * Conv: Relu -> DepthToSpace. */
static int act_before_pattern(struct ir_graph *g, int i)
{
	struct ir_op *act = &g->ops[i];
	if (act->type == OP_CLIP) {
		if (op_float(act, "min", -FLT_MAX) != 0 || act->n_in != 1)
			return 0;
	} else if (act->type != OP_RELU) {
		return 0;
	}
	int t = act->in[0], p = pass_producer(g, t);
	if (p < 0 || g->ops[p].type != OP_DEPTHTOSPACE || pass_uses(g, t) != 1 || pass_is_output(g, t))
		return 0;
	int x = g->ops[p].in[0], c = pass_producer(g, x);
	if (c < 0 || g->ops[c].type != OP_CONV || pass_uses(g, x) != 1 || pass_is_output(g, x) ||
	    g->tensors[x].dtype != DT_F32)
		return 0;
	/* conv -> x -> act -> t -> d2s -> y, act and d2s trading places */
	int y = act->out[0];
	struct ir_op a = *act;
	memmove(&g->ops[p + 1], &g->ops[p], sizeof a * (size_t)(i - p));
	g->ops[p] = a;
	struct ir_op *na = &g->ops[p], *d2s = &g->ops[p + 1];
	struct ir_tensor *tt = &g->tensors[t];
	memcpy(tt->shape, g->tensors[x].shape, sizeof tt->shape);
	na->in[0] = x;
	na->out[0] = t;
	d2s->in[0] = t;
	d2s->out[0] = y;
	pass_index_drop();
	return 1;
}

int pass_deconv_to_conv(struct ir_graph *g)
{
	static const pattern_fn pats[] = { deconv_pattern, act_before_pattern };
	return rewrite_run(g, "deconv-to-conv", pats, 2);
}
