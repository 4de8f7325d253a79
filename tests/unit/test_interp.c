/* test_interp - the interpreter's contracts: samples from calibration-style
 * arrays, input dtype conversion and quantisation, dequantised reads, and
 * the refusal of ops without a kernel for the graph's dialect, and the
 * plan of oneDNN primitives for Top graphs against the per-op kernels
 * (fused, with a callback after each op, and with keep_all).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/base.h"
#include "run/interp.h"
#include "ir/ir.h"
#include "ir/npz.h"
#include "ir/op.h"

static int checks, failures;

#define CHECK(cond) do { \
	checks++; \
	if (!(cond)) { \
		failures++; \
		fprintf(stderr, "%s:%d: check failed: %s (last error: %s)\n", __FILE__, \
			__LINE__, #cond, err_msg()); \
	} \
} while (0)

/* x [1,2,3] -> Relu -> y */
static struct ir_graph *relu_graph(enum ir_dialect d, enum ir_dtype dt)
{
	struct ir_graph *g = graph_new(d, d == DIALECT_TOP ? STAGE_ORIGIN : STAGE_LOWERED);
	int x = graph_add_tensor(g, "x", dt, 3, (int64_t[]){ 1, 2, 3 });
	int y = graph_add_tensor(g, "y", dt, 0, NULL);
	graph_add_op(g, OP_RELU, "relu", 1, &x, 1, &y);
	graph_set_io(g, 1, &x, 1, &y);
	if (graph_infer(g) < 0) {
		fprintf(stderr, "test_interp: %s\n", err_msg());
		exit(1);
	}
	return g;
}

static void test_samples(void)
{
	struct ir_graph *g = relu_graph(DIALECT_TOP, DT_F32);
	struct npz z = { 0 }, z4 = { 0 };
	struct npz_array *a = npz_add(&z, "x", DT_F32, 3, (int64_t[]){ 4, 2, 3 }, NULL);
	struct npz_array *b = npz_add(&z4, "x", DT_F32, 4, (int64_t[]){ 4, 1, 2, 3 }, NULL);
	for (int i = 0; i < 24; i++)
		((float *)a->data)[i] = ((float *)b->data)[i] = (float)(i % 2 ? i : -i);
	struct interp it;
	CHECK(interp_init(&it, g, 1) == 0);
	for (int s = 0; s < 4; s++) {
		CHECK(interp_set_sample(&it, &z, "calib.npz", s) == 0);
		CHECK(interp_run(&it, NULL, NULL) == 0);
		float *y = interp_get_f32(&it, g->outputs[0]);
		for (int i = 0; i < 6; i++) {
			int v = s * 6 + i;
			CHECK(y[i] == (v % 2 ? v : 0));
		}
		free(y);
		CHECK(interp_set_sample(&it, &z4, "calib4.npz", s) == 0);
		float *x = interp_get_f32(&it, g->inputs[0]);
		CHECK(x[5] == (float)(s * 6 + 5));
		free(x);
	}
	CHECK(interp_set_sample(&it, &z, "calib.npz", 4) < 0);
	CHECK(!strcmp(err_msg(), "'calib.npz': sample 4 out of range: array 'x' holds 4"));
	CHECK(interp_set_sample(&it, &z4, "calib4.npz", 7) < 0);
	CHECK(!strcmp(err_msg(), "'calib4.npz': sample 7 out of range: array 'x' holds 4"));
	CHECK(interp_set_inputs(&it, &z, "in.npz") < 0);
	CHECK(!strcmp(err_msg(), "'in.npz': array 'x' has shape [4,2,3], graph input expects [1,2,3]"));
	struct npz empty = { 0 };
	CHECK(interp_set_inputs(&it, &empty, "e.npz") < 0);
	CHECK(!strcmp(err_msg(), "'e.npz': no array for graph input 'x' (the file holds no arrays)"));
	interp_free(&it);
	npz_free(&z);
	npz_free(&z4);
	graph_free(g);
}

