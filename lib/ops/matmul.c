/* matmul.c - Gemm (Y = alpha * A' * B' + beta * C, A' and B' optionally
 * transposed; attributes alpha, beta, transA, transB, and a fused ReLU) and
 * MatMul (numpy matmul with batch broadcasting).
 */
#include <stdlib.h>
#include <string.h>

#include "run/dnnl_util.h"
#include "ops/anydtype.h"
#include "ops/kern_util.h"
#include "ir/op.h"
#include "back/lower.h"
#include "quant/quant.h"

static int gemm_infer(struct ir_graph *g, struct ir_op *op)
{
	/* Tpu int8: [A, B, bias, multiplier, shift] or [A, B, coeff] */
	const struct ir_tensor *a = op_in(g, op, 0), *b = op_in(g, op, 1);
	if (a->rank != 2 || b->rank != 2)
		return op_error(op, "A and B must be matrices");
	int ta = (int)op_int(op, "transA", 0), tb = (int)op_int(op, "transB", 0);
	int64_t m = a->shape[ta ? 1 : 0], k = a->shape[ta ? 0 : 1];
	int64_t kb = b->shape[tb ? 1 : 0], n = b->shape[tb ? 0 : 1];
	if (k != kb)
		return op_error(op, "inner dimensions %lld and %lld differ", (long long)k, (long long)kb);
	const struct ir_tensor *c = op_in(g, op, 2);
	int64_t shape[2] = { m, n }, bs[IR_MAX_RANK];
	int br;
	if (c && g->dialect == DIALECT_TOP &&
	    (broadcast_shape(2, shape, c->rank, c->shape, &br, bs) < 0 || br != 2 ||
	     bs[0] != m || bs[1] != n))
		return op_error(op, "C does not broadcast to [%lld,%lld]", (long long)m, (long long)n);
	op_set_out(g, op, 0, quant_acc_dtype(g, op, a->dtype), 2, shape);
	return 0;
}

static int64_t gemm_macs(const struct ir_graph *g, const struct ir_op *op)
{
	const struct ir_tensor *a = &g->tensors[op->in[0]];
	return tensor_numel(&g->tensors[op->out[0]]) * a->shape[op_int(op, "transA", 0) ? 0 : 1];
}

/* A MatMul operand's shape (RANK dims) into OUT with a vector promoted as
 * numpy does: A [k] as [1, k], B (IS_B) [k] as [k, 1].  Returns OUT's
 * rank. */
static int matmul_promote(int rank, const int64_t *shape, int is_b, int64_t *out)
{
	if (rank == 1) {
		out[0] = is_b ? shape[0] : 1;
		out[1] = is_b ? 1 : shape[0];
		return 2;
	}
	memcpy(out, shape, sizeof(int64_t) * (size_t)rank);
	return rank;
}

static int matmul_infer(struct ir_graph *g, struct ir_op *op)
{
	/* Tpu int8: [A, B, bias, multiplier, shift] */
	const struct ir_tensor *a = op_in(g, op, 0), *b = op_in(g, op, 1);
	if (a->rank < 1 || b->rank < 1)
		return op_error(op, "scalar operands");
	int64_t ash[IR_MAX_RANK], bsh[IR_MAX_RANK];
	/* vectors promoted, and the added axes dropped at the end */
	int ra = matmul_promote(a->rank, a->shape, 0, ash);
	int rb = matmul_promote(b->rank, b->shape, 1, bsh);
	if (ash[ra - 1] != bsh[rb - 2])
		return op_error(op, "inner dimensions %lld and %lld differ",
				(long long)ash[ra - 1], (long long)bsh[rb - 2]);
	int64_t batch[IR_MAX_RANK], shape[IR_MAX_RANK + 2];
	int r;
	if (broadcast_shape(ra - 2, ash, rb - 2, bsh, &r, batch) < 0)
		return op_error(op, "batch dimensions do not broadcast");
	int n = 0;
	for (int i = 0; i < r; i++)
		shape[n++] = batch[i];
	if (a->rank > 1)
		shape[n++] = ash[ra - 2];
	if (b->rank > 1)
		shape[n++] = bsh[rb - 1];
	if (n > IR_MAX_RANK)
		return op_error(op, "result rank too large");
	op_set_out(g, op, 0, quant_acc_dtype(g, op, a->dtype), n, shape);
	return 0;
}

