/* codegen_util.h - what the parts of code generation share: the streams
 * being generated and the helpers over them (lib/back/codegen_util.c), used
 * by lib/back/codegen_op.c (one op at a time), lib/back/codegen_group.c
 * (local layer groups) and the driver lib/back/codegen.c.  Not used elsewhere.
 */
#ifndef TPUC_CODEGEN_UTIL_H
#define TPUC_CODEGEN_UTIL_H

#include <stdint.h>

#include "chip/chip.h"
#include "ir/ir.h"
#include "chip/isa.h"

#define LMEM_ALIGN 64   /* local regions start on a vector-width boundary */

/* What code generation keeps of graph g for chip c across the programs it
 * generates or times on g (codegen.h's codegen_ctx_new): indexes that
 * spare scans of the ops, answers that cost a search, the copies whose
 * results loads read from their sources (codegen itself), and the
 * switches layergroup sets.  Each part of codegen keeps its own fields. */
struct codegen_ctx {
	const struct ir_graph *g;
	const struct chip *c;
	int *prod;             /* per tensor: the first op writing it, -1 none
				  (cg_producer; codegen_util.c) */
	struct rows_memo *rows; /* cg_in_rows' answers (codegen_util.c) */
	int rows_cap, rows_used;
	int *last_use;         /* per tensor: the last op reading it, n_ops for a
				  graph output, -1 none (codegen_group.c) */
	struct choice *choice; /* cg_group_choose's choices (codegen_group.c) */
	int choice_cap, choice_used;
	struct lg_fwd *fwd;    /* lg_forwards(g) once cg_ctx_forward filled it,
				  else NULL (codegen_util.c) */
	char *fwd_skip;        /* per op: a copy whose result loads from its source */
	int plain;             /* codegen_plain_schedule (codegen.c) */
	long departs;          /* codegen_departs (codegen.c) */
};

/* The streams being generated. */
struct gen {
	const struct ir_graph *g;
	const struct chip *c;
	struct codegen_ctx *cx; /* g's context, NULL none: every answer found
				   afresh, no run's choice remembered */
	int estimate;          /* timing only: tensors may lack addresses */
	int64_t dma_cycles;    /* cost of the DMA commands emitted so far */
	struct isa_dma *dma;
	int n_dma, cap_dma;
	struct isa_cmp *cmp;
	int n_cmp, cap_cmp;
	char **loc;            /* per compute command: its op's name */
	uint32_t host_wait;    /* a host command the next DMA command waits for, 0 none */
	/* variants of the program (codegen.c's gen_best) */
	int fastest;           /* cg_group_choose: every group at its fastest slice
				  count, not the one needing the least local memory
				  among those within LG_SLACK_PCT of it; no memo */
	int credit;            /* cg_group_gen: a slice's prefetch budget does not
				  count the previous slice's prefetch among the DMA
				  commands queued since its loads */
	int keepw;             /* gen_all: a weight a unit reads where an earlier
				  unit loaded the same values is read there
				  (codegen.c's kept_plan) */
	long slacked;          /* groups cg_group_choose gave a count other than
				  their fastest */
	long credits;          /* slices that followed a slice that prefetched:
				  where credit can change the program */
	int keep;              /* gen_all: a group's result that the next group
				  reads whole is read where it lies in local
				  memory (cg_group_hand_over) */
	long kept;             /* results read so */
	int head;              /* cg_group_gen: a whole group's first ops compute
				  its input's rows as they load (codegen_head.c) */
	long heads;            /* groups whose head ran so */
};

/* Local bytes [lo, hi) of the unit generating (a local group's weight)
 * that no command reads after compute command `cmd`. */
struct freed {
	int64_t lo, hi;
	uint32_t cmd;
};

/* The next unit's whole inputs, loaded while the current one computes: the
 * driver (codegen.c) knows what a unit is, so it passes the loader. */
struct prefetch {
	void *u;               /* the unit; NULL: none */
	/* Load u's inputs within budget (see cg_prefetch). */
	int (*load)(struct gen *cg, struct prefetch *pf, int64_t budget, int final);
	/* Load the next unit's weights that lie in [lo, hi) only where fr
	 * (n disjoint spans sorted by lo, each free after its command) frees
	 * bytes by compute command `upto`, each waiting for the last of
	 * those, within `budget` DMA cycles (see cg_prefetch_freed). */
	int (*freed)(struct gen *cg, struct prefetch *pf, const struct freed *fr, int n,
		     uint32_t upto, int64_t budget);
	/* Load the next unit's copy of rows [0, rows) of t, which the current
	 * unit has stored, within budget (see cg_prefetch_rows). */
	int (*rows)(struct gen *cg, struct prefetch *pf, int t, int rows, int64_t budget);
	uint32_t wait;         /* compute command the first load waits for, then 0 */
	int only_before;       /* activations only if written before this op */
	int64_t lo, hi;        /* local bytes [lo, hi) still in use: not loaded into */
};

/* A load in parts moves at least this many DMA start-ups' worth of bytes
 * per command: more, shorter parts would spend the time they save on
 * start-ups. */
#define PART_LATENCIES 4

/* ---- helpers (codegen_util.c) ---- */
int cg_is_weight(const struct ir_graph *g, int t);
void cg_lane_shape(const struct ir_graph *g, int t, int64_t s[4]);
/* Bytes per lane of tensor t with `rows` rows in place of its H (rows < 0:
 * all) and `chans` channels in place of its C (chans <= 0: all), rounded up
 * for the next region. */
