/* isa_copy.c - ops the DMA engine can perform alone as copies of
 * contiguous runs of elements (lib/isa.h, isa_copy_pieces).
 */
#include <stdlib.h>

#include "base.h"
#include "isa.h"
#include "ops/opcommon.h"

/* Same dtype and quantisation: the bytes carry over unchanged. */
static int same_codes(const struct ir_tensor *a, const struct ir_tensor *b)
{
	return !a->data && !b->data && a->dtype == b->dtype && a->scale == b->scale &&
	       a->zero_point == b->zero_point;
}

static void add(struct isa_piece **v, int *n, int src, int64_t sat, int dst, int64_t dat,
		int64_t len)
{
	*v = xrealloc(*v, sizeof **v * (size_t)(*n + 1));
	(*v)[*n] = (struct isa_piece){ .src = src, .dst = dst, .src_at = sat, .dst_at = dat,
				       .n = len };
	++*n;
}

int isa_copy_pieces(const struct ir_graph *g, const struct ir_op *op, struct isa_piece **out)
{
	struct isa_piece *v = NULL;
	int n = 0, nc = isa_is_copy(g, op);
	*out = NULL;
	if (nc > 0) {
		int64_t at = 0;
		for (int i = 0; i < nc; i++) {
			int64_t len = tensor_numel(&g->tensors[op->in[i]]);
			add(&v, &n, op->in[i], 0, op->out[0], at, len);
			at += len;
		}
		*out = v;
		return n;
	}
	if ((op->type != OP_SPLIT && op->type != OP_SLICE) || op->n_in < 1 || op->in[0] < 0)
		return 0;
	const struct ir_tensor *x = &g->tensors[op->in[0]];
	for (int i = 0; i < op->n_out; i++)
		if (!same_codes(x, &g->tensors[op->out[i]]))
			return 0;
	int64_t inner = 1;
	if (op->type == OP_SPLIT) {
		int ax = norm_axis(op_int(op, "axis", 0), x->rank);
		if (ax < 0)
			return 0;
		for (int d = 0; d < ax; d++)
			if (x->shape[d] != 1)
				return 0;
		int64_t at = 0;
		for (int i = 0; i < op->n_out; i++) {
			int64_t len = tensor_numel(&g->tensors[op->out[i]]);
			add(&v, &n, op->in[0], at, op->out[i], 0, len);
			at += len;
		}
		*out = v;
		return n;
	}
	if (op->n_out != 1 || op->n_in != 1)
		return 0;
	int64_t start[IR_MAX_RANK], step[IR_MAX_RANK], count[IR_MAX_RANK];
	if (slice_geometry(op, x->rank, x->shape, start, step, count) < 0) {
		err_set("%s", "");
		return 0;
	}
	/* One cut axis a, step 1, only axes of size 1 before it. */
	int a = -1;
	for (int d = 0; d < x->rank; d++)
		if (count[d] != x->shape[d] || step[d] != 1) {
			if (a >= 0 || step[d] != 1)
				return 0;
			a = d;
		}
	if (a < 0)
		a = 0;
	for (int d = 0; d < a; d++)
		if (x->shape[d] != 1)
			return 0;
	for (int d = a + 1; d < x->rank; d++)
		inner *= x->shape[d];
	add(&v, &n, op->in[0], start[a] * inner, op->out[0], 0, tensor_numel(&g->tensors[op->out[0]]));
	*out = v;
	return n;
}
