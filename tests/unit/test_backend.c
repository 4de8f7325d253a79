/* test_backend - the back half of the pipeline on small Tpu graphs built
 * here: weight-reorder, layergroup, addr-assign, codegen, the .tmodel round
 * trip and tpu-sim, against the reference interpreter on the same graph.
 * INT8 graphs must match bit for bit, F32 graphs within float rounding; a
 * chip with a tiny local memory forces slicing along H.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "back/addr.h"
#include "ir/base.h"
#include "chip/chip.h"
#include "chip/isa_copy.h"
#include "back/codegen.h"
#include "run/interp.h"
#include "back/layergroup.h"
#include "ir/npz.h"
#include "ir/op.h"
#include "back/reorder.h"
#include "sim/sim.h"
#include "chip/tmodel.h"

#include "check.h"

static float frand(void)
{
	static uint32_t s = 12345;
	s = s * 1664525u + 1013904223u;
	return (float)(s >> 8) / (float)(1 << 24) * 2 - 1;
}

static int weight_f32(struct ir_graph *g, const char *name, int rank, const int64_t *shape, float amp)
{
	int64_t n = 1;
	for (int i = 0; i < rank; i++)
		n *= shape[i];
	float *v = xmalloc(sizeof(float) * (size_t)n);
	for (int64_t i = 0; i < n; i++)
		v[i] = amp * frand();
	int t = graph_add_weight(g, name, DT_F32, rank, shape, v);
	free(v);
	return t;
}

static int act(struct ir_graph *g, const char *name)
{
	return graph_add_tensor(g, name, DT_F32, 0, NULL);
}

/* An empty lowered graph NAME for tpu-a in MODE. */
static struct ir_graph *new_graph(const char *name, enum ir_mode mode)
{
	struct ir_graph *g = graph_new(DIALECT_TPU, STAGE_LOWERED);
	g->name = xstrdup(name);
	g->chip = xstrdup("tpu-a");
	g->mode = mode;
	return g;
}

/* G built by BUILDER, its shapes inferred first when INFER: exits on an
 * invalid graph. */
static struct ir_graph *built(struct ir_graph *g, const char *builder, int infer)
{
	if ((infer && graph_infer(g) < 0) || ir_verify(g) < 0) {
		fprintf(stderr, "%s: %s\n", builder, err_msg());
		exit(1);
	}
	return g;
}

static void conv_attrs(struct ir_graph *g, int op, int k, int stride, int pad, int group)
{
	op_set_ints(&g->ops[op], "kernel_shape", 2, (int64_t[]){ k, k });
	op_set_ints(&g->ops[op], "strides", 2, (int64_t[]){ stride, stride });
	op_set_ints(&g->ops[op], "pads", 4, (int64_t[]){ pad, pad, pad, pad });
	if (group > 1)
		op_set_int(&g->ops[op], "group", group);
}

/* F32: conv, relu, conv + add, maxpool, depthwise conv, avgpool, gap,
 * flatten, gemm (transB = 0), on x [1,3,H,W]. */
static struct ir_graph *build_f32(int h, int w)
{
	struct ir_graph *g = new_graph("small", MODE_F32);
	int x = graph_add_tensor(g, "x", DT_F32, 4, (int64_t[]){ 1, 3, h, w });
	int w1 = weight_f32(g, "w1", 4, (int64_t[]){ 70, 3, 3, 3 }, 0.5f);
	int b1 = weight_f32(g, "b1", 1, (int64_t[]){ 70 }, 0.1f);
	int w2 = weight_f32(g, "w2", 4, (int64_t[]){ 70, 70, 3, 3 }, 0.05f);
	int wd = weight_f32(g, "wd", 4, (int64_t[]){ 70, 1, 3, 3 }, 0.3f);
	int wg = weight_f32(g, "wg", 2, (int64_t[]){ 70, 10 }, 0.2f);
	int bg = weight_f32(g, "bg", 1, (int64_t[]){ 10 }, 0.1f);
	int c1 = act(g, "c1"), r1 = act(g, "r1"), c2 = act(g, "c2"), a = act(g, "a");
	int p = act(g, "p"), d = act(g, "d"), ap = act(g, "ap"), gp = act(g, "gp");
	int f = act(g, "f"), y = act(g, "y");
	int o = graph_add_op(g, OP_CONV, "conv1", 3, (int[]){ x, w1, b1 }, 1, &c1);
	conv_attrs(g, o, 3, 1, 1, 1);
	graph_add_op(g, OP_RELU, "relu1", 1, &c1, 1, &r1);
	o = graph_add_op(g, OP_CONV, "conv2", 2, (int[]){ r1, w2 }, 1, &c2);
	conv_attrs(g, o, 3, 1, 1, 1);
	graph_add_op(g, OP_ADD, "add", 2, (int[]){ c2, r1 }, 1, &a);
	o = graph_add_op(g, OP_MAXPOOL, "pool", 1, &a, 1, &p);
	conv_attrs(g, o, 3, 2, 1, 1);
	o = graph_add_op(g, OP_CONV, "dw", 2, (int[]){ p, wd }, 1, &d);
	conv_attrs(g, o, 3, 1, 1, 70);
	o = graph_add_op(g, OP_AVGPOOL, "avg", 1, &d, 1, &ap);
	conv_attrs(g, o, 2, 2, 0, 1);
	graph_add_op(g, OP_GAVGPOOL, "gap", 1, &ap, 1, &gp);
	o = graph_add_op(g, OP_FLATTEN, "flat", 1, &gp, 1, &f);
	op_set_int(&g->ops[o], "axis", 1);
	graph_add_op(g, OP_GEMM, "fc", 3, (int[]){ f, wg, bg }, 1, &y);
	graph_set_io(g, 1, &x, 2, (int[]){ y, a });
	return built(g, "build_f32", 1);
}

/* F32 detection head: conv to 12 channels, Reshape [1,2,6,H,W], Transpose
 * to [1,2,H,W,6] (rows of input axis 3), Sigmoid, Slice and Mul on the
 * last axis, Concat on the last axis, Reshape [1,2HW,6] and Add of a
 * constant of that shape (rank 3: chunks of channels; the constant in the
 * activation layout).  On a small local memory the 5-D Reshape runs as a
 * DMA copy and the rest in slices or chunks. */