int64_t cg_lane_bytes(const struct gen *cg, int t, int64_t rows, int64_t chans);
/* Output rows [oh0, oh1) of op need input rows [*a, *b). */
void cg_in_rows(const struct gen *cg, const struct ir_op *op, int oh0, int oh1, int *a, int *b);
/* 1 if op can run in slices along H: a slice_h rule that accepts it (a
 * first row >= 0 for output row 0), input 0 and outputs of rank 4 or more
 * with one H > 1 (input 0's rows along isa_slice_axis), other activations
 * of input 0's rank and H or broadcast along H (see codegen.c). */
int cg_sliceable(const struct ir_graph *g, const struct ir_op *op);
/* Whether input i of a sliceable op holds slice rows. */
int cg_input_sliced(const struct ir_graph *g, const struct ir_op *op, int i);
/* Once cg_ctx_forward(cx) (codegen itself: lg_forwards reads a grouped
 * graph), in code generation (not estimates) on cx: a load of a tensor
 * lg_forwards names reads the copy's source in its place, and
 * cg_copy_skipped(cg, k) says copy op k then needs no command. */
void cg_ctx_forward(struct codegen_ctx *cx);
int cg_copy_skipped(const struct gen *cg, int k);
/* Move rows [h0, h1) (all when h0 < 0) and channels [c0, c1) (all when
 * c0 < 0) of tensor t between DDR and local address lmem. */
int cg_emit_dma(struct gen *cg, int kind, int t, int h0, int h1, int c0, int c1,
		uint32_t lmem, uint32_t wait);
/* The same with the rows along IR axis `axis` of t (2, or 3 when N is 1:
 * see isa_slice_axis). */
int cg_emit_dma_ax(struct gen *cg, int kind, int t, int axis, int h0, int h1, int c0, int c1,
		   uint32_t lmem, uint32_t wait);
/* One DMA command of block lane shape blk (N, C, H, W) at DDR byte ddr with
 * channel and batch strides cs, ns (elements); name for messages. */
int cg_emit_dma_raw(struct gen *cg, int kind, enum ir_dtype dt, int64_t ddr, uint32_t lmem,
		    const int64_t blk[4], int64_t cs, int64_t ns, uint32_t wait, const char *name);
/* Bytes per lane of activation t holding `rows` entries of its IR axis
 * `axis` (rows < 0: all) and `chans` channels (chans <= 0: all). */
int64_t cg_held_bytes(const struct gen *cg, int t, int axis, int64_t rows, int64_t chans);
/* A new compute command for op k waiting for DMA command `wait`: opcode,
 * id, layer, operand counts and debug location set, the rest zero, every
 * address ISA_NO_ADDR. */
struct isa_cmp *cg_new_cmp(struct gen *cg, int k, uint32_t wait);
/* The next region of `size` bytes of a unit's layout: *at (then advanced)
 * counts from base up; with high set, the layout is mirrored within [base,
 * base + need), so that its first regions lie at the top. */
uint32_t cg_place(int64_t *at, int64_t size, int64_t base, int64_t need, int high);
/* Producer op of tensor t, -1 for graph inputs and weights: with cg->cx a
 * lookup (a scan per call is quadratic in the ops). */
int cg_producer(const struct gen *cg, int t);
/* cx's writers of each tensor indexed, and its memo of cg_in_rows' answers
 * (the search asks the same rows of an op many times) empty; _fini frees
 * them and cg_ctx_forward's tables. */
void cg_ctx_init(struct codegen_ctx *cx);
void cg_ctx_fini(struct codegen_ctx *cx);
void cg_free(struct gen *cg);
/* Cost of loading the whole tensor t, cycles. */
int64_t cg_load_cycles(const struct gen *cg, int t);
/* Load the whole tensor t to local address addr (the DMA waits for *wait,
 * then *wait is 0), unless its lanes overlap [avoid[0], avoid[1]) (CG_SKIP)
 * or, with budget, its cycles exceed what is left of *budget (CG_STOP: the
 * caller loads nothing more); CG_LOADED when loaded (budget charged), -1 on
 * error.  With `done` (a weight: channels loaded so far, from 0), the rest
 * from channel *done on; when the rest exceeds the budget, the whole channel
 * slots (lanes channels each) that fit, if they are worth a command, and
 * CG_STOP with *done advanced. */
enum { CG_SKIP, CG_LOADED, CG_STOP };
int cg_load_whole(struct gen *cg, int t, int64_t addr, uint32_t *wait, int64_t *budget,
		  const int64_t *avoid, int *done);
/* Load whole inputs of the next unit (pf) that fit in `budget` DMA cycles,
 * in order, stopping at the first that does not (budget < 0: all); with
 * `final` set, the first op's weights whatever they cost.  Called while
 * the current unit computes, before its store. */
int cg_prefetch(struct gen *cg, struct prefetch *pf, int64_t budget, int final);
/* Once the current unit's last computes are emitted: pf's freed loader
 * (nothing when none) over the spans fr[0..n) freed by compute command
 * upto, within budget DMA cycles. */
int cg_prefetch_freed(struct gen *cg, struct prefetch *pf, const struct freed *fr, int n,
		      uint32_t upto, int64_t budget);
/* After the current unit stored rows [0, rows) of t: pf's rows loader
 * (nothing when none) loads those of them the next unit reads whole and
 * has not loaded, within budget DMA cycles. */
int cg_prefetch_rows(struct gen *cg, struct prefetch *pf, int t, int rows, int64_t budget);

#endif
