#!/usr/bin/env bats
# valgrind.bats - every tool, run on the bundled example through the whole
# INT8 pipeline and on a bad input, leaks nothing and makes no memory error
# under valgrind (definite and indirect leaks count; oneDNN's and OpenMP's
# process-lifetime caches are "still reachable" and do not).

load helpers

setup_file() {
	[ "${TPUC_QUICK:-0}" = 1 ] && return 0
	command -v valgrind >/dev/null || return 0
	export VG_DIR=$BATS_FILE_TMPDIR
}

vg() {
	valgrind -q --leak-check=full --errors-for-leak-kinds=definite,indirect \
		--error-exitcode=99 "$@"
}

need_valgrind() {
	[ "${TPUC_QUICK:-0}" != 1 ] || skip "valgrind is slow (TPUC_QUICK=1)"
	command -v valgrind >/dev/null || skip "valgrind not installed"
}

@test "the INT8 pipeline on the example is clean under valgrind" {
	need_valgrind
	E=$REPO/examples/tiny_cnn
	cd "$VG_DIR"
	run vg onnx2top "$E/model.onnx" -o o.top; assert_success
	run vg top-opt o.top -o c.top; assert_success
	run vg calibrate c.top -d "$E/calib.npz" -o t.table; assert_success
	run vg top2tpu c.top --chip tpu-a --mode int8 --calib t.table -o l.tpu; assert_success
	run vg weight-reorder l.tpu -o r.tpu; assert_success
	run vg layergroup r.tpu -o g.tpu; assert_success
	run vg addr-assign g.tpu -o a.tpu; assert_success
	run vg codegen a.tpu -o m.tmodel; assert_success
	run vg tpu-sim m.tmodel -i "$E/input.npz" -o s.npz; assert_success
	run vg ir-run a.tpu -i "$E/input.npz" -o q.npz; assert_success
	run vg ir-run c.top -i "$E/input.npz" -o f.npz; assert_success
	run vg npz-compare q.npz s.npz --tolerance 1,1; assert_success
	run vg ir-print a.tpu; assert_success
}

@test "error paths are clean under valgrind" {
	need_valgrind
	cd "$BATS_TEST_TMPDIR"
	head -c 300 "$REPO/examples/tiny_cnn/model.onnx" > cut.onnx
	run vg onnx2top cut.onnx -o x.top; assert_failure 1
	run vg top-opt /nonexistent.top -o x.top; assert_failure 1
	printf 'TPUC-IR\0garbage' > bad.top
	run vg top2tpu bad.top --chip tpu-a --mode f32 -o x.tpu; assert_failure 1
	run vg tpu-sim bad.top -i "$REPO/examples/tiny_cnn/input.npz"; assert_failure 1
	run vg npz-compare bad.top bad.top; assert_failure 1
	[ ! -e x.top ] && [ ! -e x.tpu ]
}
