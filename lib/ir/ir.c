/* ir.c - building, querying and tidying IR graphs in memory. */
#include "ir/ir.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/base.h"

static const char *const dtype_names[DT_COUNT] = {
	[DT_F32] = "f32", [DT_F16] = "f16", [DT_BF16] = "bf16", [DT_I8] = "i8",
	[DT_U8] = "u8", [DT_I16] = "i16", [DT_I32] = "i32", [DT_I64] = "i64",
	[DT_BOOL] = "bool", [DT_F64] = "f64", [DT_U16] = "u16", [DT_U32] = "u32",
	[DT_U64] = "u64",
};
static const unsigned char dtype_sizes[DT_COUNT] = {
	[DT_F32] = 4, [DT_F16] = 2, [DT_BF16] = 2, [DT_I8] = 1, [DT_U8] = 1,
	[DT_I16] = 2, [DT_I32] = 4, [DT_I64] = 8, [DT_BOOL] = 1, [DT_F64] = 8,
	[DT_U16] = 2, [DT_U32] = 4, [DT_U64] = 8,
};
static const char *const dialect_names[DIALECT_COUNT] = { "top", "tpu" };
static const char *const stage_names[STAGE_COUNT] = {
	"origin", "canonical", "lowered", "reordered", "grouped", "addressed",
};

const char *dtype_name(enum ir_dtype t) { return (unsigned)t < DT_COUNT ? dtype_names[t] : "?"; }
size_t dtype_size(enum ir_dtype t) { return (unsigned)t < DT_COUNT ? dtype_sizes[t] : 0; }
const char *dialect_name(enum ir_dialect d) { return (unsigned)d < DIALECT_COUNT ? dialect_names[d] : "?"; }
const char *stage_name(enum ir_stage s) { return (unsigned)s < STAGE_COUNT ? stage_names[s] : "?"; }

int dtype_from_name(const char *s)
{
	for (int i = 0; i < DT_COUNT; i++)
		if (!strcmp(s, dtype_names[i]))
			return i;
	return -1;
}

struct ir_graph *graph_new(enum ir_dialect d, enum ir_stage s)
{
	struct ir_graph *g = xcalloc(1, sizeof *g);
	g->dialect = d;
	g->stage = s;
	g->mode = MODE_NONE;
	return g;
}

static void attr_free(struct ir_attr *a)
{
	FREE_ALL(a->name, a->ints, a->floats, a->s);
	graph_free(a->graph);
}

static void op_free(struct ir_op *op)
{
	free(op->name);
	free(op->in);
	free(op->out);
	for (int i = 0; i < op->n_attr; i++)
		attr_free(&op->attr[i]);
	free(op->attr);
}

static void tensor_free(struct ir_tensor *t)
{
	free(t->name);
	if (t->owns_data)
		free(t->data);
}

void graph_free(struct ir_graph *g)
{
	if (!g)
		return;
	for (int i = 0; i < g->n_tensors; i++)
		tensor_free(&g->tensors[i]);
	for (int i = 0; i < g->n_ops; i++)
		op_free(&g->ops[i]);
	name_index_free(&g->names);
	FREE_ALL(g->tensors, g->ops, g->inputs, g->outputs, g->name, g->chip, g->backing, g);
}

void **graph_values_new(const struct ir_graph *g)
{
	void **val = xcalloc((size_t)g->n_tensors + 1, sizeof *val);
	for (int i = 0; i < g->n_tensors; i++) {
		const struct ir_tensor *t = &g->tensors[i];
		if (t->data) {
			val[i] = t->data;
			continue;
		}
		size_t n = tensor_bytes(t);
		val[i] = xaligned(n);
		memset(val[i], 0, n);
	}
	return val;
}

void graph_values_free(const struct ir_graph *g, void **val)
{
	if (val)
		for (int i = 0; i < g->n_tensors; i++)
			if (!g->tensors[i].data)
				free(val[i]);
	free(val);
}

