/* lower_depth.c - 3-D Convs as 2-D Convs over depth windows
 * (back/lower_depth.h).
 *
 * The chip has no 3-D convolution.  Output plane od of a Conv over
 * [N, C, D, H, W] with weights [OC, C, KD, KH, KW] sums, over the taps t
 * whose input plane d = od*SD - PD + t*DD lies inside the input, the 2-D
 * Conv of plane d by W[:, :, t].  Held depth-major, as [N, D*C, H, W] (each
 * plane's C channels together), the planes a window reads (DD = 1) are
 * consecutive channels, a Slice that addr-assign keeps inside its input,
 * and one 2-D Conv of the weights W'[oc, t*C + c] = W[oc, c, t] over them
 * is the plane's whole sum, with the bias once, the fused ReLU, and in
 * int8 the one requantisation of the accumulator: the 3-D Conv's rounding.
 * Taps on the depth padding are left out (the window and the weights cut
 * to the taps inside), so they cost no work.  The OD planes' results
 * joined along the channels (a Concat in place) are depth-major again.
 *
 * The layout spreads from the Convs: an elementwise op (pass_is_pointwise,
 * or Add, Sub, Mul, Div, Max, Min of same-shaped activations and scalar
 * constants) reading a depth-major tensor, a Scale of one (a BatchNorm
 * that did not fold; its [C] constants repeated per plane), and a Reshape
 * of one (top-opt runs the 5-D elementwise ops on views such as
 * [N, C*D, H, W]: the values in the same order, so the same depth-major
 * form) compute on the depth-major forms; a Transpose
 * of [N, C, D, H*W] to [N, D, C, H*W] and back converts where the others
 * read or write them (the network's input, the global pool).  Every new
 * tensor holds another's values, whose calibration entry it takes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "back/lower_depth.h"
#include "ir/base.h"
#include "ir/op.h"
#include "passes/rewrite.h"

/* A depth-major tensor's 5-D extents; n == 0: not one. */
struct geo {
	int64_t n, c, d, h, w;
};

/* A 3-D Conv's window along D, H, W. */
struct win3 {
	int64_t k[3], s[3], p[6], dl[3];   /* kernel, strides, pads (ONNX order), dilations */
};

enum { R_NONE, R_CONV, R_VIEW, R_ELEM, R_SCALE };

static int same_geo(const struct geo *a, const struct geo *b)
{
	return a->n == b->n && a->c == b->c && a->d == b->d && a->h == b->h && a->w == b->w;
}

static int model_q(const struct ir_tensor *x)
{
	return (x->qdtype == DT_I8 || x->qdtype == DT_U8) && x->scale > 0;
}

/* An f32 activation of static shape without the model's own scale. */
static int plain_act(const struct ir_tensor *x)
{
	return !x->data && x->dtype == DT_F32 && !tensor_dyn(x) && !model_q(x);
}

/* N integers of attribute NAME into v (DEF each when absent); -1 when
 * it has another count or kind. */
static int attr_n(const struct ir_op *op, const char *name, int64_t *v, int n, int64_t def)
{
	const struct ir_attr *a = op_attr(op, name);
	if (!a) {
		for (int i = 0; i < n; i++)
			v[i] = def;
		return 0;
	}
	if (a->kind != ATTR_INTS || a->n != n)
		return -1;
	memcpy(v, a->ints, sizeof *v * (size_t)n);
	return 0;
}

/* Taps [*t0, *t1) of output plane od that read planes inside [0, d). */
static void plane_taps(const struct win3 *cv, int64_t d, int64_t od, int64_t *t0, int64_t *t1)
{
	int64_t base = od * cv->s[0] - cv->p[0];
	*t0 = 0;
	*t1 = cv->k[0];
	while (*t0 < *t1 && base + *t0 * cv->dl[0] < 0)
		(*t0)++;
	while (*t1 > *t0 && base + (*t1 - 1) * cv->dl[0] >= d)
		(*t1)--;
}

