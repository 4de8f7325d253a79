/* detect.c - MaxUnpool, MaxPool's Indices and RoiAlign for ir-run (the chip has neither: no
 * lower hook, top2tpu refuses them by name).  Computed in double, any
 * float dtype.
 *
 *   MaxUnpool  X [N, C, D1...], I (int64, X's shape: flat indices into Y,
 *       as MaxPool's Indices output gives them), attributes kernel_shape,
 *       strides, pads, and output_shape (the importer's, from the optional
 *       third input) -> Y: zeros with X[i] at flat index I[i] of the
 *       shape (D - 1) * stride - pads + kernel; a larger output_shape
 *       holds that at its origin, zeros beyond (as the ONNX reference).
 *   MaxPoolIndices  X [N, C, H, W] with MaxPool's attributes (and
 *       storage_order) -> the int64 flat index into X of each window's
 *       maximum (the first on ties, taps in the padding skipped): ONNX
 *       MaxPool's second output, (n * C + c) * H * W + h * W + w, or with
 *       storage_order 1 (n * C + c) * H * W + h + w * H.
 *   RoiAlign  X [N, C, H, W], rois [R, 4] (x1, y1, x2, y2), batch_indices
 *       [R] (int64) -> Y [R, C, output_height, output_width]: the average
 *       (mode avg) or maximum (mode max) of bilinear samples on a grid of
 *       sampling_ratio (0: adaptive) points per bin; attributes
 *       spatial_scale, coordinate_transformation_mode (half_pixel shifts by
 *       half a pixel, output_half_pixel does not and makes a roi at least
 *       one pixel), as ONNX Runtime computes it.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ir/base.h"
#include "ir/convert.h"
#include "ir/op.h"

/* Y's shape without output_shape: (D - 1) * stride - pads + kernel. */
static int unpool_shape(const struct ir_op *op, const struct ir_tensor *x, int64_t *shape)
{
	int nd = x->rank - 2;
	int64_t k[IR_MAX_RANK], s[IR_MAX_RANK], p[2 * IR_MAX_RANK];
	if (op_ints(op, "kernel_shape", k, IR_MAX_RANK) != nd)
		return op_error(op, "kernel_shape must have %d values", nd);
	for (int d = 0; d < nd; d++)
		s[d] = 1, p[d] = p[d + nd] = 0;
	if (op_attr(op, "strides") && op_ints(op, "strides", s, IR_MAX_RANK) != nd)
		return op_error(op, "strides must have %d values", nd);
	if (op_attr(op, "pads") && op_ints(op, "pads", p, 2 * IR_MAX_RANK) != 2 * nd)
		return op_error(op, "pads must have %d values", 2 * nd);
	shape[0] = x->shape[0];
	shape[1] = x->shape[1];
	for (int d = 0; d < nd; d++) {
		if (k[d] < 1 || k[d] > (1 << 24) || s[d] < 1 || s[d] > (1 << 24) ||
		    p[d] < 0 || p[d + nd] < 0 || p[d] > (1 << 24) || p[d + nd] > (1 << 24))
			return op_error(op, "kernel_shape, strides and pads must be small and positive");
		shape[d + 2] = (x->shape[d + 2] - 1) * s[d] - p[d] - p[d + nd] + k[d];
		if (shape[d + 2] < 1 || shape[d + 2] > IR_MAX_DIM)
			return op_error(op, "the output's dimension %d is %lld", d + 2, (long long)shape[d + 2]);
	}
	return 0;
}

