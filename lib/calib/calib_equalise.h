/* calib_equalise.h - cross-layer equalisation (Nagel et al., "Data-Free
 * Quantization", 2019) of Conv pairs, from the per-channel peaks measured
 * on samples (top-opt --equalise), so that per-tensor int8 gives the
 * channels between them about the same number of levels.
 *
 * A Conv A whose output x is no graph output and is read only by Convs
 * (as their input 0, directly or through a Pad by 0 of the spatial axes),
 * with at most a ReLU fused (positively homogeneous; not a clipped one),
 * becomes A with output channel c scaled by k[c], and each reading Conv
 * with the weights over its input channel c divided by k[c]: the same
 * function in float, exactly (k[c] is a power of two).  k[c] is the
 * largest peak over channel c's, when the readers are depthwise (each
 * channel's weights quantised alone, so scaling them costs nothing); when
 * a reader mixes channels, the geometric mean of that and of the largest
 * column's reach over channel c's (each row relative to its largest), so
 * that the channel's activation and weights lose alike, as the paper
 * balances them.
 *
 * Not through a HardSwish: measured (issue 12) as x * a per-channel gate
 * (Scale clipped to [0, 1], Mul), the gate's and the Mul's rounding cost
 * a PP-OCRv4 recogniser more than the balance gained.
 */
#ifndef TPUC_CALIB_EQUALISE_H
#define TPUC_CALIB_EQUALISE_H

#include <stdint.h>

#include "ir/ir.h"
#include "ir/npz.h"

/* Samples the peaks are measured on (fewer when the archive has fewer). */
#define CALIB_EQ_SAMPLES 8
/* A Conv is rewritten when some channel's k reaches this. */
#define CALIB_EQ_MIN_GAIN 2.0
/* k is at most this (a channel near zero on every sample). */
#define CALIB_EQ_MAX_GAIN 64.0

/* Rewrite every Conv of G that qualifies, its peaks measured on the
 * first CALIB_EQ_SAMPLES samples of SAMPLES (first axis: samples; FILE
 * names it in messages).  *REWRITES: how many.  0, or -1 with a message. */
int calib_equalise(struct ir_graph *g, const struct npz *samples, const char *file,
		   int nthreads, int *rewrites);

#endif
