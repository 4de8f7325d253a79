#!/usr/bin/env bats
# Dynamic shapes (issues 11 and 14): outputs whose extents depend on the
# data (NonZero, NonMaxSuppression, a Loop of a run-time trip count, an
# empty tensor) in ir-run against numpy, and through the back end: those
# ops on the host, the static ones around them on the chip, tpu-sim bit for
# bit as ir-run in f32 and int8; models of tests/fixtures/dyn_models.py,
# and in the full tier torchvision's SSDlite against onnxruntime.
load helpers

bats_require_minimum_version 1.5.0

setup_file() {
	export FX="$BATS_FILE_TMPDIR/fx"
	mkdir -p "$FX"
	/usr/bin/python3 "$BATS_TEST_DIRNAME/fixtures/dyn_models.py" "$FX"
}

setup() {
	T=$BATS_TEST_TMPDIR
}

# deploy MODEL MODE [VAR=VALUE...]: the whole flow through deploy.mk into
# $T/MODEL-MODE (with $TAG after it when set), tpu-sim bit for bit as
# ir-run on the Tpu IR
deploy() {
	local m=$1 mode=$2 out=$T/$1-$2${TAG:-}
	shift 2
	deploy_mk MODEL="$FX/$m.onnx" INPUT="$FX/${m}_in.npz" CALIB="$FX/${m}_cal.npz" MODE=$mode \
		OUT="$out" "$@"
	assert_success
	cmp "$out/tpu_out.npz" "$out/sim_out.npz"
}

@test "dynamic shapes: a detection head with NMS (symbolic batch), a Loop of a run-time trip count, an empty tensor match numpy in ir-run" {
	for m in det loop empty; do
		onnx2top "$FX/$m.onnx" --shapes-from "$FX/${m}_in.npz" -o "$T/$m.top"
		top-opt "$T/$m.top" -o "$T/$m.opt"
		ir-run "$T/$m.opt" -i "$FX/${m}_in.npz" -o "$T/$m.npz"
		assert_close "$T/$m.npz" "$FX/${m}_expect.npz"
	done
	# the extents found at run time: 7 detections, 5 iterations, no hit
	run $PY -c 'import numpy as np, sys
print(*[np.load(sys.argv[i])[k].shape for i, k in ((1, "boxes"), (2, "trace"), (3, "picked"))])' \
		"$T/det.npz" "$T/loop.npz" "$T/empty.npz"
	assert_output '(7, 4) (5, 1, 4) (0, 4)'
	# the IR marks the dimensions known only at run time
	run ir-print "$T/det.opt"
	assert_line --regexp '^  %sel = NonMaxSuppression\(.*-> i64\[15\?,3\]'
	assert_line --regexp '^  %boxes = GatherND\(.*-> f32\[15\?,4\]'
	run ir-print "$T/loop.opt"
	assert_line --regexp '^  %hn, %trace = Loop\(%n, none, %h0\) .* -> \(f32\[1,4,8,8\], f32\[1\?,1,4\]\)'
}

@test "dynamic shapes: NMS of 900 run-time boxes per class (infinite, of no area, corners either way) keeps exactly numpy's boxes at IoU thresholds 0.5, 0 and -0.1" {
	onnx2top "$FX/nms.onnx" -o "$T/nms.top"
	for c in a b c; do
		ir-run "$T/nms.top" -i "$FX/nms_in_$c.npz" -o "$T/nms_$c.npz"
	done
	run $PY -c 'import numpy as np, sys
for c in "abc":
    a, b = (np.load("%s/%s_%s.npz" % (d, n, c))["sel"] for d, n in ((sys.argv[1], "nms"), (sys.argv[2], "nms_expect")))
    print(c, len(b), a.shape == b.shape and bool((a == b).all()))' "$T" "$FX"
	assert_output "$(printf 'a 2356 True\nb 450 True\nc 3 True')"
}

@test "dynamic shapes: the same Loop runs 3 and 0 iterations without recompiling, in ir-run and on tpu-sim" {
	deploy loop f32
	for n in 3 0; do
		ir-run "$T/loop-f32/lowered.tpu" -i "$FX/loop_in$n.npz" -o "$T/tpu$n.npz"
		tpu-sim "$T/loop-f32/model.tmodel" -i "$FX/loop_in$n.npz" -o "$T/sim$n.npz"
		cmp "$T/tpu$n.npz" "$T/sim$n.npz"
		assert_close "$T/sim$n.npz" "$FX/loop_expect$n.npz"
	done
}

