#!/usr/bin/env bats
# top2tpu: f32 and int8 lowering of a small CNN (names, dtypes, Casts at the
# edges, int8 close to float through ir-run), determinism, and refusals:
# usage errors (exit 2), unreadable or wrong-stage input, tables missing a
# tensor, unfolded BatchNormalization, ops without an int8 lowering.
load helpers

bats_require_minimum_version 1.5.0

setup_file() {
	export QN="$BATS_FILE_TMPDIR/qn" FX="$BATS_FILE_TMPDIR/fx"
	/usr/bin/python3 "$BATS_TEST_DIRNAME/fixtures/quant_net.py" "$QN"
	/usr/bin/python3 "$BATS_TEST_DIRNAME/fixtures/make_fixtures.py" "$FX" >/dev/null
	onnx2top "$QN/net.onnx" -o "$QN/origin.top"
	top-opt "$QN/origin.top" -o "$QN/net.top"
	calibrate "$QN/net.top" -d "$QN/calib.npz" -o "$QN/net.table"
}

setup() {
	T=$BATS_TEST_TMPDIR
}

irdump() {
	$PY "$BATS_TEST_DIRNAME/irdump.py" "$@"
}

# irmeta FILE: "dialect stage chip mode" of an IR file.
irmeta() {
	$PY - "$1" <<'PYEOF'
import struct, sys, msgpack
b = open(sys.argv[1], 'rb').read()
g = msgpack.unpackb(b[64:64 + struct.unpack_from('<Q', b, 16)[0]])
print(g['dialect'], g['stage'], g.get('chip', '-'), g.get('mode', '-'))
PYEOF
}

# int8_of ONNX P: the model through onnx2top, top-opt ($T/P.top),
# calibrate on $T/cal.npz ($T/P.table) and top2tpu int8 for tpu-a ($T/P.tpu).
int8_of() {
	onnx2top "$1" | top-opt -o "$T/$2.top"
	calibrate "$T/$2.top" -d "$T/cal.npz" -o "$T/$2.table" 2>/dev/null
	top2tpu "$T/$2.top" --chip tpu-a --mode int8 --calib "$T/$2.table" -o "$T/$2.tpu"
}

# uniform_net NAME SEED CALS: the Python on stdin builds the graph g of one
# float input x, given np, onnx, h (onnx.helper), TP, nh and r = numpy's
# default_rng(SEED); g is saved (opset 13, IR version 8) as $T/NAME.onnx,
# one x drawn by r uniform in [-1, 1) as $T/in.npz, then CALS as $T/cal.npz
uniform_net() {
	{
		printf '%s\n' 'import sys, numpy as np, onnx' \
			'from onnx import helper as h, TensorProto as TP, numpy_helper as nh' \
			"r = np.random.default_rng($2)"
		cat
		printf '%s\n' 'm = h.make_model(g, opset_imports=[h.make_opsetid("", 13)])' \
			'm.ir_version = 8' "onnx.save(m, sys.argv[1] + \"/$1.onnx\")" \
			'xs = tuple(v.dim_value for v in g.input[0].type.tensor_type.shape.dim)' \
			'np.savez(sys.argv[1] + "/in.npz", x=r.uniform(-1, 1, xs).astype(np.float32))' \
			"np.savez(sys.argv[1] + \"/cal.npz\", x=r.uniform(-1, 1, ($3,) + xs).astype(np.float32))"
	} | $PY - "$T"
}

@test "f32 lowering keeps every op and tensor name" {
	run top2tpu "$QN/net.top" --chip tpu-b --mode f32 -o "$T/f.tpu"
	assert_success
	run irmeta "$T/f.tpu"
	assert_output 'tpu lowered tpu-b f32'
	run irdump "$T/f.tpu"
	assert_success
	[ "$(irdump "$T/f.tpu" | grep -c '^op ')" = "$(irdump "$QN/net.top" | grep -c '^op ')" ]
	refute_output --partial 'Cast'
	run ir-run "$T/f.tpu" -i "$QN/input.npz" -o "$T/q.npz"
	assert_success
	ir-run "$QN/net.top" -i "$QN/input.npz" -o "$T/f.npz"
	run npz-compare "$T/f.npz" "$T/q.npz" --tolerance 0.99999,0.999
	assert_success
}

@test "int8 lowering: casts at the edges, i8 inside, close to float" {
	run top2tpu "$QN/net.top" --chip tpu-a --mode int8 --calib "$QN/net.table" -o "$T/q.tpu"
	assert_success
	run irmeta "$T/q.tpu"
	assert_output 'tpu lowered tpu-a int8'
	run irdump "$T/q.tpu"
	assert_output --regexp 'op Cast x_quant in=x out=x_i8'
	assert_output --regexp 'op Cast y_dequant in=y_i8 out=y '
	assert_output --regexp 'op Conv conv1 in=x_i8,w1,b1,conv1_multiplier,conv1_shift out=r1'
	assert_output --regexp 'op Add add in=r1,c2 out=r2 .*multipliers=\[[0-9]+,[0-9]+\] rshift='
	assert_output --regexp 'op Scale bn '
	run ir-run "$T/q.tpu" -i "$QN/input.npz" -o "$T/q.npz" --dump-all
	assert_success
	ir-run "$QN/net.top" -i "$QN/input.npz" -o "$T/f.npz" --dump-all
	run npz-compare "$T/f.npz" "$T/q.npz" --tolerance 0.999,0.9
	assert_success
	assert_output --partial 'only in B: x_i8'
}

