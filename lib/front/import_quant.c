/* import_quant.c - the ONNX quantisation operators (formats/tpuc-quant.5,
 * "Pre-quantised models").
 *
 * QuantizeLinear and DequantizeLinear are ops of their own (lib/ops/qdq.c);
 * the operators of the QOperator format are written as the QDQ form they
 * mean, the way onnxruntime's own QDQ transformer reads them:
 *
 *   QLinearConv(x, xs, xz, w, ws, wz, ys, yz, B)
 *       = Q(Conv(DQ(x, xs, xz), DQ(w, ws, wz), DQ(B, xs * ws)), ys, yz)
 *   QLinearMatMul, QLinearAdd, QLinearMul, QLinearConcat, QLinearSigmoid,
 *   QLinearLeakyRelu, QLinearAveragePool, QLinearGlobalAveragePool alike;
 *   ConvInteger, MatMulInteger = Cast<i32>(op(DQ(a, 1, az), DQ(b, 1, bz))).
 *
 * Dequantize of a constant is folded into a float weight at once, so Conv
 * sees its weight; top-opt's fold-qdq pass then turns each Q -> DQ pair
 * into the scale and zero point of the float tensor between them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "front/import_ops.h"
#include "ir/op.h"
#include "passes/passes.h"

/* Infer op I (and fold it when constant); its outputs become known. */
static int settle(struct imp *im, int i)
{
	struct ir_graph *g = im->g;
	struct ir_op *op = &g->ops[i];
	if (op_infer(g, op) < 0)
		return err_prefix("'%s'", im->path);
	for (int j = 0; j < op->n_out; j++)
		set_known(im, op->out[j]);
	if (pass_fold_op(g, i, SIZE_MAX) < 0)
		return err_prefix("'%s'", im->path);
	return 0;
}

/* A new tensor named after the node's output and SUFFIX. */
static int new_tensor(struct imp *im, int o, const char *suffix)
{
	char base[512];
	snprintf(base, sizeof base, "%s_%s", im->g->tensors[o].name, suffix);
	char *name = graph_unique_name(im->g, base, 1);
	int t = graph_add_tensor(im->g, name, DT_F32, 0, NULL);
	free(name);
	return t;
}

/* Append op T named after the node and SUFFIX, reading IN and writing OUT
 * (a new tensor when OUT < 0); returns the op's index, or -1. */
static int add(struct imp *im, int o, enum op_type t, int n_in, const int *in, int out,
	       const char *suffix)
{
	char base[512];
	if (out < 0)
		out = new_tensor(im, o, suffix);
	snprintf(base, sizeof base, "%s_%s", im->node_name, suffix);
	return graph_add_op(im->g, t, base, n_in, in, 1, &out);
}

/* Dequantize X with scale S and zero point Z (-1: none) on AXIS; returns
 * the float tensor, or -1. */
static int dq(struct imp *im, int o, int x, int s, int z, int64_t axis, const char *suffix)
{
	int k = add(im, o, OP_DEQUANTIZELINEAR, 3, (int[]){ x, s, z }, -1, suffix);
	op_set_int(&im->g->ops[k], "axis", axis);
	return settle(im, k) < 0 ? -1 : im->g->ops[k].out[0];
}

/* A scalar f32 weight of value 1 (integer ops dequantise with it). */
static int one(struct imp *im, int o)
{
	float v = 1;
	char base[512];
	snprintf(base, sizeof base, "%s_one", im->g->tensors[o].name);
	char *name = graph_unique_name(im->g, base, 1);
	int t = graph_add_weight(im->g, name, DT_F32, 0, NULL, &v);
	free(name);
	set_known(im, t);
	return t;
}

/* The node's op K, which the table made a DequantizeLinear, stops being
 * the node: it becomes the Dequantize of input 0, and the node's output O
 * is returned through *O.  Later ops write O. */
static int take_over(struct imp *im, int k, int *o, int n_keep, int *in)
{
	struct ir_graph *g = im->g;
	struct ir_op *op = &g->ops[k];
	*o = op->out[0];
	for (int i = 0; i < op->n_in && i < n_keep; i++)
		in[i] = op->in[i];
	for (int i = op->n_in; i < n_keep; i++)
		in[i] = -1;
	return 0;
}

