#!/usr/bin/env bats
# cli: what every tool shares on its command line: -h/--help and --version,
# the same wording for the same usage error, binary output never to a
# terminal, hints for the wrong kind of file; and numpy's .npz as numpy
# writes it (float64, other ints, unused arrays) through ir-run, tpu-sim,
# calibrate and npz-compare with the results of the float32 version.
load helpers

bats_require_minimum_version 1.5.0

TOOLS="onnx2top top-opt calibrate top2tpu weight-reorder layergroup addr-assign codegen
tpu-sim npz-compare ir-run ir-print tmodel-info ir-cut"
EX=$REPO/examples/tiny_cnn

setup_file() {
	export W="$BATS_FILE_TMPDIR/w"
	make --no-print-directory -f "$REPO/pipelines/deploy.mk" TPUC_BIN="$TPUC_BUILD/bin" \
		MODEL="$EX/model.onnx" INPUT="$EX/input.npz" CALIB="$EX/calib.npz" \
		MODE=int8 OUT="$W" all >/dev/null
}

setup() {
	T=$BATS_TEST_TMPDIR
}

@test "every tool answers -h, --help (usage on stdout, exit 0) and --version (one line)" {
	local t
	for t in $TOOLS; do
		need_tool "$t"
		for h in -h --help; do
			run --separate-stderr "$t" "$h"
			assert_success
			assert_line --index 0 --regexp "^usage: $t( |\$)"
			[ -z "$stderr" ] || fail "$t $h wrote to stderr: $stderr"
		done
		run --separate-stderr "$t" --version
		assert_success
		assert_output --regexp "^$t \\(tpuc\\) [0-9]+\\.[0-9]+\\.[0-9]+\$"
		[ "${#lines[@]}" -eq 1 ]
		# after other options too
		run --separate-stderr "$t" -o "$T/never" --version
		assert_success
		[ ! -e "$T/never" ]
	done
}

@test "the same usage error has the same wording in every tool" {
	run -2 tpu-sim a b -i x.npz
	assert_line --index 0 "tpu-sim: too many operands (2 given, 1 wanted)"
	run -2 ir-run a b -i x.npz
	assert_line --index 0 "ir-run: too many operands (2 given, 1 wanted)"
	run -2 npz-compare a
	assert_line --index 0 "npz-compare: missing operand (1 given, 2 wanted)"
	run -2 onnx2top
	assert_line --index 0 "onnx2top: missing operand (0 given, 1 wanted)"
	# (codegen takes several: a bundle of static shapes, tests/shapes.bats)
	for t in top-opt weight-reorder layergroup addr-assign ir-print; do
		run -2 "$t" a b
		assert_line --index 0 "$t: too many operands (2 given, at most 1 wanted)"
		assert_line --index 1 --regexp "^usage: $t "
	done
	run -2 tpu-sim "$W/model.tmodel"
	assert_line --index 0 "tpu-sim: no input .npz given (-i)"
	run -2 ir-run "$W/lowered.tpu"
	assert_line --index 0 "ir-run: no input .npz given (-i)"
	# a file option without its file
	for t in ir-print weight-reorder tmodel-info ir-cut top2tpu onnx2top calibrate; do
		run -2 "$t" x -o
		assert_line --index 0 "$t: option '-o' needs a file name"
	done
	for t in ir-run tpu-sim; do
		run -2 "$t" x -i
		assert_line --index 0 "$t: option '-i' needs a file name"
	done
	run -2 top2tpu x --calib
	assert_line --index 0 "top2tpu: option '--calib' needs a file name"
	run -2 ir-run x -i y --threads
	assert_line --index 0 "ir-run: option '--threads' needs a value"
}

@test "tpu-sim without -o writes its outputs to stdout, as ir-run does" {
	tpu-sim -q "$W/model.tmodel" -i "$EX/input.npz" >"$T/stdout.npz"
	tpu-sim -q "$W/model.tmodel" -i "$EX/input.npz" -o "$T/file.npz"
	cmp "$T/stdout.npz" "$T/file.npz"
	ir-run "$W/addressed.tpu" -i "$EX/input.npz" >"$T/ir.npz"
	cmp "$T/ir.npz" "$T/file.npz"
	# statistics stay on stderr
	tpu-sim "$W/model.tmodel" -i "$EX/input.npz" 2>"$T/err" >/dev/null
	grep -q '^tpu-sim: tpu-a int8: [0-9]* cycles' "$T/err"
}

@test "binary output is never written to a terminal" {
	command -v script >/dev/null || skip "no script(1)"
	for c in "tpu-sim $W/model.tmodel -i $EX/input.npz" "ir-run $W/lowered.tpu -i $EX/input.npz" \
		"weight-reorder $W/lowered.tpu" "ir-cut $W/lowered.tpu --at logits"; do
		run script -qec "$TPUC_BUILD/bin/$c" /dev/null
		assert_failure 2
		assert_output --partial "to a terminal (use -o FILE)"
	done
}

