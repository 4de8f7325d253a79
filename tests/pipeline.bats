#!/usr/bin/env bats
# pipeline: pipelines/deploy.mk and models.mk take a model through every
# stage and every comparison (the example, then the real models with the
# thresholds of ARCHITECTURE.md); make -j over models; rebuild rules.
load helpers

bats_require_minimum_version 1.5.0

TOOLS="onnx2top top-opt calibrate top2tpu weight-reorder layergroup addr-assign codegen tpu-sim ir-run npz-compare"

setup() {
	T=$BATS_TEST_TMPDIR
	EX=$REPO/examples/tiny_cnn
	# Under `make check` the outer make's jobserver is in the environment.
	unset MAKEFLAGS MFLAGS MAKELEVEL
}

# deploy ARGS...: deploy.mk on the example with the freshly built tools.
deploy() {
	make --no-print-directory -f "$REPO/pipelines/deploy.mk" TPUC_BIN="$TPUC_BUILD/bin" \
		MODEL="$EX/model.onnx" INPUT="$EX/input.npz" CALIB="$EX/calib.npz" \
		REF="$EX/ref.npz" "$@"
}

# Show the comparison tables of $output in the TAP stream.
show() {
	printf '%s\n' "$output" | grep -E '^(==|npz-compare:|[^ ]+ +\[)' | sed 's/^/# /' >&3
}

@test "example, int8: every stage's file; reference, Tpu IR and simulator agree" {
	need_tool $TOOLS
	run deploy MODE=int8 OUT="$T/o" compare
	show
	assert_success
	for f in origin.top canonical.top cali.table lowered.tpu reordered.tpu grouped.tpu \
		addressed.tpu model.tmodel top_out.npz tpu_out.npz sim_out.npz; do
		[ -s "$T/o/$f" ] || fail "no $f"
	done
	assert_line --regexp '^== reference vs Top IR, f32 .*tolerance 0\.99999,0\.99\)$'
	assert_line --regexp '^== Top IR vs Tpu IR, int8 .*tolerance 0\.99,0\.85\)$'
	assert_line --regexp '^== Tpu IR vs tpu-sim, int8 .*tolerance 1\.0,1\.0\)$'
	[ "$(printf '%s\n' "$output" | grep -c '^logits .* PASS$')" -eq 3 ]
}

@test "example, f32: the simulator matches the reference too" {
	need_tool $TOOLS
	run deploy MODE=f32 OUT="$T/o" compare
	show
	assert_success
	[ ! -e "$T/o/cali.table" ]
	assert_line --regexp '^== reference vs tpu-sim, f32 '
	[ "$(printf '%s\n' "$output" | grep -c '^logits .* PASS$')" -eq 4 ]
}

@test "make -j2 runs models side by side, each in its own folder, nothing left over" {
	need_tool $TOOLS
	run make --no-print-directory -j2 -f "$REPO/pipelines/models.mk" TPUC_BIN="$TPUC_BUILD/bin" \
		MODELS="$REPO/examples" NAMES=tiny_cnn MODES="int8 f32" OUTROOT="$T"
	assert_success
	assert_line '== tiny_cnn int8'
	assert_line '== tiny_cnn f32'
	[ -s "$T/tiny_cnn-int8/sim_out.npz" ] && [ -s "$T/tiny_cnn-f32/sim_out.npz" ]
	[ -z "$(find "$T" -name '*.tmp*')" ]
}

