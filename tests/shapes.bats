#!/usr/bin/env bats
# A stateful voice-activity model shaped like Silero VAD
# (tests/fixtures/vad_fixtures.py: symbolic batch and sample dimensions, an
# If on the sample rate choosing between two stacked-LSTM branches, h and c
# state in and out) run frame by frame with the state fed back, in ir-run
# and tpu-sim, f32 and int8 (calibrated on recorded states), against the
# numpy frame loop; several static shapes bundled in one .tmodel (codegen
# with several inputs, tpu-sim picking the stage, deploy.mk SHAPES); the
# errors of both.
load helpers

bats_require_minimum_version 1.5.0

setup_file() {
	export FX="$BATS_FILE_TMPDIR/fx"
	mkdir -p "$FX"
	/usr/bin/python3 "$BATS_TEST_DIRNAME/fixtures/vad_fixtures.py" "$FX"
	# the rate bound: the If folds; the open dimensions from one frame
	onnx2top "$FX/vad.onnx" --bind "$FX/sr16k.npz" --shapes-from "$FX/one.npz" | top-opt -o "$FX/m.top"
}

setup() {
	T=$BATS_TEST_TMPDIR
}

# vad_check OUT.npz EXPECT.npz TOL: the output of every frame within TOL
# of the reference, the same decisions (helpers.bash).
vad_check() {
	frames_agree "$1" "$2" output "$3"
}

# back MODE TOP OUT.tpu [TABLE]: the back end up to addressed.tpu
back() {
	top2tpu --chip tpu-a --mode "$1" ${4:+--calib "$4"} "$2" | weight-reorder | layergroup \
		| addr-assign -q -o "$3"
}

@test "shapes: --bind on the rate folds the If; the symbolic dimensions come from one frame" {
	run ir-print "$FX/m.top"
	assert_success
	refute_output --partial ' If('
	assert_line --index 1 --partial 'func @vad(%input: f32[1,128], %h: f32[2,1,16], %c: f32[2,1,16])'
	run -1 onnx2top "$FX/vad.onnx" --bind "$FX/sr16k.npz" -o "$T/x.top"
	assert_output "onnx2top: '$FX/vad.onnx': input 'input': dimension 0 is not static ('batch'): give the input's shape with --shape input=1,1"
	[ ! -e "$T/x.top" ]
	# the other rate takes the other branch
	onnx2top "$FX/vad.onnx" --bind "$FX/sr8k.npz" --shapes-from "$FX/one.npz" | top-opt -o "$T/8k.top"
	ir-run "$T/8k.top" -i "$FX/frames8k.npz" --frames 40 --state hn=h,cn=c -o "$T/8k.npz"
	vad_check "$T/8k.npz" "$FX/expect8k.npz" 1e-4
}

@test "shapes: the numpy reference is onnxruntime's frame loop (when onnxruntime-node is installed)" {
	command -v node >/dev/null || skip "no node"
	[ -d "$REPO/tests/node_modules/onnxruntime-node" ] || [ -d "$REPO/bench/node_modules/onnxruntime-node" ] ||
		[ -n "${ORT_NODE:-}" ] || skip "onnxruntime-node not installed"
	$PY "$REPO/bench/vad_frames.py" ort "$FX/vad.onnx" "$FX/frames.npz" 40 hn=h,cn=c "$T/ort.npz"
	vad_check "$T/ort.npz" "$FX/expect.npz" 1e-5
}

@test "shapes: ir-run and tpu-sim frame by frame, f32 within 1e-4 of the reference, state fed back" {
	ir-run "$FX/m.top" -i "$FX/frames.npz" --frames 40 --state hn=h,cn=c -o "$T/top.npz"
	vad_check "$T/top.npz" "$FX/expect.npz" 1e-4
	back f32 "$FX/m.top" "$T/f32.tpu"
	codegen "$T/f32.tpu" -o "$T/f32.tmodel"
	run tpu-sim "$T/f32.tmodel" -i "$FX/frames.npz" --frames 40 --state hn=h,cn=c -o "$T/sim.npz"
	assert_success
	assert_line --regexp '^tpu-sim: 40 frames: [0-9]+ cycles, [0-9]+ per frame'
	vad_check "$T/sim.npz" "$FX/expect.npz" 1e-4
}

