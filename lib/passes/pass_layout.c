/* pass_layout.c - merge-layout: data-movement chains collapse.
 *   Transpose(Transpose(x, p1), p2) becomes one Transpose of the composed
 *   permutation; a Transpose of the identity permutation goes;
 *   a chain of Reshape, Flatten, Squeeze and Unsqueeze becomes one Reshape
 *   to the last shape, removed when that is x's shape;
 *   a Transpose that moves only dimensions of size 1 (the others keep their
 *   order: [1,197,256] -> [197,1,256]) moves no data and becomes a Reshape,
 *   which then merges with the views around it.
 * The inner op must have no other reader and not be a graph output.
 */
#include <string.h>

#include "passes/passes.h"

static int is_view(enum op_type t)
{
	return t == OP_RESHAPE || t == OP_FLATTEN || t == OP_SQUEEZE || t == OP_UNSQUEEZE;
}

/* The producer of op i's input 0 when it is of a type `want` accepts and
 * only op i reads its output; else -1. */
static int inner_op(const struct ir_graph *g, int i, int (*want)(enum op_type))
{
	int x = g->ops[i].in[0], p = pass_producer(g, x);
	if (p < 0 || !want(g->ops[p].type) || g->ops[p].n_out != 1 || pass_uses(g, x) != 1 ||
	    pass_is_output(g, x))
		return -1;
	return p;
}

static int is_transpose(enum op_type t)
{
	return t == OP_TRANSPOSE;
}

static int same_shape(const struct ir_tensor *a, const struct ir_tensor *b)
{
	/* a dynamic extent's shape[] is a bound or 1, not the extent */
	return !a->dyn && !b->dyn && a->rank == b->rank && !memcmp(a->shape, b->shape, sizeof(int64_t) * (size_t)a->rank);
}

static void clear_attrs(struct ir_op *op)
{
	for (int k = op->n_attr - 1; k >= 0; k--)
		op_del_attr(op, op->attr[k].name);
}

/* Does permutation p (rank r) of x keep the order of x's dimensions of
 * size other than 1?  Then the transpose is a reshape. */
static int moves_units_only(const struct ir_tensor *x, const int64_t *p, int r)
{
	int64_t last = -1;
	for (int d = 0; d < r; d++) {
		if (p[d] < 0 || p[d] >= x->rank)
			return 0;
		if (x->shape[p[d]] == 1 && !(x->dyn >> p[d] & 1))
			continue;
		if (p[d] < last)
			return 0;
		last = p[d];
	}
	return 1;
}

static int layout_pattern(struct ir_graph *g, int i)
{
	struct ir_op *op = &g->ops[i];
	if (op->n_in < 1 || op->n_out != 1 || op->in[0] < 0)
		return 0;
	if (op->type == OP_TRANSPOSE) {
		int64_t p1[IR_MAX_RANK], p2[IR_MAX_RANK], p[IR_MAX_RANK];
		int r = op_ints(op, "perm", p2, IR_MAX_RANK), ident = 1;
		for (int d = 0; d < r; d++)
			ident &= p2[d] == d;
		if (ident)
			return pass_bypass(g, i);
		const struct ir_tensor *x = &g->tensors[op->in[0]], *y = &g->tensors[op->out[0]];
		if (r == x->rank && !y->dyn && moves_units_only(x, p2, r)) {
			op->type = OP_RESHAPE;
			clear_attrs(op);
			op_set_ints(op, "shape", y->rank, y->shape);
			return 1;
		}
		int q = inner_op(g, i, is_transpose);
		if (q < 0 || op_ints(&g->ops[q], "perm", p1, IR_MAX_RANK) != r)
			return 0;
		/* y[d] = t[p2[d]] = x[p1[p2[d]]] */
		for (int d = 0; d < r; d++) {
			p[d] = p1[p2[d]];
			ident &= p[d] == d;
		}
		op->in[0] = g->ops[q].in[0];
		g->ops[q].type = OP_COUNT;
		op_set_ints(op, "perm", r, p);
		if (ident)
			pass_bypass(g, i);
		return 1;
	}
	if (is_view(op->type)) {
		/* a view of a view becomes one Reshape to the output's shape:
		 * not when that shape is known only at run time */
		const struct ir_tensor *y = &g->tensors[op->out[0]];
		int q = y->dyn ? -1 : inner_op(g, i, is_view);
		if (q < 0)
			return 0;
		op->in[0] = g->ops[q].in[0];
		g->ops[q].type = OP_COUNT;
		op->type = OP_RESHAPE;
		clear_attrs(op);
		op_set_ints(op, "shape", y->rank, y->shape);
		if (same_shape(&g->tensors[op->in[0]], y))
			pass_bypass(g, i);
		return 1;
	}
	return 0;
}

int pass_merge_layout(struct ir_graph *g)
{
	static const pattern_fn pats[] = { layout_pattern };
	return rewrite_run(g, "merge-layout", pats, 1);
}
