#!/bin/bash
# unseen.sh - networks tpuc was never tuned on, through pipelines/deploy.mk
# with its DEFAULTS, one row per model, chip and mode.
#
#   bench/unseen.sh [-d DIR] [-m MODES] [-c CHIPS] [-t SECONDS] [-s TAG] [-k] [-l] [NAME...]
#
# DIR (default $UNSEEN_DIR or /work/tmp-zoo/m) holds one folder per model,
# made by bench/unseen-models.py when missing (model.onnx, input.npz: the
# test input, calib.npz: 32 realistic calibration samples, info.txt: kind
# and task); NAME defaults to every folder of DIR, else every model the
# generator knows (`bench/unseen-models.py --list`), smallest first.
# ref.npz is onnxruntime's output for input.npz (bench/unseen_ort.js).
# MODES (default "f32 int8 auto bf16 f16"): f32, bf16, f16, int8, and auto
# (int8 with QTABLE=auto); CHIPS (default "tpu-a"): tpu-a and/or tpu-b.
# Each model, chip and mode runs alone (no -j), under nice, in
# DIR/NAME/CHIP-MODE/ with its log deploy.log, and is stopped after SECONDS
# (default 900) as "timeout".  Each row is kept in the run's row.txt, and
# the stage files (.top, .tpu, .tmodel: gigabytes over the whole set) are
# removed once the row is made, unless -k keeps them.  -l only prints the
# rows of runs already done.
# -s TAG puts the runs in DIR/NAME/CHIP-MODE-TAG instead (the tools of
# another build, B=build-dev, beside the first figures).
#
# Columns:
#   imp       onnx2top took the model (yes/no)
#   stage     the first stage that failed (import, opt, calib, lower,
#             reorder, group, addr, codegen, sim, ir-run), or ok
#   ref~top   f32 only: min cosine over the outputs, onnxruntime vs Top IR
#             on ir-run (the importer's accuracy)
#   ref~sim   f32: onnxruntime vs tpu-sim (goal >= 0.99999)
#   f32~sim   other modes: Top IR F32 (ir-run) vs tpu-sim in the mode: the
#             quantisation's cost (goals: int8 >= 0.99 CNN, >= 0.98 OCR,
#             detection, transformer; bf16 >= 0.999; f16 >= 0.9999)
#   task      npz-compare --task TASK (info.txt; auto when absent) of the
#             same pair: top-1 kept, CTC text same, map/seg agreement
#   ir=sim    Tpu IR on ir-run vs tpu-sim: "exact" when bit-identical,
#             else the min cosine
#   cycles, eff   tpu-sim's cycles and efficiency (roofline bound / cycles)
#   build     seconds from onnx2top through codegen (calibration included)
#   f32ops    auto: ops the searched qtable keeps in f32
#   message   the failing tool's one line, or the first failed check; for
#             a bf16 or f16 row that ran, "F32 at MODE: C, stable|unstable":
#             C the cosine of Top F32 with its input and weights rounded
#             to MODE (ir-run --round) against Top F32, and stable when
#             that spends at most a quarter of the goal's margin (C >=
#             1 - (1 - goal) / 4), leaving the rest to the activations the
#             mode stores: a network whose own F32 amplifies one rounding
#             beyond that is judged "where F32 itself is stable" by it,
#             not by the goal (ir-run(1) --round)
# Needs Debian's /usr/bin/python3 (numpy, onnx, torch for the generator),
# node with onnxruntime-node ($ORT_NODE or /work/ort/node_modules).
set -u
cd "$(dirname "$0")/.." || exit 2
REPO=$PWD
BIN=$REPO/${B:-build}/bin
PY=/usr/bin/python3
DIR=${UNSEEN_DIR:-/work/tmp-zoo/m}
MODES="f32 int8 auto bf16 f16" CHIPS=tpu-a T=900 LIST= TAG= KEEP=
while getopts d:m:c:t:s:klh o; do
	case $o in
	d) DIR=$OPTARG ;;
	m) MODES=$OPTARG ;;
	c) CHIPS=$OPTARG ;;
	t) T=$OPTARG ;;
	s) TAG=-$OPTARG ;;
	l) LIST=1 ;;
	k) KEEP=1 ;;
	*) sed -n '2,40s/^# \{0,1\}//p' "$0" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
