/* test_kernels - the float kernels of Conv, MaxPool and AveragePool against
 * naive plain-C references, and H-sliced runs (struct kern's row offsets)
 * against whole runs: the sliced outputs, stacked, must equal the whole.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/base.h"
#include "ir/ir.h"
#include "ir/op.h"

#include "check.h"

static uint32_t rng = 12345;

static float frand(void)
{
	rng = rng * 1664525u + 1013904223u;
	return (float)((rng >> 8) & 0xffff) / 32768.0f - 1.0f;
}

/* One op under test: a graph x -> op -> y with random weights. */
struct case_ {
	const char *name;
	enum op_type type;
	int n, c, h, w;             /* input */
	int oc, group;              /* conv */
	int kh, kw, sh, sw, dh, dw;
	int pt, pl, pb, pr;
	int ceil_mode, count_include_pad;
	int do_relu;
	double relu_limit;
	int bias;
};

static struct ir_graph *build(const struct case_ *t)
{
	struct ir_graph *g = graph_new(DIALECT_TOP, STAGE_ORIGIN);
	int64_t xs[4] = { t->n, t->c, t->h, t->w };
	int x = graph_add_tensor(g, "x", DT_F32, 4, xs);
	int y = graph_add_tensor(g, "y", DT_F32, 0, NULL);
	int in[3] = { x, -1, -1 }, n_in = 1;
	if (t->type == OP_CONV) {
		int64_t ws[4] = { t->oc, t->c / t->group, t->kh, t->kw };
		int64_t nw = ws[0] * ws[1] * ws[2] * ws[3];
		float *wd = xmalloc((size_t)nw * sizeof *wd), bd[64];
		for (int64_t i = 0; i < nw; i++)
			wd[i] = frand();
		for (int i = 0; i < t->oc; i++)
			bd[i] = frand();
		in[1] = graph_add_weight(g, "w", DT_F32, 4, ws, wd);
		n_in = 2;
		if (t->bias) {
			in[2] = graph_add_weight(g, "b", DT_F32, 1, (int64_t[]){ t->oc }, bd);
			n_in = 3;
		}
		free(wd);
	}
	int op = graph_add_op(g, t->type, "op", n_in, in, 1, &y);
	struct ir_op *o = &g->ops[op];
	op_set_ints(o, "kernel_shape", 2, (int64_t[]){ t->kh, t->kw });
	op_set_ints(o, "strides", 2, (int64_t[]){ t->sh, t->sw });
	op_set_ints(o, "dilations", 2, (int64_t[]){ t->dh, t->dw });
	op_set_ints(o, "pads", 4, (int64_t[]){ t->pt, t->pl, t->pb, t->pr });
	if (t->type == OP_CONV)
		op_set_int(o, "group", t->group);
	if (t->ceil_mode)
		op_set_int(o, "ceil_mode", 1);
	if (t->count_include_pad)
		op_set_int(o, "count_include_pad", 1);
	if (t->do_relu)
		op_set_int(o, "do_relu", 1);
	if (t->relu_limit > 0)
		op_set_float(o, "relu_limit", t->relu_limit);
	graph_set_io(g, 1, &x, 1, &y);
	if (graph_infer(g) < 0) {
		fprintf(stderr, "%s: %s\n", t->name, err_msg());
		exit(1);
	}
	return g;
}

