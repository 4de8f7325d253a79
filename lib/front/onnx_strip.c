/* onnx_strip.c - an ONNX model without its initializers' raw bytes, for the
 * protobuf decoder, and where those bytes lie in the file (onnx_strip.h).
 *
 * protobuf-c copies every bytes field it decodes: decoded whole, a model
 * is held twice (the file and the copy) before the importer copies each
 * weight a third time into the graph.  The decoder is handed instead a
 * copy of the message whose graph's initializers (ModelProto field 7,
 * GraphProto field 5) lack their raw_data (TensorProto field 9), and the
 * importer reads each from the file.  Fields are copied as they are; only
 * the lengths of the messages that lost bytes are written anew.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "front/onnx_depth.h"
#include "front/onnx_strip.h"
#include "ir/base.h"

struct sbuf {
	unsigned char *p;
	size_t n, cap;
};

static void put(struct sbuf *b, const void *p, size_t n)
{
	if (b->n + n > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		while (cap < b->n + n)
			cap *= 2;
		b->p = xrealloc(b->p, cap);
		b->cap = cap;
	}
	memcpy(b->p + b->n, p, n);
	b->n += n;
}

static void put_varint(struct sbuf *b, uint64_t v)
{
	unsigned char t[10];
	int n = 0;
	do {
		t[n++] = (unsigned char)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		v >>= 7;
	} while (v);
	put(b, t, (size_t)n);
}

/* One field at *p: its key, and for a length-delimited one its payload in
 * [*body, *body + *n); *p moves past it.  -1 when malformed (groups too). */
static int field(const unsigned char **p, const unsigned char *end, uint64_t *key,
		 const unsigned char **body, uint64_t *n)
{
	uint64_t v;
	if (onnx_varint(p, end, key) < 0)
		return -1;
	*body = NULL;
	switch (*key & 7) {
	case 0: return onnx_varint(p, end, &v);
	case 1: if (end - *p < 8) return -1; *p += 8; return 0;
	case 5: if (end - *p < 4) return -1; *p += 4; return 0;
	case 2:
		if (onnx_varint(p, end, n) < 0 || *n > (uint64_t)(end - *p))
			return -1;
		*body = *p;
		*p += *n;
		return 0;
	default: return -1;
	}
}

struct strip {
	const unsigned char *file;
	struct onnx_raw *raw;
	int n_raw, cap_raw;
	int n_init;                  /* initializers seen so far */
};

/* Message [p, end) of kind KIND (0 model, 1 graph, 2 tensor) into OUT,
 * without the raw bytes of initializers.  -1 when malformed. */
static int copy_msg(struct strip *s, int kind, const unsigned char *p, const unsigned char *end,
		    struct sbuf *out)
{
	while (p < end) {
		const unsigned char *start = p, *body;
		uint64_t key, n;
		if (field(&p, end, &key, &body, &n) < 0)
			return -1;
		int sub = (key & 7) != 2 ? -1 : kind == 0 && key >> 3 == 7 ? 1 :
			  kind == 1 && key >> 3 == 5 ? 2 : -1;
		if (kind == 2 && (key & 7) == 2 && key >> 3 == 9) {
			/* raw_data: the last one counts, as for the decoder */
			if (s->n_raw && s->raw[s->n_raw - 1].index == s->n_init)
				s->n_raw--;
			grow_array((void **)&s->raw, &s->cap_raw, s->n_raw + 1, sizeof *s->raw);
			s->raw[s->n_raw++] = (struct onnx_raw){
				.index = s->n_init, .offset = (size_t)(body - s->file), .len = n };
			continue;
		}
		if (sub < 0) {
			put(out, start, (size_t)(p - start));
			continue;
		}
		struct sbuf inner = { 0 };
		int rc = copy_msg(s, sub, body, body + n, &inner);
		if (sub == 2)
			s->n_init++;
		if (rc < 0) {
			free(inner.p);
			return -1;
		}
		put_varint(out, key);
		put_varint(out, inner.n);
		if (inner.n)
			put(out, inner.p, inner.n);
		free(inner.p);
	}
	return 0;
}

int onnx_strip_raw(const void *buf, size_t len, struct onnx_stripped *out)
{
	memset(out, 0, sizeof *out);
	struct strip s = { .file = buf };
	struct sbuf b = { 0 };
	const unsigned char *p = buf;
	if (copy_msg(&s, 0, p, p + len, &b) < 0 || !s.n_raw) {
		free(b.p);
		free(s.raw);
		return 0;
	}
	out->buf = b.p;
	out->len = b.n;
	out->raw = s.raw;
	out->n_raw = s.n_raw;
	return 1;
}

void onnx_stripped_free(struct onnx_stripped *s)
{
	free(s->buf);
	free(s->raw);
	memset(s, 0, sizeof *s);
}
