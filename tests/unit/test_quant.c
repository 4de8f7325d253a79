/* test_quant - the int8 arithmetic of lib/quant/quant.h (rounding, multiplier and
 * shift against double math, saturation), the KLD threshold search against
 * a naive version, the calibration table file, and the int8 kernels: Conv
 * against a naive reference, H-sliced runs against whole runs, both forms
 * of the per-channel parameters, and a small lowered graph against float.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ir/base.h"
#include "calib/calib.h"
#include "run/dnnl_util.h"
#include "run/interp.h"
#include "ir/ir.h"
#include "back/lower.h"
#include "ir/op.h"
#include "quant/quant.h"

#include "check.h"

static uint32_t rng = 2024;

static float frand(void)
{
	rng = rng * 1664525u + 1013904223u;
	return (float)((rng >> 8) & 0xffff) / 32768.0f - 1.0f;
}

/* quant_f32_to_q (vectorised, for whole tensors) gives quant_f32_to_qz_one
 * (round() of the quotient in double) for every value: ties, the doubles
 * next to them, the saturation bounds and beyond, signed zeros, infinities,
 * NaN, random values; i8 and u8, with and without a zero point. */
static void test_quantise_many(void)
{
	enum { N = 4096 };
	static float x[N];
	static const float scales[] = { 1.0f, 0.1f, 0.0375f, 3.0f };
	int n = 0;
	for (int k = -260; k <= 260; k++) {
		x[n++] = k + 0.5f;
		x[n++] = nextafterf(k + 0.5f, 1e9f);
		x[n++] = nextafterf(k + 0.5f, -1e9f);
		x[n++] = (float)k;
	}
	float special[] = { 0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1e30f, -1e30f, 1024.5f, -1024.5f,
			    0.49999997f, -0.49999997f, 1e-40f };
	for (size_t i = 0; i < ARRAY_LEN(special); i++)
		x[n++] = special[i];
	while (n < N)
		x[n++] = frand() * 300;
	int8_t q[N];
	for (size_t si = 0; si < ARRAY_LEN(scales); si++)
		for (int u8 = 0; u8 < 2; u8++)
			for (int zp = 0; zp < 2; zp++) {
				enum ir_dtype dt = u8 ? DT_U8 : DT_I8;
				int z = zp ? (u8 ? 131 : -7) : 0, bad = 0;
				quant_f32_to_q(x, q, N, scales[si], z, dt);
				for (int i = 0; i < N; i++)
					bad += quant_get(q, dt, i) != quant_f32_to_qz_one(x[i], scales[si], z, dt);
				CHECK_MSG(!bad, "scale %g, %s, zero point %d: %d values differ", scales[si],
					  dtype_name(dt), z, bad);
			}
}

static void test_rounding(void)
{
	/* round half up on the integer path */
	CHECK_MSG(quant_round_shift(3, 1) == 2, "1.5 -> 2");
	CHECK_MSG(quant_round_shift(-3, 1) == -1, "-1.5 -> -1");
	CHECK_MSG(quant_round_shift(5, 2) == 1, "1.25 -> 1");
	CHECK_MSG(quant_round_shift(6, 2) == 2, "1.5 -> 2");
	CHECK_MSG(quant_round_shift(-6, 2) == -1, "-1.5 -> -1");
	CHECK_MSG(quant_round_shift(-7, 2) == -2, "-1.75 -> -2");
	CHECK_MSG(quant_round_shift(-5, 2) == -1, "-1.25 -> -1");
	CHECK_MSG(quant_round_shift(17, 0) == 17, "shift 0 is the identity");
	/* round half away from zero, saturation on the float path */
	CHECK_MSG(quant_f32_to_i8_one(0.5f, 1) == 1, "0.5 -> 1");
	CHECK_MSG(quant_f32_to_i8_one(-0.5f, 1) == -1, "-0.5 -> -1");
	CHECK_MSG(quant_f32_to_i8_one(2.5f, 1) == 3, "2.5 -> 3");
	CHECK_MSG(quant_f32_to_i8_one(0.49f, 1) == 0, "0.49 -> 0");
	CHECK_MSG(quant_f32_to_i8_one(1000, 1) == 127, "saturates high");
	CHECK_MSG(quant_f32_to_i8_one(-1000, 1) == -128, "saturates low");
	CHECK_MSG(quant_f32_to_i8_one(NAN, 1) == 0, "NaN -> 0");
	CHECK_MSG(quant_f32_to_i8_one(0.3f, 0.1f) == 3, "0.3 / 0.1 -> 3");
	/* requant saturation and clamps */
	CHECK_MSG(quant_requant(1 << 20, 1 << 30, 30, -128, 127) == 127, "saturate high");
	CHECK_MSG(quant_requant(-(1 << 20), 1 << 30, 30, -128, 127) == -128, "saturate low");
	CHECK_MSG(quant_requant(-5, 1 << 30, 30, 0, 127) == 0, "relu clamp");
	CHECK_MSG(quant_add_sat32(INT32_MAX, 5) == INT32_MAX, "bias add saturates");
	CHECK_MSG(quant_bias(1e12, 1, 1) == INT32_MAX && quant_bias(-1e12, 1, 1) == INT32_MIN,
	          "bias saturates");
	CHECK_MSG(quant_bias(2.5, 1, 1) == 3 && quant_bias(-2.5, 1, 1) == -3, "bias rounds half away");
	test_quantise_many();
}

static void test_multiplier(void)
{
	int32_t m, s;
	/* the worked example of quant.h */
	CHECK_MSG(quant_multiplier(0.05 * 0.01 / 0.1, &m, &s) == 0 && m == 1374389535 && s == 38,
	          "0.005 -> %d >> %d", m, s);
	CHECK_MSG(quant_requant(300, m, s, -128, 127) == 2, "300 * 0.005 -> 2");
	CHECK_MSG(quant_multiplier(1.0, &m, &s) == 0 && m == 1 << 30 && s == 30, "1.0 -> %d >> %d", m, s);
	CHECK_MSG(quant_multiplier(0, &m, &s) == 0 && m == 0, "zero");
	CHECK_MSG(quant_multiplier(-1, &m, &s) < 0, "negative refused");
	CHECK_MSG(quant_multiplier(NAN, &m, &s) < 0, "NaN refused");
	CHECK_MSG(quant_multiplier(3e9, &m, &s) < 0, "too large refused");
	CHECK_MSG(quant_multiplier(1e-30, &m, &s) == 0 && s == QUANT_MAX_SHIFT, "tiny clamps the shift");
	/* round trip against double math over many magnitudes */
	double worst = 0;
	for (int i = 0; i < 20000; i++) {
		double real = exp((frand() + 1) * 0.5 * log(1e12)) * 1e-9;   /* 1e-9 .. 1e3 */
		if (quant_multiplier(real, &m, &s) < 0) {
			CHECK_MSG(0, "multiplier %g refused", real);
			continue;
		}
		double back = ldexp(m, -s);
		double rel = fabs(back - real) / real;
		if (rel > worst)
			worst = rel;
		CHECK_MSG(m >= (1 << 30) && s >= 0 && s <= QUANT_MAX_SHIFT, "%g: mult %d shift %d", real, m, s);
		/* requant equals round-half-up of acc * real within the multiplier's error */
		int32_t acc = (int32_t)(frand() * 5000);
		double exact = acc * back;
		int64_t want = (int64_t)floor(exact + 0.5);
		int64_t got = quant_round_shift((int64_t)acc * m, s);
		CHECK_MSG(got == want, "acc %d * %d >> %d: %lld, want %lld", acc, m, s,
		          (long long)got, (long long)want);
	}
	CHECK_MSG(worst <= ldexp(1, -31), "relative error %g > 2^-31", worst);
	/* a shared shift for several multipliers */
	double reals[3] = { 0.75, 0.01, 1.5 };
	int32_t ms[3];
	CHECK_MSG(quant_multipliers_common(reals, 3, ms, &s) == 0 && s == 30 && ms[2] == 3 << 29 &&
	          ms[0] == 3 << 28, "common shift %d: %d %d %d", s, ms[0], ms[1], ms[2]);
	CHECK_MSG(fabs(ldexp(ms[1], -s) - 0.01) < 1e-8, "small multiplier under the shared shift");
}

/* The KLD search written out literally, for comparison. */
static double naive_kld(const uint64_t *hist, int nbins, double width)
{
	double best = INFINITY;
	int best_i = nbins;
	double *p = malloc(sizeof(double) * nbins), *q = malloc(sizeof(double) * nbins);
	for (int i = 128; i <= nbins; i++) {
		for (int b = 0; b < i; b++)
			p[b] = (double)hist[b];
		for (int b = i; b < nbins; b++)
			p[i - 1] += (double)hist[b];
		int m = i / 128;
		for (int j = 0; j < 128; j++) {
			int b0 = j * m, b1 = j == 127 ? i : b0 + m, nz = 0;
			double sum = 0;
			for (int b = b0; b < b1; b++) {
				sum += (double)hist[b];
				nz += hist[b] != 0;
			}
			for (int b = b0; b < b1; b++)
				q[b] = hist[b] ? sum / nz : 0;
		}
		double sp = 0, sq = 0, kl = 0;
		for (int b = 0; b < i; b++) {
			sp += p[b];
			sq += q[b];
		}
		if (!(sq > 0))
			continue;
		for (int b = 0; b < i; b++)
			if (p[b] > 0)
				kl += p[b] / sp * log((p[b] / sp) / (q[b] > 0 ? q[b] / sq : 1e-10));
		if (kl < best - 1e-12) {
			best = kl;
			best_i = i;
		}
	}
	free(p);
	free(q);
	return best_i * width;
}

