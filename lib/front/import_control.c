/* import_control.c - If, Loop and Scan nodes: each body is imported as a
 * graph of its own (the same importer, one level down), whose reads of
 * enclosing values become captured inputs (lib/run/control.h); an If whose
 * condition is constant, after --bind or folding, is replaced by the ops
 * of the branch it takes.
 */
#include "front/import_control.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/base.h"
#include "ir/convert.h"
#include "ir/op.h"
#include "onnx.pb-c.h"

/* Resolve NAME, not defined in the subgraph being imported, in the
 * enclosing graphs: a constant is copied in as a weight, any other value
 * becomes a new input of the subgraph (a capture).  *T is its index. */
static int import_capture(struct imp *im, const char *name, int *t)
{
	struct imp *o = im->outer;
	int ot;
	*t = -1;
	if (resolve_input(o, name, &ot) < 0)
		return -1;
	const struct ir_tensor *x = known_tensor(o, ot);
	if (!x)
		return node_err(o, "input '%s' of a subgraph has no known shape", name);
	int k;
	if (x->data) {
		k = graph_add_weight(im->g, name, x->dtype, x->rank, x->shape, x->data);
	} else {
		k = graph_add_tensor(im->g, name, x->dtype, x->rank, x->shape);
		struct ir_graph *g = im->g;
		g->inputs = xrealloc(g->inputs, sizeof(int) * (size_t)(g->n_inputs + 1));
		g->inputs[g->n_inputs++] = k;
		grow_array((void **)&im->caps, &im->cap_caps, im->n_caps + 1, sizeof *im->caps);
		im->caps[im->n_caps++] = ot;
	}
	struct ir_tensor *y = &im->g->tensors[k];
	y->dyn = x->dyn;
	y->scale = x->scale;
	y->zero_point = x->zero_point;
	y->qdtype = x->qdtype;
	set_known(im, k);
	name_index_set(&im->tensors, name, k);
	*t = k;
	return 0;
}

/* A body as imported: its graph and the outer tensors it captures. */
struct body {
	struct ir_graph *g;
	int *caps, n_caps;
};

static void body_free(struct body *b)
{
	graph_free(b->g);
	free(b->caps);
	memset(b, 0, sizeof *b);
}

/* The graph attribute NAME of the node being imported. */
static const Onnx__GraphProto *graph_attr(struct imp *im, const char *name)
{
	const Onnx__AttributeProto *a = attr_find(im->node, name);
	if (!a) {
		node_err(im, "attribute '%s' is required", name);
		return NULL;
	}
	if (a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH || !a->g) {
		attr_type_err(im, name, "a graph");
		return NULL;
	}
	return a->g;
}

/* Import subgraph GP of the node being imported in IM, with N formal
 * inputs of the types FORMAL (dtype, rank, shape). */
