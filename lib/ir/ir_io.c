/* ir_io.c - the IR file format (formats/tpuc-ir.5): a 64-byte header, the
 * graph as one msgpack map, and an aligned data section holding weights.
 */
#include <math.h>
#include <msgpack.h>
#include <stdlib.h>
#include <string.h>

#include "ir/base.h"
#include "ir/bytes.h"
#include "ir/ir.h"
#include "ir/ir_msgpack.h"
#include "ir/limit.h"
#include "ir/file_kind.h"

#define IR_MAGIC "TPUC-IR\0"
#define IR_HEADER_BYTES 64
#define IR_ALIGN 64

static size_t align_up(size_t n) { return (n + IR_ALIGN - 1) & ~(size_t)(IR_ALIGN - 1); }

/* ---- writing ---- */

void mp_pack_str(msgpack_packer *pk, const char *s)
{
	size_t n = strlen(s ? s : "");
	msgpack_pack_str(pk, n);
	msgpack_pack_str_body(pk, s ? s : "", n);
}

void mp_pack_ints(msgpack_packer *pk, int n, const int *v)
{
	msgpack_pack_array(pk, (size_t)n);
	for (int i = 0; i < n; i++)
		msgpack_pack_int64(pk, v[i]);
}

void mp_pack_shape(msgpack_packer *pk, const struct ir_tensor *t)
{
	msgpack_pack_array(pk, (size_t)t->rank);
	for (int j = 0; j < t->rank; j++)
		msgpack_pack_int64(pk, t->shape[j]);
}

/* Where each weight's payload goes in the data section: the weights of
 * the graph and of its subgraphs (If, Loop, Scan bodies), in the order
 * pack_graph meets them (a graph's tensors, then its ops' subgraphs). */
struct dlayout {
	const struct ir_tensor **t;
	uint64_t *off;
	int n, cap, cur;
	size_t len;
};
static _Thread_local struct dlayout *packing;   /* set while ir_write packs */

static void layout_walk(struct dlayout *L, const struct ir_graph *g)
{
	for (int i = 0; i < g->n_tensors; i++)
		if (g->tensors[i].data) {
			if (L->n == L->cap) {
				L->cap = L->cap ? 2 * L->cap : 16;
				L->t = xrealloc(L->t, sizeof *L->t * (size_t)L->cap);
				L->off = xrealloc(L->off, sizeof *L->off * (size_t)L->cap);
			}
			L->t[L->n] = &g->tensors[i];
			L->off[L->n++] = L->len;
			L->len = align_up(L->len + g->tensors[i].nbytes);
		}
	for (int i = 0; i < g->n_ops; i++)
		for (int j = 0; j < g->ops[i].n_attr; j++)
			if (g->ops[i].attr[j].kind == ATTR_GRAPH)
				layout_walk(L, g->ops[i].attr[j].graph);
}

static void pack_body(msgpack_packer *pk, const struct ir_graph *g);

static void pack_attr(msgpack_packer *pk, const struct ir_attr *a)
{
	mp_pack_str(pk, a->name);
	switch (a->kind) {
	case ATTR_INT: msgpack_pack_int64(pk, a->i); break;
	case ATTR_FLOAT: msgpack_pack_double(pk, a->f); break;
	case ATTR_STR: mp_pack_str(pk, a->s); break;
	case ATTR_INTS:
		msgpack_pack_array(pk, (size_t)a->n);
		for (int i = 0; i < a->n; i++)
			msgpack_pack_int64(pk, a->ints[i]);
		break;
	case ATTR_FLOATS:
		/* An empty float list would read back as ints: mark it with nil. */
		if (a->n == 0) {
			msgpack_pack_nil(pk);
			break;
		}
		msgpack_pack_array(pk, (size_t)a->n);
		for (int i = 0; i < a->n; i++)
			msgpack_pack_float(pk, a->floats[i]);
		break;
	case ATTR_GRAPH:
		/* a map: the subgraph's name, tensors, ops, inputs, outputs */
		msgpack_pack_map(pk, 5);
		mp_pack_str(pk, "name"); mp_pack_str(pk, a->graph->name);
		pack_body(pk, a->graph);
		break;
	}
}

