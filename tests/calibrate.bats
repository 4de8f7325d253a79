#!/usr/bin/env bats
# calibrate: the table lists every float activation in graph order with
# sane numbers, is byte-identical from run to run (and across thread
# counts), honours -n and --method; errors: usage (exit 2), missing or
# truncated input, wrong stage, samples that do not fit.  The real-model
# tests run the whole int8 pipeline and check it against float.
load helpers

bats_require_minimum_version 1.5.0

setup_file() {
	export QN="$BATS_FILE_TMPDIR/qn"
	/usr/bin/python3 "$BATS_TEST_DIRNAME/fixtures/quant_net.py" "$QN"
	onnx2top "$QN/net.onnx" | top-opt -o "$QN/net.top"
}

setup() {
	T=$BATS_TEST_TMPDIR
}

@test "the table lists every activation in graph order" {
	run calibrate "$QN/net.top" -d "$QN/calib.npz" -o "$T/t.table"
	assert_success
	assert_output ''
	run grep -v '^#' "$T/t.table"
	assert_output --regexp '^x [^ ]+ [^ ]+ [^ ]+
r1 .*
c2 .*
r2 .*
mp .*
ap .*
cat .*
bn .*
gap .*
flat .*
y [^ ]+ [^ ]+ [^ ]+$'
	# thresholds positive, at most max(|min|, |max|); min <= max
	run awk '!/^#/ { a = $3 < 0 ? -$3 : $3; m = a > $4 ? a : $4;
		if (NF != 4 || $2 <= 0 || $3 > $4 || $2 > m * 1.000001) print "bad: " $0 }' "$T/t.table"
	assert_output ''
}

@test "minmax thresholds are max(|min|, |max|)" {
	calibrate "$QN/net.top" -d "$QN/calib.npz" --method minmax -o "$T/m.table"
	run awk '!/^#/ { a = $3 < 0 ? -$3 : $3; m = a > $4 ? a : $4;
		if ($2 != m) print "bad: " $0 }' "$T/m.table"
	assert_output ''
}

@test "two calibrations are byte-identical, whatever the threads" {
	calibrate "$QN/net.top" -d "$QN/calib.npz" -o "$T/a.table"
	calibrate - -d "$QN/calib.npz" -j 2 -o "$T/b.table" <"$QN/net.top"
	cmp "$T/a.table" "$T/b.table"
	calibrate "$QN/net.top" -d "$QN/calib.npz" -o - >"$T/c.table"
	cmp "$T/a.table" "$T/c.table"
}

@test "-n uses the first samples only" {
	calibrate "$QN/net.top" -d "$QN/calib.npz" -n 1 --method minmax -o "$T/one.table"
	$PY -c "import numpy as np; np.savez('$T/first.npz', x=np.load('$QN/calib.npz')['x'][:1])"
	calibrate "$QN/net.top" -d "$T/first.npz" --method minmax -o "$T/first.table"
	cmp "$T/one.table" "$T/first.table"
	calibrate "$QN/net.top" -d "$QN/calib.npz" --method minmax -o "$T/all.table"
	run cmp -s "$T/one.table" "$T/all.table"
	assert_failure
}

@test "usage errors exit 2" {
	run calibrate "$QN/net.top" -o "$T/x.table"
	assert_failure 2
	assert_output --partial '-d SAMPLES.npz is required'
	run calibrate "$QN/net.top" -d "$QN/calib.npz"
	assert_failure 2
	assert_output --partial '-o TABLE is required'
	run calibrate -d "$QN/calib.npz" -o "$T/x.table"
	assert_failure 2
	run calibrate "$QN/net.top" -d "$QN/calib.npz" --method mse -o "$T/x.table"
	assert_failure 2
	assert_output --partial "unknown method 'mse'"
	run calibrate "$QN/net.top" -d "$QN/calib.npz" -n 0 -o "$T/x.table"
	assert_failure 2
	run calibrate "$QN/net.top" -d "$QN/calib.npz" --bogus -o "$T/x.table"
	assert_failure 2
	run calibrate "$QN/net.top" -d
	assert_failure 2
	run calibrate -h
	assert_success
	assert_output --partial 'usage: calibrate'
	[ ! -e "$T/x.table" ]
}

