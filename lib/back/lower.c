/* lower.c - the lowering driver: Top graph to Tpu graph, op by op through
 * each op's `lower` hook in the op's mode (the graph's, or the qtable's),
 * plus the tensor helpers those hooks share and the Casts between
 * precisions.
 */
#include "back/lower.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/base.h"
#include "chip/chip.h"
#include "ir/convert.h"
#include "ir/op.h"
#include "back/lower_dtype.h"
#include "back/lower_cast.h"
#include "back/lower_order.h"
#include "back/lower_compose.h"
#include "back/lower_depth.h"
#include "back/lower_fit.h"
#include "back/lower_wide.h"
#include "quant/quant.h"

int lower_chip_known(const char *name)
{
	return chip_find(name) != NULL;
}

static int is_float(enum ir_dtype dt)
{
	return dt == DT_F32 || dt == DT_BF16 || dt == DT_F16;
}

/* 1 if op reads or writes a float tensor (f32, f16, bf16). */
static int float_operands(const struct ir_graph *top, const struct ir_op *op)
{
	for (int j = 0; j < op->n_in + op->n_out; j++) {
		int t = j < op->n_in ? op->in[j] : op->out[j - op->n_in];
		if (t >= 0 && is_float(top->tensors[t].dtype))
			return 1;
	}
	return 0;
}

int lower_emit(struct lower_ctx *lc, const struct ir_op *op, int n_in, const int *in,
	       int n_out, const int *out)
{
	int k = graph_add_op(lc->tpu, op->type, op->name, n_in, in, n_out, out);
	struct ir_op *o = &lc->tpu->ops[k];
	op_copy_attrs(o, op);
	return k;
}

/* NAME, or NAME_2, NAME_3, ... whichever is free in the Tpu graph. */
static char *unique_name(const struct ir_graph *g, const char *name)
{
	size_t n = strlen(name) + 16;
	char *s = xmalloc(n);
	snprintf(s, n, "%s", name);
	for (int i = 2; graph_find_tensor(g, s) >= 0; i++)
		snprintf(s, n, "%s_%d", name, i);
	return s;
}

/* NAME with SUFFIX appended, made unique in G. */
static char *suffixed(const struct ir_graph *g, const char *name, const char *suffix)
{
	size_t n = strlen(name) + strlen(suffix) + 1;
	char *q = xmalloc(n);
	snprintf(q, n, "%s%s", name, suffix);
	char *u = unique_name(g, q);
	free(q);
	return u;
}

int lower_weight(struct lower_ctx *lc, const char *name, enum ir_dtype dt, int rank,
		 const int64_t *shape, const void *data)
{
	char *u = unique_name(lc->tpu, name);
	int t = graph_add_weight(lc->tpu, u, dt, rank, shape, data);
	free(u);
	return t;
}

int lower_value(struct lower_ctx *lc, int t)
{
	if (t < 0)
		return -1;
	if (lc->map[t] >= 0)
		return lc->map[t];
	const struct ir_tensor *s = &lc->top->tensors[t];
	int k = s->data ? lower_weight(lc, s->name, s->dtype, s->rank, s->shape, s->data)
			: graph_add_tensor(lc->tpu, s->name, s->dtype, s->rank, s->shape);
	lc->map[t] = k;
	return k;
}

/* The suffix naming a graph output's value in dtype DT: "_i8" for i8 and
 * u8, "_bf16", "_f16". */
static const char *dtype_suffix(enum ir_dtype dt)
{
	return quant_is_q(dt) ? "_i8" : dt == DT_BF16 ? "_bf16" : dt == DT_F16 ? "_f16" : "_f32";
}

int lower_output(struct lower_ctx *lc, int t, enum ir_dtype dt, float scale, int zp)
{
	const struct ir_tensor *s = &lc->top->tensors[t];
	char *name = lc->is_output[t] && dt != s->dtype ? suffixed(lc->tpu, s->name, dtype_suffix(dt))
							 : xstrdup(s->name);
	int k = graph_add_tensor(lc->tpu, name, dt, s->rank, s->shape);
	free(name);
	lc->tpu->tensors[k].dyn = s->dyn;
	if (quant_is_q(dt)) {
		lc->tpu->tensors[k].scale = scale;
		lc->tpu->tensors[k].zero_point = zp;
	}
	lc->map[t] = k;
	return k;
}

/* 1 if Top tensor S carries the model's own quantisation (fold-qdq). */
static int model_q_t(const struct ir_tensor *s)
{
	return (s->qdtype == DT_I8 || s->qdtype == DT_U8) && s->scale > 0;
}

/* Top tensor T when it carries the model's own quantisation, or NULL. */
static const struct ir_tensor *model_q(const struct lower_ctx *lc, int t)
{
	const struct ir_tensor *s = &lc->top->tensors[t];
	return model_q_t(s) ? s : NULL;
}

int lower_table_scale(struct lower_ctx *lc, const struct ir_op *op, int t, float *scale)
{
	const char *name = lc->top->tensors[t].name;
	const struct ir_tensor *mq = model_q(lc, t);
	if (mq) {
		*scale = mq->scale;
		return 0;
	}
	const struct calib_entry *e = lc->tab ? calib_find(lc->tab, name) : NULL;
	if (!lc->tab)
		return op ? op_error(op, "int8 needs a calibration table")
			  : err_set("int8 needs a calibration table");
	if (!e) {
		const char *tp = lc->tab->path ? lc->tab->path : "calibration table";
		if (op)
			return op_error(op, "no threshold for '%s' in '%s'", name, tp);
		return err_set("graph input '%s': no threshold in '%s'", name, tp);
	}
	*scale = quant_act_scale(e->threshold);
	return 0;
}

static int table_act(struct lower_ctx *lc, const struct ir_op *op, int t,
		     enum ir_dtype *dt, float *scale, int *zp);

int lower_table_act(struct lower_ctx *lc, const struct ir_op *op, int t,
		    enum ir_dtype *dt, float *scale, int *zp)
{
	const struct ir_tensor *mq = model_q(lc, t);
	if (!mq)
		return table_act(lc, op, t, dt, scale, zp);
	*dt = mq->qdtype;
	*scale = mq->scale;
	*zp = mq->zero_point;
	/* the model wins; a table that would choose otherwise is noted */
	enum ir_dtype tdt;
	float ts;
	int tz;
	if (lc->tab && calib_find(lc->tab, mq->name) && table_act(lc, op, t, &tdt, &ts, &tz) == 0 &&
	    (tdt != *dt || tz != *zp || fabsf(ts - *scale) > 1e-3f * *scale)) {
		if (!lc->n_disagree++)
			lc->first_disagree = t;
	}
	return 0;
}