static int import_body(struct imp *outer, const Onnx__GraphProto *cgp, int n,
		       const struct ir_tensor *formal, struct body *b)
{
	Onnx__GraphProto *gp = (Onnx__GraphProto *)cgp;
	memset(b, 0, sizeof *b);
	if (gp->n_input != (size_t)n)
		return node_err(outer, "subgraph '%s' has %zu inputs, expected %d",
				gp->name ? gp->name : "", gp->n_input, n);
	struct imp im = { .path = outer->path, .opset = outer->opset, .outer = outer, .gp = gp,
			  .nodes = outer->nodes, .infer_ops = outer->infer_ops,
			  .capture = import_capture };
	struct ir_graph *g = im.g = graph_new(DIALECT_TOP, STAGE_ORIGIN);
	g->name = xstrdup(gp->name ? gp->name : "");
	int rc = 0;
	for (size_t i = 0; i < gp->n_initializer && rc == 0; i++) {
		const char *name = gp->initializer[i]->name;
		if (!name || !*name || name_index_get(&im.inits, name) >= 0)
			rc = node_err(outer, "subgraph initializer %zu has no name or a repeated one", i);
		else
			name_index_set(&im.inits, name, (int)i);
	}
	for (size_t i = 0; i < gp->n_output; i++)
		if (gp->output[i]->name)
			name_index_set(&im.outputs, gp->output[i]->name, (int)i);
	for (int i = 0; i < n && rc == 0; i++) {
		const char *name = gp->input[i]->name ? gp->input[i]->name : "";
		if (!*name || name_index_get(&im.tensors, name) >= 0) {
			rc = node_err(outer, "subgraph input %d has no name or a repeated one", i);
			break;
		}
		/* a formal input given a value (an unrolled Loop's iteration) is a
		 * constant of the body */
		int t = formal[i].data ? graph_add_weight(g, name, formal[i].dtype, formal[i].rank,
							   formal[i].shape, formal[i].data)
				       : graph_add_tensor(g, name, formal[i].dtype, formal[i].rank,
							  formal[i].shape);
		set_known(&im, t);
		name_index_set(&im.tensors, name, t);
		if (formal[i].data)
			continue;
		g->tensors[t].dyn = formal[i].dyn;
		g->inputs = xrealloc(g->inputs, sizeof(int) * (size_t)(g->n_inputs + 1));
		g->inputs[g->n_inputs++] = t;
	}
	if (rc == 0 && (rc = im.nodes(&im, gp)) < 0)
		err_prefix("'%s': node '%s' (%s): in its body", outer->path, outer->node_name,
			   outer->node->op_type);
	/* outputs: a value an op computes, each once; an input or a repeated
	 * value goes through an Identity */
	g->outputs = xmalloc(sizeof(int) * (gp->n_output + 1));
	for (size_t i = 0; i < gp->n_output && rc == 0; i++) {
		const char *name = gp->output[i]->name ? gp->output[i]->name : "";
		int t;
		if ((rc = resolve_input(&im, name, &t)) < 0)
			break;
		if (t < 0) {
			rc = node_err(outer, "subgraph output %zu has no name", i);
			break;
		}
		int copy = 0;
		for (int j = 0; j < g->n_inputs; j++)
			copy |= g->inputs[j] == t;
		for (int j = 0; j < g->n_outputs; j++)
			copy |= g->outputs[j] == t;
		if (copy) {
			char base[512];
			snprintf(base, sizeof base, "%s_out%zu", name, i);
			char *nm = graph_unique_name(g, base, 1);
			int y = graph_add_tensor(g, nm, DT_F32, 0, NULL);
			int k = graph_add_op(g, OP_IDENTITY, nm, 1, &t, 1, &y);
			free(nm);
			if (op_defs[OP_IDENTITY]->infer(g, &g->ops[k]) < 0) {
				rc = err_prefix("'%s'", im.path);
				break;
			}
			t = y;
		}
		g->outputs[g->n_outputs++] = t;
	}
	imp_release(&im);
	if (rc < 0) {
		graph_free(g);
		free(im.caps);
		return -1;
	}
	graph_compact(g);   /* folded ops, constants that became attributes */
	b->g = g;
	b->caps = im.caps;
	b->n_caps = im.n_caps;
	return 0;
}

/* Only the attributes in ALLOWED (NULL-terminated). */
static int check_attrs(struct imp *im, const char *const *allowed)
{
	const Onnx__NodeProto *n = im->node;
	for (size_t i = 0; i < n->n_attribute; i++) {
		const char *an = n->attribute[i]->name ? n->attribute[i]->name : "";
		int ok = 0;
		for (int j = 0; allowed[j] && !ok; j++)
			ok = !strcmp(allowed[j], an);
		if (!ok)
			return node_err(im, "attribute '%s' is not supported", an);
	}
	return 0;
}

/* N new tensors for the node's outputs into OUTS (named as the node names
 * them; unnamed ones get a fresh name). */
static int make_outputs(struct imp *im, int n, int *outs)
{
	const Onnx__NodeProto *nd = im->node;
	for (int i = 0; i < n; i++) {
		const char *on = (size_t)i < nd->n_output && nd->output[i] && *nd->output[i] ?
				 nd->output[i] : NULL;
		if (on && i && (name_index_get(&im->tensors, on) >= 0 ||
				name_index_get(&im->inits, on) >= 0))
			return node_err(im, "tensor '%s' is defined twice", on);
		outs[i] = add_node_output(im, i, on);
	}
	for (size_t i = (size_t)n; i < nd->n_output; i++)
		if (nd->output[i] && *nd->output[i])
			return node_err(im, "output %zu: the body gives only %d outputs", i, n);
	return 0;
}

static int same_shape(const struct ir_tensor *a, const struct ir_tensor *b)
{
	return a->dtype == b->dtype && a->rank == b->rank &&
	       !memcmp(a->shape, b->shape, sizeof(int64_t) * (size_t)a->rank);
}

/* Append the ops of body S to the graph being imported: its inputs are
 * the tensors IN (one per input), its outputs become the tensors OUTS
 * (made by the caller, one per output); then infer and fold them. */
