/* trace.c - which layer a DMA command serves, and the run as a Chrome
 * trace event document (lib/sim/sim.h).
 */
#include <stdio.h>
#include <string.h>

#include "ir/base.h"
#include "ir/op.h"
#include "sim/sim.h"

/* 1 if op reads tensor t. */
static int reads(const struct ir_op *op, int t)
{
	for (int i = 0; i < op->n_in; i++)
		if (op->in[i] == t)
			return 1;
	return 0;
}

/* 1 if op writes tensor t. */
static int writes(const struct ir_op *op, int t)
{
	for (int i = 0; i < op->n_out; i++)
		if (op->out[i] == t)
			return 1;
	return 0;
}

/* The tensors of d's dtype whose DDR holds d's first byte (activations
 * may share DDR over their lifetimes): up to cap of them in cand. */
static int candidates(const struct ir_graph *g, const struct isa_dma *d, int *cand, int cap)
{
	int n = 0;
	for (int i = 0; i < g->n_tensors && n < cap; i++) {
		const struct ir_tensor *t = &g->tensors[i];
		if (t->addr >= 0 && t->dtype == d->dtype && t->addr <= (int64_t)d->ddr &&
		    (int64_t)d->ddr < t->addr + (int64_t)tensor_bytes(t))
			cand[n++] = i;
	}
	return n;
}

void sim_dma_layer(const struct tmodel *m, const struct isa_dma *d, int *tensor, int *layer)
{
	const struct ir_graph *g = m->g;
	int cand[16];
	int n = candidates(g, d, cand, 16);
	*tensor = n ? cand[0] : -1;
	*layer = -1;
	if (!n)
		return;
	if (d->op == ISA_DMA_STORE) {
		/* What the compute command it waits for produced, else any
		 * producer of a candidate (a copy the DMA engine makes alone). */
		int k = d->wait ? (int)m->cmp[d->wait - 1].layer : -1;
		for (int j = 0; k >= 0 && j < n; j++)
			if (writes(&g->ops[k], cand[j])) {
				*tensor = cand[j];
				*layer = k;
				return;
			}
		for (int j = 0; j < n; j++)
			for (int o = 0; o < g->n_ops; o++)
				if (writes(&g->ops[o], cand[j])) {
					*tensor = cand[j];
					*layer = o;
					return;
				}
		return;
	}
	for (int c = (int)d->wait; c < m->n_cmp; c++) {
		const struct ir_op *op = &g->ops[m->cmp[c].layer];
		for (int j = 0; j < n; j++)
			if (reads(op, cand[j])) {
				*tensor = cand[j];
				*layer = (int)m->cmp[c].layer;
				return;
			}
	}
	for (int j = 0; j < n; j++)
		for (int o = 0; o < g->n_ops; o++)
			if (reads(&g->ops[o], cand[j]) || writes(&g->ops[o], cand[j])) {
				*tensor = cand[j];
				*layer = o;
				return;
			}
}

/* The reader of weight t that load d serves: the first compute command
 * from the one d waits for on that reads t, else t's first reader; -1. */
static int load_reader(const struct tmodel *m, const struct isa_dma *d, int t)
{
	const struct ir_graph *g = m->g;
	for (int c = (int)d->wait; c < m->n_cmp; c++)
		if (reads(&g->ops[m->cmp[c].layer], t))
			return (int)m->cmp[c].layer;
	for (int o = 0; o < g->n_ops; o++)
		if (reads(&g->ops[o], t))
			return o;
	return -1;
}