/* Output O quantised from float F with scale S and zero point Z. */
static int q_out(struct imp *im, int o, int f, int s, int z)
{
	int k = add(im, o, OP_QUANTIZELINEAR, 3, (int[]){ f, s, z }, o, "q");
	op_set_int(&im->g->ops[k], "axis", 1);
	return settle(im, k);
}

/* The ops replacing node op K: op K itself is retired by turning it into
 * the first Dequantize, on input IN0 (scale S, zero point Z). */
static int first_dq_axis(struct imp *im, int k, int o, int x, int s, int z, int64_t axis,
			 const char *suffix)
{
	struct ir_graph *g = im->g;
	int mid = new_tensor(im, o, suffix);
	struct ir_op *op = &g->ops[k];
	op->type = OP_DEQUANTIZELINEAR;
	op_set_inputs(op, 3, (int[]){ x, s, z });
	op->out[0] = mid;
	op_set_int(op, "axis", axis);
	char base[512];
	snprintf(base, sizeof base, "%s_%s", im->node_name, suffix);
	free(op->name);
	op->name = xstrdup(base);
	return settle(im, k) < 0 ? -1 : mid;
}

static int first_dq(struct imp *im, int k, int o, int x, int s, int z, const char *suffix)
{
	return first_dq_axis(im, k, o, x, s, z, 1, suffix);
}

int cv_qaxis(struct imp *im, struct ir_op *op)
{
	int64_t axis;
	if (im->opset < 13 && attr_find(im->node, "axis"))
		return node_err(im, "attribute 'axis' needs opset 13");
	if (attr_int(im, "axis", 1, &axis) < 0)
		return -1;
	op_set_int(op, "axis", axis);
	return 0;
}

/* A float op of the node's kind on the dequantised inputs: Conv and
 * pooling take the node's attributes through their converters. */
static int float_op(struct imp *im, int o, enum op_type t, int n_in, const int *in,
		    int (*convert)(struct imp *, struct ir_op *), int out)
{
	int k = add(im, o, t, n_in, in, out, "f");
	if (convert && convert(im, &im->g->ops[k]) < 0)
		return -1;
	return settle(im, k) < 0 ? -1 : im->g->ops[k].out[0];
}

static int refuse_1d(struct imp *im, int x)
{
	const struct ir_tensor *t = known_tensor(im, x);
	if (t && t->rank != 4)
		return node_err(im, "only 2-D (NCHW) inputs are supported, input '%s' has rank %d",
				t->name, t->rank);
	return 0;
}

int cv_qlinearconv(struct imp *im, struct ir_op *op)
{
	int k = (int)(op - im->g->ops), o, in[9];
	take_over(im, k, &o, 9, in);
	if (refuse_1d(im, in[0]) < 0)
		return -1;
	int x = first_dq(im, k, o, in[0], in[1], in[2], "x");
	int w = x < 0 ? -1 : dq(im, o, in[3], in[4], in[5], 0, "w");
	if (w < 0)
		return -1;
	int b = -1;
	if (in[8] >= 0) {
		int m = add(im, o, OP_MUL, 2, (int[]){ in[1], in[4] }, -1, "bias_scale");
		if (settle(im, m) < 0)
			return -1;
		b = dq(im, o, in[8], im->g->ops[m].out[0], -1, 0, "b");
		if (b < 0)
			return -1;
	}
	int y = float_op(im, o, OP_CONV, 3, (int[]){ x, w, b }, cv_conv, -1);
	return y < 0 ? -1 : q_out(im, o, y, in[6], in[7]);
}

/* The integer ops' result: float y (-1: failed) cast to i32 as output o. */
static int settle_i32(struct imp *im, int o, int y)
{
	if (y < 0)
		return -1;
	int c = add(im, o, OP_CAST, 1, &y, o, "i32");
	op_set_str(&im->g->ops[c], "to", "i32");
	return settle(im, c);
}

