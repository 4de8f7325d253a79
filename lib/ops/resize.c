/* resize.c - Resize (and ONNX Upsample, imported as Resize) of f32 tensors
 * of any rank, following the ONNX reference: attributes sizes (output
 * shape), scales (as given, else out/in), mode (nearest, linear, cubic),
 * coordinate_transformation_mode (half_pixel, pytorch_half_pixel,
 * align_corners, asymmetric, tf_half_pixel_for_nn, tf_crop_and_resize with
 * roi), nearest_mode (round_prefer_floor, round_prefer_ceil, floor, ceil,
 * simple: floor when enlarging, ceil when shrinking), cubic_coeff_a,
 * exclude_outside, extrapolation_value, antialias (opset 18: a linear or
 * cubic filter stretched by 1/scale when downscaling, and normalised); or,
 * given at run time, roi, scales and sizes as inputs 1 to 3.  Every mode is
 * a product of 1-D filters, so the kernel resizes one axis at a time.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ir/base.h"
#include "ir/convert.h"
#include "ops/kern_util.h"
#include "ir/op.h"
#include "back/lower.h"
#include "quant/quant.h"

/* Input I of op as at most MAX floats into V: K's view at run time, else
 * G's constant; the count, 0 when absent, -2 when known only at run time. */
static int param_floats(const struct ir_graph *g, const struct kern *k, const struct ir_op *op,
			int i, float *v, int max)
{
	if (i >= op->n_in || op->in[i] < 0)
		return 0;
	const struct ir_tensor *t = &g->tensors[op->in[i]];
	const void *data = k ? k->in[i].data : t->data;
	enum ir_dtype dt = k ? k->in[i].dtype : t->dtype;
	int64_t n = k ? view_numel(&k->in[i]) : tensor_numel(t);
	if (!data && n)
		return -2;
	if (n > max)
		return op_error(op, "input %d holds %lld values, at most %d", i, (long long)n, max);
	for (int64_t j = 0; j < n; j++)
		v[j] = (float)dtype_get(data, dt, j);
	return (int)n;
}

/* A Resize whose roi, scales or sizes are inputs 1 to 3 (known at run
 * time; formats/tpuc-ir.5, "Dynamic dimensions"): into TMP, a copy of op
 * with them as the attributes roi, scales and sizes its constant form has
 * (lib/front/import_shape.c).  Returns 1 when done (free TMP's attributes
 * with op_clear_attrs), 0 when an input is not known yet, -1 on error. */
static int resize_resolve(const struct ir_graph *g, const struct kern *k, const struct ir_op *op,
			  struct ir_op *tmp)
{
	int r = k ? k->in[0].rank : g->tensors[op->in[0]].rank;
	const int64_t *xs = k ? k->in[0].shape : g->tensors[op->in[0]].shape;
	float roi[2 * IR_MAX_RANK], sc[IR_MAX_RANK];
	int64_t sz[IR_MAX_RANK];
	int nr = param_floats(g, k, op, 1, roi, 2 * IR_MAX_RANK);
	int ns = param_floats(g, k, op, 2, sc, IR_MAX_RANK);
	int nz = op_param_ints(g, k, op, 3, NULL, sz, IR_MAX_RANK);
	if (nr == -1 || ns == -1 || nz == -1)
		return -1;
	if (nr == -2 || ns == -2 || nz == -2)
		return 0;
	if ((nz && nz != r) || (!nz && ns != r))
		return op_error(op, "sizes or scales must have one value per input axis");
	for (int d = 0; d < r && !nz; d++) {
		if (!(sc[d] > 0))
			return op_error(op, "scales must be positive");
		sz[d] = (int64_t)floor((double)xs[d] * (double)sc[d]);
	}
	*tmp = *op;
	tmp->n_in = 1;
	tmp->n_attr = 0;
	tmp->attr = NULL;
	op_copy_attrs(tmp, op);
	op_set_ints(tmp, "sizes", r, sz);
	if (!nz)
		op_set_floats(tmp, "scales", r, sc);
	if (nr && !strcmp(op_str(op, "coordinate_transformation_mode", ""), "tf_crop_and_resize"))
		op_set_floats(tmp, "roi", nr, roi);
	return 1;
}