static int64_t matmul_macs(const struct ir_graph *g, const struct ir_op *op)
{
	const struct ir_tensor *a = &g->tensors[op->in[0]];
	return tensor_numel(&g->tensors[op->out[0]]) * a->shape[a->rank - 1];
}

/* Float reference of Gemm on oneDNN: dst is first filled with beta * C
 * (broadcast), then dst = alpha * A'B' + dst, then the fused activation. */
static int gemm_f32(struct kern *k)
{
	if (!kern_all_f32(k))
		return gemm_run_any(k);
	if (kern_need_f32(k) < 0)
		return -1;
	const struct view *a = &k->in[0], *b = &k->in[1], *c = &k->in[2], *y = &k->out[0];
	int ta = (int)op_int(k->op, "transA", 0), tb = (int)op_int(k->op, "transB", 0);
	int64_t m = y->shape[0], n = y->shape[1], kk = a->shape[ta ? 0 : 1];
	float alpha = (float)op_float(k->op, "alpha", 1), beta = (float)op_float(k->op, "beta", 1);
	float *yd = y->data;
	if (m * n == 0)
		return 0;
	if (c->data) {
		int64_t st[2];
		kern_bcast_strides(c, 2, y->shape, st);
		const float *cd = c->data;
		for (int64_t i = 0; i < m; i++)
			for (int64_t j = 0; j < n; j++)
				yd[i * n + j] = beta * cd[i * st[0] + j * st[1]];
	}
	struct dnnl_matmul mm = {
		.rank = 2,
		.a_dims = { m, kk }, .a_stride = { ta ? 1 : kk, ta ? m : 1 },
		.b_dims = { kk, n }, .b_stride = { tb ? 1 : n, tb ? kk : 1 },
		.c_dims = { m, n },
		.alpha = alpha, .accumulate = c->data != NULL, .act = dnnl_act_from_op(k->op),
		.const_b = kern_is_const(k, 1),
	};
	if (kk == 0) {
		float lo, hi;
		kern_act_bounds(k->op, &lo, &hi);
		for (int64_t i = 0; i < m * n; i++) {
			float v = c->data ? yd[i] : 0.0f;
			yd[i] = v < lo ? lo : v > hi ? hi : v;
		}
		return 0;
	}
	if (dnnl_matmul_f32(&mm, a->data, b->data, yd, k->nthreads) < 0)
		return op_error(k->op, "%s", err_msg());
	return 0;
}

/* Float reference of MatMul: vectors promoted as numpy does, batch axes
 * aligned from the right and broadcast by oneDNN. */
