/* import_spatial_nd.c - the ONNX converter of 3-D Conv, MaxPool and
 * AveragePool (rank-5 inputs), for ir-run (lib/ops/spatial_nd.c): every
 * attribute written out, auto_pad resolved into pads [d0, h0, w0, d1, h1,
 * w1].  cv_spatial (import_conv.c) hands rank-5 nodes here.
 */
#include <string.h>

#include "front/import_ops.h"
#include "front/import_util.h"
#include "ir/op.h"
#include "ir/op_traits.h"

int cv_spatial_nd(struct imp *im, struct ir_op *op, enum spatial_kind kind)
{
	enum { N = SPATIAL_ND };
	int64_t k[N], s[N] = { 1, 1, 1 }, d[N] = { 1, 1, 1 }, p[2 * N] = { 0 };
	int nk, ns, nd, np;
	const struct ir_tensor *x = known_tensor(im, op->in[0]);
	if (attr_spatial(im, "kernel_shape", 1, k, N, &nk) < 0 ||
	    attr_spatial(im, "strides", 1, s, N, &ns) < 0 ||
	    attr_spatial(im, "dilations", 1, d, N, &nd) < 0 ||
	    attr_spatial(im, "pads", 0, p, 2 * N, &np) < 0)
		return -1;
	if (kind == SP_CONV) {
		const struct ir_tensor *w = &im->g->tensors[op->in[1]];
		if (w->rank != N + 2)
			return node_err(im, "a 3-D convolution needs a rank-5 weight ('%s' has rank %d)",
					w->name, w->rank);
		if (nk && memcmp(k, w->shape + 2, sizeof k))
			return node_err(im, "kernel_shape does not match weight '%s'", w->name);
		memcpy(k, w->shape + 2, sizeof k);
		nk = N;
	}
	if (nk != N)
		return node_err(im, "a 3-D node needs kernel_shape with 3 values");
	if ((ns && ns != N) || (nd && nd != N) || (np && np != 2 * N))
		return node_err(im, "a 3-D node needs 3 strides and dilations and 6 pads");
	if (spatial_auto_pad(im, x, N, k, s, d, p) < 0)
		return -1;
	op_set_ints(op, "kernel_shape", N, k);
	op_set_ints(op, "strides", N, s);
	op_set_ints(op, "pads", 2 * N, p);
	op_set_ints(op, "dilations", N, d);
	return cv_spatial_attrs(im, op, kind);
}
