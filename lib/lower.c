/* lower.c - the lowering driver: Top graph to Tpu graph, op by op through
 * each op's `lower` hook, plus the tensor helpers those hooks share.
 */
#include "lower.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "chip.h"
#include "ops/opcommon.h"
#include "quant.h"

static const char *const modes[] = { [LOWER_F32] = "f32", [LOWER_INT8] = "int8" };

int lower_chip_known(const char *name)
{
	return chip_find(name) != NULL;
}

int lower_mode_from_name(const char *name)
{
	for (size_t i = 0; i < ARRAY_LEN(modes); i++)
		if (!strcmp(modes[i], name))
			return (int)i;
	return -1;
}

int lower_emit(struct lower_ctx *lc, const struct ir_op *op, int n_in, const int *in,
	       int n_out, const int *out)
{
	int k = graph_add_op(lc->tpu, op->type, op->name, n_in, in, n_out, out);
	struct ir_op *o = &lc->tpu->ops[k];
	for (int i = 0; i < op->n_attr; i++) {
		const struct ir_attr *a = &op->attr[i];
		switch (a->kind) {
		case ATTR_INT: op_set_int(o, a->name, a->i); break;
		case ATTR_FLOAT: op_set_float(o, a->name, a->f); break;
		case ATTR_INTS: op_set_ints(o, a->name, a->n, a->ints); break;
		case ATTR_FLOATS: op_set_floats(o, a->name, a->n, a->floats); break;
		case ATTR_STR: op_set_str(o, a->name, a->s); break;
		}
	}
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
	int k = s->data ? graph_add_weight(lc->tpu, s->name, s->dtype, s->rank, s->shape, s->data)
			: graph_add_tensor(lc->tpu, s->name, s->dtype, s->rank, s->shape);
	lc->map[t] = k;
	return k;
}

int lower_output(struct lower_ctx *lc, int t, enum ir_dtype dt, float scale)
{
	const struct ir_tensor *s = &lc->top->tensors[t];
	char *name;
	if (lc->mode == LOWER_INT8 && lc->is_output[t]) {
		size_t n = strlen(s->name) + 4;
		char *q = xmalloc(n);
		snprintf(q, n, "%s_i8", s->name);
		name = unique_name(lc->tpu, q);
		free(q);
	} else {
		name = xstrdup(s->name);
	}
	int k = graph_add_tensor(lc->tpu, name, dt, s->rank, s->shape);
	free(name);
	if (dt == DT_I8)
		lc->tpu->tensors[k].scale = scale;
	lc->map[t] = k;
	return k;
}

int lower_table_scale(struct lower_ctx *lc, const struct ir_op *op, int t, float *scale)
{
	const char *name = lc->top->tensors[t].name;
	const struct calib_entry *e = calib_find(lc->tab, name);
	if (!e) {
		const char *tp = lc->tab->path ? lc->tab->path : "calibration table";
		if (op)
			return op_error(op, "no threshold for '%s' in '%s'", name, tp);
		return err_set("graph input '%s': no threshold in '%s'", name, tp);
	}
	*scale = quant_act_scale(e->threshold);
	return 0;
}

int lower_act_input(struct lower_ctx *lc, const struct ir_op *op, int t)
{
	if (lc->map[t] >= 0 && lc->tpu->tensors[lc->map[t]].dtype == DT_I8)
		return lc->map[t];
	const struct ir_tensor *s = &lc->top->tensors[t];
	if (!s->data || s->dtype != DT_F32)
		return op_error(op, "input '%s' is not an int8 activation", s->name);
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
	return k;
}

int lower_default(struct lower_ctx *lc, const struct ir_op *op)
{
	int in[OP_MAX_IO], out[OP_MAX_IO];
	if (op->n_in > OP_MAX_IO || op->n_out > OP_MAX_IO)
		return op_error(op, "too many inputs or outputs");
	for (int i = 0; i < op->n_in; i++) {
		if (lc->mode == LOWER_INT8 && op->in[i] >= 0)
			in[i] = lower_act_input(lc, op, op->in[i]);
		else
			in[i] = lower_value(lc, op->in[i]);
		if (op->in[i] >= 0 && in[i] < 0)
			return -1;
	}
	float scale = 0;
	if (lc->mode == LOWER_INT8 && op->n_in > 0 && in[0] >= 0)
		scale = lc->tpu->tensors[in[0]].scale;
	for (int i = 0; i < op->n_out; i++) {
		enum ir_dtype dt = lc->mode == LOWER_INT8 ? DT_I8 : lc->top->tensors[op->out[i]].dtype;
		out[i] = lower_output(lc, op->out[i], dt, scale);
	}
	lower_emit(lc, op, op->n_in, in, op->n_out, out);
	return 0;
}

