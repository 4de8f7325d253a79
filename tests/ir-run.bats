#!/usr/bin/env bats
# ir-run: numbers against numpy on a tiny model, --dump-all, stdin and
# stdout, errors (exit 1, one line, no output left behind), usage (exit 2),
# and the real models against onnxruntime's reference outputs.
load helpers

bats_require_minimum_version 1.5.0

# The fixture models and what numpy computes for them
# (tests/fixtures/ir_run_fixtures.py).
setup_file() {
	export FX="$BATS_FILE_TMPDIR/fx"
	mkdir -p "$FX"
	/usr/bin/python3 "$BATS_TEST_DIRNAME/fixtures/ir_run_fixtures.py" "$FX"
	local m
	for m in tiny misc mm; do
		onnx2top "$FX/$m.onnx" -o "$FX/$m.top"
	done
}

setup() {
	T=$BATS_TEST_TMPDIR
}


# "name:dtype" of each array, in archive order.
npz_names() {
	$PY -c 'import sys, numpy as np
z = np.load(sys.argv[1]); print(" ".join(f"{k}:{z[k].dtype}" for k in z.files))' "$1"
}

@test "tiny model matches numpy" {
	run ir-run "$FX/tiny.top" -i "$FX/tiny_in.npz" -o "$T/out.npz"
	assert_success
	assert_output ''
	run npz_names "$T/out.npz"
	assert_output 'y:float32'
	assert_close "$T/out.npz" "$FX/tiny_expect.npz"
}

@test "BatchNormalization, Mul, Concat, Reshape, Identity, Pad, AveragePool match numpy" {
	run ir-run "$FX/misc.top" -i "$FX/misc_in.npz" -o "$T/out.npz"
	assert_success
	assert_close "$T/out.npz" "$FX/misc_expect.npz"
}

@test "MatMul, Gemm, Relu, Cast match numpy" {
	run ir-run "$FX/mm.top" -i "$FX/mm_in.npz" -o "$T/out.npz"
	assert_success
	assert_close "$T/out.npz" "$FX/mm_expect.npz"
}

@test "elementwise ops broadcast a lower-rank first operand (Sub, Div, Where, Max)" {
	$PY - "$T" <<'PYEOF'
import sys, numpy as np, onnx
from onnx import TensorProto, helper, numpy_helper
d = sys.argv[1]
r = np.random.RandomState(2)
c = r.standard_normal((4, 1)).astype(np.float32)
m = np.tril(np.ones((5, 5), bool))
vi = lambda n, t, s: helper.make_tensor_value_info(n, t, s)
g = helper.make_graph([
    helper.make_node("Sub", ["c", "x"], ["s"], name="sub"),
    helper.make_node("Div", ["c", "x"], ["q"], name="div"),
    helper.make_node("Max", ["c", "x", "s"], ["mx"], name="max"),
    helper.make_node("Where", ["m", "k", "a"], ["w"], name="where"),
], "bc", [vi("x", TensorProto.FLOAT, [1, 2, 1, 5]), vi("a", TensorProto.FLOAT, [1, 2, 5, 5])],
    [vi(n, TensorProto.FLOAT, None) for n in ("s", "q", "mx", "w")],
    [numpy_helper.from_array(c, "c"), numpy_helper.from_array(m, "m"),
     numpy_helper.from_array(np.array(-1e4, np.float32), "k")])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), d + "/bc.onnx")
x = r.uniform(1, 2, (1, 2, 1, 5)).astype(np.float32)
a = r.standard_normal((1, 2, 5, 5)).astype(np.float32)
np.savez(d + "/in.npz", x=x, a=a)
np.savez(d + "/expect.npz", s=c - x, q=c / x, mx=np.maximum(np.maximum(c, x), c - x),
         w=np.where(m, np.float32(-1e4), a))
PYEOF
	onnx2top "$T/bc.onnx" -o "$T/bc.top"
	run ir-run "$T/bc.top" -i "$T/in.npz" -o "$T/out.npz"
	assert_success
	assert_close "$T/out.npz" "$T/expect.npz"
}

