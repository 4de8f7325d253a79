/* task_check.c - task-level checks of a model output (task_check.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/base.h"
#include "ir/task_check.h"

static const char *const names[] = {
	[TASK_NONE] = "none", [TASK_AUTO] = "auto", [TASK_CLASS] = "class",
	[TASK_CTC] = "ctc", [TASK_MAP] = "map", [TASK_SEG] = "seg", [TASK_SCORE] = "score",
};

int task_from_name(const char *s)
{
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (!strcmp(s, names[i]))
			return (int)i;
	return -1;
}

const char *task_name(enum task t)
{
	return names[t];
}

/* SHAPE without its leading 1s (ALL: without every 1) into CORE; its rank. */
static int core_dims(const int64_t *shape, int rank, int all, int64_t *core)
{
	int k = 0, lead = 1;
	for (int i = 0; i < rank; i++) {
		if (shape[i] == 1 && (lead || all))
			continue;
		lead = 0;
		core[k++] = shape[i];
	}
	return k;
}

/* Whether the N rows of length L of A are distributions: no value below
 * -1e-6, each summing to 1 within 1e-3. */
static int rows_are_distributions(const float *a, int64_t rows, int64_t len)
{
	for (int64_t r = 0; r < rows; r++) {
		double s = 0;
		for (int64_t i = 0; i < len; i++) {
			if (!(a[r * len + i] >= -1e-6f))
				return 0;
			s += a[r * len + i];
		}
		if (!(fabs(s - 1) <= 1e-3))
			return 0;
	}
	return 1;
}

/* The same with the distribution over C strided by HW: pixel p's values are
 * a[c * hw + p]. */
static int pixels_are_distributions(const float *a, int64_t c, int64_t hw)
{
	for (int64_t p = 0; p < hw; p++) {
		double s = 0;
		for (int64_t i = 0; i < c; i++) {
			if (!(a[i * hw + p] >= -1e-6f))
				return 0;
			s += a[i * hw + p];
		}
		if (!(fabs(s - 1) <= 1e-3))
			return 0;
	}
	return 1;
}

enum task task_pick(const int64_t *shape, int rank, const float *a, int64_t n)
{
	int64_t core[64];
	if (rank > 60)
		return TASK_NONE;
	if (n == 1)
		return TASK_SCORE;
	if (core_dims(shape, rank, 1, core) == 1 && core[0] >= 2 && rank <= 2)
		return TASK_CLASS;
	int k = core_dims(shape, rank, 0, core);
	if (rank == 3 && k == 2 && core[0] >= 2 && core[1] >= 2 &&
	    rows_are_distributions(a, core[0], core[1]))
		return TASK_CTC;
	if (rank == 4 && shape[0] == 1 && shape[1] == 1 && shape[2] >= 2 && shape[3] >= 2) {
		for (int64_t i = 0; i < n; i++)
			if (!(a[i] >= 0 && a[i] <= 1))
				return TASK_NONE;
		return TASK_MAP;
	}
	if (rank == 4 && shape[0] == 1 && shape[1] >= 2 && shape[2] >= 8 && shape[3] >= 8 &&
	    pixels_are_distributions(a, shape[1], shape[2] * shape[3]))
		return TASK_SEG;
	return TASK_NONE;
}

/* Index of the largest of the N values X[0], X[STRIDE], ... (the first on ties). */
static int64_t argmax(const float *x, int64_t n, int64_t stride)
{
	int64_t best = 0;
	for (int64_t i = 1; i < n; i++)
		if (x[i * stride] > x[best * stride])
			best = i;
	return best;
}

/* The indices of the K largest of X[0..N-1], largest first, into TOP. */
static void top_k(const float *x, int64_t n, int k, int64_t *top)
{
	for (int j = 0; j < k; j++) {
		int64_t best = -1;
		for (int64_t i = 0; i < n; i++) {
			int taken = 0;
			for (int q = 0; q < j; q++)
				taken |= top[q] == i;
			if (!taken && (best < 0 || x[i] > x[best]))
				best = i;
		}
		top[j] = best;
	}
}