NAMES=("$@")
if [ ${#NAMES[@]} -eq 0 ]; then
	mapfile -t NAMES < <($PY bench/unseen-models.py --list | awk '{print $1}')
fi
mkdir -p "$DIR"

# ref.npz: onnxruntime on input.npz
ref() {
	local d=$1 w=$1/ort
	[ -s "$d/ref.npz" ] && return 0
	rm -rf "$w" && mkdir -p "$w" || return 1
	$PY - "$d/input.npz" "$w" <<'EOF' || return 1
import sys, json, re, numpy as np
x = np.load(sys.argv[1])
for k in x.files:
    a = np.ascontiguousarray(x[k])
    f = sys.argv[2] + "/" + re.sub(r"[^A-Za-z0-9_.-]", "_", k)
    a.astype(a.dtype.newbyteorder("<")).tofile(f + ".bin")
    json.dump({"shape": list(a.shape), "dtype": str(a.dtype)}, open(f + ".json", "w"))
EOF
	nice -n 10 node bench/unseen_ort.js "$d/model.onnx" "$w" || return 1
	$PY - "$w/out" "$d/ref.npz" <<'EOF'
import sys, json, numpy as np
o = sys.argv[1]
names = json.load(open(o + "/names.json"))
out = {}
for i, n in enumerate(names):
    j = json.load(open("%s/%d.json" % (o, i)))
    dt = {"bool": np.uint8}.get(j["dtype"], j["dtype"])
    out[n] = np.fromfile("%s/%d.bin" % (o, i), dtype=dt).reshape(j["shape"])
np.savez(sys.argv[2] + ".tmp.npz", **out)
import os; os.replace(sys.argv[2] + ".tmp.npz", sys.argv[2])
EOF
}

# min cosine of npz-compare A B [--task T]; "-" when nothing compared
mincos() {
	"$BIN/npz-compare" "$@" --tolerance -1,-1 2>/dev/null |
		awk 'NR > 1 && $0 !~ /^ / && $3 ~ /^-?[0-9.]+$/ { if (m == "" || $3 < m) m = $3 }
		     END { print (m == "" ? "-" : m) }'
}

# the task check's verdict: PASS, FAIL (account), or - when no row is checked
taskcheck() {
	"$BIN/npz-compare" "$1" "$2" --tolerance -1,-1 --task "$3" 2>/dev/null |
		awk '/^ +task / { n++; if ($NF != "PASS") { bad = bad (bad ? "; " : "") $0 } else if (!ok) ok = $0 }
		     END { if (!n) print "-"; else if (bad) { sub(/^ +task /, "", bad); print "FAIL(" bad ")" }
		           else { sub(/^ +task /, "", ok); sub(/: PASS$/, "", ok); print "PASS(" ok ")" } }'
}

# the stage whose file is missing first, and the failing tool's line
stage_of() {
	local o=$1 s
	for s in origin.top:import canonical.top:opt cali.table:calib lowered.tpu:lower \
		reordered.tpu:reorder grouped.tpu:group addressed.tpu:addr model.tmodel:codegen \
		top_out.npz:ir-run sim_out.npz:sim tpu_out.npz:ir-run-tpu; do
		case ${s%%:*} in cali.table) [ -e "$o/need-table" ] || continue ;; esac
		[ -s "$o/${s%%:*}" ] || { echo "${s#*:}"; return; }
	done
	echo ok
}

message() {
	grep -E -e '^(onnx2top|top-opt|calibrate|top2tpu|weight-reorder|layergroup|addr-assign|codegen|tpu-sim|ir-run): ' \
		-e 'Segmentation fault|Aborted|core dumped|AddressSanitizer|runtime error|Killed|Terminated' "$1" |
		grep -v -E '^tpu-sim: (tpu-[ab]|engines busy|DDR |roofline|host:)|^addr-assign: neuron|^calibrate: [^/]*$' |
		head -n1 | cut -c1-220
}

printf '%-20s %-5s %-5s %-3s %-8s %-8s %-8s %-8s %-28s %-8s %10s %6s %6s %5s %s\n' model chip mode imp \
	stage ref~top ref~sim f32~sim task ir=sim cycles eff build f32ops message
for name in "${NAMES[@]}"; do
	d=$DIR/$name
	if [ ! -s "$d/model.onnx" ] && [ -z "$LIST" ]; then
		nice -n 10 $PY bench/unseen-models.py "$DIR" "$name" >/dev/null 2>"$d.gen.log" || true
	fi
	if [ ! -s "$d/model.onnx" ]; then
		printf '%-20s %-5s %-5s %-3s %-8s %s\n' "$name" - - - export \
			"$(tail -n1 "$d/export-failed.txt" 2>/dev/null | cut -c1-160)"
		continue
	fi
	task=auto
	[ -s "$d/info.txt" ] && task=$(awk '{print $2}' "$d/info.txt")
	[ -n "$LIST" ] || ref "$d" 2>"$d/ref.log" || { echo "$name: onnxruntime failed: $(tail -n1 "$d/ref.log")"; }
	for chip in $CHIPS; do
		for mode in $MODES; do
			o=$d/$chip-$mode$TAG
			m=$mode q=
			[ "$mode" = auto ] && m=int8 q=auto
			if [ -z "$LIST" ]; then
				rm -rf "$o" && mkdir -p "$o"
				{ [ "$m" = int8 ] || [ "$m" = f16 ] || [ -n "$q" ]; } && touch "$o/need-table"
				args=(-f pipelines/deploy.mk TPUC_BIN="$BIN" OUT="$o" MODEL="$d/model.onnx"
					INPUT="$d/input.npz" CALIB="$d/calib.npz" MODE="$m" CHIP="$chip")
				[ -n "$q" ] && args+=(QTABLE="$q")
				[ -s "$d/bind.npz" ] && args+=(BIND="$d/bind.npz")
				s0=$(date +%s.%N)
				timeout "$T" nice -n 10 make -k "${args[@]}" all >"$o/deploy.log" 2>&1
				rc=$?
				s1=$(date +%s.%N)
				echo "$rc $(echo "$s1 - $s0" | bc)" >"$o/build.rc"
				if [ "$rc" != 124 ]; then
					timeout "$T" nice -n 10 make -k "${args[@]}" "$o/top_out.npz" "$o/tpu_out.npz" \
						"$o/sim_out.npz" >>"$o/deploy.log" 2>&1
					[ $? = 124 ] && echo timeout >"$o/timeout"
				else
					echo timeout >"$o/timeout"
				fi
			fi
			[ -d "$o" ] || continue
			if [ -n "$LIST" ] && [ -s "$o/row.txt" ]; then
				cat "$o/row.txt"
				continue
			fi
			imp=no
			[ -s "$o/origin.top" ] && imp=yes
			st=$(stage_of "$o")
			[ -e "$o/timeout" ] && st="timeout@$st"
			rt=- rs=- fs=- tk=- eq=- cyc=- eff=- nf=-
			if [ -s "$o/top_out.npz" ] && [ "$m" = f32 ]; then
				rt=$(mincos "$d/ref.npz" "$o/top_out.npz")
				[ -s "$o/sim_out.npz" ] && rs=$(mincos "$d/ref.npz" "$o/sim_out.npz")
			fi
			if [ -s "$o/top_out.npz" ] && [ -s "$o/sim_out.npz" ] && [ "$m" != f32 ]; then
				fs=$(mincos "$o/top_out.npz" "$o/sim_out.npz")
				tk=$(taskcheck "$o/top_out.npz" "$o/sim_out.npz" "$task")
			fi
			if [ -s "$o/tpu_out.npz" ] && [ -s "$o/sim_out.npz" ]; then
				if "$BIN/npz-compare" "$o/tpu_out.npz" "$o/sim_out.npz" --tolerance 1,1 >/dev/null 2>&1; then
					eq=exact
				else
					eq=$(mincos "$o/tpu_out.npz" "$o/sim_out.npz")
				fi
			fi
			cyc=$(sed -n 's/^tpu-sim: tpu-[ab] [a-z0-9]*: \([0-9]*\) cycles.*/\1/p' "$o/deploy.log" | tail -n1)
			eff=$(sed -n 's/^tpu-sim: roofline.*efficiency \([0-9.]*%\).*/\1/p' "$o/deploy.log" | tail -n1)
			[ -s "$o/auto.qtable" ] && nf=$(grep -c '[[:space:]]f32[[:space:]]*$' "$o/auto.qtable")
			b=$(awk '{printf "%.0f", $2}' "$o/build.rc" 2>/dev/null)
			msg=
			[ "$st" = ok ] || msg=$(message "$o/deploy.log")
			if [ "$st" = ok ] && { [ "$m" = bf16 ] || [ "$m" = f16 ]; } && [ -s "$o/canonical.top" ] &&
				nice -n 10 "$BIN/ir-run" "$o/canonical.top" -i "$d/input.npz" --round "$m" \
					-o "$o/round_out.npz" 2>/dev/null; then
				fl=$(mincos "$o/top_out.npz" "$o/round_out.npz")
				msg="F32 at $m: $fl, $(awk -v c="$fl" -v g="$([ "$m" = bf16 ] && echo 0.999 || echo 0.9999)" \
					'BEGIN { print (c != "-" && 1 - c <= (1 - g) / 4 ? "stable" : "unstable") }')"
			fi
			printf '%-20s %-5s %-5s %-3s %-8s %-8s %-8s %-8s %-28s %-8s %10s %6s %6s %5s %s\n' "$name" "$chip" \
				"$mode" $imp "$st" "$rt" "$rs" "$fs" "$(echo "$tk" | cut -c1-28)" "$eq" "${cyc:--}" "${eff:--}" \
				"${b:--}" "$nf" "$msg" | tee "$o/row.txt"
			[ -n "$KEEP" ] || rm -f "$o"/*.top "$o"/*.tpu "$o"/model.tmodel
		done
	done
done
