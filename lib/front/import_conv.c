/* import_conv.c - ONNX converters (lib/front/import_ops.h) for conv, pooling,
 * BatchNormalization, Gemm, ConvTranspose and the recurrent ops (LSTM, GRU,
 * RNN).
 */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "front/import_ops.h"
#include "front/import_util.h"
#include "ir/base.h"
#include "ir/convert.h"
#include "ir/op.h"
#include "ir/op_traits.h"
#include "onnx.pb-c.h"

/* Conv, MaxPool, AveragePool: 2-D only; every attribute written out
 * explicitly, auto_pad resolved into pads [top, left, bottom, right]. */
int cv_spatial(struct imp *im, struct ir_op *op, enum spatial_kind kind)
{
	int64_t k[2], s[2] = { 1, 1 }, d[2] = { 1, 1 }, p[4] = { 0, 0, 0, 0 };
	int nk, ns, nd, np;
	const struct ir_tensor *x = known_tensor(im, op->in[0]);
	if (x && x->rank == 5)
		return cv_spatial_nd(im, op, kind);   /* 3-D: import_spatial_nd.c */
	if (x && x->rank != 4)
		return node_err(im, "only 1-D, 2-D and 3-D inputs are supported, input '%s' has rank %d",
				x->name, x->rank);
	if (attr_spatial(im, "kernel_shape", 1, k, 2, &nk) < 0 ||
	    attr_spatial(im, "strides", 1, s, 2, &ns) < 0 ||
	    attr_spatial(im, "dilations", 1, d, 2, &nd) < 0 ||
	    attr_spatial(im, "pads", 0, p, 4, &np) < 0)
		return -1;
	if (im->as2d) {
		/* 1-D lists: H gets kernel 1, stride 1, dilation 1, no pads. */
		if (nk > 1 || ns > 1 || nd > 1 || (np && np != 2))
			return node_err(im, "a 1-D node needs 1-value kernel_shape, strides, "
					"dilations and 2-value pads");
		k[1] = k[0], s[1] = s[0], d[1] = d[0];
		k[0] = s[0] = d[0] = 1;
		nk = nk ? 2 : 0, ns = ns ? 2 : 0, nd = nd ? 2 : 0;
		if (np) {
			int64_t p0 = p[0], p1 = p[1];
			p[0] = 0, p[1] = p0, p[2] = 0, p[3] = p1;
			np = 4;
		}
	}
	if (kind == SP_CONV) {
		/* the weight may be a graph input or computed: ir-run reads it
		 * at run time (the chip needs a constant, top2tpu says so) */
		const struct ir_tensor *w = &im->g->tensors[op->in[1]];
		if (w->rank != 4)
			return node_err(im, "only 2-D convolution is supported (weight '%s' has rank %d)",
					w->name, w->rank);
		if (nk == 2 && (k[0] != w->shape[2] || k[1] != w->shape[3]))
			return node_err(im, "kernel_shape does not match weight '%s'", w->name);
		k[0] = w->shape[2];
		k[1] = w->shape[3];
		nk = 2;
	}
	if (nk == 0)
		return node_err(im, "attribute 'kernel_shape' is missing");
	if (nk != 2)
		return node_err(im, "only 2-D kernels are supported (kernel_shape has %d values)", nk);
	if (ns && ns != 2)
		return node_err(im, "attribute 'strides' has %d values, 2 are needed", ns);
	if (nd && nd != 2)
		return node_err(im, "attribute 'dilations' has %d values, 2 are needed", nd);
	if (np && np != 4)
		return node_err(im, "attribute 'pads' has %d values, 4 are needed", np);
	for (int i = 0; i < 2; i++)
		if (k[i] < 1 || s[i] < 1 || d[i] < 1)
			return node_err(im, "kernel_shape, strides and dilations must be positive");
	for (int i = 0; i < 4; i++)
		if (p[i] < 0)
			return node_err(im, "negative pads are not supported");

	if (spatial_auto_pad(im, x, 2, k, s, d, p) < 0)
		return -1;

	op_set_ints(op, "kernel_shape", 2, k);
	op_set_ints(op, "strides", 2, s);
	op_set_ints(op, "pads", 4, p);
	op_set_ints(op, "dilations", 2, d);
	return cv_spatial_attrs(im, op, kind);
}

int cv_conv(struct imp *im, struct ir_op *op) { return cv_spatial(im, op, SP_CONV); }
/* MaxPool; its optional Indices output (2-D pools) is a MaxPoolIndices op
 * beside it (lib/ops/detect.c), with the same window. */
