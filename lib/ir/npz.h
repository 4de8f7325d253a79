/* npz.h - read and write numpy .npz archives (zip files of .npy arrays), the
 * exchange format for inputs, calibration sets and reference outputs.
 *
 * Worked example, writing what np.load() reads back as {'x': [[1,2,3]]}:
 *
 *   struct npz z = {0};
 *   float v[3] = {1, 2, 3};
 *   npz_add(&z, "x", DT_F32, 2, (int64_t[]){1, 3}, v);
 *   if (npz_write("out.npz", &z, 0) < 0)
 *           fprintf(stderr, "prog: %s\n", err_msg());
 *   npz_free(&z);
 */
#ifndef TPUC_NPZ_H
#define TPUC_NPZ_H

#include <stddef.h>
#include <stdint.h>

#include "ir/ir.h"

struct npz_array {
	char *name;                    /* tensor name, member name without ".npy" */
	enum ir_dtype dtype;
	int rank;                      /* 0 for a scalar */
	int64_t shape[IR_MAX_RANK];    /* elements per dimension, row-major (C order) */
	void *data;                    /* 64-byte aligned, owned, never NULL */
	size_t nbytes;                 /* payload size in bytes */
};

struct npz_skipped {
	char *name;                    /* member name without ".npy" */
	char *why;                     /* why it was not read */
};

struct npz {
	int n, cap;                    /* arrays in use, arrays allocated */
	struct npz_array *a;           /* in archive order */
	int n_skipped, cap_skipped;    /* members npz_read left out */
	struct npz_skipped *skipped;
};

/* Read every member of the archive PATH ("-" is stdin) into *Z, in archive
 * order.  Accepts what numpy writes: stored or deflated members, zip64,
 * .npy versions 1.0, 2.0 and 3.0, and every numeric dtype numpy has, in
 * either byte order: f2 f4 i1 i2 i4 i8 u1 b1 as they are, f8 rounded to
 * f32 (as astype(np.float32)), u2 widened to i32, u4 and u8 to i64 (u8
 * saturating at 2^63-1); Fortran-order arrays are reordered to C order.
 * Members tpuc cannot use (complex, string, date, object and structured
 * dtypes) are skipped, not refused: they land in Z->skipped with the reason, and a
 * tool that looks for one says why (npz_missing).  Refused with a message
 * naming the file and the member: duplicate names, members that are not
 * .npy arrays, malformed headers, sizes that disagree with the header.  *Z
 * is overwritten; on error it is left empty and -1 is returned. */
int npz_read(const char *path, struct npz *z);

/* Write Z to PATH (NULL or "-" is stdout) atomically: the file appears
 * complete or not at all.  COMPRESS nonzero deflates members (as
 * np.savez_compressed), zero stores them (as np.savez).  The output is
 * deterministic: members carry a fixed date (1980-01-01 00:00), so equal
 * contents give byte-identical files.  An empty Z gives numpy's empty archive
 * (22 bytes).  bf16 arrays are refused: .npy has no bf16 type (convert with
 * npz_to_f32).  Returns 0, or -1 with a message. */
int npz_write(const char *path, const struct npz *z, int compress);

/* Free every array and reset *Z to empty (safe on an empty struct). */
void npz_free(struct npz *z);

/* The array called NAME, or NULL.  The pointer stays valid until the next
 * npz_add or npz_free on Z. */
struct npz_array *npz_find(const struct npz *z, const char *name);

/* Append an array NAME (copied) of type DT and shape SHAPE[0..RANK-1]; DATA
 * (row-major, numel * dtype size bytes) is copied, or NULL for zeros.
 * Returns the new array (valid until the next npz_add or npz_free), or NULL
 * with a message if NAME is already present, RANK is outside 0..IR_MAX_RANK
 * or a dimension is negative. */
struct npz_array *npz_add(struct npz *z, const char *name, enum ir_dtype dt,
			  int rank, const int64_t *shape, const void *data);

/* The message for an array NAME that Z (read from FILE) lacks, which a
 * tool wanted as WHAT ("graph input"): the reason npz_read skipped it, or
 * the names Z holds.  Returns -1. */
int npz_missing(const struct npz *z, const char *file, const char *name, const char *what);

/* Number of elements of A (1 for a scalar, 0 if any dimension is 0). */
int64_t npz_numel(const struct npz_array *a);

/* A's elements converted to float32 (f16 and bf16 exactly, integers and
 * bools by value, i32/i64 rounded to nearest).  Returns a malloc'd array of
 * npz_numel(A) floats (never NULL, even when empty) that the caller frees. */
float *npz_to_f32(const struct npz_array *a);

#endif
