/* import_util.c - what the ONNX converters share (lib/front/import_util.h):
 * messages, tensor payloads, constant inputs, attributes.
 */
#include <limits.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "front/import_util.h"
#include "ir/base.h"
#include "ir/convert.h"
#include "ir/op.h"
#include "onnx.pb-c.h"

/* ---- importer state and messages ---- */

/* "'m.onnx': node 'conv1' (Conv): <message>"; returns -1. */
int node_err(struct imp *im, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return err_set("'%s': node '%s' (%s): %s", im->path, im->node_name,
		       im->node->op_type, msg);
}

int node_outputs(struct imp *im, int max_out)
{
	const Onnx__NodeProto *n = im->node;
	int n_out = 0;
	for (size_t i = 0; i < n->n_output; i++)
		if (n->output[i] && *n->output[i]) {
			if ((int)i >= max_out)
				return node_err(im, "optional output '%s' is not supported", n->output[i]);
			if (i && (name_index_get(&im->tensors, n->output[i]) >= 0 ||
				  name_index_get(&im->inits, n->output[i]) >= 0))
				return node_err(im, "tensor '%s' is defined twice", n->output[i]);
			n_out = (int)i + 1;
		}
	return n_out;
}

void imp_release(struct imp *im)
{
	name_index_free(&im->tensors);
	name_index_free(&im->inits);
	name_index_free(&im->outputs);
	name_index_free(&im->producers);
	free(im->known);
	free(im->node_name);
}

void set_known(struct imp *im, int t)
{
	grow_array((void **)&im->known, &im->cap_known, t + 1, 1);
	im->known[t] = 1;
}

/* The tensor t if its shape is known, else NULL. */
const struct ir_tensor *known_tensor(const struct imp *im, int t)
{
	return t >= 0 && t < im->cap_known && im->known[t] ? &im->g->tensors[t] : NULL;
}

/* ---- tensors: ONNX data types and payloads ---- */

static const struct {
	int32_t onnx;
	enum ir_dtype dt;
} dtype_map[] = {
	{ ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, DT_F32 },
	{ ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16, DT_F16 },
	{ ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16, DT_BF16 },
	{ ONNX__TENSOR_PROTO__DATA_TYPE__INT8, DT_I8 },
	{ ONNX__TENSOR_PROTO__DATA_TYPE__UINT8, DT_U8 },
	{ ONNX__TENSOR_PROTO__DATA_TYPE__INT16, DT_I16 },
	{ ONNX__TENSOR_PROTO__DATA_TYPE__INT32, DT_I32 },
	{ ONNX__TENSOR_PROTO__DATA_TYPE__INT64, DT_I64 },
	{ ONNX__TENSOR_PROTO__DATA_TYPE__BOOL, DT_BOOL },
	{ ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE, DT_F64 },
	{ ONNX__TENSOR_PROTO__DATA_TYPE__UINT16, DT_U16 },
	{ ONNX__TENSOR_PROTO__DATA_TYPE__UINT32, DT_U32 },
	{ ONNX__TENSOR_PROTO__DATA_TYPE__UINT64, DT_U64 },
};

int dtype_from_onnx(int32_t t)
{
	for (size_t i = 0; i < ARRAY_LEN(dtype_map); i++)
		if (dtype_map[i].onnx == t)
			return (int)dtype_map[i].dt;
	return -1;
}

const char *onnx_dtype_name(int32_t t)
{
	static const char *const names[] = {
		"undefined", "float", "uint8", "int8", "uint16", "int16", "int32",
		"int64", "string", "bool", "float16", "double", "uint32", "uint64",
		"complex64", "complex128", "bfloat16",
	};
	return t >= 0 && (size_t)t < ARRAY_LEN(names) ? names[t] : "unknown";
}

/* Decode t; on failure err_set() a message without a subject (the caller
 * prefixes the initializer or node) and return -1. */
