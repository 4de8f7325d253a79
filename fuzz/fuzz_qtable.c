/* fuzz_qtable.c - the qtable reader (top2tpu --qtable). */
#include "fuzz.h"
#include "back/lower.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct qtable *q;
	const char *path = fuzz_file(data, size);
	if (qtable_read(path, &q) == 0) {
		qtable_write("/dev/null", q, "fuzz");
		qtable_free(q);
	}
	fuzz_file_close();
	return 0;
}
