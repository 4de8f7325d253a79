/* pass_fuse.c - fused forms of decomposed activations and normalisation:
 *   fuse-gelu       x * 0.5 * (1 + erf(x / sqrt 2)) (any order of the two
 *                   Muls; Div by sqrt 2 or Mul by 1 / sqrt 2) becomes Gelu,
 *                   and 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 *
 *                   x^3))) becomes Gelu with approximate="tanh";
 *   fuse-swish      x * Sigmoid(x) becomes SiLU; x * HardSigmoid(x) with
 *                   alpha 1/6 and beta 1/2, and x * Relu6(x + 3) / 6 (as
 *                   paddle2onnx writes it, the Relu6 a Clip or fused into
 *                   the Add) become HardSwish;
 *   fuse-layernorm  the ReduceMean, Sub, Pow (or Mul), ReduceMean, Add eps,
 *                   Sqrt, Div chain over trailing axes, with an optional
 *                   constant Mul (scale) and Add (bias), becomes
 *                   LayerNormalization.
 * Every intermediate must be used only inside the pattern and not be a graph
 * output; the last op of the pattern becomes the fused op, so the output
 * name survives.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ir/base.h"
#include "passes/passes.h"

/* 1 and *v when tensor t is a one-element f32 weight. */
static int scalar(const struct ir_graph *g, int t, float *v)
{
	const struct ir_tensor *w = t >= 0 ? &g->tensors[t] : NULL;
	if (!w || !w->data || w->dtype != DT_F32 || tensor_numel(w) != 1)
		return 0;
	*v = *(const float *)w->data;
	return 1;
}

static int near(float a, double b)
{
	return fabs(a - b) <= 1e-4 * fabs(b);
}

/* The live op of type t producing tensor x, used once and not a graph
 * output; else -1. */
static int only_use(const struct ir_graph *g, int x, enum op_type t)
{
	int p = pass_producer(g, x);
	if (p < 0 || g->ops[p].type != t || g->ops[p].n_out != 1 || pass_uses(g, x) != 1 ||
	    pass_is_output(g, x))
		return -1;
	return p;
}

/* The live op of type t that is the one reader of tensor x (not a graph
 * output); else -1. */
static int sole_reader(const struct ir_graph *g, int x, enum op_type t)
{
	if (pass_uses(g, x) != 1 || pass_is_output(g, x))
		return -1;
	for (int k = 0; k < g->n_ops; k++) {
		const struct ir_op *op = &g->ops[k];
		if (op->type == OP_COUNT)
			continue;
		for (int j = 0; j < op->n_in; j++)
			if (op->in[j] == x)
				return op->type == t && op->n_out == 1 && !op_int(op, "do_relu", 0) ? k : -1;
	}
	return -1;
}

/* For a binary op: the index (0 or 1) of the input equal to t, else -1. */
static int side(const struct ir_op *op, int t)
{
	return op->n_in == 2 ? op->in[0] == t ? 0 : op->in[1] == t ? 1 : -1 : -1;
}

/* Turn op i into unary `t` of x and mark ops dead[0..n) dead. */
static void become(struct ir_graph *g, int i, enum op_type t, int x, const int *dead, int n)
{
	struct ir_op *op = &g->ops[i];
	op->type = t;
	op->n_in = 1;
	op->in[0] = x;
	for (int k = op->n_attr - 1; k >= 0; k--)
		op_del_attr(op, op->attr[k].name);
	for (int k = 0; k < n; k++)
		g->ops[dead[k]].type = OP_COUNT;
}

/* ---- GELU ---- */

/* If tensor a is (1 + erf(x / sqrt 2)) or (1 + tanh(...)) computed for some
 * x, set *x, *tanh_form and the ops to remove; returns their count or 0. */
