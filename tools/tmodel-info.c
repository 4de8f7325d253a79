/* tmodel-info - what a .tmodel holds, as TPU-MLIR's `model_tool --info`
 * prints it: chip, mode, the tools that wrote it, inputs and outputs with
 * their quantisation, memory sizes, a checksum of the coefficients, the
 * commands per engine, and the MACs of every layer; as text or as one JSON
 * object (--json).
 */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/base.h"
#include "tool/cli.h"
#include "chip/isa.h"
#include "ir/op.h"
#include "chip/bundle.h"
#include "chip/tmodel.h"

static const char prog[] = "tmodel-info";
static const char usage[] = "usage: tmodel-info [MODEL.tmodel] [--json] [-o OUT]\n";

/* CRC-32 (IEEE 802.3, as zlib's crc32() and Python's zlib.crc32). */
static uint32_t crc32_of(const unsigned char *p, size_t n)
{
	static uint32_t table[256];
	if (!table[1])
		for (uint32_t i = 0; i < 256; i++) {
			uint32_t c = i;
			for (int k = 0; k < 8; k++)
				c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
			table[i] = c;
		}
	uint32_t c = 0xffffffffu;
	for (size_t i = 0; i < n; i++)
		c = table[(c ^ p[i]) & 0xff] ^ (c >> 8);
	return c ^ 0xffffffffu;
}

/* S as a JSON string. */
static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p < 0x20)
			fprintf(f, "\\u%04x", *p);
		else
			fputc(*p, f);
	}
	fputc('"', f);
}

static void json_shape(FILE *f, const struct ir_tensor *t)
{
	fputc('[', f);
	for (int d = 0; d < t->rank; d++)
		fprintf(f, "%s%lld", d ? ", " : "", (long long)t->shape[d]);
	fputc(']', f);
}

static void json_io(FILE *f, const struct ir_graph *g, int n, const int *idx)
{
	fputc('[', f);
	for (int i = 0; i < n; i++) {
		const struct ir_tensor *t = &g->tensors[idx[i]];
		fprintf(f, "%s\n    {\"name\": ", i ? "," : "");
		json_str(f, t->name);
		fprintf(f, ", \"shape\": ");
		json_shape(f, t);
		fprintf(f, ", \"dtype\": \"%s\", \"scale\": %.9g, \"zero_point\": %lld, "
			"\"bytes\": %lld, \"addr\": %lld", dtype_name(t->dtype), (double)t->scale,
			(long long)t->zero_point, (long long)tensor_bytes(t), (long long)t->addr);
		if (t->dyn)   /* extents known at run time (tpuc-tmodel(5), Dynamic tensors) */
			fprintf(f, ", \"dyn\": %u", (unsigned)t->dyn);
		fputc('}', f);
	}
	fprintf(f, "%s]", n ? "\n  " : "");
}

struct info {
	int loads, stores;
	int64_t macs;
	int64_t *layer_macs;   /* per layer */
	int *layer_cmds;       /* compute commands per layer */
	uint32_t crc;
};

static void print_json(FILE *f, const struct tmodel *m, const struct info *in)
{
	const struct ir_graph *g = m->g;
	fprintf(f, "{\n  \"name\": ");
	json_str(f, m->name);
	fprintf(f, ",\n  \"chip\": ");
	json_str(f, m->chip);
	fprintf(f, ",\n  \"mode\": ");
	json_str(f, mode_name(m->mode));
	fprintf(f, ",\n  \"producer\": ");
	if (m->producer)
		json_str(f, m->producer);
	else
		fputs("null", f);
	fprintf(f, ",\n  \"format_version\": %d", TMODEL_VERSION);
	fprintf(f, ",\n  \"inputs\": ");
	json_io(f, g, g->n_inputs, g->inputs);
	fprintf(f, ",\n  \"outputs\": ");
	json_io(f, g, g->n_outputs, g->outputs);
	fprintf(f, ",\n  \"coeff_bytes\": %lld,\n  \"coeff_addr\": %lld,\n  \"coeff_crc32\": \"%08x\"",
		(long long)m->coeff_bytes, (long long)m->coeff_addr, in->crc);
	fprintf(f, ",\n  \"neuron_bytes\": %lld,\n  \"neuron_addr\": %lld",
		(long long)m->neuron_bytes, (long long)m->neuron_addr);
	fprintf(f, ",\n  \"commands\": {\"dma\": %d, \"compute\": %d}", m->n_dma, m->n_cmp);
	fprintf(f, ",\n  \"dma_commands\": {\"load\": %d, \"store\": %d}", in->loads, in->stores);
	fprintf(f, ",\n  \"layers\": [");
	for (int i = 0; i < g->n_ops; i++) {
		fprintf(f, "%s\n    {\"index\": %d, \"name\": ", i ? "," : "", i);
		json_str(f, g->ops[i].name);
		fprintf(f, ", \"type\": \"%s\", \"macs\": %lld, \"commands\": %d}",
			op_name(g->ops[i].type), (long long)in->layer_macs[i], in->layer_cmds[i]);
	}
	fprintf(f, "%s],\n  \"macs\": %lld\n}\n", g->n_ops ? "\n  " : "", (long long)in->macs);
}

