#!/usr/bin/env bats
# merge-layout's batch fold (lib/passes/pass_lanefold.c): window attention
# over many windows of few heads runs on [1, windows*heads, M, N], its lane
# axis full; the values stay those of the unfolded graph, bit for bit, and
# in int8 tpu-sim agrees with ir-run.
load helpers

setup() {
	T=$BATS_TEST_TMPDIR
}

# sim_as_ir INPUT: compile $T/l.tpu to $T/m.tmodel (addressed in $T/a.tpu),
# run it on tpu-sim and the Tpu IR on ir-run: bit-identical outputs.
sim_as_ir() {
	weight-reorder "$T/l.tpu" -o "$T/r.tpu"
	layergroup "$T/r.tpu" -o "$T/g.tpu"
	addr-assign "$T/g.tpu" -o "$T/a.tpu" 2>/dev/null
	codegen "$T/a.tpu" -o "$T/m.tmodel"
	tpu-sim -q "$T/m.tmodel" -i "$1" -o "$T/sim.npz"
	ir-run "$T/l.tpu" -i "$1" -o "$T/ir.npz"
	[ "$(npz_maxdiff "$T/sim.npz" "$T/ir.npz")" = 0.0 ]
}

# chip_as_ir CALIB INPUT MODE...: calibrate $T/c.top on CALIB, lower it to
# $T/l.tpu in each MODE on tpu-a and sim_as_ir INPUT
chip_as_ir() {
	local cal=$1 in=$2 mode
	shift 2
	calibrate "$T/c.top" -d "$cal" -o "$T/t.table" 2>/dev/null
	for mode; do
		top2tpu "$T/c.top" --chip tpu-a --mode $mode --calib "$T/t.table" -o "$T/l.tpu"
		sim_as_ir "$in"
	done
}

# same_values INPUT: ir-run $T/o.top and $T/c.top (before and after
# top-opt) on INPUT to $T/o.npz and $T/c.npz: bit-identical outputs
same_values() {
	ir-run "$T/o.top" -i "$1" -o "$T/o.npz"
	ir-run "$T/c.top" -i "$1" -o "$T/c.npz"
	[ "$(npz_maxdiff "$T/c.npz" "$T/o.npz")" = 0.0 ]
}

@test "Swin's shifted-window attention folds its 8 windows of 3 heads onto 24 channels, values unchanged" {
	$PY "$BATS_TEST_DIRNAME/fixtures/make_winattn.py" "$T/m"
	onnx2top "$T/m/model.onnx" -o "$T/o.top"
	top-opt "$T/o.top" -o "$T/c.top"
	run ir-print "$T/c.top"
	# both MatMuls, the Softmax and the Transpose of K on the folded view;
	# Q, K and V reach it by views, the output leaves by one
	[[ "$output" == *'Transpose(%k_fold) {perm=[0,1,3,2]} : (f32[1,24,16,8]) -> f32[1,24,8,16]'* ]]
	[[ "$output" == *'MatMul(%qs_fold'*' : (f32[1,24,16,8], f32[1,24,8,16]) -> f32[1,24,16,16]'* ]]
	[[ "$output" == *'Softmax('*') {axis=3} : (f32[1,24,16,16])'* ]]
	# the output's Transpose [0,2,1,3] of [8,3,16,8] (3 of 64 lanes) runs
	# on [1,8,3,16,8], its windows on the lanes, between the two views
	[[ "$output" == *'%a_rows = Reshape(%a_fold) {shape=[1,8,3,16,8]}'* ]]
	[[ "$output" == *'Transpose(%a_rows) {perm=[0,1,3,2,4]} : (f32[1,8,3,16,8]) -> f32[1,8,16,3,8]'* ]]
	[[ "$output" == *'%ar = Reshape(%at_rows) {shape=[8,16,24]}'* ]]
	# the Q/K/V split's Transpose would put 3 on the lanes that way: as it is
	[[ "$output" == *'Transpose(%qkv2) {perm=[2,0,3,1,4]} : (f32[8,16,3,3,8]) -> f32[3,8,3,16,8]'* ]]
	# the bias [1,3,16,16] on the row view [8, 3*16, 16], as it is
	[[ "$output" == *'Add(%'*', @relbias_rows) : (f32[8,48,16], f32[1,48,16]) -> f32[8,48,16]'* ]]
	# the mask [1,4,1,16,16] varies by window, not by head: tiled to the
	# 4 windows' 3 heads (its op's lane axis has 4 channels)
	[[ "$output" == *'Add(%'*', @mask_fold) : (f32[1,24,16,16], f32[1,24,16,16])'* ]]
	[ "$(grep -c 'Reshape(' <<<"$output")" -eq 8 ]
	# the same values as the unfolded graph, and numpy's within rounding
	same_values "$T/m/input.npz"
	awk -v d="$(npz_maxdiff "$T/c.npz" "$T/m/ref.npz")" 'BEGIN { exit !(d < 1e-5) }'
	# without merge-layout nothing folds
	top-opt --passes=remove-identity,fold-const "$T/o.top" -o "$T/n.top"
	run ir-print "$T/n.top"
	[[ "$output" != *'_fold'* ]]
	[[ "$output" == *'Softmax(%sw) {axis=3} : (f32[8,3,16,16])'* ]]
}

