/* onnx2top - import an ONNX model as Top IR at stage origin; --bind makes
 * graph inputs constants, --shape fixes an input's dynamic dimensions,
 * --list-ops prints the operators it takes. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "ir/base.h"
#include "tool/cli.h"
#include "ir/ir.h"
#include "ir/npz.h"
#include "front/onnx_import.h"

static const char usage[] =
	"usage: onnx2top MODEL.onnx [-o OUT] [--bind CONSTS.npz] [--shape INPUT=D0,D1,...]...\n"
	"                [--shapes-from INPUTS.npz]\n"
	"                [--max-memory SIZE]\n"
	"       onnx2top --list-ops\n";

/* Print the error on one line (names from a corrupt model may hold
 * control characters) and return status. */
static int fail(int status)
{
	fputs("onnx2top: ", stderr);
	for (const char *s = err_msg(); *s; s++)
		fputc((unsigned char)*s < ' ' ? '?' : *s, stderr);
	fputc('\n', stderr);
	return status;
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

/* --shapes-from: each array of LIKE a soft shape for the input of its
 * name, after the --shape ones (which win). */
static void add_shapes_from(const struct npz *like, struct onnx_input_shape **shapes, int *n)
{
	for (int i = 0; i < like->n; i++) {
		const struct npz_array *a = &like->a[i];
		int empty = 0;
		for (int j = 0; j < a->rank; j++)
			empty |= a->shape[j] < 1;
		if (empty)
			continue;
		*shapes = xrealloc(*shapes, sizeof **shapes * (size_t)(*n + 1));
		struct onnx_input_shape *s = &(*shapes)[(*n)++];
		memset(s, 0, sizeof *s);
		s->name = a->name;
		s->name_len = strlen(a->name);
		s->rank = a->rank;
		memcpy(s->shape, a->shape, sizeof(int64_t) * (size_t)a->rank);
		s->soft = 1;
	}
}

int main(int argc, char **argv)
{
	int std_rc = cli_help_version("onnx2top", usage, argc, argv);
	if (std_rc >= 0)
		return std_rc;
	static const struct option longopts[] = {
		{ "list-ops", no_argument, NULL, 'L' },
		{ "bind", required_argument, NULL, 'b' },
		{ "shape", required_argument, NULL, 's' },
		{ "shapes-from", required_argument, NULL, 'S' },
		{ "max-memory", required_argument, NULL, 'M' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *out = NULL, *bind = NULL, *shapes_from = NULL;
	struct onnx_input_shape *shapes = NULL;
	int n_shapes = 0, c;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":ho:", longopts, NULL)) != -1) {
		switch (c) {
		case 'L':
			free(shapes);
			return list_ops();
		case 'b':
			bind = optarg;
			break;
		case 'S':
			shapes_from = optarg;
			break;
		case 's':
			shapes = xrealloc(shapes, sizeof *shapes * (size_t)(n_shapes + 1));
			memset(&shapes[n_shapes], 0, sizeof *shapes);
			if (onnx_input_shape_parse(optarg, &shapes[n_shapes++]) < 0) {
				free(shapes);
				return fail(2);
			}
			break;
		case 'M':
			if (cli_max_memory("onnx2top", usage, optarg))
				return free(shapes), 2;
			break;
		case 'h':
			free(shapes);
			fputs(usage, stdout);
			return 0;
		case 'o':
			out = optarg;
			break;
		default:
			free(shapes);
			if (c == ':' && (optopt == 's' || optopt == 'S'))
				return cli_missing_value("onnx2top", usage, argv);
			return cli_bad_option("onnx2top", usage, argv, "ob");
		}
	}
	if (argc - optind != 1) {
		free(shapes);
		return cli_operands("onnx2top", usage, 1, argc - optind);
	}
	const char *path = argv[optind];
	const char *shown = cli_shown(path);

	void *buf;
	size_t len;
	struct ir_graph *g;
	struct npz consts = { 0 }, like = { 0 };
	int rc = bind ? npz_read(bind, &consts) : 0;
	if (rc >= 0 && shapes_from && (rc = npz_read(shapes_from, &like)) >= 0)
		add_shapes_from(&like, &shapes, &n_shapes);
	if (rc >= 0 && (rc = file_read_all(path, &buf, &len)) >= 0) {
		rc = onnx_import_consume(buf, len, shown, bind ? &consts : NULL, shapes, n_shapes, &g);
		free(buf);
	}
	npz_free(&consts);
	npz_free(&like);
	free(shapes);
	if (rc < 0)
		return fail(1);
	if (ir_write(out, g) < 0) {
		graph_free(g);
		return fail(1);
	}
	graph_free(g);
	return 0;
}
