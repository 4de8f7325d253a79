/* lower.h - lowering a Top graph to the Tpu dialect for one chip and one
 * mode (f32, bf16, f16 or int8), optionally overridden per op by a qtable
 * (mixed precision).  lower_graph walks the Top ops in order and calls each
 * op's `lower` hook (lib/ir/op.h) with lc->mode set to that op's mode; the
 * hook emits Tpu ops through the helpers here, which insert the Casts
 * between precisions.
 *
 * Tensor naming in the Tpu graph (formats/tpuc-quant.5): every Top tensor
 * keeps its name for the value its producer writes.  Graph inputs and
 * outputs keep their names and f32 dtype: an int8 op reading f32 (or
 * bf16/f16) tensor X gets its twin "X_i8" (i8 or u8) from a Cast "X_quant";
 * a bf16 or f16 op reading X of another dtype gets "X_bf16" or "X_f16" from
 * a Cast "X_cast_bf16" or "X_cast_f16", an f32 op "X_f32" from "X_cast_f32".
 * A graph output Y computed in int8, bf16 or f16 is written as "Y_i8",
 * "Y_bf16" or "Y_f16" and a Cast "Y_dequant" (int8) or "Y_cast_f32" gives
 * f32 "Y".
 */
#ifndef TPUC_LOWER_H
#define TPUC_LOWER_H

#include <stdio.h>

#include "quant/calib_table.h"
#include "ir/name_index.h"
#include "ir/ir.h"


/* The largest finite f16. */
#define F16_MAX 65504.0

struct lower_ctx {
	const struct ir_graph *top;      /* graph being lowered */
	struct ir_graph *tpu;            /* graph being built */
	enum ir_mode mode;            /* mode of the op being lowered */
	const struct calib_table *tab;   /* int8: thresholds; NULL if no int8 op */
	int *map;                        /* per Top tensor: its Tpu tensor, -1 none yet */
	int *alt;                        /* per Top tensor and dtype: its converted
					    twin (Cast or converted weight), -1 none */
	int *is_output;                  /* per Top tensor: 1 if a graph output */
	int signed_only;                 /* int8: 1 keeps every activation i8 (no u8) */
	int asymmetric;                  /* int8: u8 activations with zero points */
	enum ir_mode fallback;        /* int8: mode of ops with no int8 form */
	const enum ir_mode *opmode;      /* per Top op: its mode (graph's or qtable's) */
	/* the model's own quantisation (qdtype annotations of fold-qdq) in
	 * place of the table's: tensors where the two disagree */
	int n_disagree;
	int first_disagree;              /* Top tensor, -1 none */
};

/* A qtable (formats/tpuc-quant.5): per-op modes overriding the graph's. */
struct qtable_entry {
	char *op;                        /* op name */
	enum ir_mode mode;
	int line;                        /* line in the file, for messages */
};
struct qtable {
	char *path;                      /* for messages */
	int n, cap;
	struct qtable_entry *e;
	struct name_index index;         /* op name -> entry */
};
/* Read a qtable: lines "op_name MODE", '#' comments, blank lines.  Errors
 * name the file and the line. */
int qtable_read(const char *path, struct qtable **q);
/* Write Q atomically to PATH (NULL or "-": stdout) with a header comment. */
int qtable_write(const char *path, const struct qtable *q, const char *comment);
/* The same text on FP. */
void qtable_print(FILE *fp, const struct qtable *q, const char *comment);
void qtable_add(struct qtable *q, const char *op, enum ir_mode mode);
void qtable_free(struct qtable *q);

/* Options of lower_graph_opts beyond chip and mode. */
struct lower_opts {
	const struct calib_table *tab;   /* int8: thresholds; NULL for float modes */
	int signed_only;                 /* int8: no u8 activations */
	int asymmetric;                  /* int8: every activation u8 with a zero
					    point (overrides signed_only) */
	const struct qtable *qt;         /* per-op modes, or NULL */
	enum ir_mode fallback;        /* int8: the mode of ops with no int8 form
					    (0, MODE_F32, means MODE_BF16) */
	FILE *notes;                     /* where to name the ops kept in f32 out of
					    f16's range ("PROG: note: ..."), or NULL */
	const char *prog;                /* PROG in notes */
};

