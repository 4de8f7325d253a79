/* calib.c - calibration: run the float Top graph over sample inputs in one
 * pass, gathering per-tensor min/max and a histogram of |x| whose range is a
 * power of two that grows as larger values appear (so shards merge
 * exactly), then choose each tensor's threshold (formats/tpuc-calib.5).
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ir/base.h"
#include "calib/calib.h"
#include "run/interp.h"
#include "quant/quant.h"

#define CALIB_LOG2_BINS 11  /* CALIB_BINS = 2^11 */
#define CALIB_LEVELS 128    /* KLD: quantisation levels of |x| (int8: 0..127) */
#define CALIB_MIN_HIST_VALUES 2048   /* nonzero values needed for a histogram search */
#define CALIB_MIN_SAMPLE_VALUES 128  /* kld: nonzero values a sample needs for a threshold
					of its own (as many as the int8 levels) */
#define CALIB_MIN_EXP (-100)         /* smallest histogram range 2^-100 */

static const char *const method_names[] = {
	[CALIB_KLD] = "kld", [CALIB_MINMAX] = "minmax",
	[CALIB_PERCENTILE] = "percentile", [CALIB_MSE] = "mse",
};

void calib_stats_free(struct calib_stats *st)
{
	if (!st)
		return;
	for (int i = 0; i < st->n; i++)
		free(st->names[i]);
	FREE_ALL(st->names, st->min, st->max, st->exp, st->zeros, st->hist, st->nsv, st->sv,
		 st->graph, st->path, st);
}

static struct calib_stats *stats_new(int n)
{
	struct calib_stats *st = xcalloc(1, sizeof *st);
	st->n = n;
	st->names = xcalloc((size_t)n + 1, sizeof *st->names);
	st->min = xmalloc(sizeof(double) * (size_t)(n + 1));
	st->max = xmalloc(sizeof(double) * (size_t)(n + 1));
	st->exp = xmalloc(sizeof(int) * (size_t)(n + 1));
	st->zeros = xcalloc((size_t)n + 1, sizeof *st->zeros);
	st->hist = xcalloc((size_t)n * CALIB_BINS + 1, sizeof *st->hist);
	st->nsv = xcalloc((size_t)n + 1, sizeof *st->nsv);
	st->sv = NULL;
	st->cap = 0;
	for (int i = 0; i < n; i++) {
		st->min[i] = INFINITY;
		st->max[i] = -INFINITY;
		st->exp[i] = CALIB_NO_EXP;
	}
	return st;
}

/* Widen histogram H of range 2^*E to range 2^E2 (E2 > *E): bin b goes to
 * b >> (E2 - *E), exactly what binning at the wider range gives. */
static void hist_widen(uint64_t *h, int *e, int e2)
{
	if (*e != CALIB_NO_EXP && e2 > *e) {
		int d = e2 - *e;
		for (int b = 0; b < CALIB_BINS; b++) {
			uint64_t c = h[b];
			h[b] = 0;
			h[d >= CALIB_LOG2_BINS ? 0 : b >> d] += c;
		}
	}
	if (*e == CALIB_NO_EXP || e2 > *e)
		*e = e2;
}

/* The exponent of the range for a largest |x| of AM: the smallest e with
 * AM < 2^e, at least CALIB_MIN_EXP. */
static int range_exp(float am)
{
	int k;
	frexpf(am, &k);     /* am = f * 2^k, f in [0.5, 1) */
	return k < CALIB_MIN_EXP ? CALIB_MIN_EXP : k;
}

/* Count the N values X into histogram H (bin of |x| is |x| * INV, exact as
 * INV is a power of two; the last bin takes |x| = AM), exact zeros into
 * *ZEROS; NaN, infinities and |x| > AM are left out.  Branch-free: a block
 * of bin indices is computed first (ZERO_BIN and SKIP_BIN for the values
 * not binned), then counted into four interleaved histograms so that runs
 * of one bin (the zeros after a ReLU) do not serialise on one counter. */
#define ZERO_BIN CALIB_BINS
#define SKIP_BIN (CALIB_BINS + 1)
#define FILL_BLOCK 4096
static void hist_fill(uint64_t *h, uint64_t *zeros, const float *x, int64_t n, float am,
		      float inv)
{
	static _Thread_local uint32_t part[4][CALIB_BINS + 2];
	uint16_t idx[FILL_BLOCK];
	if (n < CALIB_BINS) {
		/* Fewer values than bins: count straight into H, without
		 * clearing and folding the 32 KiB of partial counts (which
		 * made a graph of many small tensors slow). */
		for (int64_t i = 0; i < n; i++) {
			float a = fabsf(x[i]);
			float f = a * inv;
			int b = f < (float)(CALIB_BINS - 1) ? (int)f : CALIB_BINS - 1;
			if (a == 0)
				(*zeros)++;
			else if (a <= am)
				h[b]++;
		}
		return;
	}
	memset(part, 0, sizeof part);
	for (int64_t i0 = 0; i0 < n; i0 += FILL_BLOCK) {
		int m = n - i0 < FILL_BLOCK ? (int)(n - i0) : FILL_BLOCK;
		const float *xb = x + i0;
		#pragma omp simd
		for (int i = 0; i < m; i++) {
			float a = fabsf(xb[i]);
			float f = a * inv;
			int b = f < (float)(CALIB_BINS - 1) ? (int)f : CALIB_BINS - 1;
			b = a <= am ? b : SKIP_BIN;   /* NaN compares false */
			idx[i] = (uint16_t)(a == 0 ? ZERO_BIN : b);
		}
		int i = 0;
		for (; i + 4 <= m; i += 4) {
			part[0][idx[i]]++;
			part[1][idx[i + 1]]++;
			part[2][idx[i + 2]]++;
			part[3][idx[i + 3]]++;
		}
		for (; i < m; i++)
			part[0][idx[i]]++;
		/* uint32 counters: flush before a block could overflow them */
		if ((i0 / FILL_BLOCK + 1) % (1 << 19) == 0 || i0 + m >= n) {
			for (int b = 0; b < CALIB_BINS; b++)
				h[b] += (uint64_t)part[0][b] + part[1][b] + part[2][b] + part[3][b];
			*zeros += (uint64_t)part[0][ZERO_BIN] + part[1][ZERO_BIN] + part[2][ZERO_BIN] +
				  part[3][ZERO_BIN];
			memset(part, 0, sizeof part);
		}
	}
}