static struct ir_graph *build_head(int h, int w)
{
	struct ir_graph *g = new_graph("head", MODE_F32);
	int x = graph_add_tensor(g, "x", DT_F32, 4, (int64_t[]){ 1, 3, h, w });
	int wc = weight_f32(g, "wc", 4, (int64_t[]){ 12, 3, 1, 1 }, 0.5f);
	int k = weight_f32(g, "k", 1, (int64_t[]){ 1 }, 2.0f);
	int pos = weight_f32(g, "pos", 3, (int64_t[]){ 1, 2 * h * w, 6 }, 1.0f);
	int c = act(g, "c"), r = act(g, "r"), t = act(g, "t"), s = act(g, "s"), sa = act(g, "sa");
	int sb = act(g, "sb"), m = act(g, "m"), cat = act(g, "cat"), r3 = act(g, "r3");
	int y = act(g, "y");
	int o = graph_add_op(g, OP_CONV, "conv", 2, (int[]){ x, wc }, 1, &c);
	conv_attrs(g, o, 1, 1, 0, 1);
	o = graph_add_op(g, OP_RESHAPE, "reshape", 1, &c, 1, &r);
	op_set_ints(&g->ops[o], "shape", 5, (int64_t[]){ 1, 2, 6, h, w });
	o = graph_add_op(g, OP_TRANSPOSE, "transpose", 1, &r, 1, &t);
	op_set_ints(&g->ops[o], "perm", 5, (int64_t[]){ 0, 1, 3, 4, 2 });
	graph_add_op(g, OP_SIGMOID, "sigmoid", 1, &t, 1, &s);
	o = graph_add_op(g, OP_SLICE, "slice_a", 1, &s, 1, &sa);
	op_set_ints(&g->ops[o], "starts", 1, (int64_t[]){ 0 });
	op_set_ints(&g->ops[o], "ends", 1, (int64_t[]){ 2 });
	op_set_ints(&g->ops[o], "axes", 1, (int64_t[]){ 4 });
	o = graph_add_op(g, OP_SLICE, "slice_b", 1, &s, 1, &sb);
	op_set_ints(&g->ops[o], "starts", 1, (int64_t[]){ 2 });
	op_set_ints(&g->ops[o], "ends", 1, (int64_t[]){ 6 });
	op_set_ints(&g->ops[o], "axes", 1, (int64_t[]){ -1 });
	graph_add_op(g, OP_MUL, "mul", 2, (int[]){ sa, k }, 1, &m);
	o = graph_add_op(g, OP_CONCAT, "concat", 2, (int[]){ m, sb }, 1, &cat);
	op_set_int(&g->ops[o], "axis", 4);
	o = graph_add_op(g, OP_RESHAPE, "reshape3", 1, &cat, 1, &r3);
	op_set_ints(&g->ops[o], "shape", 3, (int64_t[]){ 1, 2 * h * w, 6 });
	graph_add_op(g, OP_ADD, "add", 2, (int[]){ r3, pos }, 1, &y);
	graph_set_io(g, 1, &x, 1, &y);
	return built(g, "build_head", 1);
}

/* F32 matmuls: x [1,3,H,W] as [1,3H,W] times a weight [W,24]; as
 * [1,H,3,W] times x as [1,H,W,3] (a batch of H), both in chunks of axis 1
 * on a small local memory. */
static struct ir_graph *build_mm(int h, int w)
{
	struct ir_graph *g = new_graph("mm", MODE_F32);
	int x = graph_add_tensor(g, "x", DT_F32, 4, (int64_t[]){ 1, 3, h, w });
	int wm = weight_f32(g, "wm", 2, (int64_t[]){ w, 24 }, 0.5f);
	int r3 = act(g, "r3"), a = act(g, "a"), b = act(g, "b"), y3 = act(g, "y3"), y4 = act(g, "y4");
	int o = graph_add_op(g, OP_RESHAPE, "r3", 1, &x, 1, &r3);
	op_set_ints(&g->ops[o], "shape", 3, (int64_t[]){ 1, 3 * h, w });
	graph_add_op(g, OP_MATMUL, "mm3", 2, (int[]){ r3, wm }, 1, &y3);
	o = graph_add_op(g, OP_RESHAPE, "ra", 1, &x, 1, &a);
	op_set_ints(&g->ops[o], "shape", 4, (int64_t[]){ 1, h, 3, w });
	o = graph_add_op(g, OP_RESHAPE, "rb", 1, &x, 1, &b);
	op_set_ints(&g->ops[o], "shape", 4, (int64_t[]){ 1, h, w, 3 });
	graph_add_op(g, OP_MATMUL, "mm4", 2, (int[]){ a, b }, 1, &y4);
	graph_set_io(g, 1, &x, 2, (int[]){ y3, y4 });
	return built(g, "build_mm", 1);
}

static int weight_raw(struct ir_graph *g, const char *name, enum ir_dtype dt, int rank,
		      const int64_t *shape, int lo, int hi)
{
	int64_t n = 1;
	for (int i = 0; i < rank; i++)
		n *= shape[i];
	size_t es = dtype_size(dt);
	unsigned char *v = xmalloc(es * (size_t)n);
	for (int64_t i = 0; i < n; i++) {
		int32_t q = lo + (int32_t)((frand() + 1) / 2 * (float)(hi - lo));
		if (dt == DT_I8)
			((int8_t *)v)[i] = (int8_t)q;
		else
			((int32_t *)v)[i] = q;
	}
	int t = graph_add_weight(g, name, dt, rank, shape, v);
	free(v);
	return t;
}

static int act_i8(struct ir_graph *g, const char *name, float scale, int rank,
		  int64_t n1, int64_t n2, int64_t n3)
{
	int64_t shape[4] = { 1, n1, n2, n3 };
	int t = graph_add_tensor(g, name, DT_I8, rank, shape);
	g->tensors[t].scale = scale;
	return t;
}

