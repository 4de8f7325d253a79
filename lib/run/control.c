/* control.c - If, Loop and Scan (lib/run/control.h): shape inference that
 * checks each body against its op, and kernels that run the bodies op by
 * op, with loop-carried state and scan outputs.
 */
#include "run/control.h"

#include <stdlib.h>
#include <string.h>

#include "ir/base.h"
#include "ir/convert.h"
#include "ir/op.h"

int control_op(enum op_type t)
{
	return t == OP_IF || t == OP_LOOP || t == OP_SCAN;
}

int control_run_graph(const struct ir_graph *g, void **val, int nthreads)
{
	for (int i = 0; i < g->n_ops; i++) {
		const struct ir_op *op = &g->ops[i];
		const struct op_def *d = op_defs[op->type];
		int (*run)(struct kern *) = op_kernel(g, op);
		/* integer results (a loop counter) by the constant-folding kernel,
		 * as top-opt folds them */
		int ints = 0;
		for (int j = 0; j < op->n_out; j++)
			ints |= g->tensors[op->out[j]].dtype != DT_F32;
		if (g->dialect == DIALECT_TOP && ints && d->run_const)
			run = d->run_const;
		if (!run)
			return err_set("op '%s' (%s): no %s kernel", op->name, op_name(op->type),
				       g->dialect == DIALECT_TOP ? "float" : "tpu");
		struct kern k;
		kern_from_graph(&k, g, op, val);
		k.nthreads = nthreads;
		int rc = run(&k);
		kern_done(&k);
		if (rc < 0)
			return -1;
	}
	return 0;
}

/* ---- a body's buffers ---- */

struct body {
	const struct ir_graph *g;
	void **val;
};

static void body_init(struct body *b, const struct ir_graph *g)
{
	b->g = g;
	b->val = graph_values_new(g);
}

static void body_free(struct body *b)
{
	graph_values_free(b->g, b->val);
}

/* Body input I from SRC (its own dtype and shape). */
static void body_in(struct body *b, int i, const void *src)
{
	int t = b->g->inputs[i];
	memcpy(b->val[t], src, tensor_bytes(&b->g->tensors[t]));
}

static const void *body_out(const struct body *b, int i)
{
	return b->val[b->g->outputs[i]];
}

static size_t out_bytes(const struct body *b, int i)
{
	return tensor_bytes(&b->g->tensors[b->g->outputs[i]]);
}

/* ---- shape inference ---- */

static int same_type(const struct ir_tensor *a, const struct ir_tensor *b)
{
	return a->dtype == b->dtype && a->rank == b->rank &&
	       !memcmp(a->shape, b->shape, sizeof(int64_t) * (size_t)a->rank);
}

static int type_err(const struct ir_op *op, const char *what, const struct ir_tensor *want,
		    const struct ir_tensor *got)
{
	char w[160], g[160];
	shape_str(w, sizeof w, want->rank, want->shape);
	shape_str(g, sizeof g, got->rank, got->shape);
	return op_error(op, "%s is %s %s, expected %s %s", what, dtype_name(got->dtype), g,
			dtype_name(want->dtype), w);
}

/* SUB, attribute NAME of op: present, its ops consistent, and its inputs
 * FIRST.. the op's inputs OP_FIRST.. (N of them, absent ones skipped). */
static struct ir_graph *body_check(struct ir_graph *g, struct ir_op *op, const char *name,
				   int first, int op_first, int n)
{
	struct ir_graph *sub = op_graph(op, name);
	if (!sub) {
		op_error(op, "subgraph '%s' is missing", name);
		return NULL;
	}
	if (ir_verify_ops(sub) < 0) {
		err_prefix("op '%s' (%s): subgraph '%s'", op->name, op_name(op->type), name);
		return NULL;
	}
	if (sub->n_inputs != first + n) {
		op_error(op, "subgraph '%s' has %d inputs, expected %d", name, sub->n_inputs, first + n);
		return NULL;
	}
	for (int i = 0; i < n; i++) {
		const struct ir_tensor *x = op_in(g, op, op_first + i);
		const struct ir_tensor *y = &sub->tensors[sub->inputs[first + i]];
		char what[96];
		snprintf(what, sizeof what, "input %d of subgraph '%s'", first + i, name);
		if (x && !same_type(x, y)) {
			type_err(op, what, x, y);
			return NULL;
		}
	}
	return sub;
}