/* Naive references, in double. */
static void ref_conv(const struct case_ *t, const float *x, const float *w, const float *b,
		     float *y, int oh, int ow)
{
	int cg = t->c / t->group, og = t->oc / t->group;
	for (int n = 0; n < t->n; n++)
	for (int o = 0; o < t->oc; o++)
	for (int i = 0; i < oh; i++)
	for (int j = 0; j < ow; j++) {
		double s = b ? b[o] : 0;
		int gi = o / og;
		for (int c = 0; c < cg; c++)
		for (int a = 0; a < t->kh; a++)
		for (int e = 0; e < t->kw; e++) {
			int h = i * t->sh - t->pt + a * t->dh, v = j * t->sw - t->pl + e * t->dw;
			if (h < 0 || h >= t->h || v < 0 || v >= t->w)
				continue;
			s += (double)x[((n * t->c + gi * cg + c) * t->h + h) * t->w + v] *
			     w[((o * cg + c) * t->kh + a) * t->kw + e];
		}
		if (t->do_relu) {
			s = s < 0 ? 0 : s;
			if (t->relu_limit > 0 && s > t->relu_limit)
				s = t->relu_limit;
		}
		y[((n * t->oc + o) * oh + i) * ow + j] = (float)s;
	}
}

static void ref_pool(const struct case_ *t, const float *x, float *y, int oh, int ow)
{
	for (int p = 0; p < t->n * t->c; p++)
	for (int i = 0; i < oh; i++)
	for (int j = 0; j < ow; j++) {
		/* PyTorch's definition: the divisor counts the window clipped
		 * to the padded input, the sum only real elements. */
		int hs = i * t->sh - t->pt, ws = j * t->sw - t->pl;
		int he = hs + (t->kh - 1) * t->dh + 1, we = ws + (t->kw - 1) * t->dw + 1;
		int pool = ((he < t->h + t->pb ? he : t->h + t->pb) - hs) *
			   ((we < t->w + t->pr ? we : t->w + t->pr) - ws);
		double s = 0, m = -INFINITY;
		int cnt = 0;
		for (int a = 0; a < t->kh; a++)
		for (int e = 0; e < t->kw; e++) {
			int h = hs + a * t->dh, v = ws + e * t->dw;
			if (h < 0 || h >= t->h || v < 0 || v >= t->w)
				continue;
			double val = x[(p * t->h + h) * t->w + v];
			s += val;
			m = val > m ? val : m;
			cnt++;
		}
		y[(p * oh + i) * ow + j] = (float)(t->type == OP_MAXPOOL ? m :
			s / (t->count_include_pad ? pool : cnt));
	}
}

static int run_kernel(const struct ir_graph *g, struct kern *k)
{
	int rc = op_defs[g->ops[0].type]->run_f32(k);
	if (rc < 0)
		fprintf(stderr, "kernel: %s\n", err_msg());
	return rc;
}

/* Run the op over output rows [oh0, oh1) with an input slice holding rows
 * [ih0 - extra_top, ih1 + extra_bot) (clamped); write into y's rows. */
static int run_slice(const struct ir_graph *g, const float *x, float *y, int oh0, int oh1,
		     int extra_top, int extra_bot)
{
	const struct ir_op *op = &g->ops[0];
	const struct ir_tensor *xt = &g->tensors[op->in[0]], *yt = &g->tensors[op->out[0]];
	int ih0, ih1;
	op_defs[op->type]->slice_h(g, op, oh0, oh1, &ih0, &ih1);
	int H = (int)xt->shape[2];
	ih0 = ih0 - extra_top < 0 ? 0 : ih0 - extra_top;
	ih1 = ih1 + extra_bot > H ? H : ih1 + extra_bot;
	int64_t planes = xt->shape[0] * xt->shape[1], W = xt->shape[3];
	int64_t oplanes = yt->shape[0] * yt->shape[1], OH = yt->shape[2], OW = yt->shape[3];
	float *xs = xaligned((size_t)(planes * (ih1 - ih0 > 0 ? ih1 - ih0 : 1) * W) * sizeof *xs);
	float *ys = xaligned((size_t)(oplanes * (oh1 - oh0) * OW) * sizeof *ys);
	for (int64_t p = 0; p < planes; p++)
		memcpy(xs + p * (ih1 - ih0) * W, x + (p * H + ih0) * W,
		       (size_t)((ih1 - ih0) * W) * sizeof *xs);
	void *vals[8] = { 0 };
	for (int i = 0; i < g->n_tensors; i++)
		vals[i] = g->tensors[i].data;
	vals[op->in[0]] = xs;
	vals[op->out[0]] = ys;
	struct kern k;
	kern_from_graph(&k, g, op, vals);
	k.in[0].shape[2] = ih1 - ih0;
	k.out[0].shape[2] = oh1 - oh0;
	k.in_row0 = ih0;
	k.out_row0 = oh0;
	k.in_full_h = H;
	int rc = run_kernel(g, &k);
	kern_done(&k);
	if (rc == 0)
		for (int64_t p = 0; p < oplanes; p++)
			memcpy(y + (p * OH + oh0) * OW, ys + p * (oh1 - oh0) * OW,
			       (size_t)((oh1 - oh0) * OW) * sizeof *ys);
	free(xs);
	free(ys);
	return rc;
}

