#!/usr/bin/env bats
# zoo: architectures and exporter patterns the real models do not cover,
# built with seeded random weights by fixtures/make_zoo.py: its cnn family
# (ShuffleNet, EfficientNet, DenseNet, ViT, U-Net, a 1-D audio net, odd
# ops), its micro family (a GPT block, a YOLOv8 head, ResNeXt, tf2onnx and
# multi-input exports, Resize modes, one pattern per micro model) and some
# of its real family (look-alikes of real exports: YOLOv5s, BERT-base,
# DistilBERT, a LLaMA block, a PaddleOCR detector, an OCR recogniser, the
# openWakeWord embedding model), the last two with numpy reference
# outputs, through the whole deploy pipeline: the reference vs Top, Top
# vs Tpu within the mode's tolerance, and tpu-sim bit-identical to ir-run
# in int8 (within rounding otherwise).
load helpers

TOOLS="onnx2top top-opt calibrate top2tpu weight-reorder layergroup addr-assign codegen tpu-sim ir-run npz-compare"

setup_file() {
	export ZOO="$BATS_FILE_TMPDIR/zoo"
	/usr/bin/python3 "$BATS_TEST_DIRNAME/fixtures/make_zoo.py" "$ZOO" cnn micro yolov5s bert_base \
		llama ocr_rec ppocr_det oww_embed distilbert >/dev/null
}

setup() {
	T=$BATS_TEST_TMPDIR
	unset MAKEFLAGS MFLAGS MAKELEVEL
	need_tool $TOOLS
}

# Models whose output is a step function of its input (ArgMin, a Cast to
# integers, Mod, Sign, a Gather by ArgMax): a rounded input moves them by
# whole steps, so outside f32 they are held to running and to the
# simulator only.
STEP="op_argmin op_cast op_mod op_sign op_gather_dyn"
# A random-weight detector amplifies int8 noise through its depth, and a
# classifier's two logits make a fragile cosine: held to 0.975 and a
# euclid of 0.78 in int8.  KLD from the samples' own thresholds (the upper
# quartile; formats/tpuc-calib.5) raised unseen CNNs' pure INT8 cosine
# (EfficientNet-B0 -0.12 -> 0.96, MobileNet-V3-Large 0.55 -> 0.91) and
# moved these two down (yolov5s 0.9814 -> 0.9782, bert_base's
# asymmetric logits' euclid 0.802 -> 0.797).
LOOSE="yolov5s bert_base"

# deploy1 DIR ARGS...: deploy.mk compare on the zoo model in DIR with ARGS
# (and its ref.npz where it has one); a failure leaves DIR's name in
# $T/NAME.failed.  The import, calibration and Top IR run are made once per
# model and shared by every mode (deploy.mk FRONT).
deploy1() {
	local d=$1 m tol shape
	shift
	m=$(basename "$d")
	tol=
	case " $STEP " in *" $m "*) tol="TOL_TPU=-1,-1e30" ;; esac
	case " $LOOSE " in *" $m "*) [[ " $* " == *" MODE=int8 "* ]] && tol="TOL_TPU=0.975,0.78" ;; esac
	# a dynamic batch: the shape onnx2top's refusal asks for
	shape=$(onnx2top "$d/model.onnx" -o "$T/$m.probe.top" 2>&1 |
		sed -n "s/.*give the input's shape with --shape \([^ ]*\)\$/\1/p")
	make --no-print-directory -f "$REPO/pipelines/deploy.mk" TPUC_BIN="$TPUC_BUILD/bin" \
		MODEL="$d/model.onnx" INPUT="$d/input.npz" CALIB="$d/calib.npz" \
		$([ -f "$d/ref.npz" ] && echo "REF=$d/ref.npz") OUT="$T/$m" $tol \
		FRONT="$BATS_FILE_TMPDIR/front/$m" \
		${shape:+SHAPE=$shape} "$@" compare >"$T/$m.log" 2>&1 || echo "$m" >"$T/$m.failed"
}

# deploy_all ARGS...: deploy1 on every zoo model, as many at once as there
# are processors; the names of the models that failed go to $failed, their
# comparisons to the TAP stream.
deploy_all() {
	local d m jobs=$(nproc)
	rm -f "$T"/*.failed
	for d in "$ZOO"/*/; do
		while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do
			wait -n
		done
		deploy1 "$d" "$@" &
	done
	wait
	failed=
	for d in "$ZOO"/*/; do
		m=$(basename "$d")
		[ -e "$T/$m.failed" ] || continue
		failed="$failed $m"
		grep -E '^(==|npz-compare:|[^ ]+ +\[|[a-z2-]+: )' "$T/$m.log" | sed "s/^/# $m: /" >&3
	done
}

@test "zoo, int8: every model within 0.99 of float, tpu-sim bit-identical" {
	deploy_all MODE=int8
	[ -z "$failed" ] || fail "failed:$failed"
	cmp "$T/unet/tpu_out.npz" "$T/unet/sim_out.npz"
	cmp "$T/gpt/tpu_out.npz" "$T/gpt/sim_out.npz"
}

@test "zoo, int8 asymmetric on tpu-b" {
	[ "${TPUC_QUICK:-0}" != 1 ] || skip "full suite only (TPUC_QUICK=1)"
	deploy_all MODE=int8 ASYM=1 CHIP=tpu-b
	[ -z "$failed" ] || fail "failed:$failed"
}

@test "zoo, f32 on tpu-b matches the reference; bf16 and f16 on tpu-a" {
	[ "${TPUC_QUICK:-0}" != 1 ] || skip "full suite only (TPUC_QUICK=1)"
	local m
	for m in "MODE=f32 CHIP=tpu-b" "MODE=bf16" "MODE=f16"; do
		deploy_all $m
		[ -z "$failed" ] || fail "$m failed:$failed"
	done
}