static int resize_infer_const(struct ir_graph *g, struct ir_op *op);

static int resize_infer(struct ir_graph *g, struct ir_op *op)
{
	if (op->n_in < 2)
		return resize_infer_const(g, op);
	struct ir_op tmp;
	int rc = resize_resolve(g, NULL, op, &tmp);
	if (rc > 0) {
		rc = resize_infer_const(g, &tmp);
		op_clear_attrs(&tmp);
		return rc;
	}
	if (rc == 0) {   /* extents decided at run time */
		const struct ir_tensor *x = op_in(g, op, 0);
		op_set_out(g, op, 0, DT_F32, x->rank, x->shape);
		op_set_dyn(g, op, 0, x->rank ? (1u << x->rank) - 1 : 0);
	}
	return rc;
}

static int resize_infer_const(struct ir_graph *g, struct ir_op *op)
{
	const struct ir_tensor *x = op_in(g, op, 0);
	int64_t sizes[IR_MAX_RANK];
	if (x->dtype != DT_F32)
		return op_error(op, "dtype %s is not supported (f32 only)", dtype_name(x->dtype));
	if (op_ints(op, "sizes", sizes, IR_MAX_RANK) != x->rank)
		return op_error(op, "sizes must have one value per input axis");
	const struct ir_attr *sc = op_attr(op, "scales");
	if (sc && sc->n != x->rank)
		return op_error(op, "scales must have one value per input axis");
	const char *m = op_str(op, "mode", "nearest");
	if (strcmp(m, "nearest") && strcmp(m, "linear") && strcmp(m, "cubic"))
		return op_error(op, "mode '%s' is not supported", m);
	const char *c = op_str(op, "coordinate_transformation_mode", "half_pixel");
	static const char *const modes[] = { "half_pixel", "pytorch_half_pixel", "align_corners",
					     "asymmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize" };
	int ok = 0;
	for (size_t i = 0; i < ARRAY_LEN(modes); i++)
		ok |= !strcmp(c, modes[i]);
	if (!ok)
		return op_error(op, "coordinate_transformation_mode '%s' is not supported", c);
	const struct ir_attr *roi = op_attr(op, "roi");
	if (!strcmp(c, "tf_crop_and_resize") && (!roi || roi->n != 2 * x->rank))
		return op_error(op, "tf_crop_and_resize needs roi with 2 values per axis");
	const char *nm = op_str(op, "nearest_mode", "round_prefer_floor");
	if (strcmp(nm, "round_prefer_floor") && strcmp(nm, "round_prefer_ceil") &&
	    strcmp(nm, "floor") && strcmp(nm, "ceil") && strcmp(nm, "simple"))
		return op_error(op, "nearest_mode '%s' is not supported", nm);
	for (int d = 0; d < x->rank; d++)
		if (sizes[d] < 0 || (sizes[d] > 0 && x->shape[d] == 0))
			return op_error(op, "bad output size");
	op_set_out(g, op, 0, DT_F32, x->rank, sizes);
	return 0;
}

/* The taps of one output index along an axis: n of them, input indices
 * idx with weights w (room for taps_room entries); n == 0 marks an
 * extrapolated index. */
struct taps {
	int n;
	int64_t *idx;
	float *w;
};

/* The op's attributes, read once for the many taps computed from them. */
enum { RZ_NEAREST, RZ_LINEAR, RZ_CUBIC };
enum { CT_HALF, CT_PYTORCH_HALF, CT_ALIGN, CT_ASYM, CT_TF_HALF_NN, CT_TF_CROP };
enum { NM_PREFER_FLOOR, NM_PREFER_CEIL, NM_FLOOR, NM_CEIL, NM_SIMPLE };
struct rsz {
	int mode, ct, nm, aa, excl;
	double a;                        /* cubic_coeff_a */
	const struct ir_attr *sc, *roi; /* scales, roi: NULL when absent */
};

static int pick(const char *v, const char *const *names, int n, int def)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(v, names[i]))
			return i;
	return def;
}