/* An int8 input with scale 0.5 and zero point 3 takes floats quantised
 * (round half away, saturated) and reads back dequantised. */
static void test_quantised_io(void)
{
	struct ir_graph *g = relu_graph(DIALECT_TOP, DT_I8);
	g->tensors[g->inputs[0]].scale = 0.5f;
	g->tensors[g->inputs[0]].zero_point = 3;
	struct npz z = { 0 };
	npz_add(&z, "x", DT_F32, 3, (int64_t[]){ 1, 2, 3 },
		(float[]){ 1.25f, -1.25f, 100.0f, -100.0f, 0.0f, 2.0f });
	struct interp it;
	CHECK(interp_init(&it, g, 1) == 0);
	CHECK(interp_set_inputs(&it, &z, "q.npz") == 0);
	const int8_t *q = it.val[g->inputs[0]];
	int8_t want[6] = { 6, 0, 127, -128, 3, 7 };
	CHECK(!memcmp(q, want, 6));
	float *x = interp_get_f32(&it, g->inputs[0]);
	CHECK(x[0] == 1.5f && x[1] == -1.5f && x[2] == 62.0f && x[3] == -65.5f && x[4] == 0.0f);
	free(x);
	interp_free(&it);
	npz_free(&z);
	graph_free(g);
}

/* Numeric inputs convert to the input's dtype by value. */
static void test_convert_inputs(void)
{
	struct ir_graph *g = graph_new(DIALECT_TOP, STAGE_ORIGIN);
	int x = graph_add_tensor(g, "ids", DT_I64, 1, (int64_t[]){ 3 });
	int y = graph_add_tensor(g, "f", DT_F32, 0, NULL);
	int c = graph_add_op(g, OP_CAST, "cast", 1, &x, 1, &y);
	op_set_str(&g->ops[c], "to", "f32");
	graph_set_io(g, 1, &x, 1, &y);
	CHECK(graph_infer(g) == 0);
	struct npz z = { 0 };
	npz_add(&z, "ids", DT_I32, 1, (int64_t[]){ 3 }, (int32_t[]){ 7, -2, 100000 });
	struct interp it;
	CHECK(interp_init(&it, g, 1) == 0);
	CHECK(interp_set_inputs(&it, &z, "ids.npz") == 0);
	CHECK(interp_run(&it, NULL, NULL) == 0);
	const int64_t *ids = it.val[x];
	CHECK(ids[0] == 7 && ids[1] == -2 && ids[2] == 100000);
	const float *f = it.val[y];
	CHECK(f[0] == 7 && f[1] == -2 && f[2] == 100000);
	interp_free(&it);
	npz_free(&z);
	graph_free(g);
}

static int stop_after_first(struct interp *it, int op, void *user)
{
	(*(int *)user)++;
	return -7;
}

/* A Tpu graph holding an op without a chip kernel is refused by name; a
 * callback's negative result stops the run. */
static void test_refusals(void)
{
	/* a training loss: a float kernel, no chip kernel */
	struct ir_graph *g = graph_new(DIALECT_TPU, STAGE_LOWERED);
	int x = graph_add_tensor(g, "x", DT_F32, 2, (int64_t[]){ 1, 2 });
	int t = graph_add_weight(g, "t", DT_I64, 1, (int64_t[]){ 1 }, (int64_t[]){ 1 });
	int y = graph_add_tensor(g, "y", DT_F32, 0, NULL);
	int in[2] = { x, t };
	graph_add_op(g, OP_NLLLOSS, "nll", 2, in, 1, &y);
	graph_set_io(g, 1, &x, 1, &y);
	CHECK(graph_infer(g) == 0);
	struct interp it;
	CHECK(interp_init(&it, g, 1) == 0);
	CHECK(interp_run(&it, NULL, NULL) < 0);
	CHECK(!strcmp(err_msg(), "op 'nll' (NegativeLogLikelihoodLoss): no tpu kernel"));
	interp_free(&it);
	g->dialect = DIALECT_TOP;
	int calls = 0;
	CHECK(interp_init(&it, g, 1) == 0);
	CHECK(interp_run(&it, stop_after_first, &calls) == -7 && calls == 1);
	interp_free(&it);
	graph_free(g);
}