@test "folded window attention in int8, bf16 and f32: tpu-sim and ir-run bit-identical" {
	$PY "$BATS_TEST_DIRNAME/fixtures/make_winattn.py" "$T/m"
	onnx2top "$T/m/model.onnx" -o "$T/o.top"
	top-opt "$T/o.top" -o "$T/c.top"
	calibrate "$T/c.top" -d "$T/m/calib.npz" -o "$T/t.table" 2>/dev/null
	for mode in int8 bf16 f32; do
		top2tpu "$T/c.top" --chip tpu-a --mode $mode --calib "$T/t.table" -o "$T/l.tpu"
		if [ $mode = int8 ]; then
			run ir-print "$T/l.tpu"
			[[ "$output" == *'= Softmax(%'*') {axis=3, lut='*'-> u8[1,24,16,16]'* ]]
		fi
		sim_as_ir "$T/m/input.npz"
	done
	# f32 on the chip: numpy's values within rounding
	awk -v d="$(npz_maxdiff "$T/sim.npz" "$T/m/ref.npz")" 'BEGIN { exit !(d < 1e-5) }'
}

@test "one window: the heads already are the lane axis, nothing folds" {
	$PY "$BATS_TEST_DIRNAME/fixtures/make_winattn.py" "$T/m" 1
	onnx2top "$T/m/model.onnx" -o "$T/o.top"
	top-opt "$T/o.top" -o "$T/c.top"
	run ir-print "$T/c.top"
	[[ "$output" != *'_fold'* ]]
	[[ "$output" == *'Softmax(%sb) {axis=3} : (f32[1,3,16,16])'* ]]
}

@test "128 windows: 384 channels; the mask Add, already on 64 windows, keeps its constant untiled" {
	$PY "$BATS_TEST_DIRNAME/fixtures/make_winattn.py" "$T/m" 128
	onnx2top "$T/m/model.onnx" -o "$T/o.top"
	top-opt "$T/o.top" -o "$T/c.top"
	run ir-print "$T/c.top"
	[[ "$output" == *'Add(%sv, @mask) : (f32[2,64,3,16,16], f32[1,64,1,16,16])'* ]]
	[[ "$output" == *'Add(%'*', @relbias_rows) : (f32[128,48,16], f32[1,48,16])'* ]]
	[[ "$output" == *'Softmax('*') {axis=3} : (f32[1,384,16,16])'* ]]
	same_values "$T/m/input.npz"
}

@test "a block on 8 windows of 16 tokens runs on the row view [1,128,24]: every op between the two views, values unchanged" {
	$PY "$BATS_TEST_DIRNAME/fixtures/make_rowview.py" "$T/m"
	onnx2top "$T/m/model.onnx" -o "$T/o.top"
	top-opt "$T/o.top" -o "$T/c.top"
	run ir-print "$T/c.top"
	# the window partition's view goes straight to the rows; the residual
	# Add reads the same view as the LayerNorm
	[[ "$output" == *'%xw_rows = Reshape(%xt) {shape=[1,128,24]} : (f32[1,4,32,24]) -> f32[1,128,24]'* ]]
	[[ "$output" == *'LayerNormalization(%xw_rows, @g, @b) {epsilon=1e-05, axis=2} : (f32[1,128,24]'* ]]
	[[ "$output" == *'MatMul(%'*', @w1) : (f32[1,128,24], f32[24,48]) -> f32[1,128,48]'* ]]
	[[ "$output" == *'Tanh(%'*') : (f32[1,128,48])'* ]]
	[[ "$output" == *'Add(%xw_rows, %'*') : (f32[1,128,24], f32[1,128,24]) -> f32[1,128,24]'* ]]
	[[ "$output" == *'%rb = Reshape(%r_rows) {shape=[1,4,32,24]}'* ]]
	# two views, as before: none added
	[ "$(grep -c 'Reshape(' <<<"$output")" -eq 2 ]
	[[ "$output" != *'[1,8,16,'* ]]
	same_values "$T/m/input.npz"
	awk -v d="$(npz_maxdiff "$T/c.npz" "$T/m/ref.npz")" 'BEGIN { exit !(d < 1e-5) }'
	# on the chip: tpu-sim and ir-run bit-identical
	chip_as_ir "$T/m/calib.npz" "$T/m/input.npz" int8 bf16
}

