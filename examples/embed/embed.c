/* embed.c - run a .tmodel on the simulator through the tpuc library, as a
 * program that embeds it would: the model's inputs from an .npz, its
 * outputs to another, the cycles on stderr.  What it writes is what
 * tpu-sim writes, bit for bit.
 *
 *   cc embed.c $(pkg-config --cflags --libs tpuc) -o embed
 *   ./embed MODEL.tmodel INPUT.npz OUTPUT.npz
 */
#include <stdio.h>
#include <string.h>

#include <tpuc.h>

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: embed MODEL.tmodel INPUT.npz OUTPUT.npz\n");
		return 2;
	}
	int rc = 1;
	tpuc_npz *in = NULL, *out = NULL;
	tpuc_model *m = tpuc_open(argv[1]);
	if (!m || !(in = tpuc_npz_load(argv[2])))
		goto fail;

	/* Each input from the array of its name, in whatever dtype it has. */
	for (int i = 0; i < tpuc_num_inputs(m); i++) {
		const tpuc_tensor *t = tpuc_input(m, i);
		const void *data;
		const int64_t *shape;
		tpuc_dtype dt;
		int rank;
		size_t count;
		int k = tpuc_npz_index(in, t->name);
		if (k < 0 || tpuc_npz_get(in, k, NULL, &dt, &rank, &shape, &data, &count) < 0)
			goto fail;
		if (rank != t->rank || memcmp(shape, t->shape, sizeof *shape * (size_t)rank)) {
			fprintf(stderr, "embed: '%s': array '%s' has another shape than the input\n",
				argv[2], t->name);
			goto done;
		}
		if (tpuc_set_input(m, i, dt, data, count) < 0)
			goto fail;
	}
	if (tpuc_run(m) < 0)
		goto fail;

	/* The outputs as float32, each once, in the model's order. */
	out = tpuc_npz_new();
	for (int i = 0; i < tpuc_num_outputs(m); i++) {
		const tpuc_tensor *t = tpuc_output(m, i);
		if (tpuc_npz_index(out, t->name) >= 0)
			continue;
		if (tpuc_npz_add(out, t->name, TPUC_F32, t->rank, t->shape,
				 tpuc_output_data(m, i)) < 0)
			goto fail;
	}
	if (tpuc_npz_save(out, argv[3]) < 0)
		goto fail;
	fprintf(stderr, "embed: %s %s on %s: %lld cycles, %.3f ms\n", tpuc_model_name(m),
		tpuc_model_mode(m), tpuc_model_chip(m), (long long)tpuc_cycles(m),
		tpuc_seconds(m) * 1e3);
	rc = 0;
	goto done;
fail:
	fprintf(stderr, "embed: %s\n", tpuc_last_error());
done:
	tpuc_npz_free(in);
	tpuc_npz_free(out);
	tpuc_close(m);
	return rc;
}
