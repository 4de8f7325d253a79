/* rnn.c - the recurrent operators LSTM, GRU and RNN (ONNX opsets 7-14): a
 * gated recurrence over X [seq, batch, input] (layout 1: [batch, seq,
 * input]) in one or both directions, run one time step at a time in float.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ops/kern_util.h"
#include "back/lower.h"
#include "ir/op.h"
#include "quant/quant.h"
#include "ir/scalar.h"

/* The activation functions a recurrent op may name (none takes
 * activation_alpha or activation_beta). */
enum rnn_act { ACT_SIGMOID, ACT_TANH, ACT_RELU, ACT_SOFTSIGN, ACT_SOFTPLUS, ACT_COUNT };
static const char *const act_names[ACT_COUNT] = { "Sigmoid", "Tanh", "Relu", "Softsign", "Softplus" };

/* An op's attributes and sizes, checked (rnn_config). */
struct rnn_cfg {
	int gates;                /* gate blocks in W and R: LSTM 4 (iofc), GRU 3 (zrh), RNN 1 */
	int n_act;                /* activations per direction: LSTM 3, GRU 2, RNN 1 */
	int nd;                   /* directions: 1 or 2 */
	int reverse;              /* the single direction runs backwards */
	int layout;               /* 0: seq-first; 1: batch-first */
	int lbr;                  /* GRU linear_before_reset */
	int64_t seq, batch, input, hidden;
	float clip;               /* bound on gate pre-activations; 0: none */
	enum rnn_act act[2][3];   /* [direction][f, g, h] */
};

static int gates_of(enum op_type t)
{
	return t == OP_LSTM ? 4 : t == OP_GRU ? 3 : 1;
}

/* Parse the comma-separated "activations" attribute: n_act names for each
 * direction, or n_act used for both. */
static int parse_acts(const struct ir_op *op, struct rnn_cfg *c)
{
	static const char *const def_lstm = "Sigmoid,Tanh,Tanh", *const def_gru = "Sigmoid,Tanh";
	const char *s = op_str(op, "activations",
			       op->type == OP_LSTM ? def_lstm : op->type == OP_GRU ? def_gru : "Tanh");
	enum rnn_act list[6];
	int n = 0;
	while (*s) {
		size_t len = strcspn(s, ",");
		int a = -1;
		for (int i = 0; i < ACT_COUNT && a < 0; i++)
			if (strlen(act_names[i]) == len && !strncasecmp(act_names[i], s, len))
				a = i;
		if (a < 0)
			return op_error(op, "activation '%.*s' is not supported (Sigmoid, Tanh, Relu, "
					"Softsign and Softplus are)", (int)len, s);
		if (n == 6)
			return op_error(op, "too many activations");
		list[n++] = (enum rnn_act)a;
		s += len + (s[len] == ',');
	}
	if (n != c->n_act && n != c->n_act * c->nd)
		return op_error(op, "%d activations given, %d per direction expected", n, c->n_act);
	for (int d = 0; d < c->nd; d++)
		for (int i = 0; i < c->n_act; i++)
			c->act[d][i] = list[n == c->n_act ? i : d * c->n_act + i];
	return 0;
}

/* Fill c from op's attributes and X's shape (rank 3); -1 with a message
 * naming the op for what the kernel does not do. */
static int rnn_config(const struct ir_op *op, const int64_t *xs, int64_t r_hidden, struct rnn_cfg *c)
{
	memset(c, 0, sizeof *c);
	c->gates = gates_of(op->type);
	c->n_act = op->type == OP_LSTM ? 3 : op->type == OP_GRU ? 2 : 1;
	const char *dir = op_str(op, "direction", "forward");
	if (!strcmp(dir, "forward") || !strcmp(dir, "reverse")) {
		c->nd = 1;
		c->reverse = dir[0] == 'r';
	} else if (!strcmp(dir, "bidirectional")) {
		c->nd = 2;
	} else {
		return op_error(op, "direction '%s' is not forward, reverse or bidirectional", dir);
	}
	c->layout = (int)op_int(op, "layout", 0);
	if (c->layout != 0 && c->layout != 1)
		return op_error(op, "layout %d is not 0 or 1", c->layout);
	c->lbr = op->type == OP_GRU && op_int(op, "linear_before_reset", 0) != 0;
	if (op->type == OP_LSTM && op_int(op, "input_forget", 0) != 0)
		return op_error(op, "input_forget=1 is not supported");
	double clip = op_float(op, "clip", 0);
	if (!(clip >= 0))
		return op_error(op, "clip %g is negative", clip);
	c->clip = (float)clip;
	c->seq = xs[c->layout ? 1 : 0];
	c->batch = xs[c->layout ? 0 : 1];
	c->input = xs[2];
	c->hidden = op_int(op, "hidden_size", r_hidden);
	if (c->hidden != r_hidden || c->hidden < 1)
		return op_error(op, "hidden_size %lld does not match R's %lld", (long long)c->hidden,
				(long long)r_hidden);
	return parse_acts(op, c);
}

