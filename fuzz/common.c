/* common.c - the harnesses' in-memory files and zero inputs (fuzz.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"
#include "ir/limit.h"

static int fd = -1;
static char name[64];

const char *fuzz_file(const uint8_t *data, size_t size)
{
	fuzz_file_close();
	fd = memfd_create("fuzz", 0);
	if (fd < 0) {
		perror("fuzz: memfd_create");
		abort();
	}
	for (size_t done = 0; done < size;) {
		ssize_t w = write(fd, data + done, size - done);
		if (w <= 0) {
			perror("fuzz: write");
			abort();
		}
		done += (size_t)w;
	}
	lseek(fd, 0, SEEK_SET);
	snprintf(name, sizeof name, "/proc/self/fd/%d", fd);
	return name;
}

void fuzz_file_close(void)
{
	if (fd >= 0)
		close(fd);
	fd = -1;
}

int64_t fuzz_graph_bytes(const struct ir_graph *g)
{
	int64_t sum = 0;
	for (int i = 0; i < g->n_tensors; i++) {
		size_t b = tensor_bytes(&g->tensors[i]);
		if (b > (size_t)INT64_MAX - (size_t)sum)
			return INT64_MAX;
		sum += (int64_t)b;
	}
	return sum;
}

int fuzz_zero_inputs(const struct ir_graph *g, struct npz *z)
{
	if (fuzz_graph_bytes(g) > FUZZ_RUN_BYTES)
		return -1;
	for (int i = 0; i < g->n_inputs; i++) {
		const struct ir_tensor *t = &g->tensors[g->inputs[i]];
		void *zero = calloc(1, tensor_bytes(t) + 1);
		if (!zero)
			abort();
		npz_add(z, t->name, t->dtype, t->rank, t->shape, zero);
		free(zero);
	}
	return 0;
}

/* A model may claim far less memory here than a tool allows by default,
 * so that a size check that is missing shows as an allocation over
 * libFuzzer's -malloc_limit_mb instead of passing. */
__attribute__((constructor)) static void fuzz_limits(void)
{
	limit_set_max_memory((int64_t)256 << 20);
}
