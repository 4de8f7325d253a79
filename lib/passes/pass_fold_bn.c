/* pass_fold_bn.c - fold-bn: BatchNormalization becomes Scale,
 *   y = x * s[c] + t[c],  s = gamma / sqrt(var + epsilon),  t = beta - mean * s,
 * and a Scale whose input is used only by it and comes from a Conv (2-D or
 * 3-D) folds into that conv: w'[o] = w[o] * s[o], b'[o] = b[o] * s[o] + t[o] (a zero
 * bias is added when the conv has none); the same into a ConvTranspose,
 * whose weight holds output channel o's taps across its rows.
 * A Scale whose output only a Conv reads folds into that conv too, forward:
 * w'[o][c] = w[o][c] * s[c], b'[o] = b[o] + sum over c, taps of w[o][c] t[c],
 * exact when the conv pads nothing or t is zero (the padding, 0 after the
 * Scale, stays 0 before it); else, when s and t are one value each (s not
 * 0), the Scale becomes a Pad by -t / s, the value it maps to 0, and the
 * conv pads nothing.  PaddleOCR's learnable affine after each
 * activation so costs no op, and in INT8 no requantisation between the
 * activation's table and the conv.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
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
	int deconv = g->ops[p].type == OP_CONVTRANSPOSE;
	if (!w->data || w->dtype != DT_F32 || (w->rank != 4 && (deconv || w->rank != 5)))
		return 0;
	/* Conv [C_out, C_in/group, KH, KW] (or 3-D: [.., KD, KH, KW]);
	 * ConvTranspose [C_in, C_out/group, KH, KW], output channel
	 * o = (c / (C_in/group)) * cog + j of row c */
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
	float *bd = pass_bias_mut(g, p, m);
	for (int64_t o = 0; o < m; o++)
		bd[o] = bd[o] * s[o] + t[o];
	g->ops[p].out[0] = g->ops[i].out[0];
	g->ops[i].type = OP_COUNT;
	return 1;
}

/* 1 if conv OP pads nothing (pads absent or all zero, no auto_pad). */
static int pads_nothing(const struct ir_op *op)
{
	int64_t p[2 * IR_MAX_RANK];
	int n = op_ints(op, "pads", p, 2 * IR_MAX_RANK);
	const char *ap = op_str(op, "auto_pad", NULL);
	if (n > 2 * IR_MAX_RANK || (ap && strcmp(ap, "NOTSET")))
		return 0;
	for (int k = 0; k < n; k++)
		if (p[k])
			return 0;
	return 1;
}

/* Conv I whose input is a Scale that nothing else reads: the Scale goes
 * into the conv's weight and bias (the file's comment). */
static int scale_into_next_conv(struct ir_graph *g, int i)
{
	const struct ir_op *cv = &g->ops[i];
	if (cv->type != OP_CONV || cv->n_in < 2 || cv->n_out != 1 || cv->in[0] < 0)
		return 0;
	int x = cv->in[0], p = pass_producer(g, x);
	if (p < 0 || g->ops[p].type != OP_SCALE || g->ops[p].n_in != 3 || g->ops[p].n_out != 1 ||
	    op_int(&g->ops[p], "do_relu", 0) || pass_uses(g, x) != 1 || pass_is_output(g, x))
		return 0;
	const struct ir_tensor *w = &g->tensors[cv->in[1]], *xt = &g->tensors[x];
	if (!w->data || w->dtype != DT_F32 || w->rank < 3 || xt->rank != w->rank || xt->dyn)
		return 0;
	int64_t m = w->shape[0], ic = xt->shape[1], cg = w->shape[1];
	int64_t group = op_int(cv, "group", 1);
	if (m <= 0 || cg <= 0 || group <= 0 || cg * group != ic || m % group)
		return 0;
	const float *s = const_f32(g, &g->ops[p], 1, ic), *t = const_f32(g, &g->ops[p], 2, ic);
	int has_bias = cv->n_in > 2 && cv->in[2] >= 0;
	if (!s || !t || (has_bias && !const_f32(g, cv, 2, m)))
		return 0;
	int shifts = 0, uniform = 1;
	for (int64_t c = 0; c < ic; c++) {
		shifts |= t[c] != 0;
		uniform &= s[c] == s[0] && t[c] == t[0];
	}
	/* a conv that pads: the padding must stay 0 after the Scale, so the
	 * Scale becomes a Pad by the value it maps to 0 (one value: the same
	 * s and t on every channel, s not 0) and the conv pads no more */
	int r = xt->rank, sp = r - 2;
	int64_t cp[2 * IR_MAX_RANK], pp[2 * IR_MAX_RANK] = { 0 };
	int to_pad = shifts && !pads_nothing(cv);
	float fill = to_pad && s[0] != 0 ? -t[0] / s[0] : 0;
	if (to_pad && (!uniform || !isfinite(fill) || op_ints(cv, "pads", cp, 2 * IR_MAX_RANK) != 2 * sp))
		return 0;

	int64_t taps = tensor_numel(w) / (m * cg), per_group = m / group;
	double *shift = xcalloc((size_t)m + 1, sizeof *shift);
	float *wd = pass_weight_mut(g, i, 1);
	for (int64_t o = 0; o < m; o++)
		for (int64_t k = 0; k < cg; k++) {
			int64_t c = o / per_group * cg + k;
			float *row = wd + (o * cg + k) * taps;
			for (int64_t q = 0; q < taps; q++) {
				shift[o] += (double)row[q] * t[c];
				row[q] *= s[c];
			}
		}
	if (shifts || has_bias) {
		float *bd = pass_bias_mut(g, i, m);
		for (int64_t o = 0; o < m; o++)
			bd[o] = (float)(bd[o] + shift[o]);
	}
	free(shift);
	if (to_pad) {
		struct ir_op *pad = &g->ops[p];
		for (int d = 0; d < sp; d++) {
			pp[2 + d] = cp[d];
			pp[r + 2 + d] = cp[sp + d];
			cp[d] = cp[sp + d] = 0;
		}
		op_set_ints(&g->ops[i], "pads", 2 * sp, cp);
		pad->type = OP_PAD;
		pad->n_in = 1;
		op_set_str(pad, "mode", "constant");
		op_set_float(pad, "value", fill);
		op_set_ints(pad, "pads", 2 * r, pp);
	} else {
		g->ops[i].in[0] = g->ops[p].in[0];
		g->ops[p].type = OP_COUNT;
	}
	pass_index_drop();
	return 1;
}

int pass_fold_bn(struct ir_graph *g)
{
	static const pattern_fn pats[] = { bn_to_scale, scale_into_conv, scale_into_next_conv };
	return rewrite_run(g, "fold-bn", pats, 3);
}
