#!/usr/bin/env bats
# An If whose branches are each written for their own input shape (issue
# 14: Silero VAD v5/v6 without --bind): the model of
# tests/fixtures/if_branch_fixtures.py, symbolic batch and samples, an If
# on an input selecting a branch whose nested Ifs and LSTM read tensors
# captured from the graphs around them; imported for one frame length
# without binding the condition, run frame by frame with the state fed
# back in ir-run and on tpu-sim against numpy; the branch that cannot take
# that frame fails only when taken, with its reason.
load helpers

bats_require_minimum_version 1.5.0

setup_file() {
	export FX="$BATS_FILE_TMPDIR/fx"
	mkdir -p "$FX"
	/usr/bin/python3 "$BATS_TEST_DIRNAME/fixtures/if_branch_fixtures.py" "$FX"
	# rate r takes frames of 8r samples
	for r in 1 2; do
		onnx2top "$FX/if_branch.onnx" --shape x=1,$((8 * r)) --shape state=2,1,8 \
			| top-opt -o "$FX/m$r.top"
	done
	# a 16-sample frame at rate 1
	/usr/bin/python3 -c 'import sys, numpy as np
np.savez(sys.argv[1], x=np.zeros((1, 16), np.float32), state=np.zeros((2, 1, 8), np.float32),
         rate=np.int64(1))' "$FX/wrong.npz"
}

setup() {
	T=$BATS_TEST_TMPDIR
}

@test "if-branch: the If on the rate stays, the branch that cannot take the frame kept as its reason; ir-run matches numpy at both rates" {
	for r in 1 2; do
		ir-run "$FX/m$r.top" -i "$FX/frames_$r.npz" --frames 16 --state stateN=state -o "$T/o$r.npz"
		frames_agree "$T/o$r.npz" "$FX/expect_$r.npz" prob 1e-5 all
	done
	# 16-sample frames: the rate-1 branch's nested If on the state keeps
	# its run-time condition; its LSTM branch would get an input of rank 5
	run ir-print "$FX/m2.top"
	assert_line --regexp '^  %prob, %stateN = If\(%is2, %x, %state, %rate\) \{then_branch=func\([0-9]+ ops\), else_branch=func'
	assert_line --regexp "^  %b0_out_p, %b0_out_s = If\(.*\{then_error=\".*op 'LSTM_b0_Y' \(LSTM\): X, W and R must have rank 3\", else_branch=func"
	# 8-sample frames: the rate-2 branch's Conv does not fit at all
	run ir-print "$FX/m1.top"
	assert_line --regexp "^  %prob, %stateN = If\(.*\{then_error=\".*op 'Conv_b1_f' \(Conv\): kernel larger than the padded input\", else_branch=func"
}

@test "if-branch: the branch that cannot run fails only when taken, in one line, no output" {
	run -1 ir-run "$FX/m2.top" -i "$FX/wrong.npz" -o "$T/x.npz"
	assert_output --regexp "^ir-run: '$FX/m2.top': op 'If_b0_out_p' \(If\): the then branch, taken, cannot run on the shapes the model was imported for: .*'LSTM_b0_Y' \(LSTM\): X, W and R must have rank 3$"
	[ ! -e "$T/x.npz" ]
}

@test "if-branch: through the back end the Ifs run on the host, tpu-sim frame by frame matches numpy at both rates" {
	for r in 1 2; do
		top2tpu --chip tpu-a --mode f32 "$FX/m$r.top" | weight-reorder | layergroup \
			| addr-assign -q -o "$T/a$r.tpu"
		codegen "$T/a$r.tpu" -o "$T/m$r.tmodel"
		tpu-sim -q "$T/m$r.tmodel" -i "$FX/frames_$r.npz" --frames 16 --state stateN=state -o "$T/s$r.npz"
		frames_agree "$T/s$r.npz" "$FX/expect_$r.npz" prob 1e-4 all
	done
	run ir-print "$T/a2.tpu"
	assert_line --regexp '^  %prob, %stateN = If\(.*// group [0-9]+, host'
	# and on tpu-sim, the host command's error
	run -1 tpu-sim -q "$T/m2.tmodel" -i "$FX/wrong.npz" -o "$T/x.npz"
	assert_output --regexp "^tpu-sim: '$T/m2.tmodel': host layer 'If_prob': op 'If_b0_out_p' \(If\): the then branch, taken, cannot run .*must have rank 3$"
	[ ! -e "$T/x.npz" ]
}
