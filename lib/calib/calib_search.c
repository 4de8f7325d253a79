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
#include "ir/task_check.h"

/* BOTH: the fit and held-out samples as one set; UNSEEN: the samples
 * after them, which no choice of the search sees */
enum set { FIT, HELD, BOTH, UNSEEN };

/* One search: the graph, its samples and the float outputs to reach. */
struct search {
	const struct ir_graph *top;
	const struct npz *samples;
	const char *const *files;
	int nfiles;
	int64_t *first;              /* per file: global index of its first sample */
	int64_t nsamples;            /* samples evaluated: fit, held out, unseen */
	int64_t nfit;                /* the first nfit are the fit set */
	int64_t nsel;                /* the first nsel the fit and held-out sets */
	int64_t *order;              /* the order samples are tried in: the last
					to fail first */
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

/* 1 if sample I (global index) is the first of its file: the start of a
 * sequence. */
static int first_of_file(const struct search *s, int64_t i)
{
	for (int f = 0; f < s->nfiles; f++)
		if (s->first[f] == i)
			return 1;
	return 0;
}

/* Add state pair K's output of the run IT of G to PREV under its input's
 * name, to feed the next frame. */
static int add_state(const struct search *s, const struct interp *it, const struct ir_graph *g,
		     int k, struct npz *prev)
{
	for (int j = 0; j < g->n_outputs; j++) {
		const struct ir_tensor *t = &g->tensors[g->outputs[j]];
		if (strcmp(t->name, s->o->fr->out[k]))
			continue;
		float *v = interp_get_f32(it, g->outputs[j]);
		struct npz_array *a = npz_add(prev, s->o->fr->in[k], DT_F32, t->rank, t->shape, v);
		free(v);
		return a ? 0 : -1;
	}
	return err_set("--state: the lowered graph has no output '%s'", s->o->fr->out[k]);
}

/* 0 if the top-1 class of REF (N scores, sum of squares NA) is clear and
 * OUT's is another.  Clear: ahead of the second by 4 times the noise per
 * score a cosine of GOAL allows (sqrt(2 (1 - goal)) times the rms score),
 * which flips it once in about 400 when the noise is spread evenly; a
 * closer top-1 is the noise's to choose, and the cosine judges it. */
static int class_kept(const float *ref, const float *out, int64_t n, double na, double goal)
{
	int64_t a = 0, b = -1, o = 0;
	for (int64_t i = 1; i < n; i++) {
		if (ref[i] > ref[a]) {
			b = a;
			a = i;
		} else if (b < 0 || ref[i] > ref[b]) {
			b = i;
		}
		if (out[i] > out[o])
			o = i;
	}
	double noise = sqrt(2 * (1 - goal) * na / (double)n);
	return o == a || b < 0 || (double)ref[a] - ref[b] < 4 * noise;
}

/* OUT [T, C] (a CTC recogniser's per-step class probabilities) as its
 * text check should see it against REF: a copy in which each step whose
 * reference top-1 is not clear takes the reference's scores.  Clear: ahead
 * of the second by 4 times the noise per score a cosine of GOAL allows in
 * that step, sqrt(2 (1 - goal)) times the step's norm spread over the
 * classes that carry it, (sum |p|)^2 / sum p^2 of them: sqrt(2 (1 - goal))
 * sum p^2 / sum |p|, as class_kept's rule for one class but on a
 * distribution, whose noise sits on its few likely classes.  A step near
 * a tie (blank or a space at 0.54 against 0.43) is the noise's to choose,
 * and the cosine judges it; a flip of a clear step that changes the text
 * is a changed answer. */
static float *ctc_clear(const float *ref, const float *out, int64_t t, int64_t c, double goal)
{
	float *v = xmalloc(sizeof(float) * (size_t)(t * c + 1));
	memcpy(v, out, sizeof(float) * (size_t)(t * c));
	for (int64_t r = 0; r < t; r++) {
		const float *x = ref + r * c;
		double p1 = -INFINITY, p2 = -INFINITY, sq = 0, sum = 0;
		for (int64_t i = 0; i < c; i++) {
			sq += (double)x[i] * x[i];
			sum += fabs(x[i]);
			if (x[i] > p1) {
				p2 = p1;
				p1 = x[i];
			} else if (x[i] > p2) {
				p2 = x[i];
			}
		}
		double noise = sum > 0 ? sqrt(2 * (1 - goal)) * sq / sum : 0;
		if (!(p1 - p2 >= 4 * noise))
			memcpy(v + r * c, x, sizeof(float) * (size_t)c);
	}
	return v;
}

/* The score of output J of sample SMP, OUT against the float reference:
 * the cosine, or for one number the absolute error scaled so that
 * CALIB_SCORE_ABS scores the goal; -1, and *CHANGED set, when the answer
 * differs (the decision >= 0.5, or the task's answer). */
static double score(const struct search *s, int j, int64_t smp, const float *out, int *changed)
{
	const float *ref = s->ref[j] + smp * s->numel[j];
	double c;
	if (s->numel[j] == 1) {
		double a = ref[0], b = out[0], goal = s->o->expected_cos;
		c = 1 - (1 - goal) * fabs(a - b) / CALIB_SCORE_ABS;
		if ((a >= 0.5) != (b >= 0.5)) {
			c = -1;
			*changed = 1;
		}
	} else {
		double dot = 0, na = 0, nb = 0;
		for (int64_t i = 0; i < s->numel[j]; i++) {
			double a = ref[i], b = out[i];
			dot += a * b;
			na += a * a;
			nb += b * b;
		}
		c = na == 0 && nb == 0 ? 1 : na == 0 || nb == 0 ? 0 : dot / sqrt(na * nb);
		/* the answer too (npz-compare --task auto): a class whose top-1
		 * is clear, CTC text read at its clear steps, a binary or class
		 * map */
		const struct ir_tensor *t = &s->top->tensors[s->top->outputs[j]];
		enum task task = task_pick(t->shape, t->rank, ref, s->numel[j]);
		char what[256];
		float *seen = task == TASK_CTC ? ctc_clear(ref, out, t->shape[1], t->shape[2],
							    s->o->expected_cos) : NULL;
		if (task == TASK_CLASS ? !class_kept(ref, out, s->numel[j], na, s->o->expected_cos)
		    : task != TASK_NONE && task != TASK_SCORE &&
		      task_check(task, t->shape, t->rank, ref, seen ? seen : out, s->numel[j], what,
				 sizeof what) == 0) {
			c = -1;
			*changed = 1;
		}
		free(seen);
	}
	return c >= -1 ? c : -1;   /* NaN: the worst */
}

/* Run G over the samples, writing output j of sample i to
 * out[j] + i * numel[j]: the float reference. */
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

/* How many of N samples a set's score leaves out: its score is the
 * ceil(N / 10)th smallest, the 10th percentile, so that one odd sample in
 * ten does not decide how many ops stay in float (calib_search.h); none
 * of a sequence's frames, which are not independent samples. */
static int64_t spared(const struct search *s, int64_t n)
{
	return n > 0 && !s->o->fr ? (n + 9) / 10 - 1 : 0;
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* The score of a set of N > 0 sample scores V (sorted in place), of which
 * at least spared(TOTAL) + 1 when N < TOTAL (a question stopped early):
 * its 10th percentile, -1 when CHANGED (an answer changed); *LOWEST (may
 * be NULL) the smallest. */
static double set_score(const struct search *s, double *v, int64_t n, int64_t total, int changed,
			double *lowest)
{
	int64_t spare = spared(s, total);
	qsort(v, (size_t)n, sizeof *v, by_value);
	if (lowest)
		*lowest = v[0];
	return changed ? -1 : v[spare < n ? spare : n - 1];
}

/* The score over the samples of SET of the graph lowered with QT: each
 * sample's smallest over the graph outputs, then the 10th percentile over
 * the samples (set_score), or -1 when any sample's answer changed; for
 * BOTH, the smaller of that and the held-out samples' own score: the
 * held-out set is what says the goal holds on input the fit did not see,
 * and its score is the one reported as expected, so a choice reaches the
 * goal only when it does there too (the held-out set is judged on its
 * own percentile: among all samples an odd held-out one in ten could
 * hide behind fit samples that score well).
 * EARLY: a pass-or-fail question, stopping once more samples are below
 * the goal than the score spares (or one answer changed), and trying
 * those samples first next time.  PER (may be NULL; not with EARLY):
 * each sample's score and whether its answer changed, by sample index. */
static int evaluate(struct search *s, const struct qtable *qt, enum set set, int early,
		    double *cos, double *per, int *per_changed)
{
	int64_t n0 = set == HELD ? s->nfit : set == UNSEEN ? s->nsel : 0;
	int64_t n = set == FIT ? s->nfit : set == HELD ? s->nsel - s->nfit
		  : set == UNSEEN ? s->nsamples - s->nsel : s->nsel;
	int64_t *order = s->order + n0, spare = spared(s, n), below = 0, done = 0;
	/* BOTH: the held-out samples among them, scored apart too */
	int64_t nh = set == BOTH ? s->nsel - s->nfit : 0, hspare = spared(s, nh), hbelow = 0, hdone = 0;
	*cos = 1;
	if (n <= 0)
		return 0;
	struct lower_opts lo = { .tab = s->tab, .signed_only = s->o->signed_only,
				 .asymmetric = s->o->asymmetric, .qt = qt };
	struct ir_graph *g = NULL;
	if (lower_graph_opts(s->top, s->o->chip, s->o->mode, &lo, &g) < 0)
		return -1;
	double *sc = xmalloc(sizeof(double) * (size_t)(n + 1));
	double *hsc = xmalloc(sizeof(double) * (size_t)(nh + 1));
	int changed = 0;
	struct interp it;
	struct npz prev = { 0 };
	int rc = interp_init(&it, g, s->o->nthreads);
	for (int64_t k = 0; rc == 0 && k < n; k++) {
		int64_t smp = order[k];
		double worst = 1;
		rc = set_sample(s, &it, smp);
		/* a sequence: the state of the frame before, but for the
		 * first frame of the set or of its file */
		if (rc == 0 && k > 0 && prev.n && !first_of_file(s, smp))
			rc = interp_set_named(&it, &prev, "the previous frame");
		if (rc == 0)
			rc = interp_run(&it, NULL, NULL);
		npz_free(&prev);
		for (int j = 0; rc == 0 && s->o->fr && j < s->o->fr->n_state; j++)
			rc = add_state(s, &it, g, j, &prev);
		int ch = 0;
		for (int j = 0; rc == 0 && j < g->n_outputs; j++) {
			float *v = interp_get_f32(&it, g->outputs[j]);
			double c = score(s, j, smp, v, &ch);
			free(v);
			worst = c < worst ? c : worst;
		}
		if (rc != 0)
			break;
		changed |= ch;
		if (per) {
			per[smp] = worst;
			per_changed[smp] = ch;
		}
		sc[done++] = worst;
		if (nh > 0 && smp >= s->nfit) {
			hsc[hdone++] = worst;
			hbelow += worst < s->o->expected_cos;
		}
		if (worst < s->o->expected_cos) {
			below++;
			if (early && !s->o->fr) {   /* tried first next time; a
							 * sequence keeps its order */
				memmove(order + below, order + below - 1,
					sizeof *order * (size_t)(k - below + 1));
				order[below - 1] = smp;
			}
		}
		if (early && (changed || below > spare || hbelow > hspare))
			break;
	}
	/* stopped early, more than SPARE are below the goal: so is the
	 * score, whatever the rest */
	if (rc == 0 && done > 0)
		*cos = set_score(s, sc, done, n, changed, NULL);
	if (rc == 0 && hdone > 0) {
		double h = set_score(s, hsc, hdone, nh, changed, NULL);
		*cos = h < *cos ? h : *cos;
	}
	free(sc);
	free(hsc);
	npz_free(&prev);
	if (it.val)
		interp_free(&it);
	graph_free(g);
	s->evals++;
	return rc;
}

/* The score of the graph lowered with QT on both sets as one, as
 * evaluate (EARLY, PER, PER_CHANGED).  Sequences: each set runs as its
 * own sequence from its recorded state, as it always has, and with no
 * sample spared the score is the smaller of the two. */
static int evaluate_both(struct search *s, const struct qtable *qt, int early, double *cos,
			 double *per, int *per_changed)
{
	if (!s->o->fr)
		return evaluate(s, qt, BOTH, early, cos, per, per_changed);
	double h = 1;
	int rc = evaluate(s, qt, FIT, early, cos, per, per_changed);
	if (rc == 0 && (!early || *cos >= s->o->expected_cos))
		rc = evaluate(s, qt, HELD, early, &h, per, per_changed);
	*cos = h < *cos ? h : *cos;
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

/* Step 4's question, of the qtable QT the search chose: whether the
 * samples after the two sets (*UNSEEN of them, which no step saw) score
 * it below the goal.  If so the search would expect less than the goal
 * on unseen input while it claims the goal: they join the held-out set
 * (*HELD; the held-out positions run on into the unseen ones, so the sets
 * stay as positions of s->order and as index ranges), none is left
 * unseen, RES records their score, and *MOVED is 1. */
static int hold_unseen(struct search *s, const struct qtable *qt, int64_t *held, int64_t *unseen,
		       struct calib_search_result *res, int *moved)
{
	*moved = 0;
	if (*unseen < 1 || s->o->fr)
		return 0;
	double u = -1;
	int rc = evaluate(s, qt, UNSEEN, 0, &u, NULL, NULL);
	if (rc != 0 || u >= s->o->expected_cos)
		return rc;
	res->first_unseen_cos = u;
	res->first_unseen_samples = *unseen;
	*held += *unseen;
	*unseen = 0;
	s->nsel = s->nsamples;
	res->reselected = 1;
	*moved = 1;
	return 0;
}

/* Whether the graph with the ops OPS[0..N-1] in KEEP reaches the goal on
 * the fit and held-out samples as one set. */
static int reaches(struct search *s, const struct ir_graph *top, const int *ops, int n, int *ok)
{
	struct qtable *q = make_qtable(top, ops, n, s->o->keep);
	double c = -1;
	int rc = evaluate_both(s, q, 1, &c, NULL, NULL);
	*ok = rc == 0 && c >= s->o->expected_cos;
	qtable_free(q);
	return rc;
}

/* The smallest K in [0, HI] for which the first K ranked candidates in
 * KEEP reach the goal, assuming more ops in float never hurts; *FOUND 0
 * and HI when none does. */
static int smallest_prefix(struct search *s, const struct ir_graph *top, const struct ranked *cand,
			   int *ops, int hi, int *k, int *found)
{
	int rc = 0, ok, lo = 0;
	*found = 0;
	while (rc == 0 && lo < hi) {
		int mid = (lo + hi) / 2;
		progress(s, "ops in float", mid, hi);
		for (int i = 0; i < mid; i++)
			ops[i] = cand[i].op;
		rc = reaches(s, top, ops, mid, &ok);
		if (rc == 0 && ok) {
			hi = mid;
			*found = 1;
		} else {
			lo = mid + 1;
		}
	}
	if (rc == 0 && !*found) {   /* HI itself: not yet evaluated */
		for (int i = 0; i < hi; i++)
			ops[i] = cand[i].op;
		rc = reaches(s, top, ops, hi, found);
	}
	*k = hi;
	return rc;
}

/* 1 if the graph outputs of TOP are a detector's: each [1, A, K], a
 * vector of K numbers for each of A >= CALIB_ANCHOR_RATIO K anchors (a
 * long anchor axis, a short vector: box coordinates, keypoints, scores;
 * a token or feature output has fewer rows than features), and on each
 * output's anchors a box, K >= 4, in that output or another of the same
 * A (BlazeFace's scores [1, 512, 1] beside their boxes [1, 512, 16]; a
 * YOLO's [1, 6300, 85] holds both). */
static int detector_outputs(const struct ir_graph *top)
{
	for (int j = 0; j < top->n_outputs; j++) {
		const struct ir_tensor *t = &top->tensors[top->outputs[j]];
		if (t->rank != 3 || t->shape[0] != 1 || t->shape[2] < 1 ||
		    t->shape[1] < CALIB_ANCHOR_RATIO * t->shape[2])
			return 0;
		int box = 0;
		for (int i = 0; i < top->n_outputs; i++) {
			const struct ir_tensor *u = &top->tensors[top->outputs[i]];
			box |= u->rank == 3 && u->shape[1] == t->shape[1] && u->shape[2] >= 4;
		}
		if (!box)
			return 0;
	}
	return top->n_outputs > 0;
}

int64_t calib_sample_starts(const struct ir_graph *top, int nfiles, const struct npz *samples,
			    int64_t *first)
{
	int64_t total = 0;
	for (int f = 0; f < nfiles; f++) {
		first[f] = total;
		const struct ir_tensor *in0 = &top->tensors[top->inputs[0]];
		const struct npz_array *a = npz_find(&samples[f], in0->name);
		total += !a ? 0 : a->rank == in0->rank + 1 ? a->shape[0]
			: in0->shape[0] > 0 ? a->shape[0] / in0->shape[0] : 0;
	}
	return total;
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
	int64_t total = calib_sample_starts(top, nfiles, samples, s.first);
	/* the fit set, then up to HOLDOUT samples after it; too few samples
	 * for both: half and half (none held out from one sample) */
	s.nfit = o->samples > 0 && o->samples < total ? o->samples : total;
	int64_t held = total - s.nfit < o->holdout ? total - s.nfit : o->holdout;
	if (held < 1 && total > 1 && o->holdout > 0) {
		s.nfit = (total + 1) / 2;
		held = total - s.nfit < o->holdout ? total - s.nfit : o->holdout;
	}
	if (held < 0)
		held = 0;
	s.nsel = s.nfit + held;
	/* the rest, up to UNSEEN, only scores the result */
	int64_t unseen = o->fr ? 0 : total - s.nsel;
	if (o->unseen >= 0 && unseen > o->unseen)
		unseen = o->unseen;
	s.nsamples = s.nsel + unseen;
	s.order = xmalloc(sizeof(int64_t) * (size_t)(s.nsamples + 1));
	for (int64_t i = 0; i < s.nsamples; i++)
		s.order[i] = i;
	int n = top->n_outputs, rc = 0;
	s.ref = xcalloc((size_t)n + 1, sizeof *s.ref);
	s.numel = xcalloc((size_t)n + 1, sizeof *s.numel);
	res->scores = 0;
	for (int j = 0; j < n; j++) {
		s.numel[j] = tensor_numel(&top->tensors[top->outputs[j]]);
		s.ref[j] = xmalloc(sizeof(float) * (size_t)(s.nsamples * s.numel[j] + 1));
		res->scores += s.numel[j] == 1;
	}
	res->reselected = 0;
	/* the first sample index of the held-out and of the unseen set (step
	 * 4 may add the unseen samples to the held-out ones: the held-out set
	 * then runs on to the end) */
	const int64_t h0 = s.nfit, u0 = s.nsel;
	if (s.nsamples < 1)
		rc = err_set("no samples to search on");
	if (rc == 0)
		rc = run_graph(&s, top, s.ref);
	/* the goal by the outputs' answers: CALIB_GOAL_MAPS when each is a
	 * CTC text or a map, checked step by step or pixel by pixel, or the
	 * outputs are a detector's boxes and scores per anchor, else
	 * CALIB_GOAL_INT8 (calib_search.h) */
	struct calib_search_opts oc = *o;
	if (rc == 0 && oc.expected_cos <= -1) {
		int maps = 1;
		for (int j = 0; !detector_outputs(top) && j < n; j++) {
			const struct ir_tensor *t = &top->tensors[top->outputs[j]];
			enum task task = task_pick(t->shape, t->rank, s.ref[j], s.numel[j]);
			maps &= task == TASK_CTC || task == TASK_MAP || task == TASK_SEG;
		}
		oc.expected_cos = maps ? CALIB_GOAL_MAPS : CALIB_GOAL_INT8;
	}
	s.o = o = &oc;
	res->goal = oc.expected_cos;

	/* Candidates: in int8, ops whose lowering does more than copy the op
	 * through, and ops with no int8 form, which int8 runs in the fallback
	 * float dtype (an LSTM in bf16: f32 is the only finer choice); in a
	 * float mode, every op (each rounds its outputs). */
	struct ranked *cand = xmalloc(sizeof *cand * (size_t)(top->n_ops + 1));
	int nc = 0;
	for (int i = 0; i < top->n_ops; i++) {
		const struct op_def *d = op_defs[top->ops[i].type];
		int fallback = !d->lower && d->run_f32 && d->run_tpu;
		if (top->ops[i].name && (o->mode != MODE_INT8 || fallback ||
					 (d->lower && d->lower != lower_default)))
			cand[nc++] = (struct ranked){ .op = i };
	}
	int *ops = xmalloc(sizeof(int) * (size_t)(top->n_ops + 1));
	int *keep = xmalloc(sizeof(int) * (size_t)(nc + 1));
	int k = 0, ok = 0, found = 0;
	/* 1. the whole graph in MODE, scored on both sets */
	struct qtable *q = make_qtable(top, NULL, 0, o->keep);
	if (rc == 0)
		rc = evaluate_both(&s, q, 0, &res->base_cos, NULL, NULL);
	/* another table is taken only when the whole graph scores higher
	 * with it: tuning judges each tensor alone and may change an answer
	 * the untuned table kept.  A table of the other kind (the samples'
	 * quartiles beside the pooled search) must score higher by more than
	 * the goal's margin, 1 - goal: a difference within it is the noise of
	 * 20 samples, and the search's count of ops follows it no better */
	res->took = -1;
	res->tuned_last = 0;
	double best[2] = { res->base_cos, -2 }, ba = -1, margin = 1 - o->expected_cos;
	int took[2] = { -1, -1 };
	for (int a = 0; rc == 0 && a < o->nalts; a++) {
		int f = a >= o->nsame;
		/* the other kind tuned: only when untuned it came within the
		 * margin of TAB's kind (alts of TAB's kind come first), as
		 * tuning it then may lift it the margin above; tuning is the
		 * costly step */
		if (o->tuned_last && a == o->nalts - 1) {
			if (a <= o->nsame || ba < best[0] - margin)
				break;
			rc = o->tune(o->tune_arg, a);
			res->tuned_last = rc == 0;
		}
		s.tab = o->alts[a];
		if (rc == 0)
			rc = evaluate_both(&s, q, 0, &ba, NULL, NULL);
		if (rc == 0 && ba > best[f]) {
			best[f] = ba;
			took[f] = a;
		}
	}
	int other = took[1] >= 0 && best[1] > best[0] + margin;
	res->took = took[other];
	res->base_cos = best[other];
	s.tab = res->took < 0 ? tab : o->alts[res->took];
	/* the whole graph reaches the goal: done, unless the unseen samples
	 * score it below (step 4); then it must on them too */
	if (rc == 0 && res->base_cos >= o->expected_cos) {
		int moved;
		rc = hold_unseen(&s, q, &held, &unseen, res, &moved);
		if (rc == 0 && moved)
			rc = evaluate_both(&s, q, 0, &res->base_cos, NULL, NULL);
	}
	qtable_free(q);
	if (rc == 0 && res->base_cos >= o->expected_cos)
		goto report;
	/* 2. sensitivity on the fit set: each candidate alone in MODE, every
	 * other op in KEEP */
	for (int c = 0; rc == 0 && c < nc; c++) {
		progress(&s, "sensitivity of op", c + 1, nc);
		int m = 0;
		for (int i = 0; i < top->n_ops; i++)
			if (i != cand[c].op && top->ops[i].name)
				ops[m++] = i;
		q = make_qtable(top, ops, m, o->keep);
		rc = evaluate(&s, q, FIT, 0, &cand[c].cos, NULL, NULL);
		qtable_free(q);
	}
	if (rc == 0)
		qsort(cand, (size_t)nc, sizeof *cand, by_damage);
	/* 3. the fewest most damaging ops in KEEP that reach the goal on
	 * both sets as one; then drop any op whose removal still reaches it,
	 * least damaging first */
	for (int pass = 0; rc == 0 && pass < 2; pass++) {
		rc = smallest_prefix(&s, top, cand, ops, nc, &k, &found);
		memset(keep, 0, sizeof *keep * (size_t)(nc + 1));
		for (int i = 0; i < k; i++)
			keep[i] = 1;
		for (int d = k - 1; rc == 0 && found && d >= 0; d--) {
			progress(&s, "pruning", k - d, k);
			int m = 0;
			for (int i = 0; i < k; i++)
				if (keep[i] && i != d)
					ops[m++] = cand[i].op;
			rc = reaches(&s, top, ops, m, &ok);
			if (rc == 0 && ok)
				keep[d] = 0;
		}
		/* the qtable in graph order */
		int m = 0;
		for (int i = 0; rc == 0 && i < top->n_ops; i++)
			for (int j = 0; j < k; j++)
				if (keep[j] && cand[j].op == i)
					ops[m++] = i;
		k = m;
		/* 4. the count and the pruning stop just above the goal on the
		 * held-out samples, which they fitted: when the samples no
		 * step saw score it below the goal, the search would expect
		 * less than the goal on unseen input while it claims the
		 * goal; the held-out set was too small to choose on: select
		 * once more (the same ranking) with those samples held out
		 * too, which keeps ops in float until they reach the goal as
		 * well.  Swapping the two sets instead would choose on the
		 * samples that failed without the ones that chose first, and
		 * could keep fewer ops than the choice that failed.  No
		 * sample is left unseen after. */
		if (rc != 0 || pass > 0 || !found)
			break;
		int moved;
		q = make_qtable(top, ops, k, o->keep);
		rc = hold_unseen(&s, q, &held, &unseen, res, &moved);
		qtable_free(q);
		if (!moved)
			break;
	}
report:
	if (rc == 0) {
		/* the scores of the result: both sets as one, and each */
		double *per = xmalloc(sizeof(double) * (size_t)(s.nsamples + 1));
		int *ch = xcalloc((size_t)s.nsamples + 1, sizeof *ch);
		double all = 1;
		q = make_qtable(top, ops, k, o->keep);
		rc = evaluate_both(&s, q, 0, &all, per, ch);
		res->unseen_cos = res->unseen_lowest = 1;
		if (rc == 0 && unseen > 0) {
			double u = 1;
			rc = evaluate(&s, q, UNSEEN, 0, &u, per, ch);
			int uch = 0;
			for (int64_t i = u0; i < u0 + unseen; i++)
				uch |= ch[i];
			res->unseen_cos = set_score(&s, per + u0, unseen, unseen, uch,
						    &res->unseen_lowest);
		}
		if (rc == 0) {
			int fch = 0, hch = 0;
			for (int64_t i = 0; i < s.nfit; i++)
				fch |= ch[i];
			for (int64_t i = h0; i < h0 + held; i++)
				hch |= ch[i];
			res->cos = set_score(&s, per, s.nfit, s.nfit, fch, NULL);
			res->held_cos = res->held_lowest = 1;
			if (held > 0)
				res->held_cos = set_score(&s, per + h0, held, held, hch,
							  &res->held_lowest);
			res->fit_samples = s.nfit;
			res->held_samples = held;
			res->unseen_samples = unseen;
			res->kept = q->n;
			res->candidates = nc;
			res->evaluations = s.evals;
			res->reached = all >= o->expected_cos;
			*out = q;
		} else {
			qtable_free(q);
		}
		free(per);
		free(ch);
	}
	if (o->progress && rc == 0)
		fputc('\n', stderr);
	for (int j = 0; j < n; j++)
		free(s.ref[j]);
	free(s.ref);
	free(s.numel);
	free(s.first);
	free(s.order);
	free(cand);
	free(keep);
	free(ops);
	return rc < 0 ? -1 : 0;
}