int cv_maxpool(struct imp *im, struct ir_op *op)
{
	struct ir_graph *g = im->g;
	int k = (int)(op - g->ops), ind = op->n_out > 1 ? op->out[1] : -1;
	const struct ir_tensor *x = known_tensor(im, op->in[0]);
	if (ind >= 0 && (im->as2d || !x || x->rank != 4))
		return node_err(im, "the Indices output needs a 2-D (NCHW) MaxPool");
	op->n_out = 1;
	if (cv_spatial(im, op, SP_MAXPOOL) < 0)
		return -1;
	if (ind < 0)
		return 0;
	int64_t so;
	if (attr_int(im, "storage_order", 0, &so) < 0)
		return -1;
	char base[512];
	snprintf(base, sizeof base, "%s_indices", im->node_name);
	int in0 = g->ops[k].in[0];
	int i = graph_add_op(g, OP_MAXPOOLINDICES, base, 1, &in0, 1, &ind);
	op_copy_attrs(&g->ops[i], &g->ops[k]);
	op_set_int(&g->ops[i], "storage_order", so);
	return 0;
}
int cv_avgpool(struct imp *im, struct ir_op *op) { return cv_spatial(im, op, SP_AVGPOOL); }

int cv_batchnorm(struct imp *im, struct ir_op *op)
{
	double eps;
	int64_t v;
	if (attr_epsilon(im, 1e-5, &eps) < 0)
		return -1;
	if (attr_int(im, "spatial", 1, &v) < 0)
		return -1;
	if (v != 1)
		return node_err(im, "spatial %lld is not supported", (long long)v);
	if (attr_int(im, "training_mode", 0, &v) < 0)
		return -1;
	if (v != 0)
		return node_err(im, "training_mode %lld is not supported", (long long)v);
	op_set_float(op, "epsilon", eps);
	return 0;
}

int cv_gemm(struct imp *im, struct ir_op *op)
{
	double alpha, beta;
	int64_t ta, tb;
	if (attr_float(im, "alpha", 1, &alpha) < 0 || attr_float(im, "beta", 1, &beta) < 0 ||
	    attr_bool(im, "transA", 0, &ta) < 0 || attr_bool(im, "transB", 0, &tb) < 0)
		return -1;
	op_set_float(op, "alpha", alpha);
	op_set_float(op, "beta", beta);
	op_set_int(op, "transA", ta != 0);
	op_set_int(op, "transB", tb != 0);
	return 0;
}

/* ConvTranspose: 2-D (1-D through as2d); output_shape and auto_pad are
 * resolved into pads [top, left, bottom, right] as the ONNX spec says. */
int cv_convtranspose(struct imp *im, struct ir_op *op)
{
	int64_t k[2] = { 0, 0 }, s[2] = { 1, 1 }, d[2] = { 1, 1 }, p[4] = { 0, 0, 0, 0 };
	int64_t opad[2] = { 0, 0 }, os[4], grp;
	int nk, ns, nd, np, no, nos;
	const struct ir_tensor *x = known_tensor(im, op->in[0]), *w = &im->g->tensors[op->in[1]];
	if (x && x->rank == SPATIAL_ND + 2 && !im->as2d)
		return cv_convtranspose_nd(im, op);
	if (!x || x->rank != 4 || w->rank != 4)
		return node_err(im, "only 1-D, 2-D and 3-D inputs are supported");
	if (attr_spatial(im, "kernel_shape", 1, k, 2, &nk) < 0 ||
	    attr_spatial(im, "strides", 1, s, 2, &ns) < 0 ||
	    attr_spatial(im, "dilations", 1, d, 2, &nd) < 0 ||
	    attr_spatial(im, "pads", 0, p, 4, &np) < 0 ||
	    attr_spatial(im, "output_padding", 0, opad, 2, &no) < 0 ||
	    attr_spatial(im, "output_shape", 1, os, 4, &nos) < 0 || attr_int(im, "group", 1, &grp) < 0)
		return -1;
	if (grp < 1 || grp > SPATIAL_MAX)
		return node_err(im, "attribute 'group' value %lld is out of range [1, %d]",
				(long long)grp, SPATIAL_MAX);
	if (im->as2d) {
		if (nk > 1 || ns > 1 || nd > 1 || no > 1 || nos > 1 || (np && np != 2))
			return node_err(im, "a 1-D node needs 1-value lists and 2-value pads");
		k[1] = k[0], s[1] = s[0], d[1] = d[0], opad[1] = opad[0], os[1] = os[0];
		k[0] = s[0] = d[0] = 1, opad[0] = 0, os[0] = 1;
		nk = nk ? 2 : 0, nos = nos ? 2 : 0;
		if (np) {
			int64_t p0 = p[0], p1 = p[1];
			p[0] = 0, p[1] = p0, p[2] = 0, p[3] = p1;
		}
	}
	if (nos == 4) {
		os[0] = os[2];
		os[1] = os[3];
		nos = 2;
	}
	if (!nk)
		k[0] = w->shape[2], k[1] = w->shape[3];
	char autopad[16];
	if (attr_str(im, "auto_pad", "NOTSET", autopad, sizeof autopad) < 0)
		return -1;
	int same = !strncmp(autopad, "SAME_", 5);
	if (!strcmp(autopad, "VALID"))
		memset(p, 0, sizeof p);
	if (nos || same) {
		for (int i = 0; i < 2; i++) {
			int64_t in = x->shape[2 + i], out = nos ? os[i] : in * s[i];
			int64_t total = s[i] * (in - 1) + opad[i] + (k[i] - 1) * d[i] + 1 - out;
			/* ONNX's split of the total (rounding down, also below 0) */
			int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
			int upper = !strcmp(autopad, "SAME_UPPER");
			p[i] = upper ? half : total - half;
			p[i + 2] = upper ? total - half : half;
			/* an output larger than the convolution's: the rows past its
			 * end are output_padding (bias only); rows before its start
			 * are not expressible */
			if (p[i] < 0)
				return node_err(im, "output_shape is larger than the convolution gives "
						"and needs padding before it");
			if (p[i + 2] < 0) {
				opad[i] -= p[i + 2];
				p[i + 2] = 0;
			}
		}
	}
	op_set_ints(op, "kernel_shape", 2, k);
	op_set_ints(op, "strides", 2, s);
	op_set_ints(op, "dilations", 2, d);
	op_set_ints(op, "pads", 4, p);
	op_set_ints(op, "output_padding", 2, opad);
	op_set_int(op, "group", grp);
	return 0;
}

