/* runtime_shape.c - the run-time check of a shape operand the importer
 * could not fold (lib/front/import_runtime.c): Reshape's shape, Expand's
 * shape or Tile's repeats, given as input 1 while the op's attribute holds
 * the output shape the model declares.  The kernels of those ops call
 * runtime_shape_check before they move any data.
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

int runtime_shape_check(const struct kern *k)
{
	if (k->n_in < 2 || !k->in[1].data)
		return 0;
	const struct view *x = &k->in[0], *p = &k->in[1], *y = &k->out[0];
	int64_t n = view_numel(p), want[IR_MAX_RANK];
	int rank = (int)n, ok = n <= IR_MAX_RANK;
	int64_t v[IR_MAX_RANK];
	for (int64_t i = 0; ok && i < n; i++)
		v[i] = dtype_get_int(p->data, p->dtype, i);
	if (ok && k->op->type == OP_RESHAPE) {
		int allowzero = (int)op_int(k->op, "allowzero", 0), neg = -1;
		int64_t rest = 1;
		for (int i = 0; i < rank; i++) {
			want[i] = v[i] == 0 && !allowzero && i < x->rank ? x->shape[i] : v[i];
			if (want[i] == -1 && neg < 0)
				neg = i;
			else if (want[i] < 0)
				ok = 0;
			else
				rest *= want[i];
		}
		if (ok && neg >= 0)
			want[neg] = rest ? view_numel(x) / rest : -1;
	} else if (ok && k->op->type == OP_EXPAND) {
		ok = broadcast_shape(x->rank, x->shape, rank, v, &rank, want) == 0;
	} else if (ok) {   /* Tile */
		ok = rank == x->rank;
		for (int i = 0; ok && i < rank; i++)
			want[i] = x->shape[i] * v[i];
	}
	if (ok && rank == y->rank && !memcmp(want, y->shape, sizeof(int64_t) * (size_t)rank))
		return 0;
	char got[IR_MAX_RANK * 21 + 3], fixed[IR_MAX_RANK * 21 + 3];
	dims_str(got, sizeof got, (int)(n <= IR_MAX_RANK ? n : IR_MAX_RANK), v);
	dims_str(fixed, sizeof fixed, y->rank, y->shape);
	return op_error(k->op, "input '%s' is %s at run time: it does not give the output shape "
			"%s the model declares", k->g ? k->g->tensors[k->op->in[1]].name : "1", got,
			fixed);
}
