/* match_act.c - the one matcher of decomposed GELU, SiLU and HardSwish
 * (lib/passes/match_act.h), shared by top-opt's fuse-gelu and fuse-swish
 * and by the interpreter's oneDNN post-ops.
 */
#include "passes/match_act.h"

#include <math.h>
#include <string.h>

#include "ir/base.h"
#include "passes/rewrite.h"

int match_scalar(const struct ir_graph *g, int t, float *v)
{
	const struct ir_tensor *w = t >= 0 ? &g->tensors[t] : NULL;
	if (!w || !w->data || w->dtype != DT_F32 || tensor_numel(w) != 1)
		return 0;
	*v = *(const float *)w->data;
	return 1;
}

int match_near(float a, double b)
{
	return fabs(a - b) <= 1e-4 * fabs(b);
}

int match_only_use(const struct ir_graph *g, int x, enum op_type t)
{
	int p = pass_producer(g, x);
	if (p < 0 || g->ops[p].type != t || g->ops[p].n_out != 1 || pass_uses(g, x) != 1 ||
	    pass_is_output(g, x))
		return -1;
	return p;
}

int match_side(const struct ir_op *op, int t)
{
	return op->n_in == 2 ? op->in[0] == t ? 0 : op->in[1] == t ? 1 : -1 : -1;
}

/* The index (0 or 1) of the input of two-input op o that is a scalar
 * weight near v (exactly v when exact), else -1. */
static int const_side(const struct ir_graph *g, const struct ir_op *o, double v, int exact)
{
	float c;
	for (int k = 1; k >= 0 && o->n_in == 2; k--)
		if (match_scalar(g, o->in[k], &c) && (exact ? c == (float)v : match_near(c, v)))
			return k;
	return -1;
}

int match_plain_use(const struct ir_graph *g, int x, enum op_type t)
{
	int p = match_only_use(g, x, t);
	return p >= 0 && !op_int(&g->ops[p], "do_relu", 0) ? p : -1;
}

static int found(struct act_match *m, enum op_type t, int x)
{
	m->type = t;
	m->x = x;
	return 1;
}

/* ---- GELU ---- */

/* If tensor a is (1 + erf(x / sqrt 2)) or (1 + tanh(...)) of some x, set
 * m->x, m->tanh and append the ops to m->ops; else 0. */
static int gelu_inner(const struct ir_graph *g, int a, struct act_match *m)
{
	float c;
	int add = match_plain_use(g, a, OP_ADD), k;
	if (add < 0 || (k = const_side(g, &g->ops[add], 1.0, 1)) < 0)
		return 0;
	int f = g->ops[add].in[1 - k];
	m->ops[m->n++] = add;
	int e = match_plain_use(g, f, OP_ERF);
	if (e >= 0) {
		m->ops[m->n++] = e;
		int d = match_plain_use(g, g->ops[e].in[0], OP_DIV), mu = match_plain_use(g, g->ops[e].in[0], OP_MUL);
		if (d >= 0 && match_scalar(g, g->ops[d].in[1], &c) && match_near(c, M_SQRT2)) {
			m->x = g->ops[d].in[0];
			m->ops[m->n++] = d;
		} else if (mu >= 0 && (k = const_side(g, &g->ops[mu], M_SQRT1_2, 0)) >= 0) {
			m->x = g->ops[mu].in[1 - k];
			m->ops[m->n++] = mu;
		} else {
			return 0;
		}
		m->tanh = 0;
		return 1;
	}
	/* tanh(k * (x + 0.044715 * x^3)), k = sqrt(2 / pi) */
	int th = match_plain_use(g, f, OP_TANH);
	if (th < 0)
		return 0;
	m->ops[m->n++] = th;
	int mk = match_plain_use(g, g->ops[th].in[0], OP_MUL);
	if (mk < 0 || (k = const_side(g, &g->ops[mk], 0.7978845608, 0)) < 0)
		return 0;
	m->ops[m->n++] = mk;
	int sum = match_plain_use(g, g->ops[mk].in[1 - k], OP_ADD);
	if (sum < 0)
		return 0;
	m->ops[m->n++] = sum;
	const struct ir_op *so = &g->ops[sum];
	for (int j = 0; j < 2; j++) {
		int cm = match_plain_use(g, so->in[j], OP_MUL), q;
		if (cm < 0 || (q = const_side(g, &g->ops[cm], 0.044715, 0)) < 0)
			continue;
		int pw = match_plain_use(g, g->ops[cm].in[1 - q], OP_POW);
		if (pw < 0 || !match_scalar(g, g->ops[pw].in[1], &c) || c != 3.0f ||
		    g->ops[pw].in[0] != so->in[1 - j])
			continue;
		m->x = so->in[1 - j];
		m->ops[m->n++] = cm;
		m->ops[m->n++] = pw;
		m->tanh = 1;
		return 1;
	}
	return 0;
}

