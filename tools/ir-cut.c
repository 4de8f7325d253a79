/* ir-cut - cut a Top or Tpu IR file (any stage before layergroup) at named
 * tensors, which become the graph's outputs; everything they do not need
 * is dropped (lib/ir_cut.h).  With the rest of the pipeline and tpu-sim
 * against ir-run, it finds the first layer where the chip goes wrong.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/base.h"
#include "tool/cli.h"
#include "ir/ir.h"
#include "passes/ir_cut.h"

static const char prog[] = "ir-cut";
static const char usage[] = "usage: ir-cut [IN] --at NAME[,NAME...] [-o OUT]\n";

struct names {
	int n, cap;
	char **v;
};

/* Split "a,b,c" into NAMES (empty parts skipped). */
static void add_names(struct names *nm, const char *s)
{
	const char *p = s;
	for (;;) {
		size_t len = strcspn(p, ",");
		if (len) {
			grow_array((void **)&nm->v, &nm->cap, nm->n + 1, sizeof *nm->v);
			nm->v[nm->n++] = strndup(p, len);
		}
		if (!p[len])
			break;
		p += len + 1;
	}
}

int main(int argc, char **argv)
{
	int std_rc = cli_help_version(prog, usage, argc, argv);
	if (std_rc >= 0)
		return std_rc;
	static const struct option longopts[] = {
		{ "at", required_argument, NULL, 'a' },
		{ "output", required_argument, NULL, 'o' },
		{ NULL, 0, NULL, 0 },
	};
	struct names nm = { 0 };
	const char *in, *out = NULL;
	int c, rc;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":o:", longopts, NULL)) != -1) {
		switch (c) {
		case 'a': add_names(&nm, optarg); break;
		case 'o': out = optarg; break;
		case ':': rc = cli_missing_value(prog, usage, argv); goto done;
		default: rc = cli_bad_option(prog, usage, argv, ""); goto done;
		}
	}
	if (!(in = cli_input(argc, argv, usage))) {
		rc = 2;
		goto done;
	}
	if (!nm.n) {
		rc = cli_usage_error(prog, usage, "no tensor to cut at given (--at NAME)");
		goto done;
	}
	if (cli_check_stdout(prog, usage, out, "IR")) {
		rc = 2;
		goto done;
	}
	/* Top at origin or canonical, Tpu at lowered or reordered. */
	struct ir_graph *g = NULL;
	rc = 0;
	if (ir_read(in, &g) < 0)
		rc = -1;
	else if (ir_expect(g, in, g->dialect, g->dialect == DIALECT_TOP
			   ? (1u << STAGE_ORIGIN) | (1u << STAGE_CANONICAL)
			   : (1u << STAGE_LOWERED) | (1u << STAGE_REORDERED)) < 0)
		rc = -1;
	else if (ir_cut(g, nm.n, (const char *const *)nm.v) < 0)
		rc = err_prefix("'%s'", cli_shown(in));
	else if (ir_write(out, g) < 0)
		rc = -1;
	graph_free(g);
	rc = rc ? cli_fail(prog) : 0;
done:
	for (int i = 0; i < nm.n; i++)
		free(nm.v[i]);
	free(nm.v);
	return rc;
}
