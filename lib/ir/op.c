/* op.c - what every operator shares, whatever its stage: graph-wide shape
 * inference through the table, kernel views, errors naming an op, spatial
 * attribute helpers.  The table itself (op_defs) is lib/ops/registry.c. */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/convert.h"
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

void op_own_set(const struct ir_graph *g, struct ir_op *op)
{
	int64_t own[2] = { op_macs(g, op), 0 };
	if (op_attr(op, "own"))
		return;
	for (int j = 1; j < op->n_in; j++)
		if (op->in[j] >= 0 && g->tensors[op->in[j]].data)
			own[1] += (int64_t)g->tensors[op->in[j]].nbytes;
	op_set_ints(op, "own", 2, own);
}

void shape_op_range(const struct ir_op *op, int rank, int64_t *b, int64_t *e)
{
	*b = op_int(op, "start", 0);
	*e = op_int(op, "end", rank);
	if (*b < 0)
		*b += rank;
	if (*e < 0)
		*e += rank;
	*b = *b < 0 ? 0 : *b > rank ? rank : *b;
	*e = *e < *b ? *b : *e > rank ? rank : *e;
}

/* The op computing tensor T, or NULL. */
static const struct ir_op *producer(const struct ir_graph *g, int t)
{
	for (int i = 0; i < g->n_ops; i++) {
		const struct ir_op *op = &g->ops[i];
		for (int j = 0; j < op->n_out && op->type != OP_COUNT; j++)
			if (op->out[j] == t)
				return op;
	}
	return NULL;
}

/* known_values to DEPTH producers back. */
static uint32_t known_at(const struct ir_graph *g, int t, int64_t *v, int depth)
{
	const struct ir_tensor *x = &g->tensors[t];
	int64_t n = tensor_numel(x);
	if (x->dyn || n > IR_MAX_RANK || (x->dtype != DT_I64 && x->dtype != DT_I32))
		return 0;
	if (x->data) {
		for (int64_t i = 0; i < n; i++)
			v[i] = dtype_get_int(x->data, x->dtype, i);
		return n ? (1u << n) - 1 : 0;
	}
	const struct ir_op *op = depth > 0 ? producer(g, t) : NULL;
	if (!op)
		return 0;
	switch (op->type) {
	case OP_SHAPE: {   /* the static extents of its input */
		const struct ir_tensor *s = &g->tensors[op->in[0]];
		int64_t b, e;
		shape_op_range(op, s->rank, &b, &e);
		uint32_t m = 0;
		for (int64_t d = b; d < e && d - b < n; d++)
			if (!(s->dyn >> d & 1)) {
				v[d - b] = s->shape[d];
				m |= 1u << (d - b);
			}
		return m;
	}
	case OP_CONCAT: {   /* of 1-D parts */
		uint32_t m = 0;
		int64_t at = 0, part[IR_MAX_RANK];
		for (int j = 0; j < op->n_in; j++) {
			int64_t pn = tensor_numel(&g->tensors[op->in[j]]);
			if (g->tensors[op->in[j]].dyn || at + pn > n)
				return 0;
			uint32_t pm = known_at(g, op->in[j], part, depth - 1);
			for (int64_t i = 0; i < pn; i++)
				if (pm >> i & 1) {
					v[at + i] = part[i];
					m |= 1u << (at + i);
				}
			at += pn;
		}
		return m;
	}
	case OP_GATHER: {   /* constant indices of a partly known vector */
		const struct ir_tensor *ix = &g->tensors[op->in[1]];
		const struct ir_tensor *src = &g->tensors[op->in[0]];
		int64_t sn = tensor_numel(src), sv[IR_MAX_RANK];
		if (!ix->data || src->rank != 1 || op_int(op, "axis", 0) != 0)
			return 0;
		uint32_t sm = known_at(g, op->in[0], sv, depth - 1), m = 0;
		for (int64_t i = 0; i < n; i++) {
			int64_t k = dtype_get_int(ix->data, ix->dtype, i);
			k = k < 0 ? k + sn : k;
			if (k >= 0 && k < sn && (sm >> k & 1)) {
				v[i] = sv[k];
				m |= 1u << i;
			}
		}
		return m;
	}
	case OP_UNSQUEEZE: case OP_SQUEEZE: case OP_RESHAPE: case OP_FLATTEN:
	case OP_IDENTITY: case OP_CAST:   /* the same values, in order */
		if (tensor_numel(&g->tensors[op->in[0]]) != n)
			return 0;
		return known_at(g, op->in[0], v, depth - 1);
	default:
		return 0;
	}
}

