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
	 * coefficient tensor (MatMul: [N, 3] or [1, 3]): one DMA command
	 * instead of three. */
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
	X(MATMUL, COST_MATMUL, OPF_F32_ONLY | OPF_REQUANT_CHAN | OPF_COEFF) \
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

/* X(ENUM, min_in, max_in, tpu_min_in, tpu_max_in, min_out, max_out): the
 * inputs and outputs of the ops that do not take one input and give one
 * output (the default).  tpu_*: in the Tpu dialect, where an int8 op gains
 * its requantisation operands.  IO_ANY: no upper bound.  An absent
 * optional input (-1) may stand below max_in, never below min_in.  The IR
 * reader, shape inference (op_infer) and the ONNX importer's table all
 * check against these. */
#define IO_ANY 255
#define OP_IO(X) \
	X(CONV, 2, 3, 2, 5, 1, 1) \
	X(CONVTRANSPOSE, 2, 3, 2, 5, 1, 1) \
	X(GEMM, 2, 3, 2, 5, 1, 1) \
	X(MATMUL, 2, 2, 2, 5, 1, 1) \
	X(SCALE, 3, 3, 2, 5, 1, 1) \
	X(BATCHNORM, 5, 5, 5, 5, 1, 1) \
	X(ADD, 2, 2, 2, 2, 1, 1) \
	X(MUL, 2, 2, 2, 2, 1, 1) \
	X(SUB, 2, 2, 2, 2, 1, 1) \
	X(DIV, 2, 2, 2, 2, 1, 1) \
	X(POW, 2, 2, 2, 2, 1, 1) \
	X(MOD, 2, 2, 2, 2, 1, 1) \
	X(EQUAL, 2, 2, 2, 2, 1, 1) \
	X(GREATER, 2, 2, 2, 2, 1, 1) \
	X(LESS, 2, 2, 2, 2, 1, 1) \
	X(GREATEROREQUAL, 2, 2, 2, 2, 1, 1) \
	X(LESSOREQUAL, 2, 2, 2, 2, 1, 1) \
	X(AND, 2, 2, 2, 2, 1, 1) \
	X(OR, 2, 2, 2, 2, 1, 1) \
	X(XOR, 2, 2, 2, 2, 1, 1) \
	X(BITSHIFT, 2, 2, 2, 2, 1, 1) \
	X(PRELU, 2, 2, 2, 2, 1, 1) \
	X(WHERE, 3, 3, 3, 3, 1, 1) \
	X(MAX, 1, IO_ANY, 1, IO_ANY, 1, 1) \
	X(MIN, 1, IO_ANY, 1, IO_ANY, 1, 1) \
	X(SUM, 1, IO_ANY, 1, IO_ANY, 1, 1) \
	X(MEAN, 1, IO_ANY, 1, IO_ANY, 1, 1) \
	X(CONCAT, 1, IO_ANY, 1, IO_ANY, 1, 1) \
	X(GATHER, 2, 2, 2, 2, 1, 1) \
	X(GATHERELEMENTS, 2, 2, 2, 2, 1, 1) \
	X(GATHERND, 2, 2, 2, 2, 1, 1) \
	X(SCATTERELEMENTS, 3, 3, 3, 3, 1, 1) \
	X(SCATTERND, 3, 3, 3, 3, 1, 1) \
	X(ONEHOT, 2, 2, 2, 2, 1, 1) \
	X(RANGE, 3, 3, 3, 3, 1, 1) \
	X(CONSTANTOFSHAPE, 0, 1, 0, 1, 1, 1) \
	X(SPLIT, 1, 1, 1, 1, 1, IO_ANY) \
	X(TOPK, 1, 1, 1, 1, 1, 2) \
	X(LAYERNORM, 2, 3, 2, 3, 1, 3) \
	X(INSTANCENORM, 3, 3, 3, 3, 1, 1) \
	X(NLLLOSS, 2, 3, 2, 3, 1, 1) \
	X(SCELOSS, 2, 3, 2, 3, 1, 2) \
	X(LSTM, 3, 8, 3, 8, 1, 3) \
	X(GRU, 3, 6, 3, 6, 1, 2) \
	X(RNN, 3, 6, 3, 6, 1, 2) \
	X(QUANTIZELINEAR, 2, 3, 2, 3, 1, 1) \
	X(DEQUANTIZELINEAR, 2, 3, 2, 3, 1, 1) \
	X(DYNAMICQUANTIZELINEAR, 1, 1, 1, 1, 3, 3) \
	X(CAST, 1, 1, 1, 4, 1, 1) \
	X(RESHAPE, 1, 2, 1, 1, 1, 1) \
	X(EXPAND, 1, 2, 1, 1, 1, 1) \
	X(TILE, 1, 2, 1, 1, 1, 1) \
	X(HANNWINDOW, 0, 0, 0, 0, 1, 1) \
	X(HAMMINGWINDOW, 0, 0, 0, 0, 1, 1) \
	X(BLACKMANWINDOW, 0, 0, 0, 0, 1, 1) \
	X(MELWEIGHTMATRIX, 0, 0, 0, 0, 1, 1) \
	X(STFT, 1, 2, 1, 2, 1, 1) \
	X(GRIDSAMPLE, 2, 2, 2, 2, 1, 1) \
	X(REVERSESEQUENCE, 2, 2, 2, 2, 1, 1) \
	X(MAXUNPOOL, 2, 2, 2, 2, 1, 1) \
	X(ROIALIGN, 3, 3, 3, 3, 1, 1) \
	X(IF, 1, IO_ANY, 1, IO_ANY, 1, IO_ANY) \
	X(LOOP, 0, IO_ANY, 0, IO_ANY, 1, IO_ANY) \
	X(SCAN, 1, IO_ANY, 1, IO_ANY, 1, IO_ANY)

struct op_io {
	unsigned char min_in, max_in, tpu_min_in, tpu_max_in, min_out, max_out;
};

/* The counts of op type T (OP_IO, or one and one). */
struct op_io op_io_of(enum op_type t);

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

/* 1 when ir-run computes op type T with tensors of dtype DT: f32 always;
 * an f32-only op in other dtypes only where lib/ops/anydtype.c has its
 * kernel. */
int op_takes_dtype(enum op_type t, enum ir_dtype dt);

/* The spatial dimensions of the N-D (3-D) Conv and pooling forms. */
#define SPATIAL_ND 3

#endif