int tensor_decode(const Onnx__TensorProto *t, struct decoded *d)
{
	static const char zero[8];
	memset(d, 0, sizeof *d);
	if (t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL)
		return err_set("external tensor data is not supported");
	if (t->segment)
		return err_set("segmented tensors are not supported");
	int dt = dtype_from_onnx(t->data_type);
	if (dt < 0)
		return err_set("unsupported data type %s", onnx_dtype_name(t->data_type));
	if (t->n_dims > IR_MAX_RANK)
		return err_set("rank %zu exceeds %d", t->n_dims, IR_MAX_RANK);
	d->dt = (enum ir_dtype)dt;
	d->rank = (int)t->n_dims;
	size_t numel = 1, size = dtype_size(d->dt);
	for (int i = 0; i < d->rank; i++) {
		if (t->dims[i] < 0)
			return err_set("negative dimension %lld", (long long)t->dims[i]);
		d->shape[i] = t->dims[i];
		if (__builtin_mul_overflow(numel, (size_t)t->dims[i], &numel))
			return err_set("too many elements");
	}
	if (__builtin_mul_overflow(numel, size, &d->nbytes))
		return err_set("too many elements");

	size_t have;
	if (t->has_raw_data) {
		have = t->raw_data.len;
		d->data = t->raw_data.data;
	} else if (d->dt == DT_F32) {
		have = t->n_float_data * size;
		d->data = t->float_data;
	} else if (d->dt == DT_I64) {
		have = t->n_int64_data * size;
		d->data = t->int64_data;
	} else if (d->dt == DT_I32) {
		have = t->n_int32_data * size;
		d->data = t->int32_data;
	} else if (d->dt == DT_F64) {
		have = t->n_double_data * size;
		d->data = t->double_data;
	} else if (d->dt == DT_U64) {
		have = t->n_uint64_data * size;
		d->data = t->uint64_data;
	} else if (d->dt == DT_U32) {
		/* uint32 travels one per uint64_data element */
		have = t->n_uint64_data * size;
		if (have == d->nbytes && numel) {
			uint32_t *p = d->tmp = xmalloc(d->nbytes);
			for (size_t i = 0; i < numel; i++)
				p[i] = (uint32_t)t->uint64_data[i];
			d->data = p;
		}
	} else {
		/* int8, uint8, int16, uint16, bool, float16 and bfloat16 travel one per
		 * int32_data element (16-bit floats as their bit pattern). */
		have = t->n_int32_data * size;
		if (have == d->nbytes && numel) {
			unsigned char *p = d->tmp = xmalloc(d->nbytes);
			for (size_t i = 0; i < numel; i++) {
				uint32_t v = (uint32_t)t->int32_data[i];
				if (size == 1)
					p[i] = (unsigned char)v;
				else
					memcpy(p + 2 * i, &(uint16_t){ (uint16_t)v }, 2);
			}
			d->data = p;
		}
	}
	if (have != d->nbytes) {
		free(d->tmp);
		d->tmp = NULL;
		return err_set("%zu bytes of data for a shape that needs %zu", have, d->nbytes);
	}
	if (!d->nbytes)
		d->data = zero;
	return 0;
}

/* Give back to the system the whole pages inside [p, p + n), which the
 * caller will never read again (their contents become undefined). */
static void release_pages(const void *p, size_t n)
{
	long pg = sysconf(_SC_PAGESIZE);
	uintptr_t a = ((uintptr_t)p + (uintptr_t)pg - 1) & ~((uintptr_t)pg - 1);
	uintptr_t e = ((uintptr_t)p + n) & ~((uintptr_t)pg - 1);
	if (pg > 0 && e > a)
		madvise((void *)a, e - a, MADV_DONTNEED);
}

/* Add initializer number i of the graph as a weight; returns its tensor
 * index or -1.  Its payload in the message is freed at once: it is never
 * needed again and this keeps peak memory near one copy of the weights. */
int add_initializer(struct imp *im, int i)
{
	Onnx__TensorProto *t = im->gp->initializer[i];
	struct decoded d;
	if (tensor_decode(t, &d) < 0)
		return err_prefix("'%s': initializer '%s'", im->path, t->name);
	int k = graph_add_weight(im->g, t->name, d.dt, d.rank, d.shape, d.data);
	free(d.tmp);
	/* a subgraph's initializers stay: an unrolled Loop imports it again */
	if (t->has_raw_data && !im->outer) {
		const unsigned char *r = t->raw_data.data;
		if (im->file && r >= im->file && r < im->file + im->file_len) {
			/* in the model's bytes (onnx_strip.c): read once, never again */
			if (im->release)
				release_pages(r, t->raw_data.len);
		} else {
			free(t->raw_data.data);   /* protobuf-c's default allocator is malloc */
		}
		t->raw_data.data = NULL;
		t->raw_data.len = 0;
		t->has_raw_data = 0;
	}
	set_known(im, k);
	name_index_set(&im->tensors, t->name, k);
	return k;
}