void ir_pack_op(msgpack_packer *pk, const struct ir_op *op, int groups)
{
	int group = groups && op->group >= 0;
	int place = (groups && op->place != PLACE_NONE) || op->place == PLACE_HOST;
	msgpack_pack_map(pk, (size_t)(5 + group + place));
	mp_pack_str(pk, "type"); mp_pack_str(pk, op_name(op->type));
	mp_pack_str(pk, "name"); mp_pack_str(pk, op->name);
	mp_pack_str(pk, "in"); mp_pack_ints(pk, op->n_in, op->in);
	mp_pack_str(pk, "out"); mp_pack_ints(pk, op->n_out, op->out);
	mp_pack_str(pk, "attrs");
	msgpack_pack_map(pk, (size_t)op->n_attr);
	for (int j = 0; j < op->n_attr; j++)
		pack_attr(pk, &op->attr[j]);
	if (group) { mp_pack_str(pk, "group"); msgpack_pack_int64(pk, op->group); }
	if (place) {
		mp_pack_str(pk, "place");
		mp_pack_str(pk, op->place == PLACE_LOCAL ? "local" :
				op->place == PLACE_HOST ? "host" : "global");
	}
}

/* tensors, ops, inputs and outputs: four key-value pairs */
static void pack_body(msgpack_packer *pk, const struct ir_graph *g)
{
	mp_pack_str(pk, "tensors");
	msgpack_pack_array(pk, (size_t)g->n_tensors);
	for (int i = 0; i < g->n_tensors; i++) {
		const struct ir_tensor *t = &g->tensors[i];
		int fields = 3 + (t->data != NULL) + (t->scale != 0) + (t->zero_point != 0) + (t->addr >= 0) +
			     (t->qdtype != DT_F32) + (t->dyn != 0);
		msgpack_pack_map(pk, (size_t)fields);
		mp_pack_str(pk, "name"); mp_pack_str(pk, t->name);
		mp_pack_str(pk, "dtype"); mp_pack_str(pk, dtype_name(t->dtype));
		mp_pack_str(pk, "shape"); mp_pack_shape(pk, t);
		if (t->data) {
			struct dlayout *L = packing;
			mp_pack_str(pk, "data");
			msgpack_pack_array(pk, 2);
			msgpack_pack_uint64(pk, L && L->cur < L->n ? L->off[L->cur++] : 0);
			msgpack_pack_uint64(pk, t->nbytes);
		}
		if (t->scale != 0) { mp_pack_str(pk, "scale"); msgpack_pack_float(pk, t->scale); }
		if (t->zero_point != 0) { mp_pack_str(pk, "zero_point"); msgpack_pack_int64(pk, t->zero_point); }
		if (t->addr >= 0) { mp_pack_str(pk, "addr"); msgpack_pack_int64(pk, t->addr); }
		if (t->qdtype != DT_F32) { mp_pack_str(pk, "qdtype"); mp_pack_str(pk, dtype_name(t->qdtype)); }
		if (t->dyn) { mp_pack_str(pk, "dyn"); msgpack_pack_uint32(pk, t->dyn); }
	}

	mp_pack_str(pk, "ops");
	msgpack_pack_array(pk, (size_t)g->n_ops);
	for (int i = 0; i < g->n_ops; i++)
		ir_pack_op(pk, &g->ops[i], 1);
	mp_pack_str(pk, "inputs"); mp_pack_ints(pk, g->n_inputs, g->inputs);
	mp_pack_str(pk, "outputs"); mp_pack_ints(pk, g->n_outputs, g->outputs);
}

