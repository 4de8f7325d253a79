/* onnx_import.c - ONNX model (protobuf-c over onnx.proto) to Top IR.
 * Opset differences are resolved here (inputs that became attributes,
 * auto_pad, Reshape's 0 and -1) so later stages see one form per operator.
 * This file is the dispatcher: graph inputs, Constant and Einsum nodes, and
 * every other node through the table of lib/front/import_table.c to its
 * converter in lib/front/import_*.c, then shape inference and folding.
 */
#include "front/onnx_import.h"

#include <limits.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "ir/base.h"
#include "ir/convert.h"
#include "ir/npz.h"
#include "front/import_control.h"
#include "front/import_ops.h"
#include "front/import_table.h"
#include "front/import_util.h"
#include "onnx.pb-c.h"
#include "front/onnx_depth.h"
#include "front/onnx_einsum.h"
#include "front/onnx_external.h"
#include "front/onnx_strip.h"
#include "ir/limit.h"
#include "ir/op.h"
#include "ir/op_traits.h"
#include "passes/passes.h"

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "onnx_import.c reads ONNX raw_data, which is little-endian, in place"
#endif

/* ---- nodes ---- */

/* A Constant node becomes a weight named after its output. */
static int import_constant(struct imp *im, const char *out)
{
	const Onnx__NodeProto *n = im->node;
	if (n->n_attribute != 1)
		return node_err(im, "expected exactly one value attribute");
	const Onnx__AttributeProto *a = n->attribute[0];
	struct decoded d = { 0 };
	int64_t one = 1;
	float f;
	if (!strcmp(a->name, "value") && a->t) {
		if (tensor_decode(a->t, &d) < 0)
			return err_prefix("'%s': node '%s' (Constant)", im->path, im->node_name);
	} else if (!strcmp(a->name, "value_float")) {
		f = a->f;
		d = (struct decoded){ .dt = DT_F32, .data = &f };
	} else if (!strcmp(a->name, "value_int")) {
		d = (struct decoded){ .dt = DT_I64, .data = &a->i };
	} else if (!strcmp(a->name, "value_floats")) {
		d = (struct decoded){ .dt = DT_F32, .rank = 1, .shape = { (int64_t)a->n_floats },
				      .data = a->n_floats ? (const void *)a->floats : &f };
	} else if (!strcmp(a->name, "value_ints")) {
		d = (struct decoded){ .dt = DT_I64, .rank = 1, .shape = { (int64_t)a->n_ints },
				      .data = a->n_ints ? (const void *)a->ints : &one };
	} else {
		return node_err(im, "attribute '%s' is not supported", a->name);
	}
	int k = graph_add_weight(im->g, out, d.dt, d.rank, d.shape, d.data);
	free(d.tmp);
	set_known(im, k);
	name_index_set(&im->tensors, out, k);
	return 0;
}

/* A tensor like tensor T (its shape) in dtype DT, named "<T>_<tag>". */
static int twin_tensor(struct ir_graph *g, int t, enum ir_dtype dt, const char *tag)
{
	char base[512];
	snprintf(base, sizeof base, "%s_%s", g->tensors[t].name, tag);
	char *name = graph_unique_name(g, base, 1);
	int64_t shape[IR_MAX_RANK];   /* g->tensors may move */
	memcpy(shape, g->tensors[t].shape, sizeof shape);
	int k = graph_add_tensor(g, name, dt, g->tensors[t].rank, shape);
	free(name);
	return k;
}

/* The half dtype (f16, bf16) of op's first such input, DT_F32 when none. */
static enum ir_dtype half_input(const struct ir_graph *g, const struct ir_op *op)
{
	for (int j = 0; j < op->n_in; j++)
		if (op->in[j] >= 0 && (g->tensors[op->in[j]].dtype == DT_F16 ||
				       g->tensors[op->in[j]].dtype == DT_BF16))
			return g->tensors[op->in[j]].dtype;
	return DT_F32;
}

/* Move the ops appended from N0 on to just before op AT. */
static void ops_move_before(struct ir_graph *g, int n0, int at)
{
	int added = g->n_ops - n0;
	struct ir_op *tmp = xmalloc(sizeof *tmp * (size_t)(added + 1));
	memcpy(tmp, &g->ops[n0], sizeof *tmp * (size_t)added);
	memmove(&g->ops[at + added], &g->ops[at], sizeof *tmp * (size_t)(n0 - at));
	memcpy(&g->ops[at], tmp, sizeof *tmp * (size_t)added);
	free(tmp);
}

/* A model stored in half precision: op I has no kernel for its f16 or bf16
 * inputs, so it computes in f32 between Casts, as a runtime without a
 * half kernel for it does: each half input widened (exactly) by a Cast
 * put before op I, inferred and folded here (a weight's is a weight).
 * Returns the number of Casts put before op I. */
