/* calib_equalise.c - balance the channels around each HardSwish from the
 * peaks measured on samples (top-opt --equalise; calib_equalise.h).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ir/base.h"
#include "calib/calib_equalise.h"
#include "passes/rewrite.h"
#include "run/interp.h"

/* One HardSwish to rewrite: its op, the Conv before it, and its channels. */
struct site {
	int hs;                      /* the HardSwish, or -1: Convs read x */
	int conv;
	int64_t c;                   /* channels of x (axis 1) */
	int pad;                     /* 1: a reader Pads by q */
	double q;
	double *peak;                /* per channel: max over the samples of
					|x| and, with a Pad, |y - q| (y the
					HardSwish's output, or x) */
};

/* 1 if Conv op I reads only T's values through input 0, has constant f32
 * weights and, when PAD_FREE, pads nothing. */
static int conv_reader(const struct ir_graph *g, int i, int t, int pad_free)
{
	const struct ir_op *op = &g->ops[i];
	if (op->type != OP_CONV || op->n_in < 2 || op->in[0] != t || op->n_out != 1)
		return 0;
	for (int j = 1; j < op->n_in; j++)
		if (op->in[j] == t || (op->in[j] >= 0 && (!g->tensors[op->in[j]].data ||
							  g->tensors[op->in[j]].dtype != DT_F32)))
			return 0;
	int64_t p[16];
	int np = op_ints(op, "pads", p, 16);
	for (int j = 0; pad_free && j < np; j++)
		if (p[j])
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
 * constant Pad of the spatial axes whose only reader is a Conv that pads
 * nothing. */
static int reader_ok(const struct ir_graph *g, int i, int y)
{
	const struct ir_op *op = &g->ops[i];
	if (op->type == OP_CONV)
		return conv_reader(g, i, y, 0);
	if (op->type != OP_PAD || op->n_in != 1 || op->n_out != 1 ||
	    strcmp(op_str(op, "mode", "constant"), "constant"))
		return 0;
	int64_t p[2 * IR_MAX_RANK];
	int r = g->tensors[y].rank, np = op_ints(op, "pads", p, 2 * IR_MAX_RANK);
	if (np != 2 * r || p[0] || p[1] || p[r] || p[r + 1])
		return 0;
	int c = sole_reader(g, op->out[0]);
	return c >= 0 && conv_reader(g, c, op->out[0], 1);
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

/* The first Pad reading Y: *Q its value; 0 when none. */
static int pad_value(const struct ir_graph *g, int y, double *q)
{
	for (int i = 0; i < g->n_ops; i++)
		if (g->ops[i].type == OP_PAD && g->ops[i].n_in == 1 && g->ops[i].in[0] == y) {
			*q = op_float(&g->ops[i], "value", 0);
			return 1;
		}
	return 0;
}

/* The Convs whose output qualifies (calib_equalise.h): read by a
 * HardSwish alone, or by Convs and Pads into Convs (through a ReLU the
 * Conv fused: positively homogeneous), into *OUT. */
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
		int x = ao->out[0], hs = sole_reader(g, x), y = x;
		const struct ir_tensor *tx = &g->tensors[x];
		if (tx->dtype != DT_F32 || tx->rank < 3 || g->tensors[ao->in[1]].shape[0] != tx->shape[1])
			continue;
		if (hs >= 0 && g->ops[hs].type == OP_HARDSWISH && g->ops[hs].n_out == 1 &&
		    !op_int(ao, "do_relu", 0))
			y = g->ops[hs].out[0];
		else
			hs = -1;
		if (!readers_ok(g, y))
			continue;
		struct site st = { .hs = hs, .conv = a, .c = tx->shape[1],
				   .peak = xcalloc((size_t)tx->shape[1] + 1, sizeof(double)) };
		st.pad = pad_value(g, y, &st.q);
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
					for (int64_t e = 0; e < inner; e++) {
						double u = p[e], y = s[i].hs < 0 ? u
							: u * fmin(fmax(u / 6 + 0.5, 0), 1);
						m = fmax(m, fabs(u));
						if (s[i].pad)
							m = fmax(m, fabs(y - s[i].q));
					}
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

/* A new f32 activation shaped as tensor T, named after it with SUFFIX. */
static int new_act(struct ir_graph *g, int t, const char *suffix)
{
	char base[512];
	snprintf(base, sizeof base, "%s%s", g->tensors[t].name, suffix);
	char *name = graph_unique_name(g, base, 1);
	int64_t shape[IR_MAX_RANK];
	memcpy(shape, g->tensors[t].shape, sizeof shape);
	int r = graph_add_tensor(g, name, DT_F32, g->tensors[t].rank, shape);
	free(name);
	return r;
}

/* A Pad by Q (op P) before Conv op CV, reading Y = k HardSwish(x) (op at
 * AT writes it): Y - k q through a new Scale, the Pad by 0, and the Conv's
 * bias + q * its weights' sum.  Returns the index of the op at AT's place
 * after the insertion. */
static void pad_reader(struct ir_graph *g, int at, int p, const double *k, int64_t c)
{
	double q = op_float(&g->ops[p], "value", 0);
	int cv = sole_reader(g, g->ops[p].out[0]);
	if (q != 0) {
		const struct ir_tensor *tw = &g->tensors[g->ops[cv].in[1]];
		int64_t oc = tw->shape[0], per = tensor_numel(tw) / oc;
		const float *w = tw->data;
		float *b = pass_bias_mut(g, cv, oc);
		for (int64_t o = 0; o < oc; o++) {
			double s = 0;
			for (int64_t e = 0; e < per; e++)
				s += w[o * per + e];
			b[o] = (float)(b[o] + q * s);
		}
	}
	conv_divide_in(g, cv, k);
	if (q == 0)
		return;
	int y = g->ops[p].in[0], y2 = new_act(g, y, "_shifted");
	char base[512];
	snprintf(base, sizeof base, "%s_shift", g->ops[p].name);
	int s = pass_insert_after(g, at, OP_SCALE, base, y, y2);
	float *sc, *sb;
	pass_make_scale(g, s, y, c, &sc, &sb);
	for (int64_t i = 0; i < c; i++) {
		sc[i] = 1;
		sb[i] = (float)(-k[i] * q);
	}
	/* the Pad moved one place down */
	p += p > at;
	g->ops[p].in[0] = y2;
	op_set_float(&g->ops[p], "value", 0);
	pass_index_drop();
}

/* Rewrite site S with gains K (calib_equalise.h). */
static void rewrite(struct ir_graph *g, const struct site *s, const double *k)
{
	int hs = s->hs, x = g->ops[s->conv].out[0], y = hs >= 0 ? g->ops[hs].out[0] : x;
	float *w = pass_weight_mut(g, s->conv, 1), *b = pass_bias_mut(g, s->conv, s->c);
	int64_t per = tensor_numel(&g->tensors[g->ops[s->conv].in[1]]) / s->c;
	for (int64_t c = 0; c < s->c; c++) {
		for (int64_t e = 0; e < per; e++)
			w[c * per + e] = (float)(w[c * per + e] * k[c]);
		b[c] = (float)(b[c] * k[c]);
	}
	/* the readers first, while y is still the HardSwish's */
	for (int i = 0; i < g->n_ops; i++) {
		if (g->ops[i].type == OP_COUNT || g->ops[i].n_in < 1 || g->ops[i].in[0] != y)
			continue;
		if (g->ops[i].type == OP_CONV)
			conv_divide_in(g, i, k);
	}
	int at = s->conv;
	if (hs >= 0) {
		/* HardSwish -> gate Scale writing g, then Mul(x, g) writing y */
		int gt = new_act(g, y, "_gate");
		g->ops[hs].out[0] = gt;
		op_clear_attrs(&g->ops[hs]);
		float *sc, *sb;
		pass_make_scale(g, hs, x, s->c, &sc, &sb);
		for (int64_t c = 0; c < s->c; c++) {
			sc[c] = (float)(1 / (6 * k[c]));
			sb[c] = 0.5f;
		}
		op_set_int(&g->ops[hs], "do_relu", 1);
		op_set_float(&g->ops[hs], "relu_limit", 1);
		char base[512];
		snprintf(base, sizeof base, "%s_mul", g->ops[hs].name);
		at = pass_insert_after(g, hs, OP_MUL, base, x, y);
		struct ir_op *mo = &g->ops[at];
		mo->in = xrealloc(mo->in, 2 * sizeof *mo->in);
		mo->in[1] = gt;
		mo->n_in = 2;
		pass_index_drop();
	}
	for (int i = 0; i < g->n_ops; i++)
		if (g->ops[i].type == OP_PAD && g->ops[i].n_in == 1 && g->ops[i].in[0] == y)
			pad_reader(g, at, i, k, s->c);
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
		double top = 0, gain = 1;
		double *k = xmalloc(sizeof(double) * (size_t)(s[i].c + 1));
		for (int64_t c = 0; c < s[i].c; c++)
			top = fmax(top, s[i].peak[c]);
		for (int64_t c = 0; c < s[i].c; c++) {
			double p = s[i].peak[c];
			k[c] = !(p > 0) || !(top > 0) ? CALIB_EQ_MAX_GAIN : top / p;
			if (!(k[c] <= CALIB_EQ_MAX_GAIN))
				k[c] = CALIB_EQ_MAX_GAIN;
			/* a power of two: exact in float through every scaling */
			k[c] = exp2(floor(log2(k[c])));
			gain = fmax(gain, k[c]);
		}
		if (top > 0 && gain >= CALIB_EQ_MIN_GAIN) {
			rewrite(g, &s[i], k);
			++*rewrites;
		}
		free(k);
	}
	for (int i = 0; i < n; i++)
		free(s[i].peak);
	free(s);
	if (rc == 0 && *rewrites)
		graph_compact(g);
	return rc;
}