/* Tensor index for an input name: a tensor already made, or an initializer
 * made into a weight on first use.  "" (absent optional input) gives -1. */
int resolve_input(struct imp *im, const char *name, int *t)
{
	*t = -1;
	if (!name || !*name)
		return 0;
	*t = name_index_get(&im->tensors, name);
	if (*t >= 0)
		return 0;
	int i = name_index_get(&im->inits, name);
	/* a subgraph reads a value of an enclosing graph (lib/run/control.h) */
	if (i < 0 && im->capture && name_index_get(&im->producers, name) < 0)
		return im->capture(im, name, t);
	if (i < 0 && im->node) {
		int p = name_index_get(&im->producers, name);
		if (p == im->node_index)
			return node_err(im, "input '%s' is the node's own output: a node may not "
					"read what it writes", name);
		if (p > im->node_index) {
			const char *pn = im->gp->node[p]->name;
			return node_err(im, "input '%s' is written by a later node%s%s%s: the graph "
					"has a cycle or is not in topological order", name,
					pn && *pn ? " '" : "", pn && *pn ? pn : "", pn && *pn ? "'" : "");
		}
		return node_err(im, "input '%s' is not defined before use (no node, input or "
				"initializer has that name)", name);
	}
	if (i < 0)
		return err_set("'%s': output '%s' is not produced by any node", im->path, name);
	*t = add_initializer(im, i);
	return *t < 0 ? -1 : 0;
}

/* ---- constant inputs that become attributes ---- */

/* Read constant tensor t (a weight, or an empty tensor: its value is known)
 * as at most max integers. */
int const_ints(struct imp *im, int t, const char *what, int64_t *v, int max, int *n)
{
	const struct ir_tensor *w = t >= 0 ? &im->g->tensors[t] : NULL;
	if (w && !w->data && !w->dyn && tensor_numel(w) == 0 && w->rank == 1) {
		*n = 0;
		return 0;
	}
	if (!w || !w->data)
		return node_err(im, "%s must be a constant", what);
	int64_t count = tensor_numel(w);
	if (w->rank > 1 || count > max)
		return node_err(im, "%s must be a list of at most %d integers", what, max);
	for (int64_t i = 0; i < count; i++) {
		if (w->dtype == DT_I64)
			memcpy(&v[i], (const char *)w->data + 8 * i, 8);
		else if (w->dtype == DT_I32)
			v[i] = ((const int32_t *)w->data)[i];
		else
			return node_err(im, "%s must be int64 or int32, not %s", what, dtype_name(w->dtype));
	}
	*n = (int)count;
	return 0;
}

/* Read constant tensor t (a weight) holding one number. */
int const_scalar(struct imp *im, int t, const char *what, double *v)
{
	const struct ir_tensor *w = t >= 0 ? &im->g->tensors[t] : NULL;
	if (!w || !w->data)
		return node_err(im, "%s must be a constant", what);
	if (tensor_numel(w) != 1)
		return node_err(im, "%s must hold one value", what);
	const void *p = w->data;
	switch (w->dtype) {
	case DT_F32: *v = *(const float *)p; break;
	case DT_I8: *v = *(const int8_t *)p; break;
	case DT_U8: *v = *(const uint8_t *)p; break;
	case DT_I16: *v = *(const int16_t *)p; break;
	case DT_I32: *v = *(const int32_t *)p; break;
	case DT_I64: *v = (double)*(const int64_t *)p; break;
	case DT_F64: *v = *(const double *)p; break;
	case DT_U16: *v = *(const uint16_t *)p; break;
	case DT_U32: *v = *(const uint32_t *)p; break;
	case DT_U64: *v = (double)*(const uint64_t *)p; break;
	default:
		return node_err(im, "%s of type %s is not supported", what, dtype_name(w->dtype));
	}
	return 0;
}