/* Per-channel requant inputs [bias, mult, shift] for oc channels. */
static void requant(struct ir_graph *g, const char *base, int oc, int *ids)
{
	char name[64];
	snprintf(name, sizeof name, "%s_bias", base);
	ids[0] = weight_raw(g, name, DT_I32, 1, (int64_t[]){ oc }, -2000, 2000);
	snprintf(name, sizeof name, "%s_mult", base);
	ids[1] = weight_raw(g, name, DT_I32, 1, (int64_t[]){ oc }, 1 << 30, 0x7fffffff);
	snprintf(name, sizeof name, "%s_shift", base);
	ids[2] = weight_raw(g, name, DT_I32, 1, (int64_t[]){ oc }, 38, 40);
}

/* A Cast NAME of in to out, to dtype TO ("i8", "f32"); its op. */
static int cast_to(struct ir_graph *g, const char *name, int in, int out, const char *to)
{
	int o = graph_add_op(g, OP_CAST, name, 1, &in, 1, &out);
	op_set_str(&g->ops[o], "to", to);
	return o;
}

/* An INT8 Conv NAME of in by weight w, requant inputs q (requant()), to
 * out; kernel k, stride, pad and group as conv_attrs(); its op. */
static int conv_i8(struct ir_graph *g, const char *name, int in, int w, const int *q, int out,
		   int k, int stride, int pad, int group)
{
	int o = graph_add_op(g, OP_CONV, name, 5, (int[]){ in, w, q[0], q[1], q[2] }, 1, &out);
	conv_attrs(g, o, k, stride, pad, group);
	return o;
}

/* An INT8 Gemm NAME of in by weight w, requant inputs q, to out. */
static void gemm_i8(struct ir_graph *g, const char *name, int in, int w, const int *q, int out)
{
	graph_add_op(g, OP_GEMM, name, 5, (int[]){ in, w, q[0], q[1], q[2] }, 1, &out);
}

/* INT8 global average pool "gap" of in to gp (multiplier and shift of a
 * 1/H*W mean), then "flat": gp flattened to f from axis 1. */
static void gap_flatten(struct ir_graph *g, int in, int gp, int f)
{
	int o = graph_add_op(g, OP_GAVGPOOL, "gap", 1, &in, 1, &gp);
	op_set_int(&g->ops[o], "multiplier", 1374389535);
	op_set_int(&g->ops[o], "rshift", 38);
	o = graph_add_op(g, OP_FLATTEN, "flat", 1, &gp, 1, &f);
	op_set_int(&g->ops[o], "axis", 1);
}

/* An empty lowered INT8 graph NAME with its input x, f32 [1,3,H,W], and
 * x's quantised form xq ("x_i8", scale 0.02), tensors made in that order. */
static struct ir_graph *new_int8(const char *name, int h, int w, int *x, int *xq)
{
	struct ir_graph *g = new_graph(name, MODE_INT8);
	*x = graph_add_tensor(g, "x", DT_F32, 4, (int64_t[]){ 1, 3, h, w });
	*xq = act_i8(g, "x_i8", 0.02f, 4, 3, h, w);
	return g;
}

/* G's last op, the dequantising cast of yq to its output y, x its input:
 * the graph built by BUILDER (no shape inference: every shape is set). */
static struct ir_graph *dequant_built(struct ir_graph *g, int x, int yq, int y, const char *builder)
{
	cast_to(g, "y_dequant", yq, y, "f32");
	graph_set_io(g, 1, &x, 1, &y);
	return built(g, builder, 0);
}

/* INT8: quantising cast, conv (relu), conv, add, maxpool, depthwise conv,
 * gap, flatten, gemm, dequantising cast. */
static struct ir_graph *build_int8(int h, int w)
{
	int x, xq;
	struct ir_graph *g = new_int8("small8", h, w, &x, &xq);
	int ph = (h - 1) / 2 + 1, pw = (w - 1) / 2 + 1;
	int w1 = weight_raw(g, "w1", DT_I8, 4, (int64_t[]){ 70, 3, 3, 3 }, -127, 127);
	int w2 = weight_raw(g, "w2", DT_I8, 4, (int64_t[]){ 70, 70, 3, 3 }, -127, 127);
	int wd = weight_raw(g, "wd", DT_I8, 4, (int64_t[]){ 70, 1, 3, 3 }, -127, 127);
	int wg = weight_raw(g, "wg", DT_I8, 2, (int64_t[]){ 70, 10 }, -127, 127);
	int q1[3], q2[3], qd[3], qg[3];
	requant(g, "conv1", 70, q1);
	requant(g, "conv2", 70, q2);
	requant(g, "dw", 70, qd);
	requant(g, "fc", 10, qg);
	int c1 = act_i8(g, "c1", 0.05f, 4, 70, h, w), c2 = act_i8(g, "c2", 0.05f, 4, 70, h, w);
	int a = act_i8(g, "a", 0.08f, 4, 70, h, w), p = act_i8(g, "p", 0.08f, 4, 70, ph, pw);
	int d = act_i8(g, "d", 0.05f, 4, 70, ph, pw), gp = act_i8(g, "gp", 0.05f, 4, 70, 1, 1);
	int f = act_i8(g, "f", 0.05f, 2, 70, 0, 0), yq = act_i8(g, "y_i8", 0.1f, 2, 10, 0, 0);
	int y = graph_add_tensor(g, "y", DT_F32, 2, (int64_t[]){ 1, 10 });
	int o = cast_to(g, "x_quant", x, xq, "i8");
	o = conv_i8(g, "conv1", xq, w1, q1, c1, 3, 1, 1, 1);
	op_set_int(&g->ops[o], "do_relu", 1);
	conv_i8(g, "conv2", c1, w2, q2, c2, 3, 1, 1, 1);
	o = graph_add_op(g, OP_ADD, "add", 2, (int[]){ c2, c1 }, 1, &a);
	op_set_ints(&g->ops[o], "multipliers", 2, (int64_t[]){ 1288490189, 1288490189 });
	op_set_int(&g->ops[o], "rshift", 31);
	o = graph_add_op(g, OP_MAXPOOL, "pool", 1, &a, 1, &p);
	conv_attrs(g, o, 3, 2, 1, 1);
	conv_i8(g, "dw", p, wd, qd, d, 3, 1, 1, 70);
	gap_flatten(g, d, gp, f);
	gemm_i8(g, "fc", f, wg, qg, yq);
	return dequant_built(g, x, yq, y, "build_int8");
}