@test "a Conv also reading the block's LayerNorm: the block stays on [1,8,16,24]" {
	$PY "$BATS_TEST_DIRNAME/fixtures/make_rowview.py" "$T/m" conv
	onnx2top "$T/m/model.onnx" -o "$T/o.top"
	top-opt "$T/o.top" -o "$T/c.top"
	run ir-print "$T/c.top"
	[[ "$output" != *'_rows'* ]]
	[[ "$output" == *'LayerNormalization(%xw, @g, @b) {epsilon=1e-05, axis=3} : (f32[1,8,16,24]'* ]]
	ir-run "$T/c.top" -i "$T/m/input.npz" -o "$T/c.npz"
	awk -v d="$(npz_maxdiff "$T/c.npz" "$T/m/ref.npz")" 'BEGIN { exit !(d < 1e-5) }'
}

@test "a view back to the shape of the view it reads is that view's input, though the view has other readers" {
	$PY - "$T/v.onnx" <<'PYEOF'
import sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4])
ys = [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("a", "b")]
s1 = numpy_helper.from_array(np.array([6, 4], np.int64), "s1")
s2 = numpy_helper.from_array(np.array([2, 3, 4], np.int64), "s2")
nodes = [helper.make_node("Reshape", ["x", "s1"], ["v"]),
         helper.make_node("Relu", ["v"], ["a"]),
         helper.make_node("Reshape", ["v", "s2"], ["w"]),
         helper.make_node("Tanh", ["w"], ["b"])]
m = helper.make_model(helper.make_graph(nodes, "views", [x], ys, [s1, s2]),
                      opset_imports=[helper.make_opsetid("", 17)])
onnx.save(m, sys.argv[1])
PYEOF
	onnx2top "$T/v.onnx" | top-opt -o "$T/c.top"
	run ir-print "$T/c.top"
	[[ "$output" == *'%b = Tanh(%x) : (f32[2,3,4])'* ]]
	[ "$(grep -c 'Reshape(' <<<"$output")" -eq 1 ]
}

@test "a grid partition's swap after its Transpose and merging view: one Transpose, then the view" {
	# x [1,8,4,2,4,2] -> Transpose [0,2,4,3,5,1] -> [1,4,4,2,2,8], viewed
	# as [1,16,4,8] (merged runs), then swapped [0,2,1,3] -> [1,4,16,8]
	$PY - "$T/g.onnx" <<'PYEOF'
import sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 4, 2, 4, 2])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
s = numpy_helper.from_array(np.array([1, 16, 4, 8], np.int64), "s")
nodes = [helper.make_node("Transpose", ["x"], ["t"], perm=[0, 2, 4, 3, 5, 1]),
         helper.make_node("Reshape", ["t", "s"], ["v"]),
         helper.make_node("Transpose", ["v"], ["w"], perm=[0, 2, 1, 3]),
         helper.make_node("Relu", ["w"], ["y"])]
m = helper.make_model(helper.make_graph(nodes, "grid", [x], [y], [s]),
                      opset_imports=[helper.make_opsetid("", 17)])
