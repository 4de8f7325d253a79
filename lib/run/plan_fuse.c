/* plan_fuse.c - the ops a primitive of the plan computes after its
 * own (lib/run/plan_mem.h): activations, one-input elementwise ops, GELU,
 * swish and hard-swish subgraphs (found by top-opt's matcher,
 * lib/passes/match_act.c), binary ops with a weight and one Add of
 * an earlier tensor, as oneDNN post-ops.
 */
#include <stdlib.h>
#include <float.h>
#include <math.h>
#include <string.h>

#include <dnnl.h>

#include "ir/base.h"
#include "run/dnnl_util.h"
#include "run/plan_fuse.h"
#include "run/plan_mem.h"
#include "ir/op.h"
#include "passes/match_act.h"
#include "passes/rewrite.h"

static int po_add(struct postops *po, int sum, dnnl_alg_kind_t alg, float a, float b)
{
	if (po->n == PO_MAX)
		return 0;
	po->e[po->n].sum = sum;
	po->e[po->n].alg = alg;
	po->e[po->n].a = a;
	po->e[po->n].b = b;
	po->e[po->n].t = -1;
	po->n++;
	return 1;
}

/* The op's fused activation (do_relu, relu_limit > 0 the upper bound). */
int po_act(struct postops *po, const struct ir_op *op)
{
	if (!op_int(op, "do_relu", 0))
		return 1;
	double lim = op_float(op, "relu_limit", 0);
	return lim > 0 ? po_add(po, 0, dnnl_eltwise_clip, 0.0f, (float)lim) :
			 po_add(po, 0, dnnl_eltwise_relu, 0.0f, 0.0f);
}

/* The function of a one-input elementwise op (then its activation) as
 * eltwise post-ops; 0 when oneDNN has no such function. */
static int po_unary(struct postops *po, const struct ir_op *op)
{
	float a = (float)op_float(op, "alpha", op->type == OP_HARDSIGMOID ? 0.2 :
				  op->type == OP_LEAKYRELU ? 0.01 : 1.0);
	int ok;
	switch (op->type) {
	case OP_RELU: ok = po_add(po, 0, dnnl_eltwise_relu, 0, 0); break;
	case OP_CLIP: {
		float lo = (float)op_float(op, "min", -FLT_MAX), hi = (float)op_float(op, "max", FLT_MAX);
		if (!(lo <= hi) || lo == -INFINITY || hi == INFINITY)
			return 0;
		ok = po_add(po, 0, dnnl_eltwise_clip, lo, hi);
		break;
	}
	case OP_SIGMOID: ok = po_add(po, 0, dnnl_eltwise_logistic, 0, 0); break;
	case OP_TANH: ok = po_add(po, 0, dnnl_eltwise_tanh, 0, 0); break;
	case OP_EXP: ok = po_add(po, 0, dnnl_eltwise_exp, 0, 0); break;
	case OP_LOG: ok = po_add(po, 0, dnnl_eltwise_log, 0, 0); break;
	case OP_SQRT: ok = po_add(po, 0, dnnl_eltwise_sqrt, 0, 0); break;
	case OP_ABS: ok = po_add(po, 0, dnnl_eltwise_abs, 0, 0); break;
	case OP_NEG: ok = po_add(po, 0, dnnl_eltwise_linear, -1, 0); break;
	case OP_HARDSWISH: ok = po_add(po, 0, dnnl_eltwise_hardswish, 0, 0); break;
	case OP_SILU: ok = po_add(po, 0, dnnl_eltwise_swish, 1, 0); break;
	case OP_GELU:
		ok = po_add(po, 0, strcmp(op_str(op, "approximate", "none"), "tanh") ?
			    dnnl_eltwise_gelu_erf : dnnl_eltwise_gelu_tanh, 0, 0);
		break;
	case OP_LEAKYRELU: ok = po_add(po, 0, dnnl_eltwise_relu, a, 0); break;
	case OP_ELU: ok = po_add(po, 0, dnnl_eltwise_elu, a, 0); break;
	case OP_HARDSIGMOID:
		ok = po_add(po, 0, dnnl_eltwise_linear, a, (float)op_float(op, "beta", 0.5)) &&
		     po_add(po, 0, dnnl_eltwise_clip, 0, 1);
		break;
	default: return 0;
	}
	return ok && po_act(po, op);
}

