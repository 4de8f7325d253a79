/* reorder.c - weight-reorder: merge per-channel requantisation parameters
 * (the ops with OPF_COEFF in lib/ir/op_traits.h) into one coefficient tensor and
 * transpose Gemm weights so that output features lead (lib/back/reorder.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/base.h"
#include "ir/op.h"
#include "ir/op_traits.h"
#include "back/reorder.h"

/* How many ops read tensor t. */
static int readers(const struct ir_graph *g, int t)
{
	int n = 0;
	for (int i = 0; i < g->n_ops; i++)
		for (int j = 0; j < g->ops[i].n_in; j++)
			n += g->ops[i].in[j] == t;
	return n;
}

static int is_i32_vector(const struct ir_graph *g, int t, int64_t n)
{
	if (t < 0)
		return 0;
	const struct ir_tensor *x = &g->tensors[t];
	return x->data && x->dtype == DT_I32 && tensor_numel(x) == n;
}

/* [x, w, bias, mult, shift] -> [x, w, coeff [OC,3]]. */
static int merge_coeff(struct ir_graph *g, int oi)
{
	struct ir_op *op = &g->ops[oi];
	if (op->n_in != 5)
		return 0;
	int64_t oc = tensor_numel(&g->tensors[op->in[3]]);
	for (int i = 3; i < 5; i++)
		if (!is_i32_vector(g, op->in[i], oc))
			return err_set("op '%s' (%s): input %d is not an i32 weight of %lld values",
				       op->name, op_name(op->type), i, (long long)oc);
	if (op->in[2] >= 0 && !is_i32_vector(g, op->in[2], oc))
		return err_set("op '%s' (%s): bias is not an i32 weight of %lld values",
			       op->name, op_name(op->type), (long long)oc);
	int32_t *c = xmalloc(sizeof(int32_t) * (size_t)(3 * oc));
	const int32_t *b = op->in[2] >= 0 ? g->tensors[op->in[2]].data : NULL;
	const int32_t *m = g->tensors[op->in[3]].data, *s = g->tensors[op->in[4]].data;
	for (int64_t i = 0; i < oc; i++) {
		c[3 * i] = b ? b[i] : 0;
		c[3 * i + 1] = m[i];
		c[3 * i + 2] = s[i];
	}
	size_t len = strlen(op->name) + 8;
	char *base = xmalloc(len);
	snprintf(base, len, "%s_coeff", op->name);
	char *name = graph_unique_name(g, base, 2);
	int t = graph_add_weight(g, name, DT_I32, 2, (int64_t[]){ oc, 3 }, c);
	free(base);
	free(name);
	free(c);
	op = &g->ops[oi];
	op->in[2] = t;
	op->n_in = 3;
	return 0;
}

/* Gemm with a weight B [K,N] and transB = 0: B becomes [N,K], transB = 1. */
static int transpose_gemm(struct ir_graph *g, int oi)
{
	struct ir_op *op = &g->ops[oi];
	if (op->n_in < 2 || op_int(op, "transB", 0) || op->in[1] < 0)
		return 0;
	int bt = op->in[1];
	struct ir_tensor *b = &g->tensors[bt];
	if (!b->data || b->rank != 2)
		return 0;
	int64_t k = b->shape[0], n = b->shape[1];
	size_t es = dtype_size(b->dtype);
	unsigned char *t = xmalloc(b->nbytes ? b->nbytes : 1);
	const unsigned char *src = b->data;
	for (int64_t i = 0; i < k; i++)
		for (int64_t j = 0; j < n; j++)
			memcpy(t + (size_t)(j * k + i) * es, src + (size_t)(i * n + j) * es, es);
	if (readers(g, bt) > 1) {
		char *name = graph_unique_name(g, b->name, 2);
		bt = graph_add_weight(g, name, b->dtype, 2, (int64_t[]){ n, k }, t);
		free(name);
		g->tensors[bt].scale = g->tensors[op->in[1]].scale;
		g->tensors[bt].zero_point = g->tensors[op->in[1]].zero_point;
		g->ops[oi].in[1] = bt;
	} else {
		tensor_set_data(b, t, b->nbytes);
		b->shape[0] = n;
		b->shape[1] = k;
	}
	free(t);
	op_set_int(&g->ops[oi], "transB", 1);
	return 0;
}

int weight_reorder(struct ir_graph *g)
{
	int int8 = g->mode == MODE_INT8;
	for (int i = 0; i < g->n_ops; i++) {
		enum op_type t = g->ops[i].type;
		if (int8 && op_has(t, OPF_COEFF) &&
		    merge_coeff(g, i) < 0)
			return -1;
		if (t == OP_GEMM && transpose_gemm(g, i) < 0)
			return -1;
	}
	graph_compact(g);
	g->stage = STAGE_REORDERED;
	return ir_verify(g);
}
