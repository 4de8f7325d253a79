/* onnx_depth.c - how deep an ONNX model nests its messages, measured
 * before the protobuf decoder sees it (onnx_depth.h).
 *
 * protobuf-c decodes nested messages by recursion, one C frame per level,
 * with no limit of its own: a model of a megabyte that nests a subgraph
 * inside an attribute inside a node inside a graph a hundred thousand
 * times overflows the stack.  This walk follows the wire format without
 * recursion (a stack of its own), descends only into the fields that can
 * nest without bound (subgraphs of attributes and training and function
 * bodies, and TypeProto inside sequence, map and optional types), and
 * counts the depth.  Anything malformed is left to the decoder to refuse.
 */
#include <stddef.h>
#include <stdint.h>

#include "front/onnx_depth.h"
#include "ir/base.h"

enum msg { M_MODEL, M_TRAIN, M_FUNC, M_GRAPH, M_NODE, M_ATTR, M_VALUE, M_TYPE, M_SEQ,
	   M_MAP, M_OPT, M_NONE };

/* The message type of field FIELD of a message of type T, where it is one
 * on a path that may nest; M_NONE for any other field. */
static enum msg child(enum msg t, uint64_t field)
{
	switch (t) {
	case M_MODEL: return field == 7 ? M_GRAPH : field == 20 ? M_TRAIN : field == 25 ? M_FUNC : M_NONE;
	case M_TRAIN: return field == 1 || field == 2 ? M_GRAPH : M_NONE;
	case M_FUNC: return field == 7 ? M_NODE : M_NONE;
	case M_GRAPH: return field == 1 ? M_NODE : field == 11 || field == 12 || field == 13 ? M_VALUE : M_NONE;
	case M_NODE: return field == 5 ? M_ATTR : M_NONE;
	case M_ATTR: return field == 6 || field == 11 ? M_GRAPH : field == 14 || field == 15 ? M_TYPE : M_NONE;
	case M_VALUE: return field == 2 ? M_TYPE : M_NONE;
	case M_TYPE: return field == 4 ? M_SEQ : field == 5 ? M_MAP : field == 9 ? M_OPT : M_NONE;
	case M_SEQ: return field == 1 ? M_TYPE : M_NONE;
	case M_MAP: return field == 2 ? M_TYPE : M_NONE;
	case M_OPT: return field == 1 ? M_TYPE : M_NONE;
	default: return M_NONE;
	}
}

int onnx_varint(const unsigned char **p, const unsigned char *end, uint64_t *v)
{
	*v = 0;
	for (int shift = 0; shift < 64 && *p < end; shift += 7) {
		unsigned char b = *(*p)++;
		*v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return 0;
	}
	return -1;
}

int onnx_check_depth(const void *buf, size_t len, const char *path)
{
	struct { enum msg t; const unsigned char *end; } st[ONNX_MAX_DEPTH + 1];
	const unsigned char *p = buf;
	int top = 0;
	st[0].t = M_MODEL;
	st[0].end = p + len;
	for (;;) {
		while (top > 0 && p >= st[top].end)
			top--;
		if (p >= st[top].end)
			return 0;
		uint64_t key, n;
		if (onnx_varint(&p, st[top].end, &key) < 0)
			return 0;
		switch (key & 7) {
		case 0:
			if (onnx_varint(&p, st[top].end, &n) < 0)
				return 0;
			break;
		case 1:
			p += 8;
			break;
		case 5:
			p += 4;
			break;
		case 2: {
			if (onnx_varint(&p, st[top].end, &n) < 0 || n > (uint64_t)(st[top].end - p))
				return 0;
			enum msg c = child(st[top].t, key >> 3);
			if (c == M_NONE) {
				p += n;
				break;
			}
			if (top == ONNX_MAX_DEPTH)
				return err_set("'%s': graphs, attributes or types nested more than %d "
					       "deep (at byte %zu)", path, ONNX_MAX_DEPTH,
					       (size_t)(p - (const unsigned char *)buf));
			top++;
			st[top].t = c;
			st[top].end = p + n;
			break;
		}
		default:
			return 0;   /* groups: the decoder's to refuse */
		}
	}
}