static int matmul_f32(struct kern *k)
{
	if (!kern_all_f32(k))
		return matmul_run_any(k);
	if (kern_need_f32(k) < 0)
		return -1;
	const struct view *a = &k->in[0], *b = &k->in[1], *y = &k->out[0];
	int64_t ash[IR_MAX_RANK], bsh[IR_MAX_RANK];
	int ra = matmul_promote(a->rank, a->shape, 0, ash);
	int rb = matmul_promote(b->rank, b->shape, 1, bsh);
	int r = ra > rb ? ra : rb;
	struct dnnl_matmul mm = { .rank = r, .alpha = 1, .const_b = kern_is_const(k, 1) };
	if (r > 12)
		return op_error(k->op, "rank %d is beyond oneDNN's 12", r);
	for (int i = 0; i < r; i++) {
		mm.a_dims[i] = i < r - ra ? 1 : ash[i - (r - ra)];
		mm.b_dims[i] = i < r - rb ? 1 : bsh[i - (r - rb)];
		mm.c_dims[i] = i < r - 2 ? (mm.a_dims[i] == 1 ? mm.b_dims[i] : mm.a_dims[i]) : 0;
	}
	mm.c_dims[r - 2] = mm.a_dims[r - 2];
	mm.c_dims[r - 1] = mm.b_dims[r - 1];
	dnnl_dense_strides(r, mm.a_dims, mm.a_stride);
	dnnl_dense_strides(r, mm.b_dims, mm.b_stride);
	int64_t n = view_numel(y);
	if (n == 0)
		return 0;
	if (mm.a_dims[r - 1] == 0) {
		memset(y->data, 0, (size_t)n * sizeof(float));
		return 0;
	}
	if (dnnl_matmul_f32(&mm, a->data, b->data, y->data, k->nthreads) < 0)
		return op_error(k->op, "%s", err_msg());
	return 0;
}

/* Int8 lowering of Gemm: B quantised per output column n (whatever transB
 * says about its layout), alpha folded into B and beta into the bias C
 * (which must broadcast along M); inputs become [A, B(i8), bias, multiplier,
 * shift] (formats/tpuc-quant.5).  With transA, an activation B or a C
 * of another shape it runs in the fallback float mode. */
static int gemm_lower(struct lower_ctx *lc, const struct ir_op *op)
{
	if (lc->mode != MODE_INT8)
		return lower_float_bias(lc, op, 2);
	const struct ir_tensor *b = &lc->top->tensors[op->in[1]];
	const struct ir_tensor *c = op->n_in > 2 && op->in[2] >= 0 ? &lc->top->tensors[op->in[2]] : NULL;
	const struct ir_tensor *y = &lc->top->tensors[op->out[0]];
	int tb = (int)op_int(op, "transB", 0);
	int64_t n = y->shape[1], kk = b->shape[tb ? 1 : 0], cn = c ? tensor_numel(c) : 0;
	/* the int8 form needs A untransposed, a constant B, and a constant C
	 * of one value per column (or one) */
	if (op_int(op, "transA", 0) || !b->data || b->dtype != DT_F32 ||
	    (c && (!c->data || c->dtype != DT_F32 || (cn != n && cn != 1))))
		return lower_fallback(lc, op);
	float alpha = (float)op_float(op, "alpha", 1.0), beta = (float)op_float(op, "beta", 1.0);
	float *w = xmalloc(sizeof(float) * (size_t)(n * kk + 1));
	float *bias = xmalloc(sizeof(float) * (size_t)(n + 1));
	for (int64_t i = 0; i < n * kk; i++)
		w[i] = alpha * ((const float *)b->data)[i];
	for (int64_t i = 0; i < n; i++)
		bias[i] = c ? beta * ((const float *)c->data)[cn == 1 ? 0 : i] : 0.0f;
	struct lower_pc pc = {
		.w = w, .wname = b->name, .wrank = b->rank, .wshape = b->shape,
		.b = bias, .bname = c ? c->name : NULL,
		.channels = n, .per = kk, .cstride = tb ? kk : 1, .estride = tb ? 1 : n,
	};
	int k = lower_per_channel(lc, op, &pc);
	free(w);
	free(bias);
	if (k < 0)
		return -1;
	op_del_attr(&lc->tpu->ops[k], "alpha");
	op_del_attr(&lc->tpu->ops[k], "beta");
	return 0;
}

/* The element offset of output batch BI's matrix in an operand of dims D
 * and strides ST (rank R; batch axes of size 1 broadcast), given the
 * output's dims C. */
static int64_t mm_batch_offset(int r, const int64_t *c, const int64_t *d, const int64_t *st,
			       int64_t bi)
{
	int64_t off = 0;
	for (int i = r - 3; i >= 0; i--) {
		int64_t ix = bi % c[i];
		bi /= c[i];
		off += (d[i] == 1 ? 0 : ix) * st[i];
	}
	return off;
}

