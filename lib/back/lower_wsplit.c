/* lower_wsplit.c - window ops whose one output row does not fit, cut along
 * W (lib/back/lower_wsplit.h).
 *
 * Codegen slices a Conv or a pooling along H: one output row at least,
 * with the input rows its window reads across the whole width.  When even
 * that fills a lane (a [1,2,2,200000] input), or a row is longer than a
 * DMA block's 65535 elements, the op runs on P column blocks of its
 * output: per block a Slice of the input columns its windows read (the
 * halo included), the op with the left and right pads only where the block
 * meets the input's edge, and a Concat of the blocks along W.  Every
 * output element is the same window over the same values, so the results
 * are the same bits (AveragePool's divisor too: the pads of a block are
 * the input's own).  ceil_mode windows are left alone.
 */
#include <stdlib.h>
#include <string.h>

#include "back/lower_wsplit.h"
#include "chip/isa.h"
#include "ir/base.h"
#include "ir/op.h"
#include "quant/quant.h"

#define DMA_MAX_W ((1 << 16) - 1)   /* a DMA block's W field (formats/tpuc-isa.5) */

static int64_t row_bytes(const struct chip *c, enum ir_dtype dt, int64_t ch, int64_t rows,
			 int64_t w)
{
	return ceil_div(ch, c->lanes) * rows * isa_pitch(c, dt, w);
}

/* Bytes per lane of one step computing one output row of wp columns,
 * double buffered; -1 when a row is longer than a DMA block. */
static int64_t step_bytes(const struct ir_graph *g, const struct ir_op *op, const struct chip *c,
			  const struct spatial *s, int64_t wp)
{
	const struct ir_tensor *x = &g->tensors[op->in[0]], *y = &g->tensors[op->out[0]];
	int64_t win = (wp - 1) * s->sw + (int64_t)(s->kw - 1) * s->dw + 1;
	int64_t rows = (int64_t)(s->kh - 1) * s->dh + 1;
	if (win > x->shape[3])
		win = x->shape[3];
	if (rows > x->shape[2])
		rows = x->shape[2];
	if (win > DMA_MAX_W || wp > DMA_MAX_W)
		return -1;
	int64_t oc = y->shape[1], need = 0;
	if (op->type == OP_CONV) {
		const struct ir_tensor *w = &g->tensors[op->in[1]];
		oc = oc < c->lanes ? oc : c->lanes;
		need += isa_pitch(c, w->dtype, tensor_numel(w) / w->shape[0]);
	}
	need += row_bytes(c, x->dtype, x->shape[1], rows, win) +
		row_bytes(c, quant_is_q(y->dtype) ? y->dtype : DT_F32, oc, 1, wp);
	return 2 * need;
}

int lower_wsplit(struct ir_graph *g, int i, const struct chip *c, kin_note_fn note, void *ctx)
{
	const struct ir_op *op = &g->ops[i];
	struct spatial s;
	if ((op->type != OP_CONV && op->type != OP_MAXPOOL && op->type != OP_AVGPOOL) ||
	    op->n_out != 1 || op->n_in < 1 || op->in[0] < 0 || g->tensors[op->in[0]].data ||
	    g->tensors[op->in[0]].rank != 4 || g->tensors[op->out[0]].rank != 4 ||
	    op_attr(op, "auto_pad") || spatial_get(g, op, &s) < 0 || s.ceil_mode)
		return 0;
	if (op->type == OP_CONV && (op->n_in < 2 || op->in[1] < 0 || !g->tensors[op->in[1]].data))
		return 0;
	int64_t ow = g->tensors[op->out[0]].shape[3], iw = g->tensors[op->in[0]].shape[3];
	int64_t budget = c->lmem_bytes / 2, wp = 0, need = step_bytes(g, op, c, &s, ow);
	if (need >= 0 && need <= budget && iw <= DMA_MAX_W)
		return 0;
	for (int64_t parts = 2; parts <= ow && !wp; parts++) {
		int64_t w = ceil_div(ow, parts);
		if (ceil_div(ow, w) != parts)
			continue;
		need = step_bytes(g, op, c, &s, w);
		if (need >= 0 && need <= budget)
			wp = w;
	}
	if (!wp)
		return 0;
	int parts = (int)ceil_div(ow, wp), yt = op->out[0], xt = op->in[0];
	int *pout = xmalloc(sizeof *pout * (size_t)parts);
	for (int p = 0; p < parts; p++) {
		int64_t o0 = p * wp, o1 = o0 + wp < ow ? o0 + wp : ow;
		int64_t i0 = o0 * s.sw - s.pl, i1 = (o1 - 1) * s.sw - s.pl + (int64_t)(s.kw - 1) * s.dw + 1;
		int64_t a = i0 > 0 ? i0 : 0, b = i1 < iw ? i1 : iw;
		int xp = split_slice(g, xt, 3, a, b, "w", note, ctx, i);
		/* the op on the block */
		int yp = split_part_tensor(g, yt, 3, o1 - o0, "w", o0);
		int n_in = g->ops[i].n_in;
		int *in = xmalloc(sizeof *in * (size_t)n_in);
		memcpy(in, g->ops[i].in, sizeof *in * (size_t)n_in);
		in[0] = xp;
		int k = split_part_op(g, i, in, n_in, yp);
		free(in);
		int64_t pads[4] = { s.pt, a - i0, s.pb, i1 - b };
		op_set_ints(&g->ops[k], "pads", 4, pads);
		note(ctx, k, i);
		pout[p] = yp;
	}
	/* op i becomes the Concat of the blocks */
	split_concat(g, i, pout, parts, 3);
	free(pout);
	return 1;
}
