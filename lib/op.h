/* op.h - the operator registry: every stage's hook for every operator.
 *
 * One operator is one file in lib/ops/ exporting one `const struct op_def`;
 * lib/ops/registry.c lists them in enum op_type order (checked at compile
 * time).  A hook left NULL means the stage does not support the operator,
 * and the tool refuses it naming the op.
 */
#ifndef TPUC_OP_H
#define TPUC_OP_H

#include "ir.h"

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

struct lower_ctx;   /* lib/lower.h */

struct op_def {
	const char *name;
	/* Set dtype and shape of every output from the inputs and attributes.
	 * Returns -1 with a message naming the op for unsupported attributes. */
	int (*infer)(struct ir_graph *g, struct ir_op *op);
	/* Top dialect: float reference kernel. */
	int (*run_f32)(struct kern *k);
	/* Lower one Top op into the Tpu graph being built (lib/lower.h). */
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
const char *op_name(enum op_type t);
int op_type_from_name(const char *s);   /* -1 if unknown */

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
/* Slicing rules for ops whose output row r reads a window of input rows
 * (conv, pooling) and for row-preserving ops (elementwise, activations). */
void slice_h_window(const struct ir_graph *g, const struct ir_op *op,
		    int oh0, int oh1, int *ih0, int *ih1);
void slice_h_same(const struct ir_graph *g, const struct ir_op *op,
		  int oh0, int oh1, int *ih0, int *ih1);
/* Output extent along one axis. */
int spatial_out(int in, int k, int stride, int dil, int pad0, int pad1, int ceil_mode);

#endif