static int numel_is_one(const struct ir_tensor *t)
{
	return t && tensor_numel(t) == 1;
}

static int if_infer(struct ir_graph *g, struct ir_op *op)
{
	if (op->n_in < 1 || op->in[0] < 0)
		return op_error(op, "the condition is required");
	if (!numel_is_one(op_in(g, op, 0)))
		return op_error(op, "the condition must hold one value");
	struct ir_graph *a = body_check(g, op, "then_branch", 0, 1, op->n_in - 1);
	struct ir_graph *b = a ? body_check(g, op, "else_branch", 0, 1, op->n_in - 1) : NULL;
	if (!b)
		return -1;
	if (a->n_outputs != op->n_out || b->n_outputs != op->n_out)
		return op_error(op, "the branches give %d and %d outputs, the op has %d",
				a->n_outputs, b->n_outputs, op->n_out);
	for (int i = 0; i < op->n_out; i++) {
		const struct ir_tensor *x = &a->tensors[a->outputs[i]], *y = &b->tensors[b->outputs[i]];
		if (!same_type(x, y))
			return op_error(op, "the branches give output %d different types: a condition "
					"that is not constant needs one type (bind it with onnx2top --bind)", i);
		op_set_out(g, op, i, x->dtype, x->rank, x->shape);
	}
	return 0;
}

/* The constant trip count of a Loop, or -1 when M is absent or computed. */
static int64_t loop_const_trip(const struct ir_graph *g, const struct ir_op *op)
{
	const struct ir_tensor *m = op_in((struct ir_graph *)g, op, 0);
	if (!m || !m->data || tensor_numel(m) != 1)
		return -1;
	int64_t v = dtype_get_int(m->data, m->dtype, 0);
	return v < 0 ? 0 : v;
}

static int loop_infer(struct ir_graph *g, struct ir_op *op)
{
	int64_t k = op_int(op, "captures", 0);
	if (k < 0 || k > op->n_in - 2)
		return op_error(op, "captures %lld does not fit its %d inputs", (long long)k, op->n_in);
	int n = op->n_in - 2 - (int)k;
	if (op->in[0] >= 0 && !numel_is_one(op_in(g, op, 0)))
		return op_error(op, "the trip count must hold one value");
	if (op->in[1] >= 0 && !numel_is_one(op_in(g, op, 1)))
		return op_error(op, "the condition must hold one value");
	struct ir_graph *b = body_check(g, op, "body", 2, 2, n + (int)k);
	if (!b)
		return -1;
	const struct ir_tensor *it = &b->tensors[b->inputs[0]], *ci = &b->tensors[b->inputs[1]];
	if (it->dtype != DT_I64 || tensor_numel(it) != 1 || ci->dtype != DT_BOOL || tensor_numel(ci) != 1)
		return op_error(op, "the body's first inputs must be the iteration (i64) and the "
				"condition (bool)");
	int m = b->n_outputs - 1 - n;
	if (m < 0 || op->n_out != n + m)
		return op_error(op, "the body has %d outputs, the op %d outputs and %d loop-carried values",
				b->n_outputs, op->n_out, n);
	const struct ir_tensor *co = &b->tensors[b->outputs[0]];
	if (tensor_numel(co) != 1)
		return op_error(op, "the body's condition output must hold one value");
	for (int i = 0; i < n; i++) {
		const struct ir_tensor *v = &b->tensors[b->inputs[2 + i]];
		const struct ir_tensor *o = &b->tensors[b->outputs[1 + i]];
		if (!same_type(v, o)) {
			char what[96];
			snprintf(what, sizeof what, "loop-carried value %d at the end of an iteration", i);
			return type_err(op, what, v, o);
		}
		op_set_out(g, op, i, v->dtype, v->rank, v->shape);
	}
	int64_t trip = loop_const_trip(g, op);
	if (m > 0 && trip < 0)
		return op_error(op, "the trip count must be a constant for scan outputs "
				"(bind it with onnx2top --bind)");
	for (int j = 0; j < m; j++) {
		const struct ir_tensor *s = &b->tensors[b->outputs[1 + n + j]];
		if (s->rank >= IR_MAX_RANK)
			return op_error(op, "scan output %d has rank %d: stacked it exceeds %d", j, s->rank,
					IR_MAX_RANK);
		int64_t sh[IR_MAX_RANK];
		sh[0] = trip;
		memcpy(sh + 1, s->shape, sizeof(int64_t) * (size_t)s->rank);
		op_set_out(g, op, n + j, s->dtype, s->rank + 1, sh);
	}
	return 0;
}