static int unpool_infer(struct ir_graph *g, struct ir_op *op)
{
	if (op_check_arity(g, op, 2, 3) < 0)
		return -1;
	const struct ir_tensor *x = op_in(g, op, 0), *ix = op_in(g, op, 1);
	if (x->rank < 3 || !dtype_is_float(x->dtype))
		return op_error(op, "X must be a float tensor [N, C, D1, ...]");
	if (ix->dtype != DT_I64 || ix->rank != x->rank ||
	    memcmp(ix->shape, x->shape, sizeof(int64_t) * (size_t)x->rank))
		return op_error(op, "I must be int64 with X's shape");
	int64_t def[IR_MAX_RANK], shape[IR_MAX_RANK];
	if (unpool_shape(op, x, def) < 0)
		return -1;
	/* output_shape: the attribute, or input 2 (read at run time: every
	 * extent dynamic before) */
	int n = op_param_ints(g, NULL, op, 2, "output_shape", shape, IR_MAX_RANK);
	if (n == -1)
		return -1;
	if (n == -2) {
		op_set_out(g, op, 0, x->dtype, x->rank, def);
		op_set_dyn(g, op, 0, (1u << x->rank) - 1);
		return 0;
	}
	if (n) {
		if (n != x->rank)
			return op_error(op, "output_shape must have rank %d", x->rank);
		for (int d = 0; d < n; d++)
			if (shape[d] < def[d] || shape[d] > IR_MAX_DIM)
				return op_error(op, "output_shape's dimension %d is %lld, below %lld", d,
						(long long)shape[d], (long long)def[d]);
	} else {
		memcpy(shape, def, sizeof shape);
	}
	op_set_out(g, op, 0, x->dtype, x->rank, shape);
	return 0;
}

/* X scattered into the shape unpool_shape() gives (I indexes it), which
 * then lies at the origin of Y (larger when output_shape is given). */
static int unpool_run(struct kern *k)
{
	const struct view *x = &k->in[0], *ix = &k->in[1], *y = &k->out[0];
	int64_t def[IR_MAX_RANK];
	struct ir_tensor xt = { .rank = x->rank };
	memcpy(xt.shape, x->shape, sizeof xt.shape);
	if (unpool_shape(k->op, &xt, def) < 0)
		return -1;
	int64_t nx = view_numel(x), ny = view_numel(y), nd = 1;
	for (int d = 0; d < x->rank; d++)
		nd *= def[d];
	memset(y->data, 0, dtype_size(y->dtype) * (size_t)ny);
	for (int64_t i = 0; i < nx; i++) {
		int64_t j = ((const int64_t *)ix->data)[i], at = 0, rest = j;
		if (j < 0 || j >= nd)
			return op_error(k->op, "index %lld of I is %lld, outside [0, %lld)",
					(long long)i, (long long)j, (long long)nd);
		int64_t mul = 1;
		for (int d = x->rank - 1; d >= 0; d--) {
			at += rest % def[d] * mul;
			rest /= def[d];
			mul *= y->shape[d];
		}
		dtype_set(y->data, y->dtype, at, dtype_get(x->data, x->dtype, i));
	}
	return 0;
}

static int roialign_infer(struct ir_graph *g, struct ir_op *op)
{
	if (op_check_arity(g, op, 3, 3) < 0)
		return -1;
	const struct ir_tensor *x = op_in(g, op, 0), *r = op_in(g, op, 1), *b = op_in(g, op, 2);
	if (x->rank != 4 || !dtype_is_float(x->dtype))
		return op_error(op, "X must be a float tensor [N, C, H, W]");
	if (r->rank != 2 || r->shape[1] != 4 || !dtype_is_float(r->dtype))
		return op_error(op, "rois must be a float tensor [R, 4]");
	if (b->rank != 1 || b->shape[0] != r->shape[0] || (b->dtype != DT_I64 && b->dtype != DT_I32))
		return op_error(op, "batch_indices must be an integer tensor [R]");
	int64_t oh = op_int(op, "output_height", 1), ow = op_int(op, "output_width", 1);
	int64_t sr = op_int(op, "sampling_ratio", 0);
	const char *mode = op_str(op, "mode", "avg"), *ct = op_str(op, "coordinate_transformation_mode", "half_pixel");
	if (oh < 1 || ow < 1 || oh > (1 << 24) || ow > (1 << 24) || sr < 0 || sr > (1 << 16))
		return op_error(op, "output_height, output_width and sampling_ratio out of range");
	if (strcmp(mode, "avg") && strcmp(mode, "max"))
		return op_error(op, "mode '%s' is not supported (avg or max)", mode);
	if (strcmp(ct, "half_pixel") && strcmp(ct, "output_half_pixel"))
		return op_error(op, "coordinate_transformation_mode '%s' is not supported", ct);
	op_set_out(g, op, 0, x->dtype, 4, (int64_t[]){ r->shape[0], x->shape[1], oh, ow });
	return 0;
}

