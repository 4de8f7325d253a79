/* cli.c - the tools' shared command-line conventions and the stage tool
 * frame (lib/tool/cli.h).
 */
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ir/base.h"
#include "tool/cli.h"
#include "ir/limit.h"

const char *cli_shown(const char *path)
{
	return !path || !strcmp(path, "-") ? "<stdin>" : path;
}

int cli_fail(const char *prog)
{
	fprintf(stderr, "%s: %s\n", prog, err_msg());
	return 1;
}

int cli_bad_option(const char *prog, const char *usage, char *const argv[],
		   const char *file_opts)
{
	const char *arg = argv[optind - 1];
	if (optopt && strchr(file_opts, optopt)) {
		/* A missing argument: argv[optind - 1] is the option's word. */
		if (!strncmp(arg, "--", 2))
			fprintf(stderr, "%s: option '%s' needs a file name\n%s", prog, arg, usage);
		else
			fprintf(stderr, "%s: option '-%c' needs a file name\n%s", prog, optopt, usage);
	} else if (optopt) {
		fprintf(stderr, "%s: unknown option '-%c'\n%s", prog, optopt, usage);
	} else {
		fprintf(stderr, "%s: unknown option '%s'\n%s", prog, arg, usage);
	}
	return 2;
}

int cli_missing_value(const char *prog, const char *usage, char *const argv[])
{
	/* argv[optind - 1] is the option's word */
	return cli_usage_error(prog, usage, "option '%s' needs a value", argv[optind - 1]);
}

int cli_usage_error(const char *prog, const char *usage, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n%s", usage);
	return 2;
}

const char *cli_input(int argc, char *const argv[], const char *usage)
{
	if (argc - optind > 1) {
		fputs(usage, stderr);
		return NULL;
	}
	return optind < argc ? argv[optind] : "-";
}

int stage_tool_run(const struct stage_tool *t, const char *in, const char *out, void *arg)
{
	struct ir_graph *g = NULL;
	const struct chip *chip = NULL;
	int ok = ir_read(in, &g) == 0 && ir_expect(g, in, t->dialect, t->stages) == 0;
	if (ok && (t->flags & STAGE_TOOL_CHIP) && !(chip = chip_find(g->chip))) {
		err_set("'%s': unknown chip '%s'", cli_shown(in), g->chip ? g->chip : "");
		ok = 0;
	}
	ok = ok && t->run(g, chip, arg) == 0 &&
	     ((t->flags & STAGE_TOOL_NO_WRITE) || ir_write(out, g) == 0);
	int rc = ok ? 0 : cli_fail(t->prog);
	graph_free(g);
	return rc;
}

int cli_max_memory(const char *prog, const char *usage, const char *arg)
{
	int64_t bytes;
	if (limit_parse_size(arg, &bytes) < 0) {
		fprintf(stderr, "%s: %s\n%s", prog, err_msg(), usage);
		return 2;
	}
	limit_set_max_memory(bytes);
	return 0;
}
