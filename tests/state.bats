#!/usr/bin/env bats
# Stateful models frame by frame (issue 14): ir-run and tpu-sim --frames N
# --state OUT=IN on an LSTM voice-activity-like model
# (tests/fixtures/state_fixtures.py), compiled once, against numpy's
# one-shot LSTM over the whole sequence; the usage and input errors.
load helpers

bats_require_minimum_version 1.5.0

setup_file() {
	export FX="$BATS_FILE_TMPDIR/fx"
	mkdir -p "$FX"
	/usr/bin/python3 "$BATS_TEST_DIRNAME/fixtures/state_fixtures.py" "$FX"
	onnx2top "$FX/lstm_state.onnx" | top-opt -o "$FX/m.top"
}

setup() {
	T=$BATS_TEST_TMPDIR
}

# frames_check OUT.npz TOL: prob, hn and cn of every frame within TOL of
# the one-shot reference, and the same speech decision (prob > 0.5) on
# every frame (helpers.bash).
frames_check() {
	frames_agree "$1" "$FX/expect.npz" prob "$2" all
}

@test "state: ir-run --frames 12 --state hn=h0,cn=c0 equals the one-shot LSTM over the sequence" {
	ir-run "$FX/m.top" -i "$FX/frames.npz" --frames 12 --state hn=h0,cn=c0 -o "$T/o.npz"
	frames_check "$T/o.npz" 1e-5
	# frame 3 by hand: a single run fed frame 2's state gives frame 3's outputs
	$PY -c 'import sys, numpy as np
f, o = np.load(sys.argv[1]), np.load(sys.argv[2])
np.savez(sys.argv[3], x=f["x"][3], h0=o["hn"][2], c0=o["cn"][2])' "$FX/frames.npz" "$T/o.npz" "$T/f3.npz"
	ir-run "$FX/m.top" -i "$T/f3.npz" -o "$T/o3.npz"
	run $PY -c 'import sys, numpy as np
a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
print(all(np.array_equal(a[k], b[k][3]) for k in a.files))' "$T/o3.npz" "$T/o.npz"
	assert_output True
}

@test "state: tpu-sim runs the compiled model frame by frame: f32 within 1e-4, int8 the same decisions" {
	top2tpu --chip tpu-a --mode f32 "$FX/m.top" | weight-reorder | layergroup | addr-assign -q \
		| codegen -o "$T/f32.tmodel"
	run tpu-sim "$T/f32.tmodel" -i "$FX/frames.npz" --frames 12 --state hn=h0,cn=c0 -o "$T/f32.npz"
	assert_success
	assert_line --regexp '^tpu-sim: 12 frames: [0-9]+ cycles, [0-9]+ per frame'
	frames_check "$T/f32.npz" 1e-4
	# calibrated on frames with the states the model meets there
	calibrate "$FX/m.top" -d "$FX/calib.npz" -o "$T/cal.txt"
	top2tpu --chip tpu-a --mode int8 --calib "$T/cal.txt" "$FX/m.top" | weight-reorder | layergroup \
		| addr-assign -q | codegen -o "$T/int8.tmodel"
	tpu-sim -q "$T/int8.tmodel" -i "$FX/frames.npz" --frames 12 --state hn=h0,cn=c0 -o "$T/int8.npz"
	frames_check "$T/int8.npz" 0.02
}

@test "state: usage and input errors in one line, no output" {
	run -2 ir-run "$FX/m.top" -i "$FX/frames.npz" --state hn=h0 -o "$T/x.npz"
	assert_line --index 0 'ir-run: --state needs --frames'
	run -2 tpu-sim x.tmodel -i "$FX/frames.npz" --frames 2 --state hn -o "$T/x.npz"
	assert_line --index 0 "tpu-sim: --state 'hn': expected OUT=IN[,OUT=IN...]"
	run -2 ir-run "$FX/m.top" -i "$FX/frames.npz" --frames 0 -o "$T/x.npz"
	assert_line --index 0 'ir-run: --frames: expected a whole number from 1'
	run -1 ir-run "$FX/m.top" -i "$FX/frames.npz" --frames 12 --state prob=h0 -o "$T/x.npz"
	assert_output "ir-run: '$FX/m.top': --state: output 'prob' and input 'h0' differ in shape"
	run -1 ir-run "$FX/m.top" -i "$FX/frames.npz" --frames 12 --state hx=h0 -o "$T/x.npz"
	assert_output "ir-run: '$FX/m.top': --state: 'hx' is not a graph output"
	run -1 ir-run "$FX/m.top" -i "$FX/frames.npz" --frames 5 --state hn=h0,cn=c0 -o "$T/x.npz"
	assert_output "ir-run: '$FX/frames.npz': array 'x' holds 12 frames on its first axis, --frames is 5"
	[ ! -e "$T/x.npz" ]
}
