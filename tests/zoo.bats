#!/usr/bin/env bats
# zoo: architectures the real models do not cover (ShuffleNet, EfficientNet,
# DenseNet, ViT, U-Net, a 1-D audio net, a mix of odd ops; built by
# fixtures/make_zoo.py with seeded random weights) through the whole
# deploy pipeline: Top vs Tpu within the mode's tolerance, and tpu-sim
# bit-identical to ir-run in int8 (within rounding otherwise).
load helpers

TOOLS="onnx2top top-opt calibrate top2tpu weight-reorder layergroup addr-assign codegen tpu-sim ir-run npz-compare"
ZOO_MODELS="shufflenet effnet densenet vit unet unet_rs audio1d misc misc_cpad"

setup_file() {
	export ZOO="$BATS_FILE_TMPDIR/zoo"
	/usr/bin/python3 "$BATS_TEST_DIRNAME/fixtures/make_zoo.py" "$ZOO" >/dev/null
}

setup() {
	T=$BATS_TEST_TMPDIR
	unset MAKEFLAGS MFLAGS MAKELEVEL
	need_tool $TOOLS
}

# deploy_all ARGS...: deploy.mk compare on every zoo model with ARGS; the
# names of the models that failed go to $failed, their logs to the TAP
# stream.
deploy_all() {
	failed=
	local m
	for m in $ZOO_MODELS; do
		if ! make --no-print-directory -f "$REPO/pipelines/deploy.mk" TPUC_BIN="$TPUC_BUILD/bin" \
			MODEL="$ZOO/$m/model.onnx" INPUT="$ZOO/$m/input.npz" CALIB="$ZOO/$m/calib.npz" \
			OUT="$T/$m" "$@" compare >"$T/$m.log" 2>&1; then
			failed="$failed $m"
			grep -E '^(==|npz-compare:|[^ ]+ +\[|[a-z2-]+: )' "$T/$m.log" | sed "s/^/# $m: /" >&3
		fi
	done
}

@test "zoo, int8: every model within 0.99 of float, tpu-sim bit-identical" {
	deploy_all MODE=int8
	[ -z "$failed" ] || fail "failed:$failed"
	cmp "$T/unet/tpu_out.npz" "$T/unet/sim_out.npz"
}

@test "zoo, int8 asymmetric on tpu-b" {
	deploy_all MODE=int8 ASYM=1 CHIP=tpu-b
	[ -z "$failed" ] || fail "failed:$failed"
}

@test "zoo, bf16 and f16 on tpu-a, f32 on tpu-b" {
	local m
	for m in "MODE=bf16" "MODE=f16" "MODE=f32 CHIP=tpu-b"; do
		deploy_all $m
		[ -z "$failed" ] || fail "$m failed:$failed"
	done
}
