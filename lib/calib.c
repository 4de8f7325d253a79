/* calib.c - calibration: run the float Top graph over sample inputs, gather
 * per-tensor min/max (pass 1) and, for KLD, histograms of |x| over
 * [0, max|x|] (pass 2), then choose each tensor's threshold
 * (formats/tpuc-calib.5).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "calib.h"
#include "interp.h"
#include "quant.h"

#define CALIB_BINS 2048     /* histogram bins over [0, max|x|] */
#define CALIB_LEVELS 128    /* quantisation levels of |x| (int8: 0..127) */
#define CALIB_MIN_KLD_VALUES 2048   /* nonzero values needed for the KLD search */

struct tstat {
	int t;                  /* tensor index */
	double min, max;        /* observed extremes */
	double width;           /* pass 2: bin width, max|x| / CALIB_BINS */
	uint64_t *hist;         /* pass 2: CALIB_BINS counts of nonzero |x| */
};

struct run {
	struct tstat *st;
	int n;
	int *of_tensor;         /* tensor index -> index in st, or -1 */
	int pass;               /* 1: min/max, 2: histograms */
};

static void observe(struct interp *it, struct run *r, int t)
{
	int s = r->of_tensor[t];
	if (s < 0)
		return;
	struct tstat *st = &r->st[s];
	const float *x = it->val[t];
	int64_t n = tensor_numel(&it->g->tensors[t]);
	if (r->pass == 1) {
		float mn = st->min, mx = st->max;
		#pragma omp simd reduction(min:mn) reduction(max:mx)
		for (int64_t i = 0; i < n; i++) {
			mn = x[i] < mn ? x[i] : mn;   /* NaN never wins */
			mx = x[i] > mx ? x[i] : mx;
		}
		st->min = mn;
		st->max = mx;
		return;
	}
	if (!(st->width > 0))
		return;
	float inv = (float)(1.0 / st->width);
	uint64_t *h = st->hist;
	for (int64_t i = 0; i < n; i++) {
		float a = fabsf(x[i]);
		if (!(a > 0))
			continue;   /* zeros (and NaN) stay out of the histogram, as in ncnn */
		int b = a * inv < CALIB_BINS ? (int)(a * inv) : CALIB_BINS - 1;
		h[b]++;
	}
}

static int after_op(struct interp *it, int op, void *user)
{
	const struct ir_op *o = &it->g->ops[op];
	for (int j = 0; j < o->n_out; j++)
		observe(it, user, o->out[j]);
	return 0;
}

/* Samples in the npz for graph input t (the rule of interp_set_sample). */
static int count_samples(const struct ir_graph *g, const struct npz *z, const char *file,
			 int64_t *count)
{
	if (g->n_inputs < 1)
		return err_set("the graph has no inputs");
	const struct ir_tensor *t = &g->tensors[g->inputs[0]];
	const struct npz_array *a = npz_find(z, t->name);
	if (!a)
		return err_set("'%s': no array for graph input '%s'", file, t->name);
	if (a->rank == t->rank + 1)
		*count = a->shape[0];
	else if (a->rank == t->rank && t->rank > 0 && t->shape[0] > 0)
		*count = a->shape[0] / t->shape[0];
	else
		return err_set("'%s': array '%s' does not hold samples of graph input '%s'",
			       file, t->name, t->name);
	if (*count < 1)
		return err_set("'%s': array '%s' holds no samples", file, t->name);
	return 0;
}

static void progress(const struct calib_opts *o, int pass, int passes, int64_t i, int64_t n)
{
	if (!o->progress)
		return;
	fprintf(stderr, "\r%s: pass %d/%d: sample %lld/%lld", o->prog ? o->prog : "calibrate",
		pass, passes, (long long)i, (long long)n);
	if (pass == passes && i == n)
		fputc('\n', stderr);
	fflush(stderr);
}