/* po_unary, and Pow by a constant 2 (a square, as its kernel computes it). */
int po_fold(const struct ir_graph *g, const struct ir_op *op, struct postops *po)
{
	if (op->type != OP_POW)
		return op->n_in == 1 && po_unary(po, op);
	if (op->n_in != 2 || op->in[1] < 0 || !g->tensors[op->in[1]].data ||
	    g->tensors[op->in[1]].dtype != DT_F32 || tensor_numel(&g->tensors[op->in[1]]) != 1 ||
	    ((const float *)g->tensors[op->in[1]].data)[0] != 2.0f)
		return 0;
	return po_add(po, 0, dnnl_eltwise_square, 0, 0) && po_act(po, op);
}

dnnl_primitive_attr_t po_attr(const struct postops *po)
{
	dnnl_primitive_attr_t attr;
	dnnl_post_ops_t ops;
	if (dnnl_primitive_attr_create(&attr) != dnnl_success)
		return NULL;
	if (dnnl_post_ops_create(&ops) != dnnl_success) {
		dnnl_primitive_attr_destroy(attr);
		return NULL;
	}
	int bad = 0;
	for (int i = 0; i < po->n; i++)
		bad |= (po->e[i].sum == 1 ? dnnl_post_ops_append_sum(ops, 1.0f) :
			po->e[i].sum == 2 ? dnnl_post_ops_append_binary(ops, po->e[i].alg,
									&po->e[i].md) :
			dnnl_post_ops_append_eltwise(ops, 1.0f, po->e[i].alg, po->e[i].a,
						     po->e[i].b)) != dnnl_success;
	bad |= dnnl_primitive_attr_set_post_ops(attr, ops) != dnnl_success;
	dnnl_post_ops_destroy(ops);
	if (bad) {
		dnnl_primitive_attr_destroy(attr);
		return NULL;
	}
	return attr;
}

/* The ops that read tensor t after op `after` (at most max, distinct),
 * their count (max + 1 when there are more), or -1 when t is a graph
 * output. */
/* The ops reading each tensor of the graph being planned, in op order
 * (each op once), between fuse_readers_begin() and _end(): readers() asks
 * for every op, and a scan of the ops after it made planning quadratic in
 * the graph's length. */
static const struct ir_graph *rx_g;
static int *rx_start, *rx_ops;

void fuse_readers_begin(const struct ir_graph *g)
{
	fuse_readers_end();
	pass_index_drop();   /* the matcher's index (lib/passes/rewrite.h) starts afresh */
	int *count = xcalloc((size_t)g->n_tensors + 1, sizeof *count);
	int total = 0;
	for (int i = 0; i < g->n_ops; i++)
		for (int j = 0; j < g->ops[i].n_in; j++) {
			int t = g->ops[i].in[j], seen = 0;
			for (int k = 0; k < j; k++)
				seen |= g->ops[i].in[k] == t;
			if (t >= 0 && !seen) {
				count[t]++;
				total++;
			}
		}
	rx_start = xmalloc(sizeof *rx_start * ((size_t)g->n_tensors + 2));
	rx_ops = xmalloc(sizeof *rx_ops * ((size_t)total + 1));
	rx_start[0] = 0;
	for (int t = 0; t < g->n_tensors; t++) {
		rx_start[t + 1] = rx_start[t] + count[t];
		count[t] = rx_start[t];
	}
	for (int i = 0; i < g->n_ops; i++)
		for (int j = 0; j < g->ops[i].n_in; j++) {
			int t = g->ops[i].in[j], seen = 0;
			for (int k = 0; k < j; k++)
				seen |= g->ops[i].in[k] == t;
			if (t >= 0 && !seen)
				rx_ops[count[t]++] = i;
		}
	free(count);
	rx_g = g;
}

void fuse_readers_end(void)
{
	free(rx_start);
	free(rx_ops);
	rx_start = rx_ops = NULL;
	rx_g = NULL;
}

/* The ops after AFTER that read T, at most MAX of them in OPS; MAX + 1 when
 * there are more, -1 when T is a graph output. */
