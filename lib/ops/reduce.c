/* reduce.c - reductions over a set of axes: ReduceMean, ReduceMax,
 * ReduceMin, ReduceSum, ReduceProd, ReduceL1, ReduceL2, ReduceSumSquare,
 * ReduceLogSum, ReduceLogSumExp (attributes axes: non-negative, absent = all
 * axes; keepdims; noop: an empty axes list copies the input), and ArgMax,
 * ArgMin (axis, keepdims, select_last_index; int64 output).  Accumulation is
 * in double; any numeric input dtype.
 */
#include <math.h>
#include <string.h>

#include "ir/convert.h"
#include "ops/kern_util.h"
#include "ir/op.h"
#include "quant/quant.h"

static int is_arg(enum op_type t)
{
	return t == OP_ARGMAX || t == OP_ARGMIN;
}

/* Which axes of a rank-r input op reduces (mask[d] = 1): the attribute,
 * or the axes as input 1 (op_param_ints: G's constant, or K's view at run
 * time); 0 on success, 1 when they are known only at run time. */
static int reduce_mask(const struct ir_graph *g, const struct kern *k, const struct ir_op *op,
		       int r, int *mask, int *noop)
{
	int64_t axes[IR_MAX_RANK];
	*noop = 0;
	memset(mask, 0, sizeof(int) * IR_MAX_RANK);
	if (is_arg(op->type)) {
		int a = norm_axis(op_int(op, "axis", 0), r);
		if (a < 0)
			return op_error(op, "axis out of range");
		mask[a] = 1;
		return 0;
	}
	int n = op_param_ints(g, k, op, 1, "axes", axes, IR_MAX_RANK);
	if (n == -1)
		return -1;
	if (n == -2)
		return 1;
	if (n == 0) {
		if (op_int(op, "noop", 0)) {
			*noop = 1;
			return 0;
		}
		for (int d = 0; d < r; d++)
			mask[d] = 1;
		return 0;
	}
	for (int i = 0; i < n; i++) {
		int a = norm_axis(axes[i], r);
		if (a < 0)
			return op_error(op, "axis %lld out of range", (long long)axes[i]);
		mask[a] = 1;
	}
	return 0;
}

static int reduce_infer(struct ir_graph *g, struct ir_op *op)
{
	const struct ir_tensor *x = op_in(g, op, 0);
	int mask[IR_MAX_RANK], noop;
	int rt = reduce_mask(g, NULL, op, x->rank, mask, &noop);
	if (rt < 0)
		return -1;
	if (x->dtype == DT_F16 || x->dtype == DT_BF16 || x->dtype == DT_BOOL)
		return op_error(op, "dtype %s is not supported", dtype_name(x->dtype));
	int keep = (int)op_int(op, "keepdims", 1), rank = 0;
	int64_t shape[IR_MAX_RANK];
	if (rt) {
		/* axes at run time: which extents stay is dynamic */
		rank = keep ? x->rank : x->rank - (int)tensor_numel(op_in(g, op, 1));
		if (rank < 0)
			return op_error(op, "more axes than dimensions");
		op_set_out(g, op, 0, x->dtype, rank, x->shape);
		op_set_dyn(g, op, 0, rank ? (1u << rank) - 1 : 0);
		return 0;
	}
	for (int d = 0; d < x->rank; d++) {
		if (mask[d] && x->shape[d] == 0 && (is_arg(op->type) || op->type == OP_REDUCEMAX ||
						     op->type == OP_REDUCEMIN))
			return op_error(op, "reduction over an empty axis");
		if (!mask[d])
			shape[rank++] = x->shape[d];
		else if (keep)
			shape[rank++] = 1;
	}
	op_set_out(g, op, 0, is_arg(op->type) ? DT_I64 : x->dtype, rank, shape);
	return 0;
}

