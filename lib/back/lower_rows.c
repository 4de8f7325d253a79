/* lower_rows.c - reductions and normalisations whose rows do not fit a
 * lane, in stages (lib/back/lower_rows.h).
 *
 * Codegen keeps the axes an op reduces over whole in a lane, and
 * lower_axsplit.c cuts only the others, so a ReduceMean, a Softmax or a
 * LayerNormalization over a row of 65536 elements (more than a lane holds,
 * or than a DMA block moves) has no cut.  Such an op is rewritten into
 * stages over shorter rows, each a plain op of the Tpu IR, so that ir-run
 * on the Tpu IR and tpu-sim run the same ops:
 *
 *  - a reduction (a global pool too) whose rows do not fit reduces
 *    consecutive blocks of its outermost reduced axis where one entry
 *    fits (Slices), keeping the reduced axes, concatenates
 *    the partial results along it and reduces them again: the max of
 *    maxes, the sum of sums, the L2 norm of L2 norms, the log-sum-exp of
 *    log-sum-exps, the product of products; a mean is the mean of equal
 *    parts' means, or the sum of sums times 1/n; L1, the sum of squares
 *    and the log of the sum end with a sum;
 *  - a CumSum along an axis too long sums blocks of it, each plus the total
 *    of the blocks before it;
 *  - Softmax and LogSoftmax become ReduceMax, Sub, Exp, ReduceSum, then
 *    Reciprocal and Mul (or Log and Sub), the reductions split as above in
 *    the next pass;
 *  - ArgMax and ArgMin become ReduceMax (Min), Equal, Where over an index
 *    weight and ReduceMin (Max) of the indices: the first (last) index of
 *    the best value; Hardmax the Equal of the index weight and that;
 *  - LayerNormalization and InstanceNormalization become ReduceMean, Sub,
 *    Mul, ReduceMean, Add of epsilon, Sqrt, Reciprocal, Mul, then the Mul
 *    and Add of their scale and bias; MeanVarianceNormalization and
 *    LpNormalization likewise divide by their statistic.
 *
 * The stages compute in f32: an input of another dtype is cast to f32
 * first (an int8 one dequantised) and the result cast back (quantised with
 * the op's output scale).  The results are the unsplit op's within f32
 * rounding.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "back/lower_rows.h"
#include "ir/base.h"
#include "ir/op.h"
#include "quant/quant.h"

struct rows {
	struct ir_graph *g;
	int i;              /* the op rewritten; it becomes the last stage */
	kin_note_fn note;
	void *ctx;
};

/* A new op of type t over in[0..n) writing a new tensor of the given
 * shape and dtype (quantised like `like` when dt is i8 or u8), named after
 * op i's output and sfx; returns its output tensor. */
static int stage(struct rows *R, enum op_type t, const int *in, int n, int rank,
		 const int64_t *shape, enum ir_dtype dt, int like, const char *sfx)
{
	struct ir_graph *g = R->g;
	char base[512];
	snprintf(base, sizeof base, "%s_%s", g->tensors[g->ops[R->i].out[0]].name, sfx);
	struct ir_tensor l = { .dtype = dt };
	if (like >= 0 && quant_is_q(dt)) {
		l.scale = g->tensors[like].scale;
		l.zero_point = g->tensors[like].zero_point;
	}
	int y = split_new_tensor(g, base, &l, rank, shape);
	int k = graph_add_op(g, t, g->tensors[y].name, n, in, 1, &y);
	R->note(R->ctx, k, R->i);
	return y;
}

static int last_op(const struct rows *R)
{
	return R->g->n_ops - 1;
}

/* Tensor x cast to dt (quantised like `like`). */
static int cast_to(struct rows *R, int x, enum ir_dtype dt, int like, const char *sfx)
{
	const struct ir_tensor *t = &R->g->tensors[x];
	int64_t shape[IR_MAX_RANK];
	memcpy(shape, t->shape, sizeof shape);
	int y = stage(R, OP_CAST, &x, 1, t->rank, shape, dt, like, sfx);
	op_set_str(&R->g->ops[last_op(R)], "to", dtype_name(dt));
	return y;
}

