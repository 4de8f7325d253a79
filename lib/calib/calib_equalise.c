/* calib_equalise.c - cross-layer equalisation of Conv pairs from the
 * per-channel peaks measured on samples (top-opt --equalise;
 * calib_equalise.h).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ir/base.h"
#include "calib/calib_equalise.h"
#include "passes/rewrite.h"
#include "run/interp.h"

/* One Conv to balance: its op, its channels and their peaks. */
struct site {
	int conv;
	int64_t c;                   /* channels of its output x (axis 1) */
	double *peak;                /* per channel: max |x| over the samples */
};

/* 1 if Conv op I reads T through input 0 alone and has constant f32
 * weights. */
static int conv_reader(const struct ir_graph *g, int i, int t)
{
	const struct ir_op *op = &g->ops[i];
	if (op->type != OP_CONV || op->n_in < 2 || op->in[0] != t || op->n_out != 1)
		return 0;
	for (int j = 1; j < op->n_in; j++)
		if (op->in[j] == t || (op->in[j] >= 0 && (!g->tensors[op->in[j]].data ||
							  g->tensors[op->in[j]].dtype != DT_F32)))
			return 0;
	return g->tensors[op->in[1]].rank >= 3;
}

/* The only live reader of T, or -1. */
static int sole_reader(const struct ir_graph *g, int t)
{
	if (pass_uses(g, t) != 1 || pass_is_output(g, t))
		return -1;
	for (int i = 0; i < g->n_ops; i++)
		for (int j = 0; g->ops[i].type != OP_COUNT && j < g->ops[i].n_in; j++)
			if (g->ops[i].in[j] == t)
				return i;
	return -1;
}

/* 1 if op I, a reader of Y, can take Y scaled per channel: a Conv, or a
 * Pad by 0 of the spatial axes whose only reader is a Conv. */
static int reader_ok(const struct ir_graph *g, int i, int y)
{
	const struct ir_op *op = &g->ops[i];
	if (op->type == OP_CONV)
		return conv_reader(g, i, y);
	if (op->type != OP_PAD || op->n_in != 1 || op->n_out != 1 ||
	    strcmp(op_str(op, "mode", "constant"), "constant") || op_float(op, "value", 0) != 0)
		return 0;
	int64_t p[2 * IR_MAX_RANK];
	int r = g->tensors[y].rank, np = op_ints(op, "pads", p, 2 * IR_MAX_RANK);
	if (np != 2 * r || p[0] || p[1] || p[r] || p[r + 1])
		return 0;
	int c = sole_reader(g, op->out[0]);
	return c >= 0 && conv_reader(g, c, op->out[0]);
}

/* The readers of Y (live ops; an op reading it twice counts twice), or -1
 * when one cannot take Y scaled. */
static int readers_ok(const struct ir_graph *g, int y)
{
	if (pass_is_output(g, y))
		return 0;
	for (int i = 0; i < g->n_ops; i++)
		for (int j = 0; g->ops[i].type != OP_COUNT && j < g->ops[i].n_in; j++)
			if (g->ops[i].in[j] == y && !reader_ok(g, i, y))
				return 0;
	return 1;
}

/* The Convs whose output qualifies (calib_equalise.h), into *OUT. */
static int find_sites(const struct ir_graph *g, struct site **out)
{
	int n = 0;
	*out = xcalloc((size_t)g->n_ops + 1, sizeof **out);
	for (int a = 0; a < g->n_ops; a++) {
		const struct ir_op *ao = &g->ops[a];
		if (ao->type != OP_CONV || ao->n_out != 1 || op_float(ao, "relu_limit", 0) > 0 ||
		    ao->n_in < 2 || !g->tensors[ao->in[1]].data ||
		    g->tensors[ao->in[1]].dtype != DT_F32 ||
		    (ao->n_in > 2 && ao->in[2] >= 0 && (!g->tensors[ao->in[2]].data ||
							g->tensors[ao->in[2]].dtype != DT_F32)))
			continue;
		int x = ao->out[0];
		const struct ir_tensor *tx = &g->tensors[x];
		if (tx->dtype != DT_F32 || tx->rank < 3 ||
		    g->tensors[ao->in[1]].shape[0] != tx->shape[1] || !readers_ok(g, x))
			continue;
		struct site st = { .conv = a, .c = tx->shape[1],
				   .peak = xcalloc((size_t)tx->shape[1] + 1, sizeof(double)) };
		(*out)[n++] = st;
	}
	return n;
}

