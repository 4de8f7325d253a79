/* onnx_import.c - ONNX model (protobuf-c over onnx.proto) to Top IR.
 * Opset differences are resolved here (inputs that became attributes,
 * auto_pad, Reshape's 0 and -1) so later stages see one form per operator.
 */
#include "onnx_import.h"

#include <limits.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "convert.h"
#include "npz.h"
#include "onnx.pb-c.h"
#include "onnx_einsum.h"
#include "op.h"
#include "passes.h"

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "onnx_import.c reads ONNX raw_data, which is little-endian, in place"
#endif

/* ---- name -> index map (open addressing; keys are borrowed) ---- */

struct name_map {
	int cap;            /* slots, a power of two */
	int n;              /* keys stored */
	const char **key;
	int *val;
};

static uint32_t name_hash(const char *s)
{
	uint32_t h = 2166136261u;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

/* Value stored under k, or -1. */
static int map_get(const struct name_map *m, const char *k)
{
	if (!m->cap)
		return -1;
	for (uint32_t i = name_hash(k) & (uint32_t)(m->cap - 1);; i = (i + 1) & (uint32_t)(m->cap - 1)) {
		if (!m->key[i])
			return -1;
		if (!strcmp(m->key[i], k))
			return m->val[i];
	}
}

/* Store v under k (which must outlive the map), replacing any old value. */
static void map_put(struct name_map *m, const char *k, int v)
{
	if (2 * (m->n + 1) > m->cap) {
		struct name_map big = { m->cap ? 2 * m->cap : 64, 0, NULL, NULL };
		big.key = xcalloc((size_t)big.cap, sizeof *big.key);
		big.val = xcalloc((size_t)big.cap, sizeof *big.val);
		for (int i = 0; i < m->cap; i++)
			if (m->key[i])
				map_put(&big, m->key[i], m->val[i]);
		free(m->key);
		free(m->val);
		*m = big;
	}
	uint32_t i = name_hash(k) & (uint32_t)(m->cap - 1);
	while (m->key[i] && strcmp(m->key[i], k))
		i = (i + 1) & (uint32_t)(m->cap - 1);
	if (!m->key[i])
		m->n++;
	m->key[i] = k;
	m->val[i] = v;
}

static void map_free(struct name_map *m)
{
	free(m->key);
	free(m->val);
	memset(m, 0, sizeof *m);
}

/* ---- importer state and messages ---- */

struct imp {
	const char *path;              /* model file, for messages */
	const struct npz *consts;      /* graph inputs bound to constants, or NULL */
	const struct onnx_input_shape *shapes;   /* input shapes given from outside */
	int n_shapes;
	int opset;                     /* ai.onnx opset version */
	struct ir_graph *g;
	Onnx__GraphProto *gp;
	struct name_map tensors;       /* ONNX name -> tensor index in g */
	struct name_map inits;         /* initializer name -> index in gp->initializer */
	struct name_map outputs;       /* graph output names */
	char *known;                   /* per tensor: 1 once its shape is known */
	int cap_known;
	const Onnx__NodeProto *node;   /* node being imported */
	int as2d;                      /* importing a 1-D Conv or pool as 2-D (H of 1) */
	char *node_name;               /* its name, generated when unnamed */
};

/* "'m.onnx': node 'conv1' (Conv): <message>"; returns -1. */
static int node_err(struct imp *im, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int node_err(struct imp *im, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return err_set("'%s': node '%s' (%s): %s", im->path, im->node_name,
		       im->node->op_type, msg);
}

static void set_known(struct imp *im, int t)
{
	grow_array((void **)&im->known, &im->cap_known, t + 1, 1);
	im->known[t] = 1;
}

/* The tensor t if its shape is known, else NULL. */
static const struct ir_tensor *known_tensor(const struct imp *im, int t)
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
};

static int dtype_from_onnx(int32_t t)
{
	for (size_t i = 0; i < ARRAY_LEN(dtype_map); i++)
		if (dtype_map[i].onnx == t)
			return (int)dtype_map[i].dt;
	return -1;
}

static const char *onnx_dtype_name(int32_t t)
{
	static const char *const names[] = {
		"undefined", "float", "uint8", "int8", "uint16", "int16", "int32",
		"int64", "string", "bool", "float16", "double", "uint32", "uint64",
		"complex64", "complex128", "bfloat16",
	};
	return t >= 0 && (size_t)t < ARRAY_LEN(names) ? names[t] : "unknown";
}

/* An ONNX tensor decoded into IR terms.  data points into the message or,
 * when a typed field had to be narrowed, into tmp (freed by the caller). */
struct decoded {
	enum ir_dtype dt;
	int rank;
	int64_t shape[IR_MAX_RANK];
	size_t nbytes;
	const void *data;
	void *tmp;
};

/* Decode t; on failure err_set() a message without a subject (the caller
 * prefixes the initializer or node) and return -1. */
static int tensor_decode(const Onnx__TensorProto *t, struct decoded *d)
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
	} else {
		/* int8, uint8, int16, bool, float16 and bfloat16 travel one per
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

/* Add initializer number i of the graph as a weight; returns its tensor
 * index or -1.  Its payload in the message is freed at once: it is never
 * needed again and this keeps peak memory near one copy of the weights. */
static int add_initializer(struct imp *im, int i)
{
	Onnx__TensorProto *t = im->gp->initializer[i];
	struct decoded d;
	if (tensor_decode(t, &d) < 0)
		return err_prefix("'%s': initializer '%s'", im->path, t->name);
	int k = graph_add_weight(im->g, t->name, d.dt, d.rank, d.shape, d.data);
	free(d.tmp);
	if (t->has_raw_data) {
		free(t->raw_data.data);   /* protobuf-c's default allocator is malloc */
		t->raw_data.data = NULL;
		t->raw_data.len = 0;
		t->has_raw_data = 0;
	}
	set_known(im, k);
	map_put(&im->tensors, t->name, k);
	return k;
}

/* Tensor index for an input name: a tensor already made, or an initializer
 * made into a weight on first use.  "" (absent optional input) gives -1. */
static int resolve_input(struct imp *im, const char *name, int *t)
{
	*t = -1;
	if (!name || !*name)
		return 0;
	*t = map_get(&im->tensors, name);
	if (*t >= 0)
		return 0;
	int i = map_get(&im->inits, name);
	if (i < 0)
		return im->node ? node_err(im, "input '%s' is not defined before use", name)
				: err_set("'%s': output '%s' is not produced by any node", im->path, name);
	*t = add_initializer(im, i);
	return *t < 0 ? -1 : 0;
}

/* ---- constant inputs that become attributes ---- */

/* Read constant tensor t (a weight) as at most max integers. */
static int const_ints(struct imp *im, int t, const char *what, int64_t *v, int max, int *n)
{
	const struct ir_tensor *w = t >= 0 ? &im->g->tensors[t] : NULL;
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
static int const_scalar(struct imp *im, int t, const char *what, double *v)
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
	default:
		return node_err(im, "%s of type %s is not supported", what, dtype_name(w->dtype));
	}
	return 0;
}

/* ---- node attributes ---- */

static const Onnx__AttributeProto *attr_find(const Onnx__NodeProto *n, const char *name)
{
	for (size_t i = 0; i < n->n_attribute; i++)
		if (n->attribute[i]->name && !strcmp(n->attribute[i]->name, name))
			return n->attribute[i];
	return NULL;
}

static int attr_type_err(struct imp *im, const char *name, const char *want)
{
	return node_err(im, "attribute '%s' must be %s", name, want);
}

static int attr_int(struct imp *im, const char *name, int64_t def, int64_t *v)
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

static int attr_float(struct imp *im, const char *name, double def, double *v)
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
static int attr_bound(struct imp *im, const char *name, double def, double *v)
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
static int attr_ints(struct imp *im, const char *name, int64_t *v, int max, int *n)
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

/* Largest kernel size, stride, dilation or pad taken: far beyond any real
 * model, small enough that sums and products of a few stay in an int. */
#define SPATIAL_MAX (1 << 24)

/* A spatial list attribute (kernel_shape, strides, dilations, pads, ...):
 * as attr_ints, but a list given must hold 1 to max values, each in
 * [lo, SPATIAL_MAX].  Absent gives *n = 0. */
static int attr_spatial(struct imp *im, const char *name, int64_t lo, int64_t *v, int max, int *n)
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
static int attr_bool(struct imp *im, const char *name, int64_t def, int64_t *v)
{
	if (attr_int(im, name, def, v) < 0)
		return -1;
	if (*v != 0 && *v != 1)
		return node_err(im, "attribute '%s' must be 0 or 1, not %lld", name, (long long)*v);
	return 0;
}

/* Read attribute "epsilon" (default def), which must be finite and not negative. */
static int attr_epsilon(struct imp *im, double def, double *v)
{
	if (attr_float(im, "epsilon", def, v) < 0)
		return -1;
	if (*v < 0)
		return node_err(im, "attribute 'epsilon' must not be negative, not %g", *v);
	return 0;
}

/* Copy a string attribute into buf (NUL-terminated, truncated to fit). */
static int attr_str(struct imp *im, const char *name, const char *def, char *buf, size_t size)
{
	const Onnx__AttributeProto *a = attr_find(im->node, name);
	snprintf(buf, size, "%s", def);
	if (!a)
		return 0;
	if (a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING)
		return attr_type_err(im, name, "a string");
	size_t n = a->s.len < size - 1 ? a->s.len : size - 1;
	memcpy(buf, a->s.data, n);
	buf[n] = 0;
	return 0;
}

/* Refuse an attribute that the node's opset moved to an input. */
static int attr_absent(struct imp *im, const char *name)
{
	if (attr_find(im->node, name))
		return node_err(im, "attribute '%s' is not valid in opset %d", name, im->opset);
	return 0;
}

/* ---- per-operator conversion ---- */

enum spatial_kind { SP_CONV, SP_MAXPOOL, SP_AVGPOOL };

/* Conv, MaxPool, AveragePool: 2-D only; every attribute written out
 * explicitly, auto_pad resolved into pads [top, left, bottom, right]. */
