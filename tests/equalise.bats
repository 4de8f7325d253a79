#!/usr/bin/env bats
# top-opt --equalise (issue 12): a Conv -> HardSwish whose channels are
# unequal becomes Conv (channels scaled by powers of two) -> gate Scale ->
# Mul, its readers (a Conv, a constant Pad into a Conv) take the scales
# back, and a Conv read by Convs (through its ReLU) likewise; the graph computes the same in float, and per-tensor int8 of the
# balanced graph is far closer to float than of the original.
load helpers

bats_require_minimum_version 1.5.0

setup_file() {
	export FX="$BATS_FILE_TMPDIR/fx"
	/usr/bin/python3 "$BATS_TEST_DIRNAME/fixtures/eq_fixtures.py" "$FX"
}

setup() {
	T=$BATS_TEST_TMPDIR
}

# canon NAME: the fixture's canonical graph in $T/NAME.top.
canon() {
	onnx2top "$FX/$1.onnx" -o "$T/$1.o.top"
	top-opt "$T/$1.o.top" -o "$T/$1.top"
}

# sqnr_of A.npz B.npz: npz-compare's SQNR (dB) of the first array.
sqnr_of() {
	npz-compare "$1" "$2" | awk 'NR == 2 { print $5 }'
}

@test "--equalise rewrites both HardSwish ops and computes the same in float" {
	canon imb
	run -0 top-opt "$T/imb.top" --passes=dce --equalise "$FX/calib.npz" --stats -o "$T/eq.top"
	[[ "$output" =~ equalise\ +2 ]]
	run -0 ir-print "$T/eq.top"
	[[ "$output" != *HardSwish* ]]
	# each HardSwish: a gate Scale clipped to [0, 1] and a Mul; the Pad
	# by 0.5 pads by 0 after a Scale that shifts by -k * 0.5
	[ "$(grep -c 'Scale(.*do_relu=1, relu_limit=1' <<<"$output")" -eq 2 ]
	[ "$(grep -c '= Mul(' <<<"$output")" -eq 2 ]
	[[ "$output" == *"Pad(%h1_shifted) {pads=[0,0,1,1,0,0,1,1], value=0"* ]]
	ir-run "$T/imb.top" -i "$FX/input.npz" -o "$T/f0.npz"
	ir-run "$T/eq.top" -i "$FX/input.npz" -o "$T/f1.npz"
	run -0 $PY - "$T/f0.npz" "$T/f1.npz" <<'PY'
import sys, numpy as np
a, b = np.load(sys.argv[1])["y"], np.load(sys.argv[2])["y"]
err = np.abs(a - b).max() / np.abs(a).max()
print(err)
sys.exit(0 if err < 1e-5 else 1)
PY
	# the gains are powers of two: the first Conv's weights exactly so
	run -0 $PY - "$BATS_TEST_DIRNAME" "$T/imb.top" "$T/eq.top" <<'PY'
import sys, numpy as np
sys.path.insert(0, sys.argv[1])
from ir_reader import read_ir
def weight(path, name):
    h, g, data = read_ir(path)
    return next(data[i] for i, t in enumerate(g["tensors"]) if t["name"] == name)
a, b = weight(sys.argv[2], "wa"), weight(sys.argv[3], "wa")
k = (b.reshape(16, -1) / a.reshape(16, -1))
assert np.all(k == k[:, :1]), "one gain per output channel"
e = np.log2(k[:, 0])
assert np.all(e == np.round(e)) and e.min() == 0 and e.max() >= 3, e
PY
}

@test "--equalise: per-tensor int8 of the balanced graph gains over 15 dB on unequal channels" {
	canon imb
	top-opt "$T/imb.top" --passes=dce --equalise "$FX/calib.npz" -o "$T/eq.top"
	ir-run "$T/imb.top" -i "$FX/input.npz" -o "$T/ref.npz"
	for g in imb eq; do
		calibrate "$T/$g.top" -d "$FX/calib.npz" -o "$T/$g.table" 2>/dev/null
		top2tpu "$T/$g.top" --chip tpu-a --mode int8 --calib "$T/$g.table" -o "$T/$g.tpu"
		ir-run "$T/$g.tpu" -i "$FX/input.npz" -o "$T/$g.q.npz"
	done
	a=$(sqnr_of "$T/ref.npz" "$T/imb.q.npz")
	b=$(sqnr_of "$T/ref.npz" "$T/eq.q.npz")
	echo "int8 SQNR: $a dB as is, $b dB balanced"
	awk -v a="$a" -v b="$b" 'BEGIN { exit !(b >= a + 15 && b >= 25) }'
	# and the simulator runs the balanced graph bit for bit as ir-run
	weight-reorder "$T/eq.tpu" -o "$T/r.tpu"
	layergroup "$T/r.tpu" -o "$T/g.tpu"
	addr-assign "$T/g.tpu" -o "$T/a.tpu"
	codegen "$T/a.tpu" -o "$T/m.tmodel"
	tpu-sim "$T/m.tmodel" -i "$FX/input.npz" -o "$T/sim.npz" 2>/dev/null
	run -0 npz-compare "$T/eq.q.npz" "$T/sim.npz" --tol 1.0,1.0
}

@test "--equalise leaves a HardSwish whose output is a graph output" {
	canon out
	run -0 top-opt "$T/out.top" --passes=dce --equalise "$FX/calib.npz" --stats -o "$T/eq.top"
	[[ "$output" =~ equalise\ +1 ]]
	run -0 ir-print "$T/eq.top"
	[[ "$output" == *"%h1 = HardSwish(%a)"* ]]
	[[ "$output" != *"%h2 = HardSwish"* ]]
}

@test "--equalise moves the scales through a Conv's ReLU and a Pad into a Conv" {
	canon relu
	run -0 top-opt "$T/relu.top" --passes=dce --equalise "$FX/calib.npz" --stats -o "$T/eq.top"
	[[ "$output" =~ equalise\ +1 ]]
	run -0 ir-print "$T/eq.top"
	[[ "$output" == *"Pad(%r_shifted) {pads=[0,0,1,1,0,0,1,1], value=0"* ]]
	ir-run "$T/relu.top" -i "$FX/input.npz" -o "$T/f0.npz"
	ir-run "$T/eq.top" -i "$FX/input.npz" -o "$T/f1.npz"
	run -0 $PY - "$T/f0.npz" "$T/f1.npz" <<'PY'
import sys, numpy as np
a, b = np.load(sys.argv[1])["y"], np.load(sys.argv[2])["y"]
sys.exit(0 if np.abs(a - b).max() / np.abs(a).max() < 1e-5 else 1)
PY
}

@test "--equalise: a missing or unfit samples file is one line naming it, and no output" {
	canon imb
	run -1 top-opt "$T/imb.top" --equalise "$T/none.npz" -o "$T/eq.top"
	[ "${#lines[@]}" -eq 1 ]
	[[ "$output" == *none.npz* ]]
	[ ! -e "$T/eq.top" ]
	$PY -c "import numpy as np; np.savez('$T/other.npz', z=np.zeros(3, np.float32))"
	run -1 top-opt "$T/imb.top" --equalise "$T/other.npz" -o "$T/eq.top"
	[ "${#lines[@]}" -eq 1 ]
	[[ "$output" == *other.npz*"'x'"* ]]
	[ ! -e "$T/eq.top" ]
}
