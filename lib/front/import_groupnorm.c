/* import_groupnorm.c - GroupNormalization (opsets 18 and 21) has no op of its
 * own: it is written as Reshape [N, G, rest], LayerNormalization over the
 * last axis, Reshape back, then Mul by the scale and Add of the bias, one
 * value per channel shaped [C, 1, ...].  Opset 18 gives scale and bias per
 * group (spread here over the group's channels, so they must be constant);
 * opset 21 per channel.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "front/import_ops.h"
#include "front/import_util.h"
#include "ir/base.h"
#include "ir/op.h"

/* A tensor named after the node and SUFFIX (made unique). */
static int gn_tensor(struct imp *im, const char *suffix)
{
	char base[512];
	snprintf(base, sizeof base, "%s_%s", im->node_name, suffix);
	char *name = graph_unique_name(im->g, base, 1);
	int t = graph_add_tensor(im->g, name, DT_F32, 0, NULL);
	free(name);
	return t;
}

/* A constant f32 weight named after the node. */
static int gn_weight(struct imp *im, const char *suffix, int rank, const int64_t *shape, const float *v)
{
	char base[512];
	snprintf(base, sizeof base, "%s_%s", im->node_name, suffix);
	char *name = graph_unique_name(im->g, base, 1);
	int t = graph_add_weight(im->g, name, DT_F32, rank, shape, v);
	free(name);
	return t;
}

/* One op named after the node and SUFFIX. */
static int gn_op(struct imp *im, enum op_type type, const char *suffix, int n_in, const int *in, int out)
{
	char base[512];
	snprintf(base, sizeof base, "%s_%s", im->node_name, suffix);
	return graph_add_op(im->g, type, base, n_in, in, 1, &out);
}

/* Scale or bias input I as C per-channel floats in V (constant), or -1
 * after node_err(). */
static int gn_param(struct imp *im, int t, const char *what, int64_t c, int64_t groups, float *v)
{
	const struct ir_tensor *w = t >= 0 ? &im->g->tensors[t] : NULL;
	int64_t want = im->opset < 21 ? groups : c;
	if (!w)
		return node_err(im, "input %s is required", what);
	if (!w->data)
		return node_err(im, "%s must be a constant", what);
	if (w->dtype != DT_F32 || tensor_numel(w) != want)
		return node_err(im, "%s must hold %lld floats (one per %s)", what, (long long)want,
				im->opset < 21 ? "group" : "channel");
	const float *s = w->data;
	for (int64_t i = 0; i < c; i++)
		v[i] = im->opset < 21 ? s[i / (c / groups)] : s[i];
	return 0;
}

int import_groupnorm(struct imp *im, const char *out0)
{
	const Onnx__NodeProto *n = im->node;
	for (size_t i = 0; i < n->n_attribute; i++) {
		const char *an = n->attribute[i]->name ? n->attribute[i]->name : "";
		if (strcmp(an, "epsilon") && strcmp(an, "num_groups") && strcmp(an, "stash_type"))
			return node_err(im, "attribute '%s' is not supported", an);
	}
	for (size_t i = 1; i < n->n_output; i++)
		if (n->output[i] && *n->output[i])
			return node_err(im, "optional output '%s' is not supported", n->output[i]);
	if (n->n_input != 3)
		return node_err(im, "%zu inputs, expected 3", n->n_input);
	int in[3];
	for (int i = 0; i < 3; i++)
		if (resolve_input(im, n->input[i], &in[i]) < 0)
			return -1;
	const struct ir_tensor *x = known_tensor(im, in[0]);
	if (!x)
		return node_err(im, "the input shape is unknown");
	if (x->rank < 2)
		return node_err(im, "the input must have rank 2 or more");
	int64_t groups, stash;
	double eps;
	if (!attr_find(n, "num_groups"))
		return node_err(im, "attribute 'num_groups' is required");
	if (attr_int(im, "num_groups", 1, &groups) < 0 || attr_int(im, "stash_type", 1, &stash) < 0 ||
	    attr_epsilon(im, 1e-5, &eps) < 0)
		return -1;
	if (stash != 1)
		return node_err(im, "stash_type %lld is not supported", (long long)stash);
	int64_t c = x->shape[1];
	if (groups < 1 || c % groups)
		return node_err(im, "num_groups %lld does not divide the %lld channels",
				(long long)groups, (long long)c);
	float *scale = xmalloc(sizeof(float) * (size_t)c), *bias = xmalloc(sizeof(float) * (size_t)c);
	if (gn_param(im, in[1], "scale", c, groups, scale) < 0 ||
	    gn_param(im, in[2], "bias", c, groups, bias) < 0) {
		free(scale);
		free(bias);
		return -1;
	}
	int rank = x->rank;
	int64_t xshape[IR_MAX_RANK], gshape[3] = { x->shape[0], groups, 1 }, cshape[IR_MAX_RANK];
	memcpy(xshape, x->shape, sizeof(int64_t) * (size_t)rank);
	for (int d = 1; d < rank; d++)
		gshape[2] *= xshape[d];
	gshape[2] /= groups;
	cshape[0] = c;
	for (int d = 1; d < rank - 1; d++)
		cshape[d] = 1;

	int first = im->g->n_ops;
	float one = 1;
	int s_t = gn_weight(im, "scale", rank - 1, cshape, scale);
	int b_t = gn_weight(im, "bias", rank - 1, cshape, bias);
	int one_t = gn_weight(im, "one", 1, (int64_t[]){ 1 }, &one);
	free(scale);
	free(bias);
	int grouped = gn_tensor(im, "grouped"), normed = gn_tensor(im, "normed");
	int back = gn_tensor(im, "ungrouped"), scaled = gn_tensor(im, "scaled");
	int y = graph_add_tensor(im->g, out0, DT_F32, 0, NULL);
	name_index_set(&im->tensors, out0, y);
	int k = gn_op(im, OP_RESHAPE, "group", 1, &in[0], grouped);
	op_set_ints(&im->g->ops[k], "shape", 3, gshape);
	k = gn_op(im, OP_LAYERNORM, "norm", 2, (int[]){ grouped, one_t }, normed);
	op_set_int(&im->g->ops[k], "axis", 2);
	op_set_float(&im->g->ops[k], "epsilon", eps);
	k = gn_op(im, OP_RESHAPE, "ungroup", 1, &normed, back);
	op_set_ints(&im->g->ops[k], "shape", rank, xshape);
	gn_op(im, OP_MUL, "scale", 2, (int[]){ back, s_t }, scaled);
	gn_op(im, OP_ADD, "bias", 2, (int[]){ scaled, b_t }, y);
	return first;
}