static int reduce_f32(struct kern *k)
{
	const struct view *x = &k->in[0], *y = &k->out[0];
	enum op_type t = k->op->type;
	int r = x->rank, mask[IR_MAX_RANK], noop;
	if (reduce_mask(k->g, k, k->op, r, mask, &noop) != 0)
		return -1;
	if (noop) {
		memcpy(y->data, x->data, (size_t)view_numel(y) * dtype_size(y->dtype));
		return 0;
	}
	struct kern_reduce rd;
	kern_reduce_init(&rd, r, x->shape, mask);
	int64_t count = rd.count;
	int last = (int)op_int(k->op, "select_last_index", 0);
	int64_t nout = view_numel(y);
	for (int64_t o = 0; o < nout; o++) {
		int64_t base = kern_reduce_base(&rd, o);
		double acc;
		switch (t) {
		case OP_REDUCEMAX: acc = -INFINITY; break;
		case OP_REDUCEMIN: acc = INFINITY; break;
		case OP_REDUCEPROD: acc = 1; break;
		default: acc = 0; break;
		}
		double best = 0, mx = -INFINITY;
		int64_t arg = 0, idx[IR_MAX_RANK] = { 0 }, off = base;
		if (t == OP_REDUCELOGSUMEXP) {
			/* max first, for a stable log-sum-exp */
			int64_t id2[IR_MAX_RANK] = { 0 }, o2 = base;
			for (int64_t i = 0; i < count; i++) {
				double v = dtype_get(x->data, x->dtype, o2);
				mx = v > mx ? v : mx;
				kern_reduce_next(&rd, id2, &o2);
			}
			if (!isfinite(mx))
				mx = 0;
		}
		for (int64_t i = 0; i < count; i++) {
			double v = x->dtype == DT_F32 ? ((const float *)x->data)[off]
						      : dtype_get(x->data, x->dtype, off);
			switch (t) {
			case OP_REDUCEMEAN: case OP_REDUCESUM: acc += v; break;
			case OP_REDUCEMAX: acc = v > acc || isnan(v) ? v : acc; break;
			case OP_REDUCEMIN: acc = v < acc || isnan(v) ? v : acc; break;
			case OP_REDUCEPROD: acc *= v; break;
			case OP_REDUCEL1: acc += fabs(v); break;
			case OP_REDUCEL2: case OP_REDUCESUMSQUARE: acc += v * v; break;
			case OP_REDUCELOGSUM: acc += v; break;
			case OP_REDUCELOGSUMEXP: acc += exp(v - mx); break;
			case OP_ARGMAX:
				if (i == 0 || v > best || (last && v == best)) {
					best = v;
					arg = i;
				}
				break;
			case OP_ARGMIN:
				if (i == 0 || v < best || (last && v == best)) {
					best = v;
					arg = i;
				}
				break;
			default: break;
			}
			kern_reduce_next(&rd, idx, &off);
		}
		switch (t) {
		case OP_REDUCEMEAN: acc = count ? acc / (double)count : NAN; break;
		case OP_REDUCEL2: acc = sqrt(acc); break;
		case OP_REDUCELOGSUM: acc = log(acc); break;
		case OP_REDUCELOGSUMEXP: acc = log(acc) + mx; break;
		default: break;
		}
		if (is_arg(t)) {
			((int64_t *)y->data)[o] = arg;
		} else if (y->dtype == DT_F32) {
			((float *)y->data)[o] = (float)acc;
		} else if (dtype_is_float(y->dtype)) {
			dtype_set(y->data, y->dtype, o, acc);
		} else {
			int64_t iv = (int64_t)acc;
			dtype_convert((char *)y->data + (size_t)o * dtype_size(y->dtype), y->dtype,
				      &iv, DT_I64, 1);
		}
	}
	return 0;
}

static int64_t reduce_macs(const struct ir_graph *g, const struct ir_op *op)
{
	return tensor_numel(&g->tensors[op->in[0]]);
}

/* Rows along H are independent when H is not reduced and keeps its
 * place (kept dimensions, or no axis before it reduced). */
static void reduce_slice_h(const struct ir_graph *g, const struct ir_op *op,
			   int oh0, int oh1, int *ih0, int *ih1)
{
	int mask[IR_MAX_RANK], noop, r = g->tensors[op->in[0]].rank;
	int ok = r >= 3 && reduce_mask(g, NULL, op, r, mask, &noop) == 0;
	if (ok && !noop)
		ok = !mask[2] && (op_int(op, "keepdims", 1) || (!mask[0] && !mask[1]));
	*ih0 = ok ? oh0 : -1;
	*ih1 = ok ? oh1 : 0;
}

/* Parts along an output axis that is not reduced: the input axis it
 * stands for (keepdims 0 drops the reduced ones). */
static int reduce_split_axis(const struct ir_graph *g, const struct ir_op *op, int ax, int *in_ax)
{
	int mask[IR_MAX_RANK], noop, r = g->tensors[op->in[0]].rank;
	if (reduce_mask(g, NULL, op, r, mask, &noop) != 0)
		return 0;
	int keep = noop || op_int(op, "keepdims", 1), o = 0;
	for (int d = 0; d < r; d++) {
		if (!noop && mask[d] && !keep)
			continue;
		if (o++ == ax)
			return (noop || !mask[d]) && split_axis_x0(g, op, d, in_ax);
	}
	return 0;
}

#define REDUCE_DEF(E) const struct op_def op_def_##E = { \
	.infer = reduce_infer, .run_f32 = reduce_f32, \
	.run_tpu = quant_run_f32, .macs = reduce_macs, .slice_h = reduce_slice_h, \
	.split_axis = reduce_split_axis, \
};

REDUCE_DEF(REDUCEMEAN) REDUCE_DEF(REDUCEMAX) REDUCE_DEF(REDUCEMIN) REDUCE_DEF(REDUCESUM)
REDUCE_DEF(REDUCEPROD) REDUCE_DEF(REDUCEL1) REDUCE_DEF(REDUCEL2) REDUCE_DEF(REDUCESUMSQUARE)
REDUCE_DEF(REDUCELOGSUM) REDUCE_DEF(REDUCELOGSUMEXP) REDUCE_DEF(ARGMAX) REDUCE_DEF(ARGMIN)