static int gelu_inner(const struct ir_graph *g, int a, int *x, int *tanh_form, int *dead)
{
	float c;
	int add = only_use(g, a, OP_ADD);
	if (add < 0)
		return 0;
	const struct ir_op *ad = &g->ops[add];
	int one = scalar(g, ad->in[1], &c) && c == 1.0f ? 1 : scalar(g, ad->in[0], &c) && c == 1.0f ? 0 : -1;
	if (one < 0)
		return 0;
	int f = ad->in[1 - one], n = 0;
	dead[n++] = add;
	int e = only_use(g, f, OP_ERF);
	if (e >= 0) {
		dead[n++] = e;
		int d = only_use(g, g->ops[e].in[0], OP_DIV), m = only_use(g, g->ops[e].in[0], OP_MUL);
		if (d >= 0 && scalar(g, g->ops[d].in[1], &c) && near(c, M_SQRT2)) {
			*x = g->ops[d].in[0];
			dead[n++] = d;
		} else if (m >= 0) {
			const struct ir_op *mo = &g->ops[m];
			int k = scalar(g, mo->in[1], &c) && near(c, M_SQRT1_2) ? 1
				: scalar(g, mo->in[0], &c) && near(c, M_SQRT1_2) ? 0 : -1;
			if (k < 0)
				return 0;
			*x = mo->in[1 - k];
			dead[n++] = m;
		} else {
			return 0;
		}
		*tanh_form = 0;
		return n;
	}
	/* tanh(k * (x + 0.044715 * x^3)), k = sqrt(2 / pi) */
	int th = only_use(g, f, OP_TANH);
	if (th < 0)
		return 0;
	dead[n++] = th;
	int mk = only_use(g, g->ops[th].in[0], OP_MUL);
	if (mk < 0)
		return 0;
	const struct ir_op *mo = &g->ops[mk];
	int k = scalar(g, mo->in[1], &c) && near(c, 0.7978845608) ? 1
		: scalar(g, mo->in[0], &c) && near(c, 0.7978845608) ? 0 : -1;
	if (k < 0)
		return 0;
	dead[n++] = mk;
	int sum = only_use(g, mo->in[1 - k], OP_ADD);
	if (sum < 0)
		return 0;
	dead[n++] = sum;
	const struct ir_op *so = &g->ops[sum];
	for (int j = 0; j < 2; j++) {
		int cm = only_use(g, so->in[j], OP_MUL);
		if (cm < 0)
			continue;
		const struct ir_op *co = &g->ops[cm];
		int q = scalar(g, co->in[1], &c) && near(c, 0.044715) ? 1
			: scalar(g, co->in[0], &c) && near(c, 0.044715) ? 0 : -1;
		if (q < 0)
			continue;
		int pw = only_use(g, co->in[1 - q], OP_POW);
		if (pw < 0 || !scalar(g, g->ops[pw].in[1], &c) || c != 3.0f || g->ops[pw].in[0] != so->in[1 - j])
			continue;
		*x = so->in[1 - j];
		dead[n++] = cm;
		dead[n++] = pw;
		*tanh_form = 1;
		return n;
	}
	return 0;
}

static int gelu_pattern(struct ir_graph *g, int i)
{
	const struct ir_op *op = &g->ops[i];
	int dead[16], x, tf, n;
	float c;
	if (op->type != OP_MUL || op->n_in != 2 || op_int(op, "do_relu", 0))
		return 0;
	/* (A) Mul(Mul(x, inner), 0.5) and (B) Mul(Mul(x, 0.5), inner) */
	int h = scalar(g, op->in[1], &c) && c == 0.5f ? 1 : scalar(g, op->in[0], &c) && c == 0.5f ? 0 : -1;
	if (h >= 0) {
		int m = only_use(g, op->in[1 - h], OP_MUL);
		if (m < 0)
			return 0;
		for (int j = 0; j < 2; j++) {
			n = gelu_inner(g, g->ops[m].in[j], &x, &tf, dead);
			if (n && g->ops[m].in[1 - j] == x) {
				dead[n++] = m;
				become(g, i, OP_GELU, x, dead, n);
				op_set_str(&g->ops[i], "approximate", tf ? "tanh" : "none");
				return 1;
			}
		}
		return 0;
	}
	for (int j = 0; j < 2; j++) {
		n = gelu_inner(g, op->in[j], &x, &tf, dead);
		if (!n)
			continue;
		int m = only_use(g, op->in[1 - j], OP_MUL);
		if (m < 0)
			continue;
		const struct ir_op *mo = &g->ops[m];
		int k = scalar(g, mo->in[1], &c) && c == 0.5f ? 1 : scalar(g, mo->in[0], &c) && c == 0.5f ? 0 : -1;
		if (k < 0 || mo->in[1 - k] != x)
			continue;
		dead[n++] = m;
		become(g, i, OP_GELU, x, dead, n);
		op_set_str(&g->ops[i], "approximate", tf ? "tanh" : "none");
		return 1;
	}
	return 0;
}

int pass_fuse_gelu(struct ir_graph *g)
{
	static const pattern_fn pats[] = { gelu_pattern };
	return rewrite_run(g, "fuse-gelu", pats, 1);
}

/* ---- SiLU, HardSwish ---- */