/* MatMul of two inputs, then with a weight, over several samples: the
 * weight cache must not keep an activation operand. */
static void test_matmul_samples(void)
{
	struct ir_graph *g = graph_new(DIALECT_TOP, STAGE_ORIGIN);
	int a = graph_add_tensor(g, "a", DT_F32, 2, (int64_t[]){ 2, 3 });
	int b = graph_add_tensor(g, "b", DT_F32, 2, (int64_t[]){ 3, 2 });
	int w = graph_add_weight(g, "w", DT_F32, 2, (int64_t[]){ 2, 2 },
				 (float[]){ 1, 2, 3, 4 });
	int ab = graph_add_tensor(g, "ab", DT_F32, 0, NULL);
	int y = graph_add_tensor(g, "y", DT_F32, 0, NULL);
	graph_add_op(g, OP_MATMUL, "mm1", 2, (int[]){ a, b }, 1, &ab);
	graph_add_op(g, OP_MATMUL, "mm2", 2, (int[]){ ab, w }, 1, &y);
	graph_set_io(g, 2, (int[]){ a, b }, 1, &y);
	CHECK(graph_infer(g) == 0);
	struct npz z = { 0 };
	struct npz_array *za = npz_add(&z, "a", DT_F32, 3, (int64_t[]){ 3, 2, 3 }, NULL);
	struct npz_array *zb = npz_add(&z, "b", DT_F32, 3, (int64_t[]){ 3, 3, 2 }, NULL);
	for (int i = 0; i < 18; i++) {
		((float *)za->data)[i] = (float)(i % 5) - 2;
		((float *)zb->data)[i] = (float)(i % 7) - 3;
	}
	struct interp it;
	CHECK(interp_init(&it, g, 1) == 0);
	for (int s = 0; s < 3; s++) {
		CHECK(interp_set_sample(&it, &z, "ab.npz", s) == 0);
		CHECK(interp_run(&it, NULL, NULL) == 0);
		const float *pa = (float *)za->data + 6 * s, *pb = (float *)zb->data + 6 * s;
		const float *wd = g->tensors[w].data, *yd = it.val[y];
		for (int i = 0; i < 2; i++)
			for (int j = 0; j < 2; j++) {
				double v = 0;
				for (int m = 0; m < 2; m++) {
					double t = 0;
					for (int k = 0; k < 3; k++)
						t += pa[i * 3 + k] * pb[k * 2 + m];
					v += t * wd[m * 2 + j];
				}
				CHECK(fabs(yd[i * 2 + j] - v) < 1e-4);
			}
	}
	interp_free(&it);
	npz_free(&z);
	graph_free(g);
}

/* ---- the plan of oneDNN primitives (Top graphs) against the kernels ---- */

static float plan_rand(unsigned *seed)
{
	*seed = *seed * 1103515245u + 12345u;
	return (float)((*seed >> 8) & 0xffff) / 32768.0f - 1.0f;
}

static int plan_weight(struct ir_graph *g, const char *name, int rank, const int64_t *shape,
		       unsigned *seed)
{
	int64_t n = 1;
	for (int i = 0; i < rank; i++)
		n *= shape[i];
	float *d = xmalloc((size_t)n * sizeof *d);
	for (int64_t i = 0; i < n; i++)
		d[i] = plan_rand(seed) * 0.3f;
	int t = graph_add_weight(g, name, DT_F32, rank, shape, d);
	free(d);
	return t;
}

static struct ir_op *plan_op(struct ir_graph *g, enum op_type type, const char *name,
			     int n_in, const int *in, const char *out)
{
	int y = graph_add_tensor(g, out, DT_F32, 0, NULL);
	int i = graph_add_op(g, type, name, n_in, in, 1, &y);
	return &g->ops[i];
}