/* Room for WANT per-sample thresholds per tensor in ST. */
static void sv_reserve(struct calib_stats *st, int64_t want)
{
	if (want <= st->cap)
		return;
	int64_t cap = st->cap > 0 ? st->cap : 8;
	while (cap < want)
		cap *= 2;
	double *sv = xcalloc((size_t)(st->n * cap) + 1, sizeof *sv);
	for (int s = 0; s < st->n; s++)
		if (st->nsv[s])
			memcpy(sv + s * cap, st->sv + s * st->cap, sizeof(double) * (size_t)st->nsv[s]);
	free(st->sv);
	st->sv = sv;
	st->cap = cap;
}

/* Record V as one sample's own threshold of tensor S. */
static void sv_add(struct calib_stats *st, int s, double v)
{
	sv_reserve(st, st->nsv[s] + 1);
	st->sv[s * st->cap + st->nsv[s]++] = v;
}

static double hist_threshold(enum calib_method method, double pct, const uint64_t *h, int exp,
			     uint64_t zeros, double mn, double mx);

/* Fold the N values X into tensor S of ST. */
static void observe_values(struct calib_stats *st, int s, const float *x, int64_t n)
{
	float mn = (float)st->min[s], mx = (float)st->max[s];
	float lo = INFINITY, hi = -INFINITY;
	#pragma omp simd reduction(min:lo) reduction(max:hi)
	for (int64_t i = 0; i < n; i++) {
		lo = x[i] < lo ? x[i] : lo;   /* NaN never wins */
		hi = x[i] > hi ? x[i] : hi;
	}
	if (!isfinite(lo) || !isfinite(hi)) {   /* infinities (or nothing): finite values only */
		lo = INFINITY, hi = -INFINITY;
		for (int64_t i = 0; i < n; i++)
			if (isfinite(x[i])) {
				lo = x[i] < lo ? x[i] : lo;
				hi = x[i] > hi ? x[i] : hi;
			}
	}
	/* -0 and +0 compare equal, so which one a min or max keeps depends
	 * on which came first: in the samples, in the SIMD lanes, in the
	 * order shards merge.  Zero is kept as +0 so that the table never
	 * depends on that order. */
	if (lo == 0)
		lo = 0;
	if (hi == 0)
		hi = 0;
	st->min[s] = lo < mn ? lo : mn;
	st->max[s] = hi > mx ? hi : mx;
	float am = lo <= hi ? fmaxf(fabsf(lo), fabsf(hi)) : 0;
	if (!(am > 0))
		am = 0;
	uint64_t *h = st->hist + (size_t)s * CALIB_BINS;
	if (am > 0)
		hist_widen(h, &st->exp[s], range_exp(am));
	float inv = st->exp[s] != CALIB_NO_EXP ? ldexpf(1.0f, CALIB_LOG2_BINS - st->exp[s]) : 0;
	if (st->method != CALIB_KLD || !(am > 0) || n < CALIB_MIN_HIST_VALUES) {
		uint64_t z0 = st->zeros[s];
		hist_fill(h, &st->zeros[s], x, n, am, inv);
		/* too few values for a histogram: the sample's max */
		if (st->method == CALIB_KLD && am > 0 &&
		    n - (int64_t)(st->zeros[s] - z0) >= CALIB_MIN_SAMPLE_VALUES)
			sv_add(st, s, am);
		return;
	}
	/* kld: the sample's own histogram, at its own range, gives its own
	 * threshold; then it goes into the tensor's, widened as a merge does */
	static _Thread_local uint64_t own[CALIB_BINS];
	memset(own, 0, sizeof own);
	uint64_t z = 0;
	int e = range_exp(am);
	hist_fill(own, &z, x, n, am, ldexpf(1.0f, CALIB_LOG2_BINS - e));
	if (n - (int64_t)z >= CALIB_MIN_SAMPLE_VALUES)
		sv_add(st, s, hist_threshold(CALIB_KLD, 0, own, e, z, lo, hi));
	hist_widen(own, &e, st->exp[s]);
	for (int b = 0; b < CALIB_BINS; b++)
		h[b] += own[b];
	st->zeros[s] += z;
}

struct run {
	struct calib_stats *st;
	int *of_tensor;         /* tensor index -> index in st, or -1 */
	int observe;            /* 1: fold every calibrated tensor into st */
	int nb;                 /* samples the run's tensors hold along axis 0 */
	uint64_t *hash;         /* NULL, or [nb][st->n]: a hash of each sample's values
				   of each calibrated op output */
};

static void observe(struct interp *it, struct run *r, int t)
{
	int s = r->of_tensor[t];
	if (s < 0 || !r->observe)
		return;
	/* a batched run's samples one after another, as they would come one
	 * by one (kld keeps each sample's own threshold) */
	int64_t per = tensor_numel(interp_tensor(it, t)) / r->nb;
	for (int b = 0; b < r->nb; b++)
		observe_values(r->st, s, (const float *)it->val[t] + per * b, per);
}

/* FNV-1a of N bytes. */
static uint64_t hash_bytes(const unsigned char *p, size_t n)
{
	uint64_t h = 1469598103934665603u;
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 1099511628211u;
	return h;
}

static int after_op(struct interp *it, int op, void *user)
{
	struct run *r = user;
	const struct ir_op *o = &it->g->ops[op];
	for (int j = 0; j < o->n_out; j++) {
		int t = o->out[j], s = r->of_tensor[t];
		observe(it, r, t);
		size_t per = tensor_bytes(&it->g->tensors[t]) / (size_t)r->nb;
		for (int b = 0; s >= 0 && r->hash && b < r->nb; b++)
			r->hash[(size_t)b * r->st->n + s] =
				hash_bytes((const unsigned char *)it->val[t] + per * (size_t)b, per);
	}
	return 0;
}