static int inline_graph(struct imp *im, const struct ir_graph *s, const int *in_map, const int *outs)
{
	struct ir_graph *g = im->g;
	int first = g->n_ops;
	int *map = xmalloc(sizeof(int) * (size_t)(s->n_tensors + 1));
	for (int i = 0; i < s->n_tensors; i++)
		map[i] = -1;
	for (int i = 0; i < s->n_inputs; i++)
		map[s->inputs[i]] = in_map[i];
	for (int i = 0; i < s->n_tensors; i++) {
		const struct ir_tensor *t = &s->tensors[i];
		if (map[i] >= 0 || !t->data)
			continue;
		/* a constant the body copied from here is that constant */
		int same = graph_find_tensor(g, t->name);
		const struct ir_tensor *o = same >= 0 ? &g->tensors[same] : NULL;
		if (o && o->data && same_shape(o, t) && o->nbytes == t->nbytes &&
		    !memcmp(o->data, t->data, t->nbytes)) {
			map[i] = same;
			continue;
		}
		char *name = graph_unique_name(g, t->name, 1);
		map[i] = graph_add_weight(g, name, t->dtype, t->rank, t->shape, t->data);
		free(name);
		set_known(im, map[i]);
	}
	/* an output an op of the body computes is that op's output here */
	char *direct = xcalloc((size_t)s->n_outputs + 1, 1);
	for (int i = 0; i < s->n_outputs; i++)
		if (map[s->outputs[i]] < 0) {
			map[s->outputs[i]] = outs[i];
			direct[i] = 1;
		}
	for (int i = 0; i < s->n_tensors; i++)
		if (map[i] < 0) {
			char *name = graph_unique_name(g, s->tensors[i].name, 1);
			map[i] = graph_add_tensor(g, name, DT_F32, 0, NULL);
			free(name);
		}
	for (int i = 0; i < s->n_ops; i++) {
		const struct ir_op *op = &s->ops[i];
		int *in = xmalloc(sizeof(int) * (size_t)(op->n_in + 1));
		int *out = xmalloc(sizeof(int) * (size_t)(op->n_out + 1));
		for (int j = 0; j < op->n_in; j++)
			in[j] = op->in[j] >= 0 ? map[op->in[j]] : -1;
		for (int j = 0; j < op->n_out; j++)
			out[j] = map[op->out[j]];
		int k = graph_add_op(g, op->type, op->name, op->n_in, in, op->n_out, out);
		for (int j = 0; j < op->n_attr; j++)
			op_copy_attr(&g->ops[k], &op->attr[j]);
		free(in);
		free(out);
	}
	for (int i = 0; i < s->n_outputs; i++)
		if (!direct[i]) {
			char *name = graph_unique_name(g, g->tensors[outs[i]].name, 1);
			graph_add_op(g, OP_IDENTITY, name, 1, &map[s->outputs[i]], 1, &outs[i]);
			free(name);
		}
	free(direct);
	free(map);
	return im->infer_ops(im, first);
}

/* Replace the If being imported by the ops of body B, whose outputs become
 * the node's outputs. */
static int inline_body(struct imp *im, struct body *b)
{
	int *outs = xmalloc(sizeof(int) * (size_t)(b->g->n_outputs + 1));
	int rc = make_outputs(im, b->g->n_outputs, outs);
	if (rc == 0)
		rc = inline_graph(im, b->g, b->caps, outs);
	free(outs);
	return rc;
}

