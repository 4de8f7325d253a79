/* lower_compose.c - two Convs as one before lowering (back/lower_compose.h).
 *
 * A Conv of one group with no activation (a linear bottleneck's projection)
 * whose output only a 1x1 Conv of one group, stride 1 and no padding reads
 * (the next block's expansion) is folded into that Conv:
 *   W = W2 . W1 over W1's input channels and taps,  b = W2 . b1 + b2,
 * with W1's strides, pads and dilations and W2's activation.  The cube
 * reduces K in tiles of cube_macs / lanes (CHIP.md), so a Conv whose K and
 * output channels both sit below one tile costs as much per position as
 * one reading twice as many channels: the composed Conv then does the work
 * of the second alone and the first's command, its output's stores and
 * loads and one requantisation disappear.  The pair is composed only where
 * the cost model's cube time per position (output channels counted in
 * fractions of the lanes, as lane filling runs them) plus the weights'
 * DDR time is lower for the one Conv than for the two, and neither Conv
 * touches a tensor with a pre-quantised model's own scale.
 */
#include <stdlib.h>
#include <string.h>

#include "back/lower_compose.h"
#include "back/lower_dtype.h"
#include "ir/base.h"
#include "ir/op.h"
#include "passes/rewrite.h"

/* Whether op's attributes are only the names in keep (NULL-ended). */
static int attrs_only(const struct ir_op *op, const char *const *keep)
{
	for (int a = 0; a < op->n_attr; a++) {
		int ok = 0;
		for (int k = 0; keep[k] && !ok; k++)
			ok = !strcmp(op->attr[a].name, keep[k]);
		if (!ok)
			return 0;
	}
	return 1;
}

static const char *const spatial_attrs[] = { "kernel_shape", "strides", "pads", "dilations",
					     "group", NULL };
static const char *const act_attrs[] = { "kernel_shape", "strides", "pads", "dilations",
					 "group", "do_relu", "relu_limit", NULL };

/* A float weight of rank r (or absent, optional), or 0. */
static int float_weight(const struct ir_graph *g, int t, int rank, int optional)
{
	if (t < 0)
		return optional;
	const struct ir_tensor *x = &g->tensors[t];
	return x->data && x->dtype == DT_F32 && x->rank == rank;
}

/* Whether a tensor op reads or writes carries the model's own quantisation
 * (fold-qdq: a pre-quantised model's scale, which the composed Conv would
 * drop from between the two or lose on the composed weights). */
static int model_quantised(const struct ir_graph *g, const struct ir_op *op)
{
	for (int j = 0; j < op->n_in + op->n_out; j++) {
		int t = j < op->n_in ? op->in[j] : op->out[j - op->n_in];
		if (t < 0)
			continue;
		const struct ir_tensor *x = &g->tensors[t];
		if ((x->qdtype == DT_I8 || x->qdtype == DT_U8) && x->scale > 0)
			return 1;
	}
	return 0;
}

/* Whether Conv a (its output read by b alone) and Conv b compose. */
static int composable(const struct ir_graph *g, const struct ir_op *a, const struct ir_op *b)
{
	struct spatial sa, sb;
	/* the op types first: model_quantised walks all of a Concat's inputs */
	if (a->type != OP_CONV || b->type != OP_CONV || model_quantised(g, a) || model_quantised(g, b))
		return 0;
	if (a->type != OP_CONV || b->type != OP_CONV || a->n_out != 1 || b->n_in < 2 ||
	    a->n_in < 2 || b->in[0] != a->out[0] || op_int(a, "do_relu", 0) ||
	    !attrs_only(a, spatial_attrs) || !attrs_only(b, act_attrs) ||
	    spatial_get(g, a, &sa) < 0 || spatial_get(g, b, &sb) < 0)
		return 0;
	if (sa.group != 1 || sb.group != 1 || sb.kh != 1 || sb.kw != 1 || sb.sh != 1 || sb.sw != 1 ||
	    sb.pt || sb.pl || sb.pb || sb.pr)
		return 0;
	if (!float_weight(g, a->in[1], 4, 0) || !float_weight(g, b->in[1], 4, 0) ||
	    !float_weight(g, a->n_in > 2 ? a->in[2] : -1, 1, 1) ||
	    !float_weight(g, b->n_in > 2 ? b->in[2] : -1, 1, 1) || a->n_in > 3 || b->n_in > 3)
		return 0;
	const struct ir_tensor *y = &g->tensors[a->out[0]];
	const struct ir_tensor *w1 = &g->tensors[a->in[1]], *w2 = &g->tensors[b->in[1]];
	return y->dtype == DT_F32 && y->rank == 4 && w2->shape[1] == w1->shape[0] &&
	       g->tensors[b->out[0]].dtype == DT_F32;
}

/* Cube cycles per output position of a Conv with oc outputs over k, output
 * channels in fractions of the lanes (what lane filling reaches), plus the
 * DDR cycles of its weights, scaled by pos positions. */
static double conv_time(const struct chip *c, enum ir_dtype dt, double pos, int64_t oc, int64_t k)
{
	int64_t tile = chip_cube_macs(c, dt) / c->lanes;
	if (tile < 1)
		tile = 1;
	double cube = pos * (double)oc / c->lanes * (double)((k + tile - 1) / tile);
	return cube + (double)(oc * k) * (double)dtype_size(dt) / c->ddr_bpc;
}

