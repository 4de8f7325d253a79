#!/usr/bin/env bats
# pipelines/accuracy.mk: the per-layer comparison of the Top and the Tpu
# graph in graph order, naming the first layer below tolerance.
load helpers

bats_require_minimum_version 1.5.0

setup_file() {
	export QN="$BATS_FILE_TMPDIR/qn"
	/usr/bin/python3 "$BATS_TEST_DIRNAME/fixtures/quant_net.py" "$QN"
}

setup() {
	T=$BATS_TEST_TMPDIR
}

acc() {
	make -s -f "$REPO/pipelines/accuracy.mk" MODEL="$QN/net.onnx" INPUT="$QN/input.npz" \
		CALIB="$QN/calib.npz" TPUC_BIN="$TPUC_BUILD/bin" "$@"
}

@test "int8: every layer in graph order, the first below tolerance named" {
	run acc OUT="$T/a" TOL=0.99999,0
	assert_success
	assert_output --regexp 'r1 .*
c2 .*
r2 .*'
	assert_output --regexp 'first layer below tolerance: [a-z0-9]+$'
	first=$(tail -1 "$T/a/layers.txt" | awk '{ print $NF }')
	# it is the first FAIL row of the table
	[ "$(awk '/ FAIL / { print $1; exit }' "$T/a/layers.txt")" = "$first" ]
	run acc OUT="$T/a" TOL=0.99999,0 check
	assert_failure
	run acc OUT="$T/b" TOL=0.9,0 check
	assert_success
	assert_output --partial 'every layer within tolerance 0.9,0'
}

@test "bf16 and a qtable need no table unless an op is int8" {
	run acc OUT="$T/c" MODE=bf16 CALIB=
	assert_success
	assert_output --partial 'every layer within tolerance 0.999,0.95'
	[ ! -e "$T/c/cali.table" ]
	printf 'conv2 int8\n' >"$T/q.qt"
	run acc OUT="$T/d" MODE=f32 QTABLE="$T/q.qt" TOL=0.99,0.9
	assert_success
	[ -e "$T/d/cali.table" ]
	run make -s -f "$REPO/pipelines/accuracy.mk" MODEL=m.onnx OUT="$T/e" MODE=int4 INPUT=x
	assert_failure
	assert_output --partial "MODE must be f32, bf16, f16 or int8, not 'int4'"
}