/* INT8: quantising cast, conv 3 -> 64, a grouped conv of 16 groups of 4
 * channels (relu), dequantising cast. */
static struct ir_graph *build_gconv(int h, int w)
{
	int x, xq;
	struct ir_graph *g = new_int8("gconv", h, w, &x, &xq);
	int w1 = weight_raw(g, "w1", DT_I8, 4, (int64_t[]){ 64, 3, 3, 3 }, -127, 127);
	int wg = weight_raw(g, "wg", DT_I8, 4, (int64_t[]){ 64, 4, 3, 3 }, -127, 127);
	int q1[3], qg[3];
	requant(g, "conv1", 64, q1);
	requant(g, "gconv", 64, qg);
	int c1 = act_i8(g, "c1", 0.05f, 4, 64, h, w), c2 = act_i8(g, "c2", 0.05f, 4, 64, h, w);
	int y = graph_add_tensor(g, "y", DT_F32, 4, (int64_t[]){ 1, 64, h, w });
	int o = cast_to(g, "x_quant", x, xq, "i8");
	conv_i8(g, "conv1", xq, w1, q1, c1, 3, 1, 1, 1);
	o = conv_i8(g, "gconv", c1, wg, qg, c2, 3, 1, 1, 16);
	op_set_int(&g->ops[o], "do_relu", 1);
	return dequant_built(g, x, c2, y, "build_gconv");
}

/* INT8: a long conv at full resolution, then a classifier whose weights
 * outweigh everything before it: quantising cast, conv 3 -> 64, conv 64 ->
 * 256, nine Relu, global pool, flatten, gemm 256 -> 512, gemm 512 -> 256, dequantising
 * cast. */
static struct ir_graph *build_tail(int h, int w)
{
	int x, xq;
	struct ir_graph *g = new_int8("tail", h, w, &x, &xq);
	int w1 = weight_raw(g, "w1", DT_I8, 4, (int64_t[]){ 64, 3, 3, 3 }, -127, 127);
	int w2 = weight_raw(g, "w2", DT_I8, 4, (int64_t[]){ 256, 64, 3, 3 }, -127, 127);
	int f1 = weight_raw(g, "f1", DT_I8, 2, (int64_t[]){ 256, 512 }, -127, 127);
	int f2 = weight_raw(g, "f2", DT_I8, 2, (int64_t[]){ 512, 256 }, -127, 127);
	int q1[3], q2[3], qf1[3], qf2[3];
	requant(g, "conv1", 64, q1);
	requant(g, "conv2", 256, q2);
	requant(g, "fc1", 512, qf1);
	requant(g, "fc2", 256, qf2);
	int c1 = act_i8(g, "c1", 0.05f, 4, 64, h, w), c2 = act_i8(g, "c2", 0.05f, 4, 256, h, w);
	int gp = act_i8(g, "gp", 0.05f, 4, 256, 1, 1), f = act_i8(g, "f", 0.05f, 2, 256, 0, 0);
	int y1 = act_i8(g, "y1", 0.1f, 2, 512, 0, 0), yq = act_i8(g, "y_i8", 0.1f, 2, 256, 0, 0);
	int y = graph_add_tensor(g, "y", DT_F32, 2, (int64_t[]){ 1, 256 });
	cast_to(g, "x_quant", x, xq, "i8");
	conv_i8(g, "conv1", xq, w1, q1, c1, 3, 1, 1, 1);
	conv_i8(g, "conv2", c1, w2, q2, c2, 3, 1, 1, 1);
	/* nine Relu: fc2 is more groups ahead than codegen loads in regions */
	for (int i = 0; i < 9; i++) {
		char name[16];
		snprintf(name, sizeof name, "relu%d", i);
		int r = act_i8(g, name, 0.05f, 4, 256, h, w);
		graph_add_op(g, OP_RELU, name, 1, &c2, 1, &r);
		c2 = r;
	}
	gap_flatten(g, c2, gp, f);
	gemm_i8(g, "fc1", f, f1, qf1, y1);
	gemm_i8(g, "fc2", y1, f2, qf2, yq);
	return dequant_built(g, x, yq, y, "build_tail");
}

static void input(struct npz *z, int h, int w)
{
	memset(z, 0, sizeof *z);
	struct npz_array *a = npz_add(z, "x", DT_F32, 4, (int64_t[]){ 1, 3, h, w }, NULL);
	float *v = a->data;
	for (int64_t i = 0; i < 3 * h * w; i++)
		v[i] = 2 * frand();
}

/* Reference: every output of the interpreter on g. */
static int reference(const struct ir_graph *g, const struct npz *in, struct npz *out)
{
	struct interp it;
	memset(out, 0, sizeof *out);
	if (interp_init(&it, g, 1) < 0 || interp_set_inputs(&it, in, "in") < 0 ||
	    interp_run(&it, NULL, NULL) < 0) {
		fprintf(stderr, "reference: %s\n", err_msg());
		return -1;
	}
	for (int i = 0; i < g->n_outputs; i++) {
		const struct ir_tensor *t = &g->tensors[g->outputs[i]];
		float *f = interp_get_f32(&it, g->outputs[i]);
		npz_add(out, t->name, DT_F32, t->rank, t->shape, f);
		free(f);
	}
	interp_free(&it);
	return 0;
}

/* Lowered graph -> tmodel file -> simulator outputs and statistics. */
static int backend(struct ir_graph *g, const struct chip *c, int max_ops, const struct npz *in,
		   struct npz *out, struct sim_stats *st, int *n_cmp)
{
	struct tmodel *m = NULL, *r = NULL;
	char path[] = "/tmp/test_backend.XXXXXX";
	int fd = mkstemp(path);
	close(fd);
	int rc = -1;
	memset(out, 0, sizeof *out);
	if (weight_reorder(g) < 0 || layergroup(g, c, max_ops) < 0 || addr_assign(g, c) < 0 ||
	    codegen(g, c, &m) < 0 || tmodel_write(path, m) < 0 || tmodel_read(path, &r) < 0 ||
	    sim_run(r, c, path, in, "in", out, st, 0) < 0)
		fprintf(stderr, "backend: %s\n", err_msg());
	else
		rc = 0;
	if (r)
		*n_cmp = r->n_cmp;
	tmodel_free(m);
	tmodel_free(r);
	unlink(path);
	return rc;
}

