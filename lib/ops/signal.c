/* signal.c - the audio front-end operators of ONNX opset 17, for ir-run
 * (the chip has none of them: no lower hook, top2tpu refuses them by name):
 *
 *   HannWindow, HammingWindow, BlackmanWindow  no inputs; attributes size,
 *       periodic (1: the window of size + 1 points without its last),
 *       dtype (the output's).  w[n] = a0 - a1 cos(2 pi n / N) + a2 cos(4 pi n / N)
 *       with N = size (periodic) or size - 1.
 *   MelWeightMatrix  no inputs; attributes num_mel_bins, dft_length,
 *       sample_rate, lower_edge_hertz, upper_edge_hertz, dtype: the
 *       triangular filter bank [dft_length / 2 + 1, num_mel_bins] as ONNX's
 *       reference builds it (bins rounded down to DFT points).
 *   DFT  x [batch, ..., 1 or 2] (real, or complex as [re, im]); attributes
 *       axis (a signal axis), inverse, onesided, dft_length (the signal
 *       cropped or zero-padded to it): y [..., dft_length (or / 2 + 1), 2].
 *   STFT  signal [batch, length, 1 or 2], optional window [frame_length];
 *       attributes frame_step, frame_length, onesided: y [batch, frames,
 *       bins, 2], frames = (length - frame_length) / frame_step + 1.
 *
 * The importer (lib/front/import_signal.c) turns the constant inputs into
 * these attributes; a window and an mel matrix then fold into constants.
 * Sums in double, as ONNX Runtime's reference DFT is exact to rounding.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ir/base.h"
#include "ir/convert.h"
#include "ir/op.h"

/* The output dtype named by attribute "dtype" (default f32): a float or
 * an integer. */
static int out_dtype(struct ir_op *op, enum ir_dtype *dt)
{
	int d = dtype_from_name(op_str(op, "dtype", "f32"));
	if (d < 0 || d == DT_BOOL)
		return op_error(op, "attribute 'dtype' names no numeric dtype");
	*dt = (enum ir_dtype)d;
	return 0;
}

/* ---- window functions ---- */

static int window_infer(struct ir_graph *g, struct ir_op *op)
{
	enum ir_dtype dt = DT_F32;
	if (op_check_arity(g, op, 0, 1) < 0 || out_dtype(op, &dt) < 0)
		return -1;
	int64_t n = 0;
	int got = op_param_ints(g, NULL, op, 0, "size", &n, 1);   /* -2: size at run time */
	if (got == -1)
		return -1;
	if (got == -2)
		n = 1;
	if (n < 1 || n > ((int64_t)1 << 30))
		return op_error(op, "size %lld is out of range [1, 2^30]", (long long)n);
	op_set_out(g, op, 0, dt, 1, &n);
	if (got == -2)
		op_set_dyn(g, op, 0, 1);
	return 0;
}

static int window_run(struct kern *k)
{
	const struct view *y = &k->out[0];
	int64_t n = y->shape[0];
	double a0 = 0.5, a1 = 0.5, a2 = 0;
	if (k->op->type == OP_HAMMINGWINDOW)
		a0 = 25.0 / 46, a1 = 21.0 / 46;
	else if (k->op->type == OP_BLACKMANWINDOW)
		a0 = 0.42, a1 = 0.5, a2 = 0.08;
	double den = op_int(k->op, "periodic", 1) ? (double)n : (double)(n - 1);
	for (int64_t i = 0; i < n; i++) {
		double t = den > 0 ? 2 * M_PI * (double)i / den : 0;
		dtype_set(y->data, y->dtype, i, a0 - a1 * cos(t) + a2 * cos(2 * t));
	}
	return 0;
}

/* ---- MelWeightMatrix ---- */

static int mel_infer(struct ir_graph *g, struct ir_op *op)
{
	enum ir_dtype dt = DT_F32;
	if (op_check_arity(g, op, 0, 0) < 0 || out_dtype(op, &dt) < 0)
		return -1;
	int64_t bins = op_int(op, "num_mel_bins", 0), len = op_int(op, "dft_length", 0);
	int64_t rate = op_int(op, "sample_rate", 0);
	double lo = op_float(op, "lower_edge_hertz", 0), hi = op_float(op, "upper_edge_hertz", 0);
	if (bins < 1 || bins > (1 << 20) || len < 1 || len > (1 << 24) || rate < 1 ||
	    !(lo >= 0 && lo <= hi && hi < 1e9))
		return op_error(op, "num_mel_bins, dft_length, sample_rate or the edges out of range");
	int64_t shape[2] = { len / 2 + 1, bins };
	op_set_out(g, op, 0, dt, 2, shape);
	return 0;
}

