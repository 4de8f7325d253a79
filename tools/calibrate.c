/* calibrate - run a Top graph over sample inputs and write the calibration
 * table of activation thresholds, or one shard's partial statistics, or
 * merge partial statistics into the table (formats/tpuc-calib.5).
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ir/base.h"
#include "calib/calib.h"
#include "calib/calib_search.h"
#include "calib/calib_tune.h"
#include "calib/calib_noise.h"
#include "tool/cli.h"
#include "ir/ir.h"
#include "ir/npz.h"
#include "run/frames.h"

static const char prog[] = "calibrate";
static const char usage[] =
	"usage: calibrate IN -d SAMPLES.npz [-d MORE.npz...] [-n N]\n"
	"                 [--method kld|minmax|percentile|mse] [--percentile P]\n"
	"                 [--shard K/N] [--tune] [-j THREADS] [--max-memory SIZE] -o TABLE|PART\n"
	"                 [--frames N [--state OUT=IN[,OUT=IN...]]]\n"
	"                 [--search-qtable QTABLE [--expected-cos C] [--search-samples N]\n"
	"                  [--search-holdout N] [--search-mode int8|bf16|f16]\n"
	"                  [--keep-mode f32|bf16|f16] [--chip CHIP] [--asymmetric]]\n"
	"                 [--noise-report REPORT [--noise-keep-db DB]]\n"
	"       calibrate --merge PART... -o TABLE\n";

/* A positive integer (that fits in a long long), or -1. */
/* The samples --tune runs on, for the search's tuned_last. */
struct tune_ctx {
	const struct ir_graph *g;
	int ndata;
	const struct npz *z;
	const char *const *data;
	struct calib_table *tab;     /* the table tuned when asked */
	const struct calib_tune_opts *to;
};

/* calib_search_opts.tune: tunes C->tab (alts[a] of the search). */
static int tune_alt(void *arg, int a)
{
	struct tune_ctx *c = arg;
	struct calib_tune_result tr;
	(void)a;
	return calib_tune(c->g, c->ndata, c->z, c->data, c->tab, c->to, &tr);
}

static long long parse_count(const char *s)
{
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	return end == s || *end || errno || v < 1 ? -1 : v;
}

/* "K/N" with 1 <= K <= N; 0 on success. */
static int parse_shard(const char *s, int *k, int *n)
{
	char *slash, *end;
	long long a = strtoll(s, &slash, 10), b;
	if (slash == s || *slash != '/')
		return -1;
	b = strtoll(slash + 1, &end, 10);
	if (end == slash + 1 || *end || a < 1 || b < 1 || a > b || b > 1000000)
		return -1;
	*k = (int)a;
	*n = (int)b;
	return 0;
}

/* calibrate --merge PART... -o TABLE */
static int merge(int n, char **parts, const char *out, int nthreads)
{
	struct calib_stats *acc = NULL, *st = NULL;
	struct calib_table *t = NULL;
	int rc = 1;
	for (int i = 0; i < n; i++) {
		if (calib_stats_read(parts[i], i ? &st : &acc) < 0)
			goto fail;
		if (i && calib_stats_merge(acc, st, parts[i]) < 0)
			goto fail;
		calib_stats_free(st);
		st = NULL;
	}
	if (acc->samples == 0) {   /* only empty shards: nothing to compute a table from */
		if (n == 1)
			err_set("'%s': the part holds no samples", parts[0]);
		else
			err_set("'%s' and the %d other parts hold no samples", parts[0], n - 1);
		goto fail;
	}
	if (calib_stats_table(acc, nthreads, &t) < 0 ||
	    calib_table_write_named(out, t, acc->graph) < 0)
		goto fail;
	rc = 0;
	goto done;
fail:
	cli_fail(prog);
done:
	calib_stats_free(acc);
	calib_stats_free(st);
	calib_table_free(t);
	return rc;
}

