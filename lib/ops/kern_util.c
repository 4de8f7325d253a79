/* kern_util.c - row windows and broadcasting for the reference kernels. */
#include "ops/kern_util.h"

#include <math.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "ir/base.h"
#include "ir/op.h"

int kern_window_rows(const struct kern *k, int kh, int sh, int dh, int pt,
		     struct kern_rows *r)
{
	const struct view *x = &k->in[0], *y = &k->out[0];
	int64_t ih = x->shape[2], oh = y->shape[2];
	int64_t full = k->in_full_h > 0 ? k->in_full_h : k->in_row0 + ih;
	int64_t first = (int64_t)k->out_row0 * sh - pt;
	int64_t last = (int64_t)(k->out_row0 + oh - 1) * sh - pt + (int64_t)(kh - 1) * dh + 1;
	int64_t lo = first < 0 ? 0 : first, hi = last > full ? full : last;
	if (oh <= 0) {
		*r = (struct kern_rows){ 0, 0, 0, 0, full };
		return 0;
	}
	if (hi <= lo)
		return op_error(k->op, "output rows %d to %lld read padding only",
				k->out_row0, (long long)(k->out_row0 + oh - 1));
	if (lo < k->in_row0 || hi > k->in_row0 + ih)
		return op_error(k->op, "output rows %d to %lld need input rows %lld to %lld, "
				"the slice holds %d to %lld", k->out_row0,
				(long long)(k->out_row0 + oh - 1), (long long)lo,
				(long long)hi - 1, k->in_row0, (long long)(k->in_row0 + ih - 1));
	r->first = lo - k->in_row0;
	r->n = hi - lo;
	r->pt = (int)(lo - first);
	r->pb = (int)(last - hi);
	r->full_h = full;
	return 0;
}

int kern_window(struct kern *k, int f32, struct spatial *s, struct kern_rows *r)
{
	if ((f32 && kern_need_f32(k) < 0) || spatial_get(k->g, k->op, s) < 0)
		return -1;
	return kern_window_rows(k, s->kh, s->sh, s->dh, s->pt, r);
}

void kern_bcast_strides(const struct view *v, int rank, const int64_t *shape,
			int64_t *stride)
{
	int64_t s = 1;
	int off = rank - v->rank;
	for (int i = rank - 1; i >= 0; i--) {
		int64_t d = i < off ? 1 : v->shape[i - off];
		stride[i] = d == 1 && shape[i] != 1 ? 0 : s;
		s *= d;
	}
}

int kern_bcast_rows(const struct view *a, const struct view *b, const struct view *y,
		    int64_t *shape, int64_t *sa, int64_t *sb)
{
	int r = y->rank > 0 ? y->rank : 1;
	kern_bcast_strides(a, y->rank, y->shape, sa);
	kern_bcast_strides(b, y->rank, y->shape, sb);
	for (int d = 0; d < y->rank; d++)
		shape[d] = y->shape[d];
	if (y->rank == 0)
		shape[0] = 1, sa[0] = sb[0] = 0;
	while (r > 1 && (sa[r - 2] == sa[r - 1] * shape[r - 1] || (!sa[r - 2] && !sa[r - 1])) &&
	       (sb[r - 2] == sb[r - 1] * shape[r - 1] || (!sb[r - 2] && !sb[r - 1]))) {
		shape[r - 2] *= shape[r - 1];
		sa[r - 2] = sa[r - 1];
		sb[r - 2] = sb[r - 1];
		r--;
	}
	return r;
}

int kern_is_const(const struct kern *k, int i)
{
	if (i >= k->op->n_in || k->op->in[i] < 0 || !k->in[i].data)
		return 0;
	return k->g->tensors[k->op->in[i]].data == k->in[i].data;
}

int kern_need_f32(const struct kern *k)
{
	for (int i = 0; i < k->n_in; i++)
		if (k->in[i].data && k->in[i].dtype != DT_F32)
			return op_error(k->op, "float kernel given %s input %d",
					dtype_name(k->in[i].dtype), i);
	for (int i = 0; i < k->n_out; i++)
		if (k->out[i].dtype != DT_F32)
			return op_error(k->op, "float kernel given %s output %d",
					dtype_name(k->out[i].dtype), i);
	return 0;
}

int kern_threads(const struct kern *k, int64_t n, int64_t work)
{
	int t = k->nthreads > 0 ? k->nthreads : 1;
	if (n < 2 || n * work < 32768)
		return 1;
	return n < t ? (int)n : t;
}

void kern_act_bounds(const struct ir_op *op, float *lo, float *hi)
{
	*lo = -INFINITY;
	*hi = INFINITY;
	if (!op_int(op, "do_relu", 0))
		return;
	double lim = op_float(op, "relu_limit", 0);
	*lo = 0;
	if (lim > 0)
		*hi = (float)lim;
}

void kern_clamp(const struct kern *k, float *y, const float *x, int64_t n, float lo, float hi)
{
	int nt = kern_threads(k, n / 4096, 4096);

	#pragma omp parallel for simd num_threads(nt) schedule(static)
	for (int64_t i = 0; i < n; i++)
		y[i] = x[i] < lo ? lo : x[i] > hi ? hi : x[i];
}