uint32_t known_values(const struct ir_graph *g, int t, int64_t *v)
{
	return known_at(g, t, v, 16);
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

/* Shape inference of OP with the dynamic extents of its inputs shown as 1
 * (the extents dynamic dimensions hold are no more than a guess, and two of
 * them need not agree where the run-time extents will: the rows NonZero
 * kept of two tensors). */
static int infer_dyn_as_one(struct ir_graph *g, struct ir_op *op)
{
	int64_t (*keep)[IR_MAX_RANK] = xmalloc(sizeof *keep * (size_t)(op->n_in + 1));
	for (int j = 0; j < op->n_in; j++) {
		struct ir_tensor *t = op->in[j] >= 0 ? &g->tensors[op->in[j]] : NULL;
		if (!t)
			continue;
		memcpy(keep[j], t->shape, sizeof keep[j]);
		for (int d = 0; d < t->rank; d++)
			if (t->dyn >> d & 1)
				t->shape[d] = 1;
	}
	int rc = op_defs[op->type]->infer(g, op);
	for (int j = op->n_in - 1; j >= 0; j--)   /* last first: an input may repeat */
		if (op->in[j] >= 0)
			memcpy(g->tensors[op->in[j]].shape, keep[j], sizeof keep[j]);
	free(keep);
	return rc;
}

/* The extent added to every dynamic dimension of the inputs when probing
 * which output extents depend on them: a prime, so that no division or
 * stride makes two extents meet by chance. */
#define PROBE_EXTENT 7919

/* Which output dimensions of OP follow its inputs' dynamic dimensions:
 * shape inference again with those extents grown by PROBE_EXTENT; the
 * output extents that move (or dimensions the probe marks itself) are
 * dynamic.  The outputs keep the shapes of the first inference.  Into
 * MARK (per output); -1 when the probe's inference fails. */
static int infer_probe(struct ir_graph *g, struct ir_op *op, uint32_t *mark)
{
	struct keep { int rank; uint32_t dyn; int64_t shape[IR_MAX_RANK]; };
	struct keep *out = xmalloc(sizeof *out * (size_t)(op->n_out + 1));
	struct keep *in = xmalloc(sizeof *in * (size_t)(op->n_in + 1));
	for (int j = 0; j < op->n_out; j++) {
		const struct ir_tensor *t = &g->tensors[op->out[j]];
		out[j].rank = t->rank;
		out[j].dyn = t->dyn;
		memcpy(out[j].shape, t->shape, sizeof t->shape);
	}
	for (int j = 0; j < op->n_in; j++) {
		struct ir_tensor *t = op->in[j] >= 0 ? &g->tensors[op->in[j]] : NULL;
		int seen = 0;
		for (int i = 0; i < j && t; i++)
			seen |= op->in[i] == op->in[j];
		if (!t || seen)
			continue;
		memcpy(in[j].shape, t->shape, sizeof t->shape);
		for (int d = 0; d < t->rank; d++)
			if (t->dyn >> d & 1)
				t->shape[d] += PROBE_EXTENT;
	}
	int rc = op_defs[op->type]->infer(g, op);
	for (int j = op->n_in - 1; j >= 0; j--) {
		int seen = 0;
		for (int i = 0; i < j; i++)
			seen |= op->in[i] == op->in[j];
		if (op->in[j] >= 0 && !seen)
			memcpy(g->tensors[op->in[j]].shape, in[j].shape, sizeof in[j].shape);
	}
	for (int j = 0; j < op->n_out; j++) {
		struct ir_tensor *t = &g->tensors[op->out[j]];
		mark[j] = rc < 0 || t->rank != out[j].rank ? (out[j].rank ? (1u << out[j].rank) - 1 : 0)
							   : t->dyn;
		for (int d = 0; d < out[j].rank && rc == 0 && t->rank == out[j].rank; d++)
			if (t->shape[d] != out[j].shape[d])
				mark[j] |= 1u << d;
		t->rank = out[j].rank;
		t->dyn = out[j].dyn;
		memcpy(t->shape, out[j].shape, sizeof t->shape);
	}
	free(out);
	free(in);
	return rc < 0 ? -1 : 0;
}

int op_infer(struct ir_graph *g, struct ir_op *op)
{
	int dyn = 0;
	for (int j = 0; j < op->n_in && !dyn; j++)
		dyn = op->in[j] >= 0 && g->tensors[op->in[j]].dyn;
	if (op_check_io(g, op) < 0)
		return -1;
	if (op_defs[op->type]->infer(g, op) < 0 && (!dyn || infer_dyn_as_one(g, op) < 0))
		return -1;
	if (op_has(op->type, OPF_DYN_SHAPE) || !dyn)
		return 0;
	/* An output of an op reading a dynamic shape is dynamic where its
	 * extents follow the dynamic ones (infer_probe), else in every
	 * dimension; they are found again at run time. */
	uint32_t *mark = xmalloc(sizeof *mark * (size_t)(op->n_out + 1));
	infer_probe(g, op, mark);
	for (int j = 0; j < op->n_out; j++)
		g->tensors[op->out[j]].dyn |= mark[j];
	free(mark);
	return 0;
}

int op_param_ints(const struct ir_graph *g, const struct kern *k, const struct ir_op *op,
		  int i, const char *name, int64_t *v, int max)
{
	const struct ir_attr *a = name ? op_attr(op, name) : NULL;
	if (a && a->kind == ATTR_INT && max >= 1) {
		v[0] = a->i;
		return 1;
	}
	if (a && a->kind == ATTR_INTS) {
		if (a->n > max)
			return op_error(op, "attribute '%s' holds %d values, at most %d", name, a->n, max);
		memcpy(v, a->ints, sizeof *v * (size_t)a->n);
		return a->n;
	}
	if (i >= op->n_in || op->in[i] < 0)
		return 0;
	const void *data;
	enum ir_dtype dt;
	int64_t n;
	if (k) {
		data = k->in[i].data;
		dt = k->in[i].dtype;
		n = view_numel(&k->in[i]);
	} else {
		const struct ir_tensor *t = &g->tensors[op->in[i]];
		if (!t->data && !t->dyn && tensor_numel(t) == 0)
			return 0;   /* empty: no value to wait for */
		if (!t->data)
			return -2;
		data = t->data;
		dt = t->dtype;
		n = tensor_numel(t);
	}
	if (n > max)
		return op_error(op, "input %d holds %lld values, at most %d", i, (long long)n, max);
	for (int64_t j = 0; j < n; j++)
		v[j] = dtype_get_int(data, dt, j);
	return (int)n;
}

int shapes_agree(const struct ir_tensor *a, const struct ir_tensor *b)
{
	if (a->rank != b->rank)
		return 0;
	for (int d = 0; d < a->rank; d++)
		if (!((a->dyn | b->dyn) >> d & 1) && a->shape[d] != b->shape[d])
			return 0;
	return 1;
}

void op_set_dyn(struct ir_graph *g, const struct ir_op *op, int i, uint32_t dims)
{
	g->tensors[op->out[i]].dyn |= dims;
}

void op_set_out(struct ir_graph *g, const struct ir_op *op, int i, enum ir_dtype dt,
		int rank, const int64_t *shape)
{
	struct ir_tensor *t = &g->tensors[op->out[i]];
	t->dtype = dt;
	t->rank = rank;
	t->dyn = 0;
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
	struct saved { enum ir_dtype dt; int rank; uint32_t dyn; int64_t shape[IR_MAX_RANK]; } *keep = NULL;
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
			keep[j].dyn = t->dyn;
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
			if (rc == 0 && t->dyn != keep[j].dyn)
				rc = op_error(op, "output '%s' has dynamic dimensions %#x, its inputs and "
					      "attributes give %#x", t->name, keep[j].dyn, t->dyn);
			t->dtype = keep[j].dt;
			t->rank = keep[j].rank;
			t->dyn = keep[j].dyn;
			memcpy(t->shape, keep[j].shape, sizeof t->shape);
		}
	}
	free(keep);
	free(in_dt);
	return rc;
}