/* ---- samples in batches ----
 * Where the model allows, samples run CALIB_BATCH at a time through a copy
 * of the graph whose inputs hold that many along their first axis.  The
 * statistics do not depend on how values are grouped (minimum, maximum and
 * a histogram whose range only widens, hist_widen being exact), so a
 * batched run observes what its samples one by one would, provided each
 * sample's values are bit for bit the same: the first batch checks that
 * (hashes of every calibrated tensor, the batched run against the runs one
 * by one, which are the ones observed) and that the batched run is the
 * faster; else every sample runs alone as before.  The table is the same
 * either way, and so are shards and their merge. */

#define CALIB_BATCH 8                  /* samples per batched run */
#define CALIB_BATCH_BYTES (256 << 20)  /* activations of a batched run at most */

/* G with every input's first axis NB times as long, or NULL when some
 * activation does not then hold NB samples' worth along its first axis
 * (an op across samples, a shape fixed by the model) or the activations
 * would pass CALIB_BATCH_BYTES. */
static struct ir_graph *batch_graph(const struct ir_graph *g, int nb)
{
	int64_t bytes = 0;
	for (int i = 0; i < g->n_tensors; i++)
		if (!g->tensors[i].data)
			bytes += (int64_t)tensor_bytes(&g->tensors[i]);
	if (nb < 2 || bytes > CALIB_BATCH_BYTES / nb)
		return NULL;
	struct ir_graph *b = graph_clone_borrowing(g);
	int ok = 1;
	for (int i = 0; i < b->n_inputs && ok; i++) {
		struct ir_tensor *t = &b->tensors[b->inputs[i]];
		ok = t->rank > 0 && t->shape[0] > 0;
		t->shape[0] *= nb;
	}
	if (ok && graph_infer(b) < 0)
		ok = 0;
	for (int i = 0; i < g->n_tensors && ok; i++) {
		const struct ir_tensor *t = &g->tensors[i], *u = &b->tensors[i];
		if (t->data)
			continue;
		ok = u->rank == t->rank && t->rank > 0 && u->dtype == t->dtype &&
		     u->shape[0] == t->shape[0] * nb &&
		     !memcmp(u->shape + 1, t->shape + 1, sizeof t->shape[0] * (size_t)(t->rank - 1));
	}
	if (!ok) {
		graph_free(b);
		return NULL;
	}
	return b;
}

/* Sample I of the files SAMPLES (PER samples each) into IT; with BT, also
 * as slot J of BT's inputs. */
static int set_sample(struct interp *it, struct interp *bt, int j, const struct npz *samples,
		      const char *const *files, const int64_t *per, int64_t i)
{
	int f = 0;
	int64_t base = 0;
	while (i - base >= per[f])
		base += per[f++];
	if (interp_set_sample(it, &samples[f], files[f], i - base) < 0)
		return -1;
	for (int k = 0; bt && k < it->g->n_inputs; k++) {
		int t = it->g->inputs[k];
		size_t n = tensor_bytes(&it->g->tensors[t]);
		memcpy((char *)bt->val[t] + n * (size_t)j, it->val[t], n);
	}
	return 0;
}

/* Run sample I alone on IT, observing (or hashing) as R says. */
static int run_one(struct interp *it, struct run *r, const struct npz *samples,
		   const char *const *files, const int64_t *per, int64_t i)
{
	int rc = set_sample(it, NULL, 0, samples, files, per, i);
	for (int j = 0; rc == 0 && j < it->g->n_inputs; j++)
		observe(it, r, it->g->inputs[j]);
	if (rc == 0)
		rc = interp_run(it, after_op, r);
	r->st->samples++;
	return rc;
}

/* The batched runs of one calibration. */
struct batcher {
	struct ir_graph *g;          /* the batched graph (batch_graph) */
	struct interp it;
	int nb;                      /* samples per run */
	int state;                   /* 0: first batch, to check; 1: batches in use;
					-1: none (every sample alone) */
	int force;                   /* TPUC_CALIB_BATCH=1: used whenever the values agree */
	uint64_t *hash;              /* [2][nb][tensors]: batched, then one by one */
	int64_t done;                /* samples run in batches */
};

/* Batches for a run of COUNT samples of G with N calibrated tensors: tried
 * with several threads and at least four batches of samples, where a
 * batched run has more work to share than one sample's small ops (with one
 * thread it seldom pays for the check), or always with TPUC_CALIB_BATCH=1;
 * never with TPUC_CALIB_BATCH=0. */
static void batcher_init(struct batcher *b, const struct ir_graph *g, int nthreads,
			 int64_t count, int n)
{
	const char *e = getenv("TPUC_CALIB_BATCH");
	b->force = e && !strcmp(e, "1");
	b->nb = count < CALIB_BATCH ? (int)count : CALIB_BATCH;
	b->state = -1;
	if ((e && !strcmp(e, "0")) || (!b->force && (nthreads < 2 || count < 4 * CALIB_BATCH)) ||
	    !(b->g = batch_graph(g, b->nb)))
		return;
	if (interp_init(&b->it, b->g, nthreads) < 0) {
		graph_free(b->g);
		b->g = NULL;
		return;
	}
	b->hash = xcalloc((size_t)(2 * b->nb) * (size_t)n + 1, sizeof *b->hash);
	b->state = 0;
}

static void batcher_free(struct batcher *b)
{
	if (b->it.val)
		interp_free(&b->it);
	graph_free(b->g);
	free(b->hash);
}

/* Samples I to I + nb - 1 in one run of B, observed into R's statistics;
 * the first batch instead observes them run one by one on IT (the
 * reference) and keeps batches when every calibrated tensor of every
 * sample hashes the same both ways and the batched run (observing into
 * scratch statistics, so that both do the same work) took less time. */
