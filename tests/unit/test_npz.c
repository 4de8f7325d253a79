/* test_npz - npz_write/npz_read round trips (every dtype, zero-size and
 * scalar arrays, names with '/' ':' '.'), determinism, errors, f16 decoding.
 * `test_npz --write OUT.npz [--compress]` writes the sample archive that
 * tests/npz-compare.bats reads back with numpy.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ir/base.h"
#include "ir/npz.h"

#include "check.h"

/* One array of every .npy dtype plus the awkward cases; the bats test
 * checks the same values with numpy. */
static void sample(struct npz *z)
{
	struct npz_array *a;
	memset(z, 0, sizeof *z);

	a = npz_add(z, "f32", DT_F32, 2, (int64_t[]){2, 3}, NULL);
	for (int i = 0; i < 6; i++)
		((float *)a->data)[i] = i * 0.5f - 1;
	a = npz_add(z, "f16", DT_F16, 1, (int64_t[]){3}, NULL);      /* 1, -2, 65504 */
	memcpy(a->data, (uint16_t[]){0x3c00, 0xc000, 0x7bff}, 6);
	a = npz_add(z, "i8", DT_I8, 1, (int64_t[]){4}, NULL);
	memcpy(a->data, (int8_t[]){-128, -1, 0, 127}, 4);
	a = npz_add(z, "u8", DT_U8, 1, (int64_t[]){3}, NULL);
	memcpy(a->data, (uint8_t[]){0, 128, 255}, 3);
	a = npz_add(z, "i16", DT_I16, 1, (int64_t[]){2}, NULL);
	memcpy(a->data, (int16_t[]){-32768, 32767}, 4);
	a = npz_add(z, "i32", DT_I32, 1, (int64_t[]){2}, NULL);
	memcpy(a->data, (int32_t[]){-2147483647 - 1, 7}, 8);
	a = npz_add(z, "i64", DT_I64, 1, (int64_t[]){2}, NULL);
	memcpy(a->data, (int64_t[]){INT64_MIN, 1234567890123LL}, 16);
	a = npz_add(z, "bool", DT_BOOL, 1, (int64_t[]){3}, NULL);
	memcpy(a->data, (uint8_t[]){1, 0, 1}, 3);
	a = npz_add(z, "scalar", DT_F32, 0, NULL, NULL);
	*(float *)a->data = 3.5f;
	npz_add(z, "empty", DT_F32, 2, (int64_t[]){0, 3}, NULL);
	a = npz_add(z, "/layer1/Conv_output_0:0.x", DT_I32, 3, (int64_t[]){1, 1, 2}, NULL);
	memcpy(a->data, (int32_t[]){5, 6}, 8);
}

static int same_array(const struct npz_array *x, const struct npz_array *y)
{
	return x && y && !strcmp(x->name, y->name) && x->dtype == y->dtype &&
	       x->rank == y->rank && x->nbytes == y->nbytes &&
	       !memcmp(x->shape, y->shape, (size_t)x->rank * sizeof x->shape[0]) &&
	       !memcmp(x->data, y->data, x->nbytes) && (uintptr_t)y->data % 64 == 0;
}

static void test_round_trip(const char *dir, int compress)
{
	char path[512];
	struct npz w, r;
	snprintf(path, sizeof path, "%s/rt%d.npz", dir, compress);
	sample(&w);
	CHECK(npz_write(path, &w, compress) == 0);
	CHECK(npz_read(path, &r) == 0);
	CHECK(r.n == w.n);
	for (int i = 0; i < w.n && i < r.n; i++)
		CHECK(same_array(&w.a[i], &r.a[i]));     /* same order too */
	CHECK(npz_find(&r, "/layer1/Conv_output_0:0.x") == &r.a[w.n - 1]);
	CHECK(npz_find(&r, "missing") == NULL);
	npz_free(&r);
	npz_free(&w);
	CHECK(r.n == 0 && r.a == NULL);
}

static void read_file(const char *path, void **buf, size_t *len)
{
	*buf = NULL;
	*len = 0;
	CHECK(file_read_all(path, buf, len) == 0);
}

static void test_deterministic(const char *dir)
{
	for (int compress = 0; compress < 2; compress++) {
		char p1[512], p2[512];
		void *b1, *b2;
		size_t n1, n2;
		struct npz w;
		snprintf(p1, sizeof p1, "%s/d1.npz", dir);
		snprintf(p2, sizeof p2, "%s/d2.npz", dir);
		sample(&w);
		CHECK(npz_write(p1, &w, compress) == 0);
		CHECK(npz_write(p2, &w, compress) == 0);
		npz_free(&w);
		read_file(p1, &b1, &n1);
		read_file(p2, &b2, &n2);
		CHECK(n1 == n2 && b1 && b2 && !memcmp(b1, b2, n1));
		/* First local header: DOS time 0, date 1980-01-01, no extra field
		 * (so no wall-clock timestamp hides there either). */
		const unsigned char *h = b1;
		CHECK(n1 > 30 && !memcmp(h, "PK\3\4", 4));
		CHECK(h[10] == 0 && h[11] == 0 && h[12] == 0x21 && h[13] == 0);
		CHECK(h[28] == 0 && h[29] == 0);
		CHECK(h[8] == (compress ? 8 : 0));     /* method: deflate or store */
		free(b1);
		free(b2);
	}
}