@test "shapes: int8 calibrated on the inputs of a stateful run (--record-inputs): the same decisions" {
	ir-run "$FX/m.top" -i "$FX/cal.npz" --frames 40 --state hn=h,cn=c -o "$T/cal_out.npz" \
		--record-inputs "$T/samples.npz"
	# the samples: each frame with the state the float model reached there
	run $PY -c 'import sys, numpy as np
s, o = np.load(sys.argv[1]), np.load(sys.argv[2])
print(sorted((k, s[k].shape) for k in s.files))
print(np.array_equal(s["h"][1:], o["hn"][:-1]), np.array_equal(s["c"][1:], o["cn"][:-1]), not s["h"][0].any())' \
		"$T/samples.npz" "$T/cal_out.npz"
	assert_output "[('c', (40, 2, 1, 16)), ('h', (40, 2, 1, 16)), ('input', (40, 1, 128))]
True True True"
	calibrate "$FX/m.top" -d "$T/samples.npz" -o "$T/cal.txt"
	back int8 "$FX/m.top" "$T/i8.tpu" "$T/cal.txt"
	codegen "$T/i8.tpu" -o "$T/i8.tmodel"
	tpu-sim -q "$T/i8.tmodel" -i "$FX/frames.npz" --frames 40 --state hn=h,cn=c -o "$T/i8.npz"
	vad_check "$T/i8.npz" "$FX/expect.npz" 0.2
	# bit for bit the Tpu IR's frames
	top2tpu --chip tpu-a --mode int8 --calib "$T/cal.txt" "$FX/m.top" -o "$T/low.tpu"
	ir-run "$T/low.tpu" -i "$FX/frames.npz" --frames 40 --state hn=h,cn=c -o "$T/i8r.npz"
	cmp "$T/i8.npz" "$T/i8r.npz"
}

@test "shapes: --record-inputs errors in one line, no output" {
	run -2 ir-run "$FX/m.top" -i "$FX/one.npz" --record-inputs "$T/s.npz" -o "$T/x.npz"
	assert_line --index 0 'ir-run: --record-inputs needs --frames'
	run -2 ir-run "$FX/m.top" -i "$FX/frames.npz" --frames 40 --record-inputs - -o "$T/x.npz"
	assert_line --index 0 "ir-run: --record-inputs: give a file, not '-'"
	run -1 ir-run "$FX/m.top" -i "$FX/frames.npz" --frames 40 --state hn=h,cn=c -o "$T/x.npz" \
		--record-inputs /nonexistent/dir/s.npz
	assert_output --partial "ir-run: cannot create '/nonexistent/dir/s.npz'"
	[ ! -e "$T/x.npz" ]
}

