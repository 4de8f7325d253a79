#!/usr/bin/env bats
# The mode (top2tpu --mode) is enum ir_mode in memory and its name on disk:
# it survives every stage into the .tmodel, and readers refuse a name they
# do not know instead of carrying it along.
load helpers

EX=$BATS_TEST_DIRNAME/../examples/tiny_cnn

setup() {
	T=$BATS_TEST_TMPDIR
}

# The example through every stage in mode $1 (float modes: no table).
build() {
	onnx2top "$EX/model.onnx" -o "$T/o.top"
	top-opt "$T/o.top" -o "$T/c.top"
	top2tpu "$T/c.top" --chip tpu-a --mode "$1" -o "$T/l.tpu"
	weight-reorder "$T/l.tpu" -o "$T/r.tpu"
	layergroup "$T/r.tpu" -o "$T/g.tpu"
	addr-assign "$T/g.tpu" -o "$T/a.tpu" 2>/dev/null
	codegen "$T/a.tpu" -o "$T/m.tmodel"
}

# Copy $1 to $2 with the msgpack string "mode": "$3" made "mode": "$4"
# (same length, so every offset holds).
swap_mode() {
	$PY - "$@" <<'PY'
import sys
src, dst, a, b = sys.argv[1:]
key = b"\xa4mode" + bytes([0xa0 + len(a)])
data = open(src, "rb").read()
assert data.count(key + a.encode()) == 1, "one mode string"
open(dst, "wb").write(data.replace(key + a.encode(), key + b.encode()))
PY
}

@test "the mode reaches every stage and the .tmodel, in each float mode" {
	for m in f32 bf16 f16; do
		build $m
		run ir-print "$T/a.tpu"
		[[ "${lines[0]}" == *", mode $m, "* ]]
		run tpu-sim -q "$T/m.tmodel" -i "$EX/input.npz" -o "$T/out.npz"
		[ "$status" -eq 0 ]
		run tpu-sim "$T/m.tmodel" -i "$EX/input.npz" -o "$T/out.npz"
		[[ "${lines[0]}" == "tpu-sim: tpu-a $m: "* ]]
	done
}

@test "an IR file with an unknown mode is refused by name" {
	build bf16
	swap_mode "$T/l.tpu" "$T/bad.tpu" bf16 bf17
	run weight-reorder "$T/bad.tpu" -o "$T/x.tpu"
	[ "$status" -eq 1 ]
	assert_output "weight-reorder: '$T/bad.tpu': unknown mode 'bf17'"
	[ ! -e "$T/x.tpu" ]
}

@test "a .tmodel with an unknown mode is refused as corrupt" {
	build f16
	swap_mode "$T/m.tmodel" "$T/bad.tmodel" f16 f17
	run tpu-sim "$T/bad.tmodel" -i "$EX/input.npz" -o "$T/out.npz"
	[ "$status" -eq 1 ]
	assert_output "tpu-sim: '$T/bad.tmodel': corrupt tmodel: unknown mode 'f17'"
	[ ! -e "$T/out.npz" ]
}
