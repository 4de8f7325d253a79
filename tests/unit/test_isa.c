/* test_isa - the ISA encoding (encode, decode, compare field by field, and
 * the documented bit positions), the local memory layout and the cost
 * model's formulas against plain arithmetic (formats/tpuc-isa.5).
 */
#include <stdlib.h>
#include <string.h>

#include "ir/base.h"
#include "chip/chip.h"
#include "chip/cost.h"
#include "chip/isa.h"
#include "ir/op.h"
#include "sim/sim.h"

#include "check.h"

static uint64_t word(const unsigned char *p, int i)
{
	uint64_t v = 0;
	for (int b = 7; b >= 0; b--)
		v = v << 8 | p[8 * i + b];
	return v;
}

static unsigned rnd(void)
{
	static uint64_t s = 88172645463325252ull;
	s ^= s << 13;
	s ^= s >> 7;
	s ^= s << 17;
	return (unsigned)s;
}

static void test_dma(void)
{
	struct isa_dma d = {
		.op = ISA_DMA_STORE, .dtype = DT_I8, .id = 0xabcdef, .wait = 0x12345678,
		.ddr = 0xfedcba98, .lmem = 0x3ffc0, .n = 1, .c = 512, .h = 7, .w = 65535,
		.cstride = 49, .nstride = 25088,
	};
	unsigned char b[ISA_DMA_BYTES];
	struct isa_dma e;
	isa_dma_encode(&d, b);
	/* The documented positions, word by word. */
	CHECK(word(b, 0) == (2 | (uint64_t)DT_I8 << 4 | (uint64_t)0xabcdef << 8 | (uint64_t)0x12345678 << 32));
	CHECK(word(b, 1) == (0xfedcba98ull | (uint64_t)0x3ffc0 << 32));
	CHECK(word(b, 2) == (1 | (uint64_t)512 << 16 | (uint64_t)7 << 32 | (uint64_t)65535 << 48));
	CHECK(word(b, 3) == (49 | (uint64_t)25088 << 32));
	CHECK(isa_dma_decode(b, &e) == 0);
	CHECK(!memcmp(&d, &e, sizeof d));

	/* Random round trips. */
	for (int i = 0; i < 1000; i++) {
		struct isa_dma r = {
			.op = 1 + (int)(rnd() % 2), .dtype = (enum ir_dtype)(rnd() % DT_COUNT),
			.id = rnd() & 0xffffff, .wait = rnd(), .ddr = rnd(), .lmem = rnd(),
			.n = (int)(rnd() & 0xffff), .c = (int)(rnd() & 0xffff),
			.h = (int)(rnd() & 0xffff), .w = (int)(rnd() & 0xffff),
			.cstride = rnd(), .nstride = rnd(),
		};
		isa_dma_encode(&r, b);
		CHECK(isa_dma_decode(b, &e) == 0 && !memcmp(&r, &e, sizeof r));
	}
	/* Bad opcode and dtype are refused. */
	d.op = 3;
	isa_dma_encode(&d, b);
	CHECK(isa_dma_decode(b, &e) < 0 && strstr(err_msg(), "unknown opcode"));
	d.op = ISA_DMA_LOAD;
	isa_dma_encode(&d, b);
	b[0] |= 0xf0;
	CHECK(isa_dma_decode(b, &e) < 0 && strstr(err_msg(), "dtype"));
}

