/* calib_tune.c - per-tensor threshold tuning against the readers' output
 * error (calib_tune.h).
 */
#include "calib/calib_tune.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/base.h"
#include "ir/op.h"
#include "quant/quant.h"
#include "run/interp.h"

/* The candidate thresholds, as factors of the calibrated one. */
static const double factors[] = { 1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4 };
#define NF ((int)(sizeof factors / sizeof factors[0]))

/* Samples of file Z for graph input 0: its first axis (one more axis than
 * the input), or its first dimension over the input's. */
static int64_t file_samples(const struct ir_graph *g, const struct npz *z)
{
	const struct ir_tensor *t = &g->tensors[g->inputs[0]];
	const struct npz_array *a = npz_find(z, t->name);
	if (!a)
		return 0;
	if (a->rank == t->rank + 1)
		return a->shape[0];
	if (a->rank == t->rank && t->rank > 0 && t->shape[0] > 0)
		return a->shape[0] / t->shape[0];
	return 0;
}

/* 1 if op OP can be rerun here: a float kernel, every output f32. */
static int rerunnable(const struct ir_graph *g, const struct ir_op *op)
{
	if (!op_defs[op->type]->run_f32)
		return 0;
	for (int j = 0; j < op->n_out; j++)
		if (op->out[j] < 0 || g->tensors[op->out[j]].dtype != DT_F32)
			return 0;
	return 1;
}

/* Y = X quantised with threshold TH as top2tpu would and back: symmetric
 * in DT, or with ASYM u8 with a zero point on the table's range [MN, MX]
 * clipped to the threshold (tpuc-quant(5)). */
static void fake_quant(float *y, const float *x, int64_t n, double th, enum ir_dtype dt, int asym,
		       double mn, double mx)
{
	th = th >= QUANT_MIN_THRESHOLD ? th : QUANT_MIN_THRESHOLD;
	float s = quant_act_scale_dt(th, dt);
	int lo, hi, zp = 0;
	quant_range(dt, &lo, &hi);
	if (asym) {
		quant_act_asym(mn > -th ? mn : -th, mx < th ? mx : th, &s, &zp);
		quant_range(DT_U8, &lo, &hi);
	}
	for (int64_t i = 0; i < n; i++) {
		double q = round((double)x[i] / s) + zp;
		q = q < lo ? lo : q > hi ? hi : q;
		y[i] = (float)((q - zp) * s);
	}
}

/* Tuning state: the float value of every activation of one sample. */
struct tune {
	const struct ir_graph *g;
	void **val;             /* per tensor: f32 buffer (activations) or weight data */
	int nthreads;
};

/* Rerun reader op OP with input tensor T read from XQ; the relative error
 * of its outputs against the float run, summed; -1 on failure. */
static double reader_error(struct tune *tu, const struct ir_op *op, int t, float *xq)
{
	const struct ir_graph *g = tu->g;
	void **vals = xmalloc(sizeof(void *) * (size_t)(g->n_tensors + 1));
	memcpy(vals, tu->val, sizeof(void *) * (size_t)g->n_tensors);
	vals[t] = xq;
	float **outs = xcalloc((size_t)op->n_out + 1, sizeof *outs);
	for (int j = 0; j < op->n_out; j++) {
		outs[j] = xcalloc((size_t)tensor_numel(&g->tensors[op->out[j]]) + 1, sizeof(float));
		vals[op->out[j]] = outs[j];
	}
	struct kern k;
	kern_from_graph(&k, g, op, vals);
	k.nthreads = tu->nthreads;
	int rc = op_defs[op->type]->run_f32(&k);
	kern_done(&k);
	double err = 0;
	for (int j = 0; j < op->n_out; j++) {
		const float *ref = tu->val[op->out[j]];
		double e = 0, r = 0;
		for (int64_t i = 0, n = tensor_numel(&g->tensors[op->out[j]]); i < n && rc == 0; i++) {
			double d = (double)outs[j][i] - ref[i];
			e += d * d;
			r += (double)ref[i] * ref[i];
		}
		err += isfinite(e) && r > 0 ? e / r : 0;
		free(outs[j]);
	}
	free(outs);
	free(vals);
	return rc < 0 ? -1 : err;
}

