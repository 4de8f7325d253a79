/* npz-compare - compare the tensors two .npz files share, by name, and
 * report cosine, euclidean similarity and SQNR against a tolerance.
 */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/base.h"
#include "tool/cli.h"
#include "ir/compare.h"
#include "ir/npz.h"
#include "ir/task_check.h"

static const char *prog = "npz-compare";
static const char usage[] =
	"usage: npz-compare A.npz B.npz [--tolerance COS[,EUC]]\n"
	"                   [--task auto|class|ctc|map|seg|score|none] [-v]\n";

/* "COS" or "COS,EUC": finite numbers, each at most 1; EUC keeps its value
 * when only COS is given. */
static int parse_tolerance(const char *s, double *cos, double *euc)
{
	char *end;
	*cos = strtod(s, &end);
	if (end == s || (*end && *end != ','))
		return -1;
	if (*end) {
		const char *t = end + 1;
		*euc = strtod(t, &end);
		if (end == t || *end)
			return -1;
	}
	return isfinite(*cos) && isfinite(*euc) && *cos <= 1 && *euc <= 1 ? 0 : -1;
}

static int same_shape(const struct npz_array *a, const struct npz_array *b)
{
	return a->rank == b->rank &&
	       !memcmp(a->shape, b->shape, (size_t)a->rank * sizeof a->shape[0]);
}

static void fmt_metric(char *buf, size_t cap, double v, const char *fmt)
{
	if (isinf(v))
		snprintf(buf, cap, "%s", v > 0 ? "inf" : "-inf");
	else
		snprintf(buf, cap, fmt, v);
}

/* Print the rows for names in X missing from Y. */
static void print_only(const struct npz *x, const struct npz *y, const char *label)
{
	char shape[IR_MAX_RANK * 21 + 3];
	for (int i = 0; i < x->n; i++) {
		if (npz_find(y, x->a[i].name))
			continue;
		shape_str(shape, sizeof shape, x->a[i].rank, x->a[i].shape);
		printf("only in %s: %s %s\n", label, x->a[i].name, shape);
	}
}