/* Conv+ReLU, a residual Add whose operand dies (fused in place), MaxPool,
 * a 1x1 conv whose residual Add keeps its operand alive for a Concat,
 * Clip, Mul by a broadcast weight, GlobalAveragePool, Flatten, Gemm. */
static struct ir_graph *plan_graph(void)
{
	unsigned seed = 7;
	struct ir_graph *g = graph_new(DIALECT_TOP, STAGE_CANONICAL);
	int x = graph_add_tensor(g, "x", DT_F32, 4, (int64_t[]){ 1, 8, 10, 9 });
	int w1 = plan_weight(g, "w1", 4, (int64_t[]){ 16, 8, 3, 3 }, &seed);
	int b1 = plan_weight(g, "b1", 1, (int64_t[]){ 16 }, &seed);
	int w2 = plan_weight(g, "w2", 4, (int64_t[]){ 16, 16, 3, 3 }, &seed);
	int w3 = plan_weight(g, "w3", 4, (int64_t[]){ 16, 16, 1, 1 }, &seed);
	int wd = plan_weight(g, "wd", 4, (int64_t[]){ 32, 1, 3, 3 }, &seed);
	int s = plan_weight(g, "s", 4, (int64_t[]){ 1, 32, 1, 1 }, &seed);
	int fw = plan_weight(g, "fw", 2, (int64_t[]){ 10, 32 }, &seed);
	int fb = plan_weight(g, "fb", 1, (int64_t[]){ 10 }, &seed);
	int64_t p1[4] = { 1, 1, 1, 1 }, k3[2] = { 3, 3 }, s2[2] = { 2, 2 };
	struct ir_op *op = plan_op(g, OP_CONV, "c1", 3, (int[]){ x, w1, b1 }, "y1");
	op_set_ints(op, "pads", 4, p1);
	op_set_int(op, "do_relu", 1);
	int y1 = op->out[0];
	op = plan_op(g, OP_CONV, "c2", 2, (int[]){ y1, w2 }, "y2");
	op_set_ints(op, "pads", 4, p1);
	op = plan_op(g, OP_ADD, "add1", 2, (int[]){ op->out[0], y1 }, "z1");
	op_set_int(op, "do_relu", 1);
	op = plan_op(g, OP_MAXPOOL, "pool", 1, (int[]){ op->out[0] }, "p");
	op_set_ints(op, "kernel_shape", 2, k3);
	op_set_ints(op, "strides", 2, s2);
	op_set_ints(op, "pads", 4, p1);
	op_set_int(op, "ceil_mode", 1);
	int pp = op->out[0];
	op = plan_op(g, OP_CONV, "c3", 2, (int[]){ pp, w3 }, "q");
	op = plan_op(g, OP_ADD, "add2", 2, (int[]){ pp, op->out[0] }, "z2");
	op = plan_op(g, OP_CONCAT, "cat", 2, (int[]){ op->out[0], pp }, "cc");
	op_set_int(op, "axis", 1);
	op = plan_op(g, OP_CONV, "dw", 2, (int[]){ op->out[0], wd }, "d");
	op_set_ints(op, "pads", 4, p1);
	op_set_int(op, "group", 32);
	op = plan_op(g, OP_CLIP, "clip", 1, (int[]){ op->out[0] }, "cl");
	op_set_float(op, "min", 0);
	op_set_float(op, "max", 0.5);
	op = plan_op(g, OP_MUL, "mul", 2, (int[]){ s, op->out[0] }, "m");
	op = plan_op(g, OP_GAVGPOOL, "gap", 1, (int[]){ op->out[0] }, "gp");
	op = plan_op(g, OP_FLATTEN, "flat", 1, (int[]){ op->out[0] }, "f");
	op = plan_op(g, OP_GEMM, "fc", 3, (int[]){ op->out[0], fw, fb }, "out");
	op_set_int(op, "transB", 1);
	graph_set_io(g, 1, &x, 1, &op->out[0]);
	if (graph_infer(g) < 0) {
		fprintf(stderr, "test_interp: %s\n", err_msg());
		exit(1);
	}
	return g;
}

