/* interp.c - the reference interpreter: whole-tensor buffers for every
 * activation, each op run by its dialect's kernel hook in graph order; for
 * Top graphs, interp_run hands over to a plan of oneDNN primitives built
 * once (lib/run/plan.c), which runs the kernels for the ops it does not
 * cover.
 */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/base.h"
#include "ir/convert.h"
#include "ir/dynrun.h"
#include "run/dnnl_util.h"
#include "run/interp.h"
#include "run/plan.h"
#include "ir/op.h"
#include "ir/limit.h"
#include "chip/requant.h"

int interp_init(struct interp *it, const struct ir_graph *g, int nthreads)
{
	memset(it, 0, sizeof *it);
	if (g->dialect != DIALECT_TOP && g->dialect != DIALECT_TPU)
		return err_set("graph has no runnable dialect");
	int64_t act = 0;
	for (int i = 0; i < g->n_tensors; i++)
		if (!g->tensors[i].data &&
		    __builtin_add_overflow(act, (int64_t)tensor_bytes(&g->tensors[i]), &act))
			act = INT64_MAX;
	if (limit_check(act, "the graph's activations") < 0 || requant_check_graph(g) < 0)
		return -1;
	it->g = g;
	it->nthreads = nthreads > 0 ? nthreads : 1;
	dnnl_weights_cache(1);
	omp_set_num_threads(it->nthreads);
	it->val = graph_values_new(g);
	if (graph_dynamic(g)) {
		it->dr = xmalloc(sizeof *it->dr);
		dynrun_init(it->dr, g, it->val, 1);
	}
	return 0;
}

const struct ir_tensor *interp_tensor(const struct interp *it, int t)
{
	return it->dr ? dynrun_tensor(it->dr, t) : &it->g->tensors[t];
}

static int is_weight(const struct interp *it, int t)
{
	return it->g->tensors[t].data != NULL;
}

/* ---- graph inputs from an .npz ---- */

/* Store N elements of array A, from element OFF on, into tensor T's buffer:
 * by value, or quantised with T's scale when T is an integer tensor with a
 * scale and A holds floats. */
static void store(struct interp *it, int t, const struct npz_array *a, int64_t off, int64_t n)
{
	const struct ir_tensor *ten = &it->g->tensors[t];
	const char *src = (const char *)a->data + (size_t)off * dtype_size(a->dtype);
	int quant = ten->scale != 0 && ten->dtype != DT_F32 && ten->dtype != DT_F16 &&
		    ten->dtype != DT_BF16 && ten->dtype != DT_BOOL &&
		    (a->dtype == DT_F32 || a->dtype == DT_F16 || a->dtype == DT_BF16);
	if (!quant) {
		dtype_convert(it->val[t], ten->dtype, src, a->dtype, n);
		return;
	}
	/* q = round_half_away(x / scale) + zero_point, saturated (quant.h). */
	int64_t *q = xmalloc((size_t)(n ? n : 1) * sizeof *q);
	for (int64_t i = 0; i < n; i++) {
		double v = round(dtype_get(src, a->dtype, i) / ten->scale) + ten->zero_point;
		q[i] = isnan(v) ? 0 : v < -9e18 ? (int64_t)-9e18 : v > 9e18 ? (int64_t)9e18 : (int64_t)v;
	}
	dtype_convert(it->val[t], ten->dtype, q, DT_I64, n);
	free(q);
}

/* The array for graph input t, checked against its shape: SAMPLE < 0 takes
 * the whole array; otherwise the array holds samples on axis 0 (either as
 * an extra leading axis or as batches of the input's first axis). */
static int set_one(struct interp *it, const struct npz *in, const char *file, int t, int64_t sample)
{
	const struct ir_tensor *ten = &it->g->tensors[t];
	const struct npz_array *a = npz_find(in, ten->name);
	char want[IR_MAX_RANK * 21 + 3], got[IR_MAX_RANK * 21 + 3];
	if (!a)
		return npz_missing(in, file, ten->name, "graph input");
	if (a->dtype == DT_BF16 || (int)a->dtype >= DT_COUNT)
		return err_set("'%s': array '%s' has an unusable dtype", file, ten->name);
	int64_t n = tensor_numel(ten), off = 0;
	shape_str(want, sizeof want, ten->rank, ten->shape);
	shape_str(got, sizeof got, a->rank, a->shape);
	int ok;
	if (sample < 0) {
		ok = a->rank == ten->rank &&
		     !memcmp(a->shape, ten->shape, (size_t)ten->rank * sizeof ten->shape[0]);
	} else if (a->rank == ten->rank + 1) {
		ok = !memcmp(a->shape + 1, ten->shape, (size_t)ten->rank * sizeof ten->shape[0]);
		if (ok && sample >= a->shape[0])
			return err_set("'%s': sample %lld out of range: array '%s' holds %lld",
				       file, (long long)sample, ten->name, (long long)a->shape[0]);
		off = sample * n;
	} else {
		ok = a->rank == ten->rank && ten->rank > 0 && ten->shape[0] > 0 &&
		     !memcmp(a->shape + 1, ten->shape + 1,
			     (size_t)(ten->rank - 1) * sizeof ten->shape[0]) &&
		     a->shape[0] % ten->shape[0] == 0;
		if (ok && (sample + 1) * ten->shape[0] > a->shape[0])
			return err_set("'%s': sample %lld out of range: array '%s' holds %lld",
				       file, (long long)sample, ten->name,
				       (long long)(a->shape[0] / ten->shape[0]));
		off = sample * n;
	}
	if (!ok) {
		if (sample < 0)
			return err_set("'%s': array '%s' has shape %s, graph input expects %s",
				       file, ten->name, got, want);
		return err_set("'%s': array '%s' has shape %s, expected samples of %s",
			       file, ten->name, got, want);
	}
	store(it, t, a, off, n);
	return 0;
}

