/* calib_equalise.h - balance the channels of the activations around a
 * HardSwish (top-opt --equalise), from the per-channel peaks measured on
 * samples, so that per-tensor int8 quantisation gives every channel about
 * the same number of levels.
 *
 * A Conv A whose output x only a HardSwish reads, whose output y only
 * Convs read (directly, or through a constant Pad into a Conv that pads
 * nothing itself), becomes, with k[c] = max peak / peak[c] of x's
 * channels (>= 1):
 *
 *   A' = A with output channel c scaled by k[c]       x' = k x
 *   g  = Scale(x', 1 / (6 k), 0.5) clipped to [0, 1]  (do_relu, limit 1)
 *   y' = Mul(x', g) = k * HardSwish(x)
 *   each reader Conv: input channel c's weights / k[c]
 *   a Pad by q before a reader: Scale(y', 1, -k q), a Pad by 0, and the
 *   Conv's bias + q * sum of its weights
 *
 * which is the same function in float (up to rounding), and x' and y' have
 * channels of about equal peaks where x and y had them 2-17 times apart
 * (a trained PP-OCRv4 recogniser).  HardSwish is not positively
 * homogeneous, so the scale cannot move through it as cross-layer
 * equalisation moves one through a ReLU; written as x times a gate, the
 * gate takes the scale back per channel (the Scale's per-channel
 * requantisation) and the product keeps it.
 *
 * A Conv whose output Convs read (directly or through such a Pad), with
 * no HardSwish between, is balanced the same way without the gate: the
 * classic cross-layer equalisation, exact through a fused ReLU (k > 0)
 * but not a clipped one (ReLU6).  With a Pad by q, the peaks are those of
 * x and of y - q, the tensor the Pad then reads.
 */
#ifndef TPUC_CALIB_EQUALISE_H
#define TPUC_CALIB_EQUALISE_H

#include <stdint.h>

#include "ir/ir.h"
#include "ir/npz.h"

/* Samples the peaks are measured on (fewer when the archive has fewer). */
#define CALIB_EQ_SAMPLES 8
/* A site is rewritten when some channel's k reaches this. */
#define CALIB_EQ_MIN_GAIN 2.0
/* k is at most this (a channel near zero on every sample). */
#define CALIB_EQ_MAX_GAIN 64.0

/* Rewrite every Conv of G that qualifies, its peaks measured on the
 * first CALIB_EQ_SAMPLES samples of SAMPLES (first axis: samples; FILE
 * names it in messages).  *REWRITES: how many.  0, or -1 with a message. */
int calib_equalise(struct ir_graph *g, const struct npz *samples, const char *file,
		   int nthreads, int *rewrites);

#endif