static int import_if(struct imp *im)
{
	static const char *const attrs[] = { "then_branch", "else_branch", NULL };
	const Onnx__NodeProto *n = im->node;
	if (check_attrs(im, attrs) < 0)
		return -1;
	const Onnx__GraphProto *gt = graph_attr(im, "then_branch");
	const Onnx__GraphProto *ge = gt ? graph_attr(im, "else_branch") : NULL;
	if (!ge)
		return -1;
	if (n->n_input != 1)
		return node_err(im, "%zu inputs, expected 1", n->n_input);
	int c;
	if (resolve_input(im, n->input[0], &c) < 0)
		return -1;
	const struct ir_tensor *ct = known_tensor(im, c);
	if (!ct)
		return node_err(im, "input 0 is required");
	if (tensor_numel(ct) != 1)
		return node_err(im, "the condition must hold one value");
	struct body bt, be;
	if (ct->data) {
		/* constant: the branch taken is all there is */
		int take = dtype_get(ct->data, ct->dtype, 0) != 0;
		if (import_body(im, take ? gt : ge, 0, NULL, &bt) < 0)
			return -1;
		int rc = inline_body(im, &bt);
		body_free(&bt);
		return rc;
	}
	/* A branch whose ops do not fit the shapes the graph has here (one
	 * written for another input size: an LSTM fed a tensor of rank 5) is
	 * not taken with them, or the model fails there at run time, as in
	 * onnxruntime: it is kept as the reason it cannot run (attribute
	 * then_error or else_error), and the op has the other branch only. */
	char *why[2] = { NULL, NULL };
	if (import_body(im, gt, 0, NULL, &bt) < 0)
		why[0] = xstrdup(err_msg());
	if (import_body(im, ge, 0, NULL, &be) < 0) {
		if (why[0]) {
			err_set("%s", why[0]);   /* neither fits: the first branch's reason */
			free(why[0]);
			return -1;
		}
		why[1] = xstrdup(err_msg());
	}
	/* both branches take the union of what either captures, in one order */
	int nu = 0;
	int *u = xmalloc(sizeof(int) * (size_t)(bt.n_caps + be.n_caps + 1));
	for (int pass = 0; pass < 2; pass++) {
		struct body *b = pass ? &be : &bt;
		for (int i = 0; i < b->n_caps; i++) {
			int seen = 0;
			for (int j = 0; j < nu; j++)
				seen |= u[j] == b->caps[i];
			if (!seen)
				u[nu++] = b->caps[i];
		}
	}
	for (int pass = 0; pass < 2; pass++) {
		struct body *b = pass ? &be : &bt;
		if (!b->g)
			continue;
		int *in = xmalloc(sizeof(int) * (size_t)(nu + 1));
		for (int j = 0; j < nu; j++) {
			in[j] = -1;
			for (int i = 0; i < b->n_caps; i++)
				if (b->caps[i] == u[j])
					in[j] = b->g->inputs[i];
			if (in[j] >= 0)
				continue;
			const struct ir_tensor *x = &im->g->tensors[u[j]];
			char *name = graph_unique_name(b->g, x->name, 1);
			in[j] = graph_add_tensor(b->g, name, x->dtype, x->rank, x->shape);
			b->g->tensors[in[j]].dyn = x->dyn;
			free(name);
		}
		int *outs = xmalloc(sizeof(int) * (size_t)(b->g->n_outputs + 1));
		memcpy(outs, b->g->outputs, sizeof(int) * (size_t)b->g->n_outputs);
		graph_set_io(b->g, nu, in, b->g->n_outputs, outs);
		free(outs);
		free(in);
	}
	int n_out = (bt.g ? bt.g : be.g)->n_outputs, rc = 0;
	if (bt.g && be.g && be.g->n_outputs != n_out)
		rc = node_err(im, "the branches give %d and %d outputs", n_out, be.g->n_outputs);
	int *outs = xmalloc(sizeof(int) * (size_t)(n_out + 1));
	if (rc == 0)
		rc = make_outputs(im, n_out, outs);
	if (rc == 0) {
		int *in = xmalloc(sizeof(int) * (size_t)(nu + 1));
		in[0] = c;
		if (nu > 0)
			memcpy(in + 1, u, sizeof(int) * (size_t)nu);
		int first = im->g->n_ops;
		int k = graph_add_op(im->g, OP_IF, im->node_name, nu + 1, in, n_out, outs);
		free(in);
		static const char *const branch[2] = { "then_branch", "else_branch" };
		static const char *const error[2] = { "then_error", "else_error" };
		struct body *b[2] = { &bt, &be };
		for (int i = 0; i < 2; i++) {
			if (b[i]->g)
				op_set_graph(&im->g->ops[k], branch[i], b[i]->g);
			else
				op_set_str(&im->g->ops[k], error[i], why[i]);
			b[i]->g = NULL;
		}
		rc = im->infer_ops(im, first);
	}
	free(outs);
	free(u);
	free(why[0]);
	free(why[1]);
	body_free(&bt);
	body_free(&be);
	return rc;
}

/* Add the control op T with inputs IN[0..n_in) and the captures of B, its
 * outputs made for the node, and B's graph as attribute "body". */
static int add_control(struct imp *im, enum op_type t, int n_in, const int *in, struct body *b,
		       int n_out, struct ir_op **made)
{
	int *all = xmalloc(sizeof(int) * (size_t)(n_in + b->n_caps + 1));
	if (n_in > 0)
		memcpy(all, in, sizeof(int) * (size_t)n_in);
	if (b->n_caps > 0)
		memcpy(all + n_in, b->caps, sizeof(int) * (size_t)b->n_caps);
	int *outs = xmalloc(sizeof(int) * (size_t)(n_out + 1));
	int rc = make_outputs(im, n_out, outs);
	if (rc == 0) {
		int k = graph_add_op(im->g, t, im->node_name, n_in + b->n_caps, all, n_out, outs);
		struct ir_op *op = &im->g->ops[k];
		op_set_graph(op, "body", b->g);
		op_set_int(op, "captures", b->n_caps);
		b->g = NULL;
		*made = op;
	}
	free(all);
	free(outs);
	return rc;
}

/* Undo the ops appended from FIRST on (graph_compact drops them and the
 * tensors only they used). */
static void roll_back(struct imp *im, int first)
{
	for (int i = first; i < im->g->n_ops; i++)
		im->g->ops[i].type = OP_COUNT;
}