/* Elementwise op t over tensors in[0..n), broadcast, into dtype dt. */
static int elt_n(struct rows *R, enum op_type t, const int *in, int n, enum ir_dtype dt,
		 const char *sfx)
{
	int64_t shape[IR_MAX_RANK];
	int rank = R->g->tensors[in[0]].rank;
	memcpy(shape, R->g->tensors[in[0]].shape, sizeof shape);
	for (int j = 1; j < n; j++) {
		const struct ir_tensor *y = &R->g->tensors[in[j]];
		broadcast_shape(rank, shape, y->rank, y->shape, &rank, shape);
	}
	return stage(R, t, in, n, rank, shape, dt, -1, sfx);
}

/* Elementwise op t over f32 tensors a and b (b < 0: unary), broadcast. */
static int elt(struct rows *R, enum op_type t, int a, int b, const char *sfx)
{
	int in[2] = { a, b };
	return elt_n(R, t, in, b >= 0 ? 2 : 1, DT_F32, sfx);
}

/* Reduction t of f32 tensor x over the axes in mask, keeping them as 1
 * (keep) or dropping them. */
static int reduce(struct rows *R, enum op_type t, int x, const int *mask, int keep,
		  const char *sfx)
{
	const struct ir_tensor *xt = &R->g->tensors[x];
	int64_t shape[IR_MAX_RANK], axes[IR_MAX_RANK];
	int rank = 0, na = 0, r = xt->rank;
	for (int d = 0; d < r; d++) {
		if (mask[d])
			axes[na++] = d;
		if (!mask[d] || keep)
			shape[rank++] = mask[d] ? 1 : xt->shape[d];
	}
	int y = stage(R, t, &x, 1, rank, shape, DT_F32, -1, sfx);
	struct ir_op *o = &R->g->ops[last_op(R)];
	op_set_ints(o, "axes", na, axes);
	op_set_int(o, "keepdims", keep);
	return y;
}

/* A weight of one f32 value. */
static int scalar(struct rows *R, float v, const char *sfx)
{
	struct ir_graph *g = R->g;
	char base[512];
	snprintf(base, sizeof base, "%s_%s", g->tensors[g->ops[R->i].out[0]].name, sfx);
	char *name = graph_unique_name(g, base, 1);
	int64_t one = 1;
	int w = graph_add_weight(g, name, DT_F32, 1, &one, &v);
	free(name);
	return w;
}

/* Op i becomes op t over in[0..n) into its first output, attributes
 * cleared; returns it. */
static struct ir_op *become(struct rows *R, enum op_type t, const int *in, int n)
{
	struct ir_op *o = &R->g->ops[R->i];
	op_clear_attrs(o);
	o->type = t;
	op_set_inputs(o, n, in);
	o->n_out = 1;
	return o;
}

/* A copy of tensor x into tensor y (of x's elements), made for op i. */
static void stage_into(struct rows *R, int x, int y)
{
	struct ir_graph *g = R->g;
	int k = graph_add_op(g, OP_RESHAPE, g->tensors[y].name, 1, &x, 1, &y);
	op_set_ints(&g->ops[k], "shape", g->tensors[y].rank, g->tensors[y].shape);
	R->note(R->ctx, k, R->i);
}

/* f32 result y into op i's output: a Cast to its dtype, or op i taking
 * the place of y's last stage, which is marked dead (OP_COUNT) for the
 * caller's graph_compact. */
static void finish(struct rows *R, int y)
{
	struct ir_graph *g = R->g;
	int out = g->ops[R->i].out[0];
	if (g->tensors[out].dtype != DT_F32) {
		op_set_str(become(R, OP_CAST, &y, 1), "to", dtype_name(g->tensors[out].dtype));
		return;
	}
	/* the stage writing y becomes op i */
	int k = last_op(R);
	while (g->ops[k].out[0] != y)
		k--;
	struct ir_op *o = &g->ops[R->i], *s = &g->ops[k];
	op_clear_attrs(o);
	o->type = s->type;
	op_set_inputs(o, s->n_in, s->in);
	op_copy_attrs(o, s);
	o->n_out = 1;
	s->type = OP_COUNT;
}

