#!/usr/bin/env bats
# ir-cut: cutting Top and Tpu IR at named tensors; every layer of a model
# cut, rebuilt and run on tpu-sim gives ir-run's dump of that layer bit for
# bit; errors.
load helpers

bats_require_minimum_version 1.5.0

EX=$REPO/examples/tiny_cnn

setup_file() {
	need_tool onnx2top top-opt calibrate top2tpu weight-reorder layergroup addr-assign codegen tpu-sim ir-run ir-cut
	export W="$BATS_FILE_TMPDIR/w"
	for m in int8 f32; do
		make --no-print-directory -f "$REPO/pipelines/deploy.mk" TPUC_BIN="$TPUC_BUILD/bin" \
			MODEL="$EX/model.onnx" INPUT="$EX/input.npz" CALIB="$EX/calib.npz" \
			MODE=$m OUT="$W/$m" all >/dev/null
	done
}

setup() {
	need_tool ir-cut
	T=$BATS_TEST_TMPDIR
}

# npz_names FILE: the arrays' names, one a line, in the file's order.
npz_names() {
	$PY -c 'import sys, numpy as np; print("\n".join(np.load(sys.argv[1]).files))' "$1"
}

# same_array A B NAME: array NAME bit-identical (dtype, shape, bytes) in A and B.
same_array() {
	$PY -c 'import sys, numpy as np
a, b = np.load(sys.argv[1])[sys.argv[3]], np.load(sys.argv[2])[sys.argv[3]]
sys.exit(0 if a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes() else
         "%s differs: max |a-b| %g" % (sys.argv[3], abs(a.astype(float) - b).max()))' "$@"
}

# cut_each MODE STAGE: cut the MODE model's STAGE IR at every layer, rebuild
# and compare tpu-sim with ir-run --dump-all of the whole graph.
cut_each() {
	local ir="$W/$1/$2.tpu" n=0 name
	ir-run "$ir" -i "$EX/input.npz" --dump-all -o "$T/dump.npz"
	while read -r name; do
		[ "$name" != input ] || continue
		local after=(weight-reorder)
		[ "$2" = reordered ] && after=(cat)
		ir-cut "$ir" --at "$name" | "${after[@]}" | layergroup | addr-assign -q |
			codegen -o "$T/cut.tmodel"
		tpu-sim -q "$T/cut.tmodel" -i "$EX/input.npz" -o "$T/sim.npz"
		[ "$(npz_names "$T/sim.npz")" = "$name" ] || fail "outputs of the cut at $name: $(npz_names "$T/sim.npz")"
		same_array "$T/sim.npz" "$T/dump.npz" "$name"
		n=$((n + 1))
	done < <(npz_names "$T/dump.npz")
	[ "$n" -ge 9 ] || fail "only $n layers"
}

@test "int8: every layer cut from the lowered IR, rebuilt, runs on tpu-sim bit-identical to ir-run" {
	cut_each int8 lowered
}

@test "int8 reordered and f32 lowered: the same" {
	cut_each int8 reordered
	cut_each f32 lowered
}

@test "Top IR: the cut graph runs to the same values as the whole one's dump" {
	ir-run "$W/int8/canonical.top" -i "$EX/input.npz" --dump-all -o "$T/dump.npz"
	for name in stem/Relu_output_0 block/Relu_output_0 head/Flatten_output_0; do
		ir-cut "$W/int8/canonical.top" --at "$name" -o "$T/cut.top"
		ir-run "$T/cut.top" -i "$EX/input.npz" -o "$T/out.npz"
		same_array "$T/out.npz" "$T/dump.npz" "$name"
	done
	ir-cut "$W/int8/origin.top" --at stem/Relu_output_0 -o "$T/o.top"
}

@test "several names, in order, as ir-print shows them or by op name; what is not needed is dropped" {
	ir-cut "$W/int8/lowered.tpu" --at '%"block/Relu_output_0"' --at 'stem/Relu_output_0,"pool/MaxPool_output_0"' -o "$T/c.tpu"
	run ir-print "$T/c.tpu"
	assert_line --index 1 --partial '-> (%"block/Relu_output_0": u8[1,16,16,16]<scale='
	assert_line --index 1 --partial '%"stem/Relu_output_0": u8[1,16,32,32]'
	assert_output --regexp 'stage lowered, chip tpu-a, mode int8, 6 ops,'
	refute_output --partial 'Gemm'
	refute_output --partial 'head.fc.weight'
	refute_output --partial 'down.conv.weight'
	# an op's name stands for its output
	ir-cut "$W/int8/lowered.tpu" --at head/Gemm -o "$T/g.tpu"
	run ir-print "$T/g.tpu"
	assert_line --index 1 --partial '-> (%logits_i8: i8[1,10]'
	# from stdin to stdout
	ir-cut --at head/Gemm <"$W/int8/lowered.tpu" >"$T/g2.tpu"
	cmp "$T/g.tpu" "$T/g2.tpu"
}

@test "errors: unknown name, weight, graph input, late stage, no --at; nothing written" {
	run -1 ir-cut "$W/int8/lowered.tpu" --at nope -o "$T/o.tpu"
	assert_output "ir-cut: '$W/int8/lowered.tpu': no tensor or op 'nope' in the graph (ir-print lists them)"
	run -1 ir-cut "$W/int8/lowered.tpu" --at head.fc.weight -o "$T/o.tpu"
	assert_output "ir-cut: '$W/int8/lowered.tpu': 'head.fc.weight' is a weight, not an activation"
	run -1 ir-cut "$W/int8/lowered.tpu" --at input -o "$T/o.tpu"
	assert_output "ir-cut: '$W/int8/lowered.tpu': 'input' is a graph input: nothing before it to keep"
	run -1 ir-cut "$W/int8/grouped.tpu" --at logits -o "$T/o.tpu"
	assert_output --partial "wrong stage: got tpu IR at stage 'grouped', expected tpu IR at stage lowered or reordered"
	run -1 ir-cut "$EX/model.onnx" --at logits -o "$T/o.tpu"
	assert_output --partial "(an ONNX model: import it with onnx2top first)"
	[ ! -e "$T/o.tpu" ]
	run -2 ir-cut "$W/int8/lowered.tpu" -o "$T/o.tpu"
	assert_line --index 0 "ir-cut: no tensor to cut at given (--at NAME)"
	run -2 ir-cut "$W/int8/lowered.tpu" --at
	assert_line --index 0 "ir-cut: option '--at' needs a value"
	[ ! -e "$T/o.tpu" ]
}
