#!/usr/bin/env bats
# conformance: the ONNX backend node tests of Debian's libonnx-testdata
# through onnx2top, top-opt and ir-run (tests/conformance.sh): every case
# onnx2top accepts comes out right, and the coverage does not shrink.
load helpers

setup() {
	DATA=${ONNX_TESTDATA:-/usr/share/libonnx-testdata/data/node}
	[ -d "$DATA" ] || skip "no ONNX backend test data in $DATA"
	need_tool onnx2top top-opt ir-run
}

@test "conformance: accepted cases are right (subset: slice, resize, reduce, gather)" {
	run env TPUC_BIN="$TPUC_BUILD/bin" "$BATS_TEST_DIRNAME/conformance.sh" 'test_[sgr][lae][a-z]*'
	assert_success
	assert_line --regexp '^[0-9]+ passed, 0 failed, [0-9]+ unsupported$'
}

@test "conformance: the whole suite, no case wrong, 100 operator types or more pass" {
	[ "${TPUC_QUICK:-0}" != 1 ] || skip "whole suite (TPUC_QUICK=1)"
	run env TPUC_BIN="$TPUC_BUILD/bin" "$BATS_TEST_DIRNAME/conformance.sh"
	assert_success
	assert_line --regexp '^[0-9]+ passed, 0 failed, [0-9]+ unsupported$'
	types=$(grep -o '^operator types passing a case ([0-9]*)' <<<"$output" | grep -o '[0-9]*')
	[ "$types" -ge 100 ]
	passed=$(tail -n 1 <<<"$output" | cut -d' ' -f1)
	[ "$passed" -ge 650 ]
}