/* Ops of addressed graph g that codegen may give no compute command:
 * copies whose every run addr-assign put in place, and, in a group of
 * their own, copies the DMA engine moves alone when that finishes first
 * (formats/tpuc-isa.5). */
static int copies_without_compute(const struct ir_graph *g)
{
	int n = 0;
	for (int o = 0; o < g->n_ops; o++) {
		struct isa_piece *pc;
		int np = isa_copy_pieces(g, &g->ops[o], &pc), all = np > 0;
		int alone = (o == 0 || g->ops[o - 1].group != g->ops[o].group) &&
			    (o + 1 == g->n_ops || g->ops[o + 1].group != g->ops[o].group);
		for (int i = 0; i < np; i++) {
			const struct ir_tensor *x = &g->tensors[pc[i].src], *y = &g->tensors[pc[i].dst];
			int64_t es = (int64_t)dtype_size(x->dtype);
			all &= pc[i].reps == 1 && x->addr >= 0 &&
			       x->addr + pc[i].src_at * es == y->addr + pc[i].dst_at * es;
		}
		free(pc);
		n += all || (np > 0 && alone);
	}
	return n;
}

/* Largest |a - b| relative to max |a|, over arrays of the same name. */
static double max_rel(const struct npz *a, const struct npz *b, int *same)
{
	double worst = 0;
	*same = 1;
	for (int i = 0; i < a->n; i++) {
		const struct npz_array *x = &a->a[i], *y = npz_find(b, x->name);
		if (!y || y->nbytes != x->nbytes) {
			*same = 0;
			return INFINITY;
		}
		const float *p = x->data, *q = y->data;
		double amax = 1e-30, d = 0;
		for (size_t j = 0; j < x->nbytes / 4; j++) {
			if (fabs(p[j]) > amax) amax = fabs(p[j]);
			if (fabs(p[j] - q[j]) > d) d = fabs(p[j] - q[j]);
		}
		if (memcmp(x->data, y->data, x->nbytes))
			*same = 0;
		if (d / amax > worst)
			worst = d / amax;
	}
	return worst;
}

static void run_case1(const char *what, struct ir_graph *(*build)(int, int), int h, int w,
		      const struct chip *c, int exact, int want_sliced, int max_ops)
{
	struct ir_graph *g = build(h, w);
	struct npz in, ref, out;
	struct sim_stats st;
	int n_cmp = 0, same;
	input(&in, h, w);
	CHECK(reference(g, &in, &ref) == 0);
	CHECK(backend(g, c, max_ops, &in, &out, &st, &n_cmp) == 0);
	double rel = max_rel(&ref, &out, &same);
	int groups = 0;
	for (int i = 0; i < g->n_ops; i++)
		groups += i == 0 || g->ops[i].group != g->ops[i - 1].group;
	fprintf(stderr, "%s on %s (lmem %lld, %d groups): %d compute commands, %lld cycles, "
		"max rel diff %g%s\n", what, c->name, (long long)c->lmem_bytes, groups, n_cmp,
		(long long)st.cycles, rel, same ? " (bit-identical)" : "");
	if (max_ops == 1)
		CHECK(groups == g->n_ops);
	CHECK(out.n == ref.n);
	if (exact)
		CHECK(same);
	else
		CHECK(rel < 1e-5);
	if (want_sliced)
		CHECK(n_cmp > g->n_ops);
	CHECK(n_cmp >= g->n_ops - copies_without_compute(g));
	CHECK(st.cycles > 0 && st.bound > 0 && st.bound <= st.cycles && st.ddr_bytes >= st.min_ddr_bytes);
	sim_stats_free(&st);
	npz_free(&in);
	npz_free(&ref);
	npz_free(&out);
	graph_free(g);
}

/* Each case op by op and with local layer groups. */
static void run_case(const char *what, struct ir_graph *(*build)(int, int), int h, int w,
		     const struct chip *c, int exact, int want_sliced)
{
	run_case1(what, build, h, w, c, exact, want_sliced, 1);
	run_case1(what, build, h, w, c, exact, 0, 64);
}