/* LSTM, GRU, RNN: direction, hidden_size (from R when absent), layout,
 * clip when given, and the activations joined with commas (the defaults
 * written out); trailing absent optional inputs are dropped. */
int cv_rnn(struct imp *im, struct ir_op *op)
{
	char dir[32];
	int64_t hidden, layout;
	if (attr_str(im, "direction", "forward", dir, sizeof dir) < 0 ||
	    attr_int(im, "hidden_size", -1, &hidden) < 0 || attr_int(im, "layout", 0, &layout) < 0)
		return -1;
	const struct ir_tensor *r = known_tensor(im, op->in[2]);
	if (hidden < 0 && (!r || r->rank != 3))
		return node_err(im, "hidden_size is absent and R's shape is unknown");
	op_set_str(op, "direction", dir);
	op_set_int(op, "hidden_size", hidden < 0 ? r->shape[2] : hidden);
	op_set_int(op, "layout", layout);
	if (attr_find(im->node, "clip") && put_float(im, op, "clip", 0) < 0)
		return -1;
	if (op->type == OP_GRU && put_int(im, op, "linear_before_reset", 0) < 0)
		return -1;
	if (op->type == OP_LSTM && put_int(im, op, "input_forget", 0) < 0)
		return -1;
	const Onnx__AttributeProto *a = attr_find(im->node, "activations");
	char acts[256] = "";
	if (!a) {
		snprintf(acts, sizeof acts, "%s", op->type == OP_LSTM ? "Sigmoid,Tanh,Tanh"
						  : op->type == OP_GRU ? "Sigmoid,Tanh" : "Tanh");
	} else if (a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS) {
		return attr_type_err(im, "activations", "a list of strings");
	} else {
		size_t used = 0;
		for (size_t i = 0; i < a->n_strings; i++) {
			size_t len = a->strings[i].len;
			if (memchr(a->strings[i].data, ',', len) || used + len + 2 > sizeof acts)
				return node_err(im, "attribute 'activations' is malformed");
			used += (size_t)snprintf(acts + used, sizeof acts - used, "%s%.*s", i ? "," : "",
						 (int)len, (const char *)a->strings[i].data);
		}
	}
	op_set_str(op, "activations", acts);
	/* constant inputs equal to their defaults are dropped, so that the op
	 * fits a compute command's operands: a zero B, initial_h, initial_c or
	 * P, and sequence_lens that are all the full length */
	const struct ir_tensor *x = known_tensor(im, op->in[0]);
	int64_t seq = x && x->rank == 3 ? x->shape[layout ? 1 : 0] : -1;
	for (int i = 3; i < op->n_in; i++) {
		const struct ir_tensor *t = op->in[i] >= 0 ? &im->g->tensors[op->in[i]] : NULL;
		if (!t || !t->data)
			continue;
		int64_t n = tensor_numel(t), j = 0;
		double dflt = i == 4 ? (double)seq : 0;
		while (j < n && dtype_get(t->data, t->dtype, j) == dflt)
			j++;
		if (j == n && (i != 4 || seq >= 0))
			op->in[i] = -1;
	}
	while (op->n_in > 3 && op->in[op->n_in - 1] < 0)
		op->n_in--;
	return 0;
}