/* lower_table_act from the table alone. */
static int table_act(struct lower_ctx *lc, const struct ir_op *op, int t,
		     enum ir_dtype *dt, float *scale, int *zp)
{
	const struct calib_entry *e = lc->tab ? calib_find(lc->tab, lc->top->tensors[t].name) : NULL;
	if (!e)   /* the message: no table, or no threshold in it */
		return lower_table_scale(lc, op, t, scale);
	*scale = quant_act_scale(e->threshold);
	*zp = 0;
	if (lc->asymmetric) {
		/* the table's range, clipped to the threshold the calibration
		 * method chose */
		double th = e->threshold >= QUANT_MIN_THRESHOLD ? e->threshold : QUANT_MIN_THRESHOLD;
		double lo = e->min > -th ? e->min : -th, hi = e->max < th ? e->max : th;
		*dt = DT_U8;
		quant_act_asym(lo, hi, scale, zp);
		return 0;
	}
	*dt = lc->signed_only ? DT_I8 : quant_act_dtype(e->min);
	*scale = quant_act_scale_dt(e->threshold, *dt);
	return 0;
}

/* A Cast op NAME from Tpu tensor IN to OUT. */
static void emit_cast(struct lower_ctx *lc, const char *name, int in, int out)
{
	char *u = xstrdup(name);
	int k = graph_add_op(lc->tpu, OP_CAST, u, 1, &in, 1, &out);
	op_set_str(&lc->tpu->ops[k], "to", dtype_name(lc->tpu->tensors[out].dtype));
	free(u);
}

/* The twin of Top tensor T in dtype DT through a Cast from HOME (its Tpu
 * value), made once and cached; quantised twins (DT i8 or u8) take SCALE
 * and zero point ZP.  TWIN names the new tensor, OPNAME the Cast. */
static int cast_twin(struct lower_ctx *lc, int t, int home, enum ir_dtype dt, float scale,
		     int zp, const char *twin_suffix, const char *op_suffix)
{
	int *slot = &lc->alt[(size_t)t * DT_COUNT + (quant_is_q(dt) ? DT_I8 : dt)];
	if (*slot >= 0)
		return *slot;
	const struct ir_tensor *s = &lc->top->tensors[t];
	char *tn = suffixed(lc->tpu, s->name, twin_suffix);
	int q = graph_add_tensor(lc->tpu, tn, dt, s->rank, s->shape);
	free(tn);
	if (quant_is_q(dt)) {
		lc->tpu->tensors[q].scale = scale;
		lc->tpu->tensors[q].zero_point = zp;
	}
	size_t n = strlen(s->name) + strlen(op_suffix) + 1;
	char *on = xmalloc(n);
	snprintf(on, n, "%s%s", s->name, op_suffix);
	emit_cast(lc, on, home, q);
	free(on);
	*slot = q;
	return q;
}

int lower_act_input(struct lower_ctx *lc, const struct ir_op *op, int t)
{
	int home = lc->map[t];
	if (home >= 0 && quant_is_q(lc->tpu->tensors[home].dtype))
		return home;
	const struct ir_tensor *s = &lc->top->tensors[t];
	if (home >= 0 && !s->data && is_float(lc->tpu->tensors[home].dtype)) {
		enum ir_dtype dt;
		float scale;
		int zp;
		if (lower_table_act(lc, op, t, &dt, &scale, &zp) < 0)
			return -1;
		return cast_twin(lc, t, home, dt, scale, zp, "_i8", "_quant");
	}
	if (!s->data || s->dtype != DT_F32)
		return op_error(op, "input '%s' is not an int8 activation", s->name);
	int *slot = &lc->alt[(size_t)t * DT_COUNT + DT_I8];
	if (*slot >= 0)
		return *slot;
	int64_t n = tensor_numel(s);
	int8_t *q = xmalloc((size_t)n + 1);
	float sc = quant_weight_scale(s->data, n);
	quant_f32_to_i8(s->data, q, n, sc);
	size_t len = strlen(s->name) + 4;
	char *name = xmalloc(len);
	snprintf(name, len, "%s_i8", s->name);
	int k = lower_weight(lc, name, DT_I8, s->rank, s->shape, q);
	lc->tpu->tensors[k].scale = sc;
	free(name);
	free(q);
	*slot = k;
	return k;
}

int lower_float_input(struct lower_ctx *lc, const struct ir_op *op, int t, enum ir_dtype dt)
{
	if (t < 0)
		return -1;
	const struct ir_tensor *s = &lc->top->tensors[t];
	if (s->data) {
		if (s->dtype != DT_F32 || dt == DT_F32)
			return lower_value(lc, t);
		int *slot = &lc->alt[(size_t)t * DT_COUNT + dt];
		if (*slot >= 0)
			return *slot;
		int64_t n = tensor_numel(s);
		uint16_t *h = xmalloc(sizeof *h * (size_t)(n + 1));
		dtype_convert(h, dt, s->data, DT_F32, n);
		*slot = lower_weight(lc, s->name, dt, s->rank, s->shape, h);
		free(h);
		return *slot;
	}
	int home = lc->map[t];
	if (home < 0)
		return op_error(op, "input '%s' is not produced before its use", s->name);
	/* integers stay: u8 and i8 too when they carry no scale (the model's
	 * own integer tensors, not quantised ones) */
	enum ir_dtype hd = lc->tpu->tensors[home].dtype;
	if (hd == dt || (!is_float(hd) && (!quant_is_q(hd) || lc->tpu->tensors[home].scale == 0)))
		return home;
	char sfx[16], osfx[24];
	snprintf(sfx, sizeof sfx, "_%s", dtype_name(dt));
	snprintf(osfx, sizeof osfx, "_cast_%s", dtype_name(dt));
	return cast_twin(lc, t, home, dt, 0, 0, sfx, osfx);
}

/* 1 when every value of f32 weight t is exact in dtype dt (a mask of 0
 * and -100, ones): stored so, it holds the same values in fewer bytes. */
static int exact_in(const struct ir_tensor *t, enum ir_dtype dt)
{
	if (!t->data || t->dtype != DT_F32 || !is_float(dt) || dt == DT_F32)
		return 0;
	int64_t n = tensor_numel(t);
	uint16_t *h = xmalloc(sizeof *h * (size_t)(n + 1));
	float *back = xmalloc(sizeof *back * (size_t)(n + 1));
	dtype_convert(h, dt, t->data, DT_F32, n);
	dtype_convert(back, DT_F32, h, dt, n);
	int same = !memcmp(back, t->data, sizeof *back * (size_t)n);
	free(h);
	free(back);
	return same;
}