static void pack_graph(msgpack_packer *pk, const struct ir_graph *g)
{
	int n = 9 + (g->chip != NULL) + (g->mode != MODE_NONE);
	msgpack_pack_map(pk, (size_t)n);
	mp_pack_str(pk, "dialect"); mp_pack_str(pk, dialect_name(g->dialect));
	mp_pack_str(pk, "stage"); mp_pack_str(pk, stage_name(g->stage));
	mp_pack_str(pk, "name"); mp_pack_str(pk, g->name);
	if (g->chip) { mp_pack_str(pk, "chip"); mp_pack_str(pk, g->chip); }
	if (g->mode != MODE_NONE) { mp_pack_str(pk, "mode"); mp_pack_str(pk, mode_name(g->mode)); }
	mp_pack_str(pk, "neuron_bytes"); msgpack_pack_int64(pk, g->neuron_bytes);
	mp_pack_str(pk, "coeff_bytes"); msgpack_pack_int64(pk, g->coeff_bytes);
	pack_body(pk, g);
}

int ir_write(const char *path, const struct ir_graph *g)
{
	const char *shown = !path || !strcmp(path, "-") ? "<stdout>" : path;
	if (ir_verify(g) < 0)
		return err_prefix("'%s': refusing to write an invalid graph", shown);

	/* Lay out the data section: each payload at a 64-byte boundary. */
	struct dlayout L = { 0 };
	layout_walk(&L, g);
	size_t data_len = L.len;

	msgpack_sbuffer sb;
	msgpack_sbuffer_init(&sb);
	msgpack_packer pk;
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	packing = &L;
	pack_graph(&pk, g);
	packing = NULL;

	unsigned char hdr[IR_HEADER_BYTES] = { 0 };
	size_t data_off = align_up(IR_HEADER_BYTES + sb.size);
	memcpy(hdr, IR_MAGIC, 8);
	put_u32(hdr + 8, IR_FORMAT_VERSION);
	put_u32(hdr + 12, 0);
	put_u64(hdr + 16, sb.size);
	put_u64(hdr + 24, data_off);
	put_u64(hdr + 32, data_len);

	struct out_file o;
	int rc = -1;
	if (out_open(&o, path) < 0)
		goto done;
	static const unsigned char zeros[IR_ALIGN];
	int bad = fwrite(hdr, 1, sizeof hdr, o.fp) != sizeof hdr;
	bad |= fwrite(sb.data, 1, sb.size, o.fp) != sb.size;
	bad |= fwrite(zeros, 1, data_off - IR_HEADER_BYTES - sb.size, o.fp) != data_off - IR_HEADER_BYTES - sb.size;
	size_t pos = 0;
	for (int i = 0; i < L.n && !bad; i++) {
		const struct ir_tensor *t = L.t[i];
		bad |= fwrite(zeros, 1, L.off[i] - pos, o.fp) != L.off[i] - pos;
		bad |= fwrite(t->data, 1, t->nbytes, o.fp) != t->nbytes;
		pos = L.off[i] + t->nbytes;
	}
	if (!bad)
		bad |= fwrite(zeros, 1, data_len - pos, o.fp) != data_len - pos;
	if (bad) {
		err_set("cannot write '%s':", shown);
		out_abort(&o);
		goto done;
	}
	rc = out_commit(&o);
done:
	msgpack_sbuffer_destroy(&sb);
	free(L.t);
	free(L.off);
	return rc;
}

/* ---- reading ---- */


int mp_key_is(const msgpack_object_kv *kv, const char *k)
{
	size_t n = strlen(k);
	return kv->key.type == MSGPACK_OBJECT_STR && kv->key.via.str.size == n &&
	       !memcmp(kv->key.via.str.ptr, k, n);
}

int mp_str(const msgpack_object *o, char **out)
{
	if (o->type != MSGPACK_OBJECT_STR)
		return -1;
	free(*out);
	*out = xmalloc(o->via.str.size + 1);
	memcpy(*out, o->via.str.ptr, o->via.str.size);
	(*out)[o->via.str.size] = 0;
	return 0;
}

int mp_int(const msgpack_object *o, int64_t *v)
{
	if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER && o->via.u64 <= INT64_MAX) {
		*v = (int64_t)o->via.u64;
		return 0;
	}
	if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER) {
		*v = o->via.i64;
		return 0;
	}
	return -1;
}

