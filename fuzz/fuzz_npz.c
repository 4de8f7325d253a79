/* fuzz_npz.c - the npz reader (ir-run, tpu-sim, calibrate, npz-compare):
 * read an archive, convert every array to f32, write it back. */
#include <stdlib.h>

#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct npz z = { 0 };
	const char *path = fuzz_file(data, size);
	int rc = npz_read(path, &z);
	fuzz_file_close();
	if (rc < 0)
		return 0;
	for (int i = 0; i < z.n; i++)
		free(npz_to_f32(&z.a[i]));
	npz_write("/dev/null", &z, 0);
	npz_free(&z);
	return 0;
}