/* lower_default, with the constant inputs in F32_INPUTS (a bit per input)
 * kept in f32 in float modes unless their values are exact in the mode's
 * dtype, and the activation inputs in F32_ACTS and the outputs in F32_OUTS
 * too. */
static int lower_copy(struct lower_ctx *lc, const struct ir_op *op, unsigned f32_inputs,
		      unsigned f32_acts, unsigned f32_outs)
{
	int q = lc->mode == MODE_INT8;
	enum ir_dtype fdt = lower_float_dtype(lc->mode);
	/* in int8, an op that only moves or clamps values follows its input:
	 * a float activation (graph input, output of a float op) stays float
	 * rather than being quantised for it; an op on a bool or integer
	 * activation (Not, a Cast of a mask) has nothing to quantise and
	 * gives its f32 outputs in the fallback float dtype */
	int t0 = op->n_in > 0 ? op->in[0] : -1;
	if (q && t0 >= 0 && !lc->top->tensors[t0].data && lc->map[t0] >= 0 &&
	    is_float(lc->tpu->tensors[lc->map[t0]].dtype)) {
		q = 0;
		fdt = lc->tpu->tensors[lc->map[t0]].dtype;
	} else if (q && t0 >= 0 && !lc->top->tensors[t0].data && lc->top->tensors[t0].dtype != DT_F32) {
		q = 0;
		fdt = lower_float_dtype(lc->fallback);
	}
	int *in = xcalloc((size_t)op->n_in + 1, sizeof *in);
	int *out = xcalloc((size_t)op->n_out + 1, sizeof *out);
	for (int i = 0; i < op->n_in; i++) {
		if (op->in[i] < 0)
			in[i] = -1;
		else if (q && lc->top->tensors[op->in[i]].dtype != DT_F32)
			in[i] = lower_value(lc, op->in[i]);   /* indices, shapes: integers stay */
		else if (q)
			in[i] = lower_act_input(lc, op, op->in[i]);
		else if (lc->top->tensors[op->in[i]].data)
			in[i] = lower_float_input(lc, op, op->in[i],
						  f32_inputs >> i & 1 &&
						  !exact_in(&lc->top->tensors[op->in[i]], fdt) ? DT_F32 : fdt);
		else
			in[i] = lower_float_input(lc, op, op->in[i], f32_acts >> i & 1 ? DT_F32 : fdt);
		if (op->in[i] >= 0 && in[i] < 0) {
			free(in);
			free(out);
			return -1;
		}
	}
	float scale = 0;
	int zp = 0;
	enum ir_dtype qdt = DT_I8;
	if (q && op->n_in > 0 && in[0] >= 0) {
		scale = lc->tpu->tensors[in[0]].scale;
		zp = lc->tpu->tensors[in[0]].zero_point;
		qdt = lc->tpu->tensors[in[0]].dtype;
	}
	for (int i = 0; i < op->n_out; i++) {
		/* float outputs (f16 and bf16 ones of a model stored in half
		 * precision too) take the op's dtype, as its inputs do; bool
		 * and integer ones (indices, predicates) keep theirs */
		enum ir_dtype tdt = lc->top->tensors[op->out[i]].dtype;
		enum ir_dtype dt = tdt != DT_F32 && !is_float(tdt) ? tdt : q ? qdt
				   : f32_outs >> i & 1 ? DT_F32 : fdt;
		out[i] = lower_output(lc, op->out[i], dt, scale, zp);
	}
	lower_emit(lc, op, op->n_in, in, op->n_out, out);
	free(in);
	free(out);
	return 0;
}

int lower_default(struct lower_ctx *lc, const struct ir_op *op)
{
	return lower_copy(lc, op, lower_f32_constants(op->type) ? ~0u : 0, 0, 0);
}

int lower_float_state(struct lower_ctx *lc, const struct ir_op *op, unsigned acts, unsigned outs)
{
	struct lower_ctx f = *lc;
	if (f.mode == MODE_INT8)
		f.mode = lc->fallback;
	return lower_copy(&f, op, 0, f.mode == MODE_F32 ? 0 : acts, f.mode == MODE_F32 ? 0 : outs);
}

int lower_inputs_float(const struct lower_ctx *lc, const struct ir_op *op, enum ir_mode *mode)
{
	int n = 0;
	for (int i = 0; i < op->n_in; i++) {
		int t = op->in[i];
		if (t < 0 || lc->top->tensors[t].data)
			continue;
		enum ir_dtype dt = lc->map[t] >= 0 ? lc->tpu->tensors[lc->map[t]].dtype : DT_I8;
		if (!is_float(dt))
			return 0;
		if (!n++)
			*mode = dt == DT_BF16 ? MODE_BF16 : dt == DT_F16 ? MODE_F16 : MODE_F32;
	}
	return n > 0;
}

static double tensor_reach(const struct ir_graph *top, const struct calib_table *tab, int t);

int lower_nonfinite_weight(const struct lower_ctx *lc, const struct ir_op *op)
{
	for (int i = 0; i < op->n_in; i++) {
		const struct ir_tensor *t = op->in[i] >= 0 ? &lc->top->tensors[op->in[i]] : NULL;
		if (!t || !t->data || t->dtype != DT_F32)
			continue;
		const float *w = t->data;
		for (int64_t j = 0, n = tensor_numel(t); j < n; j++)
			if (!isfinite(w[j]))
				return 1;
	}
	return 0;
}

int lower_ranges_apart(struct lower_ctx *lc, const struct ir_op *op)
{
	double lo = INFINITY, hi = 0;
	if (lower_nonfinite_weight(lc, op))
		return 1;
	for (int i = 0; i < op->n_in; i++) {
		if (op->in[i] < 0)
			continue;
		const struct ir_tensor *t = &lc->top->tensors[op->in[i]];
		double r = 0;
		if (t->data) {
			r = tensor_reach(lc->top, NULL, op->in[i]);
			/* broadcast over the activations (a bias), a constant
			 * far below them is only rounded to the output's step,
			 * as the sum is; one far above them (a -1e4 mask) is
			 * not.  One of the output's own size (a position
			 * embedding) may be all an element holds (a ViT's class
			 * token row), and beside them (a Concat) it is: the
			 * output's step is all those elements get. */
			if (op->type != OP_CONCAT && op->n_out > 0 &&
			    tensor_numel(t) < tensor_numel(&lc->top->tensors[op->out[0]])) {
				hi = fmax(hi, r);
				continue;
			}
		} else if (model_q(lc, op->in[i])) {
			const struct ir_tensor *mq = model_q(lc, op->in[i]);
			double qmax = mq->qdtype == DT_U8 ? 255 : 127, qmin = mq->qdtype == DT_U8 ? 0 : -128;
			r = mq->scale * fmax(qmax - mq->zero_point, mq->zero_point - qmin);
		} else {
			const struct calib_entry *e = lc->tab ? calib_find(lc->tab, t->name) : NULL;
			if (!e)
				return 0;
			r = e->threshold;
		}
		lo = fmin(lo, r);
		hi = fmax(hi, r);
	}
	return hi > LOWER_RANGE_RATIO * lo;
}

