/* ir.h - the tpuc intermediate representation shared by every tool.
 *
 * One graph structure serves both dialects: "top" (framework-level float ops)
 * and "tpu" (ops lowered for one chip and one mode, with quantisation).  A
 * graph is a list of tensors and a list of ops in topological order; ops and
 * tensors refer to each other by index.  Weights are tensors with data.
 *
 * Worked example: a conv followed by relu, as onnx2top writes it:
 *
 *   tensors: 0 "x" f32 [1,3,8,8]   1 "w" f32 [4,3,3,3] data   2 "b" f32 [4] data
 *            3 "y" f32 [1,4,8,8]   4 "z" f32 [1,4,8,8]
 *   ops:     0 Conv "conv0" in {0,1,2} out {3} pads=[1,1,1,1] strides=[1,1]
 *            1 Relu "relu0" in {3}     out {4}
 *   inputs {0}, outputs {4}
 *
 * top-opt fuses the relu: op 0 gains do_relu=1 and writes tensor 4 directly.
 * The on-disk form is specified in formats/tpuc-ir.5.
 */
#ifndef TPUC_IR_H
#define TPUC_IR_H

#include <assert.h>
#include <stddef.h>
#include <stdint.h>

#include "ir/name_index.h"

#define IR_MAX_RANK 8
#define IR_FORMAT_VERSION 1
/* Bounds a valid graph keeps (ir_verify): each dimension, each tensor's
 * bytes, and the bytes of all activations together (no reuse counted). */
#define IR_MAX_DIM INT32_MAX
#define IR_MAX_TENSOR_BYTES ((int64_t)1 << 40)
#define IR_MAX_ACT_BYTES ((int64_t)64 << 30)

enum ir_dtype {
	DT_F32, DT_F16, DT_BF16, DT_I8, DT_U8, DT_I16, DT_I32, DT_I64, DT_BOOL,
	/* the Top dialect only (ir-run computes in them; the chip lacks them,
	 * top2tpu refuses them): ONNX's double and wide unsigned integers */
	DT_F64, DT_U16, DT_U32, DT_U64,
	DT_COUNT
};
const char *dtype_name(enum ir_dtype t);   /* "f32", "i8", ... */
int dtype_from_name(const char *s);        /* -1 if unknown */
size_t dtype_size(enum ir_dtype t);        /* bytes per element */

enum ir_dialect { DIALECT_TOP, DIALECT_TPU, DIALECT_COUNT };

/* Stages in pipeline order; each tool names the stages it accepts. */
enum ir_stage {
	STAGE_ORIGIN,     /* onnx2top */
	STAGE_CANONICAL,  /* top-opt */
	STAGE_LOWERED,    /* top2tpu */
	STAGE_REORDERED,  /* weight-reorder */
	STAGE_GROUPED,    /* layergroup */
	STAGE_ADDRESSED,  /* addr-assign */
	STAGE_COUNT
};
const char *dialect_name(enum ir_dialect d);
const char *stage_name(enum ir_stage s);

/* The precision a Tpu graph is lowered for (top2tpu --mode; per op with
 * --qtable).  Files (IR, .tmodel) hold its name; this is the one parser. */
enum ir_mode { MODE_NONE = -1, MODE_F32, MODE_INT8, MODE_BF16, MODE_F16, MODE_COUNT };
const char *mode_name(enum ir_mode m);     /* "f32", "int8", ...; "" for none */
int mode_from_name(const char *s);         /* MODE_NONE (-1) if unknown */

/* The closed list of operators.  X(ENUM, OPCODE, "IRName").
 *
 * OPCODE is the op's stable number in files (the compute command's opcode,
 * formats/tpuc-isa.5): explicit, never a position, so inserting a line
 * renumbers nothing that was ever written.  A new op takes the next unused
 * number (0..255, the ISA's 8-bit field); op_code_unique() in ir.c stops
 * the build when two lines share one.  enum op_type is only the position
 * here and never leaves the process.  Adding an operator: see
 * ARCHITECTURE.md. */
