/* calib_noise.c - per-layer noise report (calib_noise.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ir/base.h"
#include "calib/calib_noise.h"
#include "run/interp.h"
#include "ir/op.h"

/* Signal and noise power, summed over samples. */
struct power {
	double sig, noise;
	double maxerr;               /* largest |a - b| */
};

static double sqnr(struct power p)
{
	if (p.noise == 0)
		return INFINITY;
	if (p.sig == 0)
		return -INFINITY;
	return 10 * log10(p.sig / p.noise);
}

static void add_power(struct power *p, const float *ref, const float *v, int64_t n)
{
	for (int64_t i = 0; i < n; i++) {
		double a = ref[i], d = a - v[i];
		p->sig += a * a;
		p->noise += d == d ? d * d : INFINITY;   /* NaN: all noise */
		p->maxerr = d == d && fabs(d) <= p->maxerr ? p->maxerr : d == d ? fabs(d) : INFINITY;
	}
}

/* The tensor of G named NAME, or -1. */
static int tensor_named(const struct ir_graph *g, const char *name)
{
	for (int t = 0; t < g->n_tensors; t++)
		if (g->tensors[t].name && !strcmp(g->tensors[t].name, name))
			return t;
	return -1;
}

struct noise {
	const struct ir_graph *top;
	const struct npz *samples;
	const char *const *files;
	int nfiles;
	int64_t *first, nsamples;
	const struct calib_search_opts *o;
	int nc, *cand;               /* candidate ops */
	float **ref;                 /* per candidate, then per graph output: nsamples * numel */
	int64_t *numel;
};

static int set_sample(struct noise *s, struct interp *it, int64_t i)
{
	int f = s->nfiles - 1;
	while (f > 0 && s->first[f] > i)
		f--;
	return interp_set_sample(it, &s->samples[f], s->files[f], i - s->first[f]);
}

/* The Top tensor of slot K: candidate K's output, then graph output K - nc. */
static int slot_tensor(const struct noise *s, int k)
{
	return k < s->nc ? s->top->ops[s->cand[k]].out[0] : s->top->outputs[k - s->nc];
}

/* Run G over the samples.  With REF NULL, store every slot into s->ref;
 * else add the noise of slot k against the reference into P[k] for each
 * slot K with WANT[k] (all when WANT is NULL). */
static int run(struct noise *s, const struct ir_graph *g, struct power *p, const char *want)
{
	int nslots = s->nc + s->top->n_outputs;
	int *t = xmalloc(sizeof(int) * (size_t)(nslots + 1));
	for (int k = 0; k < nslots; k++)
		t[k] = want && !want[k] ? -1 : tensor_named(g, s->top->tensors[slot_tensor(s, k)].name);
	struct interp it;
	int rc = interp_init(&it, g, s->o->nthreads);
	it.keep_all = 1;
	for (int64_t i = 0; rc == 0 && i < s->nsamples; i++) {
		rc = set_sample(s, &it, i);
		if (rc == 0)
			rc = interp_run(&it, NULL, NULL);
		for (int k = 0; rc == 0 && k < nslots; k++) {
			if (t[k] < 0)
				continue;
			float *v = interp_get_f32(&it, t[k]), *ref = s->ref[k] + i * s->numel[k];
			if (!p)
				memcpy(ref, v, sizeof(float) * (size_t)s->numel[k]);
			else
				add_power(&p[k], ref, v, s->numel[k]);
			free(v);
		}
	}
	if (it.val)
		interp_free(&it);
	free(t);
	return rc;
}

static int lower_with(const struct noise *s, const struct calib_table *tab, const int *ops, int n,
		      struct ir_graph **g)
{
	struct qtable *q = xcalloc(1, sizeof *q);
	for (int i = 0; i < n; i++)
		qtable_add(q, s->top->ops[ops[i]].name, s->o->keep);
	struct lower_opts lo = { .tab = tab, .signed_only = s->o->signed_only,
				 .asymmetric = s->o->asymmetric, .qt = q };
	int rc = lower_graph_opts(s->top, s->o->chip, s->o->mode, &lo, g);
	qtable_free(q);
	return rc;
}

static void put_db(FILE *fp, double db)
{
	if (isinf(db))
		fprintf(fp, " %s", db > 0 ? "inf" : "-inf");
	else
		fprintf(fp, " %.2f", db);
}

struct harm {
	int k;
	double out_db;
};

static int by_harm(const void *a, const void *b)
{
	const struct harm *x = a, *y = b;
	if (x->out_db != y->out_db)
		return x->out_db < y->out_db ? -1 : 1;
	return x->k - y->k;
}

