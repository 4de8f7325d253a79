/* pass_fold_affine.c - fold-affine: a Mul or Add of a constant after a
 * Conv or Gemm (whose output nothing else reads) goes into its parameters.
 *   Conv: a constant with one value, or one per output channel (shape
 *   [C,1,1], [1,C,1,1] ...), becomes a Scale (x * s + 0, or x * 1 + a) that
 *   fold-bn, run after this pass, folds into the conv's weight and bias;
 *   a further constant Mul or Add after such a Scale merges into it.
 *   Gemm: a constant of one value or one per output column ([N], [1,N])
 *   scales B's columns and C (Mul), or adds to C (Add; C gains it, beta
 *   becomes 1).
 *   Any other producer: a constant Mul then a constant Add on a 4-D
 *   tensor, each of one value or one per channel (x * a + b, as PaddleOCR's
 *   learnable affine blocks after each activation write it), become one
 *   Scale, so the pair costs one op (and one requantisation in INT8).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/base.h"
#include "passes/match_act.h"
#include "passes/passes.h"

/* The constant operand of binary op i whose other operand is t: its values
 * broadcast along axis `axis` of t only (1 or t->shape[axis] values).
 * Returns the tensor index, else -1. */
static int per_axis_const(const struct ir_graph *g, int i, int t, int axis)
{
	const struct ir_op *op = &g->ops[i];
	if (op->n_in != 2 || op->n_out != 1 || op_int(op, "do_relu", 0))
		return -1;
	int j = op->in[0] == t ? 1 : op->in[1] == t ? 0 : -1;
	if (j < 0 || op->in[0] == op->in[1])
		return -1;
	const struct ir_tensor *c = &g->tensors[op->in[j]], *x = &g->tensors[t];
	if (!c->data || c->dtype != DT_F32 || c->rank > x->rank)
		return -1;
	for (int d = 0; d < c->rank; d++) {
		int xd = x->rank - c->rank + d;
		if (c->shape[d] != 1 && (xd != axis || c->shape[d] != x->shape[axis]))
			return -1;
	}
	return op->in[j];
}

/* Value k of constant c, which holds 1 or n values. */
static float cval(const struct ir_tensor *c, int64_t k)
{
	return ((const float *)c->data)[tensor_numel(c) == 1 ? 0 : k];
}

/* Mul or Add op i of a per-channel constant after a Scale: into the Scale. */
static int scale_pattern(struct ir_graph *g, int i, int y, int p)
{
	if (g->ops[p].n_in != 3 || op_int(&g->ops[p], "do_relu", 0))
		return 0;
	int c = per_axis_const(g, i, y, 1);
	if (c < 0)
		return 0;
	int64_t ch = g->tensors[y].shape[1];
	int mul = g->ops[i].type == OP_MUL;
	float *sv = pass_weight_mut(g, p, 1), *bv = pass_weight_mut(g, p, 2);
	if (!sv || !bv)
		return 0;
	const struct ir_tensor *ct = &g->tensors[c];
	for (int64_t k = 0; k < ch; k++) {
		if (mul) {
			sv[k] *= cval(ct, k);
			bv[k] *= cval(ct, k);
		} else {
			bv[k] += cval(ct, k);
		}
	}
	g->ops[p].out[0] = g->ops[i].out[0];
	g->ops[i].type = OP_COUNT;
	return 1;
}

/* 1 when op is a Mul or Add of two inputs: the affine step folded here. */
static int is_affine_step(const struct ir_op *op)
{
	return (op->type == OP_MUL || op->type == OP_ADD) && op->n_in == 2;
}

/* The op of type t and rank `rank` producing input s of affine step i, read
 * only there and with no fused activation, when the other input is a
 * constant along axis 1 (*c); else -1. */
static int affine_input(const struct ir_graph *g, int i, int s, enum op_type t, int rank, int *c)
{
	int y = g->ops[i].in[s], p = match_plain_use(g, y, t);
	if (p < 0 || g->tensors[y].rank != rank)
		return -1;
	*c = per_axis_const(g, i, y, 1);
	return *c < 0 ? -1 : p;
}

static int conv_pattern(struct ir_graph *g, int i)
{
	const struct ir_op *op = &g->ops[i];
	if (!is_affine_step(op))
		return 0;
	for (int s = 0; s < 2; s++) {
		int y0 = op->in[s], p0 = match_only_use(g, y0, OP_SCALE);
		if (p0 >= 0 && g->tensors[y0].rank >= 2 && scale_pattern(g, i, y0, p0))
			return 1;
	}
	for (int s = 0; s < 2; s++) {
		int c, y = op->in[s];
		if (affine_input(g, i, s, OP_CONV, 4, &c) < 0)
			continue;
		int64_t ch = g->tensors[y].shape[1];
		int mul = g->ops[i].type == OP_MUL;
		float *sv, *bv;
		pass_make_scale(g, i, y, ch, &sv, &bv);
		const struct ir_tensor *ct = &g->tensors[c];   /* after: the table may move */
		for (int64_t k = 0; k < ch; k++) {
			sv[k] = mul ? cval(ct, k) : 1.0f;
			bv[k] = mul ? 0.0f : cval(ct, k);
		}
		return 1;
	}
	return 0;
}