int cv_convinteger(struct imp *im, struct ir_op *op)
{
	int k = (int)(op - im->g->ops), o, in[4];
	take_over(im, k, &o, 4, in);
	if (refuse_1d(im, in[0]) < 0)
		return -1;
	int u = one(im, o);
	int x = first_dq(im, k, o, in[0], u, in[2], "x");
	int w = x < 0 ? -1 : dq(im, o, in[1], u, in[3], 0, "w");
	int y = w < 0 ? -1 : float_op(im, o, OP_CONV, 3, (int[]){ x, w, -1 }, cv_conv, -1);
	return settle_i32(im, o, y);
}

int cv_matmulinteger(struct imp *im, struct ir_op *op)
{
	int k = (int)(op - im->g->ops), o, in[4];
	take_over(im, k, &o, 4, in);
	int u = one(im, o);
	/* a's zero point is per row when 1-D */
	int a = first_dq_axis(im, k, o, in[0], u, in[2], -2, "a");
	/* b's zero point is per column (the last axis) when 1-D */
	int b = a < 0 ? -1 : dq(im, o, in[1], u, in[3], -1, "b");
	int y = b < 0 ? -1 : float_op(im, o, OP_MATMUL, 2, (int[]){ a, b }, NULL, -1);
	return settle_i32(im, o, y);
}

/* QLinearMatMul(a, as, az, b, bs, bz, ys, yz); b per column. */
int cv_qlinearmatmul(struct imp *im, struct ir_op *op)
{
	int k = (int)(op - im->g->ops), o, in[8];
	take_over(im, k, &o, 8, in);
	int a = first_dq(im, k, o, in[0], in[1], in[2], "a");
	int b = a < 0 ? -1 : dq(im, o, in[3], in[4], in[5], -1, "b");
	int y = b < 0 ? -1 : float_op(im, o, OP_MATMUL, 2, (int[]){ a, b }, NULL, -1);
	return y < 0 ? -1 : q_out(im, o, y, in[6], in[7]);
}

/* com.microsoft QLinearAdd and QLinearMul(a, as, az, b, bs, bz, cs, cz). */
static int qlinear_binary(struct imp *im, struct ir_op *op, enum op_type t)
{
	int k = (int)(op - im->g->ops), o, in[8];
	take_over(im, k, &o, 8, in);
	int a = first_dq(im, k, o, in[0], in[1], in[2], "a");
	int b = a < 0 ? -1 : dq(im, o, in[3], in[4], in[5], 1, "b");
	int y = b < 0 ? -1 : float_op(im, o, t, 2, (int[]){ a, b }, NULL, -1);
	return y < 0 ? -1 : q_out(im, o, y, in[6], in[7]);
}

int cv_qlinearadd(struct imp *im, struct ir_op *op) { return qlinear_binary(im, op, OP_ADD); }
int cv_qlinearmul(struct imp *im, struct ir_op *op) { return qlinear_binary(im, op, OP_MUL); }

/* com.microsoft unary forms (x, xs, xz, ys, yz) with the float op's
 * converter for its attributes. */
static int qlinear_unary(struct imp *im, struct ir_op *op, enum op_type t,
			 int (*convert)(struct imp *, struct ir_op *))
{
	int k = (int)(op - im->g->ops), o, in[5];
	take_over(im, k, &o, 5, in);
	int x = first_dq(im, k, o, in[0], in[1], in[2], "x");
	int y = x < 0 ? -1 : float_op(im, o, t, 1, &x, convert, -1);
	return y < 0 ? -1 : q_out(im, o, y, in[3], in[4]);
}

int cv_qlinearsigmoid(struct imp *im, struct ir_op *op)
{
	return qlinear_unary(im, op, OP_SIGMOID, NULL);
}

int cv_qlinearleakyrelu(struct imp *im, struct ir_op *op)
{
	return qlinear_unary(im, op, OP_LEAKYRELU, cv_leakyrelu);
}

/* The two QLinear pools: NCHW only. */
static int qlinear_pool(struct imp *im, struct ir_op *op, enum op_type t,
			int (*cv)(struct imp *, struct ir_op *))
{
	int64_t v;
	if (attr_int(im, "channels_last", 0, &v) < 0)
		return -1;
	if (v)
		return node_err(im, "channels_last %lld is not supported", (long long)v);
	return qlinear_unary(im, op, t, cv);
}

