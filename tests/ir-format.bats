#!/usr/bin/env bats
# ir-format: formats/tpuc-ir.5 is enough to read the IR.  tests/ir_reader.py,
# written from the page alone, reads what the tools write and finds every
# ONNX initializer in it, byte for byte.
load helpers

setup() {
	T=$BATS_TEST_TMPDIR
	EX=$BATS_TEST_DIRNAME/../examples/tiny_cnn
	READER=$BATS_TEST_DIRNAME/ir_reader.py
}

@test "the example's origin.top reads and holds every initializer" {
	need_tool onnx2top
	onnx2top "$EX/model.onnx" -o "$T/m.top"
	run $PY "$READER" "$T/m.top" "$EX/model.onnx"
	assert_success
	assert_line --index 0 --regexp "^$T/m.top: top IR, stage origin, version 1, graph [0-9]+ bytes, data [0-9]+ bytes at [0-9]+$"
	assert_line --regexp '^0 Conv stem/Conv \(input,stem\.conv\.weight,stem\.conv\.bias\) -> \(stem/Conv_output_0\) .*pads=\[1,1,1,1\]'
	assert_line --regexp '^[0-9]+ Gemm head/Gemm .* -> \(logits\)'
	assert_line --regexp '^25 initializers: [0-9]+ equal, [0-9]+ folded into attributes, 0 differ$'
}

@test "a changed weight byte is found and named" {
	need_tool onnx2top
	onnx2top "$EX/model.onnx" -o "$T/m.top"
	# Flip one byte of the first payload (the stem conv weight).
	$PY -c "
import struct, sys
b = bytearray(open('$T/m.top', 'rb').read())
doff = struct.unpack_from('<Q', b, 24)[0]
b[doff] ^= 0x40
open('$T/bad.top', 'wb').write(b)"
	run $PY "$READER" "$T/bad.top" "$EX/model.onnx"
	assert_failure 1
	assert_line 'initializer stem.conv.weight: differs (onnx float32 [16, 3, 3, 3], IR f32 [16, 3, 3, 3])'
}

@test "a truncated or foreign file is refused in one line" {
	need_tool onnx2top
	onnx2top "$EX/model.onnx" -o "$T/m.top"
	head -c 1000 "$T/m.top" >"$T/short.top"
	run $PY "$READER" "$T/short.top"
	assert_failure 1
	assert_output "ir_reader.py: '$T/short.top': truncated IR file (1000 bytes)"
	run $PY "$READER" "$EX/model.onnx"
	assert_failure 1
	assert_output "ir_reader.py: '$EX/model.onnx': not a tpuc IR file (bad magic)"
}

@test "Tpu IR of every later stage reads with the same reader" {
	need_tool onnx2top top-opt top2tpu weight-reorder layergroup addr-assign
	onnx2top "$EX/model.onnx" | top-opt | top2tpu --chip tpu-a --mode f32 -o "$T/lowered.tpu"
	weight-reorder "$T/lowered.tpu" -o "$T/reordered.tpu"
	layergroup "$T/reordered.tpu" -o "$T/grouped.tpu"
	addr-assign "$T/grouped.tpu" -o "$T/addressed.tpu"
	for s in lowered reordered grouped addressed; do
		run $PY "$READER" "$T/$s.tpu"
		assert_success
		assert_line --index 0 --regexp ": tpu IR, stage $s, version 1,"
	done
}

@test "resnet18: origin.top holds every initializer of the model" {
	need_models resnet18
	need_tool onnx2top
	onnx2top "$MODELS/resnet18/model.onnx" -o "$T/r.top"
	run $PY "$READER" "$T/r.top" "$MODELS/resnet18/model.onnx"
	assert_success
	assert_line --regexp '^[0-9]+ initializers: [0-9]+ equal, [0-9]+ folded into attributes, 0 differ$'
}
