/* test_interp - the interpreter's contracts: samples from calibration-style
 * arrays, input dtype conversion and quantisation, dequantised reads, and
 * the refusal of ops without a kernel for the graph's dialect.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "interp.h"
#include "ir.h"
#include "npz.h"
#include "op.h"

static int checks, failures;

#define CHECK(cond) do { \
	checks++; \
	if (!(cond)) { \
		failures++; \
		fprintf(stderr, "%s:%d: check failed: %s (last error: %s)\n", __FILE__, \
			__LINE__, #cond, err_msg()); \
	} \
} while (0)

static void set_io(struct ir_graph *g, int in, int out)
{
	g->inputs = xmalloc(sizeof(int));
	g->outputs = xmalloc(sizeof(int));
	g->inputs[0] = in;
	g->outputs[0] = out;
	g->n_inputs = g->n_outputs = 1;
}

/* x [1,2,3] -> Relu -> y */
static struct ir_graph *relu_graph(enum ir_dialect d, enum ir_dtype dt)
{
	struct ir_graph *g = graph_new(d, d == DIALECT_TOP ? STAGE_ORIGIN : STAGE_LOWERED);
	int x = graph_add_tensor(g, "x", dt, 3, (int64_t[]){ 1, 2, 3 });
	int y = graph_add_tensor(g, "y", dt, 0, NULL);
	graph_add_op(g, OP_RELU, "relu", 1, &x, 1, &y);
	set_io(g, x, y);
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
	CHECK(!strcmp(err_msg(), "'e.npz': no array for graph input 'x'"));
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
	set_io(g, x, y);
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
	struct ir_graph *g = graph_new(DIALECT_TPU, STAGE_LOWERED);
	int x = graph_add_tensor(g, "x", DT_F32, 4, (int64_t[]){ 1, 2, 1, 1 });
	int p[4];
	const char *names[4] = { "s", "b", "m", "v" };
	for (int i = 0; i < 4; i++)
		p[i] = graph_add_weight(g, names[i], DT_F32, 1, (int64_t[]){ 2 },
					(float[]){ 1, 1 });
	int y = graph_add_tensor(g, "y", DT_F32, 0, NULL);
	int in[5] = { x, p[0], p[1], p[2], p[3] };
	graph_add_op(g, OP_BATCHNORM, "bn", 5, in, 1, &y);
	set_io(g, x, y);
	CHECK(graph_infer(g) == 0);
	struct interp it;
	CHECK(interp_init(&it, g, 1) == 0);
	CHECK(interp_run(&it, NULL, NULL) < 0);
	CHECK(!strcmp(err_msg(), "op 'bn' (BatchNormalization): no tpu kernel"));
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
	g->inputs = xmalloc(2 * sizeof(int));
	g->outputs = xmalloc(sizeof(int));
	g->inputs[0] = a;
	g->inputs[1] = b;
	g->outputs[0] = y;
	g->n_inputs = 2;
	g->n_outputs = 1;
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

int main(void)
{
	test_matmul_samples();
	test_samples();
	test_quantised_io();
	test_convert_inputs();
	test_refusals();
	printf("test_interp: %d checks, %d failed\n", checks, failures);
	return failures ? 1 : 0;
}
