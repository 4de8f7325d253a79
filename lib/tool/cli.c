/* cli.c - the tools' shared command-line conventions and the stage tool
 * frame (lib/tool/cli.h).
 */
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ir/base.h"
#include "tool/cli.h"
#include "ir/limit.h"
#include "ir/version.h"

int cli_help_version(const char *prog, const char *usage, int argc, char *const argv[])
{
	return cli_help_version_more(prog, usage, NULL, argc, argv);
}

int cli_help_version_more(const char *prog, const char *usage, void (*more)(void), int argc,
			  char *const argv[])
{
	for (int i = 1; i < argc && strcmp(argv[i], "--"); i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			fputs(usage, stdout);
			if (more)
				more();
			printf("The manual: man 1 %s\n", prog);
			return 0;
		}
		if (!strcmp(argv[i], "--version")) {
			printf("%s (tpuc) %s\n", prog, TPUC_VERSION);
			return 0;
		}
	}
	return -1;
}

int cli_operands(const char *prog, const char *usage, int want, int got)
{
	if (got < want)
		return cli_usage_error(prog, usage, "missing operand (%d given, %d wanted)", got, want);
	return cli_usage_error(prog, usage, "too many operands (%d given, %d wanted)", got, want);
}

int cli_check_stdout(const char *prog, const char *usage, const char *out, const char *what)
{
	if ((!out || !strcmp(out, "-")) && isatty(STDOUT_FILENO))
		return cli_usage_error(prog, usage, "will not write %s to a terminal (use -o FILE)",
				       what);
	return 0;
}

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

/* Whether option WORD ("-o", "--calib", "--output=") takes a file: the
 * same missing argument then has the same words in every tool. */
static int file_option(const char *word)
{
	static const char *const files[] = {
		"-o", "-i", "-d", "-l", "--output", "--input", "--calib", "--qtable",
		"--search-qtable", "--table",
	};
	size_t n = strcspn(word, "=");
	for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
		if (strlen(files[i]) == n && !strncmp(word, files[i], n))
			return 1;
	return 0;
}

int cli_missing_value(const char *prog, const char *usage, char *const argv[])
{
	/* argv[optind - 1] is the option's word */
	const char *w = argv[optind - 1];
	return cli_usage_error(prog, usage, "option '%s' needs %s", w,
			       file_option(w) ? "a file name" : "a value");
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
		/* the program's name is the word after "usage: " */
		const char *p = strncmp(usage, "usage: ", 7) ? usage : usage + 7;
		int n = (int)strcspn(p, " \n");
		fprintf(stderr, "%.*s: too many operands (%d given, at most 1 wanted)\n%s", n, p,
			argc - optind, usage);
		return NULL;
	}
	return optind < argc ? argv[optind] : "-";
}

int stage_tool_run(const struct stage_tool *t, const char *in, const char *out, void *arg)
{
	if (!(t->flags & STAGE_TOOL_NO_WRITE) && (!out || !strcmp(out, "-")) &&
	    isatty(STDOUT_FILENO)) {
		fprintf(stderr, "%s: will not write IR to a terminal (use -o FILE)\n", t->prog);
		return 2;
	}
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
