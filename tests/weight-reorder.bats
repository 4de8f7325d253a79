#!/usr/bin/env bats
# weight-reorder: INT8 requantisation parameters merge into one coefficient
# tensor per op, other weights keep their bytes; stdin/stdout; errors (exit
# 1, one line, no output left behind) and usage (exit 2).
load helpers
load backend

bats_require_minimum_version 1.5.0

setup_file() {
	need_tool onnx2top top-opt calibrate top2tpu weight-reorder
	export FX="$BATS_FILE_TMPDIR/fx"
	backend_fixtures "$FX"
	# load(path, dtype): an IR file's msgpack graph and data(i), weight i's
	# elements of dtype in its shape
	cat >"$FX/tpuir.py" <<'PYEOF'
import struct, msgpack, numpy as np
def load(p, dt):
    b = open(p, "rb").read()
    glen, doff = struct.unpack_from("<QQ", b, 16)
    g = msgpack.unpackb(b[64:64 + glen], strict_map_key=False)
    def data(i):
        t = g["tensors"][i]; off, n = t["data"]
        return np.frombuffer(b[doff + off:doff + off + n], dt).reshape(t["shape"])
    return g, data
# save_net(d, nodes, name, xs, ys, weights, r): d/n.onnx (opset 13), graph
# name of nodes from float input x of shape xs to output y of shape ys, the
# weights {name: array} as initialisers in that order; d/in.npz one standard
# normal x from r, d/cal.npz four
def save_net(d, nodes, name, xs, ys, weights, r):
    import onnx
    from onnx import helper as h, numpy_helper as nh, TensorProto as TP
    g = h.make_graph(nodes, name, [h.make_tensor_value_info('x', TP.FLOAT, xs)],
                     [h.make_tensor_value_info('y', TP.FLOAT, ys)],
                     [nh.from_array(a, k) for k, a in weights.items()])
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid('', 13)]), d + '/n.onnx')
    np.savez(d + '/in.npz', x=r.standard_normal(xs).astype(np.float32))
    np.savez(d + '/cal.npz', x=r.standard_normal([4] + xs).astype(np.float32))
PYEOF
}

# int8_net SEED: the Python on stdin, given np, h (onnx.helper), save_net,
# d = $T and r = numpy's default_rng(SEED), writes $T/n.onnx with
# $T/{in,cal}.npz by save_net
int8_net() {
	{ printf '%s\n' 'import os, sys, numpy as np' 'from onnx import helper as h' \
		'sys.path.insert(0, os.environ["FX"])' 'from tpuir import save_net' \
		'd = sys.argv[1]' "r = np.random.default_rng($1)"; cat; } | $PY - "$T"
}

# deploy_int8 DIR: DIR/n.onnx with DIR/{in,cal}.npz through deploy.mk in
# INT8 to DIR/q; asserts success and tpu-sim's output equal to ir-run's on
# the lowered IR (DIR/q/tpu_out.npz, before weight-reorder)
deploy_int8() {
	run make --no-print-directory -f "$REPO/pipelines/deploy.mk" TPUC_BIN="$TPUC_BUILD/bin" \
		MODEL="$1/n.onnx" INPUT="$1/in.npz" CALIB="$1/cal.npz" MODE=int8 OUT="$1/q" compare
	assert_success
	cmp "$1/q/tpu_out.npz" "$1/q/sim_out.npz"
}

setup() {
	need_tool onnx2top top-opt calibrate top2tpu weight-reorder
	T=$BATS_TEST_TMPDIR
}

@test "int8: bias, multiplier and shift become one i32 [OC,3] tensor" {
	run weight-reorder "$FX/int8.lowered.tpu" -o "$T/r.tpu"
	assert_success
	assert_output ''
	run irq "$T/r.tpu" 'g["dialect"], g["stage"], g["mode"]'
	assert_output "('tpu', 'reordered', 'int8')"
	# Every Conv and Gemm has [x, w, coeff] with coeff i32 [OC,3] named after it.
	run irq "$T/r.tpu" 'sorted(set((o["type"], len(o["in"]), T[o["in"][2]]["dtype"], len(T[o["in"][2]]["shape"]), T[o["in"][2]]["shape"][1], T[o["in"][2]]["name"] == o["name"] + "_coeff") for o in O if o["type"] in ("Conv", "Gemm")))'
	assert_output "[('Conv', 3, 'i32', 2, 3, True), ('Gemm', 3, 'i32', 2, 3, True)]"
	# No i32 [OC] vectors are left.
	run irq "$T/r.tpu" 'sum(1 for t in T if t["dtype"] == "i32" and len(t["shape"]) == 1)'
	assert_output 0
}

