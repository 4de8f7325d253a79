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

#endif