static double max_err(const float *a, const float *b, int64_t n)
{
	double e = 0;
	for (int64_t i = 0; i < n; i++) {
		double d = fabs((double)a[i] - b[i]) / (1 + fabs((double)b[i]));
		e = isnan(d) || d > e ? (isnan(d) ? INFINITY : d) : e;
	}
	return e;
}

static void test_case(const struct case_ *t)
{
	struct ir_graph *g = build(t);
	const struct ir_op *op = &g->ops[0];
	const struct ir_tensor *xt = &g->tensors[op->in[0]], *yt = &g->tensors[op->out[0]];
	int64_t nx = tensor_numel(xt), ny = tensor_numel(yt);
	int oh = (int)yt->shape[2], ow = (int)yt->shape[3];
	float *x = xaligned((size_t)nx * sizeof *x);
	for (int64_t i = 0; i < nx; i++)
		x[i] = frand();
	float *whole = xaligned((size_t)ny * sizeof(float));
	float *ref = xaligned((size_t)ny * sizeof(float));
	float *sliced = xaligned((size_t)ny * sizeof(float));

	void *vals[8] = { 0 };
	for (int i = 0; i < g->n_tensors; i++)
		vals[i] = g->tensors[i].data;
	vals[op->in[0]] = x;
	vals[op->out[0]] = whole;
	struct kern k;
	kern_from_graph(&k, g, op, vals);
	CHECK_MSG(run_kernel(g, &k) == 0, "%s: whole run", t->name);
	kern_done(&k);

	if (t->type == OP_CONV)
		ref_conv(t, x, g->tensors[op->in[1]].data,
			 op->n_in > 2 ? g->tensors[op->in[2]].data : NULL, ref, oh, ow);
	else
		ref_pool(t, x, ref, oh, ow);
	double e = max_err(whole, ref, ny);
	CHECK_MSG(e < 1e-5, "%s: whole vs naive: max relative error %g", t->name, e);

	/* Slices of 1, 2 and 3 rows, tight and with spare rows around them. */
	for (int rows = 1; rows <= 3; rows++)
		for (int extra = 0; extra <= 1; extra++) {
			memset(sliced, 0xff, (size_t)ny * sizeof(float));
			int ok = 1;
			for (int r0 = 0; r0 < oh && ok; r0 += rows)
				ok = run_slice(g, x, sliced, r0, r0 + rows < oh ? r0 + rows : oh,
					       extra, 2 * extra) == 0;
			CHECK_MSG(ok, "%s: sliced run (%d rows)", t->name, rows);
			e = max_err(sliced, whole, ny);
			CHECK_MSG(ok && !memcmp(sliced, whole, (size_t)ny * sizeof(float)),
			          "%s: %d-row slices (spare %d) differ from whole: "
			          "max relative error %g", t->name, rows, extra, e);
		}

	/* A slice that lacks a row it needs is refused. */
	if (oh > 2 && t->kh > 1) {
		int ih0, ih1;
		op_defs[op->type]->slice_h(g, op, 1, 2, &ih0, &ih1);
		if (ih1 - ih0 > 1) {
			vals[op->in[0]] = x;
			vals[op->out[0]] = sliced;
			kern_from_graph(&k, g, op, vals);
			k.in[0].shape[2] = ih1 - ih0 - 1;
			k.out[0].shape[2] = 1;
			k.in_row0 = ih0 + 1;
			k.out_row0 = 1;
			k.in_full_h = t->h;
			CHECK_MSG(op_defs[op->type]->run_f32(&k) < 0 && strstr(err_msg(), "need input rows"),
			          "%s: short slice accepted (%s)", t->name, err_msg());
		}
	}
	free(x);
	free(whole);
	free(ref);
	free(sliced);
	graph_free(g);
}

