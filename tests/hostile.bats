#!/usr/bin/env bats
# hostile: well-formed but malicious ONNX models (tests/fixtures/make_hostile.py)
# are refused by onnx2top in one line that names the node (where there is
# one) and the rule, with exit status 1, in seconds, without a huge
# allocation (a 4 GiB address-space limit outside sanitizer builds), and
# with no output file; models with tensors of no elements, which ONNX
# allows, run.
load helpers

bats_require_minimum_version 1.5.0

setup_file() {
	export HX="$BATS_FILE_TMPDIR/hostile"
	$PY "$BATS_TEST_DIRNAME/fixtures/make_hostile.py" "$HX"
}

# refused NAME REGEX: onnx2top on NAME.onnx fails with status 1 and exactly
# one line of stderr, "onnx2top: 'FILE': ..." matching REGEX.
refused() {
	local vlimit=unlimited
	case ${B:-build} in *san*) ;; *) vlimit=4194304 ;; esac
	run --separate-stderr bash -c 'ulimit -v "$1" && exec timeout 20 onnx2top "$2" -o "$3"' \
		_ "$vlimit" "$HX/$1.onnx" "$HX/$1.top"
	[ "$status" -eq 1 ] || { echo "status $status: $stderr"; return 1; }
	[ "${#stderr_lines[@]}" -eq 1 ] || { echo "not one line: $stderr"; return 1; }
	[[ $stderr == "onnx2top: '$HX/$1.onnx': "* ]] || { echo "no file named: $stderr"; return 1; }
	[[ $stderr =~ $2 ]] || { echo "expected /$2/, got: $stderr"; return 1; }
	[ ! -e "$HX/$1.top" ] || { echo "output left behind"; return 1; }
}

@test "a dimension of 2^31 is out of range" {
	refused dim_2p31 "op 'relu' \(Relu\): output 'y': dimension 1 of shape \[1,2147483648\] is out of range \[0, 2147483647\]"
}

@test "a dimension near 2^63 is refused" {
	refused dim_2p63 "input 'x' is too large: more than 2\^40 bytes"
}

@test "a negative dimension is refused" {
	refused dim_negative "input 'x': dimension 1 is not static"
}

@test "dimensions whose product overflows 64 bits are refused" {
	refused dim_product_2p93 "input 'x' is too large"
}

@test "ConstantOfShape past 2^63 elements: refused before folding (no negative memset)" {
	refused cos_2p63 "op 'fill' \(ConstantOfShape\): output 'y': dimension 0 of shape \[4611686018427387904,4\] is out of range"
}

@test "ConstantOfShape of 16 GiB: refused by --max-memory before allocating" {
	refused cos_16gib "op 'fill' \(ConstantOfShape\): output 'y': shape \[2147483647,2\] of f32 needs 17179869176 bytes, more than --max-memory 8589934592 allows"
}

@test "--max-memory lowers the ceiling and names the op" {
	$PY - "$BATS_TEST_TMPDIR/cos.onnx" <<'PYEOF'
import sys, numpy as np
from onnx import helper, numpy_helper, TensorProto
g = helper.make_graph([helper.make_node("ConstantOfShape", ["s"], ["y"], name="fill")], "g", [],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    [numpy_helper.from_array(np.array([1024, 1024], dtype=np.int64), "s")])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
m.ir_version = 8
open(sys.argv[1], "wb").write(m.SerializeToString())
PYEOF
	run -0 onnx2top "$BATS_TEST_TMPDIR/cos.onnx" -o "$BATS_TEST_TMPDIR/ok.top"
	run -1 --separate-stderr onnx2top --max-memory 1M "$BATS_TEST_TMPDIR/cos.onnx" -o "$BATS_TEST_TMPDIR/no.top"
	assert_equal "$stderr" "onnx2top: '$BATS_TEST_TMPDIR/cos.onnx': op 'fill' (ConstantOfShape): output 'y': shape [1024,1024] of f32 needs 4194304 bytes, more than --max-memory 1048576 allows"
	[ ! -e "$BATS_TEST_TMPDIR/no.top" ]
	run -2 --separate-stderr onnx2top --max-memory 0 "$BATS_TEST_TMPDIR/cos.onnx"
	assert_equal "${stderr_lines[0]}" "onnx2top: --max-memory '0': expected a positive size such as 512M or 8G"
	run -2 --separate-stderr onnx2top --max-memory 12Q "$BATS_TEST_TMPDIR/cos.onnx"
	[ "$status" -eq 2 ]
}

@test "Range of 2^62 elements is refused" {
	refused range_huge "op 'range' \(Range\): output 'y': dimension 0 of shape \[4611686018427387904\] is out of range"
}

