/* tmodel.h - the .tmodel file (formats/tpuc-tmodel.5): what codegen writes
 * and tpu-sim runs.  A 96-byte header, a msgpack description (I/O, layer
 * table, debug locations), the DMA and compute command streams (lib/isa.h)
 * and the coefficient image, each section 64-byte aligned.
 */
#ifndef TPUC_TMODEL_H
#define TPUC_TMODEL_H

#include <stdint.h>

#include "ir.h"
#include "isa.h"

#define TMODEL_MAGIC "TPUCTMDL"
#define TMODEL_VERSION 1
#define TMODEL_HEADER_BYTES 96

struct tmodel {
	char *name;               /* model name */
	char *chip;               /* chip the streams were generated for */
	char *mode;               /* "f32", "int8", ... */
	int64_t coeff_addr;       /* DDR byte address of the coefficient image */
	int64_t coeff_bytes;      /* its size, bytes */
	int64_t neuron_addr;      /* DDR byte address of the activation region */
	int64_t neuron_bytes;     /* its size, bytes */
	int n_dma, n_cmp;         /* commands in each stream */
	struct isa_dma *dma;      /* DMA stream, dma[i].id == i + 1 */
	struct isa_cmp *cmp;      /* compute stream, cmp[i].id == i + 1 */
	void *coeff;              /* coeff_bytes of weights (64-byte aligned); owned
	                           * when buf is NULL, else inside buf */
	/* The layer table as a Tpu graph at stage addressed: every tensor the
	 * streams touch (addresses, shapes, dtypes, scales; weights' data
	 * points into coeff), one op per layer, graph inputs and outputs. */
	struct ir_graph *g;
	char **loc;               /* per compute command: its op's name (debug) */
	void *buf;                /* file buffer (tmodel_read), or NULL */
};

/* Write M to PATH (NULL or "-": stdout) atomically.  -1 with a message. */
int tmodel_write(const char *path, const struct tmodel *m);
/* Read and check PATH ("-": stdin): header, section bounds, command
 * encodings and ids, waits naming existing commands, layer indices, opcodes
 * and operand counts matching the layer table.  *M is a new model. */
int tmodel_read(const char *path, struct tmodel **m);
void tmodel_free(struct tmodel *m);

#endif
