/* ir_print.c - print a graph as MLIR-like text or as Graphviz DOT
 * (ir_print.h has the text form).
 */
#include "ir/ir_print.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ir/base.h"

static const char *place_name(enum placement p)
{
	return p == PLACE_LOCAL ? "local" : p == PLACE_GLOBAL ? "global" :
	       p == PLACE_HOST ? "host" : "none";
}

/* 1 if s can be printed unquoted after a sigil: [A-Za-z0-9_.$-]+. */
static int plain_name(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && !strchr("_.$-", *s))
			return 0;
	return 1;
}

/* s in double quotes with ", \ and control bytes escaped (\" \\ \xx). */
static void put_quoted(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20 || c == 0x7f)
			fprintf(f, "\\%02x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

/* Tensor t as %name (activation), @name (weight) or none (t < 0). */
static void put_ref(FILE *f, const struct ir_graph *g, int t)
{
	if (t < 0) {
		fputs("none", f);
		return;
	}
	const struct ir_tensor *ten = &g->tensors[t];
	fputc(ten->data ? '@' : '%', f);
	if (plain_name(ten->name))
		fputs(ten->name, f);
	else
		put_quoted(f, ten->name);
}

/* Shortest of %.6g / %.9g / %.17g that reads back as the same double. */
static void put_double(FILE *f, double v)
{
	char buf[40];
	static const char *const fmts[] = { "%.6g", "%.9g", "%.17g" };
	for (size_t i = 0; i < ARRAY_LEN(fmts); i++) {
		snprintf(buf, sizeof buf, fmts[i], v);
		if (strtod(buf, NULL) == v)
			break;
	}
	fputs(buf, f);
}

/* The same for a float: %.6g, else %.9g (always exact for float). */
static void put_float(FILE *f, float v)
{
	char buf[40];
	snprintf(buf, sizeof buf, "%.6g", v);
	if (strtof(buf, NULL) != v)
		snprintf(buf, sizeof buf, "%.9g", v);
	fputs(buf, f);
}

/* dtype[d0,d1,...] and, for a quantised tensor, <scale=S[,zp=Z]>. */
static void put_type(FILE *f, const struct ir_graph *g, int t)
{
	if (t < 0) {
		fputs("none", f);
		return;
	}
	const struct ir_tensor *ten = &g->tensors[t];
	fprintf(f, "%s[", dtype_name(ten->dtype));
	for (int i = 0; i < ten->rank; i++)
		fprintf(f, "%s%lld%s", i ? "," : "", (long long)ten->shape[i],
			ten->dyn >> i & 1 ? "?" : "");
	fputc(']', f);
	if (ten->scale != 0 || ten->zero_point != 0) {
		fputs("<scale=", f);
		put_float(f, ten->scale);
		if (ten->zero_point)
			fprintf(f, ",zp=%d", ten->zero_point);
		if (ten->qdtype != DT_F32)
			fprintf(f, ",%s", dtype_name(ten->qdtype));
		fputc('>', f);
	}
}

/* name=value with ints and floats as [a,b,...], strings quoted. */
static void put_attr(FILE *f, const struct ir_attr *a)
{
	fprintf(f, "%s=", a->name);
	switch (a->kind) {
	case ATTR_INT:
		fprintf(f, "%lld", (long long)a->i);
		break;
	case ATTR_FLOAT:
		put_double(f, a->f);
		break;
	case ATTR_INTS:
		fputc('[', f);
		for (int i = 0; i < a->n; i++)
			fprintf(f, "%s%lld", i ? "," : "", (long long)a->ints[i]);
		fputc(']', f);
		break;
	case ATTR_FLOATS:
		fputc('[', f);
		for (int i = 0; i < a->n; i++) {
			if (i)
				fputc(',', f);
			put_float(f, a->floats[i]);
		}
		fputc(']', f);
		break;
	case ATTR_STR:
		put_quoted(f, a->s ? a->s : "");
		break;
	case ATTR_GRAPH:   /* printed after the graph, as func @OP.NAME */
		fprintf(f, "func(%d ops)", a->graph->n_ops);
		break;
	}
}

static int finish(FILE *f)
{
	if (fflush(f) == EOF || ferror(f))
		return err_set("cannot write the listing:");
	return 0;
}

/* The trailing comment of an op in a grouped or addressed graph, if any. */
static void put_placement(FILE *f, const struct ir_graph *g, const struct ir_op *op)
{
	const char *sep = "  // ";
	if (op->group >= 0) {
		fprintf(f, "%sgroup %d", sep, op->group);
		sep = ", ";
	}
	if (op->place != PLACE_NONE) {
		fprintf(f, "%s%s", sep, place_name(op->place));
		sep = ", ";
	}
	for (int pass = 0; pass < 2; pass++) {
		int n = pass ? op->n_in : op->n_out;
		const int *ts = pass ? op->in : op->out;
		for (int i = 0; i < n; i++) {
			if (ts[i] < 0 || g->tensors[ts[i]].addr < 0)
				continue;
			fputs(sep, f);
			put_ref(f, g, ts[i]);
			fprintf(f, " at 0x%llx", (unsigned long long)g->tensors[ts[i]].addr);
			sep = ", ";
		}
	}
}

static void put_op(FILE *f, const struct ir_graph *g, const struct ir_op *op)
{
	fputs("  ", f);
	for (int i = 0; i < op->n_out; i++) {
		if (i)
			fputs(", ", f);
		put_ref(f, g, op->out[i]);
	}
	fprintf(f, " = %s(", op_name(op->type));
	for (int i = 0; i < op->n_in; i++) {
		if (i)
			fputs(", ", f);
		put_ref(f, g, op->in[i]);
	}
	fputc(')', f);
	if (op->n_attr) {
		fputs(" {", f);
		for (int i = 0; i < op->n_attr; i++) {
			if (i)
				fputs(", ", f);
			put_attr(f, &op->attr[i]);
		}
		fputc('}', f);
	}
	fputs(" : (", f);
	for (int i = 0; i < op->n_in; i++) {
		if (i)
			fputs(", ", f);
		put_type(f, g, op->in[i]);
	}
	fputs(") -> ", f);
	if (op->n_out != 1)
		fputc('(', f);
	for (int i = 0; i < op->n_out; i++) {
		if (i)
			fputs(", ", f);
		put_type(f, g, op->out[i]);
	}
	if (op->n_out != 1)
		fputc(')', f);
	fputs(" loc(", f);
	put_quoted(f, op->name ? op->name : "");
	fputc(')', f);
	put_placement(f, g, op);
	fputc('\n', f);
}

/* "%x: f32[...], ..." for a list of graph inputs or outputs. */
static void put_params(FILE *f, const struct ir_graph *g, int n, const int *ts)
{
	for (int i = 0; i < n; i++) {
		if (i)
			fputs(", ", f);
		put_ref(f, g, ts[i]);
		fputs(": ", f);
		put_type(f, g, ts[i]);
	}
}

static void put_func(FILE *f, const struct ir_graph *g, const char *name, const char *prefix);

int ir_print_text(FILE *f, const struct ir_graph *g)
{
	fprintf(f, "// tpuc ir: dialect %s, stage %s, chip %s, mode %s, %d ops, %d tensors",
		dialect_name(g->dialect), stage_name(g->stage),
		g->chip && *g->chip ? g->chip : "none", g->mode != MODE_NONE ? mode_name(g->mode) : "none",
		g->n_ops, g->n_tensors);
	if (g->neuron_bytes > 0 || g->coeff_bytes > 0)
		fprintf(f, ", neuron %lld bytes, coeff %lld bytes",
			(long long)g->neuron_bytes, (long long)g->coeff_bytes);
	fputc('\n', f);
	put_func(f, g, g->name && *g->name ? g->name : "graph", "");
	return finish(f);
}

/* One graph as func @NAME(...) { ... }, then each subgraph of its ops
 * (If, Loop, Scan bodies) as func @PREFIX OP.ATTR, a nested one's name
 * after its enclosing subgraph's: @Loop_s.body.If_s_out.then_branch. */
static void put_func(FILE *f, const struct ir_graph *g, const char *name, const char *prefix)
{
	fputs("func @", f);
	if (plain_name(name))
		fputs(name, f);
	else
		put_quoted(f, name);
	fputc('(', f);
	put_params(f, g, g->n_inputs, g->inputs);
	fputs(") -> (", f);
	put_params(f, g, g->n_outputs, g->outputs);
	fputs(") {\n", f);
	for (int i = 0; i < g->n_ops; i++)
		put_op(f, g, &g->ops[i]);
	fputs("  return", f);
	for (int i = 0; i < g->n_outputs; i++) {
		fputs(i ? ", " : " ", f);
		put_ref(f, g, g->outputs[i]);
	}
	fputs("\n}\n", f);
	for (int i = 0; i < g->n_ops; i++)
		for (int j = 0; j < g->ops[i].n_attr; j++) {
			const struct ir_attr *a = &g->ops[i].attr[j];
			if (a->kind != ATTR_GRAPH)
				continue;
			size_t len = strlen(prefix) + strlen(g->ops[i].name) + strlen(a->name) + 3;
			char *sub = xmalloc(len);
			snprintf(sub, len, "%s%s.%s", prefix, g->ops[i].name, a->name);
			char *pre = xmalloc(len + 1);
			snprintf(pre, len + 1, "%s.", sub);
			put_func(f, a->graph, sub, pre);
			free(pre);
			free(sub);
		}
}

/* ---- DOT ---- */

/* s inside a DOT double-quoted string: " and \ escaped. */
static void dot_str(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fputc('\\', f);
		if ((unsigned char)*s < 0x20)
			fputc(' ', f);
		else
			fputc(*s, f);
	}
}

