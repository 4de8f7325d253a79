/* isa_copy.c - ops the DMA engine can perform alone as copies of
 * contiguous runs of elements (lib/chip/isa_copy.h).
 */
#include <stdlib.h>

#include "chip/isa.h"
#include "chip/isa_copy.h"
#include "ir/base.h"
#include "ir/convert.h"
#include "ir/op.h"

/* A Slice cutting at most one axis, by any positive step (the runs
 * isa_copy_pieces takes): that axis in *axis (-1: none cut), its first
 * index in *start, as the Slice kernel resolves starts and ends (clamped,
 * negative from the end), and the step in *step (1 when the step takes
 * one index: a box decoder's x[:, 0::4] of [N, 4] is x[:, 0:1]).  0 when
 * the Slice is of another kind. */
static int slice_one_axis(const struct ir_op *op, const struct ir_tensor *x, int *axis,
			  int64_t *start, int64_t *step)
{
	int64_t s[IR_MAX_RANK], e[IR_MAX_RANK], a[IR_MAX_RANK], p[IR_MAX_RANK];
	int r = x->rank;
	int ns = op_ints(op, "starts", s, IR_MAX_RANK), ne = op_ints(op, "ends", e, IR_MAX_RANK);
	int na = op_ints(op, "axes", a, IR_MAX_RANK), np = op_ints(op, "steps", p, IR_MAX_RANK);
	if (ns != ne || ns > IR_MAX_RANK || (na && na != ns) || (np && np != ns))
		return 0;
	*axis = -1;
	*start = 0;
	*step = 1;
	for (int i = 0; i < ns; i++) {
		int ax = norm_axis(na ? a[i] : i, r);
		int64_t st = np ? p[i] : 1;
		if (ax < 0 || st < 1)
			return 0;
		int64_t dim = x->shape[ax], b = s[i], en = e[i];
		b = b < 0 ? b + dim : b;
		en = en < 0 ? en + dim : en;
		b = b < 0 ? 0 : b > dim ? dim : b;
		en = en < 0 ? 0 : en > dim ? dim : en;
		if (st > 1 && en - b <= st)   /* one index taken (or none) */
			st = 1, en = en > b ? b + 1 : en;
		if (st == 1 && b == 0 && en >= dim)
			continue;
		if (*axis >= 0)
			return 0;
		*axis = ax;
		*start = b;
		*step = st;
	}
	return 1;
}

/* Same dtype and quantisation: the bytes carry over unchanged. */
static int same_codes(const struct ir_tensor *a, const struct ir_tensor *b)
{
	return !a->data && !b->data && a->dtype == b->dtype && a->scale == b->scale &&
	       a->zero_point == b->zero_point;
}

/* Append reps runs of len elements: run r from src_at + r * sstep of src
 * to dat + r * dstep of dst. */
static void add(struct isa_piece **v, int *n, int src, int64_t sat, int dst, int64_t dat,
		int64_t len, int64_t reps, int64_t sstep, int64_t dstep)
{
	*v = xrealloc(*v, sizeof **v * (size_t)(*n + 1));
	(*v)[*n] = (struct isa_piece){ .src = src, .dst = dst, .src_at = sat, .dst_at = dat,
				       .n = len, .reps = reps, .src_step = sstep, .dst_step = dstep };
	++*n;
}

/* A Concat along an inner axis whose inputs keep their codes (as
 * isa_is_copy asks): per input, a run per index of the axes before the
 * axis (one strided piece); 0 when it is not such a Concat. */
static int concat_runs(const struct ir_graph *g, const struct ir_op *op, struct isa_piece **out)
{
	if (op->type != OP_CONCAT || op->n_out != 1 || op->n_in < 1)
		return 0;
	const struct ir_tensor *y = &g->tensors[op->out[0]];
	int q = y->dtype == DT_I8 || y->dtype == DT_U8, ax = norm_axis(op_int(op, "axis", 1), y->rank);
	const struct ir_attr *am = op_attr(op, "multipliers"), *as = op_attr(op, "shifts");
	if (ax < 0 || (q && (!am || !as || am->kind != ATTR_INTS || as->kind != ATTR_INTS ||
			     am->n != op->n_in || as->n != op->n_in)))
		return 0;
	int64_t outer = 1, inner = 1;
	for (int d = 0; d < ax; d++)
		outer *= y->shape[d];
	for (int d = ax + 1; d < y->rank; d++)
		inner *= y->shape[d];
	if (!outer)
		return 0;
	for (int i = 0; i < op->n_in; i++) {
		if (op->in[i] < 0)
			return 0;
		const struct ir_tensor *x = &g->tensors[op->in[i]];
		if (x->data || x->dtype != y->dtype ||
		    (q && (am->ints[i] != (INT64_C(1) << 30) || as->ints[i] != 30 ||
			   x->zero_point != y->zero_point)))
			return 0;
	}
	struct isa_piece *v = NULL;
	int n = 0;
	int64_t at = 0;
	for (int i = 0; i < op->n_in; i++) {
		int64_t len = g->tensors[op->in[i]].shape[ax] * inner;
		add(&v, &n, op->in[i], 0, op->out[0], at, len, outer, len, y->shape[ax] * inner);
		at += len;
	}
	*out = v;
	return n;
}

/* A Gather of constant indices (Swin's q, k, v taken from one tensor by
 * a scalar index, a detector's score column per class): per run of
 * consecutive indices (at most ISA_COPY_MAX_RUNS), a run of their inner
 * elements per index of the axes before the gathered one (one strided
 * piece).  0 when it is not such a Gather. */