/* The input of op i in f32: itself, or cast. */
static int f32_input(struct rows *R)
{
	int x = R->g->ops[R->i].in[0];
	return R->g->tensors[x].dtype == DT_F32 ? x : cast_to(R, x, DT_F32, -1, "f32");
}

/* ---- reductions ---- */

/* The partial and the final reduction of a reduction of type t. */
static int reduce_stages(enum op_type t, enum op_type *part, enum op_type *last)
{
	switch (t) {
	case OP_REDUCEMEAN: case OP_REDUCESUM: case OP_REDUCEMAX: case OP_REDUCEMIN:
	case OP_REDUCEPROD: case OP_REDUCEL2: case OP_REDUCELOGSUMEXP:
		*part = *last = t;
		return 1;
	case OP_REDUCEL1: *part = t; *last = OP_REDUCESUM; return 1;
	case OP_REDUCESUMSQUARE: *part = t; *last = OP_REDUCESUM; return 1;
	case OP_REDUCELOGSUM: *part = OP_REDUCESUM; *last = t; return 1;
	case OP_GAVGPOOL: *part = *last = OP_REDUCEMEAN; return 1;
	case OP_GMAXPOOL: *part = *last = OP_REDUCEMAX; return 1;
	default: return 0;
	}
}

/* The axes op i reduces (mask), from its attribute axes (a global pool:
 * every axis after the channels); 0 when it reduces none (noop) or has no
 * such attribute form. */
static int reduced_axes(const struct ir_graph *g, const struct ir_op *op, int *mask)
{
	int r = g->tensors[op->in[0]].rank;
	const struct ir_attr *a = op_attr(op, "axes");
	memset(mask, 0, sizeof(int) * IR_MAX_RANK);
	if (op->type == OP_GAVGPOOL || op->type == OP_GMAXPOOL) {
		for (int d = 2; d < r; d++)
			mask[d] = 1;
		return r > 2;
	}
	if (!a || a->n == 0) {
		if (a && op_int(op, "noop", 0))
			return 0;
		for (int d = 0; d < r; d++)
			mask[d] = 1;
		return 1;
	}
	if (a->kind != ATTR_INTS)
		return 0;
	for (int j = 0; j < a->n; j++) {
		int d = norm_axis(a->ints[j], r);
		if (d < 0)
			return 0;
		mask[d] = 1;
	}
	return 1;
}

/* The most elements of axis ax of op i's input (and of its output, when
 * that keeps the axis) for which op i fits. */
static int64_t fitting_row(const struct ir_graph *g, int i, const struct chip *c, int ax)
{
	const struct ir_op *op = &g->ops[i];
	const struct ir_tensor *x = &g->tensors[op->in[0]], *y = &g->tensors[op->out[0]];
	int n = op->n_in + op->n_out;
	/* the output too when it keeps the axis (a CumSum's) */
	int keeps = y->rank == x->rank && y->shape[ax] == x->shape[ax];
	int64_t shape[IR_MAX_RANK], yshape[IR_MAX_RANK];
	const int64_t **sh = xcalloc((size_t)n + 1, sizeof *sh);
	memcpy(shape, x->shape, sizeof shape);
	memcpy(yshape, y->shape, sizeof yshape);
	sh[0] = shape;
	if (keeps)
		sh[op->n_in] = yshape;
	int64_t lo = 0, hi = x->shape[ax];   /* lo fits (0: none yet), hi does not */
	while (hi - lo > 1) {
		int64_t mid = lo + (hi - lo) / 2;
		shape[ax] = yshape[ax] = mid;
		if (split_fits(g, c, i, sh) == 1)
			lo = mid;
		else
			hi = mid;
	}
	free(sh);
	return lo;
}