static int mel_run(struct kern *k)
{
	const struct view *y = &k->out[0];
	int64_t bins = y->shape[1], spec = y->shape[0], len = op_int(k->op, "dft_length", 0);
	int64_t rate = op_int(k->op, "sample_rate", 1);
	double lo = 2595 * log10(1 + op_float(k->op, "lower_edge_hertz", 0) / 700);
	double hi = 2595 * log10(1 + op_float(k->op, "upper_edge_hertz", 0) / 700);
	double step = (hi - lo) / (double)(bins + 2);
	int64_t *f = xmalloc(sizeof *f * (size_t)(bins + 2));
	for (int64_t i = 0; i < bins + 2; i++) {
		double hz = 700 * (pow(10, ((double)i * step + lo) / 2595) - 1);
		f[i] = (int64_t)floor((double)(len + 1) * hz / (double)rate);
	}
	double *w = xcalloc((size_t)(spec * bins), sizeof *w);
	for (int64_t i = 0; i < bins; i++) {
		int64_t l = f[i], c = f[i + 1], h = f[i + 2];
		if (c == l) {
			if (c >= 0 && c < spec)
				w[c * bins + i] = 1;
		} else {
			for (int64_t j = l; j <= c; j++)
				if (j >= 0 && j < spec)
					w[j * bins + i] = (double)(j - l) / (double)(c - l);
		}
		for (int64_t j = c; j < h; j++)
			if (j >= 0 && j < spec)
				w[j * bins + i] = (double)(h - j) / (double)(h - c);
	}
	for (int64_t i = 0; i < spec * bins; i++)
		dtype_set(y->data, y->dtype, i, w[i]);
	free(w);
	free(f);
	return 0;
}

/* ---- DFT and STFT ---- */

/* One transform of n points (m of them read, the rest zero) of a complex
 * (cpx) or real signal at x with stride xs (in [re, im] pairs or reals),
 * giving bins points at y (pairs, stride ys): X[k] = sum x[t] e^(-+2 pi i k t / n),
 * divided by n when inverse.  win, when given, multiplies x[t]. */
static void dft1(const struct view *xv, int64_t x0, int64_t xs, int cpx, int64_t m,
		 const struct view *wv, const struct view *yv, int64_t y0, int64_t ys,
		 int64_t n, int64_t bins, int inverse)
{
	double sgn = inverse ? 1 : -1;
	for (int64_t kk = 0; kk < bins; kk++) {
		double re = 0, im = 0;
		for (int64_t t = 0; t < m && t < n; t++) {
			int64_t at = x0 + t * xs;
			double a = dtype_get(xv->data, xv->dtype, cpx ? 2 * at : at);
			double b = cpx ? dtype_get(xv->data, xv->dtype, 2 * at + 1) : 0;
			if (wv) {
				double w = dtype_get(wv->data, wv->dtype, t);
				a *= w;
				b *= w;
			}
			double ang = sgn * 2 * M_PI * (double)((kk * t) % n) / (double)n;
			double c = cos(ang), s = sin(ang);
			re += a * c - b * s;
			im += a * s + b * c;
		}
		if (inverse) {
			re /= (double)n;
			im /= (double)n;
		}
		dtype_set(yv->data, yv->dtype, 2 * (y0 + kk * ys), re);
		dtype_set(yv->data, yv->dtype, 2 * (y0 + kk * ys) + 1, im);
	}
}

static int dft_infer(struct ir_graph *g, struct ir_op *op)
{
	if (op_check_arity(g, op, 1, 1) < 0)
		return -1;
	const struct ir_tensor *x = op_in(g, op, 0);
	if (x->rank < 3 || (x->shape[x->rank - 1] != 1 && x->shape[x->rank - 1] != 2))
		return op_error(op, "input needs rank 3 or more and a last axis of 1 (real) or 2");
	if (!dtype_is_float(x->dtype))
		return op_error(op, "dtype %s is not supported", dtype_name(x->dtype));
	int64_t axis = op_int(op, "axis", 1);
	if (axis < 0)
		axis += x->rank;
	if (axis < 1 || axis > x->rank - 2)
		return op_error(op, "axis %lld is not a signal axis", (long long)op_int(op, "axis", 1));
	int64_t n = op_int(op, "dft_length", x->shape[axis]);
	int onesided = (int)op_int(op, "onesided", 0), inverse = (int)op_int(op, "inverse", 0);
	if (n < 1 || n > (1 << 24))
		return op_error(op, "dft_length %lld is out of range", (long long)n);
	if (onesided && inverse)
		return op_error(op, "onesided and inverse together are not supported");
	int64_t shape[IR_MAX_RANK];
	memcpy(shape, x->shape, sizeof(int64_t) * (size_t)x->rank);
	shape[axis] = onesided ? n / 2 + 1 : n;
	shape[x->rank - 1] = 2;
	op_set_out(g, op, 0, x->dtype, x->rank, shape);
	return 0;
}

