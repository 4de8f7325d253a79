/* op.c - what every operator shares, whatever its stage: graph-wide shape
 * inference through the table, kernel views, errors naming an op, spatial
 * attribute helpers.  The table itself (op_defs) is lib/ops/registry.c. */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/op.h"
#include "ir/op_traits.h"
#include "ir/limit.h"

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

int64_t op_macs(const struct ir_graph *g, const struct ir_op *op)
{
	int64_t own[2];
	switch (op->type) {
	case OP_CONV: case OP_CONVTRANSPOSE: case OP_GEMM: case OP_MATMUL:
	case OP_LSTM: case OP_GRU: case OP_RNN:
		if (op_ints(op, "own", own, 2) == 2 && own[0] >= 0)
			return own[0];
		return op_defs[op->type]->macs ? op_defs[op->type]->macs(g, op) : 0;
	default:
		return 0;
	}
}

int op_check_io(const struct ir_graph *g, const struct ir_op *op)
{
	struct op_io io = op_io_of(op->type);
	int tpu = g->dialect == DIALECT_TPU && op->place != PLACE_HOST;   /* a host op keeps Top's */
	int hi = tpu ? io.tpu_max_in : io.max_in;
	if (op_check_arity(g, op, tpu ? io.tpu_min_in : io.min_in, hi == IO_ANY ? INT_MAX : hi) < 0)
		return -1;
	if (io.min_out == io.max_out && op->n_out != io.min_out)
		return op_error(op, "has %d outputs, its definition gives %d", op->n_out, io.min_out);
	if (io.max_out != IO_ANY && op->n_out > io.max_out)
		return op_error(op, "has %d outputs, its definition gives at most %d", op->n_out,
				io.max_out);
	return 0;
}

int (*op_kernel(const struct ir_graph *g, const struct ir_op *op))(struct kern *k)
{
	const struct op_def *d = op_defs[op->type];
	return g->dialect == DIALECT_TOP || op->place == PLACE_HOST ? d->run_f32 : d->run_tpu;
}

int op_infer(struct ir_graph *g, struct ir_op *op)
{
	if (op_check_io(g, op) < 0)
		return -1;
	return op_defs[op->type]->infer(g, op);
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
		if (op_infer(g, op) < 0 || limit_check_outputs(g, op) < 0)
			return -1;
	}
	return 0;
}

/* The Tpu dialect runs an op in the dtype its mode and calibration chose:
 * f32, bf16 or f16, or quantised i8 or u8 (lib/back/lower.c).  Shape inference
 * speaks the Top dialect, so there these dtypes count as one: f32. */
static enum ir_dtype tpu_class(const struct ir_graph *g, enum ir_dtype t)
{
	int as_f32 = t == DT_BF16 || t == DT_F16 || t == DT_I8 || t == DT_U8;
	return g->dialect == DIALECT_TPU && as_f32 ? DT_F32 : t;
}

/* Run op's shape inference with every output marked unset (rank -1), so
 * an output the definition does not give shows; with AS_F32, inputs in a
 * Tpu mode's dtype are shown to it as f32 (restored after).  IN_DT holds
 * op->n_in dtypes of scratch. */
static int infer_once(struct ir_graph *g, struct ir_op *op, int as_f32, enum ir_dtype *in_dt)
{
	for (int j = 0; j < op->n_out; j++)
		g->tensors[op->out[j]].rank = -1;
	for (int j = 0; j < op->n_in && as_f32; j++)
		if (op->in[j] >= 0) {
			struct ir_tensor *t = &g->tensors[op->in[j]];
			in_dt[j] = t->dtype;
			t->dtype = tpu_class(g, t->dtype);
		}
	int rc = op_infer(g, op);
	if (rc == 0)
		rc = limit_check_outputs(g, op);
	for (int j = op->n_in - 1; j >= 0 && as_f32; j--)   /* last first: an input may repeat */
		if (op->in[j] >= 0)
			g->tensors[op->in[j]].dtype = in_dt[j];
	return rc;
}