/* 1 if t has exactly the dims given (rank n). */
static int has_shape(const struct ir_tensor *t, int n, const int64_t *dims)
{
	if (t->rank != n)
		return 0;
	for (int i = 0; i < n; i++)
		if (t->shape[i] != dims[i])
			return 0;
	return 1;
}

/* The index among op's inputs of ONNX input `slot`, -1 when absent: the
 * slot itself, unless the Tpu attribute "slots" lists the slots of the
 * inputs present (lower_split_wide drops absent ones so that an LSTM with
 * peepholes fits a compute command's operands). */
static int rnn_in(const struct ir_op *op, int slot)
{
	const struct ir_attr *a = op_attr(op, "slots");
	if (!a || a->kind != ATTR_INTS)
		return slot < op->n_in && op->in[slot] >= 0 ? slot : -1;
	for (int i = 0; i < a->n && i < op->n_in; i++)
		if (a->ints[i] == slot)
			return op->in[i] >= 0 ? i : -1;
	return -1;
}

/* The same for output `slot` (attribute "out_slots"). */
static int rnn_out(const struct ir_op *op, int slot)
{
	const struct ir_attr *a = op_attr(op, "out_slots");
	if (!a || a->kind != ATTR_INTS)
		return slot < op->n_out ? slot : -1;
	for (int i = 0; i < a->n && i < op->n_out; i++)
		if (a->ints[i] == slot)
			return i;
	return -1;
}

static struct ir_tensor *rnn_t(struct ir_graph *g, const struct ir_op *op, int slot)
{
	int i = rnn_in(op, slot);
	return i >= 0 ? &g->tensors[op->in[i]] : NULL;
}

static const struct view *rnn_v(const struct kern *k, int slot)
{
	int i = rnn_in(k->op, slot);
	return i >= 0 && i < k->n_in && k->in[i].data ? &k->in[i] : NULL;
}

/* Inputs: X, W, R, B, sequence_lens, initial_h (, initial_c, P for LSTM);
 * outputs Y, Y_h (, Y_c). */
static int rnn_infer(struct ir_graph *g, struct ir_op *op)
{
	for (int i = 0; i < 8; i++) {
		const struct ir_tensor *t = rnn_t(g, op, i);
		if (t && i != 4 && t->dtype != DT_F32)
			return op_error(op, "input %d is %s (f32 only)", i, dtype_name(t->dtype));
	}
	const struct ir_tensor *x = rnn_t(g, op, 0), *w = rnn_t(g, op, 1), *r = rnn_t(g, op, 2);
	if (!x || !w || !r)
		return op_error(op, "X, W and R are required");
	if (x->rank != 3 || r->rank != 3)
		return op_error(op, "X, W and R must have rank 3");
	struct rnn_cfg c;
	if (rnn_config(op, x->shape, r->shape[2], &c) < 0)
		return -1;
	int64_t gh = c.gates * c.hidden, H = c.hidden, nd = c.nd, N = c.batch;
	if (!has_shape(w, 3, (int64_t[]){ nd, gh, c.input }))
		return op_error(op, "W must be [%lld, %lld, %lld]", (long long)nd, (long long)gh,
				(long long)c.input);
	if (!has_shape(r, 3, (int64_t[]){ nd, gh, H }))
		return op_error(op, "R must be [%lld, %lld, %lld]", (long long)nd, (long long)gh,
				(long long)H);
	const struct ir_tensor *b = rnn_t(g, op, 3), *sl = rnn_t(g, op, 4);
	int lstm = op->type == OP_LSTM, bp = lstm && op_int(op, "bp", 0);   /* B and P packed: [nd, 8H + 3H] */
	if (b && !has_shape(b, 2, (int64_t[]){ nd, 2 * gh + (bp ? 3 * H : 0) }))
		return op_error(op, "B must be [%lld, %lld]", (long long)nd,
				(long long)(2 * gh + (bp ? 3 * H : 0)));
	if (sl && (sl->rank != 1 || sl->shape[0] != N || (sl->dtype != DT_I32 && sl->dtype != DT_I64)))
		return op_error(op, "sequence_lens must be i32 [%lld]", (long long)N);
	int64_t hs[3] = { nd, N, H };
	if (c.layout)
		hs[0] = N, hs[1] = nd;
	/* initial_h and initial_c packed into input 5 ([2 hs0, hs1, H], attribute hc) */
	int hc = lstm && op_int(op, "hc", 0);
	for (int i = 5; i <= (lstm ? 6 : 5); i++) {
		const struct ir_tensor *t = rnn_t(g, op, i);
		int64_t want[3] = { (hc ? 2 : 1) * hs[0], hs[1], hs[2] };
		if (t && !has_shape(t, 3, want))
			return op_error(op, "initial_%s must be [%lld, %lld, %lld]",
					hc ? "h and c" : i == 5 ? "h" : "c", (long long)want[0],
					(long long)want[1], (long long)want[2]);
	}
	const struct ir_tensor *p = lstm ? rnn_t(g, op, 7) : NULL;
	if (p && !has_shape(p, 2, (int64_t[]){ nd, 3 * H }))
		return op_error(op, "P must be [%lld, %lld]", (long long)nd, (long long)(3 * H));
	int64_t ys[4] = { c.seq, nd, N, H };
	if (c.layout)
		ys[0] = N, ys[1] = c.seq, ys[2] = nd;
	for (int s = 0; s < 3; s++) {
		int i = rnn_out(op, s);
		if (i >= 0)
			op_set_out(g, op, i, DT_F32, s ? 3 : 4, s ? hs : ys);
	}
	return 0;
}