onnx.save(m, sys.argv[1])
x = np.random.default_rng(1).standard_normal((1, 8, 4, 2, 4, 2)).astype(np.float32)
np.savez(sys.argv[1] + ".in.npz", x=x)
t = x.transpose(0, 2, 4, 3, 5, 1).reshape(1, 16, 4, 8).transpose(0, 2, 1, 3)
np.savez(sys.argv[1] + ".ref.npz", y=np.maximum(t, 0))
PYEOF
	onnx2top "$T/g.onnx" | top-opt -o "$T/c.top"
	run ir-print "$T/c.top"
	# the runs (4,2) and (4,2) of the merged axes trade places before the view
	[[ "$output" == *'Transpose(%x) {perm=[0,3,5,2,4,1]} : (f32[1,8,4,2,4,2]) -> f32[1,2,2,4,4,8]'* ]]
	[[ "$output" == *'Reshape(%'*') {shape=[1,4,16,8]} : (f32[1,2,2,4,4,8]) -> f32[1,4,16,8]'* ]]
	[ "$(grep -c 'Transpose(' <<<"$output")" -eq 1 ]
	ir-run "$T/c.top" -i "$T/g.onnx.in.npz" -o "$T/c.npz"
	[ "$(npz_maxdiff "$T/c.npz" "$T/g.onnx.ref.npz")" = 0.0 ]
}

@test "a grid departition's swap before its splitting view and Transpose: the input splits, one Transpose; the token-wise ops before run on the row view" {
	# [1,64,8] viewed as 4 windows of 16 tokens, a MatMul and bias per
	# token, the swap [0,2,1,3] -> [1,16,4,8], the view [1,4,4,2,2,8]
	# that splits both axes and the Transpose back to channels first
	$PY - "$T/d.onnx" <<'PYEOF'
import sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
r = np.random.default_rng(2)
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64, 8])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
w = r.standard_normal((8, 8)).astype(np.float32)
b = r.standard_normal(8).astype(np.float32)
inits = [numpy_helper.from_array(np.array([1, 4, 16, 8], np.int64), "s0"),
         numpy_helper.from_array(np.array([1, 4, 4, 2, 2, 8], np.int64), "s1"),
         numpy_helper.from_array(np.array([1, 8, 8, 8], np.int64), "s2"),
         numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")]
nodes = [helper.make_node("Reshape", ["x", "s0"], ["v"]),
         helper.make_node("MatMul", ["v", "w"], ["m"]),
         helper.make_node("Add", ["m", "b"], ["a"]),
         helper.make_node("Transpose", ["a"], ["t"], perm=[0, 2, 1, 3]),
         helper.make_node("Reshape", ["t", "s1"], ["u"]),
         helper.make_node("Transpose", ["u"], ["z"], perm=[0, 5, 1, 3, 2, 4]),
         helper.make_node("Reshape", ["z", "s2"], ["y"])]
m = helper.make_model(helper.make_graph(nodes, "grid", [x], [y], inits),
                      opset_imports=[helper.make_opsetid("", 17)])
onnx.save(m, sys.argv[1])
xv = r.standard_normal((1, 64, 8)).astype(np.float32)
np.savez(sys.argv[1] + ".in.npz", x=xv)
PYEOF
	onnx2top "$T/d.onnx" -o "$T/o.top"
	ir-run "$T/o.top" -i "$T/d.onnx.in.npz" -o "$T/o.npz"
	top-opt "$T/o.top" -o "$T/c.top"
	run ir-print "$T/c.top"
	# the MatMul and its bias on [1,64,8] (64 lanes, not 4); the swap's
	# runs (4) and (4,4) trade places in the one Transpose left
	[[ "$output" == *'MatMul(%x, @w) : (f32[1,64,8], f32[8,8]) -> f32[1,64,8]'* ]]
	[[ "$output" == *'Reshape(%'*') {shape=[1,2,2,4,4,8]} : (f32[1,64,8]) -> f32[1,2,2,4,4,8]'* ]]
	[[ "$output" == *'Transpose(%'*') {perm=[0,5,3,1,4,2]} : (f32[1,2,2,4,4,8]) -> f32[1,8,4,2,4,2]'* ]]
	[ "$(grep -c 'Transpose(' <<<"$output")" -eq 1 ]
	ir-run "$T/c.top" -i "$T/d.onnx.in.npz" -o "$T/c.npz"
	[ "$(npz_maxdiff "$T/c.npz" "$T/o.npz")" = 0.0 ]
}