static int gather_runs(const struct ir_graph *g, const struct ir_op *op, struct isa_piece **out)
{
	if (op->type != OP_GATHER || op->n_in != 2 || op->n_out != 1 || op->in[0] < 0 || op->in[1] < 0)
		return 0;
	const struct ir_tensor *x = &g->tensors[op->in[0]], *ix = &g->tensors[op->in[1]];
	int a = norm_axis(op_int(op, "axis", 0), x->rank);
	if (a < 0 || !ix->data || !same_codes(x, &g->tensors[op->out[0]]))
		return 0;
	int64_t outer = 1, inner = 1, ni = tensor_numel(ix), dim = x->shape[a];
	for (int d = 0; d < a; d++)
		outer *= x->shape[d];
	for (int d = a + 1; d < x->rank; d++)
		inner *= x->shape[d];
	int64_t runs = 0, prev = -2;
	for (int64_t j = 0; j < ni; j++) {
		int64_t k = dtype_get_int(ix->data, ix->dtype, j);
		k = k < 0 ? k + dim : k;
		if (k < 0 || k >= dim)
			return 0;
		runs += k != prev + 1;
		prev = k;
	}
	if (runs > ISA_COPY_MAX_RUNS || !outer)
		return 0;
	struct isa_piece *v = NULL;
	int n = 0;
	for (int64_t j = 0; j < ni;) {
		int64_t k = dtype_get_int(ix->data, ix->dtype, j), len = 1;
		k = k < 0 ? k + dim : k;
		while (j + len < ni) {
			int64_t k2 = dtype_get_int(ix->data, ix->dtype, j + len);
			if ((k2 < 0 ? k2 + dim : k2) != k + len)
				break;
			len++;
		}
		add(&v, &n, op->in[0], k * inner, op->out[0], j * inner, len * inner, outer,
		    dim * inner, ni * inner);
		j += len;
	}
	*out = v;
	return n;
}

/* A Transpose that only moves axes of size 1 (Swin's window partition of
 * a 7x7 map into one window): its elements keep their order, one run. */
static int transpose_run(const struct ir_graph *g, const struct ir_op *op, struct isa_piece **out)
{
	if (op->type != OP_TRANSPOSE || op->n_in != 1 || op->n_out != 1 || op->in[0] < 0)
		return 0;
	const struct ir_tensor *x = &g->tensors[op->in[0]];
	int64_t perm[IR_MAX_RANK];
	if (!same_codes(x, &g->tensors[op->out[0]]) ||
	    op_ints(op, "perm", perm, IR_MAX_RANK) != x->rank)
		return 0;
	for (int d = 0, last = -1; d < x->rank; d++) {
		if (perm[d] < 0 || perm[d] >= x->rank)
			return 0;
		if (x->shape[perm[d]] == 1)
			continue;
		if (perm[d] < last)
			return 0;
		last = (int)perm[d];
	}
	struct isa_piece *v = NULL;
	int n = 0;
	add(&v, &n, op->in[0], 0, op->out[0], 0, tensor_numel(x), 1, 0, 0);
	*out = v;
	return n;
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
			add(&v, &n, op->in[i], 0, op->out[0], at, len, 1, 0, 0);
			at += len;
		}
		*out = v;
		return n;
	}
	if (op->type == OP_CONCAT)
		return concat_runs(g, op, out);
	if (op->type == OP_GATHER)
		return gather_runs(g, op, out);
	if (op->type == OP_TRANSPOSE)
		return transpose_run(g, op, out);
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
			add(&v, &n, op->in[0], at, op->out[i], 0, len, 1, 0, 0);
			at += len;
		}
		*out = v;
		return n;
	}
	if (op->n_out != 1 || op->n_in != 1)
		return 0;
	/* One cut axis a, step 1: one run per index of the axes before it
	 * (a K part of a MatMul's rows, lib/back/lower_kin.c), one strided
	 * piece; a step of more: a piece per index taken, as for step 1 (a
	 * box decoder's x[:, 0::2] of [N, 4]: x[:, 0:1] and x[:, 2:3]). */
	int a;
	int64_t first, step;
	if (!slice_one_axis(op, x, &a, &first, &step))
		return 0;
	if (step > 1) {
		const struct ir_tensor *y = &g->tensors[op->out[0]];
		int64_t outer = 1, k = y->shape[a];
		for (int d = 0; d < a; d++)
			outer *= x->shape[d];
		for (int d = a + 1; d < x->rank; d++)
			inner *= x->shape[d];
		if (!outer || k > ISA_COPY_MAX_RUNS)
			return 0;
		for (int64_t j = 0; j < k; j++)
			add(&v, &n, op->in[0], (first + j * step) * inner, op->out[0], j * inner, inner,
			    outer, x->shape[a] * inner, k * inner);
		*out = v;
		return n;
	}
	if (a < 0) {
		a = 0;
		first = 0;
	}
	int64_t outer = 1;
	for (int d = 0; d < a; d++)
		outer *= x->shape[d];
	for (int d = a + 1; d < x->rank; d++)
		inner *= x->shape[d];
	int64_t len = outer ? tensor_numel(&g->tensors[op->out[0]]) / outer : 0;
	if (outer)
		add(&v, &n, op->in[0], first * inner, op->out[0], 0, len, outer, x->shape[a] * inner,
		    len);
	*out = v;
	return n;
}