int graph_add_tensor(struct ir_graph *g, const char *name, enum ir_dtype dt,
		     int rank, const int64_t *shape)
{
	assert(rank >= 0 && rank <= IR_MAX_RANK);
	/* shape may be another tensor's of g, which growing the array moves */
	int64_t sh[IR_MAX_RANK];
	for (int i = 0; i < rank; i++)
		sh[i] = shape[i];
	grow_array((void **)&g->tensors, &g->cap_tensors, g->n_tensors + 1, sizeof *g->tensors);
	struct ir_tensor *t = &g->tensors[g->n_tensors];
	memset(t, 0, sizeof *t);
	t->name = xstrdup(name);
	t->dtype = dt;
	t->rank = rank;
	for (int i = 0; i < rank; i++)
		t->shape[i] = sh[i];
	t->addr = -1;
	if (g->n_named == g->n_tensors) {
		if (name)
			name_index_put(&g->names, name, g->n_tensors);
		g->n_named++;
	}
	return g->n_tensors++;
}

void graph_set_io(struct ir_graph *g, int n_in, const int *in, int n_out, const int *out)
{
	free(g->inputs);
	free(g->outputs);
	g->inputs = xmalloc(sizeof(int) * (size_t)(n_in + 1));
	g->outputs = xmalloc(sizeof(int) * (size_t)(n_out + 1));
	memcpy(g->inputs, in, sizeof(int) * (size_t)n_in);
	memcpy(g->outputs, out, sizeof(int) * (size_t)n_out);
	g->n_inputs = n_in;
	g->n_outputs = n_out;
}

int64_t tensor_numel(const struct ir_tensor *t)
{
	int64_t n = 1;
	for (int i = 0; i < t->rank; i++)   /* a 0 extent anywhere: no elements */
		if (t->shape[i] == 0)
			return 0;
	for (int i = 0; i < t->rank; i++)
		if (__builtin_mul_overflow(n, t->shape[i], &n))
			return INT64_MAX;
	return n;
}

size_t tensor_bytes(const struct ir_tensor *t)
{
	int64_t n = tensor_numel(t);
	size_t b;
	if (n < 0 || __builtin_mul_overflow((size_t)n, dtype_size(t->dtype), &b))
		return SIZE_MAX;
	return b;
}

void shape_str(char *buf, size_t cap, int rank, const int64_t *shape)
{
	size_t n = (size_t)snprintf(buf, cap, "[");
	for (int i = 0; i < rank && n < cap; i++)
		n += (size_t)snprintf(buf + n, cap - n, "%s%lld", i ? "," : "", (long long)shape[i]);
	if (n < cap)
		snprintf(buf + n, cap - n, "]");
}

void tensor_set_data(struct ir_tensor *t, const void *data, size_t nbytes)
{
	void *p = xaligned(nbytes);
	if (nbytes)
		memcpy(p, data, nbytes);
	if (t->owns_data)
		free(t->data);
	t->data = p;
	t->nbytes = nbytes;
	t->owns_data = 1;
}

int graph_weight_slice(struct ir_graph *g, int t, int ax, int64_t k0, int64_t k1, const char *tag)
{
	const struct ir_tensor *w = &g->tensors[t];
	int64_t outer = 1, inner = 1, n = w->shape[ax], m = k1 - k0;
	for (int d = 0; d < ax; d++)
		outer *= w->shape[d];
	for (int d = ax + 1; d < w->rank; d++)
		inner *= w->shape[d];
	size_t es = dtype_size(w->dtype), run = (size_t)(m * inner) * es;
	char *buf = xmalloc((size_t)outer * run + 1);
	for (int64_t o = 0; o < outer; o++)
		memcpy(buf + (size_t)o * run, (const char *)w->data + (size_t)((o * n + k0) * inner) * es,
		       run);
	int64_t shape[IR_MAX_RANK];
	memcpy(shape, w->shape, sizeof shape);
	shape[ax] = m;
	char base[512];
	snprintf(base, sizeof base, "%s_%s%lld", w->name, tag, (long long)k0);
	char *name = graph_unique_name(g, base, 1);
	enum ir_dtype dt = w->dtype;
	float scale = w->scale;
	int zp = w->zero_point, rank = w->rank;
	int k = graph_add_weight(g, name, dt, rank, shape, buf);
	g->tensors[k].scale = scale;
	g->tensors[k].zero_point = zp;
	free(name);
	free(buf);
	return k;
}

