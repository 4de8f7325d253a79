#!/usr/bin/env bats
# fuzz: every input the fuzzers once crashed on (tests/fuzz/READER/) and the
# seed corpora, replayed through the harnesses of fuzz/ built with the
# tools (build/fuzz/replay-READER): none may crash, leak or draw a
# sanitizer report (under `make SAN=1 check` the replays run with ASan
# and UBSan).  `make fuzz` itself runs in CI.
load helpers

bats_require_minimum_version 1.5.0

READERS="onnx ir npz tmodel calib qtable"

@test "every reader has a harness with a replay driver" {
	local r
	for r in $READERS; do
		[ -f "$REPO/fuzz/fuzz_$r.c" ] || fail "no fuzz/fuzz_$r.c"
		[ -x "$TPUC_BUILD/fuzz/replay-$r" ] || fail "replay-$r not built"
	done
}

@test "the regression inputs replay without a crash or a sanitizer report" {
	local r n=0
	for r in $READERS; do
		[ -d "$REPO/tests/fuzz/$r" ] || continue
		run "$TPUC_BUILD/fuzz/replay-$r" "$REPO/tests/fuzz/$r"
		assert_success
		assert_output --regexp ": [1-9][0-9]* inputs replayed$"
		n=$((n + 1))
	done
	[ "$n" -ge 2 ]
}

@test "inputs made from the repo's models replay through every harness" {
	local T=$BATS_TEST_TMPDIR
	need_tool onnx2top top-opt calibrate top2tpu weight-reorder layergroup addr-assign codegen
	(cd "$REPO" && sh fuzz/seeds.sh "$TPUC_BUILD/bin" "$T/seeds") >/dev/null 2>&1 ||
		fail "fuzz/seeds.sh failed"
	local r
	for r in $READERS; do
		run "$TPUC_BUILD/fuzz/replay-$r" "$T/seeds/$r"
		assert_success
		assert_output --regexp ": [1-9][0-9]* inputs replayed$"
	done
}

@test "the replay driver refuses a missing file and no arguments" {
	run "$TPUC_BUILD/fuzz/replay-qtable" "$BATS_TEST_TMPDIR/missing"
	[ "$status" -eq 1 ]
	run "$TPUC_BUILD/fuzz/replay-qtable"
	[ "$status" -eq 2 ]
}