/* Whether op is a 3-D Conv this file rewrites; its window in *cv. */
static int conv3d(const struct ir_graph *g, const struct ir_op *op, struct win3 *cv)
{
	static const char *const known[] = { "kernel_shape", "strides", "pads", "dilations",
					     "group", "do_relu", "relu_limit" };
	if (op->type != OP_CONV || op->n_in < 2 || op->n_in > 3 || op->n_out != 1 ||
	    op->in[0] < 0 || op->in[1] < 0 || op_int(op, "group", 1) != 1)
		return 0;
	for (int a = 0; a < op->n_attr; a++) {
		int ok = 0;
		for (size_t k = 0; k < sizeof known / sizeof *known && !ok; k++)
			ok = !strcmp(op->attr[a].name, known[k]);
		if (!ok)
			return 0;
	}
	const struct ir_tensor *x = &g->tensors[op->in[0]], *w = &g->tensors[op->in[1]];
	const struct ir_tensor *y = &g->tensors[op->out[0]];
	if (x->rank != 5 || w->rank != 5 || y->rank != 5 || !plain_act(x) || !plain_act(y) ||
	    !w->data || w->dtype != DT_F32 || w->shape[1] != x->shape[1] || w->shape[0] != y->shape[1])
		return 0;
	if (op->n_in > 2 && op->in[2] >= 0) {
		const struct ir_tensor *b = &g->tensors[op->in[2]];
		if (!b->data || b->dtype != DT_F32 || tensor_numel(b) != w->shape[0])
			return 0;
	}
	if (attr_n(op, "strides", cv->s, 3, 1) < 0 || attr_n(op, "dilations", cv->dl, 3, 1) < 0 ||
	    attr_n(op, "pads", cv->p, 6, 0) < 0)
		return 0;
	for (int i = 0; i < 3; i++)
		cv->k[i] = w->shape[2 + i];
	/* every output plane reads an input plane */
	for (int64_t od = 0; od < y->shape[2]; od++) {
		int64_t t0, t1;
		plane_taps(cv, x->shape[2], od, &t0, &t1);
		if (t0 >= t1)
			return 0;
	}
	return 1;
}

static int binary_elementwise(enum op_type t)
{
	return t == OP_ADD || t == OP_SUB || t == OP_MUL || t == OP_DIV || t == OP_MAX ||
	       t == OP_MIN;
}

/* Whether op computes each output element from the same element of its
 * activations (all of its output's shape) and scalar constants alone. */
static int elementwise(const struct ir_graph *g, const struct ir_op *op)
{
	if (op->n_out != 1 || op->type == OP_CAST ||
	    (!pass_is_pointwise(op->type) && !binary_elementwise(op->type)))
		return 0;
	const struct ir_tensor *y = &g->tensors[op->out[0]];
	if (!plain_act(y))
		return 0;
	for (int j = 0; j < op->n_in; j++) {
		if (op->in[j] < 0)
			continue;
		const struct ir_tensor *x = &g->tensors[op->in[j]];
		if (x->data ? tensor_numel(x) != 1 : !plain_act(x) || !pass_same_shape(x, y))
			return 0;
	}
	return 1;
}

static struct geo geo_of(const struct ir_tensor *t)
{
	return (struct geo){ t->shape[0], t->shape[1], t->shape[2], t->shape[3], t->shape[4] };
}

/* Whether op is a Scale of constant [C] vectors of rank-5 tensor x whose
 * extents are *e. */
static int scale_of(const struct ir_graph *g, const struct ir_op *op, const struct geo *e)
{
	if (op->type != OP_SCALE || op->n_in != 3 || op->n_out != 1 || op->in[1] < 0 ||
	    op->in[2] < 0 || !plain_act(&g->tensors[op->out[0]]))
		return 0;
	const struct ir_tensor *x = &g->tensors[op->in[0]], *s = &g->tensors[op->in[1]];
	const struct ir_tensor *b = &g->tensors[op->in[2]];
	struct geo ex = x->rank == 5 ? geo_of(x) : (struct geo){ 0 };
	return x->rank == 5 && same_geo(&ex, e) && s->data && b->data && s->dtype == DT_F32 &&
	       b->dtype == DT_F32 && tensor_numel(s) == e->c && tensor_numel(b) == e->c;
}

/* Whether activation t, no region tensor, can be converted with extents
 * *e: never converted yet (then *cg[t] takes them), or with the same. */
static int convertible(struct geo *cg, int t, const struct geo *e)
{
	if (cg[t].n && !same_geo(&cg[t], e))
		return 0;
	cg[t] = *e;
	return 1;
}

