/* op.h - the operator registry: every stage's hook for every operator.
 *
 * One operator is one file in lib/ops/ exporting one `const struct op_def`;
 * lib/ops/registry.c lists them in enum op_type order (checked at compile
 * time).  A hook left NULL means the stage does not support the operator,
 * and the tool refuses it naming the op.
 */
#ifndef TPUC_OP_H
#define TPUC_OP_H

#include "ir/base.h"
#include "ir/ir.h"

/* A dense row-major tensor in memory, as kernels see it. */
struct view {
	void *data;
	enum ir_dtype dtype;
	int rank;
	int64_t shape[IR_MAX_RANK];
	float scale;        /* quantised views: real = scale * (q - zero_point) */
	int zero_point;
};
int64_t view_numel(const struct view *v);

/* One kernel invocation.  Interpreters fill it from whole tensors; the
 * simulator fills it from a slice along H (axis 2 of 4-D activations).
 * Spatial kernels work in whole-tensor row coordinates: output row r of the
 * view is row out_row0 + r of the whole output; input view row r is row
 * in_row0 + r of the whole input, which has in_full_h rows; rows outside
 * [0, in_full_h) are padding.  For whole tensors all offsets are 0 and
 * in_full_h is the input's H. */
struct kern {
	const struct ir_graph *g;
	const struct ir_op *op;
	int n_in, n_out;
	struct view *in;             /* n_in views; absent optional inputs have data == NULL */
	struct view *out;            /* n_out views */
	int out_row0;                /* first output row of this invocation */
	int in_row0;                 /* first input row held by in[0] */
	int in_full_h;               /* rows of the whole input 0 */
	int nthreads;
	/* Run on run-time shapes (lib/ir/dynrun.h): make output i's buffer
	 * hold BYTES, keeping what it holds, and return it; NULL when the
	 * kernel runs on static shapes (its outputs' buffers fit them). */
	void *(*out_grow)(struct kern *k, int i, size_t bytes);
	void *grow_ctx;
};

struct lower_ctx;   /* lib/back/lower.h */

/* An op's hooks.  Its name and opcode are its OP_LIST line (lib/ir/ir.h,
 * op_name()), its data facts its OP_TRAITS line (lib/ir/op_traits.h). */
struct op_def {
	/* Set dtype and shape of every output from the inputs and attributes.
	 * Returns -1 with a message naming the op for unsupported attributes. */
	int (*infer)(struct ir_graph *g, struct ir_op *op);
	/* Top dialect: float reference kernel. */
	int (*run_f32)(struct kern *k);
	/* Constant folding (top-opt) of outputs other than f32, e.g. shape
	 * arithmetic in i64: a kernel for any dtype.  NULL: not folded then. */
	int (*run_const)(struct kern *k);
	/* Lower one Top op into the Tpu graph being built (lib/back/lower.h). */
	int (*lower)(struct lower_ctx *lc, const struct ir_op *op);
	/* Tpu dialect: the chip's exact kernel, shared by ir-run and tpu-sim. */
	int (*run_tpu)(struct kern *k);
	/* Multiply-accumulates of one execution (0 for data movement). */
	int64_t (*macs)(const struct ir_graph *g, const struct ir_op *op);
	/* Slicing rule along H: output rows [oh0, oh1) need rows [*ih0, *ih1)
	 * of input 0 (clamped to the input; other activation inputs of the same
	 * H take the same rows, broadcast ones all rows).  NULL: the op cannot
	 * be sliced along H and runs whole. */
	void (*slice_h)(const struct ir_graph *g, const struct ir_op *op,
			int oh0, int oh1, int *ih0, int *ih1);
	/* Parts along an output axis (lib/back/lower_axsplit.c): 1 when
	 * every output's axis ax can be computed in consecutive parts, part
	 * [p0, p1) from elements [p0, p1) of axis in_ax[j] of each input j
	 * (-1: input j read whole) with the op's attributes unchanged; 0 when
	 * not.  Called through op_split_axis, which checks the extents.
	 * NULL: elementwise ops (slice_h_same) split as they broadcast
	 * (split_axis_same), other ops not at all. */
	int (*split_axis)(const struct ir_graph *g, const struct ir_op *op, int ax, int *in_ax);
	/* Parts along an output axis each reading a window of input 0's same
	 * axis (lib/back/lower_wsplit.c; the other inputs read whole):
	 * outputs [o0, o1) along ax need input 0's [*i0, *i1); with part not
	 * NULL, part (a copy of op, to run on that window alone) gets the
	 * attributes that make it compute exactly those outputs.  0 when op
	 * cannot be cut so along ax, or not into that part (a part too narrow
	 * for a reflecting pad, not on a block boundary).  NULL: never. */
	int (*split_window)(const struct ir_graph *g, const struct ir_op *op, int ax, int64_t o0,
			    int64_t o1, int64_t *i0, int64_t *i1, struct ir_op *part);
};