int graph_add_weight(struct ir_graph *g, const char *name, enum ir_dtype dt,
		     int rank, const int64_t *shape, const void *data)
{
	int i = graph_add_tensor(g, name, dt, rank, shape);
	struct ir_tensor *t = &g->tensors[i];
	size_t n = tensor_bytes(t);
	if (data) {
		tensor_set_data(t, data, n);
	} else {
		t->data = xaligned(n);
		memset(t->data, 0, n);
		t->nbytes = n;
		t->owns_data = 1;
	}
	return i;
}

int graph_find_tensor(const struct ir_graph *g, const char *name)
{
	int k = name_index_get(&g->names, name);
	if (k >= 0)
		return k;
	for (int i = g->n_named; i < g->n_tensors; i++)
		if (!strcmp(g->tensors[i].name, name))
			return i;
	return -1;
}

char *graph_unique_name(const struct ir_graph *g, const char *base, int first)
{
	size_t len = strlen(base) + 24;
	char *s = xmalloc(len);
	snprintf(s, len, "%s", base);
	for (int i = first; graph_find_tensor(g, s) >= 0; i++)
		snprintf(s, len, "%s_%d", base, i);
	return s;
}

void graph_place_before(struct ir_graph *g, int n0, const int *owner)
{
	int n = g->n_ops, k = 0;
	struct ir_op *ops = xmalloc(sizeof *ops * (size_t)(n + 1));
	for (int i = 0; i < n0; i++) {
		for (int j = n0; j < n; j++)
			if (owner[j - n0] == i)
				ops[k++] = g->ops[j];
		ops[k++] = g->ops[i];
	}
	memcpy(g->ops, ops, sizeof *ops * (size_t)n);
	free(ops);
}

int graph_add_op(struct ir_graph *g, enum op_type t, const char *name,
		 int n_in, const int *in, int n_out, const int *out)
{
	grow_array((void **)&g->ops, &g->cap_ops, g->n_ops + 1, sizeof *g->ops);
	struct ir_op *op = &g->ops[g->n_ops];
	memset(op, 0, sizeof *op);
	op->type = t;
	op->name = xstrdup(name);
	op->n_in = n_in;
	op->n_out = n_out;
	op->in = xmalloc(sizeof(int) * (size_t)(n_in ? n_in : 1));
	op->out = xmalloc(sizeof(int) * (size_t)(n_out ? n_out : 1));
	if (n_in)
		memcpy(op->in, in, sizeof(int) * (size_t)n_in);
	if (n_out)
		memcpy(op->out, out, sizeof(int) * (size_t)n_out);
	op->group = -1;
	op->place = PLACE_NONE;
	return g->n_ops++;
}

void op_set_inputs(struct ir_op *op, int n, const int *in)
{
	op->in = xrealloc(op->in, sizeof(int) * (size_t)(n ? n : 1));
	if (n)
		memcpy(op->in, in, sizeof(int) * (size_t)n);
	op->n_in = n;
}

/* Return the attribute called name, adding an empty one if absent. */
static struct ir_attr *attr_slot(struct ir_op *op, const char *name)
{
	for (int i = 0; i < op->n_attr; i++)
		if (!strcmp(op->attr[i].name, name)) {
			char *keep = op->attr[i].name;
			op->attr[i].name = NULL;
			attr_free(&op->attr[i]);
			memset(&op->attr[i], 0, sizeof op->attr[i]);
			op->attr[i].name = keep;
			return &op->attr[i];
		}
	op->attr = xrealloc(op->attr, sizeof *op->attr * (size_t)(op->n_attr + 1));
	struct ir_attr *a = &op->attr[op->n_attr++];
	memset(a, 0, sizeof *a);
	a->name = xstrdup(name);
	return a;
}

void op_set_int(struct ir_op *op, const char *name, int64_t v)
{
	struct ir_attr *a = attr_slot(op, name);
	a->kind = ATTR_INT;
	a->i = v;
}

void op_set_float(struct ir_op *op, const char *name, double v)
{
	struct ir_attr *a = attr_slot(op, name);
	a->kind = ATTR_FLOAT;
	a->f = v;
}