@test "int8: activations with min >= 0 are u8 (T / 255), others i8; --signed-only" {
	top2tpu "$QN/net.top" --chip tpu-a --mode int8 --calib "$QN/net.table" -o "$T/q.tpu"
	top2tpu "$QN/net.top" --chip tpu-a --mode int8 --calib "$QN/net.table" --signed-only -o "$T/s.tpu"
	$PY - "$T/q.tpu" "$T/s.tpu" "$QN/net.table" <<'PYEOF'
import struct, sys, msgpack
def tensors(p):
    b = open(p, 'rb').read()
    g = msgpack.unpackb(b[64:64 + struct.unpack_from('<Q', b, 16)[0]])
    return {t['name']: t for t in g['tensors']}
q, s = tensors(sys.argv[1]), tensors(sys.argv[2])
tab = {l.split()[0]: [float(v) for v in l.split()[1:]] for l in open(sys.argv[3]) if l[0] != '#'}
tab['ap'] = tab['cat']   # the AveragePool only the Concat reads takes its scale
bad = []
for name, (th, mn, mx) in tab.items():
    t = q.get(name + '_i8') or q.get(name)
    want = ('u8', th / 255) if mn >= 0 else ('i8', th / 127)
    if t['dtype'] != want[0] or abs(t['scale'] - want[1]) > 1e-6 * want[1]:
        bad.append('%s: %s %g, want %s %g' % (name, t['dtype'], t['scale'], *want))
assert any(t['dtype'] == 'u8' for t in q.values()), 'no u8 at all'
bad += [n for n, t in s.items() if t['dtype'] == 'u8']
print('\n'.join(bad))
sys.exit(1 if bad else 0)
PYEOF
	# the u8 graph through the whole pipe: tpu-sim equals ir-run bit for bit
	ir-run "$T/q.tpu" -i "$QN/input.npz" -o "$T/ir.npz"
	weight-reorder "$T/q.tpu" | layergroup | addr-assign 2>/dev/null | codegen -o "$T/q.tmodel"
	tpu-sim "$T/q.tmodel" -i "$QN/input.npz" -o "$T/sim.npz" >/dev/null
	cmp "$T/ir.npz" "$T/sim.npz"
	# one more bit for the first ReLU output: closer to float
	ir-run "$QN/net.top" -i "$QN/input.npz" -o "$T/f.npz" --dump-all
	ir-run "$T/q.tpu" -i "$QN/input.npz" -o "$T/u.npz" --dump-all
	ir-run "$T/s.tpu" -i "$QN/input.npz" -o "$T/s.npz" --dump-all
	cu=$(npz-compare "$T/f.npz" "$T/u.npz" --tolerance 0,0 2>/dev/null | awk '$1 == "r1" { print $5 }')
	cs=$(npz-compare "$T/f.npz" "$T/s.npz" --tolerance 0,0 2>/dev/null | awk '$1 == "r1" { print $5 }')
	awk -v u="$cu" -v s="$cs" 'BEGIN { exit !(u > s + 1) }'
}

@test "--asymmetric: every activation u8 with a zero point, close to float, tpu-sim bit-identical" {
	top2tpu "$QN/net.top" --chip tpu-a --mode int8 --calib "$QN/net.table" --asymmetric -o "$T/a.tpu"
	$PY - "$T/a.tpu" "$QN/net.table" <<'PYEOF'
import struct, sys, msgpack
b = open(sys.argv[1], 'rb').read()
g = msgpack.unpackb(b[64:64 + struct.unpack_from('<Q', b, 16)[0]])
q = {t['name']: t for t in g['tensors']}
tab = {l.split()[0]: [float(v) for v in l.split()[1:]] for l in open(sys.argv[2]) if l[0] != '#'}
tab['ap'] = tab['cat']   # the AveragePool only the Concat reads takes its scale
bad, zps = [], 0
for name, (th, mn, mx) in tab.items():
    t = q.get(name + '_i8') or q.get(name)
    if t is None or t['dtype'] not in ('u8', 'i8'):
        continue
    # formats/tpuc-quant.5: [max(min,-T), min(max,T)] widened to hold 0
    lo, hi = min(max(mn, -th), 0), max(min(mx, th), 0)
    s = (hi - lo) / 255
    z = min(max(int(-lo / s + 0.5), 0), 255)
    zps += z != 0
    got = (t['dtype'], t.get('zero_point', 0))
    if got != ('u8', z) or abs(t['scale'] - s) > 1e-6 * s:
        bad.append('%s: %s zp %d scale %g, want u8 zp %d scale %g' % (name, *got, t['scale'], z, s))
assert zps > 0, 'no zero point at all'
print('\n'.join(bad))
sys.exit(1 if bad else 0)
PYEOF
	ir-run "$QN/net.top" -i "$QN/input.npz" -o "$T/f.npz"
	ir-run "$T/a.tpu" -i "$QN/input.npz" -o "$T/a.npz" --dump-all
	run npz-compare "$T/f.npz" "$T/a.npz" --tolerance 0.999,0.9
	assert_success
	ir-run "$T/a.tpu" -i "$QN/input.npz" -o "$T/ir.npz"
	weight-reorder "$T/a.tpu" | layergroup | addr-assign 2>/dev/null | codegen -o "$T/a.tmodel"
	tpu-sim "$T/a.tmodel" -i "$QN/input.npz" -o "$T/sim.npz" >/dev/null
	cmp "$T/ir.npz" "$T/sim.npz"
	run top2tpu "$QN/net.top" --chip tpu-a --mode int8 --calib "$QN/net.table" --asymmetric \
		--signed-only -o "$T/x.tpu"
	assert_failure 2
	assert_output --partial '--signed-only and --asymmetric exclude each other'
	[ ! -e "$T/x.tpu" ]
}

@test "bf16 and f16: float tensors in the mode's dtype, Casts at the edges, close to float" {
	ir-run "$QN/net.top" -i "$QN/input.npz" -o "$T/f.npz"
	for m in bf16 f16; do
		run top2tpu "$QN/net.top" --chip tpu-a --mode $m -o "$T/$m.tpu"
		assert_success
		run irmeta "$T/$m.tpu"
		assert_output "tpu lowered tpu-a $m"
		run irdump "$T/$m.tpu"
		assert_output --regexp "op Cast x_cast_$m in=x out=x_$m"
		assert_output --regexp "op Cast y_cast_f32 in=y_$m out=y "
		assert_output --regexp "op Conv conv1 in=x_$m,w1,b1 out=r1"
		$PY - "$T/$m.tpu" $m <<'PYEOF'
import struct, sys, msgpack
b = open(sys.argv[1], 'rb').read()
g = msgpack.unpackb(b[64:64 + struct.unpack_from('<Q', b, 16)[0]])
# biases of Conv and Gemm stay f32 (the chip adds them to an f32 accumulator),
# and so do the constants of the vector unit's arithmetic (Scale)
bias = ('b1', 'b2', 'fb', 'bn_scale', 'bn_bias')
bad = [t['name'] for t in g['tensors'] if t['dtype'] not in (sys.argv[2], 'i64', 'i32')
       and t['name'] not in ('x', 'y') + bias]
bad += [t['name'] for t in g['tensors'] if t['name'] in bias and t['dtype'] != 'f32']
print(bad)
sys.exit(1 if bad else 0)
PYEOF
		ir-run "$T/$m.tpu" -i "$QN/input.npz" -o "$T/$m.npz"
		tol=0.999; [ $m = f16 ] && tol=0.9999
		run npz-compare "$T/f.npz" "$T/$m.npz" --tolerance $tol,0.9
		assert_success
		# through the whole pipe, tpu-sim agrees bit for bit
		weight-reorder "$T/$m.tpu" | layergroup | addr-assign 2>/dev/null | codegen -o "$T/$m.tmodel"
		tpu-sim "$T/$m.tmodel" -i "$QN/input.npz" -o "$T/$m.sim.npz" >/dev/null
		cmp "$T/$m.npz" "$T/$m.sim.npz"
	done
}