static void test_kld(void)
{
	enum { NB = 2048 };
	static uint64_t h[NB];
	for (int trial = 0; trial < 4; trial++) {
		memset(h, 0, sizeof h);
		/* a half-normal-ish distribution with a long tail and some gaps */
		for (int i = 0; i < 200000; i++) {
			double a = fabs(frand() + frand() + frand()) * (trial + 1) * 300;
			if (frand() > 0.995)
				a *= 4;
			int b = (int)a;
			if (b >= NB)
				b = NB - 1;
			if (trial == 2 && b % 7 == 3)
				continue;
			h[b]++;
		}
		double fast = calib_kld_threshold(h, NB, 0.01), slow = naive_kld(h, NB, 0.01);
		CHECK_MSG(fabs(fast - slow) < 1e-9, "trial %d: fast %g naive %g", trial, fast, slow);
		CHECK_MSG(fast >= 1.28 - 1e-9 && fast <= 20.48 + 1e-9, "threshold %g in range", fast);
	}
	memset(h, 0, sizeof h);
	h[100] = 5;
	double t = calib_kld_threshold(h, NB, 1.0);
	CHECK_MSG(t >= 128 && t <= NB, "a single spike: %g", t);
}

static void test_table(void)
{
	char path[] = "/tmp/test_quant_XXXXXX";
	int fd = mkstemp(path);
	CHECK_MSG(fd >= 0, "mkstemp");
	close(fd);
	struct calib_table t = { 0 }, *r = NULL;
	calib_add(&t, "a/b:c.d", 1.5, -1, 1.25);
	calib_add(&t, "x", 0.1234567891234, 0, 0.2);
	CHECK_MSG(calib_table_write(path, &t, NULL) == 0, "%s", err_msg());
	CHECK_MSG(calib_table_read(path, &r) == 0, "%s", err_msg());
	if (r) {
		CHECK_MSG(r->n == 2 && !strcmp(r->e[0].name, "a/b:c.d") && r->e[0].threshold == 1.5 &&
		          r->e[0].min == -1 && r->e[0].max == 1.25, "entry 0");
		CHECK_MSG(fabs(r->e[1].threshold - 0.1234567891234) < 1e-9, "%%.9g keeps 9 digits");
		CHECK_MSG(calib_find(r, "x") == &r->e[1] && !calib_find(r, "y"), "lookup");
		calib_table_free(r);
	}
	static const char *const bad[] = {
		"x 1 0\n", "x one 0 1\n", "x 1 0 1 2\n", "x -1 0 1\n", "x 1 2 1\n", "x 1 0 1\nx 1 0 1\n",
		"x 1 0 1",
	};
	for (size_t i = 0; i < ARRAY_LEN(bad); i++) {
		FILE *f = fopen(path, "w");
		fputs(bad[i], f);
		fclose(f);
		r = NULL;
		CHECK_MSG(calib_table_read(path, &r) < 0 && strstr(err_msg(), path), "bad table %zu accepted", i);
		calib_table_free(r);
	}
	free(t.e[0].name);
	free(t.e[1].name);
	free(t.e);
	unlink(path);
}

/* ---- int8 kernels ---- */

struct conv_case {
	int n, c, h, w, oc, group, kh, kw, sh, sw, dh, dw, pt, pl, pb, pr, do_relu;
	double relu_limit;
};

#define CONV_MAX_OC 256   /* output channels of the largest case */

/* A Tpu int8 graph x -> Conv -> y with random int8 data and parameters. */
static struct ir_graph *conv_graph(const struct conv_case *t, int merged)
{
	struct ir_graph *g = graph_new(DIALECT_TPU, STAGE_LOWERED);
	int64_t xs[4] = { t->n, t->c, t->h, t->w };
	int64_t ws[4] = { t->oc, t->c / t->group, t->kh, t->kw };
	int64_t nw = ws[0] * ws[1] * ws[2] * ws[3];
	int x = graph_add_tensor(g, "x", DT_I8, 4, xs);
	g->tensors[x].scale = 0.05f;
	int8_t *wd = xmalloc((size_t)nw);
	for (int64_t i = 0; i < nw; i++)   /* the extremes among them */
		wd[i] = i % 7 == 3 ? -128 : i % 11 == 5 ? 127 : (int8_t)(frand() * 127);
	int32_t par[3][CONV_MAX_OC];
	for (int c = 0; c < t->oc; c++) {
		par[0][c] = (int32_t)(frand() * 3000);
		/* large sums (many taps) scaled down so that outputs do not
		 * all saturate */
		double kk = (double)ws[1] * t->kh * t->kw;
		quant_multiplier((0.002 + 0.01 * fabs(frand())) * (kk > 100 ? 100 / kk : 1),
				 &par[1][c], &par[2][c]);
	}
	int in[5] = { x, graph_add_weight(g, "w", DT_I8, 4, ws, wd), -1, -1, -1 };
	int n_in = 5;
	if (merged) {
		int32_t coeff[CONV_MAX_OC * 3];
		for (int c = 0; c < t->oc; c++)
			for (int j = 0; j < 3; j++)
				coeff[3 * c + j] = par[j][c];
		in[2] = graph_add_weight(g, "coeff", DT_I32, 2, (int64_t[]){ t->oc, 3 }, coeff);
		n_in = 3;
	} else {
		static const char *const names[3] = { "bias", "multiplier", "shift" };
		for (int j = 0; j < 3; j++)
			in[2 + j] = graph_add_weight(g, names[j], DT_I32, 1, (int64_t[]){ t->oc }, par[j]);
	}
	free(wd);
	int y = graph_add_tensor(g, "y", DT_I8, 0, NULL);
	int op = graph_add_op(g, OP_CONV, "conv", n_in, in, 1, &y);
	struct ir_op *o = &g->ops[op];
	op_set_ints(o, "kernel_shape", 2, (int64_t[]){ t->kh, t->kw });
	op_set_ints(o, "strides", 2, (int64_t[]){ t->sh, t->sw });
	op_set_ints(o, "dilations", 2, (int64_t[]){ t->dh, t->dw });
	op_set_ints(o, "pads", 4, (int64_t[]){ t->pt, t->pl, t->pb, t->pr });
	op_set_int(o, "group", t->group);
	if (t->do_relu) {
		op_set_int(o, "do_relu", 1);
		op_set_float(o, "relu_limit", t->relu_limit);
	}
	graph_set_io(g, 1, &x, 1, &y);
	if (op_defs[OP_CONV]->infer(g, o) < 0)
		fprintf(stderr, "infer: %s\n", err_msg());
	g->tensors[y].dtype = DT_I8;
	g->tensors[y].scale = 0.1f;
	return g;
}

/* Plain-C int8 conv straight from formats/tpuc-quant.5, for the input and
 * output dtypes (i8 or u8) and zero points of g's tensors: padding taps
 * hold the input's zero point, so they contribute nothing. */
static void naive_conv(const struct conv_case *t, const struct ir_graph *g, const void *x, void *y)
{
	const struct ir_tensor *yt = &g->tensors[g->outputs[0]];
	enum ir_dtype xdt = g->tensors[g->inputs[0]].dtype, ydt = yt->dtype;
	const int8_t *w = g->tensors[1].data;
	const int32_t *bias = g->tensors[2].data, *mult = g->tensors[3].data, *shift = g->tensors[4].data;
	int64_t oh = yt->shape[2], ow = yt->shape[3], icg = t->c / t->group, ocg = t->oc / t->group;
	int zx = g->tensors[g->inputs[0]].zero_point, zy = yt->zero_point;
	int hi = t->do_relu && t->relu_limit > 0 ? quant_f32_to_qz_one((float)t->relu_limit, 0.1f, zy, ydt)
		 : ydt == DT_U8 ? 255 : 127;
	for (int b = 0; b < t->n; b++)
		for (int o = 0; o < t->oc; o++)
			for (int64_t i = 0; i < oh; i++)
				for (int64_t j = 0; j < ow; j++) {
					int32_t acc = 0;
					for (int64_t ic = 0; ic < icg; ic++)
						for (int a = 0; a < t->kh; a++)
							for (int e = 0; e < t->kw; e++) {
								int64_t h = i * t->sh - t->pt + a * t->dh;
								int64_t v = j * t->sw - t->pl + e * t->dw;
								if (h < 0 || h >= t->h || v < 0 || v >= t->w)
									continue;
								int64_t c = (o / ocg) * icg + ic;
								acc += (quant_get(x, xdt, ((b * t->c + c) * t->h + h) * t->w + v) - zx) *
								       w[((o * icg + ic) * t->kh + a) * t->kw + e];
							}
					int64_t p = quant_round_shift((int64_t)(acc + bias[o]) * mult[o], shift[o]) + zy;
					int lo = t->do_relu ? zy : ydt == DT_U8 ? 0 : -128;
					quant_put(y, ydt, ((b * t->oc + o) * oh + i) * ow + j,
						  (int)(p < lo ? lo : p > hi ? hi : p));
				}
}

