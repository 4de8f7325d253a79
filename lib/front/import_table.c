/* import_table.c - the ONNX operators the importer takes: per op_type its
 * input counts, the attributes it knows, its converter (lib/front/import_ops.h)
 * and the IR op it becomes (lib/front/import_table.h).
 */
#include <limits.h>
#include <string.h>

#include "front/import_ops.h"
#include "front/import_table.h"
#include "ir/base.h"
#include "ir/op.h"

/* ops taken as they are: their counts are the IR op's (OP_IO) */
#define UNARY(name) { name, FROM_DEF, FROM_DEF, { 0 }, NULL, NULL, 0 }
#define BINARY(name) UNARY(name)
#define VARIADIC(name) UNARY(name)
#define REDUCE(name) { name, 1, 2, { "axes", "keepdims", "noop_with_empty_axes" }, cv_reduce, NULL, 0 }

const struct node_rule node_rules[] = {
	{ "Conv", 2, 3, { "auto_pad", "dilations", "group", "kernel_shape", "pads", "strides" }, cv_conv, NULL, 0 },
	{ "BatchNormalization", 5, 5, { "epsilon", "momentum", "spatial", "training_mode" }, cv_batchnorm, NULL, 0 },
	UNARY("Relu"),
	{ "Clip", 1, 3, { "min", "max" }, cv_clip, NULL, 0 },
	{ "MaxPool", 1, 1, { "auto_pad", "ceil_mode", "dilations", "kernel_shape", "pads",
			     "storage_order", "strides" }, cv_maxpool, NULL, 2 },
	{ "AveragePool", 1, 1, { "auto_pad", "ceil_mode", "count_include_pad", "dilations",
				 "kernel_shape", "pads", "strides" }, cv_avgpool, NULL, 0 },
	UNARY("GlobalAveragePool"),
	BINARY("Add"),
	BINARY("Mul"),
	{ "Concat", 1, ANY, { "axis" }, cv_concat, NULL, 0 },
	{ "Pad", 1, 4, { "mode", "pads", "value" }, cv_pad, NULL, 0 },
	{ "Flatten", 1, 1, { "axis" }, cv_flatten, NULL, 0 },
	{ "Reshape", 2, 2, { "allowzero" }, cv_reshape, NULL, 0 },
	{ "Gemm", 2, 3, { "alpha", "beta", "transA", "transB" }, cv_gemm, NULL, 0 },
	BINARY("MatMul"),
	UNARY("Identity"),
	{ "Cast", 1, 1, { "to" }, cv_cast, NULL, 0 },
	{ "Dropout", 1, 3, { "ratio", "seed" }, cv_dropout, "Identity", 2 },
	/* unary */
	UNARY("Sqrt"), UNARY("Exp"), UNARY("Log"), UNARY("Erf"), UNARY("Tanh"), UNARY("Sigmoid"),
	UNARY("HardSwish"), UNARY("Neg"), UNARY("Abs"), UNARY("Reciprocal"), UNARY("Floor"),
	UNARY("Ceil"), UNARY("Round"), UNARY("Sign"), UNARY("Softplus"), UNARY("Softsign"), UNARY("Mish"),
	UNARY("Sin"), UNARY("Cos"), UNARY("Tan"), UNARY("Asin"), UNARY("Acos"), UNARY("Atan"),
	UNARY("Sinh"), UNARY("Cosh"), UNARY("Asinh"), UNARY("Acosh"), UNARY("Atanh"),
	UNARY("Not"), UNARY("IsNaN"),
	{ "Gelu", 1, 1, { "approximate" }, cv_gelu, NULL, 0 },
	{ "HardSigmoid", 1, 1, { "alpha", "beta" }, cv_hardsigmoid, NULL, 0 },
	{ "Elu", 1, 1, { "alpha" }, cv_alpha1, NULL, 0 },
	{ "Selu", 1, 1, { "alpha", "gamma" }, cv_selu, NULL, 0 },
	{ "LeakyRelu", 1, 1, { "alpha" }, cv_leakyrelu, NULL, 0 },
	{ "Celu", 1, 1, { "alpha" }, cv_alpha1, NULL, 0 },
	{ "ThresholdedRelu", 1, 1, { "alpha" }, cv_alpha1, NULL, 0 },
	{ "Shrink", 1, 1, { "bias", "lambd" }, cv_shrink, NULL, 0 },
	{ "IsInf", 1, 1, { "detect_negative", "detect_positive" }, cv_isinf, NULL, 0 },
	/* elementwise of several inputs */
	BINARY("Sub"), BINARY("Div"), BINARY("Pow"), BINARY("Equal"), BINARY("Greater"),
	BINARY("Less"), BINARY("GreaterOrEqual"), BINARY("LessOrEqual"), BINARY("And"),
	BINARY("Or"), BINARY("Xor"), BINARY("PRelu"),
	VARIADIC("Max"), VARIADIC("Min"), VARIADIC("Sum"), VARIADIC("Mean"),
	{ "Mod", 2, 2, { "fmod" }, cv_mod, NULL, 0 },
	{ "BitShift", 2, 2, { "direction" }, cv_bitshift, NULL, 0 },
	{ "Where", 3, 3, { 0 }, NULL, NULL, 0 },
	/* reductions */
	REDUCE("ReduceMean"), REDUCE("ReduceMax"), REDUCE("ReduceMin"), REDUCE("ReduceSum"),
	REDUCE("ReduceProd"), REDUCE("ReduceL1"), REDUCE("ReduceL2"), REDUCE("ReduceSumSquare"),
	REDUCE("ReduceLogSum"), REDUCE("ReduceLogSumExp"),
	{ "ArgMax", 1, 1, { "axis", "keepdims", "select_last_index" }, cv_argmax, NULL, 0 },
	{ "ArgMin", 1, 1, { "axis", "keepdims", "select_last_index" }, cv_argmax, NULL, 0 },
	{ "Softmax", 1, 1, { "axis" }, cv_softmax, NULL, 0 },
	{ "LogSoftmax", 1, 1, { "axis" }, cv_softmax, NULL, 0 },
	{ "Hardmax", 1, 1, { "axis" }, cv_softmax, NULL, 0 },
	/* data movement and shapes */
	{ "Transpose", 1, 1, { "perm" }, cv_transpose, NULL, 0 },
	{ "Squeeze", 1, 2, { "axes" }, cv_squeeze, NULL, 0 },
	{ "Unsqueeze", 1, 2, { "axes" }, cv_unsqueeze, NULL, 0 },
	{ "Gather", 2, 2, { "axis" }, cv_axis0, NULL, 0 },
	{ "Slice", 1, 5, { "starts", "ends", "axes" }, cv_slice, NULL, 0 },
	{ "Split", 1, 2, { "axis", "num_outputs", "split" }, cv_split, NULL, INT_MAX },
	{ "Expand", 2, 2, { 0 }, cv_expand, NULL, 0 },
	{ "Tile", 2, 2, { 0 }, cv_tile, NULL, 0 },
	{ "DepthToSpace", 1, 1, { "blocksize", "mode" }, cv_depthtospace, NULL, 0 },
	{ "SpaceToDepth", 1, 1, { "blocksize" }, cv_blocksize, NULL, 0 },
	{ "Shape", 1, 1, { "start", "end" }, cv_shape, NULL, 0 },
	UNARY("Size"),
	{ "ConstantOfShape", 1, 1, { "value" }, cv_constantofshape, NULL, 0 },
	{ "Range", 3, 3, { 0 }, NULL, NULL, 0 },
	{ "Resize", 1, 4, { "antialias", "axes", "coordinate_transformation_mode", "cubic_coeff_a",
			    "exclude_outside", "extrapolation_value", "keep_aspect_ratio_policy", "mode",
			    "nearest_mode" }, cv_resize, NULL, 0 },
	{ "Upsample", 1, 2, { "mode", "scales" }, cv_upsample, "Resize", 0 },
	/* normalisation */
	{ "LayerNormalization", 2, 3, { "axis", "epsilon", "stash_type" }, cv_layernorm, NULL, 3 },
	{ "InstanceNormalization", 3, 3, { "epsilon" }, cv_epsilon, NULL, 0 },
	{ "LRN", 1, 1, { "alpha", "beta", "bias", "size" }, cv_lrn, NULL, 0 },
	{ "LpNormalization", 1, 1, { "axis", "p" }, cv_lpnorm, NULL, 0 },
	{ "MeanVarianceNormalization", 1, 1, { "axes" }, cv_mvn, NULL, 0 },
	/* index operators, ConvTranspose, GlobalMaxPool */
	{ "GatherElements", 2, 2, { "axis" }, cv_axis0, NULL, 0 },
	{ "ScatterElements", 3, 3, { "axis", "reduction" }, cv_scatterelements, NULL, 0 },
	{ "Scatter", 3, 3, { "axis" }, cv_scatterelements, "ScatterElements", 0 },
	{ "GatherND", 2, 2, { "batch_dims" }, cv_gathernd, NULL, 0 },
	{ "ScatterND", 3, 3, { "reduction" }, cv_scatternd, NULL, 0 },
	{ "OneHot", 3, 3, { "axis" }, cv_onehot, NULL, 0 },
	{ "TopK", 1, 2, { "axis", "k", "largest", "sorted" }, cv_topk, NULL, 2 },
	{ "NonZero", 1, 1, { 0 }, cv_datadep, NULL, 0 },
	{ "Compress", 2, 2, { "axis" }, cv_datadep, NULL, 0 },
	{ "Unique", 1, 1, { "sorted", "axis" }, cv_datadep, NULL, 0 },
	{ "NonMaxSuppression", 2, 5, { "center_point_box" }, cv_datadep, NULL, 0 },
	{ "CumSum", 2, 2, { "exclusive", "reverse" }, cv_cumsum, NULL, 0 },
	{ "Trilu", 1, 2, { "upper" }, cv_trilu, NULL, 0 },
	{ "EyeLike", 1, 1, { "dtype", "k" }, cv_eyelike, NULL, 0 },
	{ "CastLike", 2, 2, { 0 }, cv_castlike, "Cast", 0 },
	{ "ConvTranspose", 2, 3, { "auto_pad", "dilations", "group", "kernel_shape", "output_padding",
				   "output_shape", "pads", "strides" }, cv_convtranspose, NULL, 0 },
	UNARY("GlobalMaxPool"),
	{ "NegativeLogLikelihoodLoss", 2, 3, { "ignore_index", "reduction" }, cv_loss, NULL, 0 },
	{ "SoftmaxCrossEntropyLoss", 2, 3, { "ignore_index", "reduction" }, cv_loss, NULL, 2 },
	/* audio front ends, ir-run only (lib/front/import_signal.c) */
	{ "HannWindow", 1, 1, { "output_datatype", "periodic" }, cv_window, NULL, 0 },
	{ "HammingWindow", 1, 1, { "output_datatype", "periodic" }, cv_window, NULL, 0 },
	{ "BlackmanWindow", 1, 1, { "output_datatype", "periodic" }, cv_window, NULL, 0 },
	{ "MelWeightMatrix", 5, 5, { "output_datatype" }, cv_melweightmatrix, NULL, 0 },
	{ "DFT", 1, 2, { "axis", "inverse", "onesided" }, cv_dft, NULL, 0 },
	{ "STFT", 2, 4, { "onesided" }, cv_stft, NULL, 0 },
	{ "GridSample", 2, 2, { "align_corners", "mode", "padding_mode" }, cv_gridsample, NULL, 0 },
	UNARY("Det"),
	{ "ReverseSequence", 2, 2, { "batch_axis", "time_axis" }, cv_reversesequence, NULL, 0 },
	/* ir-run only (lib/front/import_detect.c) */
	{ "MaxUnpool", 2, 3, { "kernel_shape", "pads", "strides" }, cv_maxunpool, NULL, 0 },
	{ "RoiAlign", 3, 3, { "coordinate_transformation_mode", "mode", "output_height", "output_width",
			      "sampling_ratio", "spatial_scale" }, cv_roialign, NULL, 0 },
	/* recurrent */
	{ "LSTM", 3, 8, { "activations", "clip", "direction", "hidden_size", "input_forget", "layout" },
	  cv_rnn, NULL, 3 },
	{ "GRU", 3, 6, { "activations", "clip", "direction", "hidden_size", "layout",
			 "linear_before_reset" }, cv_rnn, NULL, 2 },
	{ "RNN", 3, 6, { "activations", "clip", "direction", "hidden_size", "layout" }, cv_rnn, NULL, 2 },
	/* quantisation (lib/front/import_quant.c); the QOperator forms become
	 * their QDQ meaning, starting with a DequantizeLinear */
	{ "QuantizeLinear", 2, 3, { "axis" }, cv_qaxis, NULL, 0 },
	{ "DequantizeLinear", 2, 3, { "axis" }, cv_qaxis, NULL, 0 },
	{ "DynamicQuantizeLinear", 1, 1, { 0 }, NULL, NULL, 3 },
#define QCONV_ATTRS { "auto_pad", "dilations", "group", "kernel_shape", "pads", "strides" }
	{ "QLinearConv", 8, 9, QCONV_ATTRS, cv_qlinearconv, "DequantizeLinear", 0 },
	{ "ConvInteger", 2, 4, QCONV_ATTRS, cv_convinteger, "DequantizeLinear", 0 },
	{ "QLinearMatMul", 8, 8, { 0 }, cv_qlinearmatmul, "DequantizeLinear", 0 },
	{ "MatMulInteger", 2, 4, { 0 }, cv_matmulinteger, "DequantizeLinear", 0 },
	{ "QLinearAdd", 7, 8, { 0 }, cv_qlinearadd, "DequantizeLinear", 0 },
	{ "QLinearMul", 7, 8, { 0 }, cv_qlinearmul, "DequantizeLinear", 0 },
	{ "QLinearSigmoid", 4, 5, { 0 }, cv_qlinearsigmoid, "DequantizeLinear", 0 },
	{ "QLinearLeakyRelu", 4, 5, { "alpha" }, cv_qlinearleakyrelu, "DequantizeLinear", 0 },
	{ "QLinearAveragePool", 4, 5, { "auto_pad", "ceil_mode", "channels_last", "count_include_pad",
					"kernel_shape", "pads", "strides" }, cv_qlinearavgpool,
	  "DequantizeLinear", 0 },
	{ "QLinearGlobalAveragePool", 4, 5, { "channels_last" }, cv_qlineargavgpool,
	  "DequantizeLinear", 0 },
	{ "QLinearConcat", 5, ANY, { "axis" }, cv_qlinearconcat, "DequantizeLinear", 0 },
#undef QCONV_ATTRS
};

int onnx_supported_ops(const char **names, int max)
{
	static const char *const special[] = { "Constant", "Einsum", "GroupNormalization" };   /* import_node */
	int n = 0;
	for (size_t i = 0; i < ARRAY_LEN(special); i++, n++)
		if (n < max)
			names[n] = special[i];
	for (size_t i = 0; i < ARRAY_LEN(node_rules); i++, n++)
		if (n < max)
			names[n] = node_rules[i].onnx;
	for (int i = 1; i < n && i < max; i++)
		for (int j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
			const char *t = names[j];
			names[j] = names[j - 1];
			names[j - 1] = t;
		}
	return n;
}

const size_t n_node_rules = ARRAY_LEN(node_rules);
