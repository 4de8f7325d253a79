/* codegen - generate the .tmodel (command streams, coefficients, I/O and
 * layer table) from an addressed Tpu graph.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "base.h"
#include "chip.h"
#include "codegen.h"
#include "ir.h"
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

int main(int argc, char **argv)
{
	const char *out = NULL, *listing = NULL;
	int c;
	opterr = 0;
	static const struct option none[] = { { 0, 0, 0, 0 } };
	while ((c = getopt_long(argc, argv, "hl:o:", none, NULL)) != -1) {
		switch (c) {
		case 'h':
			fputs(usage, stdout);
			return 0;
		case 'l':
			listing = optarg;
			break;
		case 'o':
			out = optarg;
			break;
		default:
			if (optopt == 'o' || optopt == 'l')
				fprintf(stderr, "codegen: option '-%c' needs a file name\n%s", optopt, usage);
			else if (optopt)
				fprintf(stderr, "codegen: unknown option '-%c'\n%s", optopt, usage);
			else
				fprintf(stderr, "codegen: unknown option '%s'\n%s", argv[optind - 1], usage);
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
	struct tmodel *m = NULL;
	const struct chip *chip = NULL;
	int rc = ir_read(in, &g) < 0 || ir_expect(g, in, DIALECT_TPU, 1u << STAGE_ADDRESSED) < 0;
	if (!rc && !(chip = chip_find(g->chip)))
		rc = err_set("'%s': unknown chip '%s'", shown, g->chip ? g->chip : "");
	if (rc || codegen(g, chip, &m) < 0 || tmodel_write(out, m) < 0 ||
	    (listing && write_listing(listing, m) < 0)) {
		fprintf(stderr, "codegen: %s\n", err_msg());
		tmodel_free(m);
		graph_free(g);
		return 1;
	}
	tmodel_free(m);
	graph_free(g);
	return 0;
}