static void test_empty(const char *dir)
{
	char path[512];
	struct npz z = {0};
	void *buf;
	size_t len;
	snprintf(path, sizeof path, "%s/empty.npz", dir);
	CHECK(npz_write(path, &z, 0) == 0);
	read_file(path, &buf, &len);
	CHECK(len == 22 && !memcmp(buf, "PK\5\6", 4));
	free(buf);
	z.n = 99;
	CHECK(npz_read(path, &z) == 0 && z.n == 0);
	npz_free(&z);
}

static void test_errors(const char *dir)
{
	char path[512];
	struct npz z = {0};
	int64_t big[IR_MAX_RANK + 1] = {0};

	CHECK(npz_add(&z, "x", DT_F32, 1, (int64_t[]){2}, NULL) != NULL);
	CHECK(npz_add(&z, "x", DT_F32, 1, (int64_t[]){2}, NULL) == NULL);
	CHECK(npz_add(&z, "y", DT_F32, IR_MAX_RANK + 1, big, NULL) == NULL);
	CHECK(npz_add(&z, "y", DT_F32, 1, (int64_t[]){-1}, NULL) == NULL);
	CHECK(npz_add(&z, "b", DT_BF16, 1, (int64_t[]){2}, NULL) != NULL);
	snprintf(path, sizeof path, "%s/bf16.npz", dir);
	CHECK(npz_write(path, &z, 0) < 0);
	CHECK(strstr(err_msg(), "'b': bf16 has no .npy type") != NULL);
	CHECK(access(path, F_OK) != 0);
	npz_free(&z);

	snprintf(path, sizeof path, "%s/missing.npz", dir);
	CHECK(npz_read(path, &z) < 0 && z.n == 0);
	CHECK(strstr(err_msg(), "cannot open '") == err_msg());
	CHECK(strstr(err_msg(), "missing.npz': No such file or directory") != NULL);

	/* Cut an archive in half. */
	void *buf;
	size_t len;
	snprintf(path, sizeof path, "%s/cut.npz", dir);
	sample(&z);
	CHECK(npz_write(path, &z, 1) == 0);
	npz_free(&z);
	read_file(path, &buf, &len);
	CHECK(out_write_all(path, buf, len / 2) == 0);
	free(buf);
	CHECK(npz_read(path, &z) < 0 && z.n == 0);
	CHECK(strstr(err_msg(), "not a valid zip archive") != NULL);
}

static void test_to_f32(void)
{
	struct npz z = {0};
	struct npz_array *a = npz_add(&z, "h", DT_F16, 1, (int64_t[]){7}, NULL);
	memcpy(a->data, (uint16_t[]){0x3c00, 0xc000, 0x7bff, 0x0001, 0x7c00, 0x7e00, 0x8000}, 14);
	float *f = npz_to_f32(a);
	CHECK(f[0] == 1 && f[1] == -2 && f[2] == 65504);
	CHECK(f[3] == ldexpf(1, -24));
	CHECK(isinf(f[4]) && f[4] > 0 && isnan(f[5]));
	CHECK(f[6] == 0 && signbit(f[6]));
	free(f);

	a = npz_add(&z, "bf", DT_BF16, 1, (int64_t[]){2}, NULL);
	memcpy(a->data, (uint16_t[]){0x3f80, 0xc040}, 4);
	f = npz_to_f32(a);
	CHECK(f[0] == 1 && f[1] == -3);
	free(f);

	a = npz_add(&z, "i", DT_I8, 1, (int64_t[]){2}, NULL);
	memcpy(a->data, (int8_t[]){-128, 127}, 2);
	f = npz_to_f32(a);
	CHECK(f[0] == -128 && f[1] == 127);
	free(f);

	a = npz_add(&z, "e", DT_F32, 1, (int64_t[]){0}, NULL);
	CHECK(npz_numel(a) == 0);
	f = npz_to_f32(a);
	CHECK(f != NULL);
	free(f);
	npz_free(&z);
}

int main(int argc, char **argv)
{
	if (argc >= 3 && !strcmp(argv[1], "--write")) {
		struct npz z;
		sample(&z);
		int rc = npz_write(argv[2], &z, argc > 3 && !strcmp(argv[3], "--compress"));
		if (rc < 0)
			fprintf(stderr, "test_npz: %s\n", err_msg());
		npz_free(&z);
		return rc < 0;
	}

	char dir[] = "/tmp/test_npz.XXXXXX";
	if (!mkdtemp(dir)) {
		perror("test_npz: mkdtemp");
		return 1;
	}
	test_round_trip(dir, 0);
	test_round_trip(dir, 1);
	test_deterministic(dir);
	test_empty(dir);
	test_errors(dir);
	test_to_f32();

	char cmd[600];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "test_npz: cannot remove %s\n", dir);
	return check_report("test_npz");
}