# A YOLO head: the Conv's [1, 3*K, H, W] viewed as [1, 3, K, H, W] and
# transposed to [1, 3, H, W, K], then decoded by Sigmoid, Slices of the
# last axis, elementwise ops with a grid [1, 1, H, W, 2] and anchors
# [1, 3, 1, 1, 2], and a Concat of the last axis: 3 channels on the lanes.
# An activation of rank 5 starts the fold, which takes the Slices, the Pow
# and the Concat along: all of it on [1, 3*H, W, K] (the grid's Add on the
# row view [3, H*W, 2]), one view back after the Concat.  The Transpose
# runs on the 3 blocks [K, H, W], K channels on the lanes, not 3.
@test "a YOLO head's decode folds onto [1, 3*H, W, K]: Slices, Pow, Concat and constants along, values unchanged, int8 tpu-sim as ir-run" {
	$PY - "$T" <<'PYEOF'
import sys, numpy as np, onnx
from onnx import helper as h, numpy_helper as nh, TensorProto as TP
d = sys.argv[1]
r = np.random.default_rng(3)
A, K, H, W = 3, 7, 8, 8
i64 = lambda n, v: nh.from_array(np.array(v, np.int64), n)
f32 = lambda n, v: nh.from_array(np.array(v, np.float32), n)
grid = r.integers(0, 8, (1, 1, H, W, 2)).astype(np.float32)
anchors = r.uniform(1, 4, (1, A, 1, 1, 2)).astype(np.float32)
nodes = [
    h.make_node('Reshape', ['x', 'shp'], ['x5'], name='view5'),
    h.make_node('Transpose', ['x5'], ['xt'], name='tr', perm=[0, 1, 3, 4, 2]),
    h.make_node('Sigmoid', ['xt'], ['s'], name='sig'),
    h.make_node('Slice', ['s', 'z', 'two', 'ax'], ['xy'], name='sxy'),
    h.make_node('Mul', ['xy', 'k2'], ['xy2'], name='xy2'),
    h.make_node('Sub', ['xy2', 'half'], ['xy3'], name='xy3'),
    h.make_node('Add', ['xy3', 'grid'], ['xy4'], name='xy4'),
    h.make_node('Slice', ['s', 'two', 'four', 'ax'], ['wh'], name='swh'),
    h.make_node('Mul', ['wh', 'k2'], ['wh2'], name='wh2'),
    h.make_node('Pow', ['wh2', 'k2'], ['wh3'], name='wh3'),
    h.make_node('Mul', ['wh3', 'anchors'], ['wh4'], name='wh4'),
    h.make_node('Slice', ['s', 'four', 'big', 'ax'], ['cls'], name='scls'),
    h.make_node('Concat', ['xy4', 'wh4', 'cls'], ['cat'], name='cat', axis=4),
    h.make_node('Reshape', ['cat', 'oshp'], ['y'], name='flat'),
]
g = h.make_graph(nodes, 'yolohead', [h.make_tensor_value_info('x', TP.FLOAT, [1, A * K, H, W])],
                 [h.make_tensor_value_info('y', TP.FLOAT, [1, A * H * W, K])],
                 [i64('shp', [1, A, K, H, W]), i64('oshp', [1, A * H * W, K]), i64('z', [0]),
                  i64('two', [2]), i64('four', [4]), i64('big', [1 << 62]), i64('ax', [4]),
                  f32('k2', 2), f32('half', 0.5), nh.from_array(grid, 'grid'),
                  nh.from_array(anchors, 'anchors')])
onnx.save(h.make_model(g, opset_imports=[h.make_opsetid('', 13)]), d + '/yolo.onnx')
x = r.standard_normal((1, A * K, H, W)).astype(np.float32)
np.savez(d + '/in.npz', x=x)
np.savez(d + '/cal.npz', x=r.standard_normal((4, A * K, H, W)).astype(np.float32))
PYEOF
	onnx2top "$T/yolo.onnx" -o "$T/o.top"
	top-opt "$T/o.top" -o "$T/c.top"
	run ir-print "$T/c.top"
	# the Transpose of 3 blocks [7, 8, 8]: batch first, 7 and 8 lanes, not 3
	[[ "$output" == *'Transpose('*') {perm=[0,2,3,1]} : (f32[3,7,8,8]) -> f32[3,8,8,7]'* ]]
	[[ "$output" == *'Sigmoid(%xt_fold) : (f32[1,24,8,7]) -> f32[1,24,8,7]'* ]]
	[[ "$output" == *'{starts=[4], ends=[4611686018427387904], axes=[3], steps=[1]} : (f32[1,24,8,7]) -> f32[1,24,8,3]'* ]]
	[[ "$output" == *'Pow('*' : (f32[1,24,8,2], f32[1,1,1,1]) -> f32[1,24,8,2]'* ]]
	# the grid [1,1,8,8,2] on the row view [3, 64, 2], as it is
	[[ "$output" == *'@grid_rows) : (f32[3,64,2], f32[1,64,2])'* ]]
	[[ "$output" == *'@anchors_fold) : (f32[1,24,8,2], f32[1,24,1,2])'* ]]
	[[ "$output" == *'Concat('*') {axis=3} : (f32[1,24,8,2], f32[1,24,8,2], f32[1,24,8,3]) -> f32[1,24,8,7]'* ]]
	# views: the head's [1,21,8,8] to the blocks, the Transpose's output
	# folded, into and out of the grid's row view, the Concat's to the
	# output
	[ "$(grep -c 'Reshape(' <<<"$output")" -eq 5 ]
	same_values "$T/in.npz"
	chip_as_ir "$T/cal.npz" "$T/in.npz" int8
	# the Transpose and the whole decode in one local group
	run ir-print "$T/a.tpu"
	local grp
	grp=$(sed -n 's/.*= Transpose(.*group \([0-9]*\), local.*/\1/p' <<<"$output")
	[ -n "$grp" ]
	grep -q "= Concat(.*group $grp, local" <<<"$output"
}

