#!/usr/bin/env bats
# top-opt: the default pipeline folds BatchNormalization and constants,
# fuses activations, GELU, SiLU, hard-swish and LayerNorm, removes
# identities and dead code (checked through --stats and the IR);
# folded weights match numpy; pipelines parse and print; wrong input is
# refused.  Numerics of whole models are checked with ir-run elsewhere.
load helpers

bats_require_minimum_version 1.5.0

setup_file() {
	export FX="$BATS_FILE_TMPDIR/fx"
	/usr/bin/python3 "$BATS_TEST_DIRNAME/fixtures/make_fixtures.py" "$FX"
	export FF="$BATS_FILE_TMPDIR/ff"
	/usr/bin/python3 "$BATS_TEST_DIRNAME/fixtures/fuse_fixtures.py" "$FF"
}

setup() {
	T=$BATS_TEST_TMPDIR
}

irdump() {
	$PY "$BATS_TEST_DIRNAME/irdump.py" "$@"
}

# opt FIXTURE [top-opt options]: import a fixture and optimise it into $T/o.top.
opt() {
	local m=$1
	shift
	onnx2top "$FX/$m.onnx" -o "$T/in.top"
	top-opt "$T/in.top" -o "$T/o.top" "$@"
}

# Check folded weights against numpy: run Python with `onnx_w` (the model's
# initializers by name) and `ir_w` (the optimised IR's weights by name).
check_weights() {
	$PY - "$FX/$1.onnx" "$T/o.top" "$2" <<'EOF'
import struct, sys, msgpack, numpy as np, onnx
from onnx import numpy_helper
m = onnx.load(sys.argv[1])
onnx_w = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
b = open(sys.argv[2], 'rb').read()
glen, doff = struct.unpack_from('<QQ', b, 16)
g = msgpack.unpackb(b[64:64 + glen])
ir_w = {}
for t in g['tensors']:
    if 'data' in t:
        off, n = t['data']
        ir_w[t['name']] = np.frombuffer(b[doff + off:doff + off + n], '<f4').reshape(t['shape'])
exec(sys.argv[3])
EOF
}

@test "conv + batchnorm + relu become one conv with do_relu" {
	run --separate-stderr opt conv_bn_relu --stats
	assert_success
	[ "$output" = "" ]
	grep -Eq '^BatchNormalization +1 +0$' <<<"$stderr"
	grep -Eq '^Relu +1 +0$' <<<"$stderr"
	grep -Eq '^Conv +1 +1$' <<<"$stderr"
	grep -Eq '^total +3 +1$' <<<"$stderr"
	grep -Eq '^fold-bn +2$' <<<"$stderr"
	run irdump "$T/o.top"
	assert_output - <<'EOF'
graph top canonical
input x f32 [1,3,8,8]
weight w f32 [4,3,3,3]
weight b f32 [4]
op Conv conv0 in=x,w,b out=y kernel_shape=[3,3] strides=[1,1] pads=[1,1,1,1] dilations=[1,1] group=1 do_relu=1
output y
EOF
}

@test "folded conv weights and bias match numpy" {
	opt conv_bn_relu
	check_weights conv_bn_relu '
s = onnx_w["bn_scale"] / np.sqrt(onnx_w["bn_var"].astype(np.float64) + 1e-3)
w = onnx_w["w"] * s[:, None, None, None]
bias = (onnx_w["b"] - onnx_w["bn_mean"]) * s + onnx_w["bn_bias"]
assert np.allclose(ir_w["w"], w, rtol=1e-6, atol=1e-6), (ir_w["w"], w)
assert np.allclose(ir_w["b"], bias, rtol=1e-6, atol=1e-6), (ir_w["b"], bias)'
}

@test "a conv without bias gains one" {
	opt conv_nobias_bn
	run irdump "$T/o.top"
	assert_line 'op Conv conv0 in=x,w,conv0_bias out=y kernel_shape=[3,3] strides=[1,1] pads=[0,0,0,0] dilations=[1,1] group=1'
	check_weights conv_nobias_bn '
s = onnx_w["bn_scale"] / np.sqrt(onnx_w["bn_var"].astype(np.float64) + 1e-3)
assert np.allclose(ir_w["conv0_bias"], onnx_w["bn_bias"] - onnx_w["bn_mean"] * s, atol=1e-6)'
}

