/* concat.c - Concat: joins its inputs along attribute axis. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "ir/op.h"
#include "back/lower.h"
#include "quant/quant.h"

static int concat_infer(struct ir_graph *g, struct ir_op *op)
{
	const struct ir_tensor *x = op_in(g, op, 0);
	int axis = norm_axis(op_int(op, "axis", 1), x->rank);
	if (axis < 0)
		return op_error(op, "axis out of range");
	/* off the axis the extents agree; a dynamic one takes a static one's
	 * (checked again at run time, when every extent is known) */
	int64_t shape[IR_MAX_RANK];
	uint32_t fixed = 0;
	for (int i = 0; i < x->rank; i++)
		shape[i] = x->shape[i];
	shape[axis] = 0;
	for (int i = 0; i < op->n_in; i++) {
		const struct ir_tensor *t = op_in(g, op, i);
		if (!t || t->rank != x->rank)
			return op_error(op, "inputs differ in rank");
		for (int d = 0; d < x->rank; d++) {
			if (d == axis || (t->dyn >> d & 1))
				continue;
			if ((fixed >> d & 1) && t->shape[d] != shape[d])
				return op_error(op, "input '%s' differs off the concat axis", t->name);
			shape[d] = t->shape[d];
			fixed |= 1u << d;
		}
		shape[axis] += t->shape[axis];
	}
	op_set_out(g, op, 0, x->dtype, x->rank, shape);
	return 0;
}

/* Reference for any dtype (a byte copy): each input's block of rows
 * (everything from the axis on) follows the previous input's, per outer
 * index. */
static int concat_f32(struct kern *k)
{
	const struct view *y = &k->out[0];
	int axis = norm_axis(op_int(k->op, "axis", 1), y->rank);
	if (axis < 0)
		return op_error(k->op, "axis out of range");
	size_t es = dtype_size(y->dtype);
	int64_t outer = 1, inner = 1;
	for (int d = 0; d < axis; d++)
		outer *= y->shape[d];
	for (int d = axis + 1; d < y->rank; d++)
		inner *= y->shape[d];
	size_t orow = (size_t)(y->shape[axis] * inner) * es, off = 0;
	for (int i = 0; i < k->n_in; i++) {
		const struct view *x = &k->in[i];
		if (x->dtype != y->dtype)
			return op_error(k->op, "input %d is %s, output %s", i,
					dtype_name(x->dtype), dtype_name(y->dtype));
		size_t row = (size_t)(x->shape[axis] * inner) * es;
		for (int64_t o = 0; o < outer; o++)
			memcpy((char *)y->data + (size_t)o * orow + off,
			       (const char *)x->data + (size_t)o * row, row);
		off += row;
	}
	return 0;
}

/* Int8 lowering: the output scale comes from the table and each input is
 * rescaled to it by its own multiplier and shift (attributes multipliers,
 * shifts; 2^30 and 30 when the scales are equal). */
static int concat_lower(struct lower_ctx *lc, const struct ir_op *op)
{
	if (lc->mode != MODE_INT8)
		return lower_default(lc, op);
	/* inputs all float already (such a Concat upstream, a recurrent
	 * op's f32 states) stay float, in their dtype, as data movement
	 * does; one output scale for inputs far apart (a detector's boxes
	 * in pixels beside its scores in [0, 1]) would crush the smaller */
	struct lower_ctx f = *lc;
	if (lower_inputs_float(lc, op, &f.mode))
		return lower_default(&f, op);
	if (lower_ranges_apart(lc, op))
		return lower_fallback(lc, op);
	float s_out;
	enum ir_dtype dt;
	int zp, rc = -1;
	if (lower_table_act(lc, op, op->out[0], &dt, &s_out, &zp) < 0)
		return -1;
	int *in = xcalloc((size_t)op->n_in + 1, sizeof *in);
	int64_t *m = xcalloc((size_t)op->n_in + 1, sizeof *m);
	int64_t *sh = xcalloc((size_t)op->n_in + 1, sizeof *sh);
	for (int i = 0; i < op->n_in; i++) {
		int32_t mi, si;
		if ((in[i] = lower_act_input(lc, op, op->in[i])) < 0)
			goto out;
		if (quant_multiplier((double)lc->tpu->tensors[in[i]].scale / s_out, &mi, &si) < 0) {
			char why[256];
			snprintf(why, sizeof why, "%s", err_msg());
			op_error(op, "input %d: %s", i, why);
			goto out;
		}
		m[i] = mi;
		sh[i] = si;
	}
	int y = lower_output(lc, op->out[0], dt, s_out, zp);
	int k = lower_emit(lc, op, op->n_in, in, 1, &y);
	struct ir_op *o = &lc->tpu->ops[k];
	op_set_ints(o, "multipliers", op->n_in, m);
	op_set_ints(o, "shifts", op->n_in, sh);
	rc = 0;
out:
	free(in);
	free(m);
	free(sh);
	return rc;
}

