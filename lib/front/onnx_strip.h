/* onnx_strip.h - an ONNX model without its initializers' raw bytes, and
 * where they lie in the file, so that the importer copies each weight once
 * (lib/front/onnx_strip.c). */
#ifndef TPUC_FRONT_ONNX_STRIP_H
#define TPUC_FRONT_ONNX_STRIP_H

#include <stddef.h>

/* The raw_data of initializer `index` (in the order of the graph's
 * initializer list) lies at buf[offset, offset + len) of the file. */
struct onnx_raw {
	int index;
	size_t offset, len;
};

struct onnx_stripped {
	unsigned char *buf;          /* the model without those bytes */
	size_t len;
	struct onnx_raw *raw;        /* in initializer order */
	int n_raw;
};

/* 1 and *OUT filled when the model in buf[0..len) has initializers with
 * raw data; 0 (nothing to free) when it has none or does not parse, which
 * is left to the decoder to say. */
int onnx_strip_raw(const void *buf, size_t len, struct onnx_stripped *out);
void onnx_stripped_free(struct onnx_stripped *s);

#endif