@test "batchnorm without a conv before it becomes Scale" {
	opt bn_alone
	run irdump "$T/o.top"
	assert_line 'op Scale bn0 in=x,bn0_scale,bn0_bias out=y'
	check_weights bn_alone '
s = onnx_w["bn_scale"] / np.sqrt(onnx_w["bn_var"].astype(np.float64) + 1e-3)
assert np.allclose(ir_w["bn0_scale"], s, atol=1e-6)
assert np.allclose(ir_w["bn0_bias"], onnx_w["bn_bias"] - onnx_w["bn_mean"] * s, atol=1e-6)'
}

@test "batchnorm after a conv whose output is also used elsewhere stays a Scale" {
	opt conv_shared_bn
	run irdump "$T/o.top"
	assert_line 'op Conv conv0 in=x,w out=c kernel_shape=[3,3] strides=[1,1] pads=[1,1,1,1] dilations=[1,1] group=1'
	assert_line 'op Scale bn0 in=c,bn0_scale,bn0_bias out=n'
	assert_line 'op Add add0 in=c,n out=y'
}

@test "Clip(0, 6) fuses as do_relu with relu_limit; Clip without min stays" {
	opt clip13
	run irdump "$T/o.top"
	assert_line 'op Conv conv0 in=x,w,b out=y kernel_shape=[3,3] strides=[1,1] pads=[0,0,0,0] dilations=[1,1] group=1 do_relu=1 relu_limit=6.0'
	opt clip_max_only
	run irdump "$T/o.top"
	assert_line --partial 'op Clip clip0 in=x out=y'
}

@test "Relu fuses into Gemm and Add; identities and no-op flattens go" {
	opt reshape_gemm
	run irdump "$T/o.top"
	assert_line 'op Gemm fc0 in=r,fw,fb out=y alpha=1.0 beta=1.0 transA=0 transB=1 do_relu=1'
	opt mixed
	run irdump "$T/o.top"
	assert_line 'op Add Add_s in=mp,ap out=sr do_relu=1'
	assert_line 'op MaxPool MaxPool_mp in=c out=mp kernel_shape=[2,2] strides=[1,1] pads=[1,1,0,0] dilations=[1,1] ceil_mode=0'
	assert_line 'op MatMul MatMul_y in=f,mw out=y'
	refute_line --partial 'op Identity'
	[ "$(grep -c '^op Flatten' <<<"$output")" -eq 1 ]
}

@test "removing an identity keeps the graph output's name" {
	run --separate-stderr opt identity_out --stats
	assert_success
	grep -Eq '^remove-identity +2$' <<<"$stderr"
	run irdump "$T/o.top"
	assert_output - <<'EOF'
graph top canonical
input x f32 [1,3,8,8]
op Relu relu0 in=x out=y
output y
EOF
}

@test "dce removes a dead branch and its weight" {
	run --separate-stderr opt dead_branch --passes=dce --stats
	assert_success
	grep -Eq '^dce +3$' <<<"$stderr"
	run irdump "$T/o.top"
	refute_line --partial dead_
	refute_line --partial 'weight wd'
}

@test "only the passes asked for run" {
	opt conv_bn_relu --passes=fuse-act
	run irdump "$T/o.top"
	assert_line --partial 'op BatchNormalization bn0'
	assert_line --partial 'op Conv conv0 in=x,w,b out=c '
	opt conv_bn_relu --passes=fold-bn,fuse-act
	run irdump "$T/o.top"
	refute_line --partial BatchNormalization
}

@test "resnet18: every Relu fuses" {
	need_models resnet18
	onnx2top "$MODELS/resnet18/model.onnx" -o "$T/r.top"
	run --separate-stderr top-opt "$T/r.top" -o "$T/o.top" --stats
	assert_success
	grep -Eq '^Relu +17 +0$' <<<"$stderr"
	grep -Eq '^Add +8 +8$' <<<"$stderr"
	grep -Eq '^total +49 +32$' <<<"$stderr"
	run irdump "$T/o.top"
	assert_line --regexp '^op Add /layer1/layer1.0/Add in=[^ ]+ out=/layer1/layer1.0/relu_1/Relu_output_0 do_relu=1$'
}

@test "mobilenet_v2: every Clip fuses as ReLU6" {
	need_models mobilenet_v2
	onnx2top "$MODELS/mobilenet_v2/model.onnx" -o "$T/m.top"
	run --separate-stderr top-opt "$T/m.top" -o "$T/o.top" --stats
	assert_success
	grep -Eq '^Clip +35 +0$' <<<"$stderr"
	[ "$(irdump "$T/o.top" | grep -c 'do_relu=1 relu_limit=6.0$')" -eq 35 ]
}