int mp_num(const msgpack_object *o, double *v)
{
	int64_t i;
	if (o->type == MSGPACK_OBJECT_FLOAT32 || o->type == MSGPACK_OBJECT_FLOAT64) {
		*v = o->via.f64;
		return 0;
	}
	if (mp_int(o, &i) == 0) {
		*v = (double)i;
		return 0;
	}
	return -1;
}

int mp_indices(const msgpack_object *o, int lo, int limit, int **out, int *n)
{
	if (o->type != MSGPACK_OBJECT_ARRAY)
		return -1;
	free(*out);
	*n = (int)o->via.array.size;
	*out = xmalloc(sizeof(int) * (size_t)(*n + 1));
	for (int i = 0; i < *n; i++) {
		int64_t v;
		if (mp_int(&o->via.array.ptr[i], &v) < 0 || v < lo || v >= limit)
			return -1;
		(*out)[i] = (int)v;
	}
	return 0;
}

struct rd {
	const char *file;      /* for messages */
	const unsigned char *data;
	size_t data_len;
};

static int bad(const struct rd *r, const char *what)
{
	return err_set("'%s': corrupt IR: %s", r->file, what);
}

static int read_body(struct rd *r, struct ir_graph *g, const msgpack_object *tensors,
		     const msgpack_object *ops, const msgpack_object *ins, const msgpack_object *outs);

/* A subgraph attribute (a map: name, tensors, ops, inputs, outputs) of an
 * op of PARENT, whose dialect and stage it takes (subgraphs_follow sets
 * them again once the whole graph is read); NULL when malformed.  In a
 * .tmodel R has no data section: a body's weights are captures there. */
static struct ir_graph *read_subgraph(struct rd *r, const struct ir_graph *parent,
				      const msgpack_object *o)
{
	if (!r)
		return NULL;
	const msgpack_object *tensors = NULL, *ops = NULL, *ins = NULL, *outs = NULL;
	struct ir_graph *sub = graph_new(parent->dialect, parent->stage);
	sub->mode = parent->mode;
	sub->name = xstrdup("");
	for (uint32_t i = 0; i < o->via.map.size; i++) {
		const msgpack_object_kv *kv = &o->via.map.ptr[i];
		if (mp_key_is(kv, "name"))
			mp_str(&kv->val, &sub->name);
		else if (mp_key_is(kv, "tensors"))
			tensors = &kv->val;
		else if (mp_key_is(kv, "ops"))
			ops = &kv->val;
		else if (mp_key_is(kv, "inputs"))
			ins = &kv->val;
		else if (mp_key_is(kv, "outputs"))
			outs = &kv->val;
	}
	if (read_body(r, sub, tensors, ops, ins, outs) < 0) {
		graph_free(sub);
		return NULL;
	}
	return sub;
}