/* The ops of the depth-major region (R_*, per op) and each region
 * tensor's extents; the Convs rewritten.  The other activations those
 * ops read are converted, each with one set of extents. */
static int plan(const struct ir_graph *g, const char *keep, char *kind, struct geo *ge)
{
	int n = 0;
	struct geo *cg = xcalloc((size_t)g->n_tensors + 1, sizeof *cg);
	for (int i = 0; i < g->n_ops; i++) {
		const struct ir_op *op = &g->ops[i];
		struct win3 cv;
		kind[i] = R_NONE;
		struct geo gx = op->n_in && op->in[0] >= 0 && g->tensors[op->in[0]].rank == 5 ?
				geo_of(&g->tensors[op->in[0]]) : (struct geo){ 0 };
		if (conv3d(g, op, &cv) && (ge[op->in[0]].n ? same_geo(&gx, &ge[op->in[0]]) :
					   convertible(cg, op->in[0], &gx))) {
			kind[i] = R_CONV;
			ge[op->out[0]] = geo_of(&g->tensors[op->out[0]]);
			n++;
		} else if (op->type == OP_RESHAPE && op->n_out == 1 && op->n_in >= 1 &&
			   op->in[0] >= 0 && ge[op->in[0]].n && !(keep && keep[i]) &&
			   plain_act(&g->tensors[op->out[0]])) {
			kind[i] = R_VIEW;
			ge[op->out[0]] = ge[op->in[0]];
		} else if (op->n_in && op->in[0] >= 0 && ge[op->in[0]].n &&
			   scale_of(g, op, &ge[op->in[0]])) {
			kind[i] = R_SCALE;
			ge[op->out[0]] = ge[op->in[0]];
		} else if (elementwise(g, op)) {
			struct geo e = { 0 };
			int ok = 1;
			for (int j = 0; j < op->n_in; j++) {
				int t = op->in[j];
				if (t < 0 || !ge[t].n)
					continue;
				if (!e.n)
					e = ge[t];
				else
					ok &= same_geo(&e, &ge[t]);
			}
			for (int j = 0; j < op->n_in && e.n && ok; j++) {
				int t = op->in[j];
				if (t >= 0 && !g->tensors[t].data && !ge[t].n)
					ok = cg[t].n ? same_geo(&cg[t], &e) : 1;
			}
			for (int j = 0; j < op->n_in && e.n && ok; j++) {
				int t = op->in[j];
				if (t >= 0 && !g->tensors[t].data && !ge[t].n)
					convertible(cg, t, &e);
			}
			if (e.n && ok) {
				kind[i] = R_ELEM;
				ge[op->out[0]] = e;
			}
		}
	}
	free(cg);
	return n;
}

struct rw {
	struct ir_graph *g;
	const struct calib_table *tab;   /* the caller's, or NULL */
	struct calib_table *cp;          /* its copy with the new tensors, or NULL */
	int *dm;                         /* per tensor of the input graph: its depth-major form, -1 none */
};

/* A new f32 activation named after tensor SRC and SFX, with SRC's
 * calibration entry. */
static int new_act(struct rw *r, int src, const char *sfx, int rank, const int64_t *shape)
{
	char base[512];
	snprintf(base, sizeof base, "%s%s", r->g->tensors[src].name, sfx);
	char *name = graph_unique_name(r->g, base, 1);
	int k = graph_add_tensor(r->g, name, DT_F32, rank, shape);
	const struct calib_entry *e = r->cp ? calib_find(r->tab, r->g->tensors[src].name) : NULL;
	if (e)
		calib_add(r->cp, name, e->threshold, e->min, e->max);
	free(name);
	return k;
}

/* Op T from X to Y named after Y; its index. */
static int emit(struct rw *r, enum op_type t, int x, int y)
{
	return graph_add_op(r->g, t, r->g->tensors[y].name, 1, &x, 1, &y);
}

static void emit_reshape(struct rw *r, int x, int y)
{
	const struct ir_tensor *ty = &r->g->tensors[y];
	int64_t s[IR_MAX_RANK];
	int rank = ty->rank;
	memcpy(s, ty->shape, sizeof s);
	int k = emit(r, OP_RESHAPE, x, y);
	op_set_ints(&r->g->ops[k], "shape", rank, s);
}

