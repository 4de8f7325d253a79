#!/bin/bash
# silero-vad.sh - Silero VAD (or any voice-activity model of its shape: audio
# frames, an int64 sample rate, LSTM state in and out) run over a whole
# utterance frame by frame on tpu-sim, state fed back, against onnxruntime's
# frame loop.
#
#   bench/silero-vad.sh [-b] [-r RATE] [-d DIR] [-w WORK] [-e COS] [MODEL.onnx...]
#
# MODEL defaults to DIR/silero_vad_{legacy,v5,v6}.onnx (DIR: /work/extra or
# $SILERO_DIR).  For each model: an utterance made with espeak-ng and sox
# (three sentences between silences, over white noise with a louder burst;
# 16 kHz mono; resampled to RATE, 16000 or 8000) cut into frames of 512
# samples (256 at 8 kHz) as Silero's own caller feeds them (v5 and later:
# after 64 samples of the previous frame, 32 at 8 kHz), the rate framed
# with them, onnxruntime's per-frame outputs (bench/vad_ort.js), then tpuc:
# onnx2top with the frame's shapes, the If on the rate kept and run on the
# host (with -b: --bind sr=RATE, the If folds), top-opt, the back end,
# tpu-sim --frames N --state OUT=IN, in (unbound, the If holds the whole
# model: every mode runs it on the host in float, the chip idles; -b puts
# it on the chip)
#   f32            compared with onnxruntime: max |error| of the output
#   int8           calibrated on the frames of another utterance with the
#                  states the float model meets there (calibrate --frames
#                  --state), every op with an int8 form in int8
#   int8+search    the same table, and the ops calibrate --search-qtable
#                  keeps in f32 for a cosine of COS (default calibrate's: 0.9999 over --frames), the
#                  search running each candidate over the utterance's
#                  frames with its own state fed back
# Prints one row per model and mode: max abs error of the probability,
# frames whose speech decision (> 0.5) agrees, cycles per frame; and the
# reference's frames nearest 0.5.  WORK (default a temporary folder) keeps
# every file.  Needs Debian's python3 (numpy, onnx), node with
# onnxruntime-node (bench/node_modules, tests/node_modules or $ORT_NODE),
# espeak-ng and sox.
set -u
cd "$(dirname "$0")/.." || exit 2
REPO=$PWD
BIN=$REPO/${B:-build}/bin
PY=/usr/bin/python3
DIR=${SILERO_DIR:-/work/extra}
WORK='' COS='' RATE=16000 BIND=''
while getopts br:d:w:e:h o; do
	case $o in
	b) BIND=1 ;;
	r) RATE=$OPTARG ;;
	d) DIR=$OPTARG ;;
	w) WORK=$OPTARG ;;
	e) COS=$OPTARG ;;
	*) echo "usage: bench/silero-vad.sh [-b] [-r RATE] [-d DIR] [-w WORK] [-e COS] [MODEL.onnx...]" >&2
	   exit 2 ;;
	esac