@test "int8: the coefficient rows hold the lowered bias, multiplier, shift" {
	weight-reorder "$FX/int8.lowered.tpu" -o "$T/r.tpu"
	$PY - "$FX/int8.lowered.tpu" "$T/r.tpu" <<'PYEOF'
import os, sys, numpy as np
sys.path.insert(0, os.environ["FX"])
from tpuir import load
lg, ld = load(sys.argv[1], "<i4"); rg, rd = load(sys.argv[2], "<i4")
lops = {o["name"]: o for o in lg["ops"]}
# a Conv that computes b columns per position (a DepthToWidth of blocksize
# b reads its output) has its rows b times over
fill = {o["in"][0]: o["attrs"]["blocksize"] for o in rg["ops"] if o["type"] == "DepthToWidth"}
n = 0
for o in rg["ops"]:
    if o["type"] not in ("Conv", "Gemm"):
        continue
    l = lops[o["name"]]
    want = np.stack([ld(l["in"][k]) for k in (2, 3, 4)], axis=1)
    want = np.tile(want, (fill.get(o["out"][0], 1), 1)).ravel()
    assert (rd(o["in"][2]).ravel() == want).all(), o["name"]
    n += 1
assert n >= 5, n
PYEOF
}

@test "f32: weights keep their names, shapes and bytes" {
	weight-reorder "$FX/f32.lowered.tpu" -o "$T/r.tpu"
	run irdump_values "$FX/f32.lowered.tpu"
	local before=$output
	run irdump_values "$T/r.tpu"
	assert_equal "$output" "$before"
	run irq "$T/r.tpu" '[o["attrs"]["transB"] for o in O if o["type"] == "Gemm"], T[[o for o in O if o["type"] == "Gemm"][0]["in"][1]]["shape"]'
	assert_output '([1], [10, 32])'
}

irdump_values() {
	$PY "$BATS_TEST_DIRNAME/irdump.py" "$1" values | grep '^weight'
}

@test "stdin to stdout, byte-identical from run to run" {
	weight-reorder <"$FX/int8.lowered.tpu" >"$T/a.tpu"
	weight-reorder - -o "$T/b.tpu" <"$FX/int8.lowered.tpu"
	cmp "$T/a.tpu" "$T/b.tpu"
}

@test "wrong stage: names the stage found and the one expected" {
	weight-reorder "$FX/int8.lowered.tpu" -o "$T/r.tpu"
	run -1 weight-reorder "$T/r.tpu" -o "$T/out.tpu"
	assert_output "weight-reorder: '$T/r.tpu': wrong stage: got tpu IR at stage 'reordered', expected tpu IR at stage lowered"
	[ ! -e "$T/out.tpu" ]
	run -1 weight-reorder "$FX/c.top"
	assert_output "weight-reorder: '$FX/c.top': wrong stage: got top IR at stage 'canonical', expected tpu IR at stage lowered"
}

@test "missing file" {
	run -1 weight-reorder "$T/nope.tpu" -o "$T/out.tpu"
	assert_output "weight-reorder: cannot open '$T/nope.tpu': No such file or directory"
	[ ! -e "$T/out.tpu" ]
}

@test "truncated file leaves no output" {
	truncate_file "$FX/int8.lowered.tpu" "$T/t.tpu" 200
	run -1 weight-reorder "$T/t.tpu" -o "$T/out.tpu"
	assert_output "weight-reorder: '$T/t.tpu': truncated IR file (200 bytes)"
	[ ! -e "$T/out.tpu" ]
	[ -z "$(ls "$T" | grep -v '^t.tpu$')" ]
}

@test "usage errors exit 2" {
	run -2 weight-reorder -x
	assert_line --index 0 "weight-reorder: unknown option '-x'"
	run -2 weight-reorder a.tpu b.tpu
	assert_output --partial 'usage: weight-reorder'
	run -2 weight-reorder -o
	assert_line --index 0 "weight-reorder: option '-o' needs a file name"
	run -0 weight-reorder -h
	assert_output --partial 'usage: weight-reorder'
}