static void rsz_get(const struct ir_op *op, struct rsz *m)
{
	static const char *const modes[] = { "nearest", "linear", "cubic" };
	static const char *const cts[] = { "half_pixel", "pytorch_half_pixel", "align_corners",
					   "asymmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize" };
	static const char *const nms[] = { "round_prefer_floor", "round_prefer_ceil", "floor",
					   "ceil", "simple" };
	m->mode = pick(op_str(op, "mode", "nearest"), modes, 3, RZ_NEAREST);
	m->ct = pick(op_str(op, "coordinate_transformation_mode", "half_pixel"), cts, 6, CT_HALF);
	m->nm = pick(op_str(op, "nearest_mode", "round_prefer_floor"), nms, 5, NM_PREFER_FLOOR);
	m->aa = (int)op_int(op, "antialias", 0);
	m->excl = (int)op_int(op, "exclude_outside", 0);
	m->a = op_float(op, "cubic_coeff_a", -0.75);
	m->sc = op_attr(op, "scales");
	m->roi = op_attr(op, "roi");
}

/* The scale of axis d: the attribute's, else out / in. */
static double axis_scale(const struct rsz *m, int d, int64_t in, int64_t out)
{
	return m->sc ? (double)m->sc->floats[d] : (double)out / (double)in;
}

/* First tap offset from the left neighbour of a linear or cubic filter:
 * -1 for cubic, 0 for linear, lower when antialias widens a downscaling
 * filter by 1/scale (ONNX Resize, opset 18). */
static int tap_start(const struct rsz *m, double scale)
{
	int cubic = m->mode == RZ_CUBIC;
	if (!m->aa || scale >= 1)
		return cubic ? -1 : 0;
	return (int)floor((cubic ? -2.0 : -1.0) / scale) + 1;
}

/* Most taps an output index of axis d has. */
static int taps_room(const struct rsz *m, int d, int64_t in, int64_t out)
{
	if (m->mode == RZ_NEAREST)
		return 1;
	return 2 - 2 * tap_start(m, axis_scale(m, d, in, out));
}

/* n taps with room for `room` each, in one allocation (free t[0].idx, then t). */
static struct taps *taps_new(int64_t n, int room)
{
	struct taps *t = xmalloc(sizeof *t * (size_t)(n ? n : 1));
	int64_t *idx = xmalloc(sizeof *idx * (size_t)((n ? n : 1) * room));
	float *w = xmalloc(sizeof *w * (size_t)((n ? n : 1) * room));
	for (int64_t j = 0; j < (n ? n : 1); j++) {
		t[j].n = 0;
		t[j].idx = idx + j * room;
		t[j].w = w + j * room;
	}
	return t;
}

static void taps_free(struct taps *t)
{
	free(t[0].idx);
	free(t[0].w);
	free(t);
}

/* The cubic filter at distance x (coefficient a). */
static double cubic_weight(double x, double a)
{
	x = fabs(x);
	if (x <= 1)
		return ((a + 2) * x - (a + 3)) * x * x + 1;
	if (x < 2)
		return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
	return 0;
}

