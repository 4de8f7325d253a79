/* lower.h - lowering a Top graph to the Tpu dialect for one chip and one
 * mode (f32 or int8).  lower_graph walks the Top ops in order and calls each
 * op's `lower` hook (lib/op.h), which emits Tpu ops through the helpers here.
 *
 * Tensor naming in the Tpu graph (formats/tpuc-quant.5): every Top tensor
 * keeps its name.  In int8 mode each graph input X stays f32 and a Cast
 * "X_quant" writes its int8 twin "X_i8"; each graph output Y is written as
 * int8 "Y_i8" and a Cast "Y_dequant" gives f32 "Y", so graph inputs and
 * outputs keep their names and dtypes.
 */
#ifndef TPUC_LOWER_H
#define TPUC_LOWER_H

#include "calib.h"
#include "ir.h"

enum lower_mode { LOWER_F32, LOWER_INT8 };

struct lower_ctx {
	const struct ir_graph *top;      /* graph being lowered */
	struct ir_graph *tpu;            /* graph being built */
	enum lower_mode mode;
	const struct calib_table *tab;   /* int8: thresholds; NULL for f32 */
	int *map;                        /* per Top tensor: its Tpu tensor, -1 none yet */
	int *is_output;                  /* per Top tensor: 1 if a graph output */
};

/* Lower TOP (dialect top, stage origin or canonical) for CHIP ("tpu-a",
 * "tpu-b") in MODE ("f32", "int8").  TAB gives the activation thresholds and
 * is required for int8 (NULL for f32).  On success *TPU is a new graph at
 * stage lowered, verified.  Errors name the op and, for a missing threshold,
 * the tensor and the table. */
int lower_graph(const struct ir_graph *top, const char *chip, const char *mode,
		const struct calib_table *tab, struct ir_graph **tpu);

/* 1 if NAME is a chip lower_graph knows. */
int lower_chip_known(const char *name);
/* The enum lower_mode for NAME, or -1. */
int lower_mode_from_name(const char *name);

/* --- helpers for the op hooks --- */

/* Emit a copy of Top op OP (type, name, attributes) with Tpu tensor indices
 * IN[0..n_in-1] and OUT[0..n_out-1]; returns the new op's index. */
int lower_emit(struct lower_ctx *lc, const struct ir_op *op, int n_in, const int *in,
	       int n_out, const int *out);
/* The Tpu tensor holding Top tensor T as it is: an activation already
 * produced, or a weight copied unchanged (same name, dtype and data). */
int lower_value(struct lower_ctx *lc, int t);
/* Create the Tpu tensor for Top activation T, output of an op being lowered,
 * with dtype DT and shape of T; int8 tensors get SCALE (zero point 0).  A
 * graph output in int8 mode is named "T_i8" (lower_graph adds the Cast). */
int lower_output(struct lower_ctx *lc, int t, enum ir_dtype dt, float scale);
/* Int8: the activation scale of Top tensor T from the table
 * (threshold / 127).  Fails naming OP, the tensor and the table. */
int lower_table_scale(struct lower_ctx *lc, const struct ir_op *op, int t, float *scale);
/* Int8: the Tpu int8 tensor for Top input T of OP.  Activations are already
 * int8; a float weight used as an activation is quantised per tensor
 * (symmetric, scale max|w| / 127) into a new weight "NAME_i8". */
int lower_act_input(struct lower_ctx *lc, const struct ir_op *op, int t);
/* Add a new weight to the Tpu graph, named NAME (made unique with a numeric
 * suffix if taken); returns its index. */
int lower_weight(struct lower_ctx *lc, const char *name, enum ir_dtype dt, int rank,
		 const int64_t *shape, const void *data);

/* A per-channel op to quantise (Conv, Gemm, Scale): float weights W where
 * element e of channel c is W[c * cstride + e * estride], e < per. */
struct lower_pc {
	const float *w;              /* float weights, as laid out in the Top tensor */
	const char *wname;           /* name of the Top weight, kept for the i8 weight */
	int wrank;
	const int64_t *wshape;
	const float *b;              /* float bias [channels], NULL for none */
	const char *bname;           /* its Top name, NULL for none */
	int64_t channels, per, cstride, estride;
};
/* Int8: emit OP with inputs [X, w (i8, per-channel symmetric), bias, multiplier,
 * shift (i32 [channels] each)] and an i8 output of scale S_OUT, copying OP's
 * attributes.  Returns the Tpu op index, or -1. */
int lower_per_channel(struct lower_ctx *lc, const struct ir_op *op, int x,
		      const struct lower_pc *pc, float s_out);

/* The default hook: in f32 mode copy the op through; in int8 mode copy it
 * with int8 inputs and outputs that keep input 0's scale (data movement,
 * MaxPool, Relu). */
int lower_default(struct lower_ctx *lc, const struct ir_op *op);

#endif