static int cv_spatial(struct imp *im, struct ir_op *op, enum spatial_kind kind)
{
	int64_t k[2], s[2] = { 1, 1 }, d[2] = { 1, 1 }, p[4] = { 0, 0, 0, 0 };
	int nk, ns, nd, np;
	const struct ir_tensor *x = known_tensor(im, op->in[0]);
	if (x && x->rank != 4)
		return node_err(im, "only 2-D (NCHW) inputs are supported, input '%s' has rank %d",
				x->name, x->rank);
	if (attr_spatial(im, "kernel_shape", 1, k, 2, &nk) < 0 ||
	    attr_spatial(im, "strides", 1, s, 2, &ns) < 0 ||
	    attr_spatial(im, "dilations", 1, d, 2, &nd) < 0 ||
	    attr_spatial(im, "pads", 0, p, 4, &np) < 0)
		return -1;
	if (im->as2d) {
		/* 1-D lists: H gets kernel 1, stride 1, dilation 1, no pads. */
		if (nk > 1 || ns > 1 || nd > 1 || (np && np != 2))
			return node_err(im, "a 1-D node needs 1-value kernel_shape, strides, "
					"dilations and 2-value pads");
		k[1] = k[0], s[1] = s[0], d[1] = d[0];
		k[0] = s[0] = d[0] = 1;
		nk = nk ? 2 : 0, ns = ns ? 2 : 0, nd = nd ? 2 : 0;
		if (np) {
			int64_t p0 = p[0], p1 = p[1];
			p[0] = 0, p[1] = p0, p[2] = 0, p[3] = p1;
			np = 4;
		}
	}
	if (kind == SP_CONV) {
		const struct ir_tensor *w = &im->g->tensors[op->in[1]];
		if (!w->data)
			return node_err(im, "weight '%s' must be a constant", w->name);
		if (w->rank != 4)
			return node_err(im, "only 2-D convolution is supported (weight '%s' has rank %d)",
					w->name, w->rank);
		if (nk == 2 && (k[0] != w->shape[2] || k[1] != w->shape[3]))
			return node_err(im, "kernel_shape does not match weight '%s'", w->name);
		k[0] = w->shape[2];
		k[1] = w->shape[3];
		nk = 2;
	}
	if (nk == 0)
		return node_err(im, "attribute 'kernel_shape' is missing");
	if (nk != 2)
		return node_err(im, "only 2-D kernels are supported (kernel_shape has %d values)", nk);
	if (ns && ns != 2)
		return node_err(im, "attribute 'strides' has %d values, 2 are needed", ns);
	if (nd && nd != 2)
		return node_err(im, "attribute 'dilations' has %d values, 2 are needed", nd);
	if (np && np != 4)
		return node_err(im, "attribute 'pads' has %d values, 4 are needed", np);
	for (int i = 0; i < 2; i++)
		if (k[i] < 1 || s[i] < 1 || d[i] < 1)
			return node_err(im, "kernel_shape, strides and dilations must be positive");
	for (int i = 0; i < 4; i++)
		if (p[i] < 0)
			return node_err(im, "negative pads are not supported");

	char autopad[16];
	if (attr_str(im, "auto_pad", "NOTSET", autopad, sizeof autopad) < 0)
		return -1;
	if (!strcmp(autopad, "VALID")) {
		memset(p, 0, sizeof p);
	} else if (!strcmp(autopad, "SAME_UPPER") || !strcmp(autopad, "SAME_LOWER")) {
		if (!x)
			return node_err(im, "auto_pad %s needs the input shape, which is unknown", autopad);
		for (int i = 0; i < 2; i++) {
			int64_t in = x->shape[2 + i], out = (in + s[i] - 1) / s[i];
			int64_t total = (out - 1) * s[i] + (k[i] - 1) * d[i] + 1 - in;
			if (total < 0)
				total = 0;
			int64_t small = total / 2, big = total - small;
			p[i] = autopad[5] == 'U' ? small : big;
			p[i + 2] = autopad[5] == 'U' ? big : small;
		}
	} else if (strcmp(autopad, "NOTSET")) {
		return node_err(im, "auto_pad '%s' is not supported", autopad);
	}

	op_set_ints(op, "kernel_shape", 2, k);
	op_set_ints(op, "strides", 2, s);
	op_set_ints(op, "pads", 4, p);
	if (kind != SP_AVGPOOL)
		op_set_ints(op, "dilations", 2, d);
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
		if (attr_int(im, "storage_order", 0, &v) < 0)
			return -1;
		if (v != 0)
			return node_err(im, "storage_order %lld is not supported", (long long)v);
	} else {
		if (attr_bool(im, "count_include_pad", 0, &v) < 0)
			return -1;
		op_set_int(op, "count_include_pad", v != 0);
	}
	return 0;
}

static int cv_conv(struct imp *im, struct ir_op *op) { return cv_spatial(im, op, SP_CONV); }
static int cv_maxpool(struct imp *im, struct ir_op *op) { return cv_spatial(im, op, SP_MAXPOOL); }
static int cv_avgpool(struct imp *im, struct ir_op *op) { return cv_spatial(im, op, SP_AVGPOOL); }

static int cv_batchnorm(struct imp *im, struct ir_op *op)
{
	double eps;
	int64_t v;
	if (attr_epsilon(im, 1e-5, &eps) < 0)
		return -1;
	if (attr_int(im, "spatial", 1, &v) < 0)
		return -1;
	if (v != 1)
		return node_err(im, "spatial %lld is not supported", (long long)v);
	if (attr_int(im, "training_mode", 0, &v) < 0)
		return -1;
	if (v != 0)
		return node_err(im, "training_mode %lld is not supported", (long long)v);
	op_set_float(op, "epsilon", eps);
	return 0;
}

static int import_extra_op(struct imp *im, int k, enum op_type t, int n_in, const int *in,
			   const char *suffix);

/* Clip: bounds from attributes (opset < 11) or constant inputs; absent
 * bounds are -FLT_MAX and FLT_MAX.  Only the data input remains.  Bounds
 * computed at run time make it Max(x, min) followed by Min(., max). */
static int cv_clip(struct imp *im, struct ir_op *op)
{
	double lo = -FLT_MAX, hi = FLT_MAX;
	int dyn_lo = op->n_in > 1 && op->in[1] >= 0 && !im->g->tensors[op->in[1]].data;
	int dyn_hi = op->n_in > 2 && op->in[2] >= 0 && !im->g->tensors[op->in[2]].data;
	if (im->opset >= 11 && (dyn_lo || dyn_hi)) {
		int x = op->in[0], mx = op->n_in > 2 ? op->in[2] : -1, k = (int)(op - im->g->ops);
		if (op->n_in > 1 && op->in[1] >= 0) {
			op->type = OP_MAX;
			op->n_in = 2;
			if (mx >= 0) {
				int in[2] = { -1, mx };
				return import_extra_op(im, k, OP_MIN, 2, in, "clip_min");
			}
			return 0;
		}
		op->type = OP_MIN;
		op->in[1] = mx;
		op->n_in = 2;
		(void)x;
		return 0;
	}
	if (im->opset < 11) {
		if (attr_bound(im, "min", lo, &lo) < 0 || attr_bound(im, "max", hi, &hi) < 0)
			return -1;
	} else {
		if (attr_absent(im, "min") < 0 || attr_absent(im, "max") < 0)
			return -1;
		if (op->n_in > 1 && op->in[1] >= 0 && const_scalar(im, op->in[1], "min", &lo) < 0)
			return -1;
		if (op->n_in > 2 && op->in[2] >= 0 && const_scalar(im, op->in[2], "max", &hi) < 0)
			return -1;
	}
	op->n_in = 1;
	op_set_float(op, "min", lo);
	op_set_float(op, "max", hi);
	return 0;
}

/* Pad: pads and value from attributes (opset < 11) or constant inputs;
 * mode constant, reflect or edge (value is then unused). */
static int cv_pad(struct imp *im, struct ir_op *op)
{
	int64_t pads[2 * IR_MAX_RANK];
	int n;
	double value = 0;
	char mode[16];
	if (attr_str(im, "mode", "constant", mode, sizeof mode) < 0)
		return -1;
	if (strcmp(mode, "constant") && strcmp(mode, "reflect") && strcmp(mode, "edge"))
		return node_err(im, "mode '%s' is not supported (constant, reflect or edge)", mode);
	if (im->opset < 11) {
		if (attr_ints(im, "pads", pads, 2 * IR_MAX_RANK, &n) < 0 ||
		    attr_bound(im, "value", 0, &value) < 0)
			return -1;
	} else {
		if (attr_absent(im, "pads") < 0 || attr_absent(im, "value") < 0)
			return -1;
		if (op->n_in < 2 || op->in[1] < 0)
			return node_err(im, "input pads is missing");
		if (const_ints(im, op->in[1], "pads", pads, 2 * IR_MAX_RANK, &n) < 0)
			return -1;
		if (op->n_in > 2 && op->in[2] >= 0 && const_scalar(im, op->in[2], "constant_value", &value) < 0)
			return -1;
	}
	const struct ir_tensor *x = known_tensor(im, op->in[0]);
	if (x && n != 2 * x->rank)
		return node_err(im, "pads has %d values for a rank-%d input", n, x->rank);
	op->n_in = 1;
	op_set_ints(op, "pads", n, pads);
	op_set_float(op, "value", value);
	op_set_str(op, "mode", mode);
	return 0;
}

/* Reshape: the constant shape input, with 0 and -1 resolved against the
 * input's shape, becomes attribute "shape". */
