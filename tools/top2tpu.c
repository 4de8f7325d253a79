/* top2tpu - lower Top IR (stage canonical or origin) to Tpu IR for one chip
 * and one mode (f32, bf16, f16, or int8 with a calibration table), with
 * per-op modes from a qtable for mixed precision.
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "ir/base.h"
#include "calib/calib.h"
#include "tool/cli.h"
#include "ir/ir.h"
#include "back/lower.h"

static const char prog[] = "top2tpu";
static const char usage[] =
	"usage: top2tpu [IN] --chip tpu-a|tpu-b --mode f32|bf16|f16|int8 [--calib TABLE]\n"
	"               [--qtable QTABLE] [--signed-only | --asymmetric] [-o OUT]\n"
	"               [--max-memory SIZE]\n";

int main(int argc, char **argv)
{
	int std_rc = cli_help_version(prog, usage, argc, argv);
	if (std_rc >= 0)
		return std_rc;
	static const struct option longopts[] = {
		{ "chip", required_argument, NULL, 'c' },
		{ "mode", required_argument, NULL, 'm' },
		{ "calib", required_argument, NULL, 't' },
		{ "signed-only", no_argument, NULL, 's' },
		{ "asymmetric", no_argument, NULL, 'a' },
		{ "qtable", required_argument, NULL, 'q' },
		{ "max-memory", required_argument, NULL, 'M' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *in, *out = NULL, *chip = NULL, *mode = NULL, *table = NULL, *qfile = NULL;
	struct lower_opts lo = { 0 };
	int c;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":ho:", longopts, NULL)) != -1) {
		switch (c) {
		case 'M':
			if (cli_max_memory("top2tpu", usage, optarg))
				return 2;
			break;
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
		case ':': return cli_missing_value(prog, usage, argv);
		default: return cli_bad_option(prog, usage, argv, "");
		}
	}
	if (!(in = cli_input(argc, argv, usage)))
		return 2;
	if (!chip)
		return cli_usage_error(prog, usage, "--chip is required");
	if (!mode)
		return cli_usage_error(prog, usage, "--mode is required");
	if (lo.signed_only && lo.asymmetric)
		return cli_usage_error(prog, usage, "--signed-only and --asymmetric exclude each other");
	if (!lower_chip_known(chip))
		return cli_usage_error(prog, usage, "unknown chip '%s' (tpu-a or tpu-b)", chip);
	int m = mode_from_name(mode);
	if (m < 0)
		return cli_usage_error(prog, usage, "unknown mode '%s' (f32, bf16, f16 or int8)", mode);

	struct ir_graph *top = NULL, *tpu = NULL;
	struct calib_table *tab = NULL;
	struct qtable *qt = NULL;
	int rc = 1;
	if (ir_read(in, &top) < 0 ||
	    ir_expect(top, in, DIALECT_TOP, 1u << STAGE_ORIGIN | 1u << STAGE_CANONICAL) < 0)
		goto fail;
	if (qfile && qtable_read(qfile, &qt) < 0)
		goto fail;
	int int8 = m == MODE_INT8;
	for (int i = 0; qt && i < qt->n; i++)
		int8 |= qt->e[i].mode == MODE_INT8;
	if (!int8 && (lo.signed_only || lo.asymmetric)) {
		/* int8-only options with nothing in int8: refused, not ignored */
		const char *opt = lo.signed_only ? "--signed-only" : "--asymmetric";
		graph_free(top);
		qtable_free(qt);
		if (qfile)
			return cli_usage_error(prog, usage, "%s applies to int8 ops; --mode %s and "
					       "'%s' put none in int8", opt, mode, qfile);
		return cli_usage_error(prog, usage, "%s applies to --mode int8 only, not %s",
				       opt, mode);
	}
	if (int8 && !table && m == MODE_INT8 && !qfile && !lower_model_quantised(top)) {
		graph_free(top);
		return cli_usage_error(prog, usage, "--mode int8 needs --calib TABLE (or a model "
				       "quantised by itself, formats/tpuc-quant.5)");
	}
	if (int8 && !table && !lower_model_quantised(top)) {
		fprintf(stderr, "%s: '%s' puts ops in int8: --calib TABLE is needed\n", prog,
			qfile);
		goto done;
	}
	/* int8 needs the table; f16 uses it to keep out-of-range ops in f32 */
	if (table && calib_table_read(table, &tab) < 0)
		goto fail;
	lo.tab = tab;
	lo.notes = stderr;
	lo.prog = prog;
	lo.qt = qt;
	if (lower_graph_opts(top, chip, (enum ir_mode)m, &lo, &tpu) < 0) {
		err_prefix("'%s'", cli_shown(in));
		goto fail;
	}
	if (ir_write(out, tpu) < 0)
		goto fail;
	rc = 0;
	goto done;
fail:
	cli_fail(prog);
done:
	graph_free(top);
	graph_free(tpu);
	calib_table_free(tab);
	qtable_free(qt);
	return rc;
}