static void test_cmp(void)
{
	struct isa_cmp k = {
		.opcode = OP_CONV, .id = 77, .wait = 1234, .layer = 5, .n_in = 3, .n_out = 1,
		.sliced = 0x9, .out_row0 = 28, .out_rows = 28, .in_row0 = 55, .in_rows = 58,
		.ch0 = 128, .chans = 64, .chsplit = 0xe,
	};
	for (int i = 0; i < ISA_MAX_OPERANDS; i++)
		k.addr[i] = i < 4 ? (uint32_t)(i * 4096) : ISA_NO_ADDR;
	k.row0[0] = 55;
	k.rows[0] = 58;
	k.row0[3] = 28;
	k.rows[3] = 28;
	unsigned char b[ISA_CMP_BYTES];
	struct isa_cmp e;
	isa_cmp_encode(&k, b);
	CHECK(word(b, 0) == ((uint64_t)OP_CONV | (uint64_t)77 << 8 | (uint64_t)1234 << 32));
	CHECK(word(b, 1) == (5 | (uint64_t)3 << 32 | (uint64_t)1 << 40 | (uint64_t)0x9 << 48));
	CHECK(word(b, 2) == (28 | (uint64_t)28 << 16 | (uint64_t)55 << 32 | (uint64_t)58 << 48));
	CHECK(word(b, 3) == (0 | (uint64_t)55 << 32 | (uint64_t)58 << 48));
	CHECK(word(b, 4) == 4096);
	CHECK(word(b, 6) == (12288 | (uint64_t)28 << 32 | (uint64_t)28 << 48));
	CHECK(word(b, 10) == 0xffffffff);
	CHECK(word(b, 11) == (128 | (uint64_t)64 << 16 | (uint64_t)0xe << 32));
	CHECK(isa_cmp_decode(b, &e) == 0);
	CHECK(!memcmp(&k, &e, sizeof k));

	for (int i = 0; i < 1000; i++) {
		struct isa_cmp r = {
			.opcode = (int)(rnd() % OP_COUNT), .id = rnd() & 0xffffff, .wait = rnd(),
			.layer = rnd(), .n_in = (int)(rnd() % 8), .n_out = 1,
			.out_row0 = (int)(rnd() & 0xffff), .out_rows = (int)(rnd() & 0xffff),
			.in_row0 = (int)(rnd() & 0xffff), .in_rows = (int)(rnd() & 0xffff),
			.ch0 = (int)(rnd() & 0xffff), .chans = 1 + (int)(rnd() % 0xfffe),
		};
		r.sliced = rnd() & ((1u << (r.n_in + 1)) - 1);
		r.chsplit = rnd() & ((1u << (r.n_in + 1)) - 1);
		for (int j = 0; j < ISA_MAX_OPERANDS; j++) {
			r.addr[j] = rnd();
			if (r.sliced >> j & 1) {
				r.row0[j] = (int)(rnd() & 0xffff);
				r.rows[j] = (int)(rnd() & 0xffff);
			}
		}
		isa_cmp_encode(&r, b);
		CHECK(isa_cmp_decode(b, &e) == 0 && !memcmp(&r, &e, sizeof r));
	}
	/* Refused: unknown opcode, too many operands, sliced bits past them. */
	k.opcode = OP_COUNT;
	isa_cmp_encode(&k, b);
	CHECK(isa_cmp_decode(b, &e) < 0);
	k.opcode = OP_RELU;
	k.n_in = 8;
	isa_cmp_encode(&k, b);
	CHECK(isa_cmp_decode(b, &e) < 0);
	k.n_in = 1;
	k.row0[3] = k.rows[3] = 0;
	k.sliced = 0x4;
	isa_cmp_encode(&k, b);
	CHECK(isa_cmp_decode(b, &e) < 0);
	k.sliced = 0x3;
	k.chsplit = 0x2;
	k.chans = 0;
	isa_cmp_encode(&k, b);
	CHECK(isa_cmp_decode(b, &e) < 0);
	k.chans = 64;
	isa_cmp_encode(&k, b);
	CHECK(isa_cmp_decode(b, &e) == 0);
	b[95] = 1;   /* reserved bits of word 11 */
	CHECK(isa_cmp_decode(b, &e) < 0);
	k.row0[2] = 1;   /* rows of an unsliced operand */
	isa_cmp_encode(&k, b);
	CHECK(isa_cmp_decode(b, &e) < 0);
	k.row0[2] = 0;

	/* Disassembly names the op and the operands. */
	char line[256];
	k.sliced = 0x3;
	k.chsplit = 0;
	k.chans = 0;
	isa_cmp_str(&k, line, sizeof line);
	CHECK(strstr(line, "Relu") && strstr(line, "s@0[55+58]") && strstr(line, "-> s@4096[0+0]"));
	k.chsplit = 0x2;
	k.ch0 = 64;
	k.chans = 64;
	isa_cmp_str(&k, line, sizeof line);
	CHECK(strstr(line, "ch 64+64") && strstr(line, "-> sc@4096"));
}