@test "dynamic shapes on the chip's side: NMS, Gather of the kept boxes, the run-time Loop and the empty tensor on the host, the Convs on the chip, tpu-sim as ir-run in f32, int8 and mixed" {
	for m in det loop empty; do
		for mode in f32 int8; do
			deploy $m $mode
		done
		assert_close "$T/$m-f32/sim_out.npz" "$FX/${m}_expect.npz"
	done
	# int8: the detections of the float model, the same count and classes
	$PY "$BATS_TEST_DIRNAME/det_compare.py" "$T/det-int8/sim_out.npz" "$FX/det_expect.npz" scores 0.999 0.01
	run ir-print "$T/det-int8/addressed.tpu"
	assert_line --regexp '^  %sel = NonMaxSuppression\(.*// group [0-9]+, host'
	assert_line --regexp '^  %boxes = GatherND\(.*// group [0-9]+, host'
	assert_output --regexp '= Conv\(.*// group [0-9]+, (local|global)'
	# the dynamic tensors live in the host's memory: no DDR address
	refute_output --regexp '%boxes at 0x'
	run ir-print "$T/loop-int8/addressed.tpu"
	assert_line --regexp '^  %hn, %trace = Loop\(.*// group [0-9]+, host'
	assert_line --regexp '^  %z(_i8)?(_fill)? = Conv\(.*// group [0-9]+, (local|global)'
	# mixed precision: the head's Conv in f32, one in bf16, the rest int8
	printf 'Conv_c2 bf16\nConv_head f32\n' >"$T/q.txt"
	TAG=-mixed deploy det int8 QTABLE="$T/q.txt"
	run ir-print "$T/det-int8-mixed/lowered.tpu"
	assert_output --regexp '%r2 = Conv\(.*-> bf16\['
	assert_output --regexp '%head = Conv\(.*-> f32\['
	# tpu-sim -p: the host's time apart from the chip's cycles
	run --separate-stderr tpu-sim "$T/det-int8/model.tmodel" -i "$FX/det_in.npz" -o /dev/null -p
	assert_success
	assert_regex "$stderr" 'host: 5 commands, [0-9.]+ ms on this machine \(not in the cycles\)'
}

# SSDlite's post-processing concatenates ~90 dynamic parts: a Concat of
# more inputs than a compute command has operand slots, on the host,
# whose command has none: it runs whole, not split into parts.
@test "dynamic shapes: a Concat of 9 dynamic inputs runs whole on the host, tpu-sim as ir-run and as numpy" {
	$PY - "$FX" <<'PYEOF'
import sys, numpy as np, onnx
from onnx import helper as h, numpy_helper as nh, TensorProto as TP
d = sys.argv[1]
parts = ['p%d' % i for i in range(9)]
nodes = [h.make_node('Greater', ['a', 'zero'], ['m'], name='pos'),
         h.make_node('NonZero', ['m'], ['nz'], name='nonzero'),
         h.make_node('Cast', ['nz'], ['nzf'], name='tofloat', to=TP.FLOAT)]
nodes += [h.make_node('Mul', ['nzf', 'k%d' % i], [p], name='scale%d' % i) for i, p in enumerate(parts)]
nodes += [h.make_node('Concat', parts, ['y'], name='cat', axis=1)]
inits = [nh.from_array(np.float32(0), 'zero')]
inits += [nh.from_array(np.float32(i + 1), 'k%d' % i) for i in range(9)]
g = h.make_graph(nodes, 'widecat', [h.make_tensor_value_info('a', TP.FLOAT, [16])],
                 [h.make_tensor_value_info('y', TP.FLOAT, None)], inits)
onnx.save(h.make_model(g, opset_imports=[h.make_opsetid('', 13)]), d + '/widecat.onnx')
r = np.random.default_rng(2)
a = r.standard_normal(16).astype(np.float32)
np.savez(d + '/widecat_in.npz', a=a)
np.savez(d + '/widecat_cal.npz', a=r.standard_normal((4, 16)).astype(np.float32))
nz = np.stack(np.nonzero(a > 0)).astype(np.float32)
np.savez(d + '/widecat_expect.npz', y=np.concatenate([nz * (i + 1) for i in range(9)], 1))
PYEOF
	deploy widecat f32
	deploy widecat int8
	assert_close "$T/widecat-f32/sim_out.npz" "$FX/widecat_expect.npz"
	run ir-print "$T/widecat-f32/addressed.tpu"
	assert_line --regexp '^  %y = Concat\(%p0, %p1, %p2, %p3, %p4, %p5, %p6, %p7, %p8\) .*// group [0-9]+, host'
	refute_output --partial '_part'
}