static float act(enum rnn_act a, float v)
{
	switch (a) {
	case ACT_SIGMOID: return scalar_sigmoid(v);
	case ACT_TANH: return tanhf(v);
	case ACT_RELU: return v > 0 ? v : 0;
	case ACT_SOFTSIGN: return scalar_softsign(v);
	case ACT_SOFTPLUS: return scalar_softplus(v);
	default: return v;
	}
}

/* One direction of one batch row.  Pointers are that direction's slices:
 * W [G*H, I], R [G*H, H], B [2*G*H] or NULL, P [3H] or NULL; h and c hold
 * the initial state and end as the final one; ys/ystride place the output
 * of step t at y + t * ystride (y NULL: not wanted). */
struct rnn_dir {
	const struct rnn_cfg *c;
	const enum rnn_act *act;
	const float *w, *r, *b, *p;
	const float *x;              /* X of this batch row at step 0 */
	int64_t xstride;             /* floats from one step to the next in X */
	float *y;
	int64_t ystride;
	int reverse;
	int64_t len;                 /* valid steps */
};

/* out[j] = bias[j] + sum_k m[j, k] * v[k] for j < rows, m [rows, n]. */
static void matvec(float *out, const float *m, const float *v, int64_t rows, int64_t n,
		   const float *bias)
{
	for (int64_t j = 0; j < rows; j++) {
		double s = bias ? bias[j] : 0;
		const float *mj = m + j * n;
		for (int64_t k = 0; k < n; k++)
			s += (double)mj[k] * v[k];
		out[j] = (float)s;
	}
}

static float clipped(const struct rnn_cfg *c, float v)
{
	return c->clip > 0 ? fminf(fmaxf(v, -c->clip), c->clip) : v;
}