/* The passes' contracts on the IR itself. */
static void test_passes(void)
{
	struct ir_graph *g = build_int8(8, 8);
	const struct chip *c = chip_find("tpu-a");
	int fc = -1;
	CHECK(weight_reorder(g) == 0 && g->stage == STAGE_REORDERED);
	for (int i = 0; i < g->n_ops; i++) {
		const struct ir_op *op = &g->ops[i];
		if (op->type == OP_CONV || op->type == OP_GEMM) {
			const struct ir_tensor *t = &g->tensors[op->in[2]];
			CHECK(op->n_in == 3 && t->dtype == DT_I32 && t->rank == 2 && t->shape[1] == 3);
		}
		if (op->type == OP_GEMM)
			fc = i;
	}
	/* fc's B is [N,K] now. */
	CHECK(fc >= 0 && op_int(&g->ops[fc], "transB", 0) == 1);
	CHECK(fc >= 0 && g->tensors[g->ops[fc].in[1]].shape[0] == 10);
	CHECK(graph_find_tensor(g, "conv1_mult") < 0 && graph_find_tensor(g, "conv1_coeff") >= 0);

	CHECK(layergroup(g, c, 1) == 0 && g->stage == STAGE_GROUPED);
	struct lg_group *grp;
	int n;
	CHECK(lg_groups(g, &grp, &n) == 0 && n == g->n_ops && grp[3].first == 3 &&
	      grp[3].place == PLACE_GLOBAL);
	free(grp);

	CHECK(addr_assign(g, c) == 0 && g->stage == STAGE_ADDRESSED);
	CHECK(g->coeff_bytes % 64 == 0);
	/* Weights inside the coefficient region; live activations never overlap. */
	for (int i = 0; i < g->n_tensors; i++) {
		const struct ir_tensor *t = &g->tensors[i];
		CHECK(t->addr % 64 == 0);
		if (t->data)
			CHECK(t->addr + (int64_t)t->nbytes <= g->coeff_bytes);
		else
			CHECK(t->addr >= g->coeff_bytes &&
			      t->addr + (int64_t)tensor_bytes(t) <= g->coeff_bytes + g->neuron_bytes);
	}
	for (int o = 0; o < g->n_ops; o++) {
		const struct ir_op *op = &g->ops[o];
		struct isa_piece *pc;
		int copy = isa_copy_pieces(g, op, &pc) > 0;
		free(pc);
		for (int i = 0; i < op->n_in; i++) {
			const struct ir_tensor *a = &g->tensors[op->in[i]], *b = &g->tensors[op->out[0]];
			int64_t ea = a->addr + (int64_t)tensor_bytes(a), eb = b->addr + (int64_t)tensor_bytes(b);
			/* a copy's input may lie inside its output, in place */
			if (!a->data && !(copy && b->addr <= a->addr && ea <= eb))
				CHECK(ea <= b->addr || eb <= a->addr);
		}
	}
	/* Reuse: less neuron memory than the sum of the activations. */
	int64_t sum = 0;
	for (int i = 0; i < g->n_tensors; i++)
		if (!g->tensors[i].data)
			sum += align_to((int64_t)tensor_bytes(&g->tensors[i]), 64);
	CHECK(g->neuron_bytes < sum);
	graph_free(g);

	char b[32];
	addr_fmt_size(b, sizeof b, 512);
	CHECK(!strcmp(b, "512 B"));
	addr_fmt_size(b, sizeof b, 1604321);
	CHECK(!strcmp(b, "1.53 MiB"));
	addr_fmt_size(b, sizeof b, 11744051);
	CHECK(!strcmp(b, "11.2 MiB"));
	addr_fmt_size(b, sizeof b, (int64_t)4 << 30);
	CHECK(!strcmp(b, "4.00 GiB"));
}

/* An op that cannot fit even one row is refused, naming it. */
static void test_too_big(void)
{
	struct chip tiny = *chip_find("tpu-a");
	tiny.lmem_bytes = 1024;
	struct ir_graph *g = build_f32(8, 8);
	struct tmodel *m = NULL;
	CHECK(weight_reorder(g) == 0 && layergroup(g, &tiny, 1) == 0 && addr_assign(g, &tiny) == 0);
	CHECK(codegen(g, &tiny, &m) < 0 && strstr(err_msg(), "does not fit local memory") &&
	      strstr(err_msg(), "'conv"));
	graph_free(g);
}

/* The head on a small local memory: the 5-D Reshape is a DMA copy (no
 * compute command), the Transpose and the rank-3 Add run in pieces. */
static void test_head_cuts(void)
{
	struct chip c = *chip_find("tpu-a");
	c.lmem_bytes = 4096;
	struct ir_graph *g = build_head(24, 32);
	struct tmodel *m = NULL;
	CHECK(weight_reorder(g) == 0 && layergroup(g, &c, 1) == 0 && addr_assign(g, &c) == 0 &&
	      codegen(g, &c, &m) == 0);
	int n_reshape = 0, n_transpose = 0, n_add = 0;
	for (int i = 0; m && i < m->n_cmp; i++) {
		n_reshape += !strcmp(m->loc[i], "reshape");
		n_transpose += !strcmp(m->loc[i], "transpose");
		n_add += !strcmp(m->loc[i], "add");
	}
	CHECK(n_reshape == 0 && n_transpose > 1 && n_add > 1);
	for (int i = 0; m && i < m->n_cmp; i++)
		if (!strcmp(m->loc[i], "transpose"))
			CHECK((m->cmp[i].sliced & 3) == 3 && m->cmp[i].rows[0] == m->cmp[i].in_rows);
	tmodel_free(m);
	graph_free(g);
}

/* Intermediates of a local group read after it: the residual's c1 (conv1,
 * conv2 as a group, the Add after it) and the graph output a (Add, MaxPool
 * as a group) get DDR addresses, are stored slice by slice as well as kept
 * local, and the outputs stay bit-identical to the interpreter's, in one
 * step and in slices with halos. */
static void test_stored_mid(const struct chip *c, int want_sliced)
{
	struct ir_graph *g = build_int8(40, 36);
	int x = g->inputs[0], y = g->outputs[0], a = -1, c1 = -1;
	for (int t = 0; t < g->n_tensors; t++) {
		a = strcmp(g->tensors[t].name, "a") ? a : t;
		c1 = strcmp(g->tensors[t].name, "c1") ? c1 : t;
	}
	graph_set_io(g, 1, &x, 2, (int[]){ y, a });
	struct npz in, ref, out;
	struct sim_stats st;
	struct tmodel *m = NULL, *r = NULL;
	char path[] = "/tmp/test_backend.XXXXXX";
	int fd = mkstemp(path), same;
	close(fd);
	memset(&out, 0, sizeof out);
	input(&in, 40, 36);
	CHECK(reference(g, &in, &ref) == 0);
	CHECK(weight_reorder(g) == 0);
	for (int t = 0; t < g->n_tensors; t++) {
		a = strcmp(g->tensors[t].name, "a") ? a : t;
		c1 = strcmp(g->tensors[t].name, "c1") ? c1 : t;
	}
	/* groups: [x_quant conv1 conv2] [add pool] then one op each (the
	 * convs with the DepthToWidth weight-reorder may put after them) */
	int gi = 0, local = 1;
	const char *prod = "conv1";
	for (int k = 0; k < g->n_ops; k++) {
		const char *nm = g->ops[k].name;
		gi += !strcmp(nm, "add") || (k && !strcmp(g->ops[k - 1].name, "pool"));
		local = gi < 2;
		g->ops[k].group = local ? gi : gi++;
		g->ops[k].place = local ? PLACE_LOCAL : PLACE_GLOBAL;
		if (g->ops[k].out[0] == c1)
			prod = nm;
	}
	g->stage = STAGE_GROUPED;
	CHECK(addr_assign(g, c) == 0 && g->tensors[c1].addr >= 0 && g->tensors[a].addr >= 0);
	CHECK(codegen(g, c, &m) == 0 && tmodel_write(path, m) == 0 && tmodel_read(path, &r) == 0 &&
	      sim_run(r, c, path, &in, "in", &out, &st, 0) == 0);
	CHECK(max_rel(&ref, &out, &same) == 0 && same && out.n == 2);
	/* one store of c1 per slice, after its producer's compute of that
	 * slice (conv1's or its DepthToWidth's) */
	int stores = 0, n_conv1 = 0;
	for (int i = 0; r && i < r->n_dma; i++)
		stores += r->dma[i].op == ISA_DMA_STORE && r->dma[i].wait &&
			  !strcmp(r->loc[r->dma[i].wait - 1], prod) &&
			  r->dma[i].ddr >= g->tensors[c1].addr &&
			  r->dma[i].ddr < g->tensors[c1].addr + (int64_t)tensor_bytes(&g->tensors[c1]);
	for (int i = 0; r && i < r->n_cmp; i++)
		n_conv1 += !strcmp(r->loc[i], prod);
	CHECK(stores == n_conv1 && (!want_sliced || n_conv1 > 1));
	fprintf(stderr, "stored intermediates on %s (lmem %lld): %d slices, %d stores, bit-identical %d\n",
		c->name, (long long)c->lmem_bytes, n_conv1, stores, same);
	sim_stats_free(&st);
	tmodel_free(m);
	tmodel_free(r);
	unlink(path);
	npz_free(&in);
	npz_free(&ref);
	npz_free(&out);
	graph_free(g);
}