# Faster R-CNN keeps its first 100 detections by a Slice [0:100] of a
# dynamic tensor: a run with fewer rows keeps fewer, so the slice's output
# is dynamic too (not a static [100] padded with zeros), as onnxruntime
# gives it.
@test "dynamic shapes: a Slice [0:48] of a dynamic axis is dynamic, 3 rows when 3 were found, tpu-sim as ir-run" {
	$PY - "$FX" <<'PYEOF'
import sys, numpy as np, onnx
from onnx import helper as h, numpy_helper as nh, TensorProto as TP
d = sys.argv[1]
i64 = lambda n, v: nh.from_array(np.array(v, np.int64), n)
nodes = [h.make_node('Greater', ['a', 'zero'], ['m'], name='pos'),
         h.make_node('NonZero', ['m'], ['nz'], name='nonzero'),
         h.make_node('Slice', ['nz', 's0', 's1', 'ax'], ['first'], name='first12'),
         h.make_node('Cast', ['first'], ['f'], name='tofloat', to=TP.FLOAT),
         h.make_node('Mul', ['f', 'two'], ['y'], name='twice')]
g = h.make_graph(nodes, 'under', [h.make_tensor_value_info('a', TP.FLOAT, [64])],
                 [h.make_tensor_value_info('y', TP.FLOAT, None)],
                 [nh.from_array(np.float32(0), 'zero'), nh.from_array(np.float32(2), 'two'),
                  i64('s0', [0]), i64('s1', [48]), i64('ax', [1])])
onnx.save(h.make_model(g, opset_imports=[h.make_opsetid('', 13)]), d + '/under.onnx')
a = -np.ones(64, np.float32)
a[[3, 9, 30]] = 1
np.savez(d + '/under_in.npz', a=a)
np.savez(d + '/under_cal.npz', a=np.stack([a, a]))
np.savez(d + '/under_expect.npz', y=np.float32([[6, 18, 60]]))
PYEOF
	deploy under f32
	deploy under int8
	assert_close "$T/under-f32/sim_out.npz" "$FX/under_expect.npz"
	run ir-print "$T/under-f32/addressed.tpu"
	assert_line --regexp '^  %first = Slice\(%nz\) .*-> i64\[1,48\?\] .*// group [0-9]+, host'
}

