#!/usr/bin/env bats
# ir-format: formats/tpuc-ir.5 is enough to read the IR.  tests/ir_reader.py,
# written from the page alone, reads what the tools write and finds every
# ONNX initializer in it, byte for byte.
load helpers
bats_require_minimum_version 1.5.0

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

# ---- well-formed files that break the format's rules ----
# Every tool reads IR through lib/ir/ir_io.c, which checks the structure, the
# sizes, and each op against its definition: the shapes and dtypes its
# inputs and attributes give must be the stored ones.  A file that breaks
# a rule is refused in one line naming the file and the op or tensor, with
# no output left behind.

# The example through every stage, f32 and int8, made once for the file.
setup_file() {
	export P="$BATS_FILE_TMPDIR/p"
	mkdir -p "$P"
	local ex=$BATS_TEST_DIRNAME/../examples/tiny_cnn
	[ -x "${TPUC_BUILD:-/nonexistent}/bin/addr-assign" ] || return 0
	onnx2top "$ex/model.onnx" -o "$P/origin.top"
	top-opt "$P/origin.top" -o "$P/canonical.top"
	calibrate "$P/canonical.top" -d "$ex/calib.npz" -n 2 -o "$P/cali.table" 2>/dev/null
	for m in f32 int8; do
		top2tpu "$P/canonical.top" --chip tpu-a --mode $m --calib "$P/cali.table" -o "$P/$m.lowered.tpu"
		weight-reorder "$P/$m.lowered.tpu" -o "$P/$m.reordered.tpu"
		layergroup "$P/$m.reordered.tpu" -o "$P/$m.grouped.tpu"
		addr-assign "$P/$m.grouped.tpu" -o "$P/$m.addressed.tpu"
	done
}

# mutate IN OUT CODE: write OUT, IN with its graph changed by the Python
# CODE (g the graph map, T its tensors, O its ops; op(NAME) and t(NAME) find
# one by name), the data section kept.
mutate() {
	$PY - "$@" <<'PYEOF'
import struct, sys, msgpack
b = open(sys.argv[1], 'rb').read()
glen, doff, dlen = struct.unpack_from('<QQQ', b, 16)
g = msgpack.unpackb(b[64:64 + glen], strict_map_key=False)
T, O = g['tensors'], g['ops']
op = lambda n: next(o for o in O if o['name'] == n)
t = lambda n: next(x for x in T if x['name'] == n)
exec(sys.argv[3])
gb = msgpack.packb(g)
noff = (64 + len(gb) + 63) // 64 * 64
hdr = bytearray(b[:64])
struct.pack_into('<QQQ', hdr, 16, len(gb), noff, dlen)
open(sys.argv[2], 'wb').write(bytes(hdr) + gb + bytes(noff - 64 - len(gb)) + b[doff:doff + dlen])
PYEOF
}

# refused BAD MESSAGE: the tools for BAD's dialect (told by its name: top-opt
# and top2tpu for .top, codegen for .tpu) and ir-run each refuse BAD with
# exit 1 and the one line "TOOL: 'BAD': MESSAGE", and write nothing.
refused() {
	local bad=$1 msg=$2 tools tool
	case $bad in
	*.top) tools="top-opt top2tpu ir-run" ;;
	*) tools="codegen ir-run" ;;
	esac
	for tool in $tools; do
		rm -rf "$T/out"
		case $tool in
		top2tpu) run --separate-stderr top2tpu "$bad" --chip tpu-a --mode f32 -o "$T/out" ;;
		ir-run) run --separate-stderr ir-run "$bad" -i "$EX/input.npz" -o "$T/out" ;;
		*) run --separate-stderr $tool "$bad" -o "$T/out" ;;
		esac
		assert_failure 1
		assert_equal "$stderr" "$tool: '$bad': $msg"
		assert_equal "$output" ""
		[ ! -e "$T/out" ]
	done
}

@test "an op missing a required input, or with it absent (-1), is refused" {
	need_tool addr-assign codegen
	mutate "$P/origin.top" "$T/a.top" 'op("stem/Conv")["in"] = []'
	refused "$T/a.top" "op 'stem/Conv' (Conv): takes 2 to 3 inputs, has 0"
	mutate "$P/canonical.top" "$T/b.top" 'op("stem/Conv")["in"][0] = -1'
	refused "$T/b.top" "op 'stem/Conv' (Conv): required input 0 is absent"
	mutate "$P/canonical.top" "$T/c.top" 'O[-1]["in"] = O[-1]["in"][:1]'
	refused "$T/c.top" "op 'head/Gemm' (Gemm): takes 2 to 3 inputs, has 1"
	mutate "$P/int8.addressed.tpu" "$T/d.tpu" 'op("stem/Conv")["in"] = [-1]'
	refused "$T/d.tpu" "op 'stem/Conv' (Conv): takes 2 to 5 inputs, has 1"
}