/* ---- node attributes ---- */

const Onnx__AttributeProto *attr_find(const Onnx__NodeProto *n, const char *name)
{
	for (size_t i = 0; i < n->n_attribute; i++)
		if (n->attribute[i]->name && !strcmp(n->attribute[i]->name, name))
			return n->attribute[i];
	return NULL;
}

int attr_type_err(struct imp *im, const char *name, const char *want)
{
	return node_err(im, "attribute '%s' must be %s", name, want);
}

int attr_int(struct imp *im, const char *name, int64_t def, int64_t *v)
{
	const Onnx__AttributeProto *a = attr_find(im->node, name);
	*v = def;
	if (!a)
		return 0;
	if (a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT)
		return attr_type_err(im, name, "an integer");
	*v = a->i;
	return 0;
}

int attr_float(struct imp *im, const char *name, double def, double *v)
{
	const Onnx__AttributeProto *a = attr_find(im->node, name);
	*v = def;
	if (!a)
		return 0;
	if (a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT)
		return attr_type_err(im, name, "a float");
	*v = a->f;
	if (!isfinite(*v))
		return node_err(im, "attribute '%s' must be finite, not %g", name, *v);
	return 0;
}

/* As attr_float, for a bound (Clip's min and max, Pad's value) where an
 * infinity is meaningful: only NaN is refused. */
int attr_bound(struct imp *im, const char *name, double def, double *v)
{
	const Onnx__AttributeProto *a = attr_find(im->node, name);
	if (a && a->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT && isinf(a->f)) {
		*v = a->f;
		return 0;
	}
	return attr_float(im, name, def, v);
}

/* Copy up to max values into v and set *n to the count present (0 when the
 * attribute is absent; more than max is an error). */
int attr_ints(struct imp *im, const char *name, int64_t *v, int max, int *n)
{
	const Onnx__AttributeProto *a = attr_find(im->node, name);
	*n = 0;
	if (!a)
		return 0;
	if (a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS)
		return attr_type_err(im, name, "a list of integers");
	if (a->n_ints > (size_t)max)
		return node_err(im, "attribute '%s' has %zu values, at most %d are supported",
				name, a->n_ints, max);
	if (a->n_ints)
		memcpy(v, a->ints, a->n_ints * sizeof *v);
	*n = (int)a->n_ints;
	return 0;
}

/* A spatial list attribute (kernel_shape, strides, dilations, pads, ...):
 * as attr_ints, but a list given must hold 1 to max values, each in
 * [lo, SPATIAL_MAX].  Absent gives *n = 0. */
int attr_spatial(struct imp *im, const char *name, int64_t lo, int64_t *v, int max, int *n)
{
	if (attr_ints(im, name, v, max, n) < 0)
		return -1;
	if (attr_find(im->node, name) && *n == 0)
		return node_err(im, "attribute '%s' is an empty list", name);
	for (int i = 0; i < *n; i++)
		if (v[i] < lo || v[i] > SPATIAL_MAX)
			return node_err(im, "attribute '%s' value %lld is out of range [%lld, %d]",
					name, (long long)v[i], (long long)lo, SPATIAL_MAX);
	return 0;
}

/* A 0/1 attribute (transA, ceil_mode, keepdims, ...); anything else is
 * refused rather than read as true. */
int attr_bool(struct imp *im, const char *name, int64_t def, int64_t *v)
{
	if (attr_int(im, name, def, v) < 0)
		return -1;
	if (*v != 0 && *v != 1)
		return node_err(im, "attribute '%s' must be 0 or 1, not %lld", name, (long long)*v);
	return 0;
}

/* Read attribute "epsilon" (default def), which must be finite and not negative. */
int attr_epsilon(struct imp *im, double def, double *v)
{
	if (attr_float(im, "epsilon", def, v) < 0)
		return -1;
	if (*v < 0)
		return node_err(im, "attribute 'epsilon' must not be negative, not %g", *v);
	return 0;
}

