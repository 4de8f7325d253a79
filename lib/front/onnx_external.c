/* onnx_external.c - external tensor data: the bytes of a tensor that the
 * model file only points to, read from the file named beside it
 * (onnx_external.h).  ONNX's own rules for the location are kept: relative
 * to the model's folder, never absolute, never through "..".
 */
#include "front/onnx_external.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "front/import_util.h"
#include "ir/base.h"

/* The folder part of path, with its final '/', or "" (the current one). */
static char *folder_of(const char *path)
{
	const char *s = strrchr(path, '/');
	size_t n = s ? (size_t)(s - path) + 1 : 0;
	char *d = xmalloc(n + 1);
	memcpy(d, path, n);
	d[n] = 0;
	return d;
}

/* Is loc a plain relative path that stays in the model's folder? */
static int safe_location(const char *loc)
{
	if (!*loc || loc[0] == '/')
		return 0;
	for (const char *p = loc; *p;) {
		size_t n = strcspn(p, "/");
		if (n == 2 && p[0] == '.' && p[1] == '.')
			return 0;
		p += n;
		while (*p == '/')
			p++;
	}
	return 1;
}

/* A decimal "offset" or "length" into *v; 0 or -1. */
static int parse_size(const char *s, uint64_t *v)
{
	char *end;
	errno = 0;
	unsigned long long x = *s >= '0' && *s <= '9' ? strtoull(s, &end, 10) : 0;
	if (errno || !(*s >= '0' && *s <= '9') || *end)
		return -1;
	*v = x;
	return 0;
}

/* Bytes the tensor's shape and type need, or -1 when they are unknown or
 * overflow. */
static int64_t external_bytes(const Onnx__TensorProto *t)
{
	int dt = dtype_from_onnx(t->data_type);
	if (dt < 0)
		return -1;
	uint64_t n = dtype_size((enum ir_dtype)dt);
	for (size_t i = 0; i < t->n_dims; i++) {
		if (t->dims[i] < 0 || __builtin_mul_overflow(n, (uint64_t)t->dims[i], &n))
			return -1;
	}
	return n > (uint64_t)INT64_MAX ? -1 : (int64_t)n;
}

static int load_tensor(Onnx__TensorProto *t, const char *path, const char *dir, const char *what)
{
	if (!t || !t->has_data_location || t->data_location != ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL)
		return 0;
	const char *name = t->name && *t->name ? t->name : "";
	if (t->has_raw_data)
		return err_set("'%s': %s '%s': has both raw data and external data", path, what, name);
	const char *loc = NULL;
	uint64_t off = 0, len = 0;
	int has_len = 0;
	for (size_t i = 0; i < t->n_external_data; i++) {
		const Onnx__StringStringEntryProto *e = t->external_data[i];
		if (!e || !e->key || !e->value)
			continue;
		if (!strcmp(e->key, "location"))
			loc = e->value;
		else if (!strcmp(e->key, "offset") && parse_size(e->value, &off) < 0)
			return err_set("'%s': %s '%s': external data offset '%s' is not a number", path,
				       what, name, e->value);
		else if (!strcmp(e->key, "length") && (has_len = 1) && parse_size(e->value, &len) < 0)
			return err_set("'%s': %s '%s': external data length '%s' is not a number", path,
				       what, name, e->value);
	}
	if (!loc)
		return err_set("'%s': %s '%s': external data without a location", path, what, name);
	if (!safe_location(loc))
		return err_set("'%s': %s '%s': external data location '%s' must be a relative path "
			       "inside the model's folder", path, what, name, loc);
	if (!strcmp(path, "-") || !strcmp(path, "<stdin>"))
		return err_set("'%s': %s '%s': external data '%s' needs the model's file, not standard "
			       "input", path, what, name, loc);
	int64_t need = external_bytes(t);
	if (need < 0)
		return err_set("'%s': %s '%s': external data of an unknown size (type %s)", path, what,
			       name, onnx_dtype_name(t->data_type));
	if (has_len && len != (uint64_t)need)
		return err_set("'%s': %s '%s': external data length %llu, the shape needs %lld bytes", path,
			       what, name, (unsigned long long)len, (long long)need);
	size_t fl = strlen(dir) + strlen(loc) + 1;
	char *file = xmalloc(fl);
	snprintf(file, fl, "%s%s", dir, loc);
	FILE *f = fopen(file, "rb");
	struct stat st;
	int rc = 0;
	if (!f) {
		rc = err_set("'%s': %s '%s': cannot open external data '%s': %s", path, what, name, file,
			     strerror(errno));
	} else if (fstat(fileno(f), &st) < 0 || !S_ISREG(st.st_mode)) {
		rc = err_set("'%s': %s '%s': external data '%s' is not a regular file", path, what, name,
			     file);
	} else if (off > (uint64_t)st.st_size || (uint64_t)need > (uint64_t)st.st_size - off) {
		rc = err_set("'%s': %s '%s': external data '%s' holds %lld bytes, the tensor needs "
			     "%lld at offset %llu", path, what, name, file, (long long)st.st_size,
			     (long long)need, (unsigned long long)off);
	} else {
		unsigned char *b = xmalloc(need ? (size_t)need : 1);
		if (fseeko(f, (off_t)off, SEEK_SET) != 0 || fread(b, 1, (size_t)need, f) != (size_t)need) {
			free(b);
			rc = err_set("'%s': %s '%s': cannot read external data '%s'", path, what, name, file);
		} else {
			t->raw_data.data = b;
			t->raw_data.len = (size_t)need;
			t->has_raw_data = 1;
			t->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__DEFAULT;
		}
	}
	if (f)
		fclose(f);
	free(file);
	return rc;
}

static int load_graph(Onnx__GraphProto *g, const char *path, const char *dir);

static int load_attribute(Onnx__AttributeProto *a, const char *path, const char *dir)
{
	if (load_tensor(a->t, path, dir, "attribute tensor") < 0)
		return -1;
	for (size_t i = 0; i < a->n_tensors; i++)
		if (load_tensor(a->tensors[i], path, dir, "attribute tensor") < 0)
			return -1;
	if (a->g && load_graph(a->g, path, dir) < 0)
		return -1;
	for (size_t i = 0; i < a->n_graphs; i++)
		if (a->graphs[i] && load_graph(a->graphs[i], path, dir) < 0)
			return -1;
	return 0;
}

static int load_graph(Onnx__GraphProto *g, const char *path, const char *dir)
{
	for (size_t i = 0; i < g->n_initializer; i++)
		if (load_tensor(g->initializer[i], path, dir, "initializer") < 0)
			return -1;
	for (size_t i = 0; i < g->n_node; i++) {
		const Onnx__NodeProto *n = g->node[i];
		for (size_t k = 0; n && k < n->n_attribute; k++)
			if (n->attribute[k] && load_attribute(n->attribute[k], path, dir) < 0)
				return -1;
	}
	return 0;
}

int onnx_load_external(Onnx__ModelProto *m, const char *path)
{
	if (!m->graph)
		return 0;
	char *dir = folder_of(path);
	int rc = load_graph(m->graph, path, dir);
	free(dir);
	return rc;
}
