/* depth_to_width.c - DepthToWidth, an op of the back end (no ONNX form):
 * blocks of channels become neighbouring columns,
 *
 *     y[n, c, h, w] = x[n, (w mod B) * C + c, h, w / B]
 *
 * x [N, B*C, H, W'], y [N, C, H, width], width <= B * W' (attributes
 * blocksize B and width; columns past width are dropped).  This is ONNX
 * DepthToSpace (DCR) along W only.  weight-reorder (lib/back/reorder.c)
 * writes it after an INT8 Conv that computes B neighbouring output columns
 * per position, as B blocks of output channels, to fill the cube's lanes
 * (formats/tpuc-isa.5, WEIGHT LAYOUT).  It moves elements
 * unchanged in every dtype (y keeps x's quantisation), row by row, so it
 * slices along H.
 */
#include <string.h>

#include "ir/op.h"

static int d2w_infer(struct ir_graph *g, struct ir_op *op)
{
	const struct ir_tensor *x = op_in(g, op, 0);
	int64_t b = op_int(op, "blocksize", 0), w = op_int(op, "width", 0);
	if (x->rank != 4 || b < 1 || x->shape[1] % b || w < 1 || w > b * x->shape[3])
		return op_error(op, "needs a 4-D input of blocksize x C channels and a width "
				"of at most blocksize x its width");
	int64_t shape[4] = { x->shape[0], x->shape[1] / b, x->shape[2], w };
	op_set_out(g, op, 0, x->dtype, 4, shape);
	struct ir_tensor *y = op_out(g, op, 0);
	y->scale = x->scale;
	y->zero_point = x->zero_point;
	return 0;
}

/* Any dtype: the elements move unchanged (rows are those the views hold). */
static int d2w_run(struct kern *k)
{
	const struct view *x = &k->in[0], *y = &k->out[0];
	if (x->dtype != y->dtype || x->zero_point != y->zero_point)
		return op_error(k->op, "input and output differ in dtype or zero point");
	int64_t b = op_int(k->op, "blocksize", 1), c = y->shape[1], h = y->shape[2];
	int64_t w = y->shape[3], xw = x->shape[3];
	size_t es = dtype_size(x->dtype);
	const char *src = x->data;
	char *dst = y->data;
	for (int64_t n = 0; n < y->shape[0]; n++)
		for (int64_t ch = 0; ch < c; ch++)
			for (int64_t r = 0; r < h; r++) {
				char *row = dst + (size_t)(((n * c + ch) * h + r) * w) * es;
				for (int64_t col = 0; col < w; col++) {
					int64_t xc = (col % b) * c + ch;
					memcpy(row + (size_t)col * es,
					       src + (size_t)((((n * b * c + xc) * h + r) * xw) + col / b) * es, es);
				}
			}
	return 0;
}

const struct op_def op_def_DEPTHTOWIDTH = { .infer = d2w_infer, .run_f32 = d2w_run, .run_tpu = d2w_run, .slice_h = slice_h_same };