/* Swish and hard-swish folded into a conv, Div and Sub by constants,
 * MatMul by a constant with a bias Add and GELU (Div, Erf, Add, Mul, Mul)
 * folded in, Softmax, ReduceMean, Tanh. */
static struct ir_graph *plan_graph2(void)
{
	unsigned seed = 5;
	struct ir_graph *g = graph_new(DIALECT_TOP, STAGE_CANONICAL);
	int x = graph_add_tensor(g, "x", DT_F32, 4, (int64_t[]){ 1, 8, 6, 6 });
	int w = plan_weight(g, "w", 4, (int64_t[]){ 8, 8, 1, 1 }, &seed);
	int two = graph_add_weight(g, "two", DT_F32, 0, NULL, (float[]){ 2.0f });
	int sub = plan_weight(g, "sub", 4, (int64_t[]){ 1, 8, 1, 1 }, &seed);
	int mw = plan_weight(g, "mw", 2, (int64_t[]){ 6, 5 }, &seed);
	int mb = plan_weight(g, "mb", 1, (int64_t[]){ 5 }, &seed);
	int rt2 = graph_add_weight(g, "rt2", DT_F32, 0, NULL, (float[]){ 1.41421354f });
	int one = graph_add_weight(g, "one", DT_F32, 0, NULL, (float[]){ 1.0f });
	int half = graph_add_weight(g, "half", DT_F32, 0, NULL, (float[]){ 0.5f });
	struct ir_op *op = plan_op(g, OP_CONV, "c", 2, (int[]){ x, w }, "y");
	int y = op->out[0];
	op = plan_op(g, OP_SIGMOID, "sig", 1, (int[]){ y }, "s");
	op = plan_op(g, OP_MUL, "swish", 2, (int[]){ y, op->out[0] }, "m");
	int m = op->out[0];
	op = plan_op(g, OP_HARDSIGMOID, "hsig", 1, (int[]){ m }, "h");
	op_set_float(op, "alpha", 1.0 / 6);
	op_set_float(op, "beta", 0.5);
	op = plan_op(g, OP_MUL, "hswish", 2, (int[]){ op->out[0], m }, "hm");
	op = plan_op(g, OP_DIV, "div", 2, (int[]){ op->out[0], two }, "d");
	op = plan_op(g, OP_SUB, "sub", 2, (int[]){ op->out[0], sub }, "sb");
	op = plan_op(g, OP_MATMUL, "mm", 2, (int[]){ op->out[0], mw }, "mm");
	op = plan_op(g, OP_ADD, "bias", 2, (int[]){ mb, op->out[0] }, "mb");
	int xb = op->out[0];
	op = plan_op(g, OP_DIV, "gdiv", 2, (int[]){ xb, rt2 }, "gd");
	op = plan_op(g, OP_ERF, "gerf", 1, (int[]){ op->out[0] }, "ge");
	op = plan_op(g, OP_ADD, "gadd", 2, (int[]){ op->out[0], one }, "ga");
	op = plan_op(g, OP_MUL, "gmul", 2, (int[]){ xb, op->out[0] }, "gm");
	op = plan_op(g, OP_MUL, "ghalf", 2, (int[]){ op->out[0], half }, "gelu");
	op = plan_op(g, OP_SOFTMAX, "softmax", 1, (int[]){ op->out[0] }, "sm");
	op_set_int(op, "axis", -1);
	op = plan_op(g, OP_REDUCEMEAN, "mean", 1, (int[]){ op->out[0] }, "rm");
	op_set_ints(op, "axes", 1, (int64_t[]){ 3 });
	op_set_int(op, "keepdims", 0);
	op = plan_op(g, OP_TANH, "tanh", 1, (int[]){ op->out[0] }, "out");
	graph_set_io(g, 1, &x, 1, &op->out[0]);
	if (graph_infer(g) < 0) {
		fprintf(stderr, "test_interp: %s\n", err_msg());
		exit(1);
	}
	return g;
}

