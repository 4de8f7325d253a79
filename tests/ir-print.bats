#!/usr/bin/env bats
# ir-print: the text listing (one line per op, types, attributes, scales,
# groups and addresses), the DOT graph, and errors (exit 1, one line) and
# usage (exit 2).
load helpers

bats_require_minimum_version 1.5.0

setup_file() {
	export FX="$BATS_FILE_TMPDIR/fx"
	mkdir -p "$FX"
	/usr/bin/python3 "$BATS_TEST_DIRNAME/fixtures/ir_run_fixtures.py" "$FX"
	onnx2top "$FX/tiny.onnx" -o "$FX/tiny.top"
	onnx2top "$FX/misc.onnx" -o "$FX/misc.top"
}

setup() {
	T=$BATS_TEST_TMPDIR
	EX=$BATS_TEST_DIRNAME/../examples/tiny_cnn
}

# The number of ops in an IR file, read by the second reader.
ir_op_count() {
	$PY -c 'import sys
sys.path.insert(0, sys.argv[1])
from ir_reader import read_ir
print(len(read_ir(sys.argv[2])[1]["ops"]))' "$BATS_TEST_DIRNAME" "$1"
}

# An addressed int8 Tpu graph of the example model in $T/a.tpu.
make_addressed() {
	need_tool top-opt calibrate top2tpu weight-reorder layergroup addr-assign
	onnx2top "$EX/model.onnx" -o "$T/o.top"
	top-opt "$T/o.top" -o "$T/c.top"
	calibrate "$T/c.top" -d "$EX/calib.npz" -o "$T/cali" 2>/dev/null
	top2tpu "$T/c.top" --chip tpu-a --mode int8 --calib "$T/cali" -o "$T/l.tpu"
	weight-reorder "$T/l.tpu" -o "$T/r.tpu"
	layergroup "$T/r.tpu" -o "$T/g.tpu"
	addr-assign "$T/g.tpu" -o "$T/a.tpu" 2>/dev/null
}