/* Int8: a Cast from tensor IN to tensor OUT named NAME. */
static void emit_cast(struct lower_ctx *lc, const char *name, int in, int out)
{
	char *u = xstrdup(name);
	int k = graph_add_op(lc->tpu, OP_CAST, u, 1, &in, 1, &out);
	op_set_str(&lc->tpu->ops[k], "to", dtype_name(lc->tpu->tensors[out].dtype));
	free(u);
}

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
		if (lc->mode != LOWER_INT8)
			continue;
		if (s->dtype != DT_F32)
			return err_set("graph input '%s': int8 lowering takes f32 inputs, not %s",
				       s->name, dtype_name(s->dtype));
		float scale;
		if (lower_table_scale(lc, NULL, t, &scale) < 0)
			return -1;
		size_t n = strlen(s->name) + 8;
		char *name = xmalloc(n);
		snprintf(name, n, "%s_i8", s->name);
		char *u = unique_name(g, name);
		int q = graph_add_tensor(g, u, DT_I8, s->rank, s->shape);
		g->tensors[q].scale = scale;
		snprintf(name, n, "%s_quant", s->name);
		emit_cast(lc, name, k, q);
		lc->map[t] = q;
		free(u);
		free(name);
	}
	return 0;
}

static int lower_outputs(struct lower_ctx *lc)
{
	const struct ir_graph *top = lc->top;
	struct ir_graph *g = lc->tpu;
	g->n_outputs = top->n_outputs;
	g->outputs = xmalloc(sizeof(int) * (size_t)(top->n_outputs + 1));
	for (int i = 0; i < top->n_outputs; i++) {
		int t = top->outputs[i];
		int k = lower_value(lc, t);
		if (lc->mode == LOWER_INT8 && g->tensors[k].dtype == DT_I8) {
			const struct ir_tensor *s = &top->tensors[t];
			int f = graph_add_tensor(g, s->name, DT_F32, s->rank, s->shape);
			size_t n = strlen(s->name) + 16;
			char *name = xmalloc(n);
			snprintf(name, n, "%s_dequant", s->name);
			emit_cast(lc, name, k, f);
			free(name);
			k = f;
		}
		g->outputs[i] = k;
	}
	return 0;
}

int lower_graph(const struct ir_graph *top, const char *chip, const char *mode,
		const struct calib_table *tab, struct ir_graph **tpu)
{
	int m = lower_mode_from_name(mode);
	if (m < 0)
		return err_set("unknown mode '%s'", mode);
	if (!lower_chip_known(chip))
		return err_set("unknown chip '%s'", chip);
	if (m == LOWER_INT8 && !tab)
		return err_set("int8 lowering needs a calibration table");
	if (top->dialect != DIALECT_TOP)
		return err_set("lowering takes top IR, not %s", dialect_name(top->dialect));

	struct lower_ctx lc = {
		.top = top, .mode = (enum lower_mode)m, .tab = tab,
		.map = xmalloc(sizeof(int) * (size_t)(top->n_tensors + 1)),
		.is_output = xcalloc((size_t)top->n_tensors + 1, sizeof(int)),
	};
	for (int i = 0; i < top->n_tensors; i++)
		lc.map[i] = -1;
	for (int i = 0; i < top->n_outputs; i++)
		lc.is_output[top->outputs[i]] = 1;
	struct ir_graph *g = graph_new(DIALECT_TPU, STAGE_LOWERED);
	lc.tpu = g;
	g->name = xstrdup(top->name ? top->name : "");
	g->chip = xstrdup(chip);
	g->mode = xstrdup(mode);

	int rc = lower_inputs(&lc);
	for (int i = 0; rc == 0 && i < top->n_ops; i++) {
		const struct ir_op *op = &top->ops[i];
		const struct op_def *d = op_defs[op->type];
		if (op->type == OP_BATCHNORM)
			rc = op_error(op, "must be folded or turned into Scale by top-opt before lowering");
		else if (!d->lower)
			rc = op_error(op, "cannot be lowered to the tpu dialect");
		else
			rc = d->lower(&lc, op);
	}
	if (rc == 0)
		rc = lower_outputs(&lc);
	if (rc == 0)
		rc = ir_verify(g);
	free(lc.map);
	free(lc.is_output);
	if (rc < 0) {
		graph_free(g);
		return -1;
	}
	*tpu = g;
	return 0;
}

int lower_per_channel(struct lower_ctx *lc, const struct ir_op *op, int x,
		      const struct lower_pc *pc, float s_out)
{
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
	int y = lower_output(lc, op->out[0], DT_I8, s_out);
	return lower_emit(lc, op, 5, in, 1, &y);
}
