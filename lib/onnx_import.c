/* onnx_import.c - ONNX model (protobuf-c over onnx.proto) to Top IR.
 * Opset differences are resolved here (inputs that became attributes,
 * auto_pad, Reshape's 0 and -1) so later stages see one form per operator.
 */
#include "onnx_import.h"

#include <float.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "onnx.pb-c.h"
#include "op.h"

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
	int opset;                     /* ai.onnx opset version */
	struct ir_graph *g;
	Onnx__GraphProto *gp;
	struct name_map tensors;       /* ONNX name -> tensor index in g */
	struct name_map inits;         /* initializer name -> index in gp->initializer */
	struct name_map outputs;       /* graph output names */
	char *known;                   /* per tensor: 1 once its shape is known */
	int cap_known;
	const Onnx__NodeProto *node;   /* node being imported */
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
	return 0;
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
	memcpy(v, a->ints, a->n_ints * sizeof *v);
	*n = (int)a->n_ints;
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
	if (attr_ints(im, "kernel_shape", k, 2, &nk) < 0 || attr_ints(im, "strides", s, 2, &ns) < 0 ||
	    attr_ints(im, "dilations", d, 2, &nd) < 0 || attr_ints(im, "pads", p, 4, &np) < 0)
		return -1;
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
	if ((ns && ns != 2) || (nd && nd != 2) || (np && np != 4))
		return node_err(im, "strides, dilations and pads must have 2, 2 and 4 values");
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
		if (v < 1)
			return node_err(im, "group must be positive");
		op_set_int(op, "group", v);
		return 0;
	}
	if (attr_int(im, "ceil_mode", 0, &v) < 0)
		return -1;
	op_set_int(op, "ceil_mode", v != 0);
	if (kind == SP_MAXPOOL) {
		if (attr_int(im, "storage_order", 0, &v) < 0)
			return -1;
		if (v != 0)
			return node_err(im, "storage_order %lld is not supported", (long long)v);
	} else {
		if (attr_int(im, "count_include_pad", 0, &v) < 0)
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
	if (attr_float(im, "epsilon", 1e-5, &eps) < 0)
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

/* Clip: bounds from attributes (opset < 11) or constant inputs; absent
 * bounds are -FLT_MAX and FLT_MAX.  Only the data input remains. */
static int cv_clip(struct imp *im, struct ir_op *op)
{
	double lo = -FLT_MAX, hi = FLT_MAX;
	if (im->opset < 11) {
		if (attr_float(im, "min", lo, &lo) < 0 || attr_float(im, "max", hi, &hi) < 0)
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

/* Pad: pads and value from attributes (opset < 11) or constant inputs. */
static int cv_pad(struct imp *im, struct ir_op *op)
{
	int64_t pads[2 * IR_MAX_RANK];
	int n;
	double value = 0;
	char mode[16];
	if (attr_str(im, "mode", "constant", mode, sizeof mode) < 0)
		return -1;
	if (strcmp(mode, "constant"))
		return node_err(im, "mode '%s' is not supported (only constant)", mode);
	if (im->opset < 11) {
		if (attr_ints(im, "pads", pads, 2 * IR_MAX_RANK, &n) < 0 ||
		    attr_float(im, "value", 0, &value) < 0)
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
	if (attr_int(im, "allowzero", 0, &allowzero) < 0)
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
	    attr_int(im, "transA", 0, &ta) < 0 || attr_int(im, "transB", 0, &tb) < 0)
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
		int r = x->rank + rank_plus;
		if (axis < -r || axis >= r)
			return node_err(im, "axis %lld is out of range for rank %d", (long long)axis, x->rank);
		if (axis < 0)
			axis += r;
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

/* What the importer accepts for each ONNX operator.  attrs lists every
 * attribute it understands (others are refused); convert writes the IR
 * attributes and may drop inputs that became attributes. */
struct node_rule {
	const char *onnx;                  /* ONNX op_type, also the IR name */
	int min_in, max_in;                /* input count before rewriting */
	const char *attrs[9];
	int (*convert)(struct imp *im, struct ir_op *op);
};

static const struct node_rule node_rules[] = {
	{ "Conv", 2, 3, { "auto_pad", "dilations", "group", "kernel_shape", "pads", "strides" }, cv_conv },
	{ "BatchNormalization", 5, 5, { "epsilon", "momentum", "spatial", "training_mode" }, cv_batchnorm },
	{ "Relu", 1, 1, { 0 }, NULL },
	{ "Clip", 1, 3, { "min", "max" }, cv_clip },
	{ "MaxPool", 1, 1, { "auto_pad", "ceil_mode", "dilations", "kernel_shape", "pads",
			     "storage_order", "strides" }, cv_maxpool },
	{ "AveragePool", 1, 1, { "auto_pad", "ceil_mode", "count_include_pad", "kernel_shape",
				 "pads", "strides" }, cv_avgpool },
	{ "GlobalAveragePool", 1, 1, { 0 }, NULL },
	{ "Add", 2, 2, { 0 }, NULL },
	{ "Mul", 2, 2, { 0 }, NULL },
	{ "Concat", 1, 1 << 16, { "axis" }, cv_concat },
	{ "Pad", 1, 3, { "mode", "pads", "value" }, cv_pad },
	{ "Flatten", 1, 1, { "axis" }, cv_flatten },
	{ "Reshape", 2, 2, { "allowzero" }, cv_reshape },
	{ "Gemm", 2, 3, { "alpha", "beta", "transA", "transB" }, cv_gemm },
	{ "MatMul", 2, 2, { 0 }, NULL },
	{ "Identity", 1, 1, { 0 }, NULL },
	{ "Cast", 1, 1, { "to" }, cv_cast },
};

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

static int import_node(struct imp *im, const Onnx__NodeProto *n)
{
	const char *type = n->op_type ? n->op_type : "";
	const char *out0 = n->n_output ? n->output[0] : "";
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
	for (size_t i = 1; i < n->n_output; i++)
		if (n->output[i] && *n->output[i])
			return node_err(im, "optional output '%s' is not supported", n->output[i]);
	if (map_get(&im->tensors, out0) >= 0 || map_get(&im->inits, out0) >= 0)
		return node_err(im, "tensor '%s' is defined twice", out0);
	if (!strcmp(type, "Constant"))
		return import_constant(im, out0);

	const struct node_rule *r = NULL;
	for (size_t i = 0; i < ARRAY_LEN(node_rules); i++)
		if (!strcmp(node_rules[i].onnx, type))
			r = &node_rules[i];
	int t = op_type_from_name(type);
	if (!r || t < 0)
		return node_err(im, "unsupported operator");
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
	int o = graph_add_tensor(im->g, out0, DT_F32, 0, NULL);
	map_put(&im->tensors, out0, o);
	int k = graph_add_op(im->g, (enum op_type)t, im->node_name, (int)n->n_input, in, 1, &o);
	free(in);
	struct ir_op *op = &im->g->ops[k];
	if (r->convert && r->convert(im, op) < 0)
		return -1;
	/* Infer now: later nodes need shapes (auto_pad, Reshape's 0 and -1). */
	const struct op_def *def = op_defs[t];
	if (def && def->infer) {
		if (def->infer(im->g, op) < 0)
			return err_prefix("'%s'", im->path);
		set_known(im, o);
	}
	return 0;
}

/* ---- graph ---- */

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
	if (dt != DT_F32 && dt != DT_I64)
		return err_set("'%s': input '%s': data type %s is not supported (float or int64)",
			       im->path, name, onnx_dtype_name(tt->elem_type));
	if (!tt->shape)
		return err_set("'%s': input '%s' has no shape", im->path, name);
	if (tt->shape->n_dim > IR_MAX_RANK)
		return err_set("'%s': input '%s': rank %zu exceeds %d", im->path, name,
			       tt->shape->n_dim, IR_MAX_RANK);
	int64_t shape[IR_MAX_RANK];
	for (size_t i = 0; i < tt->shape->n_dim; i++) {
		const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[i];
		if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM)
			return err_set("'%s': input '%s': dimension %zu is not static ('%s')",
				       im->path, name, i, d->dim_param);
		if (d->value_case != ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE || d->dim_value < 1)
			return err_set("'%s': input '%s': dimension %zu is not static", im->path, name, i);
		shape[i] = d->dim_value;
	}
	int t = graph_add_tensor(im->g, name, (enum ir_dtype)dt, (int)tt->shape->n_dim, shape);
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
		int t;
		if (resolve_input(im, gp->output[i]->name ? gp->output[i]->name : "", &t) < 0)
			return -1;
		if (t < 0)
			return err_set("'%s': graph output %zu has no name", im->path, i);
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
	*out = NULL;
	Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, len, buf);
	if (!m || !m->graph) {
		if (m)
			onnx__model_proto__free_unpacked(m, NULL);
		return err_set("'%s': not a valid ONNX model (truncated or corrupt)", path);
	}
	struct imp im = { .path = path };
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
