/* tpu-sim - run a .tmodel on the simulated chip: outputs bit-exact with
 * ir-run, cycles by the cost model (formats/tpuc-isa.5).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "back/addr.h"
#include "ir/base.h"
#include "chip/chip.h"
#include "tool/cli.h"
#include "tool/heap.h"
#include "ir/npz.h"
#include "ir/op.h"
#include "sim/sim.h"
#include "run/frames.h"
#include "chip/bundle.h"
#include "chip/tmodel.h"

static const char usage[] =
	"usage: tpu-sim MODEL.tmodel -i INPUT.npz [-o OUT.npz] [--dump-all] [-p] [-q]\n"
	"               [--trace FILE.json] [--stage K] [--max-memory SIZE]\n"
	"       tpu-sim MODEL.tmodel -i FRAMES.npz --frames N [--state OUT=IN[,OUT=IN...]]\n"
	"               [-o OUT.npz] [-p] [-q] [--stage K] [--max-memory SIZE]\n"
	"       tpu-sim MODEL.tmodel -t [-p] [-q] [--trace FILE.json] [--stage K]\n";

static void report(const struct tmodel *m, const struct chip *c, const struct sim_stats *st)
{
	char moved[32], least[32];
	addr_fmt_size(moved, sizeof moved, st->ddr_bytes);
	addr_fmt_size(least, sizeof least, st->min_ddr_bytes);
	int64_t mem = ceil_div(st->min_ddr_bytes, c->ddr_bpc);
	fprintf(stderr, "tpu-sim: %s %s: %lld cycles, %.3f ms at %.3g GHz\n", c->name, mode_name(m->mode),
		(long long)st->cycles, st->seconds * 1e3, c->clock_hz / 1e9);
	fprintf(stderr, "tpu-sim: engines busy: dma %lld cycles, compute %lld cycles\n",
		(long long)st->dma_busy, (long long)st->cmp_busy);
	fprintf(stderr, "tpu-sim: DDR %s moved (minimum %s), %.4g GMAC, MAC utilisation %.2f%%\n",
		moved, least, (double)st->macs / 1e9, 100 * st->mac_util);
	fprintf(stderr, "tpu-sim: roofline bound %lld cycles (%s), efficiency %.2f%%\n",
		(long long)st->bound, mem >= ceil_div(st->macs, st->peak_macs) ? "memory" : "compute",
		100 * st->efficiency);
	if (st->n_host)
		fprintf(stderr, "tpu-sim: host: %d commands, %.3f ms on this machine (not in the "
			"cycles)\n", st->n_host, st->host_ms);
}

static void profile(const struct tmodel *m, const struct sim_stats *st)
{
	fprintf(stderr, "%-6s %-18s %6s %10s %10s %10s %10s %12s %10s %7s  %s\n", "layer", "type",
		"slices", "cycles", "start", "end", "dma", "macs", "bound", "eff", "name");
	for (int i = 0; i < st->n_layers; i++) {
		const struct ir_op *op = &m->g->ops[i];
		const struct sim_layer *l = &st->layer[i];
		fprintf(stderr, "%-6d %-18s %6d %10lld %10lld %10lld %10lld %12lld %10lld %6.2f%%  %s\n",
			i, op_name(op->type), l->slices, (long long)l->cycles, (long long)l->start,
			(long long)l->end, (long long)l->dma_cycles, (long long)l->macs,
			(long long)l->bound, 100 * l->efficiency, op->name);
	}
}

int main(int argc, char **argv)
{
	int std_rc = cli_help_version("tpu-sim", usage, argc, argv);
	if (std_rc >= 0)
		return std_rc;
	heap_keep();
	const char *in = NULL, *out = NULL, *trace = NULL;
	int prof = 0, quiet = 0, timed = 0, dump = 0, pick = -1, c;
	struct frames fr = { 0 };
	opterr = 0;
	static const struct option longopts[] = {
		{ "dump-all", no_argument, NULL, 'D' },
		{ "max-memory", required_argument, NULL, 'M' },
		{ "frames", required_argument, NULL, 'F' },
		{ "state", required_argument, NULL, 'S' },
		{ "trace", required_argument, NULL, 'T' },
		{ "stage", required_argument, NULL, 'K' },
		{ 0, 0, 0, 0 },
	};
	while ((c = getopt_long(argc, argv, "hi:o:pqt", longopts, NULL)) != -1) {
		switch (c) {
		case 'M':
			if (cli_max_memory("tpu-sim", usage, optarg))
				return 2;
			break;
		case 'F': {
			char *end;
			long long v = strtoll(optarg, &end, 10);
			if (*optarg < '0' || *optarg > '9' || *end || v < 1 || v > (1LL << 30)) {
				frames_free(&fr);
				return cli_usage_error("tpu-sim", usage, "--frames: expected a whole number from 1");
			}
			fr.n = v;
			break;
		}
		case 'S':
			if (frames_parse_state(&fr, optarg) < 0) {
				frames_free(&fr);
				fprintf(stderr, "tpu-sim: %s\n%s", err_msg(), usage);
				return 2;
			}
			break;
		case 'h': fputs(usage, stdout); return 0;
		case 'i': in = optarg; break;
		case 'o': out = optarg; break;
		case 'p': prof = 1; break;
		case 'q': quiet = 1; break;
		case 't': timed = 1; break;
		case 'D': dump = 1; break;
		case 'K': {
			char *end;
			long v = strtol(optarg, &end, 10);
			if (*optarg < '0' || *optarg > '9' || *end || v > 65535) {
				frames_free(&fr);
				return cli_usage_error("tpu-sim", usage, "--stage: expected a stage number from 0");
			}
			pick = (int)v;
			break;
		}
		case 'T': trace = optarg; break;
		default: return cli_bad_option("tpu-sim", usage, argv, "io");
		}
	}
	if (fr.n_state && !fr.n) {
		frames_free(&fr);
		return cli_usage_error("tpu-sim", usage, "--state needs --frames");
	}
	if (fr.n && (timed || dump || trace)) {
		frames_free(&fr);
		return cli_usage_error("tpu-sim", usage,
				       "--frames runs on data: no -t, --dump-all or --trace");
	}
	if (argc - optind != 1) {
		frames_free(&fr);
		return cli_operands("tpu-sim", usage, 1, argc - optind);
	}
	if (timed && (in || out || dump))
		return cli_usage_error("tpu-sim", usage, "-t runs without data: no -i, -o or --dump-all");
	if (!in && !timed)
		return cli_usage_error("tpu-sim", usage, "no input .npz given (-i)");
	const char *path = argv[optind];
	if (in && !strcmp(path, "-") && !strcmp(in, "-"))
		return cli_usage_error("tpu-sim", usage,
				       "the model and the inputs cannot both come from stdin");
	/* Outputs go to -o FILE or, as with ir-run, to standard output. */
	if (!timed && cli_check_stdout("tpu-sim", usage, out, "an .npz"))
		return 2;
	if (trace && (!strcmp(trace, "-") || (out && !strcmp(trace, out))))
		return cli_usage_error("tpu-sim", usage,
				       "the trace needs a file of its own (--trace FILE.json)");
	const char *shown = cli_shown(path);

	struct bundle b = { 0 };
	struct tmodel *m = NULL;
	struct npz inputs = { 0 }, outputs = { 0 };
	struct sim_stats st = { 0 };
	const struct chip *chip = NULL;
	struct out_file tf = { 0 };
	/* The trace file is opened first, so a bad path fails before the run. */
	int rc = trace ? out_open(&tf, trace) : 0;
	if (!rc)
		rc = bundle_read(path, &b);
	if (!rc && pick >= b.n)
		rc = err_set("'%s': --stage %d: the model holds %d stage%s", shown, pick, b.n,
			     b.n == 1 ? "" : "s");
	/* several static shapes: the stage --stage names, else the one the
	 * inputs fit (each frame's, with --frames), else the first */
	int stage = pick >= 0 ? pick : 0;
	if (!rc && !(chip = chip_find(b.stage[0]->chip)))
		rc = err_set("'%s': unknown chip '%s'", shown, b.stage[0]->chip);
	if (!rc && in)
		rc = npz_read(in, &inputs);
	if (!rc && in && !fr.n && pick < 0 && (stage = bundle_pick(&b, &inputs, shown)) < 0)
		rc = -1;
	if (!rc)
		m = b.stage[stage];
	int64_t frame_cycles = 0;
	if (!rc && fr.n) {
		/* frame by frame, state fed back (lib/run/frames.h) */
		struct npz frame = { 0 }, fout = { 0 }, all = { 0 };
		for (int k = 0; k < b.n && !rc; k++)
			rc = frames_check(&fr, b.stage[k]->g, shown);
		for (int64_t f = 0; f < fr.n && !rc; f++) {
			sim_stats_free(&st);
			npz_free(&fout);
			rc = frames_input(&fr, m->g, &inputs, cli_shown(in), f, &outputs, &frame);
			if (!rc && pick < 0 && b.n > 1) {
				/* the graph inputs of every stage have the same names */
				if ((stage = bundle_pick(&b, &frame, shown)) < 0)
					rc = err_prefix("frame %lld", (long long)f);
				else
					m = b.stage[stage];
			}
			if (!rc && (rc = sim_run(m, chip, shown, &frame, in, &fout, &st, 0)) < 0)
				err_prefix("frame %lld", (long long)f);
			if (rc)
				break;
			frame_cycles += st.cycles;
			npz_free(&outputs);
			for (int i = 0; i < fout.n; i++)
				npz_add(&outputs, fout.a[i].name, fout.a[i].dtype, fout.a[i].rank,
					fout.a[i].shape, fout.a[i].data);
			rc = frames_collect(&fr, &all, &fout, f);
		}
		if (!rc)
			rc = npz_write(out, &all, 0);
		npz_free(&frame);
		npz_free(&fout);
		npz_free(&all);
	} else if (!rc) {
		rc = sim_run(m, chip, shown, &inputs, in, &outputs, &st,
			     (timed ? SIM_TIMED_ONLY : 0) | (dump ? SIM_DUMP_ALL : 0) |
			     (trace ? SIM_TRACE : 0) | (prof ? SIM_PROFILE : 0));
	}
	if (!rc && trace && sim_trace_write(tf.fp, m, chip, &st) < 0)
		rc = err_set("'%s': cannot write the trace", trace);
	/* The trace is committed first and taken back if the outputs fail. */
	int renamed = trace && tf.tmp;
	if (trace && tf.fp) {
		if (rc)
			out_abort(&tf);
		else
			rc = out_commit(&tf);
	}
	if (!rc && !timed && !fr.n && (rc = npz_write(out, &outputs, 0)) < 0 && renamed)
		unlink(trace);
	if (rc) {
		cli_fail("tpu-sim");
	} else {
		if (!quiet && fr.n)
			fprintf(stderr, "tpu-sim: %lld frames: %lld cycles, %lld per frame (the last "
				"frame below)\n", (long long)fr.n, (long long)frame_cycles,
				(long long)(frame_cycles / fr.n));
		if (!quiet && b.n > 1) {
			char shapes[1024];
			bundle_shapes(&b, stage, shapes, sizeof shapes);
			fprintf(stderr, "tpu-sim: stage %d of %d (%s)%s\n", stage, b.n, shapes,
				fr.n ? ", the last frame's" : "");
		}
		if (!quiet)
			report(m, chip, &st);
		if (prof)
			profile(m, &st);
	}
	sim_stats_free(&st);
	npz_free(&inputs);
	npz_free(&outputs);
	bundle_free(&b);
	frames_free(&fr);
	return rc ? 1 : 0;
}
