/* isa.h - the instruction set of the tpuc chips: the two command streams a
 * .tmodel carries, their binary encoding, and the local memory layout they
 * address.  This header is the whole ISA; formats/tpuc-isa.5 says the same
 * for readers in other languages, with the cost model's formulas.
 *
 * The chip has two engines that run concurrently, each over its own stream
 * of commands in order:
 *
 *   DMA engine      LOAD  a block of a DDR tensor into local memory
 *                   STORE a block of local memory back to a DDR tensor
 *   compute engine  one command per op slice: run layer L of the layer
 *                   table over output rows [row0, row0 + rows), operands
 *                   and result at given local addresses
 *
 * Commands are numbered from 1 in each stream.  Every command names the id
 * of a command of the OTHER engine it waits for (0: none); it starts only
 * when that command and, the streams being in order, every earlier command
 * of that engine have finished.
 *
 * Worked example: a Relu over x [1,64,56,56] f32 in two slices of 28 rows,
 * x at DDR 0x1000, y at DDR 0x32000, two buffers per tensor in every lane:
 *
 *   dma 1  LOAD  wait c0  ddr 0x1000             lmem 0      n1 c64 h28 w56
 *   dma 2  LOAD  wait c0  ddr 0x1000+28*56*4     lmem 14336  n1 c64 h28 w56
 *   cmp 1  Relu  wait d1  layer 0 out rows 0..28  in rows 0..28  x@0      y@7168
 *   dma 3  STORE wait c1  ddr 0x32000            lmem 7168   n1 c64 h28 w56
 *   cmp 2  Relu  wait d2  layer 0 out rows 28..56 in rows 28..56 x@14336  y@21504
 *   dma 4  STORE wait c2  ddr 0x32000+28*56*4    lmem 21504  n1 c64 h28 w56
 *
 * (Rows are 56 × 4 = 224 bytes, padded to 256 for the 64-byte vector unit;
 * one channel slot per lane: 28 × 256 = 7168 bytes a slice; buffer 0 holds
 * x and y at 0 and 7168, buffer 1 at 14336 and 21504.)
 *
 * Local memory layout.  A tensor is seen as four axes N, C, H, W (the lane
 * shape, isa_lane_shape).  Channel c lives in lane c mod lanes, in channel
 * slot c / lanes; each lane holds ceil(C / lanes) slots of N × H rows, one
 * row being W elements padded to a multiple of the vector width:
 *
 *   byte address of (n, c, h, w) in lane c mod lanes =
 *       base + (((c / lanes) * N + n) * H + h) * pitch + w * size
 *   pitch = align(W * size, vec_bytes)
 *
 * Encoding.  Commands are fixed-size little-endian 64-bit words; each field
 * sits at a documented bit offset and is written with shifts and masks,
 * never with C bitfields.  Reserved bits are written 0 and refused when set.
 */
#ifndef TPUC_ISA_H
#define TPUC_ISA_H

#include <stdint.h>

#include "chip/chip.h"
#include "ir/ir.h"

#define ISA_VERSION 1

/* ---- DMA command: 32 bytes, 4 words ----
 *
 *   word 0  bits  0..3   opcode (ISA_DMA_LOAD, ISA_DMA_STORE)
 *           bits  4..7   dtype (enum ir_dtype) of the elements moved
 *           bits  8..31  id: position in the DMA stream, from 1
 *           bits 32..63  wait: compute command id, 0 = none
 *   word 1  bits  0..31  ddr: DDR byte address of element (0,0,0,0) of the block
 *           bits 32..63  lmem: local byte address of the block in every lane
 *   word 2  bits  0..15  n    bits 16..31  c    bits 32..47  h    bits 48..63  w
 *                        the block's lane shape (isa_lane_shape)
 *   word 3  bits  0..31  cstride: DDR distance between channels, elements
 *           bits 32..63  nstride: DDR distance between batch items, elements
 *
 * In DDR, rows of a block are dense: element (n,c,h,w) is at
 * ddr + (n * nstride + c * cstride + h * w_total + w) * size with w_total = W. */
enum isa_dma_op { ISA_DMA_LOAD = 1, ISA_DMA_STORE = 2 };
#define ISA_DMA_BYTES 32

struct isa_dma {
	int op;              /* enum isa_dma_op */
	enum ir_dtype dtype; /* element type */
	uint32_t id;         /* 1-based position in the DMA stream (24 bits) */
	uint32_t wait;       /* compute command to wait for, 0 = none */
	uint32_t ddr;        /* DDR byte address */
	uint32_t lmem;       /* local byte address (same in every lane) */
	int n, c, h, w;      /* block shape, elements (16 bits each) */
	uint32_t cstride;    /* DDR channel stride, elements */
	uint32_t nstride;    /* DDR batch stride, elements */
};

/* ---- compute command: 96 bytes, 12 words ----
 *
 *   word 0  bits  0..7   opcode: the op's stable opcode (OP_LIST, lib/ir/ir.h)
 *           bits  8..31  id: position in the compute stream, from 1
 *           bits 32..63  wait: DMA command id, 0 = none
 *   word 1  bits  0..31  layer: index into the .tmodel's layer table
 *           bits 32..39  n_in: operands that are inputs (in the layer's order)
 *           bits 40..47  n_out: results, following the inputs
 *           bits 48..63  sliced: bit i set when operand i holds only some
 *                        rows along H (activations); clear when it holds
 *                        the whole tensor (weights, broadcast inputs)
 *   word 2  bits  0..15  out_row0   bits 16..31  out_rows
 *           bits 32..47  in_row0    bits 48..63  in_rows
 *                        output rows [out_row0, out_row0 + out_rows) of the
 *                        whole output are computed from rows [in_row0,
 *                        in_row0 + in_rows) of input 0 (and the same rows
 *                        of the other sliced inputs); unsliced ops give 0
 *                        and the whole H (1 for tensors of rank < 3)
 *   words 3..10          one per operand slot (ISA_MAX_OPERANDS):
 *           bits  0..31  addr: local address; ISA_NO_ADDR for absent
 *                        optional inputs and unused slots
 *           bits 32..47  row0: first row the operand holds (sliced only)
 *           bits 48..63  rows: rows the operand holds (sliced only); they
 *                        include the rows the command reads or writes
 *   word 11 bits  0..15  ch0: first output channel computed
 *           bits 16..31  chans: output channels computed, 0 = all
 *           bits 32..47  chsplit: bit i set when operand i holds only
 *                        channels [ch0, ch0 + chans): the output channels of
 *                        a result, the first axis of a weight
 *           bits 48..63  reserved, 0 */
