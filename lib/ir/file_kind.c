/* file_kind.c - guess what a refused file is, for the hint in the message
 * (lib/file_kind.h).
 */
#include "ir/file_kind.h"

#include <string.h>


#define IR_MAGIC "TPUC-IR\0"     /* lib/ir/ir_io.c */
#define TMODEL_MAGIC "TPUCTMDL"  /* lib/chip/tmodel.h, a stage above */
#define BUNDLE_MAGIC "TPUCBNDL"  /* lib/chip/bundle.h: .tmodels of several shapes */

static int ends_with(const char *s, const char *suffix)
{
	size_t n = s ? strlen(s) : 0, m = strlen(suffix);
	return n >= m && !strcmp(s + n - m, suffix);
}

enum file_kind file_kind_of(const void *buf, size_t len, const char *path)
{
	const unsigned char *p = buf;
	if (len >= 8 && (!memcmp(p, TMODEL_MAGIC, 8) || !memcmp(p, BUNDLE_MAGIC, 8)))
		return FILE_TMODEL;
	if (len >= 8 && !memcmp(p, IR_MAGIC, 8))
		return FILE_IR;
	if (len >= 4 && !memcmp(p, "PK\3\4", 4))
		return FILE_NPZ;
	if (len >= 22 && !memcmp(p, "PK\5\6", 4))
		return FILE_NPZ;
	/* An ONNX ModelProto starts with field 1 (ir_version, varint): 0x08. */
	if (ends_with(path, ".onnx") || (len >= 2 && p[0] == 0x08 && p[1] < 0x80))
		return FILE_ONNX;
	size_t i;
	for (i = 0; i < len && i < 256; i++)
		if (p[i] == 0 || (p[i] < 0x20 && !strchr("\t\r\n", p[i])))
			break;
	return len && i == (len < 256 ? len : 256) ? FILE_TEXT : FILE_UNKNOWN;
}

const char *file_kind_hint(enum file_kind k, enum file_kind want)
{
	if (k == want)
		return "";
	switch (k) {
	case FILE_ONNX:
		return want == FILE_IR ? " (an ONNX model: import it with onnx2top first)"
				       : " (an ONNX model: build a .tmodel with onnx2top ... codegen)";
	case FILE_IR:
		return want == FILE_TMODEL ? " (tpuc IR: run it with ir-run, or build a .tmodel with "
					     "weight-reorder | layergroup | addr-assign | codegen)"
					   : " (tpuc IR)";
	case FILE_TMODEL:
		return want == FILE_IR ? " (a .tmodel: inspect it with tmodel-info, run it with tpu-sim)"
				       : " (a .tmodel)";
	case FILE_NPZ:
		return " (an .npz archive: give it with -i)";
	default:
		return "";
	}
}