static int check_class(const float *a, const float *b, int64_t c, char *what, size_t cap)
{
	int64_t ta[5], tb[5];
	int k = c < 5 ? (int)c : 5, overlap = 0;
	top_k(a, c, k, ta);
	top_k(b, c, k, tb);
	for (int i = 0; i < k; i++)
		for (int j = 0; j < k; j++)
			overlap += ta[i] == tb[j];
	float lo = a[0];
	for (int64_t i = 1; i < c; i++)
		lo = a[i] < lo ? a[i] : lo;
	/* a top-1 within TASK_TIE of the spread from the second is no clear
	 * answer: B may swap the two */
	int clear = a[ta[0]] - a[ta[1]] > TASK_TIE * (a[ta[0]] - lo);
	int pass = ta[0] == tb[0] || (!clear && (ta[0] == tb[1]));
	snprintf(what, cap, "top-1 %lld %s %lld%s, top-%d %d/%d", (long long)ta[0],
		 ta[0] == tb[0] ? "=" : "!=", (long long)tb[0], clear ? "" : " (a tie in A)", k,
		 overlap, k);
	return pass;
}

/* Greedy CTC decoding of X [T, C] into OUT: the labels, repeats merged,
 * blank 0 dropped; their count. */
static int64_t ctc_decode(const float *x, int64_t t, int64_t c, int64_t *out)
{
	int64_t n = 0, prev = -1;
	for (int64_t i = 0; i < t; i++) {
		int64_t l = argmax(x + i * c, c, 1);
		if (l != prev && l != 0)
			out[n++] = l;
		prev = l;
	}
	return n;
}

static int check_ctc(const float *a, const float *b, int64_t t, int64_t c, char *what, size_t cap)
{
	int64_t *da = xmalloc(sizeof(int64_t) * (size_t)(t + 1));
	int64_t *db = xmalloc(sizeof(int64_t) * (size_t)(t + 1));
	int64_t na = ctc_decode(a, t, c, da), nb = ctc_decode(b, t, c, db), same = 0;
	while (same < na && same < nb && da[same] == db[same])
		same++;
	int pass = na == nb && same == na;
	if (pass)
		snprintf(what, cap, "CTC text equal (%lld labels)", (long long)na);
	else
		snprintf(what, cap, "CTC text differs: %lld vs %lld labels, first at label %lld",
			 (long long)na, (long long)nb, (long long)same);
	free(da);
	free(db);
	return pass;
}

int task_check(enum task t, const int64_t *shape, int rank, const float *a, const float *b,
	       int64_t n, char *what, size_t cap)
{
	int64_t core[64];
	int k = rank <= 60 ? core_dims(shape, rank, t == TASK_CLASS, core) : -1;
	switch (t) {
	case TASK_SCORE: {
		if (n != 1)
			break;
		double d = fabs((double)a[0] - b[0]);
		int side = (a[0] >= 0.5f) == (b[0] >= 0.5f);
		snprintf(what, cap, "|a-b| %.4g (at most %g), %s of 0.5", d, TASK_SCORE_ABS,
			 side ? "same side" : "opposite sides");
		return d <= TASK_SCORE_ABS && side;
	}
	case TASK_CLASS:
		if (k != 1 || core[0] < 2)
			break;
		return check_class(a, b, core[0], what, cap);
	case TASK_CTC:
		if (k != 2 || core[1] < 2)
			break;
		return check_ctc(a, b, core[0], core[1], what, cap);
	case TASK_MAP:
	case TASK_SEG: {
		if (k < 2)
			break;
		int64_t c = t == TASK_MAP || k == 2 ? 1 : core[0], hw = n / c, agree = 0;
		if (t == TASK_SEG && c < 2)
			break;
		for (int64_t p = 0; p < hw; p++) {
			if (t == TASK_MAP)
				agree += (a[p] >= 0.5f) == (b[p] >= 0.5f);
			else
				agree += argmax(a + p, c, hw) == argmax(b + p, c, hw);
		}
		double f = hw ? (double)agree / (double)hw : 1;
		snprintf(what, cap, "%s agree on %.4f of %lld pixels (at least %g)",
			 t == TASK_MAP ? "binary maps at 0.5" : "argmax maps", f, (long long)hw,
			 TASK_MAP_AGREE);
		return f >= TASK_MAP_AGREE;
	}
	default:
		break;
	}
	snprintf(what, cap, "shape does not fit a %s check", task_name(t));
	return -1;
}