#define OP_LIST(X) \
	X(CONV, 0, "Conv") \
	X(BATCHNORM, 1, "BatchNormalization") \
	X(SCALE, 2, "Scale") \
	X(RELU, 3, "Relu") \
	X(CLIP, 4, "Clip") \
	X(MAXPOOL, 5, "MaxPool") \
	X(AVGPOOL, 6, "AveragePool") \
	X(GAVGPOOL, 7, "GlobalAveragePool") \
	X(ADD, 8, "Add") \
	X(MUL, 9, "Mul") \
	X(CONCAT, 10, "Concat") \
	X(PAD, 11, "Pad") \
	X(FLATTEN, 12, "Flatten") \
	X(RESHAPE, 13, "Reshape") \
	X(GEMM, 14, "Gemm") \
	X(MATMUL, 15, "MatMul") \
	X(IDENTITY, 16, "Identity") \
	X(CAST, 17, "Cast") \
	X(SQRT, 18, "Sqrt") \
	X(EXP, 19, "Exp") \
	X(LOG, 20, "Log") \
	X(ERF, 21, "Erf") \
	X(TANH, 22, "Tanh") \
	X(SIGMOID, 23, "Sigmoid") \
	X(HARDSIGMOID, 24, "HardSigmoid") \
	X(HARDSWISH, 25, "HardSwish") \
	X(NEG, 26, "Neg") \
	X(ABS, 27, "Abs") \
	X(RECIPROCAL, 28, "Reciprocal") \
	X(FLOOR, 29, "Floor") \
	X(CEIL, 30, "Ceil") \
	X(ROUND, 31, "Round") \
	X(SIGN, 32, "Sign") \
	X(SOFTPLUS, 33, "Softplus") \
	X(SOFTSIGN, 34, "Softsign") \
	X(ELU, 35, "Elu") \
	X(SELU, 36, "Selu") \
	X(LEAKYRELU, 37, "LeakyRelu") \
	X(CELU, 38, "Celu") \
	X(THRESHOLDEDRELU, 39, "ThresholdedRelu") \
	X(SHRINK, 40, "Shrink") \
	X(SIN, 41, "Sin") \
	X(COS, 42, "Cos") \
	X(TAN, 43, "Tan") \
	X(ASIN, 44, "Asin") \
	X(ACOS, 45, "Acos") \
	X(ATAN, 46, "Atan") \
	X(SINH, 47, "Sinh") \
	X(COSH, 48, "Cosh") \
	X(ASINH, 49, "Asinh") \
	X(ACOSH, 50, "Acosh") \
	X(ATANH, 51, "Atanh") \
	X(NOT, 52, "Not") \
	X(ISNAN, 53, "IsNaN") \
	X(ISINF, 54, "IsInf") \
	X(SUB, 55, "Sub") \
	X(DIV, 56, "Div") \
	X(POW, 57, "Pow") \
	X(MOD, 58, "Mod") \
	X(MAX, 59, "Max") \
	X(MIN, 60, "Min") \
	X(SUM, 61, "Sum") \
	X(MEAN, 62, "Mean") \
	X(EQUAL, 63, "Equal") \
	X(GREATER, 64, "Greater") \
	X(LESS, 65, "Less") \
	X(GREATEROREQUAL, 66, "GreaterOrEqual") \
	X(LESSOREQUAL, 67, "LessOrEqual") \
	X(AND, 68, "And") \
	X(OR, 69, "Or") \
	X(XOR, 70, "Xor") \
	X(BITSHIFT, 71, "BitShift") \
	X(PRELU, 72, "PRelu") \
	X(WHERE, 73, "Where") \
	X(REDUCEMEAN, 74, "ReduceMean") \
	X(REDUCEMAX, 75, "ReduceMax") \
	X(REDUCEMIN, 76, "ReduceMin") \
	X(REDUCESUM, 77, "ReduceSum") \
	X(REDUCEPROD, 78, "ReduceProd") \
	X(REDUCEL1, 79, "ReduceL1") \
	X(REDUCEL2, 80, "ReduceL2") \
	X(REDUCESUMSQUARE, 81, "ReduceSumSquare") \
	X(REDUCELOGSUM, 82, "ReduceLogSum") \
	X(REDUCELOGSUMEXP, 83, "ReduceLogSumExp") \
	X(ARGMAX, 84, "ArgMax") \
	X(ARGMIN, 85, "ArgMin") \
	X(SOFTMAX, 86, "Softmax") \
	X(LOGSOFTMAX, 87, "LogSoftmax") \
	X(HARDMAX, 88, "Hardmax") \
	X(TRANSPOSE, 89, "Transpose") \
	X(SQUEEZE, 90, "Squeeze") \
	X(UNSQUEEZE, 91, "Unsqueeze") \
	X(GATHER, 92, "Gather") \
	X(SLICE, 93, "Slice") \
	X(SPLIT, 94, "Split") \
	X(EXPAND, 95, "Expand") \
	X(TILE, 96, "Tile") \
	X(DEPTHTOSPACE, 97, "DepthToSpace") \
	X(SPACETODEPTH, 98, "SpaceToDepth") \
	X(SHAPE, 99, "Shape") \
	X(SIZE, 100, "Size") \
	X(CONSTANTOFSHAPE, 101, "ConstantOfShape") \
	X(RANGE, 102, "Range") \
	X(RESIZE, 103, "Resize") \
	X(LAYERNORM, 104, "LayerNormalization") \
	X(INSTANCENORM, 105, "InstanceNormalization") \
	X(LRN, 106, "LRN") \
	X(LPNORMALIZATION, 107, "LpNormalization") \
	X(MVN, 108, "MeanVarianceNormalization") \
	X(GATHERELEMENTS, 109, "GatherElements") \
	X(SCATTERELEMENTS, 110, "ScatterElements") \
	X(GATHERND, 111, "GatherND") \
	X(SCATTERND, 112, "ScatterND") \
	X(ONEHOT, 113, "OneHot") \
	X(TOPK, 114, "TopK") \
	X(CUMSUM, 115, "CumSum") \
	X(TRILU, 116, "Trilu") \
	X(EYELIKE, 117, "EyeLike") \
	X(CONVTRANSPOSE, 118, "ConvTranspose") \
	X(GMAXPOOL, 119, "GlobalMaxPool") \
	X(GELU, 120, "Gelu") \
	X(SILU, 121, "SiLU") \
	X(NLLLOSS, 122, "NegativeLogLikelihoodLoss") \
	X(SCELOSS, 123, "SoftmaxCrossEntropyLoss") \
	X(LSTM, 124, "LSTM") \
	X(GRU, 125, "GRU") \
	X(RNN, 126, "RNN") \
	X(MISH, 127, "Mish") \
	X(NONZERO, 128, "NonZero") \
	X(COMPRESS, 129, "Compress") \
	X(UNIQUE, 130, "Unique") \
	X(NMS, 131, "NonMaxSuppression") \
	X(QUANTIZELINEAR, 200, "QuantizeLinear") \
	X(DEQUANTIZELINEAR, 201, "DequantizeLinear") \
	X(DYNAMICQUANTIZELINEAR, 202, "DynamicQuantizeLinear") \
	X(IF, 203, "If") \
	X(LOOP, 204, "Loop") \
	X(SCAN, 205, "Scan") \
	X(HANNWINDOW, 230, "HannWindow") \
	X(HAMMINGWINDOW, 231, "HammingWindow") \
	X(BLACKMANWINDOW, 232, "BlackmanWindow") \
	X(MELWEIGHTMATRIX, 233, "MelWeightMatrix") \
	X(DFT, 234, "DFT") \
	X(STFT, 235, "STFT") \
	X(GRIDSAMPLE, 236, "GridSample") \
	X(DET, 237, "Det") \
	X(REVERSESEQUENCE, 238, "ReverseSequence") \
	X(MAXUNPOOL, 239, "MaxUnpool") \
	X(ROIALIGN, 240, "RoiAlign") \
	X(MAXPOOLINDICES, 241, "MaxPoolIndices") \
	X(DEPTHTOWIDTH, 251, "DepthToWidth")