void op_set_ints(struct ir_op *op, const char *name, int n, const int64_t *v)
{
	struct ir_attr *a = attr_slot(op, name);
	a->kind = ATTR_INTS;
	a->n = n;
	a->ints = xmalloc(sizeof(int64_t) * (size_t)(n ? n : 1));
	if (n)
		memcpy(a->ints, v, sizeof(int64_t) * (size_t)n);
}

void op_set_floats(struct ir_op *op, const char *name, int n, const float *v)
{
	struct ir_attr *a = attr_slot(op, name);
	a->kind = ATTR_FLOATS;
	a->n = n;
	a->floats = xmalloc(sizeof(float) * (size_t)(n ? n : 1));
	if (n)
		memcpy(a->floats, v, sizeof(float) * (size_t)n);
}

void op_set_str(struct ir_op *op, const char *name, const char *v)
{
	struct ir_attr *a = attr_slot(op, name);
	a->kind = ATTR_STR;
	a->s = xstrdup(v);
}

const struct ir_attr *op_attr(const struct ir_op *op, const char *name)
{
	for (int i = 0; i < op->n_attr; i++)
		if (!strcmp(op->attr[i].name, name))
			return &op->attr[i];
	return NULL;
}

int64_t op_int(const struct ir_op *op, const char *name, int64_t def)
{
	const struct ir_attr *a = op_attr(op, name);
	if (!a)
		return def;
	if (a->kind == ATTR_INT)
		return a->i;
	if (a->kind == ATTR_FLOAT)
		return (int64_t)a->f;
	return def;
}

double op_float(const struct ir_op *op, const char *name, double def)
{
	const struct ir_attr *a = op_attr(op, name);
	if (!a)
		return def;
	if (a->kind == ATTR_FLOAT)
		return a->f;
	if (a->kind == ATTR_INT)
		return (double)a->i;
	return def;
}

int op_ints(const struct ir_op *op, const char *name, int64_t *v, int max)
{
	const struct ir_attr *a = op_attr(op, name);
	if (!a || (a->kind != ATTR_INTS && a->kind != ATTR_FLOATS))
		return 0;
	int n = a->n < max ? a->n : max;
	for (int i = 0; i < n; i++)
		v[i] = a->kind == ATTR_INTS ? a->ints[i] : (int64_t)a->floats[i];
	return a->n;
}

const char *op_str(const struct ir_op *op, const char *name, const char *def)
{
	const struct ir_attr *a = op_attr(op, name);
	return a && a->kind == ATTR_STR ? a->s : def;
}

void op_del_attr(struct ir_op *op, const char *name)
{
	for (int i = 0; i < op->n_attr; i++)
		if (!strcmp(op->attr[i].name, name)) {
			attr_free(&op->attr[i]);
			memmove(&op->attr[i], &op->attr[i + 1],
				sizeof *op->attr * (size_t)(op->n_attr - i - 1));
			op->n_attr--;
			return;
		}
}

void graph_compact(struct ir_graph *g)
{
	/* Drop dead ops, keeping order. */
	int no = 0;
	for (int i = 0; i < g->n_ops; i++) {
		if (g->ops[i].type == OP_COUNT) {
			op_free(&g->ops[i]);
			continue;
		}
		g->ops[no++] = g->ops[i];
	}
	g->n_ops = no;

	/* Keep tensors that an op or the graph I/O refers to. */
	char *used = xcalloc((size_t)g->n_tensors + 1, 1);
	for (int i = 0; i < g->n_ops; i++) {
		struct ir_op *op = &g->ops[i];
		for (int j = 0; j < op->n_in; j++)
			if (op->in[j] >= 0)
				used[op->in[j]] = 1;
		for (int j = 0; j < op->n_out; j++)
			used[op->out[j]] = 1;
	}
	for (int i = 0; i < g->n_inputs; i++)
		used[g->inputs[i]] = 1;
	for (int i = 0; i < g->n_outputs; i++)
		used[g->outputs[i]] = 1;
	int *map = xmalloc(sizeof(int) * (size_t)(g->n_tensors + 1));
	int nt = 0;
	for (int i = 0; i < g->n_tensors; i++) {
		if (!used[i]) {
			tensor_free(&g->tensors[i]);
			map[i] = -1;
			continue;
		}
		map[i] = nt;
		g->tensors[nt++] = g->tensors[i];
	}
	g->n_tensors = nt;
	/* the names of the tensors kept, at their new indices */
	name_index_free(&g->names);
	for (int i = 0; i < nt; i++)
		if (g->tensors[i].name)
			name_index_put(&g->names, g->tensors[i].name, i);
	g->n_named = nt;
	for (int i = 0; i < g->n_ops; i++) {
		struct ir_op *op = &g->ops[i];
		for (int j = 0; j < op->n_in; j++)
			if (op->in[j] >= 0)
				op->in[j] = map[op->in[j]];
		for (int j = 0; j < op->n_out; j++)
			op->out[j] = map[op->out[j]];
	}
	for (int i = 0; i < g->n_inputs; i++)
		g->inputs[i] = map[g->inputs[i]];
	for (int i = 0; i < g->n_outputs; i++)
		g->outputs[i] = map[g->outputs[i]];
	free(map);
	free(used);
}