/* Scan's per-input and per-output attributes: axis (normalised) and
 * direction. */
/* Entry i of ints attribute name, 0 when it has none. */
static int64_t attr_at(const struct ir_op *op, const char *name, int i)
{
	const struct ir_attr *a = op_attr(op, name);
	return a && a->kind == ATTR_INTS && i < a->n ? a->ints[i] : 0;
}

static int scan_axis(const struct ir_op *op, const char *name, int i, int rank, int *axis)
{
	int64_t a = attr_at(op, name, i);
	*axis = norm_axis(a, rank);
	if (*axis < 0)
		return op_error(op, "%s[%d] = %lld is out of range", name, i, (long long)a);
	return 0;
}

static int scan_dir(const struct ir_op *op, const char *name, int i)
{
	return attr_at(op, name, i) != 0;
}

static int scan_infer(struct ir_graph *g, struct ir_op *op)
{
	int64_t k = op_int(op, "captures", 0), m = op_int(op, "num_scan_inputs", -1);
	if (m < 1 || k < 0 || m + k > op->n_in)
		return op_error(op, "num_scan_inputs %lld and captures %lld do not fit its %d inputs",
				(long long)m, (long long)k, op->n_in);
	int n = op->n_in - (int)m - (int)k;
	struct ir_graph *b = op_graph(op, "body");
	if (!b)
		return op_error(op, "subgraph 'body' is missing");
	if (ir_verify_ops(b) < 0)
		return err_prefix("op '%s' (Scan): subgraph 'body'", op->name);
	if (b->n_inputs != op->n_in)
		return op_error(op, "subgraph 'body' has %d inputs, expected %d", b->n_inputs, op->n_in);
	int64_t len = -1;
	for (int i = 0; i < op->n_in; i++) {
		const struct ir_tensor *x = op_in(g, op, i), *y = &b->tensors[b->inputs[i]];
		if (!x)
			return op_error(op, "input %d is required", i);
		if (i < n || i >= n + m) {
			if (!same_type(x, y))
				return type_err(op, "a body input", x, y);
			continue;
		}
		int ax;
		if (scan_axis(op, "scan_input_axes", i - n, x->rank, &ax) < 0)
			return -1;
		if (len >= 0 && x->shape[ax] != len)
			return op_error(op, "the scan inputs have lengths %lld and %lld",
					(long long)len, (long long)x->shape[ax]);
		len = x->shape[ax];
		struct ir_tensor el = *x;
		el.rank = x->rank - 1;
		memmove(el.shape + ax, x->shape + ax + 1, sizeof(int64_t) * (size_t)(x->rank - ax - 1));
		if (!same_type(&el, y))
			return type_err(op, "a scan input's slice in the body", &el, y);
	}
	int q = b->n_outputs - n;
	if (q < 0 || op->n_out != n + q)
		return op_error(op, "the body has %d outputs, the op %d", b->n_outputs, op->n_out);
	for (int i = 0; i < n; i++) {
		const struct ir_tensor *s = op_in(g, op, i), *o = &b->tensors[b->outputs[i]];
		if (!same_type(s, o))
			return type_err(op, "a state at the end of an iteration", s, o);
		op_set_out(g, op, i, s->dtype, s->rank, s->shape);
	}
	for (int j = 0; j < q; j++) {
		const struct ir_tensor *y = &b->tensors[b->outputs[n + j]];
		if (y->rank >= IR_MAX_RANK)
			return op_error(op, "scan output %d exceeds rank %d", j, IR_MAX_RANK);
		int ax;
		if (scan_axis(op, "scan_output_axes", j, y->rank + 1, &ax) < 0)
			return -1;
		int64_t sh[IR_MAX_RANK];
		memcpy(sh, y->shape, sizeof(int64_t) * (size_t)ax);
		sh[ax] = len;
		memcpy(sh + ax + 1, y->shape + ax, sizeof(int64_t) * (size_t)(y->rank - ax));
		op_set_out(g, op, n + j, y->dtype, y->rank + 1, sh);
	}
	return 0;
}

