/* groups.h - the layer groups a grouped graph holds (stage grouped): the
 * runs of consecutive ops sharing ir_op.group, as layergroup set them and
 * codegen reads them.  The grouping itself is lib/back/layergroup.h.
 */
#ifndef TPUC_GROUPS_H
#define TPUC_GROUPS_H

#include "ir/ir.h"

struct lg_group {
	int first;            /* index of the group's first op */
	int n_ops;            /* consecutive ops in the group */
	enum placement place; /* PLACE_GLOBAL or PLACE_LOCAL */
};

/* The groups of a grouped graph, in order: *out (malloc'd, caller frees)
 * gets *n groups.  -1 with a message when ops lack a group, group ids are
 * not consecutive runs, or ops of one group disagree on their placement. */
int lg_groups(const struct ir_graph *g, struct lg_group **out, int *n);

/* A tensor a local group (or a global op) loads straight from the source
 * of the copy that made it (a Slice, Gather, Split... whose one piece
 * fills its result), so that the copy need not run: element (n, c, h, w) of its lane shape
 * lies at element at + n * ns + c * cs + h * W + w of tensor src. */
struct lg_fwd {
	int copy;             /* op index of the copy, -1: the tensor loads itself */
	int src;              /* tensor the group loads in its place */
	int64_t at;           /* elements from src's start to element 0 */
	int64_t cs, ns;       /* elements between channels, between batch items */
};

/* Per tensor of a grouped graph (malloc'd, n_tensors entries), what
 * lg_fwd says.  A tensor forwards when every reader of it lies in one
 * local group of two ops or more, or is one global op that is no copy
 * (rows along H, not a Transpose's), it is no graph output, and it is the copy's result or a view of it (a copy of
 * one whole contiguous piece), each tensor of that chain read once; the
 * copy runs alone in global memory, its source lies in DDR, and its runs
 * fall on whole rows of the lane shape.  addr-assign keeps the source
 * alive through the group; codegen loads from it and generates no command
 * for the copy. */
struct lg_fwd *lg_forwards(const struct ir_graph *g);

#endif