@test "f16 with --calib: ops beyond f16's range stay in f32, each named" {
	# a table claiming c2 reaches 1e5 (f16 tops at 65504): conv2, which
	# writes it, and add, which reads it, stay f32; nothing else does
	awk '$1 == "c2" { $4 = "100000" } { print }' "$QN/net.table" >"$T/big.table"
	run --separate-stderr top2tpu "$QN/net.top" --chip tpu-a --mode f16 --calib "$T/big.table" -o "$T/h.tpu"
	assert_success
	[ "${#stderr_lines[@]}" -eq 2 ]
	[[ ${stderr_lines[0]} == "top2tpu: note: op 'conv2' kept in f32: 'c2' reaches 1e+05, beyond f16's 65504" ]]
	[[ ${stderr_lines[1]} == "top2tpu: note: op 'add' kept in f32: 'c2' reaches 1e+05, beyond f16's 65504" ]]
	run irdump "$T/h.tpu"
	assert_output --regexp "op Conv conv2 in=r1_f32,w2,b2 out=c2 "
	assert_output --regexp "op Conv conv1 in=x_f16,w1,b1 out=r1 "
	# the table of the samples themselves: nothing to keep, the same graph as without it
	run --separate-stderr top2tpu "$QN/net.top" --chip tpu-a --mode f16 --calib "$QN/net.table" -o "$T/c.tpu"
	assert_success
	[ -z "$stderr" ]
	top2tpu "$QN/net.top" --chip tpu-a --mode f16 -o "$T/n.tpu"
	cmp "$T/c.tpu" "$T/n.tpu"
	# a bad table is refused even in f16
	run top2tpu "$QN/net.top" --chip tpu-a --mode f16 --calib "$T/nope.table" -o "$T/x.tpu"
	assert_failure
	assert_output --partial "nope.table"
	[ ! -e "$T/x.tpu" ]
}

@test "--qtable: per-op modes with Casts between precisions" {
	printf '# keep the first conv in f32, the add in bf16\nconv1 f32\nadd bf16\n\nfc f16\n' >"$T/q.qt"
	run top2tpu "$QN/net.top" --chip tpu-a --mode int8 --calib "$QN/net.table" --qtable "$T/q.qt" -o "$T/m.tpu"
	assert_success
	run irdump "$T/m.tpu"
	assert_output --regexp 'op Conv conv1 in=x,w1,b1 out=r1 '
	assert_output --regexp 'op Cast r1_quant in=r1 out=r1_i8'
	assert_output --regexp 'op Cast r1_cast_bf16 in=r1 out=r1_bf16'
	assert_output --regexp 'op Cast c2_cast_bf16 in=c2 out=c2_bf16'
	assert_output --regexp 'op Add add in=r1_bf16,c2_bf16 out=r2 '
	assert_output --regexp 'op Cast y_cast_f32 in=y_f16 out=y '
	ir-run "$QN/net.top" -i "$QN/input.npz" -o "$T/f.npz"
	ir-run "$T/m.tpu" -i "$QN/input.npz" -o "$T/m.npz"
	run npz-compare "$T/f.npz" "$T/m.npz" --tolerance 0.999,0.9
	assert_success
	weight-reorder "$T/m.tpu" | layergroup | addr-assign 2>/dev/null | codegen -o "$T/m.tmodel"
	tpu-sim "$T/m.tmodel" -i "$QN/input.npz" -o "$T/m.sim.npz" >/dev/null
	cmp "$T/m.npz" "$T/m.sim.npz"
	# a float graph with one op in int8 needs the table
	printf 'conv2 int8\n' >"$T/i.qt"
	run top2tpu "$QN/net.top" --chip tpu-a --mode bf16 --qtable "$T/i.qt" -o "$T/x.tpu"
	assert_failure 1
	assert_output "top2tpu: '$T/i.qt' puts ops in int8: --calib TABLE is needed"
	run top2tpu "$QN/net.top" --chip tpu-a --mode bf16 --qtable "$T/i.qt" --calib "$QN/net.table" -o "$T/i.tpu"
	assert_success
	run irdump "$T/i.tpu"
	assert_output --regexp 'op Cast r1_quant in=r1 out=r1_i8'
	assert_output --regexp 'op Cast c2_cast_bf16 in=c2 out=c2_bf16'
}

@test "a 200,000-line qtable is read at once and its first unknown op named" {
	$PY -c "import sys; sys.stdout.write(''.join('op%d f32\n' % i for i in range(200000)))" >"$T/big.qt"
	local t0=$(date +%s%N)
	run top2tpu "$QN/net.top" --chip tpu-a --mode f32 --qtable "$T/big.qt" -o "$T/x.tpu"
	local ms=$((($(date +%s%N) - t0) / 1000000))
	assert_failure 1
	assert_output --partial "'$T/big.qt': line 1: no op 'op0' in the graph"
	[ "$ms" -lt 5000 ] || fail "took $ms ms"
	[ ! -e "$T/x.tpu" ]
}