static int cv_reshape(struct imp *im, struct ir_op *op)
{
	int64_t shape[IR_MAX_RANK], allowzero;
	int n;
	if (attr_bool(im, "allowzero", 0, &allowzero) < 0)
		return -1;
	if (const_ints(im, op->in[1], "shape", shape, IR_MAX_RANK, &n) < 0)
		return -1;
	const struct ir_tensor *x = known_tensor(im, op->in[0]);
	if (!x)
		return node_err(im, "the input shape is unknown");
	int infer_at = -1;
	int64_t rest = 1;
	for (int i = 0; i < n; i++) {
		if (shape[i] == 0 && !allowzero) {
			if (i >= x->rank)
				return node_err(im, "shape[%d] is 0 but the input has rank %d", i, x->rank);
			shape[i] = x->shape[i];
		}
		if (shape[i] == -1) {
			if (infer_at >= 0)
				return node_err(im, "shape has more than one -1");
			infer_at = i;
		} else if (shape[i] < 0) {
			return node_err(im, "shape[%d] is %lld", i, (long long)shape[i]);
		} else {
			rest *= shape[i];
		}
	}
	int64_t numel = tensor_numel(x);
	if (infer_at >= 0) {
		if (rest == 0 || numel % rest)
			return node_err(im, "cannot reshape %lld elements with -1", (long long)numel);
		shape[infer_at] = numel / rest;
	} else if (rest != numel) {
		return node_err(im, "cannot reshape %lld elements to %lld", (long long)numel, (long long)rest);
	}
	op->n_in = 1;
	op_set_ints(op, "shape", n, shape);
	return 0;
}

static int cv_gemm(struct imp *im, struct ir_op *op)
{
	double alpha, beta;
	int64_t ta, tb;
	if (attr_float(im, "alpha", 1, &alpha) < 0 || attr_float(im, "beta", 1, &beta) < 0 ||
	    attr_bool(im, "transA", 0, &ta) < 0 || attr_bool(im, "transB", 0, &tb) < 0)
		return -1;
	op_set_float(op, "alpha", alpha);
	op_set_float(op, "beta", beta);
	op_set_int(op, "transA", ta != 0);
	op_set_int(op, "transB", tb != 0);
	return 0;
}

/* Concat and Flatten: "axis", made non-negative when the rank is known.
 * Flatten's axis may equal the rank. */
static int cv_axis(struct imp *im, struct ir_op *op, int required, int64_t def, int rank_plus)
{
	int64_t axis;
	if (required && !attr_find(im->node, "axis"))
		return node_err(im, "attribute 'axis' is missing");
	if (attr_int(im, "axis", def, &axis) < 0)
		return -1;
	const struct ir_tensor *x = known_tensor(im, op->in[0]);
	if (x) {
		if (axis < -x->rank || axis >= x->rank + rank_plus)
			return node_err(im, "axis %lld is out of range for rank %d", (long long)axis, x->rank);
		if (axis < 0)
			axis += x->rank;
	}
	op_set_int(op, "axis", axis);
	return 0;
}

static int cv_concat(struct imp *im, struct ir_op *op) { return cv_axis(im, op, 1, 0, 0); }
static int cv_flatten(struct imp *im, struct ir_op *op) { return cv_axis(im, op, 0, 1, 1); }

static int cv_cast(struct imp *im, struct ir_op *op)
{
	int64_t to;
	if (attr_int(im, "to", 0, &to) < 0)
		return -1;
	int dt = dtype_from_onnx((int32_t)to);
	if (dt < 0)
		return node_err(im, "cast to %s is not supported", onnx_dtype_name((int32_t)to));
	op_set_str(op, "to", dtype_name((enum ir_dtype)dt));
	return 0;
}


/* ---- converters of the operators added for real networks ---- */

/* Write float attribute name, taken from the node or def. */
static int put_float(struct imp *im, struct ir_op *op, const char *name, double def)
{
	double v;
	if (attr_float(im, name, def, &v) < 0)
		return -1;
	op_set_float(op, name, v);
	return 0;
}

static int put_int(struct imp *im, struct ir_op *op, const char *name, int64_t def)
{
	int64_t v;
	if (attr_int(im, name, def, &v) < 0)
		return -1;
	op_set_int(op, name, v);
	return 0;
}

/* Write 0/1 attribute name, taken from the node or def. */
static int put_bool(struct imp *im, struct ir_op *op, const char *name, int64_t def)
{
	int64_t v;
	if (attr_bool(im, name, def, &v) < 0)
		return -1;
	op_set_int(op, name, v);
	return 0;
}

static int put_epsilon(struct imp *im, struct ir_op *op)
{
	double v;
	if (attr_epsilon(im, 1e-5, &v) < 0)
		return -1;
	op_set_float(op, "epsilon", v);
	return 0;
}

static int cv_alpha1(struct imp *im, struct ir_op *op) { return put_float(im, op, "alpha", 1.0); }
static int cv_leakyrelu(struct imp *im, struct ir_op *op) { return put_float(im, op, "alpha", 0.01); }

static int cv_hardsigmoid(struct imp *im, struct ir_op *op)
{
	return put_float(im, op, "alpha", 0.2) < 0 ? -1 : put_float(im, op, "beta", 0.5);
}

static int cv_selu(struct imp *im, struct ir_op *op)
{
	return put_float(im, op, "alpha", 1.67326319217681884765625) < 0 ? -1
	       : put_float(im, op, "gamma", 1.05070102214813232421875);
}

static int cv_shrink(struct imp *im, struct ir_op *op)
{
	return put_float(im, op, "bias", 0) < 0 ? -1 : put_float(im, op, "lambd", 0.5);
}

static int cv_isinf(struct imp *im, struct ir_op *op)
{
	return put_bool(im, op, "detect_negative", 1) < 0 ? -1 : put_bool(im, op, "detect_positive", 1);
}

static int cv_mod(struct imp *im, struct ir_op *op) { return put_int(im, op, "fmod", 0); }

static int cv_bitshift(struct imp *im, struct ir_op *op)
{
	char dir[16];
	if (attr_str(im, "direction", "", dir, sizeof dir) < 0)
		return -1;
	if (strcmp(dir, "LEFT") && strcmp(dir, "RIGHT"))
		return node_err(im, "direction must be LEFT or RIGHT");
	op_set_str(op, "direction", dir);
	return 0;
}

/* Normalise n axes against rank r (when known) and sort them; refuses
 * repeats and axes out of range. */
static int norm_axes(struct imp *im, int64_t *axes, int n, int r)
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

static int known_rank(const struct imp *im, int t)
{
	const struct ir_tensor *x = known_tensor(im, t);
	return x ? x->rank : -1;
}

/* Axes from the attribute or from constant input idx (dropped), normalised
 * against rank r; *n = -1 when neither is given. */
static int axes_from(struct imp *im, struct ir_op *op, int idx, int64_t *axes, int *n, int r)
{
	const Onnx__AttributeProto *a = attr_find(im->node, "axes");
	*n = -1;
	if (a) {
		if (attr_ints(im, "axes", axes, IR_MAX_RANK, n) < 0)
			return -1;
	} else if (op->n_in > idx && op->in[idx] >= 0) {
		if (const_ints(im, op->in[idx], "axes", axes, IR_MAX_RANK, n) < 0)
			return -1;
	}
	if (op->n_in > idx)
		op->n_in = idx;
	return *n > 0 ? norm_axes(im, axes, *n, r) : 0;
}

/* Reduce*: keepdims, axes (attribute or input), noop_with_empty_axes. */
static int cv_reduce(struct imp *im, struct ir_op *op)
{
	int64_t axes[IR_MAX_RANK], noop;
	int n;
	if (put_bool(im, op, "keepdims", 1) < 0 || attr_bool(im, "noop_with_empty_axes", 0, &noop) < 0)
		return -1;
	if (axes_from(im, op, 1, axes, &n, known_rank(im, op->in[0])) < 0)
		return -1;
	if (n > 0) {
		op_set_ints(op, "axes", n, axes);
	} else if (n == 0 || noop) {
		op_set_ints(op, "axes", 0, axes);
		op_set_int(op, "noop", noop != 0);
	}
	return 0;
}

static int cv_argmax(struct imp *im, struct ir_op *op)
{
	int64_t axis;
	int r = known_rank(im, op->in[0]);
	if (attr_int(im, "axis", 0, &axis) < 0 || norm_axes(im, &axis, 1, r) < 0)
		return -1;
	op_set_int(op, "axis", axis);
	return put_bool(im, op, "keepdims", 1) < 0 ? -1 : put_bool(im, op, "select_last_index", 0);
}

/* Softmax family: before opset 13 the input is flattened to 2-D at axis
 * (default 1); from 13 on it normalises along axis alone (default -1). */
static int cv_softmax(struct imp *im, struct ir_op *op)
{
	int64_t axis;
	int r = known_rank(im, op->in[0]);
	if (attr_int(im, "axis", im->opset < 13 ? 1 : -1, &axis) < 0 || norm_axes(im, &axis, 1, r) < 0)
		return -1;
	op_set_int(op, "axis", axis);
	if (im->opset < 13 && axis != r - 1)
		op_set_int(op, "coerce2d", 1);
	return 0;
}

static int cv_transpose(struct imp *im, struct ir_op *op)
{
	int64_t perm[IR_MAX_RANK];
	int n, r = known_rank(im, op->in[0]);
	if (attr_ints(im, "perm", perm, IR_MAX_RANK, &n) < 0)
		return -1;
	if (!attr_find(im->node, "perm")) {
		if (r < 0)
			return node_err(im, "the input shape is unknown");
		for (n = 0; n < r; n++)
			perm[n] = r - 1 - n;
	}
	op_set_ints(op, "perm", n, perm);
	return 0;
}

/* Squeeze: absent axes squeeze every dimension of size 1. */
static int cv_squeeze(struct imp *im, struct ir_op *op)
{
	int64_t axes[IR_MAX_RANK];
	int n;
	const struct ir_tensor *x = known_tensor(im, op->in[0]);
	if (!x)
		return node_err(im, "the input shape is unknown");
	if (axes_from(im, op, 1, axes, &n, x->rank) < 0)
		return -1;
	if (n < 0)
		for (int d = n = 0; d < x->rank; d++)
			if (x->shape[d] == 1)
				axes[n++] = d;
	op_set_ints(op, "axes", n, axes);
	return 0;
}