/* Int8 products on oneDNN (exact s32 sums where dnnl_int8_exact()) for
 * the product MM of k's inputs A (i8 or u8) and B: B u8 goes to oneDNN as
 * B - 128 in s8 (its only weight type).  With eb = 128 - zb (u8 B) or -zb
 * and the zero point za of A, the sum of (a - za)(b - zb) over K is
 * oneDNN's sum of a (b - 128) plus eb * sum(a) - za * sum(b - 128) -
 * za * eb * K, each term exact in 64 bits.  Then the requantisation of
 * column n with Q (quant_requant_rows), or the raw sums for an i32
 * output (Q NULL).  Returns 1 when done, 0 when it does not apply, -1 on
 * error. */
static int mm_dnnl(struct kern *k, const struct dnnl_matmul *mm, const struct quant_chan *q,
		   int lo, int hi)
{
	const struct view *a = &k->in[0], *b = &k->in[1], *y = &k->out[0];
	if (!dnnl_int8_exact())
		return 0;
	int r = mm->rank, nt = k->nthreads > 0 ? k->nthreads : 1;
	int64_t m = mm->a_dims[r - 2], kk = mm->a_dims[r - 1], n = mm->b_dims[r - 1];
	int64_t nb = 1, nbv = view_numel(b);
	for (int i = 0; i < r - 2; i++)
		nb *= mm->c_dims[i];
	int za = a->zero_point, eb = (b->dtype == DT_U8 ? 128 : 0) - b->zero_point;
	const int8_t *bs = b->data;
	int8_t *shifted = NULL;
	if (b->dtype == DT_U8) {
		const uint8_t *bu = b->data;
		bs = shifted = xmalloc((size_t)nbv + 1);
		#pragma omp simd
		for (int64_t i = 0; i < nbv; i++)
			shifted[i] = (int8_t)(bu[i] - 128);
	}
	struct dnnl_matmul plain = *mm;
	plain.const_b = mm->const_b && !shifted;
	int32_t *acc = xaligned(sizeof *acc * (size_t)(nb * m * n) + 64);
	if (dnnl_matmul_s8(&plain, a->data, a->dtype == DT_U8, bs, 0, acc, nt) < 0) {
		free(shifted);
		free(acc);
		return op_error(k->op, "%s", err_msg());
	}
	if (za || eb) {
		const int64_t *as = mm->a_stride, *bst = mm->b_stride;
		#pragma omp parallel num_threads(nt)
		{
			int64_t *row = xmalloc(sizeof *row * (size_t)(m + n + 1)), *col = row + m;
			#pragma omp for schedule(static)
			for (int64_t bi = 0; bi < nb; bi++) {
				int64_t oa = mm_batch_offset(r, mm->c_dims, mm->a_dims, as, bi);
				int64_t ob = mm_batch_offset(r, mm->c_dims, mm->b_dims, bst, bi);
				for (int64_t i = 0; i < m; i++) {
					int64_t sum = 0;
					for (int64_t t = 0; eb && t < kk; t++)
						sum += quant_get(a->data, a->dtype,
								 oa + i * as[r - 2] + t * as[r - 1]);
					row[i] = eb * sum - (int64_t)za * eb * kk;
				}
				for (int64_t j = 0; j < n; j++) {
					int64_t sum = 0;
					for (int64_t t = 0; za && t < kk; t++)
						sum += bs[ob + t * bst[r - 2] + j * bst[r - 1]];
					col[j] = -(int64_t)za * sum;
				}
				int32_t *ab = acc + bi * m * n;
				for (int64_t i = 0; i < m; i++)
					for (int64_t j = 0; j < n; j++)
						ab[i * n + j] = (int32_t)(ab[i * n + j] + row[i] + col[j]);
			}
			free(row);
		}
	}
	free(shifted);
	if (!q) {
		/* a partial sum of a split K (attribute acc): the raw sums */
		memcpy(y->data, acc, sizeof *acc * (size_t)(nb * m * n));
		free(acc);
		return 1;
	}
	int64_t rows = nb * m, step = (rows + nt - 1) / nt;
	#pragma omp parallel for num_threads(nt) schedule(static)
	for (int64_t i0 = 0; i0 < rows; i0 += step)
		quant_requant_rows(acc + i0 * n, rows - i0 < step ? rows - i0 : step, q,
				   y->zero_point, lo, hi, (unsigned char *)y->data + i0 * n, y->dtype);
	free(acc);
	return 1;
}