static int reduce_rows(struct rows *R, const struct chip *c)
{
	struct ir_graph *g = R->g;
	const struct ir_op *op = &g->ops[R->i];
	enum op_type part_t, last_t;
	int mask[IR_MAX_RANK], ax = -1;
	if (op->n_in != 1 || op->n_out != 1 || !reduce_stages(op->type, &part_t, &last_t) ||
	    !reduced_axes(g, op, mask))
		return 0;
	/* blocks of the outermost reduced axis where one entry fits: rows of
	 * a plane too tall, parts of a row too long */
	const struct ir_tensor *xt = &g->tensors[op->in[0]];
	int64_t b = 0;
	for (int d = 0; d < xt->rank && b < 1; d++)
		if (mask[d] && xt->shape[d] > 1 && (b = fitting_row(g, R->i, c, d)) >= 1)
			ax = d;
	if (ax < 0)
		return 0;
	int64_t n = xt->shape[ax];
	int64_t parts = ceil_div(n, b);
	int scale_mean = 0;
	if (part_t == OP_REDUCEMEAN) {
		/* equal parts, so that the mean of means is the mean */
		int64_t p = parts;
		while (p <= 2 * parts && p < n && n % p)
			p++;
		if (n % p == 0)
			parts = p;
		else
			scale_mean = 1, part_t = last_t = OP_REDUCESUM;
	}
	b = ceil_div(n, parts);
	parts = ceil_div(n, b);
	int keep = (int)op_int(op, "keepdims", 1);   /* 1 for the global pools */
	int x = f32_input(R), *pt = xmalloc(sizeof *pt * (size_t)parts);
	for (int64_t p = 0; p < parts; p++) {
		int64_t k0 = p * b, k1 = k0 + b < n ? k0 + b : n;
		int s = split_slice(g, x, ax, k0, k1, "row", R->note, R->ctx, R->i);
		pt[p] = reduce(R, part_t, s, mask, 1, "part");
	}
	int64_t shape[IR_MAX_RANK];
	memcpy(shape, g->tensors[pt[0]].shape, sizeof shape);
	shape[ax] = parts;
	int cat = stage(R, OP_CONCAT, pt, (int)parts, g->tensors[pt[0]].rank, shape, DT_F32, -1,
			"parts");
	op_set_int(&g->ops[last_op(R)], "axis", ax);
	free(pt);
	int y = reduce(R, last_t, cat, mask, keep, "all");
	if (scale_mean)
		y = elt(R, OP_MUL, y, scalar(R, (float)(1.0 / (double)n), "inv_n"), "mean");
	finish(R, y);
	return 1;
}

/* ---- CumSum ---- */

/* A running sum along an axis too long: the running sums of consecutive
 * blocks, each plus the total of the blocks before it (after it, reverse;
 * exclusive as the op is), concatenated. */