int lower_fallback(struct lower_ctx *lc, const struct ir_op *op)
{
	struct lower_ctx f = *lc;
	if (f.mode == MODE_INT8)
		f.mode = lc->fallback;
	const struct op_def *d = op_defs[op->type];
	return d->lower ? d->lower(&f, op) : lower_default(&f, op);
}

int lower_float_bias(struct lower_ctx *lc, const struct ir_op *op, int bias)
{
	return lower_copy(lc, op, lc->mode == MODE_INT8 ? 0 : 1u << bias, 0, 0);
}

int lower_unary_lut(struct lower_ctx *lc, const struct ir_op *op)
{
	/* a table maps f32 to f32: Not and integer Abs copy through; IsNaN
	 * and IsInf read their input in float */
	if (lc->mode != MODE_INT8 || lc->top->tensors[op->in[0]].dtype != DT_F32)
		return lower_default(lc, op);
	if (lc->top->tensors[op->out[0]].dtype != DT_F32)
		return lower_fallback(lc, op);
	if (op->n_in != 1 || op->n_out != 1)
		return op_error(op, "a lookup table needs one input and one output");
	enum ir_dtype dt;
	float s_out;
	int zp, x = lower_act_io(lc, op, &dt, &s_out, &zp);
	if (x < 0)
		return -1;
	/* the table's scale is replaced by the lookup's range */
	enum ir_dtype dx = lc->tpu->tensors[x].dtype;
	int zx = lc->tpu->tensors[x].zero_point;
	float sx = lc->tpu->tensors[x].scale, xin[256], yout[256];
	for (int c = 0; c < 256; c++)
		xin[c] = sx * (float)((dx == DT_U8 ? c : (int8_t)(uint8_t)c) - zx);
	struct view kin = { .data = xin, .dtype = DT_F32, .rank = 1, .shape = { 256 } };
	struct view kout = { .data = yout, .dtype = DT_F32, .rank = 1, .shape = { 256 } };
	struct kern k = { .g = lc->top, .op = op, .n_in = 1, .n_out = 1, .nthreads = 1,
			  .in_full_h = 256, .in = &kin, .out = &kout };
	if (op_defs[op->type]->run_f32(&k) < 0)
		return -1;
	/* The output covers every value the table gives for the inputs
	 * calibration saw: the largest finite |f(x)| over the codes within
	 * the input's calibrated [min, max], one step wider (every code when
	 * the table lacks it); u8 when none is negative.  The codes beyond
	 * would otherwise set the scale: a one-sided input in i8 ([-8.8, 0]
	 * into Exp) has codes up to +8.8, and exp(8.8) would leave no level
	 * for the values in [0, 1].  Their entries saturate. */
	const struct calib_entry *ein = lc->tab ? calib_find(lc->tab, lc->top->tensors[op->in[0]].name)
					       : NULL;
	double xlo = -INFINITY, xhi = INFINITY;
	if (ein && isfinite(ein->min) && isfinite(ein->max)) {
		xlo = ein->min - sx;
		xhi = ein->max + sx;
	}
	double ymax = 0, ymin = 0, yhi = 0;
	for (int c = 0; c < 256; c++)
		if (isfinite(yout[c]) && xin[c] >= xlo && xin[c] <= xhi) {
			ymax = fmax(ymax, fabs(yout[c]));
			ymin = fmin(ymin, yout[c]);
			yhi = fmax(yhi, yout[c]);
		}
	if (model_q(lc, op->out[0])) {
		/* the model's own output scale */
	} else if ((zp = 0), lc->asymmetric) {
		/* the asymmetric grid over [min, max] of the results */
		dt = DT_U8;
		quant_act_asym(ymin, yhi, &s_out, &zp);
	} else {
		dt = lc->signed_only || ymin < 0 ? DT_I8 : DT_U8;
		s_out = quant_act_scale_dt(ymax, dt);
	}
	int64_t lut[256];
	for (int c = 0; c < 256; c++)
		lut[c] = quant_f32_to_qz_one(yout[c], s_out, zp, dt);
	int y = lower_output(lc, op->out[0], dt, s_out, zp);
	int o = lower_emit(lc, op, 1, &x, 1, &y);
	op_set_ints(&lc->tpu->ops[o], "lut", 256, lut);
	return 0;
}

/* Graph inputs keep their names and dtypes; the ops that read them in
 * another dtype get a Cast (lower_act_input, lower_float_input). */
static int lower_inputs(struct lower_ctx *lc)
{
	const struct ir_graph *top = lc->top;
	struct ir_graph *g = lc->tpu;
	g->n_inputs = top->n_inputs;
	g->inputs = xmalloc(sizeof(int) * (size_t)(top->n_inputs + 1));
	for (int i = 0; i < top->n_inputs; i++) {
		int t = top->inputs[i];
		const struct ir_tensor *s = &top->tensors[t];
		int k = graph_add_tensor(g, s->name, s->dtype, s->rank, s->shape);
		g->inputs[i] = k;
		lc->map[t] = k;
	}
	return 0;
}

/* Graph outputs computed in another dtype than their Top float one (f32,
 * or the f16 of a model stored in half precision) get a Cast back under
 * the Top name. */
static int lower_outputs(struct lower_ctx *lc)
{
	const struct ir_graph *top = lc->top;
	struct ir_graph *g = lc->tpu;
	g->n_outputs = top->n_outputs;
	g->outputs = xmalloc(sizeof(int) * (size_t)(top->n_outputs + 1));
	for (int i = 0; i < top->n_outputs; i++) {
		int t = top->outputs[i];
		int k = lower_value(lc, t);
		const struct ir_tensor *s = &top->tensors[t];
		enum ir_dtype dt = g->tensors[k].dtype;
		if (dt != s->dtype && (quant_is_q(dt) || is_float(dt)) && is_float(s->dtype)) {
			int f = graph_add_tensor(g, s->name, s->dtype, s->rank, s->shape);
			size_t n = strlen(s->name) + 16;
			char *name = xmalloc(n);
			snprintf(name, n, "%s%s%s", s->name, quant_is_q(dt) ? "_dequant" : "_cast_",
				 quant_is_q(dt) ? "" : dtype_name(s->dtype));
			emit_cast(lc, name, k, f);
			free(name);
			k = f;
		}
		g->outputs[i] = k;
	}
	return 0;
}

