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

#define IR_MAX_RANK 8
#define IR_FORMAT_VERSION 1
/* Bounds a valid graph keeps (ir_verify): each dimension, each tensor's
 * bytes, and the bytes of all activations together (no reuse counted). */
#define IR_MAX_DIM INT32_MAX
#define IR_MAX_TENSOR_BYTES ((int64_t)1 << 40)
#define IR_MAX_ACT_BYTES ((int64_t)64 << 30)

enum ir_dtype {
	DT_F32, DT_F16, DT_BF16, DT_I8, DT_U8, DT_I16, DT_I32, DT_I64, DT_BOOL,
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

/* The closed list of operators.  X(ENUM, "IRName").  Adding an operator:
 * add a line here, write lib/ops/<name>.c from lib/ops/TEMPLATE.c, and add
 * its definition to the table in lib/ops/registry.c. */
#define OP_LIST(X) \
	X(CONV, "Conv") \
	X(BATCHNORM, "BatchNormalization") \
	X(SCALE, "Scale") \
	X(RELU, "Relu") \
	X(CLIP, "Clip") \
	X(MAXPOOL, "MaxPool") \
	X(AVGPOOL, "AveragePool") \
	X(GAVGPOOL, "GlobalAveragePool") \
	X(ADD, "Add") \
	X(MUL, "Mul") \
	X(CONCAT, "Concat") \
	X(PAD, "Pad") \
	X(FLATTEN, "Flatten") \
	X(RESHAPE, "Reshape") \
	X(GEMM, "Gemm") \
	X(MATMUL, "MatMul") \
	X(IDENTITY, "Identity") \
	X(CAST, "Cast") \
	X(SQRT, "Sqrt") \
	X(EXP, "Exp") \
	X(LOG, "Log") \
	X(ERF, "Erf") \
	X(TANH, "Tanh") \
	X(SIGMOID, "Sigmoid") \
	X(HARDSIGMOID, "HardSigmoid") \
	X(HARDSWISH, "HardSwish") \
	X(NEG, "Neg") \
	X(ABS, "Abs") \
	X(RECIPROCAL, "Reciprocal") \
	X(FLOOR, "Floor") \
	X(CEIL, "Ceil") \
	X(ROUND, "Round") \
	X(SIGN, "Sign") \
	X(SOFTPLUS, "Softplus") \
	X(SOFTSIGN, "Softsign") \
	X(ELU, "Elu") \
	X(SELU, "Selu") \
	X(LEAKYRELU, "LeakyRelu") \
	X(CELU, "Celu") \
	X(THRESHOLDEDRELU, "ThresholdedRelu") \
	X(SHRINK, "Shrink") \
	X(SIN, "Sin") \
	X(COS, "Cos") \
	X(TAN, "Tan") \
	X(ASIN, "Asin") \
	X(ACOS, "Acos") \
	X(ATAN, "Atan") \
	X(SINH, "Sinh") \
	X(COSH, "Cosh") \
	X(ASINH, "Asinh") \
	X(ACOSH, "Acosh") \
	X(ATANH, "Atanh") \
	X(NOT, "Not") \
	X(ISNAN, "IsNaN") \
	X(ISINF, "IsInf") \
	X(SUB, "Sub") \
	X(DIV, "Div") \
	X(POW, "Pow") \
	X(MOD, "Mod") \
	X(MAX, "Max") \
	X(MIN, "Min") \
	X(SUM, "Sum") \
	X(MEAN, "Mean") \
	X(EQUAL, "Equal") \
	X(GREATER, "Greater") \
	X(LESS, "Less") \
	X(GREATEROREQUAL, "GreaterOrEqual") \
	X(LESSOREQUAL, "LessOrEqual") \
	X(AND, "And") \
	X(OR, "Or") \
	X(XOR, "Xor") \
	X(BITSHIFT, "BitShift") \
	X(PRELU, "PRelu") \
	X(WHERE, "Where") \
	X(REDUCEMEAN, "ReduceMean") \
	X(REDUCEMAX, "ReduceMax") \
	X(REDUCEMIN, "ReduceMin") \
	X(REDUCESUM, "ReduceSum") \
	X(REDUCEPROD, "ReduceProd") \
	X(REDUCEL1, "ReduceL1") \
	X(REDUCEL2, "ReduceL2") \
	X(REDUCESUMSQUARE, "ReduceSumSquare") \
	X(REDUCELOGSUM, "ReduceLogSum") \
	X(REDUCELOGSUMEXP, "ReduceLogSumExp") \
	X(ARGMAX, "ArgMax") \
	X(ARGMIN, "ArgMin") \
	X(SOFTMAX, "Softmax") \
	X(LOGSOFTMAX, "LogSoftmax") \
	X(HARDMAX, "Hardmax") \
	X(TRANSPOSE, "Transpose") \
	X(SQUEEZE, "Squeeze") \
	X(UNSQUEEZE, "Unsqueeze") \
	X(GATHER, "Gather") \
	X(SLICE, "Slice") \
	X(SPLIT, "Split") \
	X(EXPAND, "Expand") \
	X(TILE, "Tile") \
	X(DEPTHTOSPACE, "DepthToSpace") \
	X(SPACETODEPTH, "SpaceToDepth") \
	X(SHAPE, "Shape") \
	X(SIZE, "Size") \
	X(CONSTANTOFSHAPE, "ConstantOfShape") \
	X(RANGE, "Range") \
	X(RESIZE, "Resize") \
	X(LAYERNORM, "LayerNormalization") \
	X(INSTANCENORM, "InstanceNormalization") \
	X(LRN, "LRN") \
	X(LPNORMALIZATION, "LpNormalization") \
	X(MVN, "MeanVarianceNormalization") \
	X(GATHERELEMENTS, "GatherElements") \
	X(SCATTERELEMENTS, "ScatterElements") \
	X(GATHERND, "GatherND") \
	X(SCATTERND, "ScatterND") \
	X(ONEHOT, "OneHot") \
	X(TOPK, "TopK") \
	X(CUMSUM, "CumSum") \
	X(TRILU, "Trilu") \
	X(EYELIKE, "EyeLike") \
	X(CONVTRANSPOSE, "ConvTranspose") \
	X(GMAXPOOL, "GlobalMaxPool") \
	X(GELU, "Gelu") \
	X(SILU, "SiLU") \
	X(NLLLOSS, "NegativeLogLikelihoodLoss") \
	X(SCELOSS, "SoftmaxCrossEntropyLoss") \
	X(LSTM, "LSTM") \
	X(GRU, "GRU") \
	X(RNN, "RNN")

#define X_ENUM(e, s) OP_##e,
enum op_type { OP_LIST(X_ENUM) OP_COUNT };
const char *op_name(enum op_type t);     /* "Conv", ...; "?" if out of range */
int op_type_from_name(const char *s);    /* -1 if unknown */
#undef X_ENUM

enum attr_kind { ATTR_INT, ATTR_FLOAT, ATTR_INTS, ATTR_FLOATS, ATTR_STR };

struct ir_attr {
	char *name;
	enum attr_kind kind;
	int64_t i;          /* ATTR_INT */
	double f;           /* ATTR_FLOAT */
	int n;              /* element count of ints/floats */
	int64_t *ints;      /* ATTR_INTS */
	float *floats;      /* ATTR_FLOATS */
	char *s;            /* ATTR_STR */
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
	int64_t addr;                  /* global memory byte address (stage addressed), -1 unassigned */
};

enum placement { PLACE_NONE, PLACE_GLOBAL, PLACE_LOCAL };

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
};