/* The int8 Gemm kernel: exact int32 dot products of (A - za) and B over K,
 * then the per-column requantisation plus the output zero point; B is
 * [K,N], or [N,K] with transB. */
static int gemm_tpu(struct kern *k)
{
	if (quant_is_float(k->out[0].dtype))
		return quant_run_f32(k);
	const struct view *a = &k->in[0], *b = &k->in[1], *y = &k->out[0];
	int raw = y->dtype == DT_I32;   /* a partial sum (attribute acc) */
	if (!quant_is_q(a->dtype) || b->dtype != DT_I8 || (!quant_is_q(y->dtype) && !raw))
		return op_error(k->op, "int8 kernel needs i8 or u8 A and output, i8 B");
	if (op_int(k->op, "transA", 0) || a->rank != 2 || b->rank != 2)
		return op_error(k->op, "int8 kernel needs 2-D A without transA");
	int tb = (int)op_int(k->op, "transB", 0);
	int64_t m = a->shape[0], kk = a->shape[1], n = y->shape[1];
	if (b->shape[tb ? 1 : 0] != kk || b->shape[tb ? 0 : 1] != n)
		return op_error(k->op, "B does not match A and the output");
	if (!raw && quant_check_channel_params(k, 2, n) < 0)
		return -1;
	int lo, hi;
	quant_out_bounds(k->op, y->dtype, y->scale, y->zero_point, &lo, &hi);
	if (dnnl_int8_exact()) {
		struct quant_chan q = { 0 };
		struct dnnl_matmul mm = {
			.rank = 2, .a_dims = { m, kk }, .a_stride = { kk, 1 },
			.b_dims = { kk, n }, .b_stride = { tb ? 1 : n, tb ? kk : 1 },
			.c_dims = { m, n }, .alpha = 1, .const_b = kern_is_const(k, 1),
		};
		int rc = raw ? 0 : quant_chan_init(&q, k, 2, n, n);
		if (rc >= 0)
			rc = mm_dnnl(k, &mm, raw ? NULL : &q, lo, hi);
		quant_chan_free(&q);
		if (rc)
			return rc < 0 ? -1 : 0;
	}
	const int8_t *bd = b->data;
	int za = a->zero_point, zy = y->zero_point;
	int32_t *acc = xmalloc(sizeof(int32_t) * (size_t)(n + 1));
	int32_t *ar = xmalloc(sizeof(int32_t) * (size_t)(kk + 1));   /* row i of A */
	for (int64_t i = 0; i < m; i++) {
		for (int64_t t = 0; t < kk; t++)
			ar[t] = quant_get(a->data, a->dtype, i * kk + t) - za;
		for (int64_t j = 0; j < n; j++)
			acc[j] = 0;
		if (tb) {
			for (int64_t j = 0; j < n; j++) {
				const int8_t *br = bd + j * kk;
				int32_t s = 0;
				for (int64_t t = 0; t < kk; t++)
					s += ar[t] * br[t];
				acc[j] = s;
			}
		} else {
			for (int64_t t = 0; t < kk; t++) {
				int32_t av = ar[t];
				const int8_t *br = bd + t * n;
				for (int64_t j = 0; j < n; j++)
					acc[j] += av * br[j];
			}
		}
		if (raw) {
			memcpy((int32_t *)y->data + i * n, acc, sizeof *acc * (size_t)n);
			continue;
		}
		for (int64_t j = 0; j < n; j++) {
			int32_t bias, mult, shift;
			if (quant_channel_params(k, 2, (int)j, &bias, &mult, &shift) < 0) {
				free(acc);
				free(ar);
				return -1;
			}
			quant_put(y->data, y->dtype, i * n + j,
				  quant_requant_zp(quant_add_sat32(acc[j], bias), mult, shift, zy, lo, hi));
		}
	}
	free(acc);
	free(ar);
	return 0;
}