static int dft_run(struct kern *k)
{
	const struct view *x = &k->in[0], *y = &k->out[0];
	int r = x->rank, cpx = x->shape[r - 1] == 2;
	int64_t axis = op_int(k->op, "axis", 1);
	if (axis < 0)
		axis += r;
	int64_t m = x->shape[axis], n = op_int(k->op, "dft_length", m), bins = y->shape[axis];
	int64_t inner = 1, outer = 1;
	for (int d = (int)axis + 1; d < r - 1; d++)
		inner *= x->shape[d];
	for (int d = 0; d < axis; d++)
		outer *= x->shape[d];
	for (int64_t o = 0; o < outer; o++)
		for (int64_t i = 0; i < inner; i++)
			dft1(x, o * m * inner + i, inner, cpx, m, NULL, y, o * bins * inner + i, inner,
			     n, bins, (int)op_int(k->op, "inverse", 0));
	return 0;
}

static int stft_infer(struct ir_graph *g, struct ir_op *op)
{
	if (op_check_arity(g, op, 1, 4) < 0)
		return -1;
	const struct ir_tensor *x = op_in(g, op, 0), *w = op_in(g, op, 1);
	if (x->rank != 3 || (x->shape[2] != 1 && x->shape[2] != 2))
		return op_error(op, "signal must be [batch, length, 1 or 2]");
	if (!dtype_is_float(x->dtype) || (w && w->dtype != x->dtype))
		return op_error(op, "dtype %s is not supported", dtype_name(x->dtype));
	/* frame_step and frame_length: attributes, or inputs 2 and 3 (at run
	 * time: the frame count, and the bins without a window, dynamic) */
	int64_t step = 0, len = w && w->rank == 1 ? w->shape[0] : 0;
	int ns = op_param_ints(g, NULL, op, 2, "frame_step", &step, 1);
	int nl = op_param_ints(g, NULL, op, 3, "frame_length", &len, 1);
	if (ns == -1 || nl == -1)
		return -1;
	uint32_t dyn = (ns == -2 || nl == -2 ? 2u : 0) | (nl == -2 ? 4u : 0);
	if (ns == -2)
		step = 1;
	if (nl == -2)
		len = w && w->rank == 1 ? w->shape[0] : 1;
	if (w && (w->rank != 1 || w->shape[0] != len))
		return op_error(op, "window must be [frame_length]");
	if (step < 1 || len < 1 || len > x->shape[1])
		return op_error(op, "frame_step or frame_length out of range");
	int onesided = (int)op_int(op, "onesided", 1);
	int64_t shape[4] = { x->shape[0], (x->shape[1] - len) / step + 1,
			     onesided ? len / 2 + 1 : len, 2 };
	op_set_out(g, op, 0, x->dtype, 4, shape);
	op_set_dyn(g, op, 0, dyn);
	return 0;
}

static int stft_run(struct kern *k)
{
	const struct view *x = &k->in[0], *y = &k->out[0];
	const struct view *w = k->n_in > 1 && k->in[1].data ? &k->in[1] : NULL;
	int64_t step = 1, len = w ? w->shape[0] : y->shape[2];
	if (op_param_ints(k->g, k, k->op, 2, "frame_step", &step, 1) < 0 ||
	    op_param_ints(k->g, k, k->op, 3, "frame_length", &len, 1) < 0)
		return -1;
	int64_t frames = y->shape[1], bins = y->shape[2], l = x->shape[1];
	for (int64_t b = 0; b < x->shape[0]; b++)
		for (int64_t f = 0; f < frames; f++)
			dft1(x, b * l + f * step, 1, x->shape[2] == 2, len, w, y,
			     (b * frames + f) * bins, 1, len, bins, 0);
	return 0;
}

const struct op_def op_def_HANNWINDOW = { .infer = window_infer, .run_f32 = window_run, .run_const = window_run };
const struct op_def op_def_HAMMINGWINDOW = { .infer = window_infer, .run_f32 = window_run, .run_const = window_run };
const struct op_def op_def_BLACKMANWINDOW = { .infer = window_infer, .run_f32 = window_run, .run_const = window_run };
const struct op_def op_def_MELWEIGHTMATRIX = { .infer = mel_infer, .run_f32 = mel_run, .run_const = mel_run };
const struct op_def op_def_DFT = { .infer = dft_infer, .run_f32 = dft_run };
const struct op_def op_def_STFT = { .infer = stft_infer, .run_f32 = stft_run };