# A shape built of a run-time extent and static ones ([n, 4]: Faster
# R-CNN's [n, 256, 7, 7] of its RoIs) gives static extents where its value
# is known: the MatMul after it takes a static inner dimension.  A
# Reshape to it of a Flatten stays two ops (top-opt would merge them into
# one of a static shape).
@test "dynamic shapes: ConstantOfShape, Reshape and Expand of [n, 4] with n found at run time keep 4 static" {
	$PY - "$FX" <<'PYEOF'
import sys, numpy as np, onnx
from onnx import helper as h, numpy_helper as nh, TensorProto as TP
d = sys.argv[1]
i64 = lambda n, v: nh.from_array(np.array(v, np.int64), n)
w = np.arange(12, dtype=np.float32).reshape(4, 3) / 10
nodes = [h.make_node('Greater', ['a', 'zero'], ['m'], name='pos'),
         h.make_node('NonZero', ['m'], ['nz'], name='nonzero'),
         h.make_node('Shape', ['nz'], ['s'], name='shape'),
         h.make_node('Gather', ['s', 'one'], ['n'], name='count', axis=0),
         h.make_node('Concat', ['n', 'four'], ['n4'], name='n4', axis=0),
         h.make_node('ConstantOfShape', ['n4'], ['ones'], name='cos',
                     value=nh.from_array(np.float32([1]), 'v')),
         h.make_node('Cast', ['nz'], ['nzf'], name='tofloat', to=TP.FLOAT),
         h.make_node('Transpose', ['nzf'], ['nzt'], name='column', perm=[1, 0]),
         h.make_node('Expand', ['nzt', 'n4'], ['ex'], name='expand'),
         h.make_node('Concat', ['nzf', 'nzf', 'nzf', 'nzf'], ['cat'], name='cat', axis=0),
         h.make_node('Flatten', ['cat'], ['flat'], name='flat', axis=0),
         h.make_node('Reshape', ['flat', 'n4'], ['re'], name='reshape'),
         h.make_node('Add', ['ones', 'ex'], ['s1'], name='add1'),
         h.make_node('Add', ['s1', 're'], ['s2'], name='add2'),
         h.make_node('MatMul', ['s2', 'w'], ['y'], name='mm')]
g = h.make_graph(nodes, 'n4', [h.make_tensor_value_info('a', TP.FLOAT, [16])],
                 [h.make_tensor_value_info('y', TP.FLOAT, None)],
                 [nh.from_array(np.float32(0), 'zero'), i64('one', [1]), i64('four', [4]),
                  nh.from_array(w, 'w')])
onnx.save(h.make_model(g, opset_imports=[h.make_opsetid('', 13)]), d + '/n4.onnx')
a = -np.ones(16, np.float32)
a[[2, 5, 11]] = 1
np.savez(d + '/n4_in.npz', a=a)
np.savez(d + '/n4_cal.npz', a=np.stack([a, a]))
nz = np.stack(np.nonzero(a > 0)).astype(np.float32)
s2 = 1 + np.broadcast_to(nz.T, (3, 4)) + np.concatenate([nz] * 4).reshape(3, 4)
np.savez(d + '/n4_expect.npz', y=(s2 @ w).astype(np.float32))
PYEOF
	deploy n4 f32
	assert_close "$T/n4-f32/sim_out.npz" "$FX/n4_expect.npz"
	run ir-print "$T/n4-f32/canonical.top"
	assert_line --regexp '^  %ones = ConstantOfShape\(%n4\) .*-> f32\[1\?,4\]'
	assert_line --regexp '^  %re = Reshape\(%flat, %n4\) .*-> f32\[1\?,4\]'
}

# Mask R-CNN pastes its masks by a Loop over the detections whose carried
# list starts as a constant empty tensor, and joins pieces whose extents
# are known only at run time to static ones: a carried value is never a
# constant in the body, and a Concat's dynamic extent off the axis takes
# the static one's.
@test "dynamic shapes: a Loop carrying a list that starts empty, and a Concat of a dynamic and a static extent off its axis" {
	$PY - "$FX" <<'PYEOF'
import sys, numpy as np, onnx
from onnx import helper as h, numpy_helper as nh, TensorProto as TP
d = sys.argv[1]
i64 = lambda n, v: nh.from_array(np.array(v, np.int64), n)
body = h.make_graph(
    [h.make_node('Cast', ['i'], ['fi'], to=TP.FLOAT),
     h.make_node('Mul', ['fi', 'ones'], ['row']),
     h.make_node('Unsqueeze', ['row', 'zero_ax'], ['piece']),
     h.make_node('Concat', ['acc', 'piece'], ['acc_out'], axis=0),
     h.make_node('Identity', ['cond'], ['cond_out'])],
    'paste', [h.make_tensor_value_info('i', TP.INT64, []), h.make_tensor_value_info('cond', TP.BOOL, []),
              h.make_tensor_value_info('acc', TP.FLOAT, [None, 5])],
    [h.make_tensor_value_info('cond_out', TP.BOOL, []), h.make_tensor_value_info('acc_out', TP.FLOAT, [None, 5])],
    [nh.from_array(np.ones(5, np.float32), 'ones'), i64('zero_ax', [0])])
nodes = [h.make_node('Greater', ['a', 'zero'], ['m'], name='pos'),
         h.make_node('NonZero', ['m'], ['nz'], name='nonzero'),
         h.make_node('Shape', ['nz'], ['s'], name='shape'),
         h.make_node('Gather', ['s', 'one'], ['n'], name='count', axis=0),
         h.make_node('Squeeze', ['n'], ['trip'], name='trip'),
         h.make_node('Loop', ['trip', '', 'empty'], ['pasted'], name='paste', body=body),
         h.make_node('Concat', ['four', 'n'], ['shp'], name='shp', axis=0),
         h.make_node('ConstantOfShape', ['shp'], ['ones4'], name='ones4',
                     value=nh.from_array(np.float32([1]), 'v')),
         h.make_node('Concat', ['ones4', 'w'], ['joined'], name='join', axis=0)]
g = h.make_graph(nodes, 'paste', [h.make_tensor_value_info('a', TP.FLOAT, [16])],
                 [h.make_tensor_value_info('pasted', TP.FLOAT, None),
                  h.make_tensor_value_info('joined', TP.FLOAT, None)],
                 [nh.from_array(np.float32(0), 'zero'), i64('one', [1]), i64('four', [4]),
                  nh.from_array(np.zeros((0, 5), np.float32), 'empty'),
                  nh.from_array(np.arange(10, dtype=np.float32).reshape(2, 5), 'w')])
onnx.save(h.make_model(g, opset_imports=[h.make_opsetid('', 13)]), d + '/paste.onnx')
a = -np.ones(16, np.float32)
a[[1, 4, 6, 9, 15]] = 1
np.savez(d + '/paste_in.npz', a=a)
np.savez(d + '/paste_cal.npz', a=np.stack([a, a]))
np.savez(d + '/paste_expect.npz', pasted=np.repeat(np.arange(5, dtype=np.float32)[:, None], 5, 1),
         joined=np.concatenate([np.ones((4, 5), np.float32), np.arange(10, dtype=np.float32).reshape(2, 5)]))
PYEOF
	deploy paste f32
	assert_close "$T/paste-f32/sim_out.npz" "$FX/paste_expect.npz"
	assert_close "$T/paste-f32/top_out.npz" "$FX/paste_expect.npz"
}