@test "optimised fixtures compute what the originals compute (ir-run)" {
	need_tool ir-run npz-compare
	$PY -c "import numpy as np
np.savez('$T/x.npz', x=np.random.RandomState(1).standard_normal((1, 3, 8, 8)).astype(np.float32))"
	for m in conv_bn_relu conv_nobias_bn bn_alone conv_shared_bn clip13 clip9 mixed \
		reshape_gemm identity_out dead_branch; do
		opt $m
		ir-run "$T/in.top" -i "$T/x.npz" -o "$T/a.npz"
		ir-run "$T/o.top" -i "$T/x.npz" -o "$T/b.npz"
		run npz-compare "$T/a.npz" "$T/b.npz"
		assert_success
	done
}

@test "a second run changes nothing (canonical input accepted)" {
	opt mixed
	top-opt "$T/o.top" -o "$T/o2.top"
	cmp "$T/o.top" "$T/o2.top"
}

@test "reads stdin and writes stdout" {
	onnx2top "$FX/conv_bn_relu.onnx" | top-opt >"$T/o.top"
	run irdump "$T/o.top"
	assert_line --index 0 'graph top canonical'
}

@test "--print-passes prints the pipeline as parsed" {
	run top-opt --print-passes
	assert_success
	assert_output 'remove-identity,fold-const,fold-qdq,merge-layout,fold-pad,fold-affine,fold-bn,deconv-to-conv,fuse-act,fuse-gelu,fuse-swish,fuse-layernorm,nest-concat,batch-rows,merge-layout,dce'
	run top-opt --passes=dce,fold-bn,dce --print-passes
	assert_output 'dce,fold-bn,dce'
	# any number of passes: 200 of them
	local many
	many=$(printf 'dce,%.0s' $(seq 199))dce
	run top-opt --passes="$many" --print-passes
	assert_success
	assert_output "$many"
	run top-opt -h
	assert_success
	assert_line --partial 'fold-bn'
}

@test "an unknown pass exits 2 naming it" {
	run top-opt --passes=fold-bn,fold-everything "$T/none.top"
	assert_failure 2
	assert_line --index 0 "top-opt: unknown pass 'fold-everything'"
	run top-opt --passes=fold-bn,,dce
	assert_failure 2
	assert_line --index 0 "top-opt: empty pass name in 'fold-bn,,dce'"
}

@test "usage errors exit 2" {
	run top-opt --frobnicate
	assert_failure 2
	assert_line --index 0 "top-opt: bad option '--frobnicate'"
	run top-opt a.top b.top
	assert_failure 2
}

@test "a file that is not IR is refused" {
	run top-opt "$FX/conv_bn_relu.onnx" -o "$T/o.top"
	assert_failure 1
	assert_output "top-opt: '$FX/conv_bn_relu.onnx': not a tpuc IR file (bad magic) (an ONNX model: import it with onnx2top first)"
	[ ! -e "$T/o.top" ]
}

@test "IR of the wrong dialect or stage is refused" {
	onnx2top "$FX/conv_bn_relu.onnx" -o "$T/in.top"
	# Relabel the file as lowered Tpu IR.
	$PY - "$T/in.top" "$T/tpu.ir" <<'EOF'
import struct, sys, msgpack
b = open(sys.argv[1], 'rb').read()
glen, doff, dlen = struct.unpack_from('<QQQ', b, 16)
g = msgpack.unpackb(b[64:64 + glen])
g['dialect'], g['stage'] = 'tpu', 'lowered'
p = msgpack.packb(g)
noff = (64 + len(p) + 63) // 64 * 64
hdr = b[:16] + struct.pack('<QQQ', len(p), noff, dlen) + b[40:64]
open(sys.argv[2], 'wb').write(hdr + p + bytes(noff - 64 - len(p)) + b[doff:doff + dlen])
EOF
	run top-opt "$T/tpu.ir" -o "$T/o.top"
	assert_failure 1
	assert_output --partial "top-opt: '$T/tpu.ir': wrong stage"
	[ "${#lines[@]}" -eq 1 ]
	[ ! -e "$T/o.top" ]
}

@test "a missing file" {
	run top-opt "$T/nope.top" -o "$T/o.top"
	assert_failure 1
	assert_output "top-opt: cannot open '$T/nope.top': No such file or directory"
	[ ! -e "$T/o.top" ]
}