/* graph_clone, or with BORROW graph_clone_borrowing. */
static struct ir_graph *clone(const struct ir_graph *g, int borrow)
{
	struct ir_graph *c = graph_new(g->dialect, g->stage);
	c->name = xstrdup(g->name);
	c->chip = xstrdup(g->chip);
	c->mode = g->mode;
	c->neuron_bytes = g->neuron_bytes;
	c->coeff_bytes = g->coeff_bytes;
	for (int i = 0; i < g->n_tensors; i++) {
		const struct ir_tensor *t = &g->tensors[i];
		int k = graph_add_tensor(c, t->name, t->dtype, t->rank, t->shape);
		struct ir_tensor *ct = &c->tensors[k];
		ct->scale = t->scale;
		ct->zero_point = t->zero_point;
		ct->qdtype = t->qdtype;
		ct->addr = t->addr;
		ct->dyn = t->dyn;
		if (t->data && borrow) {
			ct->data = t->data;
			ct->nbytes = t->nbytes;
		} else if (t->data) {
			tensor_set_data(ct, t->data, t->nbytes);
		}
	}
	for (int i = 0; i < g->n_ops; i++) {
		const struct ir_op *op = &g->ops[i];
		int k = graph_add_op(c, op->type, op->name, op->n_in, op->in, op->n_out, op->out);
		struct ir_op *co = &c->ops[k];
		co->group = op->group;
		co->place = op->place;
		op_copy_attrs(co, op);
	}
	c->n_inputs = g->n_inputs;
	c->n_outputs = g->n_outputs;
	c->inputs = xmalloc(sizeof(int) * (size_t)(g->n_inputs + 1));
	c->outputs = xmalloc(sizeof(int) * (size_t)(g->n_outputs + 1));
	memcpy(c->inputs, g->inputs, sizeof(int) * (size_t)g->n_inputs);
	memcpy(c->outputs, g->outputs, sizeof(int) * (size_t)g->n_outputs);
	return c;
}

struct ir_graph *graph_clone(const struct ir_graph *g)
{
	return clone(g, 0);
}

struct ir_graph *graph_clone_borrowing(const struct ir_graph *g)
{
	return clone(g, 1);
}

int ir_expect(const struct ir_graph *g, const char *path, enum ir_dialect d,
	      unsigned stage_mask)
{
	const char *shown = !path || !strcmp(path, "-") ? "<stdin>" : path;
	if (g->dialect == d && (stage_mask & (1u << g->stage)))
		return 0;
	char want[256] = "";
	for (int s = 0; s < STAGE_COUNT; s++)
		if (stage_mask & (1u << s)) {
			if (want[0])
				strcat(want, " or ");
			strcat(want, stage_name(s));
		}
	return err_set("'%s': wrong stage: got %s IR at stage '%s', expected %s IR at stage %s",
		       shown, dialect_name(g->dialect), stage_name(g->stage),
		       dialect_name(d), want);
}

/* Check t's dimensions and size against the IR_MAX_ bounds, with the
 * products computed without overflow; its bytes in *bytes. */
