/* loss.c - NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss, f32,
 * as the ONNX reference computes them: input [N, C, d...], integer target
 * [N, d...], optional weight [C]; attributes reduction (none, sum, mean) and
 * ignore_index (when the attribute is present).  SoftmaxCrossEntropyLoss
 * takes log_softmax over axis 1 first and may also output it (output 1).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ir/base.h"
#include "ir/op.h"

static int loss_infer(struct ir_graph *g, struct ir_op *op)
{
	const struct ir_tensor *x = op_in(g, op, 0), *t = op_in(g, op, 1), *w = op_in(g, op, 2);
	if (x->dtype != DT_F32 || (w && w->dtype != DT_F32))
		return op_error(op, "input and weight must be f32");
	if (t->dtype != DT_I64 && t->dtype != DT_I32)
		return op_error(op, "target must be int32 or int64");
	if (x->rank < 2 || t->rank != x->rank - 1 || t->shape[0] != x->shape[0] ||
	    memcmp(t->shape + 1, x->shape + 2, sizeof(int64_t) * (size_t)(t->rank - 1)))
		return op_error(op, "target shape does not fit the input");
	if (w && (w->rank != 1 || w->shape[0] != x->shape[1]))
		return op_error(op, "weight must have one value per class");
	const char *red = op_str(op, "reduction", "mean");
	if (strcmp(red, "none") && strcmp(red, "sum") && strcmp(red, "mean"))
		return op_error(op, "reduction '%s' is not supported", red);
	if (!strcmp(red, "none"))
		op_set_out(g, op, 0, DT_F32, t->rank, t->shape);
	else
		op_set_out(g, op, 0, DT_F32, 0, NULL);
	if (op->n_out > 1)
		op_set_out(g, op, 1, DT_F32, x->rank, x->shape);
	return 0;
}

static int loss_run(struct kern *k)
{
	const struct view *x = &k->in[0], *t = &k->in[1];
	const float *w = k->n_in > 2 && k->in[2].data ? k->in[2].data : NULL;
	int64_t n = x->shape[0], c = x->shape[1], d = n * c > 0 ? view_numel(x) / (n * c) : 0;
	int has_ignore = op_attr(k->op, "ignore_index") != NULL;
	int64_t ignore = op_int(k->op, "ignore_index", 0);
	const char *red = op_str(k->op, "reduction", "mean");
	const float *lp = x->data;
	float *tmp = NULL;
	if (k->op->type == OP_SCELOSS) {
		/* log_softmax over the class axis */
		tmp = k->n_out > 1 ? k->out[1].data : xmalloc(sizeof(float) * (size_t)(view_numel(x) ? view_numel(x) : 1));
		const float *xd = x->data;
		for (int64_t b = 0; b < n; b++)
			for (int64_t i = 0; i < d; i++) {
				const float *xp = xd + b * c * d + i;
				float *yp = tmp + b * c * d + i, mx = -INFINITY;
				double sum = 0;
				for (int64_t j = 0; j < c; j++)
					mx = xp[j * d] > mx ? xp[j * d] : mx;
				for (int64_t j = 0; j < c; j++)
					sum += exp((double)xp[j * d] - mx);
				float ls = (float)log(sum);
				for (int64_t j = 0; j < c; j++)
					yp[j * d] = xp[j * d] - mx - ls;
			}
		lp = tmp;
	}
	float *y = k->out[0].data;
	double total = 0, wsum = 0;
	int rc = 0;
	for (int64_t b = 0; b < n && !rc; b++)
		for (int64_t i = 0; i < d; i++) {
			int64_t e = b * d + i;
			int64_t tv = t->dtype == DT_I64 ? ((const int64_t *)t->data)[e] : ((const int32_t *)t->data)[e];
			double l = 0, wt = 0;
			if (!(has_ignore && tv == ignore)) {
				if (tv < 0 || tv >= c) {
					rc = op_error(k->op, "target %lld out of range [0, %lld)", (long long)tv,
						      (long long)c);
					break;
				}
				wt = w ? w[tv] : 1.0;
				l = -(double)lp[(b * c + tv) * d + i] * wt;
			}
			if (!strcmp(red, "none"))
				y[e] = (float)l;
			total += l;
			wsum += wt;
		}
	if (tmp && k->n_out < 2)
		free(tmp);
	if (rc)
		return -1;
	if (!strcmp(red, "sum"))
		y[0] = (float)total;
	else if (!strcmp(red, "mean"))
		y[0] = (float)(w || has_ignore ? total / wsum : total / (double)(n * d));
	return 0;
}

const struct op_def op_def_NLLLOSS = {
	.infer = loss_infer, .run_f32 = loss_run,
};

const struct op_def op_def_SCELOSS = {
	.infer = loss_infer, .run_f32 = loss_run,
};
