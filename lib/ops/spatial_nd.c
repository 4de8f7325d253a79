/* spatial_nd.c - 3-D Conv, MaxPool and AveragePool for ir-run: inputs
 * [N, C, D, H, W], attributes kernel_shape [3], strides [3], dilations [3],
 * pads [d0, h0, w0, d1, h1, w1] (ONNX's order), group (Conv), ceil_mode and
 * count_include_pad (pooling), as the importer writes them out
 * (lib/front/import_spatial_nd.c).  Conv's weight [OC, C/g, KD, KH, KW]
 * may be a graph input.  An f32 Conv is oneDNN's 3-D convolution (as a
 * 2-D f32 Conv is); the rest runs direct loops in double, any float
 * dtype.  Conv applies a fused do_relu / relu_limit.
 */
#include "ops/spatial_nd.h"

#include <math.h>
#include <string.h>

#include "ir/convert.h"
#include "ops/kern_util.h"
#include "run/dnnl_util.h"

struct nd {
	int64_t k[SPATIAL_ND], s[SPATIAL_ND], d[SPATIAL_ND], p[2 * SPATIAL_ND];
	int64_t group, ceil, incl;
};

/* Read the attributes; the kernel from Conv's weight when absent. */
static int nd_get(const struct ir_graph *g, const struct ir_op *op, struct nd *a)
{
	const int n = SPATIAL_ND;
	int conv = op->type == OP_CONV;
	for (int i = 0; i < n; i++)
		a->k[i] = 0, a->s[i] = 1, a->d[i] = 1, a->p[i] = a->p[i + n] = 0;
	const struct ir_attr *ks = op_attr(op, "kernel_shape");
	if (ks && (ks->kind != ATTR_INTS || ks->n != n))
		return op_error(op, "kernel_shape needs %d values", n);
	if (ks)
		memcpy(a->k, ks->ints, sizeof(int64_t) * n);
	else if (conv && g->tensors[op->in[1]].rank == n + 2)
		memcpy(a->k, g->tensors[op->in[1]].shape + 2, sizeof(int64_t) * n);
	const char *names[3] = { "strides", "dilations", "pads" };
	int64_t *dst[3] = { a->s, a->d, a->p };
	for (int j = 0; j < 3; j++) {
		const struct ir_attr *at = op_attr(op, names[j]);
		int want = j == 2 ? 2 * n : n;
		if (!at)
			continue;
		if (at->kind != ATTR_INTS || at->n != want)
			return op_error(op, "%s needs %d values", names[j], want);
		memcpy(dst[j], at->ints, sizeof(int64_t) * (size_t)want);
	}
	for (int i = 0; i < n; i++)
		if (a->k[i] < 1 || a->s[i] < 1 || a->d[i] < 1 || a->p[i] < 0 || a->p[i + n] < 0 ||
		    a->k[i] > (1 << 24) || a->s[i] > (1 << 24) || a->d[i] > (1 << 24) ||
		    a->p[i] > (1 << 24) || a->p[i + n] > (1 << 24))
			return op_error(op, "kernel_shape, strides, dilations or pads out of range");
	a->group = op_int(op, "group", 1);
	a->ceil = op_int(op, "ceil_mode", 0);
	a->incl = op_int(op, "count_include_pad", 0);
	return 0;
}

static int64_t nd_out(int64_t in, const struct nd *a, int i)
{
	int64_t span = (a->k[i] - 1) * a->d[i] + 1, room = in + a->p[i] + a->p[i + SPATIAL_ND] - span;
	if (room < 0)
		return 0;
	int64_t o = (a->ceil ? (room + a->s[i] - 1) / a->s[i] : room / a->s[i]) + 1;
	/* a ceil_mode window must start inside the input or its front padding */
	if (a->ceil && (o - 1) * a->s[i] >= in + a->p[i])
		o--;
	return o;
}

int spatial_nd_infer(struct ir_graph *g, struct ir_op *op)
{
	int conv = op->type == OP_CONV;
	if (op_check_arity(g, op, 1, conv ? 3 : 1) < 0)
		return -1;
	if (conv && op->n_in < 2)
		return op_error(op, "the weight is missing");
	const struct ir_tensor *x = op_in(g, op, 0), *w = conv ? op_in(g, op, 1) : NULL;
	struct nd a;
	if (x->rank != SPATIAL_ND + 2 || (w && w->rank != SPATIAL_ND + 2))
		return op_error(op, "a 3-D op needs rank-5 input%s", conv ? " and weight" : "");
	if (!dtype_is_float(x->dtype))
		return op_error(op, "dtype %s is not supported", dtype_name(x->dtype));
	if (nd_get(g, op, &a) < 0)
		return -1;
	int64_t shape[SPATIAL_ND + 2] = { x->shape[0], x->shape[1] };
	if (conv) {
		if (a.group < 1 || x->shape[1] != w->shape[1] * a.group || w->shape[0] % a.group)
			return op_error(op, "channels, weight and group disagree");
		for (int i = 0; i < SPATIAL_ND; i++)
			if (a.k[i] != w->shape[2 + i])
				return op_error(op, "kernel_shape does not match weight '%s'", w->name);
		const struct ir_tensor *b = op_in(g, op, 2);
		if (b && tensor_numel(b) != w->shape[0])
			return op_error(op, "bias has %lld values for %lld output channels",
					(long long)tensor_numel(b), (long long)w->shape[0]);
		if (w->dtype != x->dtype || (b && b->dtype != x->dtype))
			return op_error(op, "inputs differ in dtype");
		shape[1] = w->shape[0];
	}
	for (int i = 0; i < SPATIAL_ND; i++)
		if ((shape[2 + i] = nd_out(x->shape[2 + i], &a, i)) < 1)
			return op_error(op, "window larger than the padded input");
	op_set_out(g, op, 0, x->dtype, SPATIAL_ND + 2, shape);
	return 0;
}