static int cumsum_rows(struct rows *R, const struct chip *c)
{
	struct ir_graph *g = R->g;
	const struct ir_op *op = &g->ops[R->i];
	if (op->type != OP_CUMSUM || op->n_out != 1 || !quant_is_float(g->tensors[op->out[0]].dtype))
		return 0;
	const struct ir_tensor *xt = &g->tensors[op->in[0]];
	int r = xt->rank, ax = norm_axis(op_int(op, "axis", 0), r), rev = (int)op_int(op, "reverse", 0);
	if (ax < 0 || xt->shape[ax] < 2)
		return 0;
	int64_t n = xt->shape[ax], b = fitting_row(g, R->i, c, ax), xshape[IR_MAX_RANK];
	/* the stages below add tensors, which moves xt */
	memcpy(xshape, xt->shape, sizeof xshape);
	if (b < 1)
		return 0;
	int64_t parts = ceil_div(n, b);
	b = ceil_div(n, parts);
	parts = ceil_div(n, b);
	int mask[IR_MAX_RANK] = { 0 }, x = f32_input(R);
	mask[ax] = 1;
	int *sum = xmalloc(sizeof *sum * (size_t)parts), *tot = xmalloc(sizeof *tot * (size_t)parts);
	for (int64_t p = 0; p < parts; p++) {
		int64_t k0 = p * b, k1 = k0 + b < n ? k0 + b : n;
		int s = split_slice(g, x, ax, k0, k1, "row", R->note, R->ctx, R->i);
		int64_t shape[IR_MAX_RANK];
		memcpy(shape, g->tensors[s].shape, sizeof shape);
		sum[p] = stage(R, OP_CUMSUM, &s, 1, r, shape, DT_F32, -1, "run");
		op_copy_attrs(&g->ops[last_op(R)], &g->ops[R->i]);
		tot[p] = reduce(R, OP_REDUCESUM, s, mask, 1, "total");
	}
	/* each block plus the totals of the blocks before it (reverse: after) */
	int carry = -1;
	for (int64_t q = 0; q < parts; q++) {
		int64_t p = rev ? parts - 1 - q : q;
		int y = carry < 0 ? sum[p] : elt(R, OP_ADD, sum[p], carry, "block");
		carry = carry < 0 ? tot[p] : elt(R, OP_ADD, carry, tot[p], "carry");
		sum[p] = y;
	}
	int cat = stage(R, OP_CONCAT, sum, (int)parts, r, xshape, DT_F32, -1, "y");
	op_set_int(&g->ops[last_op(R)], "axis", ax);
	free(sum);
	free(tot);
	finish(R, cat);
	return 1;
}

/* ---- Softmax, LogSoftmax ---- */

static int softmax_rows(struct rows *R)
{
	struct ir_graph *g = R->g;
	const struct ir_op *op = &g->ops[R->i];
	if ((op->type != OP_SOFTMAX && op->type != OP_LOGSOFTMAX) || op->n_out != 1)
		return 0;
	int r = g->tensors[op->in[0]].rank, mask[IR_MAX_RANK] = { 0 };
	int axis = norm_axis(op_int(op, "axis", -1), r), coerce = (int)op_int(op, "coerce2d", 0);
	enum op_type t = op->type;
	if (axis < 0)
		return 0;
	for (int d = axis; d < (coerce ? r : axis + 1); d++)
		mask[d] = 1;
	int x = f32_input(R);
	int m = reduce(R, OP_REDUCEMAX, x, mask, 1, "max");
	int d = elt(R, OP_SUB, x, m, "shifted");
	int e = elt(R, OP_EXP, d, -1, "exp");
	int s = reduce(R, OP_REDUCESUM, e, mask, 1, "sum");
	int y;
	if (t == OP_SOFTMAX)
		y = elt(R, OP_MUL, e, elt(R, OP_RECIPROCAL, s, -1, "inv"), "y");
	else
		y = elt(R, OP_SUB, d, elt(R, OP_LOG, s, -1, "log"), "y");
	finish(R, y);
	return 1;
}

/* ---- ArgMax, ArgMin, Hardmax ---- */

/* The first (or, with select_last_index, last) index of the largest (or
 * smallest) value along the axis: the values equal to the ReduceMax (Min)
 * keep their index (an f32 weight counting along the axis, exact up to
 * 2^24), the others an index past the end (or -1), and a ReduceMin (Max)
 * of those takes it.  Hardmax is then the one-hot of that index. */
