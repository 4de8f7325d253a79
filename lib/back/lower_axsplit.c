/* lower_axsplit.c - an op too large for local memory split along one of
 * its output axes (lib/back/lower_axsplit.h).
 *
 * Codegen cuts an op along H and into chunks of output channels, but keeps
 * every other axis whole in a lane: an op over many images or windows (a
 * Swin block's [64, 3, 49, 32]), a Transpose that moves axis 0, a
 * reduction or a normalisation whose kept axes are long may not fit
 * however its rows are cut.  Each op says, by its rule (op_def.split_axis,
 * asked through op_split_axis), along which output axes its elements are
 * computed independently and which input axis each part reads: the same
 * axis of an elementwise op's operands as they broadcast, the permuted
 * axis of a Transpose's input, the kept axes of a reduction, the batch of
 * a Conv.  The op becomes P ops over consecutive parts of that axis: a
 * Slice of each input cut with it (a part of a weight), the op on the
 * part, and a Concat of the results along the axis.  Each element is
 * computed from the same values as before, so the bits are the same.
 *
 * Of the axes an op can be cut along, the outermost where one element
 * fits is taken: its parts are the largest blocks of consecutive memory,
 * which the Slices and the Concat copy in the fewest pieces.  The largest
 * part that fits is found by bisection on codegen's own fit test
 * (fitting is monotone in the part's size), run on the part's shapes
 * without touching the graph (split_fits); the parts are then made even.
 */
#include <stdlib.h>
#include <string.h>

#include "back/lower_axsplit.h"
#include "ir/base.h"
#include "ir/op.h"

/* Whether op i fits with `part` elements of output axis ax (and of input
 * axes in_ax) in place of the whole. */
static int part_fits(const struct ir_graph *g, int i, const struct chip *c, int ax,
		     const int *in_ax, int64_t part)
{
	const struct ir_op *op = &g->ops[i];
	int n = op->n_in + op->n_out;
	int64_t(*shape)[IR_MAX_RANK] = xmalloc(sizeof *shape * (size_t)(n + 1));
	const int64_t **ptr = xcalloc((size_t)n + 1, sizeof *ptr);
	for (int j = 0; j < n; j++) {
		int t = j < op->n_in ? op->in[j] : op->out[j - op->n_in];
		int a = j < op->n_in ? in_ax[j] : ax;
		if (t < 0 || a < 0)
			continue;
		memcpy(shape[j], g->tensors[t].shape, sizeof shape[j]);
		shape[j][a] = part;
		ptr[j] = shape[j];
	}
	int ok = split_fits(g, c, i, ptr) == 1;
	free(ptr);
	free(shape);
	return ok;
}

/* The largest part of axis ax that fits, 0 when one element does not. */
static int64_t largest_part(const struct ir_graph *g, int i, const struct chip *c, int ax,
			    const int *in_ax)
{
	int64_t lo = 1, hi = g->tensors[g->ops[i].out[0]].shape[ax];   /* lo fits, hi does not */
	if (!part_fits(g, i, c, ax, in_ax, 1))
		return 0;
	while (hi - lo > 1) {
		int64_t mid = lo + (hi - lo) / 2;
		if (part_fits(g, i, c, ax, in_ax, mid))
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/* Attributes of a part op that spell its output's shape (Resize's sizes,
 * Expand's shape, aligned with the output's last axis) take the part's
 * extent along ax (an Expand's 1, a broadcast, stays). */
static void part_attrs(struct ir_graph *g, int k, int ax, int64_t len)
{
	struct ir_op *o = &g->ops[k];
	const char *name = o->type == OP_RESIZE ? "sizes" : o->type == OP_EXPAND ? "shape" : NULL;
	const struct ir_attr *a = name ? op_attr(o, name) : NULL;
	int at = a ? ax - (g->tensors[o->out[0]].rank - a->n) : -1;
	if (!a || a->kind != ATTR_INTS || at < 0 || at >= a->n || a->ints[at] == 1)
		return;
	int64_t *s = xmalloc(sizeof *s * (size_t)a->n);
	memcpy(s, a->ints, sizeof *s * (size_t)a->n);
	s[at] = len;
	op_set_ints(o, name, a->n, s);
	free(s);
}

int lower_axsplit(struct ir_graph *g, int i, const struct chip *c, kin_note_fn note, void *ctx)
{
	struct ir_op *op = &g->ops[i];
	if (op->n_out < 1 || op->out[0] < 0)
		return 0;
	int n_in = op->n_in, n_out = op->n_out, r = g->tensors[op->out[0]].rank, ax = -1;
	int *in_ax = xmalloc(sizeof *in_ax * (size_t)(n_in + 1));
	int *best_ax = xmalloc(sizeof *best_ax * (size_t)(n_in + 1));
	int64_t part = 0, parts = 0;
	for (int a = 0; a < r && !parts; a++) {
		if (!op_split_axis(g, op, a, in_ax))
			continue;
		int64_t n = g->tensors[op->out[0]].shape[a], s = largest_part(g, i, c, a, in_ax);
		if (s > 0) {
			parts = ceil_div(n, s);
			part = ceil_div(n, parts);   /* even parts, each no larger */
			ax = a;
			memcpy(best_ax, in_ax, sizeof *in_ax * (size_t)n_in);
		}
	}
	free(in_ax);
	if (!parts) {
		free(best_ax);
		return 0;
	}
	int64_t n = g->tensors[op->out[0]].shape[ax];
	parts = ceil_div(n, part);
	int *outs = xmalloc(sizeof *outs * (size_t)parts * (size_t)n_out);
	int *in = xmalloc(sizeof *in * (size_t)n_in), *out = xmalloc(sizeof *out * (size_t)n_out);
	for (int64_t p = 0; p < parts; p++) {
		int64_t n0 = p * part, n1 = n0 + part < n ? n0 + part : n;
		op = &g->ops[i];
		memcpy(in, op->in, sizeof *in * (size_t)n_in);
		for (int j = 0; j < n_in; j++) {
			if (best_ax[j] < 0)
				continue;
			if (g->tensors[in[j]].data)
				in[j] = graph_weight_slice(g, in[j], best_ax[j], n0, n1, "p");
			else
				in[j] = split_slice(g, in[j], best_ax[j], n0, n1, "p", note, ctx, i);
		}
		for (int j = 0; j < n_out; j++)
			out[j] = split_part_tensor(g, g->ops[i].out[j], ax, n1 - n0, "p", n0);
		int k = graph_add_op(g, g->ops[i].type, g->tensors[out[0]].name, n_in, in, n_out, out);
		op_copy_attrs(&g->ops[k], &g->ops[i]);
		part_attrs(g, k, ax, n1 - n0);
		note(ctx, k, i);
		for (int j = 0; j < n_out; j++)
			outs[j * parts + p] = out[j];
	}
	/* each output but the first gets a Concat of its own, placed before
	 * op i, which becomes the first's */
	for (int j = 1; j < n_out; j++)
		note(ctx, split_concat_new(g, g->ops[i].out[j], outs + j * parts, (int)parts, ax), i);
	split_concat(g, i, outs, (int)parts, ax);
	free(outs);
	free(in);
	free(out);
	free(best_ax);
	return 1;
}
