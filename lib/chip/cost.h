/* cost.h - the chip's cost model (formats/tpuc-isa.5), shared by the back
 * end (lib/back/codegen*.c) and the simulator (lib/sim/sim.c).
 */
#ifndef TPUC_COST_H
#define TPUC_COST_H

#include <stdint.h>

#include "chip/chip.h"
#include "chip/isa.h"
#include "ir/ir.h"

/* Cycles until both streams finish, by the cost model, without running the
 * kernels (the schedule of sim_run); -1 with a message when the streams
 * wait for each other forever. */
int64_t cost_time(const struct chip *c, const struct ir_graph *g, const struct isa_dma *dma,
		 int n_dma, const struct isa_cmp *cmp, int n_cmp);

/* Cycles of one command by the cost model. */
int64_t cost_dma_cycles(const struct chip *c, const struct isa_dma *d);
int64_t cost_cmp_cycles(const struct chip *c, const struct ir_graph *g, const struct isa_cmp *k);

#endif