int main(int argc, char **argv)
{
	int std_rc = cli_help_version(prog, usage, argc, argv);
	if (std_rc >= 0)
		return std_rc;
	static const struct option longopts[] = {
		{ "tolerance", required_argument, NULL, 't' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "task", required_argument, NULL, 'T' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	double min_cos = COMPARE_DEFAULT_COSINE, min_euc = COMPARE_DEFAULT_EUCLID;
	int verbose = 0, c, task = TASK_NONE;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":vh", longopts, NULL)) != -1) {
		switch (c) {
		case 't':
			if (parse_tolerance(optarg, &min_cos, &min_euc) < 0) {
				fprintf(stderr, "%s: bad --tolerance '%s': expected COS or COS,EUC, "
					"numbers of at most 1\n", prog, optarg);
				return 2;
			}
			break;
		case 'v': verbose = 1; break;
		case 'T':
			if ((task = task_from_name(optarg)) < 0)
				return cli_usage_error(prog, usage,
						       "unknown --task '%s' (auto, class, ctc, map, seg, "
						       "score or none)", optarg);
			break;
		case 'h': fputs(usage, stdout); return 0;
		case ':': return cli_missing_value(prog, usage, argv);
		default: return cli_bad_option(prog, usage, argv, "");
		}
	}
	if (argc - optind != 2)
		return cli_operands(prog, usage, 2, argc - optind);
	const char *path_a = argv[optind], *path_b = argv[optind + 1];

	struct npz za, zb;
	if (npz_read(path_a, &za) < 0)
		return cli_fail(prog);
	if (npz_read(path_b, &zb) < 0) {
		npz_free(&za);
		return cli_fail(prog);
	}

	int wname = 4, wshape = 5, compared = 0, failed = 0;
	for (int i = 0; i < za.n; i++) {
		char shape[IR_MAX_RANK * 21 + 3];
		if (!npz_find(&zb, za.a[i].name))
			continue;
		shape_str(shape, sizeof shape, za.a[i].rank, za.a[i].shape);
		if ((int)strlen(za.a[i].name) > wname)
			wname = (int)strlen(za.a[i].name);
		if ((int)strlen(shape) > wshape)
			wshape = (int)strlen(shape);
	}

	char first_name[256] = "", first_why[256] = "";
	for (int i = 0; i < za.n; i++) {
		const struct npz_array *a = &za.a[i], *b = npz_find(&zb, a->name);
		char shape[IR_MAX_RANK * 21 + 3], bshape[sizeof shape], why[256] = "";
		char cs[32] = "-", es[32] = "-", ss[32] = "-", tw[300] = "";
		enum task t = TASK_NONE;
		int tpass = 1;
		struct compare_result r;
		int pass = 0;
		if (!b)
			continue;
		if (!compared++)
			printf("%-*s  %-*s  %9s  %9s  %8s  result\n", wname, "name",
			       wshape, "shape", "cosine", "euclid", "sqnr");
		shape_str(shape, sizeof shape, a->rank, a->shape);
		shape_str(bshape, sizeof bshape, b->rank, b->shape);
		if (npz_numel(a) != npz_numel(b)) {
			snprintf(why, sizeof why, "element count %lld vs %lld",
				 (long long)npz_numel(a), (long long)npz_numel(b));
		} else {
			float *fa = npz_to_f32(a), *fb = npz_to_f32(b);
			compare_f32(fa, fb, (size_t)npz_numel(a), &r);
			pass = compare_check(&r, min_cos, min_euc, why, sizeof why);
			t = task == TASK_AUTO ? task_pick(a->shape, a->rank, fa, npz_numel(a))
					      : (enum task)task;
			if (t != TASK_NONE) {
				tpass = task_check(t, a->shape, a->rank, fa, fb, npz_numel(a), tw,
						   sizeof tw) > 0;
				/* one number: its error and decision, never its cosine */
				if (t == TASK_SCORE) {
					pass = tpass;
					why[0] = '\0';
				} else {
					pass = pass && tpass;
				}
				if (!tpass)
					snprintf(why, sizeof why, "%s: %s", task_name(t), tw);
			}
			free(fa);
			free(fb);
			fmt_metric(cs, sizeof cs, r.cosine, "%9.6f");
			fmt_metric(es, sizeof es, r.euclid, "%9.6f");
			fmt_metric(ss, sizeof ss, r.sqnr_db, "%8.2f");
			if (pass && !same_shape(a, b))
				snprintf(why, sizeof why, "B has shape %s", bshape);
		}
		printf("%-*s  %-*s  %9s  %9s  %8s  %s%s%s\n", wname, a->name, wshape, shape,
		       cs, es, ss, pass ? "PASS" : "FAIL", why[0] ? "  " : "", why);
		if (t != TASK_NONE)
			printf("    task %s: %s: %s\n", task_name(t), tw, tpass ? "PASS" : "FAIL");
		if (verbose && npz_numel(a) == npz_numel(b))
			printf("    A %s %s, B %s %s; max |a-b| %g at element %lld\n",
			       dtype_name(a->dtype), shape, dtype_name(b->dtype), bshape,
			       r.max_abs_diff, (long long)r.max_diff_at);
		if (!pass && !failed++) {
			snprintf(first_name, sizeof first_name, "%s", a->name);
			snprintf(first_why, sizeof first_why, "%s", why);
		}
	}
	print_only(&za, &zb, "A");
	print_only(&zb, &za, "B");
	for (int i = 0; i < za.n_skipped; i++)
		printf("skipped in A: %s (%s)\n", za.skipped[i].name, za.skipped[i].why);
	for (int i = 0; i < zb.n_skipped; i++)
		printf("skipped in B: %s (%s)\n", zb.skipped[i].name, zb.skipped[i].why);
	fflush(stdout);

	if (!compared)
		fprintf(stderr, "%s: no tensor in common between '%s' and '%s'\n",
			prog, path_a, path_b);
	else if (failed)
		fprintf(stderr, "%s: %d compared, %d failed; first failure '%s' (%s)\n",
			prog, compared, failed, first_name, first_why);
	else
		fprintf(stderr, "%s: %d compared, 0 failed\n", prog, compared);
	npz_free(&za);
	npz_free(&zb);
	return compared && !failed ? 0 : 1;
}