/* Run op 0 of g over output rows [oh0, oh1) from a dense copy of the input
 * rows it needs, writing those rows of the whole output yw. */
static int run_slice(const struct ir_graph *g, const int8_t *x, int8_t *yw, int oh0, int oh1)
{
	const struct ir_op *op = &g->ops[0];
	const struct ir_tensor *xt = &g->tensors[op->in[0]], *yt = &g->tensors[op->out[0]];
	int ih0, ih1;
	op_defs[op->type]->slice_h(g, op, oh0, oh1, &ih0, &ih1);
	int64_t planes = xt->shape[0] * xt->shape[1], h = xt->shape[2], w = xt->shape[3];
	int64_t yplanes = yt->shape[0] * yt->shape[1], oh = yt->shape[2], ow = yt->shape[3];
	int8_t *xs = xmalloc((size_t)(planes * (ih1 - ih0) * w) + 1);
	int8_t *ys = xmalloc((size_t)(yplanes * (oh1 - oh0) * ow) + 1);
	for (int64_t p = 0; p < planes; p++)
		memcpy(xs + p * (ih1 - ih0) * w, x + (p * h + ih0) * w, (size_t)((ih1 - ih0) * w));
	void **vals = xcalloc((size_t)g->n_tensors, sizeof *vals);
	for (int i = 0; i < g->n_tensors; i++)
		vals[i] = g->tensors[i].data;
	struct kern k;
	kern_from_graph(&k, g, op, vals);
	k.in[0].data = xs;
	k.in[0].shape[2] = ih1 - ih0;
	k.out[0].data = ys;
	k.out[0].shape[2] = oh1 - oh0;
	k.in_row0 = ih0;
	k.out_row0 = oh0;
	k.in_full_h = (int)h;
	int rc = op_defs[op->type]->run_tpu(&k);
	kern_done(&k);
	for (int64_t p = 0; p < yplanes; p++)
		memcpy(yw + (p * oh + oh0) * ow, ys + p * (oh1 - oh0) * ow, (size_t)((oh1 - oh0) * ow));
	free(vals);
	free(xs);
	free(ys);
	return rc;
}

static void conv_case_run(const struct conv_case *t, int u8, size_t ci, int extreme);

/* U8: 0 for i8 tensors; 1 for a u8 input; 2 for u8 input and output; 3
 * for u8 input and output with zero points (--asymmetric).  Each case runs
 * on the plain C kernel and on oneDNN's s8/u8 products (where exact on
 * this CPU), both against the naive reference; the larger cases take
 * oneDNN's VNNI kernels (blocked channels, s8 compensation), the last
 * input holds only its dtype's extremes. */
static void test_conv_kernel(int u8)
{
	static const struct conv_case cases[] = {
		{ 1, 3, 9, 8, 4, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0 },
		{ 2, 4, 11, 7, 6, 2, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, 0 },
		{ 1, 8, 10, 10, 8, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1.0 },     /* depthwise, relu6-like */
		{ 1, 3, 13, 12, 5, 1, 5, 3, 2, 1, 2, 1, 2, 0, 3, 1, 0, 0 },      /* dilation, odd pads */
		{ 1, 5, 6, 6, 3, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 0 },        /* 1x1 */
		{ 1, 4, 15, 9, 4, 1, 7, 7, 2, 2, 1, 1, 3, 3, 3, 3, 0, 0 },        /* a stem-like 7x7/2 */
		{ 1, 64, 10, 9, 96, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0 },      /* VNNI 3x3 */
		{ 2, 128, 5, 6, 256, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0 },     /* VNNI 1x1 */
		{ 1, 48, 11, 11, 48, 48, 3, 3, 2, 2, 1, 1, 1, 1, 0, 1, 1, 6.0 },  /* depthwise /2 */
		{ 1, 32, 12, 10, 64, 4, 3, 3, 1, 2, 2, 2, 2, 1, 2, 3, 0, 0 },     /* grouped, dilated */
		{ 1, 96, 6, 6, 32, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0 },       /* extremes only */
	};
	for (size_t ci = 0; ci < ARRAY_LEN(cases); ci++)
		for (int fast = 0; fast < 2; fast++) {
			dnnl_int8_allow(fast);
			conv_case_run(&cases[ci], u8, ci, ci + 1 == ARRAY_LEN(cases));
		}
	dnnl_int8_allow(1);
}

/* One case of test_conv_kernel; EXTREME fills the input with its dtype's
 * bounds only. */
static void conv_case_run(const struct conv_case *t, int u8, size_t ci, int extreme)
{
	struct ir_graph *g = conv_graph(t, 0);
	const struct ir_tensor *yt = &g->tensors[g->outputs[0]];
	if (u8)
		g->tensors[g->inputs[0]].dtype = DT_U8;
	if (u8 > 1)
		g->tensors[g->outputs[0]].dtype = DT_U8;
	if (u8 > 2) {
		g->tensors[g->inputs[0]].zero_point = 37;
		g->tensors[g->outputs[0]].zero_point = 100;
	}
	int64_t nx = (int64_t)t->n * t->c * t->h * t->w, ny = tensor_numel(yt);
	int8_t *x = xmalloc((size_t)nx), *want = xmalloc((size_t)ny), *got = xmalloc((size_t)ny);
	int8_t *sl = xmalloc((size_t)ny), *mg = xmalloc((size_t)ny);
	for (int64_t i = 0; i < nx; i++)   /* as u8: 0..255 */
		x[i] = extreme ? (i % 3 ? -128 : 127) : (int8_t)(frand() * 128);
	naive_conv(t, g, x, want);
	/* whole */
	struct interp it;
	interp_init(&it, g, 2);
	memcpy(it.val[g->inputs[0]], x, (size_t)nx);
	CHECK_MSG(interp_run(&it, NULL, NULL) == 0, "case %zu: %s", ci, err_msg());
	memcpy(got, it.val[g->outputs[0]], (size_t)ny);
	interp_free(&it);
	CHECK_MSG(!memcmp(got, want, (size_t)ny), "case %zu (oneDNN %d): whole run differs from naive",
		  ci, dnnl_int8_exact());
	/* H-slices of 1, 2 and 3 rows */
	int oh = (int)yt->shape[2];
	for (int step = 1; step <= 3; step++) {
		memset(sl, 0x55, (size_t)ny);
		for (int r = 0; r < oh; r += step)
			CHECK_MSG(run_slice(g, x, sl, r, r + step < oh ? r + step : oh) == 0,
			          "case %zu: slice: %s", ci, err_msg());
		CHECK_MSG(!memcmp(sl, want, (size_t)ny), "case %zu (oneDNN %d): slices of %d rows differ",
			  ci, dnnl_int8_exact(), step);
	}
	/* the reordered form: one coefficient tensor [OC,3] */
	struct ir_graph *g2 = conv_graph(t, 1);
	g2->tensors[g2->inputs[0]].dtype = g->tensors[g->inputs[0]].dtype;
	g2->tensors[g2->outputs[0]].dtype = g->tensors[g->outputs[0]].dtype;
	g2->tensors[g2->inputs[0]].zero_point = g->tensors[g->inputs[0]].zero_point;
	g2->tensors[g2->outputs[0]].zero_point = g->tensors[g->outputs[0]].zero_point;
	interp_init(&it, g2, 1);
	memcpy(it.val[g2->inputs[0]], x, (size_t)nx);
	CHECK_MSG(interp_run(&it, NULL, NULL) == 0, "case %zu merged: %s", ci, err_msg());
	memcpy(mg, it.val[g2->outputs[0]], (size_t)ny);
	interp_free(&it);
	/* rebuild the separate form of g2's parameters and compare */
	struct ir_graph *g3 = conv_graph(t, 0);
	g3->tensors[g3->inputs[0]].dtype = g->tensors[g->inputs[0]].dtype;
	g3->tensors[g3->outputs[0]].dtype = g->tensors[g->outputs[0]].dtype;
	g3->tensors[g3->inputs[0]].zero_point = g->tensors[g->inputs[0]].zero_point;
	g3->tensors[g3->outputs[0]].zero_point = g->tensors[g->outputs[0]].zero_point;
	memcpy(g3->tensors[1].data, g2->tensors[1].data, g2->tensors[1].nbytes);
	const int32_t *coeff = g2->tensors[2].data;
	for (int c = 0; c < t->oc; c++)
		for (int j = 0; j < 3; j++)
			((int32_t *)g3->tensors[2 + j].data)[c] = coeff[3 * c + j];
	naive_conv(t, g3, x, want);
	CHECK_MSG(!memcmp(mg, want, (size_t)ny), "case %zu: coefficient form differs", ci);
	graph_free(g);
	graph_free(g2);
	graph_free(g3);
	free(x);
	free(want);
	free(got);
	free(sl);
	free(mg);
}

