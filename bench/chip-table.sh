#!/bin/bash
# chip-table.sh - how close the compiled models come to the chip's limit:
# for every model and both chips (tpu-a, tpu-b), the cycles tpu-sim counts,
# the roofline bound, the efficiency (bound / cycles) and the compile time
# (onnx2top through codegen, calibration not counted), each with the
# figure recorded before beside it.
#
#   bench/chip-table.sh [-m MODE] [-u] [-f FIGURES] [MODEL...]
#
# MODEL names a folder of $TPUC_MODELS (default ../shared/models beside
# the repository; model.onnx and calib.npz in it) or is an .onnx file
# (calibration samples in NAME_calib.npz beside it); every folder of
# $TPUC_MODELS when none is given.  MODE is int8 (default), f32, bf16 or
# f16; INT8 is calibrated once per model (minmax on 4 samples: the cycles
# do not depend on the scales).  The previous figures are read from
# FIGURES (default bench/chip-figures.txt: "model chip mode cycles bound
# efficiency compile_s" per line); -u writes this run's figures there
# (replacing the lines of the same model, chip and mode).  A model that
# fails to compile prints "failed" and the tool's message.  Work files go
# to a temporary folder, removed at the end (kept with KEEP=1, and named).
# A benchmark, not a test: timings depend on the machine and its load.
set -u -o pipefail
cd "$(dirname "$0")/.." || exit 2
REPO=$PWD
BIN=$REPO/${B:-build}/bin
MODELS=${TPUC_MODELS:-$REPO/../shared/models}
FIG=$REPO/bench/chip-figures.txt
MODE=int8 UPDATE=0

usage() {
	echo "usage: bench/chip-table.sh [-m MODE] [-u] [-f FIGURES] [MODEL...]" >&2
	exit 2
}
while getopts m:uf:h o; do
	case $o in
	m) MODE=$OPTARG ;;
	u) UPDATE=1 ;;
	f) FIG=$OPTARG ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))
case $MODE in int8|f32|bf16|f16) ;; *) usage ;; esac
for t in onnx2top top-opt calibrate top2tpu weight-reorder layergroup addr-assign codegen tpu-sim; do
	[ -x "$BIN/$t" ] || { echo "chip-table.sh: $BIN/$t missing: run make" >&2; exit 1; }
done
if [ $# -eq 0 ]; then
	for d in "$MODELS"/*/; do
		[ -f "$d/model.onnx" ] && set -- "$@" "$(basename "$d")"
	done
fi
WORK=$(mktemp -d "${TMPDIR:-/tmp}/chip-table.XXXXXX") || exit 1
if [ "${KEEP:-0}" = 1 ]; then
	echo "chip-table.sh: work folder $WORK" >&2
else
	trap 'rm -rf "$WORK"' EXIT
fi
NEW=$WORK/figures

# prev MODEL CHIP FIELD: the recorded figure (field 4 cycles, 5 bound,
# 6 efficiency, 7 compile seconds), or "-".
prev() {
	[ -f "$FIG" ] || { echo -; return; }
	awk -v m="$1" -v c="$2" -v mo="$MODE" -v f="$3" \
		'$1 == m && $2 == c && $3 == mo { v = $f } END { print v == "" ? "-" : v }' "$FIG"
}

now() { date +%s.%N; }

printf '%-22s %-5s %-5s %21s %21s %15s %15s\n' model chip mode "cycles (prev)" \
	"bound (prev)" "eff % (prev)" "compile s (prev)"
for m in "$@"; do
	if [ -f "$m" ]; then
		onnx=$m name=$(basename "$m" .onnx) calib=${m%.onnx}_calib.npz
	else
		onnx=$MODELS/$m/model.onnx name=$m calib=$MODELS/$m/calib.npz
	fi
	w=$WORK/$name
	mkdir -p "$w"
	cal=()
	if [ "$MODE" = int8 ]; then
		if ! "$BIN/onnx2top" "$onnx" -o "$w/c.raw.top" 2>"$w/err" ||
		   ! "$BIN/top-opt" "$w/c.raw.top" -o "$w/c.top" 2>"$w/err" ||
		   ! "$BIN/calibrate" "$w/c.top" -d "$calib" -n 4 --method minmax \
			-o "$w/table" 2>"$w/err"; then
			printf '%-22s %-5s %-5s failed: %s\n' "$name" - "$MODE" "$(head -n 1 "$w/err")"
			continue
		fi
		cal=(--calib "$w/table")
	fi
	for chip in tpu-a tpu-b; do
		p=$w/$chip
		t0=$(now)
		if ! { "$BIN/onnx2top" "$onnx" | "$BIN/top-opt" |
		       "$BIN/top2tpu" --chip "$chip" --mode "$MODE" "${cal[@]}" |
		       "$BIN/weight-reorder" | "$BIN/layergroup" | "$BIN/addr-assign" -q |
		       "$BIN/codegen" -o "$p.tmodel"; } 2>"$w/err"; then
			printf '%-22s %-5s %-5s failed: %s\n' "$name" "$chip" "$MODE" "$(head -n 1 "$w/err")"
			continue
		fi
		t1=$(now)
		if ! "$BIN/tpu-sim" "$p.tmodel" -t 2>"$w/sim"; then
			printf '%-22s %-5s %-5s failed: %s\n' "$name" "$chip" "$MODE" "$(head -n 1 "$w/sim")"
			continue
		fi
		cyc=$(sed -n '1s/.*: \([0-9]*\) cycles,.*/\1/p' "$w/sim")
		bound=$(sed -n 's/.*roofline bound \([0-9]*\) cycles.*/\1/p' "$w/sim")
		eff=$(sed -n 's/.*efficiency \([0-9.]*\)%.*/\1/p' "$w/sim")
		secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
		echo "$name $chip $MODE $cyc $bound $eff $secs" >>"$NEW"
		printf '%-22s %-5s %-5s %10s %10s %10s %10s %7s %7s %7s %7s\n' "$name" "$chip" "$MODE" \
			"$cyc" "($(prev "$name" "$chip" 4))" "$bound" "($(prev "$name" "$chip" 5))" \
			"$eff" "($(prev "$name" "$chip" 6))" "$secs" "($(prev "$name" "$chip" 7))"
	done
done

if [ "$UPDATE" = 1 ] && [ -s "$NEW" ]; then
	# the old lines of other models, chips and modes, then this run's
	tmp=$FIG.tmp.$$
	{
		echo "# bench/chip-table.sh -u: model chip mode cycles bound efficiency% compile_s"
		[ -f "$FIG" ] && awk 'NR == FNR { k[$1 " " $2 " " $3] = 1; next }
			/^#/ { next } !(($1 " " $2 " " $3) in k)' "$NEW" "$FIG"
		cat "$NEW"
	} >"$tmp" && mv "$tmp" "$FIG" && echo "chip-table.sh: figures written to $FIG" >&2
fi
