#!/bin/bash
# quant-table.sh - the quantisation figures of every model tpuc imports:
# final-output cosine of the Tpu IR against Top F32 on the model's test
# input in INT8, INT8 with asymmetric activations (--asymmetric), BF16 and
# F16, each also with a searched qtable (and how many ops it keeps in f32;
# for BF16 and F16 only where the mode alone misses 0.999 / 0.9999), the
# cosine the search expects on unseen input ("exp", its held-out score) and
# whether the searched INT8 graph gives the float answer on the test input
# ("task": npz-compare --task auto, top-1 of a clear classifier, CTC text,
# a probability's error and side of 0.5); and the time of KLD calibration
# on the 32 calibration samples against 32 ir-run F32 inferences.
#
#   bench/quant-table.sh [-s SEARCH_SAMPLES] [-c EXPECTED_COS] [MODEL...]
#
# MODEL names folders of $TPUC_MODELS (default ../shared/models beside the
# repository); all of them when none is given.  The cosine is the smallest
# over the graph's outputs (npz-compare).  The qtable is searched by
# `calibrate --search-qtable --expected-cos C` (C 0.99 by default) with
# calibrate's own defaults otherwise, as deploy.mk QTABLE=auto does (-s S
# adds --search-samples S), on the calibration samples, so the test input
# may land on either side of C.  MODELS may also name folders holding
# model.onnx, input.npz and calib.npz.  Calibration and inference run on one thread
# (both tools' default); "32inf" is 32 times the median of
# `ir-run --bench 32`, so loading the model is not counted on that side
# but is on calibrate's.  Work files go to a temporary folder, removed at
# the end (kept with KEEP=1, and named).
set -u
cd "$(dirname "$0")/.." || exit 2
REPO=$PWD
BIN=$REPO/${B:-build}/bin
MODELS=${TPUC_MODELS:-$REPO/../shared/models}
SEARCH_N= COS=0.99

usage() {
	echo "usage: bench/quant-table.sh [-s SEARCH_SAMPLES] [-c EXPECTED_COS] [MODEL...]" >&2
	exit 2
}
while getopts s:c:h o; do
	case $o in
	s) SEARCH_N=$OPTARG ;;
	c) COS=$OPTARG ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))
for t in onnx2top top-opt calibrate top2tpu ir-run npz-compare; do
	[ -x "$BIN/$t" ] || { echo "quant-table.sh: '$BIN/$t' not built (make)" >&2; exit 1; }
done
[ -d "$MODELS" ] || { echo "quant-table.sh: no models in '$MODELS' (set TPUC_MODELS)" >&2; exit 1; }
if [ $# -eq 0 ]; then
	set -- $(cd "$MODELS" && for d in */; do [ -f "$d/model.onnx" ] && echo "${d%/}"; done)
fi
W=$(mktemp -d "${TMPDIR:-/tmp}/quant-table.XXXXXX") || exit 1
[ "${KEEP:-0}" = 1 ] && echo "# work files in $W" || trap 'rm -rf "$W"' EXIT

# cosine REF OUT: the smallest cosine over the outputs, or the failure.
cosine() {
	"$BIN/npz-compare" "$1" "$2" --tolerance 0,0 2>/dev/null |
		awk 'NR > 1 && NF >= 6 && $1 != "npz-compare:" {
			c = $3 == "nan" || $3 == "-nan" ? -1 : $3 + 0
			if (!n++ || c < m) m = c
		} END { if (!n) print "-"; else if (m < 0) print "nan"; else printf "%.5f", m }'
}

# lowered DIR TAG ARGS...: lower with ARGS, run on the test input, print
# the cosine against Top F32 (or "fail").
lowered() {
	local d=$1 tag=$2
	shift 2
	if "$BIN/top2tpu" "$d/canonical.top" --chip tpu-a "$@" -o "$d/$tag.tpu" 2>"$d/$tag.err" &&
		"$BIN/ir-run" "$d/$tag.tpu" -i "$d/input.npz" -o "$d/$tag.npz" 2>>"$d/$tag.err"; then
		cosine "$d/top.npz" "$d/$tag.npz"
	else
		echo fail
	fi
}

