/* weight-reorder - put a lowered Tpu graph's weights into the chip's layout
 * (stage lowered -> reordered).
 */
#include <getopt.h>
#include <stdio.h>

#include "tool/cli.h"
#include "back/reorder.h"

static const char usage[] = "usage: weight-reorder [IN.tpu] [-o OUT.tpu]\n";

static int reorder(struct ir_graph *g, const struct chip *chip, void *arg)
{
	return weight_reorder(g);
}

static const struct stage_tool tool = {
	"weight-reorder", DIALECT_TPU, 1u << STAGE_LOWERED, 0, reorder,
};

int main(int argc, char **argv)
{
	int std_rc = cli_help_version("weight-reorder", usage, argc, argv);
	if (std_rc >= 0)
		return std_rc;
	static const struct option none[] = { { 0, 0, 0, 0 } };
	const char *in, *out = NULL;
	int c;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "ho:", none, NULL)) != -1) {
		switch (c) {
		case 'h': fputs(usage, stdout); return 0;
		case 'o': out = optarg; break;
		default: return cli_bad_option(tool.prog, usage, argv, "o");
		}
	}
	if (!(in = cli_input(argc, argv, usage)))
		return 2;
	return stage_tool_run(&tool, in, out, NULL);
}