#define ISA_CMP_BYTES 96
#define ISA_MAX_OPERANDS 8
#define ISA_NO_ADDR 0xffffffffu

struct isa_cmp {
	int opcode;          /* enum op_type in memory; its stable opcode (op_code) on disk */
	uint32_t id;         /* 1-based position in the compute stream (24 bits) */
	uint32_t wait;       /* DMA command to wait for, 0 = none */
	uint32_t layer;      /* layer table index */
	int n_in, n_out;     /* operand counts */
	unsigned sliced;     /* bit per operand: holds some rows only */
	int out_row0, out_rows; /* output rows computed */
	int in_row0, in_rows;   /* rows of input 0 read */
	uint32_t addr[ISA_MAX_OPERANDS]; /* local byte addresses */
	int row0[ISA_MAX_OPERANDS];      /* sliced operands: first row held */
	int rows[ISA_MAX_OPERANDS];      /* sliced operands: rows held */
	int ch0, chans;      /* output channels computed; chans 0 = all */
	unsigned chsplit;    /* bit per operand: holds channels [ch0, ch0 + chans) only */
};

/* A host command: a compute command with no operands (n_in = n_out = 0),
 * naming a layer placed on the host (PLACE_HOST).  The host runs that op
 * with the interpreter's float kernel on its tensors in DDR, at their
 * addresses in the layer table; the command costs the chip no cycles.
 * Codegen makes it wait for every DMA command before it and the next DMA
 * command wait for it: DDR is consistent on both sides of it. */
int isa_cmp_host(const struct isa_cmp *c);

/* Encode into exactly ISA_DMA_BYTES / ISA_CMP_BYTES bytes.  Fields must be
 * in range (the encoder masks them; codegen checks ranges first). */
void isa_dma_encode(const struct isa_dma *d, unsigned char *out);
void isa_cmp_encode(const struct isa_cmp *c, unsigned char *out);
/* Decode; -1 with a message on an unknown opcode, a reserved bit set or
 * counts out of range. */
int isa_dma_decode(const unsigned char *in, struct isa_dma *d);
int isa_cmp_decode(const unsigned char *in, struct isa_cmp *c);
/* One line of text for a command (disassembly), into buf of cap bytes. */
void isa_dma_str(const struct isa_dma *d, char *buf, int cap);
void isa_cmp_str(const struct isa_cmp *c, char *buf, int cap);

/* ---- local memory layout ----
 *
 * Lane shape of a tensor: activations of rank 4 or more are N, C, H and the
 * remaining axes folded into W; rank 3 [N,C,L] is N, C, 1, L; rank 2 [N,C]
 * is N, C, 1, 1; rank 1 [C] is 1, C, 1, 1; a scalar 1, 1, 1, 1.  Weights
 * put their first axis (output channels, Gemm's output features) on the
 * lanes: 1, d0, 1, d1 × d2 × ..., except weights of rank 2 or more whose
 * first axis is 1, which take the activation layout of their shape (and
 * split along axis 1).  H-slices replace H by the slice's rows. */
void isa_lane_shape(int rank, const int64_t *shape, int is_weight, int64_t s[4]);
/* 1 if tensor t is held in the weight layout (a weight not of the kind
 * above): its first axis on the lanes, split along that axis. */
int isa_weight_layout(const struct ir_tensor *t);
/* Row pitch in local memory: align(w * size, vec_bytes). */
int64_t isa_pitch(const struct chip *c, enum ir_dtype dt, int64_t w);
/* Bytes per lane of a tensor of lane shape s: ceil(C / lanes) * N * H * pitch. */
int64_t isa_lane_bytes(const struct chip *c, enum ir_dtype dt, const int64_t s[4]);

/* The axis of its IR shape along which operand i (inputs first, then
 * results) of a sliced op holds rows: 2 (the lane H of rank >= 4), except
 * input 0 of a Transpose, which holds its axis perm[2] (the axis its
 * output's axis 2 comes from).  Rows along axis 3 are held as the lane
 * shape of the tensor with that axis cut to the rows; they need N = 1. */
int isa_slice_axis(const struct ir_graph *g, const struct ir_op *op, int i);
/* Lane shape of activation t holding `rows` entries of axis `axis` (rows
 * < 0: the whole tensor). */
void isa_held_shape(const struct ir_tensor *t, int axis, int64_t rows, int64_t s[4]);
/* The number of inputs whose bytes, one after the other, are op's output,
 * else 0: 1 for Reshape, Flatten, Squeeze, Unsqueeze and Identity of one
 * activation input and output of one dtype and size; n_in for a Concat
 * with nothing before its axis but axes of size 1, whose inputs share the
 * output's dtype and are copied unchanged (not quantised, or multipliers
 * 2^30, shifts 30 and the output's zero point).  Such an op may run as a
 * copy by the DMA engine alone, without compute commands. */
int isa_is_copy(const struct ir_graph *g, const struct ir_op *op);

#endif