@test "one line per op, header, func and return" {
	run ir-print "$FX/tiny.top"
	assert_success
	assert_line --index 0 --regexp '^// tpuc ir: dialect top, stage origin, chip none, mode none, [0-9]+ ops, [0-9]+ tensors$'
	assert_line --index 1 --regexp '^func @[^ ]+\(%x: f32\[1,4,13,11\]\) -> \(%y: f32\[[0-9,]+\]\) \{$'
	assert_line --regexp '^  return %y$'
	assert_line --index $((${#lines[@]} - 1)) '}'
	local ops
	ops=$(ir_op_count "$FX/tiny.top")
	[ "$(grep -c '^  %.* = ' <<<"$output")" -eq "$ops" ]
	[ "${#lines[@]}" -eq $((ops + 4)) ]
}

@test "op lines carry inputs, weights, attributes and types" {
	run ir-print "$FX/tiny.top"
	assert_success
	assert_line --regexp '^  %conv = Conv\(%x, @[^ ]+, @[^ ]+\) \{.*pads=\[[0-9,]+\].*\} : \(f32\[1,4,13,11\], f32\[[0-9,]+\], f32\[[0-9]+\]\) -> f32\[[0-9,]+\] loc\("[^"]*"\)$'
	assert_line --regexp '^  %gap = GlobalAveragePool\(%add\) : \(f32\[[0-9,]+\]\) -> f32\[[0-9,]+\] loc'
}

@test "op count matches on every stage of the example, scales and addresses shown" {
	make_addressed
	local f
	for f in o.top c.top l.tpu r.tpu g.tpu a.tpu; do
		run ir-print "$T/$f"
		assert_success
		[ "$(grep -c '^  %.* = ' <<<"$output")" -eq "$(ir_op_count "$T/$f")" ]
	done
	run ir-print "$T/a.tpu"
	assert_line --index 0 --regexp '^// tpuc ir: dialect tpu, stage addressed, chip tpu-a, mode int8, [0-9]+ ops, [0-9]+ tensors, neuron [0-9]+ bytes, coeff [0-9]+ bytes$'
	assert_line --regexp '^  %[^ ]+ = Conv\(.*-> i8\[[0-9,]+\]<scale=[0-9.e-]+> loc\("[^"]*"\)  // group [0-9]+, (global|local), .* at 0x[0-9a-f]+'
}

@test "names that are not identifiers are quoted" {
	onnx2top "$EX/model.onnx" -o "$T/o.top"
	run ir-print "$T/o.top"
	assert_success
	assert_line --regexp '^  %"stem/Conv_output_0" = Conv\(%input, @stem\.conv\.weight, @stem\.conv\.bias\)'
}

@test "stdin in, -o out" {
	ir-print -o "$T/out.txt" <"$FX/tiny.top"
	run ir-print "$FX/tiny.top"
	[ "$output" = "$(cat "$T/out.txt")" ]
}

@test "--dot: one box per op, an edge per activation use, valid for dot" {
	run ir-print --dot "$FX/misc.top"
	assert_success
	assert_line --index 0 --regexp '^digraph ".*" \{$'
	assert_line --index $((${#lines[@]} - 1)) '}'
	local ops
	ops=$(ir_op_count "$FX/misc.top")
	[ "$(grep -Ec '^  op[0-9]+ \[label=' <<<"$output")" -eq "$ops" ]
	assert_line --regexp '^  in0 \[shape=ellipse, label="%[^"]+ f32\[[0-9,]+\]"\];$'
	assert_line --regexp '^  op[0-9]+ -> out0;$'
	# every edge joins declared nodes
	local decl
	decl=$(grep -Eo '^  (op|in|out)[0-9]+ \[' <<<"$output" | tr -d ' [' | sort -u)
	grep -Eo '^  [a-z]+[0-9]+ -> [a-z]+[0-9]+' <<<"$output" | tr -s ' ' '\n' |
		grep -v -- '->' | grep . | sort -u | while read -r n; do
		grep -qx "$n" <<<"$decl" || fail "edge to undeclared node $n"
	done
	# braces balance and quotes pair up on every line
	[ "$(grep -o '{' <<<"$output" | wc -l)" -eq "$(grep -o '}' <<<"$output" | wc -l)" ]
	if command -v dot >/dev/null; then
		ir-print --dot "$FX/misc.top" | dot -Tsvg >/dev/null
	fi
}

@test "--dot draws layer groups as clusters" {
	make_addressed
	run ir-print --dot "$T/g.tpu"
	assert_success
	assert_line --regexp '^  subgraph cluster_g[0-9]+ \{$'
	[ "$(grep -Ec '^  op[0-9]+ \[label=' <<<"$output")" -eq "$(ir_op_count "$T/g.tpu")" ]
}

@test "missing file" {
	run ir-print "$T/nope.top"
	assert_failure 1
	assert_output "ir-print: cannot open '$T/nope.top': No such file or directory"
}

@test "truncated file: one line, no output left behind" {
	head -c 100 "$FX/tiny.top" >"$T/cut.top"
	run ir-print "$T/cut.top" -o "$T/out.txt"
	assert_failure 1
	assert_output --regexp "^ir-print: '$T/cut.top': "
	[ "${#lines[@]}" -eq 1 ]
	[ ! -e "$T/out.txt" ]
}

@test "usage errors exit 2" {
	run ir-print --bogus "$FX/tiny.top"
	assert_failure 2
	assert_line --index 0 "ir-print: unknown option '--bogus'"
	assert_line --index 1 'usage: ir-print [IN] [--dot] [-o OUT]'
	run ir-print "$FX/tiny.top" "$FX/tiny.top"
	assert_failure 2
	run ir-print "$FX/tiny.top" -o
	assert_failure 2
	assert_line --index 0 "ir-print: option '-o' needs a file name"
	run ir-print --help
	assert_success
	assert_line --index 0 'usage: ir-print [IN] [--dot] [-o OUT]'
}