static int cv_unsqueeze(struct imp *im, struct ir_op *op)
{
	int64_t axes[IR_MAX_RANK];
	int n, r = known_rank(im, op->in[0]);
	const Onnx__AttributeProto *a = attr_find(im->node, "axes");
	if (r < 0)
		return node_err(im, "the input shape is unknown");
	if (a) {
		if (attr_ints(im, "axes", axes, IR_MAX_RANK, &n) < 0)
			return -1;
	} else if (op->n_in > 1 && op->in[1] >= 0) {
		if (const_ints(im, op->in[1], "axes", axes, IR_MAX_RANK, &n) < 0)
			return -1;
	} else {
		return node_err(im, "axes are missing");
	}
	op->n_in = 1;
	if (norm_axes(im, axes, n, r + n) < 0)
		return -1;
	op_set_ints(op, "axes", n, axes);
	return 0;
}

static int cv_gather(struct imp *im, struct ir_op *op)
{
	int64_t axis;
	if (attr_int(im, "axis", 0, &axis) < 0 || norm_axes(im, &axis, 1, known_rank(im, op->in[0])) < 0)
		return -1;
	op_set_int(op, "axis", axis);
	return 0;
}

/* Slice: starts, ends, axes from attributes (opset < 10) or constant
 * inputs with optional axes and steps. */
static int cv_slice(struct imp *im, struct ir_op *op)
{
	int64_t v[4][IR_MAX_RANK];
	int n[4] = { 0, 0, 0, 0 };
	static const char *const names[4] = { "starts", "ends", "axes", "steps" };
	int r = known_rank(im, op->in[0]);
	if (im->opset < 10) {
		for (int i = 0; i < 3; i++)
			if (attr_ints(im, names[i], v[i], IR_MAX_RANK, &n[i]) < 0)
				return -1;
	} else {
		for (int i = 0; i < 4; i++) {
			if (attr_absent(im, names[i]) < 0)
				return -1;
			if (op->n_in > i + 1 && op->in[i + 1] >= 0 &&
			    const_ints(im, op->in[i + 1], names[i], v[i], IR_MAX_RANK, &n[i]) < 0)
				return -1;
		}
	}
	if (n[0] != n[1] || (n[2] && n[2] != n[0]) || (n[3] && n[3] != n[0]))
		return node_err(im, "starts, ends, axes and steps differ in length");
	if (!n[2])
		for (n[2] = 0; n[2] < n[0]; n[2]++)
			v[2][n[2]] = n[2];
	for (int i = 0; i < n[2]; i++) {
		if (r < 0 || v[2][i] < -r || v[2][i] >= r)
			return node_err(im, "axis out of range or input shape unknown");
		if (v[2][i] < 0)
			v[2][i] += r;
	}
	if (!n[3])
		for (n[3] = 0; n[3] < n[0]; n[3]++)
			v[3][n[3]] = 1;
	op->n_in = 1;
	for (int i = 0; i < 4; i++)
		op_set_ints(op, names[i], n[i], v[i]);
	return 0;
}

static int cv_split(struct imp *im, struct ir_op *op)
{
	int64_t axis;
	int n = 0, cap = op->n_out + 1;   /* one size per output */
	if (attr_int(im, "axis", 0, &axis) < 0 || norm_axes(im, &axis, 1, known_rank(im, op->in[0])) < 0)
		return -1;
	int64_t *split = xcalloc((size_t)cap, sizeof *split);
	if (attr_find(im->node, "split")) {
		if (attr_ints(im, "split", split, cap, &n) < 0)
			goto bad;
	} else if (op->n_in > 1 && op->in[1] >= 0) {
		if (const_ints(im, op->in[1], "split", split, cap, &n) < 0)
			goto bad;
	}
	op->n_in = 1;
	op_set_int(op, "axis", axis);
	if (n)
		op_set_ints(op, "split", n, split);
	free(split);
	return 0;
bad:
	free(split);
	return -1;
}

/* Expand, Tile: the constant second input becomes attribute `name`. */
static int cv_const_list(struct imp *im, struct ir_op *op, const char *name)
{
	int64_t v[IR_MAX_RANK];
	int n;
	if (const_ints(im, op->in[1], name, v, IR_MAX_RANK, &n) < 0)
		return -1;
	op->n_in = 1;
	op_set_ints(op, name, n, v);
	return 0;
}

static int cv_expand(struct imp *im, struct ir_op *op) { return cv_const_list(im, op, "shape"); }
static int cv_tile(struct imp *im, struct ir_op *op) { return cv_const_list(im, op, "repeats"); }

static int cv_depthtospace(struct imp *im, struct ir_op *op)
{
	char mode[8];
	if (put_int(im, op, "blocksize", 0) < 0 || attr_str(im, "mode", "DCR", mode, sizeof mode) < 0)
		return -1;
	if (strcmp(mode, "DCR") && strcmp(mode, "CRD"))
		return node_err(im, "mode '%s' is not supported", mode);
	op_set_str(op, "mode", mode);
	return 0;
}

static int cv_blocksize(struct imp *im, struct ir_op *op) { return put_int(im, op, "blocksize", 0); }

static int cv_shape(struct imp *im, struct ir_op *op)
{
	if (attr_find(im->node, "start") && put_int(im, op, "start", 0) < 0)
		return -1;
	if (attr_find(im->node, "end") && put_int(im, op, "end", 0) < 0)
		return -1;
	return 0;
}

/* ConstantOfShape: the constant shape input and the value tensor become
 * attributes shape, dtype and value (floats) or value_int (integers). */
static int cv_constantofshape(struct imp *im, struct ir_op *op)
{
	int64_t shape[IR_MAX_RANK];
	int n;
	if (const_ints(im, op->in[0], "shape", shape, IR_MAX_RANK, &n) < 0)
		return -1;
	op->n_in = 0;
	op_set_ints(op, "shape", n, shape);
	const Onnx__AttributeProto *a = attr_find(im->node, "value");
	enum ir_dtype dt = DT_F32;
	double fv = 0;
	int64_t iv = 0;
	if (a) {
		struct decoded d;
		if (!a->t || tensor_decode(a->t, &d) < 0 || d.nbytes != dtype_size(d.dt))
			return node_err(im, "value must be a tensor of one element");
		dt = d.dt;
		if (dt == DT_F32 || dt == DT_F16 || dt == DT_BF16) {
			float f;
			dtype_convert(&f, DT_F32, d.data, dt, 1);
			fv = f;
		} else {
			dtype_convert(&iv, DT_I64, d.data, dt, 1);
		}
		free(d.tmp);
	}
	op_set_str(op, "dtype", dtype_name(dt));
	op_set_float(op, "value", fv);
	op_set_int(op, "value_int", iv);
	return 0;
}

/* Resize (opset 10: X, scales; 11+: X, roi, scales, sizes) and Upsample
 * (7: scales attribute; 9: scales input): the output shape is resolved
 * into sizes; scales stay when given, since the coordinate mapping uses
 * them. */
static int cv_resize_common(struct imp *im, struct ir_op *op, const float *scales, int ns,
			    const int64_t *sizes_in, int nz, const float *roi, int nr)
{
	const struct ir_tensor *x = known_tensor(im, op->in[0]);
	if (!x)
		return node_err(im, "the input shape is unknown");
	int64_t sizes[IR_MAX_RANK];
	if (nz) {
		if (nz != x->rank)
			return node_err(im, "sizes has %d values for rank %d", nz, x->rank);
		memcpy(sizes, sizes_in, sizeof(int64_t) * (size_t)nz);
	} else if (ns) {
		if (ns != x->rank)
			return node_err(im, "scales has %d values for rank %d", ns, x->rank);
		for (int d = 0; d < ns; d++) {
			if (!(scales[d] > 0))
				return node_err(im, "scales must be positive");
			sizes[d] = (int64_t)floor((double)x->shape[d] * (double)scales[d]);
		}
		op_set_floats(op, "scales", ns, scales);
	} else {
		return node_err(im, "neither scales nor sizes is given");
	}
	op_set_ints(op, "sizes", x->rank, sizes);
	if (nr)
		op_set_floats(op, "roi", nr, roi);
	op->n_in = 1;
	return 0;
}

/* Constant f32 tensor t as at most max floats. */
static int const_floats(struct imp *im, int t, const char *what, float *v, int max, int *n)
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

static int cv_resize(struct imp *im, struct ir_op *op)
{
	char mode[32], ct[32], nm[32];
	float scales[IR_MAX_RANK], roi[2 * IR_MAX_RANK];
	int64_t sizes[IR_MAX_RANK];
	int ns = 0, nz = 0, nr = 0;
	if (attr_str(im, "mode", "nearest", mode, sizeof mode) < 0 ||
	    attr_str(im, "coordinate_transformation_mode", im->opset < 11 ? "asymmetric" : "half_pixel",
		     ct, sizeof ct) < 0 ||
	    attr_str(im, "nearest_mode", im->opset < 11 ? "simple" : "round_prefer_floor", nm, sizeof nm) < 0 ||
	    put_float(im, op, "cubic_coeff_a", -0.75) < 0 || put_int(im, op, "exclude_outside", 0) < 0 ||
	    put_float(im, op, "extrapolation_value", 0) < 0)
		return -1;
	if (im->opset < 11) {
		if (const_floats(im, op->n_in > 1 ? op->in[1] : -1, "scales", scales, IR_MAX_RANK, &ns) < 0)
			return -1;
	} else {
		if (const_floats(im, op->n_in > 1 ? op->in[1] : -1, "roi", roi, 2 * IR_MAX_RANK, &nr) < 0 ||
		    const_floats(im, op->n_in > 2 ? op->in[2] : -1, "scales", scales, IR_MAX_RANK, &ns) < 0)
			return -1;
		if (op->n_in > 3 && op->in[3] >= 0 &&
		    const_ints(im, op->in[3], "sizes", sizes, IR_MAX_RANK, &nz) < 0)
			return -1;
		if (strcmp(ct, "tf_crop_and_resize"))
			nr = 0;
	}
	op_set_str(op, "mode", mode);
	op_set_str(op, "coordinate_transformation_mode", ct);
	op_set_str(op, "nearest_mode", nm);
	return cv_resize_common(im, op, scales, ns, sizes, nz, roi, nr);
}