static void text_io(FILE *f, const char *what, const struct ir_graph *g, int n, const int *idx)
{
	char shape[IR_MAX_RANK * 21 + 3];
	for (int i = 0; i < n; i++) {
		const struct ir_tensor *t = &g->tensors[idx[i]];
		shape_str(shape, sizeof shape, t->rank, t->shape);
		fprintf(f, "%-7s %d  %s %s %s", what, i, t->name, dtype_name(t->dtype), shape);
		if (t->scale != 0)
			fprintf(f, " scale %.9g zero_point %lld", (double)t->scale,
				(long long)t->zero_point);
		if (t->dyn)   /* extents known at run time, in the host's memory */
			fprintf(f, "  (dynamic dimensions %#x, in the host's memory)\n", (unsigned)t->dyn);
		else
			fprintf(f, "  (%lld bytes at 0x%llx)\n", (long long)tensor_bytes(t),
				(unsigned long long)t->addr);
	}
}

static void print_text(FILE *f, const struct tmodel *m, const struct info *in)
{
	const struct ir_graph *g = m->g;
	fprintf(f, "name     %s\n", m->name ? m->name : "");
	fprintf(f, "chip     %s\n", m->chip);
	fprintf(f, "mode     %s\n", mode_name(m->mode));
	fprintf(f, "producer %s\n", m->producer ? m->producer : "unknown (before tpuc 0.9.0)");
	fprintf(f, "format   %d\n", TMODEL_VERSION);
	text_io(f, "input", g, g->n_inputs, g->inputs);
	text_io(f, "output", g, g->n_outputs, g->outputs);
	fprintf(f, "coeff    %lld bytes at 0x%llx, crc32 %08x\n", (long long)m->coeff_bytes,
		(unsigned long long)m->coeff_addr, in->crc);
	fprintf(f, "neuron   %lld bytes at 0x%llx\n", (long long)m->neuron_bytes,
		(unsigned long long)m->neuron_addr);
	fprintf(f, "commands dma %d (load %d, store %d), compute %d\n", m->n_dma, in->loads,
		in->stores, m->n_cmp);
	fprintf(f, "layers   %d\n", g->n_ops);
	fprintf(f, "%-6s %-18s %8s %14s  %s\n", "layer", "type", "commands", "macs", "name");
	for (int i = 0; i < g->n_ops; i++)
		fprintf(f, "%-6d %-18s %8d %14lld  %s\n", i, op_name(g->ops[i].type),
			in->layer_cmds[i], (long long)in->layer_macs[i], g->ops[i].name);
	fprintf(f, "macs     %lld (%.4g GMAC)\n", (long long)in->macs, (double)in->macs / 1e9);
}

int main(int argc, char **argv)
{
	int std_rc = cli_help_version(prog, usage, argc, argv);
	if (std_rc >= 0)
		return std_rc;
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "output", required_argument, NULL, 'o' },
		{ NULL, 0, NULL, 0 },
	};
	const char *path, *out = NULL;
	int json = 0, c;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":o:", longopts, NULL)) != -1) {
		switch (c) {
		case 'j': json = 1; break;
		case 'o': out = optarg; break;
		case ':': return cli_missing_value(prog, usage, argv);
		default: return cli_bad_option(prog, usage, argv, "");
		}
	}
	if (!(path = cli_input(argc, argv, usage)))
		return 2;

	struct bundle b = { 0 };
	struct out_file o;
	if (bundle_read(path, &b) < 0 || out_open(&o, out) < 0) {
		bundle_free(&b);
		return cli_fail(prog);
	}
	/* a bundle of static shapes: each stage as a model of its own */
	if (b.n > 1)
		fprintf(o.fp, json ? "{\"stages\": [\n" : "stages   %d\n", b.n);
	for (int s = 0; s < b.n; s++) {
		const struct tmodel *m = b.stage[s];
		const struct ir_graph *g = m->g;
		struct info in = { 0 };
		in.layer_macs = xcalloc((size_t)g->n_ops + 1, sizeof *in.layer_macs);
		in.layer_cmds = xcalloc((size_t)g->n_ops + 1, sizeof *in.layer_cmds);
		for (int i = 0; i < m->n_dma; i++) {
			in.loads += m->dma[i].op == ISA_DMA_LOAD;
			in.stores += m->dma[i].op == ISA_DMA_STORE;
		}
		for (int i = 0; i < m->n_cmp; i++)
			in.layer_cmds[m->cmp[i].layer]++;   /* tmodel_read checked the index */
		for (int i = 0; i < g->n_ops; i++) {
			in.layer_macs[i] = op_macs(g, &g->ops[i]);
			in.macs += in.layer_macs[i];
		}
		in.crc = crc32_of(m->coeff, (size_t)m->coeff_bytes);
		if (b.n > 1 && !json)
			fprintf(o.fp, "%s== stage %d\n", s ? "\n" : "", s);
		if (json)
			print_json(o.fp, m, &in);
		else
			print_text(o.fp, m, &in);
		if (json && b.n > 1)
			fprintf(o.fp, s + 1 < b.n ? ",\n" : "]}\n");
		free(in.layer_macs);
		free(in.layer_cmds);
	}
	int rc = out_commit(&o) < 0 ? cli_fail(prog) : 0;
	bundle_free(&b);
	return rc;
}
