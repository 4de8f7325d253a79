/* requant.h - the requantisation parameters stored as weights of a Tpu
 * graph's ops checked before any kernel uses them: multipliers not
 * negative, shifts in [0, QUANT_MAX_SHIFT], the range the kernels'
 * rounding takes (formats/tpuc-quant.5), as tmodel_check_requant checks a
 * .tmodel's.  A mutated IR file once drove ir-run into shifts by 869,683,890
 * bits. */
#ifndef TPUC_CHIP_REQUANT_H
#define TPUC_CHIP_REQUANT_H

#include "ir/ir.h"

/* 0 (also for a Top graph), or -1 with a message naming the layer and
 * the channel. */
int requant_check_graph(const struct ir_graph *g);

#endif
