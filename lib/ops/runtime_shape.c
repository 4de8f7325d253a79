/* runtime_shape.c - a shape operand the importer could not fold
 * (lib/front/import_runtime.c): Reshape's shape, Expand's shape or Tile's
 * repeats given as input 1.  With the output shape the model declares as
 * the op's attribute, the kernels check at run time that the value gives it
 * (runtime_shape_check); without one, the output's extents are dynamic and
 * shape inference finds them from the value (runtime_shape_infer).
 */
#include "ops/runtime_shape.h"

#include <stdio.h>
#include <string.h>

#include "ir/convert.h"

/* "[a,b,c]" into buf. */
static void dims_str(char *buf, size_t size, int n, const int64_t *d)
{
	size_t at = (size_t)snprintf(buf, size, "[");
	for (int i = 0; i < n && at < size; i++)
		at += (size_t)snprintf(buf + at, size - at, "%s%lld", i ? "," : "", (long long)d[i]);
	if (at < size)
		snprintf(buf + at, size - at, "]");
}

int runtime_shape_want(const struct ir_op *op, int xr, const int64_t *xs, const int64_t *v, int n,
		       int64_t *want, int *rank)
{
	int ok = n <= IR_MAX_RANK;
	*rank = n;
	if (ok && op->type == OP_RESHAPE) {
		int allowzero = (int)op_int(op, "allowzero", 0), neg = -1;
		int64_t rest = 1, numel = 1;
		for (int i = 0; i < xr; i++)
			numel *= xs[i];
		for (int i = 0; i < n; i++) {
			want[i] = v[i] == 0 && !allowzero && i < xr ? xs[i] : v[i];
			if (want[i] == -1 && neg < 0)
				neg = i;
			else if (want[i] < 0)
				ok = 0;
			else
				rest *= want[i];
		}
		if (ok && neg >= 0)
			want[neg] = rest ? numel / rest : -1;
		if (ok && (neg >= 0 ? (rest == 0 || numel % rest) : rest != numel))
			ok = 0;
	} else if (ok && op->type == OP_EXPAND) {
		ok = broadcast_shape(xr, xs, n, v, rank, want) == 0;
	} else if (ok) {   /* Tile */
		ok = n == xr;
		for (int i = 0; ok && i < n; i++) {
			ok = v[i] >= 0;
			want[i] = xs[i] * v[i];
		}
	}
	if (ok)
		return 0;
	char got[IR_MAX_RANK * 21 + 3];
	dims_str(got, sizeof got, n <= IR_MAX_RANK ? n : IR_MAX_RANK, v);
	return op_error(op, "%s %s does not fit the input", op->type == OP_TILE ? "repeats" : "shape",
			got);
}

int runtime_shape_check(const struct kern *k)
{
	if (k->n_in < 2 || !k->in[1].data || !op_attr(k->op, k->op->type == OP_TILE ? "repeats" : "shape"))
		return 0;
	const struct view *x = &k->in[0], *p = &k->in[1], *y = &k->out[0];
	int64_t n = view_numel(p), want[IR_MAX_RANK], v[IR_MAX_RANK];
	int rank = 0, ok = n <= IR_MAX_RANK;
	for (int64_t i = 0; ok && i < n; i++)
		v[i] = dtype_get_int(p->data, p->dtype, i);
	if (ok)
		ok = runtime_shape_want(k->op, x->rank, x->shape, v, (int)n, want, &rank) == 0;
	if (ok && rank == y->rank && !memcmp(want, y->shape, sizeof(int64_t) * (size_t)rank))
		return 0;
	char got[IR_MAX_RANK * 21 + 3], fixed[IR_MAX_RANK * 21 + 3];
	dims_str(got, sizeof got, (int)(n <= IR_MAX_RANK ? n : IR_MAX_RANK), v);
	dims_str(fixed, sizeof fixed, y->rank, y->shape);
	return op_error(k->op, "input '%s' is %s at run time: it does not give the output shape "
			"%s the model declares", k->g ? k->g->tensors[k->op->in[1]].name : "1", got,
			fixed);
}

int runtime_shape_infer(struct ir_graph *g, struct ir_op *op)
{
	const struct ir_tensor *x = op_in(g, op, 0), *p = op_in(g, op, 1);
	int64_t v[IR_MAX_RANK], want[IR_MAX_RANK];
	int n = op_param_ints(g, NULL, op, 1, NULL, v, IR_MAX_RANK), rank;
	if (n == -1)
		return -1;
	if (n == -2) {   /* known at run time: every extent dynamic */
		if (p->rank != 1 || p->dyn)
			return op_error(op, "the shape must be 1-D of a static length");
		rank = op->type == OP_TILE ? x->rank : (int)p->shape[0];
		if (rank > IR_MAX_RANK)
			return op_error(op, "rank %d exceeds %d", rank, IR_MAX_RANK);
		/* known parts of the value (the static extents it copies) give
		 * static extents: a Reshape's positive ones, an Expand's
		 * beyond 1 */
		uint32_t known = op->type == OP_TILE ? 0 : known_values(g, op->in[1], v), dyn = 0;
		for (int d = 0; d < rank; d++) {
			int k = known >> d & 1;
			want[d] = op->type == OP_TILE ? x->shape[d] : 1;
			if (k && op->type == OP_RESHAPE && v[d] > 0)
				want[d] = v[d];
			else if (k && op->type == OP_EXPAND && v[d] > 1)
				want[d] = v[d];
			else
				dyn |= 1u << d;
		}
		op_set_out(g, op, 0, x->dtype, rank, want);
		op_set_dyn(g, op, 0, dyn);
		return 0;
	}
	if (runtime_shape_want(op, x->rank, x->shape, v, n, want, &rank) < 0)
		return -1;
	op_set_out(g, op, 0, x->dtype, rank, want);
	return 0;
}