static int widen_inputs(struct imp *im, int i)
{
	struct ir_graph *g = im->g;
	int n0 = g->n_ops;
	for (int j = 0; j < g->ops[i].n_in; j++) {
		int t = g->ops[i].in[j];
		if (t < 0 || (g->tensors[t].dtype != DT_F16 && g->tensors[t].dtype != DT_BF16))
			continue;
		int w = twin_tensor(g, t, DT_F32, "f32");
		int k = graph_add_op(g, OP_CAST, g->tensors[w].name, 1, &t, 1, &w);
		op_set_str(&g->ops[k], "to", "f32");
		g->ops[i].in[j] = w;
	}
	int n = g->n_ops - n0;
	ops_move_before(g, n0, i);
	for (int k = i; k < i + n; k++) {
		if (op_infer(g, &g->ops[k]) < 0 || pass_fold_op(g, k, SIZE_MAX) < 0)
			return -1;
		set_known(im, g->ops[k].out[0]);
	}
	return n;
}

/* After widen_inputs: op I's f32 outputs rounded back to DT by Casts put
 * just after it (its consumers read the half tensors the model names). */
static void narrow_outputs(struct imp *im, int i, enum ir_dtype dt)
{
	struct ir_graph *g = im->g;
	int n0 = g->n_ops;
	for (int j = 0; j < g->ops[i].n_out; j++) {
		int t = g->ops[i].out[j];
		if (t < 0 || g->tensors[t].dtype != DT_F32)
			continue;
		int w = twin_tensor(g, t, DT_F32, "f32");
		set_known(im, w);
		g->tensors[t].dtype = dt;
		g->ops[i].out[j] = w;
		int k = graph_add_op(g, OP_CAST, g->tensors[t].name, 1, &w, 1, &t);
		op_set_str(&g->ops[k], "to", dtype_name(dt));
	}
	ops_move_before(g, n0, i + 1);
}

/* Infer the ops that the node being imported added, from op FIRST on:
 * later nodes need shapes (auto_pad, Reshape's 0 and -1); then fold what is
 * constant, and refuse dtypes no kernel takes.  An op without a kernel
 * for the half tensors it reads computes in f32 between Casts. */
static int import_infer_ops(struct imp *im, int first)
{
	struct ir_graph *g = im->g;
	for (int i = first; i < g->n_ops; i++) {
		struct ir_op *op = &g->ops[i];
		if (op->type == OP_COUNT)
			continue;   /* folded by its converter (import_quant.c) */
		const struct op_def *def = op_defs[op->type];
		enum ir_dtype half = half_input(g, op);
		int wide = 0, n, rc;
		if (def->infer && half != DT_F32 && op_has(op->type, OPF_F32_ONLY) &&
		    !op_takes_dtype(op->type, half) && !(im->outer && def->run_const)) {
			if ((n = widen_inputs(im, i)) < 0)
				return err_prefix("'%s'", im->path);
			i += n, op = &g->ops[i], wide = 1;
		}
		rc = def->infer ? op_infer(g, op) : -1;
		if (rc < 0 && def->infer && !wide && half != DT_F32) {
			/* an op whose inference refuses half inputs (Softmax) */
			err_set("%s", "");
			if ((n = widen_inputs(im, i)) < 0)
				return err_prefix("'%s'", im->path);
			i += n, op = &g->ops[i], wide = 1;
			rc = op_infer(g, op);
		}
		if (rc < 0 || limit_check_outputs(g, op) < 0)
			return def->infer ? err_prefix("'%s'", im->path) : node_err(im, "no shape inference");
		if (wide) {
			narrow_outputs(im, i, half);
			op = &g->ops[i];
		}
		for (int j = 0; j < op->n_out; j++)
			set_known(im, op->out[j]);
		/* Folded whatever its size; graph_compact() drops the op. */
		int f = pass_fold_op(g, i, SIZE_MAX);
		if (f < 0)
			return err_prefix("'%s'", im->path);
		/* in a subgraph, integer arithmetic (a Loop's counter) runs by the
		 * op's constant-folding kernel (lib/run/control.c) */
		if (f || !op_has(op->type, OPF_F32_ONLY) || (im->outer && def->run_const))
			continue;
		for (int j = 0; j < op->n_in + op->n_out; j++) {
			int ti = j < op->n_in ? op->in[j] : op->out[j - op->n_in];
			if (ti >= 0 && !op_takes_dtype(op->type, g->tensors[ti].dtype))
				return node_err(im, "dtype %s is not supported (f32 only)",
						dtype_name(g->tensors[ti].dtype));
		}
	}
	return 0;
}

/* Einsum has no op of its own: lib/front/onnx_einsum.c writes it as ReduceSum,
 * Transpose, Reshape and MatMul ops, inferred and folded like any node's. */