/* The network's own work in lowered graph g: the MACs of its Convs and
 * the bytes of its weights, inputs and outputs. */
static void own_work(const struct ir_graph *g, int64_t *macs, int64_t *bytes)
{
	*macs = *bytes = 0;
	for (int i = 0; i < g->n_ops; i++)
		if (g->ops[i].type == OP_CONV)
			*macs += op_defs[OP_CONV]->macs(g, &g->ops[i]);
	for (int t = 0; t < g->n_tensors; t++)
		if (g->tensors[t].data)
			*bytes += (int64_t)g->tensors[t].nbytes;
	*bytes += (int64_t)tensor_bytes(&g->tensors[g->inputs[0]]) +
		  (int64_t)tensor_bytes(&g->tensors[g->outputs[0]]);
}

/* weight-reorder merges the 16 groups of 4 channels of gconv into fewer,
 * larger ones (block-diagonal weights), and the model stays bit-identical;
 * the merged Conv records its own work ("own"), and tpu-sim's MACs and minimum DDR
 * bytes (the roofline bound) stay those of the grouped Conv, not of its
 * zeros. */
static void test_merged_groups(void)
{
	struct ir_graph *g = build_gconv(24, 24);
	int64_t macs, bytes;
	own_work(g, &macs, &bytes);
	CHECK(weight_reorder(g) == 0);
	int k = 0;
	while (k < g->n_ops && strcmp(g->ops[k].name, "gconv"))
		k++;
	CHECK(k < g->n_ops);
	int64_t G = op_int(&g->ops[k], "group", 1);
	const struct ir_tensor *w = &g->tensors[g->ops[k].in[1]];
	CHECK(G < 16 && 16 % G == 0 && w->shape[1] == 64 / G && w->shape[0] == 64);
	/* block-diagonal: output channel o reads only its old group's 4 inputs */
	int ok = 1;
	const int8_t *v = w->data;
	for (int64_t o = 0; o < 64 && w->data; o++)
		for (int64_t j = 0; j < w->shape[1]; j++)
			for (int t = 0; t < 9; t++)
				if (v[(o * w->shape[1] + j) * 9 + t] && j / 4 != o / 4 % (16 / G))
					ok = 0;
	CHECK(ok);
	int64_t own[2];
	CHECK(op_ints(&g->ops[k], "own", own, 2) == 2 && own[0] == 64 * 24 * 24 * 4 * 9 &&
	      op_macs(g, &g->ops[k]) == own[0]);
	graph_free(g);
	run_case1("gconv int8", build_gconv, 24, 24, chip_find("tpu-a"), 1, 0, 64);
	g = build_gconv(24, 24);
	struct npz in, out;
	struct sim_stats st;
	int n_cmp;
	input(&in, 24, 24);
	CHECK(backend(g, chip_find("tpu-a"), 64, &in, &out, &st, &n_cmp) == 0);
	fprintf(stderr, "gconv int8: %lld MACs (own %lld), minimum DDR %lld bytes (own %lld)\n",
		(long long)st.macs, (long long)macs, (long long)st.min_ddr_bytes, (long long)bytes);
	CHECK(st.macs == macs && st.min_ddr_bytes == bytes);
	sim_stats_free(&st);
	npz_free(&in);
	npz_free(&out);
	graph_free(g);
}

/* The classifier's weights load while the convs compute: each op its own
 * group, fc2's weights (their last part) come in the DMA stream before
 * conv2's last store, wherever local memory has room for them (on a small
 * local memory, outside fc2's own region and in parts), and the results
 * stay bit-identical. */
static void test_weights_ahead(const struct chip *c)
{
	struct ir_graph *g = build_tail(64, 64);
	struct npz in, ref, out;
	struct sim_stats st;
	struct tmodel *m = NULL, *r = NULL;
	char path[] = "/tmp/test_backend.XXXXXX";
	int fd = mkstemp(path), same;
	close(fd);
	memset(&out, 0, sizeof out);
	input(&in, 64, 64);
	CHECK(reference(g, &in, &ref) == 0);
	CHECK(weight_reorder(g) == 0 && layergroup(g, c, 1) == 0 && addr_assign(g, c) == 0);
	CHECK(codegen(g, c, &m) == 0 && tmodel_write(path, m) == 0 && tmodel_read(path, &r) == 0 &&
	      sim_run(r, c, path, &in, "in", &out, &st, 0) == 0);
	CHECK(max_rel(&ref, &out, &same) == 0 && same);
	const struct ir_tensor *w = NULL;
	for (int t = 0; t < g->n_tensors; t++)
		if (!strcmp(g->tensors[t].name, "f2"))
			w = &g->tensors[t];
	int last_w = 0, last_store = 0, parts = 0;
	for (int i = 0; r && w && i < r->n_dma; i++) {
		const struct isa_dma *d = &r->dma[i];
		if (d->op == ISA_DMA_LOAD && d->ddr >= w->addr && d->ddr < w->addr + (int64_t)w->nbytes) {
			last_w = i + 1;
			parts++;
		}
		if (d->op == ISA_DMA_STORE && d->wait && !strcmp(r->loc[d->wait - 1], "conv2"))
			last_store = i + 1;
	}
	fprintf(stderr, "weights ahead on %s (lmem %lld): fc2's last weight load %d, conv2's last "
		"store %d, %d parts, %lld cycles\n", c->name, (long long)c->lmem_bytes, last_w,
		last_store, parts, (long long)st.cycles);
	CHECK(last_w > 0 && last_store > 0 && last_w < last_store);
	sim_stats_free(&st);
	tmodel_free(m);
	tmodel_free(r);
	unlink(path);
	npz_free(&in);
	npz_free(&ref);
	npz_free(&out);
	graph_free(g);
}

