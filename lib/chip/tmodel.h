/* tmodel.h - the .tmodel file (formats/tpuc-tmodel.5): what codegen writes
 * and tpu-sim runs.  A 96-byte header, a msgpack description (I/O, layer
 * table, debug locations), the DMA and compute command streams (lib/chip/isa.h)
 * and the coefficient image, each section 64-byte aligned.
 */
#ifndef TPUC_TMODEL_H
#define TPUC_TMODEL_H

#include <stdint.h>

#include "ir/ir.h"
#include "chip/isa.h"

#define TMODEL_MAGIC "TPUCTMDL"
#define TMODEL_VERSION 1
#define TMODEL_HEADER_BYTES 96
/* No tensor, region or address of a model reaches 2^40 bytes (1 TiB, far
 * past any chip's DDR), so sums of two of them cannot overflow. */
#define TMODEL_MAX_BYTES ((int64_t)1 << 40)

struct tmodel {
	char *name;               /* model name */
	char *chip;               /* chip the streams were generated for */
	enum ir_mode mode;        /* as the graph's; the file holds its name */
	char *producer;           /* "tpuc VERSION" that wrote it; NULL when the
	                           * file predates the key (read only: the
	                           * writer always writes its own) */
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
	int borrowed;             /* 1: buf and coeff belong to another (a stage
	                           * of a bundle, lib/chip/bundle.h) */
};

/* Write M to PATH (NULL or "-": stdout) atomically.  -1 with a message. */
int tmodel_write(const char *path, const struct tmodel *m);
/* Write M into O (lib/ir/base.h, opened by the caller, who commits or
 * aborts it: a tool writing several outputs together).  -1 with a message
 * when the write fails. */
struct out_file;
int tmodel_write_out(struct out_file *o, const struct tmodel *m);
/* Read and check PATH ("-": stdin): header, sections in order inside the
 * file, command encodings and ids, waits naming existing commands, layer
 * indices, opcodes and operand counts matching the layer table; the DDR
 * regions apart and below TMODEL_MAX_BYTES, each weight at its address in
 * the coefficients, each activation inside the activation region; the
 * layer table a valid graph whose stored shapes are those shape inference
 * gives; requantisation parameters in range (tmodel_check_requant).  *M is
 * a new model.  Messages name the file. */
int tmodel_read(const char *path, struct tmodel **m);
/* The per-channel requantisation parameters (formats/tpuc-quant.5) of an
 * int8 Conv, ConvTranspose, Gemm, MatMul or Scale OP, given its inputs' data
 * as the kernel sees them (IN[i], N_IN of them; data NULL when absent): bias,
 * multiplier, shift as inputs 2, 3, 4 (i32 [C] each) or input 2 alone (i32
 * [C,3]).  -1 with a message naming the op when a multiplier is negative or
 * a shift lies outside [0, QUANT_MAX_SHIFT], the range the kernels' rounding
 * shift supports; 0 for other ops, float outputs and forms the kernels
 * refuse themselves. */
struct view;
int tmodel_check_requant(const struct ir_op *op, enum ir_dtype out_dtype,
			 const struct view *in, int n_in);
/* tmodel_check_requant for every op of G over its weights as they are. */
int tmodel_check_requant_graph(const struct ir_graph *g);
/* tmodel_read of the LEN bytes at BUF (64-byte aligned, as xaligned()
 * gives; owned by the model from then on, freed on failure too), named
 * PATH in messages. */
int tmodel_read_buffer(const char *path, void *buf, size_t len, struct tmodel **m);
/* tmodel_read_buffer's checks on the LEN bytes at BUF, which the model
 * only borrows (a stage of a bundle, lib/chip/bundle.h): BUF and the
 * coefficients must outlive it.  With COEFF not NULL the image holds no
 * coefficients: it ends where they would begin (its coeff_offset is LEN)
 * and its coeff_length must be COEFF_BYTES, the bytes at COEFF (64-byte
 * aligned) that it uses.  Messages name FILE. */
int tmodel_read_image(const char *file, const void *buf, size_t len, const void *coeff,
		      uint64_t coeff_bytes, struct tmodel **m);
/* The file for M, *TOTAL bytes (malloc'd); *COEFF_OFF (when not NULL) the
 * offset of its coefficients, the last section. */
unsigned char *tmodel_encode(const struct tmodel *m, uint64_t *total, uint64_t *coeff_off);
void tmodel_free(struct tmodel *m);

#endif