int lower_graph(const struct ir_graph *top, const char *chip, enum ir_mode mode,
		const struct calib_table *tab, struct ir_graph **tpu)
{
	struct lower_opts o = { .tab = tab };
	return lower_graph_opts(top, chip, mode, &o, tpu);
}

/* The mode of each Top op: the graph's, or the qtable's.  Fails for a
 * qtable line naming no op of TOP. */
/* 1 if every output of op I is one float number (a probability, a score,
 * a normaliser): in int8 such an op runs in f32 unless the qtable says
 * otherwise, as it costs the chip nothing to keep and an int8 step there
 * (1/256 of a sigmoid's range, 0.015 around 0.5 when its input is
 * quantised) decides a detector's frames that lie near its threshold. */
static int one_number_op(const struct ir_graph *top, int i)
{
	const struct ir_op *op = &top->ops[i];
	int n = 0;
	for (int j = 0; j < op->n_out; j++) {
		const struct ir_tensor *t = op->out[j] >= 0 ? &top->tensors[op->out[j]] : NULL;
		if (!t)
			continue;
		if (t->dtype != DT_F32 || tensor_dyn(t) || tensor_numel(t) != 1)
			return 0;
		n++;
	}
	return n > 0;
}

static int op_modes(const struct ir_graph *top, enum ir_mode m, const struct qtable *qt,
		    enum ir_mode *mode)
{
	char *found = xcalloc((size_t)(qt ? qt->n : 0) + 1, 1);
	for (int i = 0; i < top->n_ops; i++) {
		int j = qt && top->ops[i].name ? name_index_get(&qt->index, top->ops[i].name) : -1;
		mode[i] = j >= 0 ? qt->e[j].mode : m == MODE_INT8 && one_number_op(top, i) ? MODE_F32 : m;
		if (j >= 0)
			found[j] = 1;
	}
	int rc = 0;
	for (int j = 0; qt && j < qt->n && rc == 0; j++)
		if (!found[j])
			rc = err_set("'%s': line %d: no op '%s' in the graph",
				     qt->path ? qt->path : "qtable", qt->e[j].line, qt->e[j].op);
	free(found);
	return rc;
}

/* The largest finite |value| Top tensor T of TOP takes: from its data
 * for a weight, from the table for an activation; 0 when unknown.
 * (Infinities convert to f16 exactly.) */
static double tensor_reach(const struct ir_graph *top, const struct calib_table *tab, int t)
{
	const struct ir_tensor *s = &top->tensors[t];
	if (s->dtype != DT_F32)
		return 0;
	double m = 0;
	if (s->data) {
		const float *w = s->data;
		for (int64_t i = 0, n = tensor_numel(s); i < n; i++)
			if (isfinite(w[i]) && fabsf(w[i]) > m)
				m = fabsf(w[i]);
		return m;
	}
	const struct calib_entry *e = tab ? calib_find(tab, s->name) : NULL;
	if (!e)
		return 0;
	return fmax(isfinite(e->min) ? fabs(e->min) : 0, isfinite(e->max) ? fabs(e->max) : 0);
}

/* F16 keeps ops in range: an op in f16 with an input or output beyond the
 * largest finite f16 (a weight, or an activation by the calibration table)
 * would compute infinities, so it stays in f32; each such op is named on
 * NOTES when given. */
static void f16_range_guard(const struct ir_graph *top, const struct calib_table *tab,
			    const struct lower_opts *o, enum ir_mode *mode)
{
	for (int i = 0; i < top->n_ops; i++) {
		const struct ir_op *op = &top->ops[i];
		if (mode[i] != MODE_F16)
			continue;
		for (int j = 0; j < op->n_in + op->n_out; j++) {
			int t = j < op->n_in ? op->in[j] : op->out[j - op->n_in];
			double r = t >= 0 ? tensor_reach(top, tab, t) : 0;
			if (r > F16_MAX) {
				mode[i] = MODE_F32;
				if (o->notes)
					fprintf(o->notes, "%s: note: op '%s' kept in f32: '%s' reaches "
						"%.4g, beyond f16's %g\n", o->prog ? o->prog : "tpuc",
						op->name ? op->name : "?",
						top->tensors[t].name, r, F16_MAX);
				break;
			}
		}
	}
}

int lower_model_quantised(const struct ir_graph *top)
{
	for (int i = 0; i < top->n_tensors; i++)
		if (top->tensors[i].qdtype == DT_I8 || top->tensors[i].qdtype == DT_U8)
			return 1;
	return 0;
}

/* Append tensor T of G to G's inputs. */
static void add_input(struct ir_graph *g, int t)
{
	g->inputs = xrealloc(g->inputs, sizeof *g->inputs * (size_t)(g->n_inputs + 1));
	g->inputs[g->n_inputs++] = t;
}

/* NAME, or NAME_2, NAME_3, ... whichever G lacks (malloc'd). */
static char *free_name(const struct ir_graph *g, const char *name)
{
	size_t n = strlen(name) + 16;
	char *s = xmalloc(n);
	snprintf(s, n, "%s", name);
	for (int i = 2; graph_find_tensor(g, s) >= 0; i++)
		snprintf(s, n, "%s_%d", name, i);
	return s;
}

/* The weights of the bodies of control op K of G (nested ones first)
 * become captures: per body weight, an outer weight appended to the op's
 * inputs, and in every body an input appended in the same place (the
 * weight itself, made an input, in the body that had it; an unread one in
 * the other branch of an If).  A .tmodel keeps weights only in its
 * coefficients, at addresses of the outer graph. */
static void hoist_body_weights(struct ir_graph *g, int k)
{
	struct ir_graph *sub[2];
	int nb = lower_bodies(&g->ops[k], sub), added = 0;
	for (int b = 0; b < nb; b++)
		for (int i = 0; i < sub[b]->n_ops; i++) {
			struct ir_graph *inner[2];
			if (lower_bodies(&sub[b]->ops[i], inner))
				hoist_body_weights(sub[b], i);
		}
	for (int b = 0; b < nb; b++)
		for (int t = 0; t < sub[b]->n_tensors; t++) {
			struct ir_tensor *x = &sub[b]->tensors[t];
			if (!x->data)
				continue;
			size_t n = strlen(g->ops[k].name) + strlen(x->name) + 2;
			char *base = xmalloc(n), *name;
			snprintf(base, n, "%s/%s", g->ops[k].name, x->name);
			name = free_name(g, base);
			int w = graph_add_weight(g, name, x->dtype, x->rank, x->shape, x->data);
			free(name);
			struct ir_op *op = &g->ops[k];
			op->in = xrealloc(op->in, sizeof *op->in * (size_t)(op->n_in + 1));
			op->in[op->n_in++] = w;
			for (int c = 0; c < nb; c++) {
				if (c == b) {
					x = &sub[b]->tensors[t];
					if (x->owns_data)
						free(x->data);
					x->data = NULL;
					x->nbytes = 0;
					x->owns_data = 0;
					add_input(sub[c], t);
					continue;
				}
				name = free_name(sub[c], base);
				const struct ir_tensor *y = &g->tensors[w];
				add_input(sub[c], graph_add_tensor(sub[c], name, y->dtype, y->rank, y->shape));
				free(name);
			}
			free(base);
			added++;
		}
	struct ir_op *op = &g->ops[k];
	if (added && op->type != OP_IF)
		op_set_int(op, "captures", op_int(op, "captures", 0) + added);
}

