/* test_compare - compare_f32 and compare_check against hand-computed values
 * and the edge cases: all zeros, one side zero, NaN, infinities, empty.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ir/compare.h"

#include "check.h"

#define NEAR(x, y) (fabs((x) - (y)) < 1e-9)

int main(void)
{
	struct compare_result r;
	char why[128];

	/* [1,0,0,0] vs [1,1,0,0]. */
	compare_f32((float[]){1, 0, 0, 0}, (float[]){1, 1, 0, 0}, 4, &r);
	CHECK(!r.equal && NEAR(r.cosine, 1 / sqrt(2)));
	CHECK(NEAR(r.euclid, 1 - 1 / (sqrt(5) / 2 + 1e-7)));
	CHECK(NEAR(r.sqnr_db, 0) && r.max_abs_diff == 1 && r.max_diff_at == 1);
	CHECK(compare_check(&r, 0.7, 0.1, why, sizeof why) == 1 && !why[0]);
	CHECK(compare_check(&r, 0.8, 0.1, why, sizeof why) == 0);
	CHECK(!strcmp(why, "cosine 0.707106 < 0.8"));
	CHECK(compare_check(&r, 0.7, 0.2, why, sizeof why) == 0);
	CHECK(!strcmp(why, "euclid 0.105572 < 0.2"));

	/* Scaled copy: cosine 1, euclid below 1, SQNR 10 log10(1 / 0.01) = 20. */
	compare_f32((float[]){1, 2, 3}, (float[]){1.1f, 2.2f, 3.3f}, 3, &r);
	CHECK(NEAR(r.cosine, 1) && r.euclid < 1 && fabs(r.sqnr_db - 20) < 1e-5);

	/* Opposite signs: cosine -1, euclid far below 0. */
	compare_f32((float[]){1, -2}, (float[]){-1, 2}, 2, &r);
	CHECK(NEAR(r.cosine, -1) && r.euclid < -1e6);
	CHECK(compare_check(&r, -1, -INFINITY, why, sizeof why) == 1);

	/* Zeros: both (equal), one side, signal zero. */
	compare_f32((float[]){0, -0.0f}, (float[]){-0.0f, 0}, 2, &r);
	CHECK(r.equal && r.cosine == 1 && r.euclid == 1 && isinf(r.sqnr_db) && r.sqnr_db > 0);
	compare_f32((float[]){0, 0}, (float[]){0, 3}, 2, &r);
	CHECK(r.cosine == 0 && isinf(r.sqnr_db) && r.sqnr_db < 0);
	compare_f32((float[]){0, 3}, (float[]){0, 0}, 2, &r);
	CHECK(r.cosine == 0 && NEAR(r.sqnr_db, 0));

	/* NaN fails whatever the tolerance, even against itself. */
	compare_f32((float[]){1, NAN}, (float[]){1, NAN}, 2, &r);
	CHECK(!r.equal && r.nan_a == 1 && r.nan_b == 1 && isnan(r.cosine));
	CHECK(compare_check(&r, -1, -INFINITY, why, sizeof why) == 0);
	CHECK(!strcmp(why, "NaN in A"));
	compare_f32((float[]){1, 2}, (float[]){NAN, 2}, 2, &r);
	CHECK(compare_check(&r, -1, -INFINITY, why, sizeof why) == 0);
	CHECK(!strcmp(why, "NaN in B") && r.max_abs_diff == 0 && r.max_diff_at == 1);

	/* Infinities pass only where both sides agree exactly. */
	compare_f32((float[]){INFINITY, 1}, (float[]){INFINITY, 1}, 2, &r);
	CHECK(r.equal && compare_check(&r, 0.99, 0.9, why, sizeof why) == 1);
	compare_f32((float[]){INFINITY, 1}, (float[]){INFINITY, 2}, 2, &r);
	CHECK(compare_check(&r, -1, -INFINITY, why, sizeof why) == 0);
	CHECK(!strcmp(why, "infinity in A"));

	/* No elements: equal. */
	compare_f32(NULL, NULL, 0, &r);
	CHECK(r.equal && r.cosine == 1 && r.max_diff_at == -1);

	return check_report("test_compare");
}