int calib_noise_report(const struct ir_graph *top, int nfiles, const struct npz *samples,
		       const char *const *files, const struct calib_table *tab,
		       const struct calib_search_opts *o, double keep_db, FILE *fp)
{
	if (top->n_ops < 1 || top->n_outputs < 1)
		return err_set("the graph has no ops or no outputs");
	struct noise s = { .top = top, .samples = samples, .files = files, .nfiles = nfiles, .o = o };
	s.first = xmalloc(sizeof(int64_t) * (size_t)(nfiles + 1));
	int64_t total = calib_sample_starts(top, nfiles, samples, s.first);
	s.nsamples = o->samples > 0 && o->samples < total ? o->samples : total;
	/* candidates: as the search's, with a float output of their own */
	s.cand = xmalloc(sizeof(int) * (size_t)(top->n_ops + 1));
	for (int i = 0; i < top->n_ops; i++) {
		const struct ir_op *op = &top->ops[i];
		const struct op_def *d = op_defs[op->type];
		if (op->name && op->n_out >= 1 && top->tensors[op->out[0]].dtype == DT_F32 &&
		    top->tensors[op->out[0]].name &&
		    (o->mode != MODE_INT8 || (d->lower && d->lower != lower_default)))
			s.cand[s.nc++] = i;
	}
	int nslots = s.nc + top->n_outputs, rc = 0;
	s.ref = xcalloc((size_t)nslots + 1, sizeof *s.ref);
	s.numel = xcalloc((size_t)nslots + 1, sizeof *s.numel);
	for (int k = 0; k < nslots; k++) {
		s.numel[k] = tensor_numel(&top->tensors[slot_tensor(&s, k)]);
		s.ref[k] = xmalloc(sizeof(float) * (size_t)(s.nsamples * s.numel[k] + 1));
	}
	struct power *full = xcalloc((size_t)nslots + 1, sizeof *full);
	struct power *alone = xcalloc((size_t)nslots + 1, sizeof *alone);
	struct power *out = xcalloc((size_t)nslots + 1, sizeof *out);   /* per candidate: outputs */
	struct power *tmp = xcalloc((size_t)nslots + 1, sizeof *tmp);
	char *want = xcalloc((size_t)nslots + 1, 1);
	int *ops = xmalloc(sizeof(int) * (size_t)(top->n_ops + 1));
	struct ir_graph *g = NULL;
	if (s.nsamples < 1)
		rc = err_set("no samples to measure on");
	if (rc == 0)
		rc = run(&s, top, NULL, NULL);
	/* the whole graph in the mode */
	if (rc == 0 && (rc = lower_with(&s, tab, NULL, 0, &g)) == 0)
		rc = run(&s, g, full, NULL);
	graph_free(g);
	g = NULL;
	/* each candidate alone in the mode */
	for (int c = 0; rc == 0 && c < s.nc; c++) {
		if (o->progress) {
			fprintf(stderr, "\r%s: noise report: op %d/%d   ", o->prog ? o->prog : "calibrate",
				c + 1, s.nc);
			fflush(stderr);
		}
		int m = 0;
		for (int i = 0; i < top->n_ops; i++)
			if (i != s.cand[c] && top->ops[i].name)
				ops[m++] = i;
		memset(want, 0, (size_t)nslots);
		memset(tmp, 0, sizeof *tmp * (size_t)nslots);
		want[c] = 1;
		for (int j = 0; j < top->n_outputs; j++)
			want[s.nc + j] = 1;
		if ((rc = lower_with(&s, tab, ops, m, &g)) == 0)
			rc = run(&s, g, tmp, want);
		graph_free(g);
		g = NULL;
		alone[c] = tmp[c];
		for (int j = 0; j < top->n_outputs; j++) {
			out[c].sig += tmp[s.nc + j].sig;
			out[c].noise += tmp[s.nc + j].noise;
		}
	}
	if (o->progress && rc == 0)
		fputc('\n', stderr);
	if (rc == 0) {
		fprintf(fp, "# tpuc noise report: SQNR in dB against f32 over %lld sample%s, %s with "
			"the other ops in %s\n", (long long)s.nsamples, s.nsamples > 1 ? "s" : "",
			mode_name(o->mode), mode_name(o->keep));
		fprintf(fp, "# alone: the op's output, only it in %s; full: the same with every op "
			"in %s; output: the graph outputs, only it in %s\n", mode_name(o->mode),
			mode_name(o->mode), mode_name(o->mode));
		fprintf(fp, "# maxerr: the largest |error| of the op's output alone (a one-number "
			"output is judged by it: at most %g)\n", CALIB_SCORE_ABS);
		fprintf(fp, "# op tensor alone full output maxerr\n");
		for (int c = 0; c < s.nc; c++) {
			fprintf(fp, "%s %s", top->ops[s.cand[c]].name,
				top->tensors[top->ops[s.cand[c]].out[0]].name);
			put_db(fp, sqnr(alone[c]));
			put_db(fp, sqnr(full[c]));
			put_db(fp, sqnr(out[c]));
			fprintf(fp, " %.4g\n", alone[c].maxerr);
		}
		for (int j = 0; j < top->n_outputs; j++) {
			fprintf(fp, "# graph output %s, every op in %s:",
				top->tensors[top->outputs[j]].name, mode_name(o->mode));
			put_db(fp, sqnr(full[s.nc + j]));
			fputc('\n', fp);
		}
		/* the ops to keep: alone below KEEP_DB, most harmful first */
		struct harm *h = xmalloc(sizeof *h * (size_t)(s.nc + 1));
		int nh = 0;
		for (int c = 0; c < s.nc; c++)
			if (sqnr(alone[c]) < keep_db &&
			    !(s.numel[c] == 1 && alone[c].maxerr <= CALIB_SCORE_ABS))
				h[nh++] = (struct harm){ c, sqnr(out[c]) };
		qsort(h, (size_t)nh, sizeof *h, by_harm);
		fprintf(fp, "# keep in %s (alone below %g dB, one number beyond %g; most harmful "
			"to the output first):", mode_name(o->keep), keep_db, CALIB_SCORE_ABS);
		for (int i = 0; i < nh; i++)
			fprintf(fp, " %s", top->ops[s.cand[h[i].k]].name);
		fprintf(fp, "%s\n", nh ? "" : " none");
		free(h);
	}
	for (int k = 0; k < nslots; k++)
		free(s.ref[k]);
	free(s.ref);
	free(s.numel);
	free(s.first);
	free(s.cand);
	free(full);
	free(alone);
	free(out);
	free(tmp);
	free(want);
	free(ops);
	return rc < 0 ? -1 : 0;
}