/* One attribute, its kind told by the value's msgpack type. */
static int read_attr(struct rd *r, const struct ir_graph *g, struct ir_op *op,
		     const msgpack_object_kv *kv)
{
	char *name = NULL;
	if (mp_str(&kv->key, &name) < 0)
		return -1;
	const msgpack_object *v = &kv->val;
	int rc = 0;
	int64_t iv;
	double dv = 0;
	char *s = NULL;
	switch (v->type) {
	case MSGPACK_OBJECT_POSITIVE_INTEGER:
	case MSGPACK_OBJECT_NEGATIVE_INTEGER:
		if ((rc = mp_int(v, &iv)) == 0)
			op_set_int(op, name, iv);
		break;
	case MSGPACK_OBJECT_FLOAT32:
	case MSGPACK_OBJECT_FLOAT64:
		op_set_float(op, name, v->via.f64);
		break;
	case MSGPACK_OBJECT_STR:
		mp_str(v, &s);
		op_set_str(op, name, s);
		free(s);
		break;
	case MSGPACK_OBJECT_NIL:
		op_set_floats(op, name, 0, NULL);
		break;
	case MSGPACK_OBJECT_ARRAY: {
		uint32_t n = v->via.array.size;
		const msgpack_object *e = v->via.array.ptr;
		if (n && (e[0].type == MSGPACK_OBJECT_FLOAT32 || e[0].type == MSGPACK_OBJECT_FLOAT64)) {
			float *f = xmalloc(sizeof(float) * n);
			for (uint32_t i = 0; i < n && rc == 0; i++) {
				rc = mp_num(&e[i], &dv);
				f[i] = (float)dv;
			}
			if (rc == 0)
				op_set_floats(op, name, (int)n, f);
			free(f);
		} else {
			int64_t *w = xmalloc(sizeof(int64_t) * (n + 1));
			for (uint32_t i = 0; i < n && rc == 0; i++)
				rc = mp_int(&e[i], &w[i]);
			if (rc == 0)
				op_set_ints(op, name, (int)n, w);
			free(w);
		}
		break;
	}
	case MSGPACK_OBJECT_MAP: {
		struct ir_graph *sub = read_subgraph(r, g, v);
		if (sub)
			op_set_graph(op, name, sub);
		else
			rc = -1;
		break;
	}
	default:
		rc = -1;
	}
	free(name);
	return rc;
}

static int unpack_op(struct rd *r, struct ir_graph *g, const msgpack_object *o, const char *file,
		     const char *kind, const char *noun)
{
	char *type = NULL, *name = NULL;
	int *in = NULL, *out = NULL, n_in = 0, n_out = 0, ok = o->type == MSGPACK_OBJECT_MAP;
	const msgpack_object *attrs = NULL;
	int64_t group = -1;
	int place = PLACE_NONE;
	for (uint32_t i = 0; ok && i < o->via.map.size; i++) {
		const msgpack_object_kv *kv = &o->via.map.ptr[i];
		if (mp_key_is(kv, "type"))
			ok = !type && mp_str(&kv->val, &type) == 0;
		else if (mp_key_is(kv, "name"))
			ok = !name && mp_str(&kv->val, &name) == 0;
		else if (mp_key_is(kv, "in"))
			ok = !in && mp_indices(&kv->val, -1, g->n_tensors, &in, &n_in) == 0;
		else if (mp_key_is(kv, "out"))
			ok = !out && mp_indices(&kv->val, 0, g->n_tensors, &out, &n_out) == 0;
		else if (mp_key_is(kv, "attrs"))
			ok = (attrs = &kv->val)->type == MSGPACK_OBJECT_MAP;
		else if (mp_key_is(kv, "group"))
			ok = mp_int(&kv->val, &group) == 0;
		else if (mp_key_is(kv, "place")) {
			char *s = NULL;
			ok = mp_str(&kv->val, &s) == 0;
			place = s && !strcmp(s, "local") ? PLACE_LOCAL :
				s && !strcmp(s, "host") ? PLACE_HOST : PLACE_GLOBAL;
			free(s);
		}
	}
	int rc = -1, t = ok && type ? op_type_from_name(type) : -1;
	if (!ok || !type || !name || !in || !out) {
		err_set("'%s': corrupt %s: malformed %s entry", file, kind, noun);
	} else if (t < 0) {
		err_set("'%s': %s '%s': unknown operator type '%s'", file, noun, name, type);
	} else {
		int k = graph_add_op(g, (enum op_type)t, name, n_in, in, n_out, out);
		struct ir_op *op = &g->ops[k];
		op->group = (int)group;
		op->place = (enum placement)place;
		rc = 0;
		for (uint32_t i = 0; attrs && i < attrs->via.map.size && rc == 0; i++)
			if (read_attr(r, g, op, &attrs->via.map.ptr[i]) < 0)
				rc = err_set("'%s': corrupt %s: malformed attribute", file, kind);
	}
	free(type);
	free(name);
	free(in);
	free(out);
	return rc;
}

int ir_unpack_op(struct ir_graph *g, const msgpack_object *o, const char *file,
		 const char *kind, const char *noun)
{
	/* no data section: a subgraph's tensors carry no data */
	struct rd r = { .file = file, .data = NULL, .data_len = 0 };
	return unpack_op(&r, g, o, file, kind, noun);
}