/* A Loop with a constant trip count of at most CONTROL_UNROLL_MAX and no
 * condition (or a constant true one) is unrolled: the body once per
 * iteration, the iteration a constant in each, so that what depends on it
 * folds (a Slice at the iteration, a nested If); the scan outputs are the
 * iterations' values stacked by Unsqueeze and Concat.  Every iteration's
 * condition must fold.  1 when unrolled, 0 when the Loop stays a Loop
 * (nothing added), -1 on error. */
static int unroll_loop(struct imp *im, const Onnx__GraphProto *gp, const int *in, int nv)
{
	struct ir_graph *g = im->g;
	const struct ir_tensor *mt = in[0] >= 0 ? &g->tensors[in[0]] : NULL;
	const struct ir_tensor *ct = in[1] >= 0 ? &g->tensors[in[1]] : NULL;
	if (!mt || !mt->data || (ct && (!ct->data || !dtype_get(ct->data, ct->dtype, 0))))
		return 0;
	int64_t trip = dtype_get_int(mt->data, mt->dtype, 0);
	if (trip < 1 || trip > CONTROL_UNROLL_MAX)
		return 0;
	int first = g->n_ops, k = -1, rc = 0;
	int64_t iters = 0, iv;
	unsigned char yes = 1;
	int *cur = xmalloc(sizeof(int) * (size_t)(nv + 1)), *scan = NULL;
	memcpy(cur, in + 2, sizeof(int) * (size_t)nv);
	struct ir_tensor *formal = xcalloc((size_t)nv + 2, sizeof *formal);
	for (int64_t i = 0; i < trip && rc == 0; i++) {
		iv = i;
		formal[0] = (struct ir_tensor){ .dtype = DT_I64, .data = &iv, .nbytes = 8 };
		formal[1] = (struct ir_tensor){ .dtype = DT_BOOL, .data = &yes, .nbytes = 1 };
		for (int j = 0; j < nv; j++)
			formal[2 + j] = g->tensors[cur[j]];
		struct body b;
		if (import_body(im, gp, nv + 2, formal, &b) < 0) {
			rc = 1;   /* the Loop as a Loop says what is wrong */
			break;
		}
		if (k < 0 && (k = b.g->n_outputs - 1 - nv) >= 0)
			scan = xmalloc(sizeof(int) * (size_t)(trip * k + 1));
		if (k < 0 || b.g->n_outputs != 1 + nv + k) {
			body_free(&b);
			rc = 1;
			break;
		}
		int *map = xmalloc(sizeof(int) * (size_t)(b.g->n_inputs + 1)), nm = 0;
		for (int j = 0; j < nv; j++)
			if (!formal[2 + j].data)
				map[nm++] = cur[j];
		if (b.n_caps > 0)
			memcpy(map + nm, b.caps, sizeof(int) * (size_t)b.n_caps);
		int *outs = xmalloc(sizeof(int) * (size_t)(b.g->n_outputs + 1));
		for (int j = 0; j < b.g->n_outputs; j++) {
			char base[512];
			snprintf(base, sizeof base, "%s_iter%lld_%d", im->node_name, (long long)i, j);
			char *name = graph_unique_name(g, base, 1);
			outs[j] = graph_add_tensor(g, name, DT_F32, 0, NULL);
			free(name);
		}
		int r = inline_graph(im, b.g, map, outs);
		body_free(&b);
		free(map);
		const struct ir_tensor *c = &g->tensors[outs[0]];
		if (r < 0)
			rc = -1;
		else if (!c->data)
			rc = 1;   /* the condition is computed: stays a Loop */
		else {
			for (int j = 0; j < nv; j++)
				cur[j] = outs[1 + j];
			for (int j = 0; j < k; j++)
				scan[i * k + j] = outs[1 + nv + j];
			iters++;
			if (!dtype_get(c->data, c->dtype, 0))
				i = trip;
		}
		free(outs);
	}
	free(formal);
	if (rc == 0) {
		int start = g->n_ops;
		int *outs = xmalloc(sizeof(int) * (size_t)(nv + k + 1));
		rc = make_outputs(im, nv + k, outs);
		for (int j = 0; j < nv && rc == 0; j++) {
			char *name = graph_unique_name(g, g->tensors[outs[j]].name, 1);
			graph_add_op(g, OP_IDENTITY, name, 1, &cur[j], 1, &outs[j]);
			free(name);
		}
		for (int j = 0; j < k && rc == 0; j++) {
			int *parts = xmalloc(sizeof(int) * (size_t)(iters + 1));
			for (int64_t i = 0; i < iters; i++) {
				char *name = graph_unique_name(g, g->tensors[scan[i * k + j]].name, 1);
				char base[600];
				snprintf(base, sizeof base, "%s_stack", name);
				char *un = graph_unique_name(g, base, 1);
				parts[i] = iters == 1 ? outs[nv + j] : graph_add_tensor(g, un, DT_F32, 0, NULL);
				int u = graph_add_op(g, OP_UNSQUEEZE, un, 1, &scan[i * k + j], 1, &parts[i]);
				op_set_ints(&g->ops[u], "axes", 1, (int64_t[]){ 0 });
				free(name);
				free(un);
			}
			if (iters > 1) {
				char *name = graph_unique_name(g, g->tensors[outs[nv + j]].name, 1);
				int cc = graph_add_op(g, OP_CONCAT, name, (int)iters, parts, 1, &outs[nv + j]);
				op_set_int(&g->ops[cc], "axis", 0);
				free(name);
			}
			free(parts);
		}
		free(outs);
		if (rc == 0)
			rc = im->infer_ops(im, start);
		rc = rc < 0 ? -1 : 1;
	} else if (rc == 1) {
		roll_back(im, first);
		rc = 0;
	}
	free(cur);
	free(scan);
	return rc;
}

