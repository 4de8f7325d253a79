#!/usr/bin/env bats
# If, Loop and Scan (issue 14): models of tests/fixtures/control_fixtures.py
# through onnx2top | top-opt | ir-run against numpy; an If on a constant
# condition folded to its branch; bodies in the IR file, ir-print and
# ir-cut; the refusals of what cannot be static.
load helpers

bats_require_minimum_version 1.5.0

setup_file() {
	export FX="$BATS_FILE_TMPDIR/fx"
	mkdir -p "$FX"
	/usr/bin/python3 "$BATS_TEST_DIRNAME/fixtures/control_fixtures.py" "$FX"
}

setup() {
	T=$BATS_TEST_TMPDIR
}

@test "control flow: If (both ways), Loop (trip count, nested If, captures), while-Loop, Scan (axes, reverse) match numpy" {
	for c in 0 1; do
		onnx2top "$FX/if.onnx" | top-opt | ir-run - -i "$FX/if_${c}_in.npz" -o "$T/if_$c.npz"
		assert_close "$T/if_$c.npz" "$FX/if_${c}_expect.npz"
	done
	for m in loop loop4 loop_while scan; do
		onnx2top "$FX/$m.onnx" -o "$T/$m.top"
		top-opt "$T/$m.top" -o "$T/$m.opt"
		ir-run "$T/$m.opt" -i "$FX/${m}_in.npz" -o "$T/$m.npz"
		assert_close "$T/$m.npz" "$FX/${m}_expect.npz"
	done
	# TPUC_PLAN=0: the op-by-op interpreter agrees
	TPUC_PLAN=0 ir-run "$T/loop.opt" -i "$FX/loop_in.npz" -o "$T/loop0.npz"
	assert_close "$T/loop0.npz" "$FX/loop_expect.npz"
}

@test "control flow: the bodies are in the IR: ir-print lists them, a write and read gives the same file" {
	onnx2top "$FX/loop.onnx" -o "$T/loop.top"
	run ir-print "$T/loop.top"
	assert_success
	assert_line --partial 'Loop(@M, none, %s0, %x, %w) {body=func(7 ops), captures=2}'
	assert_line --regexp '^func @Loop_s\.body\(%i: i64\[\], %cond_in: bool\[\], %s_in: f32\[3\], %x: f32\[3\], %w: f32\[3\]\)'
	assert_line --regexp '^func @Loop_s\.body\.If_s_out\.then_branch\(%s2: f32\[3\], %w: f32\[3\]\)'
	# the body's weight (@one) lives in the data section: a round trip
	# through top-opt's reader and writer keeps every byte of the body
	top-opt "$T/loop.top" -o "$T/a.top"
	top-opt "$T/a.top" -o "$T/b.top"
	cmp "$T/a.top" "$T/b.top"
	run ir-print "$T/b.top"
	assert_line --partial '%big = Greater(%i, @one)'
}

@test "control flow: a Loop of a constant trip count up to 64 is unrolled, its nested If folded" {
	onnx2top "$FX/loop4.onnx" -o "$T/l4.top"
	run ir-print "$T/l4.top"
	refute_output --partial 'Loop('
	refute_output --partial 'If('
	assert_line --regexp '^  %ss = Concat\(.*\) \{axis=0\} : .* -> f32\[4,3\]'
	run ir-print <(onnx2top "$FX/loop.onnx")
	assert_line --partial 'Loop(@M, none, %s0, %x, %w)'
}

@test "control flow: an If on a constant condition (--bind) is its branch; on a run-time one it stays" {
	for c in 0 1; do
		onnx2top "$FX/if.onnx" --bind "$FX/if_${c}_bind.npz" -o "$T/if$c.top"
		run ir-print "$T/if$c.top"
		refute_output --partial 'If('
		ir-run "$T/if$c.top" -i "$FX/if_${c}_in.npz" -o "$T/if$c.npz"
		assert_close "$T/if$c.npz" "$FX/if_${c}_expect.npz"
	done
	run ir-print "$T/if0.top"
	assert_line --partial '= Add(%x, %y)'
	run ir-print "$T/if1.top"
	assert_line --partial '= Mul(%x, @two)'
	run onnx2top "$FX/if.onnx"
	assert_success
	run ir-print <(onnx2top "$FX/if.onnx")
	assert_line --partial '%r = If(%c, %x, %y) {then_branch=func(1 ops), else_branch=func(1 ops)}'
}

