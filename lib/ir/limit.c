/* limit.c - the memory ceiling and checked size arithmetic (limit.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ir/base.h"
#include "ir/limit.h"

static int64_t max_memory = LIMIT_MAX_MEMORY_DEFAULT;

int64_t limit_max_memory(void)
{
	return max_memory;
}

void limit_set_max_memory(int64_t bytes)
{
	max_memory = bytes;
}

int limit_parse_size(const char *s, int64_t *bytes)
{
	char *end;
	errno = 0;
	long long v = *s >= '0' && *s <= '9' ? strtoll(s, &end, 10) : -1;
	int shift = 0;
	if (v > 0 && !errno) {
		switch (*end) {
		case 'K': case 'k': shift = 10; end++; break;
		case 'M': case 'm': shift = 20; end++; break;
		case 'G': case 'g': shift = 30; end++; break;
		case 'T': case 't': shift = 40; end++; break;
		default: break;
		}
		if (*end == 'B' || *end == 'b' || (shift && (*end == 'i' && end[1] == 'B' && ++end)))
			end++;
	}
	if (v <= 0 || errno || *end || v > (INT64_MAX >> shift))
		return err_set("--max-memory '%s': expected a positive size such as 512M or 8G", s);
	*bytes = (int64_t)v << shift;
	return 0;
}

int limit_check(int64_t need, const char *what)
{
	if (need <= max_memory)
		return 0;
	return err_set("%s need %lld bytes, more than --max-memory %lld allows", what,
		       (long long)need, (long long)max_memory);
}

int64_t limit_shape_bytes(int rank, const int64_t *shape, int64_t esize)
{
	int64_t n = esize;
	for (int i = 0; i < rank; i++)
		if (shape[i] < 0)
			return -1;
	for (int i = 0; i < rank; i++) {
		if (shape[i] == 0)
			return 0;
		if (__builtin_mul_overflow(n, shape[i], &n))
			return -1;
	}
	return n;
}

int limit_check_outputs(const struct ir_graph *g, const struct ir_op *op)
{
	for (int j = 0; j < op->n_out; j++) {
		const struct ir_tensor *t = &g->tensors[op->out[j]];
		const char *on = op->name, *ot = op_name(op->type);
		char sh[160];
		if (t->rank < 0)
			continue;   /* not given: the caller's check */
		shape_str(sh, sizeof sh, t->rank, t->shape);
		for (int i = 0; i < t->rank; i++)
			if (t->shape[i] < 0 || t->shape[i] > IR_MAX_DIM)
				return err_set("op '%s' (%s): output '%s': dimension %d of shape %s is "
					       "out of range [0, %d]", on, ot, t->name, i, sh,
					       IR_MAX_DIM);
		int64_t b = limit_shape_bytes(t->rank, t->shape, (int64_t)dtype_size(t->dtype));
		if (b < 0 || b > IR_MAX_TENSOR_BYTES)
			return err_set("op '%s' (%s): output '%s': shape %s of %s needs more than "
				       "%lld bytes", on, ot, t->name, sh, dtype_name(t->dtype),
				       (long long)IR_MAX_TENSOR_BYTES);
		if (b > max_memory)
			return err_set("op '%s' (%s): output '%s': shape %s of %s needs %lld bytes, "
				       "more than --max-memory %lld allows", on, ot, t->name, sh,
				       dtype_name(t->dtype), (long long)b, (long long)max_memory);
	}
	return 0;
}

static uint64_t be(const unsigned char *p, int n)
{
	uint64_t v = 0;
	for (int i = 0; i < n; i++)
		v = v << 8 | p[i];
	return v;
}

int limit_check_msgpack(const void *buf, size_t len)
{
	const unsigned char *p = buf, *end = p + len;
	uint64_t pending = 1;   /* objects still to walk */
	while (pending > 0 && p < end) {
		unsigned c = *p++;
		uint64_t skip = 0, items = 0;
		int lenbytes = 0, ext = 0;
		pending--;
		if (c <= 0x7f || c >= 0xe0 || c == 0xc0 || c == 0xc2 || c == 0xc3)
			continue;
		if (c >= 0x80 && c <= 0x8f) {
			items = 2 * (uint64_t)(c & 0x0f);
		} else if (c >= 0x90 && c <= 0x9f) {
			items = c & 0x0f;
		} else if (c >= 0xa0 && c <= 0xbf) {
			skip = c & 0x1f;
		} else {
			switch (c) {
			case 0xc4: case 0xd9: lenbytes = 1; break;
			case 0xc5: case 0xda: lenbytes = 2; break;
			case 0xc6: case 0xdb: lenbytes = 4; break;
			case 0xc7: lenbytes = 1; ext = 1; break;
			case 0xc8: lenbytes = 2; ext = 1; break;
			case 0xc9: lenbytes = 4; ext = 1; break;
			case 0xca: case 0xce: case 0xd2: skip = 4; break;
			case 0xcb: case 0xcf: case 0xd3: skip = 8; break;
			case 0xcc: case 0xd0: skip = 1; break;
			case 0xcd: case 0xd1: skip = 2; break;
			case 0xd4: skip = 2; break;
			case 0xd5: skip = 3; break;
			case 0xd6: skip = 5; break;
			case 0xd7: skip = 9; break;
			case 0xd8: skip = 17; break;
			case 0xdc: case 0xde: lenbytes = 2; break;
			case 0xdd: case 0xdf: lenbytes = 4; break;
			default: return 0;   /* 0xc1: the decoder refuses it */
			}
			if (lenbytes) {
				if ((size_t)(end - p) < (size_t)lenbytes)
					return 0;
				uint64_t n = be(p, lenbytes);
				p += lenbytes;
				if (c >= 0xdc)
					items = c >= 0xde ? 2 * n : n;
				else
					skip = n + (uint64_t)ext;
			}
		}
		if (skip > (uint64_t)(end - p))
			return 0;
		p += skip;
		if (items > (uint64_t)(end - p) || pending + items > (uint64_t)(end - p))
			return err_set("%s of %llu elements in %zu bytes",
				       c == 0xde || c == 0xdf || (c >= 0x80 && c <= 0x8f) ?
				       "a map" : "an array",
				       (unsigned long long)(c == 0xde || c == 0xdf ||
							    (c >= 0x80 && c <= 0x8f) ? items / 2 : items),
				       (size_t)(end - p));
		pending += items;
	}
	return 0;
}