/* Lower op as a host op (lower_on_host): its inputs as f32 (Casts at the
 * boundary from the chip's dtypes; integer and bool tensors as they are),
 * its outputs in the Top graph's dtypes, the op itself unchanged and
 * placed on the host; the weights of its bodies become captures. */
static int lower_host(struct lower_ctx *lc, const struct ir_op *op)
{
	int *in = xcalloc((size_t)op->n_in + 1, sizeof *in);
	int *out = xcalloc((size_t)op->n_out + 1, sizeof *out);
	int rc = 0;
	for (int i = 0; i < op->n_in && rc == 0; i++)
		if ((in[i] = op->in[i] < 0 ? -1 : lower_float_input(lc, op, op->in[i], DT_F32)) < 0 &&
		    op->in[i] >= 0)
			rc = -1;
	if (rc == 0) {
		for (int i = 0; i < op->n_out; i++)
			out[i] = lower_output(lc, op->out[i], lc->top->tensors[op->out[i]].dtype, 0, 0);
		int k = lower_emit(lc, op, op->n_in, in, op->n_out, out);
		lc->tpu->ops[k].place = PLACE_HOST;
		struct ir_graph *sub[2];
		if (lower_bodies(op, sub))
			hoist_body_weights(lc->tpu, k);
	}
	free(in);
	free(out);
	return rc;
}


/* Without a table, int8 is where the model is quantised: an op stays in
 * int8 when each f32 activation it reads is quantised (annotated, or the
 * output of an int8 op that keeps its input's scale) and each f32 output
 * is annotated or, for an op lowered by lower_default, keeps its input's
 * scale; other ops run in f32, as the model computes them.  Fails when
 * some op is in int8 and the graph carries no quantisation at all. */
static int model_modes(const struct ir_graph *top, enum ir_mode *mode)
{
	int any = 0;
	for (int i = 0; i < top->n_ops; i++)
		any |= mode[i] == MODE_INT8;
	if (!any)
		return 0;
	if (!lower_model_quantised(top))
		return -1;
	char *q = xcalloc((size_t)top->n_tensors + 1, 1);
	for (int i = 0; i < top->n_tensors; i++)
		q[i] = model_q_t(&top->tensors[i]);
	for (int i = 0; i < top->n_ops; i++) {
		const struct ir_op *op = &top->ops[i];
		if (mode[i] != MODE_INT8)
			continue;
		int ok = 1, n_act = 0;
		for (int j = 0; j < op->n_in && ok; j++) {
			const struct ir_tensor *t = op->in[j] >= 0 ? &top->tensors[op->in[j]] : NULL;
			if (!t || t->data || t->dtype != DT_F32)
				continue;
			n_act++;
			ok = q[op->in[j]];
		}
		int keeps = op_defs[op->type]->lower == lower_default && n_act > 0;
		for (int j = 0; j < op->n_out && ok; j++)
			ok = top->tensors[op->out[j]].dtype != DT_F32 || q[op->out[j]] || keeps;
		if (!ok || !n_act) {
			mode[i] = MODE_F32;
			continue;
		}
		for (int j = 0; j < op->n_out; j++)
			q[op->out[j]] = 1;
	}
	free(q);
	return 0;
}

/* The int8 step (scale) of Top tensor t under lc's table; 0 when it has
 * none. */
static double step_of(const struct lower_ctx *lc, int t)
{
	enum ir_dtype dt;
	float s;
	int zp;
	if (!calib_find(lc->tab, lc->top->tensors[t].name) || lower_table_act((struct lower_ctx *)lc,
									 NULL, t, &dt, &s, &zp) < 0)
		return 0;
	return s;
}

/* A copy of LC's table in which the activations int8 Concats join take
 * their Concat's entry (threshold, min and max, so the same dtype, scale
 * and zero point), so that their producers requantise straight to the
 * Concat's scale and the Concat becomes a copy addr-assign puts in place,
 * as TPU-MLIR's calibration gives a Concat's inputs its threshold.  The
 * Concats are visited last first, so a chain of Concats (nest-concat's
 * DenseNet blocks) shares the last one's scale.  An input is left alone
 * when it is a weight, a graph input or output, carries the model's own
 * quantisation, has no entry, already took a later Concat's, or is read
 * by another op and its step would change by more than LOWER_SHARE_RATIO
 * (it alone feeds the Concat: one rounding to the Concat's step instead
 * of two, never worse); so is every input of a Concat whose ranges lie
 * apart (lower_ranges_apart: it runs in float).  NULL when nothing is
 * shared; the caller frees the copy with calib_table_free. */