@test "a second run does nothing; another MODE in the same folder redoes the mode's stages, not the import" {
	need_tool $TOOLS
	deploy MODE=int8 OUT="$T/o" all >/dev/null
	before=$(stat -c '%n %y' "$T"/o/*)
	run deploy MODE=int8 OUT="$T/o" all
	assert_success
	refute_output --partial onnx2top
	[ "$(stat -c '%n %y' "$T"/o/*)" = "$before" ]
	run deploy MODE=f32 OUT="$T/o" all
	assert_success
	refute_output --partial "onnx2top"
	[[ $output == *"top2tpu "*"--mode f32"* ]]
	# another model in the same folder redoes the import
	cp "$EX/model.onnx" "$T/copy.onnx"
	run deploy MODE=f32 MODEL="$T/copy.onnx" OUT="$T/o" all
	assert_success
	assert_line --partial "onnx2top"
}

@test "FRONT: modes of one model share its import, calibration and Top IR run" {
	need_tool $TOOLS
	deploy MODE=int8 OUT="$T/i8" FRONT="$T/front" compare >/dev/null
	ls "$T/front" >"$T/front.ls"
	run cat "$T/front.ls"
	assert_output "$(printf '%s\n' cali.table calib.cfg canonical.top front.cfg origin.top top_out.npz)"
	[ ! -e "$T/i8/origin.top" ] && [ -s "$T/i8/sim_out.npz" ]
	before=$(stat -c '%n %y' "$T"/front/*.top "$T"/front/cali.table "$T"/front/top_out.npz)
	run deploy MODE=f16 OUT="$T/f16" FRONT="$T/front" compare
	assert_success
	refute_output --partial onnx2top
	refute_output --partial calibrate
	[[ $output == *"top2tpu "*"--mode f16 --calib $T/front/cali.table"* ]]
	[ "$(stat -c '%n %y' "$T"/front/*.top "$T"/front/cali.table "$T"/front/top_out.npz)" = "$before" ]
}

@test "a failing stage stops the pipeline and leaves no file" {
	need_tool onnx2top
	head -c 500 "$EX/model.onnx" >"$T/cut.onnx"
	run make --no-print-directory -f "$REPO/pipelines/deploy.mk" TPUC_BIN="$TPUC_BUILD/bin" \
		MODEL="$T/cut.onnx" OUT="$T/o" all
	assert_failure
	assert_line --partial "onnx2top: '$T/cut.onnx':"
	[ "$(ls "$T/o")" = front.cfg ]
}

@test "missing settings are named" {
	run make --no-print-directory -f "$REPO/pipelines/deploy.mk" MODEL=m.onnx
	assert_failure
	assert_output --partial 'deploy.mk: set OUT=folder'
	run make --no-print-directory -f "$REPO/pipelines/deploy.mk" OUT="$T/o"
	assert_failure
	assert_output --partial 'deploy.mk: set MODEL=file.onnx'
	run make --no-print-directory -f "$REPO/pipelines/deploy.mk" MODEL=m.onnx OUT="$T/o" MODE=bf4
	assert_failure
	assert_output --partial "deploy.mk: MODE must be f32, bf16, f16 or int8, not 'bf4'"
	run make --no-print-directory -f "$REPO/pipelines/deploy.mk" MODEL=m.onnx OUT="$T/o" \
		MODE=f32 QTABLE=auto
	assert_failure
	assert_output --partial "deploy.mk: QTABLE=auto searches which ops to keep in f32: MODE must be int8, bf16 or f16"
}

@test "SHAPE fixes a dynamic batch for onnx2top, INPUT's shape by default; without either the fix is named" {
	need_tool $TOOLS
	$PY - "$T" <<'PYEOF'
import sys, numpy as np, onnx
from onnx import TensorProto, helper, numpy_helper
d = sys.argv[1]
r = np.random.RandomState(0)
w = numpy_helper.from_array(r.standard_normal((4, 3, 3, 3)).astype(np.float32), "w")
g = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
                       helper.make_node("Relu", ["c"], ["y"], name="relu")], "dyn",
                      [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 8, 8])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4, 8, 8])], [w])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), d + "/dyn.onnx")
np.savez(d + "/in.npz", x=r.standard_normal((1, 3, 8, 8)).astype(np.float32))
np.savez(d + "/cal.npz", x=r.standard_normal((4, 1, 3, 8, 8)).astype(np.float32))
PYEOF
	local args=(--no-print-directory -f "$REPO/pipelines/deploy.mk" TPUC_BIN="$TPUC_BUILD/bin"
		MODEL="$T/dyn.onnx" INPUT="$T/in.npz" CALIB="$T/cal.npz" MODE=int8)
	run make "${args[@]}" OUT="$T/a" INPUT= all
	assert_failure
	assert_output --partial "give the input's shape with --shape x=1,3,8,8"
	[ ! -e "$T/a/origin.top" ]
	run make "${args[@]}" OUT="$T/b" SHAPE="x=1,3,8,8" compare
	assert_success
	assert_output --partial "onnx2top $T/dyn.onnx --shape x=1,3,8,8 --shapes-from $T/in.npz -o"
	cmp "$T/b/tpu_out.npz" "$T/b/sim_out.npz"
	# without SHAPE, the batch of INPUT
	run make "${args[@]}" OUT="$T/c" compare
	assert_success
	assert_output --partial "onnx2top $T/dyn.onnx --shapes-from $T/in.npz -o"
	cmp "$T/b/model.tmodel" "$T/c/model.tmodel"
}

@test "example in bf16 and f16: each stage within its mode's tolerance" {
	need_tool $TOOLS
	for m in bf16 f16; do
		run deploy MODE=$m OUT="$T/$m" compare
		show
		assert_success
		# with samples, f16 calibrates to keep ops in its range; bf16 has f32's range
		if [ $m = f16 ]; then [ -s "$T/$m/cali.table" ]; else [ ! -e "$T/$m/cali.table" ]; fi
		assert_line --regexp "^== Top IR vs Tpu IR, $m .*tolerance $([ $m = bf16 ] && echo 0\\.999,0\\.95 || echo 0\\.9999,0\\.99)\\)\$"
	done
}

@test "example, int8 with ASYM=1: zero points in the Tpu IR, simulator bit-identical" {
	need_tool $TOOLS ir-print
	run deploy MODE=int8 ASYM=1 OUT="$T/o" compare
	show
	assert_success
	assert_line --regexp '^== Tpu IR vs tpu-sim, int8 .*tolerance 1\.0,1\.0\)$'
	[[ $output == *"top2tpu "*"--asymmetric"* ]]
	"$TPUC_BUILD/bin/ir-print" "$T/o/lowered.tpu" | grep -q 'zp=' || fail "no zero point in lowered.tpu"
	cmp "$T/o/tpu_out.npz" "$T/o/sim_out.npz"
}

@test "example, int8 with QTABLE: a given qtable, and QTABLE=auto searches one" {
	need_tool $TOOLS
	run deploy MODE=int8 QTABLE=auto OUT="$T/a" all
	assert_success
	assert_line --partial "--search-qtable $T/a/auto.qtable"
	[ -s "$T/a/auto.qtable" ] && [ -s "$T/a/cali.table" ]
	# the goal is calibrate's, by the outputs' answers (a classifier's
	# 0.99), and compare holds Top vs Tpu to it, with the euclidean
	# similarity it allows at equal norms; EXPECTED_COS sets both
	refute_line --partial "--expected-cos"
	sed -n 2p "$T/a/auto.qtable" | grep -Eq ', goal 0\.99(;|$)'
	run deploy MODE=int8 QTABLE=auto OUT="$T/a" compare
	assert_success
	assert_line --regexp '^== Top IR vs Tpu IR, int8 .*tolerance 0\.99,0\.858579\)$'
	run deploy MODE=int8 QTABLE=auto EXPECTED_COS=0.95 OUT="$T/a" compare
	assert_success
	assert_line --partial "--search-qtable $T/a/auto.qtable --search-mode int8 --expected-cos 0.95 "
	assert_line --regexp '^== Top IR vs Tpu IR, int8 .*tolerance 0\.95,0\.683772\)$'
	# in int8 the search's table is tuned by default (calibrate --tune);
	# TUNE=0 leaves it untuned
	[[ $output == *"--search-qtable $T/a/auto.qtable"*" --tune"*"top2tpu "* ]]
	refute_line --partial "--equalise"
	# EQUALISE=1: its Convs balanced on the samples first (top-opt
	# --equalise); the search and the lowering read equalised.top
	run deploy MODE=int8 QTABLE=auto EQUALISE=1 OUT="$T/ae" all
	assert_success
	[[ $output == *"top-opt $T/ae/canonical.top --passes=dce --equalise "* ]]
	[[ $output == *"calibrate $T/ae/equalised.top "*"top2tpu $T/ae/equalised.top "* ]]
	run deploy MODE=int8 QTABLE=auto TUNE=0 OUT="$T/a0" -n all
	assert_success
	assert_line --partial "--search-qtable $T/a0/auto.qtable"
	refute_line --partial "--tune"
	run deploy MODE=int8 QTABLE=auto TUNE=2 OUT="$T/a2" -n all
	assert_failure
	assert_output --partial "deploy.mk: TUNE must be 1 or 0, not '2'"
	run deploy MODE=int8 QTABLE=auto EQUALISE=2 OUT="$T/a2" -n all
	assert_failure
	assert_output --partial "deploy.mk: EQUALISE must be 1 or 0, not '2'"
	run deploy MODE=int8 EQUALISE=1 OUT="$T/p" -n all
	refute_line --partial "--tune"
	refute_line --partial "--equalise"
	printf 'stem/Conv f32\nhead/Gemm bf16\n' >"$T/mixed.qtable"
	run deploy MODE=int8 QTABLE="$T/mixed.qtable" OUT="$T/g" compare
	show
	assert_success
	[[ $output == *"top2tpu "*"--qtable $T/mixed.qtable"* ]]
	# a float op on the simulator is compared within rounding, not bit for bit
	assert_line --regexp '^== Tpu IR vs tpu-sim, int8 .*tolerance 0\.99999,0\.99\)$'
	# a qtable of float modes only needs no table
	printf 'stem/Conv f16\n' >"$T/f.qtable"
	run deploy MODE=bf16 QTABLE="$T/f.qtable" OUT="$T/f" compare
	assert_success
	[ ! -e "$T/f/cali.table" ]
	# QTABLE=auto in bf16: the search lowers in bf16 with bf16's goal
	run deploy MODE=bf16 QTABLE=auto OUT="$T/b" all
	assert_success
	assert_line --partial "--search-qtable $T/b/auto.qtable --search-mode bf16 "
	refute_line --partial "--expected-cos"
	[ -s "$T/b/auto.qtable" ]
	sed -n 2p "$T/b/auto.qtable" | grep -Eq ', goal 0\.999(;|$)'
}

# The real models: reference vs Top F32 >= 0.99999, Top F32 vs Tpu INT8
# >= 0.99, INT8 simulator bit-identical to ir-run, F32 simulator vs
# reference >= 0.99999; the INT8 pipeline from scratch in under a minute
# of CPU (user + system of the tools: wall time swings with the load of a
# shared machine).
# real_model NAME [VAR=VALUE...]: the settings go to deploy.mk (a lower
# INT8 tolerance where a model is known not to reach 0.99).
# CPU milliseconds (user + system) of this shell's finished children,
# from the builtin times run in this shell (not in a subshell, whose
# children's times start at 0): its second line, e.g. "0m1.250s 0m0.310s".
children_cpu_ms() {
	times >"$T/times"
	awk 'function ms(x,  m) { m = x; sub(/m.*/, "", m); sub(/^[0-9]+m/, "", x); sub(/s$/, "", x)
			return (m * 60 + x) * 1000 }
		NR == 2 { printf "%d\n", ms($1) + ms($2) }' "$T/times"
}