@test "bad qtables are refused naming the file and the line" {
	printf 'conv1 f32\nnosuchop int8\n' >"$T/a.qt"
	run top2tpu "$QN/net.top" --chip tpu-a --mode int8 --calib "$QN/net.table" --qtable "$T/a.qt" -o "$T/x.tpu"
	assert_failure 1
	assert_output "top2tpu: '$QN/net.top': '$T/a.qt': line 2: no op 'nosuchop' in the graph"
	printf 'conv1 int4\n' >"$T/b.qt"
	run top2tpu "$QN/net.top" --chip tpu-a --mode f32 --qtable "$T/b.qt" -o "$T/x.tpu"
	assert_failure 1
	assert_output "top2tpu: '$T/b.qt': line 1: expected 'op_name MODE' with MODE f32, bf16, f16 or int8"
	printf 'conv1 f32\nconv1 bf16\n' >"$T/c.qt"
	run top2tpu "$QN/net.top" --chip tpu-a --mode f32 --qtable "$T/c.qt" -o "$T/x.tpu"
	assert_failure 1
	assert_output "top2tpu: '$T/c.qt': line 2: op 'conv1' listed twice"
	printf 'conv1 f32' >"$T/d.qt"
	run top2tpu "$QN/net.top" --chip tpu-a --mode f32 --qtable "$T/d.qt" -o "$T/x.tpu"
	assert_failure 1
	assert_output --partial "truncated"
	run top2tpu "$QN/net.top" --chip tpu-a --mode f32 --qtable "$T/none.qt" -o "$T/x.tpu"
	assert_failure 1
	assert_output --partial "cannot open '$T/none.qt'"
	[ ! -e "$T/x.tpu" ]
}

@test "int8 lowering is deterministic" {
	top2tpu "$QN/net.top" --chip tpu-a --mode int8 --calib "$QN/net.table" -o "$T/a.tpu"
	top2tpu - --chip tpu-a --mode int8 --calib "$QN/net.table" <"$QN/net.top" >"$T/b.tpu"
	cmp "$T/a.tpu" "$T/b.tpu"
}

@test "stage origin is accepted" {
	onnx2top "$FX/clip9.onnx" -o "$T/clip.top"
	run top2tpu "$T/clip.top" --chip tpu-a --mode f32 -o "$T/o.tpu"
	assert_success
}

@test "usage errors exit 2" {
	run top2tpu "$QN/net.top" --mode f32
	assert_failure 2
	assert_output --partial '--chip is required'
	run top2tpu "$QN/net.top" --chip tpu-a
	assert_failure 2
	run top2tpu "$QN/net.top" --chip tpu-z --mode f32
	assert_failure 2
	assert_output --partial "unknown chip 'tpu-z'"
	run top2tpu "$QN/net.top" --chip tpu-a --mode int4
	assert_failure 2
	assert_output --partial "unknown mode 'int4'"
	run top2tpu "$QN/net.top" --chip tpu-a --mode int8 -o "$T/x.tpu"
	assert_failure 2
	assert_output --partial '--mode int8 needs --calib TABLE'
	[ ! -e "$T/x.tpu" ]
	run top2tpu "$QN/net.top" --chip tpu-a --mode f32 --bogus
	assert_failure 2
	run top2tpu "$QN/net.top" extra --chip tpu-a --mode f32
	assert_failure 2
	run top2tpu -h
	assert_success
	assert_output --partial 'usage: top2tpu'
}

@test "missing, truncated and wrong-stage input is refused" {
	run top2tpu "$T/nope.top" --chip tpu-a --mode f32 -o "$T/x.tpu"
	assert_failure 1
	assert_output --partial "top2tpu: cannot open '$T/nope.top'"
	head -c 100 "$QN/net.top" >"$T/trunc.top"
	run top2tpu "$T/trunc.top" --chip tpu-a --mode f32 -o "$T/x.tpu"
	assert_failure 1
	assert_output --regexp "^top2tpu: '$T/trunc.top': "
	top2tpu "$QN/net.top" --chip tpu-a --mode f32 -o "$T/f.tpu"
	run top2tpu "$T/f.tpu" --chip tpu-a --mode f32 -o "$T/x.tpu"
	assert_failure 1
	assert_output --partial "wrong stage: got tpu IR at stage 'lowered'"
	[ ! -e "$T/x.tpu" ]
}

@test "a table missing a tensor names the op, the tensor and the table" {
	grep -v '^c2 ' "$QN/net.table" >"$T/part.table"
	run top2tpu "$QN/net.top" --chip tpu-a --mode int8 --calib "$T/part.table" -o "$T/x.tpu"
	assert_failure 1
	assert_output "top2tpu: '$QN/net.top': op 'conv2' (Conv): no threshold for 'c2' in '$T/part.table'"
	[ ! -e "$T/x.tpu" ]
	run top2tpu "$QN/net.top" --chip tpu-a --mode int8 --calib "$T/missing.table"
	assert_failure 1
	assert_output --partial "cannot open '$T/missing.table'"
	printf 'x 1.0 0\n' >"$T/bad.table"
	run top2tpu "$QN/net.top" --chip tpu-a --mode int8 --calib "$T/bad.table"
	assert_failure 1
	assert_output "top2tpu: '$T/bad.table': line 1: expected 'name threshold min max'"
}

@test "unfolded BatchNormalization is refused by name; int8 forms that do not fit fall back to bf16" {
	onnx2top "$FX/bn_alone.onnx" -o "$T/bn.top"
	run top2tpu "$T/bn.top" --chip tpu-a --mode f32
	assert_failure 1
	assert_output --partial "op 'bn0' (BatchNormalization): must be folded or turned into Scale by top-opt"
	onnx2top "$FX/mixed.onnx" | top-opt -o "$T/mixed.top"
	$PY -c "import numpy as np; np.savez('$T/s.npz', x=np.random.RandomState(0).standard_normal((2, 1, 3, 8, 8)).astype(np.float32))"
	calibrate "$T/mixed.top" -d "$T/s.npz" -o "$T/mixed.table"
	# count_include_pad=0 with padding: windows of unequal size
	run top2tpu "$T/mixed.top" --chip tpu-a --mode int8 --calib "$T/mixed.table" -o "$T/mixed.tpu"
	assert_success
	run irdump "$T/mixed.tpu"
	assert_line --regexp '^op AveragePool AveragePool_ap in=c_bf16 out=ap '
	assert_line 'op MatMul MatMul_y in=f,mw,MatMul_y_bias,MatMul_y_multiplier,MatMul_y_shift out=y_i8'
	# Gemm with transA
	$PY - "$T/gt.onnx" <<'PYEOF'
import sys, numpy as np, onnx
from onnx import TensorProto, helper, numpy_helper
w = numpy_helper.from_array(np.random.RandomState(1).standard_normal((4, 3)).astype(np.float32), "w")
g = helper.make_graph([helper.make_node("Gemm", ["x", "w"], ["y"], name="gt", transA=1)], "gt",
                      [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 2])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])], [w])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), sys.argv[1])