@test "missing, truncated and wrong-stage input is refused" {
	run calibrate "$T/nope.top" -d "$QN/calib.npz" -o "$T/x.table"
	assert_failure 1
	assert_output --partial "calibrate: cannot open '$T/nope.top'"
	head -c 200 "$QN/net.top" >"$T/trunc.top"
	run calibrate "$T/trunc.top" -d "$QN/calib.npz" -o "$T/x.table"
	assert_failure 1
	assert_output --regexp "^calibrate: '$T/trunc.top': "
	top2tpu "$QN/net.top" --chip tpu-a --mode f32 -o "$T/f.tpu"
	run calibrate "$T/f.tpu" -d "$QN/calib.npz" -o "$T/x.table"
	assert_failure 1
	assert_output --partial "wrong stage: got tpu IR at stage 'lowered'"
	[ ! -e "$T/x.table" ]
}

@test "samples that do not fit the graph are refused" {
	run calibrate "$QN/net.top" -d "$T/none.npz" -o "$T/x.table"
	assert_failure 1
	assert_output --partial "'$T/none.npz'"
	head -c 1000 "$QN/calib.npz" >"$T/trunc.npz"
	run calibrate "$QN/net.top" -d "$T/trunc.npz" -o "$T/x.table"
	assert_failure 1
	assert_output --partial "'$T/trunc.npz'"
	$PY -c "import numpy as np; np.savez('$T/other.npz', z=np.zeros((2, 1, 3, 16, 16), np.float32))"
	run calibrate "$QN/net.top" -d "$T/other.npz" -o "$T/x.table"
	assert_failure 1
	assert_output --partial "no array for graph input 'x'"
	$PY -c "import numpy as np; np.savez('$T/shape.npz', x=np.zeros((2, 1, 3, 8, 8), np.float32))"
	run calibrate "$QN/net.top" -d "$T/shape.npz" -o "$T/x.table"
	assert_failure 1
	assert_output --partial "array 'x' has shape [2,1,3,8,8]"
	[ ! -e "$T/x.table" ]
}

# int8_cosine MODEL: the whole int8 pipeline on a real model; prints the
# cosine of the int8 output against the Top F32 one.
int8_cosine() {
	local m=$1 M=$MODELS/$1
	onnx2top "$M/model.onnx" | top-opt -o "$T/m.top"
	calibrate "$T/m.top" -d "$M/calib.npz" -o "$T/m.table"
	top2tpu "$T/m.top" --chip tpu-a --mode int8 --calib "$T/m.table" -o "$T/m.tpu"
	ir-run "$T/m.tpu" -i "$M/input.npz" -o "$T/q.npz"
	ir-run "$T/m.top" -i "$M/input.npz" -o "$T/f.npz"
	npz-compare "$T/f.npz" "$T/q.npz" --tolerance 0,0 2>/dev/null | awk 'NR == 2 { print $3 }'
}

@test "resnet18: int8 within cosine 0.99 of float" {
	need_models resnet18
	run int8_cosine resnet18
	assert_success
	echo "cosine $output" >&3
	awk -v c="$output" 'BEGIN { exit !(c >= 0.99) }'
}

@test "mobilenet_v2: int8 within cosine 0.95 of float" {
	# This random-init model is chaotic: input quantisation noise alone
	# (uniform, half a step) moves its float output to cosine 0.98.
	need_models mobilenet_v2
	run int8_cosine mobilenet_v2
	assert_success
	echo "cosine $output" >&3
	awk -v c="$output" 'BEGIN { exit !(c >= 0.95) }'
}
