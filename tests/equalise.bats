#!/usr/bin/env bats
# top-opt --equalise (issue 12): cross-layer equalisation of Conv pairs
# from peaks measured on samples.  A Conv read only by Convs (directly, or
# through a Pad by 0; through a fused ReLU) has its output channels scaled
# by powers of two and its readers' input channels divided by them: the
# graph computes bit for bit the same in float, and per-tensor int8 of the
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

@test "--equalise balances both Convs, by powers of two, bit for bit the same in float" {
	canon imb
	run -0 top-opt "$T/imb.top" --passes=dce --equalise "$FX/calib.npz" --stats -o "$T/eq.top"
	[[ "$output" =~ equalise\ +2 ]]
	ir-run "$T/imb.top" -i "$FX/input.npz" -o "$T/f0.npz"
	ir-run "$T/eq.top" -i "$FX/input.npz" -o "$T/f1.npz"
	cmp "$T/f0.npz" "$T/f1.npz"
	# the first Conv: output channel c times a power of two k[c] >= 1; the
	# fixture scaled the channels by 1 .. 1/16, so the gains reach 8
	run -0 $PY - "$BATS_TEST_DIRNAME" "$T/imb.top" "$T/eq.top" <<'PY'
import sys, numpy as np
sys.path.insert(0, sys.argv[1])
from ir_reader import read_ir
def weights(path):
    h, g, data = read_ir(path)
    return {t["name"]: data[i] for i, t in enumerate(g["tensors"]) if i in data}
a, b = weights(sys.argv[2]), weights(sys.argv[3])
k = b["wa"].reshape(16, -1) / a["wa"].reshape(16, -1)
assert np.all(k == k[:, :1]), "one gain per output channel"
e = np.log2(k[:, 0])
assert np.all(e == np.round(e)) and e.min() == 0 and e.max() >= 3, e
# the depthwise Conv: balanced itself (its bias times k2) after taking k
# back (its weights over channel c divided by k[c], times k2[c])
k2 = b["bd"] / a["bd"]
assert np.all(np.log2(k2) == np.round(np.log2(k2))), k2
assert np.all(b["wd"].reshape(16, -1) == a["wd"].reshape(16, -1) / k[:, :1] * k2[:, None])
PY
}

@test "--equalise: per-tensor int8 of the balanced graph gains 10 dB, bit-exact on the simulator" {
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
	awk -v a="$a" -v b="$b" 'BEGIN { exit !(b >= a + 10 && b >= 30) }'
	weight-reorder "$T/eq.tpu" -o "$T/r.tpu"
	layergroup "$T/r.tpu" -o "$T/g.tpu"
	addr-assign "$T/g.tpu" -o "$T/a.tpu"
	codegen "$T/a.tpu" -o "$T/m.tmodel"
	tpu-sim "$T/m.tmodel" -i "$FX/input.npz" -o "$T/sim.npz" 2>/dev/null
	run -0 npz-compare "$T/eq.q.npz" "$T/sim.npz" --tol 1.0,1.0
}

@test "--equalise leaves a Conv whose output is also a graph output" {
	canon out
	run -0 top-opt "$T/out.top" --passes=dce --equalise "$FX/calib.npz" --stats -o "$T/eq.top"
	[[ "$output" =~ equalise\ +1 ]]
	ir-run "$T/out.top" -i "$FX/input.npz" -o "$T/f0.npz"
	ir-run "$T/eq.top" -i "$FX/input.npz" -o "$T/f1.npz"
	cmp "$T/f0.npz" "$T/f1.npz"
}

@test "--equalise moves nothing through a HardSwish or a ReLU6" {
	canon hs
	run -0 top-opt "$T/hs.top" --passes=dce --equalise "$FX/calib.npz" --stats -o "$T/eq.top"
	[[ "$output" =~ equalise\ +0 ]]
	cmp <(ir-print "$T/hs.top") <(ir-print "$T/eq.top")
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