static int run_batch(struct batcher *b, struct interp *it, struct run *r,
		     const struct npz *samples, const char *const *files, const int64_t *per,
		     int64_t i)
{
	int rc = 0, n = r->st->n, check = b->state == 0;
	double t0 = now_seconds();
	for (int j = 0; rc == 0 && j < b->nb; j++)
		rc = set_sample(it, &b->it, j, samples, files, per, i + j);
	struct run rb = { check ? stats_new(n) : r->st, r->of_tensor, 1, b->nb,
			  check ? b->hash : NULL };
	for (int j = 0; rc == 0 && j < b->it.g->n_inputs; j++)
		observe(&b->it, &rb, b->it.g->inputs[j]);
	if (rc == 0)
		rc = interp_run(&b->it, after_op, &rb);
	if (!check) {
		r->st->samples += b->nb;
		b->done += b->nb;
		return rc;
	}
	calib_stats_free(rb.st);
	double t1 = now_seconds();
	for (int j = 0; rc == 0 && j < b->nb; j++) {
		struct run r1 = { r->st, r->of_tensor, 1, 1, b->hash + (size_t)(b->nb + j) * n };
		rc = run_one(it, &r1, samples, files, per, i + j);
	}
	size_t len = sizeof *b->hash * (size_t)b->nb * (size_t)n;
	b->state = !memcmp(b->hash, b->hash + (size_t)b->nb * n, len) &&
		   (b->force || t1 - t0 < now_seconds() - t1) ? 1 : -1;
	return rc;
}

/* Samples in the npz for graph input 0 (the rule of interp_set_sample). */
static int count_samples(const struct ir_graph *g, const struct npz *z, const char *file,
			 int64_t *count)
{
	if (g->n_inputs < 1)
		return err_set("the graph has no inputs");
	const struct ir_tensor *t = &g->tensors[g->inputs[0]];
	const struct npz_array *a = npz_find(z, t->name);
	if (!a)
		return npz_missing(z, file, t->name, "graph input");
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

/* A bar on stderr: "calibrate: [#####     ] 16/32 samples". */
static void progress(const struct calib_opts *o, int64_t i, int64_t n)
{
	if (!o->progress)
		return;
	enum { WIDTH = 30 };
	char bar[WIDTH + 1];
	int full = n > 0 ? (int)(i * WIDTH / n) : WIDTH;
	for (int j = 0; j < WIDTH; j++)
		bar[j] = j < full ? '#' : ' ';
	bar[WIDTH] = '\0';
	fprintf(stderr, "\r%s: [%s] %lld/%lld samples", o->prog ? o->prog : "calibrate", bar,
		(long long)i, (long long)n);
	if (i == n)
		fputc('\n', stderr);
	fflush(stderr);
}

int calib_collect(const struct ir_graph *g, int nfiles, const struct npz *samples,
		  const char *const *files, const struct calib_opts *opts,
		  struct calib_stats **out)
{
	if (g->dialect != DIALECT_TOP)
		return err_set("calibration runs top IR, not %s", dialect_name(g->dialect));
	if (nfiles < 1)
		return err_set("no samples given");
	int64_t *per = xmalloc(sizeof(int64_t) * (size_t)nfiles), count = 0;
	for (int f = 0; f < nfiles; f++) {
		if (count_samples(g, &samples[f], files[f], &per[f]) < 0) {
			free(per);
			return -1;
		}
		count += per[f];
	}
	if (opts->max_samples > 0 && opts->max_samples < count)
		count = opts->max_samples;
	int64_t first = 0, last = count;
	if (opts->nshards > 0) {
		if (opts->shard < 1 || opts->shard > opts->nshards) {
			free(per);
			return err_set("shard %d of %d does not exist", opts->shard, opts->nshards);
		}
		first = count * (opts->shard - 1) / opts->nshards;
		last = count * opts->shard / opts->nshards;
	}

	/* The tensors to calibrate: f32 graph inputs, then op outputs, in order. */
	struct run r = { 0 };
	r.of_tensor = xmalloc(sizeof(int) * (size_t)(g->n_tensors + 1));
	int *list = xmalloc(sizeof(int) * (size_t)(g->n_tensors + 1)), n = 0;
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
				r.of_tensor[t] = n;
				list[n++] = t;
			}
		}
	r.st = stats_new(n);
	for (int s = 0; s < n; s++)
		r.st->names[s] = xstrdup(g->tensors[list[s]].name);
	r.st->graph = xstrdup(g->name ? g->name : "");
	r.st->method = opts->method;
	r.st->pooled = opts->pooled;
	r.st->percentile = opts->method == CALIB_PERCENTILE ? opts->percentile : 0;
	free(list);

	struct interp it;
	struct batcher bt = { .state = -1 };
	int rc = interp_init(&it, g, opts->nthreads);
	if (rc == 0)
		batcher_init(&bt, g, opts->nthreads, last - first, n);
	for (int64_t i = first; rc == 0 && i < last;) {
		progress(opts, i - first, last - first);
		if (bt.state >= 0 && last - i >= bt.nb) {
			rc = run_batch(&bt, &it, &r, samples, files, per, i);
			i += bt.nb;
			continue;
		}
		r.observe = r.nb = 1;
		rc = run_one(&it, &r, samples, files, per, i++);
	}
	if (rc == 0 && bt.force)
		fprintf(stderr, "%s: %lld of %lld samples ran in batches of %d\n",
			opts->prog ? opts->prog : "calibrate", (long long)bt.done,
			(long long)(last - first), bt.nb);
	batcher_free(&bt);
	if (rc == 0)
		progress(opts, last - first, last - first);
	if (it.val)
		interp_free(&it);
	free(r.of_tensor);
	free(per);
	if (rc < 0) {
		calib_stats_free(r.st);
		return -1;
	}
	*out = r.st;
	return 0;
}

/* Zeros plus histogram counts of tensor S into *TOTAL; -1 if the sum does
 * not fit in 64 bits. */
