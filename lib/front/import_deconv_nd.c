/* import_deconv_nd.c - the ONNX converter of 3-D ConvTranspose (rank-5
 * input, lib/ops/deconv_nd.c): kernel_shape from the weight, strides,
 * dilations, output_padding and pads written out, auto_pad and output_shape
 * resolved into pads as for 2-D (lib/front/import_conv.c).
 */
#include <string.h>

#include "front/import_ops.h"
#include "front/import_util.h"
#include "ir/ir.h"
#include "ir/op_traits.h"

int cv_convtranspose_nd(struct imp *im, struct ir_op *op)
{
	enum { N = SPATIAL_ND };
	int64_t k[N], s[N] = { 1, 1, 1 }, d[N] = { 1, 1, 1 }, p[2 * N] = { 0 }, opad[N] = { 0 };
	int64_t os[N + 2], grp;
	int nk, ns, nd, np, no, nos;
	const struct ir_tensor *x = known_tensor(im, op->in[0]), *w = &im->g->tensors[op->in[1]];
	if (w->rank != N + 2)
		return node_err(im, "a 3-D ConvTranspose needs a rank-5 weight ('%s' has rank %d)",
				w->name, w->rank);
	if (attr_spatial(im, "kernel_shape", 1, k, N, &nk) < 0 ||
	    attr_spatial(im, "strides", 1, s, N, &ns) < 0 ||
	    attr_spatial(im, "dilations", 1, d, N, &nd) < 0 ||
	    attr_spatial(im, "pads", 0, p, 2 * N, &np) < 0 ||
	    attr_spatial(im, "output_padding", 0, opad, N, &no) < 0 ||
	    attr_spatial(im, "output_shape", 1, os, N + 2, &nos) < 0 || attr_int(im, "group", 1, &grp) < 0)
		return -1;
	if (nk && memcmp(k, w->shape + 2, sizeof k))
		return node_err(im, "kernel_shape does not match weight '%s'", w->name);
	memcpy(k, w->shape + 2, sizeof k);
	if ((ns && ns != N) || (nd && nd != N) || (np && np != 2 * N) || (no && no != N) ||
	    (nos && nos != N && nos != N + 2))
		return node_err(im, "a 3-D node needs 3 strides, dilations, output_padding and "
				"output_shape values and 6 pads");
	if (grp < 1 || grp > SPATIAL_MAX)
		return node_err(im, "attribute 'group' value %lld is out of range [1, %d]",
				(long long)grp, SPATIAL_MAX);
	if (nos == N + 2)
		memmove(os, os + 2, sizeof(int64_t) * N);
	char autopad[16];
	if (attr_str(im, "auto_pad", "NOTSET", autopad, sizeof autopad) < 0)
		return -1;
	int same = !strncmp(autopad, "SAME_", 5), upper = !strcmp(autopad, "SAME_UPPER");
	if (!strcmp(autopad, "VALID"))
		memset(p, 0, sizeof p);
	for (int i = 0; i < N && (nos || same); i++) {
		int64_t in = x->shape[2 + i], out = nos ? os[i] : in * s[i];
		int64_t total = s[i] * (in - 1) + opad[i] + (k[i] - 1) * d[i] + 1 - out;
		int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
		p[i] = upper ? half : total - half;
		p[i + N] = upper ? total - half : half;
		if (p[i] < 0)
			return node_err(im, "output_shape is larger than the convolution gives "
					"and needs padding before it");
		if (p[i + N] < 0) {
			opad[i] -= p[i + N];
			p[i + N] = 0;
		}
	}
	op_set_ints(op, "kernel_shape", N, k);
	op_set_ints(op, "strides", N, s);
	op_set_ints(op, "dilations", N, d);
	op_set_ints(op, "pads", 2 * N, p);
	op_set_ints(op, "output_padding", N, opad);
	op_set_int(op, "group", grp);
	return 0;
}