int calib_tune(const struct ir_graph *g, int nfiles, const struct npz *samples,
	       const char *const *files, struct calib_table *tab,
	       const struct calib_tune_opts *o, struct calib_tune_result *res)
{
	memset(res, 0, sizeof *res);
	if (g->n_inputs < 1)
		return err_set("the graph has no inputs");
	int nt = g->n_tensors;
	/* the activations to tune and their readers */
	int *entry = xmalloc(sizeof(int) * (size_t)(nt + 1));
	for (int t = 0; t < nt; t++) {
		const struct ir_tensor *s = &g->tensors[t];
		const struct calib_entry *e = s->data || s->dtype != DT_F32 ? NULL : calib_find(tab, s->name);
		entry[t] = e ? (int)(e - tab->e) : -1;
	}
	int *nread = xcalloc((size_t)nt + 1, sizeof(int));
	for (int i = 0; i < g->n_ops; i++) {
		const struct ir_op *op = &g->ops[i];
		for (int j = 0; j < op->n_in; j++)
			if (op->in[j] >= 0 && entry[op->in[j]] >= 0)
				nread[op->in[j]] += rerunnable(g, op) ? 1 : 0;
	}
	double *err = xcalloc((size_t)nt * NF + 1, sizeof(double));
	struct interp it;
	int rc = interp_init(&it, g, o->nthreads);
	it.keep_all = 1;
	struct tune tu = { .g = g, .nthreads = o->nthreads };
	tu.val = xcalloc((size_t)nt + 1, sizeof(void *));
	int64_t done = 0;
	for (int f = 0; rc == 0 && f < nfiles && done < o->samples; f++) {
		int64_t ns = file_samples(g, &samples[f]);
		for (int64_t si = 0; rc == 0 && si < ns && done < o->samples; si++, done++) {
			if (o->progress)
				fprintf(stderr, "calibrate: tuning on sample %lld of %lld\n",
					(long long)done + 1, (long long)o->samples);
			rc = interp_set_sample(&it, &samples[f], files[f], si);
			if (rc == 0)
				rc = interp_run(&it, NULL, NULL);
			for (int t = 0; rc == 0 && t < nt; t++) {
				if (!g->tensors[t].data && g->tensors[t].dtype == DT_F32)
					free(tu.val[t]);
				tu.val[t] = g->tensors[t].data ? g->tensors[t].data
				    : g->tensors[t].dtype == DT_F32 ? interp_get_f32(&it, t) : it.val[t];
			}
			for (int t = 0; rc == 0 && t < nt; t++) {
				if (entry[t] < 0 || !nread[t])
					continue;
				const struct calib_entry *e = &tab->e[entry[t]];
				enum ir_dtype dt = quant_act_dtype(e->min);
				int64_t n = tensor_numel(&g->tensors[t]);
				float *xq = xmalloc(sizeof(float) * (size_t)(n + 1));
				for (int c = 0; rc == 0 && c < NF; c++) {
					fake_quant(xq, tu.val[t], n, e->threshold * factors[c], dt, o->asymmetric,
						   e->min, e->max);
					for (int i = 0; rc == 0 && i < g->n_ops; i++) {
						const struct ir_op *op = &g->ops[i];
						int reads = 0;
						for (int j = 0; j < op->n_in; j++)
							reads |= op->in[j] == t;
						if (!reads || !rerunnable(g, op))
							continue;
						double d = reader_error(&tu, op, t, xq);
						if (d < 0)
							rc = -1;
						else
							err[(size_t)t * NF + c] += d;
					}
				}
				free(xq);
			}
		}
	}
	for (int t = 0; t < nt; t++)
		if (!g->tensors[t].data && g->tensors[t].dtype == DT_F32)
			free(tu.val[t]);
	free(tu.val);
	interp_free(&it);
	for (int t = 0; rc == 0 && t < nt; t++) {
		if (entry[t] < 0 || !nread[t])
			continue;
		res->tuned++;
		const double *et = &err[(size_t)t * NF];
		int best = 0;
		for (int c = 1; c < NF; c++)
			if (et[c] < et[best])
				best = c;
		if (best && et[best] < 0.99 * et[0]) {
			tab->e[entry[t]].threshold *= factors[best];
			res->changed++;
		}
	}
	free(err);
	free(nread);
	free(entry);
	return rc;
}