# searched DIR TAG MODE GOAL [--asymmetric]: search a qtable for a graph in
# MODE reaching GOAL, lower with it; sets cos and kept (ops in f32).
searched() {
	local d=$1 tag=$2 mode=$3 goal=$4
	shift 4
	kept=- cos=fail expect=-
	if "$BIN/calibrate" "$d/canonical.top" -d "$src/calib.npz" -o "$d/$tag.table" \
		--search-qtable "$d/$tag.qtable" --search-mode "$mode" --expected-cos "$goal" \
		${SEARCH_N:+--search-samples "$SEARCH_N"} "$@" 2>"$d/$tag.log"; then
		kept=$(grep -vc '^#' "$d/$tag.qtable")
		expect=$(sed -n 's/.*, \([0-9.-]*\) expected on unseen.*/\1/p' "$d/$tag.log" | head -1)
		cos=$(lowered "$d" "$tag" --mode "$mode" "$@" --calib "$d/$tag.table" --qtable "$d/$tag.qtable")
	fi
}

# below A B: true when cosine A (a number, nan or fail) is below B.
below() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a == "nan" || a == "fail" || a + 0 < b + 0) }'; }

now() { date +%s.%N; }
msecs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.0f", 1000 * (b - a) }'; }

echo "# quant-table: Tpu IR vs Top F32, final outputs (smallest cosine over outputs), test input"
echo "# qtable: calibrate --search-qtable --search-mode MODE --expected-cos C${SEARCH_N:+ --search-samples $SEARCH_N},"
echo "# C = $COS for int8, 0.999 bf16, 0.9999 f16 (searched only where the mode alone misses C); kept = ops in f32"
echo "# f16 is lowered with the calibration table (ops beyond f16's range stay in f32)"
echo "# $(nproc) processors, load average $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-19s %7s %7s %4s %7s %4s %7s %7s %4s %7s %7s %4s %7s %7s %4s %7s %8s %6s\n' model int8 +qt kept \
	exp task asym +qt kept bf16 +qt kept f16 +qt kept kld_ms 32inf_ms ratio
for m in "$@"; do
	src=$MODELS/$m d=$W/$m
	mkdir -p "$d"
	ln -s "$src/input.npz" "$d/input.npz"
	if ! "$BIN/onnx2top" "$src/model.onnx" -o "$d/origin.top" 2>"$d/err" ||
	   ! "$BIN/top-opt" "$d/origin.top" -o "$d/canonical.top" 2>>"$d/err" ||
	   ! "$BIN/ir-run" "$d/canonical.top" -i "$src/input.npz" -o "$d/top.npz" 2>>"$d/err"; then
		printf '%-20s not supported: %s\n' "$m" "$(head -1 "$d/err")"
		continue
	fi
	t0=$(now)
	"$BIN/calibrate" "$d/canonical.top" -d "$src/calib.npz" --method kld -o "$d/cali.table" 2>"$d/err"
	t1=$(now)
	med=$("$BIN/ir-run" "$d/canonical.top" -i "$src/input.npz" -o "$d/b.npz" --bench 32 2>&1 |
		sed -n 's/^median_ms=//p' | tail -1)
	inf=$(awk -v m="${med:-0}" 'BEGIN { printf "%.1f", 32 * m }')
	kld=$(msecs "$t0" "$t1")
	ratio=$(awk -v a="$kld" -v b="$inf" 'BEGIN { if (b > 0) printf "%.1f", a / b; else print "-" }')
	i8=$(lowered "$d" int8 --mode int8 --calib "$d/cali.table")
	as=$(lowered "$d" asym --mode int8 --asymmetric --calib "$d/cali.table")
	searched "$d" qs int8 "$COS"
	qs=$cos ks=$kept es=$expect tk=-
	if [ -f "$d/qs.npz" ]; then
		"$BIN/npz-compare" "$d/top.npz" "$d/qs.npz" --tolerance -1,-1 --task auto >/dev/null 2>&1 &&
			tk=ok || tk=FAIL
	fi
	searched "$d" qa int8 "$COS" --asymmetric
	qa=$cos ka=$kept
	bf=$(lowered "$d" bf16 --mode bf16)
	qb=- kb=-
	if below "$bf" 0.999; then
		searched "$d" qb bf16 0.999
		qb=$cos kb=$kept
	fi
	f16=$(lowered "$d" f16 --mode f16 --calib "$d/cali.table")
	qh=- kh=-
	if below "$f16" 0.9999; then
		searched "$d" qh f16 0.9999
		qh=$cos kh=$kept
	fi
	printf '%-19s %7s %7s %4s %7s %4s %7s %7s %4s %7s %7s %4s %7s %7s %4s %7s %8s %6s\n' "$m" "$i8" "$qs" "$ks" \
		"${es:--}" "$tk" "$as" "$qa" "$ka" "$bf" "$qb" "$kb" "$f16" "$qh" "$kh" "$kld" "$inf" "$ratio"
done