static void test_layout(void)
{
	const struct chip *a = chip_find("tpu-a"), *b = chip_find("tpu-b");
	CHECK(a && b && chip_default() == a && !chip_find("tpu-c"));
	CHECK(a->lanes == 64 && a->lmem_bytes == 256 * 1024 && a->vec_bytes == 64);
	CHECK(b->lanes == 32 && b->lmem_bytes == 128 * 1024 && b->ddr_bpc == 16);
	int64_t s[4];
	isa_lane_shape(4, (int64_t[]){ 1, 64, 56, 56 }, 0, s);
	CHECK(s[0] == 1 && s[1] == 64 && s[2] == 56 && s[3] == 56);
	isa_lane_shape(4, (int64_t[]){ 128, 64, 3, 3 }, 1, s);      /* conv weight OIHW */
	CHECK(s[0] == 1 && s[1] == 128 && s[2] == 1 && s[3] == 576);
	isa_lane_shape(2, (int64_t[]){ 1, 512 }, 0, s);
	CHECK(s[0] == 1 && s[1] == 512 && s[2] == 1 && s[3] == 1);
	isa_lane_shape(3, (int64_t[]){ 2, 8, 5 }, 0, s);
	CHECK(s[0] == 2 && s[1] == 8 && s[2] == 1 && s[3] == 5);
	isa_lane_shape(0, NULL, 0, s);
	CHECK(s[0] == 1 && s[1] == 1 && s[2] == 1 && s[3] == 1);
	/* f32 rows of 56 = 224 bytes pad to 256; 65 channels take 2 slots. */
	CHECK(isa_pitch(a, DT_F32, 56) == 256);
	CHECK(isa_pitch(a, DT_I8, 56) == 64);
	CHECK(isa_pitch(b, DT_I8, 56) == 64 && isa_pitch(b, DT_I8, 7) == 32);
	CHECK(isa_lane_bytes(a, DT_F32, (int64_t[]){ 1, 65, 28, 56 }) == 2 * 28 * 256);
	CHECK(isa_lane_bytes(a, DT_I8, (int64_t[]){ 2, 64, 3, 3 }) == 2 * 3 * 64);
}