@test "an op whose inputs, type or attributes disagree with its stored output is refused" {
	need_tool addr-assign codegen
	# a weight where the activation belongs
	mutate "$P/canonical.top" "$T/a.top" 'o = op("stem/Conv"); o["in"][0] = o["in"][1]'
	refused "$T/a.top" "op 'stem/Conv' (Conv): output 'stem/Relu_output_0' is f32 [1,16,32,32], its inputs and attributes give f32 [16,16,3,3]"
	# the type swapped
	mutate "$P/canonical.top" "$T/b.top" 'op("stem/Conv")["type"] = "Relu"'
	refused "$T/b.top" "op 'stem/Conv' (Relu): takes 1 to 1 inputs, has 3"
	# a stored shape changed
	mutate "$P/canonical.top" "$T/c.top" 't("stem/Relu_output_0")["shape"][2] = 31'
	refused "$T/c.top" "op 'stem/Conv' (Conv): output 'stem/Relu_output_0' is f32 [1,16,31,32], its inputs and attributes give f32 [1,16,32,32]"
	# strides that do not give the stored shape, in int8 Tpu IR (the stem
	# computes 4 columns per position there: weight-reorder's lane filling)
	mutate "$P/int8.addressed.tpu" "$T/d.tpu" 'op("stem/Conv")["attrs"]["strides"] = [2, 2]'
	refused "$T/d.tpu" "op 'stem/Conv' (Conv): output 'stem/Relu_output_0_fill' is u8 [1,64,32,8], its inputs and attributes give u8 [1,64,16,15]"
	# an extra output the definition does not give
	mutate "$P/f32.addressed.tpu" "$T/e.tpu" 'op("stem/Conv")["out"].append(len(T)); T.append(dict(name="extra", dtype="f32", shape=[1]))'
	refused "$T/e.tpu" "op 'stem/Conv' (Conv): has 2 outputs, its definition gives 1"
}

@test "absurd pads, strides and kernels are refused naming the op" {
	need_tool addr-assign codegen
	mutate "$P/origin.top" "$T/a.top" 'op("stem/Conv")["attrs"]["pads"] = [1 << 30] * 4'
	refused "$T/a.top" "op 'stem/Conv' (Conv): attribute 'pads' value 1073741824 is out of range [0, 16777216]"
	mutate "$P/canonical.top" "$T/b.top" 'op("stem/Conv")["attrs"]["strides"] = [0, 1]'
	refused "$T/b.top" "op 'stem/Conv' (Conv): attribute 'strides' value 0 is out of range [1, 16777216]"
	mutate "$P/int8.addressed.tpu" "$T/c.tpu" 'op("stem/Conv")["attrs"]["dilations"] = [-(1 << 40), 1]'
	refused "$T/c.tpu" "op 'stem/Conv' (Conv): attribute 'dilations' value -1099511627776 is out of range [1, 16777216]"
}

@test "a huge dimension or tensor, or activations past 64 GiB, are refused naming the tensor" {
	need_tool addr-assign codegen
	mutate "$P/canonical.top" "$T/a.top" 't("stem/Relu_output_0")["shape"] = [1 << 40, 1 << 40]'
	refused "$T/a.top" "invalid IR: tensor 'stem/Relu_output_0': dimension 0 of shape [1099511627776,1099511627776] is out of range [0, 2147483647]"
	mutate "$P/canonical.top" "$T/b.top" 't("stem/Relu_output_0")["shape"] = [1 << 30, 1 << 30, 4]'
	refused "$T/b.top" "invalid IR: tensor 'stem/Relu_output_0': shape [1073741824,1073741824,4] of f32 needs more than 1099511627776 bytes"
	mutate "$P/int8.addressed.tpu" "$T/c.tpu" 'T[g["inputs"][0]]["shape"] = [(1 << 31) - 1, 9]'
	refused "$T/c.tpu" "invalid IR: activations need more than 68719476736 bytes, the most a graph may use (passed at tensor 'input')"
}

@test "dynamic dimensions: past the rank, on a weight, or not those the ops give, are refused" {
	need_tool addr-assign codegen
	mutate "$P/canonical.top" "$T/a.top" 't("stem/Relu_output_0")["dyn"] = 16'
	refused "$T/a.top" "invalid IR: tensor 'stem/Relu_output_0': a dynamic dimension past its rank"
	mutate "$P/canonical.top" "$T/b.top" 'next(x for x in T if "data" in x)["dyn"] = 1'
	run --separate-stderr top-opt "$T/b.top" -o "$T/out"
	assert_failure 1
	assert_regex "$stderr" "^top-opt: '$T/b.top': invalid IR: tensor '[^']*': a weight has no dynamic dimension\$"
	[ ! -e "$T/out" ]
	mutate "$P/canonical.top" "$T/c.top" 't("stem/Relu_output_0")["dyn"] = 4'
	refused "$T/c.top" "op 'stem/Conv' (Conv): output 'stem/Relu_output_0' has dynamic dimensions 0x4, its inputs and attributes give 0"
}
