#!/bin/bash
# op-sweep.sh - the op sweep: every one-op model of tests/fixtures/op_sweep.py
# through onnx2top, top-opt, (calibrate,) top2tpu, weight-reorder,
# layergroup, addr-assign, codegen and tpu-sim, in each MODE:CHIP given;
# tpu-sim must give the bits ir-run gives on the Tpu IR, and the Tpu IR must
# stay close to the Top F32 IR (tests/op_sweep_check.py); tpu-sim runs the
# int8 kernels' C loops, ir-run oneDNN's int8 products.  Prints one line
# per failure and "N passed, N failed".
#
#   tests/op-sweep.sh [-j JOBS] [-k] TIER MODE:CHIP...
#
# TIER quick, batch2, tiny or big (op_sweep.py).  Environment: TPUC_BIN (default
# build/bin beside this script), TIMEOUT seconds per tool run (default 300).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
bin=${TPUC_BIN:-$here/../build/bin}
jobs=2 keep=0
while getopts j:k c; do
	case $c in
	j) jobs=$OPTARG ;;
	k) keep=1 ;;
	*) echo "usage: op-sweep.sh [-j JOBS] [-k] TIER MODE:CHIP..." >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -ge 2 ] || { echo "usage: op-sweep.sh [-j JOBS] [-k] TIER MODE:CHIP..." >&2; exit 2; }
tier=$1
shift
work=$(mktemp -d "${TMPDIR:-/tmp}/tpuc-sweep.XXXXXX")
[ "$keep" = 1 ] && echo "op-sweep.sh: work folder $work" >&2 || trap 'rm -rf "$work"' EXIT
/usr/bin/python3 "$here/fixtures/op_sweep.py" "$work" "$tier"
export bin work TIMEOUT="${TIMEOUT:-300}"

# One case in one mode and chip: status file "ok" or "failed: REASON".
run_one() {
	c=$1 mc=$2
	mode=${mc%%:*} chip=${mc#*:}
	d=$work/$c o=$work/$c/$mode-$chip
	mkdir -p "$o"
	st() { echo "$1" >"$o/status"; }
	t() { timeout "$TIMEOUT" "$bin/$@" 2>"$o/err" || { st "failed: $1: $(head -n 1 "$o/err")"; return 1; }; }
	[ -e "$d/canonical.top" ] || return 0
	cal=
	if [ "$mode" = int8 ]; then
		t calibrate "$d/canonical.top" -d "$d/calib.npz" -o "$o/cali.table" || return 0
		cal="--calib $o/cali.table"
	fi
	t top2tpu "$d/canonical.top" --chip "$chip" --mode "$mode" $cal -o "$o/lowered.tpu" &&
	t weight-reorder "$o/lowered.tpu" -o "$o/reordered.tpu" &&
	t layergroup "$o/reordered.tpu" -o "$o/grouped.tpu" &&
	t addr-assign "$o/grouped.tpu" -o "$o/addressed.tpu" &&
	t codegen "$o/addressed.tpu" -o "$o/model.tmodel" &&
	t ir-run "$o/lowered.tpu" -i "$d/input.npz" -o "$o/tpu.npz" &&
	# tpu-sim on the int8 kernels' own C loops, ir-run on oneDNN's int8
	# products where they are exact: the two must still agree bit for bit
	TPUC_DNNL_INT8=0 t tpu-sim "$o/model.tmodel" -i "$d/input.npz" -o "$o/sim.npz" &&
	st ok
	rm -f "$o"/*.tpu "$o/model.tmodel"
	return 0
}
# The front of a case, once for every mode.
run_case() {
	c=$1
	shift
	d=$work/$c
	if ! timeout "$TIMEOUT" "$bin/onnx2top" "$d/model.onnx" -o "$d/origin.top" 2>"$d/err" ||
	   ! timeout "$TIMEOUT" "$bin/top-opt" "$d/origin.top" -o "$d/canonical.top" 2>"$d/err" ||
	   ! timeout "$TIMEOUT" "$bin/ir-run" "$d/canonical.top" -i "$d/input.npz" -o "$d/top.npz" 2>"$d/err"; then
		echo "failed: front end: $(head -n 1 "$d/err")" >"$d/status"
		rm -f "$d/canonical.top"
	fi
	for mc in "$@"; do
		run_one "$c" "$mc"
	done
	rm -f "$d"/*.top
}
export -f run_case run_one
cut -d' ' -f1 "$work/cases" | xargs -P "$jobs" -I{} bash -c 'run_case "$@"' _ {} "$@"
/usr/bin/python3 "$here/op_sweep_check.py" "$work" "$@"
