#!/usr/bin/env bats
# LSTM, GRU and RNN: onnx2top | top-opt | ir-run against numpy written from
# the ONNX operator spec (tests/fixtures/rnn_fixtures.py) in forward,
# reverse and bidirectional form; a small CRNN through deploy.mk in every
# mode, tpu-sim bit-identical to ir-run; refusals naming the node.
load helpers

bats_require_minimum_version 1.5.0

setup_file() {
	export FX="$BATS_FILE_TMPDIR/fx"
	mkdir -p "$FX"
	/usr/bin/python3 "$BATS_TEST_DIRNAME/fixtures/rnn_fixtures.py" "$FX"
}

setup() {
	T=$BATS_TEST_TMPDIR
}

# run_numpy NAME: the fixture NAME through onnx2top | top-opt | ir-run,
# within 1e-5 of numpy.
run_numpy() {
	onnx2top "$FX/$1.onnx" | top-opt | ir-run - -i "$FX/$1_in.npz" -o "$T/$1_out.npz"
	assert_close "$T/$1_out.npz" "$FX/$1_expect.npz"
}

@test "LSTM forward, reverse (sequence_lens, peepholes), bidirectional (initial states) match numpy" {
	run_numpy lstm
}

@test "GRU with linear_before_reset=0 in three directions matches numpy" {
	run_numpy gru0
}

@test "GRU with linear_before_reset=1 in three directions matches numpy" {
	run_numpy gru1
}

@test "RNN in three directions matches numpy" {
	run_numpy rnn
}

@test "a batch-first (layout=1) GRU with Y left unnamed matches numpy" {
	run_numpy batchfirst
	onnx2top "$FX/batchfirst.onnx" -o "$T/bf.top"
	run $PY "$BATS_TEST_DIRNAME/irdump.py" "$T/bf.top"
	assert_line 'op GRU bf in=X,W,R,B,-,h0 out=bf_unused_0,Y_h direction="bidirectional" hidden_size=6 layout=1 linear_before_reset=0 activations="Sigmoid,Tanh"'
}

@test "constant zero initial states are dropped on import; the op lists its attributes" {
	onnx2top "$FX/crnn.onnx" -o "$T/c.top"
	run $PY "$BATS_TEST_DIRNAME/irdump.py" "$T/c.top"
	assert_line 'op LSTM lstm in=s,lw,lr,lb out=y,y_h,y_c direction="bidirectional" hidden_size=16 layout=0 input_forget=0 activations="Sigmoid,Tanh,Tanh"'
}

@test "a CRNN (Conv, bidirectional LSTM, Gemm, Softmax) deploys in every mode; tpu-sim equals ir-run" {
	local m
	for m in int8 f32 bf16 f16; do
		run make --no-print-directory -f "$REPO/pipelines/deploy.mk" TPUC_BIN="$TPUC_BUILD/bin" \
			MODEL="$FX/crnn.onnx" INPUT="$FX/crnn_in.npz" CALIB="$FX/crnn_cal.npz" \
			MODE=$m OUT="$T/$m" compare
		assert_success
		cmp "$T/$m/tpu_out.npz" "$T/$m/sim_out.npz"
	done
	# int8: the LSTM has no int8 form and runs in bf16 between casts; the
	# Reshape and Transpose before it move the int8 codes as they are
	run $PY "$BATS_TEST_DIRNAME/irdump.py" "$T/int8/lowered.tpu"
	assert_line 'op Cast s_cast_bf16 in=s out=s_bf16 to="bf16"'
	assert_line --regexp '^op LSTM lstm in=s_bf16,lw,lr,lb out=y,y_h,y_c '
	run tpu-sim "$T/int8/model.tmodel" -i "$FX/crnn_in.npz" -o "$T/s.npz"
	assert_success
}

# refused NAME MESSAGE: a one-op LSTM model (node 'enc') with the given
# attributes (Python keyword arguments) is refused with exactly MESSAGE
# after the file name, exit 1, and no output file.
refused() {
	$PY - "$T/$1.onnx" "$3" <<'PYEOF'
import sys
import numpy as np, onnx
from onnx import TensorProto as TP, helper as h, numpy_helper as nh
w = nh.from_array(np.zeros((1, 8, 2), np.float32), 'W')
r = nh.from_array(np.zeros((1, 8, 2), np.float32), 'R')
n = eval('h.make_node("LSTM", ["X", "W", "R"], ["Y"], name="enc", hidden_size=2, ' + sys.argv[2] + ')')
g = h.make_graph([n], 'g', [h.make_tensor_value_info('X', TP.FLOAT, [3, 1, 2])],
                 [h.make_tensor_value_info('Y', TP.FLOAT, [3, 1, 1, 2])], [w, r])
onnx.save(h.make_model(g, opset_imports=[h.make_opsetid('', 14)]), sys.argv[1])
PYEOF
	run onnx2top "$T/$1.onnx" -o "$T/$1.top"
	assert_failure 1
	assert_output "onnx2top: '$T/$1.onnx': $2"
	[ ! -e "$T/$1.top" ]
}

@test "unsupported activations, input_forget=1 and activation_alpha are refused naming the node" {
	refused act "op 'enc' (LSTM): activation 'HardSigmoid' is not supported (Sigmoid, Tanh, Relu, Softsign and Softplus are)" \
		"activations=['HardSigmoid', 'Tanh', 'Tanh']"
	refused forget "op 'enc' (LSTM): input_forget=1 is not supported" "input_forget=1"
	refused alpha "node 'enc' (LSTM): attribute 'activation_alpha' is not supported" \
		"activations=['Sigmoid', 'Tanh', 'Tanh'], activation_alpha=[1.0]"
	refused count "op 'enc' (LSTM): 2 activations given, 3 per direction expected" \
		"activations=['Sigmoid', 'Tanh']"
	refused dir "op 'enc' (LSTM): direction 'sideways' is not forward, reverse or bidirectional" \
		"direction='sideways'"
}

@test "--list-ops lists LSTM, GRU and RNN" {
	run onnx2top --list-ops
	assert_success
	assert_line LSTM
	assert_line GRU
	assert_line RNN
}
