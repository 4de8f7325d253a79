/* addr-assign - global memory addresses for every tensor of a Tpu graph
 * (stage grouped -> addressed); prints the region sizes on stderr.
 */
#include <getopt.h>
#include <stdio.h>

#include "back/addr.h"
#include "ir/base.h"
#include "tool/cli.h"

static const char usage[] = "usage: addr-assign [IN.tpu] [-o OUT.tpu] [-q]\n";

struct report {
	const char *in;          /* the input's name, for errors */
	int64_t sizes[2];        /* neuron and coeff region sizes, bytes */
};

/* Assign addresses; keep the region sizes for the report.  An error (a
 * model larger than the chip's global memory) names the input. */
static int assign(struct ir_graph *g, const struct chip *chip, void *arg)
{
	struct report *r = arg;
	if (addr_assign(g, chip) < 0) {
		char why[512];
		snprintf(why, sizeof why, "%s", err_msg());
		return err_set("'%s': %s", cli_shown(r->in), why);
	}
	r->sizes[0] = g->neuron_bytes;
	r->sizes[1] = g->coeff_bytes;
	return 0;
}

static const struct stage_tool tool = {
	"addr-assign", DIALECT_TPU, 1u << STAGE_GROUPED, STAGE_TOOL_CHIP, assign,
};

int main(int argc, char **argv)
{
	int std_rc = cli_help_version("addr-assign", usage, argc, argv);
	if (std_rc >= 0)
		return std_rc;
	static const struct option none[] = { { 0, 0, 0, 0 } };
	const char *in, *out = NULL;
	int quiet = 0, c;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "ho:q", none, NULL)) != -1) {
		switch (c) {
		case 'h': fputs(usage, stdout); return 0;
		case 'o': out = optarg; break;
		case 'q': quiet = 1; break;
		default: return cli_bad_option(tool.prog, usage, argv, "o");
		}
	}
	if (!(in = cli_input(argc, argv, usage)))
		return 2;
	struct report r = { .in = in };
	int rc = stage_tool_run(&tool, in, out, &r);
	if (rc == 0 && !quiet) {
		char nb[32], cb[32];
		addr_fmt_size(nb, sizeof nb, r.sizes[0]);
		addr_fmt_size(cb, sizeof cb, r.sizes[1]);
		fprintf(stderr, "addr-assign: neuron %s, coeff %s\n", nb, cb);
	}
	return rc;
}