/* ---- kernels ---- */

static int view_true(const struct view *v)
{
	return dtype_get(v->data, v->dtype, 0) != 0;
}

static size_t view_bytes(const struct view *v)
{
	return (size_t)view_numel(v) * dtype_size(v->dtype);
}

static int if_run(struct kern *k)
{
	const struct ir_op *op = k->op;
	const struct ir_graph *sub = op_graph(op, view_true(&k->in[0]) ? "then_branch" : "else_branch");
	struct body b;
	body_init(&b, sub);
	for (int i = 1; i < k->n_in; i++)
		body_in(&b, i - 1, k->in[i].data);
	int rc = control_run_graph(sub, b.val, k->nthreads);
	for (int i = 0; i < k->n_out && rc == 0; i++)
		memcpy(k->out[i].data, body_out(&b, i), view_bytes(&k->out[i]));
	body_free(&b);
	return rc;
}

static int loop_run(struct kern *k)
{
	const struct ir_op *op = k->op;
	const struct ir_graph *sub = op_graph(op, "body");
	int n = k->n_in - 2 - (int)op_int(op, "captures", 0), m = k->n_out - n;
	int64_t trip = k->in[0].data ? dtype_get_int(k->in[0].data, k->in[0].dtype, 0) : -1;
	int go = k->in[1].data ? view_true(&k->in[1]) : 1;
	struct body b;
	body_init(&b, sub);
	for (int i = 2; i < k->n_in; i++)
		body_in(&b, i, k->in[i].data);
	int rc = 0;
	int64_t i = 0;
	for (; go && (trip < 0 || i < trip); i++) {
		if (trip < 0 && i >= CONTROL_MAX_ITERS) {
			rc = op_error(op, "no trip count and still running after %lld iterations",
				      (long long)CONTROL_MAX_ITERS);
			break;
		}
		if (m > 0 && i >= k->out[n].shape[0])
			break;
		int64_t it = i;
		unsigned char c = 1;
		body_in(&b, 0, &it);
		body_in(&b, 1, &c);
		if ((rc = control_run_graph(sub, b.val, k->nthreads)) < 0)
			break;
		go = dtype_get(body_out(&b, 0), sub->tensors[sub->outputs[0]].dtype, 0) != 0;
		for (int j = 0; j < n; j++)
			memmove(b.val[sub->inputs[2 + j]], body_out(&b, 1 + j), out_bytes(&b, 1 + j));
		for (int j = 0; j < m; j++) {
			size_t sz = out_bytes(&b, 1 + n + j);
			memcpy((char *)k->out[n + j].data + (size_t)i * sz, body_out(&b, 1 + n + j), sz);
		}
	}
	if (rc == 0 && m > 0 && i < k->out[n].shape[0])
		rc = op_error(op, "the loop stopped after %lld of %lld iterations: its scan outputs "
			      "need every one", (long long)i, (long long)k->out[n].shape[0]);
	for (int j = 0; j < n && rc == 0; j++)
		memcpy(k->out[j].data, b.val[sub->inputs[2 + j]], view_bytes(&k->out[j]));
	body_free(&b);
	return rc;
}

