#!/usr/bin/env bats
# tpu-sim: INT8 models bit-identical to ir-run on the Tpu IR, F32 models
# within rounding of the reference; statistics, profile and timing-only
# runs; errors (exit 1, one line, no output left behind) and usage (exit 2);
# the real models end to end.
load helpers
load backend

bats_require_minimum_version 1.5.0

setup_file() {
	need_tool onnx2top top-opt calibrate top2tpu weight-reorder layergroup addr-assign codegen tpu-sim ir-run
	export FX="$BATS_FILE_TMPDIR/fx"
	backend_fixtures "$FX"
	backend_stages "$FX" int8
	backend_stages "$FX" f32
	backend_stages "$FX" b.int8
}

setup() {
	need_tool onnx2top top-opt calibrate top2tpu weight-reorder layergroup addr-assign codegen tpu-sim ir-run
	T=$BATS_TEST_TMPDIR
}

# "name:dtype:shape" of each array.
npz_names() {
	$PY -c 'import sys, numpy as np
z = np.load(sys.argv[1]); print(" ".join(f"{k}:{z[k].dtype}:{list(z[k].shape)}" for k in z.files))' "$1"
}

# The cosine similarity of the arrays both files hold, the smallest.
npz_cosine() {
	$PY -c 'import sys, numpy as np
a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
c = [float(np.dot(a[k].ravel().astype(np.float64), b[k].ravel()) /
     (np.linalg.norm(a[k].astype(np.float64)) * np.linalg.norm(b[k].astype(np.float64))))
     for k in a.files if k in b.files]
print("%.7f" % min(c))' "$1" "$2"
}

@test "int8: bit-identical to ir-run on the Tpu IR of every stage" {
	run tpu-sim "$FX/int8.tmodel" -i "$TINY/input.npz" -o "$T/sim.npz"
	assert_success
	run npz_names "$T/sim.npz"
	assert_output 'logits:float32:[1, 10]'
	local s
	for s in lowered reordered grouped addressed; do
		ir-run "$FX/int8.$s.tpu" -i "$TINY/input.npz" -o "$T/ref.$s.npz"
		cmp "$T/sim.npz" "$T/ref.$s.npz"
	done
}

@test "--dump-all: every layer bit-identical to ir-run --dump-all" {
	tpu-sim -q "$FX/int8.tmodel" -i "$TINY/input.npz" -o "$T/sim.npz" --dump-all
	ir-run "$FX/int8.lowered.tpu" -i "$TINY/input.npz" -o "$T/ref.npz" --dump-all
	run $PY -c 'import sys, numpy as np
a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
print(a.files == b.files, len(a.files) > 10, all(np.array_equal(a[k], b[k]) for k in b.files))' "$T/sim.npz" "$T/ref.npz"
	assert_output 'True True True'
	run -2 tpu-sim "$FX/int8.tmodel" -t --dump-all
}

@test "int8 on tpu-b: bit-identical too" {
	tpu-sim -q "$FX/b.int8.tmodel" -i "$TINY/input.npz" -o "$T/sim.npz"
	ir-run "$FX/b.int8.lowered.tpu" -i "$TINY/input.npz" -o "$T/ref.npz"
	cmp "$T/sim.npz" "$T/ref.npz"
}

@test "f32: the reference output within rounding" {
	tpu-sim -q "$FX/f32.tmodel" -i "$TINY/input.npz" -o "$T/sim.npz"
	run npz_cosine "$T/sim.npz" "$TINY/ref.npz"
	assert_success
	$PY -c "import sys; sys.exit(0 if $output >= 0.99999 else 1)" || fail "cosine $output"
	ir-run "$FX/f32.lowered.tpu" -i "$TINY/input.npz" -o "$T/ref.npz"
	run npz_cosine "$T/sim.npz" "$T/ref.npz"
	$PY -c "import sys; sys.exit(0 if $output >= 0.999999 else 1)" || fail "cosine $output"
}

