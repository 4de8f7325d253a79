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

@test "conformance: accepted cases are right, through the back end too (subset: slice, resize, reduce, gather)" {
	run env TPUC_BIN="$TPUC_BUILD/bin" "$BATS_TEST_DIRNAME/conformance.sh" -b 'test_[sgr][lae][a-z]*'
	assert_success
	assert_line --regexp '^[0-9]+ passed, 0 failed, [0-9]+ unsupported$'
	assert_line --regexp '^back end: [0-9]+ passed, 0 failed, 0 refused$'
	passed=$(grep -o '^back end: [0-9]*' <<<"$output" | grep -o '[0-9]*$')
	[ "$passed" -ge 100 ]
}

@test "conformance: the whole suite, no case wrong, 100 operator types or more pass, the back end refuses only losses" {
	[ "${TPUC_QUICK:-0}" != 1 ] || skip "whole suite (TPUC_QUICK=1)"
	run env TPUC_BIN="$TPUC_BUILD/bin" "$BATS_TEST_DIRNAME/conformance.sh" -b
	assert_success
	assert_line --regexp '^[0-9]+ passed, 0 failed, [0-9]+ unsupported$'
	assert_line --regexp '^back end: [0-9]+ passed, 0 failed, [0-9]+ refused$'
	other=$(grep '^BACK REFUSED' <<<"$output" | grep -v "(NegativeLogLikelihoodLoss)\|(SoftmaxCrossEntropyLoss)" || true)
	[ -z "$other" ] || fail "back-end refusals other than losses: $other"
	types=$(grep -o '^operator types passing a case ([0-9]*)' <<<"$output" | grep -o '[0-9]*')
	[ "$types" -ge 100 ]
	passed=$(tail -n 1 <<<"$output" | cut -d' ' -f1)
	[ "$passed" -ge 650 ]
}
