/* fuzz_ir.c - the IR reader every stage tool shares (ir_read, which checks
 * structure and re-infers every op), then, for a small graph, one run of
 * the reference interpreter (ir-run) on zero inputs: the interpreter
 * trusts what the reader checked, requantisation parameters included. */
#include <stdlib.h>

#include "fuzz.h"
#include "run/interp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ir_graph *g;
	const char *path = fuzz_file(data, size);
	if (ir_read(path, &g) < 0) {
		fuzz_file_close();
		return 0;
	}
	fuzz_file_close();
	struct npz in = { 0 };
	if (fuzz_zero_inputs(g, &in) == 0) {
		struct interp it;
		if (interp_init(&it, g, 1) == 0) {
			if (interp_set_inputs(&it, &in, "zero.npz") == 0)
				interp_run(&it, NULL, NULL);
			interp_free(&it);
		}
	}
	npz_free(&in);
	graph_free(g);
	return 0;
}
