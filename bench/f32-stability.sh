#!/bin/bash
# f32-stability.sh - how much a network's own F32 output moves when only its
# input and weights are rounded to bf16 or f16 (ir-run --round), beside what
# the bf16 and f16 modes give: issue 12 asks BF16 >= 0.999 and F16 >= 0.9999
# "where F32 itself is stable", and a network whose F32 output already loses
# a large part of that from one rounding of its input and weights (random
# weights amplify noise layer after layer) cannot keep it through the
# rounding of every stored activation too.
#
#   bench/f32-stability.sh [-d DIR] NAME...
#
# DIR (default $UNSEEN_DIR or /work/tmp-zoo/m) is bench/unseen.sh's: one
# folder per model with model.onnx and input.npz.  For each NAME: the Top IR
# (onnx2top --shapes-from input.npz | top-opt) run by ir-run on the input,
# and with --round bf16 and --round f16; printed:
#   rnd->bf16, rnd->f16  min cosine over the outputs, F32 with the input
#                        and weights rounded vs F32
#   bf16, f16            f32~sim of bench/unseen.sh's bf16 and f16 rows on
#                        tpu-a when DIR/NAME/tpu-a-MODE/row.txt holds one
#   stable               per mode, yes when the rounding spends at most a
#                        quarter of the goal's margin (rnd >= 1 - (1 -
#                        goal) / 4), as bench/unseen.sh judges it
set -u
cd "$(dirname "$0")/.." || exit 2
BIN=$PWD/${B:-build}/bin
DIR=${UNSEEN_DIR:-/work/tmp-zoo/m}
while getopts d:h o; do
	case $o in
	d) DIR=$OPTARG ;;
	*) echo "usage: bench/f32-stability.sh [-d DIR] NAME..." >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -gt 0 ] || { echo "usage: bench/f32-stability.sh [-d DIR] NAME..." >&2; exit 2; }
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
export PATH=$BIN:$PATH
# mode_cos ROW: the f32~sim column of an unseen.sh row, or -
mode_cos() {
	[ -s "$1" ] && awk '{ print $8; exit }' "$1" || echo -
}
# mincos A B: min cosine over the outputs
mincos() {
	npz-compare "$1" "$2" --tolerance -1,-1 2>/dev/null |
		awk 'NR > 1 && $3 ~ /^-?[0-9.]+$/ { if (m == "" || $3 < m) m = $3 } END { print (m == "" ? "-" : m) }'
}
printf '%-24s %10s %10s %10s %10s %7s %7s\n' model 'rnd->bf16' bf16 'rnd->f16' f16 s-bf16 s-f16
for name in "$@"; do
	d=$DIR/$name
	if ! onnx2top "$d/model.onnx" --shapes-from "$d/input.npz" 2>"$W/err" |
		top-opt -o "$W/m.top" 2>>"$W/err"; then
		printf '%-24s %s\n' "$name" "$(head -1 "$W/err")"
		continue
	fi
	ir-run "$W/m.top" -i "$d/input.npz" -o "$W/a.npz" || continue
	row=() st=()
	for tag in bf16 f16; do
		c=-
		ir-run "$W/m.top" -i "$d/input.npz" --round $tag -o "$W/b.npz" && c=$(mincos "$W/a.npz" "$W/b.npz")
		row+=("$c" "$(mode_cos "$d/tpu-a-$tag/row.txt")")
		st+=("$(awk -v c="$c" -v g="$([ $tag = bf16 ] && echo 0.999 || echo 0.9999)" \
			'BEGIN { print (c != "-" && 1 - c <= (1 - g) / 4 ? "yes" : "no") }')")
	done
	printf '%-24s %10s %10s %10s %10s %7s %7s\n' "$name" "${row[@]}" "${st[@]}"
done