int match_gelu(const struct ir_graph *g, int last, struct act_match *m)
{
	const struct ir_op *op = &g->ops[last];
	if (op->type != OP_MUL || op->n_in != 2)
		return 0;
	/* (A) Mul(Mul(x, inner), 0.5) and (B) Mul(Mul(x, 0.5), inner) */
	int h = const_side(g, op, 0.5, 1);
	if (h >= 0) {
		int mu = match_plain_use(g, op->in[1 - h], OP_MUL);
		if (mu < 0)
			return 0;
		for (int j = 0; j < 2; j++) {
			m->n = 0;
			if (gelu_inner(g, g->ops[mu].in[j], m) && g->ops[mu].in[1 - j] == m->x) {
				m->ops[m->n++] = mu;
				return found(m, OP_GELU, m->x);
			}
		}
		return 0;
	}
	for (int j = 0; j < 2; j++) {
		m->n = 0;
		if (!gelu_inner(g, op->in[j], m))
			continue;
		int mu = match_plain_use(g, op->in[1 - j], OP_MUL), k;
		if (mu < 0 || (k = const_side(g, &g->ops[mu], 0.5, 1)) < 0 || g->ops[mu].in[1 - k] != m->x)
			continue;
		m->ops[m->n++] = mu;
		return found(m, OP_GELU, m->x);
	}
	return 0;
}

/* ---- SiLU, HardSwish ---- */

/* The fused op x * ACT(x) is: SiLU for a Sigmoid, HardSwish for a
 * HardSigmoid of alpha 1/6 and beta 1/2, else OP_COUNT. */
static enum op_type swish_of(const struct ir_op *act)
{
	if (act->type == OP_SIGMOID)
		return OP_SILU;
	if (act->type == OP_HARDSIGMOID && match_near((float)op_float(act, "alpha", 0.2), 1.0 / 6) &&
	    op_float(act, "beta", 0.5) == 0.5)
		return OP_HARDSWISH;
	return OP_COUNT;
}

/* x * Relu6(x + 3) / 6 (Div by 6 or Mul by 1/6), as paddle2onnx writes
 * HardSwish. */
static int relu6_swish(const struct ir_graph *g, int last, struct act_match *m)
{
	const struct ir_op *op = &g->ops[last];
	float c;
	int k = -1;
	if (op->type == OP_DIV && match_scalar(g, op->in[1], &c) && c == 6.0f)
		k = 1;
	else if (op->type == OP_MUL)
		k = const_side(g, op, 1.0 / 6, 0);
	if (k < 0)
		return 0;
	int mu = match_plain_use(g, op->in[1 - k], OP_MUL);
	if (mu < 0)
		return 0;
	for (int j = 0; j < 2; j++) {
		int x = g->ops[mu].in[1 - j], a = g->ops[mu].in[j];
		int cl = match_only_use(g, a, OP_CLIP), add;
		m->n = 0;
		m->ops[m->n++] = mu;
		if (cl >= 0) {
			if (op_float(&g->ops[cl], "min", -1) != 0 || op_float(&g->ops[cl], "max", 0) != 6 ||
			    (add = match_plain_use(g, g->ops[cl].in[0], OP_ADD)) < 0)
				continue;
			m->ops[m->n++] = cl;
		} else {
			add = match_only_use(g, a, OP_ADD);
			if (add < 0 || !op_int(&g->ops[add], "do_relu", 0) ||
			    op_float(&g->ops[add], "relu_limit", 0) != 6)
				continue;
		}
		const struct ir_op *ao = &g->ops[add];
		int q = match_side(ao, x);
		if (q < 0 || !match_scalar(g, ao->in[1 - q], &c) || c != 3.0f)
			continue;
		m->ops[m->n++] = add;
		return found(m, OP_HARDSWISH, x);
	}
	return 0;
}

int match_swish(const struct ir_graph *g, int last, struct act_match *m)
{
	const struct ir_op *op = &g->ops[last];
	m->tanh = 0;
	if (relu6_swish(g, last, m))
		return 1;
	if (op->type != OP_MUL || op->n_in != 2)
		return 0;
	for (int j = 0; j < 2; j++) {
		int s = match_plain_use(g, op->in[j], OP_SIGMOID);
		if (s < 0)
			s = match_plain_use(g, op->in[j], OP_HARDSIGMOID);
		enum op_type t = s < 0 ? OP_COUNT : swish_of(&g->ops[s]);
		if (t == OP_COUNT || g->ops[s].in[0] != op->in[1 - j])
			continue;
		m->n = 1;
		m->ops[0] = s;
		return found(m, t, op->in[1 - j]);
	}
	return 0;
}

int match_act(const struct ir_graph *g, int last, struct act_match *m)
{
	return match_gelu(g, last, m) || match_swish(g, last, m);
}