PYEOF
	onnx2top "$T/gt.onnx" -o "$T/gt.top"
	printf 'x 1 -1 1\ny 4 -4 4\n' >"$T/gt.table"
	run top2tpu "$T/gt.top" --chip tpu-a --mode int8 --calib "$T/gt.table" -o "$T/gt.tpu"
	assert_success
	run irdump "$T/gt.tpu"
	assert_line --regexp '^op Gemm gt in=x_bf16,w,? out=y_bf16 '
}

@test "int8 lookup tables scale their output by the inputs calibration saw" {
	# Exp of a non-positive tensor (a decomposed softmax): its i8 input
	# codes reach +T too, and exp(+T) must not set the output scale
	$PY - "$T" <<'PYEOF'
import sys, numpy as np, onnx
from onnx import TensorProto, helper
d = sys.argv[1]
vi = lambda n, s: helper.make_tensor_value_info(n, TensorProto.FLOAT, s)
g = helper.make_graph([
    helper.make_node("ReduceMax", ["x"], ["m"], name="max", axes=[1], keepdims=1),
    helper.make_node("Sub", ["x", "m"], ["s"], name="sub"),
    helper.make_node("Exp", ["s"], ["y"], name="exp"),
], "lut", [vi("x", [1, 8, 4, 4])], [vi("y", [1, 8, 4, 4])])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), d + "/lut.onnx")
r = np.random.RandomState(5)
np.savez(d + "/cal.npz", x=(3 * r.standard_normal((8, 1, 8, 4, 4))).astype(np.float32))
np.savez(d + "/in.npz", x=(3 * r.standard_normal((1, 8, 4, 4))).astype(np.float32))
PYEOF
	onnx2top "$T/lut.onnx" -o "$T/lut.top"
	calibrate "$T/lut.top" -d "$T/cal.npz" -o "$T/lut.table"
	top2tpu "$T/lut.top" --chip tpu-a --mode int8 --calib "$T/lut.table" -o "$T/lut.tpu"
	# the output is u8 with a scale for about [0, 1] (up to exp of one
	# input step above the calibrated max, 0), not for exp(+T)
	sc=$(ir-print "$T/lut.tpu" | sed -n 's/.*Exp(.*-> u8\[1,8,4,4\]<scale=\([0-9.e+-]*\)>.*/\1/p')
	echo "Exp output scale $sc" >&3
	awk -v s="$sc" 'BEGIN { exit !(s > 1 / 255 && s < 1.2 / 255) }'
	ir-run "$T/lut.top" -i "$T/in.npz" -o "$T/f.npz"
	ir-run "$T/lut.tpu" -i "$T/in.npz" -o "$T/q.npz"
	run npz-compare "$T/f.npz" "$T/q.npz" --tolerance 0.999,0.9
	assert_success
}

@test "int8 Add and Concat of inputs far apart run in bf16; a Concat of float inputs stays float" {
	# attention scores plus a -1e4 additive mask; a detector head that
	# concatenates boxes in pixels with scores in [0, 1], twice
	$PY - "$T" <<'PYEOF'
import sys, numpy as np, onnx
from onnx import TensorProto, helper, numpy_helper
d = sys.argv[1]
vi = lambda n, s: helper.make_tensor_value_info(n, TensorProto.FLOAT, s)
mask = np.where(np.tril(np.ones((6, 6))) > 0, 0, -1e4).astype(np.float32)
g = helper.make_graph([
    helper.make_node("Add", ["s", "mask"], ["sm"], name="addmask"),
    helper.make_node("Softmax", ["sm"], ["p"], name="softmax", axis=-1),
    helper.make_node("Mul", ["b", "k"], ["box"], name="scale"),
    helper.make_node("Sigmoid", ["c"], ["cls"], name="sig"),
    helper.make_node("Concat", ["box", "cls"], ["det"], name="cat1", axis=-1),
    helper.make_node("Concat", ["det", "det"], ["y"], name="cat2", axis=1),
], "far", [vi("s", [1, 2, 6, 6]), vi("b", [1, 10, 4]), vi("c", [1, 10, 3])],
    [vi("p", [1, 2, 6, 6]), vi("y", [1, 20, 7])],
    [numpy_helper.from_array(mask, "mask"), numpy_helper.from_array(np.array(300, np.float32), "k")])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), d + "/far.onnx")
r = np.random.RandomState(4)
smp = lambda n: dict(s=2 * r.standard_normal((n, 1, 2, 6, 6)), b=r.uniform(0, 1, (n, 1, 10, 4)),
                     c=r.standard_normal((n, 1, 10, 3)))
np.savez(d + "/cal.npz", **{k: v.astype(np.float32) for k, v in smp(8).items()})
np.savez(d + "/in.npz", **{k: v[0].astype(np.float32) for k, v in smp(1).items()})
PYEOF
	onnx2top "$T/far.onnx" -o "$T/far.top"
	calibrate "$T/far.top" -d "$T/cal.npz" -o "$T/far.table"
	top2tpu "$T/far.top" --chip tpu-a --mode int8 --calib "$T/far.table" -o "$T/far.tpu"
	run irdump "$T/far.tpu"
	assert_line 'op Add addmask in=s_bf16,mask out=sm'
	assert_line 'op Concat cat1 in=box_bf16,cls_bf16 out=det axis=2'
	# the output's widening Cast goes before the Concat (once for det,
	# read twice), whose result is the f32 output itself
	assert_line 'op Cast det_f32 in=det out=det_f32 to="f32"'
	assert_line 'op Concat cat2 in=det_f32,det_f32 out=y axis=1'
	ir-run "$T/far.top" -i "$T/in.npz" -o "$T/f.npz"
	ir-run "$T/far.tpu" -i "$T/in.npz" -o "$T/q.npz"
	# the scores keep their precision beside the boxes
	$PY -c "import numpy as np, sys
f, q = np.load('$T/f.npz'), np.load('$T/q.npz')
a, b = f['y'][..., 4:].ravel(), q['y'][..., 4:].ravel()
c = a @ b / np.linalg.norm(a) / np.linalg.norm(b)
a, b = f['p'].ravel(), q['p'].ravel()
c2 = a @ b / np.linalg.norm(a) / np.linalg.norm(b)
print('scores', c, 'softmax', c2)
sys.exit(not (c > 0.999 and c2 > 0.999))"
}

