#!/usr/bin/env bats
# op-rows: the elementwise rows with a numpy reference of the op table
# (tests/fixtures/op_sweep.py ELEMENTWISE, written out by
# tests/fixtures/ops_fixtures.py and listed in its OUTDIR/elementwise)
# through the back end, f32 and int8 on tpu-a: top2tpu, weight-reorder,
# layergroup, addr-assign, codegen, tpu-sim, with pipelines/deploy.mk.
# tpu-sim bit for bit as ir-run runs the Tpu IR, both close to numpy.
# (onnx2top.bats runs every row through ir-run against numpy, op-sweep.bats
# through the back end at several shapes.)  A new elementwise operator's
# one row in that table is its test on all three.
load helpers

bats_require_minimum_version 1.5.0

setup_file() {
	export OPS="$BATS_FILE_TMPDIR/ops"
	/usr/bin/python3 "$BATS_TEST_DIRNAME/fixtures/ops_fixtures.py" "$OPS"
}

setup() {
	need_tool onnx2top top-opt calibrate top2tpu weight-reorder layergroup addr-assign codegen \
		tpu-sim ir-run npz-compare
}

@test "elementwise operator rows through the back end, f32 and int8: tpu-sim as ir-run, close to numpy" {
	local T=$BATS_TEST_TMPDIR bad= n=0 c m
	for c in $(cat "$OPS/elementwise"); do
		for m in f32 int8; do
			n=$((n + 1))
			if ! make --no-print-directory -f "$REPO/pipelines/deploy.mk" \
				TPUC_BIN="$TPUC_BUILD/bin" MODEL="$OPS/$c.onnx" INPUT="$OPS/$c.in.npz" \
				CALIB="$OPS/$c.cal.npz" REF="$OPS/$c.ref.npz" MODE=$m OUT="$T/$c.$m" \
				compare >"$T/log" 2>&1 ||
			   ! cmp -s "$T/$c.$m/tpu_out.npz" "$T/$c.$m/sim_out.npz"; then
				bad="$bad $c:$m"
				tail -n 5 "$T/log" >&3
			fi
		done
	done
	# the table, not a fixed list: Mish and every unary row are in it
	grep -qx unary_mish "$OPS/elementwise"
	[ "$n" -ge 36 ]
	[ -z "$bad" ] || fail "failed:$bad"
}