/* Bilinear sample of plane P (H x W) at (y, x), as ONNX Runtime's RoiAlign:
 * outside [-1, H] x [-1, W] gives 0; the four weighted corners in w[]. */
static void roi_sample(double y, double x, int64_t h, int64_t w, int64_t *at, double *wt)
{
	if (y < -1 || y > (double)h || x < -1 || x > (double)w) {
		for (int i = 0; i < 4; i++)
			at[i] = 0, wt[i] = 0;
		return;
	}
	y = y < 0 ? 0 : y;
	x = x < 0 ? 0 : x;
	int64_t y0 = (int64_t)y, x0 = (int64_t)x, y1, x1;
	if (y0 >= h - 1)
		y1 = y0 = h - 1, y = (double)y0;
	else
		y1 = y0 + 1;
	if (x0 >= w - 1)
		x1 = x0 = w - 1, x = (double)x0;
	else
		x1 = x0 + 1;
	double ly = y - (double)y0, lx = x - (double)x0, hy = 1 - ly, hx = 1 - lx;
	at[0] = y0 * w + x0, at[1] = y0 * w + x1, at[2] = y1 * w + x0, at[3] = y1 * w + x1;
	wt[0] = hy * hx, wt[1] = hy * lx, wt[2] = ly * hx, wt[3] = ly * lx;
}

static int roialign_run(struct kern *k)
{
	const struct view *x = &k->in[0], *r = &k->in[1], *bi = &k->in[2], *y = &k->out[0];
	int64_t n = x->shape[0], c = x->shape[1], h = x->shape[2], w = x->shape[3];
	int64_t nr = r->shape[0], oh = y->shape[2], ow = y->shape[3];
	int64_t sr = op_int(k->op, "sampling_ratio", 0);
	double scale = op_float(k->op, "spatial_scale", 1.0);
	int is_max = !strcmp(op_str(k->op, "mode", "avg"), "max");
	int half = !strcmp(op_str(k->op, "coordinate_transformation_mode", "half_pixel"), "half_pixel");
	double off = half ? 0.5 : 0;
	for (int64_t ri = 0; ri < nr; ri++) {
		int64_t b = dtype_get_int(bi->data, bi->dtype, ri);
		if (b < 0 || b >= n)
			return op_error(k->op, "batch_indices[%lld] is %lld, outside [0, %lld)",
					(long long)ri, (long long)b, (long long)n);
		double x1 = dtype_get(r->data, r->dtype, ri * 4) * scale - off;
		double y1 = dtype_get(r->data, r->dtype, ri * 4 + 1) * scale - off;
		double x2 = dtype_get(r->data, r->dtype, ri * 4 + 2) * scale - off;
		double y2 = dtype_get(r->data, r->dtype, ri * 4 + 3) * scale - off;
		double rw = x2 - x1, rh = y2 - y1;
		if (!half) {
			rw = fmax(rw, 1);
			rh = fmax(rh, 1);
		}
		double bh = rh / (double)oh, bw = rw / (double)ow;
		int64_t gh = sr > 0 ? sr : (int64_t)ceil(rh / (double)oh);
		int64_t gw = sr > 0 ? sr : (int64_t)ceil(rw / (double)ow);
		if (gh < 0 || gw < 0 || gh > (1 << 16) || gw > (1 << 16))
			return op_error(k->op, "roi %lld needs a sampling grid of %lld x %lld",
					(long long)ri, (long long)gh, (long long)gw);
		double count = gh * gw > 0 ? (double)(gh * gw) : 1;
		for (int64_t ch = 0; ch < c; ch++) {
			int64_t plane = (b * c + ch) * h * w;
			for (int64_t py = 0; py < oh; py++)
				for (int64_t px = 0; px < ow; px++) {
					double acc = 0;
					int first = 1;
					for (int64_t iy = 0; iy < gh; iy++) {
						double sy = y1 + (double)py * bh + ((double)iy + 0.5) * bh / (double)gh;
						for (int64_t ix = 0; ix < gw; ix++) {
							double sx = x1 + (double)px * bw + ((double)ix + 0.5) * bw / (double)gw;
							int64_t at[4];
							double wt[4], v = 0;
							roi_sample(sy, sx, h, w, at, wt);
							for (int q = 0; q < 4; q++) {
								double t = wt[q] * dtype_get(x->data, x->dtype, plane + at[q]);
								if (is_max)
									v = q ? fmax(v, t) : t;
								else
									v += t;
							}
							if (is_max)
								acc = first ? v : fmax(acc, v);
							else
								acc += v;
							first = 0;
						}
					}
					if (!is_max)
						acc /= count;
					dtype_set(y->data, y->dtype, ((ri * c + ch) * oh + py) * ow + px, acc);
				}
		}
	}
	return 0;
}