static void emit_swap(struct rw *r, int x, int y)
{
	static const int64_t perm[4] = { 0, 2, 1, 3 };
	int k = emit(r, OP_TRANSPOSE, x, y);
	op_set_ints(&r->g->ops[k], "perm", 4, perm);
}

static int emit_slice(struct rw *r, int x, int src, const char *sfx, int64_t axis, int64_t k0,
		      int64_t k1, int64_t step)
{
	const struct ir_tensor *tx = &r->g->tensors[x];
	int64_t s[IR_MAX_RANK];
	int rank = tx->rank;
	memcpy(s, tx->shape, sizeof s);
	s[axis] = (k1 - k0 + step - 1) / step;
	int y = new_act(r, src, sfx, rank, s);
	int k = emit(r, OP_SLICE, x, y);
	op_set_ints(&r->g->ops[k], "starts", 1, &k0);
	op_set_ints(&r->g->ops[k], "ends", 1, &k1);
	op_set_ints(&r->g->ops[k], "axes", 1, &axis);
	op_set_ints(&r->g->ops[k], "steps", 1, &step);
	return y;
}

/* The depth-major form of tensor t (extents *e), converted once. */
static int to_depth(struct rw *r, int t, const struct geo *e)
{
	if (r->dm[t] >= 0)
		return r->dm[t];
	int64_t a[4] = { e->n, e->c, e->d, e->h * e->w }, b[4] = { e->n, e->d, e->c, e->h * e->w };
	int64_t f[4] = { e->n, e->d * e->c, e->h, e->w };
	int x = new_act(r, t, "_ncd", 4, a);
	emit_reshape(r, t, x);
	int y = new_act(r, t, "_dcn", 4, b);
	emit_swap(r, x, y);
	int z = new_act(r, t, "_dchw", 4, f);
	emit_reshape(r, y, z);
	return r->dm[t] = z;
}

/* Tensor t in its own layout from its depth-major form. */
static void from_depth(struct rw *r, int t, const struct geo *e)
{
	int64_t a[4] = { e->n, e->c, e->d, e->h * e->w }, b[4] = { e->n, e->d, e->c, e->h * e->w };
	int x = new_act(r, t, "_dcn", 4, b);
	emit_reshape(r, r->dm[t], x);
	int y = new_act(r, t, "_ncd", 4, a);
	emit_swap(r, x, y);
	emit_reshape(r, y, t);
}

/* Weights [OC, (t1 - t0)*C, KH, KW] of taps [t0, t1) of the depth-major
 * weights wp [OC, KD*C, KH, KW] (f32). */
static int tap_weight(struct rw *r, int w, const float *wp, const int64_t *ws, int64_t t0,
		      int64_t t1)
{
	int64_t oc = ws[0], c = ws[1], kd = ws[2], khw = ws[3] * ws[4];
	int64_t row = (t1 - t0) * c * khw, shape[4] = { oc, (t1 - t0) * c, ws[3], ws[4] };
	float *v = xmalloc(sizeof *v * (size_t)(oc * row) + 1);
	for (int64_t o = 0; o < oc; o++)
		memcpy(v + o * row, wp + (o * kd + t0) * c * khw, sizeof *v * (size_t)row);
	char base[512];
	snprintf(base, sizeof base, "%s_dchw_t%lld_%lld", r->g->tensors[w].name, (long long)t0,
		 (long long)t1);
	char *name = graph_unique_name(r->g, base, 1);
	int k = graph_add_weight(r->g, name, DT_F32, 4, shape, v);
	free(name);
	free(v);
	return k;
}

/* Conv op (conv3d, window *cv) as 2-D Convs of its output planes over
 * the depth-major input, joined into its depth-major output. */