/* Copy slice IDX along AXIS of V (shape SHAPE, RANK dims, ES bytes per
 * element) to or from the dense buffer EL. */
static void slice_copy(void *v, const int64_t *shape, int rank, int axis, size_t es, int64_t idx,
		       void *el, int to_el)
{
	int64_t outer = 1, inner = 1;
	for (int d = 0; d < axis; d++)
		outer *= shape[d];
	for (int d = axis + 1; d < rank; d++)
		inner *= shape[d];
	size_t row = (size_t)inner * es;
	for (int64_t o = 0; o < outer; o++) {
		char *full = (char *)v + ((size_t)(o * shape[axis] + idx)) * row;
		char *part = (char *)el + (size_t)o * row;
		if (to_el)
			memcpy(part, full, row);
		else
			memcpy(full, part, row);
	}
}

/* Step t of len for scan tensor v, the j-th scan input (in: 1) or scan
 * output (0) of op: its slice t along its scan axis (counted from the end
 * when its direction is 1), copied into the body's value el or out of it. */
static int scan_slice(const struct ir_op *op, int in, int j, const struct view *v, int64_t len,
		      int64_t t, void *el)
{
	int ax, rc = scan_axis(op, in ? "scan_input_axes" : "scan_output_axes", j, v->rank, &ax);
	if (rc < 0)
		return rc;
	int64_t idx = scan_dir(op, in ? "scan_input_directions" : "scan_output_directions", j) ?
		      len - 1 - t : t;
	slice_copy(v->data, v->shape, v->rank, ax, dtype_size(v->dtype), idx, el, in);
	return 0;
}

static int scan_run(struct kern *k)
{
	const struct ir_op *op = k->op;
	const struct ir_graph *sub = op_graph(op, "body");
	int m = (int)op_int(op, "num_scan_inputs", 1), cap = (int)op_int(op, "captures", 0);
	int n = k->n_in - m - cap, q = k->n_out - n;
	struct body b;
	body_init(&b, sub);
	for (int i = 0; i < k->n_in; i++)
		if (i < n || i >= n + m)
			body_in(&b, i, k->in[i].data);
	int64_t len = 0;
	int ax;
	if (m > 0 && scan_axis(op, "scan_input_axes", 0, k->in[n].rank, &ax) == 0)
		len = k->in[n].shape[ax];
	int rc = 0;
	for (int64_t t = 0; t < len && rc == 0; t++) {
		for (int j = 0; j < m; j++) {
			if ((rc = scan_slice(op, 1, j, &k->in[n + j], len, t,
					     b.val[sub->inputs[n + j]])) < 0)
				break;
		}
		if (rc < 0 || (rc = control_run_graph(sub, b.val, k->nthreads)) < 0)
			break;
		for (int j = 0; j < n; j++)
			memmove(b.val[sub->inputs[j]], body_out(&b, j), out_bytes(&b, j));
		for (int j = 0; j < q; j++) {
			if ((rc = scan_slice(op, 0, j, &k->out[n + j], len, t,
					     (void *)body_out(&b, n + j))) < 0)
				break;
		}
	}
	for (int j = 0; j < n && rc == 0; j++)
		memcpy(k->out[j].data, b.val[sub->inputs[j]], view_bytes(&k->out[j]));
	body_free(&b);
	return rc;
}

/* The kernels run the body in its own dialect: one hook serves both.
 * top2tpu places them on the host (lib/back/lower_dtype.c). */
const struct op_def op_def_IF = { .infer = if_infer, .run_f32 = if_run, .run_tpu = if_run };
const struct op_def op_def_LOOP = { .infer = loop_infer, .run_f32 = loop_run, .run_tpu = loop_run };
const struct op_def op_def_SCAN = { .infer = scan_infer, .run_f32 = scan_run, .run_tpu = scan_run };
