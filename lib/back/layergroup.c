/* layergroup.c - layer grouping (lib/back/layergroup.h): the ops cut into
 * runs of consecutive ops, each a single op or a local group, by a search
 * over the cost model: an interval dynamic program, the greedy cut, and a
 * local search that moves, merges and splits the boundaries of the better
 * one, then merges of three or more runs, every candidate timed by codegen
 * as it would generate it.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/base.h"
#include "back/codegen.h"
#include "back/layergroup.h"
#include "ir/op.h"

/* Whether op k may be part of a local group at all: a chip kernel, not on
 * the host (the
 * rest is checked by codegen: an op of several results only before the
 * group's last; groups of ops that all slice along H run in slices, others
 * in one step over whole tensors). */
static int groupable(const struct ir_graph *g, int k)
{
	return op_defs[g->ops[k].type]->run_tpu != NULL && g->ops[k].place != PLACE_HOST;
}

/* The search's budget of op timings (search_window, cut_refine, cut_merge). */
#define LG_SEARCH_WORK 1500000.0

static const int64_t unknown = INT64_MAX / 4;

/* The run of ops [first, first + n) as a layer group. */
static struct lg_group run(int first, int n)
{
	struct lg_group r = { first, n, n > 1 ? PLACE_LOCAL : PLACE_GLOBAL };
	return r;
}

/* A cut of the ops into runs: r[0 .. n) in order. */
struct cut {
	struct lg_group *r;
	int n;
};

/* Time of runs r[0 .. n) generated in a row; unknown when codegen cannot. */
static int64_t runs_time(const struct ir_graph *g, struct codegen_ctx *cx, const struct lg_group *r,
			 int n)
{
	if (n <= 0)
		return 0;
	int64_t cy = codegen_runs_cycles(cx, r, n);
	return cy < 0 ? unknown : cy;
}

/* Time of cut x, each run after the one before it. */
static int64_t cut_time(const struct ir_graph *g, struct codegen_ctx *cx, const struct cut *x)
{
	return runs_time(g, cx, x->r, x->n);
}

/* The cut ending at each j back through from[]. */
static void cut_from(const int *from, int n_ops, struct cut *x)
{
	x->n = 0;
	for (int j = n_ops; j > 0; j = from[j])
		x->n++;
	x->r = xmalloc(sizeof *x->r * (size_t)(x->n + 1));
	int k = x->n;
	for (int j = n_ops; j > 0; j = from[j])
		x->r[--k] = run(from[j], j - from[j]);
}

/* Interval DP: best[j] is the least time of ops [0, j) cut into runs.  A
 * run from i is timed by codegen after the run that ends the best cut of
 * [0, i) (codegen loads a run's inputs while the one before computes, so a
 * run's cost depends on its predecessor): the time of the two together
 * less that of the predecessor alone.  From each start, runs grow until
 * max_ops, an op that cannot join a group, or a run that no longer fits
 * local memory (longer ones would need more still); a run codegen refuses
 * (an intermediate result used after it) is skipped, a longer one may be
 * valid again.  The work is bounded by n * max_ops timings of two runs. */
static void cut_dp(const struct ir_graph *g, struct codegen_ctx *cx, int max_ops, struct cut *x)
{
	int n = g->n_ops;
	int64_t *best = xmalloc(sizeof *best * (size_t)(n + 1));
	int *from = xmalloc(sizeof *from * (size_t)(n + 1));
	best[0] = 0;
	for (int j = 1; j <= n; j++) {
		best[j] = INT64_MAX;
		from[j] = j - 1;
	}
	for (int i = 0; i < n; i++) {
		/* best[i] is final: every run ending at i started before it. */
		struct lg_group pair[2];
		int np = 0;
		int64_t base = 0, b = best[i] < unknown ? best[i] : unknown;
		if (i > 0) {
			pair[np++] = run(from[i], i - from[i]);
			base = runs_time(g, cx, pair, 1);
			if (base >= unknown)
				np = 0, base = 0;
		}
		for (int j = i + 1; j <= n && j - i <= max_ops; j++) {
			if (j > i + 1 && (!groupable(g, i) || !groupable(g, j - 1)))
				break;
			pair[np] = run(i, j - i);
			int64_t cy = codegen_runs_cycles(cx, pair, np + 1);
			if (cy == -2 && j > i + 1)
				break;   /* longer runs need more local memory still */
			if (cy < 0 && j > i + 1)
				continue;
			/* a single op codegen cannot take is left to it to report */
			cy = cy < 0 ? unknown : cy - base;
			int64_t t = b + cy < unknown ? b + cy : unknown;
			/* ties: the longer run (fewer DDR round trips) */
			if (t <= best[j]) {
				best[j] = t;
				from[j] = i;
			}
		}
	}
	cut_from(from, n, x);
	free(best);
	free(from);
}

