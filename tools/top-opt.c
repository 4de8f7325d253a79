/* top-opt - canonicalise Top IR: run a pipeline of named passes (see
 * lib/passes/passes.h) and write the graph at stage canonical. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "ir/base.h"
#include "tool/cli.h"
#include "ir/op.h"
#include "passes/passes.h"
#include "calib/calib_equalise.h"

static const char usage[] =
	"usage: top-opt [IN] [-o OUT] [--passes=LIST] [--print-passes] [--stats]\n"
	"               [--equalise SAMPLES.npz] [--max-memory SIZE]\n";

static void passes_help(void)
{
	printf("passes (default %s):\n", PASSES_DEFAULT);
	for (const struct pass *p = pass_table; p->name; p++)
		printf("  %-16s %s\n", p->name, p->desc);
}

static void print_stats(const struct pass **pl, int n, const int *rewrites,
			const int *before, const int *after)
{
	int tb = 0, ta = 0;
	fprintf(stderr, "%-20s %8s\n", "pass", "rewrites");
	for (int i = 0; i < n; i++)
		fprintf(stderr, "%-20s %8d\n", pl[i]->name, rewrites[i]);
	fprintf(stderr, "%-20s %8s %8s\n", "op", "before", "after");
	for (int t = 0; t < OP_COUNT; t++) {
		tb += before[t];
		ta += after[t];
		if (before[t] || after[t])
			fprintf(stderr, "%-20s %8d %8d\n", op_name(t), before[t], after[t]);
	}
	fprintf(stderr, "%-20s %8d %8d\n", "total", tb, ta);
}

/* The pipeline and how to report it. */
struct opt {
	const char *in;            /* input path, for messages */
	const char *list;          /* --passes, NULL for the default */
	const struct pass **pl;    /* the parsed pipeline, n passes */
	int n, stats;
	const char *eq;            /* --equalise: samples, or NULL */
};

static int optimise(struct ir_graph *g, const struct chip *chip, void *arg)
{
	const struct opt *o = arg;
	int before[OP_COUNT], after[OP_COUNT], *rewrites = xcalloc((size_t)o->n + 1, sizeof *rewrites);
	pass_count_ops(g, before);
	if (passes_run_counted(g, o->list, rewrites) < 0) {
		free(rewrites);
		return err_prefix("'%s'", cli_shown(o->in));
	}
	if (o->eq) {
		/* after the passes: it reads the graph they leave */
		struct npz z = { 0 };
		int n = 0;
		if (npz_read(o->eq, &z) < 0 || calib_equalise(g, &z, cli_shown(o->eq), 1, &n) < 0) {
			npz_free(&z);
			free(rewrites);
			return err_prefix("'%s'", cli_shown(o->in));
		}
		npz_free(&z);
		if (o->stats)
			fprintf(stderr, "%-20s %8d\n", "equalise", n);
	}
	g->stage = STAGE_CANONICAL;
	pass_count_ops(g, after);
	if (o->stats)
		print_stats(o->pl, o->n, rewrites, before, after);
	free(rewrites);
	return 0;
}

static const struct stage_tool tool = {
	"top-opt", DIALECT_TOP, 1u << STAGE_ORIGIN | 1u << STAGE_CANONICAL, 0, optimise,
};

int main(int argc, char **argv)
{
	int std_rc = cli_help_version_more("top-opt", usage, passes_help, argc, argv);
	if (std_rc >= 0)
		return std_rc;
	static const struct option longopts[] = {
		{ "passes", required_argument, NULL, 'p' },
		{ "print-passes", no_argument, NULL, 'P' },
		{ "stats", no_argument, NULL, 's' },
		{ "equalise", required_argument, NULL, 'e' },
		{ "max-memory", required_argument, NULL, 'M' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const struct pass **pl = NULL;
	struct opt o = { 0 };
	const char *out = NULL;
	int print = 0, c;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "ho:", longopts, NULL)) != -1) {
		switch (c) {
		case 'M':
			if (cli_max_memory("top-opt", usage, optarg))
				return 2;
			break;
		case 'h': fputs(usage, stdout); passes_help(); return 0;
		case 'o': out = optarg; break;
		case 'p': o.list = optarg; break;
		case 'P': print = 1; break;
		case 's': o.stats = 1; break;
		case 'e': o.eq = optarg; break;
		default:
			fprintf(stderr, "top-opt: bad option '%s'\n%s", argv[optind - 1], usage);
			return 2;
		}
	}
	if (!(o.in = cli_input(argc, argv, usage)))
		return 2;
	if ((o.n = passes_parse(o.list, &pl)) < 0) {
		fprintf(stderr, "top-opt: %s\n%s", err_msg(), usage);
		return 2;
	}
	o.pl = pl;
	if (print) {
		for (int i = 0; i < o.n; i++)
			printf("%s%s", i ? "," : "", pl[i]->name);
		putchar('\n');
		free(pl);
		return 0;
	}
	int rc = stage_tool_run(&tool, o.in, out, &o);
	free(pl);
	return rc;
}
