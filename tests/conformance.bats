#!/usr/bin/env bats
# conformance: the ONNX backend node tests of Debian's libonnx-testdata
# through onnx2top, top-opt and ir-run (tests/conformance.sh): every case
# onnx2top accepts comes out right, and the coverage does not shrink; with
# -b every case ir-run gets right also through the back end to tpu-sim,
# right too, refused only for training losses.
load helpers

setup() {
	DATA=${ONNX_TESTDATA:-/usr/share/libonnx-testdata/data/node}
	[ -d "$DATA" ] || skip "no ONNX backend test data in $DATA"
	need_tool onnx2top top-opt ir-run
}

# The opset 1 and 6 forms (Elu, Selu) pass, and so do the f64 reductions
# (ir-run computes in double).
old_forms_and_f64() {
	refute_line --regexp '^UNSUPPORTED test_(elu|selu)'
	refute_line --regexp '^UNSUPPORTED test_reduce_log_sum_exp'
}

# The back end refuses only the training losses and the dtypes the chip
# lacks, each with its one line; the ops with no chip form and control flow
# run on the host.
back_refusals_documented() {
	local other
	other=$(grep '^BACK REFUSED' <<<"$output" | grep -v "(NegativeLogLikelihoodLoss)\|(SoftmaxCrossEntropyLoss)" |
		grep -v ": refused: top2tpu: .*tensor .*: dtype [a-z0-9]* is not supported on the chip" || true)
	[ -z "$other" ] || fail "back-end refusals other than losses and dtypes: $other"
}

@test "conformance: accepted cases are right, through the back end too, refusals in documented classes (subset: slice, resize, reduce, gather, elu)" {
	[ "${TPUC_QUICK:-0}" = 1 ] || skip "the whole suite below covers it"
	run env TPUC_BIN="$TPUC_BUILD/bin" CHECK_CLASSES=1 "$BATS_TEST_DIRNAME/conformance.sh" -b -v \
		'test_[sgre][laeu][a-z]*'
	assert_success
	assert_line --regexp '^[0-9]+ passed, 0 failed, [0-9]+ unsupported$'
	assert_line --regexp '^back end: [0-9]+ passed, 0 failed, [0-9]+ refused$'
	passed=$(grep -o '^back end: [0-9]*' <<<"$output" | grep -o '[0-9]*$')
	[ "$passed" -ge 100 ]
	refute_line --partial UNCLASSIFIED
	old_forms_and_f64
	back_refusals_documented
}

@test "conformance: a refusal in no documented class fails the run" {
	local d=$BATS_TEST_TMPDIR/data
	/usr/bin/python3 - "$d" <<'PY'
import os, sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
c = os.path.join(sys.argv[1], "test_foo")
os.makedirs(os.path.join(c, "test_data_set_0"))
g = helper.make_graph([helper.make_node("FooBar", ["x"], ["y"])], "foo",
                      [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), os.path.join(c, "model.onnx"))
for kind, name in (("input", "x"), ("output", "y")):
    t = numpy_helper.from_array(np.float32([1, 2]), name)
    open(os.path.join(c, "test_data_set_0", kind + "_0.pb"), "wb").write(t.SerializeToString())
PY
	run env TPUC_BIN="$TPUC_BUILD/bin" ONNX_TESTDATA="$d" CHECK_CLASSES=1 "$BATS_TEST_DIRNAME/conformance.sh"
	assert_failure 1
	assert_line --regexp "^UNCLASSIFIED test_foo: refused: onnx2top: .*\(FooBar\): unsupported operator"
	assert_line 'refused outside the excluded classes: 1'
	run env TPUC_BIN="$TPUC_BUILD/bin" ONNX_TESTDATA="$d" "$BATS_TEST_DIRNAME/conformance.sh"
	assert_success
}

@test "conformance: the whole suite, no case wrong, refusals exactly the documented classes" {
	[ "${TPUC_QUICK:-0}" != 1 ] || skip "whole suite (TPUC_QUICK=1)"
	run env TPUC_BIN="$TPUC_BUILD/bin" CHECK_CLASSES=1 "$BATS_TEST_DIRNAME/conformance.sh" -b -v
	assert_success
	refute_line --partial UNCLASSIFIED
	refute_line --partial 'EMPTY CLASS'
	old_forms_and_f64
	outside=$(grep -o '^refused outside the excluded classes: [0-9]*' <<<"$output" | grep -o '[0-9]*$')
	[ "$outside" -le 4 ]
	assert_line --regexp '^[0-9]+ passed, 0 failed, [0-9]+ unsupported$'
	assert_line --regexp '^back end: [0-9]+ passed, 0 failed, [0-9]+ refused$'
	back_refusals_documented
	types=$(grep -o '^operator types passing a case ([0-9]*)' <<<"$output" | grep -o '[0-9]*')
	[ "$types" -ge 100 ]
	passed=$(tail -n 1 <<<"$output" | cut -d' ' -f1)
	[ "$passed" -ge 866 ]
	passed=$(grep -o '^back end: [0-9]*' <<<"$output" | grep -o '[0-9]*$')
	[ "$passed" -ge 727 ]
	# parameters stay run-time inputs; bound only where an op needs a
	# constant still (MelWeightMatrix's sizes, Dropout's training_mode)
	bound=$(grep -o '^cases run with parameter inputs bound as constants: [0-9]*' <<<"$output" |
		grep -o '[0-9]*$')
	[ "$bound" -le 7 ]
}

@test "conformance: MaxUnpool, RoiAlign, MaxPool indices, NonMaxSuppression, NonZero, Unique, Compress, TopK, Slice, Range, 1-D and 3-D ConvTranspose, 3-D Conv and pooling, GridSample, DFT, STFT, Det, ReverseSequence, If, Loop, Scan cases pass in ir-run and through the back end (on the host where the chip has no form), their inputs at run time" {
	run env TPUC_BIN="$TPUC_BUILD/bin" "$BATS_TEST_DIRNAME/conformance.sh" -b -v \
		'test_[cmnru][aon][mxin][uzmqv][nzpeat]*' 'test_roialign*' 'test_unique*' 'test_compress*' \
		'test_maxpool_with_argmax*' 'test_gridsample*' 'test_dft*' 'test_stft*' 'test_det_*' \
		'test_reversesequence*' 'test_*pool_3d*' 'test_if' 'test_loop11' 'test_scan*' \
		'test_top_k*' 'test_range*' 'test_slice*'
	assert_success
	refute_line --regexp '^UNSUPPORTED test_(maxunpool|roialign|nonmaxsuppression|nonzero|unique|compress|maxpool_with_argmax|convtranspose_(1d|3d|output_shape))'
	assert_line --regexp '^[0-9]+ passed, 0 failed, 0 unsupported$'
	# data-dependent extents (NMS, NonZero, a Slice past the end, a Loop of
	# a run-time trip count ...) are found at run time: no input is bound
	assert_line 'cases run with parameter inputs bound as constants: 0'
	for op in MaxUnpool RoiAlign NonMaxSuppression NonZero Unique Compress GridSample DFT STFT Det ReverseSequence \
		If Loop Scan TopK Slice Range; do
		assert_line --regexp "^operator types passing a case .* $op( |\$)"
	done
	# every case ir-run passes also passes on tpu-sim: none refused
	assert_line --regexp '^back end: [0-9]+ passed, 0 failed, 0 refused$'
	refute_line --partial 'BACK REFUSED'
}
