#!/bin/sh
# seeds.sh BIN OUT - seed corpora for the fuzz harnesses, one folder per
# reader under OUT, made from the repository's own inputs: the tiny ONNX
# models of tests/fixtures/make_fixtures.py and examples/tiny_cnn, taken
# through the tools in BIN to every IR stage, a calibration table, the
# statistics file, a qtable, npz files and .tmodel files (and a bundle of
# one stage).  Generated, never committed; about 2 MB.
set -eu
BIN=$1
OUT=$2
PY=/usr/bin/python3
rm -rf "$OUT"
mkdir -p "$OUT/onnx" "$OUT/ir" "$OUT/npz" "$OUT/tmodel" "$OUT/calib" "$OUT/qtable" "$OUT/work"
W=$OUT/work
$PY tests/fixtures/make_fixtures.py "$OUT/onnx" >/dev/null
cp examples/tiny_cnn/model.onnx "$OUT/onnx/tiny_cnn.onnx"
cp examples/tiny_cnn/input.npz examples/tiny_cnn/ref.npz "$OUT/npz/"

# A small Conv+Relu model (small seeds mutate fastest) and tiny_cnn.
EX=examples/tiny_cnn
for m in conv_bn_relu tiny_cnn; do
	if [ $m = tiny_cnn ]; then
		model=$EX/model.onnx input=$EX/input.npz calib=$EX/calib.npz
	else
		model=$OUT/onnx/$m.onnx
		$PY - "$model" "$W/$m.in.npz" <<'PYEOF'
import sys, numpy as np, onnx
m = onnx.load(sys.argv[1])
init = {i.name for i in m.graph.initializer}
arrs = {}
for v in m.graph.input:
    if v.name in init:
        continue
    dims = [d.dim_value or 1 for d in v.type.tensor_type.shape.dim]
    arrs[v.name] = np.random.RandomState(0).standard_normal(dims).astype(np.float32)
np.savez(sys.argv[2], **arrs)
PYEOF
		input=$W/$m.in.npz calib=$W/$m.in.npz
		cp "$input" "$OUT/npz/$m.npz"
	fi
	"$BIN/onnx2top" "$model" -o "$W/$m.origin.top"
	"$BIN/top-opt" "$W/$m.origin.top" -o "$W/$m.top"
	"$BIN/calibrate" "$W/$m.top" -d "$calib" -o "$OUT/calib/0$m.table"
	"$BIN/calibrate" "$W/$m.top" -d "$calib" --shard 1/1 -o "$W/$m.part"
	# The calib harness reads a table when its first byte is even, a
	# statistics file when odd.
	printf 'A' | cat - "$W/$m.part" >"$OUT/calib/1$m.part"
	"$BIN/calibrate" "$W/$m.top" -d "$calib" --search-qtable "$OUT/qtable/$m.qtable" \
		-o "$W/$m.table2" --search-samples 1 >/dev/null 2>&1 ||
		printf '# qtable\n%s f32\n' "$(basename $m)" >"$OUT/qtable/$m.qtable"
	for mode in f32 int8; do
		p=$W/$m.$mode
		"$BIN/top2tpu" "$W/$m.top" --chip tpu-a --mode $mode --calib "$OUT/calib/0$m.table" -o "$p.lowered.tpu"
		"$BIN/weight-reorder" "$p.lowered.tpu" -o "$p.reordered.tpu"
		"$BIN/layergroup" "$p.reordered.tpu" -o "$p.grouped.tpu"
		"$BIN/addr-assign" "$p.grouped.tpu" -o "$p.addressed.tpu"
		"$BIN/codegen" "$p.addressed.tpu" -o "$OUT/tmodel/$m.$mode.tmodel"
		cp "$p.lowered.tpu" "$p.reordered.tpu" "$p.grouped.tpu" "$p.addressed.tpu" "$OUT/ir/"
	done
	cp "$W/$m.origin.top" "$W/$m.top" "$OUT/ir/"
done
# a bundle of static shapes (lib/chip/bundle.h) holding one stage
$PY - "$OUT/tmodel/conv_bn_relu.f32.tmodel" "$OUT/tmodel/bundle1.tmodel" <<'PYEOF'
import struct, sys
m = open(sys.argv[1], "rb").read()
head = b"TPUCBNDL" + struct.pack("<II", 1, 1) + bytes(48)
entry = struct.pack("<QQI", 128, len(m), 0) + bytes(12)
open(sys.argv[2], "wb").write(head + entry + bytes(32) + m)
PYEOF
printf '# ops kept in f32\n\nrelu_0 f32\nconv bf16\n' >"$OUT/qtable/hand.qtable"
rm -rf "$W"
