/* lower_compose.h - a linear Conv and the 1x1 Conv that alone reads it as
 * one Conv, where the chip's cube runs the one faster
 * (lib/back/lower_compose.c). */
#ifndef TPUC_LOWER_COMPOSE_H
#define TPUC_LOWER_COMPOSE_H

#include "chip/chip.h"
#include "ir/ir.h"

/* In a copy of TOP (*out; NULL when none is made), each Conv of one group
 * without activation whose output only a 1x1 Conv of one group, stride 1
 * and no padding reads, both in mode M (neither with KEEP[op] set, when
 * KEEP is given: the ops a qtable names), is folded
 * into that Conv when chip C's cube, reducing K in tiles of
 * cube_macs / lanes, and its DDR time the weights at M's size faster so.
 * Nothing in F32 mode.  Returns the pairs composed. */
int lower_compose(const struct ir_graph *top, const struct chip *c, enum ir_mode m,
		  const char *keep, struct ir_graph **out);

#endif