/* Construction.  graph_new returns an empty graph of the given dialect. */
struct ir_graph *graph_new(enum ir_dialect d, enum ir_stage s);
void graph_free(struct ir_graph *g);
/* Add a tensor; returns its index.  shape may be NULL when rank is 0. */
int graph_add_tensor(struct ir_graph *g, const char *name, enum ir_dtype dt,
		     int rank, const int64_t *shape);
/* Add a weight tensor holding a copy of data (nbytes must match the shape). */
int graph_add_weight(struct ir_graph *g, const char *name, enum ir_dtype dt,
		     int rank, const int64_t *shape, const void *data);
/* Find a tensor by name; -1 if absent. */
int graph_find_tensor(const struct ir_graph *g, const char *name);
/* A new string naming no tensor of g: base, else base_FIRST,
 * base_FIRST+1, ...  (import and the passes count from 1, weight-reorder
 * from 2; the names stay in the files they write).  The caller frees it. */
char *graph_unique_name(const struct ir_graph *g, const char *base, int first);
/* Add an op with inputs and outputs given as tensor indices; returns its index. */
int graph_add_op(struct ir_graph *g, enum op_type t, const char *name,
		 int n_in, const int *in, int n_out, const int *out);
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
void op_del_attr(struct ir_op *op, const char *name);

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