/* The per-channel peaks of every site's x over the first samples. */
static int measure(const struct ir_graph *g, const struct npz *samples, const char *file,
		   int nthreads, struct site *s, int n)
{
	const struct ir_tensor *in0 = &g->tensors[g->inputs[0]];
	const struct npz_array *a = npz_find(samples, in0->name);
	int64_t total = !a ? 0 : a->rank == in0->rank + 1 ? a->shape[0]
			: in0->shape[0] > 0 ? a->shape[0] / in0->shape[0] : 0;
	if (total > CALIB_EQ_SAMPLES)
		total = CALIB_EQ_SAMPLES;
	if (total < 1)
		return err_set("'%s': no samples for graph input '%s'", file, in0->name);
	struct interp it;
	int rc = interp_init(&it, g, nthreads);
	it.keep_all = 1;
	for (int64_t k = 0; rc == 0 && k < total; k++) {
		rc = interp_set_sample(&it, samples, file, k);
		if (rc == 0)
			rc = interp_run(&it, NULL, NULL);
		for (int i = 0; rc == 0 && i < n; i++) {
			int x = g->ops[s[i].conv].out[0];
			const struct ir_tensor *t = &g->tensors[x];
			float *v = interp_get_f32(&it, x);
			int64_t inner = tensor_numel(t) / (t->shape[0] * s[i].c);
			for (int64_t b = 0; b < t->shape[0]; b++)
				for (int64_t c = 0; c < s[i].c; c++) {
					const float *p = v + (b * s[i].c + c) * inner;
					double m = s[i].peak[c];
					for (int64_t e = 0; e < inner; e++)
						m = fmax(m, fabs(p[e]));
					s[i].peak[c] = m;
				}
			free(v);
		}
	}
	if (it.val)
		interp_free(&it);
	return rc;
}

/* Divide the weights of Conv op I over input channel c by K[c]. */
static void conv_divide_in(struct ir_graph *g, int i, const double *k)
{
	float *w = pass_weight_mut(g, i, 1);
	const struct ir_tensor *tw = &g->tensors[g->ops[i].in[1]];
	int64_t oc = tw->shape[0], cpg = tw->shape[1], inner = tensor_numel(tw) / (oc * cpg);
	int64_t groups = op_int(&g->ops[i], "group", 1), opg = oc / (groups > 0 ? groups : 1);
	for (int64_t o = 0; o < oc; o++)
		for (int64_t ci = 0; ci < cpg; ci++) {
			double kc = k[(o / (opg > 0 ? opg : 1)) * cpg + ci];
			float *p = w + (o * cpg + ci) * inner;
			for (int64_t e = 0; e < inner; e++)
				p[e] = (float)(p[e] / kc);
		}
}

/* Rewrite site S with gains K (calib_equalise.h). */
static void rewrite(struct ir_graph *g, const struct site *s, const double *k)
{
	int x = g->ops[s->conv].out[0];
	float *w = pass_weight_mut(g, s->conv, 1), *b = pass_bias_mut(g, s->conv, s->c);
	int64_t per = tensor_numel(&g->tensors[g->ops[s->conv].in[1]]) / s->c;
	for (int64_t c = 0; c < s->c; c++) {
		for (int64_t e = 0; e < per; e++)
			w[c * per + e] = (float)(w[c * per + e] * k[c]);
		b[c] = (float)(b[c] * k[c]);
	}
	for (int i = 0; i < g->n_ops; i++)
		if (g->ops[i].type == OP_CONV && g->ops[i].in[0] == x)
			conv_divide_in(g, i, k);
		else if (g->ops[i].type == OP_PAD && g->ops[i].in[0] == x)
			conv_divide_in(g, sole_reader(g, g->ops[i].out[0]), k);
}

/* The reach of each input channel c of Y's readers that mix channels
 * (their weights per output channel quantised together): the largest
 * |w| over c's columns, each row's relative to its largest, into R (NC
 * values).  0 when no reader mixes channels (a depthwise Conv's weights
 * are quantised channel by channel: scaling them costs nothing). */