/* A conv's output split by Slice, one half upsampled by Resize and pooled
 * back, the halves concatenated, Pow by 2, Transpose, LayerNormalization,
 * Gelu, SiLU. */
static struct ir_graph *plan_graph3(void)
{
	unsigned seed = 3;
	struct ir_graph *g = graph_new(DIALECT_TOP, STAGE_CANONICAL);
	int x = graph_add_tensor(g, "x", DT_F32, 4, (int64_t[]){ 1, 8, 6, 5 });
	int w = plan_weight(g, "w", 4, (int64_t[]){ 32, 8, 1, 1 }, &seed);
	int two = graph_add_weight(g, "two", DT_F32, 0, NULL, (float[]){ 2.0f });
	struct ir_op *op = plan_op(g, OP_CONV, "c", 2, (int[]){ x, w }, "y");
	int y = op->out[0];
	op = plan_op(g, OP_SLICE, "lo", 1, (int[]){ y }, "lo");
	op_set_ints(op, "starts", 1, (int64_t[]){ 0 });
	op_set_ints(op, "ends", 1, (int64_t[]){ 16 });
	op_set_ints(op, "axes", 1, (int64_t[]){ 1 });
	int lo = op->out[0];
	op = plan_op(g, OP_SLICE, "hi", 1, (int[]){ y }, "hi");
	op_set_ints(op, "starts", 1, (int64_t[]){ -16 });
	op_set_ints(op, "ends", 1, (int64_t[]){ 1000 });
	op_set_ints(op, "axes", 1, (int64_t[]){ -3 });
	op_set_ints(op, "steps", 1, (int64_t[]){ 1 });
	int hi = op->out[0];
	op = plan_op(g, OP_RESIZE, "up", 1, (int[]){ hi }, "up");
	op_set_str(op, "mode", "nearest");
	op_set_str(op, "coordinate_transformation_mode", "asymmetric");
	op_set_str(op, "nearest_mode", "floor");
	op_set_floats(op, "scales", 4, (float[]){ 1, 1, 2, 3 });
	op_set_ints(op, "sizes", 4, (int64_t[]){ 1, 16, 12, 15 });
	op = plan_op(g, OP_MAXPOOL, "down", 1, (int[]){ op->out[0] }, "down");
	op_set_ints(op, "kernel_shape", 2, (int64_t[]){ 2, 3 });
	op_set_ints(op, "strides", 2, (int64_t[]){ 2, 3 });
	op = plan_op(g, OP_CONCAT, "cat", 2, (int[]){ lo, op->out[0] }, "cat");
	op_set_int(op, "axis", 1);
	op = plan_op(g, OP_POW, "sq", 2, (int[]){ op->out[0], two }, "sq");
	op = plan_op(g, OP_TRANSPOSE, "t", 1, (int[]){ op->out[0] }, "tr");
	op_set_ints(op, "perm", 4, (int64_t[]){ 0, 2, 3, 1 });
	int lns = plan_weight(g, "lns", 1, (int64_t[]){ 32 }, &seed);
	int lnb = plan_weight(g, "lnb", 1, (int64_t[]){ 32 }, &seed);
	op = plan_op(g, OP_LAYERNORM, "ln", 3, (int[]){ op->out[0], lns, lnb }, "ln");
	op_set_int(op, "axis", -1);
	op_set_float(op, "epsilon", 1e-5);
	op = plan_op(g, OP_GELU, "gelu", 1, (int[]){ op->out[0] }, "gelu");
	op = plan_op(g, OP_SILU, "silu", 1, (int[]){ op->out[0] }, "out");
	graph_set_io(g, 1, &x, 1, &op->out[0]);
	if (graph_infer(g) < 0) {
		fprintf(stderr, "test_interp: %s\n", err_msg());
		exit(1);
	}
	return g;
}