static int poolidx_infer(struct ir_graph *g, struct ir_op *op)
{
	if (op_check_arity(g, op, 1, 1) < 0)
		return -1;
	const struct ir_tensor *x = op_in(g, op, 0);
	struct spatial s;
	if (x->rank != 4 || spatial_get(g, op, &s) < 0)
		return op_error(op, "needs a 4-D input and 2-D window attributes");
	int64_t so = op_int(op, "storage_order", 0);
	if (so != 0 && so != 1)
		return op_error(op, "storage_order %lld is not 0 or 1", (long long)so);
	int64_t shape[4];
	if (pool_out_shape(op, x, &s, shape) < 0)
		return -1;
	op_set_out(g, op, 0, DT_I64, 4, shape);
	return 0;
}

static int poolidx_run(struct kern *k)
{
	const struct view *x = &k->in[0], *y = &k->out[0];
	struct spatial s;
	if (spatial_get(k->g, k->op, &s) < 0)
		return -1;
	int so = (int)op_int(k->op, "storage_order", 0);
	int64_t nc = x->shape[0] * x->shape[1], h = x->shape[2], w = x->shape[3];
	int64_t oh = y->shape[2], ow = y->shape[3];
	int64_t *out = y->data;
	for (int64_t p = 0; p < nc; p++)
		for (int64_t i = 0; i < oh; i++)
			for (int64_t j = 0; j < ow; j++) {
				int64_t best = -1;
				double bv = 0;
				for (int a = 0; a < s.kh; a++) {
					int64_t yy = i * s.sh - s.pt + (int64_t)a * s.dh;
					if (yy < 0 || yy >= h)
						continue;
					for (int b = 0; b < s.kw; b++) {
						int64_t xx = j * s.sw - s.pl + (int64_t)b * s.dw;
						if (xx < 0 || xx >= w)
							continue;
						double v = dtype_get(x->data, x->dtype, (p * h + yy) * w + xx);
						if (best < 0 || v > bv) {
							bv = v;
							best = so ? yy + xx * h : yy * w + xx;
						}
					}
				}
				out[(p * oh + i) * ow + j] = p * h * w + (best < 0 ? 0 : best);
			}
	return 0;
}

const struct op_def op_def_MAXPOOLINDICES = { .infer = poolidx_infer, .run_f32 = poolidx_run };
const struct op_def op_def_MAXUNPOOL = { .infer = unpool_infer, .run_f32 = unpool_run };
const struct op_def op_def_ROIALIGN = { .infer = roialign_infer, .run_f32 = roialign_run };
