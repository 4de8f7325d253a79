/* convtranspose.c - 2-D ConvTranspose (NCHW, weight [C_in, C_out/group,
 * KH, KW], optional bias; attributes kernel_shape, strides, dilations,
 * pads [top, left, bottom, right] resolved by the importer, output_padding,
 * group) and GlobalMaxPool (any rank >= 3).  f32, plain C: each input pixel
 * scatters into the output window it feeds.
 */
#include <math.h>
#include <string.h>

#include "kern_util.h"
#include "opcommon.h"

struct deconv {
	int64_t kh, kw, sh, sw, dh, dw, pt, pl, pb, pr, oph, opw, group;
};

static int deconv_get(const struct ir_op *op, struct deconv *d)
{
	int64_t v[4];
	d->kh = d->kw = 0;
	if (op_ints(op, "kernel_shape", v, 4) == 2)
		d->kh = v[0], d->kw = v[1];
	d->sh = d->sw = d->dh = d->dw = 1;
	d->pt = d->pl = d->pb = d->pr = d->oph = d->opw = 0;
	if (op_ints(op, "strides", v, 4) == 2)
		d->sh = v[0], d->sw = v[1];
	if (op_ints(op, "dilations", v, 4) == 2)
		d->dh = v[0], d->dw = v[1];
	if (op_ints(op, "pads", v, 4) == 4)
		d->pt = v[0], d->pl = v[1], d->pb = v[2], d->pr = v[3];
	if (op_ints(op, "output_padding", v, 4) == 2)
		d->oph = v[0], d->opw = v[1];
	d->group = op_int(op, "group", 1);
	if (d->kh < 1 || d->kw < 1 || d->sh < 1 || d->sw < 1 || d->dh < 1 || d->dw < 1 || d->group < 1)
		return op_error(op, "kernel, strides, dilations or group out of range");
	return 0;
}

static int deconv_infer(struct ir_graph *g, struct ir_op *op)
{
	if (op_check_arity(g, op, 2, 3) < 0)
		return -1;
	const struct ir_tensor *x = op_in(g, op, 0), *w = op_in(g, op, 1), *b = op_in(g, op, 2);
	struct deconv d;
	if (deconv_get(op, &d) < 0)
		return -1;
	if (x->dtype != DT_F32 || w->dtype != DT_F32 || x->rank != 4 || w->rank != 4)
		return op_error(op, "needs f32 4-D input and weight");
	if (w->shape[0] != x->shape[1] || x->shape[1] % d.group || w->shape[2] != d.kh || w->shape[3] != d.kw)
		return op_error(op, "weight '%s' does not fit the input", w->name);
	int64_t c = w->shape[1] * d.group;
	if (b && tensor_numel(b) != c)
		return op_error(op, "bias must have one value per output channel");
	int64_t shape[4] = {
		x->shape[0], c,
		d.sh * (x->shape[2] - 1) + d.oph + (d.kh - 1) * d.dh + 1 - d.pt - d.pb,
		d.sw * (x->shape[3] - 1) + d.opw + (d.kw - 1) * d.dw + 1 - d.pl - d.pr,
	};
	if (shape[2] < 1 || shape[3] < 1)
		return op_error(op, "empty output");
	op_set_out(g, op, 0, DT_F32, 4, shape);
	return 0;
}

static int deconv_run(struct kern *k)
{
	if (kern_need_f32(k) < 0)
		return -1;
	struct deconv d;
	if (deconv_get(k->op, &d) < 0)
		return -1;
	const struct view *x = &k->in[0], *w = &k->in[1], *y = &k->out[0];
	const float *xd = x->data, *wd = w->data, *bd = k->n_in > 2 ? k->in[2].data : NULL;
	float *yd = y->data;
	int64_t n = x->shape[0], ci = x->shape[1], ih = x->shape[2], iw = x->shape[3];
	int64_t co = y->shape[1], oh = y->shape[2], ow = y->shape[3];
	int64_t cig = ci / d.group, cog = co / d.group;
	int nt = kern_threads(k, n * co, ih * iw * cig * d.kh * d.kw);

	#pragma omp parallel for num_threads(nt) schedule(static)
	for (int64_t no = 0; no < n * co; no++) {
		int64_t b = no / co, oc = no % co, g = oc / cog, ocl = oc % cog;
		float *yp = yd + no * oh * ow;
		for (int64_t i = 0; i < oh * ow; i++)
			yp[i] = bd ? bd[oc] : 0.0f;
		for (int64_t c = g * cig; c < (g + 1) * cig; c++) {
			const float *xp = xd + (b * ci + c) * ih * iw;
			const float *wp = wd + (c * cog + ocl) * d.kh * d.kw;
			for (int64_t y0 = 0; y0 < ih; y0++)
				for (int64_t ky = 0; ky < d.kh; ky++) {
					int64_t yy = y0 * d.sh - d.pt + ky * d.dh;
					if (yy < 0 || yy >= oh)
						continue;
					for (int64_t kx = 0; kx < d.kw; kx++) {
						float wv = wp[ky * d.kw + kx];
						for (int64_t x0 = 0; x0 < iw; x0++) {
							int64_t xx = x0 * d.sw - d.pl + kx * d.dw;
							if (xx >= 0 && xx < ow)
								yp[yy * ow + xx] += xp[y0 * iw + x0] * wv;
						}
					}
				}
		}
	}
	return 0;
}

static int64_t deconv_macs(const struct ir_graph *g, const struct ir_op *op)
{
	const struct ir_tensor *x = &g->tensors[op->in[0]], *w = &g->tensors[op->in[1]];
	return tensor_numel(x) * w->shape[1] * w->shape[2] * w->shape[3];
}

/* ---- GlobalMaxPool ---- */

static int gmaxpool_infer(struct ir_graph *g, struct ir_op *op)
{
	if (op_check_arity(g, op, 1, 1) < 0)
		return -1;
	const struct ir_tensor *x = op_in(g, op, 0);
	if (x->dtype != DT_F32 || x->rank < 3)
		return op_error(op, "needs an f32 input of rank 3 or more");
	int64_t shape[IR_MAX_RANK];
	for (int d = 0; d < x->rank; d++)
		shape[d] = d < 2 ? x->shape[d] : 1;
	op_set_out(g, op, 0, DT_F32, x->rank, shape);
	return 0;
}

static int gmaxpool_run(struct kern *k)
{
	const struct view *x = &k->in[0];
	int64_t nc = x->shape[0] * x->shape[1], n = nc ? view_numel(x) / nc : 0;
	const float *xd = x->data;
	float *y = k->out[0].data;
	for (int64_t o = 0; o < nc; o++) {
		float m = -INFINITY;
		for (int64_t i = 0; i < n; i++)
			m = xd[o * n + i] > m ? xd[o * n + i] : m;
		y[o] = m;
	}
	return 0;
}

const struct op_def op_def_CONVTRANSPOSE = {
	.name = "ConvTranspose",
	.infer = deconv_infer,
	.run_f32 = deconv_run,
	.macs = deconv_macs,
};

const struct op_def op_def_GMAXPOOL = {
	.name = "GlobalMaxPool",
	.infer = gmaxpool_infer,
	.run_f32 = gmaxpool_run,
};