/* Largest |a - b| / (1 + |b|) over n values. */
static double plan_diff(const float *a, const float *b, int64_t n)
{
	double m = 0;
	for (int64_t i = 0; i < n; i++) {
		double d = fabs((double)a[i] - b[i]) / (1 + fabs(b[i]));
		m = d > m || d != d ? d : m;
	}
	return m;
}

struct plan_seen {
	float **want;          /* per tensor, from the kernels */
	int calls, bad;
};

/* Callback: the op's outputs are in it->val and match the kernels'. */
static int plan_check_op(struct interp *it, int op, void *user)
{
	struct plan_seen *ps = user;
	const struct ir_op *o = &it->g->ops[op];
	ps->calls++;
	for (int j = 0; j < o->n_out; j++) {
		int t = o->out[j];
		if (plan_diff(it->val[t], ps->want[t], tensor_numel(&it->g->tensors[t])) > 1e-4)
			ps->bad++;
	}
	return 0;
}

static void test_plan(struct ir_graph *g)
{
	int x = g->inputs[0], y = g->outputs[0];
	int64_t nx = tensor_numel(&g->tensors[x]), ny = tensor_numel(&g->tensors[y]);
	float *in = xmalloc((size_t)nx * sizeof *in);
	unsigned seed = 11;
	for (int64_t i = 0; i < nx; i++)
		in[i] = plan_rand(&seed);
	struct plan_seen ps = { xcalloc((size_t)g->n_tensors, sizeof(float *)), 0, 0 };

	/* every tensor by the per-op kernels */
	struct interp it;
	setenv("TPUC_PLAN", "0", 1);
	CHECK(interp_init(&it, g, 2) == 0);
	memcpy(it.val[x], in, (size_t)nx * sizeof *in);
	CHECK(interp_run(&it, NULL, NULL) == 0);
	for (int t = 0; t < g->n_tensors; t++)
		if (!g->tensors[t].data)
			ps.want[t] = interp_get_f32(&it, t);
	interp_free(&it);
	unsetenv("TPUC_PLAN");

	for (int threads = 1; threads <= 2; threads++) {
		/* fused: the output in val, twice over (the plan is reused) */
		CHECK(interp_init(&it, g, threads) == 0);
		memcpy(it.val[x], in, (size_t)nx * sizeof *in);
		for (int r = 0; r < 2; r++) {
			CHECK(interp_run(&it, NULL, NULL) == 0);
			CHECK(plan_diff(it.val[y], ps.want[y], ny) < 1e-4);
		}
		/* with a callback: every op's outputs in val when it is called */
		ps.calls = ps.bad = 0;
		CHECK(interp_run(&it, plan_check_op, &ps) == 0);
		CHECK(ps.calls == g->n_ops && ps.bad == 0);
		/* keep_all: every tensor readable after the run */
		it.keep_all = 1;
		CHECK(interp_run(&it, NULL, NULL) == 0);
		for (int t = 0; t < g->n_tensors; t++) {
			if (g->tensors[t].data)
				continue;
			float *v = interp_get_f32(&it, t);
			CHECK(plan_diff(v, ps.want[t], tensor_numel(&g->tensors[t])) < 1e-4);
			free(v);
		}
		interp_free(&it);
	}
	for (int t = 0; t < g->n_tensors; t++)
		free(ps.want[t]);
	free(ps.want);
	free(in);
	graph_free(g);
}

int main(void)
{
	test_plan(plan_graph());
	test_plan(plan_graph2());
	test_plan(plan_graph3());
	test_matmul_samples();
	test_samples();
	test_quantised_io();
	test_convert_inputs();
	test_refusals();
	printf("test_interp: %d checks, %d failed\n", checks, failures);
	return failures ? 1 : 0;
}