@test "--round: the inputs and the weights a float mode stores in bf16 or f16 rounded to it, the run in f32" {
	# the same model with its weights w, fw (not the biases b, fb, nor the
	# Add's constant c, which float modes keep in f32) and its input
	# rounded by numpy (to nearest even) gives the same numbers
	$PY - "$FX/tiny.onnx" "$FX/tiny_in.npz" "$T" <<'EOF'
import sys, numpy as np, onnx
from onnx import numpy_helper
def bf16(a):
    u = a.astype(np.float32).view(np.uint32).astype(np.uint64)
    return (((u + 0x7fff + ((u >> 16) & 1)) >> 16).astype(np.uint32) << 16).view(np.float32)
rnd = {"bf16": bf16, "f16": lambda a: a.astype(np.float16).astype(np.float32)}
for tag, f in rnd.items():
    m = onnx.load(sys.argv[1])
    kept = {i for n in m.graph.node if n.op_type in ("Add", "Mul") for i in n.input}
    for t in m.graph.initializer:
        a = numpy_helper.to_array(t)
        if a.ndim >= 2 and t.name not in kept:
            t.CopyFrom(numpy_helper.from_array(f(a), t.name))
    onnx.save(m, "%s/%s.onnx" % (sys.argv[3], tag))
    z = np.load(sys.argv[2])
    np.savez("%s/%s_in.npz" % (sys.argv[3], tag), **{k: f(z[k]) for k in z.files})
EOF
	ir-run "$FX/tiny.top" -i "$FX/tiny_in.npz" -o "$T/f32.npz"
	for m in bf16 f16; do
		onnx2top "$T/$m.onnx" -o "$T/$m.top"
		ir-run "$T/$m.top" -i "$T/${m}_in.npz" -o "$T/want.npz"
		run ir-run "$FX/tiny.top" -i "$FX/tiny_in.npz" --round $m -o "$T/got.npz"
		assert_success
		assert_output ''
		run npz-compare "$T/got.npz" "$T/want.npz" --tolerance 1,1
		assert_success
		run npz-compare "$T/got.npz" "$T/f32.npz" --tolerance 1,1
		assert_failure
	done
	run ir-run "$FX/tiny.top" -i "$FX/tiny_in.npz" --round int8 -o "$T/x.npz"
	assert_failure 2
	assert_line --index 0 "ir-run: --round: bf16 or f16, not 'int8'"
	[ ! -e "$T/x.npz" ]
}

@test "--dump-all writes every activation in graph order, no weights" {
	run ir-run "$FX/tiny.top" -i "$FX/tiny_in.npz" -o "$T/all.npz" --dump-all
	assert_success
	run npz_names "$T/all.npz"
	assert_output 'x:float32 conv:float32 clip:float32 pool:float32 add:float32 gap:float32 flat:float32 y:float32'
}

@test "IR from stdin, npz to stdout, threads" {
	ir-run - -i "$FX/tiny_in.npz" --threads 2 <"$FX/tiny.top" >"$T/out.npz"
	assert_close "$T/out.npz" "$FX/tiny_expect.npz"
}

@test "canonical IR (fused activations, Scale) gives the same numbers" {
	need_tool top-opt
	local m
	for m in tiny misc mm; do
		top-opt "$FX/$m.top" -o "$T/$m.top"
		run ir-run "$T/$m.top" -i "$FX/${m}_in.npz" -o "$T/$m.npz"
		assert_success
		assert_close "$T/$m.npz" "$FX/${m}_expect.npz"
	done
}

@test "the oneDNN plan gives the reference kernels' numbers, fused or not" {
	need_tool top-opt
	local m
	for m in tiny misc mm; do
		top-opt "$FX/$m.top" -o "$T/$m.top"
		for f in "$FX/$m.top" "$T/$m.top"; do
			TPUC_PLAN=0 ir-run "$f" -i "$FX/${m}_in.npz" -o "$T/k.npz" --dump-all
			ir-run "$f" -i "$FX/${m}_in.npz" -o "$T/p.npz" --dump-all --threads 2
			assert_close "$T/p.npz" "$T/k.npz"
			TPUC_PLAN=0 ir-run "$f" -i "$FX/${m}_in.npz" -o "$T/k.npz"
			ir-run "$f" -i "$FX/${m}_in.npz" -o "$T/p.npz" --repeat 3
			assert_close "$T/p.npz" "$T/k.npz"
		done
	done
}

@test "--bench ends stderr with median_ms=X and still writes the outputs" {
	run --separate-stderr ir-run "$FX/tiny.top" -i "$FX/tiny_in.npz" -o "$T/out.npz" --bench 5
	assert_success
	assert_output ''
	[ "${#stderr_lines[@]}" -eq 2 ]
	[[ ${stderr_lines[0]} =~ ^ir-run:\ bench:\ 5\ runs\ after\ 3\ warm-up,\ 1\ thread:\ min\ [0-9.]+\ ms,\ median\ [0-9.]+\ ms,\ max\ [0-9.]+\ ms$ ]]
	[[ ${stderr_lines[1]} =~ ^median_ms=[0-9]+\.[0-9]{3}$ ]]
	assert_close "$T/out.npz" "$FX/tiny_expect.npz"
}

