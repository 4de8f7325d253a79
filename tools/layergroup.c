/* layergroup - assign the ops of a Tpu graph to layer groups
 * (stage reordered -> grouped).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "tool/cli.h"
#include "back/layergroup.h"

static const char usage[] = "usage: layergroup [IN.tpu] [-o OUT.tpu] [-n MAX_OPS]\n";

static int group(struct ir_graph *g, const struct chip *chip, void *max_ops)
{
	return layergroup(g, chip, *(int *)max_ops);
}

static const struct stage_tool tool = {
	"layergroup", DIALECT_TPU, 1u << STAGE_REORDERED, STAGE_TOOL_CHIP, group,
};

int main(int argc, char **argv)
{
	int std_rc = cli_help_version("layergroup", usage, argc, argv);
	if (std_rc >= 0)
		return std_rc;
	static const struct option none[] = { { 0, 0, 0, 0 } };
	const char *in, *out = NULL;
	int c, max_ops = 1000;
	char *end;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "hn:o:", none, NULL)) != -1) {
		switch (c) {
		case 'h': fputs(usage, stdout); return 0;
		case 'o': out = optarg; break;
		case 'n':
			max_ops = (int)strtol(optarg, &end, 10);
			if (end == optarg || *end || max_ops < 1 || max_ops > 1000) {
				fprintf(stderr, "layergroup: -n needs a number of ops from 1 to 1000, not '%s'\n%s",
					optarg, usage);
				return 2;
			}
			break;
		default:
			if (optopt == 'n') {
				fprintf(stderr, "layergroup: option '-n' needs a number\n%s", usage);
				return 2;
			}
			return cli_bad_option(tool.prog, usage, argv, "o");
		}
	}
	if (!(in = cli_input(argc, argv, usage)))
		return 2;
	return stage_tool_run(&tool, in, out, &max_ops);
}