/* Run [first, first + len) of cx's graph timed alone (out[0]) and before
 * the op after it (out[1]). */
static void time_run(struct codegen_ctx *cx, int first, int len, int64_t out[2])
{
	struct lg_group r[2] = { { first, len, len > 1 ? PLACE_LOCAL : PLACE_GLOBAL },
				 { first + len, 1, PLACE_GLOBAL } };
	out[0] = codegen_group_cycles(cx, first, len);
	out[1] = codegen_runs_cycles(cx, r, 2);
}

/* Two graphs in one process: codegen's context of each keeps what it
 * learns of its own graph (its indexes, the slicing chosen for each run),
 * so that the times of one graph's runs, asked in turn with the other's,
 * are those asked with no other graph about. */
static void test_two_contexts(const struct chip *c)
{
	enum { LONGEST = 4 };
	struct ir_graph *g[2] = { build_int8(40, 36), build_f32(30, 20) };
	int64_t *alone[2], *mixed[2];
	struct codegen_ctx *cx[2];
	int n = 0;
	for (int k = 0; k < 2; k++) {
		CHECK(weight_reorder(g[k]) == 0);
		n = g[k]->n_ops > n ? g[k]->n_ops : n;
	}
	/* every run of up to LONGEST ops but the last op: one graph's, then
	 * the other's, each with its own context; then both in turn */
	for (int k = 0; k < 2; k++) {
		alone[k] = xcalloc((size_t)n * LONGEST * 2, sizeof **alone);
		mixed[k] = xcalloc((size_t)n * LONGEST * 2, sizeof **mixed);
		cx[k] = codegen_ctx_new(g[k], c);
		for (int first = 0; first < g[k]->n_ops; first++)
			for (int len = 1; len <= LONGEST && first + len < g[k]->n_ops; len++)
				time_run(cx[k], first, len, &alone[k][(first * LONGEST + len - 1) * 2]);
		codegen_ctx_free(cx[k]);
	}
	cx[0] = codegen_ctx_new(g[0], c);
	cx[1] = codegen_ctx_new(g[1], c);
	for (int first = 0; first < n; first++)
		for (int len = 1; len <= LONGEST; len++)
			for (int k = 0; k < 2; k++)
				if (first + len < g[k]->n_ops)
					time_run(cx[k], first, len,
						 &mixed[k][(first * LONGEST + len - 1) * 2]);
	int timed = 0, same = 1;
	for (int k = 0; k < 2; k++) {
		for (int i = 0; i < n * LONGEST * 2; i++) {
			same &= alone[k][i] == mixed[k][i];
			timed += alone[k][i] > 0;
		}
		codegen_ctx_free(cx[k]);
		free(alone[k]);
		free(mixed[k]);
		graph_free(g[k]);
	}
	CHECK(same && timed > 2 * n);
	fprintf(stderr, "two contexts on %s (lmem %lld): %d times, the same in turn %d\n",
		c->name, (long long)c->lmem_bytes, timed, same);
}

int main(void)
{
	struct chip small = *chip_find("tpu-a");
	small.lmem_bytes = 12 * 1024;
	struct chip small_b = *chip_find("tpu-b");
	small_b.lmem_bytes = 16 * 1024;
	test_passes();
	test_too_big();
	run_case("f32", build_f32, 16, 20, chip_find("tpu-a"), 0, 0);
	run_case("f32", build_f32, 30, 20, &small, 0, 1);
	run_case("int8", build_int8, 16, 20, chip_find("tpu-a"), 1, 0);
	run_case("int8", build_int8, 40, 36, &small, 1, 1);
	run_case("int8", build_int8, 40, 36, &small_b, 1, 1);
	run_case("int8", build_int8, 13, 9, chip_find("tpu-b"), 1, 0);
	/* Weights larger than local memory: chunks of output channels. */
	struct chip narrow = *chip_find("tpu-b");
	narrow.lanes = 16;
	narrow.lmem_bytes = 8192;
	run_case("f32", build_f32, 12, 10, &narrow, 0, 1);
	narrow.lmem_bytes = 3072;
	run_case("int8", build_int8, 12, 10, &narrow, 1, 1);
	/* Rank-5 and rank-3 ops, Transpose rows of axis 3, DMA copies. */
	run_case("head f32", build_head, 16, 16, chip_find("tpu-a"), 1, 0);
	struct chip head = *chip_find("tpu-a");
	head.lmem_bytes = 4096;
	run_case("head f32", build_head, 24, 32, &head, 1, 1);
	test_head_cuts();
	test_merged_groups();
	test_weights_ahead(chip_find("tpu-a"));
	struct chip mid = *chip_find("tpu-a");
	mid.lmem_bytes = 96 * 1024;   /* the nine Relu's regions leave room */
	test_weights_ahead(&mid);
	test_stored_mid(chip_find("tpu-a"), 0);
	test_stored_mid(&small, 1);
	struct chip mm = *chip_find("tpu-a");
	mm.lmem_bytes = 2048;
	run_case("matmul f32", build_mm, 256, 8, &mm, 1, 1);
	test_two_contexts(&small);
	return check_report("test_backend");
}