# Faster R-CNN's RPN concatenates the indices of its TopKs: an op on
# integers only, which calibration gives no threshold (nothing to
# quantise), lowers as in f32, its integers kept.
@test "int8: the quantising Cast of a transposed NHWC input goes before the Transpose, tpu-sim bit-identical" {
	uniform_net nhwc 3 8 <<'PYEOF'
w = (r.standard_normal((4, 3, 3, 3)) * 0.3).astype(np.float32)
g = h.make_graph([h.make_node("Transpose", ["x"], ["t"], perm=[0, 3, 1, 2]),
                  h.make_node("Conv", ["t", "w"], ["c"], pads=[1, 1, 1, 1]), h.make_node("Relu", ["c"], ["y"])],
                 "nhwc", [h.make_tensor_value_info("x", TP.FLOAT, [1, 8, 8, 3])],
                 [h.make_tensor_value_info("y", TP.FLOAT, [1, 4, 8, 8])], [nh.from_array(w, "w")])
PYEOF
	int8_of "$T/nhwc.onnx" n
	run irdump "$T/n.tpu"
	assert_line 'op Cast x_i8 in=x out=x_i8 to="i8"'
	assert_line 'op Transpose Transpose_t in=x_i8 out=t_i8 perm=[0,3,1,2]'
	weight-reorder "$T/n.tpu" | layergroup | addr-assign -q | codegen -o "$T/n.tmodel"
	tpu-sim "$T/n.tmodel" -i "$T/in.npz" -o "$T/sim.npz" 2>/dev/null
	ir-run "$T/n.tpu" -i "$T/in.npz" -o "$T/ir.npz"
	npz-compare "$T/ir.npz" "$T/sim.npz" --tolerance 1,1
	ir-run "$T/n.top" -i "$T/in.npz" -o "$T/f.npz"
	npz-compare "$T/f.npz" "$T/ir.npz" --tolerance 0.99
}

@test "int8: a nearest Resize copies codes at its input's scale (no float detour), sliced, tpu-sim bit-identical; a linear one runs in bf16" {
	uniform_net up 4 4 <<'PYEOF'
w = (r.standard_normal((8, 3, 3, 3)) * 0.3).astype(np.float32)
sc = nh.from_array(np.array([1, 1, 2, 2], np.float32), "sc")
g = h.make_graph([h.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
                  h.make_node("Resize", ["c", "", "sc"], ["n"], mode="nearest",
                              coordinate_transformation_mode="asymmetric", nearest_mode="floor"),
                  h.make_node("Resize", ["c", "", "sc"], ["l"], mode="linear"),
                  h.make_node("Add", ["n", "l"], ["y"])],
                 "up", [h.make_tensor_value_info("x", TP.FLOAT, [1, 3, 256, 256])],
                 [h.make_tensor_value_info("y", TP.FLOAT, [1, 8, 512, 512])], [nh.from_array(w, "w"), sc])
PYEOF
	int8_of "$T/up.onnx" u
	run irdump "$T/u.tpu"
	assert_line --partial 'op Resize Resize_n in=c out=n '
	assert_line --partial 'op Resize Resize_l in=c_bf16 out=l '
	run ir-print "$T/u.tpu"
	assert_line --regexp '^  %n = Resize.*: \(i8\[1,8,256,256\]<scale=([0-9.]+)>\) -> i8\[1,8,512,512\]<scale=\1> '
	weight-reorder "$T/u.tpu" | layergroup | addr-assign -q | codegen -o "$T/u.tmodel"
	run tpu-sim -q -p "$T/u.tmodel" -i "$T/in.npz" -o "$T/sim.npz"
	assert_success
	run awk '$2 == "Resize" { print ($3 > 1) }' <<<"$output"
	assert_line --index 0 1
	ir-run "$T/u.tpu" -i "$T/in.npz" -o "$T/ir.npz"
	cmp "$T/ir.npz" "$T/sim.npz"
	ir-run "$T/u.top" -i "$T/in.npz" -o "$T/f.npz"
	npz-compare "$T/f.npz" "$T/ir.npz" --tolerance 0.999
}

@test "int8: an op on integers only (a Concat of TopK indices, an Add of offsets) needs no threshold and keeps its integers" {
	$PY - "$T" <<'PYEOF'
import sys, numpy as np, onnx
from onnx import TensorProto as TP, helper as h, numpy_helper as nh
d = sys.argv[1]
g = h.make_graph([
    h.make_node("TopK", ["x", "k"], ["v", "i"], name="topk", axis=1),
    h.make_node("Add", ["i", "off"], ["j"], name="offset"),
    h.make_node("Concat", ["i", "j"], ["ij"], name="cat", axis=1),
    h.make_node("Relu", ["v"], ["r"], name="relu"),
], "ints", [h.make_tensor_value_info("x", TP.FLOAT, [1, 16])],
    [h.make_tensor_value_info("ij", TP.INT64, [1, 8]), h.make_tensor_value_info("r", TP.FLOAT, [1, 4])],
    [nh.from_array(np.array([4], np.int64), "k"), nh.from_array(np.array(16, np.int64), "off")])
onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 13)]), d + "/ints.onnx")
r = np.random.RandomState(5)
x = r.standard_normal((1, 16)).astype(np.float32)
np.savez(d + "/in.npz", x=x)
np.savez(d + "/cal.npz", x=r.standard_normal((4, 1, 16)).astype(np.float32))
i = np.argsort(-x, 1)[:, :4]
np.save(d + "/ij.npy", np.concatenate([i, i + 16], 1))
PYEOF
	onnx2top "$T/ints.onnx" -o "$T/ints.top"
	calibrate "$T/ints.top" -d "$T/cal.npz" -o "$T/ints.table"
	run grep -c '^ij ' "$T/ints.table"
	assert_output 0
	top2tpu "$T/ints.top" --chip tpu-a --mode int8 --calib "$T/ints.table" -o "$T/ints.tpu"
	run irdump "$T/ints.tpu"
	assert_line 'op Concat cat in=i,j out=ij axis=1'
	ir-run "$T/ints.tpu" -i "$T/in.npz" -o "$T/q.npz"
	$PY -c "import numpy as np; q = np.load('$T/q.npz')['ij']; e = np.load('$T/ij.npy')