static int import_einsum(struct imp *im, const char *out0)
{
	const Onnx__NodeProto *n = im->node;
	if (im->opset < 12)
		return node_err(im, "unsupported operator in opset %d (Einsum is opset 12)", im->opset);
	for (size_t i = 0; i < n->n_attribute; i++)
		if (!n->attribute[i]->name || strcmp(n->attribute[i]->name, "equation"))
			return node_err(im, "attribute '%s' is not supported",
					n->attribute[i]->name ? n->attribute[i]->name : "");
	const Onnx__AttributeProto *a = attr_find(n, "equation");
	if (!a)
		return node_err(im, "attribute 'equation' is required");
	if (a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING)
		return attr_type_err(im, "equation", "a string");
	for (size_t i = 1; i < n->n_output; i++)
		if (n->output[i] && *n->output[i])
			return node_err(im, "optional output '%s' is not supported", n->output[i]);
	if (!n->n_input)
		return node_err(im, "0 inputs, expected at least 1");
	int *in = xmalloc(sizeof(int) * n->n_input);
	for (size_t i = 0; i < n->n_input; i++) {
		int rc = resolve_input(im, n->input[i], &in[i]), t = in[i];
		if (rc < 0 || !known_tensor(im, t)) {
			free(in);
			if (rc < 0)
				return -1;
			return t < 0 ? node_err(im, "input %zu is required", i)
				     : node_err(im, "input %zu has no known shape", i);
		}
	}
	int first = im->g->n_ops;
	int y = graph_add_tensor(im->g, out0, DT_F32, 0, NULL);
	name_index_set(&im->tensors, out0, y);
	int rc = onnx_einsum(im->g, im->node_name, (const char *)a->s.data, a->s.len,
			     (int)n->n_input, in, y);
	free(in);
	if (rc < 0)
		return err_prefix("'%s': node '%s' (Einsum)", im->path, im->node_name);
	return import_infer_ops(im, first);
}

