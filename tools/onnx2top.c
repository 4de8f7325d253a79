/* onnx2top - import an ONNX model as Top IR at stage origin. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "ir.h"
#include "onnx_import.h"

static const char usage[] = "usage: onnx2top MODEL.onnx [-o OUT]\n";

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

int main(int argc, char **argv)
{
	const char *out = NULL;
	int c;
	opterr = 0;
	while ((c = getopt(argc, argv, "ho:")) != -1) {
		switch (c) {
		case 'h':
			fputs(usage, stdout);
			return 0;
		case 'o':
			out = optarg;
			break;
		default:
			if (optopt == 'o')
				fprintf(stderr, "onnx2top: option '-o' needs a file name\n%s", usage);
			else
				fprintf(stderr, "onnx2top: unknown option '%s'\n%s", argv[optind - 1], usage);
			return 2;
		}
	}
	if (argc - optind != 1) {
		fputs(usage, stderr);
		return 2;
	}
	const char *path = argv[optind];
	const char *shown = strcmp(path, "-") ? path : "<stdin>";

	void *buf;
	size_t len;
	struct ir_graph *g;
	if (file_read_all(path, &buf, &len) < 0)
		return fail();
	int rc = onnx_import(buf, len, shown, &g);
	free(buf);
	if (rc < 0)
		return fail();
	if (ir_write(out, g) < 0) {
		graph_free(g);
		return fail();
	}
	graph_free(g);
	return 0;
}
