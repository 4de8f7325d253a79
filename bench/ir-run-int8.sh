#!/bin/bash
# ir-run-int8.sh - ir-run on a model's INT8 Tpu IR against its F32 forms, in
# one run: the Top graph after top-opt (the oneDNN plan), the F32 Tpu IR and
# the INT8 (or mixed) Tpu IR, all lowered for tpu-a from the same model.
#
#   bench/ir-run-int8.sh [-n RUNS] [-r ROUNDS] [-t "1 2"] [MODEL...]
#
# MODEL names a folder of $TPUC_MODELS (default ../shared/models beside the
# repository), or is a folder path; each holds model.onnx, input.npz and
# calib.npz.  All of $TPUC_MODELS when none is given.  The INT8 IR is made
# in the model's own setting of pipelines/models.mk (a searched qtable for
# mobilenet_v2, asymmetric u8 for mobilenet_v3_small, ...; plain int8 for a
# model not listed there), by pipelines/deploy.mk into a scratch folder.
# For each model and thread count, ROUNDS rounds (default 3) each run
# `ir-run --bench RUNS` (default 20) on the three files; each figure is the
# lowest of its per-round medians.  Prints one row per model and thread
# count: model, setting, threads, the median ms of the Top F32 graph, of the
# F32 Tpu IR and of the INT8 Tpu IR, and the ratio INT8 / Top F32 (issue
# 15's goal: at most 2).  The header gives the load average: timings on a
# busy machine swing (see bench/ir-run-vs-ort.sh).  TPUC_BIN names another
# folder of tools to time (an older build, for a before and after).
set -u
cd "$(dirname "$0")/.." || exit 2
REPO=$PWD
BIN=${TPUC_BIN:-$REPO/${B:-build}/bin}
MODELS=${TPUC_MODELS:-$REPO/../shared/models}
. bench/lib.sh
run_options ir-run-int8 "$@"
shift $((OPTIND - 1))

TOOLS="onnx2top top-opt calibrate top2tpu ir-run"
for t in $TOOLS; do
	[ -x "$BIN/$t" ] || { echo "ir-run-int8: $BIN/$t not built (run make)" >&2; exit 1; }
done

work=$(mktemp -d "${TMPDIR:-/tmp}/tpuc-int8.XXXXXX")
trap 'rm -rf "$work"' EXIT

# shellcheck disable=SC2086
copy_tools ir-run-int8 "$BIN" "$work/bin" $TOOLS
BIN=$work/bin

# The model's deploy.mk settings in pipelines/models.mk (DEF_<name>, else
# DEF_INT8).
setting() {
	local s
	s=$(make -s -f pipelines/models.mk -pn NAMES="$1" 2>/dev/null | sed -n "s/^DEF_$1 := //p")
	[ -n "$s" ] || s=$(make -s -f pipelines/models.mk -pn 2>/dev/null | sed -n 's/^DEF_INT8 := //p')
	echo "$s"
}

if [ $# -eq 0 ]; then
	set -- $(cd "$MODELS" && for d in */; do [ -f "$d/model.onnx" ] && echo "${d%/}"; done)
fi
echo "ir-run $(git -C "$REPO" describe --always --dirty 2>/dev/null), $RUNS runs," \
	"best median of $ROUNDS rounds, $(nproc) processors, load average $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-22s %-16s %7s %11s %11s %11s %10s\n' model setting threads top_f32_ms \
	tpu_f32_ms tpu_int8_ms int8/f32
for m in "$@"; do
	dir=$MODELS/$m
	[ -d "$m" ] && dir=$m
	name=$(basename "$dir")
	set_q=$(setting "$name")
	# the setting in short: int8, plus qtable and asym when used
	tag=int8
	case " $set_q " in *" QTABLE="*) tag=$tag+qtable ;; esac
	case " $set_q " in *" ASYM=1 "*) tag=$tag+asym ;; esac
	case " $set_q " in *" MODE=int8 "*) ;; *) tag=$(echo "$set_q" | sed -n 's/.*MODE=\([a-z0-9]*\).*/\1/p') ;; esac
	ok=1
	for v in f32 q; do
		# shellcheck disable=SC2086
		if [ "$v" = f32 ]; then args="MODE=f32"; else args=$set_q; fi
		# shellcheck disable=SC2086
		if ! make -s -f pipelines/deploy.mk TPUC_BIN="$BIN" MODEL="$dir/model.onnx" \
			INPUT="$dir/input.npz" CALIB="$dir/calib.npz" $args OUT="$work/$name-$v" \
			"$work/$name-$v/lowered.tpu" >"$work/log" 2>&1; then
			printf '%-22s refused: %s\n' "$name" "$(grep -v '^make' "$work/log" | tail -n 1)"
			ok=0
			break
		fi
	done
	[ $ok = 1 ] || continue
	for t in $THREADS; do
		best_top= best_f32= best_q= fail=
		for r in $(seq "$ROUNDS"); do
			for f in top:$name-f32/canonical.top f32:$name-f32/lowered.tpu q:$name-q/lowered.tpu; do
				if ! "$BIN/ir-run" "$work/${f#*:}" -i "$dir/input.npz" -o /dev/null \
					--threads "$t" --bench "$RUNS" 2>"$work/ir.log"; then
					fail="ir-run ${f#*:}: $(tail -n 1 "$work/ir.log")"
					break 2
				fi
				case ${f%%:*} in
				top) best_top=$(lower "$(median "$work/ir.log")" "$best_top") ;;
				f32) best_f32=$(lower "$(median "$work/ir.log")" "$best_f32") ;;
				q) best_q=$(lower "$(median "$work/ir.log")" "$best_q") ;;
				esac
			done
		done
		if [ -n "$fail" ]; then
			printf '%-22s %-16s %7s failed: %s\n' "$name" "$tag" "$t" "$fail"
			continue
		fi
		printf '%-22s %-16s %7s %11.3f %11.3f %11.3f %10.2f\n' "$name" "$tag" "$t" \
			"$best_top" "$best_f32" "$best_q" \
			"$(awk -v a="$best_q" -v b="$best_top" 'BEGIN { print a / b }')"
	done
done