static int cv_upsample(struct imp *im, struct ir_op *op)
{
	char mode[32];
	float scales[IR_MAX_RANK];
	int ns = 0;
	if (attr_str(im, "mode", "nearest", mode, sizeof mode) < 0)
		return -1;
	if (im->opset < 9) {
		const Onnx__AttributeProto *a = attr_find(im->node, "scales");
		if (!a || a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS || a->n_floats > IR_MAX_RANK)
			return node_err(im, "attribute 'scales' is missing or malformed");
		ns = (int)a->n_floats;
		memcpy(scales, a->floats, sizeof(float) * (size_t)ns);
	} else if (attr_absent(im, "scales") < 0 ||
		   const_floats(im, op->n_in > 1 ? op->in[1] : -1, "scales", scales, IR_MAX_RANK, &ns) < 0) {
		return -1;
	}
	op->type = OP_RESIZE;
	op_set_str(op, "mode", !strcmp(mode, "bilinear") ? "linear" : mode);
	op_set_str(op, "coordinate_transformation_mode", "asymmetric");
	op_set_str(op, "nearest_mode", "simple");
	return cv_resize_common(im, op, scales, ns, NULL, 0, NULL, 0);
}

/* LayerNormalization: axis made non-negative, epsilon; stash_type 1 only. */
static int cv_layernorm(struct imp *im, struct ir_op *op)
{
	int64_t axis, stash;
	if (attr_int(im, "axis", -1, &axis) < 0 || norm_axes(im, &axis, 1, known_rank(im, op->in[0])) < 0 ||
	    attr_int(im, "stash_type", 1, &stash) < 0 || put_epsilon(im, op) < 0)
		return -1;
	if (stash != 1)
		return node_err(im, "stash_type %lld is not supported", (long long)stash);
	op_set_int(op, "axis", axis);
	return 0;
}

static int cv_epsilon(struct imp *im, struct ir_op *op) { return put_epsilon(im, op); }

static int cv_lrn(struct imp *im, struct ir_op *op)
{
	if (!attr_find(im->node, "size"))
		return node_err(im, "attribute 'size' is missing");
	return put_int(im, op, "size", 1) < 0 || put_float(im, op, "alpha", 1e-4) < 0 ||
	       put_float(im, op, "beta", 0.75) < 0 || put_float(im, op, "bias", 1.0) < 0 ? -1 : 0;
}

static int cv_lpnorm(struct imp *im, struct ir_op *op)
{
	int64_t axis;
	if (attr_int(im, "axis", -1, &axis) < 0 || norm_axes(im, &axis, 1, known_rank(im, op->in[0])) < 0)
		return -1;
	op_set_int(op, "axis", axis);
	return put_int(im, op, "p", 2);
}

static int cv_mvn(struct imp *im, struct ir_op *op)
{
	int64_t axes[IR_MAX_RANK] = { 0, 2, 3 };
	int n = 3;
	if (attr_find(im->node, "axes") && attr_ints(im, "axes", axes, IR_MAX_RANK, &n) < 0)
		return -1;
	if (norm_axes(im, axes, n, known_rank(im, op->in[0])) < 0)
		return -1;
	op_set_ints(op, "axes", n, axes);
	return 0;
}

/* Dropout at inference is Identity; its mask output is a constant of
 * ones. */
static int cv_dropout(struct imp *im, struct ir_op *op)
{
	if (op->n_in > 2 && op->in[2] >= 0) {
		const struct ir_tensor *tm = &im->g->tensors[op->in[2]];
		if (!tm->data || tensor_numel(tm) != 1)
			return node_err(im, "training_mode must be a constant scalar");
		if (dtype_get(tm->data, tm->dtype, 0) != 0)
			return node_err(im, "training_mode is not supported");
	}
	op->type = OP_IDENTITY;
	op->n_in = 1;
	if (op->n_out > 1) {
		const struct ir_tensor *x = known_tensor(im, op->in[0]);
		if (!x)
			return node_err(im, "the input shape is unknown");
		struct ir_tensor *m = &im->g->tensors[op->out[1]];
		m->dtype = DT_BOOL;
		m->rank = x->rank;
		memcpy(m->shape, x->shape, sizeof m->shape);
		size_t nb = tensor_bytes(m);
		m->data = xaligned(nb ? nb : 1);
		memset(m->data, 1, nb ? nb : 1);
		m->nbytes = nb;
		m->owns_data = 1;
		set_known(im, op->out[1]);
		op->n_out = 1;
	}
	return 0;
}

/* ---- index operators, ConvTranspose ---- */

static int cv_axis0(struct imp *im, struct ir_op *op)
{
	int64_t axis;
	if (attr_int(im, "axis", 0, &axis) < 0 || norm_axes(im, &axis, 1, known_rank(im, op->in[0])) < 0)
		return -1;
	op_set_int(op, "axis", axis);
	return 0;
}

static int put_reduction(struct imp *im, struct ir_op *op)
{
	char red[16];
	if (attr_str(im, "reduction", "none", red, sizeof red) < 0)
		return -1;
	if (strcmp(red, "none") && strcmp(red, "add") && strcmp(red, "mul"))
		return node_err(im, "reduction '%s' is not supported", red);
	op_set_str(op, "reduction", red);
	return 0;
}

static int cv_scatterelements(struct imp *im, struct ir_op *op)
{
	op->type = OP_SCATTERELEMENTS;
	return cv_axis0(im, op) < 0 ? -1 : put_reduction(im, op);
}

static int cv_gathernd(struct imp *im, struct ir_op *op) { return put_int(im, op, "batch_dims", 0); }
static int cv_scatternd(struct imp *im, struct ir_op *op) { return put_reduction(im, op); }

/* OneHot: the constant depth becomes an attribute; values stay input 1. */
static int cv_onehot(struct imp *im, struct ir_op *op)
{
	double depth;
	if (const_scalar(im, op->in[1], "depth", &depth) < 0)
		return -1;
	int64_t axis;
	int r = known_rank(im, op->in[0]);
	if (attr_int(im, "axis", -1, &axis) < 0 || norm_axes(im, &axis, 1, r < 0 ? r : r + 1) < 0)
		return -1;
	op->in[1] = op->in[2];
	op->n_in = 2;
	op_set_int(op, "depth", (int64_t)depth);
	op_set_int(op, "axis", axis);
	return 0;
}

/* TopK: k from the attribute (opset < 10) or the constant input. */
static int cv_topk(struct imp *im, struct ir_op *op)
{
	int64_t kv[1], axis;
	int n = 1;
	if (im->opset < 10) {
		if (attr_int(im, "k", -1, &kv[0]) < 0)
			return -1;
	} else if (const_ints(im, op->in[1], "K", kv, 1, &n) < 0) {
		return -1;
	}
	if (n != 1)
		return node_err(im, "K must hold one value");
	if (attr_int(im, "axis", -1, &axis) < 0 || norm_axes(im, &axis, 1, known_rank(im, op->in[0])) < 0)
		return -1;
	op->n_in = 1;
	op_set_int(op, "k", kv[0]);
	op_set_int(op, "axis", axis);
	return put_int(im, op, "largest", 1) < 0 ? -1 : put_int(im, op, "sorted", 1);
}

static int cv_cumsum(struct imp *im, struct ir_op *op)
{
	double axis;
	if (const_scalar(im, op->in[1], "axis", &axis) < 0)
		return -1;
	int64_t a = (int64_t)axis;
	if (norm_axes(im, &a, 1, known_rank(im, op->in[0])) < 0)
		return -1;
	op->n_in = 1;
	op_set_int(op, "axis", a);
	return put_int(im, op, "exclusive", 0) < 0 ? -1 : put_int(im, op, "reverse", 0);
}

static int cv_trilu(struct imp *im, struct ir_op *op)
{
	double kk = 0;
	if (op->n_in > 1 && op->in[1] >= 0 && const_scalar(im, op->in[1], "k", &kk) < 0)
		return -1;
	op->n_in = 1;
	op_set_int(op, "k", (int64_t)kk);
	return put_int(im, op, "upper", 1);
}

static int cv_eyelike(struct imp *im, struct ir_op *op)
{
	int64_t dt;
	if (put_int(im, op, "k", 0) < 0 || attr_int(im, "dtype", -1, &dt) < 0)
		return -1;
	if (dt >= 0) {
		int d = dtype_from_onnx((int32_t)dt);
		if (d < 0)
			return node_err(im, "dtype %s is not supported", onnx_dtype_name((int32_t)dt));
		op_set_str(op, "dtype", dtype_name((enum ir_dtype)d));
	}
	return 0;
}

/* The loss operators: reduction, and ignore_index only when given. */
static int cv_loss(struct imp *im, struct ir_op *op)
{
	char red[16];
	if (attr_str(im, "reduction", "mean", red, sizeof red) < 0)
		return -1;
	op_set_str(op, "reduction", red);
	if (attr_find(im->node, "ignore_index"))
		return put_int(im, op, "ignore_index", 0);
	return 0;
}

/* CastLike: a Cast to the type of input 1. */
static int cv_castlike(struct imp *im, struct ir_op *op)
{
	op->type = OP_CAST;
	op_set_str(op, "to", dtype_name(im->g->tensors[op->in[1]].dtype));
	op->n_in = 1;
	return 0;
}

/* ConvTranspose: 2-D (1-D through as2d); output_shape and auto_pad are
 * resolved into pads [top, left, bottom, right] as the ONNX spec says. */
