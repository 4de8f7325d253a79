/* onnx2top - import an ONNX model as Top IR at stage origin; --bind makes
 * graph inputs constants, --list-ops prints the operators it takes. */
#include <getopt.h>
#include <stdlib.h>

#include "base.h"
#include "cli.h"
#include "ir.h"
#include "npz.h"
#include "onnx_import.h"

static const char usage[] = "usage: onnx2top MODEL.onnx [-o OUT] [--bind CONSTS.npz]\n       onnx2top --list-ops\n";

/* Print the error on one line: names from a corrupt model may hold
 * control characters. */
static int fail(void)
{
	fputs("onnx2top: ", stderr);
	for (const char *s = err_msg(); *s; s++)
		fputc((unsigned char)*s < ' ' ? '?' : *s, stderr);
	fputc('\n', stderr);
	return 1;
}

/* One supported ONNX operator type per line. */
static int list_ops(void)
{
	int n = onnx_supported_ops(NULL, 0);
	const char **names = malloc(sizeof *names * (size_t)n);
	if (!names)
		return 1;
	onnx_supported_ops(names, n);
	for (int i = 0; i < n; i++)
		puts(names[i]);
	free(names);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "list-ops", no_argument, NULL, 'L' },
		{ "bind", required_argument, NULL, 'b' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *out = NULL, *bind = NULL;
	int c;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "ho:", longopts, NULL)) != -1) {
		switch (c) {
		case 'L':
			return list_ops();
		case 'b':
			bind = optarg;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		case 'o':
			out = optarg;
			break;
		default:
			return cli_bad_option("onnx2top", usage, argv, "ob");
		}
	}
	if (argc - optind != 1) {
		fputs(usage, stderr);
		return 2;
	}
	const char *path = argv[optind];
	const char *shown = cli_shown(path);

	void *buf;
	size_t len;
	struct ir_graph *g;
	struct npz consts = { 0 };
	if (bind && npz_read(bind, &consts) < 0)
		return fail();
	if (file_read_all(path, &buf, &len) < 0) {
		npz_free(&consts);
		return fail();
	}
	int rc = onnx_import_bound(buf, len, shown, bind ? &consts : NULL, &g);
	free(buf);
	npz_free(&consts);
	if (rc < 0)
		return fail();
	if (ir_write(out, g) < 0) {
		graph_free(g);
		return fail();
	}
	graph_free(g);
	return 0;
}
