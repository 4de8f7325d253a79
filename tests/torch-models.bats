#!/usr/bin/env bats
# Real models of the kinds issue 11 names (tests/fixtures/torch_models.py:
# 1-D and 3-D convolutions, run-time convolution weights, a model in f64)
# through onnx2top | top-opt | ir-run against onnxruntime, and the f32 ones
# through the back end, tpu-sim bit for bit as ir-run.  Skipped without
# torch, node or onnxruntime-node.
load helpers

bats_require_minimum_version 1.5.0

setup_file() {
	export FX="$BATS_FILE_TMPDIR/fx"
	mkdir -p "$FX"
	local rc=0
	/usr/bin/python3 "$BATS_TEST_DIRNAME/fixtures/torch_models.py" "$FX" >/dev/null 2>&1 || rc=$?
	echo "$rc" >"$FX/rc"
}

setup() {
	T=$BATS_TEST_TMPDIR
	[ "$(cat "$FX/rc")" != 77 ] || skip "torch is not installed"
	[ "$(cat "$FX/rc")" = 0 ] || fail "torch_models.py failed"
}

@test "torch models: 1-D and 3-D convolutions, run-time weights and f64 match onnxruntime in ir-run (cosine >= 0.99999)" {
	for m in audio1d video3d rtweight f64; do
		ort_outputs "$FX/$m.onnx" "$FX/${m}_in.npz" "$T/${m}_ort.npz"
		onnx2top "$FX/$m.onnx" -o "$T/$m.top"
		top-opt "$T/$m.top" -o "$T/$m.opt"
		ir-run "$T/$m.opt" -i "$FX/${m}_in.npz" -o "$T/$m.npz"
		run npz-compare "$T/$m.npz" "$T/${m}_ort.npz" --tolerance 0.99999,0.999
		assert_success
	done
	# f64 is computed in double: ir-run writes it so, within 1e-7 of onnxruntime
	$PY -c 'import sys, numpy as np
a, b = np.load(sys.argv[1])["y"], np.load(sys.argv[2])["y"]
assert a.dtype == np.float64, a.dtype
assert np.abs(a - b).max() < 1e-7, np.abs(a - b).max()' "$T/f64.npz" "$T/f64_ort.npz"
}

@test "torch models: the f32 ones through the back end (3-D Convs on the chip, 3-D pooling, ConvTranspose and run-time-weight Convs on the host), tpu-sim as ir-run; f64 refused by top2tpu in one line" {
	for m in audio1d video3d rtweight; do
		deploy_mk MODEL="$FX/$m.onnx" INPUT="$FX/${m}_in.npz" MODE=f32 OUT="$T/$m"
		assert_success
		cmp "$T/$m/tpu_out.npz" "$T/$m/sim_out.npz"
	done
	onnx2top "$FX/f64.onnx" | top-opt -o "$T/f64.top"
	run -1 top2tpu "$T/f64.top" --chip tpu-a --mode f32 -o "$T/f64.tpu"
	assert_output --regexp "^top2tpu: .*tensor 'x': dtype f64 is not supported on the chip"
}
