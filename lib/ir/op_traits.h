/* op_traits.h - the facts about an operator that stages below lib/ops/
 * need as data: how the cost model times it, whether its kernel takes f32
 * only, whether it carries per-channel requantisation operands, whether it
 * is a copy, whether an activation fuses into it.  One record per op that differs from the default (a vector op
 * with no flags); lib/ir/op_traits.c builds the table indexed by op type.
 * The op's hooks (shape inference, kernels, lowering) stay in lib/ops/.
 */
#ifndef TPUC_IR_OP_TRAITS_H
#define TPUC_IR_OP_TRAITS_H

#include "ir/ir.h"

/* How lib/chip/cost.c times one compute command of the op. */
enum op_cost {
	COST_VECTOR,      /* default: one vector pass over the output */
	COST_CONV,        /* cube over OC x positions x IC/group x taps; depthwise on the vector unit */
	COST_CONVT,       /* cube, each input position scattered at every tap */
	COST_GEMM,        /* cube, [M, K] x [K, N] */
	COST_MATMUL,      /* cube, batched, optionally a chunk of axis 1 */
	COST_RNN,         /* cube, one step after another, per direction */
	COST_POOL,        /* vector, kh x kw taps per output */
	COST_GPOOL,       /* vector over the whole input */
	COST_COUNT
};

enum op_flag {
	/* The importer refuses every dtype but f32 (the kernels of the
	 * others check dtypes in their shape inference). */
	OPF_F32_ONLY = 1 << 0,
	/* In int8 its inputs are [x, w, bias, multiplier, shift], requantised
	 * per output channel; tpu-sim checks the multipliers and shifts. */
	OPF_REQUANT_CHAN = 1 << 1,
	/* weight-reorder merges bias, multiplier and shift into one [OC, 3]
	 * coefficient tensor (every OPF_REQUANT_CHAN op but MatMul, whose B
	 * may be an activation). */
	OPF_COEFF = 1 << 2,
	/* Moves no data when its input and output hold the same elements:
	 * codegen may alias them (lib/chip/isa.c). */
	OPF_COPY = 1 << 3,
	/* top-opt's fuse-act folds a following Relu, or Clip from 0, into
	 * it as do_relu (and relu_limit): its kernels apply them. */
	OPF_FUSE_RELU = 1 << 4,
};

/* X(ENUM, cost, flags): the ops that are not plain vector ops. */
#define OP_TRAITS(X) \
	X(CONV, COST_CONV, OPF_F32_ONLY | OPF_REQUANT_CHAN | OPF_COEFF | OPF_FUSE_RELU) \
	X(CONVTRANSPOSE, COST_CONVT, OPF_REQUANT_CHAN | OPF_COEFF) \
	X(GEMM, COST_GEMM, OPF_F32_ONLY | OPF_REQUANT_CHAN | OPF_COEFF | OPF_FUSE_RELU) \
	X(MATMUL, COST_MATMUL, OPF_F32_ONLY | OPF_REQUANT_CHAN) \
	X(SCALE, COST_VECTOR, OPF_F32_ONLY | OPF_REQUANT_CHAN | OPF_COEFF | OPF_FUSE_RELU) \
	X(LSTM, COST_RNN, 0) \
	X(GRU, COST_RNN, 0) \
	X(RNN, COST_RNN, 0) \
	X(MAXPOOL, COST_POOL, OPF_F32_ONLY) \
	X(AVGPOOL, COST_POOL, OPF_F32_ONLY) \
	X(GAVGPOOL, COST_GPOOL, OPF_F32_ONLY) \
	X(GMAXPOOL, COST_GPOOL, OPF_F32_ONLY) \
	X(BATCHNORM, COST_VECTOR, OPF_F32_ONLY) \
	X(RELU, COST_VECTOR, OPF_F32_ONLY) \
	X(CLIP, COST_VECTOR, OPF_F32_ONLY) \
	X(ADD, COST_VECTOR, OPF_F32_ONLY | OPF_FUSE_RELU) \
	X(MUL, COST_VECTOR, OPF_F32_ONLY) \
	X(RESHAPE, COST_VECTOR, OPF_COPY) \
	X(FLATTEN, COST_VECTOR, OPF_COPY) \
	X(SQUEEZE, COST_VECTOR, OPF_COPY) \
	X(UNSQUEEZE, COST_VECTOR, OPF_COPY) \
	X(IDENTITY, COST_VECTOR, OPF_COPY)

struct op_traits {
	unsigned char cost;     /* enum op_cost */
	unsigned char flags;    /* enum op_flag */
};

extern const struct op_traits op_traits[OP_COUNT];

static inline int op_has(enum op_type t, enum op_flag f)
{
	return (unsigned)t < OP_COUNT && (op_traits[t].flags & f) != 0;
}

static inline enum op_cost op_cost_class(enum op_type t)
{
	return (unsigned)t < OP_COUNT ? (enum op_cost)op_traits[t].cost : COST_VECTOR;
}

#endif