/* A tensor's name and type inside a DOT string. */
static void dot_tensor(FILE *f, const struct ir_graph *g, int t)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	if (!m)
		return;
	put_ref(m, g, t);
	fputc(' ', m);
	put_type(m, g, t);
	fclose(m);
	dot_str(f, buf);
	free(buf);
}

static void dot_op(FILE *f, const struct ir_graph *g, int i)
{
	const struct ir_op *op = &g->ops[i];
	fprintf(f, "  op%d [label=\"%s\\n", i, op_name(op->type));
	dot_str(f, op->name ? op->name : "");
	for (int j = 0; j < op->n_in; j++)
		if (op->in[j] >= 0 && g->tensors[op->in[j]].data) {
			fputs("\\n", f);
			dot_tensor(f, g, op->in[j]);
		}
	for (int j = 0; j < op->n_attr; j++) {
		char *buf = NULL;
		size_t len = 0;
		FILE *m = open_memstream(&buf, &len);
		if (!m)
			continue;
		put_attr(m, &op->attr[j]);
		fclose(m);
		fputs("\\n", f);
		dot_str(f, buf);
		free(buf);
	}
	if (op->place != PLACE_NONE)
		fprintf(f, "\\n(%s)", place_name(op->place));
	fputs("\"];\n", f);
}

