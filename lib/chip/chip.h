/* chip.h - descriptions of the target chips (CHIP.md) and the cost model's
 * cycle formulas.  Every pass and the simulator read their numbers from a
 * struct chip; none is hard-coded elsewhere.  The formulas are specified in
 * formats/tpuc-isa.5 (COST MODEL) and tested in tests/unit/test_isa.c.
 */
#ifndef TPUC_CHIP_H
#define TPUC_CHIP_H

#include <stdint.h>

#include "ir/ir.h"

struct chip {
	const char *name;          /* "tpu-a", "tpu-b" */
	double clock_hz;           /* core clock, Hz */
	int lanes;                 /* NPUs; channel c lives in lane c mod lanes */
	int64_t lmem_bytes;        /* local memory per lane, bytes */
	int banks;                 /* local memory banks per lane */
	int vec_bytes;             /* vector unit: bytes per lane per cycle; row alignment */
	int cube_i8;               /* cube: int8 MACs per cycle, whole chip */
	int cube_f16;              /* cube: bf16/f16 MACs per cycle */
	int cube_f32;              /* cube: f32 MACs per cycle */
	int64_t ddr_bytes;         /* global memory address space, bytes */
	int ddr_bpc;               /* DDR bandwidth, bytes per cycle */
	int lmem_bpc;              /* local-to-local move bandwidth, bytes per cycle */
	int dma_latency;           /* DMA start-up latency, cycles per command */
	int issue_cycles;          /* compute engine issue overhead, cycles per command */
};

/* The chip called NAME, or NULL (no message: callers name the context). */
const struct chip *chip_find(const char *name);
/* The default chip (tpu-a). */
const struct chip *chip_default(void);
/* Every known chip, NULL-terminated. */
extern const struct chip *const chip_list[];

/* Cube MACs per cycle for operands of dtype DT (i8/u8, f16/bf16, else f32). */
int chip_cube_macs(const struct chip *c, enum ir_dtype dt);
/* Vector elements of dtype DT per lane per cycle: vec_bytes / size, >= 1. */
int chip_vec_elems(const struct chip *c, enum ir_dtype dt);

/* ---- cost model: cycles of one command (formats/tpuc-isa.5) ---- */

/* DMA between DDR and local memory: dma_latency + ceil(bytes / ddr_bpc). */
int64_t cost_dma(const struct chip *c, int64_t bytes);
/* Cube work (conv, matmul): groups independent products, each of OC output
 * channels spread over the lanes, POS output positions, reducing K products
 * per output.  K is taken in tiles of cube_macs / lanes per lane per cycle:
 * issue + groups * ceil(OC / lanes) * POS * ceil(K / (cube_macs / lanes)). */
int64_t cost_cube(const struct chip *c, enum ir_dtype dt, int64_t groups, int64_t oc,
		  int64_t pos, int64_t k);
/* Vector work over a tensor of C channels (on lanes) × N × H rows × W
 * elements, PASSES operations per element:
 * issue + ceil(C / lanes) * N * H * ceil(W / vec_elems(dt)) * passes. */
int64_t cost_vector(const struct chip *c, enum ir_dtype dt, int64_t ch, int64_t n,
		    int64_t h, int64_t w, int64_t passes);

/* Round n up to a multiple of a (a > 0). */
static inline int64_t align_to(int64_t n, int64_t a) { return (n + a - 1) / a * a; }
static inline int64_t ceil_div(int64_t n, int64_t d) { return (n + d - 1) / d; }

#endif