static void test_cost(void)
{
	const struct chip *a = chip_find("tpu-a"), *b = chip_find("tpu-b");
	/* DMA: latency + ceil(bytes / ddr_bpc). */
	CHECK(cost_dma(a, 0) == 128);
	CHECK(cost_dma(a, 1) == 129);
	CHECK(cost_dma(a, 64 * 1000) == 128 + 1000);
	CHECK(cost_dma(b, 1000) == 128 + 63);
	struct isa_dma d = { .op = ISA_DMA_LOAD, .dtype = DT_F32, .n = 1, .c = 3, .h = 10, .w = 224 };
	CHECK(cost_dma_cycles(a, &d) == 128 + 3 * 10 * 224 * 4 / 64);
	/* Cube: int8 K tile = 16384 / 64 = 256 per lane per cycle. */
	CHECK(cost_cube(a, DT_I8, 1, 64, 3136, 576) == 16 + 1 * 3136 * 3);
	CHECK(cost_cube(a, DT_I8, 1, 65, 10, 256) == 16 + 2 * 10 * 1);
	CHECK(cost_cube(a, DT_F32, 1, 512, 1, 512) == 16 + 8 * 1 * 32);     /* f32 tile 16 */
	CHECK(cost_cube(a, DT_F16, 2, 64, 1, 129) == 16 + 2 * 1 * 1 * 2);   /* f16 tile 128 */
	CHECK(cost_cube(b, DT_I8, 1, 64, 100, 128) == 16 + 2 * 100 * 1);   /* 4096 / 32 = 128 */
	/* Vector: ceil(C / lanes) * N * H * ceil(W / (vec_bytes / size)) * passes. */
	CHECK(cost_vector(a, DT_F32, 64, 1, 56, 56, 1) == 16 + 56 * 4);
	CHECK(cost_vector(a, DT_I8, 96, 1, 112, 112, 9) == 16 + 2 * 112 * 2 * 9);
	CHECK(cost_vector(b, DT_I8, 96, 1, 112, 112, 9) == 16 + 3 * 112 * 4 * 9);
	CHECK(chip_vec_elems(a, DT_BF16) == 32 && chip_vec_elems(b, DT_F32) == 8);
	CHECK(chip_cube_macs(a, DT_I8) == 16384 && chip_cube_macs(a, DT_BF16) == 8192 &&
	      chip_cube_macs(a, DT_F32) == 1024);
}

/* cost_cmp_cycles picks the formula by op: cube for conv, vector for
 * depthwise conv, pooling windows and elementwise ops. */