real_model() {
	local n=$1
	shift
	need_models "$n"
	need_tool $TOOLS
	local c0 ms
	children_cpu_ms >"$T/c0"
	c0=$(cat "$T/c0")
	run make --no-print-directory -j2 -f "$REPO/pipelines/models.mk" TPUC_BIN="$TPUC_BUILD/bin" \
		MODELS="$MODELS" NAMES="$n" MODES=int8 OUTROOT="$T" "$@"
	children_cpu_ms >"$T/c1"
	ms=$(($(cat "$T/c1") - c0))
	show
	echo "# $n int8 pipeline, KLD calibration included: $((ms / 1000)).$((ms % 1000 / 100)) s of CPU" >&3
	assert_success
	run make --no-print-directory -j2 -f "$REPO/pipelines/models.mk" TPUC_BIN="$TPUC_BUILD/bin" \
		MODELS="$MODELS" NAMES="$n" MODES=f32 OUTROOT="$T"
	show
	assert_success
	[ "$ms" -lt 60000 ] || fail "$n int8 pipeline took $ms ms of CPU (limit 60 s)"
}

@test "resnet18 through every stage in int8 and f32 (real model)" {
	real_model resnet18
}

# mobilenet_v2 (random weights that amplify input noise: quantising only
# its input to int8 already costs 1.5% of cosine) does not reach 0.99 in
# pure INT8 (0.972 measured): hold it to what pure INT8 gives, 0.96, and
# check that the qtable `calibrate --search-qtable --expected-cos 0.99`
# finds with its defaults (ranked on 4 calibration samples, chosen so that
# the 16 after them reach the goal too) brings the test input to >= 0.99.
@test "mobilenet_v2 through every stage in int8 and f32 (real model); searched qtable >= 0.99" {
	real_model mobilenet_v2 TOL_TPU=0.96,0.7
	run make --no-print-directory -f "$REPO/pipelines/deploy.mk" TPUC_BIN="$TPUC_BUILD/bin" \
		MODEL="$MODELS/mobilenet_v2/model.onnx" INPUT="$MODELS/mobilenet_v2/input.npz" \
		CALIB="$MODELS/mobilenet_v2/calib.npz" MODE=int8 QTABLE=auto \
		EXPECTED_COS=0.99 OUT="$T/mq" compare
	show
	assert_success
	assert_line --regexp '^== Top IR vs Tpu IR, int8 .*tolerance 0\.99,0\.858579\)$'
	echo "# mobilenet_v2: $(grep -vc '^#' "$T/mq/auto.qtable") ops kept in f32 by the searched qtable" >&3
}