/* x * Relu6(x + 3) / 6 (Div by 6 or Mul by 1/6) into HardSwish. */
static int relu6_swish(struct ir_graph *g, int i)
{
	const struct ir_op *op = &g->ops[i];
	float c;
	int k = -1, dead[3], n = 0;
	if (op->type == OP_DIV && scalar(g, op->in[1], &c) && c == 6.0f)
		k = 1;
	else if (op->type == OP_MUL)
		k = scalar(g, op->in[1], &c) && near(c, 1.0 / 6) ? 1
		    : scalar(g, op->in[0], &c) && near(c, 1.0 / 6) ? 0 : -1;
	if (k < 0 || op_int(op, "do_relu", 0))
		return 0;
	int m = only_use(g, op->in[1 - k], OP_MUL);
	if (m < 0 || op_int(&g->ops[m], "do_relu", 0))
		return 0;
	dead[n++] = m;
	for (int j = 0; j < 2; j++) {
		int x = g->ops[m].in[1 - j], a = g->ops[m].in[j];
		int cl = only_use(g, a, OP_CLIP), add;
		if (cl >= 0) {
			if (op_float(&g->ops[cl], "min", -1) != 0 || op_float(&g->ops[cl], "max", 0) != 6)
				continue;
			add = only_use(g, g->ops[cl].in[0], OP_ADD);
			if (add < 0 || op_int(&g->ops[add], "do_relu", 0))
				continue;
			dead[n++] = cl;
		} else {
			add = only_use(g, a, OP_ADD);
			if (add < 0 || !op_int(&g->ops[add], "do_relu", 0) ||
			    op_float(&g->ops[add], "relu_limit", 0) != 6)
				continue;
		}
		const struct ir_op *ao = &g->ops[add];
		int q = side(ao, x);
		if (q < 0 || !scalar(g, ao->in[1 - q], &c) || c != 3.0f) {
			n = 1;
			continue;
		}
		dead[n++] = add;
		become(g, i, OP_HARDSWISH, x, dead, n);
		return 1;
	}
	return 0;
}

enum op_type pass_swish_of(const struct ir_op *act)
{
	if (act->type == OP_SIGMOID)
		return OP_SILU;
	if (act->type == OP_HARDSIGMOID && near((float)op_float(act, "alpha", 0.2), 1.0 / 6) &&
	    op_float(act, "beta", 0.5) == 0.5)
		return OP_HARDSWISH;
	return OP_COUNT;
}

static int swish_pattern(struct ir_graph *g, int i)
{
	const struct ir_op *op = &g->ops[i];
	if (relu6_swish(g, i))
		return 1;
	if (op->type != OP_MUL || op->n_in != 2 || op_int(op, "do_relu", 0))
		return 0;
	for (int j = 0; j < 2; j++) {
		int s = only_use(g, op->in[j], OP_SIGMOID);
		if (s < 0)
			s = only_use(g, op->in[j], OP_HARDSIGMOID);
		enum op_type t = s < 0 ? OP_COUNT : pass_swish_of(&g->ops[s]);
		if (t == OP_COUNT || g->ops[s].in[0] != op->in[1 - j])
			continue;
		become(g, i, t, op->in[1 - j], &s, 1);
		return 1;
	}
	return 0;
}

int pass_fuse_swish(struct ir_graph *g)
{
	static const pattern_fn pats[] = { swish_pattern };
	return rewrite_run(g, "fuse-swish", pats, 1);
}

/* ---- LayerNorm ---- */

/* The first reduced axis when op reduces exactly axes [a, rank) with
 * keepdims, else -1. */
static int trailing_axes(const struct ir_graph *g, const struct ir_op *op)
{
	int64_t axes[IR_MAX_RANK];
	int r = g->tensors[op->in[0]].rank, n = op_ints(op, "axes", axes, IR_MAX_RANK);
	if (op->type != OP_REDUCEMEAN || !op_int(op, "keepdims", 1) || n < 1)
		return -1;
	for (int k = 0; k < n; k++)
		if ((axes[k] < 0 ? axes[k] + r : axes[k]) != r - n + k)
			return -1;
	return r - n;
}

/* Constant input of op i other than tensor t with numel 1 or norm: its
 * index, else -1. */