/* Copy a string attribute into buf (NUL-terminated, truncated to fit). */
int attr_str(struct imp *im, const char *name, const char *def, char *buf, size_t size)
{
	const Onnx__AttributeProto *a = attr_find(im->node, name);
	snprintf(buf, size, "%s", def);
	if (!a)
		return 0;
	if (a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING)
		return attr_type_err(im, name, "a string");
	size_t n = a->s.len < size - 1 ? a->s.len : size - 1;
	if (n)
		memcpy(buf, a->s.data, n);
	buf[n] = 0;
	return 0;
}

/* Refuse an attribute that the node's opset moved to an input. */
int attr_absent(struct imp *im, const char *name)
{
	if (attr_find(im->node, name))
		return node_err(im, "attribute '%s' is not valid in opset %d", name, im->opset);
	return 0;
}

/* Write float attribute name, taken from the node or def. */
int put_float(struct imp *im, struct ir_op *op, const char *name, double def)
{
	double v;
	if (attr_float(im, name, def, &v) < 0)
		return -1;
	op_set_float(op, name, v);
	return 0;
}

int put_int(struct imp *im, struct ir_op *op, const char *name, int64_t def)
{
	int64_t v;
	if (attr_int(im, name, def, &v) < 0)
		return -1;
	op_set_int(op, name, v);
	return 0;
}

/* Write 0/1 attribute name, taken from the node or def. */
int put_bool(struct imp *im, struct ir_op *op, const char *name, int64_t def)
{
	int64_t v;
	if (attr_bool(im, name, def, &v) < 0)
		return -1;
	op_set_int(op, name, v);
	return 0;
}

int put_epsilon(struct imp *im, struct ir_op *op)
{
	double v;
	if (attr_epsilon(im, 1e-5, &v) < 0)
		return -1;
	op_set_float(op, "epsilon", v);
	return 0;
}

/* Normalise n axes against rank r (when known) and sort them; refuses
 * repeats and axes out of range. */
int norm_axes(struct imp *im, int64_t *axes, int n, int r)
{
	if (r < 0)
		return node_err(im, "the input shape is unknown");
	for (int i = 0; i < n; i++) {
		if (axes[i] < -r || axes[i] >= r)
			return node_err(im, "axis %lld is out of range for rank %d", (long long)axes[i], r);
		if (axes[i] < 0)
			axes[i] += r;
	}
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && axes[j - 1] > axes[j]; j--) {
			int64_t t = axes[j];
			axes[j] = axes[j - 1];
			axes[j - 1] = t;
		}
	for (int i = 1; i < n; i++)
		if (axes[i] == axes[i - 1])
			return node_err(im, "axis %lld is repeated", (long long)axes[i]);
	return 0;
}

int known_rank(const struct imp *im, int t)
{
	const struct ir_tensor *x = known_tensor(im, t);
	return x ? x->rank : -1;
}

/* Axes from the attribute or from constant input idx (dropped), normalised
 * against rank r; *n = -1 when neither is given, -2 when input idx is known
 * only at run time (it stays the op's input). */
int axes_from(struct imp *im, struct ir_op *op, int idx, int64_t *axes, int *n, int r)
{
	const Onnx__AttributeProto *a = attr_find(im->node, "axes");
	*n = -1;
	if (a) {
		if (attr_ints(im, "axes", axes, IR_MAX_RANK, n) < 0)
			return -1;
	} else if (op->n_in > idx && op->in[idx] >= 0 && !im->g->tensors[op->in[idx]].data &&
		   tensor_numel(&im->g->tensors[op->in[idx]]) != 0) {
		*n = -2;   /* at run time: input IDX stays */
		return 0;
	} else if (op->n_in > idx && op->in[idx] >= 0) {
		if (const_ints(im, op->in[idx], "axes", axes, IR_MAX_RANK, n) < 0)
			return -1;
	}
	if (op->n_in > idx)
		op->n_in = idx;
	return *n > 0 ? norm_axes(im, axes, *n, r) : 0;
}

/* Constant f32 tensor t as at most max floats. */
int const_floats(struct imp *im, int t, const char *what, float *v, int max, int *n)
{
	const struct ir_tensor *w = t >= 0 ? &im->g->tensors[t] : NULL;
	*n = 0;
	if (!w)
		return 0;
	if (!w->data)
		return node_err(im, "%s must be a constant", what);
	if (w->dtype != DT_F32 || w->rank > 1 || tensor_numel(w) > max)
		return node_err(im, "%s must be a list of at most %d floats", what, max);
	*n = (int)tensor_numel(w);
	memcpy(v, w->data, sizeof(float) * (size_t)*n);
	return 0;
}