@test "-o on a device writes in place, never replacing it; a full device or a directory fails in one line" {
	need_tool $TOOLS
	# device nodes of our own (a null and a full device), so a failure
	# cannot replace the system's
	mknod "$T/null" c 1 3 2>/dev/null && mknod "$T/full" c 1 7 2>/dev/null ||
		skip "cannot make device nodes (not root)"
	deploy MODE=int8 OUT="$T/o" all >/dev/null
	local cmds=(
		"top-opt $T/o/origin.top"
		"top2tpu $T/o/canonical.top --chip tpu-a --mode f32"
		"weight-reorder $T/o/lowered.tpu"
		"codegen $T/o/addressed.tpu"
		"ir-run $T/o/canonical.top -i $EX/input.npz"
		"tpu-sim $T/o/model.tmodel -i $EX/input.npz"
		"calibrate $T/o/canonical.top -d $EX/calib.npz"
	) c
	for c in "${cmds[@]}"; do
		run $c -o "$T/null"
		assert_success
		[ -c "$T/null" ] || fail "$c replaced the device"
		run --separate-stderr $c -o "$T/full"
		assert_failure
		[ -c "$T/full" ] || fail "$c replaced the device"
		[ "${#stderr_lines[@]}" -eq 1 ] && [[ ${stderr_lines[0]} == *"cannot write '$T/full': No space left on device" ]] ||
			fail "$c: $stderr"
		run $c -o "$T"
		assert_failure
		assert_output --partial "cannot write '$T': it is a directory"
	done
	ls "$T" | grep -q '\.tmp\.' && fail "temporary files left: $(ls "$T")"
	true
}