static int stats_total(const struct calib_stats *st, int s, uint64_t *total)
{
	const uint64_t *h = st->hist + (size_t)s * CALIB_BINS;
	uint64_t t = st->zeros[s];
	for (int b = 0; b < CALIB_BINS; b++) {
		if (h[b] > UINT64_MAX - t)
			return -1;
		t += h[b];
	}
	*total = t;
	return 0;
}

int calib_stats_merge(struct calib_stats *d, const struct calib_stats *s, const char *name)
{
	/* both parts are named when they disagree: either may be the odd one */
	char than[300] = "";
	if (d->path)
		snprintf(than, sizeof than, " than '%s'", d->path);
	if (strcmp(d->graph, s->graph) || d->n != s->n)
		return err_set("'%s': statistics of another graph%s", name, than);
	if (d->method != s->method || d->percentile != s->percentile)
		return err_set("'%s': statistics for another method%s (%s %g, not %s %g)", name, than,
			       method_names[s->method], s->percentile, method_names[d->method],
			       d->percentile);
	for (int i = 0; i < d->n; i++)
		if (strcmp(d->names[i], s->names[i]))
			return err_set("'%s': tensor %d is '%s', not '%s' as in%s", name, i, s->names[i],
				       d->names[i], d->path ? than + 5 : " the others");
	if (s->samples > INT64_MAX - d->samples)
		return err_set("'%s': the count of samples overflows when merged", name);
	for (int i = 0; i < d->n; i++) {
		uint64_t td, ts;
		if (stats_total(d, i, &td) < 0 || stats_total(s, i, &ts) < 0 || ts > UINT64_MAX - td)
			return err_set("'%s': tensor '%s': the counts overflow 64 bits when merged",
				       name, s->names[i]);
	}
	/* every count now fits: no bin or sum exceeds td + ts */
	for (int i = 0; i < d->n; i++) {
		/* + 0.0: a part written before zero was kept as +0 may hold -0 */
		d->min[i] = fmin(d->min[i], s->min[i]) + 0.0;
		d->max[i] = fmax(d->max[i], s->max[i]) + 0.0;
		d->zeros[i] += s->zeros[i];
		uint64_t *dh = d->hist + (size_t)i * CALIB_BINS;
		uint64_t sh[CALIB_BINS];
		memcpy(sh, s->hist + (size_t)i * CALIB_BINS, sizeof sh);
		int se = s->exp[i];
		if (se == CALIB_NO_EXP)
			continue;
		hist_widen(dh, &d->exp[i], se);
		hist_widen(sh, &se, d->exp[i]);
		for (int b = 0; b < CALIB_BINS; b++)
			dh[b] += sh[b];
	}
	/* the samples' own thresholds: one list, whose order the threshold
	 * does not depend on (it sorts them) */
	int64_t most = 0;
	for (int i = 0; i < d->n; i++)
		most = d->nsv[i] + s->nsv[i] > most ? d->nsv[i] + s->nsv[i] : most;
	sv_reserve(d, most);
	for (int i = 0; i < d->n; i++) {
		if (s->nsv[i])
			memcpy(d->sv + i * d->cap + d->nsv[i], s->sv + i * s->cap,
			       sizeof(double) * (size_t)s->nsv[i]);
		d->nsv[i] += s->nsv[i];
	}
	d->samples += s->samples;
	return 0;
}

/* Expected squared error (unnormalised) of quantising the histogram H of
 * NBINS bins of width W at threshold T with LEVELS steps (the cost of
 * calib_mse_threshold). */
static double hist_mse(const uint64_t *h, int nbins, double w, double t, int levels)
{
	double e = 0, step = t / levels;
	for (int b = 0; b < nbins; b++) {
		double c = (b + 0.5) * w;
		e += (double)h[b] * (c > t ? (c - t) * (c - t) : step * step / 12);
	}
	return e;
}

/* The threshold by METHOD (percentile PCT) of a tensor whose nonzero |x|
 * fill histogram H of range 2^EXP (CALIB_NO_EXP: none), with ZEROS exact
 * zeros and extremes MN, MX: never above max(|MN|, |MX|), which it is
 * when fewer than CALIB_MIN_HIST_VALUES values are binned. */