static int import_node(struct imp *im, const Onnx__NodeProto *n)
{
	const char *type = n->op_type ? n->op_type : "";
	const char *out0 = n->n_output && n->output[0] ? n->output[0] : "";
	/* LSTM, GRU and RNN may leave Y unnamed: out0 is then the first
	 * named output (an unnamed Y is made as an unused tensor below) */
	if (!strcmp(type, "LSTM") || !strcmp(type, "GRU") || !strcmp(type, "RNN"))
		for (size_t i = 1; i < n->n_output && !*out0; i++)
			out0 = n->output[i] ? n->output[i] : "";
	im->node = n;
	free(im->node_name);
	if (n->name && *n->name) {
		im->node_name = xstrdup(n->name);
	} else {
		size_t len = strlen(type) + strlen(out0) + 2;
		im->node_name = xmalloc(len);
		snprintf(im->node_name, len, "%s_%s", type, out0);
	}

	if (n->domain && *n->domain && strcmp(n->domain, "ai.onnx") &&
	    !(!strcmp(n->domain, "com.microsoft") && !strncmp(type, "QLinear", 7)))
		return node_err(im, "unsupported domain '%s'", n->domain);
	if (!*out0)
		return node_err(im, "the node has no output");
	if (name_index_get(&im->tensors, out0) >= 0 || name_index_get(&im->inits, out0) >= 0)
		return node_err(im, "tensor '%s' is defined twice", out0);
	if (!strcmp(type, "Constant")) {
		for (size_t i = 1; i < n->n_output; i++)
			if (n->output[i] && *n->output[i])
				return node_err(im, "optional output '%s' is not supported", n->output[i]);
		return import_constant(im, out0);
	}
	if (!strcmp(type, "Einsum"))
		return import_einsum(im, out0);
	if (!strcmp(type, "If") || !strcmp(type, "Loop") || !strcmp(type, "Scan"))
		return import_control(im, out0);
	if (!strcmp(type, "GroupNormalization")) {
		int first = import_groupnorm(im, out0);
		return first < 0 ? -1 : import_infer_ops(im, first);
	}

	const struct node_rule *r = NULL;
	for (size_t i = 0; i < n_node_rules; i++)
		if (!strcmp(node_rules[i].onnx, type))
			r = &node_rules[i];
	int t = r ? op_type_from_name(r->ir ? r->ir : type) : -1;
	if (!r || t < 0)
		return node_err(im, "unsupported operator");
	struct op_io io = op_io_of((enum op_type)t);
	int min_in = r->min_in == FROM_DEF ? io.min_in : r->min_in;
	int max_in = r->max_in == FROM_DEF ? io.max_in == IO_ANY ? ANY : io.max_in : r->max_in;
	int max_out = r->max_out ? r->max_out : io.max_out == IO_ANY ? INT_MAX : io.max_out;
	int n_out = node_outputs(im, max_out);
	if (n_out < 0)
		return -1;
	/* Opsets 1 to 6: most forms are today's with a legacy hint
	 * (consumed_inputs) and, for broadcasting, an attribute refused below;
	 * BatchNormalization and Dropout default to their training form, and
	 * Cast before 6 names its type as a string. */
	if (im->opset < 7 && (t == OP_BATCHNORM || !strcmp(type, "Dropout") ||
			      (t == OP_CAST && im->opset < 6)))
		return node_err(im, "the opset %d form is not supported (opset 7 or later)", im->opset);
	for (size_t i = 0; i < n->n_attribute; i++) {
		const char *an = n->attribute[i]->name ? n->attribute[i]->name : "";
		int ok = im->opset < 7 && !strcmp(an, "consumed_inputs");
		for (int j = 0; r->attrs[j] && !ok; j++)
			ok = !strcmp(r->attrs[j], an);
		if (!ok)
			return node_err(im, "attribute '%s' is not supported", an);
	}
	if ((int)n->n_input < min_in || n->n_input > (size_t)max_in)
		return node_err(im, "%zu inputs, expected %d to %d", n->n_input, min_in, max_in);

	int *in = xmalloc(sizeof(int) * (n->n_input + 1));
	/* Identity of a constant is that constant (PyTorch shares weights
	 * this way); its output name stays only when it is a graph output. */
	if (t == OP_IDENTITY && name_index_get(&im->outputs, out0) < 0) {
		if (resolve_input(im, n->input[0], &in[0]) < 0) {
			free(in);
			return -1;
		}
		if (in[0] >= 0 && im->g->tensors[in[0]].data) {
			name_index_set(&im->tensors, out0, in[0]);
			free(in);
			return 0;
		}
	}
	for (size_t i = 0; i < n->n_input; i++) {
		if (resolve_input(im, n->input[i], &in[i]) < 0) {
			free(in);
			return -1;
		}
		if (in[i] < 0 && (int)i < min_in) {
			free(in);
			return node_err(im, "input %zu is required", i);
		}
	}
	struct ir_graph *g = im->g;
	int first = g->n_ops;
	/* an op a QOperator model runs on the codes runs on their values */
	int qd = quant_direct_in(im, (enum op_type)t, &in[0]);
	if (qd == -2) {
		free(in);
		return -1;
	}
	/* A 1-D Conv or pool runs as 2-D on an input unsqueezed at axis 2. */
	int as2d = (t == OP_CONV || t == OP_MAXPOOL || t == OP_AVGPOOL || t == OP_CONVTRANSPOSE) &&
		   known_rank(im, in[0]) == 3;
	if (as2d) {
		char base[512];
		snprintf(base, sizeof base, "%s_2d", g->tensors[in[0]].name);
		char *name = graph_unique_name(g, base, 1);
		int x2 = graph_add_tensor(g, name, DT_F32, 0, NULL);
		free(name);
		snprintf(base, sizeof base, "%s_unsqueeze", im->node_name);
		int u = graph_add_op(g, OP_UNSQUEEZE, base, 1, &in[0], 1, &x2);
		op_set_ints(&g->ops[u], "axes", 1, (int64_t[]){ 2 });
		if (op_infer(g, &g->ops[u]) < 0) {
			free(in);
			return err_prefix("'%s'", im->path);
		}
		set_known(im, x2);
		in[0] = x2;
		const struct ir_tensor *w = n->n_input > 1 && in[1] >= 0 ? &g->tensors[in[1]] : NULL;
		if ((t == OP_CONV || t == OP_CONVTRANSPOSE) && w && w->data && w->rank == 3) {
			int64_t ws[4] = { w->shape[0], w->shape[1], 1, w->shape[2] };
			snprintf(base, sizeof base, "%s_2d", w->name);
			name = graph_unique_name(g, base, 1);
			in[1] = graph_add_weight(g, name, w->dtype, 4, ws, w->data);
			free(name);
			set_known(im, in[1]);
		} else if ((t == OP_CONV || t == OP_CONVTRANSPOSE) && w && w->rank == 3) {
			/* a run-time weight [OC, C/g, K] is unsqueezed like x */
			snprintf(base, sizeof base, "%s_2d", w->name);
			name = graph_unique_name(g, base, 1);
			int w2 = graph_add_tensor(g, name, w->dtype, 0, NULL);
			free(name);
			snprintf(base, sizeof base, "%s_w_unsqueeze", im->node_name);
			int uw = graph_add_op(g, OP_UNSQUEEZE, base, 1, &in[1], 1, &w2);
			op_set_ints(&g->ops[uw], "axes", 1, (int64_t[]){ 2 });
			if (op_defs[OP_UNSQUEEZE]->infer(g, &g->ops[uw]) < 0) {
				free(in);
				return err_prefix("'%s'", im->path);
			}
			set_known(im, w2);
			in[1] = w2;
		}
	}
	int *outs = xcalloc((size_t)n_out + 1, sizeof *outs);
	for (int i = 0; i < n_out; i++) {
		outs[i] = add_node_output(im, i, n->output[i] && *n->output[i] ? n->output[i] : NULL);
	}
	int k = graph_add_op(g, (enum op_type)t, im->node_name, (int)n->n_input, in, n_out, outs);
	free(in);
	free(outs);
	im->as2d = as2d;
	int rc = r->convert ? r->convert(im, &g->ops[k]) : 0;
	im->as2d = 0;
	if (rc < 0)
		return -1;
	if (as2d) {
		int sq = import_extra_op(im, k, OP_SQUEEZE, 1, (int[]){ -1 }, "1d");
		op_set_ints(&g->ops[sq], "axes", 1, (int64_t[]){ 2 });
	}
	if (qd >= 0)
		quant_direct_out(im, g->n_ops - 1, qd);
	return import_infer_ops(im, first);
}