static int tensor_check_size(const struct ir_tensor *t, int64_t *bytes)
{
	char sh[160];
	int64_t n = (int64_t)dtype_size(t->dtype);
	int zero = 0;
	shape_str(sh, sizeof sh, t->rank, t->shape);
	for (int i = 0; i < t->rank; i++) {
		if (t->shape[i] < 0 || t->shape[i] > IR_MAX_DIM)
			return err_set("tensor '%s': dimension %d of shape %s is out of range [0, %d]",
				       t->name, i, sh, IR_MAX_DIM);
		zero |= t->shape[i] == 0;
	}
	for (int i = 0; i < t->rank && !zero; i++)
		if (__builtin_mul_overflow(n, t->shape[i], &n) || n > IR_MAX_TENSOR_BYTES)
			return err_set("tensor '%s': shape %s of %s needs more than %lld bytes",
				       t->name, sh, dtype_name(t->dtype),
				       (long long)IR_MAX_TENSOR_BYTES);
	*bytes = zero ? 0 : n;
	return 0;
}

int ir_verify(const struct ir_graph *g)
{
	char *made = xcalloc((size_t)g->n_tensors + 1, 1);
	int rc = -1;
	int64_t act_bytes = 0;
	for (int i = 0; i < g->n_tensors; i++) {
		const struct ir_tensor *t = &g->tensors[i];
		int64_t bytes = 0;
		if (t->rank < 0 || t->rank > IR_MAX_RANK || (unsigned)t->dtype >= DT_COUNT) {
			err_set("tensor '%s': bad rank or dtype", t->name);
			goto out;
		}
		if (tensor_check_size(t, &bytes) < 0)
			goto out;
		if ((t->dyn >> t->rank) || (t->dyn && t->data)) {
			err_set("tensor '%s': %s", t->name, t->data ? "a weight has no dynamic dimension"
				: "a dynamic dimension past its rank");
			goto out;
		}
		if (!t->data && (act_bytes += bytes) > IR_MAX_ACT_BYTES) {
			err_set("activations need more than %lld bytes, the most a graph may use "
				"(passed at tensor '%s')", (long long)IR_MAX_ACT_BYTES, t->name);
			goto out;
		}
		if (t->data) {
			if (t->nbytes != tensor_bytes(t)) {
				err_set("tensor '%s': %zu bytes of data for %zu expected",
					t->name, t->nbytes, tensor_bytes(t));
				goto out;
			}
			made[i] = 1;
		}
	}
	for (int i = 0; i < g->n_inputs; i++) {
		if (g->inputs[i] < 0 || g->inputs[i] >= g->n_tensors) {
			err_set("graph input %d: bad tensor index", i);
			goto out;
		}
		if (made[g->inputs[i]]) {
			err_set("graph input '%s' is a weight or listed twice",
				g->tensors[g->inputs[i]].name);
			goto out;
		}
		made[g->inputs[i]] = 1;
	}
	for (int i = 0; i < g->n_ops; i++) {
		const struct ir_op *op = &g->ops[i];
		if ((unsigned)op->type >= OP_COUNT) {
			err_set("op %d: bad type", i);
			goto out;
		}
		for (int j = 0; j < op->n_in; j++) {
			int t = op->in[j];
			if (t < -1 || t >= g->n_tensors) {
				err_set("op '%s': input %d: bad tensor index", op->name, j);
				goto out;
			}
			if (t >= 0 && !made[t]) {
				err_set("op '%s': input '%s' is used before it is produced",
					op->name, g->tensors[t].name);
				goto out;
			}
		}
		for (int j = 0; j < op->n_out; j++) {
			int t = op->out[j];
			if (t < 0 || t >= g->n_tensors) {
				err_set("op '%s': output %d: bad tensor index", op->name, j);
				goto out;
			}
			if (made[t]) {
				err_set("op '%s': tensor '%s' is produced twice",
					op->name, g->tensors[t].name);
				goto out;
			}
			made[t] = 1;
		}
	}
	for (int i = 0; i < g->n_outputs; i++) {
		int t = g->outputs[i];
		if (t < 0 || t >= g->n_tensors || !made[t]) {
			err_set("graph output %d is never produced", i);
			goto out;
		}
	}
	/* subgraphs (If, Loop, Scan bodies): the same checks, nested */
	for (int i = 0; i < g->n_ops; i++)
		for (int j = 0; j < g->ops[i].n_attr; j++) {
			const struct ir_attr *a = &g->ops[i].attr[j];
			if (a->kind != ATTR_GRAPH)
				continue;
			/* a host op keeps its Top bodies (lib/back/lower_dtype.c) */
			int top_body = g->ops[i].place == PLACE_HOST && a->graph->dialect == DIALECT_TOP;
			if (a->graph->dialect != g->dialect && !top_body) {
				err_set("op '%s': subgraph '%s' is of another dialect", g->ops[i].name, a->name);
				goto out;
			}
			if (ir_verify(a->graph) < 0) {
				err_prefix("op '%s': subgraph '%s'", g->ops[i].name, a->name);
				goto out;
			}
		}
	rc = 0;
out:
	free(made);
	return rc;
}

