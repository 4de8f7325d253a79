/* codegen - generate the .tmodel (command streams, coefficients, I/O and
 * layer table) from an addressed Tpu graph.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/base.h"
#include "tool/cli.h"
#include "back/codegen.h"
#include "chip/bundle.h"
#include "chip/tmodel.h"

static const char usage[] = "usage: codegen [IN.tpu...] [-o MODEL.tmodel] [-l LISTING]\n";

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

/* The models codegen's runs made, one per input file. */
struct made {
	const char *in;            /* the IR file being read, for messages */
	int n;
	struct tmodel **m;
};

static int generate(struct ir_graph *g, const struct chip *chip, void *arg)
{
	struct made *d = arg;
	if (codegen(g, chip, &d->m[d->n]) < 0)
		return err_prefix("'%s'", cli_shown(d->in));
	d->n++;
	return 0;
}

static const struct stage_tool tool = {
	"codegen", DIALECT_TPU, 1u << STAGE_ADDRESSED, STAGE_TOOL_CHIP | STAGE_TOOL_NO_WRITE,
	generate,
};

/* Write the model (a bundle of several) and the listing together: both
 * files or neither. */
static int write_all(const struct made *d, const char *out, const char *listing)
{
	struct out_file om, ol = { 0 };
	uint64_t size;
	if (out_open(&om, out) < 0)
		return -1;
	if (listing && out_open(&ol, listing) < 0) {
		out_abort(&om);
		return -1;
	}
	unsigned char *f = bundle_encode(d->m, d->n, &size);
	int rc = fwrite(f, 1, size, om.fp) == size ? 0 :
		 err_set("cannot write '%s':", om.path ? om.path : "<stdout>");
	free(f);
	for (int s = 0; s < d->n && listing && rc == 0; s++)
		rc = write_listing(&ol, d->m[s]);
	if (rc < 0) {
		out_abort(&om);
		out_abort(&ol);
		return -1;
	}
	return out_commit_pair(&om, &ol);
}

int main(int argc, char **argv)
{
	int std_rc = cli_help_version("codegen", usage, argc, argv);
	if (std_rc >= 0)
		return std_rc;
	static const struct option none[] = { { 0, 0, 0, 0 } };
	const char *out = NULL, *listing = NULL;
	int c;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "hl:o:", none, NULL)) != -1) {
		switch (c) {
		case 'h': fputs(usage, stdout); return 0;
		case 'l': listing = optarg; break;
		case 'o': out = optarg; break;
		default: return cli_bad_option(tool.prog, usage, argv, "lo");
		}
	}
	/* one model per input file: several make a bundle of static shapes */
	int n = argc > optind ? argc - optind : 1, rc = 0;
	struct made d = { NULL, 0, xcalloc((size_t)n, sizeof *d.m) };
	const char **names = xcalloc((size_t)n, sizeof *names);
	for (int i = 0; i < n && rc == 0; i++) {
		d.in = names[i] = argc > optind ? argv[optind + i] : "-";
		if (n > 1 && !strcmp(d.in, "-")) {
			rc = cli_usage_error(tool.prog, usage, "several inputs: '-' cannot be one");
			break;
		}
		rc = stage_tool_run(&tool, d.in, NULL, &d);
	}
	if (rc == 0) {
		for (int i = 0; i < n; i++)
			names[i] = cli_shown(names[i]);
		if (bundle_check(d.m, d.n, names) < 0 || write_all(&d, out, listing) < 0)
			rc = cli_fail(tool.prog);
	}
	for (int i = 0; i < d.n; i++)
		tmodel_free(d.m[i]);
	free(d.m);
	free(names);
	return rc;
}