/* The greedy cut: from each op on, the run that saves the most cycles
 * against its ops one by one, each timed alone. */
static void cut_greedy(const struct ir_graph *g, struct codegen_ctx *cx, int max_ops, struct cut *x)
{
	int n = g->n_ops;
	int64_t *single = xmalloc(sizeof *single * (size_t)(n + 1));
	int *from = xmalloc(sizeof *from * (size_t)(n + 1));
	for (int i = 0; i < n; i++) {
		single[i] = codegen_group_cycles(cx, i, 1);
		if (single[i] < 0)
			single[i] = unknown;
	}
	for (int i = 0; i < n;) {
		int bestj = i + 1;
		int64_t sum = single[i], best_save = 0;
		for (int j = i + 2; j <= n && j - i <= max_ops && groupable(g, i); j++) {
			if (!groupable(g, j - 1))
				break;
			sum += single[j - 1];
			int64_t cy = codegen_group_cycles(cx, i, j - i);
			if (cy == -2)
				break;
			if (cy >= 0 && sum < unknown && sum - cy > best_save) {
				best_save = sum - cy;
				bestj = j;
			}
		}
		from[bestj] = i;
		for (int k = i + 2; k <= bestj; k++)
			if (k < bestj)
				from[k] = i;
		i = bestj;
	}
	/* from[] holds only the chosen ends: walk them */
	cut_from(from, n, x);
	free(single);
	free(from);
}

/* Time of the window of runs [a, b) of r (clamped) with run k..k+m-1
 * replaced by the m runs in rep. */
static int64_t window_time(const struct ir_graph *g, struct codegen_ctx *cx, const struct cut *x,
			   int a, int b, int k, int m, const struct lg_group *rep, int nrep)
{
	struct lg_group w[16];
	int n = 0;
	if (a < 0)
		a = 0;
	if (b > x->n)
		b = x->n;
	for (int i = a; i < b; i++) {
		if (i == k) {
			for (int j = 0; j < nrep; j++)
				w[n++] = rep[j];
			i += m - 1;
			continue;
		}
		w[n++] = x->r[i];
	}
	return runs_time(g, cx, w, n);
}

/* Whether the ops [first, first + n) may form one run. */
static int may_join(const struct ir_graph *g, int first, int n, int max_ops)
{
	if (n == 1)
		return 1;
	if (n > max_ops)
		return 0;
	for (int k = first; k < first + n; k++)
		if (!groupable(g, k))
			return 0;
	return 1;
}

/* Replace runs k..k+m-1 of x by rep[0 .. nrep). */
static void cut_replace(struct cut *x, int k, int m, const struct lg_group *rep, int nrep)
{
	struct lg_group *r = xmalloc(sizeof *r * (size_t)(x->n - m + nrep + 1));
	memcpy(r, x->r, sizeof *r * (size_t)k);
	memcpy(r + k, rep, sizeof *r * (size_t)nrep);
	memcpy(r + k + nrep, x->r + k + m, sizeof *r * (size_t)(x->n - k - m));
	free(x->r);
	x->r = r;
	x->n = x->n - m + nrep;
}

/* x with runs k..k+m-1 replaced by rep[0 .. nrep), kept when the whole
 * cut finishes sooner than *total (then the new time): returns 1 if so. */
static int cut_try(const struct ir_graph *g, struct codegen_ctx *cx, struct cut *x, int k, int m,
		   const struct lg_group *rep, int nrep, int64_t *total)
{
	struct cut y = { xmalloc(sizeof *y.r * (size_t)(x->n + 1)), x->n };
	memcpy(y.r, x->r, sizeof *y.r * (size_t)x->n);
	cut_replace(&y, k, m, rep, nrep);
	int64_t t = cut_time(g, cx, &y);
	if (t >= *total) {
		free(y.r);
		return 0;
	}
	free(x->r);
	*x = y;
	*total = t;
	return 1;
}

