/* compare.h - similarity of two tensors, as used to check a compiled model
 * against its reference: cosine, euclidean similarity and SQNR.
 */
#ifndef TPUC_COMPARE_H
#define TPUC_COMPARE_H

#include <stddef.h>
#include <stdint.h>

/* Default pass thresholds (TPU-MLIR's npz_tool defaults). */
#define COMPARE_DEFAULT_COSINE 0.99
#define COMPARE_DEFAULT_EUCLID 0.90

struct compare_result {
	int equal;             /* 1 if a[i] == b[i] for every i (never with NaN) */
	double cosine;         /* sum(ab) / (|a| |b|), in [-1, 1]; 1 if both are all
				  zero, 0 if exactly one is; NaN if any NaN */
	double euclid;         /* 1 - |a - b| / (|(a + b) / 2| + 1e-7), at most 1;
				  NaN if any NaN */
	double sqnr_db;        /* 10 log10(sum a^2 / sum (a - b)^2) in dB, A taken
				  as the signal; +inf when equal; NaN if any NaN */
	double max_abs_diff;   /* largest |a[i] - b[i]| (NaN elements skipped) */
	int64_t max_diff_at;   /* flat index of max_abs_diff, -1 if none */
	int64_t nan_a, nan_b;  /* NaN elements in A, in B */
	int64_t inf_a, inf_b;  /* infinite elements in A, in B */
};

/* Compare A and B, N floats each, into *R (sums in double precision).
 * Euclidean similarity follows TPU-MLIR's tensor_compare.py; SQNR is the
 * plain power ratio (TPU-MLIR subtracts the means first). */
void compare_f32(const float *a, const float *b, size_t n, struct compare_result *r);

/* 1 if R passes: no NaN, no infinity unless equal, cosine >= MIN_COS and
 * euclid >= MIN_EUC.  Otherwise 0, with the first reason ("NaN in A",
 * "cosine 0.981000 < 0.99", ...) in WHY[0..CAP-1]. */
int compare_check(const struct compare_result *r, double min_cos, double min_euc,
		  char *why, size_t cap);

#endif