static void subgraphs_follow(struct ir_graph *g);

void ir_subgraphs_follow(struct ir_graph *g)
{
	subgraphs_follow(g);
}

static int read_tensor(struct rd *r, struct ir_graph *g, const msgpack_object *o)
{
	if (o->type != MSGPACK_OBJECT_MAP)
		return bad(r, "tensor is not a map");
	char *name = NULL, *dts = NULL, *qdts = NULL;
	int rank = -1;
	int64_t shape[IR_MAX_RANK] = { 0 }, off = -1, nbytes = -1, zp = 0, addr = -1, dyn = 0;
	double scale = 0;
	for (uint32_t i = 0; i < o->via.map.size; i++) {
		const msgpack_object_kv *kv = &o->via.map.ptr[i];
		const msgpack_object *v = &kv->val;
		if (mp_key_is(kv, "name")) {
			if (mp_str(v, &name) < 0)
				goto fail;
		} else if (mp_key_is(kv, "dtype")) {
			if (mp_str(v, &dts) < 0)
				goto fail;
		} else if (mp_key_is(kv, "shape")) {
			if (v->type != MSGPACK_OBJECT_ARRAY || v->via.array.size > IR_MAX_RANK)
				goto fail;
			rank = (int)v->via.array.size;
			for (int j = 0; j < rank; j++)
				if (mp_int(&v->via.array.ptr[j], &shape[j]) < 0 || shape[j] < 0)
					goto fail;
		} else if (mp_key_is(kv, "data")) {
			if (v->type != MSGPACK_OBJECT_ARRAY || v->via.array.size != 2 ||
			    mp_int(&v->via.array.ptr[0], &off) < 0 ||
			    mp_int(&v->via.array.ptr[1], &nbytes) < 0)
				goto fail;
		} else if (mp_key_is(kv, "scale")) {
			if (mp_num(v, &scale) < 0)
				goto fail;
		} else if (mp_key_is(kv, "zero_point")) {
			if (mp_int(v, &zp) < 0)
				goto fail;
		} else if (mp_key_is(kv, "addr")) {
			if (mp_int(v, &addr) < 0)
				goto fail;
		} else if (mp_key_is(kv, "qdtype")) {
			if (qdts || mp_str(v, &qdts) < 0)
				goto fail;
		} else if (mp_key_is(kv, "dyn")) {
			if (mp_int(v, &dyn) < 0 || dyn < 0 || dyn >= (int64_t)1 << IR_MAX_RANK)
				goto fail;
		}
	}
	int dt = dts ? dtype_from_name(dts) : -1;
	int qdt = qdts ? dtype_from_name(qdts) : DT_F32;
	if (!name || dt < 0 || rank < 0 || (qdt != DT_F32 && qdt != DT_I8 && qdt != DT_U8))
		goto fail;
	free(dts);
	free(qdts);
	int k = graph_add_tensor(g, name, (enum ir_dtype)dt, rank, shape);
	free(name);
	struct ir_tensor *t = &g->tensors[k];
	t->scale = (float)scale;
	t->zero_point = (int)zp;
	t->qdtype = (enum ir_dtype)qdt;
	t->addr = addr;
	t->dyn = (uint32_t)dyn;
	if (off >= 0 && !r->data)
		return err_set("'%s': corrupt: tensor '%s' of a subgraph has data, the file has no "
			       "data section", r->file, t->name);
	if (off >= 0) {
		if ((uint64_t)off % IR_ALIGN || (uint64_t)off > r->data_len ||
		    (uint64_t)nbytes > r->data_len - (uint64_t)off)
			return err_set("'%s': truncated IR: data of tensor '%s' lies past the end of the file",
				       r->file, t->name);
		t->data = (void *)(r->data + off);
		t->nbytes = (size_t)nbytes;
		t->owns_data = 0;
	}
	return 0;
fail:
	free(name);
	free(dts);
	free(qdts);
	return bad(r, "malformed tensor entry");
}