/* ---- graph ---- */

/* The shape given for input name, or NULL. */
static const struct onnx_input_shape *input_shape(const struct imp *im, const char *name)
{
	const struct onnx_input_shape *soft = NULL;
	for (int i = 0; i < im->n_shapes; i++)
		if (strlen(name) == im->shapes[i].name_len &&
		    !memcmp(name, im->shapes[i].name, im->shapes[i].name_len)) {
			if (!im->shapes[i].soft)
				return &im->shapes[i];
			if (!soft)
				soft = &im->shapes[i];
		}
	return soft;
}

/* 1 if input shape SP leaves a dimension open (symbolic, unknown) or is
 * not declared. */
static int shape_open(const Onnx__TensorShapeProto *sp)
{
	if (!sp)
		return 1;
	for (size_t i = 0; i < sp->n_dim; i++)
		if (sp->dim[i]->value_case != ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE ||
		    sp->dim[i]->dim_value < 0)
			return 1;
	return 0;
}

/* Refuse input name for its dimension i of shape sp, which is symbolic or
 * unknown, saying how to give the shape: the declared dimensions with 1
 * for each unknown one.  Returns -1. */
static int dynamic_input_err(struct imp *im, const char *name,
			     const Onnx__TensorShapeProto *sp, size_t i)
{
	char hint[IR_MAX_RANK * 21 + 1] = "", sym[256] = "";
	size_t h = 0;
	for (size_t j = 0; j < sp->n_dim; j++) {
		const Onnx__TensorShapeProto__Dimension *d = sp->dim[j];
		int fixed = d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
			    d->dim_value >= 0;
		h += (size_t)snprintf(hint + h, sizeof hint - h, "%s%lld", j ? "," : "",
				      fixed ? (long long)d->dim_value : 1LL);
	}
	const Onnx__TensorShapeProto__Dimension *d = sp->dim[i];
	if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM)
		snprintf(sym, sizeof sym, " ('%s')", d->dim_param);
	return err_set("'%s': input '%s': dimension %zu is not static%s: give the input's shape "
		       "with --shape %s=%s", im->path, name, i, sym, name, hint);
}

/* Every given shape names a graph input without an initializer, once. */
static int check_shape_names(struct imp *im, const Onnx__GraphProto *gp)
{
	for (int k = 0; k < im->n_shapes; k++) {
		const struct onnx_input_shape *s = &im->shapes[k];
		if (s->soft)
			continue;
		int found = 0;
		for (size_t i = 0; i < gp->n_input && !found; i++) {
			const char *n = gp->input[i]->name ? gp->input[i]->name : "";
			found = name_index_get(&im->inits, n) < 0 && strlen(n) == s->name_len &&
				!memcmp(n, s->name, s->name_len);
		}
		if (!found)
			return err_set("'%s': --shape names '%.*s', which is not a graph input",
				       im->path, (int)s->name_len, s->name);
		for (int j = 0; j < k; j++)
			if (!im->shapes[j].soft && im->shapes[j].name_len == s->name_len &&
			    !memcmp(im->shapes[j].name, s->name, s->name_len))
				return err_set("'%s': --shape gives input '%.*s' twice", im->path,
					       (int)s->name_len, s->name);
	}
	return 0;
}

/* "float", "integer" or "bool": a --bind array must be of its input's kind
 * (the values are then converted to the input's type). */
static const char *dtype_class(int dt)
{
	switch (dt) {
	case DT_F32: case DT_F16: case DT_BF16: return "float";
	case DT_BOOL: return "bool";
	default: return "integer";
	}
}

/* Refuse a --bind array whose rank or dimensions differ from what the
 * model declares for input name (dimensions not static match anything). */
static int bound_shape_check(struct imp *im, const char *name, const Onnx__TensorShapeProto *sp,
			     const struct npz_array *c)
{
	if (!sp)
		return 0;
	if (sp->n_dim != (size_t)c->rank)
		return err_set("'%s': input '%s': the --bind array has rank %d, the model declares %zu",
			       im->path, name, c->rank, sp->n_dim);
	for (size_t i = 0; i < sp->n_dim; i++) {
		const Onnx__TensorShapeProto__Dimension *d = sp->dim[i];
		if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
		    d->dim_value >= 0 && d->dim_value != c->shape[i])
			return err_set("'%s': input '%s': the --bind array has dimension %zu of %lld, "
				       "the model declares %lld", im->path, name, i,
				       (long long)c->shape[i], (long long)d->dim_value);
	}
	return 0;
}

