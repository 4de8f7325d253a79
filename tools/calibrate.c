/* calibrate - run a Top graph over sample inputs and write the calibration
 * table of activation thresholds (formats/tpuc-calib.5).
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base.h"
#include "calib.h"
#include "ir.h"
#include "npz.h"

static const char usage[] =
	"usage: calibrate IN -d SAMPLES.npz [-n N] [--method kld|minmax] [-j THREADS] -o TABLE\n";

static int usage_error(const char *fmt, const char *arg)
{
	fputs("calibrate: ", stderr);
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\n%s", usage);
	return 2;
}

/* A positive integer, or -1. */
static long long parse_count(const char *s)
{
	char *end;
	long long v = strtoll(s, &end, 10);
	return end == s || *end || v < 1 ? -1 : v;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "method", required_argument, NULL, 'm' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *out = NULL, *data = NULL;
	/* One thread by default: per-op work is small at batch 1, and idle
	 * OpenMP threads spinning between ops cost more than they save on a
	 * busy machine (resnet18, 32 samples: 2.4 s with 1, 11 s with 2). */
	struct calib_opts opts = {
		.method = CALIB_KLD, .nthreads = 1,
		.progress = isatty(2), .prog = "calibrate",
	};
	int c;
	long long v;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "hd:n:j:o:", longopts, NULL)) != -1) {
		switch (c) {
		case 'h':
			fputs(usage, stdout);
			return 0;
		case 'd': data = optarg; break;
		case 'o': out = optarg; break;
		case 'n':
			if ((v = parse_count(optarg)) < 0)
				return usage_error("-n needs a positive count, not '%s'", optarg);
			opts.max_samples = v;
			break;
		case 'j':
			if ((v = parse_count(optarg)) < 0 || v > 1024)
				return usage_error("-j needs a thread count, not '%s'", optarg);
			opts.nthreads = (int)v;
			break;
		case 'm':
			if (!strcmp(optarg, "kld"))
				opts.method = CALIB_KLD;
			else if (!strcmp(optarg, "minmax"))
				opts.method = CALIB_MINMAX;
			else
				return usage_error("unknown method '%s' (kld or minmax)", optarg);
			break;
		default:
			if (optopt && strchr("dnjo", optopt))
				return usage_error("option '-%s' needs an argument",
						   (char[]){ (char)optopt, 0 });
			return usage_error("unknown option '%s'", argv[optind - 1]);
		}
	}
	if (argc - optind != 1)
		return usage_error("%s", argc - optind ? "one input IR expected" : "no input IR given");
	if (!data)
		return usage_error("%s", "-d SAMPLES.npz is required");
	if (!out)
		return usage_error("%s", "-o TABLE is required");
	const char *in = argv[optind];

	struct ir_graph *g = NULL;
	struct calib_table *t = NULL;
	struct npz z = { 0 };
	int rc = 1;
	if (ir_read(in, &g) < 0 ||
	    ir_expect(g, in, DIALECT_TOP, 1u << STAGE_ORIGIN | 1u << STAGE_CANONICAL) < 0 ||
	    npz_read(data, &z) < 0)
		goto fail;
	if (calib_run(g, &z, data, &opts, &t) < 0) {
		err_prefix("'%s'", strcmp(in, "-") ? in : "<stdin>");
		goto fail;
	}
	if (calib_table_write(out, t, g) < 0)
		goto fail;
	rc = 0;
	goto done;
fail:
	fprintf(stderr, "calibrate: %s\n", err_msg());
done:
	calib_table_free(t);
	npz_free(&z);
	graph_free(g);
	return rc;
}
