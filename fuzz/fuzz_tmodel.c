/* fuzz_tmodel.c - the .tmodel reader (tpu-sim), bundles of static shapes
 * included (lib/chip/bundle.h), then, for a small model, one simulated run
 * of its last stage on zero inputs. */
#include "chip/bundle.h"
#include "chip/chip.h"
#include "fuzz.h"
#include "sim/sim.h"
#include "chip/tmodel.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct bundle b;
	const char *path = fuzz_file(data, size);
	int rc = bundle_read(path, &b);
	fuzz_file_close();
	if (rc < 0)
		return 0;
	struct tmodel *m = b.stage[b.n - 1];
	const struct chip *c = chip_find(m->chip);
	struct npz in = { 0 }, out = { 0 };
	if (c && m->coeff_bytes + m->neuron_bytes <= FUZZ_RUN_BYTES &&
	    fuzz_zero_inputs(m->g, &in) == 0) {
		struct sim_stats st = { 0 };
		sim_run(m, c, "fuzz.tmodel", &in, "zero.npz", &out, &st, 0);
		sim_stats_free(&st);
	}
	npz_free(&in);
	npz_free(&out);
	bundle_free(&b);
	return 0;
}