@test "shapes: a bundle of two frame lengths runs each on its own stage, as compiled alone" {
	onnx2top "$FX/vad.onnx" --bind "$FX/sr16k.npz" --shape input=1,256 --shape h=2,1,16 \
		--shape c=2,1,16 | top-opt -o "$T/256.top"
	back f32 "$FX/m.top" "$T/128.tpu"
	back f32 "$T/256.top" "$T/256.tpu"
	codegen "$T/128.tpu" -o "$T/128.tmodel"
	codegen "$T/256.tpu" -o "$T/256.tmodel"
	codegen "$T/128.tpu" "$T/256.tpu" -o "$T/b.tmodel" -l "$T/b.lst"
	# the weights do not depend on the frame length: stored once
	[ "$(stat -c %s "$T/b.tmodel")" -lt $(($(stat -c %s "$T/128.tmodel") + $(stat -c %s "$T/256.tmodel") - 4096)) ]
	[ "$(grep -c '^# vad: tpu-a f32' "$T/b.lst")" = 2 ]
	for n in "" 256; do
		tpu-sim -q "$T/${n:-128}.tmodel" -i "$FX/frames$n.npz" --frames $((n ? 20 : 40)) \
			--state hn=h,cn=c -o "$T/alone$n.npz"
		run tpu-sim "$T/b.tmodel" -i "$FX/frames$n.npz" --frames $((n ? 20 : 40)) \
			--state hn=h,cn=c -o "$T/b$n.npz"
		assert_success
		assert_line "tpu-sim: stage $((n ? 1 : 0)) of 2 (input [1,${n:-128}], h [2,1,16], c [2,1,16]), the last frame's"
		cmp "$T/b$n.npz" "$T/alone$n.npz"
	done
	vad_check "$T/b256.npz" "$FX/expect256.npz" 1e-4
	run tmodel-info "$T/b.tmodel"
	assert_line --index 0 'stages   2'
	assert_line '== stage 1'
	assert_line 'input   0  input f32 [1,256]  (1024 bytes at 0x'"$(tmodel-info --json "$T/b.tmodel" | $PY -c 'import json,sys; print("%x" % json.load(sys.stdin)["stages"][1]["inputs"][0]["addr"])')"')'
	# --stage chooses; -t times the stage chosen
	run tpu-sim "$T/b.tmodel" -t --stage 1
	assert_line --index 0 'tpu-sim: stage 1 of 2 (input [1,256], h [2,1,16], c [2,1,16])'
}

@test "shapes: bundle errors in one line: shapes no stage takes, stages that cannot share, corrupt files" {
	onnx2top "$FX/vad.onnx" --bind "$FX/sr16k.npz" --shape input=1,256 --shape h=2,1,16 \
		--shape c=2,1,16 | top-opt -o "$T/256.top"
	back f32 "$FX/m.top" "$T/128.tpu"
	back f32 "$T/256.top" "$T/256.tpu"
	codegen "$T/128.tpu" "$T/256.tpu" -o "$T/b.tmodel"
	$PY -c 'import numpy as np; np.savez("'"$T"'/odd.npz", input=np.zeros((1, 200), np.float32),
h=np.zeros((2, 1, 16), np.float32), c=np.zeros((2, 1, 16), np.float32))'
	run -1 tpu-sim "$T/b.tmodel" -i "$T/odd.npz" -o "$T/x.npz"
	assert_output "tpu-sim: '$T/b.tmodel': no stage of the model takes these input shapes: input [1,200], h [2,1,16], c [2,1,16]; the model takes input [1,128], h [2,1,16], c [2,1,16] or input [1,256], h [2,1,16], c [2,1,16]"
	$PY -c 'import numpy as np; np.savez("'"$T"'/oddf.npz", input=np.zeros((3, 1, 200), np.float32),
h=np.zeros((2, 1, 16), np.float32), c=np.zeros((2, 1, 16), np.float32))'
	run -1 tpu-sim "$T/b.tmodel" -i "$T/oddf.npz" --frames 3 --state hn=h,cn=c -o "$T/x.npz"
	assert_output --partial "tpu-sim: frame 0: '$T/b.tmodel': no stage of the model takes"
	run -1 tpu-sim "$T/b.tmodel" -t --stage 2
	assert_output "tpu-sim: '$T/b.tmodel': --stage 2: the model holds 2 stages"
	run -2 tpu-sim "$T/b.tmodel" -t --stage x
	assert_line --index 0 "tpu-sim: --stage: expected a stage number from 0"
	# the same shapes twice; another mode
	run -1 codegen "$T/128.tpu" "$T/128.tpu" -o "$T/x.tmodel"
	assert_output "codegen: '$T/128.tpu': its input shapes are those of '$T/128.tpu': each stage of a bundle has shapes of its own"
	top2tpu --chip tpu-a --mode bf16 "$T/256.top" | weight-reorder | layergroup | addr-assign -q -o "$T/bf.tpu"
	run -1 codegen "$T/128.tpu" "$T/bf.tpu" -o "$T/x.tmodel"
	assert_output "codegen: '$T/bf.tpu': tpu-a bf16, the first stage tpu-a f32: one bundle holds one chip and mode"
	run -2 codegen "$T/128.tpu" - -o "$T/x.tmodel"
	assert_line --index 0 "codegen: several inputs: '-' cannot be one"
	[ ! -e "$T/x.tmodel" ]
	# corrupt bundles: truncated, a stage borrowing from a stage after it
	head -c 100 "$T/b.tmodel" > "$T/t.tmodel"
	run -1 tpu-sim "$T/t.tmodel" -t
	assert_output --regexp "^tpu-sim: '$T/t.tmodel': truncated "
	$PY -c 'import sys, struct
