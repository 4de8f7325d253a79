/* top-opt - canonicalise Top IR: run a pipeline of named passes (see
 * lib/passes.h) and write the graph at stage canonical. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "base.h"
#include "ir.h"
#include "op.h"
#include "passes.h"

static const char usage[] =
	"usage: top-opt [IN] [-o OUT] [--passes=LIST] [--print-passes] [--stats]\n";

static int fail(void)
{
	fprintf(stderr, "top-opt: %s\n", err_msg());
	return 1;
}

static void help(void)
{
	fputs(usage, stdout);
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

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "passes", required_argument, NULL, 'p' },
		{ "print-passes", no_argument, NULL, 'P' },
		{ "stats", no_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *out = NULL, *list = NULL;
	int print = 0, stats = 0, c;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "ho:", longopts, NULL)) != -1) {
		switch (c) {
		case 'h': help(); return 0;
		case 'o': out = optarg; break;
		case 'p': list = optarg; break;
		case 'P': print = 1; break;
		case 's': stats = 1; break;
		default:
			fprintf(stderr, "top-opt: bad option '%s'\n%s", argv[optind - 1], usage);
			return 2;
		}
	}
	if (argc - optind > 1) {
		fputs(usage, stderr);
		return 2;
	}
	const char *in = optind < argc ? argv[optind] : "-";

	const struct pass *pl[PASSES_MAX];
	int n = passes_parse(list, pl, PASSES_MAX);
	if (n < 0) {
		fprintf(stderr, "top-opt: %s\n%s", err_msg(), usage);
		return 2;
	}
	if (print) {
		for (int i = 0; i < n; i++)
			printf("%s%s", i ? "," : "", pl[i]->name);
		putchar('\n');
		return 0;
	}

	struct ir_graph *g;
	int before[OP_COUNT], after[OP_COUNT], rewrites[PASSES_MAX];
	if (ir_read(in, &g) < 0)
		return fail();
	if (ir_expect(g, in, DIALECT_TOP, 1u << STAGE_ORIGIN | 1u << STAGE_CANONICAL) < 0)
		goto bad;
	pass_count_ops(g, before);
	if (passes_run_counted(g, list, rewrites) < 0) {
		err_prefix("'%s'", strcmp(in, "-") ? in : "<stdin>");
		goto bad;
	}
	g->stage = STAGE_CANONICAL;
	pass_count_ops(g, after);
	if (stats)
		print_stats(pl, n, rewrites, before, after);
	if (ir_write(out, g) < 0)
		goto bad;
	graph_free(g);
	return 0;
bad:
	graph_free(g);
	return fail();
}
