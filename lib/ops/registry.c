/* registry.c - the operator table and the helpers every op file shares. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "opcommon.h"

#define X_DECL(e, s) extern const struct op_def op_def_##e;
OP_LIST(X_DECL)
#undef X_DECL

#define X_ENTRY(e, s) [OP_##e] = &op_def_##e,
const struct op_def *const op_defs[OP_COUNT] = { OP_LIST(X_ENTRY) };
#undef X_ENTRY

#define X_NAME(e, s) s,
static const char *const op_names[] = { OP_LIST(X_NAME) };
#undef X_NAME
_Static_assert(ARRAY_LEN(op_names) == OP_COUNT, "op name table out of step with OP_LIST");

const char *op_name(enum op_type t)
{
	return (unsigned)t < OP_COUNT ? op_names[t] : "?";
}

int op_type_from_name(const char *s)
{
	for (int i = 0; i < OP_COUNT; i++)
		if (!strcmp(op_names[i], s))
			return i;
	return -1;
}

int64_t view_numel(const struct view *v)
{
	int64_t n = 1;
	for (int i = 0; i < v->rank; i++)
		n *= v->shape[i];
	return n;
}

int op_error(const struct ir_op *op, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return err_set("op '%s' (%s): %s", op->name, op_name(op->type), msg);
}

int op_check_arity(const struct ir_graph *g, const struct ir_op *op, int min_in, int max_in)
{
	int n = 0;
	for (int i = 0; i < op->n_in; i++)
		if (op->in[i] >= 0)
			n = i + 1;
	if (n < min_in || op->n_in > max_in)
		return op_error(op, "takes %d to %d inputs, has %d", min_in, max_in, op->n_in);
	for (int i = 0; i < min_in; i++)
		if (op->in[i] < 0)
			return op_error(op, "required input %d is absent", i);
	if (op->n_out < 1)
		return op_error(op, "has no output");
	return 0;
}

void op_set_out(struct ir_graph *g, const struct ir_op *op, int i, enum ir_dtype dt,
		int rank, const int64_t *shape)
{
	struct ir_tensor *t = &g->tensors[op->out[i]];
	t->dtype = dt;
	t->rank = rank;
	for (int j = 0; j < rank; j++)
		t->shape[j] = shape[j];
}

int infer_same(struct ir_graph *g, struct ir_op *op)
{
	if (op_check_arity(g, op, 1, OP_MAX_IO) < 0)
		return -1;
	const struct ir_tensor *x = op_in(g, op, 0);
	op_set_out(g, op, 0, x->dtype, x->rank, x->shape);
	return 0;
}

int broadcast_shape(int ra, const int64_t *a, int rb, const int64_t *b, int *rout, int64_t *out)
{
	/* built apart, so OUT may be A or B (a fold over several inputs) */
	int64_t s[IR_MAX_RANK];
	int r = ra > rb ? ra : rb;
	if (r > IR_MAX_RANK)
		return -1;
	for (int i = 0; i < r; i++) {
		int64_t da = i < r - ra ? 1 : a[i - (r - ra)];
		int64_t db = i < r - rb ? 1 : b[i - (r - rb)];
		if (da != db && da != 1 && db != 1)
			return -1;
		s[i] = da == 1 ? db : da;
	}
	memcpy(out, s, sizeof(int64_t) * (size_t)r);
	*rout = r;
	return 0;
}

int norm_axis(int64_t axis, int rank)
{
	if (axis < 0)
		axis += rank;
	return axis < 0 || axis >= rank ? -1 : (int)axis;
}

int graph_infer(struct ir_graph *g)
{
	for (int i = 0; i < g->n_ops; i++) {
		struct ir_op *op = &g->ops[i];
		const struct op_def *d = op_defs[op->type];
		if (!d->infer)
			return op_error(op, "no shape inference");
		if (d->infer(g, op) < 0)
			return -1;
	}
	return 0;
}