@test "control flow: an If whose branches give different shapes has a dynamic output; with the condition bound, the branch taken decides the shape" {
	onnx2top "$FX/if_shape.onnx" -o "$T/r.top"
	run ir-print "$T/r.top"
	assert_line --partial '-> (%r: f32[2?,3?])'
	ir-run "$T/r.top" -i "$FX/if_shape_in.npz" -o "$T/r1.npz"
	assert_close "$T/r1.npz" "$FX/if_shape_expect.npz"
	ir-run "$T/r.top" -i "$FX/if_shape_0_in.npz" -o "$T/r0.npz"
	assert_close "$T/r0.npz" "$FX/if_shape_0_expect.npz"
	/usr/bin/python3 -c 'import numpy as np, sys; np.savez(sys.argv[1], c=np.bool_(False))' "$T/c.npz"
	onnx2top "$FX/if_shape.onnx" --bind "$T/c.npz" -o "$T/s.top"
	run ir-print "$T/s.top"
	assert_line --partial '-> (%r: f32[1,1])'
	# a branch of another rank is refused in one line
	$PY - "$FX/if_shape.onnx" "$T/rank.onnx" <<'PY'
import sys, onnx
from onnx import helper as h
m = onnx.load(sys.argv[1])
e = next(a.g for a in m.graph.node[0].attribute if a.name == "else_branch")
e.node[0].ClearField("attribute")
e.node[0].attribute.append(h.make_attribute("keepdims", 0))
onnx.save(m, sys.argv[2])
PY
	run -1 onnx2top "$T/rank.onnx" -o "$T/x.top"
	assert_output --regexp "^onnx2top: '.*rank.onnx': op 'If_r' \(If\): the branches give output 0 different dtypes or ranks: .*--bind\)$"
	[ ! -e "$T/x.top" ]
}

# deploy MODEL INPUT MODE: the whole flow through deploy.mk into $T/MODEL-MODE
# (calibrated on the input and a scaled copy), tpu-sim bit for bit as ir-run
deploy() {
	/usr/bin/python3 -c 'import numpy as np, sys
a = np.load(sys.argv[1])
np.savez(sys.argv[2], **{k: np.stack([v, v * 0.5]) if v.dtype.kind == "f" else np.stack([v, v]) for k, v in a.items()})' \
		"$FX/$2.npz" "$T/$2_cal.npz"
	deploy_mk MODEL="$FX/$1.onnx" INPUT="$FX/$2.npz" CALIB="$T/$2_cal.npz" MODE=$3 OUT="$T/$2-$3"
	assert_success
	cmp "$T/$2-$3/tpu_out.npz" "$T/$2-$3/sim_out.npz"
}

@test "control flow on the chip's side: If, Loop (nested If, body weights), while-Loop, Scan run on the host, the ops around them on the chip, tpu-sim as ir-run in f32 and int8" {
	deploy if if_0_in int8
	deploy if if_1_in f32
	assert_close "$T/if_1_in-f32/sim_out.npz" "$FX/if_1_expect.npz"
	# the If on the host, the Relu after it on the chip; the branches'
	# constants are captures, weights of the outer graph
	run ir-print "$T/if_0_in-int8/addressed.tpu"
	assert_output --regexp '= If\(%c, .*@"?If_[a-z]*/[^ ]*.*// group [0-9]+, host'
	assert_output --regexp '= Relu\(.*// group [0-9]+, (global|local)'
	deploy if_shape if_shape_0_in f32
	assert_close "$T/if_shape_0_in-f32/sim_out.npz" "$FX/if_shape_0_expect.npz"
	for m in loop loop_while scan; do
		deploy "$m" "${m}_in" f32
		assert_close "$T/${m}_in-f32/sim_out.npz" "$FX/${m}_expect.npz"
	done
	deploy loop loop_in int8
	# the Loop's body keeps its nested If; the body's constant is a capture
	run ir-print "$T/loop_in-f32/lowered.tpu"
	assert_output --regexp 'Loop\(.*captures=3\}.*// host'
	assert_line --regexp '^ *%s_out = If\(%big, %s2, %w\)'
}