/* MaxPool and AveragePool int8 kernels: slices equal whole runs. */
static void test_pool_kernels(void)
{
	for (int avg = 0; avg < 2; avg++) {
		struct ir_graph *g = graph_new(DIALECT_TPU, STAGE_LOWERED);
		int x = graph_add_tensor(g, "x", DT_I8, 4, (int64_t[]){ 1, 3, 13, 11 });
		int y = graph_add_tensor(g, "y", DT_I8, 0, NULL);
		int op = graph_add_op(g, avg ? OP_AVGPOOL : OP_MAXPOOL, "pool", 1, &x, 1, &y);
		struct ir_op *o = &g->ops[op];
		op_set_ints(o, "kernel_shape", 2, (int64_t[]){ 3, 3 });
		op_set_ints(o, "strides", 2, (int64_t[]){ 2, 2 });
		op_set_ints(o, "pads", 4, (int64_t[]){ 1, 1, 1, 1 });
		if (avg) {
			int32_t m, s;
			quant_multiplier(1.0 / 9, &m, &s);
			op_set_int(o, "count_include_pad", 1);
			op_set_int(o, "multiplier", m);
			op_set_int(o, "rshift", s);
		}
		op_defs[o->type]->infer(g, o);
		g->tensors[x].scale = g->tensors[y].scale = 0.1f;
		int64_t nx = tensor_numel(&g->tensors[x]), ny = tensor_numel(&g->tensors[y]);
		int8_t *xd = xmalloc((size_t)nx), *whole = xmalloc((size_t)ny), *sl = xmalloc((size_t)ny);
		for (int64_t i = 0; i < nx; i++)
			xd[i] = (int8_t)(frand() * 128);
		int oh = (int)g->tensors[y].shape[2];
		CHECK_MSG(run_slice(g, xd, whole, 0, oh) == 0, "%s", err_msg());
		for (int r = 0; r < oh; r += 2)
			CHECK_MSG(run_slice(g, xd, sl, r, r + 2 < oh ? r + 2 : oh) == 0, "%s", err_msg());
		CHECK_MSG(!memcmp(sl, whole, (size_t)ny), "%s: slices differ", avg ? "avg" : "max");
		/* spot check: output (0,0) of channel 0 is over rows/cols 0..1 */
		int mx = -128, sum = 0;
		for (int a = 0; a < 2; a++)
			for (int b = 0; b < 2; b++) {
				int v = xd[a * 11 + b];
				mx = v > mx ? v : mx;
				sum += v;
			}
		int want = avg ? (int)floor(sum / 9.0 + 0.5) : mx;
		CHECK_MSG(whole[0] == want, "%s corner %d, want %d", avg ? "avg" : "max", whole[0], want);
		graph_free(g);
		free(xd);
		free(whole);
		free(sl);
	}
}

/* Run a one-op Tpu graph whose tensors are already set up: inputs in
 * data[0..n_in-1] (NULL for weights), output written to y. */
static int run_op(struct ir_graph *g, int op, int8_t *const *in, int8_t *y)
{
	const struct ir_op *o = &g->ops[op];
	void **vals = xcalloc((size_t)g->n_tensors, sizeof *vals);
	for (int i = 0; i < g->n_tensors; i++)
		vals[i] = g->tensors[i].data;
	for (int i = 0; i < o->n_in; i++)
		if (in[i])
			vals[o->in[i]] = in[i];
	vals[o->out[0]] = y;
	struct kern k;
	kern_from_graph(&k, g, o, vals);
	int rc = op_defs[o->type]->run_tpu(&k);
	kern_done(&k);
	free(vals);
	return rc;
}

/* The int8 Gemm and MatMul kernels on oneDNN's products against their
 * plain C loops: i8 and u8 operands with and without zero points (a u8 B
 * goes to oneDNN shifted by 128), broadcast batches, per-column and
 * shared parameters, the raw i32 sums of a partial product, extreme
 * operands. */
static void test_matmul_kernels(void)
{
	struct mm_case {
		int gemm;                    /* Gemm A [M,K] x B' (transB) or MatMul */
		int ra, rb;                  /* ranks */
		int64_t as[4], bs[4];        /* shapes */
		enum ir_dtype at, bt, yt;    /* dtypes */
		int za, zb, zy;
		int extreme;
	} cases[] = {
		{ 1, 2, 2, { 5, 70 }, { 33, 70 }, DT_I8, DT_I8, DT_I8, 0, 0, 0, 0 },
		{ 1, 2, 2, { 5, 70 }, { 33, 70 }, DT_U8, DT_I8, DT_U8, 37, 0, 100, 0 },
		{ 1, 2, 2, { 4, 64 }, { 16, 64 }, DT_U8, DT_I8, DT_I32, 0, 0, 0, 1 },
		{ 0, 4, 4, { 1, 3, 9, 40 }, { 1, 3, 40, 17 }, DT_I8, DT_I8, DT_I8, 0, 0, 0, 0 },
		{ 0, 4, 3, { 2, 3, 9, 40 }, { 3, 40, 17 }, DT_U8, DT_U8, DT_I8, 0, 0, 0, 0 },
		{ 0, 4, 4, { 2, 1, 6, 33 }, { 1, 4, 33, 8 }, DT_U8, DT_U8, DT_U8, 11, 200, 3, 0 },
		{ 0, 3, 2, { 2, 7, 50 }, { 50, 24 }, DT_I8, DT_U8, DT_I8, 0, 0, 0, 1 },
		{ 0, 3, 3, { 2, 7, 50 }, { 2, 50, 24 }, DT_U8, DT_I8, DT_I32, 9, 0, 0, 0 },
	};
	for (size_t ci = 0; ci < ARRAY_LEN(cases); ci++) {
		const struct mm_case *t = &cases[ci];
		struct ir_graph *g = graph_new(DIALECT_TPU, STAGE_LOWERED);
		int a = graph_add_tensor(g, "a", t->at, t->ra, t->as);
		int64_t n = t->gemm ? t->bs[0] : t->bs[t->rb - 1], nb = 1, np = t->gemm ? n : 1;
		for (int i = 0; i < t->rb; i++)
			nb *= t->bs[i];
		int8_t *bw = xmalloc((size_t)nb);
		for (int64_t i = 0; i < nb; i++)
			bw[i] = t->extreme ? (i % 2 ? -128 : 127) : (int8_t)(frand() * 128);
		int b = t->gemm ? graph_add_weight(g, "b", DT_I8, 2, t->bs, bw)
				: graph_add_tensor(g, "b", t->bt, t->rb, t->bs);
		/* the bias takes off the sums' mean, so that outputs vary */
		int32_t par[3][64];
		int64_t kk = t->as[t->ra - 1];
		double ea = (t->at == DT_U8 ? 127.5 : -0.5) - t->za;
		double eb = (t->bt == DT_U8 && !t->gemm ? 127.5 : -0.5) - t->zb;
		for (int j = 0; j < np; j++) {
			par[0][j] = (int32_t)(-(double)kk * ea * eb + frand() * 300);
			quant_multiplier((0.5 + fabs(frand())) / (64.0 * kk), &par[1][j], &par[2][j]);
		}
		int in[5] = { a, b };
		for (int j = 0; j < 3; j++) {
			char name[8];
			snprintf(name, sizeof name, "p%d", j);
			in[2 + j] = graph_add_weight(g, name, DT_I32, 1, (int64_t[]){ np }, par[j]);
		}
		int y = graph_add_tensor(g, "y", t->yt, 0, NULL);
		int o = graph_add_op(g, t->gemm ? OP_GEMM : OP_MATMUL, "mm", t->yt == DT_I32 ? 2 : 5,
				     in, 1, &y);
		if (t->gemm)
			op_set_int(&g->ops[o], "transB", 1);
		if (t->yt == DT_I32)
			op_set_int(&g->ops[o], "acc", 1);
		CHECK_MSG(op_defs[g->ops[o].type]->infer(g, &g->ops[o]) == 0, "case %zu: %s", ci, err_msg());
		g->tensors[y].dtype = t->yt;
		g->tensors[a].zero_point = t->za;
		g->tensors[b].zero_point = t->zb;
		g->tensors[y].zero_point = t->zy;
		g->tensors[a].scale = g->tensors[b].scale = g->tensors[y].scale = 0.1f;
		int64_t na = tensor_numel(&g->tensors[a]), ny = tensor_numel(&g->tensors[y]);
		int8_t *av = xmalloc((size_t)na), *got[2];
		for (int64_t i = 0; i < na; i++)
			av[i] = t->extreme ? (i % 3 ? -128 : 127) : (int8_t)(frand() * 128);
		size_t ybytes = (size_t)ny * dtype_size(t->yt);
		for (int fast = 0; fast < 2; fast++) {
			dnnl_int8_allow(fast);
			got[fast] = xcalloc(ybytes, 1);
			int8_t *ins[5] = { av, t->gemm ? NULL : bw };
			CHECK_MSG(run_op(g, o, ins, got[fast]) == 0,
				  "case %zu: %s", ci, err_msg());
		}
		dnnl_int8_allow(1);
		CHECK_MSG(!memcmp(got[0], got[1], ybytes), "case %zu: oneDNN and C kernels differ", ci);
		graph_free(g);
		free(av);
		free(bw);
		free(got[0]);
		free(got[1]);
	}
}

