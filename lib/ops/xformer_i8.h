/* xformer_i8.h - int8 forms of the transformer normalisations: Softmax and
 * LayerNormalization read and write i8/u8 activations instead of falling
 * back to a float mode between two Casts (formats/tpuc-quant.5, "Int8
 * Softmax and LayerNormalization").
 */
#ifndef TPUC_OPS_XFORMER_I8_H
#define TPUC_OPS_XFORMER_I8_H

#include "back/lower.h"
#include "ir/op.h"

/* Softmax's lower hook: int8 in and out, an exp table over code distances
 * and an integer output multiplier; other modes and forms as before. */
int softmax_lower(struct lower_ctx *lc, const struct ir_op *op);
/* Softmax's Tpu kernel: the int8 form when the output is quantised, else
 * the float kernel (quant_run_f32). */
int softmax_tpu(struct kern *k);

/* LayerNormalization's lower hook: int8 in and out with f32 Scale and B,
 * when only the normalised output is used. */
int layernorm_lower(struct lower_ctx *lc, const struct ir_op *op);
int layernorm_tpu(struct kern *k);

/* Div's lower hook: in int8, an activation already i8 or u8 divided by one
 * positive constant keeps its codes and takes scale s_in / c (the scaled
 * dot product of attention); otherwise the fallback float mode. */
int div_lower(struct lower_ctx *lc, const struct ir_op *op);
/* Div's Tpu kernel: codes copied when the output is quantised, else the
 * float kernel. */
int div_tpu(struct kern *k);

/* The Tpu kernel of an op that only moves values (Transpose, Squeeze,
 * Unsqueeze): on i8/u8 views it moves the codes (through the float kernel,
 * which carries every code exactly); float views as quant_run_f32.  With
 * lower_default as the lower hook such an op follows its input's dtype,
 * scale and zero point. */
int move_codes_tpu(struct kern *k);

#endif
