/* codegen_gten.h - a local layer group's plan, shared by the code that
 * generates it (back/codegen_group.c) and the row pieces of a whole
 * group's head (back/codegen_head.c): not for other modules.
 */
#ifndef TPUC_CODEGEN_GTEN_H
#define TPUC_CODEGEN_GTEN_H

#include <stddef.h>
#include <stdint.h>

#include "chip/isa.h"

enum { GT_IN, GT_MID, GT_OUT, GT_BCAST, GT_MIDOUT };

struct gten {
	int t;                 /* tensor index */
	int role;              /* GT_IN: loaded per slice; GT_MID: local only;
	                        * GT_OUT: stored per slice; GT_BCAST: whole, loaded once;
	                        * GT_MIDOUT: an intermediate also read after the group
	                        * or a graph output: kept as GT_MID is and stored per
	                        * slice as GT_OUT is */
	int maxrows;           /* most rows held in any slice */
	int axis;              /* GT_IN: the IR axis its rows run along, 2, or 3
				  for a Transpose's input (isa_slice_axis) */
	uint32_t addr[2];      /* local address per buffer */
	int lo, hi;            /* rows held in the slice being generated */
	int p0, p1;            /* GT_MID: op writing it, last op of the group reading it */
	int r0;                /* GT_IN, GT_BCAST: first op of the group reading it */
	int64_t off, size;     /* GT_MID: offset in the intermediates' region, bytes */
	int alias;             /* GT_MID held inside a Concat's result (group_alias):
				  that result's index in gt, else -1 */
	int64_t aoff;          /* then its bytes from that result's start */
	int ahead;             /* GT_BCAST: its first rows loaded while the unit
				  before stored them (cg_group_load_rows) */
	int *cover;            /* GT_MIDOUT, sliced: per slice s, the first row it
				  stores (cover[n_slices] = H): the slices' rows
				  cover the tensor once every row is computed */
};

struct group {
	int first, n_ops;
	int whole;             /* some op is not sliced: one step over whole tensors,
				  the group's inputs loaded once (GT_BCAST) */
	int n_slices, rows, bufs;
	int head;              /* rows of slice 0 when fewer than rows (a short
				  first slice starts the computes sooner), else 0 */
	int nt;                /* activations of the group */
	struct gten *gt;
	int nw;                /* weights of the group (each once) */
	int *wt;               /* their tensors */
	int *wfirst;           /* op index of each weight's first user */
	uint32_t *waddr;       /* their local addresses */
	int *loaded;           /* per weight and per GT_BCAST tensor (index nw + gt):
				  loaded; a GT_IN one: read where the group before
				  left it (cg_group_hand_over) */
	int *wdone;            /* per weight: channels loaded so far (in parts) */
	int *rnext;            /* per weight: the next of its coefficient run
				  (addr_runs), -1 none; NULL until laid out */
	int no_runs;           /* every weight loads alone: G times faster so */
	int keep_out;          /* its result, which the next group reads where it
				  lies and nothing after reads, is not stored
				  (cg_group_hand_over) */
	int64_t need;          /* bytes per lane */
	int64_t *inplace;      /* per op k - first, a Concat some of whose inputs
				  lie in its result (group_alias): 0 none; else
				  the result's channels [lo, hi) its command
				  writes, as 1 + lo + (hi << 16); lo = hi: no
				  command */
	int *ix;               /* per op k and operand i (inputs, then results):
				  ix[(k - first) * ISA_MAX_OPERANDS + i], the
				  index in gt of the activation, or in wt of the
				  weight, -1 for none */
};

/* Index in gt (activation) or wt (weight) of operand i of op k. */
static inline int opnd_ix(const struct group *G, int k, int i)
{
	return G->ix[(size_t)(k - G->first) * ISA_MAX_OPERANDS + (size_t)i];
}

#endif