int ir_verify_ops(struct ir_graph *g)
{
	struct saved { enum ir_dtype dt; int rank; int64_t shape[IR_MAX_RANK]; } *keep = NULL;
	enum ir_dtype *in_dt = NULL;
	int cap = 0, in_cap = 0, rc = 0;
	for (int i = 0; i < g->n_ops && rc == 0; i++) {
		struct ir_op *op = &g->ops[i];
		if (!op_defs[op->type]->infer) {
			rc = op_error(op, "no shape inference");
			break;
		}
		grow_array((void **)&keep, &cap, op->n_out + 1, sizeof *keep);
		grow_array((void **)&in_dt, &in_cap, op->n_in + 1, sizeof *in_dt);
		for (int j = 0; j < op->n_out; j++) {
			const struct ir_tensor *t = &g->tensors[op->out[j]];
			keep[j].dt = t->dtype;
			keep[j].rank = t->rank;
			memcpy(keep[j].shape, t->shape, sizeof t->shape);
		}
		/* As stored first (a Tpu op may need its exact dtypes, BitShift
		 * u8), then, in the Tpu dialect, with float-only rules met. */
		rc = infer_once(g, op, 0, in_dt);
		if (rc < 0 && g->dialect == DIALECT_TPU)
			rc = infer_once(g, op, 1, in_dt);
		for (int j = 0; j < op->n_out; j++) {
			struct ir_tensor *t = &g->tensors[op->out[j]];
			int same_dt = tpu_class(g, t->dtype) == tpu_class(g, keep[j].dt);
			char want[160], got[160];
			if (rc == 0 && t->rank < 0) {
				rc = op_error(op, "has %d outputs, its definition gives %d", op->n_out, j);
			} else if (rc == 0 && (!same_dt || t->rank != keep[j].rank ||
				   memcmp(t->shape, keep[j].shape, sizeof(int64_t) * (size_t)t->rank))) {
				shape_str(want, sizeof want, t->rank, t->shape);
				shape_str(got, sizeof got, keep[j].rank, keep[j].shape);
				rc = op_error(op, "output '%s' is %s %s, its inputs and attributes give %s %s",
					      t->name, dtype_name(keep[j].dt), got,
					      dtype_name(same_dt ? keep[j].dt : t->dtype), want);
			}
			t->dtype = keep[j].dt;
			t->rank = keep[j].rank;
			memcpy(t->shape, keep[j].shape, sizeof t->shape);
		}
	}
	free(keep);
	free(in_dt);
	return rc;
}

void kern_init(struct kern *k, int n_in, int n_out)
{
	memset(k, 0, sizeof *k);
	k->n_in = n_in;
	k->n_out = n_out;
	k->in = xcalloc((size_t)n_in + 1, sizeof *k->in);
	k->out = xcalloc((size_t)n_out + 1, sizeof *k->out);
}

void kern_done(struct kern *k)
{
	free(k->in);
	free(k->out);
	k->in = k->out = NULL;
}

/* V: tensor T's dtype, shape and quantisation over DATA. */
static void view_of(struct view *v, const struct ir_tensor *t, void *data)
{
	v->data = data;
	v->dtype = t->dtype;
	v->rank = t->rank;
	memcpy(v->shape, t->shape, sizeof v->shape);
	v->scale = t->scale;
	v->zero_point = t->zero_point;
}

void kern_from_graph(struct kern *k, const struct ir_graph *g,
		     const struct ir_op *op, void *const *vals)
{
	kern_init(k, op->n_in, op->n_out);
	k->g = g;
	k->op = op;
	k->nthreads = 1;
	for (int i = 0; i < op->n_in; i++)
		if (op->in[i] >= 0)
			view_of(&k->in[i], &g->tensors[op->in[i]], vals[op->in[i]]);
	for (int i = 0; i < op->n_out; i++)
		view_of(&k->out[i], &g->tensors[op->out[i]], vals[op->out[i]]);
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
	int64_t a = (int64_t)oh0 * s.sh - s.pt;
	int64_t b = ((int64_t)oh1 - 1) * s.sh - s.pt + ((int64_t)s.kh - 1) * s.dh + 1;
	*ih0 = a < 0 ? 0 : a > h ? h : (int)a;
	*ih1 = b < 0 ? 0 : b > h ? h : (int)b;
}

void slice_h_same(const struct ir_graph *g, const struct ir_op *op,
		  int oh0, int oh1, int *ih0, int *ih1)
{
	*ih0 = oh0;
	*ih1 = oh1;
}