static struct calib_table *share_concat(const struct lower_ctx *lc)
{
	const struct ir_graph *top = lc->top;
	const struct calib_table *tab = lc->tab;
	if (!tab)
		return NULL;
	int nt = top->n_tensors;
	int *readers = xcalloc((size_t)nt + 1, sizeof *readers);
	char *fixed = xcalloc((size_t)nt + 1, 1);   /* not to change: io, taken */
	for (int o = 0; o < top->n_ops; o++)
		for (int j = 0; j < top->ops[o].n_in; j++)
			if (top->ops[o].in[j] >= 0)
				readers[top->ops[o].in[j]]++;
	for (int i = 0; i < top->n_inputs; i++)
		fixed[top->inputs[i]] = 1;
	for (int i = 0; i < top->n_outputs; i++)
		fixed[top->outputs[i]] = 1;
	struct calib_table *cp = calib_table_new();
	for (int i = 0; i < tab->n; i++)
		calib_add(cp, tab->e[i].name, tab->e[i].threshold, tab->e[i].min, tab->e[i].max);
	cp->path = tab->path ? xstrdup(tab->path) : NULL;
	struct lower_ctx now = *lc;
	now.tab = cp;
	int shared = 0;
	for (int o = top->n_ops - 1; o >= 0; o--) {
		const struct ir_op *op = &top->ops[o];
		if (op->type != OP_CONCAT || op->n_out != 1 || (lc->opmode && lc->opmode[o] != MODE_INT8) ||
		    top->tensors[op->out[0]].dtype != DT_F32 ||
		    lower_ranges_apart((struct lower_ctx *)lc, op))
			continue;
		const struct ir_tensor *y = &top->tensors[op->out[0]];
		const struct calib_entry *ey = calib_find(cp, y->name);
		if (!ey || ((y->qdtype == DT_I8 || y->qdtype == DT_U8) && y->scale > 0))
			continue;
		double sy = step_of(&now, op->out[0]);
		for (int j = 0; j < op->n_in; j++) {
			int t = op->in[j];
			if (t < 0 || fixed[t])
				continue;
			const struct ir_tensor *x = &top->tensors[t];
			struct calib_entry *ex = (struct calib_entry *)calib_find(cp, x->name);
			if (x->data || x->dtype != DT_F32 || !ex || ((x->qdtype == DT_I8 || x->qdtype == DT_U8) && x->scale > 0))
				continue;
			double sx = step_of(lc, t);
			if (readers[t] > 1 && !(sy <= LOWER_SHARE_RATIO * sx && sx <= LOWER_SHARE_RATIO * sy))
				continue;
			ex->threshold = ey->threshold;
			ex->min = ey->min;
			ex->max = ey->max;
			fixed[t] = 1;
			shared++;
		}
	}
	free(readers);
	free(fixed);
	if (!shared) {
		calib_table_free(cp);
		return NULL;
	}
	return cp;
}

/* Per op of TOP, 1 where qtable QT (may be NULL) names it; NULL without one. */
static char *qtable_marks(const struct qtable *qt, const struct ir_graph *top)
{
	if (!qt)
		return NULL;
	char *keep = xcalloc((size_t)top->n_ops + 1, 1);
	for (int i = 0; i < top->n_ops; i++)
		keep[i] = top->ops[i].name && name_index_get(&qt->index, top->ops[i].name) >= 0;
	return keep;
}

int lower_graph_opts(const struct ir_graph *top, const char *chip, enum ir_mode m,
		     const struct lower_opts *opts, struct ir_graph **tpu)
{
	const struct calib_table *tab = opts->tab;
	if ((unsigned)m >= MODE_COUNT)
		return err_set("unknown mode %d", (int)m);
	if (!lower_chip_known(chip))
		return err_set("unknown chip '%s'", chip);
	if (top->dialect != DIALECT_TOP)
		return err_set("lowering takes top IR, not %s", dialect_name(top->dialect));
	if (lower_dtype_check(top) < 0)
		return -1;
	/* 3-D Convs as 2-D Convs on depth-major tensors */
	struct ir_graph *deep = NULL;
	struct calib_table *deep_tab = NULL;
	char *keep = qtable_marks(opts->qt, top);
	lower_depth(top, keep, tab, &deep, &deep_tab);
	if (deep) {
		top = deep;
		free(keep);
		keep = qtable_marks(opts->qt, top);
	}
	if (deep_tab)
		tab = deep_tab;
	/* a linear Conv and the 1x1 Conv reading it as one, where faster */
	struct ir_graph *composed = NULL;
	lower_compose(top, chip_find(chip), m, keep, &composed);
	free(keep);
	if (composed)
		top = composed;
	enum ir_mode *opmode = xmalloc(sizeof *opmode * (size_t)(top->n_ops + 1));
	if (op_modes(top, m, opts->qt, opmode) < 0) {
		free(opmode);
		graph_free(composed);
		graph_free(deep);
		calib_table_free(deep_tab);
		return -1;
	}
	if (tab)
		f16_range_guard(top, tab, opts, opmode);
	if (!tab && model_modes(top, opmode) < 0) {
		free(opmode);
		graph_free(composed);
		graph_free(deep);
		calib_table_free(deep_tab);
		return err_set("int8 lowering needs a calibration table");
	}

	struct lower_ctx lc = {
		.top = top, .mode = m, .tab = tab,
		.map = xmalloc(sizeof(int) * (size_t)(top->n_tensors + 1)),
		.alt = xmalloc(sizeof(int) * (size_t)(top->n_tensors + 1) * DT_COUNT),
		.is_output = xcalloc((size_t)top->n_tensors + 1, sizeof(int)),
		.signed_only = opts->signed_only,
		.asymmetric = opts->asymmetric,
		.fallback = opts->fallback != MODE_F32 ? opts->fallback : MODE_BF16,
		.first_disagree = -1,
		.opmode = opmode,
	};
	for (int i = 0; i < top->n_tensors; i++)
		lc.map[i] = -1;
	/* Concats and the inputs they copy on one scale */
	struct calib_table *shared = share_concat(&lc);
	if (shared)
		lc.tab = shared;
	for (size_t i = 0; i < (size_t)(top->n_tensors + 1) * DT_COUNT; i++)
		lc.alt[i] = -1;
	for (int i = 0; i < top->n_outputs; i++)
		lc.is_output[top->outputs[i]] = 1;
	struct ir_graph *g = graph_new(DIALECT_TPU, STAGE_LOWERED);
	lc.tpu = g;
	g->name = xstrdup(top->name ? top->name : "");
	g->chip = xstrdup(chip);
	g->mode = m;

	int rc = lower_inputs(&lc);
	char *shape_val = lower_shape_values(top);
	for (int i = 0; rc == 0 && i < top->n_ops; i++) {
		const struct ir_op *op = &top->ops[i];
		const struct op_def *d = op_defs[op->type];
		lc.mode = opmode[i];
		int bn_const = op->type == OP_BATCHNORM;
		for (int j = 1; bn_const && j < op->n_in; j++)
			bn_const = op->in[j] >= 0 && top->tensors[op->in[j]].data != NULL;
		if (bn_const) {
			rc = op_error(op, "must be folded or turned into Scale by top-opt before lowering");
		} else if (op->type == OP_NLLLOSS || op->type == OP_SCELOSS) {
			rc = op_error(op, "is a training-only loss; the chip runs inference only");
		} else if (lower_on_host(top, op, shape_val)) {
			rc = lower_host(&lc, op);
		} else if (!d->lower && (!d->run_f32 || !d->run_tpu)) {
			rc = op_error(op, "cannot be lowered to the tpu dialect");
		} else if (lc.mode == MODE_INT8 && !float_operands(top, op)) {
			/* integers only (a Concat of indices): nothing to quantise */
			rc = lower_default(&lc, op);
		} else if (!d->lower) {
			/* no int8 form: a float op in the fallback mode */
			if (lc.mode == MODE_INT8)
				lc.mode = lc.fallback;
			rc = lower_default(&lc, op);
		} else {
			rc = d->lower(&lc, op);
		}
	}
	if (rc == 0)
		rc = lower_outputs(&lc);
	if (rc == 0 && lc.n_disagree && opts->notes)
		fprintf(opts->notes, "%s: note: the model's own quantisation wins over '%s' for %d "
			"tensors whose scales differ (first '%s': scale %.6g)\n",
			opts->prog ? opts->prog : "tpuc", tab->path ? tab->path : "the table",
			lc.n_disagree, top->tensors[lc.first_disagree].name,
			(double)top->tensors[lc.first_disagree].scale);
	/* before lower_fit, which cuts the Casts it moves that do not fit */
	if (rc == 0)
		rc = lower_cast_copies(g);
	if (rc == 0)
		rc = lower_fit(g, chip_find(chip));
	if (rc == 0)
		rc = lower_split_wide(g);
	if (rc == 0) {
		lower_cast_hoist(g);
		lower_outputs_early(g);
	}
	if (rc == 0)
		rc = ir_verify(g);
	FREE_ALL(lc.map, lc.alt, lc.is_output, opmode, shape_val);
	calib_table_free(shared);
	calib_table_free(deep_tab);
	graph_free(composed);
	graph_free(deep);
	if (rc < 0) {
		graph_free(g);
		return -1;
	}
	*tpu = g;
	return 0;
}