int cv_qlinearavgpool(struct imp *im, struct ir_op *op)
{
	return qlinear_pool(im, op, OP_AVGPOOL, cv_avgpool);
}

int cv_qlineargavgpool(struct imp *im, struct ir_op *op)
{
	return qlinear_pool(im, op, OP_GAVGPOOL, NULL);
}

/* com.microsoft QLinearConcat(ys, yz, x0, x0s, x0z, x1, ...; axis). */
int cv_qlinearconcat(struct imp *im, struct ir_op *op)
{
	int k = (int)(op - im->g->ops), o;
	int n = op->n_in;
	if (n < 5 || (n - 2) % 3)
		return node_err(im, "%d inputs, expected 2 + 3 per tensor", n);
	int *in = xmalloc(sizeof(int) * (size_t)n);
	take_over(im, k, &o, n, in);
	int m = (n - 2) / 3;
	int *f = xmalloc(sizeof(int) * (size_t)m);
	int rc = 0;
	for (int i = 0; i < m && rc == 0; i++) {
		char suffix[32];
		snprintf(suffix, sizeof suffix, "x%d", i);
		f[i] = i ? dq(im, o, in[2 + 3 * i], in[3 + 3 * i], in[4 + 3 * i], 1, suffix)
			 : first_dq(im, k, o, in[2], in[3], in[4], suffix);
		rc = f[i] < 0 ? -1 : 0;
	}
	int y = rc < 0 ? -1 : float_op(im, o, OP_CONCAT, m, f, cv_concat, -1);
	rc = y < 0 ? -1 : q_out(im, o, y, in[0], in[1]);
	free(in);
	free(f);
	return rc;
}

/* ---- ops a QOperator model runs on the integers directly ---- */

/* MaxPool, Flatten, Reshape and the like read an i8 or u8 tensor as it
 * is in a QOperator model (onnxruntime runs them on the codes).  When
 * input 0 of a node of type T is such a tensor written by a
 * QuantizeLinear, *X becomes its Dequantize and the QuantizeLinear's op
 * index is returned, for quant_direct_out; -1 otherwise. */
int quant_direct_in(struct imp *im, enum op_type t, int *x)
{
	if (t != OP_MAXPOOL && t != OP_FLATTEN && t != OP_RESHAPE && t != OP_TRANSPOSE &&
	    t != OP_SQUEEZE && t != OP_UNSQUEEZE && t != OP_GMAXPOOL)
		return -1;
	const struct ir_tensor *s = *x >= 0 ? known_tensor(im, *x) : NULL;
	if (!s || (s->dtype != DT_I8 && s->dtype != DT_U8) || s->data)
		return -1;
	struct ir_graph *g = im->g;
	int p = -1;
	for (int i = g->n_ops - 1; i >= 0 && p < 0; i--)
		if (g->ops[i].type == OP_QUANTIZELINEAR && g->ops[i].out[0] == *x)
			p = i;
	if (p < 0 || g->ops[p].n_in < 2)
		return -1;
	int sc = g->ops[p].in[1], zp = g->ops[p].n_in > 2 ? g->ops[p].in[2] : -1;
	int64_t axis = op_int(&g->ops[p], "axis", 1);
	int f = dq(im, *x, *x, sc, zp, axis, "dq");
	if (f < 0)
		return -2;
	*x = f;
	return p;
}

/* The node's op K (its output a float tensor now) quantised again with
 * the parameters of QuantizeLinear op P, writing the node's output. */
int quant_direct_out(struct imp *im, int k, int p)
{
	struct ir_graph *g = im->g;
	int sc = g->ops[p].in[1], zp = g->ops[p].n_in > 2 ? g->ops[p].in[2] : -1;
	int64_t axis = op_int(&g->ops[p], "axis", 1);
	int q = import_extra_op(im, k, OP_QUANTIZELINEAR, 3, (int[]){ -1, sc, zp }, "q");
	op_set_int(&g->ops[q], "axis", axis);
	return 0;
}