@test "fusions (GELU, SiLU, hard-swish, LayerNorm), affine, pad and layout folds match numpy" {
	local bad=
	while read -r c fused; do
		onnx2top "$FF/$c.onnx" -o "$T/$c.top"
		top-opt "$T/$c.top" -o "$T/$c.opt.top"
		ops=$(irdump "$T/$c.opt.top" | grep '^op ' | cut -d' ' -f2 | tr '\n' ' ')
		[ "$ops" = "$fused " ] || { bad="$bad $c($ops)"; continue; }
		ir-run "$T/$c.opt.top" -i "$FF/$c.in.npz" -o "$T/$c.npz"
		npz-compare "$FF/$c.ref.npz" "$T/$c.npz" --tolerance 0.999999,0.9999 >"$T/log" ||
			{ bad="$bad $c"; cat "$T/log" >&3; }
	done <"$FF/cases"
	[ -z "$bad" ] || { echo "failed:$bad"; false; }
}

@test "fusion passes run alone and leave other patterns alone" {
	onnx2top "$FF/layernorm.onnx" -o "$T/ln.top"
	top-opt "$T/ln.top" --passes=fuse-gelu,fuse-swish -o "$T/o.top"
	run irdump "$T/o.top"
	[ "$(grep -c '^op ' <<<"$output")" -eq 9 ]
	top-opt "$T/ln.top" --passes=fuse-layernorm -o "$T/o.top"
	run irdump "$T/o.top"
	assert_line 'op LayerNormalization y_op in=x,g,b out=y axis=2 epsilon=9.999999747378752e-06'
}

@test "a GELU whose inner tensor is also a graph output is not fused" {
	onnx2top "$FF/gelu_shared.onnx" -o "$T/g.top"
	run top-opt "$T/g.top" --passes=fuse-gelu --stats -o "$T/o.top"
	assert_success
	assert_line --regexp '^fuse-gelu +0$'
	run irdump "$T/o.top"
	refute_line --partial 'op Gelu'
}

@test "nest-concat: a DenseNet block's joins nest; other axes and orders stay" {
	onnx2top "$FF/dense_concat.onnx" -o "$T/d.top"
	run top-opt "$T/d.top" --stats -o "$T/d.opt.top"
	assert_line --regexp '^remove-identity +1$'
	assert_line --regexp '^nest-concat +2$'
	run irdump "$T/d.opt.top"
	assert_line --partial 'op Concat j3_op in=j2,d2 out=j3'
	assert_line --partial 'op Concat y_op in=j3,d3 out=y'
	onnx2top "$FF/concat_apart.onnx" -o "$T/a.top"
	run top-opt "$T/a.top" --stats -o "$T/a.opt.top"
	assert_line --regexp '^nest-concat +0$'
	assert_line --regexp '^Concat +3 +3$'
}

@test "real models: fusions fire and the numerics do not move" {
	need_models bert_tiny mobilenet_v3_small yolo_tiny ppocr_mobile_v2_cls
	onnx2top "$MODELS/bert_tiny/model.onnx" -o "$T/b.top"
	run top-opt "$T/b.top" --stats -o "$T/b.opt.top"
	assert_line --regexp '^fuse-gelu +4$'
	assert_line --regexp '^fuse-layernorm +9$'
	onnx2top "$MODELS/yolo_tiny/model.onnx" | top-opt --stats -o "$T/y.opt.top" 2>"$T/y.stats"
	grep -Eq '^SiLU +0 +4[0-9]$' "$T/y.stats"
	onnx2top "$MODELS/ppocr_mobile_v2_cls/model.onnx" | top-opt --stats -o "$T/p.opt.top" 2>"$T/p.stats"
	grep -Eq '^HardSwish +0 +18$' "$T/p.stats"
	for m in bert_tiny mobilenet_v3_small yolo_tiny ppocr_mobile_v2_cls; do
		onnx2top "$MODELS/$m/model.onnx" -o "$T/$m.top"
		top-opt "$T/$m.top" --passes= -o "$T/$m.plain.top"
		top-opt "$T/$m.top" -o "$T/$m.opt.top"
		ir-run "$T/$m.plain.top" -i "$MODELS/$m/input.npz" -o "$T/$m.plain.npz"
		ir-run "$T/$m.opt.top" -i "$MODELS/$m/input.npz" -o "$T/$m.opt.npz"
		run npz-compare "$T/$m.plain.npz" "$T/$m.opt.npz" --tolerance 0.99999,0.999
		assert_success
	done
}

