/* codegen - generate the .tmodel (command streams, coefficients, I/O and
 * layer table) from an addressed Tpu graph.
 */
#include <getopt.h>
#include <stdio.h>

#include "base.h"
#include "cli.h"
#include "codegen.h"
#include "tmodel.h"

static const char usage[] = "usage: codegen [IN.tpu] [-o MODEL.tmodel] [-l LISTING]\n";

/* The streams as text, one command a line, compute commands with their op. */
static int write_listing(const char *path, const struct tmodel *m)
{
	struct out_file o;
	char line[512];
	if (out_open(&o, path) < 0)
		return -1;
	fprintf(o.fp, "# %s: %s %s, %d dma and %d compute commands\n", m->name, m->chip,
		m->mode, m->n_dma, m->n_cmp);
	for (int i = 0; i < m->n_dma; i++) {
		isa_dma_str(&m->dma[i], line, sizeof line);
		fprintf(o.fp, "%s\n", line);
	}
	for (int i = 0; i < m->n_cmp; i++) {
		isa_cmp_str(&m->cmp[i], line, sizeof line);
		fprintf(o.fp, "%s  # %s\n", line, m->loc[i]);
	}
	if (ferror(o.fp)) {
		out_abort(&o);
		return err_set("cannot write '%s':", path);
	}
	return out_commit(&o);
}

/* Where codegen's run writes, and the model it made. */
struct dest {
	const char *out;           /* the .tmodel (NULL: stdout) */
	const char *listing;       /* the listing, or NULL for none */
	struct tmodel *m;
};

static int generate(struct ir_graph *g, const struct chip *chip, void *arg)
{
	struct dest *d = arg;
	if (codegen(g, chip, &d->m) < 0 || tmodel_write(d->out, d->m) < 0)
		return -1;
	return d->listing ? write_listing(d->listing, d->m) : 0;
}

static const struct stage_tool tool = {
	"codegen", DIALECT_TPU, 1u << STAGE_ADDRESSED, STAGE_TOOL_CHIP | STAGE_TOOL_NO_WRITE,
	generate,
};

int main(int argc, char **argv)
{
	static const struct option none[] = { { 0, 0, 0, 0 } };
	struct dest d = { NULL, NULL, NULL };
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
	int rc = stage_tool_run(&tool, in, NULL, &d);
	tmodel_free(d.m);
	return rc;
}