static void conv_planes(struct rw *r, const struct ir_op *op, const struct win3 *cv)
{
	struct ir_graph *g = r->g;
	int x = op->in[0], w = op->in[1], b = op->n_in > 2 ? op->in[2] : -1, y = op->out[0];
	struct geo ex = geo_of(&g->tensors[x]), ey = geo_of(&g->tensors[y]);
	int xd = to_depth(r, x, &ex);
	int64_t ws[5];
	memcpy(ws, g->tensors[w].shape, sizeof ws);
	int64_t oc = ws[0], c = ws[1], kd = ws[2], khw = ws[3] * ws[4];
	/* wp[oc, t, c] = w[oc, c, t]: a window's channels are t-major */
	const float *wv = g->tensors[w].data;
	float *wp = xmalloc(sizeof *wp * (size_t)(oc * kd * c * khw) + 1);
	for (int64_t o = 0; o < oc; o++)
		for (int64_t t = 0; t < kd; t++)
			for (int64_t i = 0; i < c; i++)
				memcpy(wp + ((o * kd + t) * c + i) * khw, wv + ((o * c + i) * kd + t) * khw,
				       sizeof *wp * (size_t)khw);
	int *tw = xmalloc(sizeof *tw * (size_t)((kd + 1) * (kd + 1)));
	for (int64_t i = 0; i < (kd + 1) * (kd + 1); i++)
		tw[i] = -1;
	int *parts = xmalloc(sizeof *parts * (size_t)ey.d + 1);
	int64_t pshape[4] = { ey.n, ey.c, ey.h, ey.w };
	int64_t ks[2] = { cv->k[1], cv->k[2] }, st[2] = { cv->s[1], cv->s[2] };
	int64_t dl[2] = { cv->dl[1], cv->dl[2] }, pd[4] = { cv->p[1], cv->p[2], cv->p[4], cv->p[5] };
	for (int64_t od = 0; od < ey.d; od++) {
		int64_t t0, t1, base = od * cv->s[0] - cv->p[0];
		plane_taps(cv, ex.d, od, &t0, &t1);
		int64_t d0 = base + t0 * cv->dl[0], nt = t1 - t0;
		char sfx[48];
		snprintf(sfx, sizeof sfx, "_d%lld", (long long)od);
		int win = xd;
		if (cv->dl[0] == 1 || nt == 1) {
			if (d0 != 0 || nt != ex.d)
				win = emit_slice(r, xd, x, sfx, 1, d0 * ex.c, (d0 + nt) * ex.c, 1);
		} else {
			int64_t v[4] = { ex.n, ex.d, ex.c * ex.h, ex.w };
			int64_t f[4] = { ex.n, nt * ex.c, ex.h, ex.w };
			int xv = new_act(r, x, "_dv", 4, v);
			emit_reshape(r, xd, xv);
			int s = emit_slice(r, xv, x, sfx, 1, d0, d0 + (nt - 1) * cv->dl[0] + 1, cv->dl[0]);
			win = new_act(r, x, sfx, 4, f);
			emit_reshape(r, s, win);
		}
		int *wt = &tw[t0 * (kd + 1) + t1];
		if (*wt < 0)
			*wt = tap_weight(r, w, wp, ws, t0, t1);
		int yo = ey.d == 1 ? -1 : new_act(r, y, sfx, 4, pshape);
		if (yo < 0) {
			int64_t f[4] = { ey.n, ey.d * ey.c, ey.h, ey.w };
			yo = new_act(r, y, "_dchw", 4, f);
		}
		int in[3] = { win, *wt, b };
		int k = graph_add_op(g, OP_CONV, op->name, b >= 0 ? 3 : 2, in, 1, &yo);
		struct ir_op *cop = &g->ops[k];
		op_set_ints(cop, "kernel_shape", 2, ks);
		op_set_ints(cop, "strides", 2, st);
		op_set_ints(cop, "pads", 4, pd);
		op_set_ints(cop, "dilations", 2, dl);
		op_set_int(cop, "group", 1);
		const struct ir_attr *a = op_attr(op, "do_relu");
		if (a)
			op_copy_attr(cop, a);
		if ((a = op_attr(op, "relu_limit")))
			op_copy_attr(cop, a);
		parts[od] = yo;
	}
	int yd = parts[0];
	if (ey.d > 1) {
		int64_t f[4] = { ey.n, ey.d * ey.c, ey.h, ey.w };
		yd = new_act(r, y, "_dchw", 4, f);
		int k = graph_add_op(g, OP_CONCAT, g->tensors[yd].name, (int)ey.d, parts, 1, &yd);
		op_set_int(&g->ops[k], "axis", 1);
	}
	r->dm[y] = yd;
	FREE_ALL(wp, tw, parts);
}