/* Whether composing Conv a into Conv b (composable) is faster under mode m. */
static int pays(const struct ir_graph *g, const struct chip *c, enum ir_mode m,
		const struct ir_op *a, const struct ir_op *b)
{
	const struct ir_tensor *w1 = &g->tensors[a->in[1]], *y = &g->tensors[b->out[0]];
	enum ir_dtype dt = m == MODE_INT8 ? DT_I8 : lower_float_dtype(m);
	int64_t k1 = w1->shape[1] * w1->shape[2] * w1->shape[3], oc1 = w1->shape[0];
	int64_t oc2 = y->shape[1];
	double pos = (double)y->shape[0] * (double)y->shape[2] * (double)y->shape[3];
	double two = conv_time(c, dt, pos, oc1, k1) + conv_time(c, dt, pos, oc2, oc1);
	return conv_time(c, dt, pos, oc2, k1) < two;
}

/* Fold Conv ia into Conv ib of g (composable): new weights, ib reading
 * ia's input with ia's window, ia dead. */
static void compose(struct ir_graph *g, int ia, int ib)
{
	const struct ir_op *a = &g->ops[ia];
	int x = a->in[0], tw1 = a->in[1], tb1 = a->n_in > 2 ? a->in[2] : -1;
	int tw2 = g->ops[ib].in[1], tb2 = g->ops[ib].n_in > 2 ? g->ops[ib].in[2] : -1;
	int64_t oc1 = g->tensors[tw1].shape[0], per = tensor_numel(&g->tensors[tw1]) / oc1;
	int64_t oc2 = g->tensors[tw2].shape[0];
	const float *w1 = g->tensors[tw1].data, *w2 = g->tensors[tw2].data;
	const float *b1 = tb1 >= 0 ? g->tensors[tb1].data : NULL;
	const float *b2 = tb2 >= 0 ? g->tensors[tb2].data : NULL;
	float *w = xmalloc(sizeof *w * (size_t)(oc2 * per) + 1);
	float *bias = xmalloc(sizeof *bias * (size_t)oc2 + 1);
	double *acc = xmalloc(sizeof *acc * (size_t)per + 1);
	for (int64_t o = 0; o < oc2; o++) {
		double bs = b2 ? b2[o] : 0;
		memset(acc, 0, sizeof *acc * (size_t)per);
		for (int64_t m = 0; m < oc1; m++) {
			double f = w2[o * oc1 + m];
			for (int64_t e = 0; e < per; e++)
				acc[e] += f * w1[m * per + e];
			if (b1)
				bs += f * b1[m];
		}
		for (int64_t e = 0; e < per; e++)
			w[o * per + e] = (float)acc[e];
		bias[o] = (float)bs;
	}
	int64_t ws[4] = { oc2, g->tensors[tw1].shape[1], g->tensors[tw1].shape[2],
			  g->tensors[tw1].shape[3] };
	char base[512];
	snprintf(base, sizeof base, "%s_composed", g->tensors[tw2].name);
	char *wn = graph_unique_name(g, base, 1);
	int tw = graph_add_weight(g, wn, DT_F32, 4, ws, w);
	snprintf(base, sizeof base, "%s_composed_bias", g->tensors[tw2].name);
	char *bn = graph_unique_name(g, base, 1);
	int tb = graph_add_weight(g, bn, DT_F32, 1, ws, bias);
	FREE_ALL(wn, bn, w, bias, acc);
	/* ib takes ia's window; its own attributes (the activation) stay */
	struct ir_op *b = &g->ops[ib];
	a = &g->ops[ia];
	static const char *const win[] = { "strides", "pads", "dilations" };
	for (int i = 0; i < 3; i++) {
		const struct ir_attr *at = op_attr(a, win[i]);
		if (at)   /* else the default, as b's own (composable) */
			op_set_ints(b, win[i], at->n, at->ints);
	}
	op_set_ints(b, "kernel_shape", 2, ws + 2);
	if (b->n_in < 3) {
		b->in = xrealloc(b->in, sizeof *b->in * 3);
		b->n_in = 3;
	}
	b->in[0] = x;
	b->in[1] = tw;
	b->in[2] = tb;
	g->ops[ia].type = OP_COUNT;
}

int lower_compose(const struct ir_graph *top, const struct chip *c, enum ir_mode m,
		  const char *keep, struct ir_graph **out)
{
	*out = NULL;
	if (!c || m == MODE_F32)
		return 0;
	pass_index_drop();   /* top may have changed in place since the last question */
	/* ib of each pair whose Conv ia folds into it, -1 none; a Conv
	 * folded into one is no second's first */
	int *into = xmalloc(sizeof *into * ((size_t)top->n_ops + 1)), n = 0;
	for (int k = 0; k < top->n_ops; k++) {
		const struct ir_op *a = &top->ops[k];
		into[k] = -1;
		if (a->type != OP_CONV || a->n_out != 1 || a->out[0] < 0)
			continue;
		int b = pass_sole_reader(top, a->out[0], k + 1);
		if (b < 0)
			continue;
		if ((keep && (keep[k] || keep[b])) || !composable(top, a, &top->ops[b]) || !pays(top, c, m, a, &top->ops[b]))
			continue;
		into[k] = b;
		n++;
	}
	if (n) {
		struct ir_graph *g = graph_clone(top);
		/* a chain a -> b -> d composes pairwise from the last: d takes b
		 * first, then b is no longer a reader of a's output (skip a) */
		for (int k = top->n_ops - 1; k >= 0; k--)
			if (into[k] >= 0 && g->ops[into[k]].type == OP_CONV &&
			    g->ops[into[k]].in[0] == g->ops[k].out[0])
				compose(g, k, into[k]);
		graph_compact(g);
		*out = g;
	}
	free(into);
	return n;
}
