#!/bin/sh
# bisect-layers.sh - the first layer of a lowered model whose tpu-sim output
# differs from ir-run's, or whose output falls below a cosine against the
# float (Top) graph.  A step cuts the Tpu IR at the first K layers in graph
# order (ir-cut: they all become outputs), rebuilds it (weight-reorder |
# layergroup | addr-assign | codegen), runs it on tpu-sim and checks every
# one of the K; "the first K layers are good" only turns false once as K
# grows, so bisection over K finds the first bad layer in about log2(N)
# builds.  Run by accuracy.mk's bisect target:
#
#   bisect-layers.sh LOWERED.tpu INPUT.npz TPU_ALL.npz TOP_ALL.npz COS WORKDIR
#
# TPU_ALL and TOP_ALL are ir-run --dump-all of the Tpu and the Top graph.
# Prints one line per layer tried and then the verdict; TPUC_BIN names the
# folder of the tools (default: PATH).
set -eu
[ $# -eq 6 ] || { echo "usage: bisect-layers.sh LOWERED INPUT TPU_ALL TOP_ALL COS WORKDIR" >&2; exit 2; }
lowered=$1 input=$2 tpu_all=$3 top_all=$4 cos=$5 work=$6
t() { if [ -n "${TPUC_BIN:-}" ]; then "$TPUC_BIN/$@"; else "$@"; fi; }
mkdir -p "$work"

# The names of an .npz in its order: npz-compare lists a file against itself.
names() { t npz-compare "$1" "$1" --tolerance 1,-1e9 2>/dev/null | awk 'NR > 1 && / PASS/ { print $1 }'; }
names "$input" >"$work/inputs"
names "$top_all" >"$work/top_names"
names "$tpu_all" | grep -vxF -f "$work/inputs" >"$work/layers" || true
n=$(wc -l <"$work/layers")
[ "$n" -gt 0 ] || { echo "bisect-layers.sh: no layers in $tpu_all" >&2; exit 1; }

# check K: 0 when the first K layers are all good; else sets why (about
# layer K, the first bad one when the first K-1 are good).
check() {
	name=$(sed -n "$1p" "$work/layers")
	d="$work/$1"
	mkdir -p "$d"
	t ir-cut "$lowered" --at "$(head -n "$1" "$work/layers" | paste -sd, -)" -o "$d/cut.tpu"
	t weight-reorder "$d/cut.tpu" | t layergroup | t addr-assign -q | t codegen -o "$d/cut.tmodel"
	t tpu-sim -q "$d/cut.tmodel" -i "$input" -o "$d/sim.npz"
	if ! t npz-compare "$d/sim.npz" "$tpu_all" --tolerance 1,1 >"$d/vs-ir-run.txt" 2>&1; then
		why="tpu-sim differs from ir-run"
		echo "layers 1-$1 of $n (to $name): $why at $(awk '/ FAIL/ { print $1; exit }' "$d/vs-ir-run.txt")"
		return 1
	fi
	t npz-compare "$d/sim.npz" "$top_all" --tolerance "$cos,-1e9" >"$d/vs-f32.txt" 2>&1 || true
	first=$(awk '/ FAIL/ { print $1; exit }' "$d/vs-f32.txt")
	if [ -n "$first" ]; then
		why="cosine against F32 $(awk -v n="$first" '$1 == n { print $3 }' "$d/vs-f32.txt") below $cos"
		echo "layers 1-$1 of $n (to $name): $why at $first"
		return 1
	fi
	echo "layers 1-$1 of $n (to $name): tpu-sim equals ir-run, cosine against F32 at least $cos"
	return 0
}

if check "$n"; then
	echo "every layer good: tpu-sim equals ir-run, cosine against F32 at least $cos"
	exit 0
fi
bad=$n badwhy=$why lo=1 hi=$n
# invariant: layer hi is bad, layers before lo are good
while [ "$lo" -lt "$hi" ]; do
	mid=$(( (lo + hi) / 2 ))
	if check "$mid"; then
		lo=$((mid + 1))
	else
		hi=$mid bad=$mid badwhy=$why
	fi
done
echo "first bad layer: $(sed -n "${bad}p" "$work/layers") ($badwhy)"