/* Int8: each element of input i is round_shift((q - z_i) * m_i, s_i) + z_out,
 * saturated; other dtypes are a byte copy. */
static int concat_tpu(struct kern *k)
{
	const struct view *y = &k->out[0];
	if (!quant_is_q(y->dtype))
		return concat_f32(k);
	int lo, hi;
	quant_range(y->dtype, &lo, &hi);
	int axis = norm_axis(op_int(k->op, "axis", 1), y->rank);
	if (axis < 0)
		return op_error(k->op, "axis out of range");
	const struct ir_attr *am = op_attr(k->op, "multipliers"), *as = op_attr(k->op, "shifts");
	if (!am || !as || am->kind != ATTR_INTS || as->kind != ATTR_INTS || am->n != k->n_in ||
	    as->n != k->n_in)
		return op_error(k->op, "int8 attributes multipliers and shifts need %d values",
				k->n_in);
	int64_t outer = 1, inner = 1;
	for (int d = 0; d < axis; d++)
		outer *= y->shape[d];
	for (int d = axis + 1; d < y->rank; d++)
		inner *= y->shape[d];
	const int64_t *m = am->ints, *sh = as->ints;
	int64_t orow = y->shape[axis] * inner, off = 0;
	for (int i = 0; i < k->n_in; i++) {
		const struct view *x = &k->in[i];
		if (!quant_is_q(x->dtype))
			return op_error(k->op, "input %d is %s, output %s", i, dtype_name(x->dtype),
					dtype_name(y->dtype));
		if (m[i] < 0 || m[i] > INT32_MAX || sh[i] < 0 || sh[i] > QUANT_MAX_SHIFT)
			return op_error(k->op, "input %d: multiplier or shift out of range", i);
		int64_t row = x->shape[axis] * inner;
		for (int64_t o = 0; o < outer; o++)
			for (int64_t j = 0; j < row; j++)
				quant_put(y->data, y->dtype, o * orow + off + j,
					  quant_requant_zp(quant_get(x->data, x->dtype, o * row + j) -
							   x->zero_point, (int32_t)m[i], (int32_t)sh[i],
							   y->zero_point, lo, hi));
		off += row;
	}
	return 0;
}

/* Rows along H are rows of every input when the axis is not H; a concat
 * along H cannot be sliced (first row -1). */
static void concat_slice_h(const struct ir_graph *g, const struct ir_op *op,
			   int oh0, int oh1, int *ih0, int *ih1)
{
	int r = g->tensors[op->out[0]].rank;
	int h = norm_axis(op_int(op, "axis", 1), r) == 2;
	*ih0 = h ? -1 : oh0;
	*ih1 = h ? -1 : oh1;
}

/* Parts along any axis but the one it joins, cut in every input. */
static int concat_split_axis(const struct ir_graph *g, const struct ir_op *op, int ax, int *in_ax)
{
	if (norm_axis(op_int(op, "axis", 1), g->tensors[op->out[0]].rank) == ax)
		return 0;
	for (int j = 0; j < op->n_in; j++)
		in_ax[j] = ax;
	return 1;
}

const struct op_def op_def_CONCAT = {
	.infer = concat_infer, .run_f32 = concat_f32, .lower = concat_lower,
	.run_tpu = concat_tpu, .slice_h = concat_slice_h, .split_axis = concat_split_axis,
};