#define X_ENUM(e, c, s) OP_##e,
enum op_type { OP_LIST(X_ENUM) OP_COUNT };
const char *op_name(enum op_type t);     /* "Conv", ...; "?" if out of range */
int op_type_from_name(const char *s);    /* -1 if unknown */
#undef X_ENUM
#define OP_CODE_MAX 255
/* The stable opcode of T (OP_LIST), and the op whose opcode is CODE (-1 if
 * none). */
int op_code(enum op_type t);
int op_from_code(int code);

/* ATTR_GRAPH: a subgraph (the body of If, Loop, Scan), owned by the
 * attribute; see lib/run/control.h for how its inputs and outputs line up
 * with the op's. */
enum attr_kind { ATTR_INT, ATTR_FLOAT, ATTR_INTS, ATTR_FLOATS, ATTR_STR, ATTR_GRAPH };

struct ir_attr {
	char *name;
	enum attr_kind kind;
	int64_t i;          /* ATTR_INT */
	double f;           /* ATTR_FLOAT */
	int n;              /* element count of ints/floats */
	int64_t *ints;      /* ATTR_INTS */
	float *floats;      /* ATTR_FLOATS */
	char *s;            /* ATTR_STR */
	struct ir_graph *graph;  /* ATTR_GRAPH */
};

