/* lower_share.h - one int8 scale for a Concat and the inputs it only
 * copies (lib/back/lower_share.c).
 */
#ifndef TPUC_LOWER_SHARE_H
#define TPUC_LOWER_SHARE_H

#include "back/lower.h"
#include "quant/calib_table.h"

/* Int8 inputs read by other ops too take the Concat's scale only when the
 * two steps (scale per code) differ by at most this ratio. */
#define LOWER_SHARE_RATIO 2.0

/* A copy of LC's table in which the activations int8 Concats join take
 * their Concat's entry (threshold, min and max, so the same dtype, scale
 * and zero point), so that their producers requantise straight to the
 * Concat's scale and the Concat becomes a copy addr-assign puts in place.
 * The Concats are visited last first, so a chain of Concats (nest-concat's
 * DenseNet blocks) shares the last one's scale.  An input is left alone
 * when it is a weight, a graph input or output, carries the model's own
 * quantisation, has no entry, already took a later Concat's, or is read
 * by another op and its step would change by more than LOWER_SHARE_RATIO
 * (it alone feeds the Concat: one rounding to the Concat's step instead
 * of two, never worse); so is every input of a Concat whose ranges lie
 * apart (lower_ranges_apart: it runs in float).  NULL when nothing is
 * shared; the caller frees the copy with calib_table_free. */
struct calib_table *lower_share_concat(const struct lower_ctx *lc);

#endif