@test "int8: a MatMul's bias, multiplier and shift become one coefficient tensor too" {
	need_tool ir-run
	/usr/bin/python3 "$BATS_TEST_DIRNAME/fixtures/make_attn.py" "$T/a" >/dev/null
	onnx2top "$T/a/model.onnx" | top-opt -o "$T/c.top"
	calibrate "$T/c.top" -d "$T/a/calib.npz" -o "$T/cali" 2>/dev/null
	top2tpu "$T/c.top" --chip tpu-a --mode int8 --calib "$T/cali" -o "$T/l.tpu"
	weight-reorder "$T/l.tpu" -o "$T/r.tpu"
	# with weights (columns N) and between activations (q.k^T: one set)
	run irq "$T/r.tpu" 'sorted(set((len(o["in"]), T[o["in"][2]]["shape"][1], T[o["in"][2]]["shape"][0] in (1, T[o["out"][0]]["shape"][-1])) for o in O if o["type"] == "MatMul" and T[o["out"][0]]["dtype"] in ("i8", "u8")))'
	assert_output "[(3, 3, True)]"
	run irq "$T/r.tpu" 'sum(1 for o in O if o["type"] == "MatMul" and T[o["in"][1]].get("data") is None)'
	[ "$output" -ge 1 ]
	# the same results as the split form
	ir-run "$T/l.tpu" -i "$T/a/input.npz" -o "$T/l.npz"
	ir-run "$T/r.tpu" -i "$T/a/input.npz" -o "$T/r.npz"
	cmp "$T/l.npz" "$T/r.npz"
}

@test "int8: a Conv of few output channels computes neighbouring columns as blocks of channels, a DepthToWidth puts them back, bit for bit" {
	need_tool layergroup addr-assign codegen tpu-sim ir-run npz-compare
	int8_net 11 <<'PYEOF'
w1 = r.normal(0, 0.3, (16, 3, 3, 3)).astype(np.float32)
w2 = r.normal(0, 0.3, (16, 16, 1, 1)).astype(np.float32)
b2 = r.normal(0, 0.1, 16).astype(np.float32)
nodes = [
    h.make_node('Conv', ['x', 'w1'], ['c1'], name='stem', strides=[2, 2], pads=[1, 1, 1, 1]),
    h.make_node('Relu', ['c1'], ['r1'], name='relu'),
    h.make_node('Conv', ['r1', 'w2', 'b2'], ['y'], name='point'),
]
save_net(d, nodes, 'narrow', [1, 3, 64, 63], [1, 16, 32, 32], {'w1': w1, 'w2': w2, 'b2': b2}, r)
PYEOF
	# tpu_out: ir-run on the lowered Conv, before weight-reorder
	deploy_int8 "$T"
	# 16 of 64 lanes: 4 columns per position, the kernel 3 + 3 strides wide,
	# block j at columns 2j .. 2j + 2 of the weights and zeros elsewhere
	run irq "$T/q/reordered.tpu" '[(o["type"], T[o["in"][1]]["shape"] if o["type"] == "Conv" else o["attrs"]["blocksize"], o["attrs"].get("strides"), T[o["out"][0]]["shape"]) for o in O if o["type"] in ("Conv", "DepthToWidth")]'
	assert_output "[('Conv', [64, 3, 3, 9], [2, 8], [1, 64, 32, 8]), ('DepthToWidth', 4, None, [1, 16, 32, 32]), ('Conv', [64, 16, 1, 4], [1, 4], [1, 64, 32, 8]), ('DepthToWidth', 4, None, [1, 16, 32, 32])]"
	$PY - "$T/q/lowered.tpu" "$T/q/reordered.tpu" <<'PYEOF'
import os, sys, numpy as np
sys.path.insert(0, os.environ["FX"])
from tpuir import load
lg, ld = load(sys.argv[1], "i1"); rg, rd = load(sys.argv[2], "i1")
w = ld(next(o for o in lg["ops"] if o["name"] == "stem")["in"][1])
v = rd(next(o for o in rg["ops"] if o["name"] == "stem")["in"][1])
for j in range(4):
    blk = v[16 * j:16 * (j + 1)]
    assert (blk[..., 2 * j:2 * j + 3] == w).all(), j
    assert not np.delete(blk, range(2 * j, 2 * j + 3), axis=3).any(), j
PYEOF
	# the network's MACs, not the zeros': 16x27 and 16x16 per output
	run tmodel-info "$T/q/model.tmodel"
	assert_line 'macs     704512 (0.0007045 GMAC)'
}