static int readers(const struct ir_graph *g, int t, int after, int *ops, int max)
{
	for (int i = 0; i < g->n_outputs; i++)
		if (g->outputs[i] == t)
			return -1;
	int n = 0;
	if (g == rx_g) {
		for (int k = rx_start[t]; k < rx_start[t + 1]; k++) {
			if (rx_ops[k] <= after)
				continue;
			if (n == max)
				return max + 1;
			ops[n++] = rx_ops[k];
		}
		return n;
	}
	for (int i = after + 1; i < g->n_ops; i++)
		for (int j = 0; j < g->ops[i].n_in; j++)
			if (g->ops[i].in[j] == t) {
				if (n == max)
					return max + 1;
				ops[n++] = i;
				break;
			}
	return n;
}

/* Op o as a binary post-op after tensor cur (the dst): Add, Mul, Sub or
 * Div of cur (first for Sub and Div) and an f32 weight that broadcasts to
 * cur's shape.  0 when it is not one. */
static int po_binary(const struct ir_graph *g, const struct ir_op *o, int cur, struct postops *po)
{
	const struct ir_tensor *ct = &g->tensors[cur];
	if (o->n_in != 2 || o->n_out != 1 || po->n == PO_MAX || ct->rank < 1 ||
	    !(o->type == OP_ADD || o->type == OP_MUL || o->type == OP_SUB || o->type == OP_DIV) ||
	    (o->in[0] != cur && (o->type == OP_SUB || o->type == OP_DIV)) || o->in[0] == o->in[1])
		return 0;
	int w = o->in[0] == cur ? o->in[1] : o->in[0];
	if (w < 0 || !g->tensors[w].data || g->tensors[w].dtype != DT_F32 ||
	    g->tensors[w].rank > ct->rank || !same_shape(ct, &g->tensors[o->out[0]]))
		return 0;
	const struct ir_tensor *wt = &g->tensors[w];
	dnnl_dims_t d, st;
	int off = ct->rank - wt->rank;
	for (int i = 0; i < ct->rank; i++) {
		d[i] = i < off ? 1 : wt->shape[i - off];
		if (d[i] != 1 && d[i] != ct->shape[i])
			return 0;
	}
	dnnl_dense_strides(ct->rank, d, st);
	dnnl_memory_desc_init_by_strides(&po->e[po->n].md, ct->rank, d, dnnl_f32, st);
	po->e[po->n].sum = 2;
	po->e[po->n].alg = o->type == OP_ADD ? dnnl_binary_add : o->type == OP_MUL ?
			   dnnl_binary_mul : o->type == OP_SUB ? dnnl_binary_sub : dnnl_binary_div;
	po->e[po->n].t = w;
	po->n++;
	return po_act(po, o);
}

/* The decomposed activation (lib/passes/match_act.h: GELU, SiLU,
 * HardSwish) applied to tensor cur, whose readers are the two ops rd: the
 * op that ends it is one of them or the one reader of one of them.  Sets
 * *m and returns the index of that op, or -1. */
static int chain_act(const struct ir_graph *g, int cur, const int *rd, struct act_match *m)
{
	for (int k = 0; k < 4; k++) {
		int last = rd[k / 2], next;
		if (k % 2) {
			const struct ir_op *r = &g->ops[last];
			if (r->n_out != 1 || readers(g, r->out[0], last, &next, 1) != 1)
				continue;
			last = next;
		}
		if (g->ops[last].n_out != 1 || !match_act(g, last, m) || m->x != cur)
			continue;
		/* both readers of cur belong to the pattern */
		int in = 0;
		for (int j = 0; j < 2; j++) {
			int hit = rd[j] == last;
			for (int i = 0; i < m->n; i++)
				hit |= m->ops[i] == rd[j];
			in += hit;
		}
		if (in == 2)
			return last;
	}
	return -1;
}

/* 1 for a Sigmoid that writes a graph output: its kernel saturates to
 * exactly 0 and 1 as onnxruntime does, oneDNN's logistic does not, and a
 * saturated probability is what a user compares. */
int plan_exact_output(const struct ir_graph *g, const struct ir_op *op)
{
	if (op->type != OP_SIGMOID)
		return 0;
	for (int i = 0; i < g->n_outputs; i++)
		if (g->outputs[i] == op->out[0])
			return 1;
	return 0;
}

/* The chain of op opi (struct chain): its post-ops, the ops they take
 * and the tensor it writes. */
