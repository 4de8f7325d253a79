/* ir-print - print an IR file of any dialect and stage as MLIR-like text,
 * one op a line, or as a Graphviz DOT graph (lib/ir/ir_print.h).
 */
#include <getopt.h>
#include <stdio.h>

#include "ir/base.h"
#include "tool/cli.h"
#include "ir/ir.h"
#include "ir/ir_print.h"

static const char prog[] = "ir-print";
static const char usage[] = "usage: ir-print [IN] [--dot] [-o OUT]\n";

int main(int argc, char **argv)
{
	int std_rc = cli_help_version(prog, usage, argc, argv);
	if (std_rc >= 0)
		return std_rc;
	static const struct option longopts[] = {
		{ "dot", no_argument, NULL, 'd' },
		{ "output", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *in, *out = NULL;
	int dot = 0, c;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":ho:", longopts, NULL)) != -1) {
		switch (c) {
		case 'h': fputs(usage, stdout); return 0;
		case 'o': out = optarg; break;
		case 'd': dot = 1; break;
		case ':': return cli_missing_value(prog, usage, argv);
		default: return cli_bad_option(prog, usage, argv, "");
		}
	}
	if (!(in = cli_input(argc, argv, usage)))
		return 2;

	struct ir_graph *g = NULL;
	struct out_file o;
	if (ir_read(in, &g) < 0 || out_open(&o, out) < 0)
		goto fail;
	if ((dot ? ir_print_dot(o.fp, g) : ir_print_text(o.fp, g)) < 0) {
		out_abort(&o);
		goto fail;
	}
	if (out_commit(&o) < 0)
		goto fail;
	graph_free(g);
	return 0;
fail:
	cli_fail(prog);
	graph_free(g);
	return 1;
}