static int cv_convtranspose(struct imp *im, struct ir_op *op)
{
	int64_t k[2] = { 0, 0 }, s[2] = { 1, 1 }, d[2] = { 1, 1 }, p[4] = { 0, 0, 0, 0 };
	int64_t opad[2] = { 0, 0 }, os[4], grp;
	int nk, ns, nd, np, no, nos;
	const struct ir_tensor *x = known_tensor(im, op->in[0]), *w = &im->g->tensors[op->in[1]];
	if (!x || x->rank != 4 || w->rank != 4)
		return node_err(im, "only 2-D (NCHW) inputs are supported");
	if (attr_spatial(im, "kernel_shape", 1, k, 2, &nk) < 0 ||
	    attr_spatial(im, "strides", 1, s, 2, &ns) < 0 ||
	    attr_spatial(im, "dilations", 1, d, 2, &nd) < 0 ||
	    attr_spatial(im, "pads", 0, p, 4, &np) < 0 ||
	    attr_spatial(im, "output_padding", 0, opad, 2, &no) < 0 ||
	    attr_spatial(im, "output_shape", 1, os, 4, &nos) < 0 || attr_int(im, "group", 1, &grp) < 0)
		return -1;
	if (grp < 1 || grp > SPATIAL_MAX)
		return node_err(im, "attribute 'group' value %lld is out of range [1, %d]",
				(long long)grp, SPATIAL_MAX);
	if (im->as2d) {
		if (nk > 1 || ns > 1 || nd > 1 || no > 1 || nos > 1 || (np && np != 2))
			return node_err(im, "a 1-D node needs 1-value lists and 2-value pads");
		k[1] = k[0], s[1] = s[0], d[1] = d[0], opad[1] = opad[0], os[1] = os[0];
		k[0] = s[0] = d[0] = 1, opad[0] = 0, os[0] = 1;
		nk = nk ? 2 : 0, nos = nos ? 2 : 0;
		if (np) {
			int64_t p0 = p[0], p1 = p[1];
			p[0] = 0, p[1] = p0, p[2] = 0, p[3] = p1;
		}
	}
	if (nos == 4) {
		os[0] = os[2];
		os[1] = os[3];
		nos = 2;
	}
	if (!nk)
		k[0] = w->shape[2], k[1] = w->shape[3];
	char autopad[16];
	if (attr_str(im, "auto_pad", "NOTSET", autopad, sizeof autopad) < 0)
		return -1;
	int same = !strncmp(autopad, "SAME_", 5);
	if (!strcmp(autopad, "VALID"))
		memset(p, 0, sizeof p);
	if (nos || same) {
		for (int i = 0; i < 2; i++) {
			int64_t in = x->shape[2 + i], out = nos ? os[i] : in * s[i];
			int64_t total = s[i] * (in - 1) + opad[i] + (k[i] - 1) * d[i] + 1 - out;
			if (total < 0)
				return node_err(im, "output_shape is larger than the convolution gives");
			int upper = !strcmp(autopad, "SAME_UPPER");
			p[i] = upper ? total / 2 : total - total / 2;
			p[i + 2] = upper ? total - total / 2 : total / 2;
		}
	}
	op_set_ints(op, "kernel_shape", 2, k);
	op_set_ints(op, "strides", 2, s);
	op_set_ints(op, "dilations", 2, d);
	op_set_ints(op, "pads", 4, p);
	op_set_ints(op, "output_padding", 2, opad);
	op_set_int(op, "group", grp);
	return 0;
}

/* ---- recurrent operators ---- */

/* LSTM, GRU, RNN: direction, hidden_size (from R when absent), layout,
 * clip when given, and the activations joined with commas (the defaults
 * written out); trailing absent optional inputs are dropped. */
static int cv_rnn(struct imp *im, struct ir_op *op)
{
	char dir[32];
	int64_t hidden, layout;
	if (attr_str(im, "direction", "forward", dir, sizeof dir) < 0 ||
	    attr_int(im, "hidden_size", -1, &hidden) < 0 || attr_int(im, "layout", 0, &layout) < 0)
		return -1;
	const struct ir_tensor *r = known_tensor(im, op->in[2]);
	if (hidden < 0 && (!r || r->rank != 3))
		return node_err(im, "hidden_size is absent and R's shape is unknown");
	op_set_str(op, "direction", dir);
	op_set_int(op, "hidden_size", hidden < 0 ? r->shape[2] : hidden);
	op_set_int(op, "layout", layout);
	if (attr_find(im->node, "clip") && put_float(im, op, "clip", 0) < 0)
		return -1;
	if (op->type == OP_GRU && put_int(im, op, "linear_before_reset", 0) < 0)
		return -1;
	if (op->type == OP_LSTM && put_int(im, op, "input_forget", 0) < 0)
		return -1;
	const Onnx__AttributeProto *a = attr_find(im->node, "activations");
	char acts[256] = "";
	if (!a) {
		snprintf(acts, sizeof acts, "%s", op->type == OP_LSTM ? "Sigmoid,Tanh,Tanh"
						  : op->type == OP_GRU ? "Sigmoid,Tanh" : "Tanh");
	} else if (a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS) {
		return attr_type_err(im, "activations", "a list of strings");
	} else {
		size_t used = 0;
		for (size_t i = 0; i < a->n_strings; i++) {
			size_t len = a->strings[i].len;
			if (memchr(a->strings[i].data, ',', len) || used + len + 2 > sizeof acts)
				return node_err(im, "attribute 'activations' is malformed");
			used += (size_t)snprintf(acts + used, sizeof acts - used, "%s%.*s", i ? "," : "",
						 (int)len, (const char *)a->strings[i].data);
		}
	}
	op_set_str(op, "activations", acts);
	/* constant inputs equal to their defaults are dropped, so that the op
	 * fits a compute command's operands: a zero B, initial_h, initial_c or
	 * P, and sequence_lens that are all the full length */
	const struct ir_tensor *x = known_tensor(im, op->in[0]);
	int64_t seq = x && x->rank == 3 ? x->shape[layout ? 1 : 0] : -1;
	for (int i = 3; i < op->n_in; i++) {
		const struct ir_tensor *t = op->in[i] >= 0 ? &im->g->tensors[op->in[i]] : NULL;
		if (!t || !t->data)
			continue;
		int64_t n = tensor_numel(t), j = 0;
		double dflt = i == 4 ? (double)seq : 0;
		while (j < n && dtype_get(t->data, t->dtype, j) == dflt)
			j++;
		if (j == n && (i != 4 || seq >= 0))
			op->in[i] = -1;
	}
	while (op->n_in > 3 && op->in[op->n_in - 1] < 0)
		op->n_in--;
	return 0;
}

/* What the importer accepts for each ONNX operator.  attrs lists every
 * attribute it understands (others are refused); convert writes the IR
 * attributes and may drop inputs that became attributes, or change the op
 * (Upsample becomes Resize, Dropout Identity, a Clip with bounds computed
 * at run time Max and Min). */
struct node_rule {
	const char *onnx;                  /* ONNX op_type */
	int min_in, max_in;                /* input count before rewriting */
	const char *attrs[9];
	int (*convert)(struct imp *im, struct ir_op *op);
	const char *ir;                    /* IR op name, when not the ONNX name */
	int max_out;                       /* outputs accepted (0: one) */
};

#define ANY (1 << 16)
#define UNARY(name) { name, 1, 1, { 0 }, NULL, NULL, 0 }
#define BINARY(name) { name, 2, 2, { 0 }, NULL, NULL, 0 }
#define VARIADIC(name) { name, 1, ANY, { 0 }, NULL, NULL, 0 }
#define REDUCE(name) { name, 1, 2, { "axes", "keepdims", "noop_with_empty_axes" }, cv_reduce, NULL, 0 }

