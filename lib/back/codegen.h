/* codegen.h - code generation: an addressed Tpu graph becomes the command
 * streams of a .tmodel (lib/chip/tmodel.h, formats/tpuc-isa.5).
 */
#ifndef TPUC_CODEGEN_H
#define TPUC_CODEGEN_H

#include "chip/chip.h"
#include "ir/ir.h"
#include "back/groups.h"
#include "chip/tmodel.h"

/* Generate the model for G (dialect tpu, stage addressed) on chip C.
 *
 * Layer groups (lib/back/layergroup.h) are generated in order.  A global group
 * is one op run from local memory: its weights and unsliced inputs are
 * loaded once, then the output is computed in slices of rows along H (ops
 * with a slice_h rule that accepts them and activations of rank 4 or more;
 * others whole), each slice's input rows loaded and its output rows stored
 * back, with two buffers per sliced tensor so that the DMA engine works on
 * one slice while the compute engine runs another.  When no slicing fits,
 * Conv, Gemm, MatMul and channelwise ops are also cut into chunks of output
 * channels; an op that only moves bytes (isa_is_copy) that still does not
 * fit runs as a copy by the DMA engine alone.  A local group runs all its
 * ops slice by slice from local memory, loading only its inputs' rows and
 * storing its last result's, or, when some op cannot be sliced, in one
 * step over whole tensors.  Of the cuts that fit a lane's local memory, the
 * one the cost model times fastest is taken (for a local group, of those
 * within 3% of it, the one of least local memory).  Each group's region
 * lies at the bottom or the top, clear of the most groups before it, so
 * that the next group's inputs load while the current group computes; the
 * weights of later groups load then too, within the DMA time the compute
 * leaves, wherever local memory stays free until their group has run (in
 * parts when a weight takes longer).  Fails, naming the tensor, for DDR regions or a tensor
 * larger than the chip's DDR, or a tensor whose bytes do not lie inside
 * its region (weights in [0, coeff_bytes), activations in the
 * neuron_bytes after it; checked first, overflow-safe); naming the op, for
 * an op without a chip kernel (run_tpu), one that cannot fit even one row
 * per slice, or fields out of the ISA's range.  On success *OUT is a new model (tmodel_free). */
int codegen(const struct ir_graph *g, const struct chip *c, struct tmodel **out);

/* 1 when op i of g can run alone from the local memory of chip c (some cut
 * of it fits), 0 when none fits, -1 when codegen cannot take it at all;
 * the message says why (lib/lower_fit.c uses it before weight-reorder). */
int codegen_op_fits(const struct ir_graph *g, const struct chip *c, int i);

/* What codegen keeps of graph G for chip C across the runs of its ops it
 * times (layergroup's search times the same runs many times): an index of
 * each tensor's writer and last reader, the slicing each local group was
 * given (a longer run's search starts from the count of the run one op
 * shorter), and the schedule switches below.  G must not change while the
 * context lives; codegen_ctx_free drops it (NULL: nothing).  Contexts of
 * different graphs are independent, so two graphs may be compiled in one
 * process, but one context serves one thread at a time. */
struct codegen_ctx;
struct codegen_ctx *codegen_ctx_new(const struct ir_graph *g, const struct chip *c);
void codegen_ctx_free(struct codegen_ctx *cx);

/* Cycles, by the cost model, of ops [FIRST, FIRST + N) of cx's graph
 * generated alone: N = 1 as a single op in global memory, N > 1 as one
 * local layer group (only the last op's output stored, the others kept in
 * local memory).  Tensors need no addresses.  -1 with a message when the
 * ops cannot run that way, -2 when they do not fit local memory (nor would
 * any longer run from FIRST).  layergroup's cost model. */
int64_t codegen_group_cycles(struct codegen_ctx *cx, int first, int n);

/* With on, codegen_runs_cycles on cx generates only the plain schedule (no
 * loads into a group's dead bytes, every group's weights first:
 * formats/tpuc-isa.5, CODE GENERATION) until called with 0; layergroup
 * searches once so as well. */
void codegen_plain_schedule(struct codegen_ctx *cx, int on);
/* How many programs on cx (estimates included) left the plain schedule
 * since the last call with reset 1: a next group's weight loaded into a
 * group's freed bytes, or another layout of the groups timed faster.
 * None: every time was the plain schedule's. */
long codegen_departs(struct codegen_ctx *cx, int reset);

/* Cycles, by the cost model, of the runs GRP[0 .. N_GRP) of cx's graph
 * (each a single op placed PLACE_GLOBAL or a local group, as lg_groups
 * gives them) generated one after the other as codegen does, the next
 * run's inputs loaded while the current one computes.  Tensors need no
 * addresses.  -1 with a message when a run cannot be generated, -2 when
 * one does not fit local memory.  layergroup times a run after the one
 * before it with it. */
int64_t codegen_runs_cycles(struct codegen_ctx *cx, const struct lg_group *grp, int n_grp);

#endif