/* Add an op of type t after op k of the node being imported: op k writes a
 * new tensor instead of its output 0, which the new op writes; the new op
 * reads that tensor where in[] holds -1.  Returns the new op's index. */
int import_extra_op(struct imp *im, int k, enum op_type t, int n_in, const int *in,
			   const char *suffix)
{
	struct ir_graph *g = im->g;
	int o = g->ops[k].out[0], *ins = xcalloc((size_t)n_in + 1, sizeof *ins);
	char base[512];
	snprintf(base, sizeof base, "%s_%s", g->tensors[o].name, suffix);
	char *name = graph_unique_name(g, base, 1);
	int mid = graph_add_tensor(g, name, DT_F32, 0, NULL);
	free(name);
	g->ops[k].out[0] = mid;
	for (int i = 0; i < n_in; i++)
		ins[i] = in[i] < 0 ? mid : in[i];
	snprintf(base, sizeof base, "%s_%s", im->node_name, suffix);
	int r = graph_add_op(g, t, base, n_in, ins, 1, &o);
	free(ins);
	return r;
}

int cv_spatial_attrs(struct imp *im, struct ir_op *op, enum spatial_kind kind)
{
	int64_t v;
	if (kind == SP_CONV) {
		if (attr_int(im, "group", 1, &v) < 0)
			return -1;
		if (v < 1 || v > SPATIAL_MAX)
			return node_err(im, "attribute 'group' value %lld is out of range [1, %d]",
					(long long)v, SPATIAL_MAX);
		op_set_int(op, "group", v);
		return 0;
	}
	if (attr_bool(im, "ceil_mode", 0, &v) < 0)
		return -1;
	op_set_int(op, "ceil_mode", v != 0);
	if (kind == SP_MAXPOOL) {
		/* the layout of the Indices output only (cv_maxpool) */
		if (attr_int(im, "storage_order", 0, &v) < 0)
			return -1;
		if (v != 0 && v != 1)
			return node_err(im, "storage_order %lld is not 0 or 1", (long long)v);
	} else {
		if (attr_bool(im, "count_include_pad", 0, &v) < 0)
			return -1;
		op_set_int(op, "count_include_pad", v != 0);
	}
	return 0;
}

int add_node_output(struct imp *im, int i, const char *on)
{
	char base[512];
	snprintf(base, sizeof base, "%s_unused_%d", im->node_name, i);
	char *name = on ? NULL : graph_unique_name(im->g, base, 1);
	int t = graph_add_tensor(im->g, on ? on : name, DT_F32, 0, NULL);
	free(name);
	if (on)
		name_index_set(&im->tensors, on, t);
	return t;
}

int spatial_auto_pad(struct imp *im, const struct ir_tensor *x, int n, const int64_t *k,
		     const int64_t *s, const int64_t *d, int64_t *p)
{
	char autopad[16];
	if (attr_str(im, "auto_pad", "NOTSET", autopad, sizeof autopad) < 0)
		return -1;
	if (!strcmp(autopad, "VALID")) {
		memset(p, 0, sizeof *p * (size_t)(2 * n));
	} else if (!strcmp(autopad, "SAME_UPPER") || !strcmp(autopad, "SAME_LOWER")) {
		if (!x)
			return node_err(im, "auto_pad %s needs the input shape, which is unknown", autopad);
		for (int i = 0; i < n; i++) {
			int64_t in = x->shape[2 + i], out = (in + s[i] - 1) / s[i];
			int64_t total = (out - 1) * s[i] + (k[i] - 1) * d[i] + 1 - in;
			if (total < 0)
				total = 0;
			int64_t small = total / 2, big = total - small;
			p[i] = autopad[5] == 'U' ? small : big;
			p[i + n] = autopad[5] == 'U' ? big : small;
		}
	} else if (strcmp(autopad, "NOTSET")) {
		return node_err(im, "auto_pad '%s' is not supported", autopad);
	}
	return 0;
}
