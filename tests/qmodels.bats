#!/usr/bin/env bats
# Pre-quantised models (formats/tpuc-quant.5): QDQ fixtures written by
# tests/qmodels.py compile in int8 with their own scales and no table, the
# simulator is bit-identical to ir-run on the Tpu graph, and the results
# follow onnxruntime (npm onnxruntime-node, installed into tests/node_modules
# on first use; those tests skip with the reason when node or npm is absent).
load helpers

bats_require_minimum_version 1.5.0

setup_file() {
	export QN="$BATS_FILE_TMPDIR/qn"
	$PY "$BATS_TEST_DIRNAME/fixtures/quant_net.py" "$QN"
	onnx2top "$QN/net.onnx" -o "$QN/f.top"
	top-opt "$QN/f.top" -o "$QN/f.opt.top"
	calibrate "$QN/f.opt.top" -d "$QN/calib.npz" --method minmax -o "$QN/f.table"
	$PY "$BATS_TEST_DIRNAME/qmodels.py" qdq "$QN/net.onnx" "$QN/f.table" "$QN/qdq.onnx"
	$PY "$BATS_TEST_DIRNAME/qmodels.py" qdq "$QN/net.onnx" "$QN/f.table" "$QN/u8.onnx" --u8
	$PY "$BATS_TEST_DIRNAME/qmodels.py" qdq "$QN/net.onnx" "$QN/f.table" "$QN/far.onnx" \
		--scale-factor 3
	$PY "$BATS_TEST_DIRNAME/qmodels.py" qop "$QN/net.onnx" "$QN/f.table" "$QN/qop.onnx"
}

setup() {
	T=$BATS_TEST_TMPDIR
}

# need_ort: skip without node; install onnxruntime-node once.
need_ort() {
	command -v node >/dev/null || skip "node is not installed"
	[ -d "$REPO/tests/node_modules/onnxruntime-node" ] ||
		[ -d "$REPO/bench/node_modules/onnxruntime-node" ] && return 0
	command -v npm >/dev/null || skip "npm is not installed"
	# --ignore-scripts: the install script only fetches GPU libraries
	npm install --silent --no-save --no-package-lock --ignore-scripts --prefix "$REPO/tests" \
		onnxruntime-node >&2 || skip "npm install onnxruntime-node failed"
}

# deploy NAME MODEL INPUT: the whole pipeline with no table into $T/NAME.
# The float Top graph (the model without its quantisation) is no measure
# of a quantised model: onnxruntime is, below; Tpu vs tpu-sim stays exact.
deploy() {
	make -s -f "$REPO/pipelines/deploy.mk" MODEL="$2" INPUT="$3" OUT="$T/$1" \
		TPUC_BIN="$TPUC_BUILD/bin" TOL_TPU=-1,-1 compare
}

# A float value of a scale as ir-print writes it, from the table.
table_scale() {
	awk -v n="$1" -v f="${2:-1}" '$1 == n { printf "%.6f\n", $2 / 127 * f }' "$QN/f.table"
}

@test "a QDQ model keeps its scales through top-opt (ir-print) and needs no table" {
	onnx2top "$QN/qdq.onnx" -o "$T/o.top"
	run ir-print "$T/o.top"
	assert_output --partial 'QuantizeLinear'
	top-opt "$T/o.top" -o "$T/c.top"
	run ir-print "$T/c.top"
	refute_output --partial 'QuantizeLinear'
	refute_output --partial 'DequantizeLinear'
	# c2's output carries the table's scale / 127, as the model states it
	s=$(table_scale c2)
	[ -n "$s" ]
	echo "$output" | grep -F '%c2 ' | grep -q "scale=${s:0:6}"
	echo "$output" | grep -q '<scale=[0-9.e-]*,i8>'
	run top2tpu "$T/c.top" --chip tpu-a --mode int8 -o "$T/l.tpu"
	assert_success
	run ir-print "$T/l.tpu"
	assert_output --regexp 'Conv.*i8\['
}