assert (q == e).all(), (q, e)"
}

@test "int8 MatMul: weights per column, two activations per tensor with batch broadcast, constant A in bf16" {
	$PY - "$T" <<'PYEOF'
import sys, numpy as np, onnx
from onnx import TensorProto, helper, numpy_helper
d = sys.argv[1]
r = np.random.RandomState(3)
w = numpy_helper.from_array(r.standard_normal((4, 6)).astype(np.float32), "w")
c = numpy_helper.from_array(r.standard_normal((5, 3)).astype(np.float32), "c")
vi = lambda n, s: helper.make_tensor_value_info(n, TensorProto.FLOAT, s)
g = helper.make_graph([
    helper.make_node("MatMul", ["x", "w"], ["h"], name="mmw"),          # [2,1,3,6]
    helper.make_node("MatMul", ["h", "v"], ["y"], name="mmv"),          # [2,2,3,5]
    helper.make_node("MatMul", ["c", "x"], ["z"], name="mmc"),          # [2,1,5,4]
], "mm", [vi("x", [2, 1, 3, 4]), vi("v", [1, 2, 6, 5])], [vi("y", [2, 2, 3, 5]), vi("z", [2, 1, 5, 4])],
    [w, c])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), d + "/mm.onnx")
s = lambda *sh: r.standard_normal(sh).astype(np.float32)
np.savez(d + "/cal.npz", x=s(8, 2, 1, 3, 4), v=s(8, 1, 2, 6, 5))
np.savez(d + "/in.npz", x=s(2, 1, 3, 4), v=s(1, 2, 6, 5))
PYEOF
	onnx2top "$T/mm.onnx" -o "$T/mm.top"
	calibrate "$T/mm.top" -d "$T/cal.npz" -o "$T/mm.table"
	for a in "" --asymmetric; do
		run top2tpu "$T/mm.top" --chip tpu-a --mode int8 $a --calib "$T/mm.table" -o "$T/mm.tpu"
		assert_success
		run irdump "$T/mm.tpu"
		assert_line 'op MatMul mmw in=x_i8,w,mmw_bias,mmw_multiplier,mmw_shift out=h'
		assert_output --regexp 'weight w i8 \[4,6\]'
		assert_output --regexp 'weight mmw_multiplier i32 \[6\]'
		assert_line 'op MatMul mmv in=h,v_i8,mmv_bias,mmv_multiplier,mmv_shift out=y_i8'
		assert_output --regexp 'weight mmv_multiplier i32 \[1\]'
		assert_output --regexp 'op MatMul mmc in=c,x_bf16 out=z_bf16'
		ir-run "$T/mm.top" -i "$T/in.npz" -o "$T/f.npz"
		ir-run "$T/mm.tpu" -i "$T/in.npz" -o "$T/q.npz"
		run npz-compare "$T/f.npz" "$T/q.npz" --tolerance 0.99,0.8
		assert_success
		weight-reorder "$T/mm.tpu" | layergroup | addr-assign 2>/dev/null | codegen -o "$T/mm.tmodel"
		tpu-sim "$T/mm.tmodel" -i "$T/in.npz" -o "$T/s.npz" >/dev/null 2>&1
		cmp "$T/q.npz" "$T/s.npz"
	done
}

# dense TABLE-LINES: the DenseNet block of fuse_fixtures.py (d0, then
# j2 = [d0 d1], j3 = [j2 d2], y = [j3 d3] after top-opt) lowered to int8
# with a hand-made table (x, d0, d1, j2, d2, j3, d3, y) into $T/d.tpu.
dense() {
	/usr/bin/python3 "$BATS_TEST_DIRNAME/fixtures/fuse_fixtures.py" "$T/ff" >/dev/null
	onnx2top "$T/ff/dense_concat.onnx" | top-opt -o "$T/d.top"
	printf '%s\n' "$@" >"$T/d.table"
	top2tpu "$T/d.top" --chip tpu-a --mode int8 --calib "$T/d.table" -o "$T/d.tpu"
	irdump "$T/d.tpu" >"$T/d.ir"
}

@test "int8: Concats and the inputs they copy share the Concat's scale, so the Concats move codes" {
	dense 'x 1.2 -1.2 1.2' 'd0 1.3 -1 1.3' 'd1 1 -1 0.8' 'j2 1.35 -1 1.3' 'd2 0.9 -0.9 0.9' \
		'j3 1.4 -1 1.3' 'd3 1.1 -1.1 1.1' 'y 1.5 -1.5 1.5'
	run grep -c 'op Concat .*multipliers=\[1073741824,1073741824\] shifts=\[30,30\]' "$T/d.ir"
	assert_output 3
	# every map the joins copy is quantised by its Conv to y's step
	$PY - "$T/d.tpu" <<'PYEOF'
import struct, sys, msgpack
b = open(sys.argv[1], 'rb').read()
g = msgpack.unpackb(b[64:64 + struct.unpack_from('<Q', b, 16)[0]])
s = {t['name']: t.get('scale') for t in g['tensors']}
want = 1.5 / 127
for n in ('d0', 'd1', 'j2', 'd2', 'j3', 'd3', 'y_i8'):
    assert abs(s[n] - want) < 1e-7 * want, (n, s[n], want)
PYEOF
	# the copies are exact: tpu-sim gives ir-run's bytes
	ir-run "$T/d.tpu" -i "$T/ff/dense_concat.in.npz" -o "$T/q.npz"
	weight-reorder "$T/d.tpu" | layergroup | addr-assign -q | codegen -o "$T/d.tmodel"
	tpu-sim "$T/d.tmodel" -i "$T/ff/dense_concat.in.npz" -o "$T/s.npz" >/dev/null 2>&1
	cmp "$T/q.npz" "$T/s.npz"
}

