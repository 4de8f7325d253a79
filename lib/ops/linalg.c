/* linalg.c - Det and ReverseSequence for ir-run (the chip has neither: no
 * lower hook, top2tpu refuses them by name).
 *
 *   Det  X [..., M, M] (a float dtype) -> Y [...]: LU decomposition with
 *       partial pivoting, in double.
 *   ReverseSequence  X with a batch axis and a time axis (attributes
 *       batch_axis, time_axis: 0 and 1 in either order), sequence_lens [B]
 *       (int64, read at run time): the first sequence_lens[b] steps of
 *       batch entry b reversed, the rest copied.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ir/base.h"
#include "ir/convert.h"
#include "ir/op.h"

static int det_infer(struct ir_graph *g, struct ir_op *op)
{
	if (op_check_arity(g, op, 1, 1) < 0)
		return -1;
	const struct ir_tensor *x = op_in(g, op, 0);
	if (x->rank < 2 || x->shape[x->rank - 1] != x->shape[x->rank - 2])
		return op_error(op, "input must be [..., M, M]");
	if (!dtype_is_float(x->dtype))
		return op_error(op, "dtype %s is not supported", dtype_name(x->dtype));
	op_set_out(g, op, 0, x->dtype, x->rank - 2, x->shape);
	return 0;
}

static int det_run(struct kern *k)
{
	const struct view *x = &k->in[0], *y = &k->out[0];
	int64_t m = x->shape[x->rank - 1], nm = view_numel(y);
	double *a = xmalloc(sizeof *a * (size_t)(m * m != 0 ? m * m : 1));
	for (int64_t b = 0; b < nm; b++) {
		for (int64_t i = 0; i < m * m; i++)
			a[i] = dtype_get(x->data, x->dtype, b * m * m + i);
		double det = 1;
		for (int64_t c = 0; c < m && det != 0; c++) {
			int64_t p = c;
			for (int64_t r = c + 1; r < m; r++)
				if (fabs(a[r * m + c]) > fabs(a[p * m + c]))
					p = r;
			if (a[p * m + c] == 0) {
				det = 0;
				break;
			}
			if (p != c) {
				for (int64_t j = 0; j < m; j++) {
					double t = a[c * m + j];
					a[c * m + j] = a[p * m + j];
					a[p * m + j] = t;
				}
				det = -det;
			}
			det *= a[c * m + c];
			for (int64_t r = c + 1; r < m; r++) {
				double f = a[r * m + c] / a[c * m + c];
				for (int64_t j = c; j < m; j++)
					a[r * m + j] -= f * a[c * m + j];
			}
		}
		dtype_set(y->data, y->dtype, b, det);
	}
	free(a);
	return 0;
}

static int revseq_infer(struct ir_graph *g, struct ir_op *op)
{
	if (op_check_arity(g, op, 2, 2) < 0)
		return -1;
	const struct ir_tensor *x = op_in(g, op, 0), *l = op_in(g, op, 1);
	int64_t ba = op_int(op, "batch_axis", 1), ta = op_int(op, "time_axis", 0);
	if (x->rank < 2 || !((ba == 0 && ta == 1) || (ba == 1 && ta == 0)))
		return op_error(op, "needs rank 2 or more and batch_axis, time_axis 0 and 1");
	if (l->dtype != DT_I64 || l->rank != 1 || l->shape[0] != x->shape[ba])
		return op_error(op, "sequence_lens must be int64 [batch]");
	return infer_same(g, op);
}

static int revseq_run(struct kern *k)
{
	const struct view *x = &k->in[0], *l = &k->in[1], *y = &k->out[0];
	int ba = (int)op_int(k->op, "batch_axis", 1), ta = 1 - ba;
	int64_t nb = x->shape[ba], nt = x->shape[ta], inner = view_numel(x) / (nb * nt != 0 ? nb * nt : 1);
	size_t es = dtype_size(x->dtype);
	for (int64_t b = 0; b < nb; b++) {
		int64_t len = ((const int64_t *)l->data)[b];
		if (len < 0 || len > nt)
			return op_error(k->op, "sequence_lens[%lld] is %lld, outside [0, %lld]",
					(long long)b, (long long)len, (long long)nt);
		for (int64_t t = 0; t < nt; t++) {
			int64_t s = t < len ? len - 1 - t : t;
			int64_t to = ba ? t * nb + b : b * nt + t, from = ba ? s * nb + b : b * nt + s;
			memcpy((char *)y->data + (size_t)(to * inner) * es,
			       (const char *)x->data + (size_t)(from * inner) * es, (size_t)inner * es);
		}
	}
	return 0;
}

const struct op_def op_def_DET = { .infer = det_infer, .run_f32 = det_run };
const struct op_def op_def_REVERSESEQUENCE = { .infer = revseq_infer, .run_f32 = revseq_run };