int ir_print_dot(FILE *f, const struct ir_graph *g)
{
	/* producer[t]: op index, or -1 - i for graph input i, or INT32_MIN */
	int *producer = xmalloc((size_t)(g->n_tensors ? g->n_tensors : 1) * sizeof *producer);
	for (int t = 0; t < g->n_tensors; t++)
		producer[t] = INT32_MIN;
	for (int i = 0; i < g->n_inputs; i++)
		producer[g->inputs[i]] = -1 - i;
	for (int i = 0; i < g->n_ops; i++)
		for (int j = 0; j < g->ops[i].n_out; j++)
			if (g->ops[i].out[j] >= 0)
				producer[g->ops[i].out[j]] = i;

	fputs("digraph \"", f);
	dot_str(f, g->name && *g->name ? g->name : "graph");
	fprintf(f, "\" {\n  graph [label=\"%s %s", dialect_name(g->dialect),
		stage_name(g->stage));
	if (g->chip && *g->chip) {
		fputs(", ", f);
		dot_str(f, g->chip);
	}
	if (g->mode != MODE_NONE) {
		fputs(" ", f);
		dot_str(f, mode_name(g->mode));
	}
	fputs("\", labelloc=t];\n"
	      "  node [shape=box, fontname=\"monospace\", fontsize=10];\n"
	      "  edge [fontname=\"monospace\", fontsize=9];\n", f);
	for (int i = 0; i < g->n_inputs; i++) {
		fprintf(f, "  in%d [shape=ellipse, label=\"", i);
		dot_tensor(f, g, g->inputs[i]);
		fputs("\"];\n", f);
	}
	/* ops, clustered by layer group where the graph has groups */
	for (int i = 0; i < g->n_ops; i++) {
		int grp = g->ops[i].group;
		if (grp < 0) {
			dot_op(f, g, i);
			continue;
		}
		int first = 1;
		for (int j = 0; j < i; j++)
			if (g->ops[j].group == grp)
				first = 0;
		if (!first)
			continue;
		fprintf(f, "  subgraph cluster_g%d {\n  label=\"group %d\";\n", grp, grp);
		for (int j = i; j < g->n_ops; j++)
			if (g->ops[j].group == grp)
				dot_op(f, g, j);
		fputs("  }\n", f);
	}
	for (int i = 0; i < g->n_ops; i++) {
		const struct ir_op *op = &g->ops[i];
		for (int j = 0; j < op->n_in; j++) {
			int t = op->in[j];
			if (t < 0 || g->tensors[t].data || producer[t] == INT32_MIN)
				continue;
			if (producer[t] >= 0)
				fprintf(f, "  op%d -> op%d [label=\"", producer[t], i);
			else
				fprintf(f, "  in%d -> op%d [label=\"", -1 - producer[t], i);
			dot_tensor(f, g, t);
			fputs("\"];\n", f);
		}
	}
	for (int i = 0; i < g->n_outputs; i++) {
		int t = g->outputs[i];
		fprintf(f, "  out%d [shape=ellipse, label=\"", i);
		dot_tensor(f, g, t);
		fputs("\"];\n", f);
		if (producer[t] >= 0)
			fprintf(f, "  op%d -> out%d;\n", producer[t], i);
		else if (producer[t] != INT32_MIN)
			fprintf(f, "  in%d -> out%d;\n", -1 - producer[t], i);
	}
	fputs("}\n", f);
	free(producer);
	return finish(f);
}
