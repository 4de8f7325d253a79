/* top2tpu - lower Top IR (stage canonical or origin) to Tpu IR for one chip
 * and one mode (f32, bf16, f16, or int8 with a calibration table), with
 * per-op modes from a qtable for mixed precision.
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "calib.h"
#include "ir.h"
#include "lower.h"

static const char usage[] =
	"usage: top2tpu [IN] --chip tpu-a|tpu-b --mode f32|bf16|f16|int8 [--calib TABLE]\n"
	"               [--qtable QTABLE] [--signed-only | --asymmetric] [-o OUT]\n";

static int usage_error(const char *fmt, const char *arg)
{
	fputs("top2tpu: ", stderr);
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\n%s", usage);
	return 2;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "chip", required_argument, NULL, 'c' },
		{ "mode", required_argument, NULL, 'm' },
		{ "calib", required_argument, NULL, 't' },
		{ "signed-only", no_argument, NULL, 's' },
		{ "asymmetric", no_argument, NULL, 'a' },
		{ "qtable", required_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *out = NULL, *chip = NULL, *mode = NULL, *table = NULL, *qfile = NULL;
	struct lower_opts lo = { 0 };
	int c;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "ho:", longopts, NULL)) != -1) {
		switch (c) {
		case 'h':
			fputs(usage, stdout);
			return 0;
		case 'o': out = optarg; break;
		case 'c': chip = optarg; break;
		case 'm': mode = optarg; break;
		case 't': table = optarg; break;
		case 's': lo.signed_only = 1; break;
		case 'a': lo.asymmetric = 1; break;
		case 'q': qfile = optarg; break;
		case ':':
		default:
			if (optopt)
				return usage_error("option '-%c' needs an argument",
						   (char[]){ (char)optopt, 0 });
			return usage_error("unknown option or missing argument '%s'", argv[optind - 1]);
		}
	}
	if (argc - optind > 1)
		return usage_error("extra argument '%s'", argv[optind + 1]);
	if (!chip)
		return usage_error("%s", "--chip is required");
	if (!mode)
		return usage_error("%s", "--mode is required");
	if (lo.signed_only && lo.asymmetric)
		return usage_error("%s", "--signed-only and --asymmetric exclude each other");
	if (!lower_chip_known(chip))
		return usage_error("unknown chip '%s' (tpu-a or tpu-b)", chip);
	int m = lower_mode_from_name(mode);
	if (m < 0)
		return usage_error("unknown mode '%s' (f32, bf16, f16 or int8)", mode);
	if (m == LOWER_INT8 && !table)
		return usage_error("%s", "--mode int8 needs --calib TABLE");
	const char *in = argc > optind ? argv[optind] : "-";

	struct ir_graph *top = NULL, *tpu = NULL;
	struct calib_table *tab = NULL;
	struct qtable *qt = NULL;
	int rc = 1;
	if (ir_read(in, &top) < 0 ||
	    ir_expect(top, in, DIALECT_TOP, 1u << STAGE_ORIGIN | 1u << STAGE_CANONICAL) < 0)
		goto fail;
	if (qfile && qtable_read(qfile, &qt) < 0)
		goto fail;
	int int8 = m == LOWER_INT8;
	for (int i = 0; qt && i < qt->n; i++)
		int8 |= qt->e[i].mode == LOWER_INT8;
	if (int8 && !table) {
		fprintf(stderr, "top2tpu: '%s' puts ops in int8: --calib TABLE is needed\n", qfile);
		goto done;
	}
	if (table && int8 && calib_table_read(table, &tab) < 0)
		goto fail;
	lo.tab = tab;
	lo.qt = qt;
	if (lower_graph_opts(top, chip, mode, &lo, &tpu) < 0) {
		err_prefix("'%s'", strcmp(in, "-") ? in : "<stdin>");
		goto fail;
	}
	if (ir_write(out, tpu) < 0)
		goto fail;
	rc = 0;
	goto done;
fail:
	fprintf(stderr, "top2tpu: %s\n", err_msg());
done:
	graph_free(top);
	graph_free(tpu);
	calib_table_free(tab);
	qtable_free(qt);
	return rc;
}