int spatial_out(int in, int k, int stride, int dil, int pad0, int pad1, int ceil_mode)
{
	/* int64: k, stride, dil and pads are at most SPATIAL_MAX (spatial_get),
	 * in at most IR_MAX_DIM, so no sum or product here overflows. */
	int64_t ek = ((int64_t)k - 1) * dil + 1;
	int64_t span = (int64_t)in + pad0 + pad1 - ek;
	if (span < 0 || stride < 1)
		return 0;
	int64_t o = ceil_mode ? (span + stride - 1) / stride + 1 : span / stride + 1;
	/* ONNX/PyTorch: the last window must start inside the input or left pad. */
	if (ceil_mode && (o - 1) * stride >= (int64_t)in + pad0)
		o--;
	return o > INT32_MAX ? INT32_MAX : (int)o;
}

int pool_out_shape(const struct ir_op *op, const struct ir_tensor *x, const struct spatial *s,
		   int64_t shape[4])
{
	shape[0] = x->shape[0];
	shape[1] = x->shape[1];
	shape[2] = spatial_out((int)x->shape[2], s->kh, s->sh, s->dh, s->pt, s->pb, s->ceil_mode);
	shape[3] = spatial_out((int)x->shape[3], s->kw, s->sw, s->dw, s->pl, s->pr, s->ceil_mode);
	if (shape[2] < 1 || shape[3] < 1)
		return op_error(op, "window larger than the padded input");
	return 0;
}

/* Attribute values spatial_get accepts: kernel, stride and dilation from 1,
 * pads and group from 0 and 1, each at most SPATIAL_MAX, so products and
 * sums of them stay well inside int64. */
#define SPATIAL_MAX (1 << 24)

/* Read the list attribute NAME of exactly N values into the ints OUT, each
 * in [lo, SPATIAL_MAX]; absent leaves OUT alone.  -1 naming the op. */
static int spatial_ints(const struct ir_op *op, const char *name, int n, int lo, int *const *out)
{
	int64_t v[8];
	int k = op_ints(op, name, v, 8);
	if (k == 0)
		return 0;
	if (k != n)
		return op_error(op, "%s must have %d values", name, n);
	for (int i = 0; i < n; i++) {
		if (v[i] < lo || v[i] > SPATIAL_MAX)
			return op_error(op, "attribute '%s' value %lld is out of range [%d, %d]",
					name, (long long)v[i], lo, SPATIAL_MAX);
		*out[i] = (int)v[i];
	}
	return 1;
}

int spatial_get(const struct ir_graph *g, const struct ir_op *op, struct spatial *s)
{
	memset(s, 0, sizeof *s);
	s->kh = s->kw = s->sh = s->sw = s->dh = s->dw = 1;
	int64_t group = op_int(op, "group", 1), ceil_mode = op_int(op, "ceil_mode", 0);
	if (group < 1 || group > SPATIAL_MAX)
		return op_error(op, "attribute 'group' value %lld is out of range [1, %d]",
				(long long)group, SPATIAL_MAX);
	s->group = (int)group;
	s->ceil_mode = ceil_mode != 0;
	const struct ir_tensor *w = op->n_in > 1 && op->in[1] >= 0 ? &g->tensors[op->in[1]] : NULL;
	int n = spatial_ints(op, "kernel_shape", 2, 1, (int *const[]){ &s->kh, &s->kw });
	if (n < 0)
		return -1;
	if (n == 0 && w && w->rank == 4) {
		/* kernel size from the weight [OC, C/group, KH, KW] */
		if (w->shape[2] < 1 || w->shape[2] > SPATIAL_MAX ||
		    w->shape[3] < 1 || w->shape[3] > SPATIAL_MAX)
			return op_error(op, "weight kernel size out of range");
		s->kh = (int)w->shape[2];
		s->kw = (int)w->shape[3];
	} else if (n == 0 && op->type != OP_GAVGPOOL) {
		return op_error(op, "only 2-D kernels are supported");
	}
	if (spatial_ints(op, "strides", 2, 1, (int *const[]){ &s->sh, &s->sw }) < 0 ||
	    spatial_ints(op, "dilations", 2, 1, (int *const[]){ &s->dh, &s->dw }) < 0 ||
	    spatial_ints(op, "pads", 4, 0, (int *const[]){ &s->pt, &s->pl, &s->pb, &s->pr }) < 0)
		return -1;
	return 0;
}
