/* layergroup.h - layer grouping: which consecutive ops run together from
 * local memory (stage grouped).
 *
 * A group is a run of consecutive ops (in graph order) sharing one group id
 * in ir_op.group.  A group placed PLACE_GLOBAL is one op: it loads its
 * inputs from DDR and stores its outputs back (codegen slices it along H to
 * fit local memory).  A group placed PLACE_LOCAL keeps its intermediate
 * activations in local memory: slice by slice along H of its last op's
 * output (or in one step over whole tensors when one of its ops cannot be
 * sliced), only the group's inputs are loaded and the last op's output
 * stored.  Only the last op's output may be used after a local group.
 */
#ifndef TPUC_LAYERGROUP_H
#define TPUC_LAYERGROUP_H

#include "back/groups.h"
#include "chip/chip.h"
#include "ir/ir.h"

/* Assign every op of G (dialect tpu, stage reordered) to a group for chip C
 * and set the stage to grouped.  The cut into runs of up to MAX_OPS
 * consecutive ops is searched with codegen's cost model
 * (codegen_runs_cycles): an interval dynamic program, each run timed after
 * the run that ends the best cut before it; the greedy cut (from each op,
 * the run saving the most cycles against its ops one by one); the faster
 * refined by merging neighbouring runs or moving their boundary while the
 * whole gets faster; all this twice, with every schedule codegen chooses
 * from and with its plain schedule alone (codegen_plain_schedule), and the
 * cut faster with every schedule kept.  A run of one op is placed
 * PLACE_GLOBAL, a longer run
 * PLACE_LOCAL.  MAX_OPS 1 gives every op its own group.  Returns 0. */
int layergroup(struct ir_graph *g, const struct chip *c, int max_ops);

#endif