done
shift $((OPTIND - 1))
MODELS=("$@")
[ ${#MODELS[@]} -gt 0 ] || MODELS=("$DIR"/silero_vad_legacy.onnx "$DIR"/silero_vad_v5.onnx "$DIR"/silero_vad_v6.onnx)
for t in espeak-ng sox node; do
	command -v $t >/dev/null || { echo "silero-vad.sh: $t is not installed" >&2; exit 1; }
done
if [ -z "$WORK" ]; then
	WORK=$(mktemp -d)
	trap 'rm -rf "$WORK"' EXIT
fi
mkdir -p "$WORK"
export PATH=$BIN:$PATH
V="$PY $REPO/bench/vad_frames.py"
set -e
$V utterance "$WORK/test.npy" 1 "Hello there, this is a test of voice activity detection." \
	"The quick brown fox jumps over the lazy dog." "Thank you and good night." 2>/dev/null
$V utterance "$WORK/cal.npy" 7 "Calibration needs other speech, with different words." \
	"Numbers: one two three four five six." 2>/dev/null
$PY -c 'import sys, numpy as np; np.savez(sys.argv[1], sr=np.int64(sys.argv[2]))' "$WORK/sr.npz" "$RATE"
FRAME=$((512 * RATE / 16000))
printf '%-22s %-12s %12s %12s %10s\n' model mode max_abs_err decisions cycles/frame
for model in "${MODELS[@]}"; do
	m=$(basename "$model" .onnx)
	w=$WORK/$m
	mkdir -p "$w"
	$V frames "$model" "$WORK/test.npy" "$w/frames.npz" $FRAME "$RATE" >/dev/null
	$V frames "$model" "$WORK/cal.npy" "$w/calframes.npz" $FRAME "$RATE" >/dev/null
	# the state pairs: each input of rank 3 fed by the output after it of
	# the same shape (h -> hn, c -> cn; state -> stateN)
	read -r n nc state <<<"$($PY - "$model" "$w/frames.npz" "$w/calframes.npz" <<'EOF'
import sys, numpy as np, onnx
g = onnx.load(sys.argv[1]).graph
ins = [i.name for i in g.input if len(i.type.tensor_type.shape.dim) == 3]
outs = [o.name for o in g.output if len(o.type.tensor_type.shape.dim) == 3]
f, c = np.load(sys.argv[2]), np.load(sys.argv[3])
print(f["input"].shape[0], c["input"].shape[0], ",".join("%s=%s" % p for p in zip(outs, ins)))
EOF
)"
	$V ort "$model" "$w/frames.npz" "$n" "$state" "$w/ref.npz"
	shapes=$($PY -c 'import sys, numpy as np
f = np.load(sys.argv[1])
print(" ".join("--shape %s=%s" % (k, ",".join(map(str, f[k].shape[1:] if k == "input" else f[k].shape)))
               for k in f.files if k != "sr"))' "$w/frames.npz")
	bind=
	[ -z "$BIND" ] || bind="--bind $WORK/sr.npz"
	# shellcheck disable=SC2086
	onnx2top "$model" $bind $shapes | top-opt -o "$w/m.top"
	calibrate "$w/m.top" -d "$w/calframes.npz" --frames "$nc" --state "$state" -o "$w/cali.table" \
		--search-qtable "$w/search.qtable" --search-mode int8 ${COS:+--expected-cos "$COS"} \
		--chip tpu-a 2>/dev/null
	for mode in f32 int8 int8+search; do
		case $mode in
		f32) flags="--mode f32" ;;
		int8) flags="--mode int8 --calib $w/cali.table" ;;
		*) flags="--mode int8 --calib $w/cali.table --qtable $w/search.qtable" ;;
		esac
		# shellcheck disable=SC2086
		top2tpu --chip tpu-a $flags "$w/m.top" | weight-reorder | layergroup | addr-assign -q |
			codegen -o "$w/$mode.tmodel"
		cyc=$(tpu-sim "$w/$mode.tmodel" -i "$w/frames.npz" --frames "$n" --state "$state" \
			-o "$w/$mode.npz" 2>&1 | sed -n 's/.* \([0-9]*\) per frame.*/\1/p')
		read -r err agree <<<"$($PY -c 'import sys, numpy as np
a, b = np.load(sys.argv[1])["output"].ravel(), np.load(sys.argv[2])["output"].ravel()
print("%.3g %d/%d" % (np.abs(a - b).max(), ((a > 0.5) == (b > 0.5)).sum(), b.size))' "$w/$mode.npz" "$w/ref.npz")"
		printf '%-22s %-12s %12s %12s %10s\n' "$m" "$mode" "$err" "$agree" "$cyc"
	done
	$PY -c 'import sys, numpy as np
p = np.load(sys.argv[1])["output"].ravel()
o = np.argsort(np.abs(p - 0.5))[:4]
print("%-22s reference: %d of %d frames speech; nearest 0.5: %s; search kept %s" % (sys.argv[2], (p > 0.5).sum(),
      p.size, ", ".join("frame %d %.4f" % (i, p[i]) for i in o), sys.argv[3]))' \
		"$w/ref.npz" "$m" "$(grep -vc '^#' "$w/search.qtable") ops in f32"
done