/* The taps of output index x along an axis of in -> out elements. */
static void axis_taps(const struct rsz *m, int d, int64_t in, int64_t out, int64_t x, struct taps *t)
{
	double scale = axis_scale(m, d, in, out);
	double outw = scale * (double)in, xo;
	switch (m->ct) {
	case CT_ALIGN:
		xo = outw == 1 ? 0 : (double)x * (double)(in - 1) / (outw - 1);
		break;
	case CT_ASYM:
		xo = (double)x / scale;
		break;
	case CT_TF_HALF_NN:
		xo = ((double)x + 0.5) / scale;
		break;
	case CT_TF_CROP: {
		double r0 = m->roi->floats[d], r1 = m->roi->floats[d + m->roi->n / 2];
		xo = outw == 1 ? (r1 - r0) * (double)(in - 1) / 2
			       : (double)x * (r1 - r0) * (double)(in - 1) / (outw - 1);
		xo += r0 * (double)(in - 1);
		if (xo < 0 || xo > (double)(in - 1)) {
			t->n = 0;
			return;
		}
		break;
	}
	case CT_PYTORCH_HALF:
		xo = outw == 1 ? -0.5 : ((double)x + 0.5) / scale - 0.5;
		break;
	default:
		xo = ((double)x + 0.5) / scale - 0.5;
	}
	double fl = floor(xo), ratio = xo - fl;
	int64_t base = (int64_t)fl;
	if (ratio == 0) {   /* the reference prefers the left neighbour: ratio 1 */
		ratio = 1;
		base--;
	}
	if (m->mode == RZ_NEAREST) {
		int right;
		if (ratio == 1)
			right = 1;
		else if (m->nm == NM_PREFER_FLOOR)
			right = ratio > 0.5;
		else if (m->nm == NM_PREFER_CEIL)
			right = ratio >= 0.5;
		else if (m->nm == NM_FLOOR)
			right = 0;
		else if (m->nm == NM_CEIL)
			right = 1;
		else
			right = scale < 1;
		t->n = 1;
		t->idx[0] = base + right;
		t->w[0] = 1;
	} else {
		/* linear (a triangle) or cubic, over taps start .. -start + 1
		 * from the left neighbour; antialias stretches the filter by
		 * 1/scale when downscaling and normalises it */
		int cubic = m->mode == RZ_CUBIC, aa = m->aa && scale < 1;
		int start = tap_start(m, scale), n = 2 - 2 * start;
		double f = aa ? scale : 1, sum = 0, few[8];
		int excl = cubic && m->excl;
		double *c = n <= 8 ? few : xmalloc(sizeof *c * (size_t)n);
		for (int i = 0; i < n; i++) {
			double dist = f * ((double)(start + i) - ratio);
			c[i] = cubic ? cubic_weight(dist, m->a) : fmax(0.0, 1 - fabs(dist));
			t->idx[i] = base + start + i;
			sum += c[i];
		}
		if (aa)
			for (int i = 0; i < n; i++)
				c[i] /= sum;
		if (excl) {
			sum = 0;
			for (int i = 0; i < n; i++) {
				if (t->idx[i] < 0 || t->idx[i] >= in)
					c[i] = 0;
				sum += c[i];
			}
		}
		t->n = n;
		for (int i = 0; i < n; i++)
			t->w[i] = (float)(excl ? c[i] / sum : c[i]);
		if (c != few)
			free(c);
	}
	for (int i = 0; i < t->n; i++)
		t->idx[i] = t->idx[i] < 0 ? 0 : t->idx[i] >= in ? in - 1 : t->idx[i];
}

/* 1 for a nearest Resize: it only copies elements, in any dtype. */
static int resize_copies(const struct ir_op *op)
{
	return !strcmp(op_str(op, "mode", "nearest"), "nearest");
}

/* Resize axis d of x (shape xs) into y: outer x in x inner layout, of
 * elements of es bytes (f32 unless the mode is nearest, which only copies
 * them; ext: the extrapolated element).  The axis has in_full and out_full
 * entries in the whole tensors; x holds input entries from i0 on, y output
 * entries from j0 on (slices along H). */
static void resize_axis(const struct ir_op *op, int d, const void *x, void *y, size_t es,
			const void *ext, const int64_t *xs, int r, int64_t out, int nt,
			int64_t in_full, int64_t out_full, int64_t i0, int64_t j0)
{
	int64_t outer = 1, inner = 1, in = xs[d];
	for (int i = 0; i < d; i++)
		outer *= xs[i];
	for (int i = d + 1; i < r; i++)
		inner *= xs[i];
	struct rsz m;
	rsz_get(op, &m);
	struct taps *tp = taps_new(out, taps_room(&m, d, in_full, out_full));
	for (int64_t j = 0; j < out; j++) {
		axis_taps(&m, d, in_full, out_full, j + j0, &tp[j]);
		for (int k = 0; k < tp[j].n; k++) {
			tp[j].idx[k] -= i0;
			tp[j].idx[k] = tp[j].idx[k] < 0 ? 0 : tp[j].idx[k] >= in ? in - 1 : tp[j].idx[k];
		}
	}
	size_t rb = es * (size_t)inner;

	#pragma omp parallel for num_threads(nt) schedule(static)
	for (int64_t o = 0; o < outer; o++) {
		const char *xp = (const char *)x + (size_t)(o * in) * rb;
		char *yp = (char *)y + (size_t)(o * out) * rb;
		for (int64_t j = 0; j < out; j++) {
			char *row = yp + (size_t)j * rb;
			const struct taps *t = &tp[j];
			if (t->n == 0) {
				for (int64_t i = 0; i < inner; i++)
					memcpy(row + (size_t)i * es, ext, es);
			} else if (t->n == 1) {
				memcpy(row, xp + (size_t)t->idx[0] * rb, rb);
			} else {
				const float *xf = (const float *)xp;
				float *rf = (float *)row;
				for (int64_t i = 0; i < inner; i++) {
					float v = 0;
					for (int k = 0; k < t->n; k++)
						v += t->w[k] * xf[t->idx[k] * inner + i];
					rf[i] = v;
				}
			}
		}
	}
	taps_free(tp);
}