/* Int8 lowering of MatMul (formats/tpuc-quant.5): with a constant 2-D B
 * [K,N], B quantised per column n like a Gemm's; with two activations,
 * both quantised per tensor and one multiplier and shift for s_a s_b /
 * s_y.  Inputs become [A, B, bias, multiplier, shift] (i32 [N] or [1],
 * bias 0).  Any other MatMul (a constant A, a constant B of rank 3 or
 * more) runs in the fallback float mode with Casts around it. */
static int matmul_lower(struct lower_ctx *lc, const struct ir_op *op)
{
	if (lc->mode != MODE_INT8)
		return lower_default(lc, op);
	const struct ir_tensor *a = &lc->top->tensors[op->in[0]];
	const struct ir_tensor *b = &lc->top->tensors[op->in[1]];
	if (!a->data && b->data && b->dtype == DT_F32 && b->rank == 2) {
		struct lower_pc pc = {
			.w = b->data, .wname = b->name, .wrank = 2, .wshape = b->shape,
			.channels = b->shape[1], .per = b->shape[0], .cstride = 1,
			.estride = b->shape[1],
		};
		return lower_per_channel(lc, op, &pc) < 0 ? -1 : 0;
	}
	if (a->data || b->data)
		return lower_fallback(lc, op);
	int in[5] = { lower_act_input(lc, op, op->in[0]), lower_act_input(lc, op, op->in[1]) };
	enum ir_dtype dt;
	float s_out;
	int zp;
	if (in[0] < 0 || in[1] < 0 || lower_table_act(lc, op, op->out[0], &dt, &s_out, &zp) < 0)
		return -1;
	int32_t par[3] = { 0 };
	double real = (double)lc->tpu->tensors[in[0]].scale * lc->tpu->tensors[in[1]].scale / s_out;
	if (quant_multiplier(real, &par[1], &par[2]) < 0)
		return op_error(op, "%s", err_msg());
	static const char *const what[3] = { "bias", "multiplier", "shift" };
	int64_t one[1] = { 1 };
	for (int i = 0; i < 3; i++) {
		char name[512];
		snprintf(name, sizeof name, "%s_%s", op->name ? op->name : "matmul", what[i]);
		in[2 + i] = lower_weight(lc, name, DT_I32, 1, one, &par[i]);
	}
	int y = lower_output(lc, op->out[0], dt, s_out, zp);
	lower_emit(lc, op, 5, in, 1, &y);
	return 0;
}

/* The int8 MatMul kernel: for each (broadcast) batch, exact int32 dot
 * products of rows of A - za and columns of B - zb, then the
 * requantisation of column n with parameter n (per-column B) or 0 (one
 * for all), plus the output zero point. */