void *kern_out_shape(struct kern *k, int i, const int64_t *shape)
{
	struct view *v = &k->out[i];
	int64_t had = view_numel(v);
	memcpy(v->shape, shape, sizeof(int64_t) * (size_t)v->rank);
	int64_t n = view_numel(v);
	if (n > had) {
		if (!k->out_grow) {
			op_error(k->op, "output %d needs %lld elements, its static shape holds %lld", i,
				 (long long)n, (long long)had);
			return NULL;
		}
		v->data = k->out_grow(k, i, (size_t)n * dtype_size(v->dtype));
	}
	return v->data;
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

int split_window_spatial(const struct ir_graph *g, const struct ir_op *op, int ax, int64_t o0,
			 int64_t o1, int64_t *i0, int64_t *i1, struct ir_op *part)
{
	struct spatial s;
	const struct ir_tensor *x = &g->tensors[op->in[0]];
	if (ax != 3 || x->rank != 4 || g->tensors[op->out[0]].rank != 4 || op_attr(op, "auto_pad") ||
	    spatial_get(g, op, &s) < 0 || s.ceil_mode)
		return 0;
	int64_t iw = x->shape[3];
	int64_t a = o0 * s.sw - s.pl, b = (o1 - 1) * s.sw - s.pl + (int64_t)(s.kw - 1) * s.dw + 1;
	*i0 = a > 0 ? a : 0;
	*i1 = b < iw ? b : iw;
	if (part) {
		int64_t pads[4] = { s.pt, *i0 - a, s.pb, b - *i1 };
		op_set_ints(part, "pads", 4, pads);
	}
	return 1;
}

int split_axis_same(const struct ir_graph *g, const struct ir_op *op, int ax, int *in_ax)
{
	const struct ir_tensor *y = &g->tensors[op->out[0]];
	for (int j = 0; j < op->n_in; j++) {
		in_ax[j] = -1;
		if (op->in[j] < 0)
			continue;
		const struct ir_tensor *x = &g->tensors[op->in[j]];
		int a = ax - (y->rank - x->rank);
		if (a < 0 || x->shape[a] == 1)
			continue;
		if (x->shape[a] != y->shape[ax])
			return 0;
		in_ax[j] = a;
	}
	return 1;
}

int split_axis_x0(const struct ir_graph *g, const struct ir_op *op, int ax, int *in_ax)
{
	for (int j = 0; j < op->n_in; j++)
		in_ax[j] = j == 0 ? ax : -1;
	return 1;
}

int split_axis_batch(const struct ir_graph *g, const struct ir_op *op, int ax, int *in_ax)
{
	return ax == 0 && split_axis_x0(g, op, ax, in_ax);
}

int split_axis_nc(const struct ir_graph *g, const struct ir_op *op, int ax, int *in_ax)
{
	return ax <= 1 && split_axis_x0(g, op, ax, in_ax);
}

int split_axis_chan(const struct ir_graph *g, const struct ir_op *op, int ax, int *in_ax)
{
	split_axis_x0(g, op, ax, in_ax);
	for (int j = 1; j < op->n_in && ax == 1; j++) {
		if (op->in[j] < 0)
			continue;
		if (g->tensors[op->in[j]].rank != 1)
			return 0;
		in_ax[j] = 0;
	}
	return 1;
}

int op_split_axis(const struct ir_graph *g, const struct ir_op *op, int ax, int *in_ax)
{
	const struct op_def *d = op_defs[op->type];
	int (*rule)(const struct ir_graph *, const struct ir_op *, int, int *) = d->split_axis;
	if (!rule && d->slice_h == slice_h_same)
		rule = split_axis_same;
	if (!rule || op->n_out < 1 || op->n_in < 1 || op->in[0] < 0)
		return 0;
	const struct ir_tensor *y = &g->tensors[op->out[0]];
	if (ax < 0 || ax >= y->rank || y->shape[ax] < 2)
		return 0;
	for (int j = 1; j < op->n_out; j++) {
		const struct ir_tensor *o = &g->tensors[op->out[j]];
		if (o->rank <= ax || o->shape[ax] != y->shape[ax])
			return 0;
	}
	if (!rule(g, op, ax, in_ax))
		return 0;
	for (int j = 0; j < op->n_in; j++) {
		if (op->in[j] < 0) {
			in_ax[j] = -1;
			continue;
		}
		const struct ir_tensor *x = &g->tensors[op->in[j]];
		if (in_ax[j] >= x->rank || (in_ax[j] >= 0 && x->shape[in_ax[j]] != y->shape[ax]))
			return 0;
	}
	return 1;
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
