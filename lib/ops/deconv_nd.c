/* deconv_nd.c - 3-D ConvTranspose (rank-5 input [N, C, D, H, W], weight
 * [C, C_out/group, KD, KH, KW], optional bias) for ir-run, in double for
 * any float dtype: each input voxel scatters into the output window it
 * feeds.  Attributes as the importer writes them (lib/front/import_deconv_nd.c):
 * kernel_shape, strides, dilations, output_padding (3 values each), pads
 * (6: the three begins, then the three ends), group.  convtranspose.c hands
 * rank-5 ops here; the chip has no 3-D form (top2tpu refuses it).
 */
#include <stdlib.h>
#include <string.h>

#include "ir/base.h"
#include "ir/convert.h"
#include "ir/op.h"
#include "ops/spatial_nd.h"

enum { N = SPATIAL_ND };

struct dnd {
	int64_t k[N], s[N], d[N], pb[N], pe[N], op[N], group;
};

static int dnd_get(const struct ir_op *op, struct dnd *a)
{
	int64_t p[2 * N];
	if (op_ints(op, "kernel_shape", a->k, N) != N || op_ints(op, "strides", a->s, N) != N ||
	    op_ints(op, "dilations", a->d, N) != N || op_ints(op, "pads", p, 2 * N) != 2 * N ||
	    op_ints(op, "output_padding", a->op, N) != N)
		return op_error(op, "a 3-D ConvTranspose needs 3 kernel_shape, strides, dilations, "
				"output_padding and 6 pads");
	a->group = op_int(op, "group", 1);
	for (int i = 0; i < N; i++) {
		a->pb[i] = p[i];
		a->pe[i] = p[i + N];
		if (a->k[i] < 1 || a->s[i] < 1 || a->d[i] < 1 || a->pb[i] < 0 || a->pe[i] < 0 ||
		    a->op[i] < 0 || a->k[i] > (1 << 24) || a->s[i] > (1 << 24) || a->d[i] > (1 << 24) ||
		    a->pb[i] > (1 << 24) || a->pe[i] > (1 << 24) || a->op[i] > (1 << 24))
			return op_error(op, "kernel, strides, dilations or pads out of range");
	}
	if (a->group < 1 || a->group > (1 << 24))
		return op_error(op, "group out of range");
	return 0;
}

int deconv_nd_infer(struct ir_graph *g, struct ir_op *op)
{
	const struct ir_tensor *x = op_in(g, op, 0), *w = op_in(g, op, 1);
	const struct ir_tensor *b = op->n_in > 2 ? op_in(g, op, 2) : NULL;
	struct dnd a;
	if (dnd_get(op, &a) < 0)
		return -1;
	if (x->rank != N + 2 || w->rank != N + 2 || !dtype_is_float(x->dtype) || w->dtype != x->dtype)
		return op_error(op, "needs a float rank-5 input and weight of one dtype");
	if (w->shape[0] != x->shape[1] || x->shape[1] % a.group)
		return op_error(op, "weight '%s' does not fit the input", w->name);
	for (int i = 0; i < N; i++)
		if (w->shape[2 + i] != a.k[i])
			return op_error(op, "kernel_shape does not match weight '%s'", w->name);
	int64_t shape[N + 2] = { x->shape[0], w->shape[1] * a.group };
	if (b && tensor_numel(b) != shape[1])
		return op_error(op, "bias must have one value per output channel");
	for (int i = 0; i < N; i++) {
		shape[2 + i] = a.s[i] * (x->shape[2 + i] - 1) + a.op[i] + (a.k[i] - 1) * a.d[i] + 1 -
			       a.pb[i] - a.pe[i];
		if (shape[2 + i] < 1 || shape[2 + i] > IR_MAX_DIM)
			return op_error(op, "output dimension %d is %lld", 2 + i, (long long)shape[2 + i]);
	}
	op_set_out(g, op, 0, x->dtype, N + 2, shape);
	return 0;
}

int deconv_nd_run(struct kern *k)
{
	struct dnd a;
	if (dnd_get(k->op, &a) < 0)
		return -1;
	const struct view *x = &k->in[0], *w = &k->in[1], *y = &k->out[0];
	const struct view *bias = k->n_in > 2 && k->in[2].data ? &k->in[2] : NULL;
	int64_t nb = x->shape[0], ci = x->shape[1], co = y->shape[1];
	int64_t cig = ci / a.group, cog = co / a.group;
	const int64_t *is = x->shape + 2, *os = y->shape + 2;
	int64_t in_sp = is[0] * is[1] * is[2], out_sp = os[0] * os[1] * os[2];
	int64_t ksp = a.k[0] * a.k[1] * a.k[2];
	double *acc = xmalloc(sizeof *acc * (size_t)(out_sp ? out_sp : 1));
	for (int64_t b = 0; b < nb; b++)
		for (int64_t oc = 0; oc < co; oc++) {
			int64_t grp = oc / cog, ocl = oc % cog;
			double bv = bias ? dtype_get(bias->data, bias->dtype, oc) : 0;
			for (int64_t i = 0; i < out_sp; i++)
				acc[i] = bv;
			for (int64_t c = grp * cig; c < (grp + 1) * cig; c++) {
				int64_t xoff = (b * ci + c) * in_sp, woff = (c * cog + ocl) * ksp;
				for (int64_t z = 0; z < is[0]; z++)
					for (int64_t yy = 0; yy < is[1]; yy++)
						for (int64_t xx = 0; xx < is[2]; xx++) {
							double v = dtype_get(x->data, x->dtype,
									     xoff + (z * is[1] + yy) * is[2] + xx);
							for (int64_t p = 0; p < a.k[0]; p++) {
								int64_t oz = z * a.s[0] - a.pb[0] + p * a.d[0];
								if (oz < 0 || oz >= os[0])
									continue;
								for (int64_t q = 0; q < a.k[1]; q++) {
									int64_t oy = yy * a.s[1] - a.pb[1] + q * a.d[1];
									if (oy < 0 || oy >= os[1])
										continue;
									for (int64_t r = 0; r < a.k[2]; r++) {
										int64_t ox = xx * a.s[2] - a.pb[2] + r * a.d[2];
										if (ox < 0 || ox >= os[2])
											continue;
										acc[(oz * os[1] + oy) * os[2] + ox] +=
											v * dtype_get(w->data, w->dtype,
												      woff + (p * a.k[1] + q) * a.k[2] + r);
									}
								}
							}
						}
			}
			for (int64_t i = 0; i < out_sp; i++)
				dtype_set(y->data, y->dtype, (b * co + oc) * out_sp + i, acc[i]);
		}
	free(acc);
	return 0;
}