static int import_loop(struct imp *im)
{
	static const char *const attrs[] = { "body", NULL };
	const Onnx__NodeProto *n = im->node;
	if (check_attrs(im, attrs) < 0)
		return -1;
	const Onnx__GraphProto *gp = graph_attr(im, "body");
	if (!gp)
		return -1;
	if (n->n_input < 2)
		return node_err(im, "%zu inputs, expected at least 2", n->n_input);
	int nv = (int)n->n_input - 2;
	int *in = xmalloc(sizeof(int) * (n->n_input + 1));
	struct ir_tensor *formal = xcalloc(n->n_input + 1, sizeof *formal);
	formal[0].dtype = DT_I64;
	formal[1].dtype = DT_BOOL;
	int rc = 0;
	for (size_t i = 0; i < n->n_input && rc == 0; i++) {
		if ((rc = resolve_input(im, n->input[i], &in[i])) < 0)
			break;
		const struct ir_tensor *x = known_tensor(im, in[i]);
		if (in[i] >= 0 && !x)
			rc = node_err(im, "input %zu has no known shape", i);
		else if (i >= 2 && !x)
			rc = node_err(im, "input %zu is required", i);
		else if (i < 2 && x && tensor_numel(x) != 1)
			rc = node_err(im, "input %zu must hold one value", i);
		else if (i >= 2) {
			/* a loop-carried value changes from one iteration to the
			 * next: never a constant in the body, even when its
			 * initial value is one (Mask R-CNN's empty list of masks) */
			formal[i] = *x;
			formal[i].data = NULL;
			formal[i].nbytes = 0;
			formal[i].owns_data = 0;
		}
	}
	struct body b = { 0 };
	if (rc == 0 && (rc = unroll_loop(im, gp, in, nv)) != 0) {
		free(formal);
		free(in);
		return rc < 0 ? -1 : 0;
	}
	if (rc == 0)
		rc = import_body(im, gp, nv + 2, formal, &b);
	free(formal);
	if (rc == 0 && b.g->n_outputs < 1 + nv)
		rc = node_err(im, "the body gives %d outputs, expected at least %d", b.g->n_outputs, 1 + nv);
	struct ir_op *op;
	int first = im->g->n_ops;
	if (rc == 0)
		rc = add_control(im, OP_LOOP, 2 + nv, in, &b, b.g->n_outputs - 1, &op);
	free(in);
	body_free(&b);
	return rc < 0 ? -1 : im->infer_ops(im, first);
}

/* A new tensor named after the node with SUFFIX and number I. */
static int scan8_tensor(struct imp *im, const char *suffix, int i)
{
	char base[512];
	snprintf(base, sizeof base, "%s_%s%d", im->node_name, suffix, i);
	char *name = graph_unique_name(im->g, base, 1);
	int t = graph_add_tensor(im->g, name, DT_F32, 0, NULL);
	free(name);
	return t;
}

/* Scan's opset 8 form: inputs [sequence_lens (absent)], states [B, ...],
 * scan inputs [B, T, ...]; outputs final states [B, ...] and scan outputs
 * [B, T, ...].  Each batch entry b is an opset 9 Scan over entry b of
 * every input (Gather at b, axis 0), its outputs stacked again by
 * Unsqueeze and Concat. */