@test "int8: a depthwise Conv over narrow rows runs on blocks of rows packed side by side, unpacked after, bit for bit" {
	need_tool layergroup addr-assign codegen tpu-sim ir-run npz-compare tmodel-info
	int8_net 12 <<'PYEOF'
w1 = r.normal(0, 0.3, (128, 1, 5, 5)).astype(np.float32)
b1 = r.normal(0, 0.1, 128).astype(np.float32)
w2 = r.normal(0, 0.3, (128, 1, 3, 3)).astype(np.float32)
nodes = [
    h.make_node('Conv', ['x', 'w1', 'b1'], ['c1'], name='dw', group=128, pads=[2, 2, 2, 2]),
    h.make_node('Relu', ['c1'], ['r1'], name='relu'),
    h.make_node('Conv', ['r1', 'w2'], ['y'], name='dws2', group=128, strides=[2, 2],
                pads=[1, 1, 1, 1]),
]
save_net(d, nodes, 'dw', [1, 128, 14, 14], [1, 128, 7, 7], {'w1': w1, 'b1': b1, 'w2': w2}, r)
PYEOF
	# tpu_out: ir-run on the lowered Convs, before weight-reorder
	deploy_int8 "$T"
	# 14 columns of 64: 4 blocks of 4 rows (2 halo rows above and below),
	# 16 columns apart (2 zero columns after each); the stride-2 Conv stays
	run irq "$T/q/reordered.tpu" '[(o["type"], o["attrs"].get("starts"), o["attrs"].get("ends"), o["attrs"].get("axis"), o["attrs"].get("pads"), T[o["out"][0]]["shape"]) for o in O if o["type"] in ("Pad", "Slice", "Concat", "Conv")]'
	assert_output "[('Pad', None, None, None, [0, 0, 2, 0, 0, 0, 4, 2], [1, 128, 20, 16]), ('Slice', [0, 0], [8, 16], None, None, [1, 128, 8, 16]), ('Slice', [4, 0], [12, 16], None, None, [1, 128, 8, 16]), ('Slice', [8, 0], [16, 16], None, None, [1, 128, 8, 16]), ('Slice', [12, 0], [20, 16], None, None, [1, 128, 8, 16]), ('Concat', None, None, 3, None, [1, 128, 8, 64]), ('Conv', None, None, None, [0, 2, 0, 0], [1, 128, 4, 62]), ('Slice', [0, 0], [4, 14], None, None, [1, 128, 4, 14]), ('Slice', [0, 16], [4, 30], None, None, [1, 128, 4, 14]), ('Slice', [0, 32], [4, 46], None, None, [1, 128, 4, 14]), ('Slice', [0, 48], [2, 62], None, None, [1, 128, 2, 14]), ('Concat', None, None, 2, None, [1, 128, 14, 14]), ('Conv', None, None, None, [1, 1, 1, 1], [1, 128, 7, 7])]"
	# the network's MACs, not the packed Conv's: 128 x 14 x 14 x 25 + 128 x 7 x 7 x 9
	run tmodel-info "$T/q/model.tmodel"
	assert_line 'macs     683648 (0.0006836 GMAC)'
}

@test "int8: a Conv of 13 groups merges 7 of them in one Conv and the other 6 in a second, over Slices of its input, a Concat after, bit for bit" {
	need_tool layergroup addr-assign codegen tpu-sim ir-run npz-compare tmodel-info
	int8_net 14 <<'PYEOF'
w = r.normal(0, 0.3, (104, 8, 3, 3)).astype(np.float32)
b = r.normal(0, 0.1, 104).astype(np.float32)
nodes = [h.make_node('Conv', ['x', 'w', 'b'], ['c'], name='grouped', group=13, pads=[1, 1, 1, 1]),
         h.make_node('Relu', ['c'], ['y'], name='relu')]
save_net(d, nodes, 'g13', [1, 104, 28, 28], [1, 104, 28, 28], {'w': w, 'b': b}, r)
PYEOF
	# tpu_out: ir-run on the grouped Conv, before weight-reorder
	deploy_int8 "$T"
	# 13 is prime: k = 13 takes 2 lane tiles x 4 K tiles per position; k = 7
	# merges groups 0-6 (56 channels, K 504: 1 x 2 tiles) and 7-12 (48, K
	# 432: 1 x 2), each part's own its share (7/13, 6/13) of the work
	run irq "$T/q/reordered.tpu" '[(o["type"], o["attrs"].get("starts"), o["attrs"].get("ends"), T[o["in"][1]]["shape"] if o["type"] == "Conv" else None, o["attrs"].get("group"), o["attrs"].get("own"), T[o["out"][0]]["shape"]) for o in O if o["type"] in ("Slice", "Conv", "Concat")]'
	assert_output "[('Slice', [0], [56], None, None, None, [1, 56, 28, 28]), ('Slice', [56], [104], None, None, None, [1, 48, 28, 28]), ('Conv', None, None, [56, 56, 3, 3], 1, [3161088, 4704], [1, 56, 28, 28]), ('Conv', None, None, [48, 48, 3, 3], 1, [2709504, 4032], [1, 48, 28, 28]), ('Concat', None, None, None, None, None, [1, 104, 28, 28])]"
	# the network's MACs: 28 x 28 x 104 x 72
	run tmodel-info "$T/q/model.tmodel"
	assert_line 'macs     5870592 (0.005871 GMAC)'
}