@test "dynamic shapes: the detection head and the Loop match onnxruntime on tpu-sim (f32)" {
	ort_outputs "$FX/det.onnx" "$FX/det_in.npz" "$T/det_ort.npz"
	ort_outputs "$FX/loop.onnx" "$FX/loop_in.npz" "$T/loop_ort.npz"
	deploy det f32
	deploy loop f32
	$PY "$BATS_TEST_DIRNAME/det_compare.py" "$T/det-f32/sim_out.npz" "$T/det_ort.npz" scores
	assert_close "$T/loop-f32/sim_out.npz" "$T/loop_ort.npz"
}

@test "dynamic shapes: torchvision's SSDlite320 with its post-processing on tpu-sim matches onnxruntime (f32), int8 tpu-sim as ir-run" {
	[ "${TPUC_QUICK:-0}" != 1 ] || skip "real-size model (TPUC_QUICK=1)"
	local tv=$T/tv rc=0
	$PY "$BATS_TEST_DIRNAME/fixtures/det_torchvision.py" "$tv" >/dev/null 2>&1 || rc=$?
	[ "$rc" != 77 ] || skip "torch and torchvision are not installed"
	[ "$rc" = 0 ]
	ort_outputs "$tv/ssdlite.onnx" "$tv/input.npz" "$T/ort.npz"
	for mode in f32 int8; do
		run make --no-print-directory -f "$REPO/pipelines/deploy.mk" TPUC_BIN="$TPUC_BUILD/bin" \
			MODEL="$tv/ssdlite.onnx" INPUT="$tv/input.npz" CALIB="$tv/calib.npz" MODE=$mode \
			OUT="$T/ssd-$mode" "$T/ssd-$mode/sim_out.npz" "$T/ssd-$mode/tpu_out.npz"
		assert_success
		cmp "$T/ssd-$mode/tpu_out.npz" "$T/ssd-$mode/sim_out.npz"
	done
	run $PY "$BATS_TEST_DIRNAME/det_compare.py" "$T/ssd-f32/sim_out.npz" "$T/ort.npz" scores
	assert_success
	assert_line 'labels [50]: equal'
}

@test "dynamic shapes: tpuc(3) gives a dynamic output the extents of the run" {
	deploy det f32
	local san=
	case $TPUC_BUILD in *-san) san="-fsanitize=address,undefined" ;; esac
	cc $san -fopenmp -Wall -Wextra -Werror -I"$REPO/lib/api" "$REPO/tests/fixtures/api_dynamic.c" \
		"$TPUC_BUILD/libtpuc.a" -lprotobuf-c -lmsgpackc -ldnnl -lzstd -lzip -lm -lpthread \
		-o "$T/api_dynamic"
	run "$T/api_dynamic" "$T/det-f32/model.tmodel" "$FX/det_in.npz"
	assert_success
	assert_output "boxes dyn 1 [7,4] 28
scores dyn 1 [7] 7
classes dyn 1 [7] 7"
}