/* Nonzero if a tensor of type dt and this shape (dimensions >= 0) would
 * take more than 2^40 bytes; computed without overflow. */
static int input_too_large(int dt, int rank, const int64_t *shape)
{
	const uint64_t limit = (uint64_t)1 << 40;
	uint64_t bytes = dtype_size((enum ir_dtype)dt);
	for (int i = 0; i < rank; i++)
		if (shape[i] == 0)
			return 0;
	for (int i = 0; i < rank; i++) {
		if ((uint64_t)shape[i] > limit / bytes)
			return 1;
		bytes *= (uint64_t)shape[i];
	}
	return 0;
}

static int import_input(struct imp *im, const Onnx__ValueInfoProto *v)
{
	const char *name = v->name ? v->name : "";
	const Onnx__TypeProto *tp = v->type;
	if (name_index_get(&im->tensors, name) >= 0)
		return err_set("'%s': input '%s' is defined twice", im->path, name);
	if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type)
		return err_set("'%s': input '%s' is not a tensor", im->path, name);
	const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
	int dt = dtype_from_onnx(tt->elem_type);
	if (dt < 0)
		return err_set("'%s': input '%s': data type %s is not supported",
			       im->path, name, onnx_dtype_name(tt->elem_type));
	const struct npz_array *c = im->consts ? npz_find(im->consts, name) : NULL;
	if (c && input_shape(im, name) && !input_shape(im, name)->soft)
		return err_set("'%s': input '%s' is both bound (--bind) and shaped (--shape)",
			       im->path, name);
	if (c) {
		if (dtype_class(c->dtype) != dtype_class(dt))
			return err_set("'%s': input '%s': the --bind array is %s, a %s array is needed",
				       im->path, name, dtype_name(c->dtype), dtype_class(dt));
		if (bound_shape_check(im, name, tt->shape, c) < 0)
			return -1;
		/* Bound: a weight holding the array, converted to the input's type. */
		int k = graph_add_weight(im->g, name, (enum ir_dtype)dt, c->rank, c->shape, NULL);
		dtype_convert(im->g->tensors[k].data, (enum ir_dtype)dt, c->data, c->dtype, npz_numel(c));
		set_known(im, k);
		name_index_set(&im->tensors, name, k);
		return 0;
	}
	const struct onnx_input_shape *given = input_shape(im, name);
	if (given && given->soft && !shape_open(tt->shape))
		given = NULL;   /* an example input's shape serves open dimensions only */
	const char *opt = given && given->soft ? "--shapes-from" : "--shape";
	if (!tt->shape && !given)
		return err_set("'%s': input '%s' has no shape: give it with --shape %s=D0,D1,...",
			       im->path, name, name);
	size_t rank = tt->shape ? tt->shape->n_dim : (size_t)given->rank;
	if (rank > IR_MAX_RANK)
		return err_set("'%s': input '%s': rank %zu exceeds %d", im->path, name,
			       rank, IR_MAX_RANK);
	if (given && tt->shape && (size_t)given->rank != rank)
		return err_set("'%s': input '%s': %s gives %d dimensions, the model declares %zu",
			       im->path, name, opt, given->rank, rank);
	int64_t shape[IR_MAX_RANK];
	for (size_t i = 0; i < rank; i++) {
		const Onnx__TensorShapeProto__Dimension *d = tt->shape ? tt->shape->dim[i] : NULL;
		int fixed = d && d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
			    d->dim_value >= 0;
		if (fixed && given && given->shape[i] != d->dim_value)
			return err_set("'%s': input '%s': %s gives dimension %zu as %lld, the model "
				       "declares %lld", im->path, name, opt, i, (long long)given->shape[i],
				       (long long)d->dim_value);
		if (!fixed && !given)
			return dynamic_input_err(im, name, tt->shape, i);
		shape[i] = given ? given->shape[i] : d->dim_value;
	}
	if (input_too_large(dt, (int)rank, shape))
		return err_set("'%s': input '%s' is too large: more than 2^40 bytes", im->path, name);
	int t = graph_add_tensor(im->g, name, (enum ir_dtype)dt, (int)rank, shape);
	set_known(im, t);
	name_index_set(&im->tensors, name, t);
	struct ir_graph *g = im->g;
	g->inputs = xrealloc(g->inputs, sizeof(int) * (size_t)(g->n_inputs + 1));
	g->inputs[g->n_inputs++] = t;
	return 0;
}

static int import_nodes(struct imp *im, Onnx__GraphProto *gp);