static int const_other(const struct ir_graph *g, int i, int t, int64_t norm)
{
	const struct ir_op *op = &g->ops[i];
	int j = side(op, t);
	if (j < 0)
		return -1;
	const struct ir_tensor *w = &g->tensors[op->in[1 - j]];
	if (!w->data || w->dtype != DT_F32 || (tensor_numel(w) != norm && tensor_numel(w) != 1) ||
	    w->rank > g->tensors[t].rank)
		return -1;
	/* The constant must broadcast along the normalised axes only. */
	for (int d = 0; d < w->rank; d++)
		if (w->shape[w->rank - 1 - d] != 1 &&
		    w->shape[w->rank - 1 - d] != g->tensors[t].shape[g->tensors[t].rank - 1 - d])
			return -1;
	if (tensor_numel(w) == norm && norm > 1) {
		int64_t inner = 1;
		for (int d = 0; d < w->rank && inner < norm; d++)
			inner *= g->tensors[t].shape[g->tensors[t].rank - 1 - d];
		if (inner != norm)
			return -1;
	}
	return op->in[1 - j];
}

static int layernorm_pattern(struct ir_graph *g, int i)
{
	const struct ir_op *div = &g->ops[i];
	float c;
	int dead[8], n = 0;
	if (div->type != OP_DIV || div->n_in != 2)
		return 0;
	int d = div->in[0], sq = only_use(g, div->in[1], OP_SQRT);
	int sub = pass_producer(g, d);
	if (sq < 0 || sub < 0 || g->ops[sub].type != OP_SUB || pass_is_output(g, d))
		return 0;
	int add = only_use(g, g->ops[sq].in[0], OP_ADD);
	if (add < 0)
		return 0;
	const struct ir_op *ao = &g->ops[add];
	int e = scalar(g, ao->in[1], &c) ? 1 : scalar(g, ao->in[0], &c) ? 0 : -1;
	if (e < 0 || !(c >= 0))
		return 0;
	double eps = c;
	int rm2 = only_use(g, ao->in[1 - e], OP_REDUCEMEAN);
	if (rm2 < 0)
		return 0;
	int sqr = pass_producer(g, g->ops[rm2].in[0]);
	if (sqr < 0 || pass_uses(g, g->ops[rm2].in[0]) != 1 || pass_is_output(g, g->ops[rm2].in[0]))
		return 0;
	const struct ir_op *so = &g->ops[sqr];
	if (!((so->type == OP_POW && so->in[0] == d && scalar(g, so->in[1], &c) && c == 2.0f) ||
	      (so->type == OP_MUL && so->in[0] == d && so->in[1] == d)))
		return 0;
	const struct ir_op *su = &g->ops[sub];
	int x = su->in[0], rm1 = only_use(g, su->in[1], OP_REDUCEMEAN);
	if (rm1 < 0 || g->ops[rm1].in[0] != x || pass_uses(g, d) != 2 + (so->type == OP_MUL))
		return 0;
	int axis = trailing_axes(g, &g->ops[rm1]);
	if (axis < 0 || axis != trailing_axes(g, &g->ops[rm2]))
		return 0;
	const struct ir_tensor *xt = &g->tensors[x];
	int64_t norm = 1;
	for (int k = axis; k < xt->rank; k++)
		norm *= xt->shape[k];
	dead[n++] = rm1, dead[n++] = sub, dead[n++] = sqr, dead[n++] = rm2, dead[n++] = add, dead[n++] = sq;
	/* Optional scale and bias. */
	int last = i, y = div->out[0], scale = -1, bias = -1;
	int m = sole_reader(g, y, OP_MUL);
	if (m >= 0 && (scale = const_other(g, m, y, norm)) >= 0) {
		dead[n++] = last;
		last = m;
		y = g->ops[m].out[0];
		int a = sole_reader(g, y, OP_ADD);
		if (a >= 0 && (bias = const_other(g, a, y, norm)) >= 0) {
			dead[n++] = last;
			last = a;
		}
	} else {
		scale = -1;
	}
	if (scale < 0) {
		scale = pass_add_weight(g, "layernorm_scale", 1, &(int64_t){ 1 });
		*(float *)g->tensors[scale].data = 1.0f;
	}
	/* The fused op keeps the last op's slot and output. */
	struct ir_op *op = &g->ops[last];
	int in[3] = { x, scale, bias };
	op->type = OP_LAYERNORM;
	op_set_inputs(op, bias >= 0 ? 3 : 2, in);
	for (int k = op->n_attr - 1; k >= 0; k--)
		op_del_attr(op, op->attr[k].name);
	op_set_int(op, "axis", axis);
	op_set_float(op, "epsilon", eps);
	for (int k = 0; k < n; k++)
		g->ops[dead[k]].type = OP_COUNT;
	return 1;
}

int pass_fuse_layernorm(struct ir_graph *g)
{
	static const pattern_fn pats[] = { layernorm_pattern };
	return rewrite_run(g, "fuse-layernorm", pats, 1);
}
