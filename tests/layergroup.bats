#!/usr/bin/env bats
# layergroup: every op its own group in global memory, recorded in the IR
# at stage grouped; errors (exit 1, one line, no output) and usage (exit 2).
load helpers
load backend

bats_require_minimum_version 1.5.0

setup_file() {
	need_tool onnx2top top-opt calibrate top2tpu weight-reorder layergroup
	export FX="$BATS_FILE_TMPDIR/fx"
	backend_fixtures "$FX"
	weight-reorder "$FX/int8.lowered.tpu" -o "$FX/int8.reordered.tpu"
	weight-reorder "$FX/b.int8.lowered.tpu" -o "$FX/b.int8.reordered.tpu"
}

setup() {
	need_tool onnx2top top-opt calibrate top2tpu weight-reorder layergroup
	T=$BATS_TEST_TMPDIR
}

# group_onnx MODE ONNX [TOP-OPT-OPTION...]: ONNX imported, top-opt'd and
# lowered for tpu-a in MODE to $T/l.tpu; reordered and grouped to $T/g.tpu
group_onnx() {
	local mode=$1 onnx=$2
	shift 2
	onnx2top "$onnx" | top-opt "$@" | top2tpu --chip tpu-a --mode "$mode" -o "$T/l.tpu"
	weight-reorder "$T/l.tpu" | layergroup -o "$T/g.tpu"
}

# run_grouped [TPU-SIM-OPTION...]: $T/g.tpu addressed and compiled to
# $T/m.tmodel, run by tpu-sim -q with the options on $T/in.npz (its output
# left in $output); it succeeds, and its outputs are ir-run's on $T/l.tpu
# bit for bit
run_grouped() {
	addr-assign -q "$T/g.tpu" | codegen -o "$T/m.tmodel"
	run tpu-sim -q "$@" "$T/m.tmodel" -i "$T/in.npz" -o "$T/sim.npz"
	assert_success
	ir-run "$T/l.tpu" -i "$T/in.npz" -o "$T/ir.npz"
	cmp "$T/sim.npz" "$T/ir.npz"
}

@test "-n 1: each op is its own group, placed in global memory" {
	run layergroup -n 1 "$FX/int8.reordered.tpu" -o "$T/g.tpu"
	assert_success
	assert_output ''
	run irq "$T/g.tpu" 'g["stage"], [o["group"] for o in O] == list(range(len(O))), set(o["place"] for o in O)'
	assert_output "('grouped', True, {'global'})"
	# Nothing else changes: the same ops, tensors and weights.
	run irq "$T/g.tpu" 'len(O), len(T)'
	local after=$output
	run irq "$FX/int8.reordered.tpu" 'len(O), len(T)'
	assert_equal "$after" "$output"
}

# "GROUP PLACE N FIRST..LAST" per group, in order.
groups() {
	irq "$1" '"\n".join("%d %s %d %s..%s" % (k, O[i]["place"], sum(1 for o in O if o["group"] == k), O[i]["name"], [o for o in O if o["group"] == k][-1]["name"]) for k, i in sorted({o["group"]: j for j, o in reversed(list(enumerate(O)))}.items()))'
}

@test "runs of ops become local groups; what leaves them gets DDR, the rest stays local" {
	run layergroup "$FX/int8.reordered.tpu" -o "$T/g.tpu"
	assert_success
	run groups "$T/g.tpu"
	assert_success
	# Groups are runs of consecutive ops numbered in order; a local group
	# has at least two ops, a global one exactly one.
	assert_line --regexp '^0 local ([2-9]|[1-9][0-9]+) input_quant\.\.'
	refute_line --regexp '^[0-9]+ global [02-9]'
	refute_line --regexp '^[0-9]+ local 1 '
	# A tensor written inside a local group by another op than its last
	# gets a DDR address from addr-assign exactly when an op after the
	# group reads it or it is a graph output (the group stores it too);
	# otherwise it stays in local memory (addr -1).
	need_tool addr-assign
	addr-assign -q "$T/g.tpu" -o "$T/a.tpu"
	run irq "$T/a.tpu" 'all((T[o["out"][0]].get("addr", -1) >= 0) == (any(c["group"] != o["group"] for c in O if o["out"][0] in c["in"]) or o["out"][0] in g["outputs"]) for k, o in enumerate(O) if o["place"] == "local" and k + 1 < len(O) and O[k + 1]["group"] == o["group"])'
	assert_output True
}

