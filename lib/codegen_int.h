/* codegen_int.h - what the parts of code generation share: lib/codegen.c
 * (helpers and the driver over layer groups), lib/codegen_op.c (one op at a
 * time) and lib/codegen_group.c (local layer groups).  Not used elsewhere.
 */
#ifndef TPUC_CODEGEN_INT_H
#define TPUC_CODEGEN_INT_H

#include <stdint.h>

#include "chip.h"
#include "ir.h"
#include "isa.h"

#define LMEM_ALIGN 64   /* local regions start on a vector-width boundary */

/* The streams being generated. */
struct gen {
	const struct ir_graph *g;
	const struct chip *c;
	int estimate;          /* timing only: tensors may lack addresses */
	int64_t dma_cycles;    /* cost of the DMA commands emitted so far */
	struct isa_dma *dma;
	int n_dma, cap_dma;
	struct isa_cmp *cmp;
	int n_cmp, cap_cmp;
	char **loc;            /* per compute command: its op's name */
};

struct unit;               /* a layer group being generated (codegen.c) */

/* The next unit's whole inputs, loaded while the current one computes. */
struct prefetch {
	struct unit *u;        /* NULL: none */
	uint32_t wait;         /* compute command the first load waits for, then 0 */
	int only_before;       /* activations only if written before this op */
	int64_t lo, hi;        /* local bytes [lo, hi) still in use: not loaded into */
};

/* ---- helpers (codegen.c) ---- */
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
/* Producer op of tensor t, -1 for graph inputs and weights. */
int cg_producer(const struct ir_graph *g, int t);
void cg_free(struct gen *cg);
/* Cost of loading the whole tensor t, cycles. */
int64_t cg_load_cycles(const struct gen *cg, int t);
/* Load whole inputs of the next unit (pf) that fit in `budget` DMA cycles,
 * in order, stopping at the first that does not (budget < 0: all); with
 * `final` set, the first op's weights whatever they cost.  Called while
 * the current unit computes, before its store. */
int cg_prefetch(struct gen *cg, struct prefetch *pf, int64_t budget, int final);

/* ---- one op at a time (codegen_op.c) ---- */
/* One operand of the op being generated. */
struct opnd {
	int t;                 /* tensor index, -1 absent */
	int sliced;            /* holds only the slice's rows */
	int split;             /* holds only the chunk's channels */
	int64_t s[4];          /* lane shape of the whole tensor */
	uint32_t addr[2];      /* local address per buffer */
};

/* How an op is cut: n_slices × chunks steps, chunk-major. */
struct plan {
	int n_slices;          /* slices along H (1: whole) */
	int rows;              /* output rows per slice (last may be fewer) */
	int chunks;            /* chunks of output channels (1: all) */
	int chans;             /* output channels per chunk (last may be fewer) */
	int bufs;              /* buffers per sliced or split operand: 1 or 2 */
	int max_in;            /* most input rows any slice needs */
	int64_t need;          /* bytes per lane */
	int flat;              /* a copy op (isa_is_copy) moved by the DMA engine
				  alone in n_slices chunks of its bytes, one buffer */
};

/* The layout of one op in local memory: plan, base and operand addresses. */
struct layout {
	int op;                     /* op index */
	int sl;                     /* sliced along H */
	int64_t oc;                 /* output channels when split into chunks, else 0 */
	struct plan p;
	int64_t base;               /* first byte of the op's region in every lane */
	struct opnd od[ISA_MAX_OPERANDS];
	int loaded[ISA_MAX_OPERANDS]; /* whole input already loaded (prefetched) */
	uint32_t last_cmp;          /* last compute command of the op, once generated */
};

/* Check that op oi can be generated at all. */
int cg_op_check(const struct ir_graph *g, int oi);
/* The cut of op oi with the fewest cycles by the cost model, generated
 * alone, among those that fit (ties: fewer steps); *cycles (if not NULL)
 * gets its time.  Fails naming the op when nothing fits (-2; -1 on other
 * errors). */
int cg_op_plan(const struct gen *cg, int oi, struct plan *best, int64_t *cycles);
/* Operand addresses for plan p with the op's region at base (mirrored
 * when high, see cg_place). */
void cg_op_lay_out(const struct gen *cg, int oi, const struct plan *p, int64_t base, int high,
		   struct layout *L);
/* The op's whole inputs not loaded yet, the first waiting for `wait`; with
 * only_before >= 0, only weights and activations written before that op;
 * with budget not NULL, only while their DMA cycles fit in *budget (in
 * order), which they use up; with avoid not NULL, none whose local bytes
 * overlap [avoid[0], avoid[1]). */
int cg_op_load(struct gen *cg, struct layout *L, uint32_t wait, int only_before,
	       int64_t *budget, const int64_t *avoid);
/* Generate the op of layout L; the first load waits for `wait`; pf's
 * inputs load while it computes (cg_prefetch). */
int cg_op_gen(struct gen *cg, struct layout *L, uint32_t wait, struct prefetch *pf);

/* ---- local layer groups (codegen_group.c) ---- */
struct group;
/* The group of ops [first, first + n), or NULL with a message when they
 * cannot form one. */
struct group *cg_group_new(const struct ir_graph *g, int first, int n);
void cg_group_free(struct group *G);
/* Choose the slice count the cost model times fastest among those that
 * fit; *cycles gets its time.  -2 with a message when none fits, -1 on
 * other errors. */
int cg_group_choose(const struct gen *cg, struct group *G, int64_t *cycles);
/* Bytes per lane of the chosen plan. */
int64_t cg_group_need(const struct group *G);
/* Local addresses from base (mirrored when high, see cg_place). */
void cg_group_lay_out(const struct gen *cg, struct group *G, int64_t base, int high);
/* Weights of ops up to op `upto`, then broadcast inputs, not loaded yet
 * (only_before, budget and avoid as for cg_op_load); wready, when not NULL, gets
 * per op the last DMA command loading its weights. */
int cg_group_load(struct gen *cg, struct group *G, uint32_t wait, int only_before, int upto,
		  uint32_t *wready, int64_t *budget, const int64_t *avoid);
/* Generate G; the first load waits for `wait`; pf's inputs load while it
 * computes; *last_cmp gets its last compute command. */
int cg_group_gen(struct gen *cg, struct group *G, uint32_t wait, struct prefetch *pf,
		 uint32_t *last_cmp);

#endif