/* Whether axis d maps every output index to the same input index alone. */
static int axis_identity(const struct ir_op *op, int d, int64_t in, int64_t out)
{
	if (in != out)
		return 0;
	struct rsz m;
	rsz_get(op, &m);
	struct taps *t = taps_new(1, taps_room(&m, d, in, out));
	int same = 1;
	for (int64_t j = 0; j < out && same; j++) {
		axis_taps(&m, d, in, out, j, t);
		int hit = 0;
		for (int k = 0; k < t->n; k++)
			if (t->w[k] != 0)
				hit += t->idx[k] == j && t->w[k] == 1 ? 1 : 2;
		same = hit == 1;
	}
	taps_free(t);
	return same;
}

/* Along axis d of op's input (extent xs) and output (ys): the whole op's
 * input and output extents (*fi, *fo) and where this op's input and output
 * start in them (*i0, *j0).  A part of a Resize cut along an axis
 * (lib/back/lower_wsplit.c) records them in its attributes part_full
 * (every axis' whole input extent, then every axis' output extent) and
 * part_at (input offsets, then output offsets); a whole op is its own. */
static void resize_whole(const struct ir_op *op, int r, int d, int64_t xs, int64_t ys, int64_t *fi,
			 int64_t *fo, int64_t *i0, int64_t *j0)
{
	int64_t full[2 * IR_MAX_RANK], at[2 * IR_MAX_RANK];
	if (op_ints(op, "part_full", full, 2 * IR_MAX_RANK) == 2 * r &&
	    op_ints(op, "part_at", at, 2 * IR_MAX_RANK) == 2 * r) {
		*fi = full[d];
		*fo = full[r + d];
		*i0 = at[d];
		*j0 = at[r + d];
		return;
	}
	*fi = xs;
	*fo = ys;
	*i0 = *j0 = 0;
}

/* Input entries [*a, *b) of axis d that output entries [o0, o1) of op's
 * output read (op's own indices; the taps of the whole op it stands for). */
static void resize_range(const struct ir_graph *g, const struct ir_op *op, int d, int64_t o0,
			 int64_t o1, int64_t *a, int64_t *b)
{
	const struct ir_tensor *x = &g->tensors[op->in[0]], *y = &g->tensors[op->out[0]];
	int64_t fi, fo, i0, j0, lo = INT64_MAX, hi = -1;
	resize_whole(op, x->rank, d, x->shape[d], y->shape[d], &fi, &fo, &i0, &j0);
	if (axis_identity(op, d, fi, fo)) {
		/* the kernel copies such an axis: exactly the same entries
		 * (a linear tap of weight 0 would read one more) */
		lo = o0 + j0 - i0;
		hi = o1 - 1 + j0 - i0;
		o1 = o0;
	}
	/* the taps move forward with the output index: the first and the
	 * last output's bound the rest, unless one of them is extrapolated */
	struct rsz m;
	rsz_get(op, &m);
	struct taps *t = taps_new(1, taps_room(&m, d, fi, fo));
	int every = 0;
	for (int e = 0; e < 2 && o1 > o0; e++) {
		axis_taps(&m, d, fi, fo, (e ? o1 - 1 : o0) + j0, t);
		every |= t->n == 0;
	}
	for (int64_t j = o0; j < o1; j++) {
		axis_taps(&m, d, fi, fo, j + j0, t);
		for (int k = 0; k < t->n; k++) {
			lo = t->idx[k] - i0 < lo ? t->idx[k] - i0 : lo;
			hi = t->idx[k] - i0 > hi ? t->idx[k] - i0 : hi;
		}
		if (!every && j == o0 && o1 - 1 > j)
			j = o1 - 2;   /* next: the last */
	}
	taps_free(t);
	if (hi < 0)
		lo = hi = 0;
	lo = lo < 0 ? 0 : lo > x->shape[d] - 1 ? x->shape[d] - 1 : lo;
	hi = hi < lo ? lo : hi > x->shape[d] - 1 ? x->shape[d] - 1 : hi;
	*a = lo;
	*b = hi + 1;
}

