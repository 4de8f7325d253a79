/* compare.c - cosine, euclidean and SQNR similarity of two float arrays,
 * with the edge cases (all zeros, NaN, infinities) decided once here.
 */
#include "ir/compare.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

void compare_f32(const float *a, const float *b, size_t n, struct compare_result *r)
{
	double saa = 0, sbb = 0, sab = 0, sdd = 0, smm = 0;

	memset(r, 0, sizeof *r);
	r->equal = 1;
	r->max_diff_at = -1;
	for (size_t i = 0; i < n; i++) {
		double x = a[i], y = b[i], d = x - y, m = (x + y) / 2;
		r->nan_a += isnan(x) != 0;
		r->nan_b += isnan(y) != 0;
		r->inf_a += isinf(x) != 0;
		r->inf_b += isinf(y) != 0;
		if (!(x == y))
			r->equal = 0;
		if (fabs(d) > r->max_abs_diff || (r->max_diff_at < 0 && !isnan(d))) {
			r->max_abs_diff = fabs(d);
			r->max_diff_at = (int64_t)i;
		}
		saa += x * x;
		sbb += y * y;
		sab += x * y;
		sdd += d * d;
		smm += m * m;
	}
	if (r->equal) {
		r->cosine = r->euclid = 1;
		r->sqnr_db = INFINITY;
		return;
	}
	if (r->nan_a || r->nan_b) {
		r->cosine = r->euclid = r->sqnr_db = NAN;
		return;
	}
	if (saa == 0 && sbb == 0)
		r->cosine = 1;
	else if (saa == 0 || sbb == 0)
		r->cosine = 0;
	else
		r->cosine = fmax(-1, fmin(1, sab / (sqrt(saa) * sqrt(sbb))));
	r->euclid = 1 - sqrt(sdd) / (sqrt(smm) + 1e-7);
	r->sqnr_db = sdd == 0 ? INFINITY : 10 * log10(saa / sdd);
}

/* X rounded down to 6 decimals, so that a failing value never prints as
 * its threshold. */
static double floor6(double x)
{
	return floor(x * 1e6) / 1e6;
}

int compare_check(const struct compare_result *r, double min_cos, double min_euc,
		  char *why, size_t cap)
{
	if (r->nan_a || r->nan_b)
		snprintf(why, cap, "NaN in %s", r->nan_a ? "A" : "B");
	else if (!r->equal && (r->inf_a || r->inf_b))
		snprintf(why, cap, "infinity in %s", r->inf_a ? "A" : "B");
	else if (!(r->cosine >= min_cos))
		snprintf(why, cap, "cosine %.6f < %g", floor6(r->cosine), min_cos);
	else if (!(r->euclid >= min_euc))
		snprintf(why, cap, "euclid %.6f < %g", floor6(r->euclid), min_euc);
	else {
		if (cap)
			why[0] = 0;
		return 1;
	}
	return 0;
}