static const struct case_ cases[] = {
	{ "conv3x3", OP_CONV, 1, 3, 10, 9, 8, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, .bias = 1 },
	{ "conv-stem7x7s2", OP_CONV, 1, 3, 32, 30, 16, 1, 7, 7, 2, 2, 1, 1, 3, 3, 3, 3,
	  .do_relu = 1, .bias = 1 },
	{ "conv-s2-dil2-odd", OP_CONV, 2, 4, 11, 13, 6, 1, 3, 3, 2, 2, 2, 2, 2, 2, 2, 2, .bias = 1 },
	{ "conv-depthwise-asympad", OP_CONV, 1, 8, 12, 12, 8, 8, 3, 3, 2, 2, 1, 1, 0, 1, 1, 2,
	  .do_relu = 1, .relu_limit = 0.5, .bias = 1 },
	{ "conv-group2-5x5", OP_CONV, 1, 4, 9, 9, 6, 2, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2,
	  .do_relu = 1, .relu_limit = 6 },
	{ "conv1x1", OP_CONV, 1, 16, 7, 7, 32, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, .bias = 1 },
	{ "conv1x1-s2", OP_CONV, 1, 16, 8, 8, 8, 1, 1, 1, 2, 2, 1, 1, 0, 0, 0, 0, .bias = 0 },
	{ "conv-64ch-brg", OP_CONV, 1, 64, 28, 28, 64, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1,
	  .do_relu = 1, .bias = 1 },
	{ "conv-dw-32ch-s2", OP_CONV, 1, 32, 28, 28, 32, 32, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1,
	  .do_relu = 1, .relu_limit = 6, .bias = 1 },
	{ "maxpool3x3s2p1", OP_MAXPOOL, 1, 4, 16, 15, 0, 1, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, .ceil_mode = 0 },
	{ "maxpool2x2-ceil", OP_MAXPOOL, 1, 3, 13, 13, 0, 1, 2, 2, 2, 2, 1, 1, 0, 0, 0, 0, .ceil_mode = 1 },
	{ "maxpool3x3-ceil-s2", OP_MAXPOOL, 1, 3, 14, 14, 0, 1, 3, 3, 2, 2, 1, 1, 0, 0, 0, 0,
	  .ceil_mode = 1 },
	{ "maxpool-dil2", OP_MAXPOOL, 1, 2, 12, 12, 0, 1, 3, 3, 1, 1, 2, 2, 1, 1, 1, 1, .ceil_mode = 0 },
	{ "avgpool3x3p1-excl", OP_AVGPOOL, 1, 4, 10, 10, 0, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1,
	  .count_include_pad = 0 },
	{ "avgpool3x3p1-incl", OP_AVGPOOL, 1, 4, 10, 10, 0, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1,
	  .count_include_pad = 1 },
	{ "avgpool3x3s2-ceil-incl", OP_AVGPOOL, 1, 3, 10, 10, 0, 1, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1,
	  .ceil_mode = 1, .count_include_pad = 1 },
	{ "avgpool2x2s2", OP_AVGPOOL, 2, 3, 8, 8, 0, 1, 2, 2, 2, 2, 1, 1, 0, 0, 0, 0, .ceil_mode = 0 },
};

int main(void)
{
	for (size_t i = 0; i < ARRAY_LEN(cases); i++)
		test_case(&cases[i]);
	return check_report("test_kernels");
}