struct ir_tensor {
	char *name;                    /* unique; ONNX names survive every stage */
	enum ir_dtype dtype;
	int rank;
	int64_t shape[IR_MAX_RANK];    /* elements per dimension */
	void *data;                    /* weight payload (64-byte aligned), NULL for activations */
	size_t nbytes;                 /* payload size in bytes */
	int owns_data;                 /* 1 if data was allocated for this tensor (else borrowed) */
	float scale;                   /* quantised tensors: real = scale * (q - zero_point); 0 = none */
	int zero_point;
	enum ir_dtype qdtype;          /* top dialect: the model's own quantisation of this f32
					  tensor (i8 or u8, with scale and zero_point), from a
					  QuantizeLinear/DequantizeLinear pair; DT_F32 (0) = none */
	int64_t addr;                  /* global memory byte address (stage addressed), -1 unassigned */
	uint32_t dyn;                  /* bit d set: dimension d is dynamic, its extent known only
					  at run time (an output of NonZero, a Slice of run-time
					  starts ...); shape[d] then holds the extent shape inference
					  gives without the data: an upper bound where the op has one,
					  else 1 (formats/tpuc-ir.5, "Dynamic dimensions") */
};

/* 1 if tensor T has a dynamic dimension. */
static inline int tensor_dyn(const struct ir_tensor *t)
{
	return t->dyn != 0;
}

/* Where an op's activations live while it runs: none (not grouped yet),
 * DDR (a global op, one at a time), local memory (a layer group), or the
 * host: an op the chip has no form for, run by the host CPU with the
 * interpreter's kernel on its tensors in DDR (a host command, tpuc-isa(5)).
 * top2tpu places host ops; the mark is kept at every stage. */
enum placement { PLACE_NONE, PLACE_GLOBAL, PLACE_LOCAL, PLACE_HOST };