static int import_graph(struct imp *im, Onnx__GraphProto *gp)
{
	struct ir_graph *g = im->g;
	im->gp = gp;
	g->name = xstrdup(gp->name ? gp->name : "");
	for (size_t i = 0; i < gp->n_initializer; i++) {
		const char *name = gp->initializer[i]->name;
		if (!name || !*name)
			return err_set("'%s': initializer %zu has no name", im->path, i);
		if (name_index_get(&im->inits, name) >= 0)
			return err_set("'%s': initializer '%s' is defined twice", im->path, name);
		name_index_set(&im->inits, name, (int)i);
	}
	for (size_t i = 0; i < gp->n_output; i++)
		if (gp->output[i]->name)
			name_index_set(&im->outputs, gp->output[i]->name, (int)i);
	if (check_shape_names(im, gp) < 0)
		return -1;
	/* Inputs that have an initializer are weights with a default value. */
	for (size_t i = 0; i < gp->n_input; i++)
		if (name_index_get(&im->inits, gp->input[i]->name ? gp->input[i]->name : "") < 0 &&
		    import_input(im, gp->input[i]) < 0)
			return -1;
	if (import_nodes(im, gp) < 0)
		return -1;
	if (!gp->n_output)
		return err_set("'%s': the graph has no outputs", im->path);
	g->outputs = xmalloc(sizeof(int) * gp->n_output);
	for (size_t i = 0; i < gp->n_output; i++) {
		const char *name = gp->output[i]->name ? gp->output[i]->name : "";
		int t;
		if (resolve_input(im, name, &t) < 0)
			return -1;
		if (t < 0)
			return err_set("'%s': graph output %zu has no name", im->path, i);
		for (int j = 0; j < g->n_outputs; j++)
			if (g->outputs[j] == t)
				return err_set("'%s': graph output '%s' is listed twice", im->path, name);
		for (int j = 0; j < g->n_inputs; j++)
			if (g->inputs[j] == t)
				return err_set("'%s': graph output '%s' is a graph input: an output must "
					       "be computed by a node", im->path, name);
		g->outputs[g->n_outputs++] = t;
	}
	return 0;
}

static int import_nodes(struct imp *im, Onnx__GraphProto *gp)
{
	/* Who writes each name, and node names used once: a qtable, a
	 * calibration table and every message name ops by them. */
	struct name_index names = { 0 };
	for (size_t i = 0; i < gp->n_node; i++) {
		const Onnx__NodeProto *n = gp->node[i];
		for (size_t j = 0; j < n->n_output; j++)
			if (n->output[j] && *n->output[j] && name_index_get(&im->producers, n->output[j]) < 0)
				name_index_set(&im->producers, n->output[j], (int)i);
		if (!n->name || !*n->name)
			continue;
		if (name_index_get(&names, n->name) >= 0) {
			name_index_free(&names);
			return err_set("'%s': node '%s' (%s): the node name is used twice: node "
				       "names must be unique", im->path, n->name,
				       n->op_type ? n->op_type : "");
		}
		name_index_set(&names, n->name, (int)i);
	}
	name_index_free(&names);
	for (size_t i = 0; i < gp->n_node; i++) {
		im->node_index = (int)i;
		if (import_node(im, gp->node[i]) < 0)
			return -1;
	}
	im->node = NULL;
	return 0;
}

/* The ai.onnx opset version, or -1 after err_set(). */
static int model_opset(const char *path, const Onnx__ModelProto *m)
{
	for (size_t i = 0; i < m->n_opset_import; i++) {
		const Onnx__OperatorSetIdProto *o = m->opset_import[i];
		if (o->domain && *o->domain && strcmp(o->domain, "ai.onnx"))
			continue;
		if (o->version < ONNX_OPSET_MIN || o->version > ONNX_OPSET_MAX)
			return err_set("'%s': opset %lld is not supported (%d to %d)", path,
				       (long long)o->version, ONNX_OPSET_MIN, ONNX_OPSET_MAX);
		return (int)o->version;
	}
	return err_set("'%s': the model imports no ai.onnx opset", path);
}

int onnx_import(const void *buf, size_t len, const char *path, struct ir_graph **out)
{
	return onnx_import_bound(buf, len, path, NULL, out);
}

int onnx_import_bound(const void *buf, size_t len, const char *path, const struct npz *consts,
		      struct ir_graph **out)
{
	return onnx_import_shaped(buf, len, path, consts, NULL, 0, out);
}

