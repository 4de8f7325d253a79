#!/usr/bin/env bats
# models-sim: every real model through the whole pipe onto tpu-sim, whose
# outputs must equal ir-run's on the Tpu IR bit for bit: INT8 on tpu-a for
# each model; float modes and tpu-b where the back end slices along other
# axes (rank-5 tensors, Transpose, copies by the DMA engine alone).
# Calibration is min/max on two samples: these tests compare the chip with
# the interpreter, not the model with its reference.
load helpers

bats_require_minimum_version 1.5.0

setup() {
	need_tool onnx2top top-opt calibrate top2tpu weight-reorder layergroup addr-assign codegen tpu-sim ir-run
	T=$BATS_TEST_TMPDIR
}

# sim_vs_irrun MODEL MODE CHIP [tpu-sim options]: compile MODEL for CHIP in
# MODE (top2tpu options from $LOWER_OPTS) into $T/MODEL.MODE.CHIP.{tpu,tmodel}
# and run both on its input; the two output files must be byte for byte the
# same.
sim_vs_irrun() {
	local m=$1 mode=$2 chip=$3 d=$MODELS/$1 p=$T/$1.$2.$3 cal=()
	shift 3
	onnx2top "$d/model.onnx" | top-opt -o "$T/$m.top"
	if [ "$mode" = int8 ]; then
		calibrate "$T/$m.top" -d "$d/calib.npz" -n 2 --method minmax -o "$T/$m.cali" 2>/dev/null
		cal=(--calib "$T/$m.cali")
	fi
	top2tpu "$T/$m.top" --chip "$chip" --mode "$mode" "${cal[@]}" ${LOWER_OPTS:-} -o "$p.tpu"
	weight-reorder "$p.tpu" | layergroup | addr-assign -q | codegen -o "$p.tmodel"
	tpu-sim -q "$p.tmodel" -i "$d/input.npz" -o "$p.sim.npz" "$@"
	ir-run "$p.tpu" -i "$d/input.npz" -o "$p.ref.npz" "$@"
	cmp "$p.sim.npz" "$p.ref.npz"
}

@test "resnet18 int8: tpu-sim equals ir-run" {
	need_models resnet18
	sim_vs_irrun resnet18 int8 tpu-a
}

@test "mobilenet_v2 int8: tpu-sim equals ir-run" {
	need_models mobilenet_v2
	sim_vs_irrun mobilenet_v2 int8 tpu-a
}

@test "mobilenet_v3_small int8: tpu-sim equals ir-run" {
	need_models mobilenet_v3_small
	sim_vs_irrun mobilenet_v3_small int8 tpu-a
}

@test "squeezenet1_1 int8: tpu-sim equals ir-run" {
	need_models squeezenet1_1
	sim_vs_irrun squeezenet1_1 int8 tpu-a
}

@test "ppocr_mobile_v2_cls int8: tpu-sim equals ir-run" {
	need_models ppocr_mobile_v2_cls
	sim_vs_irrun ppocr_mobile_v2_cls int8 tpu-a
}

@test "bert_tiny int8: tpu-sim equals ir-run" {
	need_models bert_tiny
	sim_vs_irrun bert_tiny int8 tpu-a
}

@test "yolo_tiny int8: tpu-sim equals ir-run" {
	need_models yolo_tiny
	sim_vs_irrun yolo_tiny int8 tpu-a
}

@test "oww_melspectrogram int8: tpu-sim equals ir-run" {
	need_models oww_melspectrogram
	sim_vs_irrun oww_melspectrogram int8 tpu-a
}

@test "oww_hey_mycroft int8: tpu-sim equals ir-run" {
	need_models oww_hey_mycroft
	sim_vs_irrun oww_hey_mycroft int8 tpu-a
}

@test "yolo_tiny f32: every layer equals ir-run, Reshape as a DMA copy included" {
	need_models yolo_tiny
	sim_vs_irrun yolo_tiny f32 tpu-a --dump-all
	# The head's 5-D Reshape does not fit local memory: DMA commands alone.
	run tmodel_locs "$T/yolo_tiny.f32.tpu-a.tmodel"
	refute_line /Reshape
	assert_line /Transpose
}

@test "yolo_tiny bf16 and f32 on tpu-b: tpu-sim equals ir-run" {
	need_models yolo_tiny
	sim_vs_irrun yolo_tiny bf16 tpu-b
	sim_vs_irrun yolo_tiny f32 tpu-b
}

@test "yolo_tiny int8 --asymmetric (u8, zero points) on tpu-b: tpu-sim equals ir-run" {
	need_models yolo_tiny
	LOWER_OPTS=--asymmetric sim_vs_irrun yolo_tiny int8 tpu-b
}

@test "bert_tiny f32 on tpu-b: rank-3 ops in chunks of channels equal ir-run" {
	need_models bert_tiny
	sim_vs_irrun bert_tiny f32 tpu-b
}

# tmodel_locs FILE: the distinct debug locations of the compute commands.
tmodel_locs() {
	$PY -c 'import struct, sys, msgpack
b = open(sys.argv[1], "rb").read()
mo, ml = struct.unpack_from("<QQ", b, 16)
print("\n".join(sorted(set(msgpack.unpackb(b[mo:mo + ml], strict_map_key=False)["locs"]))))' "$1"
}