struct ir_op {
	enum op_type type;
	char *name;
	int n_in, n_out;
	int *in;                       /* tensor indices; -1 marks an absent optional input */
	int *out;
	int n_attr;
	struct ir_attr *attr;
	int group;                     /* layer group id (stage grouped), -1 none */
	enum placement place;          /* where the op's activations live while it runs */
};

struct ir_graph {
	enum ir_dialect dialect;
	enum ir_stage stage;
	char *name;                    /* model name */
	char *chip;                    /* tpu dialect: chip name, e.g. "tpu-a" */
	enum ir_mode mode;             /* tpu dialect; MODE_NONE in top */
	int n_tensors, cap_tensors;
	struct ir_tensor *tensors;
	int n_ops, cap_ops;
	struct ir_op *ops;
	int n_inputs, n_outputs;
	int *inputs;                   /* graph inputs, tensor indices */
	int *outputs;                  /* graph outputs, tensor indices */
	int64_t neuron_bytes;          /* addressed: activation memory size */
	int64_t coeff_bytes;           /* addressed: weight memory size */
	void *backing;                 /* file buffer that borrowed weight data points into */
	size_t backing_len;
	struct name_index names;       /* the first index of each name among tensors
					  [0, n_named), kept by graph_add_tensor and
					  graph_compact, for graph_find_tensor; a copy of
					  the struct by value must not keep it (dynrun) */
	int n_named;
};

/* Construction.  graph_new returns an empty graph of the given dialect. */
struct ir_graph *graph_new(enum ir_dialect d, enum ir_stage s);
void graph_free(struct ir_graph *g);
/* A value buffer per tensor of g, for running it: a weight's own data,
 * else zeroed 64-byte aligned memory of the tensor's bytes; freed (but
 * the weights') by graph_values_free. */
void **graph_values_new(const struct ir_graph *g);
void graph_values_free(const struct ir_graph *g, void **val);
/* Add a tensor; returns its index.  shape may be NULL when rank is 0. */
int graph_add_tensor(struct ir_graph *g, const char *name, enum ir_dtype dt,
		     int rank, const int64_t *shape);
/* Add a weight tensor holding a copy of data (nbytes must match the shape). */
/* Elements [k0, k1) of weight T along axis AX as a new weight named
 * "<T>_<TAG><k0>", with T's dtype, scale and zero point. */
int graph_weight_slice(struct ir_graph *g, int t, int ax, int64_t k0, int64_t k1, const char *tag);
int graph_add_weight(struct ir_graph *g, const char *name, enum ir_dtype dt,
		     int rank, const int64_t *shape, const void *data);
/* Find a tensor by name (the first of that name); -1 if absent.  Constant
 * time: from g's name index, then a scan of the tensors past it (none
 * but in a struct copied without its index). */
int graph_find_tensor(const struct ir_graph *g, const char *name);
/* A new string naming no tensor of g: base, else base_FIRST,
 * base_FIRST+1, ...  (import and the passes count from 1, weight-reorder
 * from 2; the names stay in the files they write).  The caller frees it. */
char *graph_unique_name(const struct ir_graph *g, const char *base, int first);
/* Add an op with inputs and outputs given as tensor indices; returns its index. */
int graph_add_op(struct ir_graph *g, enum op_type t, const char *name,
		 int n_in, const int *in, int n_out, const int *out);
/* The ops from index n0 on (made by a rewrite) each moved just before op
 * owner[k - n0] of those before n0, in the order they were made. */
void graph_place_before(struct ir_graph *g, int n0, const int *owner);
/* Make G's inputs the N_IN tensors IN and its outputs the N_OUT tensors OUT
 * (copied), replacing any it had. */
void graph_set_io(struct ir_graph *g, int n_in, const int *in, int n_out, const int *out);
/* Replace op's inputs with the n tensor indices in `in` (resized to fit). */
void op_set_inputs(struct ir_op *op, int n, const int *in);
/* Set the payload of tensor t to a fresh 64-byte aligned copy of data. */
void tensor_set_data(struct ir_tensor *t, const void *data, size_t nbytes);
/* Elements and bytes of t's shape.  Saturating (INT64_MAX, SIZE_MAX) where
 * the product overflows, which a graph that passed ir_verify never does. */
