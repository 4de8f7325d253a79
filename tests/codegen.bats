#!/usr/bin/env bats
# codegen: a .tmodel that a second reader written from the man pages
# accepts (header, description, streams), the listing, slicing, refusals
# (exit 1, one line, no output) and usage (exit 2).
load helpers
load backend

bats_require_minimum_version 1.5.0

setup_file() {
	need_tool onnx2top top-opt calibrate top2tpu weight-reorder layergroup addr-assign codegen
	export FX="$BATS_FILE_TMPDIR/fx"
	backend_fixtures "$FX"
	backend_stages "$FX" int8
	backend_stages "$FX" f32
}

setup() {
	need_tool onnx2top top-opt calibrate top2tpu weight-reorder layergroup addr-assign codegen
	T=$BATS_TEST_TMPDIR
}

# onnx_py SEED: run the Python on stdin, which writes ONNX models and
# their inputs into $T, after the lines each such script here began with:
# numpy as np, onnx, its helper as h, TensorProto as P and numpy_helper as
# nh; d, the folder $T; r, a numpy generator seeded SEED; w(name, *shape),
# a float weight, normal over the square root of its fan-in, added to the
# list inits, returning its name; save(g, file, opset), g as a model of
# that opset in d.
onnx_py() {
	{
		cat <<EOF
import sys, numpy as np, onnx
from onnx import helper as h, TensorProto as P, numpy_helper as nh
d = sys.argv[1]
r = np.random.default_rng($1)
inits = []
def w(name, *s):
    inits.append(nh.from_array((r.standard_normal(s) / np.sqrt(np.prod(s[1:]))).astype(np.float32), name))
    return name
def save(g, file, opset):
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", opset)]), d + "/" + file)
EOF
		cat
	} | $PY - "$T"
}

# sim_is_ir MODEL LOWERED [ARG...]: tpu-sim runs MODEL (with ARGs) on
# $T/in.npz to the very bytes ir-run gives for LOWERED.
sim_is_ir() {
	tpu-sim -q "$1" -i "$T/in.npz" -o "$T/sim.npz" "${@:3}"
	ir-run "$2" -i "$T/in.npz" -o "$T/ir.npz"
	cmp "$T/sim.npz" "$T/ir.npz"
}

@test "the model reads back by the man pages alone" {
	run codegen "$FX/int8.addressed.tpu" -o "$T/m.tmodel"
	assert_success
	assert_output ''
	run tmodel_dump "$T/m.tmodel"
	assert_success
	assert_line --index 0 --regexp '^model tiny_cnn tpu-a int8 dma=[0-9]+ cmp=[0-9]+ coeff=[0-9]+$'
	assert_line --regexp '^input input f32 \[1, 3, 32, 32\] addr=[0-9]+$'
	assert_line --regexp '^output logits f32 \[1, 10\] addr=[0-9]+$'
	# One layer per op, every layer run by at least one compute command,
	# each compute command named after its op.
	local layers cmds
	layers=$(grep -c '^layer ' <<<"$output")
	run irq "$FX/int8.addressed.tpu" 'len(O)'
	assert_equal "$layers" "$output"
	run tmodel_dump "$T/m.tmodel"
	cmds=$(grep '^cmp ' <<<"$output" | sed 's/.* layer=\([0-9]*\) .*/\1/' | sort -un | wc -l)
	assert_equal "$cmds" "$layers"
	assert_line --regexp '^cmp 1 Cast wait=[1-9][0-9]* layer=0 .* # input_quant$'
}

@test "the coefficients are the weights at their addresses" {
	codegen "$FX/f32.addressed.tpu" -o "$T/m.tmodel"
	$PY - "$FX/f32.addressed.tpu" "$T/m.tmodel" <<'PYEOF'
import struct, sys, msgpack
b = open(sys.argv[1], "rb").read()
glen, doff = struct.unpack_from("<QQ", b, 16)
g = msgpack.unpackb(b[64:64 + glen], strict_map_key=False)
m = open(sys.argv[2], "rb").read()
fo, fl = struct.unpack_from("<QQ", m, 64)
assert fl == g["coeff_bytes"]
n = 0
for t in g["tensors"]:
    if "data" in t:
        off, k = t["data"]
        assert m[fo + t["addr"]:fo + t["addr"] + k] == b[doff + off:doff + off + k], t["name"]
        n += 1
assert n > 5
PYEOF
}

@test "the listing names every command; stdin to stdout is deterministic" {
	run codegen "$FX/int8.addressed.tpu" -o "$T/m.tmodel" -l "$T/m.lst"
	assert_success
	run head -n 1 "$T/m.lst"
	assert_output --regexp '^# tiny_cnn: tpu-a int8, [0-9]+ dma and [0-9]+ compute commands$'
	run grep -c '^cmp .*  # ' "$T/m.lst"
	local n=$output
	run tmodel_dump "$T/m.tmodel"
	assert_equal "$(grep -c '^cmp ' <<<"$output")" "$n"
	codegen <"$FX/int8.addressed.tpu" >"$T/b.tmodel"
	cmp "$T/m.tmodel" "$T/b.tmodel"
}