static void test_op_cost(void)
{
	const struct chip *a = chip_find("tpu-a");
	struct ir_graph *g = graph_new(DIALECT_TPU, STAGE_ADDRESSED);
	int x = graph_add_tensor(g, "x", DT_I8, 4, (int64_t[]){ 1, 64, 56, 56 });
	int8_t *wd = xcalloc(128 * 64 * 9, 1);
	int w = graph_add_weight(g, "w", DT_I8, 4, (int64_t[]){ 128, 64, 3, 3 }, wd);
	int dw = graph_add_weight(g, "dw", DT_I8, 4, (int64_t[]){ 64, 1, 3, 3 }, wd);
	int y = graph_add_tensor(g, "y", DT_I8, 4, (int64_t[]){ 1, 128, 28, 28 });
	int z = graph_add_tensor(g, "z", DT_I8, 4, (int64_t[]){ 1, 64, 56, 56 });
	int p = graph_add_tensor(g, "p", DT_I8, 4, (int64_t[]){ 1, 64, 28, 28 });
	int r = graph_add_tensor(g, "r", DT_I8, 4, (int64_t[]){ 1, 64, 56, 56 });
	int o = graph_add_op(g, OP_CONV, "conv", 2, (int[]){ x, w }, 1, &y);
	op_set_ints(&g->ops[o], "strides", 2, (int64_t[]){ 2, 2 });
	op_set_ints(&g->ops[o], "pads", 4, (int64_t[]){ 1, 1, 1, 1 });
	o = graph_add_op(g, OP_CONV, "dwconv", 2, (int[]){ x, dw }, 1, &z);
	op_set_int(&g->ops[o], "group", 64);
	op_set_ints(&g->ops[o], "pads", 4, (int64_t[]){ 1, 1, 1, 1 });
	o = graph_add_op(g, OP_MAXPOOL, "pool", 1, &x, 1, &p);
	op_set_ints(&g->ops[o], "kernel_shape", 2, (int64_t[]){ 3, 3 });
	op_set_ints(&g->ops[o], "strides", 2, (int64_t[]){ 2, 2 });
	op_set_ints(&g->ops[o], "pads", 4, (int64_t[]){ 1, 1, 1, 1 });
	graph_add_op(g, OP_RELU, "relu", 1, &x, 1, &r);
	free(wd);

	struct isa_cmp k = { .layer = 0, .n_in = 2, .n_out = 1 };
	CHECK(cost_cmp_cycles(a, g, &k) == 16 + 2 * 28 * 28 * 3);   /* K = 576 = 3 tiles */
	k.sliced = 0x5;
	k.out_rows = 10;
	CHECK(cost_cmp_cycles(a, g, &k) == 16 + 2 * 10 * 28 * 3);
	k = (struct isa_cmp){ .layer = 1, .n_in = 2, .n_out = 1 };
	CHECK(cost_cmp_cycles(a, g, &k) == 16 + 1 * 56 * 1 * 9);
	k = (struct isa_cmp){ .layer = 2, .n_in = 1, .n_out = 1 };
	CHECK(cost_cmp_cycles(a, g, &k) == 16 + 28 * 1 * 9);
	k = (struct isa_cmp){ .layer = 3, .n_in = 1, .n_out = 1, .sliced = 3, .out_rows = 7 };
	CHECK(cost_cmp_cycles(a, g, &k) == 16 + 7 * 1);
	graph_free(g);

	/* A batched MatMul [64, 3, 49, 49] x [64, 3, 49, 32]: OC 32, K 49 (one
	 * tile), POS 64 x 3 x 49 whole, 64 x 3 x 5 for a slice of 5 rows, 64 x 2
	 * x 5 for 2 channels of it.  A ConvTranspose [1, 6, 10, 8] -> [1, 3, 20,
	 * 16] (k 2, s 2): POS 10 x 8 x 4 whole, 3 x 8 x 4 for 3 input rows. */
	g = graph_new(DIALECT_TPU, STAGE_ADDRESSED);
	int ma = graph_add_tensor(g, "ma", DT_I8, 4, (int64_t[]){ 64, 3, 49, 49 });
	int mb = graph_add_tensor(g, "mb", DT_I8, 4, (int64_t[]){ 64, 3, 49, 32 });
	int my = graph_add_tensor(g, "my", DT_I8, 4, (int64_t[]){ 64, 3, 49, 32 });
	graph_add_op(g, OP_MATMUL, "mm", 2, (int[]){ ma, mb }, 1, &my);
	int dx = graph_add_tensor(g, "dx", DT_I8, 4, (int64_t[]){ 1, 6, 10, 8 });
	int8_t dwd[6 * 3 * 4] = { 0 };
	int dwt = graph_add_weight(g, "dwt", DT_I8, 4, (int64_t[]){ 3, 6, 2, 2 }, dwd);
	int dy = graph_add_tensor(g, "dy", DT_I8, 4, (int64_t[]){ 1, 3, 20, 16 });
	o = graph_add_op(g, OP_CONVTRANSPOSE, "dc", 2, (int[]){ dx, dwt }, 1, &dy);
	op_set_ints(&g->ops[o], "kernel_shape", 2, (int64_t[]){ 2, 2 });
	op_set_ints(&g->ops[o], "strides", 2, (int64_t[]){ 2, 2 });
	k = (struct isa_cmp){ .layer = 0, .n_in = 2, .n_out = 1 };
	CHECK(cost_cmp_cycles(a, g, &k) == 16 + 64 * 3 * 49);
	k.sliced = 0x7;
	k.out_rows = 5;
	CHECK(cost_cmp_cycles(a, g, &k) == 16 + 64 * 3 * 5);
	k.chans = 2;
	CHECK(cost_cmp_cycles(a, g, &k) == 16 + 64 * 2 * 5);
	k = (struct isa_cmp){ .layer = 1, .n_in = 2, .n_out = 1 };
	CHECK(cost_cmp_cycles(a, g, &k) == 16 + 10 * 8 * 4);
	k = (struct isa_cmp){ .layer = 1, .n_in = 2, .n_out = 1, .sliced = 0x5, .in_rows = 3, .out_rows = 6 };
	CHECK(cost_cmp_cycles(a, g, &k) == 16 + 3 * 8 * 4);
	graph_free(g);
}