int kern_channel_affine(const struct kern *k, const float *a, const float *b)
{
	const struct view *x = &k->in[0];
	int64_t n = x->shape[0], c = x->shape[1], inner = 1;
	for (int i = 2; i < x->rank; i++)
		inner *= x->shape[i];
	float lo, hi;
	kern_act_bounds(k->op, &lo, &hi);
	const float *xd = x->data;
	float *yd = k->out[0].data;
	int nt = kern_threads(k, n * c, inner);

	#pragma omp parallel for num_threads(nt) schedule(static)
	for (int64_t p = 0; p < n * c; p++) {
		float s = a ? a[p % c] : 1.0f, t = b ? b[p % c] : 0.0f;
		const float *xp = xd + p * inner;
		float *yp = yd + p * inner;
		#pragma omp simd
		for (int64_t i = 0; i < inner; i++) {
			float v = xp[i] * s + t;
			yp[i] = v < lo ? lo : v > hi ? hi : v;
		}
	}
	return 0;
}

void kern_reduce_init(struct kern_reduce *rd, int rank, const int64_t *shape, const int *mask)
{
	int64_t stride[IR_MAX_RANK], s = 1;
	for (int d = rank - 1; d >= 0; d--) {
		stride[d] = s;
		s *= shape[d];
	}
	rd->nr = rd->nk = 0;
	rd->count = rd->nout = 1;
	for (int d = 0; d < rank; d++) {
		if (mask[d]) {
			rd->rs[rd->nr] = stride[d];
			rd->rn[rd->nr++] = shape[d];
			rd->count *= shape[d];
		} else {
			rd->ks[rd->nk] = stride[d];
			rd->kn[rd->nk++] = shape[d];
			rd->nout *= shape[d];
		}
	}
}

int64_t kern_reduce_base(const struct kern_reduce *rd, int64_t o)
{
	int64_t base = 0;
	for (int d = rd->nk - 1; d >= 0; d--) {
		base += (o % rd->kn[d]) * rd->ks[d];
		o /= rd->kn[d];
	}
	return base;
}

#ifdef __SSE2__
/* One 16 x 16 block of kern_transpose8: bytes, then pairs, quads and
 * eights of the rows interleaved in four rounds. */
static void transpose16(const uint8_t *s, int64_t ss, uint8_t *d, int64_t ds)
{
	__m128i a[16], b[16];
	for (int i = 0; i < 16; i++)
		a[i] = _mm_loadu_si128((const __m128i *)(s + i * ss));
	for (int i = 0; i < 8; i++) {
		b[2 * i] = _mm_unpacklo_epi8(a[2 * i], a[2 * i + 1]);
		b[2 * i + 1] = _mm_unpackhi_epi8(a[2 * i], a[2 * i + 1]);
	}
	/* b[4q + h]: rows 4q..4q+3 interleaved (2 of them per b) */
	for (int q = 0; q < 4; q++) {
		__m128i *x = &b[4 * q];
		a[4 * q] = _mm_unpacklo_epi16(x[0], x[2]);
		a[4 * q + 1] = _mm_unpackhi_epi16(x[0], x[2]);
		a[4 * q + 2] = _mm_unpacklo_epi16(x[1], x[3]);
		a[4 * q + 3] = _mm_unpackhi_epi16(x[1], x[3]);
	}
	/* a[4q + k]: rows 4q..4q+3, columns 4k..4k+3 */
	for (int h = 0; h < 2; h++)
		for (int k = 0; k < 4; k++) {
			b[8 * h + 2 * k] = _mm_unpacklo_epi32(a[8 * h + k], a[8 * h + 4 + k]);
			b[8 * h + 2 * k + 1] = _mm_unpackhi_epi32(a[8 * h + k], a[8 * h + 4 + k]);
		}
	/* b[8h + m]: rows 8h..8h+7, columns 2m and 2m+1 */
	for (int m = 0; m < 8; m++) {
		_mm_storeu_si128((__m128i *)(d + 2 * m * ds), _mm_unpacklo_epi64(b[m], b[8 + m]));
		_mm_storeu_si128((__m128i *)(d + (2 * m + 1) * ds), _mm_unpackhi_epi64(b[m], b[8 + m]));
	}
}
#endif

void kern_transpose8(const void *src, int64_t rows, int64_t cols, int64_t src_stride,
		     void *dst, int64_t dst_stride)
{
	const uint8_t *s = src;
	uint8_t *d = dst;
	int64_t r0 = 0, c0 = 0;
#ifdef __SSE2__
	r0 = rows / 16 * 16;
	c0 = cols / 16 * 16;
	for (int64_t r = 0; r < r0; r += 16)
		for (int64_t c = 0; c < c0; c += 16)
			transpose16(s + r * src_stride + c, src_stride, d + c * dst_stride + r,
				    dst_stride);
#endif
	/* the edges: the last rows (all columns), the last columns */
	for (int64_t r = r0; r < rows; r++)
		for (int64_t c = 0; c < cols; c++)
			d[c * dst_stride + r] = s[r * src_stride + c];
	for (int64_t c = c0; c < cols; c++)
		for (int64_t r = 0; r < r0; r++)
			d[c * dst_stride + r] = s[r * src_stride + c];
}