int calib_run(const struct ir_graph *g, const struct npz *samples, const char *file,
	      const struct calib_opts *opts, struct calib_table **out)
{
	if (g->dialect != DIALECT_TOP)
		return err_set("calibration runs top IR, not %s", dialect_name(g->dialect));
	int64_t count = 0;
	if (count_samples(g, samples, file, &count) < 0)
		return -1;
	if (opts->max_samples > 0 && opts->max_samples < count)
		count = opts->max_samples;

	/* The tensors to calibrate: f32 graph inputs, then op outputs, in order. */
	struct run r = { .pass = 1 };
	r.of_tensor = xmalloc(sizeof(int) * (size_t)(g->n_tensors + 1));
	r.st = xcalloc((size_t)g->n_tensors + 1, sizeof *r.st);
	for (int i = 0; i < g->n_tensors; i++)
		r.of_tensor[i] = -1;
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < (pass ? g->n_ops : g->n_inputs); i++) {
			const struct ir_op *op = pass ? &g->ops[i] : NULL;
			for (int j = 0; j < (pass ? op->n_out : 1); j++) {
				int t = pass ? op->out[j] : g->inputs[i];
				const struct ir_tensor *ten = &g->tensors[t];
				if (ten->dtype != DT_F32 || ten->data || r.of_tensor[t] >= 0)
					continue;
				r.of_tensor[t] = r.n;
				r.st[r.n++] = (struct tstat){ .t = t, .min = INFINITY, .max = -INFINITY };
			}
		}

	struct interp it;
	int rc = interp_init(&it, g, opts->nthreads);
	int passes = opts->method == CALIB_KLD ? 2 : 1;
	for (int pass = 1; rc == 0 && pass <= passes; pass++) {
		r.pass = pass;
		if (pass == 2)
			for (int s = 0; s < r.n; s++) {
				struct tstat *st = &r.st[s];
				double am = fmax(fabs(st->min), fabs(st->max));
				st->width = isfinite(am) ? am / CALIB_BINS : 0;
				st->hist = xcalloc(CALIB_BINS, sizeof *st->hist);
			}
		for (int64_t i = 0; rc == 0 && i < count; i++) {
			progress(opts, pass, passes, i, count);
			rc = interp_set_sample(&it, samples, file, i);
			for (int j = 0; rc == 0 && j < g->n_inputs; j++)
				observe(&it, &r, g->inputs[j]);
			if (rc == 0)
				rc = interp_run(&it, after_op, &r);
		}
		if (rc == 0)
			progress(opts, pass, passes, count, count);
	}
	if (rc == 0) {
		struct calib_table *t = xcalloc(1, sizeof *t);
		double *th = xmalloc(sizeof(double) * (size_t)(r.n + 1));
		#pragma omp parallel for num_threads(opts->nthreads > 0 ? opts->nthreads : 1) schedule(dynamic)
		for (int s = 0; s < r.n; s++) {
			struct tstat *st = &r.st[s];
			th[s] = isfinite(st->min) && isfinite(st->max) ? fmax(fabs(st->min), fabs(st->max)) : 0;
			uint64_t seen = 0;
			for (int b = 0; st->hist && b < CALIB_BINS; b++)
				seen += st->hist[b];
			/* Too few values for a meaningful histogram: keep min/max. */
			if (opts->method == CALIB_KLD && st->width > 0 && seen >= CALIB_MIN_KLD_VALUES)
				th[s] = calib_kld_threshold(st->hist, CALIB_BINS, st->width);
		}
		for (int s = 0; s < r.n; s++) {
			struct tstat *st = &r.st[s];
			double mn = isfinite(st->min) ? st->min : 0, mx = isfinite(st->max) ? st->max : 0;
			calib_add(t, g->tensors[st->t].name,
				  th[s] >= QUANT_MIN_THRESHOLD ? th[s] : QUANT_MIN_THRESHOLD, mn, mx);
		}
		free(th);
		*out = t;
	}
	if (it.val)
		interp_free(&it);
	for (int s = 0; s < r.n; s++)
		free(r.st[s].hist);
	free(r.st);
	free(r.of_tensor);
	return rc < 0 ? -1 : 0;
}

/* The KL-divergence threshold search (TensorRT's entropy calibration, with
 * ncnn's exclusion of exact zeros), in O(levels) per candidate from prefix
 * sums.  For each candidate i in [128, nbins]:
 *   P_b = hist[b] for b < i - 1, P_{i-1} = hist[i-1] + sum(hist[i..])
 *   level j merges bins [j m, (j + 1) m) with m = i / 128 (the last level
 *   also takes the remainder up to i); Q_b = (level sum) / (nonzero bins in
 *   the level) where hist[b] != 0, else 0
 *   KL = sum_b p_b log(p_b / q_b) over P_b > 0, p and q normalised, q_b =
 *   1e-10 where Q_b = 0
 * and the smallest KL wins (the first on ties); the threshold is i bins. */
double calib_kld_threshold(const uint64_t *hist, int nbins, double bin_width)
{
	if (nbins <= CALIB_LEVELS)
		return nbins * bin_width;
	double *H = xmalloc(sizeof(double) * (size_t)(nbins + 1));   /* prefix counts */
	double *L = xmalloc(sizeof(double) * (size_t)(nbins + 1));   /* prefix h log h */
	int *Z = xmalloc(sizeof(int) * (size_t)(nbins + 1));         /* prefix nonzero bins */
	H[0] = L[0] = 0;
	Z[0] = 0;
	for (int b = 0; b < nbins; b++) {
		double h = (double)hist[b];
		H[b + 1] = H[b] + h;
		L[b + 1] = L[b] + (h > 0 ? h * log(h) : 0);
		Z[b + 1] = Z[b] + (hist[b] != 0);
	}
	double total = H[nbins], best = INFINITY;
	int best_i = nbins;
	for (int i = CALIB_LEVELS; total > 0 && i <= nbins; i++) {
		double sq = H[i], last_p = (double)hist[i - 1] + (total - H[i]);
		if (!(sq > 0))
			continue;
		double log_sp = log(total), log_sq = log(sq);
		/* sum P log P over b < i */
		double plogp = L[i - 1] + (last_p > 0 ? last_p * log(last_p) : 0);
		/* sum P log Q over b < i with Q > 0 (log Q unnormalised) */
		double plogq = 0;
		int m = i / CALIB_LEVELS;
		for (int j = 0; j < CALIB_LEVELS; j++) {
			int b0 = j * m, b1 = j == CALIB_LEVELS - 1 ? i : b0 + m;
			double sum = H[b1] - H[b0];
			int nz = Z[b1] - Z[b0];
			if (nz == 0)
				continue;
			double lq = log(sum / nz);
			if (j == CALIB_LEVELS - 1)   /* bin i-1 carries the outliers */
				plogq += (sum - (double)hist[i - 1]) * lq +
					 (hist[i - 1] ? last_p * lq : 0);
			else
				plogq += sum * lq;
		}
		/* KL = (1/sp) [sum P (log P - log sp) - sum P (log q)], log q =
		 * log Q - log sq where Q > 0, log 1e-10 at an empty last bin. */
		double pq = plogq - (total - (hist[i - 1] ? 0 : last_p)) * log_sq;
		if (!hist[i - 1] && last_p > 0)
			pq += last_p * log(1e-10);
		double kl = (plogp - total * log_sp - pq) / total;
		if (kl < best) {
			best = kl;
			best_i = i;
		}
	}
	free(H);
	free(L);
	free(Z);
	return best_i * bin_width;
}