/* An f32 Conv on oneDNN: 1 when done, 0 when not f32, -1 on error.  A
 * trailing plane, row or column no window reads is left out of the
 * source (oneDNN wants the padding to match the output exactly). */
static int nd_conv_dnnl(struct kern *k, const struct nd *a)
{
	const struct view *x = &k->in[0], *w = &k->in[1], *y = &k->out[0];
	const struct view *b = k->n_in > 2 && k->in[2].data ? &k->in[2] : NULL;
	if (x->dtype != DT_F32 || w->dtype != DT_F32 || y->dtype != DT_F32 ||
	    (b && b->dtype != DT_F32))
		return 0;
	if (view_numel(y) == 0)
		return 1;
	struct dnnl_conv3d c = {
		.n = x->shape[0], .ic = x->shape[1], .oc = y->shape[1],
		.group = (int)a->group, .act = dnnl_act_from_op(k->op),
		.const_weights = kern_is_const(k, 1),
	};
	for (int i = 0; i < SPATIAL_ND; i++) {
		int64_t in = x->shape[2 + i];
		c.src[i] = c.src_full[i] = in;
		c.dst[i] = y->shape[2 + i];
		c.k[i] = a->k[i], c.s[i] = a->s[i], c.d[i] = a->d[i], c.pl[i] = a->p[i];
		int64_t pr = (c.dst[i] - 1) * a->s[i] + (a->k[i] - 1) * a->d[i] + 1 - in - a->p[i];
		if (pr < 0) {
			c.src[i] += pr;
			pr = 0;
		}
		c.pr[i] = pr;
	}
	if (dnnl_conv3d_f32(&c, x->data, w->data, b ? b->data : NULL, y->data, k->nthreads) < 0)
		return op_error(k->op, "%s", err_msg());
	return 1;
}

int spatial_nd_run(struct kern *k)
{
	const struct view *x = &k->in[0], *y = &k->out[0];
	const struct view *w = k->op->type == OP_CONV ? &k->in[1] : NULL;
	const struct view *b = w && k->n_in > 2 && k->in[2].data ? &k->in[2] : NULL;
	struct nd a;
	if (nd_get(k->g, k->op, &a) < 0)
		return -1;
	int done = w ? nd_conv_dnnl(k, &a) : 0;
	if (done)
		return done < 0 ? -1 : 0;
	const int64_t *xs = x->shape + 2, *ys = y->shape + 2;
	int64_t xplane = xs[0] * xs[1] * xs[2], yplane = ys[0] * ys[1] * ys[2];
	int64_t ktaps = a.k[0] * a.k[1] * a.k[2];
	int64_t oc = y->shape[1], ic = x->shape[1], icg = w ? ic / a.group : 1;
	int mx = k->op->type == OP_MAXPOOL;
	float lo = -INFINITY, hi = INFINITY;
	if (w)
		kern_act_bounds(k->op, &lo, &hi);
	for (int64_t n = 0; n < x->shape[0]; n++)
		for (int64_t c = 0; c < oc; c++)
			for (int64_t o = 0; o < yplane; o++) {
				int64_t od[3] = { o / (ys[1] * ys[2]), o / ys[2] % ys[1], o % ys[2] };
				double acc = w ? (b ? dtype_get(b->data, b->dtype, c) : 0) : mx ? -INFINITY : 0;
				int64_t taps = 0, ptaps = 0;
				int64_t cg0 = w ? c / (oc / a.group) * icg : c, ncg = w ? icg : 1;
				for (int64_t t = 0; t < ktaps; t++) {
					int64_t kd[3] = { t / (a.k[1] * a.k[2]), t / a.k[2] % a.k[1], t % a.k[2] };
					int64_t at[3], inside = 1, padded = 1;
					for (int i = 0; i < 3; i++) {
						at[i] = od[i] * a.s[i] - a.p[i] + kd[i] * a.d[i];
						inside &= at[i] >= 0 && at[i] < xs[i];
						padded &= at[i] >= -a.p[i] && at[i] < xs[i] + a.p[i + 3];
					}
					ptaps += padded;
					if (!inside)
						continue;
					taps++;
					int64_t xo = (at[0] * xs[1] + at[1]) * xs[2] + at[2];
					for (int64_t j = 0; j < ncg; j++) {
						double v = dtype_get(x->data, x->dtype,
								     (n * ic + cg0 + j) * xplane + xo);
						if (w)
							acc += v * dtype_get(w->data, w->dtype,
									     (c * icg + j) * ktaps + t);
						else if (mx)
							acc = v > acc || isnan(v) ? v : acc;
						else
							acc += v;
					}
				}
				if (!w && !mx)
					acc /= (double)(a.incl ? ptaps : taps);
				if (w)
					acc = acc < lo ? lo : acc > hi ? hi : acc;
				dtype_set(y->data, y->dtype, (n * oc + c) * yplane + o, acc);
			}
	return 0;
}