static double hist_threshold(enum calib_method method, double pct, const uint64_t *h, int exp,
			     uint64_t zeros, double mn, double mx)
{
	double th = isfinite(mn) && isfinite(mx) ? fmax(fabs(mn), fabs(mx)) : 0;
	if (method == CALIB_MINMAX || exp == CALIB_NO_EXP)
		return th;
	uint64_t seen = 0;
	int used = 0;     /* bins up to the last nonempty one */
	for (int b = 0; b < CALIB_BINS; b++) {
		seen += h[b];
		if (h[b])
			used = b + 1;
	}
	/* Too few values for a meaningful histogram: keep min/max. */
	if (seen < CALIB_MIN_HIST_VALUES)
		return th;
	double w = ldexp(1.0, exp - CALIB_LOG2_BINS);
	double t;
	switch (method) {
	case CALIB_KLD:
		t = calib_kld_threshold(h, used, w);
		/* never worse than no clipping: KLD on a distribution far from
		 * zero (all values in [a, b], 0 << a) can clip below a */
		if (t < th && hist_mse(h, used, w, t, mn >= 0 ? QUANT_UMAX : QUANT_QMAX) >
			      hist_mse(h, used, w, th, mn >= 0 ? QUANT_UMAX : QUANT_QMAX))
			t = th;
		break;
	case CALIB_PERCENTILE:
		t = calib_percentile_threshold(h, used, w, zeros, pct);
		break;
	case CALIB_MSE:
		t = calib_mse_threshold(h, used, w, mn >= 0 ? QUANT_UMAX : QUANT_QMAX);
		break;
	default:
		t = th;
	}
	return t < th ? t : th;
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* The KLD threshold of tensor S: the upper quartile of the samples' own
 * thresholds (formats/tpuc-calib.5). */
static double sample_threshold(const struct calib_stats *st, int s)
{
	int64_t n = st->nsv[s];
	double *v = xmalloc(sizeof(double) * (size_t)(n + 1));
	memcpy(v, st->sv + s * st->cap, sizeof(double) * (size_t)n);
	qsort(v, (size_t)n, sizeof *v, by_value);
	double t = v[(3 * n) / 4];
	free(v);
	return t;
}

/* Threshold of tensor S by the method of ST. */
static double stats_threshold(const struct calib_stats *st, int s)
{
	double mn = st->min[s], mx = st->max[s];
	double th = isfinite(mn) && isfinite(mx) ? fmax(fabs(mn), fabs(mx)) : 0;
	if (st->method == CALIB_KLD && st->nsv[s] > 0 && !st->pooled) {
		double t = sample_threshold(st, s);
		return t < th ? t : th;
	}
	return hist_threshold(st->method, st->percentile, st->hist + (size_t)s * CALIB_BINS,
			      st->exp[s], st->zeros[s], mn, mx);
}

int calib_stats_table(const struct calib_stats *st, int nthreads, struct calib_table **out)
{
	double *th = xmalloc(sizeof(double) * (size_t)(st->n + 1));
	#pragma omp parallel for num_threads(nthreads > 0 ? nthreads : 1) schedule(dynamic)
	for (int s = 0; s < st->n; s++)
		th[s] = stats_threshold(st, s);
	struct calib_table *t = calib_table_new();
	for (int s = 0; s < st->n; s++) {
		double mn = isfinite(st->min[s]) ? st->min[s] : 0;
		double mx = isfinite(st->max[s]) ? st->max[s] : 0;
		calib_add(t, st->names[s], th[s] >= QUANT_MIN_THRESHOLD ? th[s] : QUANT_MIN_THRESHOLD,
			  mn, mx);
	}
	free(th);
	*out = t;
	return 0;
}

int calib_run_files(const struct ir_graph *g, int nfiles, const struct npz *samples,
		    const char *const *files, const struct calib_opts *opts,
		    struct calib_table **t)
{
	struct calib_stats *st;
	if (calib_collect(g, nfiles, samples, files, opts, &st) < 0)
		return -1;
	int rc = calib_stats_table(st, opts->nthreads, t);
	calib_stats_free(st);
	return rc;
}

int calib_run(const struct ir_graph *g, const struct npz *samples, const char *file,
	      const struct calib_opts *opts, struct calib_table **t)
{
	return calib_run_files(g, 1, samples, &file, opts, t);
}

/* ---- partial statistics files ---- */

int calib_stats_write(const char *path, const struct calib_stats *st)
{
	struct out_file o;
	if (out_open(&o, path) < 0)
		return -1;
	FILE *fp = o.fp;
	fprintf(fp, "tpuc-calib-stats 2\n");
	fprintf(fp, "graph %s\n", strchr(st->graph, '\n') ? "" : st->graph);
	fprintf(fp, "method %s %.17g\n", method_names[st->method], st->percentile);
	fprintf(fp, "samples %lld\n", (long long)st->samples);
	fprintf(fp, "tensors %d\n", st->n);
	for (int s = 0; s < st->n; s++) {
		const uint64_t *h = st->hist + (size_t)s * CALIB_BINS;
		int nz = 0;
		for (int b = 0; b < CALIB_BINS; b++)
			nz += h[b] != 0;
		fprintf(fp, "t %s %a %a %d %llu %d", st->names[s], st->min[s], st->max[s],
			st->exp[s] == CALIB_NO_EXP ? 0 : st->exp[s],
			(unsigned long long)st->zeros[s], st->exp[s] == CALIB_NO_EXP ? -1 : nz);
		for (int b = 0; b < CALIB_BINS; b++)
			if (h[b])
				fprintf(fp, " %d:%llu", b, (unsigned long long)h[b]);
		fprintf(fp, " %lld", (long long)st->nsv[s]);
		for (int64_t k = 0; k < st->nsv[s]; k++)
			fprintf(fp, " %a", st->sv[s * st->cap + k]);
		fputc('\n', fp);
	}
	return out_commit(&o);
}

/* Next whitespace-separated token of *P (NUL-terminated in place), or NULL. */
static char *token(char **p)
{
	char *s = *p;
	while (*s == ' ' || *s == '\t')
		s++;
	if (!*s)
		return NULL;
	char *e = s;
	while (*e && *e != ' ' && *e != '\t')
		e++;
	if (*e)
		*e++ = '\0';
	*p = e;
	return s;
}

/* Token S as a decimal integer in [LO, HI], all of it; 0 or -1. */
static int parse_int(const char *s, int64_t lo, int64_t hi, int64_t *v)
{
	char *end;
	if (!s || !(*s == '-' || (*s >= '0' && *s <= '9')))
		return -1;
	errno = 0;
	long long x = strtoll(s, &end, 10);
	if (*end || errno || x < lo || x > hi)
		return -1;
	*v = x;
	return 0;
}

/* Token S as an unsigned decimal count that fits in 64 bits; 0 or -1. */
static int parse_count(const char *s, uint64_t *v)
{
	char *end;
	if (!s || !(*s >= '0' && *s <= '9'))
		return -1;
	errno = 0;
	unsigned long long x = strtoull(s, &end, 10);
	if (*end || errno)
		return -1;
	*v = x;
	return 0;
}

/* Token S as a number in double range ("inf" and "-inf" as written for an
 * empty tensor; NaN and values beyond the range refused); 0 or -1. */
static int parse_f64(const char *s, double *v)
{
	char *end;
	if (!s)
		return -1;
	if (!strcmp(s, "inf") || !strcmp(s, "-inf")) {
		*v = *s == '-' ? -INFINITY : INFINITY;
		return 0;
	}
	if (!(*s == '-' || (*s >= '0' && *s <= '9')))
		return -1;
	errno = 0;
	*v = strtod(s, &end);
	return *end || !isfinite(*v) || (errno == ERANGE && fabs(*v) > 1) ? -1 : 0;
}

/* The part of a "t" line after the name, into tensor S of ST; NULL when
 * it is valid, else what is wrong.  Valid is what calib_stats_write can
 * write: finite float min <= max, or inf -inf with nothing else (no value
 * seen); K = -1 exactly when no nonzero value was seen (E 0, min = max = 0
 * unless empty); otherwise E the range of max(|min|, |max|), K bins
 * strictly increasing below CALIB_BINS, the last the bin of that value,
 * each count positive, all the counts and zeros summing within 64 bits. */
static const char *stats_tensor(struct calib_stats *st, int s, char *rest)
{
	int64_t e, k;
	uint64_t z, total;
	double mn, mx;
	if (parse_f64(token(&rest), &mn) < 0 || parse_f64(token(&rest), &mx) < 0)
		return "min and max must be numbers within double range";
	if (parse_int(token(&rest), -1000000, 1000000, &e) < 0)
		return "the histogram exponent must be an integer";
	if (parse_count(token(&rest), &z) < 0)
		return "the count of zeros must be an unsigned 64-bit integer";
	if (parse_int(token(&rest), -1, CALIB_BINS, &k) < 0)
		return "the count of bins must be -1 to 2048";
	int empty = mn == INFINITY && mx == -INFINITY;
	if (!empty && !(isfinite(mn) && isfinite(mx) && mn <= mx))
		return "min and max must be finite with min <= max, or inf -inf";
	if (!empty && ((double)(float)mn != mn || (double)(float)mx != mx))
		return "min and max must be float values";
	if (empty && (z || k >= 0))
		return "a tensor without values has zeros or bins";
	double am = fmax(fabs(mn), fabs(mx));
	st->min[s] = mn + 0.0;   /* -0 read as +0, as collected */
	st->max[s] = mx + 0.0;
	st->zeros[s] = z;
	if (k < 0) {
		if (e != 0)
			return "the histogram exponent must be 0 with no bins";
		if (!empty && (am != 0 || !z))
			return "a tensor with nonzero values has no bins";
		st->exp[s] = CALIB_NO_EXP;
	} else {
		if (empty || !(am > 0) || k == 0)
			return "bins do not agree with min and max";
		if (e != range_exp((float)am))
			return "the histogram exponent does not agree with min and max";
		st->exp[s] = (int)e;
	}
	uint64_t *h = st->hist + (size_t)s * CALIB_BINS;
	int64_t last = -1;
	for (int64_t i = 0; i < k; i++) {
		char *tok = token(&rest), *colon;
		int64_t b;
		uint64_t c;
		if (!tok || !(colon = strchr(tok, ':')))
			return "bins must be b:count";
		*colon = '\0';
		if (parse_int(tok, 0, CALIB_BINS - 1, &b) < 0)
			return "a bin number is out of range";
		if (b <= last)
			return "bins are not in strictly increasing order";
		if (parse_count(colon + 1, &c) < 0 || c == 0)
			return "a bin count must be a positive 64-bit integer";
		h[b] = c;
		last = b;
	}
	int64_t ns;
	if (parse_int(token(&rest), 0, st->method == CALIB_KLD ? st->samples : 0, &ns) < 0)
		return st->method == CALIB_KLD ? "the count of sample thresholds must be 0 to the samples"
					       : "sample thresholds are kept for kld only: the count must be 0";
	if (ns > 0 && (empty || !(am > 0)))
		return "a tensor without nonzero values has sample thresholds";
	sv_reserve(st, ns);
	for (int64_t i = 0; i < ns; i++) {
		double v;
		if (parse_f64(token(&rest), &v) < 0 || !(v > 0) || v > am)
			return "a sample threshold must be a number in (0, max(|min|, |max|)]";
		st->sv[s * st->cap + i] = v;
	}
	st->nsv[s] = ns;
	if (token(&rest))
		return "more fields than the counts of bins and sample thresholds give";
	if (k > 0) {
		float f = (float)am * ldexpf(1.0f, CALIB_LOG2_BINS - (int)e);
		int want = f < (float)(CALIB_BINS - 1) ? (int)f : CALIB_BINS - 1;
		if (last != want)
			return "the last bin does not hold max(|min|, |max|)";
	}
	if (stats_total(st, s, &total) < 0)
		return "the counts overflow 64 bits";
	return NULL;
}

int calib_stats_read(const char *path, struct calib_stats **out)
{
	void *buf;
	size_t len;
	const char *shown = !strcmp(path, "-") ? "<stdin>" : path;
	if (file_read_all(path, &buf, &len) < 0)
		return -1;
	if (len >= 19 && !memcmp(buf, "tpuc-calib-stats 1\n", 19)) {
		free(buf);
		return err_set("'%s': statistics of format 1, from an older calibrate (no sample "
			       "thresholds): run that shard again", shown);
	}
	if (memchr(buf, '\0', len) || len < 19 || memcmp(buf, "tpuc-calib-stats 2\n", 19)) {
		free(buf);
		return err_set("'%s': not a tpuc calibration statistics file", shown);
	}
	char *p = buf, *endp = p + len;
	if (endp[-1] != '\n') {
		free(buf);
		return err_set("'%s': truncated: the last line has no newline", shown);
	}
	struct calib_stats *st = NULL;
	struct calib_table *names = calib_table_new();   /* to find a name given twice */
	const char *graph = NULL, *bad = NULL;
	enum calib_method method = CALIB_KLD;
	double pct = 0;
	int64_t samples = 0, ntensors = 0;
	int line = 0, s = 0, rc = 0;
	while (!bad && rc == 0 && p < endp) {
		char *nl = memchr(p, '\n', (size_t)(endp - p)), *rest = p;
		*nl = '\0';
		line++;
		p = nl + 1;
		if (line == 1)
			continue;
		char *key = token(&rest);
		if (line == 2) {
			if (!key || strcmp(key, "graph"))
				bad = "expected 'graph NAME'";
			graph = rest;   /* the rest of the line, blanks included */
		} else if (line == 3) {
			const char *m = token(&rest);
			int found = -1;
			for (size_t i = 0; m && i < ARRAY_LEN(method_names); i++)
				if (!strcmp(m, method_names[i]))
					found = (int)i;
			if (!key || strcmp(key, "method") || found < 0 || parse_f64(token(&rest), &pct) < 0 ||
			    token(&rest))
				bad = "expected 'method kld|minmax|percentile|mse P'";
			else if (found == CALIB_PERCENTILE ? !(pct >= CALIB_MIN_PERCENTILE && pct <= 100)
							   : pct != 0)
				bad = "the percentile is out of range (50 to 100 for percentile, else 0)";
			method = (enum calib_method)found;
		} else if (line == 4) {
			if (!key || strcmp(key, "samples") || parse_int(token(&rest), 0, INT64_MAX,
									 &samples) < 0 || token(&rest))
				bad = "expected 'samples S', S a count";
		} else if (line == 5) {
			if (!key || strcmp(key, "tensors") || parse_int(token(&rest), 0, (1 << 24) - 1,
									 &ntensors) < 0 || token(&rest))
				bad = "expected 'tensors N', N a count below 2^24";
			/* one line per tensor follows: no more tensors than lines
			 * (a damaged count must not allocate histograms for it) */
			int64_t lines = 0;
			for (const char *q = p; q < endp && lines <= ntensors; q++)
				lines += *q == '\n';
			if (bad)
				break;
			if (ntensors > lines) {
				rc = err_set("'%s': truncated: %lld of %lld tensors", shown,
					     (long long)lines, (long long)ntensors);
				break;
			}
			st = stats_new((int)ntensors);
			st->path = xstrdup(shown);
			st->graph = xstrdup(graph);
			st->method = method;
			st->percentile = pct;
			st->samples = samples;
		} else if (s >= ntensors) {
			bad = "more tensor lines than 'tensors' gives";
		} else {
			char *name = token(&rest);
			if (!key || strcmp(key, "t") || !name) {
				bad = "expected 't NAME MIN MAX E ZEROS K b:count...'";
			} else if (calib_find(names, name)) {
				rc = err_set("'%s': line %d: tensor '%s' listed twice", shown, line, name);
			} else {
				calib_add(names, name, 0, 0, 0);
				st->names[s] = xstrdup(name);
				if ((bad = stats_tensor(st, s, rest)) == NULL && samples == 0 &&
				    (st->min[s] <= st->max[s] || st->exp[s] != CALIB_NO_EXP))
					bad = "values seen in 0 samples";
				s++;
			}
		}
	}
	if (bad)
		rc = err_set("'%s': line %d: %s", shown, line, bad);
	else if (rc == 0 && (!st || s != ntensors))
		rc = err_set("'%s': truncated: %d of %lld tensors", shown, s, (long long)ntensors);
	free(buf);
	calib_table_free(names);
	if (rc < 0) {
		calib_stats_free(st);
		return -1;
	}
	*out = st;
	return 0;
}

/* ---- threshold searches ---- */

double calib_percentile_threshold(const uint64_t *hist, int nbins, double bin_width,
				  uint64_t zeros, double p)
{
	double total = (double)zeros;
	for (int b = 0; b < nbins; b++)
		total += (double)hist[b];
	double want = total * p / 100, cum = (double)zeros;
	for (int b = 0; b < nbins; b++) {
		cum += (double)hist[b];
		if (cum >= want)
			return (b + 1) * bin_width;
	}
	return nbins * bin_width;
}

double calib_mse_threshold(const uint64_t *hist, int nbins, double bin_width, int levels)
{
	/* suffix sums over bins >= i of h, h c, h c^2 (c: bin centre) */
	double *S0 = xcalloc((size_t)nbins + 2, sizeof(double));
	double *S1 = xcalloc((size_t)nbins + 2, sizeof(double));
	double *S2 = xcalloc((size_t)nbins + 2, sizeof(double));
	for (int b = nbins - 1; b >= 0; b--) {
		double h = (double)hist[b], c = (b + 0.5) * bin_width;
		S0[b] = S0[b + 1] + h;
		S1[b] = S1[b + 1] + h * c;
		S2[b] = S2[b + 1] + h * c * c;
	}
	double best = INFINITY;
	int best_i = nbins;
	for (int i = 1; i <= nbins; i++) {
		double t = i * bin_width, step = t / levels;
		double clip = S2[i] - 2 * t * S1[i] + t * t * S0[i];
		double round_err = (S0[0] - S0[i]) * step * step / 12;
		double e = clip + round_err;
		if (e < best) {
			best = e;
			best_i = i;
		}
	}
	free(S0);
	free(S1);
	free(S2);
	return best_i * bin_width;
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
	/* Levels 0..126 span j m .. (j + 1) m, the same for every i of one
	 * m = i / 128: their part of sum P log Q is summed once per m, in the
	 * order the levels come, so the result is bit for bit that of summing
	 * all 128 levels for each i (the last level alone changes with i). */
	int head_m = 0;
	double head = 0;
	for (int i = CALIB_LEVELS; total > 0 && i <= nbins; i++) {
		double sq = H[i], last_p = (double)hist[i - 1] + (total - H[i]);
		if (!(sq > 0))
			continue;
		double log_sp = log(total), log_sq = log(sq);
		/* sum P log P over b < i */
		double plogp = L[i - 1] + (last_p > 0 ? last_p * log(last_p) : 0);
		/* sum P log Q over b < i with Q > 0 (log Q unnormalised) */
		int m = i / CALIB_LEVELS;
		if (m != head_m) {
			head = 0;
			for (int j = 0; j < CALIB_LEVELS - 1; j++) {
				int b0 = j * m, b1 = b0 + m, nz = Z[b1] - Z[b0];
				double sum = H[b1] - H[b0];
				if (nz)
					head += sum * log(sum / nz);
			}
			head_m = m;
		}
		double plogq = head;
		{
			int b0 = (CALIB_LEVELS - 1) * m, nz = Z[i] - Z[b0];
			double sum = H[i] - H[b0];
			if (nz) {   /* bin i-1 carries the outliers */
				double lq = log(sum / nz);
				plogq += (sum - (double)hist[i - 1]) * lq +
					 (hist[i - 1] ? last_p * lq : 0);
			}
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