static int matmul_tpu(struct kern *k)
{
	if (quant_is_float(k->out[0].dtype))
		return quant_run_f32(k);
	const struct view *a = &k->in[0], *b = &k->in[1], *y = &k->out[0];
	int raw = y->dtype == DT_I32;   /* a partial sum (attribute acc) */
	if (!quant_is_q(a->dtype) || !quant_is_q(b->dtype) || (!quant_is_q(y->dtype) && !raw))
		return op_error(k->op, "int8 kernel needs i8 or u8 A, B and output");
	int64_t ash[IR_MAX_RANK], bsh[IR_MAX_RANK];
	int ra = matmul_promote(a->rank, a->shape, 0, ash);
	int rb = matmul_promote(b->rank, b->shape, 1, bsh);
	int r = ra > rb ? ra : rb;
	int64_t ad[IR_MAX_RANK + 1], bd[IR_MAX_RANK + 1], as[IR_MAX_RANK + 1], bs[IR_MAX_RANK + 1];
	for (int i = 0; i < r; i++) {
		ad[i] = i < r - ra ? 1 : ash[i - (r - ra)];
		bd[i] = i < r - rb ? 1 : bsh[i - (r - rb)];
	}
	dnnl_dense_strides(r, ad, as);
	dnnl_dense_strides(r, bd, bs);
	int64_t m = ad[r - 2], kk = ad[r - 1], n = bd[r - 1], nb = 1;
	for (int i = 0; i < r - 2; i++)
		nb *= ad[i] > bd[i] ? ad[i] : bd[i];
	if (bd[r - 2] != kk || view_numel(y) != nb * m * n)
		return op_error(k->op, "B does not match A and the output");
	const struct view *p = &k->in[2];
	int64_t np = raw ? 0 : p->rank == 2 && p->shape[1] == 3 ? p->shape[0] : view_numel(p);
	if (!raw && ((np != n && np != 1) || quant_check_channel_params(k, 2, np) < 0))
		return op_error(k->op, "int8 parameters must number %lld or 1", (long long)n);
	int lo, hi;
	quant_out_bounds(k->op, y->dtype, y->scale, y->zero_point, &lo, &hi);
	int za = a->zero_point, zb = b->zero_point, zy = y->zero_point;
	int32_t *ar = xmalloc(sizeof(int32_t) * (size_t)(m * kk + 1));   /* A - za */
	int32_t *bt = xmalloc(sizeof(int32_t) * (size_t)(n * kk + 1));   /* (B - zb)' [N,K] */
	int32_t *par = xmalloc(sizeof(int32_t) * (size_t)(3 * np + 1));
	for (int64_t j = 0; j < np; j++)
		if (quant_channel_params(k, 2, (int)j, &par[3 * j], &par[3 * j + 1], &par[3 * j + 2]) < 0)
			goto fail;
	if (r <= 12 && dnnl_int8_exact()) {
		struct dnnl_matmul mm = { .rank = r, .alpha = 1, .const_b = kern_is_const(k, 1) };
		for (int i = 0; i < r; i++) {
			mm.a_dims[i] = ad[i];
			mm.a_stride[i] = as[i];
			mm.b_dims[i] = bd[i];
			mm.b_stride[i] = bs[i];
			mm.c_dims[i] = i < r - 2 ? (ad[i] > bd[i] ? ad[i] : bd[i]) : i == r - 2 ? m : n;
		}
		struct quant_chan q = { 0 };
		int rc = raw ? 0 : quant_chan_init(&q, k, 2, np, n);
		if (rc >= 0)
			rc = mm_dnnl(k, &mm, raw ? NULL : &q, lo, hi);
		quant_chan_free(&q);
		if (rc) {
			free(ar);
			free(bt);
			free(par);
			return rc < 0 ? -1 : 0;
		}
	}
	for (int64_t bi = 0; bi < nb; bi++) {
		/* this batch's offsets in A and B, broadcasting size-1 axes */
		int64_t rem = bi, oa = 0, ob = 0;
		for (int i = r - 3; i >= 0; i--) {
			int64_t di = ad[i] > bd[i] ? ad[i] : bd[i], ix = rem % di;
			rem /= di;
			oa += (ad[i] == 1 ? 0 : ix) * as[i];
			ob += (bd[i] == 1 ? 0 : ix) * bs[i];
		}
		for (int64_t e = 0; e < m * kk; e++)
			ar[e] = quant_get(a->data, a->dtype, oa + e) - za;
		for (int64_t t = 0; t < kk; t++)
			for (int64_t j = 0; j < n; j++)
				bt[j * kk + t] = quant_get(b->data, b->dtype, ob + t * n + j) - zb;
		for (int64_t i = 0; i < m; i++)
			for (int64_t j = 0; j < n; j++) {
				const int32_t *x = ar + i * kk, *w = bt + j * kk, *q = par + 3 * (np == 1 || raw ? 0 : j);
				int32_t acc = 0;
				for (int64_t t = 0; t < kk; t++)
					acc += x[t] * w[t];
				if (raw) {
					((int32_t *)y->data)[(bi * m + i) * n + j] = acc;
					continue;
				}
				quant_put(y->data, y->dtype, (bi * m + i) * n + j,
					  quant_requant_zp(quant_add_sat32(acc, q[0]), q[1], q[2], zy, lo, hi));
			}
	}
	free(ar);
	free(bt);
	free(par);
	return 0;
fail:
	free(ar);
	free(bt);
	free(par);
	return -1;
}

