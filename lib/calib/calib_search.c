/* calib_search.c - mixed-precision search: the fewest ops to keep in a
 * float mode so that a lowered graph's outputs reach a cosine against the
 * float Top graph on calibration samples (calibrate --search-qtable).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ir/base.h"
#include "calib/calib.h"
#include "calib/calib_search.h"
#include "run/interp.h"
#include "ir/op.h"

/* One search: the graph, its samples and the float outputs to reach. */
struct search {
	const struct ir_graph *top;
	const struct npz *samples;
	const char *const *files;
	int nfiles;
	int64_t *first;              /* per file: global index of its first sample */
	int64_t nsamples;            /* samples evaluated */
	const struct calib_table *tab;
	const struct calib_search_opts *o;
	float **ref;                 /* per graph output: nsamples * numel floats */
	int64_t *numel;              /* per graph output */
	int evals;                   /* evaluations so far */
};

/* Point sample I (global index) at its file. */
static int set_sample(struct search *s, struct interp *it, int64_t i)
{
	int f = s->nfiles - 1;
	while (f > 0 && s->first[f] > i)
		f--;
	return interp_set_sample(it, &s->samples[f], s->files[f], i - s->first[f]);
}

/* Run G over the samples, writing output j of sample i to
 * out[j] + i * numel[j]. */
static int run_graph(struct search *s, const struct ir_graph *g, float **out)
{
	struct interp it;
	int rc = interp_init(&it, g, s->o->nthreads);
	for (int64_t i = 0; rc == 0 && i < s->nsamples; i++) {
		rc = set_sample(s, &it, i);
		if (rc == 0)
			rc = interp_run(&it, NULL, NULL);
		for (int j = 0; rc == 0 && j < g->n_outputs; j++) {
			float *v = interp_get_f32(&it, g->outputs[j]);
			memcpy(out[j] + i * s->numel[j], v, sizeof(float) * (size_t)s->numel[j]);
			free(v);
		}
	}
	if (it.val)
		interp_free(&it);
	return rc;
}

/* The smallest over samples and graph outputs of the cosine of the
 * lowered graph against the float one. */
static int evaluate(struct search *s, const struct qtable *qt, double *cos)
{
	struct lower_opts lo = { .tab = s->tab, .signed_only = s->o->signed_only,
				 .asymmetric = s->o->asymmetric, .qt = qt };
	struct ir_graph *g = NULL;
	if (lower_graph_opts(s->top, s->o->chip, s->o->mode, &lo, &g) < 0)
		return -1;
	int n = s->top->n_outputs;
	float **out = xcalloc((size_t)n + 1, sizeof *out);
	for (int j = 0; j < n; j++)
		out[j] = xmalloc(sizeof(float) * (size_t)(s->nsamples * s->numel[j] + 1));
	int rc = run_graph(s, g, out);
	*cos = 1;
	for (int j = 0; rc == 0 && j < n; j++)
		for (int64_t smp = 0; smp < s->nsamples; smp++) {
			double dot = 0, na = 0, nb = 0;
			for (int64_t i = smp * s->numel[j]; i < (smp + 1) * s->numel[j]; i++) {
				double a = s->ref[j][i], b = out[j][i];
				dot += a * b;
				na += a * a;
				nb += b * b;
			}
			double c = na == 0 && nb == 0 ? 1 : na == 0 || nb == 0 ? 0
				 : dot / sqrt(na * nb);
			if (!(c >= -1))
				c = -1;   /* NaN */
			if (c < *cos)
				*cos = c;
		}
	for (int j = 0; j < n; j++)
		free(out[j]);
	free(out);
	graph_free(g);
	s->evals++;
	return rc;
}

/* A qtable putting the ops OPS[0..n-1] of TOP in MODE. */
static struct qtable *make_qtable(const struct ir_graph *top, const int *ops, int n,
				  enum ir_mode mode)
{
	struct qtable *q = xcalloc(1, sizeof *q);
	for (int i = 0; i < n; i++)
		qtable_add(q, top->ops[ops[i]].name, mode);
	return q;
}

static void progress(const struct search *s, const char *what, int i, int n)
{
	if (!s->o->progress)
		return;
	fprintf(stderr, "\r%s: search: %s %d/%d   ", s->o->prog ? s->o->prog : "calibrate",
		what, i, n);
	fflush(stderr);
}

struct ranked {
	int op;
	double cos;                  /* output cosine with only this op quantised */
};

static int by_damage(const void *a, const void *b)
{
	const struct ranked *x = a, *y = b;
	if (x->cos != y->cos)
		return x->cos < y->cos ? -1 : 1;   /* most damaging first */
	return x->op - y->op;                      /* then graph order: deterministic */
}