@test "OneHot of depth 2^40 is refused" {
	refused onehot_2p40 "op 'onehot' \(OneHot\): output 'y': dimension 1 of shape \[4,1099511627776\] is out of range"
}

@test "negative and huge pads are refused" {
	refused pads_negative "node 'conv' \(Conv\): attribute 'pads' value -1 is out of range"
	refused pads_huge "node 'conv' \(Conv\): attribute 'pads' value 1099511627776 is out of range"
	refused pad_op_huge "op 'pad' \(Pad\): pads of axis 1 exceed 2147483647"
}

@test "zero and huge strides are refused" {
	refused strides_zero "node 'conv' \(Conv\): attribute 'strides' value 0 is out of range \[1, "
	refused strides_huge "node 'conv' \(Conv\): attribute 'strides' value 4611686018427387904 is out of range"
}

@test "negative and huge dilations are refused" {
	refused dilations_negative "node 'conv' \(Conv\): attribute 'dilations' value -2 is out of range"
	refused dilations_huge "node 'conv' \(Conv\): attribute 'dilations' value 1099511627776 is out of range"
}

@test "zero-sized tensors are taken: a Conv of no output channels, an input with a dimension of 0, in ir-run and on tpu-sim" {
	local m T=$BATS_TEST_TMPDIR
	$PY -c 'import numpy as np, sys
np.savez(sys.argv[1], x=np.ones((1, 1, 4, 4), np.float32))
np.savez(sys.argv[2], x=np.ones((0, 3), np.float32))' "$T/zero_sized_weight.npz" "$T/zero_sized_input.npz"
	for m in zero_sized_weight zero_sized_input; do
		run make --no-print-directory -f "$REPO/pipelines/deploy.mk" TPUC_BIN="$TPUC_BUILD/bin" \
			MODEL="$HX/$m.onnx" INPUT="$T/$m.npz" MODE=f32 OUT="$T/$m" compare
		assert_success
		cmp "$T/$m/tpu_out.npz" "$T/$m/sim_out.npz"
	done
	run $PY -c 'import numpy as np, sys
print(np.load(sys.argv[1])["y"].shape, np.load(sys.argv[2])["y"].shape)' \
		"$T/zero_sized_weight/sim_out.npz" "$T/zero_sized_input/sim_out.npz"
	assert_output '(1, 0, 2, 2) (0, 3)'
}

@test "a cyclic graph is refused" {
	refused cycle "node 'first' \(Relu\): input 'b' is written by a later node 'second': the graph has a cycle or is not in topological order"
}

@test "a node reading its own output is refused" {
	refused self_loop "node 'loop' \(Add\): input 'y' is the node's own output: a node may not read what it writes"
}

@test "a dangling name is refused" {
	refused dangling "node 'relu' \(Relu\): input 'nowhere' is not defined before use"
}

@test "duplicate names are refused" {
	refused duplicate_output "node 'r2' \(Sigmoid\): tensor 'y' is defined twice"
	refused duplicate_node_name "node 'same' \(Relu\): the node name is used twice"
	refused duplicate_initializer "initializer 'w' is defined twice"
}

@test "initializers whose bytes disagree with their shape are refused" {
	refused init_raw_short "initializer 'w': 8 bytes of data for a shape that needs 16"
	refused init_raw_2p40 "initializer 'w': 16 bytes of data for a shape that needs 4398046511104"
	refused init_floats_long "initializer 'w': 28 bytes of data for a shape that needs 16"
}

@test "external data outside the model's folder, missing, short or mis-sized is refused" {
	refused external_outside "initializer 'w': external data location '\\.\\./\\.\\./\\.\\./etc/passwd' must be a relative path inside the model's folder"
	refused external_absolute "initializer 'w': external data location '/etc/passwd' must be a relative path inside the model's folder"
	refused external_missing "initializer 'w': cannot open external data '.*/no_such.bin': No such file or directory"
	refused external_short "initializer 'w': external data '.*/short.bin' holds 8 bytes, the tensor needs 16 at offset 0"
	refused external_length "initializer 'w': external data length 8, the shape needs 16 bytes"
	refused external_offset "initializer 'w': external data offset '-1' is not a number"
}

@test "opsets out of range are refused" {
	refused opset_99 "opset 99 is not supported \(1 to 21\)"
	refused opset_0 "opset 0 is not supported \(1 to 21\)"
}

@test "IR versions out of range are refused (ir_version 99)" {
	refused ir_version_99 "ir_version 99 is not supported \(1 to 10\)"
	refused ir_version_0 "ir_version 0 is not supported \(1 to 10\)"
}

@test "a subgraph nested 100,000 deep is refused before the decoder recurses" {
	refused nested_100000 "graphs, attributes or types nested more than 96 deep \(at byte [0-9]+\)"
}
