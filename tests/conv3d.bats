#!/usr/bin/env bats
# conv3d: a small video CNN (tests/fixtures/conv3d_net.py: 3-D Convs with
# stride, padding and dilation in depth, BatchNorm folded and unfolded, a
# residual Add, a global pool) runs on the chip: top2tpu lowers each 3-D
# Conv to 2-D Convs, one per output plane, over depth-major tensors
# (lib/back/lower_depth.c), so no op is left on the host; tpu-sim is bit
# for bit ir-run on the Tpu IR, F32 as numpy's float64 reference.
load helpers

bats_require_minimum_version 1.5.0

setup_file() {
	export D="$BATS_FILE_TMPDIR"
	/usr/bin/python3 "$BATS_TEST_DIRNAME/fixtures/conv3d_net.py" "$D"
}

deploy() { # MODE CHIP
	deploy_mk MODEL="$D/v.onnx" INPUT="$D/in.npz" CALIB="$D/cal.npz" REF="$D/ref.npz" \
		MODE=$1 CHIP=$2 OUT="$D/$1-$2"
	assert_success
	cmp "$D/$1-$2/tpu_out.npz" "$D/$1-$2/sim_out.npz"
}

@test "conv3d: every 3-D Conv runs as chip Convs over its output planes, tpu-sim as ir-run, f32 and int8" {
	deploy f32 tpu-a
	deploy int8 tpu-a
	local m
	for m in f32 int8; do
		run ir-print "$D/$m-tpu-a/addressed.tpu"
		assert_success
		refute_output --partial 'host'
		# one 2-D Conv per output plane: c1 3, c2 3, the downsample 3, c3 4
		[ "$(grep -cE '= Conv\(.*// group [0-9]+, (global|local)' <<<"$output")" -eq 13 ]
		# the depth-major layout from the input to the pool: two Transposes
		[ "$(grep -c '= Transpose(' <<<"$output")" -eq 2 ]
		run codegen "$D/$m-tpu-a/addressed.tpu" -o "$D/$m.tmodel" -l "$D/$m.lst"
		assert_success
		! grep -q ' host  # ' "$D/$m.lst"
	done
	# int8: the input quantised once, before its Transpose to depth-major
	run ir-print "$D/int8-tpu-a/lowered.tpu"
	[ "$(grep -c '= Cast(.*{to="[iu]8"}' <<<"$output")" -eq 1 ]
	assert_output --regexp '%x_i8 = Cast\(%x\) \{to="i8"\}'
	assert_output --regexp '= Transpose\(%x_ncd_i8\)'
	# f32: numpy's float64 3-D convolution
	run npz-compare "$D/ref.npz" "$D/f32-tpu-a/sim_out.npz" --tolerance 0.999999,0.999
	assert_success
	# int8: each plane's Conv requantises its whole sum once
	run npz-compare "$D/int8-tpu-a/top_out.npz" "$D/int8-tpu-a/sim_out.npz" --tolerance 0.9995,0.95
	assert_success
}

@test "conv3d: int8 on tpu-b and bf16, tpu-sim as ir-run" {
	deploy int8 tpu-b
	deploy bf16 tpu-a
	run ir-print "$D/int8-tpu-b/addressed.tpu"
	refute_output --partial 'host'
}