@test "-n limits the ops per group; bad values are usage errors" {
	layergroup -n 2 "$FX/int8.reordered.tpu" -o "$T/g.tpu"
	run irq "$T/g.tpu" 'max(sum(1 for o in O if o["group"] == k) for k in set(o["group"] for o in O))'
	assert_output 2
	run -2 layergroup -n 0 "$FX/int8.reordered.tpu"
	assert_line --index 0 "layergroup: -n needs a number of ops from 1 to 1000, not '0'"
	run -2 layergroup -n x "$FX/int8.reordered.tpu"
	assert_line --index 0 "layergroup: -n needs a number of ops from 1 to 1000, not 'x'"
}

@test "resnet18: residual blocks group together, the cut no slower than one op per group" {
	need_models resnet18
	need_tool addr-assign codegen tpu-sim
	onnx2top "$MODELS/resnet18/model.onnx" | top-opt | top2tpu --chip tpu-a --mode f32 |
		weight-reorder -o "$T/r.tpu"
	layergroup "$T/r.tpu" -o "$T/g.tpu"
	run groups "$T/g.tpu"
	assert_success
	# A local group runs from a block's first conv through at least one
	# more whole block to an Add (residual adds join groups).
	assert_line --regexp '^[0-9]+ local ([7-9]|[1-9][0-9]+) /layer[0-9]/layer[0-9]\.[0-9]/conv1/Conv\.\./layer[0-9].*/Add$'
	# The classifier (pooling, flatten, Gemm: no slicing) joins the last
	# block as a group over whole tensors.
	assert_line --regexp ' local [0-9]+ /layer4/.*\.\./fc/Gemm$'
	# The search is timed by codegen: its cut runs no slower than every op
	# alone or runs of at most two.
	cyc() {
		layergroup "$@" "$T/r.tpu" | addr-assign -q | codegen | tpu-sim - -t 2>&1 |
			sed -n 's/^tpu-sim: tpu-a f32: \([0-9]*\) cycles.*/\1/p'
	}
	local best one two
	best=$(addr-assign -q "$T/g.tpu" | codegen | tpu-sim - -t 2>&1 |
		sed -n 's/^tpu-sim: tpu-a f32: \([0-9]*\) cycles.*/\1/p')
	one=$(cyc -n 1)
	two=$(cyc -n 2)
	[ -n "$best" ] && [ -n "$one" ] && [ -n "$two" ]
	[ "$best" -le "$two" ]
	[ "$two" -le "$one" ]
	[ "$best" -lt "$one" ]
}

@test "a Split joins a group with its producer and readers; tpu-sim as ir-run" {
	need_tool addr-assign codegen tpu-sim ir-run
	# attention-like: x [1,16,32] -> MatMul -> Split in q, k, v ->
	# q k^T -> Softmax -> . v -> + x
	/usr/bin/python3 - "$T" <<'PYEOF'
import sys, numpy as np, onnx
from onnx import helper as h, TensorProto as P, numpy_helper as nh
d = sys.argv[1]
r = np.random.default_rng(3)
w = nh.from_array((r.standard_normal((32, 96)) * 0.2).astype(np.float32), "w")
n = [h.make_node("MatMul", ["x", "w"], ["qkv"]),
     h.make_node("Split", ["qkv", "sp"], ["q", "k", "v"], axis=2),
     h.make_node("Transpose", ["k"], ["kt"], perm=[0, 2, 1]),
     h.make_node("MatMul", ["q", "kt"], ["s"]),
     h.make_node("Softmax", ["s"], ["p"], axis=-1),
     h.make_node("MatMul", ["p", "v"], ["a"]),
     h.make_node("Add", ["a", "x"], ["y"])]
sp = nh.from_array(np.array([32, 32, 32], np.int64), "sp")
g = h.make_graph(n, "att", [h.make_tensor_value_info("x", P.FLOAT, [1, 16, 32])],
                 [h.make_tensor_value_info("y", P.FLOAT, [1, 16, 32])], [w, sp])
onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 13)]), d + "/att.onnx")
np.savez(d + "/in.npz", x=r.standard_normal((1, 16, 32)).astype(np.float32))
PYEOF
	group_onnx f32 "$T/att.onnx"
	# the Split is in a local group with the MatMul before it and the op
	# after it
	run irq "$T/g.tpu" '[(O[i - 1]["group"] == o["group"] == O[i + 1]["group"], o["place"]) for i, o in enumerate(O) if o["type"] == "Split"]'
	assert_output "[(True, 'local')]"
	run_grouped
}