static int arg_rows(struct rows *R)
{
	struct ir_graph *g = R->g;
	const struct ir_op *op = &g->ops[R->i];
	enum op_type t = op->type;
	if ((t != OP_ARGMAX && t != OP_ARGMIN && t != OP_HARDMAX) || op->n_out != 1 ||
	    op_int(op, "coerce2d", 0))
		return 0;
	const struct ir_tensor *xt = &g->tensors[op->in[0]];
	int r = xt->rank, mask[IR_MAX_RANK] = { 0 };
	int axis = norm_axis(op_int(op, "axis", t == OP_HARDMAX ? -1 : 0), r);
	int last = t != OP_HARDMAX && op_int(op, "select_last_index", 0);
	/* read before the stages below add ops, which moves op */
	int keep = t == OP_HARDMAX || op_int(op, "keepdims", 1);
	if (axis < 0 || xt->shape[axis] < 2 || xt->shape[axis] > (1 << 24))
		return 0;
	int64_t n = xt->shape[axis], shape[IR_MAX_RANK];
	mask[axis] = 1;
	/* the index weight: [n, 1, ...] over the axes from axis on */
	float *v = xmalloc(sizeof *v * (size_t)n);
	for (int64_t j = 0; j < n; j++)
		v[j] = (float)j;
	for (int d = axis; d < r; d++)
		shape[d - axis] = d == axis ? n : 1;
	char base[512];
	snprintf(base, sizeof base, "%s_index", g->tensors[op->out[0]].name);
	char *name = graph_unique_name(g, base, 1);
	int iota = graph_add_weight(g, name, DT_F32, r - axis, shape, v);
	free(name);
	free(v);
	int x = f32_input(R);
	int best = reduce(R, t == OP_ARGMIN ? OP_REDUCEMIN : OP_REDUCEMAX, x, mask, 1, "best");
	int eq_in[2] = { x, best };
	int eq = elt_n(R, OP_EQUAL, eq_in, 2, DT_BOOL, "is_best");
	int w_in[3] = { eq, iota, scalar(R, last ? -1.0f : (float)n, "none") };
	int cand = elt_n(R, OP_WHERE, w_in, 3, DT_F32, "candidates");
	int idx = reduce(R, last ? OP_REDUCEMAX : OP_REDUCEMIN, cand, mask, keep, "first");
	if (t == OP_HARDMAX) {
		int h_in[2] = { iota, idx };
		idx = elt_n(R, OP_EQUAL, h_in, 2, DT_BOOL, "one_hot");
	}
	op_set_str(become(R, OP_CAST, &idx, 1), "to", dtype_name(g->tensors[g->ops[R->i].out[0]].dtype));
	return 1;
}

/* ---- LayerNormalization, InstanceNormalization, MVN, LpNormalization ---- */

/* Weight w (f32, one value or one per element of x's axes first..last-1,
 * the rest broadcast) shaped [x's axes first..last-1, 1 ...] up to x's last
 * axis; -1 when it is not such a weight. */
static int norm_weight(struct rows *R, int w, int x, int first, int last)
{
	struct ir_graph *g = R->g;
	const struct ir_tensor *wt = &g->tensors[w], *xt = &g->tensors[x];
	int64_t n = 1, shape[IR_MAX_RANK];
	int rank = xt->rank - first;
	for (int d = first; d < xt->rank; d++) {
		shape[d - first] = d < last ? xt->shape[d] : 1;
		n *= shape[d - first];
	}
	if (!wt->data || wt->dtype != DT_F32 || (tensor_numel(wt) != n && tensor_numel(wt) != 1))
		return -1;
	if (tensor_numel(wt) == 1 ||
	    (wt->rank == rank && !memcmp(wt->shape, shape, sizeof(int64_t) * (size_t)rank)))
		return w;
	char base[512];
	snprintf(base, sizeof base, "%s_rows", wt->name);
	char *name = graph_unique_name(g, base, 1);
	int k = graph_add_weight(g, name, DT_F32, rank, shape, g->tensors[w].data);
	free(name);
	return k;
}

/* x less its mean over the axes in mask (*centred), times the reciprocal
 * of the square root of its variance plus eps; *mean and *inv the two
 * statistics. */
static int normalise(struct rows *R, int x, const int *mask, float eps, int *mean, int *inv)
{
	*mean = reduce(R, OP_REDUCEMEAN, x, mask, 1, "mean");
	int d = elt(R, OP_SUB, x, *mean, "centred");
	int var = reduce(R, OP_REDUCEMEAN, elt(R, OP_MUL, d, d, "sq"), mask, 1, "var");
	int sd = elt(R, OP_SQRT, elt(R, OP_ADD, var, scalar(R, eps, "eps"), "var_eps"), -1, "sd");
	*inv = elt(R, OP_RECIPROCAL, sd, -1, "inv_sd");
	return elt(R, OP_MUL, d, *inv, "normed");
}

