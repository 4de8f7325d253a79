/* fuzz_calib.c - the calibration table reader (top2tpu --calib), and the
 * statistics file of calibrate --collect / --merge (the first byte picks). */
#include "calib/calib.h"
#include "quant/calib_table.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	const char *path = fuzz_file(data + 1, size - 1);
	if (data[0] & 1) {
		struct calib_stats *st;
		if (calib_stats_read(path, &st) == 0) {
			calib_stats_write("/dev/null", st);
			calib_stats_free(st);
		}
	} else {
		struct calib_table *t;
		if (calib_table_read(path, &t) == 0) {
			calib_table_write("/dev/null", t, NULL);
			calib_table_free(t);
		}
	}
	fuzz_file_close();
	return 0;
}