void chain_build(const struct plan *p, int opi, int fuse, int sum,
		 const struct postops *init, struct chain *c)
{
	const struct ir_graph *g = p->g;
	int cur = g->ops[opi].out[0];
	memset(c, 0, sizeof *c);
	c->sum_src = c->sum_op = -1;
	if (init)
		c->po = *init;
	else
		po_act(&c->po, &g->ops[opi]);
	while (fuse && c->nskip < PO_MAX - 2) {
		int rd[2], n = readers(g, cur, opi, rd, 2);
		const struct ir_tensor *ct = &g->tensors[cur];
		struct postops po = c->po;
		int unary = n == 1 && g->ops[rd[0]].n_out == 1 && g->ops[rd[0]].in[0] == cur &&
			    same_shape(ct, &g->tensors[g->ops[rd[0]].out[0]]) &&
			    !plan_exact_output(g, &g->ops[rd[0]]);
		if (unary && !po_fold(g, &g->ops[rd[0]], &po)) {
			unary = 0;
			po = c->po;
		}
		struct act_match am;
		int act = n == 2 ? chain_act(g, cur, rd, &am) : -1;
		if (act >= 0 && c->nskip + am.n + 1 > PO_MAX)
			break;
		if (unary) {
			c->skip[c->nskip++] = rd[0];
			cur = g->ops[rd[0]].out[0];
		} else if (act >= 0) {
			dnnl_alg_kind_t alg = am.type == OP_SILU ? dnnl_eltwise_swish :
					      am.type == OP_HARDSWISH ? dnnl_eltwise_hardswish :
					      am.tanh ? dnnl_eltwise_gelu_tanh : dnnl_eltwise_gelu_erf;
			if (!same_shape(ct, &g->tensors[g->ops[act].out[0]]) ||
			    !po_add(&po, 0, alg, am.type == OP_SILU ? 1 : 0, 0) || !po_act(&po, &g->ops[act]))
				break;
			for (int i = 0; i < am.n; i++)
				c->skip[c->nskip++] = am.ops[i];
			c->skip[c->nskip++] = act;
			cur = g->ops[act].out[0];
		} else if (n == 1 && po_binary(g, &g->ops[rd[0]], cur, &po)) {
			c->skip[c->nskip++] = rd[0];
			cur = g->ops[rd[0]].out[0];
		} else if (n == 1 && sum && c->sum_src < 0 && g->ops[rd[0]].type == OP_ADD &&
			   g->ops[rd[0]].n_in == 2 && g->ops[rd[0]].n_out == 1) {
			const struct ir_op *add = &g->ops[rd[0]];
			int r = add->in[0] == cur ? add->in[1] : add->in[0];
			if (add->in[0] == add->in[1] || !is_act(g, r) || p->t[r].n == 0 ||
			    !same_shape(ct, &g->tensors[r]) ||
			    !same_shape(ct, &g->tensors[add->out[0]]) ||
			    !po_add(&po, 1, dnnl_alg_kind_undef, 0, 0) || !po_act(&po, add))
				break;
			c->sum_src = r;
			c->sum_op = rd[0];
			c->skip[c->nskip++] = rd[0];
			cur = add->out[0];
		} else {
			break;
		}
		c->po = po;
	}
	c->out = cur;
}

/* Append to args the weights of the chain's binary post-ops (memories over
 * their data, kept by the plan); returns the new count, -1 on error. */
int chain_args(struct plan *p, const struct chain *c, dnnl_exec_arg_t *args, int n)
{
	for (int i = 0; i < c->po.n; i++) {
		if (c->po.e[i].sum != 2)
			continue;
		dnnl_memory_t m;
		if (n == PLAN_ARGS)
			return err_set("too many post-op arguments");
		if (dnnl_memory_create(&m, &c->po.e[i].md, p->eng,
				       p->g->tensors[c->po.e[i].t].data) != dnnl_success)
			return err_set("oneDNN: cannot create memory");
		plan_keep_mem(p, m);
		args[n++] = (dnnl_exec_arg_t){ DNNL_ARG_ATTR_MULTIPLE_POST_OP(i) | DNNL_ARG_SRC_1, m };
	}
	return n;
}

/* Mark the ops of a chain as done by the primitive. */
void chain_take(struct plan *p, const struct chain *c)
{
	for (int i = 0; i < c->nskip; i++)
		p->skip[c->skip[i]] = 1;
}