@test "int8: the inputs of a Concat in a local group that start on whole channel slots are written in place; its command writes the other slots only, or is none; tpu-sim as ir-run" {
	need_tool calibrate addr-assign codegen tpu-sim ir-run
	# DenseNet-like joins: catA = [a 64, b 32] (each on whole channel
	# slots of tpu-a's 64 lanes: no command), catB = [catA 96, e 32]
	# (catA in place, e from channel 96: the command writes the slot of
	# channels 64 .. 127 only).  catA's rows are all catB's: no halo
	/usr/bin/python3 - "$T" <<'PYEOF'
import sys, numpy as np, onnx
from onnx import helper as h, TensorProto as P, numpy_helper as nh
d = sys.argv[1]
r = np.random.default_rng(7)
inits = []
def w(name, *s):
    inits.append(nh.from_array((r.standard_normal(s) / np.sqrt(np.prod(s[1:]))).astype(np.float32), name))
    return name
n = [h.make_node("Conv", ["x", w("wa", 64, 16, 1, 1)], ["a0"]), h.make_node("Relu", ["a0"], ["a"]),
     h.make_node("Conv", ["x", w("wb", 32, 16, 3, 3)], ["b0"], pads=[1, 1, 1, 1]), h.make_node("Relu", ["b0"], ["b"]),
     h.make_node("Concat", ["a", "b"], ["ab"], name="catA", axis=1),
     h.make_node("Conv", ["ab", w("we", 32, 96, 1, 1)], ["e0"]), h.make_node("Relu", ["e0"], ["e"]),
     h.make_node("Concat", ["ab", "e"], ["abe"], name="catB", axis=1),
     h.make_node("Conv", ["abe", w("wy", 16, 128, 1, 1)], ["y"])]
g = h.make_graph(n, "cat", [h.make_tensor_value_info("x", P.FLOAT, [1, 16, 32, 32])],
                 [h.make_tensor_value_info("y", P.FLOAT, [1, 16, 32, 32])], inits)
onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 13)]), d + "/cat.onnx")
np.savez(d + "/cal.npz", x=r.standard_normal((4, 1, 16, 32, 32)).astype(np.float32))
np.savez(d + "/in.npz", x=r.standard_normal((1, 16, 32, 32)).astype(np.float32))
PYEOF
	onnx2top "$T/cat.onnx" | top-opt -o "$T/c.top"
	calibrate "$T/c.top" -d "$T/cal.npz" -o "$T/c.table" 2>/dev/null
	top2tpu "$T/c.top" --chip tpu-a --mode int8 --calib "$T/c.table" -o "$T/l.tpu"
	weight-reorder "$T/l.tpu" | layergroup -o "$T/g.tpu"
	# both Concats copy codes, in one local group with their inputs
	run irq "$T/g.tpu" '[(o["name"], o["place"], O[i - 1]["group"] == o["group"] == O[i + 1]["group"], set(o["attrs"]["shifts"])) for i, o in enumerate(O) if o["type"] == "Concat"]'
	assert_output "[('catA', 'local', True, {30}), ('catB', 'local', True, {30})]"
	run_grouped
	run tmodel_dump "$T/m.tmodel"
	refute_line --partial '# catA'
	assert_line --regexp ' ch=64\+64 chsplit=4 .*# catB$'
	refute_line --regexp ' ch=0\+0 .*# catB$'
	# every tensor too, the Concats' results among them
	tpu-sim "$T/m.tmodel" -i "$T/in.npz" -o "$T/sima.npz" -q --dump-all
	ir-run "$T/l.tpu" -i "$T/in.npz" -o "$T/ira.npz" --dump-all
	run npz-compare "$T/ira.npz" "$T/sima.npz" --tolerance 1,1
	assert_success
	assert_output --partial 'abe'
}

