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

#include "back/lower_dtype.h"
#include "ir/base.h"
#include "ir/convert.h"
#include "tool/cli.h"
#include "tool/heap.h"
#include "run/interp.h"
#include "ir/ir.h"
#include "ir/npz.h"
#include "ir/op.h"
#include "run/frames.h"

static const char prog[] = "ir-run";
static const char usage[] =
	"usage: ir-run IN -i INPUT.npz [-o OUT.npz] [--dump-all] [--threads N] [--repeat N]\n"
	"       [--bench N] [--profile] [-v] [--max-memory SIZE] [--round bf16|f16]\n"
	"       ir-run IN -i FRAMES.npz --frames N [--state OUT=IN[,OUT=IN...]] [-o OUT.npz]\n"
	"       [--record-inputs SAMPLES.npz] [--dump-all] [--threads N] [-v] [--max-memory SIZE]\n";

/* --round T: the f32 inputs of Z and the f32 weights of G that a float
 * mode stores in T rounded to T, the rest of the run in f32: the error of
 * a float mode's weights and inputs alone, none of its stored activations
 * (ir-run(1), "Stable at a precision").  Those weights are the ones of
 * rank 2 and more (a Conv's, Gemm's or MatMul's, a Gather's table) that no
 * op keeping its constants in f32 reads (lower_f32_constants: biases,
 * scales, a LayerNormalization's Scale; a scalar or a bias of rank 1 is
 * kept anyway). */
static void round_to(struct ir_graph *g, struct npz *z, enum ir_dtype t)
{
	for (int i = 0; i < z->n; i++)
		if (z->a[i].dtype == DT_F32)
			dtype_round(z->a[i].data, (int64_t)(z->a[i].nbytes / sizeof(float)), t);
	char *keep = xcalloc((size_t)g->n_tensors + 1, 1);
	for (int o = 0; o < g->n_ops; o++)
		if (lower_f32_constants(g->ops[o].type))
			for (int j = 0; j < g->ops[o].n_in; j++)
				if (g->ops[o].in[j] >= 0)
					keep[g->ops[o].in[j]] = 1;
	for (int i = 0; i < g->n_tensors; i++) {
		struct ir_tensor *w = &g->tensors[i];
		if (!w->data || w->dtype != DT_F32 || w->rank < 2 || keep[i])
			continue;
		if (!w->owns_data)
			tensor_set_data(w, w->data, w->nbytes);
		dtype_round(w->data, (int64_t)(w->nbytes / sizeof(float)), t);
	}
	free(keep);
}

/* The value of option OPT, S, as a whole number from MIN to 4096; -1 after
 * a message on stderr when it is not one. */
static int parse_count(const char *opt, const char *s, int min)
{
	char *end;
	long v = strtol(s, &end, 10);
	if (end == s || *end || v < min || v > 4096) {
		fprintf(stderr, "%s: bad %s '%s': expected a whole number from %d to 4096\n",
			prog, opt, s, min);
		return -1;
	}
	return (int)v;
}

/* Graph outputs, or with dump_all every graph input and op output in graph
 * order (weights excluded). */
