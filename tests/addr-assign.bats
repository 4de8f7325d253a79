#!/usr/bin/env bats
# addr-assign: coefficients packed from 0 at 64-byte boundaries, activations
# after them reusing memory by lifetime, sizes on stderr; errors (exit 1,
# one line, no output) and usage (exit 2).
load helpers
load backend

bats_require_minimum_version 1.5.0

setup_file() {
	need_tool onnx2top top-opt calibrate top2tpu weight-reorder layergroup addr-assign
	export FX="$BATS_FILE_TMPDIR/fx"
	backend_fixtures "$FX"
	local m
	for m in int8 f32; do
		weight-reorder "$FX/$m.lowered.tpu" | layergroup -o "$FX/$m.grouped.tpu"
	done
}

setup() {
	need_tool onnx2top top-opt calibrate top2tpu weight-reorder layergroup addr-assign
	T=$BATS_TEST_TMPDIR
}

# Check the addresses of an addressed IR file: every tensor aligned, weights
# packed in order inside [0, coeff_bytes), activations inside the neuron
# region, and no two activations alive at once sharing a byte, unless one
# lies inside the other and copy ops join them (an in-place copy).
check_addresses() {
	$PY - "$1" <<'PYEOF'
import struct, sys, msgpack
b = open(sys.argv[1], "rb").read()
glen = struct.unpack_from("<Q", b, 16)[0]
g = msgpack.unpackb(b[64:64 + glen], strict_map_key=False)
T, O = g["tensors"], g["ops"]
for t in T:
    t.setdefault("addr", -1)
cb, nb = g["coeff_bytes"], g["neuron_bytes"]
size = {"f32": 4, "f16": 2, "bf16": 2, "i8": 1, "u8": 1, "i16": 2, "i32": 4, "i64": 8, "bool": 1}
def nbytes(t):
    n = size[t["dtype"]]
    for d in t["shape"]:
        n *= d
    return n
assert g["stage"] == "addressed" and cb % 64 == 0
at = 0
for t in T:
    if t["addr"] == -1 and "data" not in t:
        continue   # kept in local memory by a layer group
    assert t["addr"] % 64 == 0, t["name"]
    if "data" in t:
        assert t["addr"] == at, t["name"]
        at += (nbytes(t) + 63) // 64 * 64
    else:
        assert cb <= t["addr"] and t["addr"] + nbytes(t) <= cb + nb, t["name"]
assert at == cb
first, last = {i: -1 for i in g["inputs"]}, {}
for k, o in enumerate(O):
    for i in o["in"]:
        if i >= 0 and "data" not in T[i]:
            last[i] = k
    for i in o["out"]:
        first[i] = k
        last.setdefault(i, k)
for i in g["outputs"]:
    last[i] = len(O)
copy = {"Concat", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Slice", "Split",
        "Transpose", "Gather"}
fam = list(range(len(T)))
def root(i):
    while fam[i] != i:
        i = fam[i]
    return i
for o in O:
    if o["type"] in copy:
        for i in o["in"][:1] if o["type"] != "Concat" else o["in"]:
            for j in o["out"]:
                fam[root(i)] = root(j)
def inside(a, b):
    return b["addr"] <= a["addr"] and a["addr"] + nbytes(a) <= b["addr"] + nbytes(b)
acts = [i for i in first if T[i]["addr"] >= 0]
for x in acts:
    for y in acts:
        if x < y and first[x] <= last[y] and first[y] <= last[x]:
            a, b2 = T[x], T[y]
            if root(x) == root(y) and (inside(a, b2) or inside(b2, a)):
                continue
            assert a["addr"] + nbytes(a) <= b2["addr"] or b2["addr"] + nbytes(b2) <= a["addr"], (a["name"], b2["name"])
total = sum((nbytes(T[i]) + 63) // 64 * 64 for i in acts)
assert nb < total, (nb, total)
print("ok", cb, nb)
PYEOF
}

# copy_net SEED: the Python on stdin, given np, onnx, h (onnx.helper), P
# (TensorProto), nh and d = $T, builds the graph g of one float input x;
# g is saved (opset 17) as $T/m.onnx, and one standard normal x drawn by
# numpy's default_rng(SEED) as $T/in.npz
copy_net() {
	{
		printf '%s\n' 'import sys, numpy as np, onnx' \
			'from onnx import helper as h, TensorProto as P, numpy_helper as nh' 'd = sys.argv[1]'
		cat
		printf '%s\n' 'onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]), d + "/m.onnx")' \
			'xs = tuple(v.dim_value for v in g.input[0].type.tensor_type.shape.dim)' \
			"np.savez(d + \"/in.npz\", x=np.random.default_rng($1).standard_normal(xs).astype(np.float32))"
	} | $PY - "$T"
}

# assign_each ONNX: ONNX imported, top-opt'd, lowered for tpu-a in f32, one
# op per group (layergroup -n 1) and addressed to $T/a.tpu; its addresses
# pass check_addresses
assign_each() {
	onnx2top "$1" | top-opt | top2tpu --chip tpu-a --mode f32 | weight-reorder |
		layergroup -n 1 | addr-assign -q -o "$T/a.tpu"
	run check_addresses "$T/a.tpu"
	assert_success
}

# sim_addressed [TPU-SIM-OPTION...]: $T/a.tpu compiled to $T/m.tmodel and
# run by tpu-sim with the options on $T/in.npz to $T/sim.npz; it succeeds,
# its output left in $output
sim_addressed() {
	codegen "$T/a.tpu" -o "$T/m.tmodel"
	run tpu-sim "$@" "$T/m.tmodel" -i "$T/in.npz" -o "$T/sim.npz"
	assert_success
}

@test "int8: packed coefficients, activations reuse memory by lifetime" {
	# One op per group, so that every activation needs DDR.
	weight-reorder "$FX/int8.lowered.tpu" | layergroup -n 1 -o "$T/g.tpu"
	run addr-assign "$T/g.tpu" -o "$T/a.tpu"
	assert_success
	assert_output --regexp '^addr-assign: neuron [0-9.]+ KiB, coeff [0-9.]+ KiB$'
	run check_addresses "$T/a.tpu"
	assert_success
	assert_output --regexp '^ok [0-9]+ [0-9]+$'
}

@test "int8 local groups: small weights lie in coefficient runs, no two weights overlapping" {
	# A run's weights follow each other at the previous one's channels
	# padded to whole slots of 64 lanes (tpuc-isa(5), GLOBAL MEMORY); no
	# two weights share a byte and every weight lies in the region.
	weight-reorder "$FX/int8.lowered.tpu" | layergroup -o "$T/g.tpu"
	addr-assign -q "$T/g.tpu" -o "$T/a.tpu"
	run $PY - "$T/a.tpu" <<'PYEOF'
import math, struct, sys, msgpack
b = open(sys.argv[1], "rb").read()
g = msgpack.unpackb(b[64:64 + struct.unpack_from("<Q", b, 16)[0]], strict_map_key=False)
T = g["tensors"]
size = {"i8": 1, "u8": 1, "i32": 4, "f32": 4}
W = sorted((i for i, t in enumerate(T) if "data" in t), key=lambda i: T[i]["addr"])
nb = lambda t: size[t["dtype"]] * math.prod(t["shape"])
row = lambda t: math.prod(t["shape"][1:]) * size[t["dtype"]]   # bytes per channel
inside = all(T[i]["addr"] % 64 == 0 and T[i]["addr"] + nb(T[i]) <= g["coeff_bytes"] for i in W)
apart = all(T[a]["addr"] + nb(T[a]) <= T[b]["addr"] for a, b in zip(W, W[1:]))
# links of a run: b right after a's channels padded to 64, past a's 64-aligned end
links = sum(1 for a, b in zip(W, W[1:])
            if T[a]["dtype"] == T[b]["dtype"] and row(T[a]) == row(T[b]) and
            T[b]["addr"] == T[a]["addr"] + -(-T[a]["shape"][0] // 64) * 64 * row(T[a]) and
            T[b]["addr"] > T[a]["addr"] + -(-nb(T[a]) // 64) * 64)
print(inside, apart, links >= 2)
PYEOF
	assert_output 'True True True'
}

@test "f32: the same rules; the printed sizes match the IR" {
	weight-reorder "$FX/f32.lowered.tpu" | layergroup -n 1 -o "$T/g.tpu"
	run addr-assign "$T/g.tpu" -o "$T/a.tpu"
	assert_success
	local printed=$output
	run check_addresses "$T/a.tpu"
	assert_success
	run irq "$T/a.tpu" '"neuron %s, coeff %s" % tuple(("%.2f KiB" if v < 10 else "%.1f KiB" if v < 99.95 else "%.0f KiB") % v for v in (g["neuron_bytes"] / 1024, g["coeff_bytes"] / 1024))'
	assert_equal "$printed" "addr-assign: $output"
}

@test "resnet18 int8 needs about 1 MiB of activations and 11.2 MiB of weights" {
	need_models resnet18
	need_tool ir-run
	local d=$T/r
	mkdir -p "$d"
	onnx2top "$MODELS/resnet18/model.onnx" | top-opt -o "$d/c.top"
	calibrate "$d/c.top" -d "$MODELS/resnet18/calib.npz" -n 4 -o "$d/cali" 2>/dev/null
	top2tpu "$d/c.top" --chip tpu-a --mode int8 --calib "$d/cali" | weight-reorder -o "$d/r.tpu"
	layergroup -n 1 "$d/r.tpu" -o "$d/g.tpu"
	run addr-assign "$d/g.tpu" -o "$d/a.tpu"
	assert_success
	assert_output 'addr-assign: neuron 980 KiB, coeff 11.2 MiB'
	run check_addresses "$d/a.tpu"
	assert_success
	# Local groups keep their intermediate results out of DDR.
	layergroup "$d/r.tpu" -o "$d/g.tpu"
	run addr-assign "$d/g.tpu" -o "$d/a.tpu"
	assert_success
	assert_output --regexp '^addr-assign: neuron [0-9.]+ (KiB|MiB), coeff 11.2 MiB$'
	run irq "$d/a.tpu" 'sum(1 for t in T if "addr" not in t) > 10'
	assert_output True
}

@test "copies in place: a Concat's inputs, a Reshape and a Slice share the bytes; no DMA, tpu-sim as ir-run" {
	need_tool codegen tpu-sim ir-run
	# y = Relu(Reshape(Concat(Relu(x), x * 0.5))), z = Slice(that Reshape) * 0.5
	copy_net 1 <<'PYEOF'
c = [nh.from_array(np.array(0.5, np.float32), "half"),
     nh.from_array(np.array([1, 32, 256], np.int64), "shp")]
c += [nh.from_array(np.array([v], np.int64), k) for k, v in (("st", 16), ("en", 32), ("ax", 1))]
n = [h.make_node("Relu", ["x"], ["a"]),
     h.make_node("Mul", ["x", "half"], ["b"]),
     h.make_node("Concat", ["a", "b"], ["c"], axis=1),
     h.make_node("Reshape", ["c", "shp"], ["r"]),
     h.make_node("Relu", ["r"], ["y"]),
     h.make_node("Slice", ["r", "st", "en", "ax"], ["s"]),
     h.make_node("Mul", ["s", "half"], ["z"])]
g = h.make_graph(n, "inplace", [h.make_tensor_value_info("x", P.FLOAT, [1, 16, 16, 16])],
                 [h.make_tensor_value_info(k, P.FLOAT, None) for k in "yz"], c)
PYEOF
	# one op per group: every tensor in DDR, every copy a layer of its own
	assign_each "$T/m.onnx"
	# a and b at the start and the middle of c, c and r at one address,
	# the Slice s at r's second half (16 x 256 f32)
	run irq "$T/a.tpu" '" ".join(str(t["addr"] - [u for u in T if u["name"] == "r"][0]["addr"]) for n in "abcrs" for t in T if t["name"] == n)'
	assert_output '0 16384 0 0 16384'
	sim_addressed -q -p
	# the three copies: no step, no DMA cycle
	run awk '$2 ~ /^(Concat|Reshape|Slice)$/ { print $2, $3, $7 }' <<<"$output"
	assert_output $'Concat 0 0\nReshape 0 0\nSlice 0 0'
	ir-run "$T/a.tpu" -i "$T/in.npz" -o "$T/ref.npz"
	cmp "$T/sim.npz" "$T/ref.npz"
	tpu-sim -q "$T/m.tmodel" -i "$T/in.npz" -o "$T/simall.npz" --dump-all
	ir-run "$T/a.tpu" -i "$T/in.npz" -o "$T/refall.npz" --dump-all
	run $PY -c 'import sys, numpy as np
a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
print(sorted(a.files) == sorted(b.files), len(a.files), all(np.array_equal(a[k], b[k]) for k in b.files))' "$T/simall.npz" "$T/refall.npz"
	assert_output 'True 8 True'
}

@test "a bf16 model's output widened to f32 before its Concat and Reshape: they move nothing" {
	need_tool codegen tpu-sim ir-run
	# y = Reshape(Concat(Relu(x), x * 0.5)), the model's f32 output
	copy_net 2 <<'PYEOF'
c = [nh.from_array(np.array(0.5, np.float32), "half"),
     nh.from_array(np.array([1, 32, 256], np.int64), "shp")]
n = [h.make_node("Relu", ["x"], ["a"]),
     h.make_node("Mul", ["x", "half"], ["b"]),
     h.make_node("Concat", ["a", "b"], ["c"], axis=1),
     h.make_node("Reshape", ["c", "shp"], ["y"])]
g = h.make_graph(n, "widen", [h.make_tensor_value_info("x", P.FLOAT, [1, 16, 16, 16])],
                 [h.make_tensor_value_info("y", P.FLOAT, None)], c)
PYEOF
	onnx2top "$T/m.onnx" | top-opt | top2tpu --chip tpu-a --mode bf16 -o "$T/l.tpu"
	# each part widened, the Concat and Reshape of f32 giving the output
	run irq "$T/l.tpu" '" ".join("%s:%s" % (o["type"], T[o["out"][0]]["dtype"]) for o in O)'
	assert_output 'Cast:bf16 Relu:bf16 Mul:bf16 Cast:f32 Cast:f32 Concat:f32 Reshape:f32'
	weight-reorder "$T/l.tpu" | layergroup | addr-assign -q -o "$T/a.tpu"
	run check_addresses "$T/a.tpu"
	assert_success
	sim_addressed
	# the parts are stored straight into the output: DDR moved is the minimum
	run $PY -c 'import re, sys
m = re.search(r"DDR ([0-9.]+ \w+) moved \(minimum ([0-9.]+ \w+)\)", sys.stdin.read())
print(m and m.group(1) == m.group(2))' <<<"$output"
	assert_output True
	ir-run "$T/l.tpu" -i "$T/in.npz" -o "$T/ref.npz"
	cmp "$T/sim.npz" "$T/ref.npz"
}

@test "copies in place through a chain: a Gather of one index (a Slice, then a Reshape dropping the axis) reads its input's bytes; no DMA, tpu-sim as ir-run" {
	need_tool codegen tpu-sim ir-run
	# r = Relu(x) [3,4,16,16]; y = r[0] * 0.5, z = r[2] * 0.5 (Gathers of scalar indices)
	copy_net 1 <<'PYEOF'
c = [nh.from_array(np.array(0.5, np.float32), "half"), nh.from_array(np.array(0, np.int64), "i0"),
     nh.from_array(np.array(2, np.int64), "i2")]
n = [h.make_node("Relu", ["x"], ["r"]),
     h.make_node("Gather", ["r", "i0"], ["q"], axis=0), h.make_node("Mul", ["q", "half"], ["y"]),
     h.make_node("Gather", ["r", "i2"], ["k"], axis=0), h.make_node("Mul", ["k", "half"], ["z"])]
g = h.make_graph(n, "chain", [h.make_tensor_value_info("x", P.FLOAT, [3, 4, 16, 16])],
                 [h.make_tensor_value_info(k, P.FLOAT, None) for k in "yz"], c)
PYEOF
	assign_each "$T/m.onnx"
	# q and k (the Reshapes' outputs) and their Slices at r's first and
	# third image (4 x 16 x 16 f32 each)
	run irq "$T/a.tpu" '" ".join(str(t["addr"] - [u for u in T if u["name"] == "r"][0]["addr"]) for n in ("q_slice", "q", "k_slice", "k") for t in T if t["name"] == n)'
	assert_output '0 0 8192 8192'
	sim_addressed -q -p
	run awk '$2 ~ /^(Reshape|Slice)$/ { print $2, $3, $7 }' <<<"$output"
	assert_output $'Slice 0 0\nReshape 0 0\nSlice 0 0\nReshape 0 0'
	ir-run "$T/a.tpu" -i "$T/in.npz" -o "$T/ref.npz"
	npz-compare "$T/ref.npz" "$T/sim.npz" --tolerance 1,1
}

@test "-q is quiet; stdin to stdout is deterministic" {
	run addr-assign -q "$FX/int8.grouped.tpu" -o "$T/a.tpu"
	assert_success
	assert_output ''
	addr-assign -q <"$FX/int8.grouped.tpu" >"$T/b.tpu"
	cmp "$T/a.tpu" "$T/b.tpu"
}

@test "wrong stage: names the stage found and the one expected" {
	run -1 addr-assign "$FX/int8.lowered.tpu" -o "$T/out.tpu"
	assert_output "addr-assign: '$FX/int8.lowered.tpu': wrong stage: got tpu IR at stage 'lowered', expected tpu IR at stage grouped"
	[ ! -e "$T/out.tpu" ]
}

@test "missing and truncated files" {
	run -1 addr-assign "$T/nope.tpu" -o "$T/out.tpu"
	assert_output "addr-assign: cannot open '$T/nope.tpu': No such file or directory"
	truncate_file "$FX/int8.grouped.tpu" "$T/t.tpu" 1000
	run -1 addr-assign "$T/t.tpu" -o "$T/out.tpu"
	assert_output "addr-assign: '$T/t.tpu': truncated IR file (1000 bytes)"
	[ ! -e "$T/out.tpu" ]
}

@test "usage errors exit 2" {
	run -2 addr-assign -z
	assert_line --index 0 "addr-assign: unknown option '-z'"
	run -2 addr-assign a b
	assert_output --partial 'usage: addr-assign'
}

@test "a network larger than the chip's global memory: one line naming the input, no output" {
	# 4 GiB of f32 input and as much again for the Relu: 8 GiB of 4
	$PY - "$T/big.onnx" <<'PYEOF'
import sys
import onnx
from onnx import TensorProto, helper
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 8192, 8192])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Add", ["r", "x"], ["y"])]
m = helper.make_model(helper.make_graph(nodes, "big", [x], [y]),
                      opset_imports=[helper.make_opsetid("", 17)])
onnx.save(m, sys.argv[1])
PYEOF
	onnx2top "$T/big.onnx" | top-opt | top2tpu --chip tpu-a --mode f32 | weight-reorder |
		layergroup -o "$T/big.tpu"
	run -1 addr-assign "$T/big.tpu" -o "$T/out.tpu"
	assert_output "addr-assign: '$T/big.tpu': the model needs 8.00 GiB of global memory, chip 'tpu-a' has 4.00 GiB"
	[ ! -e "$T/out.tpu" ]
}
