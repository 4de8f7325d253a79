#!/usr/bin/env bats
# top2tpu: f32 and int8 lowering of a small CNN (names, dtypes, Casts at the
# edges, int8 close to float through ir-run), determinism, and refusals:
# usage errors (exit 2), unreadable or wrong-stage input, tables missing a
# tensor, unfolded BatchNormalization, ops without an int8 lowering.
load helpers

bats_require_minimum_version 1.5.0

setup_file() {
	export QN="$BATS_FILE_TMPDIR/qn" FX="$BATS_FILE_TMPDIR/fx"
	/usr/bin/python3 "$BATS_TEST_DIRNAME/fixtures/quant_net.py" "$QN"
	/usr/bin/python3 "$BATS_TEST_DIRNAME/fixtures/make_fixtures.py" "$FX" >/dev/null
	onnx2top "$QN/net.onnx" -o "$QN/origin.top"
	top-opt "$QN/origin.top" -o "$QN/net.top"
	calibrate "$QN/net.top" -d "$QN/calib.npz" -o "$QN/net.table"
}

setup() {
	T=$BATS_TEST_TMPDIR
}

irdump() {
	$PY "$BATS_TEST_DIRNAME/irdump.py" "$@"
}

# irmeta FILE: "dialect stage chip mode" of an IR file.
irmeta() {
	$PY - "$1" <<'PYEOF'
import struct, sys, msgpack
b = open(sys.argv[1], 'rb').read()
g = msgpack.unpackb(b[64:64 + struct.unpack_from('<Q', b, 16)[0]])
print(g['dialect'], g['stage'], g.get('chip', '-'), g.get('mode', '-'))
PYEOF
}

@test "f32 lowering keeps every op and tensor name" {
	run top2tpu "$QN/net.top" --chip tpu-b --mode f32 -o "$T/f.tpu"
	assert_success
	run irmeta "$T/f.tpu"
	assert_output 'tpu lowered tpu-b f32'
	run irdump "$T/f.tpu"
	assert_success
	[ "$(irdump "$T/f.tpu" | grep -c '^op ')" = "$(irdump "$QN/net.top" | grep -c '^op ')" ]
	refute_output --partial 'Cast'
	run ir-run "$T/f.tpu" -i "$QN/input.npz" -o "$T/q.npz"
	assert_success
	ir-run "$QN/net.top" -i "$QN/input.npz" -o "$T/f.npz"
	run npz-compare "$T/f.npz" "$T/q.npz" --tolerance 0.99999,0.999
	assert_success
}

@test "int8 lowering: casts at the edges, i8 inside, close to float" {
	run top2tpu "$QN/net.top" --chip tpu-a --mode int8 --calib "$QN/net.table" -o "$T/q.tpu"
	assert_success
	run irmeta "$T/q.tpu"
	assert_output 'tpu lowered tpu-a int8'
	run irdump "$T/q.tpu"
	assert_output --regexp 'op Cast x_quant in=x out=x_i8'
	assert_output --regexp 'op Cast y_dequant in=y_i8 out=y '
	assert_output --regexp 'op Conv conv1 in=x_i8,w1,b1,conv1_multiplier,conv1_shift out=r1'
	assert_output --regexp 'op Add add in=r1,c2 out=r2 .*multipliers=\[[0-9]+,[0-9]+\] rshift='
	assert_output --regexp 'op Scale bn '
	run ir-run "$T/q.tpu" -i "$QN/input.npz" -o "$T/q.npz" --dump-all
	assert_success
	ir-run "$QN/net.top" -i "$QN/input.npz" -o "$T/f.npz" --dump-all
	run npz-compare "$T/f.npz" "$T/q.npz" --tolerance 0.999,0.9
	assert_success
	assert_output --partial 'only in B: x_i8'
}

@test "int8 lowering is deterministic" {
	top2tpu "$QN/net.top" --chip tpu-a --mode int8 --calib "$QN/net.table" -o "$T/a.tpu"
	top2tpu - --chip tpu-a --mode int8 --calib "$QN/net.table" <"$QN/net.top" >"$T/b.tpu"
	cmp "$T/a.tpu" "$T/b.tpu"
}

@test "stage origin is accepted" {
	onnx2top "$FX/clip9.onnx" -o "$T/clip.top"
	run top2tpu "$T/clip.top" --chip tpu-a --mode f32 -o "$T/o.tpu"
	assert_success
}

