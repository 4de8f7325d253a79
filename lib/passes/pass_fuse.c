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
 *                   constant Mul (scale) and an optional constant Add
 *                   (bias), becomes LayerNormalization.
 * The activations are found by lib/passes/match_act.c, the matcher the
 * interpreter's post-ops use too.  Every intermediate must be used only
 * inside the pattern and not be a graph output; the last op of the pattern becomes the fused op, so the output
 * name survives.
 */
#include <stdlib.h>
#include <string.h>

#include "ir/base.h"
#include "passes/match_act.h"
#include "passes/passes.h"

/* The live op of type t that is the one reader of tensor x (not a graph
 * output); else -1. */
static int sole_reader(const struct ir_graph *g, int x, enum op_type t)
{
	int k = pass_sole_reader(g, x, 0);
	const struct ir_op *op = k >= 0 ? &g->ops[k] : NULL;
	return op && op->type == t && op->n_out == 1 && !op_int(op, "do_relu", 0) ? k : -1;
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

/* ---- GELU, SiLU, HardSwish: lib/passes/match_act.c finds them ---- */

static int act_pattern(struct ir_graph *g, int i, int (*match)(const struct ir_graph *, int,
							       struct act_match *))
{
	struct act_match m;
	if (op_int(&g->ops[i], "do_relu", 0) || !match(g, i, &m))
		return 0;
	become(g, i, m.type, m.x, m.ops, m.n);
	if (m.type == OP_GELU)
		op_set_str(&g->ops[i], "approximate", m.tanh ? "tanh" : "none");
	return 1;
}

static int gelu_pattern(struct ir_graph *g, int i)
{
	return act_pattern(g, i, match_gelu);
}

int pass_fuse_gelu(struct ir_graph *g)
{
	static const pattern_fn pats[] = { gelu_pattern };
	return rewrite_run(g, "fuse-gelu", pats, 1);
}

static int swish_pattern(struct ir_graph *g, int i)
{
	return act_pattern(g, i, match_swish);
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
	int j = match_side(op, t);
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
	int d = div->in[0], sq = match_only_use(g, div->in[1], OP_SQRT);
	int sub = pass_producer(g, d);
	if (sq < 0 || sub < 0 || g->ops[sub].type != OP_SUB || pass_is_output(g, d))
		return 0;
	int add = match_only_use(g, g->ops[sq].in[0], OP_ADD);
	if (add < 0)
		return 0;
	const struct ir_op *ao = &g->ops[add];
	int e = match_scalar(g, ao->in[1], &c) ? 1 : match_scalar(g, ao->in[0], &c) ? 0 : -1;
	if (e < 0 || !(c >= 0))
		return 0;
	double eps = c;
	int rm2 = match_only_use(g, ao->in[1 - e], OP_REDUCEMEAN);
	if (rm2 < 0)
		return 0;
	int sqr = pass_producer(g, g->ops[rm2].in[0]);
	if (sqr < 0 || pass_uses(g, g->ops[rm2].in[0]) != 1 || pass_is_output(g, g->ops[rm2].in[0]))
		return 0;
	const struct ir_op *so = &g->ops[sqr];
	if (!((so->type == OP_POW && so->in[0] == d && match_scalar(g, so->in[1], &c) && c == 2.0f) ||
	      (so->type == OP_MUL && so->in[0] == d && so->in[1] == d)))
		return 0;
	const struct ir_op *su = &g->ops[sub];
	int x = su->in[0], rm1 = match_only_use(g, su->in[1], OP_REDUCEMEAN);
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
	/* Optional scale and bias; a bias without a scale too (a scale of
	 * ones, which remove-identity took away before). */
	int last = i, y = div->out[0], scale = -1, bias = -1;
	int m = sole_reader(g, y, OP_MUL);
	if (m >= 0 && (scale = const_other(g, m, y, norm)) >= 0) {
		dead[n++] = last;
		last = m;
		y = g->ops[m].out[0];
	} else {
		scale = -1;
	}
	int a = sole_reader(g, y, OP_ADD);
	if (a >= 0 && (bias = const_other(g, a, y, norm)) >= 0) {
		dead[n++] = last;
		last = a;
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