@test "--profile lists the op types before the median" {
	run --separate-stderr ir-run "$FX/tiny.top" -i "$FX/tiny_in.npz" -o "$T/out.npz" --bench 3 --profile
	assert_success
	[[ ${stderr_lines[0]} =~ ^ir-run:\ profile\ per\ run\ \(3\ runs\):\ [0-9.]+\ ms\ in\ ops$ ]]
	printf '%s\n' "${stderr_lines[@]}" | grep -Eq '^  Conv +1 ops +[0-9.]+ ms +[0-9.]+%$'
	[[ ${stderr_lines[-1]} =~ ^median_ms= ]]
	run --separate-stderr ir-run "$FX/tiny.top" -i "$FX/tiny_in.npz" -o "$T/out.npz" --profile
	assert_success
	[[ ${stderr_lines[0]} =~ ^ir-run:\ profile\ per\ run\ \(1\ run\): ]]
}

@test "missing IR file" {
	run ir-run "$T/nope.top" -i "$FX/tiny_in.npz" -o "$T/out.npz"
	assert_failure 1
	assert_output "ir-run: cannot open '$T/nope.top': No such file or directory"
	[ ! -e "$T/out.npz" ]
}

@test "truncated IR file" {
	head -c 100 "$FX/tiny.top" >"$T/cut.top"
	run ir-run "$T/cut.top" -i "$FX/tiny_in.npz" -o "$T/out.npz"
	assert_failure 1
	assert_output --regexp "^ir-run: '$T/cut.top': "
	[ "${#lines[@]}" -eq 1 ]
	[ ! -e "$T/out.npz" ]
}

@test "input npz lacks the graph input" {
	run ir-run "$FX/tiny.top" -i "$FX/noname.npz" -o "$T/out.npz"
	assert_failure 1
	assert_output "ir-run: '$FX/noname.npz': no array for graph input 'x' (the file holds 'input')"
	[ ! -e "$T/out.npz" ]
}

@test "input of the wrong shape" {
	run ir-run "$FX/tiny.top" -i "$FX/badshape.npz" -o "$T/out.npz"
	assert_failure 1
	assert_output "ir-run: '$FX/badshape.npz': array 'x' has shape [1,4,12,11], graph input expects [1,4,13,11]"
	[ ! -e "$T/out.npz" ]
}

@test "missing input npz" {
	run ir-run "$FX/tiny.top" -i "$T/none.npz" -o "$T/out.npz"
	assert_failure 1
	assert_output --partial "ir-run: cannot open '$T/none.npz'"
	[ ! -e "$T/out.npz" ]
}

@test "usage errors exit 2" {
	run ir-run "$FX/tiny.top" -i "$FX/tiny_in.npz" --bogus
	assert_failure 2
	assert_line --index 0 "ir-run: unknown option '--bogus'"
	assert_line --index 1 --partial 'usage: ir-run IN -i INPUT.npz'
	run ir-run "$FX/tiny.top" -o "$T/out.npz"
	assert_failure 2
	assert_line --index 0 'ir-run: no input .npz given (-i)'
	run ir-run -i "$FX/tiny_in.npz"
	assert_failure 2
	run ir-run "$FX/tiny.top" -i "$FX/tiny_in.npz" --threads x
	assert_failure 2
	assert_line --index 0 "ir-run: bad --threads 'x': expected a whole number from 0 to 4096"
	run ir-run "$FX/tiny.top" -i "$FX/tiny_in.npz" --bench 0
	assert_failure 2
	assert_line --index 0 "ir-run: bad --bench '0': expected a whole number from 1 to 4096"
	run ir-run - -i - -o "$T/out.npz"
	assert_failure 2
	[ ! -e "$T/out.npz" ]
}

@test "resnet18 Top F32 matches onnxruntime" {
	need_models resnet18
	onnx2top "$MODELS/resnet18/model.onnx" -o "$T/r.top"
	run ir-run "$T/r.top" -i "$MODELS/resnet18/input.npz" -o "$T/out.npz"
	assert_success
	run npz-compare --tolerance 0.99999,0.999 "$T/out.npz" "$MODELS/resnet18/ref.npz"
	assert_success
}

@test "mobilenet_v2 Top F32 matches onnxruntime" {
	need_models mobilenet_v2
	onnx2top "$MODELS/mobilenet_v2/model.onnx" -o "$T/m.top"
	run ir-run "$T/m.top" -i "$MODELS/mobilenet_v2/input.npz" -o "$T/out.npz"
	assert_success
	run npz-compare --tolerance 0.99999,0.999 "$T/out.npz" "$MODELS/mobilenet_v2/ref.npz"
	assert_success
}