static int norm_rows(struct rows *R)
{
	struct ir_graph *g = R->g;
	const struct ir_op *op = &g->ops[R->i];
	enum op_type t = op->type;
	if (t != OP_LAYERNORM && t != OP_INSTANCENORM && t != OP_MVN && t != OP_LPNORMALIZATION)
		return 0;
	int x0 = op->in[0], r = g->tensors[x0].rank, mask[IR_MAX_RANK] = { 0 }, n_out = op->n_out;
	int axis = norm_axis(op_int(op, "axis", -1), r), sw = -1, bw = -1, mean, inv;
	float eps = (float)op_float(op, "epsilon", 1e-5);
	if (axis < 0 || (n_out > 1 && (t != OP_LAYERNORM || g->tensors[op->out[0]].dtype != DT_F32)))
		return 0;
	if (t == OP_LAYERNORM || t == OP_INSTANCENORM) {
		/* scale and bias: per normalised element, or per channel */
		int first = t == OP_LAYERNORM ? axis : 1, last = t == OP_LAYERNORM ? r : 2;
		if (op->n_in < 2 || op->in[1] < 0 ||
		    (sw = norm_weight(R, op->in[1], x0, first, last)) < 0)
			return 0;
		if (op->n_in > 2 && op->in[2] >= 0 &&
		    (bw = norm_weight(R, op->in[2], x0, first, last)) < 0)
			return 0;
	}
	if (t == OP_MVN) {
		int64_t axes[IR_MAX_RANK] = { 0, 2, 3 };
		int na = op_attr(op, "axes") ? op_ints(op, "axes", axes, IR_MAX_RANK) : 3;
		for (int j = 0; j < na; j++)
			if (norm_axis(axes[j], r) >= 0)
				mask[norm_axis(axes[j], r)] = 1;
	} else {
		int from = t == OP_INSTANCENORM ? 2 : axis;
		for (int d = from; d < (t == OP_LPNORMALIZATION ? axis + 1 : r); d++)
			mask[d] = 1;
	}
	int x = f32_input(R), y;
	if (t == OP_LPNORMALIZATION) {
		int p = (int)op_int(op, "p", 2);
		y = elt(R, OP_DIV, x, reduce(R, p == 1 ? OP_REDUCEL1 : OP_REDUCEL2, x, mask, 1, "norm"),
			"y");
	} else if (t == OP_MVN) {
		/* (x - mean) / (standard deviation + 1e-9), as the kernel */
		mean = reduce(R, OP_REDUCEMEAN, x, mask, 1, "mean");
		int d = elt(R, OP_SUB, x, mean, "centred");
		int var = reduce(R, OP_REDUCEMEAN, elt(R, OP_MUL, d, d, "sq"), mask, 1, "var");
		int den = elt(R, OP_ADD, elt(R, OP_SQRT, var, -1, "sd"), scalar(R, 1e-9f, "tiny"), "den");
		y = elt(R, OP_DIV, d, den, "y");
	} else {
		y = elt(R, OP_MUL, normalise(R, x, mask, eps, &mean, &inv), sw, "scaled");
		if (bw >= 0)
			y = elt(R, OP_ADD, y, bw, "y");
		/* LayerNormalization's optional outputs Mean and InvStdDev */
		if (n_out > 1)
			stage_into(R, mean, g->ops[R->i].out[1]);
		if (n_out > 2)
			stage_into(R, inv, g->ops[R->i].out[2]);
	}
	finish(R, y);
	return 1;
}

int lower_rows(struct ir_graph *g, int i, const struct chip *c, kin_note_fn note, void *ctx)
{
	struct rows R = { .g = g, .i = i, .note = note, .ctx = ctx };
	return reduce_rows(&R, c) || softmax_rows(&R) || arg_rows(&R) || norm_rows(&R) ||
	       cumsum_rows(&R, c);
}