/* Which axis sliced operands hold, held shapes, the activation layout of
 * weights whose first axis is 1, and which ops are copies. */
static void test_slicing(void)
{
	struct ir_graph *g = graph_new(DIALECT_TPU, STAGE_ADDRESSED);
	float z[2 * 8 * 6] = { 0 };
	int x = graph_add_tensor(g, "x", DT_F32, 5, (int64_t[]){ 1, 2, 6, 8, 4 });
	int t = graph_add_tensor(g, "t", DT_F32, 5, (int64_t[]){ 1, 2, 8, 4, 6 });
	int r = graph_add_tensor(g, "r", DT_F32, 3, (int64_t[]){ 1, 64, 6 });
	int a = graph_add_tensor(g, "a", DT_F32, 3, (int64_t[]){ 1, 32, 6 });
	int b = graph_add_tensor(g, "b", DT_F32, 3, (int64_t[]){ 1, 16, 6 });
	int cat = graph_add_tensor(g, "cat", DT_F32, 3, (int64_t[]){ 1, 48, 6 });
	int w = graph_add_weight(g, "w", DT_F32, 3, (int64_t[]){ 1, 16, 6 }, z);
	int o = graph_add_op(g, OP_TRANSPOSE, "tr", 1, &x, 1, &t);
	op_set_ints(&g->ops[o], "perm", 5, (int64_t[]){ 0, 1, 3, 4, 2 });
	graph_add_op(g, OP_RESHAPE, "rs", 1, &t, 1, &r);
	o = graph_add_op(g, OP_CONCAT, "cc", 2, (int[]){ a, b }, 1, &cat);
	op_set_int(&g->ops[o], "axis", 1);
	graph_add_op(g, OP_CONCAT, "cw", 2, (int[]){ a, w }, 1, &cat);
	CHECK(isa_slice_axis(g, &g->ops[0], 0) == 3 && isa_slice_axis(g, &g->ops[0], 1) == 2);
	CHECK(isa_slice_axis(g, &g->ops[1], 0) == 2);
	int64_t s[4];
	isa_held_shape(&g->tensors[x], 3, 3, s);
	CHECK(s[0] == 1 && s[1] == 2 && s[2] == 6 && s[3] == 12);
	isa_held_shape(&g->tensors[x], 2, -1, s);
	CHECK(s[0] == 1 && s[1] == 2 && s[2] == 6 && s[3] == 32);
	CHECK(!isa_weight_layout(&g->tensors[w]) && !isa_weight_layout(&g->tensors[x]));
	isa_lane_shape(3, g->tensors[w].shape, 1, s);
	CHECK(s[0] == 1 && s[1] == 16 && s[2] == 1 && s[3] == 6);
	CHECK(isa_is_copy(g, &g->ops[0]) == 0 && isa_is_copy(g, &g->ops[1]) == 1);
	CHECK(isa_is_copy(g, &g->ops[2]) == 2 && isa_is_copy(g, &g->ops[3]) == 0);
	/* Int8: a copy only with identity requantisation. */
	g->tensors[a].dtype = g->tensors[b].dtype = g->tensors[cat].dtype = DT_I8;
	op_set_ints(&g->ops[2], "multipliers", 2, (int64_t[]){ 1 << 30, 1 << 30 });
	op_set_ints(&g->ops[2], "shifts", 2, (int64_t[]){ 30, 30 });
	CHECK(isa_is_copy(g, &g->ops[2]) == 2);
	op_set_ints(&g->ops[2], "shifts", 2, (int64_t[]){ 30, 31 });
	CHECK(isa_is_copy(g, &g->ops[2]) == 0);
	graph_free(g);
}

int main(void)
{
	test_slicing();
	test_dma();
	test_cmp();
	test_layout();
	test_cost();
	test_op_cost();
	return check_report("test_isa");
}