/* Lower TOP (dialect top, stage origin or canonical) for CHIP ("tpu-a",
 * "tpu-b") in MODE ("f32", "bf16", "f16", "int8").  TAB gives the activation
 * thresholds and is required when any op is int8 (NULL otherwise); when
 * given, an op in f16 whose weights or calibrated activations go beyond
 * the largest finite f16 (F16_MAX) stays in f32.  On
 * success *TPU is a new graph at stage lowered, verified, whose header mode
 * is MODE.  Errors name the op and, for a missing threshold, the tensor and
 * the table; a qtable naming an op the graph lacks is refused. */
int lower_graph(const struct ir_graph *top, const char *chip, enum ir_mode mode,
		const struct calib_table *tab, struct ir_graph **tpu);
/* The same with options. */
int lower_graph_opts(const struct ir_graph *top, const char *chip, enum ir_mode mode,
		     const struct lower_opts *o, struct ir_graph **tpu);

/* 1 if some tensor of Top graph TOP carries the model's own quantisation
 * (a qdtype annotation of fold-qdq): int8 then needs no table. */
int lower_model_quantised(const struct ir_graph *top);
/* 1 if NAME is a chip lower_graph knows. */
int lower_chip_known(const char *name);

/* --- helpers for the op hooks --- */

/* Emit a copy of Top op OP (type, name, attributes) with Tpu tensor indices
 * IN[0..n_in-1] and OUT[0..n_out-1]; returns the new op's index. */
int lower_emit(struct lower_ctx *lc, const struct ir_op *op, int n_in, const int *in,
	       int n_out, const int *out);
/* The Tpu tensor holding Top tensor T as it is: an activation already
 * produced, or a weight copied unchanged (same name, dtype and data). */
int lower_value(struct lower_ctx *lc, int t);
/* Create the Tpu tensor for Top activation T, output of an op being lowered,
 * with dtype DT and shape of T; int8 tensors get SCALE and zero point ZP.
 * A graph output in int8 mode is named "T_i8" (lower_graph adds the Cast). */
int lower_output(struct lower_ctx *lc, int t, enum ir_dtype dt, float scale, int zp);
/* Int8: the activation scale of Top tensor T: the model's own (its
 * qdtype annotation, formats/tpuc-quant.5) when it has one, else from the
 * table (threshold / 127).  Fails naming OP, the tensor and the table. */
int lower_table_scale(struct lower_ctx *lc, const struct ir_op *op, int t, float *scale);
/* Int8: the dtype, scale and zero point of Top activation T: the model's
 * own when annotated (a table entry that disagrees is counted for the note
 * of lower_graph_opts), else from the table: u8 with threshold / 255 when its calibrated min is >= 0 (unless
 * signed_only), else i8 with threshold / 127 (quant_act_dtype), zero point
 * 0; with asymmetric, u8 over [max(min, -T), min(max, T)] by
 * quant_act_asym.  Fails as lower_table_scale. */
int lower_table_act(struct lower_ctx *lc, const struct ir_op *op, int t,
		    enum ir_dtype *dt, float *scale, int *zp);
/* Int8: the Tpu int8 tensor for Top input T of OP.  Activations already
 * i8 or u8 are used as they are; a float activation (f32, bf16, f16: a graph
 * input, or the output of an op in a float mode) is quantised by a Cast
 * with the table's dtype and scale; a float weight used as an activation
 * is quantised per tensor (symmetric, scale max|w| / 127) into a new weight
 * "NAME_i8". */
int lower_act_input(struct lower_ctx *lc, const struct ir_op *op, int t);
/* Int8, an op of one activation: lower_act_input of input 0, and the
 * dtype, scale and zero point of output 0 (lower_table_act).  Returns the
 * input's Tpu tensor, or -1. */
int lower_act_io(struct lower_ctx *lc, const struct ir_op *op, enum ir_dtype *dt,
		 float *s_out, int *zp);
/* Float modes: the Tpu tensor for Top input T of OP computing in float
 * dtype DT (f32, bf16, f16).  An activation of another dtype goes through
 * a Cast (dequantising i8/u8 with its scale); an f32 weight is converted
 * to DT (rounding to nearest even) once, under its own name if free;
 * non-float tensors are used as they are. */
