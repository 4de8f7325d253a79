#!/usr/bin/env bats
# lowering-ops: ConvTranspose (stride, asymmetric pads, output_padding,
# groups, dilation, with and without bias) and GlobalMaxPool on the Tpu side:
# lowered in every mode and chip, close to float, and run on tpu-sim bit for
# bit as ir-run runs the Tpu IR, with layer groups and with every op alone
# (layergroup -n 1); int8 ConvTranspose per output channel and GlobalMaxPool
# on codes; the cost model's ConvTranspose on the cube; ops with no quantised
# form (masks, predicates, TopK, CumSum, GatherElements) in float.
load helpers

bats_require_minimum_version 1.5.0

# onnx_gen DIR SEED: run the Python on stdin, which writes its fixtures to d
# (= DIR), after the imports every generator here uses (np, onnx, h =
# onnx.helper, nh = onnx.numpy_helper, TP = onnx.TensorProto) and with r =
# numpy's default_rng(SEED)
onnx_gen() {
	{ printf '%s\n' 'import sys, numpy as np, onnx' \
		'from onnx import helper as h, numpy_helper as nh, TensorProto as TP' \
		'd = sys.argv[1]' "r = np.random.default_rng($2)"; cat; } | /usr/bin/python3 - "$1"
}

setup_file() {
	export DC="$BATS_FILE_TMPDIR/dc"
	mkdir -p "$DC"
	# x -> Conv+Relu (r1) -> GlobalMaxPool (m, int8 codes in int8)
	#   r1 -> ConvTranspose k3 s2 pads [1,0,1,2] output_padding 1 group 2,
	#         bias (d1) -> GlobalMaxPool (n)
	#   d1 -> Relu -> ConvTranspose k2 s2 dilation 2, no bias (y)
	# ref.npz: numpy's ConvTranspose and GlobalMaxPool on input.npz.
	onnx_gen "$DC" 7 <<'PYEOF'
w1 = r.normal(0, 0.3, (8, 4, 3, 3)).astype(np.float32)
b1 = r.normal(0, 0.1, 8).astype(np.float32)
wt1 = r.normal(0, 0.3, (8, 3, 3, 3)).astype(np.float32)
bt1 = r.normal(0, 0.1, 6).astype(np.float32)
wt2 = r.normal(0, 0.3, (6, 4, 2, 2)).astype(np.float32)
inits = [nh.from_array(a, n) for a, n in
         ((w1, 'w1'), (b1, 'b1'), (wt1, 'wt1'), (bt1, 'bt1'), (wt2, 'wt2'))]
nodes = [
    h.make_node('Conv', ['x', 'w1', 'b1'], ['c1'], name='conv1', pads=[1, 1, 1, 1]),
    h.make_node('Relu', ['c1'], ['r1'], name='relu1'),
    h.make_node('GlobalMaxPool', ['r1'], ['m'], name='gmax1'),
    h.make_node('ConvTranspose', ['r1', 'wt1', 'bt1'], ['d1'], name='deconv1', strides=[2, 2],
                pads=[1, 0, 1, 2], output_padding=[1, 1], group=2),
    h.make_node('GlobalMaxPool', ['d1'], ['n'], name='gmax2'),
    h.make_node('Relu', ['d1'], ['r2'], name='relu2'),
    h.make_node('ConvTranspose', ['r2', 'wt2'], ['y'], name='deconv2', strides=[2, 2],
                dilations=[2, 2]),
]
g = h.make_graph(nodes, 'deconv_net', [h.make_tensor_value_info('x', TP.FLOAT, [1, 4, 7, 9])],
                 [h.make_tensor_value_info(n, TP.FLOAT, None) for n in ('m', 'n', 'y')], inits)
onnx.save(h.make_model(g, opset_imports=[h.make_opsetid('', 13)]), d + '/net.onnx')

def conv(x, w, b, p):
    x = np.pad(x, ((0, 0), (0, 0), (p, p), (p, p)))
    oh, ow = x.shape[2] - w.shape[2] + 1, x.shape[3] - w.shape[3] + 1
    y = np.zeros((x.shape[0], w.shape[0], oh, ow), np.float64)
    for ky in range(w.shape[2]):
        for kx in range(w.shape[3]):
            y += np.einsum('nchw,oc->nohw', x[:, :, ky:ky + oh, kx:kx + ow], w[:, :, ky, kx])
    return y + b[None, :, None, None]

def deconv(x, w, b, s, p, op, g, dl):
    n, c, ih, iw = x.shape
    cg, k = w.shape[1], w.shape[2:]
    full = [s * (i - 1) + o + (kk - 1) * dl + 1 for i, o, kk in zip((ih, iw), op, k)]
    y = np.zeros((n, cg * g, full[0] + p[0], full[1] + p[1]), np.float64)
    for gi in range(g):
        xs = x[:, gi * (c // g):(gi + 1) * (c // g)]
        ws = w[gi * (c // g):(gi + 1) * (c // g)]
        for ky in range(k[0]):
            for kx in range(k[1]):
                v = np.einsum('nchw,co->nohw', xs, ws[:, :, ky, kx])
                y[:, gi * cg:(gi + 1) * cg, ky * dl:ky * dl + s * (ih - 1) + 1:s,
                  kx * dl:kx * dl + s * (iw - 1) + 1:s] += v
    # pads [top, left, bottom, right] crop the full output
    y = y[:, :, p[0]:full[0] - p[2], p[1]:full[1] - p[3]]
    return y + (b[None, :, None, None] if b is not None else 0)

rng = np.random.default_rng(1)
x = rng.normal(0, 1, (1, 4, 7, 9)).astype(np.float32)
np.savez(d + '/input.npz', x=x)
np.savez(d + '/calib.npz', x=np.concatenate([x, rng.normal(0, 1, (3, 4, 7, 9)).astype(np.float32)]))
r1 = np.maximum(conv(x, w1, b1, 1), 0)
d1 = deconv(r1, wt1, bt1, 2, (1, 0, 1, 2), (1, 1), 2, 1)
y = deconv(np.maximum(d1, 0), wt2, None, 2, (0, 0, 0, 0), (0, 0), 1, 2)
np.savez(d + '/ref.npz', m=r1.max(axis=(2, 3), keepdims=True).astype(np.float32),
         n=d1.max(axis=(2, 3), keepdims=True).astype(np.float32), y=y.astype(np.float32))
PYEOF
	onnx2top "$DC/net.onnx" | top-opt -o "$DC/net.top"
	calibrate "$DC/net.top" -d "$DC/calib.npz" -o "$DC/net.table" 2>/dev/null
	ir-run "$DC/net.top" -i "$DC/input.npz" -o "$DC/top.npz"
}

setup() {
	need_tool onnx2top top-opt calibrate top2tpu weight-reorder layergroup addr-assign codegen tpu-sim ir-run
	T=$BATS_TEST_TMPDIR
}

# deploy MODEL OUT [VAR=VALUE...]: $T/MODEL.onnx through deploy.mk's
# compare into $T/OUT, on $T/in.npz and $T/cal.npz, succeeding
deploy() {
	local m=$1 out=$2
	shift 2
	deploy_mk MODEL="$T/$m.onnx" INPUT="$T/in.npz" CALIB="$T/cal.npz" OUT="$T/$out" "$@"
	assert_success
}

# deploy_exact NAME OUT [VAR=VALUE...]: deploy, then tpu-sim's outputs
# equal ir-run's on the lowered IR (tpu_out.npz) byte for byte
deploy_exact() {
	deploy "$@"
	cmp "$T/$2/tpu_out.npz" "$T/$2/sim_out.npz"
}

# lower_run NAME [top2tpu options]: lower $DC/net.top into $T/NAME.tpu, run it
# with ir-run into $T/NAME.npz, compile it into $T/NAME.tmodel (layergroup
# options from $LG_OPTS) and run that on tpu-sim into $T/NAME.sim.npz.
lower_run() {
	local n=$1
	shift
	top2tpu "$DC/net.top" "$@" -o "$T/$n.tpu"
	ir-run "$T/$n.tpu" -i "$DC/input.npz" -o "$T/$n.npz"
	weight-reorder "$T/$n.tpu" | layergroup ${LG_OPTS:-} | addr-assign -q | codegen -o "$T/$n.tmodel"
	tpu-sim -q "$T/$n.tmodel" -i "$DC/input.npz" -o "$T/$n.sim.npz"
}

@test "ConvTranspose and GlobalMaxPool: the Top IR matches numpy" {
	run npz-compare "$DC/ref.npz" "$DC/top.npz" --tolerance 0.99999,0.9999
	assert_success
}

@test "float modes: both ops lower on either chip, close to float, tpu-sim bit-identical" {
	for chip in tpu-a tpu-b; do
		for m in f32 bf16 f16; do
			run lower_run $m.$chip --chip $chip --mode $m
			assert_success
			run ir-print "$T/$m.$chip.tpu"
			assert_output --regexp "= ConvTranspose\(%r1(_$m)?, @wt1, @bt1\) .*-> $m\[1,6,14,18\]"
			assert_output --regexp "= GlobalMaxPool\(%r1(_$m)?\) .*-> $m\[1,8,1,1\]"
			# the bias is added to an f32 accumulator, as Conv's
			assert_output --regexp "f32\[6\]\) -> $m\[1,6,14,18\]"
			tol=0.999; [ $m = f32 ] && tol=0.99999; [ $m = f16 ] && tol=0.9999
			run npz-compare "$DC/top.npz" "$T/$m.$chip.npz" --tolerance $tol,0.95
			assert_success
			cmp "$T/$m.$chip.npz" "$T/$m.$chip.sim.npz"
		done
	done
}

@test "int8: ConvTranspose per output channel, GlobalMaxPool the max of the codes, close to float, tpu-sim bit-identical" {
	for opts in "" "--asymmetric" "--signed-only"; do
		run lower_run q --chip tpu-a --mode int8 --calib "$DC/net.table" $opts
		assert_success
		run ir-print "$T/q.tpu"
		# ConvTranspose: i8 weight per output channel in Conv's layout
		# [C_out, C_in/group, KH, KW], i32 bias, multiplier and shift
		assert_output --regexp '= ConvTranspose\(%r1, @wt1, @bt1, @deconv1_multiplier, @deconv1_shift\) .*, i8\[6,4,3,3\], i32\[6\], i32\[6\], i32\[6\]\) -> [iu]8\[1,6,14,18\]'
		assert_output --regexp '= ConvTranspose\(%r2, @wt2, @deconv2_bias, @deconv2_multiplier, @deconv2_shift\) .*, i8\[4,6,2,2\],'
		# GlobalMaxPool keeps its input's dtype, scale and zero point
		assert_output --regexp '= GlobalMaxPool\(%r1\) : \((u8|i8)(\[1,8,[0-9,]+\])(<[^>]*>)\) -> \1\[1,8,1,1\]\3'
		run npz-compare "$DC/top.npz" "$T/q.npz" --tolerance 0.99,0.9
		assert_success
		cmp "$T/q.npz" "$T/q.sim.npz"
		# exactly the max of r1's codes: ir-run's dequantised r1 has m's values
		ir-run "$T/q.tpu" -i "$DC/input.npz" -o "$T/all.npz" --dump-all
		$PY - "$T/all.npz" <<'PYEOF'
import sys, numpy as np
a = np.load(sys.argv[1])
r1 = a['r1'].astype(np.float64)
m = a['m_i8'] if 'm_i8' in a else a['m']
assert np.array_equal(r1.max(axis=(2, 3), keepdims=True), m.astype(np.float64)), (r1.max(axis=(2, 3)), m)
PYEOF
	done
}

@test "every op alone (layergroup -n 1) and on tpu-b: tpu-sim bit-identical" {
	LG_OPTS="-n 1"
	for m in bf16 int8; do
		for chip in tpu-a tpu-b; do
			run lower_run $m.$chip --chip $chip --mode $m --calib "$DC/net.table"
			assert_success
			cmp "$T/$m.$chip.npz" "$T/$m.$chip.sim.npz"
		done
	done
	# ops with no slicing rule run whole: one slice each
	run tpu-sim "$T/int8.tpu-a.tmodel" -t -p
	assert_success
	assert_output --regexp 'ConvTranspose +1 '
	assert_output --regexp 'GlobalMaxPool +1 '
}

@test "tpu-sim costs ConvTranspose on the cube, counts its MACs, GlobalMaxPool on the vector unit" {
	run lower_run f --chip tpu-a --mode f32
	assert_success
	run tpu-sim "$T/f.tmodel" -t -p
	assert_success
	# deconv1: f32 ktile 1024 / 64 = 16; groups 2, OC 3 per group (one lane
	# tile), POS = 7 * 9 * 3 * 3 = 567, K = 8 / 2 = 4: 16 + 2 * 567 = 1150
	assert_output --regexp 'ConvTranspose +1 +1150 .* deconv1'
	# deconv2: OC 4, POS = 14 * 18 * 2 * 2 = 1008, K = 6: 16 + 1008
	assert_output --regexp 'ConvTranspose +1 +1024 .* deconv2'
	# MACs: Conv 8*4*9*63 = 18144, deconv1 8*63*3*9 = 13608, deconv2
	# 6*252*4*4 = 24192: 55944
	assert_output --partial ' 5.594e-05 GMAC'
	# GlobalMaxPool on the vector unit over its input, as GlobalAveragePool:
	# gmax2 reads [1,6,14,18] f32: 16 + 1 lane tile * 14 rows * ceil(18 / 16)
	assert_output --regexp 'GlobalMaxPool +1 +44 .* gmax2'
}

# Ops with no quantised form run in float in every mode: masks and
# predicates (Cast of an int64 mask, Greater -> Not, IsNaN -> Where), and
# TopK / CumSum / GatherElements; in int8 around quantised neighbours,
# tpu-sim bit-identical to ir-run.
@test "masks, predicates, TopK, CumSum, GatherElements lower in every mode and run on tpu-sim" {
	onnx_gen "$BATS_TEST_TMPDIR" 3 <<'PYEOF'
vi = lambda n, t, s: h.make_tensor_value_info(n, t, s)
nodes = [
    h.make_node('Cast', ['mask'], ['mf'], name='castmask', to=TP.FLOAT),
    h.make_node('Mul', ['x', 'mf'], ['xm'], name='applymask'),
    h.make_node('Greater', ['x', 'zero'], ['pos'], name='gt'),
    h.make_node('Not', ['pos'], ['neg'], name='not'),
    h.make_node('Cast', ['neg'], ['negf'], name='castneg', to=TP.FLOAT),
    h.make_node('Add', ['xm', 'negf'], ['a'], name='add'),
    h.make_node('IsNaN', ['a'], ['nan'], name='isnan'),
    h.make_node('Where', ['nan', 'zero', 'a'], ['b'], name='where'),
    h.make_node('TopK', ['b', 'k'], ['top', 'idx'], name='topk', axis=-1),
    h.make_node('CumSum', ['b', 'ax'], ['cs'], name='cumsum'),
    h.make_node('GatherElements', ['b', 'idx'], ['g'], name='gather', axis=-1),
]
inits = [nh.from_array(np.array(0, np.float32), 'zero'), nh.from_array(np.array([3], np.int64), 'k'),
         nh.from_array(np.array(-1, np.int64), 'ax')]
g = h.make_graph(nodes, 'masks', [vi('x', TP.FLOAT, [1, 4, 8]), vi('mask', TP.INT64, [1, 4, 8])],
                 [vi('top', TP.FLOAT, [1, 4, 3]), vi('idx', TP.INT64, [1, 4, 3]),
                  vi('cs', TP.FLOAT, [1, 4, 8]), vi('g', TP.FLOAT, [1, 4, 3])], inits)
onnx.save(h.make_model(g, opset_imports=[h.make_opsetid('', 14)]), d + '/m.onnx')
smp = lambda n: dict(x=r.normal(0, 1, (n, 1, 4, 8)).astype(np.float32),
                     mask=r.integers(0, 2, (n, 1, 4, 8)).astype(np.int64))
np.savez(d + '/cal.npz', **smp(8))
np.savez(d + '/in.npz', **{k: v[0] for k, v in smp(1).items()})
PYEOF
	local T=$BATS_TEST_TMPDIR m
	for m in f32 bf16 f16 int8; do
		deploy_exact m $m MODE=$m
	done
	run $PY "$BATS_TEST_DIRNAME/irdump.py" "$T/int8/lowered.tpu"
	assert_line 'op Cast castmask in=mask out=mf to="f32"'
	assert_line --regexp '^op Mul applymask in=x_i8,mf_i8 out=xm multiplier='
	assert_line 'op Not not in=pos out=neg'
	assert_line 'op IsNaN isnan in=a_bf16 out=nan'
	assert_line 'op TopK topk in=b out=top_bf16,idx k=3 axis=2 largest=1 sorted=1'
}

# A YOLOv5 Detect head at one 640-input level: a Split of [1,3,80,80,85]
# along its last axis needs MiBs of local memory whole; it runs in row
# slices like Slice.
@test "a Split too large for local memory runs in row slices" {
	onnx_gen "$BATS_TEST_TMPDIR" 5 <<'PYEOF'
hw = 80
i64 = lambda n, v: nh.from_array(np.array(v, np.int64), n)
nodes = [
    h.make_node('Conv', ['x', 'w'], ['c'], name='conv'),
    h.make_node('Reshape', ['c', 's5'], ['r'], name='reshape'),
    h.make_node('Transpose', ['r'], ['t'], name='transpose', perm=[0, 1, 3, 4, 2]),
    h.make_node('Sigmoid', ['t'], ['sg'], name='sigmoid'),
    h.make_node('Split', ['sg', 'parts'], ['xy', 'wh', 'cls'], name='split', axis=4),
    h.make_node('Mul', ['xy', 'two'], ['xy2'], name='mul'),
    h.make_node('Pow', ['wh', 'two'], ['wh2'], name='pow'),
    h.make_node('Concat', ['xy2', 'wh2', 'cls'], ['cat'], name='cat', axis=4),
    h.make_node('Reshape', ['cat', 's3'], ['y'], name='flat'),
]
inits = [nh.from_array(r.normal(0, 0.25, (255, 16, 1, 1)).astype(np.float32), 'w'),
         i64('s5', [1, 3, 85, hw, hw]), i64('parts', [2, 2, 81]), i64('s3', [1, 3 * hw * hw, 85]),
         nh.from_array(np.array(2, np.float32), 'two')]
g = h.make_graph(nodes, 'split5d', [h.make_tensor_value_info('x', TP.FLOAT, [1, 16, hw, hw])],
                 [h.make_tensor_value_info('y', TP.FLOAT, [1, 3 * hw * hw, 85])], inits)
onnx.save(h.make_model(g, opset_imports=[h.make_opsetid('', 13)]), d + '/s.onnx')
np.savez(d + '/in.npz', x=r.standard_normal((1, 16, hw, hw)).astype(np.float32))
np.savez(d + '/cal.npz', x=r.standard_normal((4, 1, 16, hw, hw)).astype(np.float32))
PYEOF
	local T=$BATS_TEST_TMPDIR m
	for m in f32 int8; do
		deploy s $m MODE=$m
	done
	cmp "$T/int8/tpu_out.npz" "$T/int8/sim_out.npz"
}

@test "attention shapes (Swin's windows, ViT's and MaxViT's bias Adds): ops over many windows or tokens split along N, a Transpose moving axis 0 along its output's axis 0 on tpu-b, a weight operand goes second or folds with the activation; a Gather by constant index and a Transpose of unit axes are copies" {
	onnx_gen "$BATS_TEST_TMPDIR" 3 <<'PYEOF'
i64 = lambda n, v: nh.from_array(np.array(v, np.int64), n)
bias = r.standard_normal(2304).astype(np.float32)
rel = r.standard_normal((1, 16, 49, 49)).astype(np.float32)
nodes = [
    h.make_node('Reshape', ['qkv', 's5'], ['r5'], name='split_heads'),
    h.make_node('Transpose', ['r5'], ['t5'], name='to_qkv', perm=[2, 0, 3, 1, 4]),
    h.make_node('Gather', ['t5', 'i0'], ['q'], name='take_q', axis=0),
    h.make_node('Gather', ['t5', 'i1'], ['k'], name='take_k', axis=0),
    h.make_node('Gather', ['t5', 'i2'], ['v'], name='take_v', axis=0),
    h.make_node('Transpose', ['k'], ['kt'], name='k_t', perm=[0, 1, 3, 2]),
    h.make_node('MatMul', ['q', 'kt'], ['s'], name='scores'),
    h.make_node('Softmax', ['s'], ['p'], name='softmax', axis=-1),
    h.make_node('MatMul', ['p', 'v'], ['y'], name='attend'),
    # one 7x7 window of a 768-channel map: the Transpose moves an axis of 1
    h.make_node('Reshape', ['m', 's6'], ['m6'], name='partition'),
    h.make_node('Transpose', ['m6'], ['mt'], name='windows', perm=[0, 1, 3, 2, 4, 5]),
    h.make_node('Reshape', ['mt', 's3'], ['z'], name='flatten'),
    # torchvision's ViT-B/16: the in-projection's bias first, 197 tokens on axis 0
    h.make_node('Add', ['b', 'e'], ['u'], name='bias'),
    # MaxViT's: a bias first over 4 windows, a relative position bias of
    # the output's elements on a rank-5 score
    h.make_node('Add', ['b768', 'f'], ['v4'], name='qkv_bias'),
    h.make_node('Add', ['g5', 'rel'], ['w5'], name='rel_bias'),
]
inits = [i64('s5', [64, 49, 3, 3, 32]), i64('i0', 0), i64('i1', 1), i64('i2', 2),
         i64('s6', [1, 1, 7, 1, 7, 768]), i64('s3', [1, 49, 768]),
         nh.from_array(bias, 'b'), nh.from_array(bias[:768], 'b768'), nh.from_array(rel, 'rel')]
g = h.make_graph(nodes, 'wattn', [h.make_tensor_value_info('qkv', TP.FLOAT, [64, 49, 288]),
                                  h.make_tensor_value_info('m', TP.FLOAT, [1, 7, 7, 768]),
                                  h.make_tensor_value_info('e', TP.FLOAT, [197, 1, 2304]),
                                  h.make_tensor_value_info('f', TP.FLOAT, [1, 4, 49, 768]),
                                  h.make_tensor_value_info('g5', TP.FLOAT, [1, 1, 16, 49, 49])],
                 [h.make_tensor_value_info('y', TP.FLOAT, [64, 3, 49, 32]),
                  h.make_tensor_value_info('z', TP.FLOAT, [1, 49, 768]),
                  h.make_tensor_value_info('u', TP.FLOAT, [197, 1, 2304]),
                  h.make_tensor_value_info('v4', TP.FLOAT, [1, 4, 49, 768]),
                  h.make_tensor_value_info('w5', TP.FLOAT, [1, 1, 16, 49, 49])], inits)
onnx.save(h.make_model(g, opset_imports=[h.make_opsetid('', 13)]), d + '/w.onnx')
x, m = r.standard_normal((64, 49, 288)).astype(np.float32), r.standard_normal((1, 7, 7, 768)).astype(np.float32)
e = r.standard_normal((197, 1, 2304)).astype(np.float32)
f = r.standard_normal((1, 4, 49, 768)).astype(np.float32)
g5 = r.standard_normal((1, 1, 16, 49, 49)).astype(np.float32)
np.savez(d + '/in.npz', qkv=x, m=m, e=e, f=f, g5=g5)
np.savez(d + '/cal.npz', qkv=r.standard_normal((3, 64, 49, 288)).astype(np.float32),
         m=r.standard_normal((3, 1, 7, 7, 768)).astype(np.float32),
         e=r.standard_normal((3, 197, 1, 2304)).astype(np.float32),
         f=r.standard_normal((3, 1, 4, 49, 768)).astype(np.float32),
         g5=r.standard_normal((3, 1, 1, 16, 49, 49)).astype(np.float32))
t = x.reshape(64, 49, 3, 3, 32).transpose(2, 0, 3, 1, 4)
s = t[0] @ t[1].transpose(0, 1, 3, 2)
p = np.exp(s - s.max(-1, keepdims=True))
np.savez(d + '/ref.npz', y=(p / p.sum(-1, keepdims=True)) @ t[2],
         z=m.reshape(1, 1, 7, 1, 7, 768).transpose(0, 1, 3, 2, 4, 5).reshape(1, 49, 768),
         u=bias + e, v4=bias[:768] + f, w5=g5 + rel)
PYEOF
	local T=$BATS_TEST_TMPDIR m
	for m in f32 int8; do
		deploy w $m REF="$T/ref.npz" MODE=$m
	done
	cmp "$T/int8/tpu_out.npz" "$T/int8/sim_out.npz"
	# tpu-b (128 KiB lanes): the head split's Transpose, which moves axis
	# 0, runs on parts of its output's axis 0 (its input's axis 2)
	deploy_exact w b8 MODE=int8 CHIP=tpu-b
	run ir-print "$T/b8/lowered.tpu"
	assert_output --regexp 't5 = Concat\(%t5_p0'
	assert_output --regexp 't5_p0 = Transpose\(%r5_p0\).*\[64,49,1,3,32\]'
	# the Transpose over 64 windows of 3 heads runs on top-opt's folded
	# view [1,192,49,32] (tests/lanefold.bats): every lane has work, and it
	# fits whole
	run ir-print "$T/f32/lowered.tpu"
	assert_output --regexp 'kt_fold_1 = Transpose\(%k_fold\).*\[1,192,32,49\]'
	refute_output --regexp 'Concat\(%kt_p0'
	assert_output --regexp 'u_p0 = Add\(%e_p0, @b\)'
	assert_output --regexp 'v4 = Add\(%f, @b768\)'
	assert_output --regexp 'w5_refold = Add\(%g5_refold, @rel_refold\)'
}

# A decoder's causal mask: a weight of 0 and -inf added to the attention
# scores, and a Mul by a weight holding +inf (then clipped).  No int8 scale reaches an
# infinity: in int8 both ops run in float, the rest quantised, tpu-sim
# bit-identical to ir-run and close to numpy (the future never attended).
@test "int8: an Add or Mul of a weight holding infinities (a causal -inf mask) runs in float" {
	onnx_gen "$BATS_TEST_TMPDIR" 9 <<'PYEOF'
T, D = 12, 16
wq, wk, wv = (r.normal(0, 0.3, (D, D)).astype(np.float32) for _ in range(3))
mask = np.triu(np.full((T, T), -np.inf, np.float32), 1)
big = np.where(np.arange(D) == 3, np.inf, 1).astype(np.float32)
nodes = [
    h.make_node('MatMul', ['x', 'wq'], ['q'], name='q'),
    h.make_node('MatMul', ['x', 'wk'], ['k'], name='k'),
    h.make_node('MatMul', ['x', 'wv'], ['v'], name='v'),
    h.make_node('Transpose', ['k'], ['kt'], name='kt', perm=[0, 2, 1]),
    h.make_node('MatMul', ['q', 'kt'], ['s'], name='scores'),
    h.make_node('Add', ['s', 'mask'], ['sm'], name='causal'),
    h.make_node('Softmax', ['sm'], ['p'], name='softmax', axis=-1),
    h.make_node('MatMul', ['p', 'v'], ['y'], name='attend'),
    h.make_node('Mul', ['x', 'big'], ['xb'], name='scale_inf'),
    h.make_node('Clip', ['xb', 'lo', 'hi'], ['z'], name='bounded'),
]
inits = [nh.from_array(a, n) for a, n in ((wq, 'wq'), (wk, 'wk'), (wv, 'wv'), (mask, 'mask'),
                                          (big, 'big'), (np.float32(-6), 'lo'),
                                          (np.float32(6), 'hi'))]
g = h.make_graph(nodes, 'causal', [h.make_tensor_value_info('x', TP.FLOAT, [1, T, D])],
                 [h.make_tensor_value_info('y', TP.FLOAT, [1, T, D]),
                  h.make_tensor_value_info('z', TP.FLOAT, [1, T, D])], inits)
onnx.save(h.make_model(g, opset_imports=[h.make_opsetid('', 13)]), d + '/c.onnx')
x = r.standard_normal((1, T, D)).astype(np.float32)
np.savez(d + '/in.npz', x=x)
np.savez(d + '/cal.npz', x=r.standard_normal((8, 1, T, D)).astype(np.float32))
s = (x @ wq) @ (x @ wk).transpose(0, 2, 1) + mask
p = np.exp(s - s.max(-1, keepdims=True))
np.savez(d + '/ref.npz', y=(p / p.sum(-1, keepdims=True)) @ (x @ wv), z=np.clip(x * big, -6, 6))
PYEOF
	local T=$BATS_TEST_TMPDIR
	deploy_exact c q MODE=int8
	run npz-compare "$T/ref.npz" "$T/q/sim_out.npz" --tolerance 0.99,0.9
	assert_success
	run $PY "$BATS_TEST_DIRNAME/irdump.py" "$T/q/lowered.tpu"
	assert_line --regexp '^op Add causal in=s_(bf16|f16|f32)?[a-z0-9_]*,mask'
	assert_line --regexp '^op Mul scale_inf in=x_(bf16|f16|f32)[a-z0-9_]*,big'
	assert_line --regexp '^op Softmax softmax '
}

# A detector's score column per class (Gather along axis 1 of [N, 91]) and a
# box-decode Concat of [N, 1, 1] tensors along the last axis do not fit as
# ops (N rows of one 64-byte slot per lane): as copies, each input's runs of
# one element move strided, all 5000 in one block (tpuc-isa(5)).
@test "a copy of many short runs (a Gather of one column, a Concat along the last axis) moves in strided blocks, bit for bit" {
	onnx_gen "$BATS_TEST_TMPDIR" 5 <<'PYEOF'
N = 5000
nodes = [
    h.make_node('Gather', ['x', 'i5'], ['g'], name='column', axis=1),
    h.make_node('Concat', ['a', 'b', 'a'], ['c'], name='interleave', axis=2),
]
g = h.make_graph(nodes, 'strided', [h.make_tensor_value_info('x', TP.FLOAT, [N, 91]),
                                     h.make_tensor_value_info('a', TP.FLOAT, [N, 1, 1]),
                                     h.make_tensor_value_info('b', TP.FLOAT, [N, 1, 1])],
                 [h.make_tensor_value_info('g', TP.FLOAT, [N]),
                  h.make_tensor_value_info('c', TP.FLOAT, [N, 1, 3])],
                 [nh.from_array(np.array(5, np.int64), 'i5')])
onnx.save(h.make_model(g, opset_imports=[h.make_opsetid('', 13)]), d + '/s.onnx')
x = r.standard_normal((N, 91)).astype(np.float32)
a, b = r.standard_normal((2, N, 1, 1)).astype(np.float32)
np.savez(d + '/in.npz', x=x, a=a, b=b)
np.savez(d + '/cal.npz', x=r.standard_normal((2, N, 91)).astype(np.float32),
         a=r.standard_normal((2, N, 1, 1)).astype(np.float32),
         b=r.standard_normal((2, N, 1, 1)).astype(np.float32))
np.savez(d + '/ref.npz', g=x[:, 5], c=np.concatenate([a, b, a], 2))
PYEOF
	local T=$BATS_TEST_TMPDIR m
	for m in f32 int8; do
		deploy_exact s $m REF="$T/ref.npz" MODE=$m
		# 5000 runs of one element fit one block [1, 5000, 1, 1] (run r
		# in channel r; not 78 blocks of 64 lanes and one of 8): one
		# load and one store for the Gather and per input of the Concat
		run tmodel-info "$T/$m/model.tmodel"
		assert_line 'commands dma 8 (load 4, store 4), compute 0'
	done
}

# A box decoder's x[:, 0::4] of [N, 4] takes one index: a copy like
# x[:, 0:1]; x[:, 1::2] is x[:, 1:2] and x[:, 3:4] into alternate columns.
# In f32 the DMA engine moves them alone (one strided block each way per
# index) since that finishes before the op run on N rows of 4 lanes,
# although the op fits.  In bf16 they read the Cast of x, refolded onto the
# lanes (lower_fit.c, spread_plan): they run in its local group on
# [1, N, 4], the boxes over the lanes, and the model takes fewer cycles
# than with the Cast on N rows and the copies by DMA (5163 on a8263ca).
# The score column's Cast to f32 for the host's GatherND, emitted
# just before the host op, moves back beside the Greater that reads the
# same column, and the two run as one local group: the column is loaded
# once (lower_cast_hoist).
@test "a Slice taking one index by its step is a DMA copy; a Cast for the host joins the chip op reading its input" {
	onnx_gen "$BATS_TEST_TMPDIR" 9 <<'PYEOF'
N = 1000
i64 = lambda n, v: nh.from_array(np.array(v, np.int64), n)
nodes = [
    h.make_node('Slice', ['x', 's0', 's1', 'ax', 'st'], ['dx'], name='every4'),
    h.make_node('Slice', ['x', 'o1', 's1', 'ax', 'st2'], ['dy'], name='odd'),
    h.make_node('Mul', ['s', 'two'], ['s2'], name='twice'),
    h.make_node('Greater', ['s2', 'one'], ['m'], name='above'),
    h.make_node('NonZero', ['m'], ['nz'], name='nonzero'),
    h.make_node('Transpose', ['nz'], ['ix'], name='ixt'),
    h.make_node('GatherND', ['s2', 'ix'], ['v'], name='keep'),
]
g = h.make_graph(nodes, 'decode', [h.make_tensor_value_info('x', TP.FLOAT, [N, 4]),
                                   h.make_tensor_value_info('s', TP.FLOAT, [N])],
                 [h.make_tensor_value_info('dx', TP.FLOAT, [N, 1]),
                  h.make_tensor_value_info('dy', TP.FLOAT, [N, 2]),
                  h.make_tensor_value_info('v', TP.FLOAT, None)],
                 [i64('s0', [0]), i64('s1', [1 << 62]), i64('ax', [1]), i64('st', [4]),
                  i64('o1', [1]), i64('st2', [2]),
                  nh.from_array(np.float32(2), 'two'), nh.from_array(np.float32(1), 'one')])
onnx.save(h.make_model(g, opset_imports=[h.make_opsetid('', 13)]), d + '/dec.onnx')
x = r.standard_normal((N, 4)).astype(np.float32)
score = lambda *n: (r.choice([0.25, 0.75], n) + 0.1 * r.random(n)).astype(np.float32)
s = score(N)    # 2 s lies away from the threshold 1 in bf16 too
np.savez(d + '/in.npz', x=x, s=s)
np.savez(d + '/cal.npz', x=r.standard_normal((2, N, 4)).astype(np.float32), s=score(2, N))
PYEOF
	local T=$BATS_TEST_TMPDIR
	deploy_exact dec f MODE=f32
	# the Slices: no compute command (x[:, 1::2]: x[:, 1:2] and x[:, 3:4])
	run tmodel-info "$T/f/model.tmodel"
	assert_line --regexp '^[0-9]+ +Slice +0 +0 +every4$'
	assert_line --regexp '^[0-9]+ +Slice +0 +0 +odd$'
	deploy_exact dec q MODE=bf16
	run ir-print "$T/q/grouped.tpu"
	assert_output --regexp '= Slice\(%x_bf16_spread[_0-9]*\) \{[^}]*axes=\[2\], steps=\[4\]\}.*-> bf16\[1,1000,1\] loc\("every4"\).*local'
	run tpu-sim "$T/q/model.tmodel" -i "$T/in.npz" -o "$T/q2.npz"
	local cyc
	cyc=$(printf '%s\n' "$output" | sed -n 's/.*bf16: \([0-9]*\) cycles.*/\1/p')
	[ -n "$cyc" ] && [ "$cyc" -lt 5163 ]
	# the Cast of s2 right after the Greater, in its local group
	run ir-print "$T/q/addressed.tpu"
	local grp
	grp=$(printf '%s\n' "$output" | sed -n 's/.*= Greater(.*group \([0-9]*\), local.*/\1/p')
	[ -n "$grp" ]
	printf '%s\n' "$output" | grep -A1 '= Greater(' | tail -1 | grep -q "= Cast(.*to=\"f32\".*group $grp, local"
}

# A detector's per-class loop: each class's score column (a Gather of
# one index along axis 1 of the Softmax's [N, K]) is read only by the local
# group of its Greater and the Cast for the host: the group loads the
# column straight from the Softmax's result with the Gather's stride, and
# the Gather takes no command (lg_forwards).  addr-assign keeps the
# Softmax's result alive through the last class's group, whose Gather read
# it last.  The first class's column is computed in the Softmax's group.
# (In int8 the Softmax here runs in f32 and the host reads the column.)
# With every op alone (layergroup -n 1), a global op that is no copy (the
# Mul of column 7) loads its input from the source the same way.
@test "a local group, or a global op, loads a copy's result straight from the copy's source; the copy takes no command" {
	onnx_gen "$BATS_TEST_TMPDIR" 3 <<'PYEOF'
N, K = 700, 21
nodes = [h.make_node('Softmax', ['x'], ['p'], name='softmax', axis=1)]
outs, inits = [], [nh.from_array(np.float32(0.1), 'thr')]
for c in (1, 4, 20):
    inits.append(nh.from_array(np.array(c, np.int64), f'i{c}'))
    nodes += [h.make_node('Gather', ['p', f'i{c}'], [f'col{c}'], name=f'column{c}', axis=1),
              h.make_node('Greater', [f'col{c}', 'thr'], [f'm{c}'], name=f'above{c}'),
              h.make_node('NonZero', [f'm{c}'], [f'nz{c}'], name=f'nonzero{c}'),
              h.make_node('Transpose', [f'nz{c}'], [f'ix{c}'], name=f'ixt{c}'),
              h.make_node('GatherND', [f'col{c}', f'ix{c}'], [f'v{c}'], name=f'keep{c}')]
    outs.append(h.make_tensor_value_info(f'v{c}', TP.FLOAT, None))
inits += [nh.from_array(np.array(7, np.int64), 'i7'), nh.from_array(np.float32(2), 'two')]
nodes += [h.make_node('Gather', ['p', 'i7'], ['col7'], name='column7', axis=1),
          h.make_node('Mul', ['col7', 'two'], ['w7'], name='twice7')]
outs.append(h.make_tensor_value_info('w7', TP.FLOAT, [N]))
g = h.make_graph(nodes, 'classes', [h.make_tensor_value_info('x', TP.FLOAT, [N, K])], outs, inits)
onnx.save(h.make_model(g, opset_imports=[h.make_opsetid('', 13)]), d + '/cls.onnx')
def logits(*n):  # three classes of each row at 5, the rest near 0: p 0.32 or 0.002
    x = 0.05 * r.standard_normal(n)
    hot = r.permuted(np.tile(np.arange(K), n[:-1] + (1,)), axis=-1)[..., :3]
    np.put_along_axis(x, hot, 5, -1)
    return x.astype(np.float32)
np.savez(d + '/in.npz', x=logits(N, K))
np.savez(d + '/cal.npz', x=logits(2, N, K))
PYEOF
	local T=$BATS_TEST_TMPDIR
	deploy_exact cls q MODE=bf16
	run ir-print "$T/q/addressed.tpu"
	assert_line --regexp '= Slice\(%p\).*loc\("column4"\).*global'
	assert_line --regexp '= Greater\(%col4, @thr\).*local'
	# the copies of columns 4 and 20 had one load and one store each (18)
	run tmodel-info "$T/q/model.tmodel"
	assert_line 'commands dma 14 (load 6, store 8), compute 23'
	layergroup -n 1 "$T/q/reordered.tpu" | addr-assign -q | codegen -o "$T/one.tmodel"
	tpu-sim -q "$T/one.tmodel" -i "$T/in.npz" -o "$T/one.npz"
	ir-run "$T/q/reordered.tpu" -i "$T/in.npz" -o "$T/ir.npz"
	cmp "$T/one.npz" "$T/ir.npz"
	# column 7's copy for the Mul alone had a load and a store (32)
	run tmodel-info "$T/one.tmodel"
	assert_line --partial 'commands dma 30 (load 17, store 13)'
}

# A detector's heads come last in the exported graph, though each reads
# the trunk part way: each head's Conv and decode, whose result only the
# output Concat reads, move up to just after the trunk op they read
# (lower_outputs_early), so that their bytes leave for DDR while the rest
# of the trunk computes.  The trunk's own order stays.
@test "ops that only feed the graph output move up beside what they read; tpu-sim as ir-run" {
	onnx_gen "$BATS_TEST_TMPDIR" 4 <<'PYEOF'
w = lambda n, *s: nh.from_array((r.standard_normal(s) * 0.3).astype(np.float32), n)
i64 = lambda n, v: nh.from_array(np.array(v, np.int64), n)
nodes = [
    h.make_node('Conv', ['x', 'w1'], ['a'], name='trunk1', pads=[1, 1, 1, 1]),
    h.make_node('Relu', ['a'], ['ar'], name='trunk1_relu'),
    h.make_node('Conv', ['ar', 'w2'], ['b'], name='trunk2', pads=[1, 1, 1, 1], strides=[2, 2]),
    h.make_node('Relu', ['b'], ['br'], name='trunk2_relu'),
    h.make_node('Conv', ['br', 'w3'], ['c'], name='trunk3', pads=[1, 1, 1, 1], strides=[2, 2]),
    h.make_node('Relu', ['c'], ['cr'], name='trunk3_relu'),
    h.make_node('Conv', ['ar', 'h1'], ['p1'], name='head1'),
    h.make_node('Sigmoid', ['p1'], ['s1'], name='head1_sig'),
    h.make_node('Reshape', ['s1', 'f1'], ['o1'], name='head1_flat'),
    h.make_node('Conv', ['br', 'h2'], ['p2'], name='head2'),
    h.make_node('Sigmoid', ['p2'], ['s2'], name='head2_sig'),
    h.make_node('Reshape', ['s2', 'f2'], ['o2'], name='head2_flat'),
    h.make_node('Conv', ['cr', 'h3'], ['p3'], name='head3'),
    h.make_node('Sigmoid', ['p3'], ['s3'], name='head3_sig'),
    h.make_node('Reshape', ['s3', 'f3'], ['o3'], name='head3_flat'),
    h.make_node('Concat', ['o1', 'o2', 'o3'], ['y'], name='join', axis=2),
]
g = h.make_graph(nodes, 'heads', [h.make_tensor_value_info('x', TP.FLOAT, [1, 8, 32, 32])],
                 [h.make_tensor_value_info('y', TP.FLOAT, [1, 16, 1344])],
                 [w('w1', 16, 8, 3, 3), w('w2', 16, 16, 3, 3), w('w3', 16, 16, 3, 3),
                  w('h1', 16, 16, 1, 1), w('h2', 16, 16, 1, 1), w('h3', 16, 16, 1, 1),
                  i64('f1', [1, 16, 1024]), i64('f2', [1, 16, 256]), i64('f3', [1, 16, 64])])
onnx.save(h.make_model(g, opset_imports=[h.make_opsetid('', 13)]), d + '/heads.onnx')
np.savez(d + '/in.npz', x=r.standard_normal((1, 8, 32, 32)).astype(np.float32))
np.savez(d + '/cal.npz', x=r.standard_normal((4, 8, 32, 32)).astype(np.float32))
PYEOF
	local T=$BATS_TEST_TMPDIR
	deploy_exact heads q MODE=int8
	run $PY "$BATS_TEST_DIRNAME/irdump.py" "$T/q/lowered.tpu"
	local order
	order=$(awk '$1 == "op" { print $3 }' <<<"$output" | grep -E '^(trunk|head)[123]$' | tr '\n' ' ')
	# trunk1 feeds head1 and trunk2, trunk2 head2 and trunk3: they stay;
	# head1 goes just after trunk1, which it reads (head2 and trunk3, all
	# head3's, after trunk2 in their own order)
	[ "$order" = "trunk1 head1 trunk2 trunk3 head2 head3 " ]
}
