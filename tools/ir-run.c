/* ir-run - run a Top or Tpu IR file of any stage on the inputs of an .npz
 * with the reference interpreter and write its outputs (or, with
 * --dump-all, every activation) as float32 to an .npz.
 */
#include <getopt.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base.h"
#include "interp.h"
#include "ir.h"
#include "npz.h"

static const char *prog = "ir-run";
static const char *usage_line =
	"usage: %s IN -i INPUT.npz [-o OUT.npz] [--dump-all] [--threads N] [--repeat N] [-v]\n";

static void usage(void)
{
	fprintf(stderr, usage_line, prog);
	exit(2);
}

static int parse_count(const char *opt, const char *s, int min)
{
	char *end;
	long v = strtol(s, &end, 10);
	if (end == s || *end || v < min || v > 4096) {
		fprintf(stderr, "%s: bad %s '%s': expected a whole number from %d to 4096\n",
			prog, opt, s, min);
		exit(2);
	}
	return (int)v;
}

/* Add tensor t as float32 to z unless an array of its name is there. */
static int add_tensor(struct npz *z, const struct interp *it, int t)
{
	const struct ir_tensor *ten = &it->g->tensors[t];
	if (npz_find(z, ten->name))
		return 0;
	float *v = interp_get_f32(it, t);
	struct npz_array *a = npz_add(z, ten->name, DT_F32, ten->rank, ten->shape, v);
	free(v);
	return a ? 0 : -1;
}

/* Graph outputs, or with dump_all every graph input and op output in graph
 * order (weights excluded). */
static int collect(struct npz *z, const struct interp *it, int dump_all)
{
	const struct ir_graph *g = it->g;
	if (!dump_all) {
		for (int i = 0; i < g->n_outputs; i++)
			if (add_tensor(z, it, g->outputs[i]) < 0)
				return -1;
		return 0;
	}
	for (int i = 0; i < g->n_inputs; i++)
		if (add_tensor(z, it, g->inputs[i]) < 0)
			return -1;
	for (int i = 0; i < g->n_ops; i++)
		for (int j = 0; j < g->ops[i].n_out; j++)
			if (g->ops[i].out[j] >= 0 && !g->tensors[g->ops[i].out[j]].data &&
			    add_tensor(z, it, g->ops[i].out[j]) < 0)
				return -1;
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "input", required_argument, NULL, 'i' },
		{ "output", required_argument, NULL, 'o' },
		{ "dump-all", no_argument, NULL, 'd' },
		{ "threads", required_argument, NULL, 't' },
		{ "repeat", required_argument, NULL, 'r' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	const char *in_npz = NULL, *out = NULL;
	int dump_all = 0, threads = 1, repeat = 1, verbose = 0, c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":i:o:vh", longopts, NULL)) != -1) {
		switch (c) {
		case 'i': in_npz = optarg; break;
		case 'o': out = optarg; break;
		case 'd': dump_all = 1; break;
		case 't': threads = parse_count("--threads", optarg, 0); break;
		case 'r': repeat = parse_count("--repeat", optarg, 1); break;
		case 'v': verbose = 1; break;
		case 'h':
			printf(usage_line, prog);
			return 0;
		case ':':
			fprintf(stderr, "%s: option '%s' needs a value\n", prog, argv[optind - 1]);
			usage();
			break;
		default:
			if (optopt)
				fprintf(stderr, "%s: unknown option '-%c'\n", prog, optopt);
			else
				fprintf(stderr, "%s: unknown option '%s'\n", prog, argv[optind - 1]);
			usage();
		}
	}
	if (argc - optind != 1)
		usage();
	const char *in = argv[optind];
	if (!in_npz) {
		fprintf(stderr, "%s: no input .npz given (-i)\n", prog);
		usage();
	}
	if (!strcmp(in, "-") && !strcmp(in_npz, "-")) {
		fprintf(stderr, "%s: the IR and the inputs cannot both come from stdin\n", prog);
		usage();
	}
	if ((!out || !strcmp(out, "-")) && isatty(STDOUT_FILENO)) {
		fprintf(stderr, "%s: will not write an .npz to a terminal (use -o FILE)\n", prog);
		usage();
	}
	if (threads == 0)
		threads = omp_get_num_procs();

	struct ir_graph *g = NULL;
	struct npz zin = { 0 }, zout = { 0 };
	struct interp it = { 0 };
	int rc = 1;
	if (ir_read(in, &g) < 0 || npz_read(in_npz, &zin) < 0 ||
	    interp_init(&it, g, threads) < 0 ||
	    interp_set_inputs(&it, &zin, !strcmp(in_npz, "-") ? "<stdin>" : in_npz) < 0)
		goto fail;
	double best = 1e30, total = 0;
	for (int r = 0; r < repeat; r++) {
		double t0 = now_seconds();
		if (interp_run(&it, NULL, NULL) < 0)
			goto fail;
		double dt = now_seconds() - t0;
		total += dt;
		best = dt < best ? dt : best;
	}
	if (verbose)
		fprintf(stderr, "%s: %d ops, %d thread%s: %.3f ms per run (best of %d %.3f ms)\n",
			prog, g->n_ops, threads, threads == 1 ? "" : "s", total * 1e3 / repeat,
			repeat, best * 1e3);
	if (collect(&zout, &it, dump_all) < 0 || npz_write(out, &zout, 0) < 0)
		goto fail;
	rc = 0;
	goto done;
fail:
	fprintf(stderr, "%s: %s\n", prog, err_msg());
done:
	if (g)
		interp_free(&it);
	npz_free(&zin);
	npz_free(&zout);
	graph_free(g);
	return rc;
}