@test "statistics on stderr; -q is quiet; -p profiles every layer" {
	run tpu-sim "$FX/int8.tmodel" -i "$TINY/input.npz"
	assert_success
	assert_line --index 0 --regexp '^tpu-sim: tpu-a int8: [0-9]+ cycles, [0-9.]+ ms at 1 GHz$'
	assert_line --index 1 --regexp '^tpu-sim: engines busy: dma [0-9]+ cycles, compute [0-9]+ cycles$'
	assert_line --index 2 --regexp '^tpu-sim: DDR [0-9.]+ KiB moved \(minimum [0-9.]+ KiB\), [0-9.e-]+ GMAC, MAC utilisation [0-9.]+%$'
	assert_line --index 3 --regexp '^tpu-sim: roofline bound [0-9]+ cycles \((memory|compute)\), efficiency [0-9.]+%$'
	run tpu-sim -q "$FX/int8.tmodel" -i "$TINY/input.npz"
	assert_success
	assert_output ''
	run tpu-sim -q -p "$FX/int8.tmodel" -i "$TINY/input.npz"
	assert_line --index 0 --regexp '^layer +type +slices +cycles +start +end +name$'
	run irq "$FX/int8.addressed.tpu" 'len(O)'
	local n=$output
	run tpu-sim -q -p "$FX/int8.tmodel" -i "$TINY/input.npz"
	[ "$(grep -c '^[0-9]' <<<"$output")" -eq "$n" ]
}

@test "timing only gives the cycles of the full run, without an input" {
	run tpu-sim "$FX/int8.tmodel" -i "$TINY/input.npz"
	local full=${lines[0]}
	run tpu-sim "$FX/int8.tmodel" -t
	assert_success
	assert_line --index 0 "$full"
}

@test "the model from stdin" {
	tpu-sim -q - -i "$TINY/input.npz" -o "$T/a.npz" <"$FX/int8.tmodel"
	tpu-sim -q "$FX/int8.tmodel" -i "$TINY/input.npz" -o "$T/b.npz"
	cmp "$T/a.npz" "$T/b.npz"
}

@test "missing, truncated or foreign model files" {
	run -1 tpu-sim "$T/nope.tmodel" -i "$TINY/input.npz" -o "$T/o.npz"
	assert_output "tpu-sim: cannot open '$T/nope.tmodel': No such file or directory"
	truncate_file "$FX/int8.tmodel" "$T/t.tmodel" 500
	run -1 tpu-sim "$T/t.tmodel" -i "$TINY/input.npz" -o "$T/o.npz"
	assert_output "tpu-sim: '$T/t.tmodel': truncated tmodel (500 bytes)"
	truncate_file "$FX/int8.tmodel" "$T/t.tmodel" 50
	run -1 tpu-sim "$T/t.tmodel" -i "$TINY/input.npz" -o "$T/o.npz"
	assert_output "tpu-sim: '$T/t.tmodel': truncated tmodel (50 bytes)"
	run -1 tpu-sim "$FX/int8.addressed.tpu" -i "$TINY/input.npz" -o "$T/o.npz"
	assert_output "tpu-sim: '$FX/int8.addressed.tpu': not a tmodel file (bad magic)"
	: >"$T/empty"
	run -1 tpu-sim "$T/empty" -t
	assert_output "tpu-sim: '$T/empty': empty input, expected a tmodel file"
	[ ! -e "$T/o.npz" ]
}

@test "a corrupt command is refused" {
	# Set a reserved opcode in the first DMA command (formats/tpuc-tmodel.5).
	cp "$FX/int8.tmodel" "$T/c.tmodel"
	local off
	off=$($PY -c 'import struct, sys; print(struct.unpack_from("<Q", open(sys.argv[1], "rb").read(), 32)[0])' "$T/c.tmodel")
	printf '\x0f' | dd of="$T/c.tmodel" bs=1 seek="$off" conv=notrunc 2>/dev/null
	run -1 tpu-sim "$T/c.tmodel" -t
	assert_output "tpu-sim: '$T/c.tmodel': corrupt tmodel: dma command 1: unknown opcode 15"
}