extern const struct op_def *const op_defs[OP_COUNT];

/* The kernel op runs by in graph G: the float reference (run_f32) in the
 * Top dialect and for a Tpu op placed on the host (PLACE_HOST), the chip's
 * kernel (run_tpu) for the rest of the Tpu dialect; NULL when it has none.
 * ir-run and tpu-sim both choose by it, so a host op runs alike in both. */
int (*op_kernel(const struct ir_graph *g, const struct ir_op *op))(struct kern *k);

/* The network's own multiply-accumulates of one execution of op, as
 * tpu-sim and tmodel-info count them: those of the cube's ops (Conv,
 * ConvTranspose, Gemm, MatMul, LSTM, GRU, RNN; 0 for the others), by the
 * op's macs hook, or the first value of its attribute "own" [MACs, weight
 * bytes] when a rewrite made it multiply zeros too (lib/back/reorder.c,
 * lib/back/lower_fill.c). */
int64_t op_macs(const struct ir_graph *g, const struct ir_op *op);
/* Before a rewrite makes op multiply zeros too: set its attribute "own" to
 * its work as it is, [op_macs, bytes of its weight inputs], unless set. */
void op_own_set(const struct ir_graph *g, struct ir_op *op);

/* The dimensions [*B, *E) of a rank-RANK input that Shape op OP (or
 * Size: all) reports, its start and end clamped as ONNX does. */
void shape_op_range(const struct ir_op *op, int rank, int64_t *b, int64_t *e);
/* The values of the 1-D integer tensor T (at most IR_MAX_RANK of them)
 * that are known before run time although the tensor is computed: a
 * shape built by Concat of constants and the static extents of a dynamic
 * tensor (Faster R-CNN's [n, 256, 7, 7] with only n found at run time).
 * Into V; bit i of the result set when V[i] is known. */
uint32_t known_values(const struct ir_graph *g, int t, int64_t *v);

/* Run shape inference over the whole graph in order. */
int graph_infer(struct ir_graph *g);

/* Fill a kern for op over whole tensors whose buffers are vals[tensor];
 * release it with kern_done. */
void kern_from_graph(struct kern *k, const struct ir_graph *g,
		     const struct ir_op *op, void *const *vals);
/* Give output I of K the extents SHAPE (of its rank), found by its kernel
 * (a dynamic output: the result of a loop run until its condition failed,
 * a branch's output): the view's shape set and its buffer grown to hold
 * them, what it held kept.  Returns the buffer, or NULL with a message
 * naming the op when the buffer cannot grow (static shapes). */
void *kern_out_shape(struct kern *k, int i, const int64_t *shape);
/* Zero k and give it n_in and n_out zeroed views (any number). */
void kern_init(struct kern *k, int n_in, int n_out);
/* Free the views of a kern from kern_init or kern_from_graph. */
void kern_done(struct kern *k);

/* Shared attribute helpers for 2-D spatial ops (NCHW). */
struct spatial {
	int kh, kw;         /* kernel size */
	int sh, sw;         /* strides */
	int dh, dw;         /* dilations, counting from 1 as ONNX does */
	int pt, pl, pb, pr; /* pads: top, left, bottom, right */
	int ceil_mode;
	int group;
};
/* Read kernel_shape/strides/dilations/pads/group; kernel size from the
 * weight when kernel_shape is absent.  -1 on malformed attributes. */
int spatial_get(const struct ir_graph *g, const struct ir_op *op, struct spatial *s);
/* The output shape [N, C, OH, OW] of a 2-D window op with attributes s
 * over x; -1 with a message naming op when the window does not fit. */
int pool_out_shape(const struct ir_op *op, const struct ir_tensor *x, const struct spatial *s,
		   int64_t shape[4]);
/* Slicing rules for ops whose output row r reads a window of input rows
 * (conv, pooling) and for row-preserving ops (elementwise, activations). */
void slice_h_window(const struct ir_graph *g, const struct ir_op *op,
		    int oh0, int oh1, int *ih0, int *ih1);
void slice_h_same(const struct ir_graph *g, const struct ir_op *op,
		  int oh0, int oh1, int *ih0, int *ih1);
/* Splitting rules along an output axis (op_def.split_axis).  op_split_axis
 * is how every stage asks: the op's rule, then a check that each output has
 * axis ax with one extent n >= 2 and each cut input has n there. */
int op_split_axis(const struct ir_graph *g, const struct ir_op *op, int ax, int *in_ax);
/* Elementwise: each input cut along the axis aligned with ax (numpy
 * broadcasting, from the right) when it has the output's extent there,
 * read whole when that axis is 1 or missing. */