static void rnn_run_dir(const struct rnn_dir *d, enum op_type type, float *h, float *cell)
{
	const struct rnn_cfg *c = d->c;
	int64_t H = c->hidden, I = c->input, G = c->gates;
	float *gx = xmalloc(sizeof(float) * (size_t)(3 * G * H + 3 * H));
	float *gh = gx + G * H, *bsum = gh + G * H, *hr = bsum + G * H, *hn = hr + 2 * H;
	/* input-side bias: Wb + Rb, except GRU's hidden gate with
	 * linear_before_reset, whose Rbh goes inside the reset product */
	for (int64_t j = 0; j < G * H; j++)
		bsum[j] = d->b ? d->b[j] + (type == OP_GRU && c->lbr && j >= 2 * H ? 0 : d->b[G * H + j]) : 0;
	for (int64_t s = 0; s < d->len; s++) {
		int64_t t = d->reverse ? d->len - 1 - s : s;
		matvec(gx, d->w, d->x + t * d->xstride, G * H, I, bsum);
		if (type == OP_LSTM) {
			matvec(gh, d->r, h, 4 * H, H, NULL);
			for (int64_t k = 0; k < H; k++) {
				float pi = d->p ? d->p[k] : 0, po = d->p ? d->p[H + k] : 0;
				float pf = d->p ? d->p[2 * H + k] : 0;
				float it = act(d->act[0], clipped(c, gx[k] + gh[k] + pi * cell[k]));
				float ft = act(d->act[0], clipped(c, gx[2 * H + k] + gh[2 * H + k] + pf * cell[k]));
				float ct = act(d->act[1], clipped(c, gx[3 * H + k] + gh[3 * H + k]));
				cell[k] = ft * cell[k] + it * ct;
				float ot = act(d->act[0], clipped(c, gx[H + k] + gh[H + k] + po * cell[k]));
				hn[k] = ot * act(d->act[2], cell[k]);
			}
		} else if (type == OP_GRU) {
			matvec(gh, d->r, h, 2 * H, H, NULL);
			float *z = hr, *rg = hr + H;
			for (int64_t k = 0; k < H; k++) {
				z[k] = act(d->act[0], clipped(c, gx[k] + gh[k]));
				rg[k] = act(d->act[0], clipped(c, gx[H + k] + gh[H + k]));
			}
			if (c->lbr) {
				matvec(gh + 2 * H, d->r + 2 * H * H, h, H, H, d->b ? d->b + 5 * H : NULL);
				for (int64_t k = 0; k < H; k++)
					gh[2 * H + k] *= rg[k];
			} else {
				for (int64_t k = 0; k < H; k++)
					hn[k] = rg[k] * h[k];
				matvec(gh + 2 * H, d->r + 2 * H * H, hn, H, H, NULL);
			}
			for (int64_t k = 0; k < H; k++) {
				float ht = act(d->act[1], clipped(c, gx[2 * H + k] + gh[2 * H + k]));
				hn[k] = (1 - z[k]) * ht + z[k] * h[k];
			}
		} else {
			matvec(gh, d->r, h, H, H, NULL);
			for (int64_t k = 0; k < H; k++)
				hn[k] = act(d->act[0], clipped(c, gx[k] + gh[k]));
		}
		memcpy(h, hn, sizeof(float) * (size_t)H);
		if (d->y)
			memcpy(d->y + t * d->ystride, h, sizeof(float) * (size_t)H);
	}
	free(gx);
}

