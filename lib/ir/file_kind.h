/* file_kind.h - what a file a tool refused looks like, for a hint in the
 * message: an ONNX model where IR was wanted suggests onnx2top, IR where a
 * .tmodel was wanted suggests codegen, and so on.
 */
#ifndef TPUC_FILE_KIND_H
#define TPUC_FILE_KIND_H

#include <stddef.h>

enum file_kind {
	FILE_UNKNOWN, FILE_ONNX, FILE_IR, FILE_TMODEL, FILE_NPZ, FILE_TEXT,
};

/* The kind of the LEN bytes at P, read from PATH (its extension decides
 * between kinds the bytes alone cannot tell). */
enum file_kind file_kind_of(const void *p, size_t len, const char *path);

/* A hint for a file of kind K given where WANT was expected, such as
 * " (an ONNX model: import it with onnx2top first)", or "" when there is
 * none.  Static storage. */
const char *file_kind_hint(enum file_kind k, enum file_kind want);

#endif