@test "an .onnx where IR is wanted suggests onnx2top; IR where a .tmodel is wanted suggests codegen" {
	for t in top-opt weight-reorder ir-print; do
		run -1 "$t" "$EX/model.onnx" -o "$T/o"
		assert_output "$t: '$EX/model.onnx': not a tpuc IR file (bad magic) (an ONNX model: import it with onnx2top first)"
	done
	run -1 ir-run "$EX/model.onnx" -i "$EX/input.npz" -o "$T/o.npz"
	assert_output --partial "(an ONNX model: import it with onnx2top first)"
	run -1 tpu-sim "$W/addressed.tpu" -i "$EX/input.npz" -o "$T/o.npz"
	assert_output --partial "(tpuc IR: run it with ir-run, or build a .tmodel with"
	run -1 ir-print "$W/model.tmodel"
	assert_output --partial "(a .tmodel: inspect it with tmodel-info, run it with tpu-sim)"
	[ ! -e "$T/o" ] && [ ! -e "$T/o.npz" ]
}

@test "a missing graph input names the arrays the npz holds (and why one was skipped)" {
	$PY -c 'import numpy as np; np.savez("'"$T"'/w.npz", x=np.zeros(3), y=np.ones(2, np.int8))'
	$PY -c 'import numpy as np; np.savez("'"$T"'/c.npz", input=np.zeros((1, 3, 32, 32), np.complex64))'
	for c in "ir-run $W/canonical.top" "tpu-sim $W/model.tmodel"; do
		run -1 $c -i "$T/w.npz" -o "$T/o.npz"
		assert_output --regexp ": '$T/w.npz': no array for graph input 'input' \\(the file holds 'x', 'y'\\)\$"
		run -1 $c -i "$T/c.npz" -o "$T/o.npz"
		assert_output --regexp ": '$T/c.npz': array 'input' for graph input 'input' cannot be used: unsupported dtype '<c8'\$"
	done
	run -1 calibrate "$W/canonical.top" -d "$T/w.npz" -o "$T/t.table"
	assert_output --partial "no array for graph input 'input' (the file holds 'x', 'y')"
	[ ! -e "$T/o.npz" ] && [ ! -e "$T/t.table" ]
}

@test "float64 inputs and calibration sets (numpy's default) give the float32 results; unused arrays are ignored" {
	$PY - "$EX" "$T" <<'PY'
import sys, numpy as np
ex, t = sys.argv[1:]
x = np.load(ex + '/input.npz')['input'].astype(np.float64) * 1.0000001
c = np.load(ex + '/calib.npz')['input'].astype(np.float64)
np.savez(t + '/in64.npz', input=x, notes=np.array(['unused']), extra=np.zeros(4, np.complex128))
np.savez(t + '/in32.npz', input=x.astype(np.float32))
np.savez(t + '/cal64.npz', input=c, unused=np.arange(3, dtype=np.uint64))
np.savez(t + '/cal32.npz', input=c.astype(np.float32))
PY
	for b in 32 64; do
		ir-run "$W/canonical.top" -i "$T/in$b.npz" -o "$T/top$b.npz"
		ir-run "$W/addressed.tpu" -i "$T/in$b.npz" -o "$T/tpu$b.npz"
		tpu-sim -q "$W/model.tmodel" -i "$T/in$b.npz" -o "$T/sim$b.npz"
		calibrate "$W/canonical.top" -d "$T/cal$b.npz" -o "$T/cal$b.table"
	done
	cmp "$T/top32.npz" "$T/top64.npz"
	cmp "$T/tpu32.npz" "$T/tpu64.npz"
	cmp "$T/sim32.npz" "$T/sim64.npz"
	cmp "$T/cal32.table" "$T/cal64.table"
	run npz-compare "$T/in64.npz" "$T/in32.npz" --tolerance 1
	assert_success
	assert_line --regexp "^input +\\[1,3,32,32\\] +1\\.000000 +1\\.000000 +inf +PASS\$"
}

@test "integer and bool inputs convert by value where the graph wants f32" {
	$PY - "$EX" "$T" <<'PY'
import sys, numpy as np
ex, t = sys.argv[1:]
x = np.round(np.load(ex + '/input.npz')['input'] * 10)
np.savez(t + '/i16.npz', input=x.astype(np.int16))
np.savez(t + '/f32.npz', input=x.astype(np.float32))
np.savez(t + '/u8.npz', input=np.abs(x).astype(np.uint8))
np.savez(t + '/u16.npz', input=np.abs(x).astype(np.uint16))
np.savez(t + '/bool.npz', input=(x > 0))
np.savez(t + '/boolf.npz', input=(x > 0).astype(np.float32))
PY
	tpu-sim -q "$W/model.tmodel" -i "$T/i16.npz" -o "$T/a.npz"
	tpu-sim -q "$W/model.tmodel" -i "$T/f32.npz" -o "$T/b.npz"
	cmp "$T/a.npz" "$T/b.npz"
	ir-run "$W/canonical.top" -i "$T/u8.npz" -o "$T/a.npz"
	ir-run "$W/canonical.top" -i "$T/u16.npz" -o "$T/b.npz"
	cmp "$T/a.npz" "$T/b.npz"
	ir-run "$W/canonical.top" -i "$T/bool.npz" -o "$T/a.npz"
	ir-run "$W/canonical.top" -i "$T/boolf.npz" -o "$T/b.npz"
	cmp "$T/a.npz" "$T/b.npz"
}
