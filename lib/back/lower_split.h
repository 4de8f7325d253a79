/* lower_split.h - the pieces every split of an op into parts is made of
 * (lib/back/lower_split.c): a tensor for a part, the Slice that reads a
 * part of an input, and the Concat that joins the parts.  Used by
 * lower_fit.c, lower_kin.c and lower_wsplit.c. */
#ifndef TPUC_LOWER_SPLIT_H
#define TPUC_LOWER_SPLIT_H

#include "chip/chip.h"
#include "ir/ir.h"

/* Called for each new op k made for op `owner`, placed before it. */
typedef void (*kin_note_fn)(void *ctx, int k, int owner);

/* A new tensor of the given shape named base (made unique), with the
 * dtype, scale and zero point of *like (which may point into g). */
int split_new_tensor(struct ir_graph *g, const char *base, const struct ir_tensor *like, int rank,
		     const int64_t *shape);

/* A new tensor like tensor t but len long along axis (negative: from the
 * end), named "<t>_<tag><at>". */
int split_part_tensor(struct ir_graph *g, int t, int axis, int64_t len, const char *tag, int64_t at);

/* Elements [k0, k1) of tensor x along axis (negative: from the end; the
 * Slice's axes attribute holds it as given): a new tensor "<x>_<tag><k0>"
 * and the Slice op that writes it, passed to note for owner.  Returns the
 * tensor. */
int split_slice(struct ir_graph *g, int x, int axis, int64_t k0, int64_t k1, const char *tag,
		kin_note_fn note, void *ctx, int owner);

/* Op i, with inputs and attributes as they are, over in[0..n) into y,
 * named after y: the op for one part.  Returns the new op. */
int split_part_op(struct ir_graph *g, int i, const int *in, int n, int y);

/* Op i becomes the Concat of parts[0..n) along axis, requantising each
 * part by one (multiplier 2^30, shift 30) when its output is quantised. */
void split_concat(struct ir_graph *g, int i, const int *parts, int n, int64_t axis);

/* A new Concat of parts[0..n) along axis into tensor y, as split_concat;
 * returns the op. */
int split_concat_new(struct ir_graph *g, int y, const int *parts, int n, int64_t axis);

/* Whether op i of g would fit the local memory of chip c
 * (codegen_op_fits) with shape[j] in place of the shape of input j (j <
 * n_in) and of output j - n_in (NULL: as it is; shape NULL: all as they
 * are), ranks unchanged.  An op with more operands than a command takes
 * is judged as lower_split_wide narrows it.  g is not changed: the test
 * runs on a graph of that op alone. */
int split_fits(const struct ir_graph *g, const struct chip *c, int i,
	       const int64_t *const *shape);

#endif