/* Constant [C] vector t repeated for each of d planes: [d*C]. */
static int per_plane(struct rw *r, int t, int64_t d)
{
	int64_t c = tensor_numel(&r->g->tensors[t]), n = d * c;
	const float *v = r->g->tensors[t].data;
	float *rep = xmalloc(sizeof *rep * (size_t)n + 1);
	for (int64_t k = 0; k < d; k++)
		memcpy(rep + k * c, v, sizeof *rep * (size_t)c);
	char base[512];
	snprintf(base, sizeof base, "%s_planes", r->g->tensors[t].name);
	char *name = graph_unique_name(r->g, base, 1);
	int k = graph_add_weight(r->g, name, DT_F32, 1, &n, rep);
	free(name);
	free(rep);
	return k;
}

static void push_op(struct ir_graph *g, const struct ir_op *op)
{
	grow_array((void **)&g->ops, &g->cap_ops, g->n_ops + 1, sizeof *g->ops);
	g->ops[g->n_ops++] = *op;
}

int lower_depth(const struct ir_graph *top, const char *keep, const struct calib_table *tab,
		struct ir_graph **out, struct calib_table **tab_out)
{
	*out = NULL;
	*tab_out = NULL;
	int nt = top->n_tensors, no = top->n_ops;
	char *kind = xcalloc((size_t)no + 1, 1);
	struct geo *ge = xcalloc((size_t)nt + 1, sizeof *ge);
	int n = plan(top, keep, kind, ge);
	if (!n) {
		FREE_ALL(kind, ge);
		return 0;
	}
	/* region tensors the others read, or graph outputs: converted back */
	char *back = xcalloc((size_t)nt + 1, 1);
	for (int i = 0; i < no; i++)
		for (int j = 0; j < top->ops[i].n_in && !kind[i]; j++)
			if (top->ops[i].in[j] >= 0)
				back[top->ops[i].in[j]] = 1;
	for (int i = 0; i < top->n_outputs; i++)
		back[top->outputs[i]] = 1;

	struct ir_graph *g = graph_clone_borrowing(top);
	struct rw r = { .g = g, .tab = tab, .cp = tab ? calib_table_new() : NULL,
			.dm = xmalloc(sizeof(int) * ((size_t)nt + 1)) };
	for (int t = 0; t < nt; t++)
		r.dm[t] = -1;
	if (r.cp) {
		for (int i = 0; i < tab->n; i++)
			calib_add(r.cp, tab->e[i].name, tab->e[i].threshold, tab->e[i].min, tab->e[i].max);
		r.cp->path = tab->path ? xstrdup(tab->path) : NULL;
	}
	struct ir_op *old = g->ops;
	g->ops = NULL;
	g->n_ops = g->cap_ops = 0;
	for (int i = 0; i < no; i++) {
		struct ir_op *op = &old[i];
		struct win3 cv;
		int y = op->n_out == 1 ? op->out[0] : -1;
		switch (kind[i]) {
		case R_NONE:
			push_op(g, op);
			continue;
		case R_CONV:
			conv3d(g, op, &cv);
			conv_planes(&r, op, &cv);
			op->type = OP_COUNT;   /* freed by graph_compact */
			break;
		case R_VIEW:
			r.dm[y] = r.dm[op->in[0]];
			op->type = OP_COUNT;
			break;
		case R_SCALE: {
			struct geo e = ge[y];
			int64_t f[4] = { e.n, e.d * e.c, e.h, e.w };
			op->in[0] = r.dm[op->in[0]];
			for (int j = 1; j < 3; j++)
				op->in[j] = per_plane(&r, op->in[j], e.d);
			r.dm[y] = new_act(&r, y, "_dchw", 4, f);
			op->out[0] = r.dm[y];
			break;
		}
		case R_ELEM: {
			struct geo e = ge[y];
			int64_t f[4] = { e.n, e.d * e.c, e.h, e.w };
			for (int j = 0; j < op->n_in; j++)
				if (op->in[j] >= 0 && !g->tensors[op->in[j]].data)
					op->in[j] = to_depth(&r, op->in[j], &e);
			r.dm[y] = new_act(&r, y, "_dchw", 4, f);
			op->out[0] = r.dm[y];
			break;
		}
		}
		push_op(g, op);
		if (back[y])
			from_depth(&r, y, &ge[y]);
	}
	free(old);
	graph_compact(g);
	*out = g;
	*tab_out = r.cp;
	FREE_ALL(kind, ge, back, r.dm);
	return n;
}