@test "usage errors exit 2" {
	run top2tpu "$QN/net.top" --mode f32
	assert_failure 2
	assert_output --partial '--chip is required'
	run top2tpu "$QN/net.top" --chip tpu-a
	assert_failure 2
	run top2tpu "$QN/net.top" --chip tpu-z --mode f32
	assert_failure 2
	assert_output --partial "unknown chip 'tpu-z'"
	run top2tpu "$QN/net.top" --chip tpu-a --mode int4
	assert_failure 2
	assert_output --partial "unknown mode 'int4'"
	run top2tpu "$QN/net.top" --chip tpu-a --mode int8 -o "$T/x.tpu"
	assert_failure 2
	assert_output --partial '--mode int8 needs --calib TABLE'
	[ ! -e "$T/x.tpu" ]
	run top2tpu "$QN/net.top" --chip tpu-a --mode f32 --bogus
	assert_failure 2
	run top2tpu "$QN/net.top" extra --chip tpu-a --mode f32
	assert_failure 2
	run top2tpu -h
	assert_success
	assert_output --partial 'usage: top2tpu'
}

@test "missing, truncated and wrong-stage input is refused" {
	run top2tpu "$T/nope.top" --chip tpu-a --mode f32 -o "$T/x.tpu"
	assert_failure 1
	assert_output --partial "top2tpu: cannot open '$T/nope.top'"
	head -c 100 "$QN/net.top" >"$T/trunc.top"
	run top2tpu "$T/trunc.top" --chip tpu-a --mode f32 -o "$T/x.tpu"
	assert_failure 1
	assert_output --regexp "^top2tpu: '$T/trunc.top': "
	top2tpu "$QN/net.top" --chip tpu-a --mode f32 -o "$T/f.tpu"
	run top2tpu "$T/f.tpu" --chip tpu-a --mode f32 -o "$T/x.tpu"
	assert_failure 1
	assert_output --partial "wrong stage: got tpu IR at stage 'lowered'"
	[ ! -e "$T/x.tpu" ]
}

@test "a table missing a tensor names the op, the tensor and the table" {
	grep -v '^c2 ' "$QN/net.table" >"$T/part.table"
	run top2tpu "$QN/net.top" --chip tpu-a --mode int8 --calib "$T/part.table" -o "$T/x.tpu"
	assert_failure 1
	assert_output "top2tpu: '$QN/net.top': op 'conv2' (Conv): no threshold for 'c2' in '$T/part.table'"
	[ ! -e "$T/x.tpu" ]
	run top2tpu "$QN/net.top" --chip tpu-a --mode int8 --calib "$T/missing.table"
	assert_failure 1
	assert_output --partial "cannot open '$T/missing.table'"
	printf 'x 1.0 0\n' >"$T/bad.table"
	run top2tpu "$QN/net.top" --chip tpu-a --mode int8 --calib "$T/bad.table"
	assert_failure 1
	assert_output "top2tpu: '$T/bad.table': line 1: expected 'name threshold min max'"
}

@test "unfolded BatchNormalization, uneven AveragePool, int8 MatMul are refused by name" {
	onnx2top "$FX/bn_alone.onnx" -o "$T/bn.top"
	run top2tpu "$T/bn.top" --chip tpu-a --mode f32
	assert_failure 1
	assert_output --partial "op 'bn0' (BatchNormalization): must be folded or turned into Scale by top-opt"
	onnx2top "$FX/mixed.onnx" | top-opt -o "$T/mixed.top"
	$PY -c "import numpy as np; np.savez('$T/s.npz', x=np.random.RandomState(0).standard_normal((2, 1, 3, 8, 8)).astype(np.float32))"
	calibrate "$T/mixed.top" -d "$T/s.npz" -o "$T/mixed.table"
	run top2tpu "$T/mixed.top" --chip tpu-a --mode int8 --calib "$T/mixed.table"
	assert_failure 1
	assert_output --partial "(AveragePool): int8 lowering needs windows of equal size"
	$PY - "$T/mm.onnx" <<'PYEOF'
import sys, numpy as np, onnx
from onnx import TensorProto, helper, numpy_helper
w = numpy_helper.from_array(np.ones((4, 2), np.float32), "w")
g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], "mm",
                      [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 2])], [w])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), sys.argv[1])
PYEOF
	onnx2top "$T/mm.onnx" -o "$T/mm.top"
	printf 'x 1 -1 1\ny 4 -4 4\n' >"$T/mm.table"
	run top2tpu "$T/mm.top" --chip tpu-a --mode int8 --calib "$T/mm.table"
	assert_failure 1
	assert_output --partial "op 'mm' (MatMul): no int8 lowering"
}