static int collect(struct npz *z, const struct interp *it, int dump_all)
{
	const struct ir_graph *g = it->g;
	if (!dump_all) {
		for (int i = 0; i < g->n_outputs; i++)
			if (interp_add_npz(z, it, g->outputs[i]) < 0)
				return -1;
		return 0;
	}
	for (int i = 0; i < g->n_inputs; i++)
		if (interp_add_npz(z, it, g->inputs[i]) < 0)
			return -1;
	for (int i = 0; i < g->n_ops; i++)
		for (int j = 0; j < g->ops[i].n_out; j++)
			if (g->ops[i].out[j] >= 0 && !g->tensors[g->ops[i].out[j]].data &&
			    interp_add_npz(z, it, g->ops[i].out[j]) < 0)
				return -1;
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* --profile: time per op type per run (it->op_ms summed over RUNS runs),
 * most expensive first, on stderr. */
static void print_profile(const struct interp *it, int runs)
{
	const struct ir_graph *g = it->g;
	double ms[OP_COUNT] = { 0 }, total = 0;
	int count[OP_COUNT] = { 0 }, order[OP_COUNT];
	for (int i = 0; i < g->n_ops; i++) {
		ms[g->ops[i].type] += it->op_ms[i] / runs;
		count[g->ops[i].type]++;
		total += it->op_ms[i] / runs;
	}
	for (int i = 0; i < OP_COUNT; i++)
		order[i] = i;
	for (int i = 1; i < OP_COUNT; i++)   /* insertion sort by time */
		for (int j = i; j > 0 && ms[order[j]] > ms[order[j - 1]]; j--) {
			int t = order[j];
			order[j] = order[j - 1];
			order[j - 1] = t;
		}
	fprintf(stderr, "%s: profile per run (%d run%s): %.3f ms in ops\n", prog, runs,
		runs == 1 ? "" : "s", total);
	for (int i = 0; i < OP_COUNT; i++)
		if (count[order[i]])
			fprintf(stderr, "  %-24s %5d ops %10.3f ms %6.1f%%\n", op_name(order[i]),
				count[order[i]], ms[order[i]],
				total > 0 ? 100 * ms[order[i]] / total : 0.0);
}

/* --bench: BENCH_WARMUP untimed runs, then n timed ones; the profile of the
 * timed ones (if asked for), a summary and, as the last line on stderr,
 * median_ms=X. */
#define BENCH_WARMUP 3
static int run_bench(struct interp *it, int n, int threads)
{
	double *t = xmalloc((size_t)n * sizeof *t);
	for (int r = 0; r < BENCH_WARMUP; r++)
		if (interp_run(it, NULL, NULL) < 0)
			goto fail;
	if (it->op_ms)
		memset(it->op_ms, 0, sizeof *it->op_ms * (size_t)it->g->n_ops);
	for (int r = 0; r < n; r++) {
		double t0 = now_seconds();
		if (interp_run(it, NULL, NULL) < 0)
			goto fail;
		t[r] = (now_seconds() - t0) * 1e3;
	}
	if (it->op_ms)
		print_profile(it, n);
	qsort(t, (size_t)n, sizeof *t, cmp_double);
	double med = n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
	fprintf(stderr, "%s: bench: %d runs after %d warm-up, %d thread%s: "
		"min %.3f ms, median %.3f ms, max %.3f ms\n", prog, n, BENCH_WARMUP,
		threads, threads == 1 ? "" : "s", t[0], med, t[n - 1]);
	fprintf(stderr, "median_ms=%.3f\n", med);
	free(t);
	return 0;
fail:
	free(t);
	return -1;
}

int main(int argc, char **argv)
{
	int std_rc = cli_help_version(prog, usage, argc, argv);
	if (std_rc >= 0)
		return std_rc;
	heap_keep();
	static const struct option longopts[] = {
		{ "input", required_argument, NULL, 'i' },
		{ "output", required_argument, NULL, 'o' },
		{ "dump-all", no_argument, NULL, 'd' },
		{ "threads", required_argument, NULL, 't' },
		{ "repeat", required_argument, NULL, 'r' },
		{ "bench", required_argument, NULL, 'b' },
		{ "profile", no_argument, NULL, 'p' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "max-memory", required_argument, NULL, 'M' },
		{ "frames", required_argument, NULL, 'F' },
		{ "state", required_argument, NULL, 'S' },
		{ "record-inputs", required_argument, NULL, 'R' },
		{ "round", required_argument, NULL, 'u' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	const char *in_npz = NULL, *out = NULL, *record = NULL;
	int dump_all = 0, threads = 1, repeat = 1, bench = 0, profile = 0, verbose = 0, c;
	struct frames fr = { 0 };
	enum ir_dtype round = DT_F32;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":i:o:vh", longopts, NULL)) != -1) {
		switch (c) {
		case 'i': in_npz = optarg; break;
		case 'o': out = optarg; break;
		case 'd': dump_all = 1; break;
		case 't':
			if ((threads = parse_count("--threads", optarg, 0)) < 0)
				return 2;
			break;
		case 'r':
			if ((repeat = parse_count("--repeat", optarg, 1)) < 0)
				return 2;
			break;
		case 'b':
			if ((bench = parse_count("--bench", optarg, 1)) < 0)
				return 2;
			break;
		case 'p': profile = 1; break;
		case 'v': verbose = 1; break;
		case 'M':
			if (cli_max_memory("ir-run", usage, optarg))
				return 2;
			break;
		case 'F': {
			char *end;
			long long v = strtoll(optarg, &end, 10);
			if (*optarg < '0' || *optarg > '9' || *end || v < 1 || v > (1LL << 30)) {
				frames_free(&fr);
				return cli_usage_error(prog, usage, "--frames: expected a whole number from 1");
			}
			fr.n = v;
			break;
		}
		case 'S':
			if (frames_parse_state(&fr, optarg) < 0) {
				frames_free(&fr);
				fprintf(stderr, "%s: %s\n%s", prog, err_msg(), usage);
				return 2;
			}
			break;
		case 'R': record = optarg; break;
		case 'u':
			if (strcmp(optarg, "bf16") && strcmp(optarg, "f16")) {
				frames_free(&fr);
				return cli_usage_error(prog, usage, "--round: bf16 or f16, not '%s'",
						       optarg);
			}
			round = !strcmp(optarg, "bf16") ? DT_BF16 : DT_F16;
			break;
		case 'h': fputs(usage, stdout); return 0;
		case ':': return cli_missing_value(prog, usage, argv);
		default: return cli_bad_option(prog, usage, argv, "");
		}
	}
	if (argc - optind != 1)
		return cli_operands(prog, usage, 1, argc - optind);
	const char *in = argv[optind];
	if (!in_npz)
		return cli_usage_error(prog, usage, "no input .npz given (-i)");
	if (!strcmp(in, "-") && !strcmp(in_npz, "-"))
		return cli_usage_error(prog, usage,
				       "the IR and the inputs cannot both come from stdin");
	if ((fr.n_state || record) && !fr.n) {
		const char *what = fr.n_state ? "--state needs --frames" : "--record-inputs needs --frames";
		frames_free(&fr);
		return cli_usage_error(prog, usage, what);
	}
	if (record && !strcmp(record, "-")) {
		frames_free(&fr);
		return cli_usage_error(prog, usage, "--record-inputs: give a file, not '-'");
	}
	if (fr.n && (repeat > 1 || bench || profile)) {
		frames_free(&fr);
		return cli_usage_error(prog, usage, "--frames runs once: no --repeat, --bench or --profile");
	}
	if (cli_check_stdout(prog, usage, out, "an .npz")) {
		frames_free(&fr);
		return 2;
	}
	if (threads == 0)
		threads = omp_get_num_procs();

	struct ir_graph *g = NULL;
	struct npz zin = { 0 }, zout = { 0 }, zframes = { 0 }, zrec = { 0 };
	struct interp it = { 0 };
	int rc = 1;
	if (ir_read(in, &g) < 0 || npz_read(in_npz, &zin) < 0)
		goto fail;
	if (round != DT_F32)
		round_to(g, &zin, round);
	if (interp_init(&it, g, threads) < 0)
		goto fail_graph;
	it.keep_all = dump_all;   /* every activation stays readable */
	if (profile)
		it.op_ms = xcalloc((size_t)(g->n_ops ? g->n_ops : 1), sizeof *it.op_ms);
	if (fr.n) {
		/* frame by frame, state fed back (lib/run/frames.h) */
		struct npz frame = { 0 }, fout = { 0 }, fin = { 0 };
		int frc = frames_check(&fr, g, cli_shown(in));
		double t0 = now_seconds();
		for (int64_t f = 0; f < fr.n && frc == 0; f++) {
			npz_free(&fout);
			if ((frc = frames_input(&fr, g, &zin, cli_shown(in_npz), f, &zout, &frame)) < 0 ||
			    (frc = interp_set_inputs(&it, &frame, cli_shown(in_npz))) < 0)
				break;
			/* the inputs as the frame runs on them, state included */
			npz_free(&fin);
			for (int i = 0; record && i < g->n_inputs && frc == 0; i++)
				frc = interp_add_npz(&fin, &it, g->inputs[i]);
			if (record && (frc < 0 || (frc = frames_collect(&fr, &zrec, &fin, f)) < 0))
				break;
			if ((frc = interp_run(&it, NULL, NULL)) < 0) {
				err_prefix("'%s': frame %lld", cli_shown(in), (long long)f);
				break;
			}
			if ((frc = collect(&fout, &it, dump_all)) < 0)
				break;
			/* zout holds the previous frame's outputs until stacked */
			npz_free(&zout);
			for (int i = 0; i < fout.n; i++)
				npz_add(&zout, fout.a[i].name, fout.a[i].dtype, fout.a[i].rank,
					fout.a[i].shape, fout.a[i].data);
			if ((frc = frames_collect(&fr, &zframes, &fout, f)) < 0)
				break;
		}
		if (verbose && frc == 0)
			fprintf(stderr, "%s: %lld frames, %.3f ms per frame\n", prog, (long long)fr.n,
				(now_seconds() - t0) * 1e3 / (double)fr.n);
		npz_free(&frame);
		npz_free(&fout);
		npz_free(&fin);
		if (frc < 0 || (record && npz_write(record, &zrec, 0) < 0))
			goto fail;
		if (npz_write(out, &zframes, 0) < 0) {
			if (record)
				unlink(record);
			goto fail;
		}
		rc = 0;
		goto done;
	}
	if (interp_set_inputs(&it, &zin, cli_shown(in_npz)) < 0)
		goto fail;
	double best = 1e30, total = 0;
	for (int r = 0; r < repeat; r++) {
		double t0 = now_seconds();
		if (interp_run(&it, NULL, NULL) < 0)
			goto fail_graph;
		double dt = now_seconds() - t0;
		total += dt;
		best = dt < best ? dt : best;
	}
	if (verbose)
		fprintf(stderr, "%s: %d ops, %d thread%s: %.3f ms per run (best of %d %.3f ms)\n",
			prog, g->n_ops, threads, threads == 1 ? "" : "s", total * 1e3 / repeat,
			repeat, best * 1e3);
	if (profile && !bench)
		print_profile(&it, repeat);
	if (bench && run_bench(&it, bench, threads) < 0)
		goto fail_graph;
	if (collect(&zout, &it, dump_all) < 0 || npz_write(out, &zout, 0) < 0)
		goto fail;
	rc = 0;
	goto done;
fail_graph:
	/* An op's error, or the interpreter's: the IR file is at fault. */
	err_prefix("'%s'", cli_shown(in));
fail:
	cli_fail(prog);
done:
	free(it.op_ms);
	if (g)
		interp_free(&it);
	npz_free(&zin);
	npz_free(&zout);
	npz_free(&zframes);
	npz_free(&zrec);
	frames_free(&fr);
	graph_free(g);
	return rc;
}