int calib_search_qtable(const struct ir_graph *top, int nfiles, const struct npz *samples,
			const char *const *files, const struct calib_table *tab,
			const struct calib_search_opts *o, struct qtable **out,
			struct calib_search_result *res)
{
	if (o->mode == o->keep)
		return err_set("the search needs two different modes");
	if (top->n_ops < 1 || top->n_outputs < 1)
		return err_set("the graph has no ops or no outputs");
	struct search s = {
		.top = top, .samples = samples, .files = files, .nfiles = nfiles,
		.tab = tab, .o = o,
	};
	s.first = xmalloc(sizeof(int64_t) * (size_t)(nfiles + 1));
	int64_t total = 0;
	for (int f = 0; f < nfiles; f++) {
		s.first[f] = total;
		const struct ir_tensor *in0 = &top->tensors[top->inputs[0]];
		const struct npz_array *a = npz_find(&samples[f], in0->name);
		total += !a ? 0 : a->rank == in0->rank + 1 ? a->shape[0]
			: in0->shape[0] > 0 ? a->shape[0] / in0->shape[0] : 0;
	}
	s.nsamples = o->samples > 0 && o->samples < total ? o->samples : total;
	int n = top->n_outputs, rc = 0;
	s.ref = xcalloc((size_t)n + 1, sizeof *s.ref);
	s.numel = xcalloc((size_t)n + 1, sizeof *s.numel);
	for (int j = 0; j < n; j++) {
		s.numel[j] = tensor_numel(&top->tensors[top->outputs[j]]);
		s.ref[j] = xmalloc(sizeof(float) * (size_t)(s.nsamples * s.numel[j] + 1));
	}
	if (s.nsamples < 1)
		rc = err_set("no samples to search on");
	if (rc == 0)
		rc = run_graph(&s, top, s.ref);

	/* Candidates: in int8, ops whose lowering does more than copy the op
	 * through; in a float mode, every op (each rounds its outputs). */
	struct ranked *cand = xmalloc(sizeof *cand * (size_t)(top->n_ops + 1));
	int nc = 0;
	for (int i = 0; i < top->n_ops; i++) {
		const struct op_def *d = op_defs[top->ops[i].type];
		if (top->ops[i].name && (o->mode != MODE_INT8 ||
					 (d->lower && d->lower != lower_default)))
			cand[nc++] = (struct ranked){ .op = i };
	}
	int *ops = xmalloc(sizeof(int) * (size_t)(top->n_ops + 1));
	double cos = 0;
	struct qtable *best = NULL;
	/* 1. the whole graph in MODE */
	struct qtable *q = make_qtable(top, NULL, 0, o->keep);
	if (rc == 0)
		rc = evaluate(&s, q, &cos);
	qtable_free(q);
	res->base_cos = cos;
	if (rc == 0 && cos >= o->expected_cos) {
		best = make_qtable(top, NULL, 0, o->keep);
		goto done;
	}
	/* 2. sensitivity: each candidate alone in MODE, every other op in KEEP */
	for (int c = 0; rc == 0 && c < nc; c++) {
		progress(&s, "sensitivity of op", c + 1, nc);
		int k = 0;
		for (int i = 0; i < top->n_ops; i++)
			if (i != cand[c].op && top->ops[i].name)
				ops[k++] = i;
		q = make_qtable(top, ops, k, o->keep);
		rc = evaluate(&s, q, &cand[c].cos);
		qtable_free(q);
	}
	if (rc == 0)
		qsort(cand, (size_t)nc, sizeof *cand, by_damage);
	/* 3. the fewest most damaging ops in KEEP: binary search on the count
	 * (assuming more ops in float never hurts), then drop any op whose
	 * removal still reaches the goal, least damaging first */
	int lo = 0, hi = nc, have_hi = 0;
	double hi_cos = 0;
	while (rc == 0 && lo < hi) {
		int mid = (lo + hi) / 2;
		progress(&s, "ops in float", mid, nc);
		for (int i = 0; i < mid; i++)
			ops[i] = cand[i].op;
		q = make_qtable(top, ops, mid, o->keep);
		rc = evaluate(&s, q, &cos);
		qtable_free(q);
		if (rc == 0 && cos >= o->expected_cos) {
			hi = mid;
			hi_cos = cos;
			have_hi = 1;
		} else {
			lo = mid + 1;
		}
	}
	int k = hi;
	int *keep = xmalloc(sizeof(int) * (size_t)(nc + 1));
	for (int i = 0; i < k; i++)
		keep[i] = 1;
	if (rc == 0 && !have_hi) {
		/* every candidate in KEEP: evaluate that too */
		for (int i = 0; i < k; i++)
			ops[i] = cand[i].op;
		q = make_qtable(top, ops, k, o->keep);
		rc = evaluate(&s, q, &hi_cos);
		qtable_free(q);
	}
	cos = hi_cos;
	for (int d = k - 1; rc == 0 && have_hi && d >= 0; d--) {
		progress(&s, "pruning", k - d, k);
		int m = 0;
		for (int i = 0; i < k; i++)
			if (keep[i] && i != d)
				ops[m++] = cand[i].op;
		double c2;
		q = make_qtable(top, ops, m, o->keep);
		rc = evaluate(&s, q, &c2);
		qtable_free(q);
		if (rc == 0 && c2 >= o->expected_cos) {
			keep[d] = 0;
			cos = c2;
		}
	}
	if (rc == 0) {
		/* the qtable in graph order */
		int m = 0;
		for (int i = 0; i < top->n_ops; i++)
			for (int j = 0; j < k; j++)
				if (keep[j] && cand[j].op == i)
					ops[m++] = i;
		best = make_qtable(top, ops, m, o->keep);
		res->reached = cos >= o->expected_cos;
	}
	free(keep);
done:
	if (o->progress && rc == 0)
		fputc('\n', stderr);
	if (best) {
		res->cos = cos;
		res->kept = best->n;
		res->candidates = nc;
		res->evaluations = s.evals;
		if (res->base_cos >= o->expected_cos)
			res->reached = 1;
		*out = best;
	}
	for (int j = 0; j < n; j++)
		free(s.ref[j]);
	free(s.ref);
	free(s.numel);
	free(s.first);
	free(cand);
	free(ops);
	return rc < 0 ? -1 : 0;
}