int sim_dma_shares(const struct tmodel *m, const struct isa_dma *d, int64_t cy,
		   struct sim_layer *layer)
{
	const struct ir_graph *g = m->g;
	if (d->op != ISA_DMA_LOAD || !d->n || !d->c || !d->h || !d->w)
		return 0;
	int64_t es = (int64_t)dtype_size(d->dtype), lo = d->ddr;
	int64_t hi = lo + ((int64_t)(d->n - 1) * d->nstride + (int64_t)(d->c - 1) * d->cstride +
			   (int64_t)d->h * d->w) * es;
	int64_t total = 0, given = 0;
	int n = 0, first = -1;
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < g->n_tensors; i++) {
			const struct ir_tensor *t = &g->tensors[i];
			if (!t->data || t->addr < 0 || t->addr >= hi ||
			    t->addr + (int64_t)tensor_bytes(t) <= lo)
				continue;
			int64_t a = t->addr > lo ? t->addr : lo;
			int64_t b = t->addr + (int64_t)tensor_bytes(t);
			b = (b < hi ? b : hi) - a;
			if (pass == 0) {
				total += b;
				n++;
				continue;
			}
			if (n < 2)
				return 0;
			int L = load_reader(m, d, i);
			if (L < 0)
				continue;
			int64_t part = cy * b / total;
			layer[L].dma_cycles += part;
			given += part;
			if (first < 0)
				first = L;
		}
	if (first >= 0)
		layer[first].dma_cycles += cy - given;
	return first >= 0;
}

/* S as the body of a JSON string. */
static void json_str(FILE *fp, const char *s)
{
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\')
			fprintf(fp, "\\%c", ch);
		else if (ch < 0x20)
			fprintf(fp, "\\u%04x", ch);
		else
			fputc(ch, fp);
	}
}

int sim_trace_write(FILE *fp, const struct tmodel *m, const struct chip *c,
		    const struct sim_stats *st)
{
	const struct ir_graph *g = m->g;
	double us = 1e6 / c->clock_hz;   /* microseconds per cycle */
	fputs("{\"displayTimeUnit\": \"ns\", \"otherData\": {\"model\": \"", fp);
	json_str(fp, m->name ? m->name : "");
	fprintf(fp, "\", \"chip\": \"%s\", \"mode\": \"%s\", \"clock_hz\": %.17g, "
		"\"cycles\": %lld},\n\"traceEvents\": [\n", c->name, mode_name(m->mode),
		c->clock_hz, (long long)st->cycles);
	fputs("{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": 1, \"tid\": 0, "
	      "\"args\": {\"name\": \"", fp);
	json_str(fp, m->name && *m->name ? m->name : "tpu-sim");
	fprintf(fp, " (%s %s)\"}},\n", c->name, mode_name(m->mode));
	fputs("{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": 1, \"tid\": 1, "
	      "\"args\": {\"name\": \"DMA\"}},\n", fp);
	fputs("{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": 1, \"tid\": 2, "
	      "\"args\": {\"name\": \"compute\"}}", fp);
	for (int i = 0; i < st->n_events; i++) {
		const struct sim_event *e = &st->event[i];
		const char *layer = e->layer >= 0 ? g->ops[e->layer].name : "?";
		const char *kind;
		if (e->engine == 0)
			kind = m->dma[e->index].op == ISA_DMA_LOAD ? "load" : "store";
		else
			kind = op_name(g->ops[e->layer].type);
		fputs(",\n{\"name\": \"", fp);
		json_str(fp, layer);
		fprintf(fp, ": %s\", \"cat\": \"%s\", \"ph\": \"X\", \"pid\": 1, \"tid\": %d, "
			"\"ts\": %.6f, \"dur\": %.6f, \"args\": {\"command\": %d, \"cycles\": %lld, "
			"\"start\": %lld", kind, e->engine ? "compute" : "dma", e->engine + 1,
			(double)e->start * us, (double)e->cycles * us, e->index + 1,
			(long long)e->cycles, (long long)e->start);
		if (e->engine == 0) {
			const struct isa_dma *d = &m->dma[e->index];
			fprintf(fp, ", \"bytes\": %lld",
				(long long)d->n * d->c * d->h * d->w * (long long)dtype_size(d->dtype));
			if (e->tensor >= 0) {
				fputs(", \"tensor\": \"", fp);
				json_str(fp, g->tensors[e->tensor].name);
				fputc('"', fp);
			}
			if (d->wait)
				fprintf(fp, ", \"waits_for_compute\": %u", d->wait);
		} else if (m->cmp[e->index].wait) {
			fprintf(fp, ", \"waits_for_dma\": %u", m->cmp[e->index].wait);
		}
		fputs("}}", fp);
	}
	fputs("\n]}\n", fp);
	return ferror(fp) ? -1 : 0;
}