static const struct node_rule node_rules[] = {
	{ "Conv", 2, 3, { "auto_pad", "dilations", "group", "kernel_shape", "pads", "strides" }, cv_conv, NULL, 0 },
	{ "BatchNormalization", 5, 5, { "epsilon", "momentum", "spatial", "training_mode" }, cv_batchnorm, NULL, 0 },
	UNARY("Relu"),
	{ "Clip", 1, 3, { "min", "max" }, cv_clip, NULL, 0 },
	{ "MaxPool", 1, 1, { "auto_pad", "ceil_mode", "dilations", "kernel_shape", "pads",
			     "storage_order", "strides" }, cv_maxpool, NULL, 0 },
	{ "AveragePool", 1, 1, { "auto_pad", "ceil_mode", "count_include_pad", "kernel_shape",
				 "pads", "strides" }, cv_avgpool, NULL, 0 },
	UNARY("GlobalAveragePool"),
	BINARY("Add"),
	BINARY("Mul"),
	{ "Concat", 1, ANY, { "axis" }, cv_concat, NULL, 0 },
	{ "Pad", 1, 3, { "mode", "pads", "value" }, cv_pad, NULL, 0 },
	{ "Flatten", 1, 1, { "axis" }, cv_flatten, NULL, 0 },
	{ "Reshape", 2, 2, { "allowzero" }, cv_reshape, NULL, 0 },
	{ "Gemm", 2, 3, { "alpha", "beta", "transA", "transB" }, cv_gemm, NULL, 0 },
	BINARY("MatMul"),
	UNARY("Identity"),
	{ "Cast", 1, 1, { "to" }, cv_cast, NULL, 0 },
	{ "Dropout", 1, 3, { "ratio", "seed" }, cv_dropout, "Identity", 2 },
	/* unary */
	UNARY("Sqrt"), UNARY("Exp"), UNARY("Log"), UNARY("Erf"), UNARY("Tanh"), UNARY("Sigmoid"),
	UNARY("HardSwish"), UNARY("Neg"), UNARY("Abs"), UNARY("Reciprocal"), UNARY("Floor"),
	UNARY("Ceil"), UNARY("Round"), UNARY("Sign"), UNARY("Softplus"), UNARY("Softsign"),
	UNARY("Sin"), UNARY("Cos"), UNARY("Tan"), UNARY("Asin"), UNARY("Acos"), UNARY("Atan"),
	UNARY("Sinh"), UNARY("Cosh"), UNARY("Asinh"), UNARY("Acosh"), UNARY("Atanh"),
	UNARY("Not"), UNARY("IsNaN"),
	{ "HardSigmoid", 1, 1, { "alpha", "beta" }, cv_hardsigmoid, NULL, 0 },
	{ "Elu", 1, 1, { "alpha" }, cv_alpha1, NULL, 0 },
	{ "Selu", 1, 1, { "alpha", "gamma" }, cv_selu, NULL, 0 },
	{ "LeakyRelu", 1, 1, { "alpha" }, cv_leakyrelu, NULL, 0 },
	{ "Celu", 1, 1, { "alpha" }, cv_alpha1, NULL, 0 },
	{ "ThresholdedRelu", 1, 1, { "alpha" }, cv_alpha1, NULL, 0 },
	{ "Shrink", 1, 1, { "bias", "lambd" }, cv_shrink, NULL, 0 },
	{ "IsInf", 1, 1, { "detect_negative", "detect_positive" }, cv_isinf, NULL, 0 },
	/* elementwise of several inputs */
	BINARY("Sub"), BINARY("Div"), BINARY("Pow"), BINARY("Equal"), BINARY("Greater"),
	BINARY("Less"), BINARY("GreaterOrEqual"), BINARY("LessOrEqual"), BINARY("And"),
	BINARY("Or"), BINARY("Xor"), BINARY("PRelu"),
	VARIADIC("Max"), VARIADIC("Min"), VARIADIC("Sum"), VARIADIC("Mean"),
	{ "Mod", 2, 2, { "fmod" }, cv_mod, NULL, 0 },
	{ "BitShift", 2, 2, { "direction" }, cv_bitshift, NULL, 0 },
	{ "Where", 3, 3, { 0 }, NULL, NULL, 0 },
	/* reductions */
	REDUCE("ReduceMean"), REDUCE("ReduceMax"), REDUCE("ReduceMin"), REDUCE("ReduceSum"),
	REDUCE("ReduceProd"), REDUCE("ReduceL1"), REDUCE("ReduceL2"), REDUCE("ReduceSumSquare"),
	REDUCE("ReduceLogSum"), REDUCE("ReduceLogSumExp"),
	{ "ArgMax", 1, 1, { "axis", "keepdims", "select_last_index" }, cv_argmax, NULL, 0 },
	{ "ArgMin", 1, 1, { "axis", "keepdims", "select_last_index" }, cv_argmax, NULL, 0 },
	{ "Softmax", 1, 1, { "axis" }, cv_softmax, NULL, 0 },
	{ "LogSoftmax", 1, 1, { "axis" }, cv_softmax, NULL, 0 },
	{ "Hardmax", 1, 1, { "axis" }, cv_softmax, NULL, 0 },
	/* data movement and shapes */
	{ "Transpose", 1, 1, { "perm" }, cv_transpose, NULL, 0 },
	{ "Squeeze", 1, 2, { "axes" }, cv_squeeze, NULL, 0 },
	{ "Unsqueeze", 1, 2, { "axes" }, cv_unsqueeze, NULL, 0 },
	{ "Gather", 2, 2, { "axis" }, cv_gather, NULL, 0 },
	{ "Slice", 1, 5, { "starts", "ends", "axes" }, cv_slice, NULL, 0 },
	{ "Split", 1, 2, { "axis", "split" }, cv_split, NULL, INT_MAX },
	{ "Expand", 2, 2, { 0 }, cv_expand, NULL, 0 },
	{ "Tile", 2, 2, { 0 }, cv_tile, NULL, 0 },
	{ "DepthToSpace", 1, 1, { "blocksize", "mode" }, cv_depthtospace, NULL, 0 },
	{ "SpaceToDepth", 1, 1, { "blocksize" }, cv_blocksize, NULL, 0 },
	{ "Shape", 1, 1, { "start", "end" }, cv_shape, NULL, 0 },
	UNARY("Size"),
	{ "ConstantOfShape", 1, 1, { "value" }, cv_constantofshape, NULL, 0 },
	{ "Range", 3, 3, { 0 }, NULL, NULL, 0 },
	{ "Resize", 1, 4, { "coordinate_transformation_mode", "cubic_coeff_a", "exclude_outside",
			    "extrapolation_value", "mode", "nearest_mode" }, cv_resize, NULL, 0 },
	{ "Upsample", 1, 2, { "mode", "scales" }, cv_upsample, "Resize", 0 },
	/* normalisation */
	{ "LayerNormalization", 2, 3, { "axis", "epsilon", "stash_type" }, cv_layernorm, NULL, 3 },
	{ "InstanceNormalization", 3, 3, { "epsilon" }, cv_epsilon, NULL, 0 },
	{ "LRN", 1, 1, { "alpha", "beta", "bias", "size" }, cv_lrn, NULL, 0 },
	{ "LpNormalization", 1, 1, { "axis", "p" }, cv_lpnorm, NULL, 0 },
	{ "MeanVarianceNormalization", 1, 1, { "axes" }, cv_mvn, NULL, 0 },
	/* index operators, ConvTranspose, GlobalMaxPool */
	{ "GatherElements", 2, 2, { "axis" }, cv_axis0, NULL, 0 },
	{ "ScatterElements", 3, 3, { "axis", "reduction" }, cv_scatterelements, NULL, 0 },
	{ "Scatter", 3, 3, { "axis" }, cv_scatterelements, "ScatterElements", 0 },
	{ "GatherND", 2, 2, { "batch_dims" }, cv_gathernd, NULL, 0 },
	{ "ScatterND", 3, 3, { "reduction" }, cv_scatternd, NULL, 0 },
	{ "OneHot", 3, 3, { "axis" }, cv_onehot, NULL, 0 },
	{ "TopK", 1, 2, { "axis", "k", "largest", "sorted" }, cv_topk, NULL, 2 },
	{ "CumSum", 2, 2, { "exclusive", "reverse" }, cv_cumsum, NULL, 0 },
	{ "Trilu", 1, 2, { "upper" }, cv_trilu, NULL, 0 },
	{ "EyeLike", 1, 1, { "dtype", "k" }, cv_eyelike, NULL, 0 },
	{ "CastLike", 2, 2, { 0 }, cv_castlike, "Cast", 0 },
	{ "ConvTranspose", 2, 3, { "auto_pad", "dilations", "group", "kernel_shape", "output_padding",
				   "output_shape", "pads", "strides" }, cv_convtranspose, NULL, 0 },
	UNARY("GlobalMaxPool"),
	{ "NegativeLogLikelihoodLoss", 2, 3, { "ignore_index", "reduction" }, cv_loss, NULL, 0 },
	{ "SoftmaxCrossEntropyLoss", 2, 3, { "ignore_index", "reduction" }, cv_loss, NULL, 2 },
	/* recurrent */
	{ "LSTM", 3, 8, { "activations", "clip", "direction", "hidden_size", "input_forget", "layout" },
	  cv_rnn, NULL, 3 },
	{ "GRU", 3, 6, { "activations", "clip", "direction", "hidden_size", "layout",
			 "linear_before_reset" }, cv_rnn, NULL, 2 },
	{ "RNN", 3, 6, { "activations", "clip", "direction", "hidden_size", "layout" }, cv_rnn, NULL, 2 },
};

int onnx_supported_ops(const char **names, int max)
{
	static const char *const special[] = { "Constant", "Einsum" };   /* import_node */
	int n = 0;
	for (size_t i = 0; i < ARRAY_LEN(special); i++, n++)
		if (n < max)
			names[n] = special[i];
	for (size_t i = 0; i < ARRAY_LEN(node_rules); i++, n++)
		if (n < max)
			names[n] = node_rules[i].onnx;
	for (int i = 1; i < n && i < max; i++)
		for (int j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
			const char *t = names[j];
			names[j] = names[j - 1];
			names[j - 1] = t;
		}
	return n;
}

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
	map_put(&im->tensors, out, k);
	return 0;
}

/* Add an op of type t after op k of the node being imported: op k writes a
 * new tensor instead of its output 0, which the new op writes; the new op
 * reads that tensor where in[] holds -1.  Returns the new op's index. */