static int read_op(struct rd *r, struct ir_graph *g, const msgpack_object *o)
{
	if (o->type != MSGPACK_OBJECT_MAP)
		return bad(r, "op is not a map");
	return unpack_op(r, g, o, r->file, "IR", "op");
}

static int read_graph(struct rd *r, struct ir_graph *g, const msgpack_object *root)
{
	if (root->type != MSGPACK_OBJECT_MAP)
		return bad(r, "graph is not a map");
	const msgpack_object *tensors = NULL, *ops = NULL, *ins = NULL, *outs = NULL;
	int have_dialect = 0, have_stage = 0;
	for (uint32_t i = 0; i < root->via.map.size; i++) {
		const msgpack_object_kv *kv = &root->via.map.ptr[i];
		char *s = NULL;
		int64_t v;
		if (mp_key_is(kv, "dialect") || mp_key_is(kv, "stage")) {
			if (mp_str(&kv->val, &s) < 0)
				return bad(r, "dialect or stage is not a string");
			int found = -1;
			int is_dialect = mp_key_is(kv, "dialect");
			for (int j = 0; j < (is_dialect ? DIALECT_COUNT : STAGE_COUNT); j++)
				if (!strcmp(s, is_dialect ? dialect_name(j) : stage_name(j)))
					found = j;
			if (found < 0) {
				err_set("'%s': unknown %s '%s'", r->file, is_dialect ? "dialect" : "stage", s);
				free(s);
				return -1;
			}
			free(s);
			if (is_dialect) {
				g->dialect = (enum ir_dialect)found;
				have_dialect = 1;
			} else {
				g->stage = (enum ir_stage)found;
				have_stage = 1;
			}
		} else if (mp_key_is(kv, "name")) {
			if (mp_str(&kv->val, &g->name) < 0)
				return bad(r, "name is not a string");
		} else if (mp_key_is(kv, "chip")) {
			if (mp_str(&kv->val, &g->chip) < 0)
				return bad(r, "chip is not a string");
		} else if (mp_key_is(kv, "mode")) {
			if (mp_str(&kv->val, &s) < 0)
				return bad(r, "mode is not a string");
			g->mode = *s ? mode_from_name(s) : MODE_NONE;
			if (*s && g->mode == MODE_NONE) {
				err_set("'%s': unknown mode '%s'", r->file, s);
				free(s);
				return -1;
			}
			free(s);
		} else if (mp_key_is(kv, "neuron_bytes") && mp_int(&kv->val, &v) == 0) {
			g->neuron_bytes = v;
		} else if (mp_key_is(kv, "coeff_bytes") && mp_int(&kv->val, &v) == 0) {
			g->coeff_bytes = v;
		} else if (mp_key_is(kv, "tensors")) {
			tensors = &kv->val;
		} else if (mp_key_is(kv, "ops")) {
			ops = &kv->val;
		} else if (mp_key_is(kv, "inputs")) {
			ins = &kv->val;
		} else if (mp_key_is(kv, "outputs")) {
			outs = &kv->val;
		}
	}
	if (!have_dialect || !have_stage)
		return bad(r, "graph lacks dialect, stage, tensors, ops, inputs or outputs");
	return read_body(r, g, tensors, ops, ins, outs);
}

/* The subgraphs of G take its dialect, stage and mode (a subgraph is read
 * before the keys that name them may come). */
static void subgraphs_follow(struct ir_graph *g)
{
	for (int i = 0; i < g->n_ops; i++)
		for (int j = 0; j < g->ops[i].n_attr; j++) {
			struct ir_graph *sub = g->ops[i].attr[j].kind == ATTR_GRAPH ? g->ops[i].attr[j].graph : NULL;
			if (!sub)
				continue;
			/* a host op's bodies stay Top (lib/back/lower_dtype.c) */
			int top = g->ops[i].place == PLACE_HOST;
			sub->dialect = top ? DIALECT_TOP : g->dialect;
			sub->stage = top ? STAGE_CANONICAL : g->stage;
			sub->mode = top ? MODE_NONE : g->mode;
			subgraphs_follow(sub);
		}
}