/* Add (with broadcasting and relu), Mul, Concat, Scale and
 * GlobalAveragePool against the formulas of formats/tpuc-quant.5; with
 * ASYM, every activation carries a zero point (za, zb, zy). */
static void test_elementwise_kernels(int asym)
{
	struct ir_graph *g = graph_new(DIALECT_TPU, STAGE_LOWERED);
	int a = graph_add_tensor(g, "a", DT_I8, 4, (int64_t[]){ 1, 3, 4, 5 });
	int b = graph_add_tensor(g, "b", DT_I8, 4, (int64_t[]){ 1, 3, 1, 1 });
	int y = graph_add_tensor(g, "y", DT_I8, 4, (int64_t[]){ 1, 3, 4, 5 });
	int yc = graph_add_tensor(g, "yc", DT_I8, 4, (int64_t[]){ 1, 6, 4, 5 });
	int yg = graph_add_tensor(g, "yg", DT_I8, 4, (int64_t[]){ 1, 3, 1, 1 });
	int8_t sc[3] = { 127, -127, 127 };
	int32_t par[3][3] = { { 100, -50, 7 }, { 1 << 30, 1 << 30, 1500000000 }, { 31, 30, 33 } };
	int wsc = graph_add_weight(g, "s", DT_I8, 1, (int64_t[]){ 3 }, sc);
	int pb = graph_add_weight(g, "pb", DT_I32, 1, (int64_t[]){ 3 }, par[0]);
	int pm = graph_add_weight(g, "pm", DT_I32, 1, (int64_t[]){ 3 }, par[1]);
	int ps = graph_add_weight(g, "ps", DT_I32, 1, (int64_t[]){ 3 }, par[2]);
	for (int t = 0; t < g->n_tensors; t++)
		g->tensors[t].scale = 0.1f;
	int za = asym ? 5 : 0, zb = asym ? -3 : 0, zy = asym ? 7 : 0;
	g->tensors[a].zero_point = za;
	g->tensors[b].zero_point = zb;
	g->tensors[y].zero_point = g->tensors[yc].zero_point = g->tensors[yg].zero_point = zy;
	int add = graph_add_op(g, OP_ADD, "add", 2, (int[]){ a, b }, 1, &y);
	op_set_ints(&g->ops[add], "multipliers", 2, (int64_t[]){ 1500000000, 900000000 });
	op_set_int(&g->ops[add], "rshift", 31);
	op_set_int(&g->ops[add], "do_relu", 1);
	int mul = graph_add_op(g, OP_MUL, "mul", 2, (int[]){ a, b }, 1, &y);
	op_set_int(&g->ops[mul], "multiplier", 1234567890);
	op_set_int(&g->ops[mul], "rshift", 36);
	int cat = graph_add_op(g, OP_CONCAT, "cat", 2, (int[]){ a, a }, 1, &yc);
	op_set_int(&g->ops[cat], "axis", 1);
	op_set_ints(&g->ops[cat], "multipliers", 2, (int64_t[]){ 1 << 30, 1717986918 });
	op_set_ints(&g->ops[cat], "shifts", 2, (int64_t[]){ 30, 31 });
	int scl = graph_add_op(g, OP_SCALE, "scale", 5, (int[]){ a, wsc, pb, pm, ps }, 1, &y);
	int gap = graph_add_op(g, OP_GAVGPOOL, "gap", 1, &a, 1, &yg);
	op_set_int(&g->ops[gap], "multiplier", 1717986918);
	op_set_int(&g->ops[gap], "rshift", 35);

	int8_t av[60], bv[3], yv[120];
	for (int i = 0; i < 60; i++)
		av[i] = (int8_t)(frand() * 128);
	for (int i = 0; i < 3; i++)
		bv[i] = (int8_t)(frand() * 128);
	CHECK_MSG(run_op(g, add, (int8_t *[]){ av, bv }, yv) == 0, "%s", err_msg());
	int bad = 0;
	for (int i = 0; i < 60; i++) {
		int64_t p = (int64_t)(av[i] - za) * 1500000000 + (int64_t)(bv[i / 20] - zb) * 900000000;
		bad += yv[i] != quant_clamp(quant_round_shift(p, 31) + zy, zy, 127);
	}
	CHECK_MSG(!bad, "add: %d wrong", bad);
	CHECK_MSG(run_op(g, mul, (int8_t *[]){ av, bv }, yv) == 0, "%s", err_msg());
	bad = 0;
	for (int i = 0; i < 60; i++)
		bad += yv[i] != quant_clamp(quant_round_shift((int64_t)(av[i] - za) * (bv[i / 20] - zb) *
							      1234567890, 36) + zy, -128, 127);
	CHECK_MSG(!bad, "mul: %d wrong", bad);
	CHECK_MSG(run_op(g, cat, (int8_t *[]){ av, av }, yv) == 0, "%s", err_msg());
	bad = 0;
	for (int i = 0; i < 60; i++)
		bad += yv[i] != quant_clamp(av[i] - za + zy, -128, 127) ||
		       yv[60 + i] != quant_clamp(quant_round_shift((int64_t)(av[i] - za) * 1717986918, 31) + zy,
						 -128, 127);
	CHECK_MSG(!bad, "concat: %d wrong", bad);
	CHECK_MSG(run_op(g, scl, (int8_t *[]){ av, NULL, NULL, NULL, NULL }, yv) == 0, "%s", err_msg());
	bad = 0;
	for (int i = 0; i < 60; i++) {
		int c = i / 20;
		bad += yv[i] != quant_requant_zp((av[i] - za) * sc[c] + par[0][c], par[1][c], par[2][c], zy,
						 -128, 127);
	}
	CHECK_MSG(!bad, "scale: %d wrong", bad);
	CHECK_MSG(run_op(g, gap, (int8_t *[]){ av }, yv) == 0, "%s", err_msg());
	bad = 0;
	for (int c = 0; c < 3; c++) {
		int32_t sum = 0;
		for (int i = 0; i < 20; i++)
			sum += av[c * 20 + i] - za;
		bad += yv[c] != quant_requant_zp(sum, 1717986918, 35, zy, -128, 127);
	}
	CHECK_MSG(!bad, "gap: %d wrong", bad);
	graph_free(g);
}

/* u8 activations: quantising, ranges, scales and fused-activation bounds. */
static void test_u8(void)
{
	CHECK_MSG(quant_f32_to_q_one(2.5f, 1, DT_U8) == 3, "2.5 -> 3");
	CHECK_MSG(quant_f32_to_q_one(200.4f, 1, DT_U8) == 200, "200.4 -> 200 (beyond i8)");
	CHECK_MSG(quant_f32_to_q_one(-1, 1, DT_U8) == 0, "negative saturates to 0");
	CHECK_MSG(quant_f32_to_q_one(300, 1, DT_U8) == 255, "saturates to 255");
	CHECK_MSG(quant_f32_to_q_one(NAN, 1, DT_U8) == 0, "NaN -> 0");
	CHECK_MSG(quant_f32_to_q_one(-300, 1, DT_I8) == -128, "i8 still saturates to -128");
	CHECK_MSG(quant_act_dtype(0) == DT_U8 && quant_act_dtype(1) == DT_U8 &&
	          quant_act_dtype(-1e-6) == DT_I8, "u8 exactly when min >= 0");
	CHECK_MSG(quant_act_scale_dt(2.55, DT_U8) == (float)(2.55 / 255) &&
	          quant_act_scale_dt(2.54, DT_I8) == (float)(2.54 / 127), "T / 255 and T / 127");
	uint8_t ub[3] = { 0, 128, 255 };
	int8_t ib[3] = { -128, 0, 127 };
	CHECK_MSG(quant_get(ub, DT_U8, 2) == 255 && quant_get(ib, DT_I8, 0) == -128, "quant_get");
	quant_put(ub, DT_U8, 1, 200);
	CHECK_MSG(ub[1] == 200, "quant_put");
	struct ir_op op = { 0 };
	int lo, hi;
	quant_out_bounds(&op, DT_U8, 0.1f, 0, &lo, &hi);
	CHECK_MSG(lo == 0 && hi == 255, "u8 bounds [0, 255]");
	op_set_int(&op, "do_relu", 1);
	op_set_float(&op, "relu_limit", 6.0);
	quant_out_bounds(&op, DT_U8, 6.0f / 255, 0, &lo, &hi);
	CHECK_MSG(lo == 0 && hi == 255, "relu6 with T = 6: [0, 255], got [%d, %d]", lo, hi);
	quant_out_bounds(&op, DT_U8, 0.1f, 0, &lo, &hi);
	CHECK_MSG(lo == 0 && hi == 60, "relu6 at scale 0.1: [0, 60]");
	quant_out_bounds(&op, DT_I8, 0.01f, 0, &lo, &hi);
	CHECK_MSG(lo == 0 && hi == 127, "relu6 at i8 scale 0.01 saturates at 127");
	for (int i = 0; i < op.n_attr; i++)
		free(op.attr[i].name);
	free(op.attr);
}