b = bytearray(open(sys.argv[1], "rb").read())
struct.pack_into("<I", b, 64 + 16, 1)   # stage 0 takes stage 1 coefficients
open(sys.argv[2], "wb").write(b)' "$T/b.tmodel" "$T/c.tmodel"
	run -1 tmodel-info "$T/c.tmodel"
	assert_output "tmodel-info: '$T/c.tmodel': corrupt bundle: stage 0 takes the coefficients of stage 1, which holds none of its own"
}

@test "shapes: deploy.mk SHAPES bundles the stages, calibrated once; BIND folds the rate" {
	ir-run "$FX/m.top" -i "$FX/cal.npz" --frames 40 --state hn=h,cn=c -o "$T/cal_out.npz" \
		--record-inputs "$T/samples.npz"
	run make --no-print-directory -f "$REPO/pipelines/deploy.mk" TPUC_BIN="$TPUC_BUILD/bin" \
		MODEL="$FX/vad.onnx" INPUT="$FX/one.npz" BIND="$FX/sr16k.npz" CALIB="$T/samples.npz" \
		SHAPES="input=1,128 input=1,256" MODE=int8 OUT="$T/d" compare
	assert_success
	assert_line --partial 'onnx2top'
	[ "$(grep -c 'calibrate' <<<"$output")" = 1 ]
	run tmodel-info "$T/d/model.tmodel"
	assert_line --index 0 'stages   2'
	tpu-sim -q "$T/d/model.tmodel" -i "$FX/frames256.npz" --frames 20 --state hn=h,cn=c -o "$T/d256.npz"
	# the 256 stage is the one compiled alone from the same table
	back int8 "$T/d/shape2/canonical.top" "$T/s2.tpu" "$T/d/cali.table"
	codegen "$T/s2.tpu" -o "$T/s2.tmodel"
	tpu-sim -q "$T/s2.tmodel" -i "$FX/frames256.npz" --frames 20 --state hn=h,cn=c -o "$T/s2.npz"
	cmp "$T/d256.npz" "$T/s2.npz"
}

@test "shapes: tpuc(3) selects the stage an input fits and runs it as tpu-sim does" {
	back f32 "$FX/m.top" "$T/128.tpu"
	onnx2top "$FX/vad.onnx" --bind "$FX/sr16k.npz" --shape input=1,256 --shape h=2,1,16 \
		--shape c=2,1,16 | top-opt -o "$T/256.top"
	back f32 "$T/256.top" "$T/256.tpu"
	codegen "$T/128.tpu" "$T/256.tpu" -o "$T/b.tmodel"
	local san=
	case $TPUC_BUILD in *-san) san="-fsanitize=address,undefined" ;; esac
	cc $san -fopenmp -Wall -Wextra -Werror -I"$REPO/lib/api" "$REPO/tests/fixtures/api_stages.c" \
		"$TPUC_BUILD/libtpuc.a" -lprotobuf-c -lmsgpackc -ldnnl -lzstd -lzip -lm -lpthread \
		-o "$T/api_stages"
	$PY -c 'import sys, numpy as np
f = np.load(sys.argv[1]); np.savez(sys.argv[2], input=f["input"][3], h=f["h"], c=f["c"])' \
		"$FX/frames256.npz" "$T/in256.npz"
	run "$T/api_stages" "$T/b.tmodel" "$T/in256.npz" "$T/api.npz"
	assert_success
	assert_output "stages 2, ran 1"
	tpu-sim -q "$T/b.tmodel" -i "$T/in256.npz" -o "$T/sim.npz"
	cmp "$T/api.npz" "$T/sim.npz"
}
