/* lower_depth.h - 3-D Convs as 2-D Convs over depth windows, on tensors
 * stored depth-major (lib/back/lower_depth.c). */
#ifndef TPUC_LOWER_DEPTH_H
#define TPUC_LOWER_DEPTH_H

#include "ir/ir.h"
#include "quant/calib_table.h"

/* In a copy of TOP (*out; NULL when none is made), every 3-D Conv of one
 * group with constant f32 weights runs as one 2-D Conv per output depth
 * plane over the window of input planes it reads, on tensors held as
 * [N, D*C, H, W] (depth-major: each plane's channels together), so that a
 * window is a Slice of whole channels and the planes' results a Concat of
 * whole channels, both copies addr-assign puts in place; the elementwise
 * ops and the Reshapes between [N, C, D, H, W] and [N, C*D, H, W] that
 * read those tensors run on them too, and Transposes convert at the edges.
 * A Reshape with KEEP[op] set (given: the ops a qtable names) stays.
 * TAB (may be NULL): *tab_out is a copy of it with an entry for each new
 * activation, the one of the tensor whose values it holds (NULL when no
 * copy is made; the caller frees it).  Returns the Convs rewritten. */
int lower_depth(const struct ir_graph *top, const char *keep, const struct calib_table *tab,
		struct ir_graph **out, struct calib_table **tab_out);

#endif