static int resize_run_const(struct kern *k);

static int resize_run(struct kern *k)
{
	if (k->op->n_in < 2)
		return resize_run_const(k);
	const struct ir_op *op = k->op;
	struct ir_op tmp;
	if (resize_resolve(k->g, k, op, &tmp) <= 0)
		return -1;
	int n_in = k->n_in;
	k->op = &tmp;
	k->n_in = 1;
	int rc = resize_run_const(k);
	k->op = op;
	k->n_in = n_in;
	op_clear_attrs(&tmp);
	return rc;
}

/* Any dtype in nearest mode (elements copied; an extrapolated one is
 * extrapolation_value in the output's dtype, quantised with its scale),
 * f32 in the others. */
static int resize_run_const(struct kern *k)
{
	const struct view *x = &k->in[0], *y = &k->out[0];
	if ((!resize_copies(k->op) || x->dtype != y->dtype) && kern_need_f32(k) < 0)
		return -1;
	size_t es = dtype_size(y->dtype);
	char ext[8];
	float e = (float)op_float(k->op, "extrapolation_value", 0);
	if (quant_is_q(y->dtype)) {
		int q = quant_f32_to_qz_one(e, y->scale, y->zero_point, y->dtype);
		dtype_convert(ext, y->dtype, &(float){ (float)q }, DT_F32, 1);
	} else {
		dtype_convert(ext, y->dtype, &e, DT_F32, 1);
	}
	int r = x->rank;
	int64_t cur[IR_MAX_RANK];
	memcpy(cur, x->shape, sizeof cur);
	const void *src = x->data;
	void *tmp = NULL;
	/* a slice along H (codegen): the op's whole tensors from the graph */
	const int64_t *xs = x->shape, *ys = y->shape;
	if (r >= 3 && k->g && k->in_full_h > 0) {
		xs = k->g->tensors[k->op->in[0]].shape;
		ys = k->g->tensors[k->op->out[0]].shape;
	}
	for (int d = 0; d < r; d++) {
		int64_t fi, fo, i0, j0;
		resize_whole(k->op, r, d, xs[d], ys[d], &fi, &fo, &i0, &j0);
		if (d == 2 && xs != x->shape) {
			i0 += k->in_row0;
			j0 += k->out_row0;
		}
		if (axis_identity(k->op, d, fi, fo))
			continue;
		int64_t n = 1;
		for (int i = 0; i < r; i++)
			n *= i == d ? y->shape[d] : cur[i];
		void *dst = xmalloc(es * (size_t)(n ? n : 1));
		resize_axis(k->op, d, src, dst, es, ext, cur, r, y->shape[d], kern_threads(k, n, 8), fi,
			    fo, i0, j0);
		free(tmp);
		tmp = dst;
		src = dst;
		cur[d] = y->shape[d];
	}
	memcpy(y->data, src, es * (size_t)view_numel(y));
	free(tmp);
	return 0;
}

/* Tpu kernel: an int8 (nearest) Resize copies codes; float ones run
 * through f32. */
static int resize_run_tpu(struct kern *k)
{
	return quant_is_q(k->out[0].dtype) ? resize_run(k) : quant_run_f32(k);
}

