/* addr-assign - global memory addresses for every tensor of a Tpu graph
 * (stage grouped -> addressed); prints the region sizes on stderr.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "addr.h"
#include "base.h"
#include "chip.h"
#include "ir.h"

static const char usage[] = "usage: addr-assign [IN.tpu] [-o OUT.tpu] [-q]\n";

int main(int argc, char **argv)
{
	const char *out = NULL;
	int quiet = 0, c;
	opterr = 0;
	static const struct option none[] = { { 0, 0, 0, 0 } };
	while ((c = getopt_long(argc, argv, "ho:q", none, NULL)) != -1) {
		switch (c) {
		case 'h':
			fputs(usage, stdout);
			return 0;
		case 'o':
			out = optarg;
			break;
		case 'q':
			quiet = 1;
			break;
		default:
			if (optopt == 'o')
				fprintf(stderr, "addr-assign: option '-o' needs a file name\n%s", usage);
			else if (optopt)
				fprintf(stderr, "addr-assign: unknown option '-%c'\n%s", optopt, usage);
			else
				fprintf(stderr, "addr-assign: unknown option '%s'\n%s", argv[optind - 1], usage);
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
	int rc = ir_read(in, &g) < 0 || ir_expect(g, in, DIALECT_TPU, 1u << STAGE_GROUPED) < 0;
	if (!rc && !(chip = chip_find(g->chip)))
		rc = err_set("'%s': unknown chip '%s'", shown, g->chip ? g->chip : "");
	if (rc || addr_assign(g, chip) < 0 || ir_write(out, g) < 0) {
		fprintf(stderr, "addr-assign: %s\n", err_msg());
		graph_free(g);
		return 1;
	}
	if (!quiet) {
		char nb[32], cb[32];
		addr_fmt_size(nb, sizeof nb, g->neuron_bytes);
		addr_fmt_size(cb, sizeof cb, g->coeff_bytes);
		fprintf(stderr, "addr-assign: neuron %s, coeff %s\n", nb, cb);
	}
	graph_free(g);
	return 0;
}
