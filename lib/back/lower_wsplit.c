/* lower_wsplit.c - ops whose windows along an axis do not fit, cut along
 * that axis (lib/back/lower_wsplit.h).
 *
 * Codegen slices a Conv or a pooling along H: one output row at least,
 * with the input rows its window reads across the whole width.  When even
 * that fills a lane (a [1,2,2,200000] input), or a row is longer than a
 * DMA block's 65535 elements, and for ops codegen does not slice at all (a
 * Pad, a DepthToSpace, a Resize or ConvTranspose along W), the op runs on
 * P blocks of its output along one axis: per block a Slice of the input
 * entries the block's windows read (the halo included), the op on that
 * window with the attributes its rule gives the part (op_def.split_window:
 * a Conv's or a Pad's pads only where the block meets the input's edge, a
 * ConvTranspose's pads and output_padding cropping what its columns write
 * outside the block, a Resize's position in the whole), and a Concat of
 * the blocks along the axis.  Every output element is computed from the
 * same values as before, so the results are the same bits (AveragePool's
 * divisor too: the pads of a block are the input's own).
 *
 * The outermost axis on which some block fits is cut; the widest block
 * that fits is found by bisection on codegen's fit test (split_fits) with
 * the widest window any block of that width reads, then narrowed until
 * the op's rule takes every block (a DepthToSpace's on block boundaries).
 */
#include <stdlib.h>
#include <string.h>

#include "back/lower_split.h"
#include "back/lower_wsplit.h"
#include "ir/base.h"
#include "ir/op.h"

/* The widest input window of the blocks of wp outputs along ax (n in
 * all); -1 when the op's rule refuses one of them. */
static int64_t widest_window(const struct ir_graph *g, const struct ir_op *op, int ax, int64_t n,
			     int64_t wp)
{
	int64_t most = 0, a, b;
	for (int64_t o0 = 0; o0 < n; o0 += wp) {
		int64_t o1 = o0 + wp < n ? o0 + wp : n;
		if (!op_defs[op->type]->split_window(g, op, ax, o0, o1, &a, &b, NULL))
			return -1;
		most = b - a > most ? b - a : most;
	}
	return most;
}

/* Whether op i fits with blocks of wp outputs along ax reading windows of
 * win inputs. */
static int block_fits(const struct ir_graph *g, int i, const struct chip *c, int ax, int64_t wp,
		      int64_t win)
{
	const struct ir_op *op = &g->ops[i];
	int64_t xs[IR_MAX_RANK], ys[IR_MAX_RANK];
	const int64_t **sh = xcalloc((size_t)(op->n_in + op->n_out) + 1, sizeof *sh);
	memcpy(xs, g->tensors[op->in[0]].shape, sizeof xs);
	memcpy(ys, g->tensors[op->out[0]].shape, sizeof ys);
	xs[ax] = win;
	ys[ax] = wp;
	sh[0] = xs;
	sh[op->n_in] = ys;
	int ok = split_fits(g, c, i, sh) == 1;
	free(sh);
	return ok;
}

/* The widest block of outputs along ax that fits and that the op's rule
 * takes, 0 when none. */
static int64_t widest_block(const struct ir_graph *g, int i, const struct chip *c, int ax)
{
	const struct ir_op *op = &g->ops[i];
	int64_t n = g->tensors[op->out[0]].shape[ax], lo = 0, hi = n;   /* lo fits, hi does not */
	while (hi - lo > 1) {
		int64_t mid = lo + (hi - lo) / 2, win = widest_window(g, op, ax, n, mid);
		/* a refused block width counts as fitting here, so that the
		 * search stays monotone; it is narrowed below */
		if (win < 0 || block_fits(g, i, c, ax, mid, win))
			lo = mid;
		else
			hi = mid;
	}
	for (; lo > 0; lo--) {
		int64_t win = widest_window(g, op, ax, n, lo);
		if (win >= 0 && block_fits(g, i, c, ax, lo, win))
			break;
	}
	return lo;
}

int lower_wsplit(struct ir_graph *g, int i, const struct chip *c, kin_note_fn note, void *ctx)
{
	const struct ir_op *op = &g->ops[i];
	const struct op_def *d = op_defs[op->type];
	if (!d->split_window || op->n_out != 1 || op->n_in < 1 || op->in[0] < 0 ||
	    g->tensors[op->in[0]].data || op->place == PLACE_HOST ||
	    g->tensors[op->in[0]].rank != g->tensors[op->out[0]].rank)
		return 0;
	int r = g->tensors[op->out[0]].rank, ax;
	int64_t wp = 0, a, b;
	for (ax = 0; ax < r && !wp; ax++) {
		int64_t n = g->tensors[op->out[0]].shape[ax];
		if (n >= 2 && d->split_window(g, op, ax, 0, n, &a, &b, NULL))
			wp = widest_block(g, i, c, ax);
	}
	if (!wp)
		return 0;
	ax--;
	int64_t n = g->tensors[op->out[0]].shape[ax];
	int parts = (int)ceil_div(n, wp), yt = op->out[0], xt = op->in[0];
	int *pout = xmalloc(sizeof *pout * (size_t)parts);
	for (int p = 0; p < parts; p++) {
		int64_t o0 = p * wp, o1 = o0 + wp < n ? o0 + wp : n;
		d->split_window(g, &g->ops[i], ax, o0, o1, &a, &b, NULL);
		int xp = split_slice(g, xt, ax, a, b, "w", note, ctx, i);
		int yp = split_part_tensor(g, yt, ax, o1 - o0, "w", o0);
		int n_in = g->ops[i].n_in;
		int *in = xmalloc(sizeof *in * (size_t)n_in);
		memcpy(in, g->ops[i].in, sizeof *in * (size_t)n_in);
		in[0] = xp;
		int k = split_part_op(g, i, in, n_in, yp);
		free(in);
		d->split_window(g, &g->ops[i], ax, o0, o1, &a, &b, &g->ops[k]);
		note(ctx, k, i);
		pout[p] = yp;
	}
	/* op i becomes the Concat of the blocks */
	split_concat(g, i, pout, parts, ax);
	free(pout);
	return 1;
}