static int64_t resize_macs(const struct ir_graph *g, const struct ir_op *op)
{
	return tensor_numel(&g->tensors[op->out[0]]);
}

/* Output rows [oh0, oh1) read the input rows their taps along H name
 * (the kernel runs on such slices, resize_run). */
static void resize_slice_h(const struct ir_graph *g, const struct ir_op *op,
			   int oh0, int oh1, int *ih0, int *ih1)
{
	const struct ir_tensor *x = &g->tensors[op->in[0]], *y = &g->tensors[op->out[0]];
	int64_t a, b;
	if (x->rank < 4 || y->rank != x->rank || (quant_is_q(x->dtype) && !resize_copies(op))) {
		*ih0 = -1;
		*ih1 = 0;
		return;
	}
	resize_range(g, op, 2, oh0, oh1, &a, &b);
	*ih0 = (int)a;
	*ih1 = (int)b;
}

/* Parts along any axis, each from the input entries its taps read: the
 * part records the whole op it stands for (resize_whole). */
static int resize_split_window(const struct ir_graph *g, const struct ir_op *op, int ax,
			       int64_t o0, int64_t o1, int64_t *i0, int64_t *i1, struct ir_op *part)
{
	const struct ir_tensor *x = &g->tensors[op->in[0]], *y = &g->tensors[op->out[0]];
	int r = x->rank;
	if (y->rank != r || (!quant_is_float(x->dtype) && !resize_copies(op)))
		return 0;
	resize_range(g, op, ax, o0, o1, i0, i1);
	if (!part)
		return 1;
	int64_t full[2 * IR_MAX_RANK], at[2 * IR_MAX_RANK], sizes[IR_MAX_RANK];
	for (int d = 0; d < r; d++)
		resize_whole(op, r, d, x->shape[d], y->shape[d], &full[d], &full[r + d], &at[d],
			     &at[r + d]);
	at[ax] += *i0;
	at[r + ax] += o0;
	memcpy(sizes, y->shape, sizeof sizes);
	sizes[ax] = o1 - o0;
	op_set_ints(part, "sizes", r, sizes);
	op_set_ints(part, "part_full", 2 * r, full);
	op_set_ints(part, "part_at", 2 * r, at);
	return 1;
}

/* Parts along an axis it does not resize (sizes, which spell the output's
 * shape, take the part's: lib/back/lower_axsplit.c). */
static int resize_split_axis(const struct ir_graph *g, const struct ir_op *op, int ax, int *in_ax)
{
	const struct ir_tensor *x = &g->tensors[op->in[0]], *y = &g->tensors[op->out[0]];
	const struct ir_attr *sc = op_attr(op, "scales");
	int64_t fi, fo, i0, j0;
	if (x->rank != y->rank)
		return 0;
	resize_whole(op, x->rank, ax, x->shape[ax], y->shape[ax], &fi, &fo, &i0, &j0);
	if (x->shape[ax] != y->shape[ax] || fi != fo ||
	    (sc && sc->kind == ATTR_FLOATS && ax < sc->n && sc->floats[ax] != 1.0f) ||
	    !strcmp(op_str(op, "coordinate_transformation_mode", ""), "tf_crop_and_resize"))
		return 0;
	return split_axis_x0(g, op, ax, in_ax);
}

/* Int8 lowering: a nearest Resize only copies elements, so its output
 * keeps the input's scale and zero point, and the kernel (run_tpu through
 * float) maps each value back to itself; linear and cubic ones interpolate
 * and run in the fallback float mode, as ops without an int8 form do. */
static int resize_lower(struct lower_ctx *lc, const struct ir_op *op)
{
	if (lc->mode == MODE_INT8 && !resize_copies(op))
		return lower_fallback(lc, op);
	return lower_default(lc, op);
}

const struct op_def op_def_RESIZE = {
	.infer = resize_infer, .run_f32 = resize_run, .lower = resize_lower, .run_tpu = resize_run_tpu,
	.macs = resize_macs,
	.slice_h = resize_slice_h, .split_axis = resize_split_axis,
	.split_window = resize_split_window,
};
