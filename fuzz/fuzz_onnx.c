/* fuzz_onnx.c - onnx2top's reader: import an ONNX model (constant folding
 * and shape inference included), then canonicalise it as top-opt does. */
#include "fuzz.h"
#include "front/onnx_import.h"
#include "passes/passes.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ir_graph *g;
	if (onnx_import(data, size, "fuzz.onnx", &g) < 0)
		return 0;
	if (fuzz_graph_bytes(g) <= FUZZ_RUN_BYTES)
		passes_run(g, NULL);
	graph_free(g);
	return 0;
}