/* Asymmetric u8: the grid of quant_act_asym and quantising with a zero
 * point (formats/tpuc-quant.5). */
static void test_asym(void)
{
	float s;
	int z;
	quant_act_asym(-1.0, 3.0, &s, &z);
	CHECK_MSG(s == (float)(4.0 / 255) && z == 64, "[-1, 3]: scale %g zp %d", s, z);
	quant_act_asym(0.5, 2.55, &s, &z);
	CHECK_MSG(s == (float)(2.55 / 255) && z == 0, "a range above 0 widens to hold 0: zp %d", z);
	quant_act_asym(-2.55, -1, &s, &z);
	CHECK_MSG(z == 255, "a range below 0 has zp 255, got %d", z);
	quant_act_asym(0, 0, &s, &z);
	CHECK_MSG(s > 0 && z == 0, "an empty range still has a scale");
	CHECK_MSG(quant_f32_to_qz_one(0, 0.1f, 64, DT_U8) == 64, "0 -> the zero point");
	CHECK_MSG(quant_f32_to_qz_one(-1.25f, 0.5f, 64, DT_U8) == 61, "-2.5 rounds away, then + zp");
	CHECK_MSG(quant_f32_to_qz_one(-100, 0.1f, 64, DT_U8) == 0 &&
	          quant_f32_to_qz_one(100, 0.1f, 64, DT_U8) == 255, "saturates after the zero point");
	CHECK_MSG(quant_f32_to_qz_one(NAN, 0.1f, 64, DT_U8) == 64, "NaN -> the zero point");
	uint8_t q[2];
	float x[2] = { -1.0f, 3.0f }, back[2];
	quant_f32_to_q(x, q, 2, 4.0f / 255, 64, DT_U8);
	quant_q_to_f32(q, DT_U8, back, 2, 4.0f / 255, 64);
	CHECK_MSG(q[0] == 0 && q[1] == 255 && fabsf(back[0] + 1.0039f) < 1e-3, "round trip %d %d %g",
	          q[0], q[1], back[0]);
	CHECK_MSG(quant_requant_zp(-300, 1 << 30, 30, 64, 0, 255) == 0 &&
	          quant_requant_zp(10, 1 << 30, 30, 64, 0, 255) == 74, "requantise, add zp, clamp");
	struct ir_op op = { 0 };
	int lo, hi;
	op_set_int(&op, "do_relu", 1);
	op_set_float(&op, "relu_limit", 6.0);
	quant_out_bounds(&op, DT_U8, 0.1f, 64, &lo, &hi);
	CHECK_MSG(lo == 64 && hi == 124, "relu6 with zp 64 at 0.1: [64, 124], got [%d, %d]", lo, hi);
	for (int i = 0; i < op.n_attr; i++)
		free(op.attr[i].name);
	free(op.attr);
}

/* Real squared error of quantising V (N values, |x|) at threshold T. */
static double real_mse(const double *v, int n, double t, int levels)
{
	double e = 0, s = t / levels;
	for (int i = 0; i < n; i++) {
		double q = round(v[i] / s);
		q = q > levels ? levels : q;
		e += (v[i] - q * s) * (v[i] - q * s);
	}
	return e / n;
}

/* Percentile and MSE threshold searches. */
static void test_thresholds(void)
{
	enum { NB = 2048, N = 100000 };
	static uint64_t h[NB];
	memset(h, 0, sizeof h);
	for (int b = 0; b < 100; b++)
		h[b] = 1;
	CHECK_MSG(calib_percentile_threshold(h, 100, 0.5, 0, 50) == 25, "median of 100 bins");
	CHECK_MSG(calib_percentile_threshold(h, 100, 0.5, 0, 100) == 50, "100%% is everything");
	CHECK_MSG(calib_percentile_threshold(h, 100, 0.5, 100, 50) == 0.5, "zeros count");
	CHECK_MSG(calib_percentile_threshold(h, 100, 0.5, 0, 99.5) == 50, "99.5%% of 100 values");
	/* MSE: on a long-tailed sample the chosen threshold's real error is
	 * within 3% of the best over a fine grid, and it clips the tail */
	static double v[N];
	double mx = 0;
	for (int i = 0; i < N; i++) {
		double a = fabs(frand() + frand() + frand() + frand());
		if (i % 1000 == 0)
			a *= 5;
		v[i] = a;
		mx = a > mx ? a : mx;
	}
	for (int levels = 127; levels <= 255; levels += 128) {
		double w = mx / NB * 1.0000001;
		memset(h, 0, sizeof h);
		for (int i = 0; i < N; i++)
			h[(int)(v[i] / w)]++;
		double t = calib_mse_threshold(h, NB, w, levels), best = INFINITY;
		for (int i = 1; i <= 400; i++)
			best = fmin(best, real_mse(v, N, mx * i / 400, levels));
		double got = real_mse(v, N, t, levels);
		CHECK_MSG(got <= best * 1.03, "levels %d: mse at %g is %g, best %g", levels, t, got, best);
		CHECK_MSG(t < mx, "levels %d: the tail is clipped (%g < %g)", levels, t, mx);
	}
}

/* Statistics: shards merged in any order equal one run, histograms widen
 * exactly, several sample files equal one, and the partial file keeps
 * everything. */
/* 1 if the N doubles at A and B are the same values in some order. */
static int same_values(const double *a, const double *b, int64_t n)
{
	for (int64_t i = 0; i < n; i++) {
		int64_t na = 0, nb = 0;
		for (int64_t j = 0; j < n; j++) {
			na += a[j] == a[i];
			nb += b[j] == a[i];
		}
		if (na != nb)
			return 0;
	}
	return 1;
}