@test "int8 with no table: tpu-sim is bit-identical to ir-run on the Tpu graph (i8, u8, QOperator)" {
	for m in qdq u8 qop; do
		run deploy "$m" "$QN/$m.onnx" "$QN/input.npz"
		assert_success
		assert_output --partial 'Tpu IR vs tpu-sim'
		[ ! -e "$T/$m/cali.table" ]
		cmp "$T/$m/tpu_out.npz" "$T/$m/sim_out.npz" || npz-compare "$T/$m/tpu_out.npz" \
			"$T/$m/sim_out.npz" --tolerance 1.0,1.0
	done
	run ir-print "$T/u8/lowered.tpu"
	assert_output --regexp 'u8\[[0-9,]*\]<scale=[0-9.e-]*,zp=[0-9]+>'
}

@test "far scales: the model's own win over the table, and top2tpu says so once" {
	onnx2top "$QN/far.onnx" -o "$T/o.top"
	top-opt "$T/o.top" -o "$T/c.top"
	s=$(table_scale c2 3)
	run ir-print "$T/c.top"
	echo "$output" | grep -F '%c2 ' | grep -q "scale=${s:0:6}"
	run --separate-stderr top2tpu "$T/c.top" --chip tpu-a --mode int8 --calib "$QN/f.table" \
		-o "$T/l.tpu"
	assert_success
	[ "$(printf '%s\n' "$stderr" | grep -c "model's own quantisation wins")" = 1 ]
	run ir-print "$T/l.tpu"
	echo "$output" | grep -F '%c2 ' | grep -q "scale=${s:0:6}"
	# the table alone gives the scale a third of it
	top-opt "$QN/f.top" -o "$T/f.top"
	top2tpu "$T/f.top" --chip tpu-a --mode int8 --calib "$QN/f.table" -o "$T/t.tpu"
	run ir-print "$T/t.tpu"
	echo "$output" | grep -F '%c2 ' | grep -q "scale=$(table_scale c2 | cut -c1-6)"
}

@test "QOperator: the com.microsoft QLinear ops import as their QDQ meaning, MaxPool and Flatten run on the codes" {
	run onnx2top "$QN/qop.onnx" -o "$T/o.top"
	assert_success
	top-opt "$T/o.top" -o "$T/c.top"
	run ir-print "$T/c.top"
	refute_output --partial 'QuantizeLinear'
	for op in Conv Add MaxPool AveragePool Concat GlobalAveragePool Flatten; do
		echo "$output" | grep "= $op(" | grep -q 'u8>'
	done
	# the Gemm the model leaves float stays f32 in an int8 graph
	top2tpu "$T/c.top" --chip tpu-a --mode int8 -o "$T/l.tpu"
	run ir-print "$T/l.tpu"
	echo "$output" | grep '= Gemm(' | grep -q -- '-> f32\['
	echo "$output" | grep '= Conv(' | grep -q -- '-> u8\['
}

@test "QOperator: a node of an unknown domain is still refused" {
	$PY - "$QN/qop.onnx" "$T/bad.onnx" <<'PYEOF'
import sys, onnx
m = onnx.load(sys.argv[1])
for n in m.graph.node:
    if n.domain == 'com.microsoft':
        n.domain = 'com.example'
        break
onnx.save(m, sys.argv[2])
PYEOF
	run onnx2top "$T/bad.onnx" -o "$T/x.top"
	assert_failure 1
	assert_output --partial "unsupported domain 'com.example'"
	[ ! -e "$T/x.top" ]
}

@test "a float model in int8 still needs a table; the message says how to do without" {
	run top2tpu "$QN/f.opt.top" --chip tpu-a --mode int8 -o "$T/x.tpu"
	assert_failure 2
	assert_output --partial 'needs --calib TABLE'
	[ ! -e "$T/x.tpu" ]
}

@test "onnxruntime: the fixtures, whole model (QDQ i8, u8, far scales; QOperator)" {
	need_ort
	for m in qdq u8 far qop; do
		run deploy "$m" "$QN/$m.onnx" "$QN/input.npz"
		assert_success
		$PY "$REPO/tests/qcompare.py" ort "$QN/$m.onnx" "$QN/input.npz" "$T/$m.ort.npz"
		c=$($PY "$REPO/tests/qcompare.py" cos "$T/$m.ort.npz" "$T/$m/sim_out.npz")
		echo "$m: cosine vs onnxruntime $c"
		awk -v c="$c" 'BEGIN { exit !(c >= 0.999) }'
	done
}

@test "onnxruntime: QDQ ResNet-18, whole model and ten convs fed onnxruntime's input" {
	need_models resnet18
	need_ort
	M=$MODELS/resnet18
	onnx2top "$M/model.onnx" -o "$T/f.top"
	top-opt "$T/f.top" -o "$T/f.opt.top"
	calibrate "$T/f.opt.top" -d "$M/calib.npz" -n 4 --method minmax -o "$T/t.table"
	$PY "$REPO/tests/qmodels.py" qdq "$M/model.onnx" "$T/t.table" "$T/q.onnx"
	run deploy r18 "$T/q.onnx" "$M/input.npz"
	assert_success
	$PY "$REPO/tests/qcompare.py" ort "$T/q.onnx" "$M/input.npz" "$T/ort.npz"
	c=$($PY "$REPO/tests/qcompare.py" cos "$T/ort.npz" "$T/r18/sim_out.npz")
	echo "whole model: cosine vs onnxruntime $c"
	awk -v c="$c" 'BEGIN { exit !(c >= 0.998) }'
	# layer3 and layer4 (ten Convs), fed onnxruntime's value of their input
	A=/layer2/layer2.1/relu_1/Relu_output_0
	B=/layer4/layer4.1/relu_1/Relu_output_0_dq
	$PY "$REPO/tests/qcompare.py" ort "$T/q.onnx" "$M/input.npz" "$T/ort_ab.npz" --also "$A" "$B"
	$PY -c "import numpy as np, sys; a = np.load(sys.argv[1]); np.savez(sys.argv[2], **{sys.argv[3]: a[sys.argv[3]]}); np.savez(sys.argv[4], **{sys.argv[5]: a[sys.argv[5]]})" \
		"$T/ort_ab.npz" "$T/a.npz" "$A" "$T/b.npz" "$B"
	$PY "$REPO/tests/qcompare.py" cut "$T/q.onnx" "$A" "$B" "$T/cut.onnx"
	run deploy cut "$T/cut.onnx" "$T/a.npz"
	assert_success
	c=$($PY "$REPO/tests/qcompare.py" cos "$T/b.npz" "$T/cut/sim_out.npz")
	echo "ten convs: cosine vs onnxruntime $c"
	awk -v c="$c" 'BEGIN { exit !(c >= 0.999) }'
}

@test "onnxruntime: QDQ MobileNet-V2, whole model within three times onnxruntime's own rounding noise" {
	need_models mobilenet_v2
	need_ort
	M=$MODELS/mobilenet_v2
	onnx2top "$M/model.onnx" -o "$T/f.top"
	top-opt "$T/f.top" -o "$T/f.opt.top"
	calibrate "$T/f.opt.top" -d "$M/calib.npz" -n 8 --method minmax -o "$T/t.table"
	$PY "$REPO/tests/qmodels.py" qdq "$M/model.onnx" "$T/t.table" "$T/q.onnx"
	run deploy mv2 "$T/q.onnx" "$M/input.npz"
	assert_success
	$PY "$REPO/tests/qcompare.py" ort "$T/q.onnx" "$M/input.npz" "$T/ort.npz"
	c=$($PY "$REPO/tests/qcompare.py" cos "$T/ort.npz" "$T/mv2/sim_out.npz")
	# onnxruntime's own noise: how far it moves from itself when every
	# QuantizeLinear scale moves one ulp, so that values on a rounding
	# boundary round the other way (a depthwise network amplifies them)
	$PY "$REPO/tests/qcompare.py" ort "$T/q.onnx" "$M/input.npz" "$T/ulp.npz" --ulp
	u=$($PY "$REPO/tests/qcompare.py" cos "$T/ort.npz" "$T/ulp.npz")
	echo "cosine vs onnxruntime $c; onnxruntime vs itself one ulp apart $u"
	awk -v u="$u" 'BEGIN { exit !(u < 0.9999) }' || fail "no rounding noise to measure against"
	awk -v c="$c" -v u="$u" 'BEGIN { exit !(1 - c <= 3 * (1 - u)) }'
}