#define X_NAME(e, c, s) s,
static const char *const op_names[] = { OP_LIST(X_NAME) };
#undef X_NAME
_Static_assert(ARRAY_LEN(op_names) == OP_COUNT, "op name table out of step with OP_LIST");

#define X_CODE(e, c, s) c,
static const int op_codes[] = { OP_LIST(X_CODE) };
#undef X_CODE

/* Never called: the build fails here ("duplicate case value") when two
 * lines of OP_LIST share an opcode; the assertions below bound each opcode
 * by the ISA's field. */
#define X_CASE(e, c, s) case c: break;
void op_code_unique(int c);
void op_code_unique(int c)
{
	switch (c) { OP_LIST(X_CASE) default: break; }
}
#define X_RANGE(e, c, s) _Static_assert((c) >= 0 && (c) <= OP_CODE_MAX, "opcode of " s " out of range");
OP_LIST(X_RANGE)
#undef X_RANGE
#undef X_CASE

int op_code(enum op_type t)
{
	return (unsigned)t < OP_COUNT ? op_codes[t] : -1;
}

/* One more than the op of each opcode; 0 where none has it. */
#define X_BYCODE(e, c, s) [c] = OP_##e + 1,
static const int16_t op_by_code[OP_CODE_MAX + 1] = { OP_LIST(X_BYCODE) };
#undef X_BYCODE

int op_from_code(int code)
{
	return code >= 0 && code <= OP_CODE_MAX ? op_by_code[code] - 1 : -1;
}

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

static const char *const mode_names[] = {
	[MODE_F32] = "f32", [MODE_INT8] = "int8", [MODE_BF16] = "bf16", [MODE_F16] = "f16",
};
_Static_assert(ARRAY_LEN(mode_names) == MODE_COUNT, "one name per mode");

const char *mode_name(enum ir_mode m)
{
	return m >= 0 && m < MODE_COUNT ? mode_names[m] : "";
}

int mode_from_name(const char *s)
{
	for (int i = 0; i < MODE_COUNT; i++)
		if (!strcmp(mode_names[i], s))
			return i;
	return MODE_NONE;
}

void op_copy_attr(struct ir_op *op, const struct ir_attr *a)
{
	switch (a->kind) {
	case ATTR_INT: op_set_int(op, a->name, a->i); break;
	case ATTR_FLOAT: op_set_float(op, a->name, a->f); break;
	case ATTR_INTS: op_set_ints(op, a->name, a->n, a->ints); break;
	case ATTR_FLOATS: op_set_floats(op, a->name, a->n, a->floats); break;
	case ATTR_STR: op_set_str(op, a->name, a->s); break;
	case ATTR_GRAPH: op_set_graph(op, a->name, graph_clone(a->graph)); break;
	}
}

void op_clear_attrs(struct ir_op *op)
{
	for (int i = 0; i < op->n_attr; i++)
		attr_free(&op->attr[i]);
	free(op->attr);
	op->attr = NULL;
	op->n_attr = 0;
}

void op_copy_attrs(struct ir_op *dst, const struct ir_op *src)
{
	for (int i = 0; i < src->n_attr; i++)
		op_copy_attr(dst, &src->attr[i]);
}

void op_set_graph(struct ir_op *op, const char *name, struct ir_graph *sub)
{
	struct ir_attr *a = attr_slot(op, name);
	a->kind = ATTR_GRAPH;
	a->graph = sub;
}

struct ir_graph *op_graph(const struct ir_op *op, const char *name)
{
	const struct ir_attr *a = op_attr(op, name);
	return a && a->kind == ATTR_GRAPH ? a->graph : NULL;
}
