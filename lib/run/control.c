/* control.c - If, Loop and Scan (lib/run/control.h): shape inference that
 * checks each body against its op (dynamic extents where values of other
 * extents reach it), and kernels that run the bodies op by op on run-time
 * shapes, with loop-carried state and scan outputs.
 */
#include "run/control.h"

#include <stdlib.h>
#include <string.h>

#include "ir/base.h"
#include "ir/convert.h"
#include "ir/dynrun.h"
#include "ir/op.h"

int control_op(enum op_type t)
{
	return t == OP_IF || t == OP_LOOP || t == OP_SCAN;
}

/* ---- a body's buffers and its run ---- */

struct body {
	const struct ir_graph *g;
	void **val;
	struct dynrun dr;     /* run-time shapes: a body may hold dynamic tensors */
};

static void body_init(struct body *b, const struct ir_graph *g)
{
	b->g = g;
	b->val = graph_values_new(g);
	dynrun_init(&b->dr, g, b->val, 1);
}

static void body_free(struct body *b)
{
	dynrun_free(&b->dr);
	graph_values_free(b->g, b->val);
}

/* Body input I from the value DATA of extents SHAPE (its own rank); a
 * static input takes only its own shape. */
static int body_in(const struct ir_op *op, struct body *b, int i, const void *data,
		   const int64_t *shape)
{
	int t = b->g->inputs[i];
	const struct ir_tensor *x = &b->g->tensors[t];
	if (!x->dyn && memcmp(x->shape, shape, sizeof(int64_t) * (size_t)x->rank)) {
		char want[160], got[160];
		shape_str(want, sizeof want, x->rank, x->shape);
		shape_str(got, sizeof got, x->rank, shape);
		return op_error(op, "input %d of its body is %s at run time, the body takes %s", i,
				got, want);
	}
	void *dst = dynrun_set_shape(&b->dr, t, x->rank, shape);
	if (dst != data)
		memmove(dst, data, tensor_bytes(dynrun_tensor(&b->dr, t)));
	return 0;
}

/* Body output I as the last run gave it. */
static const struct ir_tensor *body_out_t(const struct body *b, int i)
{
	return dynrun_tensor(&b->dr, b->g->outputs[i]);
}

static const void *body_out(const struct body *b, int i)
{
	return b->val[b->g->outputs[i]];
}

static size_t out_bytes(const struct body *b, int i)
{
	return tensor_bytes(body_out_t(b, i));
}

/* Body input I from body output O (loop-carried state). */
static int body_carry(const struct ir_op *op, struct body *b, int i, int o)
{
	return body_in(op, b, i, body_out(b, o), body_out_t(b, o)->shape);
}

/* Run the body once, op by op with its dialect's kernels. */
static int body_run(struct body *b, int nthreads)
{
	const struct ir_graph *g = b->g;
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
		if (dynrun_op(&b->dr, i, run, nthreads) < 0)
			return -1;
	}
	return 0;
}

/* Output I of k: SHAPE's extents, DATA's bytes. */
static int put_out(struct kern *k, int i, const int64_t *shape, const void *data)
{
	void *dst = kern_out_shape(k, i, shape);
	if (!dst)
		return -1;
	memcpy(dst, data, (size_t)view_numel(&k->out[i]) * dtype_size(k->out[i].dtype));
	return 0;
}

/* ---- shape inference ---- */

/* 1 if a value of type A fits a place of type B: the same dtype and rank,
 * and the same extents where neither is dynamic. */