static int rnn_run(struct kern *k)
{
	const struct ir_op *op = k->op;
	for (int i = 0; i < 8; i++)
		if (rnn_v(k, i) && i != 4 && rnn_v(k, i)->dtype != DT_F32)
			return op_error(op, "input %d is %s, the kernel takes f32", i,
					dtype_name(rnn_v(k, i)->dtype));
	if (!rnn_v(k, 0) || !rnn_v(k, 1) || !rnn_v(k, 2))
		return op_error(op, "X, W and R are required");
	for (int i = 0; i < k->n_out; i++)
		if (k->out[i].dtype != DT_F32)
			return op_error(op, "output %d is %s, the kernel gives f32", i,
					dtype_name(k->out[i].dtype));
	struct rnn_cfg c;
	if (rnn_config(op, rnn_v(k, 0)->shape, rnn_v(k, 2)->shape[2], &c) < 0)
		return -1;
	int64_t H = c.hidden, N = c.batch, T = c.seq, nd = c.nd, G = c.gates;
	const struct view *sl = rnn_v(k, 4);
	int64_t *lens = xmalloc(sizeof(int64_t) * (size_t)N);
	for (int64_t b = 0; b < N; b++) {
		lens[b] = !sl ? T : sl->dtype == DT_I32 ? ((const int32_t *)sl->data)[b]
							: ((const int64_t *)sl->data)[b];
		if (lens[b] < 0 || lens[b] > T) {
			long long v = (long long)lens[b];
			free(lens);
			return op_error(op, "sequence_lens[%lld] = %lld is outside [0, %lld]",
					(long long)b, v, (long long)T);
		}
	}
#define DATA(s) (rnn_v(k, s) ? (const float *)rnn_v(k, s)->data : NULL)
	const float *x = DATA(0), *w = DATA(1), *r = DATA(2), *bias = DATA(3), *h0 = DATA(5);
	const float *c0 = op->type == OP_LSTM ? DATA(6) : NULL;
	const float *peep = op->type == OP_LSTM ? DATA(7) : NULL;
#undef DATA
	/* B and P packed into input 3 ([nd, 8H + 3H], attribute bp) */
	int lstm = op->type == OP_LSTM, bp = lstm && op_int(op, "bp", 0);
	int64_t bstride = 2 * G * H + (bp ? 3 * H : 0), pstride = bp ? bstride : 3 * H;
	if (bp && bias)
		peep = bias + 2 * G * H;
	if (lstm && op_int(op, "hc", 0) && h0)
		c0 = h0 + nd * N * H;
	int oy = rnn_out(op, 0), oh = rnn_out(op, 1), oc = rnn_out(op, 2);
	float *y = oy >= 0 ? k->out[oy].data : NULL;
	float *yh = oh >= 0 ? k->out[oh].data : NULL, *yc = oc >= 0 ? k->out[oc].data : NULL;
	if (y)
		memset(y, 0, sizeof(float) * (size_t)view_numel(&k->out[oy]));
	int nt = kern_threads(k, nd * N, T * G * H * (c.input + H));

	#pragma omp parallel for num_threads(nt) schedule(static)
	for (int64_t i = 0; i < nd * N; i++) {
		int64_t d = i / N, b = i % N;
		/* state offsets: [nd, N, H], or [N, nd, H] batch-first */
		int64_t so = (c.layout ? b * nd + d : d * N + b) * H;
		struct rnn_dir rd = {
			.c = &c, .act = c.act[d],
			.w = w + d * G * H * c.input, .r = r + d * G * H * H,
			.b = bias ? bias + d * bstride : NULL,
			.p = peep ? peep + d * pstride : NULL,
			.x = x + (c.layout ? b * T : b) * c.input,
			.xstride = (c.layout ? 1 : N) * c.input,
			.y = y ? y + (c.layout ? (b * T * nd + d) : (d * N + b)) * H : NULL,
			.ystride = (c.layout ? nd : nd * N) * H,
			.reverse = d == 1 || c.reverse,
			.len = lens[b],
		};
		float *st = xcalloc((size_t)(2 * H), sizeof(float));
		if (h0)
			memcpy(st, h0 + so, sizeof(float) * (size_t)H);
		if (c0)
			memcpy(st + H, c0 + so, sizeof(float) * (size_t)H);
		rnn_run_dir(&rd, op->type, st, st + H);
		if (yh)
			memcpy(yh + so, st, sizeof(float) * (size_t)H);
		if (yc)
			memcpy(yc + so, st + H, sizeof(float) * (size_t)H);
		free(st);
	}
	free(lens);
	return 0;
}

/* G*H*(I+H) multiply-accumulates per step, direction and batch row. */
static int64_t rnn_macs(const struct ir_graph *g, const struct ir_op *op)
{
	const struct ir_tensor *w = &g->tensors[op->in[1]], *r = &g->tensors[op->in[2]];
	const struct ir_tensor *x = &g->tensors[op->in[0]];
	if (w->rank != 3 || r->rank != 3 || x->rank != 3)
		return 0;
	/* W [nd, G*H, I], R [nd, G*H, H]; seq * batch = X's first two dims */
	return x->shape[0] * x->shape[1] * w->shape[0] * w->shape[1] * (w->shape[2] + r->shape[2]);
}

/* No int8 form: the float fallback (lower_float_state), with the states
 * in and out (initial_h 5, initial_c 6; Y_h 1, Y_c 2) in f32, as the
 * kernel carries them from step to step; weights, X and Y in the mode. */
static int rnn_lower(struct lower_ctx *lc, const struct ir_op *op)
{
	return lower_float_state(lc, op, 1u << 5 | 1u << 6, 1u << 1 | 1u << 2);
}

const struct op_def op_def_LSTM = {
	.infer = rnn_infer, .run_f32 = rnn_run, .lower = rnn_lower, .run_tpu = quant_run_f32,
	.macs = rnn_macs,
};

const struct op_def op_def_GRU = {
	.infer = rnn_infer, .run_f32 = rnn_run, .lower = rnn_lower, .run_tpu = quant_run_f32,
	.macs = rnn_macs,
};

const struct op_def op_def_RNN = {
	.infer = rnn_infer, .run_f32 = rnn_run, .lower = rnn_lower, .run_tpu = quant_run_f32,
	.macs = rnn_macs,
};