@test "folded pads, pair-made Scales, input normalisations, unit transposes, ConvTransposes made Convs, sunk Reshapes, Gathers made Slices and nested Concats run on the chip (f32 and int8, both chips)" {
	local bad=
	for c in pad_conv pad_avgpool act_mul_add norm_conv norm_conv_channels transpose_units deconv_bn_relu deconv_overlap_bn deconv_4_one seq_first_rows gather_scalar dense_concat; do
		onnx2top "$FF/$c.onnx" -o "$T/$c.top"
		top-opt "$T/$c.top" -o "$T/$c.opt.top"
		# eight samples near the test input for the int8 table
		$PY -c 'import sys, numpy as np
x = np.load(sys.argv[1])["x"]
r = np.random.default_rng(1)
np.savez(sys.argv[2], x=np.stack([x * r.uniform(0.8, 1.2) for _ in range(8)]).astype(np.float32))' \
			"$FF/$c.in.npz" "$T/$c.cal.npz"
		calibrate "$T/$c.opt.top" -d "$T/$c.cal.npz" -o "$T/$c.table" 2>/dev/null
		for chip in tpu-a tpu-b; do
			for mode in f32 int8; do
				local o=$T/$c.$chip.$mode
				top2tpu "$T/$c.opt.top" --chip $chip --mode $mode --calib "$T/$c.table" -o "$o.tpu"
				weight-reorder "$o.tpu" | layergroup | addr-assign -q | codegen -o "$o.tmodel"
				tpu-sim "$o.tmodel" -i "$FF/$c.in.npz" -o "$o.sim.npz" 2>/dev/null
				ir-run "$o.tpu" -i "$FF/$c.in.npz" -o "$o.ir.npz"
				local tol=0.99999
				[ $mode = int8 ] && tol=0.99
				npz-compare "$FF/$c.ref.npz" "$o.sim.npz" --tolerance $tol >/dev/null 2>&1 ||
					bad="$bad $c/$chip/$mode(ref)"
				[ $mode = f32 ] ||
					npz-compare "$o.ir.npz" "$o.sim.npz" --tolerance 1,1 >/dev/null 2>&1 ||
					bad="$bad $c/$chip/$mode(sim!=ir-run)"
			done
		done
	done
	[ -z "$bad" ] || { echo "failed:$bad"; false; }
}

@test "an input normalisation folded into a Pad: int8 quantises the input first, the Pad fills codes" {
	onnx2top "$FF/norm_conv.onnx" | top-opt -o "$T/n.top"
	run irdump "$T/n.top"
	[ "$(grep '^op ' <<<"$output" | cut -d' ' -f2 | tr '\n' ' ')" = "Pad Conv " ]
	$PY -c 'import sys, numpy as np
x = np.load(sys.argv[1])["x"]
np.savez(sys.argv[2], x=np.stack([x * s for s in (0.9, 1.0, 1.1)]).astype(np.float32))' "$FF/norm_conv.in.npz" "$T/cal.npz"
	calibrate "$T/n.top" -d "$T/cal.npz" -o "$T/n.table" 2>/dev/null
	top2tpu "$T/n.top" --chip tpu-a --mode int8 --calib "$T/n.table" -o "$T/n.tpu"
	run irdump "$T/n.tpu"
	# Cast, Pad, Conv, Cast: the Pad runs on the codes, its fill the code of
	# the mean (0.5 on the input's scale), not on 3 lanes of f32
	[ "$(grep '^op ' <<<"$output" | cut -d' ' -f2 | tr '\n' ' ')" = "Cast Pad Conv Cast " ]
	pad=$(grep '^op Pad' <<<"$output" | sed 's/.*value=\([0-9.]*\).*/\1/')
	scale=$(ir-print "$T/n.tpu" | grep ' = Cast(%x)' | sed 's/.*scale=\([0-9.e-]*\)>.*/\1/')
	[ -n "$scale" ] && [ -n "$pad" ]
	$PY -c 'import sys; s, v = float(sys.argv[1]), float(sys.argv[2]); assert v == round(0.5 / s), (s, v)' "$scale" "$pad"
	weight-reorder "$T/n.tpu" | layergroup | addr-assign -q | codegen -o "$T/n.tmodel"
	tpu-sim "$T/n.tmodel" -i "$FF/norm_conv.in.npz" -o "$T/sim.npz" 2>/dev/null
	ir-run "$T/n.tpu" -i "$FF/norm_conv.in.npz" -o "$T/ir.npz"
	cmp "$T/sim.npz" "$T/ir.npz"
	run npz-compare "$FF/norm_conv.ref.npz" "$T/sim.npz" --tolerance 0.99
	assert_success
}
