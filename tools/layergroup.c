/* layergroup - assign the ops of a Tpu graph to layer groups
 * (stage reordered -> grouped).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "chip.h"
#include "ir.h"
#include "layergroup.h"

static const char usage[] = "usage: layergroup [IN.tpu] [-o OUT.tpu] [-n MAX_OPS]\n";

int main(int argc, char **argv)
{
	const char *out = NULL;
	int c, max_ops = 64;
	char *end;
	opterr = 0;
	static const struct option none[] = { { 0, 0, 0, 0 } };
	while ((c = getopt_long(argc, argv, "hn:o:", none, NULL)) != -1) {
		switch (c) {
		case 'h':
			fputs(usage, stdout);
			return 0;
		case 'n':
			max_ops = (int)strtol(optarg, &end, 10);
			if (end == optarg || *end || max_ops < 1 || max_ops > 1000) {
				fprintf(stderr, "layergroup: -n needs a number of ops from 1 to 1000, not '%s'\n%s",
					optarg, usage);
				return 2;
			}
			break;
		case 'o':
			out = optarg;
			break;
		default:
			if (optopt == 'o')
				fprintf(stderr, "layergroup: option '-o' needs a file name\n%s", usage);
			else if (optopt == 'n')
				fprintf(stderr, "layergroup: option '-n' needs a number\n%s", usage);
			else if (optopt)
				fprintf(stderr, "layergroup: unknown option '-%c'\n%s", optopt, usage);
			else
				fprintf(stderr, "layergroup: unknown option '%s'\n%s", argv[optind - 1], usage);
			return 2;
		}
	}
	if (argc - optind > 1) {
		fputs(usage, stderr);
		return 2;
	}
	const char *in = optind < argc ? argv[optind] : "-";
	const char *shown = strcmp(in, "-") ? in : "<stdin>";

	struct ir_graph *g = NULL;
	const struct chip *chip = NULL;
	int rc = ir_read(in, &g) < 0 || ir_expect(g, in, DIALECT_TPU, 1u << STAGE_REORDERED) < 0;
	if (!rc && !(chip = chip_find(g->chip)))
		rc = err_set("'%s': unknown chip '%s'", shown, g->chip ? g->chip : "");
	if (rc || layergroup(g, chip, max_ops) < 0 || ir_write(out, g) < 0) {
		fprintf(stderr, "layergroup: %s\n", err_msg());
		graph_free(g);
		return 1;
	}
	graph_free(g);
	return 0;
}