/* Local search over x: for each pair of neighbouring runs, merging them,
 * moving their boundary by up to `shift` ops either way, or splitting the
 * first in two; a change is kept when the runs around it (one before, one
 * after) finish sooner and so does the whole cut.  At most `passes` sweeps. */
static void cut_refine(const struct ir_graph *g, struct codegen_ctx *cx, int max_ops, struct cut *x,
		       int shift, int passes)
{
	/* Timing the whole cut for every local gain costs n_ops per gain: past
	 * LG_SEARCH_WORK (a long cut of a large graph) a wider window decides,
	 * so that the time stays linear in n. */
	int whole = (double)g->n_ops * x->n <= LG_SEARCH_WORK;
	int64_t total = whole ? cut_time(g, cx, x) : 0;
	for (int p = 0; p < passes; p++) {
		int changed = 0;
		for (int k = 0; k + 1 < x->n; k++) {
			struct lg_group A = x->r[k], B = x->r[k + 1], rep[2];
			int64_t now = window_time(g, cx, x, k - 1, k + 3, k, 2, &x->r[k], 2);
			int64_t best = now;
			struct lg_group pick[2];
			int npick = 0;
			/* merge */
			if (may_join(g, A.first, A.n_ops + B.n_ops, max_ops)) {
				rep[0] = run(A.first, A.n_ops + B.n_ops);
				int64_t t = window_time(g, cx, x, k - 1, k + 3, k, 2, rep, 1);
				if (t < best) {
					best = t;
					pick[0] = rep[0];
					npick = 1;
				}
			}
			/* move the boundary */
			for (int d = -shift; d <= shift; d++) {
				int na = A.n_ops + d, nb = B.n_ops - d;
				if (!d || na < 1 || nb < 1 || !may_join(g, A.first, na, max_ops) ||
				    !may_join(g, A.first + na, nb, max_ops))
					continue;
				rep[0] = run(A.first, na);
				rep[1] = run(A.first + na, nb);
				int64_t t = window_time(g, cx, x, k - 1, k + 3, k, 2, rep, 2);
				if (t < best) {
					best = t;
					pick[0] = rep[0];
					pick[1] = rep[1];
					npick = 2;
				}
			}
			if (npick && best < now && !whole) {
				/* the window sped up; on a long cut, keep it when a
				 * wider window (four runs either side) does too */
				if (window_time(g, cx, x, k - 4, k + 6, k, 2, pick, npick) <
				    window_time(g, cx, x, k - 4, k + 6, k, 2, &x->r[k], 2)) {
					cut_replace(x, k, 2, pick, npick);
					changed = 1;
				}
			} else if (npick && best < now) {
				/* the window sped up; keep it when the whole does too */
				changed |= cut_try(g, cx, x, k, 2, pick, npick, &total);
			}
		}
		if (!changed)
			break;
	}
}

/* Runs merged at most by cut_merge: window_time holds the merged run's
 * window, MERGE_RUNS + 2 runs, in its array of 16. */
#define MERGE_RUNS 8

/* Local search over x for merges of three to MERGE_RUNS neighbouring runs
 * into one, which cut_refine's merges of two do not reach: its three
 * sweeps at most double a run's length each, and where no merge of two
 * finishes sooner it stops (MaxViT's attention stages, cut by the search's
 * window into runs of a block or less: one run over several blocks loads
 * and stores fewer activations, and leaves the DMA engine time for later
 * weights).  For each run, of the merges of it and the 2 to
 * MERGE_RUNS - 1 runs after it, the one that saves the most time in the
 * runs around it (one before, one after) is kept when the whole cut
 * finishes sooner too.  Only while timing the
 * whole cut stays within LG_SEARCH_WORK op timings, as cut_refine's
 * whole-cut check: on a long cut (a chain of 100,000 ops) the work would
 * grow with the number of runs times their length.  At most `passes`
 * sweeps; returns whether x changed. */