int lower_float_input(struct lower_ctx *lc, const struct ir_op *op, int t, enum ir_dtype dt);
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
/* Int8: emit OP with inputs [input 0 as an int8 activation (lower_act_input),
 * w (i8, per-channel symmetric), bias, multiplier, shift (i32 [channels]
 * each)] and output 0 with the table's dtype, scale and zero point
 * (lower_table_act), copying OP's attributes.  Returns the Tpu op index, or
 * -1. */
int lower_per_channel(struct lower_ctx *lc, const struct ir_op *op, const struct lower_pc *pc);

/* Int8 inputs that share one scale (Add, Concat) lose the smaller ones'
 * precision: beyond this ratio of reaches the op runs in float. */
#define LOWER_RANGE_RATIO 32.0
/* Int8: a Concat's input read by other ops too takes the Concat's scale
 * (lower_graph_opts) only when the two steps differ by at most this ratio. */
#define LOWER_SHARE_RATIO 2.0
/* 1 if the reaches of OP's inputs (table thresholds of activations, the
 * largest |w| of weights) differ by more than LOWER_RANGE_RATIO, a
 * constant broadcast over the activations counting only when it is the
 * larger (a bias below them is rounded as the sum is; a Concat's
 * constant, or one of the output's size, counts both ways), a weight
 * holding an infinity always; 0 too when the table lacks one. */
int lower_ranges_apart(struct lower_ctx *lc, const struct ir_op *op);
/* 1 if an f32 weight OP reads holds an infinity or a NaN (a causal
 * attention mask of -inf): no int8 scale reaches it, and the op runs in
 * float (lower_ranges_apart counts it as apart). */
int lower_nonfinite_weight(const struct lower_ctx *lc, const struct ir_op *op);

/* 1 if every activation input of OP is float in the Tpu graph so far
 * (and there is one), with *MODE the float mode of the first: an op that
 * only gathers values (Concat) then follows them in that mode rather
 * than quantising them for itself. */
int lower_inputs_float(const struct lower_ctx *lc, const struct ir_op *op, enum ir_mode *mode);

/* An op with no int8 form whose state passes from call to call (a
 * recurrent op's initial and final hidden and cell states, which a
 * frame-by-frame caller feeds back): lowered as lower_default in the
 * fallback float mode (in int8) or its own, but with the activation
 * inputs ACTS and the outputs OUTS (a bit per operand) in f32, so that
 * the state is not rounded to bf16 at every frame: an LSTM's cell state
 * integrates and grows (beyond 100 in a voice detector after ten
 * seconds), where a bf16 step is 0.5 and the rounding adds up over
 * frames.  Weights, X and Y keep the float mode. */
int lower_float_state(struct lower_ctx *lc, const struct ir_op *op, unsigned acts, unsigned outs);

/* An op without an int8 form for its case (a MatMul with a constant A,
 * an AveragePool with uneven windows...): in int8, the op's own hook (or
 * lower_default) in the fallback float mode, with Casts around it;
 * otherwise the same in the op's mode.  A hook calls it only in int8. */
int lower_fallback(struct lower_ctx *lc, const struct ir_op *op);

/* The hook of ops whose input BIAS is added to an f32 accumulator (Conv,
 * Gemm): in float modes as lower_default, but a constant bias stays f32;
 * in int8 as lower_default. */
int lower_float_bias(struct lower_ctx *lc, const struct ir_op *op, int bias);

/* Int8 hook of elementwise unary ops: a 256-entry lookup table (attribute
 * lut) from the input's codes to the output's, made by running the op's
 * float kernel on the 256 dequantised input codes and quantising the
 * results; the output's scale covers the largest finite |result| (u8 when
 * no result is negative), so the table needs no threshold for its output
 * (but the table must list it).  Float modes as lower_default. */
int lower_unary_lut(struct lower_ctx *lc, const struct ir_op *op);

/* The default hook: in float modes copy the op through with its inputs in
 * the mode's dtype (lower_float_input) and f32 outputs in that dtype; in
 * int8 mode copy it with quantised inputs and outputs that keep input 0's
 * dtype and scale (data movement, MaxPool, Relu), unless input 0 is a float
 * activation (a graph input, or the output of an op in a float mode): then
 * the op stays in that float dtype. */
int lower_default(struct lower_ctx *lc, const struct ir_op *op);

#endif
