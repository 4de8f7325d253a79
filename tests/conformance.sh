#!/bin/bash
# conformance.sh - run the ONNX backend node tests (Debian's libonnx-testdata)
# through onnx2top, top-opt and ir-run, and compare with the expected
# outputs.  The last line is "N passed, N failed, N unsupported": a case
# onnx2top refuses with its one-line reason (exit 1) is unsupported; a case
# it accepts must come out right, or it counts as failed.
#
# With -b (make conformance), every case ir-run gets right also goes
# through the back end: top2tpu --mode f32, weight-reorder, layergroup,
# addr-assign, codegen and tpu-sim on chip tpu-a, compared with the same
# references; the line before the last is "back end: N passed, N failed,
# N refused": a back-end tool that refuses the case with one line (exit 1)
# refuses it, anything else that is not right (a crash, a wrong result)
# fails it.  Parameters a case passes as graph inputs (Slice starts, Resize
# scales, Conv's weight ...) stay run-time inputs, in ir-run and on the
# back end (the ops they feed run on the host, their extents dynamic); only
# where onnx2top needs one constant ("must be a constant") is the case run
# with them bound (onnx2top --bind), and the count of such cases printed.
#
#   tests/conformance.sh [-j JOBS] [-b] [-k] [-v] [PATTERN...]
#
# PATTERN   shell patterns of case names (default test_*): a case matching any
# -j JOBS   cases run at once (default 2)     -k  keep the work folder
# -b        also through the back end to tpu-sim (see above)
# -v        also list every unsupported case with its class and reason
#           (the classes: CLASSES in tests/conformance.py)
# Environment: TPUC_BIN (folder of the tools, default build/bin beside this
# script), ONNX_TESTDATA (default /usr/share/libonnx-testdata/data/node),
# TIMEOUT seconds per tool run (default 60), CHECK_CLASSES=1 (fail when a
# refusal is in no documented class, or on the whole suite a class is
# empty).  Exit status 1 if a case failed.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
bin=${TPUC_BIN:-$here/../build/bin}
data=${ONNX_TESTDATA:-/usr/share/libonnx-testdata/data/node}
jobs=2 keep=0 verbose=0 back=0
while getopts bj:kv c; do
	case $c in
	b) back=1 ;;
	j) jobs=$OPTARG ;;
	k) keep=1 ;;
	v) verbose=1 ;;
	*) echo "usage: conformance.sh [-j JOBS] [-b] [-k] [-v] [PATTERN...]" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
pattern=${*:-test_*}
[ -d "$data" ] || { echo "conformance.sh: no test data in '$data'" >&2; exit 2; }
tools="onnx2top top-opt ir-run"
[ "$back" = 1 ] && tools="$tools top2tpu weight-reorder layergroup addr-assign codegen tpu-sim"
for t in $tools; do
	[ -x "$bin/$t" ] || { echo "conformance.sh: '$bin/$t' is not built" >&2; exit 2; }
done

work=$(mktemp -d "${TMPDIR:-/tmp}/tpuc-conformance.XXXXXX")
[ "$keep" = 1 ] && echo "conformance.sh: work folder $work" >&2 || trap 'rm -rf "$work"' EXIT
/usr/bin/python3 "$here/conformance.py" prepare "$data" "$work" "$pattern"

# One case: the status file says ok, refused: REASON or failed: REASON.
export bin data work back
export TIMEOUT="${TIMEOUT:-60}"

# The back end on a case ir-run ran: the status file bstatus says ok,
# refused: REASON (a tool's exit 1) or failed: REASON.
run_back() {
	d=$1
	f=$d/opt.top
	for step in "top2tpu --mode f32 --chip tpu-a:lowered.tpu" "weight-reorder:reordered.tpu" \
		"layergroup:grouped.tpu" "addr-assign:addressed.tpu" "codegen:model.tmodel"; do
		t=${step%%:*} o=$d/${step#*:}
		rc=0
		timeout "$TIMEOUT" $bin/$t "$f" -o "$o" 2>"$d/berr" || rc=$?
		if [ "$rc" = 1 ] && [ "$(wc -l <"$d/berr")" = 1 ]; then
			echo "refused: $(head -n 1 "$d/berr")" >"$d/bstatus"
			return 0
		elif [ "$rc" != 0 ]; then
			echo "failed: ${t%% *} exit $rc: $(head -n 1 "$d/berr")" >"$d/bstatus"
			return 0
		fi
		f=$o
	done
	rc=0
	timeout "$TIMEOUT" "$bin/tpu-sim" "$f" -i "$d/input.npz" -o "$d/sim_out.npz" 2>"$d/berr" || rc=$?
	if [ "$rc" != 0 ]; then
		echo "failed: tpu-sim exit $rc: $(head -n 1 "$d/berr")" >"$d/bstatus"
	else
		echo ok >"$d/bstatus"
	fi
}
export -f run_back
run_case() {
	d=$work/$1
	if [ -e "$d/refused" ]; then
		echo "refused: $(cat "$d/refused")" >"$d/status"
		return 0
	fi
	rc=0
	timeout "$TIMEOUT" "$bin/onnx2top" "$data/$1/model.onnx" -o "$d/m.top" 2>"$d/err" || rc=$?
	# Parameters given as graph inputs: bind them (all but the first input,
	# then all) as constants, as a user with static shapes would.
	for b in bind1 input; do
		[ "$rc" = 1 ] && grep -q "must be a constant\|is not static" "$d/err" || break
		touch "$d/bound"
		rc=0
		timeout "$TIMEOUT" "$bin/onnx2top" "$data/$1/model.onnx" --bind "$d/$b.npz" \
			-o "$d/m.top" 2>"$d/err" || rc=$?
	done
	if [ "$rc" = 1 ]; then
		echo "refused: $(head -n 1 "$d/err")" >"$d/status"
		return 0
	elif [ "$rc" != 0 ]; then
		echo "failed: onnx2top exit $rc: $(head -n 1 "$d/err")" >"$d/status"
		return 0
	fi
	if ! timeout "$TIMEOUT" "$bin/top-opt" "$d/m.top" -o "$d/opt.top" 2>"$d/err"; then
		echo "failed: top-opt: $(head -n 1 "$d/err")" >"$d/status"
	elif ! timeout "$TIMEOUT" "$bin/ir-run" "$d/opt.top" -i "$d/input.npz" -o "$d/out.npz" 2>"$d/err"; then
		echo "failed: ir-run: $(head -n 1 "$d/err")" >"$d/status"
	else
		echo ok >"$d/status"
		[ "$back" = 1 ] && run_back "$d"
	fi
	return 0
}
export -f run_case
xargs -P "$jobs" -I{} bash -c 'run_case "$1"' _ {} <"$work/cases"

BACK=$back VERBOSE=$verbose /usr/bin/python3 "$here/conformance.py" report "$work"
