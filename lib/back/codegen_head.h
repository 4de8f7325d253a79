/* codegen_head.h - a whole local group's first ops in pieces of rows
 * under its input's load (lib/back/codegen_head.c): the plan and its
 * timing; back/codegen_group.c emits it.
 */
#ifndef TPUC_CODEGEN_HEAD_H
#define TPUC_CODEGEN_HEAD_H

#include "back/codegen_util.h"
#include "back/codegen_gten.h"

/* Most row pieces a whole group's head runs in. */
#define HEAD_MAX_PIECES 8
/* Most ops of that head: its pieces overlap the input's load only, which
 * a few ops' computes already cover. */
#define HEAD_MAX_OPS 8

/* One step of a head's pieces, in program order. */
struct head_step {
	int op;                /* HEAD_LOAD: rows [r0, r1) of the input load;
				  HEAD_WEIGHTS: the chain's weights load; else
				  the op computing output rows [r0, r1) */
	int r0, r1;            /* rows */
	int a, e;              /* an op: the input rows [a, e) it reads */
};
enum { HEAD_LOAD = -1, HEAD_WEIGHTS = -2 };

/* The chain of ops that begins G, run whole, that can run in pieces: ops
 * first .. first + m - 1, each reading the one before as its only
 * activation, returns m (see the definition). */
int cg_head_chain(const struct gen *cg, const struct group *G, int *xj, int laid);
/* The steps of the first m ops of the chain in n pieces of rows, the
 * input G's activation xj: *steps (to free) gets them, the count is
 * returned. */
int cg_head_plan(const struct gen *cg, const struct group *G, int m, int xj, int n,
		 struct head_step **steps);
/* The fields of compute command c (its op's, layer set) for step st: the
 * rows, the addresses, the operands sliced with every row held. */
void cg_head_cmd(const struct gen *cg, const struct group *G, const struct head_step *st,
		 struct isa_cmp *c);
/* The ops (*m, at most HEAD_MAX_OPS of the chain's) and pieces (*n) that
 * the cost model times finishing the chain soonest, *n 1 when none beats
 * the chain run after its input's one load. */
void cg_head_choose(const struct gen *cg, const struct group *G, int *m, int xj, int *n);

#endif
