/* gridsample.c - GridSample (opset 16; opset 20's mode names too) for
 * ir-run: X [N, C, H, W] read at the points of grid [N, Ho, Wo, 2] (x then
 * y, normalised to [-1, 1]), giving Y [N, C, Ho, Wo].  Attributes mode
 * (bilinear/linear, nearest, bicubic/cubic), padding_mode (zeros, border,
 * reflection), align_corners.  As PyTorch's grid_sample, whose results
 * ONNX's reference reproduces: border and reflection move the point into
 * the image before bilinear and nearest sampling, and each of bicubic's
 * 16 taps; zeros reads 0 outside.  In double, any float dtype.  The chip
 * has no gather of this kind (no lower hook: top2tpu refuses it by name).
 */
#include <math.h>
#include <string.h>

#include "ir/convert.h"
#include "ir/op.h"

enum { GS_ZEROS, GS_BORDER, GS_REFLECT };
enum { GS_LINEAR, GS_NEAREST, GS_CUBIC };

struct gs {
	int mode, pad, align;
};

static int gs_get(const struct ir_op *op, struct gs *p)
{
	const char *m = op_str(op, "mode", "bilinear"), *pm = op_str(op, "padding_mode", "zeros");
	p->mode = !strcmp(m, "bilinear") || !strcmp(m, "linear") ? GS_LINEAR :
		  !strcmp(m, "nearest") ? GS_NEAREST :
		  !strcmp(m, "bicubic") || !strcmp(m, "cubic") ? GS_CUBIC : -1;
	p->pad = !strcmp(pm, "zeros") ? GS_ZEROS : !strcmp(pm, "border") ? GS_BORDER :
		 !strcmp(pm, "reflection") ? GS_REFLECT : -1;
	p->align = (int)op_int(op, "align_corners", 0);
	if (p->mode < 0 || p->pad < 0)
		return op_error(op, "mode '%s' or padding_mode '%s' is not supported", m, pm);
	return 0;
}

static int gs_infer(struct ir_graph *g, struct ir_op *op)
{
	struct gs p;
	if (op_check_arity(g, op, 2, 2) < 0 || gs_get(op, &p) < 0)
		return -1;
	const struct ir_tensor *x = op_in(g, op, 0), *grid = op_in(g, op, 1);
	if (x->rank != 4 || grid->rank != 4 || grid->shape[3] != 2 || grid->shape[0] != x->shape[0])
		return op_error(op, "needs X [N,C,H,W] and grid [N,Ho,Wo,2] (2-D sampling only)");
	if (!dtype_is_float(x->dtype) || !dtype_is_float(grid->dtype))
		return op_error(op, "dtype %s is not supported", dtype_name(x->dtype));
	int64_t shape[4] = { x->shape[0], x->shape[1], grid->shape[1], grid->shape[2] };
	op_set_out(g, op, 0, x->dtype, 4, shape);
	return 0;
}

/* PyTorch's reflect_coordinates over [lo2 / 2, hi2 / 2]. */
static double reflect(double v, double lo2, double hi2)
{
	if (lo2 == hi2)
		return 0;
	double mn = lo2 / 2, span = (hi2 - lo2) / 2;
	v = fabs(v - mn);
	double extra = fmod(v, span), flips = floor(v / span);
	return fmod(flips, 2) == 0 ? extra + mn : span - extra + mn;
}

/* A coordinate moved into [0, size - 1] by border or reflection. */
static double gs_move(const struct gs *p, double v, int64_t size)
{
	if (p->pad == GS_REFLECT)
		v = p->align ? reflect(v, 0, 2.0 * (double)(size - 1)) :
			       reflect(v, -1, 2.0 * (double)size - 1);
	if (p->pad != GS_ZEROS)
		v = v < 0 ? 0 : v > (double)(size - 1) ? (double)(size - 1) : v;
	return v;
}

/* Pixel (r, c) of the plane at x0, 0 outside. */
static double gs_px(const struct view *x, int64_t x0, int64_t h, int64_t w, int64_t r, int64_t c)
{
	if (r < 0 || r >= h || c < 0 || c >= w)
		return 0;
	return dtype_get(x->data, x->dtype, x0 + r * w + c);
}

static void cubic_coeffs(double t, double c[4])
{
	const double a = -0.75;
	double t1 = t + 1, t2 = 1 - t, t3 = 2 - t;
	c[0] = ((a * t1 - 5 * a) * t1 + 8 * a) * t1 - 4 * a;
	c[1] = ((a + 2) * t - (a + 3)) * t * t + 1;
	c[2] = ((a + 2) * t2 - (a + 3)) * t2 * t2 + 1;
	c[3] = ((a * t3 - 5 * a) * t3 + 8 * a) * t3 - 4 * a;
}

static int gs_run(struct kern *k)
{
	struct gs p;
	if (gs_get(k->op, &p) < 0)
		return -1;
	const struct view *x = &k->in[0], *grid = &k->in[1], *y = &k->out[0];
	int64_t n = x->shape[0], ch = x->shape[1], h = x->shape[2], w = x->shape[3];
	int64_t ho = y->shape[2], wo = y->shape[3];
	for (int64_t b = 0; b < n; b++)
		for (int64_t i = 0; i < ho * wo; i++) {
			int64_t gi = (b * ho * wo + i) * 2;
			double gx = dtype_get(grid->data, grid->dtype, gi);
			double gy = dtype_get(grid->data, grid->dtype, gi + 1);
			double fx = p.align ? (gx + 1) / 2 * (double)(w - 1) : ((gx + 1) * (double)w - 1) / 2;
			double fy = p.align ? (gy + 1) / 2 * (double)(h - 1) : ((gy + 1) * (double)h - 1) / 2;
			if (p.mode != GS_CUBIC) {
				fx = gs_move(&p, fx, w);
				fy = gs_move(&p, fy, h);
			}
			for (int64_t c = 0; c < ch; c++) {
				int64_t x0 = (b * ch + c) * h * w;
				double v = 0;
				if (p.mode == GS_NEAREST) {
					v = gs_px(x, x0, h, w, (int64_t)nearbyint(fy), (int64_t)nearbyint(fx));
				} else if (p.mode == GS_LINEAR) {
					double c0 = floor(fx), r0 = floor(fy), tx = fx - c0, ty = fy - r0;
					int64_t cc = (int64_t)c0, rr = (int64_t)r0;
					v = gs_px(x, x0, h, w, rr, cc) * (1 - tx) * (1 - ty) +
					    gs_px(x, x0, h, w, rr, cc + 1) * tx * (1 - ty) +
					    gs_px(x, x0, h, w, rr + 1, cc) * (1 - tx) * ty +
					    gs_px(x, x0, h, w, rr + 1, cc + 1) * tx * ty;
				} else {
					double c0 = floor(fx), r0 = floor(fy), cx[4], cy[4];
					cubic_coeffs(fx - c0, cx);
					cubic_coeffs(fy - r0, cy);
					for (int a = 0; a < 4; a++)
						for (int e = 0; e < 4; e++) {
							double rr = r0 - 1 + a, cc = c0 - 1 + e;
							if (p.pad != GS_ZEROS) {
								rr = gs_move(&p, rr, h);
								cc = gs_move(&p, cc, w);
							}
							v += cy[a] * cx[e] *
							     gs_px(x, x0, h, w, (int64_t)rr, (int64_t)cc);
						}
				}
				dtype_set(y->data, y->dtype, (b * ch + c) * ho * wo + i, v);
			}
		}
	return 0;
}

const struct op_def op_def_GRIDSAMPLE = { .infer = gs_infer, .run_f32 = gs_run };
