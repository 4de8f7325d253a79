#!/bin/bash
# ir-run-vs-ort.sh - ir-run (Top F32, after top-opt) against onnxruntime
# (npm onnxruntime-node, full graph optimisation) on the same inputs, side
# by side in one run, for every model tpuc imports.
#
#   bench/ir-run-vs-ort.sh [-n RUNS] [-r ROUNDS] [-t "1 2"] [MODEL...]
#
# MODEL names folders of $TPUC_MODELS (default ../shared/models beside the
# repository); all of them when none is given.  For each model and thread
# count, ROUNDS rounds (default 3) each run `ir-run --bench RUNS` and then
# bench/ort_bench.js with RUNS timed runs (default 20) after the same
# warm-up; each side's figure is the lowest of its per-round medians, so
# that a burst of load on a shared machine does not decide the ratio.
# Prints one row per model and thread count: model, threads, ir-run median
# ms, onnxruntime median ms, ratio (ir-run / onnxruntime; below 1 is
# faster).  Models onnx2top or top-opt refuse are listed with the reason.
# The header gives the load average: on a machine shared with other busy
# processes, timings at 2 threads swing widely (see OMP_WAIT_POLICY in
# ir-run(1)).
# onnxruntime-node is installed into bench/node_modules on first use.
# bench/ir-run-int8.sh times the same models' INT8 Tpu IR against their F32.
set -u
cd "$(dirname "$0")/.." || exit 2
REPO=$PWD
BIN=$REPO/${B:-build}/bin
MODELS=${TPUC_MODELS:-$REPO/../shared/models}
. bench/lib.sh
run_options ir-run-vs-ort "$@"
shift $((OPTIND - 1))

for t in onnx2top top-opt ir-run; do
	[ -x "$BIN/$t" ] || { echo "ir-run-vs-ort: $BIN/$t not built (run make)" >&2; exit 1; }
done
command -v node >/dev/null && command -v npm >/dev/null ||
	{ echo "ir-run-vs-ort: node and npm are needed for onnxruntime-node" >&2; exit 1; }
if [ ! -d bench/node_modules/onnxruntime-node ]; then
	# --ignore-scripts: the package's install script only fetches GPU
	# libraries; the CPU runtime is in the package itself.
	echo "ir-run-vs-ort: installing onnxruntime-node into bench/node_modules" >&2
	npm install --silent --no-save --no-package-lock --ignore-scripts --prefix bench \
		onnxruntime-node >&2 || { echo "ir-run-vs-ort: npm install failed" >&2; exit 1; }
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/tpuc-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT

copy_tools ir-run-vs-ort "$BIN" "$work/bin" onnx2top top-opt ir-run
BIN=$work/bin

if [ $# -eq 0 ]; then
	set -- $(cd "$MODELS" && for d in */; do [ -f "$d/model.onnx" ] && echo "${d%/}"; done)
fi
echo "ir-run $(git -C "$REPO" describe --always --dirty 2>/dev/null), onnxruntime-node" \
	"$(node -p "require('./bench/node_modules/onnxruntime-node/package.json').version")," \
	"$RUNS runs, best median of $ROUNDS rounds, $(nproc) processors," \
	"load average $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-22s %7s %12s %12s %7s\n' model threads ir-run_ms ort_ms ratio
for m in "$@"; do
	dir=$MODELS/$m
	if ! "$BIN/onnx2top" "$dir/model.onnx" -o "$work/$m.top" 2>"$work/err" ||
	   ! "$BIN/top-opt" "$work/$m.top" -o "$work/$m.opt.top" 2>"$work/err"; then
		printf '%-22s refused: %s\n' "$m" "$(head -n 1 "$work/err")"
		continue
	fi
	for t in $THREADS; do
		best_ir= best_ort= fail=
		for r in $(seq "$ROUNDS"); do
			if ! "$BIN/ir-run" "$work/$m.opt.top" -i "$dir/input.npz" -o "$work/out.npz" \
				--threads "$t" --bench "$RUNS" 2>"$work/ir.log"; then
				fail="ir-run: $(tail -n 1 "$work/ir.log")"
				break
			fi
			if ! node bench/ort_bench.js "$dir/model.onnx" "$dir/input.npz" "$t" "$RUNS" \
				>"$work/ort.log" 2>&1; then
				fail="$(tail -n 1 "$work/ort.log")"
				break
			fi
			best_ir=$(lower "$(median "$work/ir.log")" "$best_ir")
			best_ort=$(lower "$(median "$work/ort.log")" "$best_ort")
		done
		if [ -n "$fail" ]; then
			printf '%-22s %7s failed: %s\n' "$m" "$t" "$fail"
			continue
		fi
		printf '%-22s %7s %12.3f %12.3f %7.2f\n' "$m" "$t" "$best_ir" "$best_ort" \
			"$(awk -v a="$best_ir" -v b="$best_ort" 'BEGIN { print a / b }')"
	done
done
