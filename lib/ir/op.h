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

/* Run shape inference over the whole graph in order. */
int graph_infer(struct ir_graph *g);

/* Fill a kern for op over whole tensors whose buffers are vals[tensor];
 * release it with kern_done. */
void kern_from_graph(struct kern *k, const struct ir_graph *g,
		     const struct ir_op *op, void *const *vals);
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