static void test_stats(void)
{
	struct ir_graph *g = graph_new(DIALECT_TOP, STAGE_CANONICAL);
	g->name = xstrdup("stats graph");
	int x = graph_add_tensor(g, "x", DT_F32, 2, (int64_t[]){ 1, 3000 });
	int y = graph_add_tensor(g, "y", DT_F32, 0, NULL);
	graph_add_op(g, OP_RELU, "relu", 1, &x, 1, &y);
	graph_set_io(g, 1, &x, 1, &y);
	CHECK_MSG(graph_infer(g) == 0, "%s", err_msg());
	struct npz z = { 0 }, z2[2] = { { 0 } };
	float *d = npz_add(&z, "x", DT_F32, 3, (int64_t[]){ 7, 1, 3000 }, NULL)->data;
	for (int i = 0; i < 7 * 3000; i++)    /* growing ranges, exact zeros */
		d[i] = i % 11 == 0 ? 0 : frand() * (float)(1 << (i / 3000 * 3 % 10)) * 0.7f;
	npz_add(&z2[0], "x", DT_F32, 3, (int64_t[]){ 3, 1, 3000 }, d);
	npz_add(&z2[1], "x", DT_F32, 3, (int64_t[]){ 4, 1, 3000 }, d + 3 * 3000);
	const char *names[2] = { "a.npz", "b.npz" };
	for (int m = 0; m < 4; m++) {
		struct calib_opts o = { .method = (enum calib_method)m, .percentile = 99.9, .nthreads = 1 };
		struct calib_stats *all = NULL, *two = NULL, *part[3] = { NULL, NULL, NULL };
		CHECK_MSG(calib_collect(g, 1, &z, names, &o, &all) == 0, "%s", err_msg());
		CHECK_MSG(calib_collect(g, 2, z2, names, &o, &two) == 0, "%s", err_msg());
		for (int k = 0; k < 3; k++) {
			o.shard = k + 1;
			o.nshards = 3;
			CHECK_MSG(calib_collect(g, 1, &z, names, &o, &part[k]) == 0, "%s", err_msg());
		}
		if (!all || !two || !part[0] || !part[1] || !part[2])
			return;
		CHECK_MSG(all->samples == 7 && part[0]->samples + part[1]->samples + part[2]->samples == 7,
		          "shards split the samples");
		/* merge 3 + 1 + 2 */
		CHECK_MSG(calib_stats_merge(part[2], part[0], "p1") == 0 &&
		          calib_stats_merge(part[2], part[1], "p2") == 0, "%s", err_msg());
		struct calib_stats *s[2] = { part[2], two };
		for (int j = 0; j < 2; j++)
			for (int t = 0; t < all->n; t++)
				CHECK_MSG(s[j]->min[t] == all->min[t] && s[j]->max[t] == all->max[t] &&
				          s[j]->exp[t] == all->exp[t] && s[j]->zeros[t] == all->zeros[t] &&
				          !memcmp(s[j]->hist + t * CALIB_BINS, all->hist + t * CALIB_BINS,
					          CALIB_BINS * sizeof(uint64_t)),
				          "method %d, %s: tensor %d differs", m, j ? "two files" : "merged", t);
		/* kld: the samples' own thresholds, the same list in another order */
		for (int j = 0; j < 2; j++)
			for (int t = 0; t < all->n; t++)
				CHECK_MSG(s[j]->nsv[t] == all->nsv[t] &&
					  same_values(s[j]->sv + t * s[j]->cap, all->sv + t * all->cap,
						      all->nsv[t]),
					  "method %d, %s: tensor %d's sample thresholds", m,
					  j ? "two files" : "merged", t);
		CHECK_MSG(m != CALIB_KLD ? all->nsv[0] == 0 : all->nsv[0] == 7,
			  "method %d: %lld sample thresholds", m, (long long)all->nsv[0]);
		CHECK_MSG(all->zeros[0] > 0 && all->exp[0] == 9, "zeros counted, range 2^%d", all->exp[0]);
		/* the file keeps every field */
		char path[] = "/tmp/test_stats_XXXXXX";
		int fd = mkstemp(path);
		close(fd);
		struct calib_stats *back = NULL;
		CHECK_MSG(calib_stats_write(path, all) == 0 && calib_stats_read(path, &back) == 0,
		          "%s", err_msg());
		if (back) {
			CHECK_MSG(back->method == all->method && back->percentile == all->percentile &&
			          back->samples == 7 && !strcmp(back->graph, "stats graph"), "header");
			for (int t = 0; t < all->n; t++)
				CHECK_MSG(!strcmp(back->names[t], all->names[t]) &&
				          back->min[t] == all->min[t] && back->max[t] == all->max[t] &&
				          back->exp[t] == all->exp[t] && back->zeros[t] == all->zeros[t] &&
				          !memcmp(back->hist + t * CALIB_BINS, all->hist + t * CALIB_BINS,
					          CALIB_BINS * sizeof(uint64_t)) &&
				          back->nsv[t] == all->nsv[t] &&
				          (!all->nsv[t] || !memcmp(back->sv + t * back->cap, all->sv + t * all->cap,
							  sizeof(double) * (size_t)all->nsv[t])),
				          "tensor %d read back", t);
			struct calib_table *t1 = NULL, *t2 = NULL;
			calib_stats_table(all, 1, &t1);
			calib_stats_table(back, 1, &t2);
			for (int t = 0; t < t1->n; t++)
				CHECK_MSG(t1->e[t].threshold == t2->e[t].threshold, "same thresholds");
			calib_table_free(t1);
			calib_table_free(t2);
			calib_stats_free(back);
		}
		/* refusals: another method, truncation */
		back = NULL;
		two->method = (enum calib_method)((m + 1) % 4);
		CHECK_MSG(calib_stats_merge(all, two, "other") < 0 && strstr(err_msg(), "'other'"),
		          "another method refused");
		FILE *f = fopen(path, "r+");
		CHECK_MSG(f && ftruncate(fileno(f), 120) == 0, "truncate");
		if (f)
			fclose(f);
		CHECK_MSG(calib_stats_read(path, &back) < 0 && strstr(err_msg(), path), "truncated refused");
		unlink(path);
		calib_stats_free(all);
		calib_stats_free(two);
		for (int k = 0; k < 3; k++)
			calib_stats_free(part[k]);
	}
	/* KLD never clips below a distribution far from zero: values in
	 * [2000, 4000] keep the min/max threshold (MSE would not clip either) */
	struct npz zo = { 0 };
	float *od = npz_add(&zo, "x", DT_F32, 3, (int64_t[]){ 2, 1, 3000 }, NULL)->data;
	for (int i = 0; i < 2 * 3000; i++)
		od[i] = 3000 + 1000 * frand();
	struct calib_opts ko = { .method = CALIB_KLD, .nthreads = 1 };
	struct calib_table *kt = NULL;
	CHECK_MSG(calib_run(g, &zo, "offset.npz", &ko, &kt) == 0, "%s", err_msg());
	if (kt)
		CHECK_MSG(kt->e[0].threshold == fmax(fabs(kt->e[0].min), fabs(kt->e[0].max)),
		          "offset distribution: threshold %g, max %g", kt->e[0].threshold, kt->e[0].max);
	calib_table_free(kt);
	npz_free(&zo);
	npz_free(&z);
	npz_free(&z2[0]);
	npz_free(&z2[1]);
	graph_free(g);
}

/* Elementwise unary ops in int8 are 256-entry lookups whose output range
 * covers every result; ops with no int8 form run in bf16 between Casts. */
static void test_lut(void)
{
	struct ir_graph *g = graph_new(DIALECT_TOP, STAGE_CANONICAL);
	int x = graph_add_tensor(g, "x", DT_F32, 2, (int64_t[]){ 1, 256 });
	int s = graph_add_tensor(g, "s", DT_F32, 0, NULL);
	int y = graph_add_tensor(g, "y", DT_F32, 0, NULL);
	graph_add_op(g, OP_SIGMOID, "sig", 1, &x, 1, &s);
	graph_add_op(g, OP_SOFTMAX, "sm", 1, &s, 1, &y);
	graph_set_io(g, 1, &x, 1, &y);
	CHECK_MSG(graph_infer(g) == 0, "%s", err_msg());
	struct calib_table *tab = xcalloc(1, sizeof *tab);
	calib_add(tab, "x", 6.35, -6.35, 6.35);
	calib_add(tab, "s", 1e-3, 0, 1e-3);      /* a calibration that saw tiny outputs */
	calib_add(tab, "y", 1, 0, 1);
	struct ir_graph *q = NULL;
	CHECK_MSG(lower_graph(g, "tpu-a", MODE_INT8, tab, &q) == 0, "%s", err_msg());
	if (q) {
		int so = graph_find_tensor(q, "s");
		const struct ir_op *sig = NULL, *sm = NULL;
		for (int i = 0; i < q->n_ops; i++) {
			if (!strcmp(q->ops[i].name, "sig"))
				sig = &q->ops[i];
			if (!strcmp(q->ops[i].name, "sm"))
				sm = &q->ops[i];
		}
		int64_t lut[256];
		CHECK_MSG(sig && op_ints(sig, "lut", lut, 256) == 256, "sig has a 256-entry lut");
		CHECK_MSG(so >= 0 && q->tensors[so].dtype == DT_U8 &&
		          fabs(q->tensors[so].scale - 1.0 / 255) < 1e-4, "sigmoid output u8 over [0, 1]");
		CHECK_MSG(sm && q->tensors[sm->out[0]].dtype == DT_BF16 &&
		          q->tensors[sm->in[0]].dtype == DT_BF16, "softmax runs in bf16");
		/* every input code: the lookup equals quantised sigmoid within a code */
		struct interp it;
		interp_init(&it, q, 1);
		struct npz z = { 0 };
		float *xv = npz_add(&z, "x", DT_F32, 2, (int64_t[]){ 1, 256 }, NULL)->data;
		for (int c = 0; c < 256; c++)
			xv[c] = 0.05f * (float)(c - 128);
		CHECK_MSG(interp_set_inputs(&it, &z, "x.npz") == 0 && interp_run(&it, NULL, NULL) == 0,
		          "%s", err_msg());
		float *sv = interp_get_f32(&it, so);
		double worst = 0;
		for (int c = 0; c < 256; c++)
			worst = fmax(worst, fabs(sv[c] - 1 / (1 + exp(-0.05 * (c - 128)))));
		CHECK_MSG(worst <= 1.0 / 255, "lookup error %g over one code", worst);
		free(sv);
		interp_free(&it);
		npz_free(&z);
		graph_free(q);
	}
	calib_table_free(tab);
	graph_free(g);
}

/* A small Top graph (conv+relu, residual add, pooling, gemm) lowered to
 * int8 with a table from calib_run: the int8 output tracks the float one. */
