/* pass_fold_bn.c - fold-bn: BatchNormalization becomes Scale,
 *   y = x * s[c] + t[c],  s = gamma / sqrt(var + epsilon),  t = beta - mean * s,
 * and a Scale whose input is used only by it and comes from a Conv folds
 * into that conv: w'[o] = w[o] * s[o], b'[o] = b[o] * s[o] + t[o] (a zero
 * bias is added when the conv has none); the same into a ConvTranspose,
 * whose weight holds output channel o's taps across its rows.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ir/base.h"
#include "passes/passes.h"

/* Input idx of op as n f32 constants, or NULL. */
static const float *const_f32(const struct ir_graph *g, const struct ir_op *op, int idx, int64_t n)
{
	if (idx >= op->n_in || op->in[idx] < 0)
		return NULL;
	const struct ir_tensor *t = &g->tensors[op->in[idx]];
	return t->data && t->dtype == DT_F32 && tensor_numel(t) == n ? t->data : NULL;
}

static int bn_to_scale(struct ir_graph *g, int i)
{
	const struct ir_op *op = &g->ops[i];
	if (op->type != OP_BATCHNORM || op->n_in != 5)
		return 0;
	const struct ir_tensor *x = &g->tensors[op->in[0]];
	if (x->rank < 2)
		return 0;
	int64_t c = x->shape[1];
	const float *gamma = const_f32(g, op, 1, c), *beta = const_f32(g, op, 2, c);
	const float *mean = const_f32(g, op, 3, c), *var = const_f32(g, op, 4, c);
	if (!gamma || !beta || !mean || !var)
		return 0;
	double eps = op_float(op, "epsilon", 1e-5);
	float *s, *t;
	pass_make_scale(g, i, g->ops[i].in[0], c, &s, &t);
	for (int64_t k = 0; k < c; k++) {
		double sk = gamma[k] / sqrt((double)var[k] + eps);
		s[k] = (float)sk;
		t[k] = (float)(beta[k] - mean[k] * sk);
	}
	op_del_attr(&g->ops[i], "epsilon");
	return 1;
}

static int scale_into_conv(struct ir_graph *g, int i)
{
	const struct ir_op *sc = &g->ops[i];
	if (sc->type != OP_SCALE || sc->n_in != 3)
		return 0;
	int x = sc->in[0], p = pass_producer(g, x);
	if (p < 0 || (g->ops[p].type != OP_CONV && g->ops[p].type != OP_CONVTRANSPOSE) ||
	    g->ops[p].n_out != 1 || pass_uses(g, x) != 1 || op_int(&g->ops[p], "do_relu", 0))
		return 0;
	const struct ir_tensor *w = &g->tensors[g->ops[p].in[1]];
	if (!w->data || w->dtype != DT_F32 || w->rank != 4)
		return 0;
	/* Conv [C_out, C_in/group, KH, KW]; ConvTranspose [C_in, C_out/group,
	 * KH, KW], output channel o = (c / (C_in/group)) * cog + j of row c */
	int deconv = g->ops[p].type == OP_CONVTRANSPOSE;
	int64_t grp = deconv ? op_int(&g->ops[p], "group", 1) : 1;
	if (grp < 1 || w->shape[0] % grp)
		return 0;
	int64_t cog = w->shape[1], cig = w->shape[0] / grp, kk = w->shape[2] * w->shape[3];
	int64_t m = deconv ? cog * grp : w->shape[0], per = tensor_numel(w) / w->shape[0];
	const float *s = const_f32(g, sc, 1, m), *t = const_f32(g, sc, 2, m);
	int has_bias = g->ops[p].n_in > 2 && g->ops[p].in[2] >= 0;
	if (!s || !t || (has_bias && !const_f32(g, &g->ops[p], 2, m)))
		return 0;

	float *wd = pass_weight_mut(g, p, 1);
	for (int64_t r = 0; r < w->shape[0]; r++)
		for (int64_t k = 0; k < per; k++)
			wd[r * per + k] *= s[deconv ? r / cig * cog + k / kk : r];
	if (!has_bias) {
		char base[512];
		snprintf(base, sizeof base, "%s_bias", g->ops[p].name);
		int tb = pass_add_weight(g, base, 1, &m);
		struct ir_op *cv = &g->ops[p];
		if (cv->n_in < 3) {
			cv->in = xrealloc(cv->in, 3 * sizeof *cv->in);
			cv->n_in = 3;
		}
		cv->in[2] = tb;
	}
	float *bd = pass_weight_mut(g, p, 2);
	for (int64_t o = 0; o < m; o++)
		bd[o] = bd[o] * s[o] + t[o];
	g->ops[p].out[0] = g->ops[i].out[0];
	g->ops[i].type = OP_COUNT;
	return 1;
}

int pass_fold_bn(struct ir_graph *g)
{
	static const pattern_fn pats[] = { bn_to_scale, scale_into_conv };
	return rewrite_run(g, "fold-bn", pats, 2);
}