static int import_extra_op(struct imp *im, int k, enum op_type t, int n_in, const int *in,
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

/* Kernels that take f32 only (the other ops check dtypes in infer). */
static int f32_only(enum op_type t)
{
	switch (t) {
	case OP_CONV: case OP_BATCHNORM: case OP_SCALE: case OP_RELU: case OP_CLIP:
	case OP_MAXPOOL: case OP_AVGPOOL: case OP_GAVGPOOL: case OP_ADD: case OP_MUL:
	case OP_GEMM: case OP_MATMUL: case OP_GMAXPOOL:
		return 1;
	default:
		return 0;
	}
}

/* Infer the ops that the node being imported added, from op FIRST on:
 * later nodes need shapes (auto_pad, Reshape's 0 and -1); then fold what is
 * constant, and refuse dtypes no kernel takes. */
static int infer_node_ops(struct imp *im, int first)
{
	struct ir_graph *g = im->g;
	for (int i = first; i < g->n_ops; i++) {
		struct ir_op *op = &g->ops[i];
		const struct op_def *def = op_defs[op->type];
		if (!def->infer || def->infer(g, op) < 0)
			return def->infer ? err_prefix("'%s'", im->path) : node_err(im, "no shape inference");
		for (int j = 0; j < op->n_out; j++)
			set_known(im, op->out[j]);
		/* Folded whatever its size; graph_compact() drops the op. */
		int f = pass_fold_op(g, i, SIZE_MAX);
		if (f < 0)
			return err_prefix("'%s'", im->path);
		if (f || !f32_only(op->type))
			continue;
		for (int j = 0; j < op->n_in + op->n_out; j++) {
			int ti = j < op->n_in ? op->in[j] : op->out[j - op->n_in];
			if (ti >= 0 && g->tensors[ti].dtype != DT_F32)
				return node_err(im, "dtype %s is not supported (f32 only)",
						dtype_name(g->tensors[ti].dtype));
		}
	}
	return 0;
}

/* Einsum has no op of its own: lib/onnx_einsum.c writes it as ReduceSum,
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
	map_put(&im->tensors, out0, y);
	int rc = onnx_einsum(im->g, im->node_name, (const char *)a->s.data, a->s.len,
			     (int)n->n_input, in, y);
	free(in);
	if (rc < 0)
		return err_prefix("'%s': node '%s' (Einsum)", im->path, im->node_name);
	return infer_node_ops(im, first);
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

	if (n->domain && *n->domain && strcmp(n->domain, "ai.onnx"))
		return node_err(im, "unsupported domain '%s'", n->domain);
	if (!*out0)
		return node_err(im, "the node has no output");
	if (map_get(&im->tensors, out0) >= 0 || map_get(&im->inits, out0) >= 0)
		return node_err(im, "tensor '%s' is defined twice", out0);
	if (!strcmp(type, "Constant")) {
		for (size_t i = 1; i < n->n_output; i++)
			if (n->output[i] && *n->output[i])
				return node_err(im, "optional output '%s' is not supported", n->output[i]);
		return import_constant(im, out0);
	}
	if (!strcmp(type, "Einsum"))
		return import_einsum(im, out0);

	const struct node_rule *r = NULL;
	for (size_t i = 0; i < ARRAY_LEN(node_rules); i++)
		if (!strcmp(node_rules[i].onnx, type))
			r = &node_rules[i];
	int t = r ? op_type_from_name(r->ir ? r->ir : type) : -1;
	if (!r || t < 0)
		return node_err(im, "unsupported operator");
	int n_out = 0, max_out = r->max_out ? r->max_out : 1;
	for (size_t i = 0; i < n->n_output; i++)
		if (n->output[i] && *n->output[i]) {
			if ((int)i >= max_out)
				return node_err(im, "optional output '%s' is not supported", n->output[i]);
			if (i && (map_get(&im->tensors, n->output[i]) >= 0 ||
				  map_get(&im->inits, n->output[i]) >= 0))
				return node_err(im, "tensor '%s' is defined twice", n->output[i]);
			n_out = (int)i + 1;
		}
	for (size_t i = 0; i < n->n_attribute; i++) {
		const char *an = n->attribute[i]->name ? n->attribute[i]->name : "";
		int ok = 0;
		for (int j = 0; r->attrs[j] && !ok; j++)
			ok = !strcmp(r->attrs[j], an);
		if (!ok)
			return node_err(im, "attribute '%s' is not supported", an);
	}
	if ((int)n->n_input < r->min_in || n->n_input > (size_t)r->max_in)
		return node_err(im, "%zu inputs, expected %d to %d", n->n_input, r->min_in, r->max_in);

	int *in = xmalloc(sizeof(int) * (n->n_input + 1));
	/* Identity of a constant is that constant (PyTorch shares weights
	 * this way); its output name stays only when it is a graph output. */
	if (t == OP_IDENTITY && map_get(&im->outputs, out0) < 0) {
		if (resolve_input(im, n->input[0], &in[0]) < 0) {
			free(in);
			return -1;
		}
		if (in[0] >= 0 && im->g->tensors[in[0]].data) {
			map_put(&im->tensors, out0, in[0]);
			free(in);
			return 0;
		}
	}
	for (size_t i = 0; i < n->n_input; i++) {
		if (resolve_input(im, n->input[i], &in[i]) < 0) {
			free(in);
			return -1;
		}
		if (in[i] < 0 && (int)i < r->min_in) {
			free(in);
			return node_err(im, "input %zu is required", i);
		}
	}
	struct ir_graph *g = im->g;
	int first = g->n_ops;
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
		if (op_defs[OP_UNSQUEEZE]->infer(g, &g->ops[u]) < 0) {
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
		}
	}
	int *outs = xcalloc((size_t)n_out + 1, sizeof *outs);
	for (int i = 0; i < n_out; i++) {
		const char *on = n->output[i] && *n->output[i] ? n->output[i] : NULL;
		char base[512];
		snprintf(base, sizeof base, "%s_unused_%d", im->node_name, i);
		char *name = on ? NULL : graph_unique_name(g, base, 1);
		outs[i] = graph_add_tensor(g, on ? on : name, DT_F32, 0, NULL);
		free(name);
		if (on)
			map_put(&im->tensors, on, outs[i]);
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
	return infer_node_ops(im, first);
}

/* ---- graph ---- */

/* The shape given for input name, or NULL. */
static const struct onnx_input_shape *input_shape(const struct imp *im, const char *name)
{
	for (int i = 0; i < im->n_shapes; i++)
		if (strlen(name) == im->shapes[i].name_len &&
		    !memcmp(name, im->shapes[i].name, im->shapes[i].name_len))
			return &im->shapes[i];
	return NULL;
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
			    d->dim_value >= 1;
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
		int found = 0;
		for (size_t i = 0; i < gp->n_input && !found; i++) {
			const char *n = gp->input[i]->name ? gp->input[i]->name : "";
			found = map_get(&im->inits, n) < 0 && strlen(n) == s->name_len &&
				!memcmp(n, s->name, s->name_len);
		}
		if (!found)
			return err_set("'%s': --shape names '%.*s', which is not a graph input",
				       im->path, (int)s->name_len, s->name);
		for (int j = 0; j < k; j++)
			if (im->shapes[j].name_len == s->name_len &&
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
		    d->dim_value >= 1 && d->dim_value != c->shape[i])
			return err_set("'%s': input '%s': the --bind array has dimension %zu of %lld, "
				       "the model declares %lld", im->path, name, i,
				       (long long)c->shape[i], (long long)d->dim_value);
	}
	return 0;
}

/* Nonzero if a tensor of type dt and this shape (dimensions >= 1) would
 * take more than 2^40 bytes; computed without overflow. */
static int input_too_large(int dt, int rank, const int64_t *shape)
{
	const uint64_t limit = (uint64_t)1 << 40;
	uint64_t bytes = dtype_size((enum ir_dtype)dt);
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
	if (map_get(&im->tensors, name) >= 0)
		return err_set("'%s': input '%s' is defined twice", im->path, name);
	if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type)
		return err_set("'%s': input '%s' is not a tensor", im->path, name);
	const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
	int dt = dtype_from_onnx(tt->elem_type);
	if (dt < 0)
		return err_set("'%s': input '%s': data type %s is not supported",
			       im->path, name, onnx_dtype_name(tt->elem_type));
	const struct npz_array *c = im->consts ? npz_find(im->consts, name) : NULL;
	if (c && input_shape(im, name))
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
		map_put(&im->tensors, name, k);
		return 0;
	}
	const struct onnx_input_shape *given = input_shape(im, name);
	if (!tt->shape && !given)
		return err_set("'%s': input '%s' has no shape: give it with --shape %s=D0,D1,...",
			       im->path, name, name);
	size_t rank = tt->shape ? tt->shape->n_dim : (size_t)given->rank;
	if (rank > IR_MAX_RANK)
		return err_set("'%s': input '%s': rank %zu exceeds %d", im->path, name,
			       rank, IR_MAX_RANK);
	if (given && tt->shape && (size_t)given->rank != rank)
		return err_set("'%s': input '%s': --shape gives %d dimensions, the model declares %zu",
			       im->path, name, given->rank, rank);
	int64_t shape[IR_MAX_RANK];
	for (size_t i = 0; i < rank; i++) {
		const Onnx__TensorShapeProto__Dimension *d = tt->shape ? tt->shape->dim[i] : NULL;
		int fixed = d && d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
			    d->dim_value >= 1;
		if (fixed && given && given->shape[i] != d->dim_value)
			return err_set("'%s': input '%s': --shape gives dimension %zu as %lld, the model "
				       "declares %lld", im->path, name, i, (long long)given->shape[i],
				       (long long)d->dim_value);
		if (!fixed && !given)
			return dynamic_input_err(im, name, tt->shape, i);
		shape[i] = given ? given->shape[i] : d->dim_value;
	}
	if (input_too_large(dt, (int)rank, shape))
		return err_set("'%s': input '%s' is too large: more than 2^40 bytes", im->path, name);
	int t = graph_add_tensor(im->g, name, (enum ir_dtype)dt, (int)rank, shape);
	set_known(im, t);
	map_put(&im->tensors, name, t);
	struct ir_graph *g = im->g;
	g->inputs = xrealloc(g->inputs, sizeof(int) * (size_t)(g->n_inputs + 1));
	g->inputs[g->n_inputs++] = t;
	return 0;
}

static int import_graph(struct imp *im, Onnx__GraphProto *gp)
{
	struct ir_graph *g = im->g;
	im->gp = gp;
	g->name = xstrdup(gp->name ? gp->name : "");
	for (size_t i = 0; i < gp->n_initializer; i++) {
		const char *name = gp->initializer[i]->name;
		if (!name || !*name)
			return err_set("'%s': initializer %zu has no name", im->path, i);
		if (map_get(&im->inits, name) >= 0)
			return err_set("'%s': initializer '%s' is defined twice", im->path, name);
		map_put(&im->inits, name, (int)i);
	}
	for (size_t i = 0; i < gp->n_output; i++)
		if (gp->output[i]->name)
			map_put(&im->outputs, gp->output[i]->name, (int)i);
	if (check_shape_names(im, gp) < 0)
		return -1;
	/* Inputs that have an initializer are weights with a default value. */
	for (size_t i = 0; i < gp->n_input; i++)
		if (map_get(&im->inits, gp->input[i]->name ? gp->input[i]->name : "") < 0 &&
		    import_input(im, gp->input[i]) < 0)
			return -1;
	for (size_t i = 0; i < gp->n_node; i++)
		if (import_node(im, gp->node[i]) < 0)
			return -1;
	im->node = NULL;
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

int onnx_import_shaped(const void *buf, size_t len, const char *path, const struct npz *consts,
		       const struct onnx_input_shape *shapes, int n_shapes, struct ir_graph **out)
{
	*out = NULL;
	Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, len, buf);
	if (!m || !m->graph) {
		if (m)
			onnx__model_proto__free_unpacked(m, NULL);
		return err_set("'%s': not a valid ONNX model (truncated or corrupt)", path);
	}
	if (m->ir_version < 1) {
		long long v = m->ir_version;
		onnx__model_proto__free_unpacked(m, NULL);
		return err_set("'%s': not a valid ONNX model (ir_version %lld)", path, v);
	}
	struct imp im = { .path = path, .consts = consts, .shapes = shapes, .n_shapes = n_shapes };
	im.g = graph_new(DIALECT_TOP, STAGE_ORIGIN);
	int rc = im.opset = model_opset(path, m);
	if (rc >= 0)
		rc = import_graph(&im, m->graph);
	map_free(&im.tensors);
	map_free(&im.inits);
	map_free(&im.outputs);
	free(im.known);
	free(im.node_name);
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