static int dense_reach(const struct ir_graph *g, int y, int64_t nc, double *r)
{
	int dense = 0;
	for (int64_t c = 0; c < nc; c++)
		r[c] = 0;
	for (int i = 0; i < g->n_ops; i++) {
		const struct ir_op *op = &g->ops[i];
		if (op->type == OP_COUNT || op->n_in < 1 || op->in[0] != y)
			continue;
		int cv = op->type == OP_PAD ? sole_reader(g, op->out[0]) : i;
		if (cv < 0)
			continue;
		const struct ir_tensor *tw = &g->tensors[g->ops[cv].in[1]];
		int64_t oc = tw->shape[0], cpg = tw->shape[1], inner = tensor_numel(tw) / (oc * cpg);
		int64_t groups = op_int(&g->ops[cv], "group", 1), opg = oc / (groups > 0 ? groups : 1);
		if (cpg < 2)
			continue;
		dense = 1;
		const float *w = tw->data;
		for (int64_t o = 0; o < oc; o++) {
			double top = 0;
			for (int64_t e = 0; e < cpg * inner; e++)
				top = fmax(top, fabs(w[o * cpg * inner + e]));
			for (int64_t ci = 0; top > 0 && ci < cpg; ci++) {
				int64_t c = (o / (opg > 0 ? opg : 1)) * cpg + ci;
				for (int64_t e = 0; c < nc && e < inner; e++)
					r[c] = fmax(r[c], fabs(w[(o * cpg + ci) * inner + e]) / top);
			}
		}
	}
	return dense;
}

/* The gains K of NC channels with peaks PEAK: each channel up to the
 * largest peak when REACH is NULL; else, as Nagel et al.'s cross-layer
 * equalisation does, the geometric mean of that and its readers' weights
 * down to their largest column (REACH), so that the channel's activation
 * and weights lose alike.  Powers of two (exact in float through every
 * scaling), at most CALIB_EQ_MAX_GAIN, the smallest 1; a channel that is
 * always 0 or that no weight reads keeps 1.  1 when some gain reaches
 * CALIB_EQ_MIN_GAIN: worth a rewrite. */
static int gains(const double *peak, int64_t nc, const double *reach, double *k)
{
	double top = 0, lo = INFINITY, gain = 1;
	for (int64_t c = 0; c < nc; c++)
		top = fmax(top, peak[c]);
	for (int64_t c = 0; c < nc; c++) {
		int dead = !(peak[c] > 0) || (reach && !(reach[c] > 0));
		k[c] = dead ? 0 : reach ? sqrt(reach[c] * top / peak[c]) : top / peak[c];
		if (!dead)
			lo = fmin(lo, k[c]);
	}
	for (int64_t c = 0; c < nc; c++) {
		k[c] = k[c] > 0 ? k[c] / lo : 1;
		if (!(k[c] <= CALIB_EQ_MAX_GAIN))
			k[c] = CALIB_EQ_MAX_GAIN;
		k[c] = exp2(floor(log2(k[c])));
		gain = fmax(gain, k[c]);
	}
	return top > 0 && gain >= CALIB_EQ_MIN_GAIN;
}

int calib_equalise(struct ir_graph *g, const struct npz *samples, const char *file,
		   int nthreads, int *rewrites)
{
	*rewrites = 0;
	if (g->n_inputs < 1)
		return 0;
	struct site *s;
	int n = find_sites(g, &s), rc = n > 0 ? measure(g, samples, file, nthreads, s, n) : 0;
	/* sites from last to first: an insertion moves only the ops after it */
	for (int i = n - 1; rc == 0 && i >= 0; i--) {
		double *k = xmalloc(sizeof(double) * (size_t)(s[i].c + 1));
		double *r = xmalloc(sizeof(double) * (size_t)(s[i].c + 1));
		int x = g->ops[s[i].conv].out[0];
		if (gains(s[i].peak, s[i].c, dense_reach(g, x, s[i].c, r) ? r : NULL, k)) {
			rewrite(g, &s[i], k);
			++*rewrites;
		}
		free(k);
		free(r);
	}
	for (int i = 0; i < n; i++)
		free(s[i].peak);
	free(s);
	if (rc == 0 && *rewrites)
		graph_compact(g);
	return rc;
}
