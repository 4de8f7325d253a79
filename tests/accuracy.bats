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

# bisect on the tiny CNN: the verdict matches the per-layer table's first
# failure, and a doctored ir-run dump is caught as a tpu-sim mismatch.
bisect() {
	make -s -f "$REPO/pipelines/accuracy.mk" MODEL="$REPO/examples/tiny_cnn/model.onnx" \
		INPUT="$REPO/examples/tiny_cnn/input.npz" CALIB="$REPO/examples/tiny_cnn/calib.npz" \
		TPUC_BIN="$TPUC_BUILD/bin" "$@"
}

@test "bisect: the first layer below a cosine against F32, in few builds; all good at a low cosine" {
	need_tool ir-cut
	run bisect OUT="$T/t" BISECT_COS=0.5 bisect
	assert_success
	assert_output --partial 'every layer good: tpu-sim equals ir-run, cosine against F32 at least 0.5'
	# the cosine the tiny model just misses somewhere in the middle: the
	# per-layer table's first failure is the layer bisect names
	local cos first
	cos=$(awk 'NR > 2 && $1 != "logits" && $1 != "input" && $3 ~ /^0/ { print $3 }' \
		<(bisect OUT="$T/t" TOL=0.5,-1e9 layers) | sort | head -1)
	cos=$($PY -c "print($cos + 0.000001)")
	run bisect OUT="$T/t" TOL="$cos,-1e9" layers
	first=$(tail -1 "$T/t/layers.txt" | awk '{ print $NF }')
	run bisect OUT="$T/t" BISECT_COS="$cos" bisect
	assert_success
	assert_output --regexp "first bad layer: $first \\(cosine against F32 0\\.[0-9]+ below $cos\\)\$"
	# binary search: at most ceil(log2(11)) + 1 builds
	[ "$(grep -c '^layers 1-' "$T/t/bisect.txt")" -le 5 ]
}

@test "bisect: a tpu-sim output that differs from ir-run's is named" {
	need_tool ir-cut
	bisect OUT="$T/t" BISECT_COS=0.5 bisect >/dev/null
	# a dump in which one layer is off by one code: tpu-sim now "differs" there
	$PY - "$T/t/tpu_all.npz" "$T/bad_all.npz" <<'PY'
import sys, numpy as np
z = dict(np.load(sys.argv[1]))
x = z["down/Clip_output_0"].copy(); x.flat[7] += 1; z["down/Clip_output_0"] = x
np.savez(sys.argv[2], **z)
PY
	run env TPUC_BIN="$TPUC_BUILD/bin" sh "$REPO/pipelines/bisect-layers.sh" "$T/t/lowered.tpu" \
		"$REPO/examples/tiny_cnn/input.npz" "$T/bad_all.npz" "$T/t/top_all.npz" 0.5 "$T/w"
	assert_success
	assert_line --regexp '^layers 1-[0-9]+ of 11 \(to .*\): tpu-sim differs from ir-run at down/Clip_output_0$'
	assert_line "first bad layer: down/Clip_output_0 (tpu-sim differs from ir-run)"
}

@test "task: the graph outputs judged by cosine and by the task the shape implies" {
	run acc OUT="$T/t" task
	assert_success
	# quant_net's y [1,10] is a classifier
	assert_output --regexp 'task class: top-1 [0-9] = [0-9], top-5 [0-9]/5: PASS'
	assert_line 'task: every output passes'
	[ -e "$T/t/top_out.npz" ] && [ -e "$T/t/tpu_out.npz" ]
	# forced onto a shape it does not fit: fails, and says so
	run acc OUT="$T/t" TASK=ctc task
	assert_failure
	assert_output --partial 'ctc: shape does not fit a ctc check'
	assert_line 'task: an output fails'
}