# MaxViT's heads split for its one window at 7 x 7: [1, 49, C] viewed as
# [1, 1, 49, heads, D] and transposed to [1, 1, heads, 49, D]: one lane of
# 64 in use, 49 and heads rows in it.  The Transpose runs on the views
# without the unit axis, [1, 49, heads, D] -> [1, heads, 49, D], and the
# view after it goes.
@test "a Transpose between views of [1, 1, 49, 4, 16] runs without the unit axis: 49 and 4 lanes, not 1; values unchanged, int8 tpu-sim as ir-run" {
	$PY - "$T" <<'PYEOF'
import sys, numpy as np, onnx
from onnx import helper as h, numpy_helper as nh, TensorProto as TP
d = sys.argv[1]
r = np.random.default_rng(5)
i64 = lambda n, v: nh.from_array(np.array(v, np.int64), n)
nodes = [
    h.make_node('Reshape', ['x', 'shp'], ['x5'], name='split'),
    h.make_node('Transpose', ['x5'], ['xt'], name='tr', perm=[0, 1, 3, 2, 4]),
    h.make_node('Reshape', ['xt', 'hshp'], ['xh'], name='heads'),
    h.make_node('Softmax', ['xh'], ['y'], name='sm', axis=3),
]
g = h.make_graph(nodes, 'unitview', [h.make_tensor_value_info('x', TP.FLOAT, [1, 49, 64])],
                 [h.make_tensor_value_info('y', TP.FLOAT, [1, 4, 49, 16])],
                 [i64('shp', [1, 1, 49, 4, 16]), i64('hshp', [1, 4, 49, 16])])
onnx.save(h.make_model(g, opset_imports=[h.make_opsetid('', 13)]), d + '/u.onnx')
np.savez(d + '/in.npz', x=r.standard_normal((1, 49, 64)).astype(np.float32))
np.savez(d + '/cal.npz', x=r.standard_normal((4, 49, 64)).astype(np.float32))
PYEOF
	onnx2top "$T/u.onnx" -o "$T/o.top"
	top-opt "$T/o.top" -o "$T/c.top"
	run ir-print "$T/c.top"
	[[ "$output" == *'%x5_rows = Reshape(%x) {shape=[1,49,4,16]}'* ]]
	[[ "$output" == *'Transpose(%x5_rows) {perm=[0,2,1,3]} : (f32[1,49,4,16]) -> f32[1,4,49,16]'* ]]
	[[ "$output" == *'Softmax(%xt_rows) {axis=3}'* ]]
	[ "$(grep -c 'Reshape(' <<<"$output")" -eq 1 ]
	same_values "$T/in.npz"
	chip_as_ir "$T/cal.npz" "$T/in.npz" int8
	# without merge-layout the unit axis stays
	top-opt --passes=remove-identity,fold-const "$T/o.top" -o "$T/n.top"
	run ir-print "$T/n.top"
	[[ "$output" == *'Transpose(%x5) {perm=[0,1,3,2,4]} : (f32[1,1,49,4,16]) -> f32[1,1,4,49,16]'* ]]
}
