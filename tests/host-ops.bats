#!/usr/bin/env bats
# host-ops: ops the chip has no form for (MaxUnpool, MaxPool's Indices, a
# grouped 3-D Conv, GridSample) run on the host between chip ops: top2tpu places
# them on the host, codegen gives each a host command, tpu-sim runs it by
# ir-run's kernel, in f32 and int8, on both chips, bit for bit as ir-run.
load helpers

bats_require_minimum_version 1.5.0

setup_file() {
	export D="$BATS_FILE_TMPDIR"
	/usr/bin/python3 "$BATS_TEST_DIRNAME/fixtures/host_ops.py" "$D"
}

deploy() { # MODE CHIP
	deploy_mk MODEL="$D/h.onnx" INPUT="$D/in.npz" CALIB="$D/cal.npz" MODE=$1 CHIP=$2 \
		OUT="$D/$1-$2"
	assert_success
}

@test "host ops: placed on the host by top2tpu, one host command each, tpu-sim as ir-run in f32 and int8 on tpu-a" {
	deploy f32 tpu-a
	deploy int8 tpu-a
	cmp "$D/int8-tpu-a/tpu_out.npz" "$D/int8-tpu-a/sim_out.npz"
	cmp "$D/f32-tpu-a/tpu_out.npz" "$D/f32-tpu-a/sim_out.npz"
	local m
	for m in f32 int8; do
		run ir-print "$D/$m-tpu-a/addressed.tpu"
		assert_success
		# exactly the four ops without a chip form are on the host
		[ "$(grep -c '// .*host' <<<"$output")" -eq 4 ]
		assert_output --regexp 'ix = MaxPoolIndices\(.*// .*host'
		assert_output --regexp 'u1 = MaxUnpool\(.*// .*host'
		assert_output --regexp 'c3 = Conv\(.*f32\[1,2,4,16,16\].*// .*host'
		assert_output --regexp 'gs = GridSample\(.*// .*host'
		# and their neighbours on the chip
		assert_output --regexp 'r2(_fill)? = Conv\(%v4.*// group [0-9]+, (global|local),'
	done
	# int8: the host op takes f32, dequantised on the chip
	run ir-print "$D/int8-tpu-a/lowered.tpu"
	assert_output --regexp 'gs = GridSample\(%r2_f32, @grid\)'
	assert_output --regexp 'r2_f32 = Cast\(%r2\) \{to="f32"\} : \([iu]8'
	# the listing: four host commands, no local operands
	run codegen "$D/int8-tpu-a/addressed.tpu" -o "$D/m.tmodel" -l "$D/m.lst"
	assert_success
	[ "$(grep -c ' host  # ' "$D/m.lst")" -eq 4 ]
	grep -q 'MaxUnpool wait d[0-9]* layer [0-9]* host  # unpool' "$D/m.lst"
	# tpu-sim: the host's time apart from the chip's cycles
	run tpu-sim "$D/m.tmodel" -i "$D/in.npz" -o "$D/o.npz" -p
	assert_success
	assert_output --regexp 'tpu-sim: host: 4 commands, [0-9.]+ ms on this machine \(not in the cycles\)'
	cmp "$D/o.npz" "$D/int8-tpu-a/sim_out.npz"
}

@test "host ops: on tpu-b and in bf16 too, with every op in a group of its own (layergroup -n 1)" {
	deploy int8 tpu-b
	cmp "$D/int8-tpu-b/tpu_out.npz" "$D/int8-tpu-b/sim_out.npz"
	deploy bf16 tpu-a
	cmp "$D/bf16-tpu-a/tpu_out.npz" "$D/bf16-tpu-a/sim_out.npz"
	run layergroup -n 1 "$D/bf16-tpu-a/reordered.tpu" -o "$D/g1.tpu"
	assert_success
	run addr-assign "$D/g1.tpu" -o "$D/a1.tpu"
	assert_success
	run codegen "$D/a1.tpu" -o "$D/m1.tmodel"
	assert_success
	run tpu-sim "$D/m1.tmodel" -i "$D/in.npz" -o "$D/o1.npz"
	assert_success
	cmp "$D/o1.npz" "$D/bf16-tpu-a/sim_out.npz"
}

@test "host ops: a host command for a layer the chip runs is refused as corrupt" {
	deploy f32 tpu-a
	# turn the GridSample's host mark off in the layer table: its host
	# command no longer matches the layer
	/usr/bin/python3 - "$D/f32-tpu-a/model.tmodel" "$D/bad.tmodel" <<'PYEOF'
import sys
b = open(sys.argv[1], 'rb').read()
key = b'\xa5place\xa4host'
assert b.count(key) == 4
i = b.rindex(key)
open(sys.argv[2], 'wb').write(b[:i] + b'\xa5place\xa4hoss' + b[i + len(key):])
PYEOF
	run tpu-sim "$D/bad.tmodel" -i "$D/in.npz" -o "$D/bad.npz"
	assert_failure 1
	assert_output --regexp "^tpu-sim: '.*bad.tmodel': corrupt tmodel: compute command [0-9]+ does not match layer '.*'$"
	[ ! -e "$D/bad.npz" ]
}
