/* chip.c - the chip table (CHIP.md) and the cost model's formulas. */
#include <string.h>

#include "chip/chip.h"

/* Sophgo BM1684X-like: 64 lanes × 256 KiB, 32.8 int8 TOPS, 64 GB/s. */
static const struct chip tpu_a = {
	.name = "tpu-a",
	.clock_hz = 1e9,
	.lanes = 64,
	.lmem_bytes = 256 << 10,
	.banks = 16,
	.vec_bytes = 64,
	.cube_i8 = 16384,
	.cube_f16 = 8192,
	.cube_f32 = 1024,
	.ddr_bytes = (int64_t)4 << 30,
	.ddr_bpc = 64,
	.lmem_bpc = 256,
	.dma_latency = 128,
	.issue_cycles = 16,
};

/* The edge part: a quarter of the cube, a quarter of the bandwidth. */
static const struct chip tpu_b = {
	.name = "tpu-b",
	.clock_hz = 1e9,
	.lanes = 32,
	.lmem_bytes = 128 << 10,
	.banks = 16,
	.vec_bytes = 32,
	.cube_i8 = 4096,
	.cube_f16 = 2048,
	.cube_f32 = 256,
	.ddr_bytes = (int64_t)4 << 30,
	.ddr_bpc = 16,
	.lmem_bpc = 64,
	.dma_latency = 128,
	.issue_cycles = 16,
};

const struct chip *const chip_list[] = { &tpu_a, &tpu_b, NULL };

const struct chip *chip_find(const char *name)
{
	for (int i = 0; chip_list[i]; i++)
		if (name && !strcmp(chip_list[i]->name, name))
			return chip_list[i];
	return NULL;
}

const struct chip *chip_default(void)
{
	return &tpu_a;
}

int chip_cube_macs(const struct chip *c, enum ir_dtype dt)
{
	switch (dt) {
	case DT_I8: case DT_U8: return c->cube_i8;
	case DT_F16: case DT_BF16: return c->cube_f16;
	default: return c->cube_f32;
	}
}

int chip_vec_elems(const struct chip *c, enum ir_dtype dt)
{
	int n = c->vec_bytes / (int)dtype_size(dt);
	return n > 0 ? n : 1;
}

int64_t cost_dma(const struct chip *c, int64_t bytes)
{
	return c->dma_latency + ceil_div(bytes, c->ddr_bpc);
}

int64_t cost_cube(const struct chip *c, enum ir_dtype dt, int64_t groups, int64_t oc,
		  int64_t pos, int64_t k)
{
	int64_t ktile = chip_cube_macs(c, dt) / c->lanes;
	if (ktile < 1)
		ktile = 1;
	return c->issue_cycles + groups * ceil_div(oc, c->lanes) * pos * ceil_div(k, ktile);
}

int64_t cost_vector(const struct chip *c, enum ir_dtype dt, int64_t ch, int64_t n,
		    int64_t h, int64_t w, int64_t passes)
{
	return c->issue_cycles +
	       ceil_div(ch, c->lanes) * n * h * ceil_div(w, chip_vec_elems(c, dt)) * passes;
}