int split_axis_same(const struct ir_graph *g, const struct ir_op *op, int ax, int *in_ax);
/* Input 0 cut along ax, the other inputs read whole. */
int split_axis_x0(const struct ir_graph *g, const struct ir_op *op, int ax, int *in_ax);
/* Axis 0 only (a batch of images: Conv, pooling), as split_axis_x0. */
int split_axis_batch(const struct ir_graph *g, const struct ir_op *op, int ax, int *in_ax);
/* Axis 0 or 1 (global pools: each image and channel alone), as
 * split_axis_x0. */
int split_axis_nc(const struct ir_graph *g, const struct ir_op *op, int ax, int *in_ax);
/* Per-channel ops (Scale, BatchNormalization): input 0 cut along ax, the
 * parameters (rank 1, one per channel) with it when ax is the channels
 * (1), else read whole. */
int split_axis_chan(const struct ir_graph *g, const struct ir_op *op, int ax, int *in_ax);
/* split_window for 2-D window ops (Conv, MaxPool, AveragePool) along W
 * (axis 3): the input columns the part's windows read, its left and right
 * pads only where it meets the input's edge.  Not for ceil_mode or
 * auto_pad. */
int split_window_spatial(const struct ir_graph *g, const struct ir_op *op, int ax, int64_t o0,
			 int64_t o1, int64_t *i0, int64_t *i1, struct ir_op *part);
/* Output extent along one axis. */
int spatial_out(int in, int k, int stride, int dil, int pad0, int pad1, int ceil_mode);

/* ---- helpers for the operator files in lib/ops/ ---- */

/* Input i of op as a tensor, or NULL when absent. */
static inline struct ir_tensor *op_in(struct ir_graph *g, const struct ir_op *op, int i)
{
	return i < op->n_in && op->in[i] >= 0 ? &g->tensors[op->in[i]] : NULL;
}

static inline struct ir_tensor *op_out(struct ir_graph *g, const struct ir_op *op, int i)
{
	return &g->tensors[op->out[i]];
}

/* Set output i's dtype and shape. */
void op_set_out(struct ir_graph *g, const struct ir_op *op, int i, enum ir_dtype dt,
		int rank, const int64_t *shape);
/* Mark dimensions DIMS (a bit each) of output i dynamic (after op_set_out,
 * which leaves none): an op whose output shape depends on its inputs'
 * values.  Ops flagged OPF_DYN_SHAPE mark all their dynamic dimensions
 * this way; for the others, when an input has a dynamic dimension,
 * op_infer also marks every output dimension whose extent follows it (the
 * inference run again with those extents moved: the output extents that
 * move), or every dimension when that run fails. */
void op_set_dyn(struct ir_graph *g, const struct ir_op *op, int i, uint32_t dims);
/* An operand ONNX allows at run time (Slice's starts, TopK's k, Trilu's k
 * ...): attribute NAME when the op has it (a constant the importer took),
 * else input I, read from the kernel's view when K is given (run time) or
 * from a constant of G.  Its values, at most MAX, go into V; returns their
 * count, 0 when neither is there, -2 when input I is known only at run time
 * (shape inference before it: the extents it decides are dynamic), or -1
 * with a message naming the op when it holds more than MAX.  NAME may be
 * NULL (no attribute). */
int op_param_ints(const struct ir_graph *g, const struct kern *k, const struct ir_op *op,
		  int i, const char *name, int64_t *v, int max);
/* 1 if A and B have the same rank and the same extents wherever neither
 * is dynamic (a dynamic extent may yet be any). */
int shapes_agree(const struct ir_tensor *a, const struct ir_tensor *b);
/* Output 0 takes input 0's dtype and shape. */
int infer_same(struct ir_graph *g, struct ir_op *op);
/* Fail with "op 'NAME' (Type): reason" when the op lacks min..max inputs. */
int op_check_arity(const struct ir_graph *g, const struct ir_op *op, int min_in, int max_in);
/* Fail unless op has the inputs and outputs its type's OP_IO line (lib/ir/op_traits.h)
 * allows in g's dialect. */
int op_check_io(const struct ir_graph *g, const struct ir_op *op);
/* op_check_io, then the op's shape inference: how every stage infers. */
int op_infer(struct ir_graph *g, struct ir_op *op);
/* Record an error about op: "op 'NAME' (Type): ...". */
int op_error(const struct ir_op *op, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Numpy broadcasting of two shapes into out (which may be a or b); -1 if
 * incompatible. */
int broadcast_shape(int ra, const int64_t *a, int rb, const int64_t *b, int *rout, int64_t *out);
/* Normalise a possibly negative axis against rank; -1 if out of range. */
int norm_axis(int64_t axis, int rank);

#endif
