/* weight-reorder - put a lowered Tpu graph's weights into the chip's layout
 * (stage lowered -> reordered).
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "base.h"
#include "ir.h"
#include "reorder.h"

static const char usage[] = "usage: weight-reorder [IN.tpu] [-o OUT.tpu]\n";

int main(int argc, char **argv)
{
	const char *out = NULL;
	int c;
	opterr = 0;
	static const struct option none[] = { { 0, 0, 0, 0 } };
	while ((c = getopt_long(argc, argv, "ho:", none, NULL)) != -1) {
		switch (c) {
		case 'h':
			fputs(usage, stdout);
			return 0;
		case 'o':
			out = optarg;
			break;
		default:
			if (optopt == 'o')
				fprintf(stderr, "weight-reorder: option '-o' needs a file name\n%s", usage);
			else if (optopt)
				fprintf(stderr, "weight-reorder: unknown option '-%c'\n%s", optopt, usage);
			else
				fprintf(stderr, "weight-reorder: unknown option '%s'\n%s", argv[optind - 1], usage);
			return 2;
		}
	}
	if (argc - optind > 1) {
		fputs(usage, stderr);
		return 2;
	}
	const char *in = optind < argc ? argv[optind] : "-";

	struct ir_graph *g = NULL;
	if (ir_read(in, &g) < 0 ||
	    ir_expect(g, in, DIALECT_TPU, 1u << STAGE_LOWERED) < 0 ||
	    weight_reorder(g) < 0 || ir_write(out, g) < 0) {
		fprintf(stderr, "weight-reorder: %s\n", err_msg());
		graph_free(g);
		return 1;
	}
	graph_free(g);
	return 0;
}
