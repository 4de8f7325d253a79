/* pass_fold_pad.c - fold-pad: a constant zero Pad of the spatial
 * dimensions only, whose one reader is a Conv (input 0), goes into the
 * conv's own pads.  Exporters from TensorFlow write 'SAME' padding of
 * strided convolutions this way (Pad bottom/right by one, then a conv with
 * no padding); the conv pads with zeros too, so the result is the same and
 * the padded copy of the tensor is never made.  The same into an
 * AveragePool (without ceil_mode) that has no pads of its own or counts
 * them (count_include_pad): it pads with zeros that count, as torch's
 * AvgPool2d(padding=p) exports (Inception's branches).  Negative pads (a
 * crop) and pads of the batch or channel dimension stay a Pad.
 */
#include <string.h>

#include "passes/passes.h"

static int fold_pad_pattern(struct ir_graph *g, int i)
{
	struct ir_op *conv = &g->ops[i];
	int pool = conv->type == OP_AVGPOOL;
	if (!(conv->type == OP_CONV && conv->n_in >= 2) && !pool)
		return 0;
	if (conv->in[0] < 0 || (pool && op_int(conv, "ceil_mode", 0)))
		return 0;
	int x = conv->in[0], p = pass_producer(g, x);
	if (p < 0 || pass_uses(g, x) != 1 || pass_is_output(g, x))
		return 0;
	const struct ir_op *pad = &g->ops[p];
	if (pad->type != OP_PAD || pad->n_in != 1 || pad->n_out != 1 ||
	    strcmp(op_str(pad, "mode", "constant"), "constant") != 0 || op_float(pad, "value", 0) != 0)
		return 0;
	int r = g->tensors[pad->in[0]].rank, s = r - 2;
	int64_t pp[2 * IR_MAX_RANK], cp[2 * IR_MAX_RANK];
	if (r < 3 || r > IR_MAX_RANK || op_ints(pad, "pads", pp, 2 * IR_MAX_RANK) != 2 * r)
		return 0;
	if (pp[0] || pp[1] || pp[r] || pp[r + 1])
		return 0;
	int n = op_ints(conv, "pads", cp, 2 * IR_MAX_RANK);
	if (n == 0) {
		memset(cp, 0, sizeof cp);
		n = 2 * s;
	}
	if (n != 2 * s || strcmp(op_str(conv, "auto_pad", "NOTSET"), "NOTSET") != 0)
		return 0;
	if (pool && !op_int(conv, "count_include_pad", 0))
		for (int d = 0; d < 2 * s; d++)
			if (cp[d])
				return 0;
	for (int d = 0; d < s; d++)
		if (pp[2 + d] < 0 || pp[r + 2 + d] < 0)
			return 0;
	/* conv pads: begins of the s spatial dimensions, then their ends */
	for (int d = 0; d < s; d++) {
		cp[d] += pp[2 + d];
		cp[s + d] += pp[r + 2 + d];
	}
	op_set_ints(conv, "pads", 2 * s, cp);
	if (pool)
		op_set_int(conv, "count_include_pad", 1);
	conv->in[0] = pad->in[0];
	g->ops[p].type = OP_COUNT;
	return 1;
}

int pass_fold_pad(struct ir_graph *g)
{
	static const pattern_fn pats[] = { fold_pad_pattern };
	return rewrite_run(g, "fold-pad", pats, 1);
}