@test "large activations are sliced along H with the window's halo" {
	need_models resnet18
	local d=$T/r
	mkdir -p "$d"
	onnx2top "$MODELS/resnet18/model.onnx" | top-opt |
		top2tpu --chip tpu-a --mode f32 | weight-reorder | layergroup | addr-assign -q -o "$d/a.tpu"
	run codegen "$d/a.tpu" -o "$d/m.tmodel"
	assert_success
	run tmodel_dump "$d/m.tmodel"
	assert_success
	# The first conv (7x7, stride 2, pad 3) of 112 output rows runs in
	# several slices; slice k's input rows start at 2 * row0 - 3.
	local conv1
	conv1=$(grep '^cmp .* # /conv1/Conv$' <<<"$output")
	[ "$(wc -l <<<"$conv1")" -gt 1 ]
	grep -q ' rows=0+[0-9]* in=0+' <<<"$conv1"
	while read -r line; do
		r0=$(sed 's/.* rows=\([0-9]*\)+.*/\1/' <<<"$line")
		i0=$(sed 's/.* in=\([0-9]*\)+.*/\1/' <<<"$line")
		[ "$r0" -eq 0 ] || [ "$i0" -eq $((2 * r0 - 3)) ]
	done <<<"$conv1"
}

@test "a local group's first slice is short where that starts its computes sooner; tpu-sim as ir-run" {
	need_tool tpu-sim ir-run
	# A MobileNet-like stem on a 112x112 f32 image: the input's Cast, a
	# 3x3 stride-2 Conv, a depthwise Conv and a 1x1 Conv in one local
	# group, in slices.  The computes wait for the first slice's rows: a
	# first slice of half the others' rows starts them sooner, so the
	# cost model times the group faster.
	onnx_py 11 <<'PYEOF'
n = [h.make_node("Conv", ["x", w("w0", 32, 3, 3, 3)], ["a0"], strides=[2, 2], pads=[1, 1, 1, 1]),
     h.make_node("Relu", ["a0"], ["a"]),
     h.make_node("Conv", ["a", w("w1", 32, 1, 3, 3)], ["b0"], group=32, pads=[1, 1, 1, 1]),
     h.make_node("Relu", ["b0"], ["b"]),
     h.make_node("Conv", ["b", w("w2", 64, 32, 1, 1)], ["y"])]
g = h.make_graph(n, "stem", [h.make_tensor_value_info("x", P.FLOAT, [1, 3, 112, 112])],
                 [h.make_tensor_value_info("y", P.FLOAT, None)], inits)
save(g, "stem.onnx", 13)
np.savez(d + "/cal.npz", x=r.standard_normal((4, 1, 3, 112, 112)).astype(np.float32))
np.savez(d + "/in.npz", x=r.standard_normal((1, 3, 112, 112)).astype(np.float32))
PYEOF
	onnx2top "$T/stem.onnx" | top-opt -o "$T/c.top"
	calibrate "$T/c.top" -d "$T/cal.npz" -o "$T/c.table" 2>/dev/null
	top2tpu "$T/c.top" --chip tpu-a --mode int8 --calib "$T/c.table" -o "$T/l.tpu"
	weight-reorder "$T/l.tpu" | layergroup | addr-assign -q | codegen -o "$T/m.tmodel"
	run tmodel_dump "$T/m.tmodel"
	assert_success
	# the group's last op in slices: the first of fewer rows than the
	# next, every other but the last of the same rows, all rows once
	run awk '/^cmp .* # y_dequant$/ { split($6, r, /[=+]/); printf "%d+%d ", r[2], r[3] }' <<<"$output"
	echo "slices: $output"
	read -ra sl <<<"$output"
	((${#sl[@]} >= 3))
	local at=0 i first=${sl[0]#*+} mid=${sl[1]#*+}
	((first < mid))
	for ((i = 0; i < ${#sl[@]}; i++)); do
		[ "${sl[$i]%+*}" = "$at" ]
		at=$((at + ${sl[$i]#*+}))
		((i == 0 || i == ${#sl[@]} - 1)) || [ "${sl[$i]#*+}" = "$mid" ]
	done
	((at == 56))
	[ "${sl[-1]#*+}" -le "$mid" ]
	sim_is_ir "$T/m.tmodel" "$T/l.tpu"
}

@test "a group read whole by the next loads the rows the group before stored while it computes; tpu-sim as ir-run" {
	need_tool tpu-sim ir-run
	# A stem on a 128x128 image in slices (layergroup -n 6: its six ops
	# one group), then a 1x1 Conv, a global pool and a Gemm in a group
	# that runs whole: the whole group's copy of the stem's result loads
	# in parts while the stem's later slices compute, not all of it after
	# the stem's last store (23,296 -> 22,080 cycles; 21,132 with the
	# whole group's first Conv computing the rows as they arrive).
	onnx_py 11 <<'PYEOF'
def conv(x, y, wn, co, ci, k, **a):
    return [h.make_node("Conv", [x, w(wn, co, ci, k, k)], [y + "0"], **a), h.make_node("Relu", [y + "0"], [y])]
n = (conv("x", "a", "w0", 32, 3, 3, strides=[2, 2], pads=[1, 1, 1, 1]) +
     conv("a", "b", "w1", 32, 1, 3, group=32, pads=[1, 1, 1, 1]) + conv("b", "c", "w2", 64, 32, 1) +
     conv("c", "d", "w3", 128, 64, 3, strides=[2, 2], pads=[1, 1, 1, 1]) + conv("d", "e", "w4", 256, 128, 1) +
     [h.make_node("GlobalAveragePool", ["e"], ["p"]), h.make_node("Flatten", ["p"], ["f"]),
      h.make_node("Gemm", ["f", w("w5", 10, 256)], ["y"], transB=1)])
g = h.make_graph(n, "stem", [h.make_tensor_value_info("x", P.FLOAT, [1, 3, 128, 128])],
                 [h.make_tensor_value_info("y", P.FLOAT, None)], inits)
save(g, "stem.onnx", 13)
np.savez(d + "/cal.npz", x=r.standard_normal((4, 1, 3, 128, 128)).astype(np.float32))
np.savez(d + "/in.npz", x=r.standard_normal((1, 3, 128, 128)).astype(np.float32))
PYEOF
	onnx2top "$T/stem.onnx" | top-opt -o "$T/c.top"
	calibrate "$T/c.top" -d "$T/cal.npz" -o "$T/c.table" 2>/dev/null
	top2tpu "$T/c.top" --chip tpu-a --mode int8 --calib "$T/c.table" -o "$T/l.tpu"
	weight-reorder "$T/l.tpu" | layergroup -n 6 | addr-assign -q | codegen -o "$T/m.tmodel" -l "$T/list"
	# a LOAD from where a STORE wrote before it, with a STORE into the
	# same tensor (within its batch stride) after it
	run $PY - "$T/list" <<'PYEOF'
import re, sys
ev = []
for l in open(sys.argv[1]):
    m = re.match(r"dma \d+ (LOAD|STORE) .*ddr 0x([0-9a-f]+) .* ns (\d+)", l)
    if m:
        ev.append((m.group(1), int(m.group(2), 16), int(m.group(3))))
print(any(k == "LOAD" and any(e[:2] == ("STORE", a) for e in ev[:i]) and
          any(e[0] == "STORE" and a < e[1] < a + ns for e in ev[i + 1:])
          for i, (k, a, ns) in enumerate(ev)))
PYEOF
	assert_output True
	sim_is_ir "$T/m.tmodel" "$T/l.tpu"
}

@test "the next group's weights load where the group's weights died; tpu-sim as ir-run" {
	need_tool tpu-sim ir-run
	# Four 192-channel Convs at 16x16 (compute-bound), then 256-channel
	# ones down to 4x4 (weight-bound): more weights than local memory, so
	# neighbouring groups' regions overlap.  Some weight of a later group
	# loads waiting for a compute of an earlier group that is not that
	# group's last (its reader of the bytes was), over a weight that group
	# read by then.
	onnx_py 5 <<'PYEOF'
ws, nodes, x = [], [], "x"
def conv(cin, cout, s):
    global x
    i = len(ws)
    ws.append(nh.from_array((r.standard_normal((cout, cin, 3, 3)) / np.sqrt(cin * 9)).astype(np.float32), "w%d" % i))
    nodes.append(h.make_node("Conv", [x, "w%d" % i], ["c%d" % i], pads=[1, 1, 1, 1], strides=[s, s]))
    nodes.append(h.make_node("Relu", ["c%d" % i], ["y%d" % i]))
    x = "y%d" % i
for cin, cout, s in [(192, 192, 1)] * 4 + [(192, 256, 2), (256, 256, 2)] + [(256, 256, 1)] * 5:
    conv(cin, cout, s)
g = h.make_graph(nodes, "chain", [h.make_tensor_value_info("x", P.FLOAT, [1, 192, 16, 16])],
                 [h.make_tensor_value_info(x, P.FLOAT, [1, 256, 4, 4])], ws)
save(g, "chain.onnx", 13)
np.savez(d + "/in.npz", x=r.standard_normal((1, 192, 16, 16)).astype(np.float32))
PYEOF
	onnx2top "$T/chain.onnx" | top-opt | top2tpu --chip tpu-a --mode f32 -o "$T/l.tpu"
	weight-reorder "$T/l.tpu" | layergroup | addr-assign -q -o "$T/a.tpu"
	codegen "$T/a.tpu" -o "$T/m.tmodel"
	sim_is_ir "$T/m.tmodel" "$T/l.tpu"
	codegen "$T/a.tpu" -o "$T/m2.tmodel" -l "$T/list"
	run $PY - "$T/a.tpu" "$T/list" <<'PYEOF'
import re, struct, sys, msgpack
b = open(sys.argv[1], "rb").read()
g = msgpack.unpackb(b[64:64 + struct.unpack_from("<Q", b, 16)[0]], strict_map_key=False)
T, O = g["tensors"], g["ops"]
lst = open(sys.argv[2]).read().splitlines()
op, wat = {}, {}    # per compute command: its op, the local addresses of its weights
for l in lst:
    m = re.match(r"cmp (\d+) \S+ wait d\d+ layer (\d+) (.*) ->", l)
    if m:
        op[int(m.group(1))] = int(m.group(2))
        wat[int(m.group(1))] = [int(x) for x in re.findall(r"(?<![s\w])@(\d+)", m.group(3))]
last = {}
for c, k in op.items():
    last[O[k]["group"]] = max(last.get(O[k]["group"], 0), c)
loads = [re.match(r"dma \d+ LOAD wait c(\d+) ddr 0x([0-9a-f]+) lmem (\d+) f32 n(\d+) c(\d+) h(\d+) w(\d+)", l) for l in lst]
loads = [[int(x, 16) if i == 1 else int(x) for i, x in enumerate(m.groups())] for m in loads if m]
span = {}           # a weight's local bytes per lane where its group reads it
for c, ddr, at, n, ch, h, w in loads:
    span.setdefault(at, at + (ch + 63) // 64 * n * h * w * 4)
fired = 0
for c, ddr, at, n, ch, h, w in loads:
    t = [i for i, x in enumerate(T) if "data" in x and x["addr"] == ddr]
    if not c or not t or c == last[O[op[c]]["group"]]:
        continue
    G, end = O[op[c]]["group"], at + (ch + 63) // 64 * n * h * w * 4
    dead = [(a, span[a]) for d in op if d <= c and O[op[d]]["group"] == G for a in wat[d] if a in span]
    later = min(o["group"] for o in O if t[0] in o["in"]) > G
    fired += later and any(a < end and at < e for a, e in dead)
print(fired > 0)
PYEOF
	assert_output 'True'
}

# ir_patch IN OUT CODE: OUT is the IR file IN after the Python CODE
# changed its msgpack graph `g` (formats/tpuc-ir.5); the data section
# moves to follow the new graph.
ir_patch() {
	$PY - "$@" <<'PYEOF'
import struct, sys, msgpack
src, dst, code = sys.argv[1:4]
b = open(src, "rb").read()
glen, doff, dlen = struct.unpack_from("<QQQ", b, 16)
g = msgpack.unpackb(b[64:64 + glen], strict_map_key=False)
exec(code)
gb = msgpack.packb(g)
doff2 = (64 + len(gb) + 63) // 64 * 64
f = bytearray(b[:64]) + gb
f += bytes(doff2 - len(f)) + b[doff:doff + dlen]
struct.pack_into("<QQQ", f, 16, len(gb), doff2, dlen)
open(dst, "wb").write(f)
PYEOF
}

@test "a whole group loads each input before the first op reading it, and each op waits for its own; tpu-sim as ir-run" {
	need_tool tpu-sim ir-run
	# a squeeze-and-excitation pool and scale (whole: the pool does not
	# slice), then a residual Add of a second input of 1 MiB
	onnx_py 5 <<'PYEOF'
n = [h.make_node("GlobalAveragePool", ["a"], ["m"]),
     h.make_node("Mul", ["a", "m"], ["s"]),
     h.make_node("Add", ["s", "b"], ["y"])]
g = h.make_graph(n, "se", [h.make_tensor_value_info("a", P.FLOAT, [1, 64, 64, 64]),
                           h.make_tensor_value_info("b", P.FLOAT, [1, 64, 64, 64])],
                 [h.make_tensor_value_info("y", P.FLOAT, None)])
save(g, "se.onnx", 17)
np.savez(d + "/in.npz", a=r.standard_normal((1, 64, 64, 64)).astype(np.float32),
         b=r.standard_normal((1, 64, 64, 64)).astype(np.float32))
PYEOF
	onnx2top "$T/se.onnx" | top-opt | top2tpu --chip tpu-a --mode f32 -o "$T/l.tpu"
	weight-reorder "$T/l.tpu" | layergroup | addr-assign -q | codegen -o "$T/m.tmodel"
	run tpu-sim -q -p "$T/m.tmodel" -i "$T/in.npz" -o "$T/sim.npz"
	assert_success
	# the pool starts once its own input is in (its DMA
	# cycles), not after the Add's input as well
	run awk '$2 == "GlobalAveragePool" { p = $5; pd = $7 } $2 == "Add" { ad = $7 }
		END { print (p == pd), (p < ad) }' <<<"$output"
	assert_output "1 1"
	ir-run "$T/l.tpu" -i "$T/in.npz" -o "$T/ir.npz"
	cmp "$T/sim.npz" "$T/ir.npz"
}

@test "a group run whole reads the result the group before left in local memory, stored only when read later; tpu-sim as ir-run" {
	need_tool tpu-sim ir-run
	# two squeeze-and-excitation blocks in two whole groups (-n 2): the
	# second reads the first's result s where the first left it, so s is
	# neither loaded again nor, when nothing else reads it, stored
	# (17,216 -> 8,768 cycles); as a graph output too, s is stored but
	# still not loaded
	onnx_py 7 <<'PYEOF'
n = [h.make_node("GlobalAveragePool", ["a"], ["m"]), h.make_node("Mul", ["a", "m"], ["s"]),
     h.make_node("GlobalMaxPool", ["s"], ["q"]), h.make_node("Mul", ["s", "q"], ["y"])]
for name, outs in (("one", ["y"]), ("two", ["y", "s"])):
    g = h.make_graph(n, "se2", [h.make_tensor_value_info("a", P.FLOAT, [1, 64, 32, 32])],
                     [h.make_tensor_value_info(o, P.FLOAT, None) for o in outs])
    save(g, name + ".onnx", 17)
np.savez(d + "/in.npz", a=r.standard_normal((1, 64, 32, 32)).astype(np.float32))
PYEOF
	for m in one two; do
		onnx2top "$T/$m.onnx" | top-opt | top2tpu --chip tpu-a --mode f32 -o "$T/$m.tpu"
		weight-reorder "$T/$m.tpu" | layergroup -n 2 | tee "$T/$m.g.tpu" | addr-assign -q |
			codegen -o "$T/$m.tmodel" -l "$T/$m.list"
		run ir-print "$T/$m.g.tpu"
		assert_output --partial "group 1, local"
		tpu-sim -q "$T/$m.tmodel" -i "$T/in.npz" -o "$T/$m.sim.npz"
		ir-run "$T/$m.tpu" -i "$T/in.npz" -o "$T/$m.ir.npz"
		cmp "$T/$m.sim.npz" "$T/$m.ir.npz"
	done
	# loads and stores: a alone is loaded; y stored, and s only as an output
	run awk '$1 == "dma" { n[$3]++ } END { print n["LOAD"] + 0, n["STORE"] + 0 }' "$T/one.list"
	assert_output "1 1"
	run awk '$1 == "dma" { n[$3]++ } END { print n["LOAD"] + 0, n["STORE"] + 0 }' "$T/two.list"
	assert_output "1 2"
}

@test "a group run in one slice reads every row of the result the group before, in one slice, left in local memory; tpu-sim as ir-run" {
	need_tool tpu-sim ir-run
	# four 3x3 Convs on 16x16 in two groups of two (-n 2), each in one
	# slice: the second reads the first's result where it lies, neither
	# stored nor loaded again (21,760 -> 20,480 cycles)
	onnx_py 3 <<'PYEOF'
n = [h.make_node("Conv", [a, "w%d" % i], [b], pads=[1, 1, 1, 1])
     for i, (a, b) in enumerate([("x", "a"), ("a", "b"), ("b", "c"), ("c", "y")])]
ws = [nh.from_array((r.standard_normal((32, 32, 3, 3)) / 17).astype(np.float32), "w%d" % i) for i in range(4)]
g = h.make_graph(n, "cc", [h.make_tensor_value_info("x", P.FLOAT, [1, 32, 16, 16])],
                 [h.make_tensor_value_info("y", P.FLOAT, None)], ws)
save(g, "cc.onnx", 17)
np.savez(d + "/in.npz", x=r.standard_normal((1, 32, 16, 16)).astype(np.float32))
PYEOF
	onnx2top "$T/cc.onnx" | top-opt | top2tpu --chip tpu-a --mode f32 -o "$T/l.tpu"
	weight-reorder "$T/l.tpu" | layergroup -n 2 | tee "$T/g.tpu" | addr-assign -q |
		codegen -o "$T/m.tmodel" -l "$T/list"
	run ir-print "$T/g.tpu"
	assert_output --partial "group 1, local"
	run tpu-sim -q -p "$T/m.tmodel" -i "$T/in.npz" -o "$T/sim.npz"
	assert_success
	run awk '$2 == "Conv" { print $3 }' <<<"$output"
	assert_output "$(printf '1\n1\n1\n1')"
	ir-run "$T/l.tpu" -i "$T/in.npz" -o "$T/ir.npz"
	cmp "$T/sim.npz" "$T/ir.npz"
	# x and the four weights loaded; y alone stored
	run awk '$1 == "dma" { n[$3]++ } END { print n["LOAD"] + 0, n["STORE"] + 0 }' "$T/list"
	assert_output "5 1"
}

@test "a group run whole loads its input in row pieces under its first ops' computes; tpu-sim as ir-run" {
	need_tool tpu-sim ir-run
	# Relu and a 3x3 Conv, then a squeeze-and-excitation pool and scale:
	# one group run whole (the pool does not slice).  Its input a loads
	# in pieces of rows and the Relu and the Conv compute each piece's
	# rows as it arrives: the first compute starts before a whole could
	# be in (256 KiB at 64 bytes a cycle: 4,096 cycles); 47,920 -> 44,736
	# cycles
	onnx_py 3 <<'PYEOF'
w = nh.from_array((r.standard_normal((64, 64, 3, 3)) / 24).astype(np.float32), "w")
n = [h.make_node("Relu", ["a"], ["r"]), h.make_node("Conv", ["r", "w"], ["c"], pads=[1, 1, 1, 1]),
     h.make_node("GlobalAveragePool", ["c"], ["m"]), h.make_node("Mul", ["c", "m"], ["y"])]
g = h.make_graph(n, "head", [h.make_tensor_value_info("a", P.FLOAT, [1, 64, 32, 32])],
                 [h.make_tensor_value_info("y", P.FLOAT, None)], [w])
save(g, "head.onnx", 17)
np.savez(d + "/in.npz", a=r.standard_normal((1, 64, 32, 32)).astype(np.float32))
PYEOF
	onnx2top "$T/head.onnx" | top-opt | top2tpu --chip tpu-a --mode f32 -o "$T/l.tpu"
	weight-reorder "$T/l.tpu" | layergroup | tee "$T/g.tpu" | addr-assign -q |
		codegen -o "$T/m.tmodel" -l "$T/list"
	run ir-print "$T/g.tpu"
	refute_output --partial "group 1,"
	run tpu-sim -q -p "$T/m.tmodel" -i "$T/in.npz" -o "$T/sim.npz"
	assert_success
	run awk '$2 == "Relu" || $2 == "Conv" { print $2, ($3 > 1), ($5 < 4096) }' <<<"$output"
	assert_output "$(printf 'Relu 1 1\nConv 1 1')"
	ir-run "$T/l.tpu" -i "$T/in.npz" -o "$T/ir.npz"
	cmp "$T/sim.npz" "$T/ir.npz"
	# a in more than one load; the pool and the Mul run whole
	run awk '$1 == "dma" && $3 == "LOAD" && $7 != "0x0" { a++ } $1 == "cmp" { n[$3]++ }
		END { print (a > 1), n["GlobalAveragePool"], n["Mul"] }' "$T/list"
	assert_output "1 1 1"
}

@test "wrong stage: names the stage found and the one expected" {
	run -1 codegen "$FX/int8.grouped.tpu" -o "$T/m.tmodel"
	assert_output "codegen: '$FX/int8.grouped.tpu': wrong stage: got tpu IR at stage 'grouped', expected tpu IR at stage addressed"
	[ ! -e "$T/m.tmodel" ]
}

@test "an address past the DDR regions, near 2^63, is refused naming the tensor" {
	ir_patch "$FX/int8.addressed.tpu" "$T/a.tpu" 'pass'
	codegen "$T/a.tpu" -o "$T/m.tmodel"
	rm "$T/m.tmodel"
	ir_patch "$FX/int8.addressed.tpu" "$T/a.tpu" '
next(t for t in g["tensors"] if t["name"] == "logits")["addr"] = (1 << 63) - 1'
	run -1 codegen "$T/a.tpu" -o "$T/m.tmodel"
	assert_output --regexp "^codegen: '$T/a.tpu': tensor 'logits' \(40 bytes at 9223372036854775807\) lies outside its DDR region \[[0-9]+, [0-9]+\) \(run addr-assign\)\$"
	[ ! -e "$T/m.tmodel" ]
	ir_patch "$FX/int8.addressed.tpu" "$T/a.tpu" 'g["neuron_bytes"] = (1 << 63) - 1'
	run -1 codegen "$T/a.tpu" -o "$T/m.tmodel"
	assert_output --regexp "^codegen: '$T/a.tpu': the DDR regions \([0-9]+ bytes of coefficients, 9223372036854775807 of activations\) do not fit the 4294967296 bytes of chip tpu-a\$"
	[ ! -e "$T/m.tmodel" ]
}

@test "errors from generating the code name the IR file" {
	ir_patch "$FX/int8.addressed.tpu" "$T/a.tpu" 'g["ops"][0]["group"] = 99'
	run -1 codegen "$T/a.tpu" -o "$T/m.tmodel"
	assert_output --regexp "^codegen: '$T/a.tpu': "
	[ "${#lines[@]}" -eq 1 ]
	[ ! -e "$T/m.tmodel" ]
}

@test "a listing that cannot be written leaves no model either" {
	run -1 codegen "$FX/int8.addressed.tpu" -o "$T/m.tmodel" -l "$T/nodir/m.lst"
	assert_output "codegen: cannot create '$T/nodir/m.lst': No such file or directory"
	[ ! -e "$T/m.tmodel" ]
	[ -z "$(ls -A "$T")" ]
	# and the other way round
	run -1 codegen "$FX/int8.addressed.tpu" -o "$T/nodir/m.tmodel" -l "$T/m.lst"
	assert_output "codegen: cannot create '$T/nodir/m.tmodel': No such file or directory"
	[ -z "$(ls -A "$T")" ]
	# the listing to stdout, the model to a file: both
	run codegen "$FX/int8.addressed.tpu" -o "$T/m.tmodel" -l -
	assert_success
	assert_line --index 0 --regexp '^# tiny_cnn: tpu-a int8, '
	[ -s "$T/m.tmodel" ]
}

@test "missing and truncated files" {
	run -1 codegen "$T/nope.tpu" -o "$T/m.tmodel"
	assert_output "codegen: cannot open '$T/nope.tpu': No such file or directory"
	truncate_file "$FX/int8.addressed.tpu" "$T/t.tpu" 3000
	run -1 codegen "$T/t.tpu" -o "$T/m.tmodel"
	assert_output "codegen: '$T/t.tpu': truncated IR file (3000 bytes)"
	[ ! -e "$T/m.tmodel" ]
}

@test "usage errors exit 2" {
	run -2 codegen -k
	assert_line --index 0 "codegen: unknown option '-k'"
	run -2 codegen -l
	assert_line --index 0 "codegen: option '-l' needs a file name"
	# several inputs make a bundle of static shapes (tests/shapes.bats)
	run -1 codegen "$BATS_TEST_TMPDIR/a" b
	assert_output "codegen: cannot open '$BATS_TEST_TMPDIR/a': No such file or directory"
}

@test "a group's dying bytes take the weights of a group two or more on, clear of the groups between; tpu-sim as ir-run" {
	[ "${TPUC_QUICK:-0}" != 1 ] || skip "full suite only (TPUC_QUICK=1)"
	need_tool tpu-sim ir-run
	# A small MaxViT (torchvision's, random weights): its first stage's
	# groups run whole, compute-bound, while the DMA engine waits; its last
	# stages are weight-bound.  Some weight of a group two or more after
	# another loads waiting for a compute of that group which is not its
	# last: where the weights it read by then lay.
	$PY - "$T" <<'PYEOF' 2>/dev/null
import sys, torch, numpy as np
from torchvision.models.maxvit import MaxVit
d = sys.argv[1]
torch.manual_seed(0)
m = MaxVit(input_size=(224, 224), stem_channels=64, partition_size=7, block_channels=[64, 64, 128, 256],
           block_layers=[2, 1, 1, 1], head_dim=32, stochastic_depth_prob=0.0, num_classes=10)
m.train()
with torch.no_grad():
    for _ in range(3):
        m(torch.randn(4, 3, 224, 224))
m.eval()
x = torch.randn(1, 3, 224, 224)
torch.onnx.export(m, x, d + "/mvt.onnx", opset_version=17, input_names=["x"], output_names=["y"])
np.savez(d + "/in.npz", x=x.numpy())
np.savez(d + "/cal.npz", x=torch.randn(4, 3, 224, 224).numpy())
PYEOF
	onnx2top "$T/mvt.onnx" | top-opt -o "$T/c.top"
	calibrate "$T/c.top" -d "$T/cal.npz" -o "$T/t.table" 2>/dev/null
	top2tpu "$T/c.top" --chip tpu-a --mode int8 --calib "$T/t.table" -o "$T/l.tpu"
	weight-reorder "$T/l.tpu" | layergroup -n 60 | addr-assign -q -o "$T/a.tpu"
	codegen "$T/a.tpu" -o "$T/m.tmodel" -l "$T/list"
	sim_is_ir "$T/m.tmodel" "$T/l.tpu"
	run $PY - "$T/a.tpu" "$T/list" <<'PYEOF'
import re, struct, sys, msgpack
b = open(sys.argv[1], "rb").read()
g = msgpack.unpackb(b[64:64 + struct.unpack_from("<Q", b, 16)[0]], strict_map_key=False)
T, O = g["tensors"], g["ops"]
lst = open(sys.argv[2]).read().splitlines()
op = {}             # per compute command: its op
for l in lst:
    m = re.match(r"cmp (\d+) \S+ wait d\d+ layer (\d+) ", l)
    if m:
        op[int(m.group(1))] = int(m.group(2))
last = {}
for c, k in op.items():
    last[O[k]["group"]] = max(last.get(O[k]["group"], 0), c)
far = 0
for l in lst:
    m = re.match(r"dma \d+ LOAD wait c(\d+) ddr 0x([0-9a-f]+) ", l)
    if not m:
        continue
    c, ddr = int(m.group(1)), int(m.group(2), 16)
    t = [i for i, x in enumerate(T) if "data" in x and x.get("addr") == ddr]
    if not c or not t or c == last[O[op[c]]["group"]]:
        continue
    far += min(o["group"] for o in O if t[0] in o["in"]) >= O[op[c]]["group"] + 2
print(far > 0)
PYEOF
	assert_output 'True'
}

@test "a weight with the values of one an earlier unit loaded, still in place, loads no more; tpu-sim as ir-run" {
	need_tool tpu-sim ir-run
	# A detector's per-class threshold: a column, a Greater with its own
	# constant 0.25 (six tensors, one value), a NonZero on the host, per
	# class.  One DMA command loads a threshold; each Greater reads it.
	onnx_py 7 <<'PYEOF'
N, C = 3234, 6
nodes, inits, outs = [], [], []
for c in range(C):
    inits += [nh.from_array(np.array(c, np.int64), "i%d" % c),
              nh.from_array(np.array(0.25, np.float32), "thr%d" % c)]
    nodes += [h.make_node("Gather", ["x", "i%d" % c], ["g%d" % c], axis=1),
              h.make_node("Greater", ["g%d" % c, "thr%d" % c], ["b%d" % c]),
              h.make_node("NonZero", ["b%d" % c], ["n%d" % c])]
    outs.append(h.make_tensor_value_info("n%d" % c, P.INT64, [1, None]))
g = h.make_graph(nodes, "perclass", [h.make_tensor_value_info("x", P.FLOAT, [N, C])], outs, inits)
save(g, "pc.onnx", 13)
np.savez(d + "/in.npz", x=r.random((N, C)).astype(np.float32))
PYEOF
	onnx2top "$T/pc.onnx" | top-opt | top2tpu --chip tpu-a --mode f32 -o "$T/l.tpu"
	weight-reorder "$T/l.tpu" | layergroup | addr-assign -q -o "$T/a.tpu"
	codegen "$T/a.tpu" -o "$T/m.tmodel"
	sim_is_ir "$T/m.tmodel" "$T/l.tpu" --trace "$T/t.json"
	run $PY - "$T/t.json" <<'PYEOF'
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
print(sorted(e["args"]["tensor"] for e in ev if e.get("ph") == "X" and e["tid"] == 1 and
             e["args"].get("tensor", "").startswith("thr")))
PYEOF
	assert_output "['thr0']"
}

@test "a kept weight lies clear of the region of the group after its reader too; tpu-sim as ir-run" {
	[ "${TPUC_QUICK:-0}" != 1 ] || skip "full suite only (TPUC_QUICK=1)"
	need_tool tpu-sim ir-run
	# A small Swin (torchvision's, random weights): every LayerNorm's
	# scale is ones, so later groups read weights equal to ones earlier
	# groups loaded.  A group at the top of local memory loads one there;
	# the next group (at the bottom) reads it late, while the group after
	# that (at the top again) already loads its inputs into its region.
	# Keeping that copy, as codegen did before, gave a program that
	# differed from ir-run.
	$PY - "$T" <<'PYEOF' 2>/dev/null
import sys, torch, numpy as np
from torchvision.models.swin_transformer import SwinTransformer
d = sys.argv[1]
torch.manual_seed(0)
m = SwinTransformer(patch_size=[4, 4], embed_dim=96, depths=[2, 2, 2], num_heads=[3, 6, 12],
                    window_size=[7, 7], num_classes=10).eval()
x = torch.randn(1, 3, 224, 224)
torch.onnx.export(m, x, d + "/sw.onnx", opset_version=17, input_names=["x"], output_names=["y"])
np.savez(d + "/in.npz", x=x.numpy())
PYEOF
	onnx2top "$T/sw.onnx" | top-opt | top2tpu --chip tpu-a --mode bf16 -o "$T/l.tpu"
	weight-reorder "$T/l.tpu" | layergroup | addr-assign -q -o "$T/a.tpu"
	codegen "$T/a.tpu" -o "$T/m.tmodel"
	sim_is_ir "$T/m.tmodel" "$T/l.tpu"
}