@test "a Transpose reading rows of axis 3 runs in a sliced local group; tpu-sim as ir-run" {
	need_tool addr-assign codegen tpu-sim ir-run
	# a detector head's [1,3,85,H,W] -> [1,3,H,W,85], too big for one
	# step in local memory (3 lanes of 544 KiB of f32)
	/usr/bin/python3 - "$T" <<'PYEOF'
import sys, numpy as np, onnx
from onnx import helper as h, TensorProto as P, numpy_helper as nh
d = sys.argv[1]
n = [h.make_node("Relu", ["x"], ["a"]),
     h.make_node("Transpose", ["a"], ["t"], perm=[0, 1, 3, 4, 2]),
     h.make_node("Mul", ["t", "half"], ["y"])]
g = h.make_graph(n, "tr", [h.make_tensor_value_info("x", P.FLOAT, [1, 3, 85, 40, 40])],
                 [h.make_tensor_value_info("y", P.FLOAT, None)],
                 [nh.from_array(np.array(0.5, np.float32), "half")])
onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]), d + "/tr.onnx")
np.savez(d + "/in.npz", x=np.random.default_rng(3).standard_normal((1, 3, 85, 40, 40)).astype(np.float32))
PYEOF
	# without merge-layout, which would run the Transpose on the blocks
	# [3, 85, 40, 40] and the Mul on [1, 120, 40, 85] (lanefold.bats)
	group_onnx f32 "$T/tr.onnx" --passes=remove-identity,fold-const
	# the Transpose and the Mul after it: one local group
	run irq "$T/g.tpu" '[(o["type"], o["group"], o["place"]) for o in O]'
	assert_output "[('Relu', 0, 'global'), ('Transpose', 1, 'local'), ('Mul', 1, 'local')]"
	run_grouped -p
	# in slices, the Mul's result never leaving local memory in between
	run awk '$2 == "Transpose" { print ($3 > 1) }' <<<"$output"
	assert_output 1
}

@test "a constant Pad runs in slices with the Conv it feeds; a reflect Pad runs whole; tpu-sim as ir-run" {
	need_tool addr-assign codegen tpu-sim ir-run
	# PaddleOCR's affine folded into a Conv leaves a Pad by a non-zero
	# value before it; 4 lanes of 160 KiB of f32 do not fit at once
	/usr/bin/python3 - "$T" <<'PYEOF'
import sys, numpy as np, onnx
from onnx import helper as h, TensorProto as P, numpy_helper as nh
d = sys.argv[1]
for mode in ("constant", "reflect"):
    n = [h.make_node("Relu", ["x"], ["a"]),
         h.make_node("Pad", ["a", "pp", "v"] if mode == "constant" else ["a", "pp"], ["p"], mode=mode),
         h.make_node("Conv", ["p", "w"], ["y"], group=4, kernel_shape=[3, 3])]
    g = h.make_graph(n, "pad", [h.make_tensor_value_info("x", P.FLOAT, [1, 4, 200, 200])],
                     [h.make_tensor_value_info("y", P.FLOAT, None)],
                     [nh.from_array(np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64), "pp"),
                      nh.from_array(np.array(0.75, np.float32), "v"),
                      nh.from_array(np.random.default_rng(5).standard_normal((4, 1, 3, 3)).astype(np.float32), "w")])
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]), "%s/%s.onnx" % (d, mode))
np.savez(d + "/in.npz", x=np.random.default_rng(3).standard_normal((1, 4, 200, 200)).astype(np.float32))
PYEOF
	local m s
	for m in constant reflect; do
		group_onnx f32 "$T/$m.onnx"
		run_grouped -p
		s=$(awk '$2 == "Pad" && $3 > 1 { s = 1 } END { print s + 0 }' <<<"$output")
		[ "$s" = "$([ $m = constant ] && echo 1 || echo 0)" ] || { echo "$m: $output"; false; }
	done
}

@test "a side branch read only after a sliced group is computed in step with its slices, at the fastest slice count; tpu-sim as ir-run" {
	need_tool addr-assign codegen tpu-sim ir-run
	# a residual block's projection P beside the 3x3 Conv B, both over
	# the Relu's 8 lanes of 625 KiB of f32, then a squeeze-and-excitation
	# pool (whole) and the Add: P's result is read only after the group
	/usr/bin/python3 - "$T" <<'PYEOF'
import sys, numpy as np, onnx
from onnx import helper as h, TensorProto as P, numpy_helper as nh
d = sys.argv[1]
r = np.random.default_rng(5)
n = [h.make_node("Relu", ["x"], ["a"]),
     h.make_node("Conv", ["a", "wp"], ["p"], kernel_shape=[1, 1], strides=[2, 2]),
     h.make_node("Conv", ["a", "wb"], ["b"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
     h.make_node("GlobalAveragePool", ["b"], ["m"]),
     h.make_node("Mul", ["b", "m"], ["s"]),
     h.make_node("Add", ["p", "s"], ["y"])]
g = h.make_graph(n, "side", [h.make_tensor_value_info("x", P.FLOAT, [1, 8, 400, 400])],
                 [h.make_tensor_value_info("y", P.FLOAT, None)],
                 [nh.from_array(r.standard_normal((8, 8, 1, 1)).astype(np.float32), "wp"),
                  nh.from_array(r.standard_normal((8, 8, 3, 3)).astype(np.float32), "wb")])
onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]), d + "/side.onnx")
np.savez(d + "/in.npz", x=r.standard_normal((1, 8, 400, 400)).astype(np.float32))
PYEOF
	group_onnx f32 "$T/side.onnx"
	# the Relu, P and B: one local group (P's rows all in the last slice
	# needed the Relu's whole result there, which does not fit)
	run irq "$T/g.tpu" '[(o["type"], o["group"], o["place"]) for o in O][:3]'
	assert_output "[('Relu', 0, 'local'), ('Conv', 0, 'local'), ('Conv', 0, 'local')]"
	run_grouped -p
	# P in as many slices as B; 34 slices, the fastest count, not the 100
	# (two rows each) of least local memory within 3% of it, which finish
	# the whole program later
	run awk '$NF == "Conv_p" || $NF == "Conv_b" { print $3 }' <<<"$output"
	assert_output "$(printf '34\n34')"
}