/* Gemm in parts of its rows M: A's, and C's when C has them; B whole. */
static int gemm_split_axis(const struct ir_graph *g, const struct ir_op *op, int ax, int *in_ax)
{
	if (ax != 0)
		return 0;
	for (int j = 0; j < op->n_in; j++)
		in_ax[j] = -1;
	in_ax[0] = op_int(op, "transA", 0) ? 1 : 0;
	if (op->n_in > 2 && op->in[2] >= 0) {
		const struct ir_tensor *c = &g->tensors[op->in[2]];
		if (c->rank == 2 && c->shape[0] != 1)
			in_ax[2] = 0;
	}
	return 1;
}

const struct op_def op_def_GEMM = {
	.infer = gemm_infer, .run_f32 = gemm_f32, .lower = gemm_lower, .run_tpu = gemm_tpu,
	.macs = gemm_macs, .split_axis = gemm_split_axis,
};

/* Rows along H (axis 2 of an output of rank 4 or more: the rows M of A at
 * rank 4, a batch axis above) are independent when A has the output's
 * rank.  At rank 4, B is read whole (codegen: cg_input_sliced). */
static void matmul_slice_h(const struct ir_graph *g, const struct ir_op *op,
			   int oh0, int oh1, int *ih0, int *ih1)
{
	const struct ir_tensor *a = &g->tensors[op->in[0]], *y = &g->tensors[op->out[0]];
	int ok = y->rank >= 4 && a->rank == y->rank && a->shape[2] == y->shape[2];
	*ih0 = ok ? oh0 : -1;
	*ih1 = ok ? oh1 : 0;
}

/* MatMul in parts of a batch axis (A and B as they broadcast) or of the
 * rows M (A's; B whole).  Parts of the columns N: lib/back/lower_fit.c.
 * The int8 parameters (inputs 2 to 4, per column or one) are read whole. */
static int matmul_split_axis(const struct ir_graph *g, const struct ir_op *op, int ax, int *in_ax)
{
	const struct ir_tensor *y = &g->tensors[op->out[0]];
	int r = y->rank;
	if (op->n_in < 2 || op->in[1] < 0 || ax >= r - 1)
		return 0;
	for (int j = 0; j < op->n_in; j++) {
		in_ax[j] = -1;
		if (j > 1 || op->in[j] < 0)
			continue;
		const struct ir_tensor *x = &g->tensors[op->in[j]];
		if (x->rank < 2)
			return 0;
		int a = ax - (r - x->rank);
		if (ax == r - 2)
			in_ax[j] = j == 0 ? a : -1;
		else if (a >= 0 && x->shape[a] != 1)
			in_ax[j] = a;
	}
	return 1;
}

const struct op_def op_def_MATMUL = {
	.run_f32 = matmul_f32,
	.lower = matmul_lower,
	.run_tpu = matmul_tpu,
	.infer = matmul_infer,
	.macs = matmul_macs,
	.slice_h = matmul_slice_h,
	.split_axis = matmul_split_axis,
};