int onnx_input_shape_parse(const char *arg, struct onnx_input_shape *s)
{
	const char *eq = strrchr(arg, '=');
	if (!eq || !eq[1])
		return err_set("--shape '%s': expected NAME=D0,D1,...", arg);
	if (eq == arg)
		return err_set("--shape '%s': the input name is empty", arg);
	s->name = arg;
	s->name_len = (size_t)(eq - arg);
	s->rank = 0;
	s->soft = 0;
	for (const char *p = eq + 1;; p++) {
		size_t n = strcspn(p, ",");
		if (s->rank == IR_MAX_RANK)
			return err_set("--shape '%s': more than %d dimensions", arg, IR_MAX_RANK);
		char *end;
		errno = 0;
		long long v = *p >= '0' && *p <= '9' ? strtoll(p, &end, 10) : 0;
		if (v < 1 || errno || end != p + n)
			return err_set("--shape '%s': dimension '%.*s' is not a positive integer",
				       arg, (int)n, p);
		s->shape[s->rank++] = v;
		p += n;
		if (!*p)
			return 0;
	}
}

/* Initializer raw data that onnx_strip_raw took out of the message: point
 * it back into the model's bytes (how much the decoder saw), or (UNDO) take
 * every such pointer out again before the message is freed. */
static void raw_points(Onnx__ModelProto *m, const struct onnx_stripped *st, const void *buf,
		       size_t len, int undo)
{
	if (!m->graph)
		return;
	Onnx__GraphProto *gp = m->graph;
	const unsigned char *lo = buf, *hi = lo + len;
	if (undo) {
		for (size_t i = 0; i < gp->n_initializer; i++) {
			Onnx__TensorProto *t = gp->initializer[i];
			if (t->has_raw_data && t->raw_data.data >= lo && t->raw_data.data < hi) {
				t->raw_data.data = NULL;
				t->raw_data.len = 0;
				t->has_raw_data = 0;
			}
		}
		return;
	}
	for (int i = 0; i < st->n_raw; i++) {
		if ((size_t)st->raw[i].index >= gp->n_initializer)
			continue;
		Onnx__TensorProto *t = gp->initializer[st->raw[i].index];
		t->has_raw_data = 1;
		t->raw_data.data = (uint8_t *)lo + st->raw[i].offset;
		t->raw_data.len = st->raw[i].len;
	}
}

static int import_bytes(const void *buf, size_t len, int release, const char *path,
			const struct npz *consts, const struct onnx_input_shape *shapes,
			int n_shapes, struct ir_graph **out)
{
	*out = NULL;
	if (onnx_check_depth(buf, len, path) < 0)
		return -1;
	/* The decoder sees the model without its weights' bytes, which are
	 * read from buf: one copy of each weight, the graph's. */
	struct onnx_stripped st;
	int stripped = onnx_strip_raw(buf, len, &st);
	Onnx__ModelProto *m = stripped ? onnx__model_proto__unpack(NULL, st.len, st.buf)
				       : onnx__model_proto__unpack(NULL, len, buf);
	if (m && stripped)
		raw_points(m, &st, buf, len, 0);
	if (stripped)
		onnx_stripped_free(&st);
	if (!m || !m->graph) {
		if (m)
			onnx__model_proto__free_unpacked(m, NULL);
		return err_set("'%s': not a valid ONNX model (truncated or corrupt)", path);
	}
	if (m->ir_version < 1 || m->ir_version > ONNX_IR_VERSION_MAX) {
		long long v = m->ir_version;
		raw_points(m, NULL, buf, len, 1);
		onnx__model_proto__free_unpacked(m, NULL);
		return err_set("'%s': ir_version %lld is not supported (1 to %d)", path, v,
			       ONNX_IR_VERSION_MAX);
	}
	if (onnx_load_external(m, path) < 0) {
		raw_points(m, NULL, buf, len, 1);
		onnx__model_proto__free_unpacked(m, NULL);
		return -1;
	}
	struct imp im = { .path = path, .consts = consts, .shapes = shapes, .n_shapes = n_shapes,
			  .nodes = import_nodes, .infer_ops = import_infer_ops,
			  .file = buf, .file_len = len, .release = release };
	im.g = graph_new(DIALECT_TOP, STAGE_ORIGIN);
	int rc = im.opset = model_opset(path, m);
	if (rc >= 0)
		rc = import_graph(&im, m->graph);
	raw_points(m, NULL, buf, len, 1);
	imp_release(&im);
	onnx__model_proto__free_unpacked(m, NULL);
	if (rc >= 0) {
		graph_compact(im.g);   /* constants that became attributes */
		if (graph_infer(im.g) < 0)
			rc = err_prefix("'%s'", path);
	}
	if (rc < 0) {
		graph_free(im.g);
		return -1;
	}
	*out = im.g;
	return 0;
}

int onnx_import_shaped(const void *buf, size_t len, const char *path, const struct npz *consts,
		       const struct onnx_input_shape *shapes, int n_shapes, struct ir_graph **out)
{
	return import_bytes(buf, len, 0, path, consts, shapes, n_shapes, out);
}

int onnx_import_consume(void *buf, size_t len, const char *path, const struct npz *consts,
			const struct onnx_input_shape *shapes, int n_shapes, struct ir_graph **out)
{
	return import_bytes(buf, len, 1, path, consts, shapes, n_shapes, out);
}