/* Op i as y * a[k] + b[k] along axis 1 of its non-constant input y (the
 * other input a constant of 1 or C values): Add, Sub (either side), Mul,
 * or Div by the constant (as a product by its reciprocal, which must be
 * finite).  Fills a and b (ch values each) and returns y, else -1. */
static int affine_step(const struct ir_graph *g, int i, int64_t ch, float *a, float *b)
{
	const struct ir_op *op = &g->ops[i];
	if ((op->type != OP_ADD && op->type != OP_SUB && op->type != OP_MUL && op->type != OP_DIV) ||
	    op->n_in != 2)
		return -1;
	for (int s = 0; s < 2; s++) {
		int y = op->in[s], c = g->tensors[y].data ? -1 : per_axis_const(g, i, y, 1);
		if (c < 0 || g->tensors[y].rank != 4 || g->tensors[y].shape[1] != ch ||
		    (op->type == OP_DIV && s != 0))
			continue;
		const struct ir_tensor *ct = &g->tensors[c];
		for (int64_t k = 0; k < ch; k++) {
			float v = cval(ct, k);
			switch (op->type) {
			case OP_ADD: a[k] = 1.0f; b[k] = v; break;
			case OP_SUB: a[k] = s ? -1.0f : 1.0f; b[k] = s ? v : -v; break;
			case OP_MUL: a[k] = v; b[k] = 0.0f; break;
			default:     a[k] = 1.0f / v; b[k] = 0.0f; break;
			}
			if (!isfinite(a[k]) || !isfinite(b[k]))
				return -1;
		}
		return y;
	}
	return -1;
}

/* A chain of constant Add, Sub, Mul and Div steps along axis 1 of a 4-D
 * tensor whose result only a Conv reads (an image network's input
 * normalisation, (x - mean) / std; one step alone only on the network's
 * input): one Scale, which fold-bn then folds
 * into the conv where that is exact (no padding, or no shift), so the
 * chain costs one op on the chip, or none.  Op i is the chain's last step. */
static int chain_pattern(struct ir_graph *g, int i)
{
	const struct ir_op *op = &g->ops[i];
	if (op->n_out != 1 || op->n_in != 2 || op_int(op, "do_relu", 0) || g->tensors[op->out[0]].rank != 4)
		return 0;
	int out = op->out[0], r = pass_sole_reader(g, out, i + 1);
	if (r < 0 || g->ops[r].type != OP_CONV || g->ops[r].in[0] != out)
		return 0;
	int64_t ch = g->tensors[out].shape[1];
	if (ch <= 0)
		return 0;
	float *s = xmalloc(sizeof(float) * 4 * (size_t)ch), *t = s + ch, *a = t + ch, *b = a + ch;
	int y = affine_step(g, i, ch, s, t), steps = 1;
	/* the steps folded, killed once the walk is over: the index then
	 * still holds the graph the walk asks about (each step's input read
	 * by that step alone), and pass_kill keeps it true after */
	int *gone = NULL, cap = 0;
	/* walk back through steps whose result only the next step reads (an
	 * acyclic graph's chain holds fewer steps than it has ops) */
	for (int p; y >= 0 && steps <= g->n_ops && (p = pass_producer(g, y)) >= 0 &&
		    pass_uses(g, y) == 1 && !pass_is_output(g, y) && g->ops[p].n_out == 1 &&
		    !op_int(&g->ops[p], "do_relu", 0);) {
		int x = affine_step(g, p, ch, a, b);
		if (x < 0)
			break;
		for (int64_t k = 0; k < ch; k++) {   /* s (a y + b) + t */
			t[k] = s[k] * b[k] + t[k];
			s[k] *= a[k];
		}
		grow_array((void **)&gone, &cap, steps, sizeof *gone);
		gone[steps - 1] = p;
		y = x;
		steps++;
	}
	/* one step alone only on the network's input (x / 255): inside a
	 * network a lone constant step before a conv may be the end of an
	 * activation fuse-swish or fuse-gelu matches later (HardSwish's / 6) */
	if (y < 0 || (steps == 1 && !pass_is_input(g, y))) {
		FREE_ALL(s, gone);
		return 0;
	}
	for (int k = 0; k < steps - 1; k++)
		pass_kill(g, gone[k]);
	float *sv, *bv;
	pass_make_scale(g, i, y, ch, &sv, &bv);
	memcpy(sv, s, sizeof(float) * (size_t)ch);
	memcpy(bv, t, sizeof(float) * (size_t)ch);
	FREE_ALL(s, gone);
	pass_index_kept();
	return 1;
}