int64_t tensor_numel(const struct ir_tensor *t);
size_t tensor_bytes(const struct ir_tensor *t);
/* A shape of RANK dims as "[d0,d1,...]" in BUF of CAP bytes (cut short
 * to fit), for messages. */
void shape_str(char *buf, size_t cap, int rank, const int64_t *shape);
/* Remove ops marked with type == OP_COUNT and tensors no op or graph I/O
 * refers to, renumbering indices.  Passes mark ops dead, then call this. */
void graph_compact(struct ir_graph *g);
/* Deep copy (weights copied). */
struct ir_graph *graph_clone(const struct ir_graph *g);
/* The same whose weights borrow g's payloads (g must outlive it). */
struct ir_graph *graph_clone_borrowing(const struct ir_graph *g);

/* Attributes. */
void op_set_int(struct ir_op *op, const char *name, int64_t v);
void op_set_float(struct ir_op *op, const char *name, double v);
void op_set_ints(struct ir_op *op, const char *name, int n, const int64_t *v);
void op_set_floats(struct ir_op *op, const char *name, int n, const float *v);
void op_set_str(struct ir_op *op, const char *name, const char *v);
const struct ir_attr *op_attr(const struct ir_op *op, const char *name);
int64_t op_int(const struct ir_op *op, const char *name, int64_t def);
double op_float(const struct ir_op *op, const char *name, double def);
/* Copy up to max ints into v; returns the count found, or 0 (v untouched). */
int op_ints(const struct ir_op *op, const char *name, int64_t *v, int max);
const char *op_str(const struct ir_op *op, const char *name, const char *def);
/* Set attribute NAME to subgraph SUB, which the op then owns. */
void op_set_graph(struct ir_op *op, const char *name, struct ir_graph *sub);
/* The subgraph of attribute NAME, or NULL. */
struct ir_graph *op_graph(const struct ir_op *op, const char *name);
void op_del_attr(struct ir_op *op, const char *name);
/* Set on OP a copy of attribute A (any kind), replacing one of its name. */
void op_copy_attr(struct ir_op *op, const struct ir_attr *a);
/* Set on DST a copy of every attribute of SRC (another op). */
void op_copy_attrs(struct ir_op *dst, const struct ir_op *src);
/* Drop every attribute of OP (an op rewritten into another type). */
void op_clear_attrs(struct ir_op *op);

/* Serialisation (formats/tpuc-ir.5).  ir_read accepts "-" for stdin; weight
 * data is borrowed from the file buffer where it is aligned.  ir_write is
 * atomic (NULL or "-" writes stdout).  Both verify the graph. */
int ir_read(const char *path, struct ir_graph **g);
int ir_write(const char *path, const struct ir_graph *g);
/* Refuse a graph whose dialect differs or whose stage is not in the mask
 * (bit 1 << stage); the message names the file, the stage found and the
 * stages expected. */
int ir_expect(const struct ir_graph *g, const char *path, enum ir_dialect d,
	      unsigned stage_mask);
/* Structural checks: dimensions and sizes within the IR_MAX_ bounds,
 * indices in range, each tensor produced once, ops in topological order,
 * weight sizes match shapes, graph inputs neither weights nor repeated. */
int ir_verify(const struct ir_graph *g);
/* Checks of each op against its definition (lib/ops/registry.c), for a
 * graph that passed ir_verify: the op's shape inference, run on the stored
 * inputs and attributes, must succeed and give exactly the stored dtype and
 * shape of every output.  The graph is left as it was.  -1 with a message
 * "op 'NAME' (Type): ..." otherwise.  ir_read runs both. */
int ir_verify_ops(struct ir_graph *g);

#endif