static int import_scan8(struct imp *im)
{
	static const char *const attrs[] = { "body", "num_scan_inputs", "directions", NULL };
	const Onnx__NodeProto *n = im->node;
	struct ir_graph *g = im->g;
	if (check_attrs(im, attrs) < 0)
		return -1;
	if (n->n_input < 2)
		return node_err(im, "%zu inputs, expected at least 2", n->n_input);
	if (n->input[0] && *n->input[0])
		return node_err(im, "the opset %d form with sequence_lens is not supported (opset 9 "
				"or later)", im->opset);
	const Onnx__GraphProto *gp = graph_attr(im, "body");
	int64_t m, *dirs = xmalloc(sizeof *dirs * (n->n_input + 1));
	int nd = 0, nin = (int)n->n_input - 1;
	if (!gp || attr_int(im, "num_scan_inputs", -1, &m) < 0 ||
	    attr_ints(im, "directions", dirs, (int)n->n_input, &nd) < 0) {
		free(dirs);
		return -1;
	}
	if (m < 1 || m > nin) {
		free(dirs);
		return node_err(im, "num_scan_inputs %lld does not fit its %d inputs", (long long)m, nin);
	}
	int ns = nin - (int)m;
	int *x = xmalloc(sizeof(int) * (size_t)(nin + 1));
	struct ir_tensor *formal = xcalloc((size_t)nin + 1, sizeof *formal);
	int64_t nb = -1;
	int rc = 0;
	for (int i = 0; i < nin && rc == 0; i++) {
		if ((rc = resolve_input(im, n->input[i + 1], &x[i])) < 0)
			break;
		const struct ir_tensor *t = known_tensor(im, x[i]);
		int drop = i < ns ? 1 : 2;   /* the batch axis, and the scan axis */
		if (!t || t->rank < drop || (nb >= 0 && t->shape[0] != nb)) {
			rc = node_err(im, "input %d must have the batch axis%s", i + 1,
				      i < ns ? "" : " and the scan axis");
			break;
		}
		nb = t->shape[0];
		formal[i] = *t;
		formal[i].rank = t->rank - drop;
		formal[i].dyn = t->dyn >> drop;
		memmove(formal[i].shape, t->shape + drop, sizeof(int64_t) * (size_t)(t->rank - drop));
	}
	int first = g->n_ops, n_out = -1;
	int *outs = NULL, **stack = NULL, *in = xmalloc(sizeof(int) * (size_t)(nin + 1));
	for (int64_t b = 0; b < nb && rc == 0; b++) {
		struct body bd = { 0 };
		if ((rc = import_body(im, gp, nin, formal, &bd)) < 0)
			break;
		if (n_out < 0) {
			n_out = bd.g->n_outputs;
			outs = xcalloc((size_t)n_out + 1, sizeof *outs);
			stack = xcalloc((size_t)n_out + 1, sizeof *stack);
			for (int j = 0; j < n_out; j++)
				stack[j] = xcalloc((size_t)nb + 1, sizeof **stack);
			if (n_out < ns)
				rc = node_err(im, "the body gives %d outputs, expected at least %d", n_out, ns);
			else
				rc = make_outputs(im, n_out, outs);
			if (rc < 0) {
				body_free(&bd);
				break;
			}
		}
		char base[512];
		snprintf(base, sizeof base, "%s_b%lld", im->node_name, (long long)b);
		char *name = graph_unique_name(g, base, 1);
		int idx = graph_add_weight(g, name, DT_I64, 0, NULL, &b);
		free(name);
		for (int i = 0; i < nin; i++) {
			int gin[2] = { x[i], idx };
			in[i] = scan8_tensor(im, "in", i);
			int k = graph_add_op(g, OP_GATHER, g->tensors[in[i]].name, 2, gin, 1, &in[i]);
			op_set_int(&g->ops[k], "axis", 0);
		}
		int *so = xmalloc(sizeof(int) * (size_t)(n_out + 1));
		for (int j = 0; j < n_out; j++)
			so[j] = scan8_tensor(im, "out", j);
		int *all = xmalloc(sizeof(int) * (size_t)(nin + bd.n_caps + 1));
		memcpy(all, in, sizeof(int) * (size_t)nin);
		if (bd.n_caps > 0)
			memcpy(all + nin, bd.caps, sizeof(int) * (size_t)bd.n_caps);
		int k = graph_add_op(g, OP_SCAN, base, nin + bd.n_caps, all, n_out, so);
		struct ir_op *op = &g->ops[k];
		op_set_graph(op, "body", bd.g);
		bd.g = NULL;
		op_set_int(op, "captures", bd.n_caps);
		op_set_int(op, "num_scan_inputs", m);
		if (nd)
			op_set_ints(op, "scan_input_directions", nd < (int)m ? nd : (int)m, dirs);
		free(all);
		body_free(&bd);
		for (int j = 0; j < n_out; j++) {
			int u = nb == 1 ? outs[j] : scan8_tensor(im, "stack", j);
			int ku = graph_add_op(g, OP_UNSQUEEZE, g->tensors[so[j]].name, 1, &so[j], 1, &u);
			op_set_ints(&g->ops[ku], "axes", 1, (int64_t[]){ 0 });
			stack[j][b] = u;
		}
		free(so);
	}
	for (int j = 0; j < n_out && rc == 0 && nb > 1; j++) {
		char base[512];
		snprintf(base, sizeof base, "%s_concat%d", im->node_name, j);
		int k = graph_add_op(g, OP_CONCAT, base, (int)nb, stack[j], 1, &outs[j]);
		op_set_int(&g->ops[k], "axis", 0);
	}
	for (int j = 0; j < n_out; j++)
		free(stack[j]);
	free(stack);
	free(outs);
	free(in);
	free(x);
	free(formal);
	free(dirs);
	if (rc < 0)
		return -1;
	return im->infer_ops(im, first);
}

