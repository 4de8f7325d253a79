/* codegen - generate the .tmodel (command streams, coefficients, I/O and
 * layer table) from an addressed Tpu graph.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "ir/base.h"
#include "tool/cli.h"
#include "back/codegen.h"
#include "chip/tmodel.h"

static const char usage[] = "usage: codegen [IN.tpu] [-o MODEL.tmodel] [-l LISTING]\n";

/* The streams as text into O, one command a line, compute commands with
 * their op. */
static int write_listing(struct out_file *o, const struct tmodel *m)
{
	char line[512];
	fprintf(o->fp, "# %s: %s %s, %d dma and %d compute commands\n", m->name, m->chip,
		mode_name(m->mode), m->n_dma, m->n_cmp);
	for (int i = 0; i < m->n_dma; i++) {
		isa_dma_str(&m->dma[i], line, sizeof line);
		fprintf(o->fp, "%s\n", line);
	}
	for (int i = 0; i < m->n_cmp; i++) {
		isa_cmp_str(&m->cmp[i], line, sizeof line);
		fprintf(o->fp, "%s  # %s\n", line, m->loc[i]);
	}
	if (ferror(o->fp))
		return err_set("cannot write '%s':", o->path ? o->path : "<stdout>");
	return 0;
}

/* Where codegen's run writes, and the model it made. */
struct dest {
	const char *in;            /* the IR file, for messages */
	const char *out;           /* the .tmodel (NULL: stdout) */
	const char *listing;       /* the listing, or NULL for none */
	struct tmodel *m;
};

/* Generate, then write the model and the listing together: both files or
 * neither. */
static int generate(struct ir_graph *g, const struct chip *chip, void *arg)
{
	struct dest *d = arg;
	struct out_file om, ol = { 0 };
	if (codegen(g, chip, &d->m) < 0)
		return err_prefix("'%s'", cli_shown(d->in));
	if (out_open(&om, d->out) < 0)
		return -1;
	if (d->listing && out_open(&ol, d->listing) < 0) {
		out_abort(&om);
		return -1;
	}
	if (tmodel_write_out(&om, d->m) < 0 || (d->listing && write_listing(&ol, d->m) < 0)) {
		out_abort(&om);
		out_abort(&ol);
		return -1;
	}
	return out_commit_pair(&om, &ol);
}

static const struct stage_tool tool = {
	"codegen", DIALECT_TPU, 1u << STAGE_ADDRESSED, STAGE_TOOL_CHIP | STAGE_TOOL_NO_WRITE,
	generate,
};

int main(int argc, char **argv)
{
	int std_rc = cli_help_version("codegen", usage, argc, argv);
	if (std_rc >= 0)
		return std_rc;
	static const struct option none[] = { { 0, 0, 0, 0 } };
	struct dest d = { NULL, NULL, NULL, NULL };
	const char *in;
	int c;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "hl:o:", none, NULL)) != -1) {
		switch (c) {
		case 'h': fputs(usage, stdout); return 0;
		case 'l': d.listing = optarg; break;
		case 'o': d.out = optarg; break;
		default: return cli_bad_option(tool.prog, usage, argv, "lo");
		}
	}
	if (!(in = cli_input(argc, argv, usage)))
		return 2;
	d.in = in;
	int rc = stage_tool_run(&tool, in, NULL, &d);
	tmodel_free(d.m);
	return rc;
}