static int read_body(struct rd *r, struct ir_graph *g, const msgpack_object *tensors,
		     const msgpack_object *ops, const msgpack_object *ins, const msgpack_object *outs)
{
	if (!tensors || !ops || !ins || !outs ||
	    tensors->type != MSGPACK_OBJECT_ARRAY || ops->type != MSGPACK_OBJECT_ARRAY)
		return bad(r, "graph lacks dialect, stage, tensors, ops, inputs or outputs");
	for (uint32_t i = 0; i < tensors->via.array.size; i++)
		if (read_tensor(r, g, &tensors->via.array.ptr[i]) < 0)
			return -1;
	for (uint32_t i = 0; i < ops->via.array.size; i++)
		if (read_op(r, g, &ops->via.array.ptr[i]) < 0)
			return -1;
	if (mp_indices(ins, 0, g->n_tensors, &g->inputs, &g->n_inputs) < 0 ||
	    mp_indices(outs, 0, g->n_tensors, &g->outputs, &g->n_outputs) < 0)
		return bad(r, "bad graph inputs or outputs");
	return 0;
}

int ir_read(const char *path, struct ir_graph **out)
{
	const char *shown = !path || !strcmp(path, "-") ? "<stdin>" : path;
	void *buf;
	size_t len;
	*out = NULL;
	if (file_read_all(path, &buf, &len) < 0)
		return -1;
	const unsigned char *p = buf;
	if (len < IR_HEADER_BYTES || memcmp(p, IR_MAGIC, 8) != 0) {
		const char *hint = file_kind_hint(file_kind_of(p, len, path), FILE_IR);
		free(buf);
		if (len == 0)
			return err_set("'%s': empty input, expected a tpuc IR file", shown);
		return err_set("'%s': not a tpuc IR file (bad magic)%s", shown, hint);
	}
	uint32_t version = get_u32(p + 8);
	uint64_t glen = get_u64(p + 16), doff = get_u64(p + 24), dlen = get_u64(p + 32);
	if (version != IR_FORMAT_VERSION) {
		free(buf);
		return err_set("'%s': IR format version %u, this tpuc reads version %d",
			       shown, version, IR_FORMAT_VERSION);
	}
	if (glen > len - IR_HEADER_BYTES || doff < IR_HEADER_BYTES + glen || doff % IR_ALIGN ||
	    doff > len || dlen > len - doff) {
		free(buf);
		return err_set("'%s': truncated IR file (%zu bytes)", shown, len);
	}
	struct rd r = { shown, p + doff, (size_t)dlen };
	msgpack_unpacked res;
	msgpack_unpacked_init(&res);
	size_t off = 0;
	struct ir_graph *g = graph_new(DIALECT_TOP, STAGE_ORIGIN);
	int rc = -1;
	if (limit_check_msgpack(p + IR_HEADER_BYTES, glen) < 0) {
		err_prefix("'%s': corrupt IR", shown);
		goto out;
	}
	int ret = msgpack_unpack_next(&res, (const char *)p + IR_HEADER_BYTES, glen, &off);
	if (ret != MSGPACK_UNPACK_SUCCESS || off != glen) {
		err_set("'%s': corrupt IR: the graph does not decode", shown);
		goto out;
	}
	if (read_graph(&r, g, &res.data) < 0)
		goto out;
	subgraphs_follow(g);
	g->backing = buf;
	g->backing_len = len;
	buf = NULL;
	if (ir_verify(g) < 0) {
		err_prefix("'%s': invalid IR", shown);
		goto out;
	}
	if (ir_verify_ops(g) < 0) {
		err_prefix("'%s'", shown);
		goto out;
	}
	rc = 0;
out:
	msgpack_unpacked_destroy(&res);
	free(buf);
	if (rc < 0)
		graph_free(g);
	else
		*out = g;
	return rc;
}
