/* codegen_group.h - code generation of a local layer group, all its ops
 * per slice (lib/back/codegen_group.c).
 */
#ifndef TPUC_CODEGEN_GROUP_H
#define TPUC_CODEGEN_GROUP_H

#include <stdint.h>

#include "back/codegen_util.h"
#include "chip/isa.h"

/* ---- local layer groups (codegen_group.c) ---- */
struct group;
/* The group of ops [first, first + n) of cg->g, or NULL with a message
 * when they cannot form one. */
struct group *cg_group_new(const struct gen *cg, int first, int n);
void cg_group_free(struct group *G);
/* Choose the slice count the cost model times fastest among those that
 * fit (of those within LG_SLACK_PCT of it, the one needing the least local
 * memory, unless cg->fastest); *cycles gets its time.  -2 with a message when none fits, -1 on
 * other errors. */
int cg_group_choose(struct gen *cg, struct group *G, int64_t *cycles);
/* Whether all of G's weights are loaded. */
int cg_group_weights_loaded(const struct group *G);
/* The tensor of G's weight i (-1 past the last); *state 0 when none of it
 * is loaded, 1 when some channels are, 2 when all are. */
int cg_group_weight(const struct group *G, int i, int *state);
/* The local address of G's weight i. */
int64_t cg_group_weight_at(const struct group *G, int i);
/* Load (the rest of) G's weight i, at local address addr when addr >= 0
 * (outside G's region: a weight loaded ahead of its group, see codegen.c;
 * when some of it is loaded there), else where it is; the first command waits for `wait`; within *budget as
 * cg_load_whole.  Returns what cg_load_whole does. */
int cg_group_load_weight(struct gen *cg, struct group *G, int i, int64_t addr, uint32_t wait,
			 int64_t *budget);
/* G's weight i is read at local address addr, where an earlier unit
 * loaded the same bytes that stay there (codegen.c's kept weights): it
 * loads no more. */
void cg_group_weight_kept(struct group *G, int i, int64_t addr);
/* Bytes per lane of the chosen plan. */
int64_t cg_group_need(const struct group *G);
/* Local addresses from base (mirrored when high, see cg_place): the
 * weights, in the order their ops first read them, the broadcast inputs,
 * the region of the results kept local, the buffers of the inputs and
 * stored results; with acts_first the other way round, the weights
 * towards the far end. */
void cg_group_lay_out(const struct gen *cg, struct group *G, int64_t base, int high,
		      int acts_first);
/* Weights of ops up to op `upto`, then broadcast inputs, not loaded yet
 * (only_before, budget and avoid as for cg_op_load); wready, when not NULL, gets
 * per op the last DMA command loading its weights. */
int cg_group_load(struct gen *cg, struct group *G, uint32_t wait, int only_before, int upto,
		  uint32_t *wready, int64_t *budget, const int64_t *avoid);
/* Generate G; the first load waits for `wait`; pf's inputs load while it
 * computes; *last_cmp gets its last compute command. */
int cg_group_gen(struct gen *cg, struct group *G, uint32_t wait, struct prefetch *pf,
		 uint32_t *last_cmp);

/* Whether B, the local group right after A, reads A's result where A
 * leaves it: both run in one slice, B reads the result whole (a broadcast
 * input not loaded yet, or every row along H), and A's copy lies outside
 * B's region, bytes [b_base, b_base + B's need).  Then B does not load it but
 * reads A's copy, A does not store it when nothing after B reads it and
 * it is no graph output, and *lo, *hi get that copy's bytes; else 0 and
 * neither changes.  Call after both are laid out. */
int cg_group_hand_over(const struct gen *cg, struct group *A, struct group *B, int64_t b_base,
		       int64_t *lo, int64_t *hi);

/* Load rows of t, a tensor G reads whole (lane shape N = 1) that the unit
 * before G stores in slices and has stored up to row `rows`: those after
 * the ones loaded so far that `budget` DMA cycles move, into G's copy
 * unless it lies in avoid's [avoid[0], avoid[1]); G then loads the rest.
 * The first load waits for *wait (then 0).  1 when some loaded, 0 when
 * none, -1 on errors. */
int cg_group_load_rows(struct gen *cg, struct group *G, int t, int rows, uint32_t *wait,
		       int64_t budget, const int64_t *avoid);

/* cx's index of the last op reading each tensor, so that planning every
 * run of ops stays linear in the graph, and its memo of each run's slicing
 * once cg_group_choose chose it (layergroup times a run many times beside
 * different neighbours), empty; _fini frees both.  Without a context, each
 * run scans the ops after it and is planned afresh. */
void cg_group_ctx_init(struct codegen_ctx *cx);
void cg_group_ctx_fini(struct codegen_ctx *cx);

#endif