static void test_lowered_graph(void)
{
	struct ir_graph *g = graph_new(DIALECT_TOP, STAGE_CANONICAL);
	g->name = xstrdup("t");
	int x = graph_add_tensor(g, "x", DT_F32, 4, (int64_t[]){ 1, 4, 8, 8 });
	float w1[8 * 4 * 9], b1[8], w2[8 * 8 * 9], b2[8], fw[10 * 8], fb[10];
	for (size_t i = 0; i < ARRAY_LEN(w1); i++) w1[i] = frand() * 0.3f;
	for (size_t i = 0; i < ARRAY_LEN(w2); i++) w2[i] = frand() * 0.2f;
	for (size_t i = 0; i < ARRAY_LEN(fw); i++) fw[i] = frand() * 0.5f;
	for (int i = 0; i < 8; i++) b1[i] = frand() * 0.1f, b2[i] = frand() * 0.1f;
	for (int i = 0; i < 10; i++) fb[i] = frand();
	int wt1 = graph_add_weight(g, "w1", DT_F32, 4, (int64_t[]){ 8, 4, 3, 3 }, w1);
	int bt1 = graph_add_weight(g, "b1", DT_F32, 1, (int64_t[]){ 8 }, b1);
	int wt2 = graph_add_weight(g, "w2", DT_F32, 4, (int64_t[]){ 8, 8, 3, 3 }, w2);
	int bt2 = graph_add_weight(g, "b2", DT_F32, 1, (int64_t[]){ 8 }, b2);
	int fwt = graph_add_weight(g, "fw", DT_F32, 2, (int64_t[]){ 10, 8 }, fw);
	int fbt = graph_add_weight(g, "fb", DT_F32, 1, (int64_t[]){ 10 }, fb);
	int t[8];
	static const char *const names[8] = { "c1", "c2", "sum", "r", "mp", "gap", "flat", "out" };
	for (int i = 0; i < 8; i++)
		t[i] = graph_add_tensor(g, names[i], DT_F32, 0, NULL);
	int o;
	o = graph_add_op(g, OP_CONV, "conv1", 3, (int[]){ x, wt1, bt1 }, 1, &t[0]);
	op_set_ints(&g->ops[o], "pads", 4, (int64_t[]){ 1, 1, 1, 1 });
	op_set_int(&g->ops[o], "do_relu", 1);
	o = graph_add_op(g, OP_CONV, "conv2", 3, (int[]){ t[0], wt2, bt2 }, 1, &t[1]);
	op_set_ints(&g->ops[o], "pads", 4, (int64_t[]){ 1, 1, 1, 1 });
	graph_add_op(g, OP_ADD, "add", 2, (int[]){ t[0], t[1] }, 1, &t[2]);
	graph_add_op(g, OP_RELU, "relu", 1, &t[2], 1, &t[3]);
	o = graph_add_op(g, OP_MAXPOOL, "pool", 1, &t[3], 1, &t[4]);
	op_set_ints(&g->ops[o], "kernel_shape", 2, (int64_t[]){ 2, 2 });
	op_set_ints(&g->ops[o], "strides", 2, (int64_t[]){ 2, 2 });
	graph_add_op(g, OP_GAVGPOOL, "gap", 1, &t[4], 1, &t[5]);
	graph_add_op(g, OP_FLATTEN, "flatten", 1, &t[5], 1, &t[6]);
	o = graph_add_op(g, OP_GEMM, "fc", 3, (int[]){ t[6], fwt, fbt }, 1, &t[7]);
	op_set_int(&g->ops[o], "transB", 1);
	graph_set_io(g, 1, &x, 1, &t[7]);
	CHECK_MSG(graph_infer(g) == 0, "%s", err_msg());

	struct npz z = { 0 };
	struct npz_array *a = npz_add(&z, "x", DT_F32, 5, (int64_t[]){ 6, 1, 4, 8, 8 }, NULL);
	for (int64_t i = 0; i < npz_numel(a); i++)
		((float *)a->data)[i] = frand() * 2;
	struct calib_opts opts = { .method = CALIB_KLD, .nthreads = 1 };
	struct calib_table *tab = NULL;
	CHECK_MSG(calib_run(g, &z, "samples", &opts, &tab) == 0, "%s", err_msg());
	if (!tab)
		return;
	CHECK_MSG(tab->n == 9 && !strcmp(tab->e[0].name, "x") && !strcmp(tab->e[8].name, "out"),
	          "table in graph order, %d entries", tab->n);

	struct ir_graph *q = NULL;
	CHECK_MSG(lower_graph(g, "tpu-a", MODE_INT8, tab, &q) == 0, "%s", err_msg());
	if (q) {
		CHECK_MSG(q->dialect == DIALECT_TPU && q->stage == STAGE_LOWERED &&
		          q->mode == MODE_INT8 && !strcmp(q->chip, "tpu-a"), "header");
		int xi = graph_find_tensor(q, "x"), oi = graph_find_tensor(q, "out");
		CHECK_MSG(xi >= 0 && q->tensors[xi].dtype == DT_F32 && q->inputs[0] == xi, "input stays f32");
		CHECK_MSG(oi >= 0 && q->tensors[oi].dtype == DT_F32 && q->outputs[0] == oi, "output f32");
		CHECK_MSG(graph_find_tensor(q, "x_i8") >= 0 && graph_find_tensor(q, "out_i8") >= 0,
		          "int8 twins of the graph input and output");
		int c1 = graph_find_tensor(q, "c1"), r = graph_find_tensor(q, "r"), s = graph_find_tensor(q, "sum");
		int c2 = graph_find_tensor(q, "c2");
		const struct calib_entry *e1 = calib_find(tab, "c1"), *e2 = calib_find(tab, "c2");
		CHECK_MSG(c1 >= 0 && q->tensors[c1].dtype == DT_U8 && e1 &&
		          q->tensors[c1].scale == (float)(e1->threshold / 255), "c1 (relu) is u8, T / 255");
		CHECK_MSG(c2 >= 0 && q->tensors[c2].dtype == DT_I8 && e2 && e2->min < 0 &&
		          q->tensors[c2].scale == (float)(e2->threshold / 127), "c2 (signed) is i8, T / 127");
		struct ir_graph *qs = NULL;
		struct lower_opts lo = { .tab = tab, .signed_only = 1 };
		CHECK_MSG(lower_graph_opts(g, "tpu-a", MODE_INT8, &lo, &qs) == 0, "%s", err_msg());
		for (int i = 0; qs && i < qs->n_tensors; i++)
			CHECK_MSG(qs->tensors[i].dtype != DT_U8, "signed_only: '%s' is u8", qs->tensors[i].name);
		graph_free(qs);
		CHECK_MSG(r >= 0 && s >= 0 && q->tensors[r].scale == q->tensors[s].scale, "relu keeps the scale");

		struct interp fi, qi;
		interp_init(&fi, g, 1);
		interp_init(&qi, q, 1);
		double dot = 0, na = 0, nb = 0;
		for (int sample = 0; sample < 6; sample++) {
			CHECK_MSG(interp_set_sample(&fi, &z, "samples", sample) == 0, "%s", err_msg());
			CHECK_MSG(interp_set_sample(&qi, &z, "samples", sample) == 0, "%s", err_msg());
			CHECK_MSG(interp_run(&fi, NULL, NULL) == 0, "%s", err_msg());
			CHECK_MSG(interp_run(&qi, NULL, NULL) == 0, "%s", err_msg());
			const float *fa = fi.val[g->outputs[0]], *fb2 = qi.val[q->outputs[0]];
			for (int i = 0; i < 10; i++) {
				dot += fa[i] * fb2[i];
				na += fa[i] * fa[i];
				nb += fb2[i] * fb2[i];
			}
		}
		double cos = dot / sqrt(na * nb);
		CHECK_MSG(cos > 0.99, "int8 vs float cosine %f", cos);
		interp_free(&fi);
		interp_free(&qi);
		graph_free(q);
	}
	/* a table missing a tensor is refused, naming op, tensor and table */
	struct calib_table *part = xcalloc(1, sizeof *part);
	part->path = xstrdup("part.table");
	calib_add(part, "x", 1, -1, 1);
	q = NULL;
	CHECK_MSG(lower_graph(g, "tpu-a", MODE_INT8, part, &q) < 0 &&
	          strstr(err_msg(), "op 'conv1' (Conv): no threshold for 'c1' in 'part.table'"),
	          "missing tensor: %s", err_msg());
	/* f32 lowering keeps ops and tensors */
	CHECK_MSG(lower_graph(g, "tpu-b", MODE_F32, NULL, &q) == 0 && q->n_ops == g->n_ops &&
	          q->n_tensors == g->n_tensors, "f32 lowering");
	graph_free(q);
	CHECK_MSG(lower_graph(g, "tpu-z", MODE_F32, NULL, &q) < 0, "unknown chip");
	CHECK_MSG(mode_from_name("int4") == MODE_NONE && mode_from_name("bf16") == MODE_BF16 &&
		  !strcmp(mode_name(MODE_F16), "f16") && !strcmp(mode_name(MODE_NONE), ""),
		  "mode names");
	CHECK_MSG(lower_graph(g, "tpu-a", MODE_COUNT, NULL, &q) < 0, "unknown mode");
	calib_table_free(part);
	calib_table_free(tab);
	npz_free(&z);
	graph_free(g);
}

int main(void)
{
	test_rounding();
	test_multiplier();
	test_kld();
	test_table();
	test_conv_kernel(0);
	test_conv_kernel(1);
	test_conv_kernel(2);
	test_conv_kernel(3);
	test_asym();
	test_u8();
	test_thresholds();
	test_stats();
	test_lut();
	test_pool_kernels();
	test_matmul_kernels();
	test_elementwise_kernels(0);
	test_elementwise_kernels(1);
	test_lowered_graph();
	return check_report("test_quant");
}