@test "inputs missing or misshapen leave no output" {
	$PY -c 'import numpy as np; np.savez("'"$T"'/wrong.npz", other=np.zeros((1, 3, 32, 32), np.float32))'
	run -1 tpu-sim "$FX/int8.tmodel" -i "$T/wrong.npz" -o "$T/o.npz"
	assert_output "tpu-sim: '$T/wrong.npz': no array for graph input 'input'"
	$PY -c 'import numpy as np; np.savez("'"$T"'/shape.npz", input=np.zeros((1, 3, 16, 32), np.float32))'
	run -1 tpu-sim "$FX/int8.tmodel" -i "$T/shape.npz" -o "$T/o.npz"
	assert_output "tpu-sim: '$T/shape.npz': array 'input' has shape [1,3,16,32], the graph input [1,3,32,32]"
	run -1 tpu-sim "$FX/int8.tmodel" -i "$T/nope.npz" -o "$T/o.npz"
	assert_output --partial "tpu-sim: cannot open '$T/nope.npz'"
	[ ! -e "$T/o.npz" ]
}

@test "usage errors exit 2" {
	run -2 tpu-sim "$FX/int8.tmodel"
	assert_output --partial 'usage: tpu-sim'
	run -2 tpu-sim "$FX/int8.tmodel" -i "$TINY/input.npz" -x
	assert_line --index 0 "tpu-sim: unknown option '-x'"
	run -2 tpu-sim "$FX/int8.tmodel" -i
	assert_line --index 0 "tpu-sim: option '-i' needs a file name"
	run -2 tpu-sim "$FX/int8.tmodel" -t -o "$T/o.npz"
	[ ! -e "$T/o.npz" ]
	run -2 tpu-sim a b -t
}

# run_model NAME MODE: DIR/sim.npz from the whole pipeline and, for int8,
# DIR/ref.npz from ir-run on the lowered Tpu IR.
run_model() {
	local m=$1 mode=$2 d=$T/$1.$2
	mkdir -p "$d"
	onnx2top "$MODELS/$m/model.onnx" | top-opt -o "$d/c.top"
	if [ "$mode" = int8 ]; then
		calibrate "$d/c.top" -d "$MODELS/$m/calib.npz" -n 4 -o "$d/cali" 2>/dev/null
		top2tpu "$d/c.top" --chip tpu-a --mode int8 --calib "$d/cali" -o "$d/l.tpu"
		ir-run "$d/l.tpu" -i "$MODELS/$m/input.npz" -o "$d/ref.npz"
	else
		top2tpu "$d/c.top" --chip tpu-a --mode f32 -o "$d/l.tpu"
	fi
	weight-reorder "$d/l.tpu" | layergroup | addr-assign -q | codegen -o "$d/m.tmodel"
	tpu-sim "$d/m.tmodel" -i "$MODELS/$m/input.npz" -o "$d/sim.npz" 2>"$d/stats"
}

@test "resnet18 int8: bit-identical to ir-run, in seconds" {
	need_models resnet18
	run_model resnet18 int8
	cmp "$T/resnet18.int8/sim.npz" "$T/resnet18.int8/ref.npz"
	local t0=$SECONDS
	tpu-sim -q "$T/resnet18.int8/m.tmodel" -i "$MODELS/resnet18/input.npz"
	[ $((SECONDS - t0)) -lt 20 ]
}

@test "resnet18 f32: reference output, cosine >= 0.99999" {
	need_models resnet18
	run_model resnet18 f32
	run npz_cosine "$T/resnet18.f32/sim.npz" "$MODELS/resnet18/ref.npz"
	$PY -c "import sys; sys.exit(0 if $output >= 0.99999 else 1)" || fail "cosine $output"
}

@test "mobilenet_v2 int8: bit-identical to ir-run" {
	need_models mobilenet_v2
	run_model mobilenet_v2 int8
	cmp "$T/mobilenet_v2.int8/sim.npz" "$T/mobilenet_v2.int8/ref.npz"
}

@test "mobilenet_v2 f32: reference output, cosine >= 0.99999" {
	need_models mobilenet_v2
	run_model mobilenet_v2 f32
	run npz_cosine "$T/mobilenet_v2.f32/sim.npz" "$MODELS/mobilenet_v2/ref.npz"
	$PY -c "import sys; sys.exit(0 if $output >= 0.99999 else 1)" || fail "cosine $output"
}
