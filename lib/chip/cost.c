/* cost.c - the chip's cost model (formats/tpuc-isa.5): cycles of one
 * command and of two command streams run against each other.  The back end
 * times its choices with it and tpu-sim reports with it, so the two agree.
 */
#include <stdlib.h>

#include "chip/cost.h"
#include "ir/base.h"
#include "ir/op.h"
#include "ir/op_traits.h"

int64_t cost_dma_cycles(const struct chip *c, const struct isa_dma *d)
{
	int64_t bytes = (int64_t)d->n * d->c * d->h * d->w * (int64_t)dtype_size(d->dtype);
	return cost_dma(c, bytes);
}

static enum ir_dtype wider(enum ir_dtype a, enum ir_dtype b)
{
	return dtype_size(a) >= dtype_size(b) ? a : b;
}

int64_t cost_cmp_cycles(const struct chip *c, const struct ir_graph *g, const struct isa_cmp *k)
{
	const struct ir_op *op = &g->ops[k->layer];
	if (op->place == PLACE_HOST)
		return 0;      /* the host's time is not the chip's */
	const struct ir_tensor *y = &g->tensors[op->out[0]];
	const struct ir_tensor *x = op->n_in > 0 && op->in[0] >= 0 ? &g->tensors[op->in[0]] : y;
	int64_t ys[4], xs[4];
	isa_lane_shape(y->rank, y->shape, 0, ys);
	isa_lane_shape(x->rank, x->shape, x->data != NULL, xs);
	int64_t rows = k->sliced ? k->out_rows : ys[2];
	if (k->chans)
		ys[1] = k->chans;
	enum ir_dtype dt = wider(x->dtype, y->dtype);
	struct spatial s;

	switch (op_cost_class(op->type)) {
	case COST_CONV: {
		const struct ir_tensor *w = &g->tensors[op->in[1]];
		if (w->rank != 4 || spatial_get(g, op, &s) < 0)
			break;
		int64_t icg = w->shape[1], taps = w->shape[2] * w->shape[3];
		if (s.group > 1 && icg == 1)   /* depthwise: vector unit */
			return cost_vector(c, dt, ys[1], ys[0], rows, ys[3], taps);
		return cost_cube(c, x->dtype, s.group, ys[1] / s.group, ys[0] * rows * ys[3],
				 icg * taps);
	}
	case COST_CONVT: {
		/* each input position scatters IC/group values into OC/group
		 * channels at KH x KW taps: POS = N x IH x IW x taps, K = IC/group */
		const struct ir_tensor *w = &g->tensors[op->in[1]];
		int64_t grp = op_int(op, "group", 1);
		if (w->rank != 4 || x->rank != 4 || y->rank != 4 || grp < 1 || x->shape[1] % grp)
			break;
		/* a command on a slice scatters the input rows it reads */
		int64_t ih = k->sliced & 1 ? k->in_rows : x->shape[2];
		return cost_cube(c, x->dtype, grp, y->shape[1] / grp,
				 x->shape[0] * ih * x->shape[3] * w->shape[2] * w->shape[3],
				 x->shape[1] / grp);
	}
	case COST_GEMM: {
		if (x->rank != 2 || y->rank != 2)
			break;
		int64_t kdim = x->shape[op_int(op, "transA", 0) ? 0 : 1];
		return cost_cube(c, x->dtype, 1, ys[1], y->shape[0], kdim);
	}
	case COST_MATMUL: {
		const struct ir_tensor *b = &g->tensors[op->in[1]];
		int64_t kdim = x->shape[x->rank - 1];
		int64_t n = b->rank >= 2 ? b->shape[b->rank - 1] : 1;
		int64_t pos = tensor_numel(y) / (n ? n : 1);
		if (k->chans && y->rank >= 2 && y->shape[1])
			pos = pos / y->shape[1] * k->chans;   /* a chunk of axis 1 */
		if (ys[2] > 0)
			pos = pos / ys[2] * rows;             /* the rows of a slice */
		return cost_cube(c, x->dtype, 1, n, pos, kdim);
	}
	case COST_RNN: {
		/* each step of each direction multiplies W|R [G*H, I+H] by one
		 * [x; h] column per batch row; the steps run one after another */
		const struct ir_tensor *w = &g->tensors[op->in[1]], *r = &g->tensors[op->in[2]];
		if (x->rank != 3 || w->rank != 3 || r->rank != 3)
			break;
		int bf = op_int(op, "layout", 0) != 0;
		return cost_cube(c, x->dtype, x->shape[bf ? 1 : 0] * w->shape[0], w->shape[1],
				 x->shape[bf ? 0 : 1], w->shape[2] + r->shape[2]);
	}
	case COST_POOL:
		if (spatial_get(g, op, &s) < 0)
			break;
		return cost_vector(c, dt, ys[1], ys[0], rows, ys[3], (int64_t)s.kh * s.kw);
	case COST_GPOOL:
		return cost_vector(c, dt, xs[1], xs[0], xs[2], xs[3], 1);
	default:
		break;
	}
	return cost_vector(c, dt, ys[1], ys[0], rows, ys[3], 1);
}

int64_t cost_time(const struct chip *c, const struct ir_graph *g, const struct isa_dma *dma,
		 int n_dma, const struct isa_cmp *cmp, int n_cmp)
{
	int64_t *end_d = xmalloc(sizeof(int64_t) * (size_t)(n_dma + 1));
	int64_t *end_c = xmalloc(sizeof(int64_t) * (size_t)(n_cmp + 1));
	int64_t td = 0, tc = 0;
	int id = 0, ic = 0;
	while (id < n_dma || ic < n_cmp) {
		int d_ok = id < n_dma && dma[id].wait <= (uint32_t)ic;
		int k_ok = ic < n_cmp && cmp[ic].wait <= (uint32_t)id;
		if (!d_ok && !k_ok) {
			free(end_d);
			free(end_c);
			return err_set("deadlock: dma command %d and compute command %d wait for each other",
				       id + 1, ic + 1);
		}
		int64_t sd = 0, sc = 0;
		if (d_ok)
			sd = dma[id].wait && end_c[dma[id].wait - 1] > td ? end_c[dma[id].wait - 1] : td;
		if (k_ok)
			sc = cmp[ic].wait && end_d[cmp[ic].wait - 1] > tc ? end_d[cmp[ic].wait - 1] : tc;
		if (d_ok && (!k_ok || sd <= sc)) {
			td = end_d[id] = sd + cost_dma_cycles(c, &dma[id]);
			id++;
		} else {
			tc = end_c[ic] = sc + cost_cmp_cycles(c, g, &cmp[ic]);
			ic++;
		}
	}
	free(end_d);
	free(end_c);
	return td > tc ? td : tc;
}