@test "int8: an input other ops read keeps its scale when the Concat's step is over twice its own, and Concats whose ranges lie apart share nothing" {
	# d0 (read by d1's Conv too) has a step 7.5 times finer than y's
	dense 'x 1.2 -1.2 1.2' 'd0 0.2 -0.2 0.2' 'd1 1 -1 0.8' 'j2 1.35 -1 1.3' 'd2 0.9 -0.9 0.9' \
		'j3 1.4 -1 1.3' 'd3 1.1 -1.1 1.1' 'y 1.5 -1.5 1.5'
	run grep 'op Concat j2_op' "$T/d.ir"
	refute_output --partial 'multipliers=[1073741824,1073741824]'
	assert_output --partial ',1073741824] shifts=['
	run grep -c 'op Concat .*multipliers=\[1073741824,1073741824\] shifts=\[30,30\]' "$T/d.ir"
	assert_output 2
	# d3 40 times y's reach: y's Concat runs in float, j3 keeps its own scale
	dense 'x 1.2 -1.2 1.2' 'd0 1.3 -1 1.3' 'd1 1 -1 0.8' 'j2 1.35 -1 1.3' 'd2 0.9 -0.9 0.9' \
		'j3 1.4 -1 1.3' 'd3 60 -60 60' 'y 60 -60 60'
	run grep 'op Concat y_op' "$T/d.ir"
	refute_output --partial 'multipliers'
	run grep -c 'op Concat .*multipliers=\[1073741824,1073741824\] shifts=\[30,30\]' "$T/d.ir"
	assert_output 2
}

# lower_compose.c: a linear Conv that only a 1x1 Conv reads (a bottleneck's
# projection, then the next expansion) is one Conv in int8 when both sit
# under the cube's K tile; not when its K spans two tiles, nor when its
# output is read elsewhere, nor in f32, nor when a qtable names either.
@test "int8: a linear Conv and the 1x1 Conv alone reading it are one Conv where the cube runs it faster; tpu-sim bit-identical" {
	$PY - "$T" <<'PYEOF'
import sys, numpy as np, onnx
from onnx import helper as h, TensorProto as TP, numpy_helper as nh
r = np.random.default_rng(5)
W = lambda *s: nh.from_array((r.standard_normal(s) / np.sqrt(np.prod(s[1:]))).astype(np.float32))
inits = []
def w(name, *s):
    t = W(*s); t.name = name; inits.append(t); return name
vi = lambda n, s: h.make_tensor_value_info(n, TP.FLOAT, s)
g = h.make_graph([
    # composed: K 8 x 9 taps and 16 channels, both under one tile
    h.make_node("Conv", ["x", w("w1", 16, 8, 3, 3), w("b1", 16)], ["p"], name="proj", pads=[1, 1, 1, 1], strides=[2, 2]),
    h.make_node("Conv", ["p", w("w2", 96, 16, 1, 1), w("b2", 96)], ["e"], name="expand"),
    h.make_node("Relu", ["e"], ["y1"], name="relu"),
    # kept: K 320 spans two tiles, which the composed Conv would pay for 96
    # channels, not 16
    h.make_node("Conv", ["z", w("w3", 16, 320, 1, 1)], ["q"], name="wide"),
    h.make_node("Conv", ["q", w("w4", 96, 16, 1, 1)], ["y2"], name="after_wide"),
    # kept: the projection is an output too
    h.make_node("Conv", ["x", w("w5", 16, 8, 1, 1)], ["y3"], name="read_twice"),
    h.make_node("Conv", ["y3", w("w6", 64, 16, 1, 1)], ["y4"], name="after_twice"),
], "bottleneck", [vi("x", [1, 8, 64, 64]), vi("z", [1, 320, 32, 32])],
    [vi("y1", [1, 96, 32, 32]), vi("y2", [1, 96, 32, 32]), vi("y3", [1, 16, 64, 64]), vi("y4", [1, 64, 64, 64])],
    inits)
m = h.make_model(g, opset_imports=[h.make_opsetid("", 13)])
m.ir_version = 8
onnx.save(m, sys.argv[1] + "/b.onnx")
smp = lambda n: dict(x=r.standard_normal((n, 1, 8, 64, 64)), z=r.standard_normal((n, 1, 320, 32, 32)))
np.savez(sys.argv[1] + "/cal.npz", **{k: v.astype(np.float32) for k, v in smp(4).items()})
np.savez(sys.argv[1] + "/in.npz", **{k: v[0].astype(np.float32) for k, v in smp(1).items()})
PYEOF
	int8_of "$T/b.onnx" b
	run irdump "$T/b.tpu"
	refute_line --partial 'op Conv proj '
	assert_line --regexp '^op Conv expand in=x_i8,w2_composed,w2_composed_bias,[^ ]* out=y1_i8 kernel_shape=\[3,3\] strides=\[2,2\] pads=\[1,1,1,1\] .* do_relu=1$'
	assert_line --partial 'op Conv wide in=z_i8,'
	assert_line --partial 'op Conv after_wide in=q,'
	assert_line --partial 'op Conv read_twice in=x_i8,'
	# f32 keeps both: the cube's K tile is 16 there
	run irdump <(top2tpu "$T/b.top" --chip tpu-a --mode f32 -o -)
	assert_line --partial 'op Conv proj '
	# the one Conv: close to float, tpu-sim bit for bit ir-run, faster than
	# the two (kept apart when a qtable names one of them)
	ir-run "$T/b.top" -i "$T/in.npz" -o "$T/f.npz"
	ir-run "$T/b.tpu" -i "$T/in.npz" -o "$T/ir.npz"
	run npz-compare "$T/f.npz" "$T/ir.npz" --tolerance 0.99,0.9
	assert_success
	weight-reorder "$T/b.tpu" | layergroup | addr-assign -q | codegen -o "$T/b.tmodel"
	tpu-sim "$T/b.tmodel" -i "$T/in.npz" -o "$T/sim.npz" >"$T/one.txt" 2>&1
	cmp "$T/ir.npz" "$T/sim.npz"
	printf 'proj int8\n' >"$T/q.txt"
	top2tpu "$T/b.top" --chip tpu-a --mode int8 --calib "$T/b.table" --qtable "$T/q.txt" -o "$T/two.tpu"
	run irdump "$T/two.tpu"
	assert_line --partial 'op Conv proj '
	weight-reorder "$T/two.tpu" | layergroup | addr-assign -q | codegen -o "$T/two.tmodel"
	tpu-sim "$T/two.tmodel" -i "$T/in.npz" -o "$T/sim2.npz" >"$T/two.txt" 2>&1
	one=$(awk '/cycles,/ { print $4; exit }' "$T/one.txt")
	two=$(awk '/cycles,/ { print $4; exit }' "$T/two.txt")
	echo "one Conv $one cycles, two $two"
	[ "$one" -lt "$two" ]
}