static int cut_merge(const struct ir_graph *g, struct codegen_ctx *cx, int max_ops, struct cut *x,
		     int passes)
{
	if ((double)g->n_ops * x->n > LG_SEARCH_WORK)
		return 0;
	int any = 0;
	int64_t total = cut_time(g, cx, x);
	for (int p = 0; p < passes; p++) {
		int changed = 0;
		for (int k = 0; k + 2 < x->n; k++) {
			int64_t best = unknown;
			int bm = 0;
			struct lg_group pick;
			for (int m = 3; m <= MERGE_RUNS && k + m <= x->n; m++) {
				const struct lg_group *last = &x->r[k + m - 1];
				int nops = last->first + last->n_ops - x->r[k].first;
				if (!may_join(g, x->r[k].first, nops, max_ops))
					break;
				struct lg_group rep = run(x->r[k].first, nops);
				int64_t now = window_time(g, cx, x, k - 1, k + m + 1, k, m, &x->r[k], m);
				int64_t t = window_time(g, cx, x, k - 1, k + m + 1, k, m, &rep, 1);
				if (t < now && (bm == 0 || now - t > best)) {
					best = now - t;
					bm = m;
					pick = rep;
				}
			}
			if (!bm)
				continue;
			changed |= cut_try(g, cx, x, k, bm, &pick, 1, &total);
		}
		any |= changed;
		if (!changed)
			break;
	}
	return any;
}

/* The dynamic program and the greedy cut each time about n * w runs of up
 * to w ops: n * w^2 op timings.  Past LG_SEARCH_WORK of them (graphs of
 * more than a thousand ops or so) their runs are shortened so that the
 * work stays within it and the time linear in n; the refinement may still
 * merge runs up to max_ops. */

static int search_window(int n, int max_ops)
{
	double w = n > 0 ? sqrt(LG_SEARCH_WORK / n) : max_ops;
	if (w >= max_ops)
		return max_ops;
	return w < 2 ? 2 : (int)w;
}

/* The faster of the DP's and the greedy cut, refined, into *x. */
static void cut_search(const struct ir_graph *g, struct codegen_ctx *cx, int w, int max_ops,
		       struct cut *x)
{
	struct cut y = { 0 };
	cut_dp(g, cx, w, x);
	cut_greedy(g, cx, w, &y);
	int64_t tx = cut_time(g, cx, x), ty = cut_time(g, cx, &y);
	if (ty < tx) {
		free(x->r);
		*x = y;
	} else {
		free(y.r);
	}
	cut_refine(g, cx, max_ops, x, 4, 3);
	if (cut_merge(g, cx, max_ops, x, 3))
		cut_refine(g, cx, max_ops, x, 4, 1);
}

int layergroup(struct ir_graph *g, const struct chip *c, int max_ops)
{
	int n = g->n_ops;
	struct cut x = { 0 };
	if (max_ops > 1) {
		struct codegen_ctx *cx = codegen_ctx_new(g, c);
		/* searched with every schedule codegen may keep, then with the
		 * plain one alone (the search follows its estimates, and those
		 * lead it elsewhere); the faster cut, timed as codegen will */
		struct cut y = { 0 };
		int w = search_window(n, max_ops);
		codegen_departs(cx, 1);
		cut_search(g, cx, w, max_ops, &x);
		/* every time the plain schedule's: the second search is the first */
		if (codegen_departs(cx, 1)) {
			codegen_plain_schedule(cx, 1);
			cut_search(g, cx, w, max_ops, &y);
			codegen_plain_schedule(cx, 0);
		}
		if (y.r && cut_time(g, cx, &y) < cut_time(g, cx, &x)) {
			free(x.r);
			x = y;
		} else {
			free(y.r);
		}
		codegen_ctx_free(cx);
	} else {
		x.n = n;
		x.r = xmalloc(sizeof *x.r * (size_t)(n + 1));
		for (int i = 0; i < n; i++)
			x.r[i] = run(i, 1);
	}
	for (int i = 0; i < x.n; i++)
		for (int k = x.r[i].first; k < x.r[i].first + x.r[i].n_ops; k++) {
			g->ops[k].group = i;
			if (g->ops[k].place != PLACE_HOST)
				g->ops[k].place = x.r[i].place;
		}
	free(x.r);
	err_set("%s", "");
	g->stage = STAGE_GROUPED;
	return 0;
}