void kern_from_graph(struct kern *k, const struct ir_graph *g,
		     const struct ir_op *op, void *const *vals)
{
	memset(k, 0, sizeof *k);
	k->g = g;
	k->op = op;
	k->n_in = op->n_in;
	k->n_out = op->n_out;
	k->nthreads = 1;
	for (int i = 0; i < op->n_in && i < OP_MAX_IO; i++) {
		struct view *v = &k->in[i];
		if (op->in[i] < 0)
			continue;
		const struct ir_tensor *t = &g->tensors[op->in[i]];
		v->data = vals[op->in[i]];
		v->dtype = t->dtype;
		v->rank = t->rank;
		memcpy(v->shape, t->shape, sizeof v->shape);
		v->scale = t->scale;
		v->zero_point = t->zero_point;
	}
	for (int i = 0; i < op->n_out && i < OP_MAX_IO; i++) {
		struct view *v = &k->out[i];
		const struct ir_tensor *t = &g->tensors[op->out[i]];
		v->data = vals[op->out[i]];
		v->dtype = t->dtype;
		v->rank = t->rank;
		memcpy(v->shape, t->shape, sizeof v->shape);
		v->scale = t->scale;
		v->zero_point = t->zero_point;
	}
	if (op->n_in > 0 && op->in[0] >= 0 && g->tensors[op->in[0]].rank >= 3)
		k->in_full_h = (int)g->tensors[op->in[0]].shape[2];
}

void slice_h_window(const struct ir_graph *g, const struct ir_op *op,
		    int oh0, int oh1, int *ih0, int *ih1)
{
	struct spatial s;
	int h = (int)g->tensors[op->in[0]].shape[2];
	if (spatial_get(g, op, &s) < 0) {
		*ih0 = 0;
		*ih1 = h;
		return;
	}
	int a = oh0 * s.sh - s.pt;
	int b = (oh1 - 1) * s.sh - s.pt + (s.kh - 1) * s.dh + 1;
	*ih0 = a < 0 ? 0 : a > h ? h : a;
	*ih1 = b < 0 ? 0 : b > h ? h : b;
}

void slice_h_same(const struct ir_graph *g, const struct ir_op *op,
		  int oh0, int oh1, int *ih0, int *ih1)
{
	*ih0 = oh0;
	*ih1 = oh1;
}

int spatial_out(int in, int k, int stride, int dil, int pad0, int pad1, int ceil_mode)
{
	int ek = (k - 1) * dil + 1;
	int span = in + pad0 + pad1 - ek;
	if (span < 0)
		return 0;
	int o = ceil_mode ? (span + stride - 1) / stride + 1 : span / stride + 1;
	/* ONNX/PyTorch: the last window must start inside the input or left pad. */
	if (ceil_mode && (o - 1) * stride >= in + pad0)
		o--;
	return o;
}

int spatial_get(const struct ir_graph *g, const struct ir_op *op, struct spatial *s)
{
	int64_t v[8];
	memset(s, 0, sizeof *s);
	s->kh = s->kw = s->sh = s->sw = s->dh = s->dw = 1;
	s->group = (int)op_int(op, "group", 1);
	s->ceil_mode = (int)op_int(op, "ceil_mode", 0);
	int n = op_ints(op, "kernel_shape", v, 8);
	if (n == 2) {
		s->kh = (int)v[0];
		s->kw = (int)v[1];
	} else if (n == 0 && op->n_in > 1 && op->in[1] >= 0 && g->tensors[op->in[1]].rank == 4) {
		s->kh = (int)g->tensors[op->in[1]].shape[2];
		s->kw = (int)g->tensors[op->in[1]].shape[3];
	} else if (n != 0 || op->type != OP_GAVGPOOL) {
		return op_error(op, "only 2-D kernels are supported");
	}
	n = op_ints(op, "strides", v, 8);
	if (n == 2) {
		s->sh = (int)v[0];
		s->sw = (int)v[1];
	} else if (n) {
		return op_error(op, "strides must have 2 values");
	}
	n = op_ints(op, "dilations", v, 8);
	if (n == 2) {
		s->dh = (int)v[0];
		s->dw = (int)v[1];
	} else if (n) {
		return op_error(op, "dilations must have 2 values");
	}
	n = op_ints(op, "pads", v, 8);
	if (n == 4) {
		s->pt = (int)v[0];
		s->pl = (int)v[1];
		s->pb = (int)v[2];
		s->pr = (int)v[3];
	} else if (n) {
		return op_error(op, "pads must have 4 values");
	}
	if (s->kh < 1 || s->kw < 1 || s->sh < 1 || s->sw < 1 || s->dh < 1 || s->dw < 1 ||
	    s->pt < 0 || s->pl < 0 || s->pb < 0 || s->pr < 0 || s->group < 1)
		return op_error(op, "kernel, stride, dilation, pad or group out of range");
	return 0;
}