@test "a chain longer than the search's window: runs merge three or more at a time, past the pairwise refinement; tpu-sim as ir-run" {
	need_tool addr-assign codegen tpu-sim ir-run
	# 1300 Relu ops on [1, 3136] in bf16 and two Casts: the search times
	# runs of at most sqrt(1500000 / 1302) = 33 ops, the refinement's three
	# sweeps merge pairs up to runs of 264 ops, five in all; one run of
	# three of them loads and stores fewer rows, and finishes sooner
	/usr/bin/python3 "$BATS_TEST_DIRNAME/fixtures/make_chain.py" 1300 "$T" >/dev/null
	/usr/bin/python3 - "$T" <<'PYEOF'
import sys, numpy as np, onnx
d = sys.argv[1]
m = onnx.load(d + "/chain.onnx")
for v in list(m.graph.input) + list(m.graph.output):
    v.type.tensor_type.shape.dim[1].dim_value = 3136
onnx.save(m, d + "/chain.onnx")
np.savez(d + "/in.npz", x=np.random.default_rng(4).standard_normal((1, 3136)).astype(np.float32))
PYEOF
	group_onnx bf16 "$T/chain.onnx"
	# two local groups, the first over three or more of the refinement's
	# runs of 264 ops
	run irq "$T/g.tpu" 'sorted({o["place"] for o in O}), len({o["group"] for o in O}), sum(1 for o in O if o["group"] == 0) >= 792'
	assert_output "(['local'], 2, True)"
	run_grouped
}

@test "tpu-b graphs, stdin to stdout, deterministic" {
	layergroup <"$FX/b.int8.reordered.tpu" >"$T/a.tpu"
	layergroup "$FX/b.int8.reordered.tpu" -o "$T/b.tpu"
	cmp "$T/a.tpu" "$T/b.tpu"
	run irq "$T/a.tpu" 'g["chip"], g["stage"]'
	assert_output "('tpu-b', 'grouped')"
}

@test "wrong stage: names the stage found and the one expected" {
	run -1 layergroup "$FX/int8.lowered.tpu" -o "$T/out.tpu"
	assert_output "layergroup: '$FX/int8.lowered.tpu': wrong stage: got tpu IR at stage 'lowered', expected tpu IR at stage reordered"
	[ ! -e "$T/out.tpu" ]
	run -1 layergroup - <"$FX/c.top"
	assert_output "layergroup: '<stdin>': wrong stage: got top IR at stage 'canonical', expected tpu IR at stage reordered"
}

@test "missing and truncated files" {
	run -1 layergroup "$T/nope.tpu" -o "$T/out.tpu"
	assert_output "layergroup: cannot open '$T/nope.tpu': No such file or directory"
	truncate_file "$FX/int8.reordered.tpu" "$T/t.tpu" 63
	run -1 layergroup "$T/t.tpu" -o "$T/out.tpu"
	assert_output "layergroup: '$T/t.tpu': not a tpuc IR file (bad magic)"
	truncate_file "$FX/int8.reordered.tpu" "$T/t.tpu" 5000
	run -1 layergroup "$T/t.tpu" -o "$T/out.tpu"
	assert_output "layergroup: '$T/t.tpu': truncated IR file (5000 bytes)"
	[ ! -e "$T/out.tpu" ]
}

@test "usage errors exit 2" {
	run -2 layergroup --bogus
	assert_line --index 0 "layergroup: unknown option '--bogus'"
	run -2 layergroup a b
	assert_output --partial 'usage: layergroup'
	run -2 layergroup -o
	assert_line --index 0 "layergroup: option '-o' needs a file name"
}