/* ---- qtables ---- */

void qtable_add(struct qtable *q, const char *op, enum ir_mode mode)
{
	grow_array((void **)&q->e, &q->cap, q->n + 1, sizeof *q->e);
	q->e[q->n].op = xstrdup(op);
	q->e[q->n].mode = mode;
	q->e[q->n].line = q->n + 1;
	name_index_put(&q->index, op, q->n);
	q->n++;
}

void qtable_free(struct qtable *q)
{
	if (!q)
		return;
	for (int i = 0; i < q->n; i++)
		free(q->e[i].op);
	free(q->e);
	free(q->path);
	name_index_free(&q->index);
	free(q);
}

int qtable_read(const char *path, struct qtable **out)
{
	struct text_file tf;
	if (text_open(&tf, path) < 0)
		return -1;
	struct qtable *q = xcalloc(1, sizeof *q);
	q->path = xstrdup(tf.shown);
	char *f[2];
	int n, rc = 0;
	while (rc == 0 && (n = text_fields(&tf, f, 2)) > 0) {
		int m = n == 2 ? mode_from_name(f[1]) : -1;
		if (n != 2 || m < 0) {
			rc = err_set("'%s': line %d: expected 'op_name MODE' with MODE f32, bf16, "
				     "f16 or int8", tf.shown, tf.line);
			break;
		}
		if (name_index_get(&q->index, f[0]) >= 0) {
			rc = err_set("'%s': line %d: op '%s' listed twice", tf.shown, tf.line, f[0]);
			break;
		}
		qtable_add(q, f[0], m);
		q->e[q->n - 1].line = tf.line;
	}
	text_close(&tf);
	if (rc < 0) {
		qtable_free(q);
		return -1;
	}
	*out = q;
	return 0;
}

void qtable_print(FILE *fp, const struct qtable *q, const char *comment)
{
	fprintf(fp, "# tpuc qtable (formats/tpuc-quant.5): op_name mode\n");
	if (comment && !strchr(comment, '\n'))
		fprintf(fp, "# %s\n", comment);
	for (int i = 0; i < q->n; i++)
		fprintf(fp, "%s %s\n", q->e[i].op, mode_name(q->e[i].mode));
}

int qtable_write(const char *path, const struct qtable *q, const char *comment)
{
	struct out_file o;
	if (out_open(&o, path) < 0)
		return -1;
	qtable_print(o.fp, q, comment);
	return out_commit(&o);
}

int lower_act_io(struct lower_ctx *lc, const struct ir_op *op, enum ir_dtype *dt,
		 float *s_out, int *zp)
{
	int x = lower_act_input(lc, op, op->in[0]);
	if (x < 0 || lower_table_act(lc, op, op->out[0], dt, s_out, zp) < 0)
		return -1;
	return x;
}

int lower_per_channel(struct lower_ctx *lc, const struct ir_op *op, const struct lower_pc *pc)
{
	enum ir_dtype dt;
	float s_out;
	int zp, x = lower_act_io(lc, op, &dt, &s_out, &zp);
	if (x < 0)
		return -1;
	int64_t nc = pc->channels, nw = nc * pc->per;
	float s_in = lc->tpu->tensors[x].scale;
	int8_t *wq = xmalloc((size_t)nw + 1);
	float *chan = xmalloc(sizeof(float) * (size_t)(pc->per + 1));
	int32_t *par = xmalloc(sizeof(int32_t) * (size_t)(3 * nc + 1));
	int rc = 0;
	for (int64_t c = 0; c < nc && rc == 0; c++) {
		for (int64_t e = 0; e < pc->per; e++)
			chan[e] = pc->w[c * pc->cstride + e * pc->estride];
		float s_w = quant_weight_scale(chan, pc->per);
		for (int64_t e = 0; e < pc->per; e++)
			wq[c * pc->cstride + e * pc->estride] = quant_f32_to_i8_one(chan[e], s_w);
		par[c] = pc->b ? quant_bias(pc->b[c], s_in, s_w) : 0;
		if (quant_multiplier((double)s_in * s_w / s_out, &par[nc + c], &par[2 * nc + c]) < 0) {
			char why[256];
			snprintf(why, sizeof why, "%s", err_msg());
			rc = op_error(op, "channel %lld: %s", (long long)c, why);
		}
	}
	int in[5] = { x, -1, -1, -1, -1 };
	if (rc == 0) {
		char name[512];
		int64_t shape[1] = { nc };
		in[1] = lower_weight(lc, pc->wname, DT_I8, pc->wrank, pc->wshape, wq);
		if (pc->bname)
			snprintf(name, sizeof name, "%s", pc->bname);
		else
			snprintf(name, sizeof name, "%s_bias", op->name);
		in[2] = lower_weight(lc, name, DT_I32, 1, shape, par);
		snprintf(name, sizeof name, "%s_multiplier", op->name);
		in[3] = lower_weight(lc, name, DT_I32, 1, shape, par + nc);
		snprintf(name, sizeof name, "%s_shift", op->name);
		in[4] = lower_weight(lc, name, DT_I32, 1, shape, par + 2 * nc);
	}
	free(wq);
	free(chan);
	free(par);
	if (rc < 0)
		return -1;
	int y = lower_output(lc, op->out[0], dt, s_out, zp);
	return lower_emit(lc, op, 5, in, 1, &y);
}
