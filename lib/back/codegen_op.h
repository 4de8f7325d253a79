/* codegen_op.h - code generation of one op at a time from local memory,
 * sliced along H and cut into chunks of channels (lib/back/codegen_op.c).
 */
#ifndef TPUC_CODEGEN_OP_H
#define TPUC_CODEGEN_OP_H

#include <stdint.h>

#include "back/codegen_util.h"
#include "chip/isa.h"

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
	int done[ISA_MAX_OPERANDS];   /* whole weight: channels loaded so far (in parts) */
	uint32_t last_cmp;          /* last compute command of the op, once generated */
};

/* Check that op oi can be generated at all. */
int cg_op_check(const struct ir_graph *g, int oi);
/* The cut of op oi with the fewest cycles by the cost model, generated
 * alone, among those that fit (ties: fewer steps); *cycles (if not NULL)
 * gets its time.  best NULL: only whether some cut fits (0), the first
 * found.  Fails naming the op when nothing fits (-2; -1 on other
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

#endif