int interp_set_inputs(struct interp *it, const struct npz *in, const char *file)
{
	for (int i = 0; i < it->g->n_inputs; i++)
		if (set_one(it, in, file, it->g->inputs[i], -1) < 0)
			return -1;
	return 0;
}

int interp_set_named(struct interp *it, const struct npz *in, const char *file)
{
	for (int i = 0; i < it->g->n_inputs; i++)
		if (npz_find(in, it->g->tensors[it->g->inputs[i]].name) &&
		    set_one(it, in, file, it->g->inputs[i], -1) < 0)
			return -1;
	return 0;
}

int interp_set_sample(struct interp *it, const struct npz *in, const char *file, int64_t index)
{
	if (index < 0)
		return err_set("'%s': negative sample index %lld", file, (long long)index);
	for (int i = 0; i < it->g->n_inputs; i++)
		if (set_one(it, in, file, it->g->inputs[i], index) < 0)
			return -1;
	return 0;
}

/* ---- running: the plan for Top graphs, else op by op ---- */

/* 1 unless TPUC_PLAN=0 asks for the per-op kernels only (for comparison). */
static int plan_wanted(const struct interp *it)
{
	const char *e = getenv("TPUC_PLAN");
	return it->g->dialect == DIALECT_TOP && !it->dr && !(e && !strcmp(e, "0"));
}

/* interp_run's callback as the plan calls it. */
struct plan_cb {
	struct interp *it;
	int (*cb)(struct interp *it, int op, void *user);
	void *user;
};

static int plan_cb(int op, void *user)
{
	struct plan_cb *c = user;
	return c->cb(c->it, op, c->user);
}

int interp_run(struct interp *it, int (*cb)(struct interp *it, int op, void *user), void *user)
{
	const struct ir_graph *g = it->g;
	omp_set_num_threads(it->nthreads);
	if (plan_wanted(it)) {
		/* the plan suits one kind of run: rebuilt when that changes */
		struct plan *p = it->priv;
		int fuse = !cb && !it->keep_all, mat = cb != NULL;
		if (p && (p->fuse != fuse || p->materialise != mat || p->nthreads != it->nthreads)) {
			plan_free(p);
			it->priv = p = NULL;
		}
		if (!p && !(it->priv = p = plan_build(g, it->val, it->nthreads, fuse, mat)))
			return -1;
		struct plan_cb c = { it, cb, user };
		return plan_run(p, it->op_ms, cb ? plan_cb : NULL, &c);
	}
	for (int i = 0; i < g->n_ops; i++) {
		const struct ir_op *op = &g->ops[i];
		int (*run)(struct kern *) = op_kernel(g, op);
		if (!run)
			return err_set("op '%s' (%s): no %s kernel", op->name, op_name(op->type),
				       g->dialect == DIALECT_TOP ? "float" : "tpu");
		for (int j = 0; j < op->n_out; j++)
			if (is_weight(it, op->out[j]))
				return err_set("op '%s' (%s): writes weight '%s'", op->name,
					       op_name(op->type), g->tensors[op->out[j]].name);
		double t0 = it->op_ms ? now_seconds() : 0;
		int krc;
		if (it->dr) {
			krc = dynrun_op(it->dr, i, run, it->nthreads);
		} else {
			struct kern k;
			kern_from_graph(&k, g, op, it->val);
			k.nthreads = it->nthreads;
			krc = run(&k);
			kern_done(&k);
		}
		if (krc < 0)
			return -1;
		if (it->op_ms)
			it->op_ms[i] += (now_seconds() - t0) * 1e3;
		if (cb) {
			int rc = cb(it, i, user);
			if (rc < 0)
				return rc;
		}
	}
	return 0;
}

float *interp_get_f32(const struct interp *it, int t)
{
	const struct ir_tensor *ten = interp_tensor(it, t);
	int64_t n = tensor_numel(ten);
	float *out = xmalloc((size_t)(n ? n : 1) * sizeof *out);
	const void *src = it->val[t];
	if (it->priv) {
		int rc = plan_get(it->priv, t, out);
		if (rc != 0) {
			if (rc < 0)   /* cannot happen short of memory exhaustion */
				memset(out, 0, (size_t)n * sizeof *out);
			return out;
		}
	}
	switch (ten->dtype) {
	case DT_I8: case DT_U8: case DT_I16: case DT_I32:
		if (ten->scale != 0) {
			for (int64_t i = 0; i < n; i++)
				out[i] = ten->scale * (float)(dtype_get(src, ten->dtype, i) - ten->zero_point);
			return out;
		}
		break;
	default:
		break;
	}
	dtype_convert(out, DT_F32, src, ten->dtype, n);
	return out;
}

int interp_add_npz(struct npz *z, const struct interp *it, int t)
{
	const struct ir_tensor *ten = interp_tensor(it, t);
	if (npz_find(z, ten->name))
		return 0;
	if ((ten->dtype == DT_F64 || ten->dtype == DT_U16 || ten->dtype == DT_U32 ||
	     ten->dtype == DT_U64) && it->val[t])
		return npz_add(z, ten->name, ten->dtype, ten->rank, ten->shape, it->val[t]) ? 0 : -1;
	float *v = interp_get_f32(it, t);
	struct npz_array *a = npz_add(z, ten->name, DT_F32, ten->rank, ten->shape, v);
	free(v);
	return a ? 0 : -1;
}

void interp_free(struct interp *it)
{
	if (it->dr) {
		dynrun_free(it->dr);
		free(it->dr);
	}
	if (it->val)
		graph_values_free(it->g, it->val);
	plan_free(it->priv);
	memset(it, 0, sizeof *it);
	dnnl_weights_cache(0);
}
