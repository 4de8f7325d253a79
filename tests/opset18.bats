#!/usr/bin/env bats
# opset18: hand-made models in the forms current exporters write (ONNX
# opsets 18 to 21: reductions with axes as an input, Split num_outputs, Pad
# and Resize with axes, Resize with antialias and keep_aspect_ratio_policy, AveragePool with dilations,
# Gelu, GroupNormalization) import, match numpy on ir-run and, lowered in
# f32, on tpu-sim; the forms tpuc does not run are refused with one line.
# Models at opsets 1 to 6 in today's form import; the training forms not.
load helpers

setup_file() {
	export O18="$BATS_FILE_TMPDIR/o18"
	/usr/bin/python3 "$BATS_TEST_DIRNAME/fixtures/opset18_fixtures.py" "$O18"
}

# One line per item of an IR file (see tests/irdump.py).
irdump() {
	$PY "$BATS_TEST_DIRNAME/irdump.py" "$@"
}

setup() {
	T=$BATS_TEST_TMPDIR
	need_tool onnx2top top-opt ir-run npz-compare
}

@test "opset 18-21 models match numpy after onnx2top | top-opt | ir-run" {
	[ "$(wc -l <"$O18/cases")" -eq 18 ]
	cases_match_numpy "$O18"
	onnx2top "$O18/split18_uneven.onnx" -o "$T/s.top"
	run irdump "$T/s.top"
	assert_line --partial 'split=[3,3,1]'
	onnx2top "$O18/pad18_axes.onnx" -o "$T/p.top"
	run irdump "$T/p.top"
	assert_line --partial 'pads=[0,0,1,0,0,0,2,0]'
}

@test "opset 18-21 models match numpy on tpu-sim (f32, tpu-a)" {
	need_tool top2tpu weight-reorder layergroup addr-assign codegen tpu-sim
	local bad=
	for c in $(cat "$O18/cases"); do
		if ! { onnx2top "$O18/$c.onnx" | top-opt | top2tpu - --chip tpu-a --mode f32 |
			weight-reorder | layergroup | addr-assign -q >"$T/$c.tpu" &&
			codegen "$T/$c.tpu" -o "$T/$c.tmodel" &&
			tpu-sim -q "$T/$c.tmodel" -i "$O18/$c.in.npz" -o "$T/$c.npz" &&
			npz-compare "$O18/$c.ref.npz" "$T/$c.npz" --tolerance 0.99999,0.9999; } >"$T/log" 2>&1; then
			bad="$bad $c"
			cat "$T/log" >&3
		fi
	done
	[ -z "$bad" ] || { echo "failed:$bad"; false; }
}

@test "opset 18 forms tpuc does not run are refused with one line" {
	run onnx2top "$O18/resize18_keep_bad.onnx" -o "$T/o.top"
	assert_failure 1
	assert_output "onnx2top: '$O18/resize18_keep_bad.onnx': node 'Resize_y' (Resize): keep_aspect_ratio_policy 'fit' is not one of stretch, not_larger, not_smaller"
	[ ! -e "$T/o.top" ]
}

@test "opset 1-6 models import in today's form; their training forms are refused" {
	/usr/bin/python3 - "$T" <<'PY'
import sys, onnx
from onnx import TensorProto, helper
t = sys.argv[1]
def save(name, node, opset, ins=("x",)):
    g = helper.make_graph([node], name,
        [helper.make_tensor_value_info(i, TensorProto.FLOAT, [1, 3, 2, 2]) for i in ins],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 2, 2])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 3
    onnx.save(m, "%s/%s.onnx" % (t, name))
save("elu6", helper.make_node("Elu", ["x"], ["y"], alpha=0.5, consumed_inputs=[0]), 6)
save("bn6", helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"]), 6,
     ("x", "s", "b", "m", "v"))
save("add6", helper.make_node("Add", ["x", "x"], ["y"], broadcast=1), 6)
PY
	printf 'import numpy as np\nnp.savez("%s/x.npz", x=np.float32([-2, -1, 0, 1, 2, 3, -4, 5, -6, 7, 8, -9]).reshape(1, 3, 2, 2))\n' "$T" | /usr/bin/python3
	onnx2top "$T/elu6.onnx" -o "$T/e.top"
	ir-run "$T/e.top" -i "$T/x.npz" -o "$T/e.npz"
	/usr/bin/python3 -c 'import numpy as np, sys
x = np.load(sys.argv[1])["x"]; y = np.load(sys.argv[2])["y"]
assert np.allclose(y, np.where(x > 0, x, 0.5 * np.expm1(x)), rtol=1e-6), y' "$T/x.npz" "$T/e.npz"
	run onnx2top "$T/bn6.onnx" -o "$T/b.top"
	assert_failure 1
	assert_output --partial "(BatchNormalization): the opset 6 form is not supported (opset 7 or later)"
	run onnx2top "$T/add6.onnx" -o "$T/a.top"
	assert_failure 1
	assert_output --partial "(Add): attribute 'broadcast' is not supported"
}