/* Add(Mul(y, a), b), constants along axis 1 of a 4-D y: Scale(y, a, b). */
static int mul_add_pattern(struct ir_graph *g, int i)
{
	const struct ir_op *op = &g->ops[i];
	if (op->type != OP_ADD || !is_affine_step(op))
		return 0;
	for (int s = 0; s < 2; s++) {
		int m = op->in[s], p = match_plain_use(g, m, OP_MUL);
		if (p < 0 || g->tensors[m].rank != 4 || g->ops[p].n_in != 2)
			continue;
		int b = per_axis_const(g, i, m, 1);
		int y = g->tensors[g->ops[p].in[0]].data ? g->ops[p].in[1] : g->ops[p].in[0];
		if (b < 0 || g->tensors[y].data || g->tensors[y].rank != 4)
			continue;
		int a = per_axis_const(g, p, y, 1);
		if (a < 0)
			continue;
		int64_t ch = g->tensors[y].shape[1];
		float *sv, *bv;
		pass_make_scale(g, i, y, ch, &sv, &bv);
		for (int64_t k = 0; k < ch; k++) {
			sv[k] = cval(&g->tensors[a], k);
			bv[k] = cval(&g->tensors[b], k);
		}
		pass_kill(g, p);
		pass_index_kept();
		return 1;
	}
	return 0;
}

static int gemm_pattern(struct ir_graph *g, int i)
{
	const struct ir_op *op = &g->ops[i];
	if (!is_affine_step(op))
		return 0;
	for (int s = 0; s < 2; s++) {
		int c, y = op->in[s], p = affine_input(g, i, s, OP_GEMM, 2, &c);
		if (p < 0)
			continue;
		const struct ir_op *gm = &g->ops[p];
		const struct ir_tensor *b = &g->tensors[gm->in[1]];
		int has_c = gm->n_in > 2 && gm->in[2] >= 0;
		int64_t n = g->tensors[y].shape[1], m = g->tensors[y].shape[0];
		if (!b->data || b->dtype != DT_F32 || b->rank != 2)
			continue;
		if (has_c) {
			const struct ir_tensor *ct = &g->tensors[gm->in[2]];
			int64_t cn = tensor_numel(ct);
			if (!ct->data || ct->dtype != DT_F32 || (cn != 1 && cn != n) || (cn == n && n > 1 && m > 1 &&
			    ct->rank == 2 && ct->shape[0] != 1))
				continue;
		}
		int mul = g->ops[i].type == OP_MUL;
		double beta = op_float(gm, "beta", 1.0);
		/* New C [N] = beta * C * s, or beta * C + a. */
		char base[512];
		snprintf(base, sizeof base, "%s_c", g->ops[p].name);
		int tc = pass_add_weight(g, base, 1, &n);
		float *cv = g->tensors[tc].data;
		const struct ir_tensor *k = &g->tensors[c];
		for (int64_t j = 0; j < n; j++) {
			float old = has_c ? (float)beta * cval(&g->tensors[gm->in[2]], j) : 0.0f;
			cv[j] = mul ? old * cval(k, j) : old + cval(k, j);
		}
		if (mul) {
			float *bd = pass_weight_mut(g, p, 1);
			b = &g->tensors[g->ops[p].in[1]];
			int tb = (int)op_int(&g->ops[p], "transB", 0);
			int64_t kk = tb ? b->shape[1] : b->shape[0];
			for (int64_t r = 0; r < kk; r++)
				for (int64_t j = 0; j < n; j++)
					bd[tb ? j * kk + r : r * n + j] *= cval(&g->tensors[c], j);
		}
		struct ir_op *go = &g->ops[p];
		if (go->n_in < 3)
			go->in = xrealloc(go->in, 3 * sizeof *go->in);
		go->n_in = 3;
		go->in[2] = tc;
		op_set_float(go, "beta", 1.0);
		go->out[0] = g->ops[i].out[0];
		g->ops[i].type = OP_COUNT;
		return 1;
	}
	return 0;
}

int pass_fold_affine(struct ir_graph *g)
{
	static const pattern_fn pats[] = { conv_pattern, gemm_pattern, mul_add_pattern, chain_pattern };
	return rewrite_run(g, "fold-affine", pats, 4);
}
