#!/usr/bin/env bats
# op-sweep: every operator the chip runs (tests/fixtures/op_sweep.py, one
# model per op and form) through the whole back end on tpu-a and tpu-b:
# tpu-sim bit for bit as ir-run runs the Tpu IR, the Tpu IR close to Top
# F32 (tests/op-sweep.sh).  Tiny shapes in the quick tier; shapes several
# times larger than local memory along H, C and W in the full suite.
load helpers

bats_require_minimum_version 1.5.0

setup() {
	need_tool onnx2top top-opt calibrate top2tpu weight-reorder layergroup addr-assign codegen \
		tpu-sim ir-run
}

@test "op sweep: the table covers every operator onnx2top takes, or says why not" {
	run "$TPUC_BUILD/bin/onnx2top" --list-ops
	assert_success
	ops=$output
	run /usr/bin/python3 "$BATS_TEST_DIRNAME/fixtures/op_sweep.py" --table
	assert_success
	table=$output
	missing=
	for op in $ops; do
		grep -qx -- "$op" <<<"$table" || grep -q -- "^-$op " <<<"$table" || missing="$missing $op"
	done
	[ -z "$missing" ] || fail "operators neither swept nor left out with a reason:$missing"
}

@test "op sweep, tiny shapes: f32 on tpu-a, int8 on tpu-b" {
	run env TPUC_BIN="$TPUC_BUILD/bin" "$BATS_TEST_DIRNAME/op-sweep.sh" quick f32:tpu-a int8:tpu-b
	assert_success
	assert_line --regexp '^[0-9]+ passed, 0 failed$'
	passed=$(tail -n 1 <<<"$output" | cut -d' ' -f1)
	[ "$passed" -ge 200 ]
}

@test "op sweep, tiny shapes with batch 2: bf16 on tpu-b, int8 on tpu-a" {
	[ "${TPUC_QUICK:-0}" != 1 ] || skip "full suite only (TPUC_QUICK=1)"
	run env TPUC_BIN="$TPUC_BUILD/bin" "$BATS_TEST_DIRNAME/op-sweep.sh" batch2 bf16:tpu-b \
		int8:tpu-a
	assert_success
	assert_line --regexp '^[0-9]+ passed, 0 failed$'
}

@test "op sweep, shapes several times larger than local memory: f32 on tpu-a, int8 on tpu-b" {
	[ "${TPUC_QUICK:-0}" != 1 ] || skip "full suite only (TPUC_QUICK=1)"
	run env TPUC_BIN="$TPUC_BUILD/bin" "$BATS_TEST_DIRNAME/op-sweep.sh" big f32:tpu-a int8:tpu-b
	assert_success
	assert_line --regexp '^[0-9]+ passed, 0 failed$'
}