int main(int argc, char **argv)
{
	int std_rc = cli_help_version(prog, usage, argc, argv);
	if (std_rc >= 0)
		return std_rc;
	static const struct option longopts[] = {
		{ "method", required_argument, NULL, 'm' },
		{ "percentile", required_argument, NULL, 'p' },
		{ "shard", required_argument, NULL, 's' },
		{ "merge", no_argument, NULL, 'M' },
		{ "search-qtable", required_argument, NULL, 'Q' },
		{ "expected-cos", required_argument, NULL, 'C' },
		{ "search-samples", required_argument, NULL, 'S' },
		{ "search-holdout", required_argument, NULL, 'H' },
		{ "noise-report", required_argument, NULL, 'R' },
		{ "noise-keep-db", required_argument, NULL, 'B' },
		{ "chip", required_argument, NULL, 'c' },
		{ "keep-mode", required_argument, NULL, 'K' },
		{ "search-mode", required_argument, NULL, 'D' },
		{ "asymmetric", no_argument, NULL, 'A' },
		{ "tune", no_argument, NULL, 'T' },
		{ "max-memory", required_argument, NULL, 'X' },
		{ "frames", required_argument, NULL, 'F' },
		{ "state", required_argument, NULL, 'Z' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *out = NULL;
	/* static: still reachable (not a leak) when a usage error returns early */
	static const char **data;
	data = xcalloc((size_t)argc + 1, sizeof *data);
	int ndata = 0, merging = 0, pct_given = 0, cos_given = 0, tune = 0;
	const char *qfile = NULL, *rfile = NULL;
	double keep_db = CALIB_NOISE_KEEP_DB;
	int db_given = 0, samples_given = 0, holdout_given = 0;
	/* static, as data: reachable when a usage error returns early */
	static struct frames fr;
	struct calib_search_opts so = {
		.chip = "tpu-a", .mode = MODE_INT8, .keep = MODE_F32, .expected_cos = 0.99,
		.samples = 4, .holdout = 16, .unseen = -1, .nthreads = 1, .prog = prog,
	};
	/* One thread by default: per-op work is small at batch 1, and idle
	 * OpenMP threads spinning between ops cost more than they save on a
	 * busy machine (resnet18, 32 samples: 2.4 s with 1, 11 s with 2). */
	struct calib_opts opts = {
		.method = CALIB_KLD, .percentile = 99.99, .nthreads = 1,
		.progress = isatty(2), .prog = prog,
	};
	int c;
	long long v;
	char *end;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":hd:n:j:o:", longopts, NULL)) != -1) {
		switch (c) {
		case 'A': so.asymmetric = 1; break;
		case 'F':
			if ((v = parse_count(optarg)) < 0 || v > 1LL << 30)
				return cli_usage_error(prog, usage,
						       "--frames needs a whole number from 1, not '%s'", optarg);
			fr.n = v;
			break;
		case 'Z':
			if (frames_parse_state(&fr, optarg) < 0)
				return cli_usage_error(prog, usage, "%s", err_msg());
			break;
		case 'T': tune = 1; break;
		case 'X':
			if (cli_max_memory("calibrate", usage, optarg))
				return 2;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		case 'd': data[ndata++] = optarg; break;
		case 'o': out = optarg; break;
		case 'M': merging = 1; break;
		case 'Q': qfile = optarg; break;
		case 'R': rfile = optarg; break;
		case 'B':
			keep_db = strtod(optarg, &end);
			db_given = 1;
			if (end == optarg || *end || !isfinite(keep_db))
				return cli_usage_error(prog, usage,
						       "--noise-keep-db needs a number of dB, not '%s'",
						       optarg);
			break;
		case 'C':
			so.expected_cos = strtod(optarg, &end);
			cos_given = 1;
			if (end == optarg || *end || !(so.expected_cos > -1 && so.expected_cos <= 1))
				return cli_usage_error(prog, usage,
						       "--expected-cos needs a cosine in (-1, 1], not '%s'",
						       optarg);
			break;
		case 'S':
			if ((v = parse_count(optarg)) < 0)
				return cli_usage_error(prog, usage,
						       "--search-samples needs a positive count, not '%s'",
						       optarg);
			so.samples = v;
			samples_given = 1;
			break;
		case 'H':
			/* 0 allowed: select on the fit samples, as before */
			if (!strcmp(optarg, "0"))
				v = 0;
			else if ((v = parse_count(optarg)) < 0)
				return cli_usage_error(prog, usage,
						       "--search-holdout needs a count, not '%s'",
						       optarg);
			so.holdout = v;
			holdout_given = 1;
			break;
		case 'c':
			if (!lower_chip_known(optarg))
				return cli_usage_error(prog, usage, "unknown chip '%s'", optarg);
			so.chip = optarg;
			break;
		case 'K':
			v = mode_from_name(optarg);
			if (v < 0 || v == MODE_INT8)
				return cli_usage_error(prog, usage,
						       "--keep-mode needs f32, bf16 or f16, not '%s'", optarg);
			so.keep = (enum ir_mode)v;
			break;
		case 'D':
			v = mode_from_name(optarg);
			if (v < 0 || v == MODE_F32)
				return cli_usage_error(prog, usage,
						       "--search-mode needs int8, bf16 or f16, not '%s'", optarg);
			so.mode = (enum ir_mode)v;
			break;
		case 'n':
			if ((v = parse_count(optarg)) < 0)
				return cli_usage_error(prog, usage, "-n needs a positive count, not '%s'",
						       optarg);
			opts.max_samples = v;
			break;
		case 'j':
			if ((v = parse_count(optarg)) < 0 || v > 1024)
				return cli_usage_error(prog, usage, "-j needs a thread count, not '%s'",
						       optarg);
			opts.nthreads = (int)v;
			break;
		case 'p':
			opts.percentile = strtod(optarg, &end);
			if (end == optarg || *end || !(opts.percentile >= CALIB_MIN_PERCENTILE &&
							 opts.percentile <= 100))
				return cli_usage_error(prog, usage,
						       "--percentile needs a value in [%d, 100], not '%s'",
						       CALIB_MIN_PERCENTILE, optarg);
			pct_given = 1;
			break;
		case 's':
			if (parse_shard(optarg, &opts.shard, &opts.nshards) < 0)
				return cli_usage_error(prog, usage,
						       "--shard needs K/N with 1 <= K <= N, not '%s'", optarg);
			break;
		case 'm':
			if (!strcmp(optarg, "kld"))
				opts.method = CALIB_KLD;
			else if (!strcmp(optarg, "minmax"))
				opts.method = CALIB_MINMAX;
			else if (!strcmp(optarg, "percentile"))
				opts.method = CALIB_PERCENTILE;
			else if (!strcmp(optarg, "mse"))
				opts.method = CALIB_MSE;
			else
				return cli_usage_error(prog, usage,
						       "unknown method '%s' (kld, minmax, percentile or mse)",
						       optarg);
			break;
		case ':': return cli_missing_value(prog, usage, argv);
		default: return cli_bad_option(prog, usage, argv, "");
		}
	}
	if (!out)
		return cli_usage_error(prog, usage, "-o TABLE is required");
	if (merging) {
		if (ndata || opts.nshards)
			return cli_usage_error(prog, usage,
					       "--merge takes partial statistics only (no -d or --shard)");
		if (argc - optind < 1)
			return cli_usage_error(prog, usage, "--merge needs at least one PART");
		return merge(argc - optind, argv + optind, out, opts.nthreads);
	}
	if (argc - optind != 1)
		return cli_usage_error(prog, usage, "%s",
				       argc - optind ? "one input IR expected" : "no input IR given");
	if (!ndata)
		return cli_usage_error(prog, usage, "-d SAMPLES.npz is required");
	if (pct_given && opts.method != CALIB_PERCENTILE)
		return cli_usage_error(prog, usage, "--percentile goes with --method percentile");
	if (so.mode == so.keep)
		return cli_usage_error(prog, usage, "--search-mode and --keep-mode are both %s",
				       mode_name(so.mode));
	/* the goal by default: the cosine each mode is expected to keep; a
	 * sequence's state carries each frame's error into the next, and one
	 * utterance is all the search sees, so int8 over --frames aims at
	 * f16's goal (calibrate(1), "Sequences"); int8 otherwise by the
	 * outputs' answers, 0.98 for CTC texts, maps and a detector's boxes
	 * and scores, else 0.99
	 * (calib_search.h; -1 asks for it) */
	if (!cos_given)
		so.expected_cos = so.mode == MODE_BF16 ? 0.999
				  : so.mode == MODE_F16 || fr.n ? 0.9999 : -1;
	if (qfile && opts.nshards)
		return cli_usage_error(prog, usage,
				       "--search-qtable needs the whole table, not a --shard");
	if (tune && opts.nshards)
		return cli_usage_error(prog, usage, "--tune needs the whole table, not a --shard");
	if (rfile && opts.nshards)
		return cli_usage_error(prog, usage,
				       "--noise-report needs the whole table, not a --shard");
	if (db_given && !rfile)
		return cli_usage_error(prog, usage, "--noise-keep-db goes with --noise-report");
	if (fr.n_state && !fr.n)
		return cli_usage_error(prog, usage, "--state needs --frames");
	if (fr.n && opts.nshards)
		return cli_usage_error(prog, usage, "--frames runs whole sequences, not a --shard");
	const char *in = argv[optind];

	struct ir_graph *g = NULL;
	struct calib_stats *st = NULL;
	struct calib_table *t = NULL;
	struct calib_table *t0 = NULL;   /* the table before --tune, for the search */
	struct calib_table *tq = NULL;   /* kld: the samples' quartiles, for the search */
	struct calib_table *tqt = NULL;  /* the same, tuned */
	struct qtable *qt = NULL;
	char *report = NULL;
	size_t report_len = 0;
	struct out_file orep;
	int rep_open = 0;
	struct npz *z = xcalloc((size_t)ndata, sizeof *z);
	int rc = 1;
	if (ir_read(in, &g) < 0 ||
	    ir_expect(g, in, DIALECT_TOP, 1u << STAGE_ORIGIN | 1u << STAGE_CANONICAL) < 0)
		goto fail;
	for (int i = 0; i < ndata; i++)
		if (npz_read(data[i], &z[i]) < 0)
			goto fail;
	/* --frames: each file a sequence, run in float with its state fed
	 * back; its frames, with the states met, are the samples */
	if (fr.n && frames_check(&fr, g, cli_shown(in)) < 0)
		goto fail;
	for (int i = 0; fr.n && i < ndata; i++) {
		struct npz rec = { 0 };
		if (frames_record(&fr, g, &z[i], cli_shown(data[i]), opts.nthreads, &rec) < 0)
			goto fail;
		npz_free(&z[i]);
		z[i] = rec;
	}
	if (fr.n_state) {
		/* the search scores sequences: by default the first half of
		 * the frames fits, the second half is held out */
		int64_t total = fr.n * ndata;
		if (opts.max_samples > 0 && opts.max_samples < total)
			total = opts.max_samples;
		if (!samples_given)
			so.samples = (total + 1) / 2;
		if (!holdout_given)
			so.holdout = total - so.samples;
		so.fr = &fr;
	}
	/* the search brings every sample to the goal: the pooled KLD, which
	 * the loudest samples shape, rather than the samples' upper quartile,
	 * which clips them and would have the search keep them in float
	 * (tpuc-calib(5)) */
	opts.pooled = qfile != NULL;
	if (calib_collect(g, ndata, z, data, &opts, &st) < 0) {
		err_prefix("'%s'", cli_shown(in));
		goto fail;
	}
	if (opts.nshards) {
		if (calib_stats_write(out, st) < 0)
			goto fail;
	} else if (calib_stats_table(st, opts.nthreads, &t) < 0) {
		err_prefix("'%s'", cli_shown(in));
		goto fail;
	}
	if (tune && qfile && calib_stats_table(st, opts.nthreads, &t0) < 0) {
		err_prefix("'%s'", cli_shown(in));
		goto fail;
	}
	/* the search also tries the samples' upper quartile, untuned and
	 * tuned: the pooled search lets a loud sample's outliers (a box
	 * regressor's) set the threshold and round the other values to zero */
	if (qfile && st->method == CALIB_KLD && so.mode == MODE_INT8) {
		st->pooled = 0;
		int qrc = calib_stats_table(st, opts.nthreads, &tq);
		if (qrc == 0 && tune)
			qrc = calib_stats_table(st, opts.nthreads, &tqt);
		st->pooled = 1;
		if (qrc < 0) {
			err_prefix("'%s'", cli_shown(in));
			goto fail;
		}
	}
	struct calib_tune_opts to = {
		.samples = opts.max_samples > 0 && opts.max_samples < CALIB_TUNE_SAMPLES
			   ? opts.max_samples : CALIB_TUNE_SAMPLES,
		.nthreads = opts.nthreads, .progress = opts.progress,
		.asymmetric = so.asymmetric,
	};
	/* the quartiles are tuned by the search, only when it may take them */
	struct tune_ctx tc = { g, ndata, z, (const char *const *)data, tqt, &to };
	if (tune) {
		struct calib_tune_result tr;
		if (calib_tune(g, ndata, z, data, t, &to, &tr) < 0) {
			err_prefix("'%s': tune", cli_shown(in));
			goto fail;
		}
	}
	if (rfile) {
		/* measured before any file is written: all of them or none */
		FILE *mf = open_memstream(&report, &report_len);
		struct calib_search_opts no = so;
		no.nthreads = opts.nthreads;
		no.progress = opts.progress;
		if (opts.max_samples > 0 && opts.max_samples < no.samples)
			no.samples = opts.max_samples;
		int nrc = !mf ? err_set("out of memory") :
			  calib_noise_report(g, ndata, z, data, t, &no, keep_db, mf);
		if (mf)
			fclose(mf);
		if (nrc < 0) {
			err_prefix("'%s': noise report", cli_shown(in));
			goto fail;
		}
	}
	/* the report's file opened first: one that cannot be written leaves
	 * no table either */
	if (rfile) {
		if (out_open(&orep, rfile) < 0)
			goto fail;
		rep_open = 1;
	}
	if (qfile) {
		struct calib_search_result res = { 0 };
		char note[1024];
		so.nthreads = opts.nthreads;
		so.progress = opts.progress;
		if (opts.max_samples > 0 && opts.max_samples < so.samples)
			so.samples = opts.max_samples;
		/* -n bounds the samples the search holds out too */
		if (opts.max_samples > 0 && so.holdout > opts.max_samples - so.samples)
			so.holdout = opts.max_samples - so.samples;
		if (opts.max_samples > 0)
			so.unseen = opts.max_samples - so.samples - so.holdout;
		const struct calib_table *alts[3];
		const char *alt_names[3];
		so.alts = alts;
		so.nalts = 0;
		if (t0) {
			alt_names[so.nalts] = "untuned";
			alts[so.nalts++] = t0;
		}
		so.nsame = so.nalts;
		if (tq) {
			alt_names[so.nalts] = "the samples' quartiles";
			alts[so.nalts++] = tq;
		}
		if (tqt) {
			alt_names[so.nalts] = "the samples' quartiles, tuned";
			alts[so.nalts++] = tqt;
			so.tuned_last = 1;
			so.tune = tune_alt;
			so.tune_arg = &tc;
		}
		if (calib_search_qtable(g, ndata, z, data, t, &so, &qt, &res) < 0) {
			err_prefix("'%s': search", cli_shown(in));
			goto fail;
		}
		char scored[80] = "", unseen[160] = "";
		if (res.scores)
			snprintf(scored, sizeof scored, "; %d one-number output%s scored by error",
				 res.scores, res.scores > 1 ? "s" : "");
		/* expected: the samples no step of the search saw, when any */
		if (res.unseen_samples > 0)
			snprintf(unseen, sizeof unseen, "%lld unseen by the search, lowest %.6f; "
				 "%lld held out: %.6f", (long long)res.unseen_samples,
				 res.unseen_lowest, (long long)res.held_samples, res.held_cos);
		else
			snprintf(unseen, sizeof unseen, "%lld held out", (long long)res.held_samples);
		snprintf(note, sizeof note,
			 "%d of %d ops in %s: cosine %.6f on %lld fit samples, %.6f expected on "
			 "unseen input (%s, lowest %.6f; all %s: %.6f), goal %g%s",
			 res.kept, res.candidates, mode_name(so.keep), res.cos,
			 (long long)res.fit_samples,
			 res.unseen_samples > 0 ? res.unseen_cos : res.held_cos, unseen,
			 res.held_lowest, mode_name(so.mode), res.base_cos, res.goal, scored);
		if (res.reselected)
			snprintf(note + strlen(note), sizeof note - strlen(note),
				 "; chosen again with the unseen samples held out too (the first "
				 "choice scored %.6f on those %lld, below the goal)", res.first_unseen_cos, (long long)res.first_unseen_samples);
		/* what no step of the search saw says the goal may not hold */
		if (res.unseen_samples > 0 && res.unseen_cos < res.goal)
			snprintf(note + strlen(note), sizeof note - strlen(note),
				 "; below the goal on the unseen samples");
		if (res.took >= 0)
			snprintf(note + strlen(note), sizeof note - strlen(note),
				 "; %s (the whole graph scored higher)", alt_names[res.took]);
		/* tuning could not lift them the margin above: not tuned */
		if (so.tuned_last && !res.tuned_last)
			snprintf(note + strlen(note), sizeof note - strlen(note),
				 "; the samples' quartiles not tuned (more than 1 - goal below)");
		/* the table and the qtable: both files or neither */
		struct out_file ot, oq;
		if (out_open(&ot, out) < 0)
			goto fail;
		if (out_open(&oq, qfile) < 0) {
			out_abort(&ot);
			goto fail;
		}
		calib_table_print(ot.fp, res.took >= 0 ? alts[res.took] : t, g->name);
		qtable_print(oq.fp, qt, note);
		if (out_commit_pair(&ot, &oq) < 0)
			goto fail;
		fprintf(stderr, "calibrate: %s%s\n", note,
			res.reached ? "" : " (not reached even with every candidate kept)");
	} else if (!opts.nshards && calib_table_write(out, t, g) < 0) {
		goto fail;
	}
	if (rep_open) {
		rep_open = 0;
		fwrite(report, 1, report_len, orep.fp);
		if (out_commit(&orep) < 0)
			goto fail;
	}
	rc = 0;
	goto done;
fail:
	if (rep_open)
		out_abort(&orep);
	cli_fail(prog);
done:
	free(report);
	calib_table_free(t);
	calib_table_free(t0);
	calib_table_free(tq);
	calib_table_free(tqt);
	qtable_free(qt);
	calib_stats_free(st);
	for (int i = 0; i < ndata; i++)
		npz_free(&z[i]);
	free(z);
	free(data);
	frames_free(&fr);
	graph_free(g);
	return rc;
}