static int fits(const struct ir_tensor *a, const struct ir_tensor *b)
{
	return a->dtype == b->dtype && shapes_agree(a, b);
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

/* Make input I of SUB take values of type X too: its dimensions dynamic
 * where X's are or where their extents differ (the larger extent kept).
 * 1 if it changed, 0 if not (or X is of another dtype or rank: the caller
 * reports that). */
static int widen_input(struct ir_graph *sub, int i, const struct ir_tensor *x)
{
	struct ir_tensor *y = &sub->tensors[sub->inputs[i]];
	if (x->dtype != y->dtype || x->rank != y->rank)
		return 0;
	uint32_t d = x->dyn;
	for (int k = 0; k < x->rank; k++)
		if (x->shape[k] != y->shape[k])
			d |= 1u << k;
	d &= ~y->dyn;
	if (!d)
		return 0;
	for (int k = 0; k < x->rank; k++)
		if ((d >> k & 1) && x->shape[k] > y->shape[k])
			y->shape[k] = x->shape[k];
	y->dyn |= d;
	return 1;
}

/* SUB, attribute NAME of op: present, its inputs FIRST.. taking the op's
 * inputs OP_FIRST.. (N of them, absent ones skipped; made dynamic where
 * those are, formats/tpuc-ir.5), its ops consistent. */
static struct ir_graph *body_check(struct ir_graph *g, struct ir_op *op, const char *name,
				   int first, int op_first, int n)
{
	struct ir_graph *sub = op_graph(op, name);
	if (!sub) {
		op_error(op, "subgraph '%s' is missing", name);
		return NULL;
	}
	if (sub->n_inputs != first + n) {
		op_error(op, "subgraph '%s' has %d inputs, expected %d", name, sub->n_inputs, first + n);
		return NULL;
	}
	int widened = 0;
	for (int i = 0; i < n; i++) {
		const struct ir_tensor *x = op_in(g, op, op_first + i);
		if (x)
			widened |= widen_input(sub, first + i, x);
	}
	if ((widened ? graph_infer(sub) : ir_verify_ops(sub)) < 0) {
		err_prefix("op '%s' (%s): subgraph '%s'", op->name, op_name(op->type), name);
		return NULL;
	}
	for (int i = 0; i < n; i++) {
		const struct ir_tensor *x = op_in(g, op, op_first + i);
		const struct ir_tensor *y = &sub->tensors[sub->inputs[first + i]];
		char what[96];
		snprintf(what, sizeof what, "input %d of subgraph '%s'", first + i, name);
		if (x && !fits(x, y)) {
			type_err(op, what, x, y);
			return NULL;
		}
	}
	return sub;
}

/* Loop-carried state: input FIRST + j of SUB takes output OUT + j too, for
 * j < N; inputs widened and SUB inferred again until they hold. */
static int carry_fix(struct ir_op *op, struct ir_graph *sub, int first, int out, int n)
{
	for (int round = 0; round <= n * IR_MAX_RANK; round++) {
		int widened = 0;
		for (int j = 0; j < n; j++)
			widened |= widen_input(sub, first + j, &sub->tensors[sub->outputs[out + j]]);
		if (!widened)
			return 0;
		if (graph_infer(sub) < 0)
			return err_prefix("op '%s' (%s): subgraph 'body'", op->name, op_name(op->type));
	}
	return 0;
}

static int numel_is_one(const struct ir_tensor *t)
{
	return t && (tensor_numel(t) == 1 || t->dyn);
}

static int if_infer(struct ir_graph *g, struct ir_op *op)
{
	if (op->n_in < 1 || op->in[0] < 0)
		return op_error(op, "the condition is required");
	if (!numel_is_one(op_in(g, op, 0)))
		return op_error(op, "the condition must hold one value");
	/* a branch that cannot run on these shapes has only its reason (one
	 * branch at most): the op's outputs are the other's */
	const char *ea = op_str(op, "then_error", NULL), *eb = op_str(op, "else_error", NULL);
	if (ea && eb)
		return op_error(op, "neither branch can run: %s", ea);
	struct ir_graph *a = ea ? NULL : body_check(g, op, "then_branch", 0, 1, op->n_in - 1);
	struct ir_graph *b = eb || !(a || ea) ? NULL : body_check(g, op, "else_branch", 0, 1, op->n_in - 1);
	if (!(a || ea) || !(b || eb))
		return -1;
	if (!a)
		a = b;
	if (!b)
		b = a;
	if (a->n_outputs != op->n_out || b->n_outputs != op->n_out)
		return op_error(op, "the branches give %d and %d outputs, the op has %d",
				a->n_outputs, b->n_outputs, op->n_out);
	for (int i = 0; i < op->n_out; i++) {
		const struct ir_tensor *x = &a->tensors[a->outputs[i]], *y = &b->tensors[b->outputs[i]];
		if (x->dtype != y->dtype || x->rank != y->rank)
			return op_error(op, "the branches give output %d different dtypes or ranks: a "
					"condition that is not constant needs one (bind it with onnx2top "
					"--bind)", i);
		/* extents that differ between the branches are dynamic */
		int64_t sh[IR_MAX_RANK];
		uint32_t dyn = x->dyn | y->dyn;
		for (int d = 0; d < x->rank; d++) {
			sh[d] = x->shape[d] > y->shape[d] ? x->shape[d] : y->shape[d];
			if (x->shape[d] != y->shape[d])
				dyn |= 1u << d;
		}
		op_set_out(g, op, i, x->dtype, x->rank, sh);
		op_set_dyn(g, op, i, dyn);
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

/* 1 if a constant value (a weight, or absent) is true. */
static int const_true(const struct ir_tensor *t)
{
	return !t || (t->data && tensor_numel(t) == 1 && dtype_get(t->data, t->dtype, 0) != 0);
}

/* 1 if the Loop runs all of its constant trip count: its condition is
 * constant true and the body gives it back unchanged or a constant true. */
static int loop_runs_all(const struct ir_graph *g, const struct ir_op *op, const struct ir_graph *b)
{
	const struct ir_tensor *c = op_in((struct ir_graph *)g, op, 1);
	int co = b->outputs[0];
	return loop_const_trip(g, op) >= 0 && const_true(c) &&
	       (co == b->inputs[1] || (b->tensors[co].data && const_true(&b->tensors[co])));
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
	if (!numel_is_one(co))
		return op_error(op, "the body's condition output must hold one value");
	if (carry_fix(op, b, 2, 1, n) < 0)
		return -1;
	for (int i = 0; i < n; i++) {
		const struct ir_tensor *v = &b->tensors[b->inputs[2 + i]];
		const struct ir_tensor *o = &b->tensors[b->outputs[1 + i]];
		if (!fits(o, v)) {
			char what[96];
			snprintf(what, sizeof what, "loop-carried value %d at the end of an iteration", i);
			return type_err(op, what, v, o);
		}
		op_set_out(g, op, i, v->dtype, v->rank, v->shape);
		op_set_dyn(g, op, i, v->dyn);
	}
	/* scan outputs: one row per iteration run; how many is known only when
	 * the loop runs all of a constant trip count */
	int64_t trip = loop_const_trip(g, op);
	int all = loop_runs_all(g, op, b);
	for (int j = 0; j < m; j++) {
		const struct ir_tensor *s = &b->tensors[b->outputs[1 + n + j]];
		if (s->rank >= IR_MAX_RANK)
			return op_error(op, "scan output %d has rank %d: stacked it exceeds %d", j, s->rank,
					IR_MAX_RANK);
		int64_t sh[IR_MAX_RANK];
		sh[0] = trip >= 0 ? trip : 1;
		memcpy(sh + 1, s->shape, sizeof(int64_t) * (size_t)s->rank);
		op_set_out(g, op, n + j, s->dtype, s->rank + 1, sh);
		op_set_dyn(g, op, n + j, (s->dyn << 1) | (all ? 0 : 1));
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

/* Bits BITS of a shape with axis AX taken out, put back around AX. */
static uint32_t dyn_insert(uint32_t bits, int ax, uint32_t at_ax)
{
	uint32_t lo = bits & ((1u << ax) - 1);
	return lo | (at_ax << ax) | ((bits >> ax) << (ax + 1));
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
	if (b->n_inputs != op->n_in)
		return op_error(op, "subgraph 'body' has %d inputs, expected %d", b->n_inputs, op->n_in);
	int64_t len = -1;
	int len_dyn = 0, widened = 0;
	for (int i = 0; i < op->n_in; i++) {
		const struct ir_tensor *x = op_in(g, op, i);
		if (!x)
			return op_error(op, "input %d is required", i);
		if (i < n || i >= n + m) {
			widened |= widen_input(b, i, x);
			continue;
		}
		int ax;
		if (scan_axis(op, "scan_input_axes", i - n, x->rank, &ax) < 0)
			return -1;
		if (len >= 0 && x->shape[ax] != len && !(x->dyn >> ax & 1) && !len_dyn)
			return op_error(op, "the scan inputs have lengths %lld and %lld",
					(long long)len, (long long)x->shape[ax]);
		len = x->shape[ax];
		len_dyn |= x->dyn >> ax & 1;
		struct ir_tensor el = *x;
		el.rank = x->rank - 1;
		memmove(el.shape + ax, x->shape + ax + 1, sizeof(int64_t) * (size_t)(x->rank - ax - 1));
		el.dyn = (x->dyn & ((1u << ax) - 1)) | ((x->dyn >> (ax + 1)) << ax);
		widened |= widen_input(b, i, &el);
	}
	if ((widened ? graph_infer(b) : ir_verify_ops(b)) < 0)
		return err_prefix("op '%s' (Scan): subgraph 'body'", op->name);
	int q = b->n_outputs - n;
	if (q < 0 || op->n_out != n + q)
		return op_error(op, "the body has %d outputs, the op %d", b->n_outputs, op->n_out);
	if (carry_fix(op, b, 0, 0, n) < 0)
		return -1;
	for (int i = 0; i < op->n_in; i++) {
		const struct ir_tensor *x = op_in(g, op, i), *y = &b->tensors[b->inputs[i]];
		if ((i < n || i >= n + m) && !fits(x, y))
			return type_err(op, "a body input", x, y);
	}
	for (int i = 0; i < n; i++) {
		const struct ir_tensor *s = &b->tensors[b->inputs[i]], *o = &b->tensors[b->outputs[i]];
		if (!fits(o, s))
			return type_err(op, "a state at the end of an iteration", s, o);
		op_set_out(g, op, i, s->dtype, s->rank, s->shape);
		op_set_dyn(g, op, i, s->dyn);
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
		op_set_dyn(g, op, n + j, dyn_insert(y->dyn, ax, (uint32_t)len_dyn));
	}
	return 0;
}

/* ---- kernels ---- */

static int view_true(const struct view *v)
{
	return dtype_get(v->data, v->dtype, 0) != 0;
}

static int if_run(struct kern *k)
{
	const struct ir_op *op = k->op;
	int take = view_true(&k->in[0]);
	const struct ir_graph *sub = op_graph(op, take ? "then_branch" : "else_branch");
	if (!sub)
		return op_error(op, "the %s branch, taken, cannot run on the shapes the model was "
				"imported for: %s", take ? "then" : "else",
				op_str(op, take ? "then_error" : "else_error", "its graph is missing"));
	struct body b;
	body_init(&b, sub);
	int rc = 0;
	for (int i = 1; i < k->n_in && rc == 0; i++)
		rc = body_in(op, &b, i - 1, k->in[i].data, k->in[i].shape);
	if (rc == 0)
		rc = body_run(&b, k->nthreads);
	for (int i = 0; i < k->n_out && rc == 0; i++)
		rc = put_out(k, i, body_out_t(&b, i)->shape, body_out(&b, i));
	body_free(&b);
	return rc;
}

/* Body input I, a scalar of the body's own shape, from VALUE. */
static int body_scalar(const struct ir_op *op, struct body *b, int i, const void *value)
{
	return body_in(op, b, i, value, b->g->tensors[b->g->inputs[i]].shape);
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
	int rc = 0;
	for (int i = 2; i < k->n_in && rc == 0; i++)
		rc = body_in(op, &b, i, k->in[i].data, k->in[i].shape);
	int64_t i = 0, rows = k->n_out > n ? k->out[n].shape[0] : 0;
	for (; rc == 0 && go && (trip < 0 || i < trip); i++) {
		if (trip < 0 && i >= CONTROL_MAX_ITERS) {
			rc = op_error(op, "no trip count and still running after %lld iterations",
				      (long long)CONTROL_MAX_ITERS);
			break;
		}
		int64_t it = i;
		unsigned char c = 1;
		if ((rc = body_scalar(op, &b, 0, &it)) < 0 || (rc = body_scalar(op, &b, 1, &c)) < 0 ||
		    (rc = body_run(&b, k->nthreads)) < 0)
			break;
		go = dtype_get(body_out(&b, 0), body_out_t(&b, 0)->dtype, 0) != 0;
		/* scan outputs: row i of each, the rows before kept */
		for (int j = 0; j < m && rc == 0; j++) {
			const struct ir_tensor *s = body_out_t(&b, 1 + n + j);
			int64_t sh[IR_MAX_RANK];
			sh[0] = i + 1 > rows ? i + 1 : rows;
			memcpy(sh + 1, s->shape, sizeof(int64_t) * (size_t)s->rank);
			char *dst = kern_out_shape(k, n + j, sh);
			if (!dst)
				rc = -1;
			else
				memcpy(dst + (size_t)i * out_bytes(&b, 1 + n + j), body_out(&b, 1 + n + j),
				       out_bytes(&b, 1 + n + j));
		}
		for (int j = 0; j < n && rc == 0; j++)
			rc = body_carry(op, &b, 2 + j, 1 + j);
	}
	/* the rows of the iterations run (none: the extents the op gave) */
	for (int j = 0; j < m && rc == 0; j++) {
		int64_t sh[IR_MAX_RANK];
		memcpy(sh, k->out[n + j].shape, sizeof sh);
		sh[0] = i;
		if (!kern_out_shape(k, n + j, sh))
			rc = -1;
	}
	for (int j = 0; j < n && rc == 0; j++) {
		int t = sub->inputs[2 + j];
		rc = put_out(k, j, dynrun_tensor(&b.dr, t)->shape, b.val[t]);
	}
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

/* The scan axis of the j-th scan input (in: 1) or output (0) of op, rank
 * RANK, in *AX, and the index along it of step t of len (from the end
 * when its direction is 1). */
static int scan_at(const struct ir_op *op, int in, int j, int rank, int64_t len, int64_t t,
		   int *ax, int64_t *idx)
{
	if (scan_axis(op, in ? "scan_input_axes" : "scan_output_axes", j, rank, ax) < 0)
		return -1;
	*idx = scan_dir(op, in ? "scan_input_directions" : "scan_output_directions", j) ?
	       len - 1 - t : t;
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
	int rc = 0;
	for (int i = 0; i < k->n_in && rc == 0; i++)
		if (i < n || i >= n + m)
			rc = body_in(op, &b, i, k->in[i].data, k->in[i].shape);
	int64_t len = 0;
	int ax;
	if (rc == 0 && m > 0 && (rc = scan_axis(op, "scan_input_axes", 0, k->in[n].rank, &ax)) == 0)
		len = k->in[n].shape[ax];
	for (int64_t t = 0; t < len && rc == 0; t++) {
		for (int j = 0; j < m && rc == 0; j++) {
			const struct view *x = &k->in[n + j];
			int64_t idx, el[IR_MAX_RANK];
			if ((rc = scan_at(op, 1, j, x->rank, len, t, &ax, &idx)) < 0)
				break;
			memcpy(el, x->shape, sizeof(int64_t) * (size_t)ax);
			memcpy(el + ax, x->shape + ax + 1, sizeof(int64_t) * (size_t)(x->rank - ax - 1));
			int bt = sub->inputs[n + j];
			void *dst = dynrun_set_shape(&b.dr, bt, x->rank - 1, el);
			slice_copy(x->data, x->shape, x->rank, ax, dtype_size(x->dtype), idx, dst, 1);
		}
		if (rc < 0 || (rc = body_run(&b, k->nthreads)) < 0)
			break;
		for (int j = 0; j < q && rc == 0; j++) {
			struct view *y = &k->out[n + j];
			const struct ir_tensor *s = body_out_t(&b, n + j);
			int64_t idx, sh[IR_MAX_RANK];
			if ((rc = scan_at(op, 0, j, y->rank, len, t, &ax, &idx)) < 0)
				break;
			if (t == 0) {   /* the extents of the first step's output */
				memcpy(sh, s->shape, sizeof(int64_t) * (size_t)ax);
				sh[ax] = len;
				memcpy(sh + ax + 1, s->shape + ax, sizeof(int64_t) * (size_t)(s->rank - ax));
				if (!kern_out_shape(k, n + j, sh)) {
					rc = -1;
					break;
				}
			}
			slice_copy(y->data, y->shape, y->rank, ax, dtype_size(y->dtype), idx,
				   (void *)body_out(&b, n + j), 0);
		}
		for (int j = 0; j < n && rc == 0; j++)
			rc = body_carry(op, &b, j, j);
	}
	for (int j = 0; j < n && rc == 0; j++) {
		int t = sub->inputs[j];
		rc = put_out(k, j, dynrun_tensor(&b.dr, t)->shape, b.val[t]);
	}
	body_free(&b);
	return rc;
}

/* The kernels run the body in its own dialect: one hook serves both.
 * top2tpu places them on the host (lib/back/lower_dtype.c). */
const struct op_def op_def_IF = { .infer = if_infer, .run_f32 = if_run, .run_tpu = if_run };
const struct op_def op_def_LOOP = { .infer = loop_infer, .run_f32 = loop_run, .run_tpu = loop_run };
const struct op_def op_def_SCAN = { .infer = scan_infer, .run_f32 = scan_run, .run_tpu = scan_run };