static int import_scan(struct imp *im)
{
	static const char *const attrs[] = { "body", "num_scan_inputs", "scan_input_axes",
		"scan_input_directions", "scan_output_axes", "scan_output_directions", NULL };
	static const char *const lists[] = { "scan_input_axes", "scan_input_directions",
		"scan_output_axes", "scan_output_directions" };
	const Onnx__NodeProto *n = im->node;
	if (im->opset < 9)
		return import_scan8(im);
	if (check_attrs(im, attrs) < 0)
		return -1;
	const Onnx__GraphProto *gp = graph_attr(im, "body");
	int64_t m;
	if (!gp || attr_int(im, "num_scan_inputs", -1, &m) < 0)
		return -1;
	if (m < 1 || m > (int64_t)n->n_input)
		return node_err(im, "num_scan_inputs %lld does not fit its %zu inputs", (long long)m,
				n->n_input);
	int64_t *axes = xcalloc(n->n_input + 1, sizeof *axes);
	int n_axes = 0;
	if (attr_ints(im, "scan_input_axes", axes, (int)n->n_input, &n_axes) < 0) {
		free(axes);
		return -1;
	}
	int ns = (int)n->n_input - (int)m;
	int *in = xmalloc(sizeof(int) * (n->n_input + 1));
	struct ir_tensor *formal = xcalloc(n->n_input + 1, sizeof *formal);
	int rc = 0;
	for (size_t i = 0; i < n->n_input && rc == 0; i++) {
		if ((rc = resolve_input(im, n->input[i], &in[i])) < 0)
			break;
		const struct ir_tensor *x = known_tensor(im, in[i]);
		if (!x) {
			rc = node_err(im, "input %zu is required", i);
			break;
		}
		formal[i] = *x;
		if ((int)i < ns)
			continue;
		int j = (int)i - ns, ax = norm_axis(j < n_axes ? axes[j] : 0, x->rank);
		if (ax < 0) {
			rc = node_err(im, "scan_input_axes[%d] is out of range", j);
			break;
		}
		formal[i].rank = x->rank - 1;
		formal[i].dyn = (x->dyn & ((1u << ax) - 1)) | ((x->dyn >> (ax + 1)) << ax);
		memmove(formal[i].shape + ax, x->shape + ax + 1,
			sizeof(int64_t) * (size_t)(x->rank - ax - 1));
	}
	struct body b = { 0 };
	if (rc == 0)
		rc = import_body(im, gp, (int)n->n_input, formal, &b);
	free(formal);
	free(axes);
	if (rc == 0 && b.g->n_outputs < ns)
		rc = node_err(im, "the body gives %d outputs, expected at least %d", b.g->n_outputs, ns);
	struct ir_op *op = NULL;
	int first = im->g->n_ops;
	if (rc == 0)
		rc = add_control(im, OP_SCAN, (int)n->n_input, in, &b, b.g->n_outputs, &op);
	free(in);
	body_free(&b);
	if (rc < 0)
		return -1;
	op_set_int(op, "num_scan_inputs", m);
	/* one value per scan input or output: as many as the node has */
	int most = (int)(n->n_input + n->n_output);
	int64_t *v = xmalloc(sizeof *v * (size_t)(most + 1));
	for (int i = 0; i < 4; i++) {
		int nv = 0;
		if (attr_ints(im, lists[i], v, most, &nv) < 0) {
			free(v);
			return -1;
		}
		if (nv)
			op_set_ints(op, lists[i], nv, v);
	}
	free(v);
	return im->infer_ops(im, first);
}

int import_control(struct imp *im, const char *out0)
{
	(void)out0;
	const char *type = im->node->op_type;
	if (!strcmp(type, "If"))
		return import_if(im);
	if (!strcmp(type, "Loop"))
		return import_loop(im);
	return import_scan(im);
}
