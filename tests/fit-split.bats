#!/usr/bin/env bats
# fit-split: ops that no cut of codegen fits in local memory, rewritten by
# top2tpu into ops that fit (lib/back/lower_fit.c): reductions over a row
# longer than a DMA block moves in stages (lower_rows.c), window ops along
# such a row in blocks of their output (lower_wsplit.c), a Conv of two
# groups too wide per group in parts of its groups, then of K
# (lower_kin.c), a bidirectional LSTM or GRU one op per direction, an
# LSTM nothing divides on the host.  Models from
# tests/fixtures/fit_fixtures.py, f32 on tpu-a
# and int8 on tpu-b: the Tpu IR close to the Top IR, tpu-sim as ir-run on
# the Tpu IR (bit for bit in int8), and the rewrite visible in the IR.
load helpers

bats_require_minimum_version 1.5.0

setup_file() {
	export FX="$BATS_FILE_TMPDIR/fx"
	/usr/bin/python3 "$BATS_TEST_DIRNAME/fixtures/fit_fixtures.py" "$FX"
}

# deploy NAME MODE CHIP: the model through deploy.mk's comparisons.
deploy() {
	deploy_mk MODEL="$FX/$1/model.onnx" INPUT="$FX/$1/input.npz" CALIB="$FX/$1/calib.npz" \
		MODE="$2" CHIP="$3" OUT="$FX/$1/$2-$3"
	assert_success
}

# deploy_exact DIR: DIR/m.onnx (in.npz, cal.npz) in int8 on tpu-a into
# DIR/o, tpu-sim bit for bit as ir-run on the Tpu IR.
deploy_exact() {
	run make --no-print-directory -f "$REPO/pipelines/deploy.mk" TPUC_BIN="$TPUC_BUILD/bin" \
		MODEL="$1/m.onnx" INPUT="$1/in.npz" CALIB="$1/cal.npz" MODE=int8 CHIP=tpu-a \
		OUT="$1/o" compare
	assert_success
	cmp "$1/o/tpu_out.npz" "$1/o/sim_out.npz"
}

@test "reductions over a row of 70000 elements run in stages: Softmax, LogSoftmax, LayerNormalization, ReduceMean, ReduceMax, ArgMax, InstanceNormalization" {
	deploy rows f32 tpu-a
	deploy rows int8 tpu-b
	cmp "$FX/rows/int8-tpu-b/tpu_out.npz" "$FX/rows/int8-tpu-b/sim_out.npz"
	run ir-print "$FX/rows/f32-tpu-a/lowered.tpu"
	# a partial max per block of the row, then the max of the parts
	assert_output --regexp 'sm_max_part = ReduceMax\(%x_row0[0-9_]*\) \{axes=\[2\], keepdims=1\}.*-> f32\[1,2,1\]'
	assert_output --regexp 'sm_max = ReduceMax\(%sm_max_parts\)'
	assert_output --regexp 'arg = Cast\(%arg_first\) \{to="i64"\}'
	assert_output --regexp 'inorm_var = ReduceMean'
	# the int8 output of ArgMax is the same index as the float model's
	/usr/bin/python3 - "$FX/rows" <<'PYEOF'
import sys, numpy as np
d = sys.argv[1]
x = np.load(d + "/input.npz")["x"]
for o in ("f32-tpu-a", "int8-tpu-b"):
    a = np.load(d + "/%s/sim_out.npz" % o)["arg"]
    assert (a == x.argmax(-1)[..., None]).all(), (o, a.ravel())
PYEOF
}

@test "window ops along a row of 70000 elements run in blocks along W: ConvTranspose, reflecting Pad, Resize, DepthToSpace" {
	deploy windows f32 tpu-a
	deploy windows int8 tpu-b
	cmp "$FX/windows/int8-tpu-b/tpu_out.npz" "$FX/windows/int8-tpu-b/sim_out.npz"
	run ir-print "$FX/windows/f32-tpu-a/lowered.tpu"
	assert_output --regexp 'deconv = Concat\(%deconv_w0, .*\{axis=3\}'
	assert_output --regexp 'pad_w0 = Pad\(%x_w0[0-9_]*\) \{pads=\[0,0,1,3,0,0,1,0\]'
	assert_output --regexp 'pad_w[1-9][0-9]* = Pad\(%x_w[1-9][0-9]*\) \{pads=\[0,0,1,0,0,0,1,5\]'
	assert_output --regexp 'up_w[1-9][0-9]* = Resize\(.*part_at=\[0,0,0,[1-9]'
	assert_output --regexp 'd2s = Concat\(%d2s_w0, .*\{axis=3\}'
}

@test "a Conv of two groups too wide per group runs as parts of one group, each split along K" {
	deploy groups f32 tpu-a
	deploy groups int8 tpu-b
	cmp "$FX/groups/int8-tpu-b/tpu_out.npz" "$FX/groups/int8-tpu-b/sim_out.npz"
	run ir-print "$FX/groups/f32-tpu-a/lowered.tpu"
	assert_output --regexp 'y = Concat\(%y_g0, %y_g2\) \{axis=1\}'
	assert_output --regexp 'y_g0_k0 = Conv\(%x_g0_k0, @w_g0_k0'
	run ir-print "$FX/groups/int8-tpu-b/lowered.tpu"
	assert_output --regexp 'y_i8_g0_k0 = Conv\(.*acc=1\}'
}

@test "an LSTM whose recurrent weights no cut divides runs on the host (f32; in int8 its bf16 fallback fits)" {
	deploy rnn f32 tpu-b
	deploy rnn int8 tpu-b
	cmp "$FX/rnn/int8-tpu-b/tpu_out.npz" "$FX/rnn/int8-tpu-b/sim_out.npz"
	run ir-print "$FX/rnn/f32-tpu-b/lowered.tpu"
	assert_line --regexp '= LSTM\(%x, @W, @R, @B\).*// host$'
	# the chip's minimum DDR traffic leaves out the weights only the host
	# reads: x [4,1,32] in, y [4,1,1,512], Y_h and Y_c [1,1,512] out, f32
	run --separate-stderr tpu-sim "$FX/rnn/f32-tpu-b/model.tmodel" -i "$FX/rnn/input.npz" -o /dev/null
	assert_success
	assert_regex "$stderr" 'minimum 12.5 KiB\)'
}

@test "bidirectional LSTM and GRU too large as one op run as one op per direction, the same bits" {
	deploy birnn f32 tpu-b
	deploy birnn int8 tpu-b
	cmp "$FX/birnn/int8-tpu-b/tpu_out.npz" "$FX/birnn/int8-tpu-b/sim_out.npz"
	run ir-print "$FX/birnn/f32-tpu-b/lowered.tpu"
	refute_output --partial '// host'
	refute_output --partial 'bidirectional'
	assert_output --regexp 'y_dir0, %yh_dir0, %yc_dir0 = LSTM\(%x, @W_dir0, @R_dir0, @B_dir0, %h0_dir0_c\) \{direction="forward".*activations="Sigmoid,Tanh,Tanh"'
	assert_output --regexp 'y_dir1, %yh_dir1, %yc_dir1 = LSTM\(%x, @W_dir1, .*\{direction="reverse".*activations="Sigmoid,Softsign,Tanh"'
	assert_output --regexp 'y = Concat\(%y_dir0, %y_dir1\) \{axis=1\}'
	assert_output --regexp 'yc = Concat\(%yc_dir0, %yc_dir1\) \{axis=0\}'
	assert_output --regexp 'g = Concat\(%g_dir0, %g_dir1\) \{axis=2\}'
	assert_output --regexp 'gh = Concat\(%gh_dir0, %gh_dir1\) \{axis=1\}'
	# each direction as the whole op computed it: f32 tpu-sim as the Top IR, bit for bit
	/usr/bin/python3 - "$FX/birnn/f32-tpu-b" <<'PYEOF'
import sys, numpy as np
t, s = np.load(sys.argv[1] + "/top_out.npz"), np.load(sys.argv[1] + "/sim_out.npz")
assert sorted(t.files) == ["g", "gh", "y", "yc", "yh"], t.files
for k in t.files:
    assert np.array_equal(t[k], s[k]), k
PYEOF
}

# A detector's box decode: elementwise ops on a column [N, 1] (one
# element per lane row: no cut fits) each run refolded to [1, C, H, W];
# where one reads another's result, the Reshape back and the Reshape in
# cancel, so that the chain meets only folded tensors and layergroup keeps
# it in one local group.  The same bits as ir-run on the Tpu IR.
@test "a chain of refolded elementwise ops reads each other's folded results, in one local group" {
	local T=$BATS_TEST_TMPDIR
	/usr/bin/python3 - "$T" <<'PYEOF'
import sys, numpy as np, onnx
from onnx import helper as h, numpy_helper as nh, TensorProto as TP
d = sys.argv[1]
r = np.random.default_rng(3)
N = 3234
nodes = [h.make_node('Div', ['x', 'ten'], ['dv'], name='dv'),
         h.make_node('Clip', ['dv', '', 'four'], ['cl'], name='cl'),
         h.make_node('Exp', ['cl'], ['ex'], name='ex'),
         h.make_node('Mul', ['ex', 'a'], ['z'], name='mz')]
inits = [nh.from_array(np.array(10, np.float32), 'ten'), nh.from_array(np.array(4, np.float32), 'four')]
g = h.make_graph(nodes, 'decode', [h.make_tensor_value_info('x', TP.FLOAT, [N, 1]),
                                   h.make_tensor_value_info('a', TP.FLOAT, [N, 1])],
                 [h.make_tensor_value_info('z', TP.FLOAT, [N, 1])], inits)
onnx.save(h.make_model(g, opset_imports=[h.make_opsetid('', 13)]), d + '/m.onnx')
f = lambda *s: r.standard_normal(s).astype(np.float32) * 8
np.savez(d + '/in.npz', x=f(N, 1), a=f(N, 1))
np.savez(d + '/cal.npz', x=f(4, N, 1), a=f(4, N, 1))
PYEOF
	deploy_exact "$T"
	run ir-print "$T/o/grouped.tpu"
	assert_output --regexp 'cl_refold = Clip\(%dv_refold\)'
	assert_output --regexp 'ex_refold = Exp\(%cl_i8_refold\)'
	# Reshapes only at the chain's ends: the inputs in, the result out
	[ "$(printf '%s\n' "$output" | grep -c '= Reshape(')" -eq 3 ]
	# the chain's first ops share a local group
	local grp
	grp=$(printf '%s\n' "$output" | sed -n 's/.*cl_refold = Clip.*\/\/ group \([0-9]*\), local.*/\1/p')
	[ -n "$grp" ]
	assert_output --regexp "ex_refold = Exp.*// group $grp, local"
	assert_output --regexp "dv_refold = Div.*// group $grp, local"
}

# A detector's box clipping and stacking on a few hundred boxes: a tensor
# of rank 2 or 3 has its first axis in N, one row per box on four lanes.
# The elementwise ops run refolded and the Concats and Slices along the
# last axis on the tensors with a leading axis of 1, the boxes over the
# lanes (lower_fit.c: refold_spreads, spread_copy), and the views between
# them collapse (refold_cancel).  The same bits as ir-run on the Tpu IR,
# and each op's cycles below one per box.
@test "ops on [boxes, 4] tensors that fit run with the boxes over the lanes: refolded Clip, Slice and Concat on [1, boxes, ...]" {
	local T=$BATS_TEST_TMPDIR N=450
	/usr/bin/python3 - "$T" $N <<'PYEOF'
import sys, numpy as np, onnx
from onnx import helper as h, numpy_helper as nh, TensorProto as TP
d, N = sys.argv[1], int(sys.argv[2])
r = np.random.default_rng(5)
i64 = lambda *v: np.array(v, np.int64)
nodes = [h.make_node('Slice', ['b', 's0', 'e', 'ax1', 'st2'], ['bx'], name='sx'),
         h.make_node('Slice', ['b', 's1', 'e', 'ax1', 'st2'], ['by'], name='sy'),
         h.make_node('Clip', ['bx', 'lo', 'hi'], ['cx'], name='cx'),
         h.make_node('Clip', ['by', 'lo', 'hi'], ['cy'], name='cy'),
         h.make_node('Unsqueeze', ['cx', 'ax2'], ['ux'], name='ux'),
         h.make_node('Unsqueeze', ['cy', 'ax2'], ['uy'], name='uy'),
         h.make_node('Concat', ['ux', 'uy'], ['st'], name='st', axis=2),
         h.make_node('Reshape', ['st', 'shp'], ['z'], name='z')]
inits = [nh.from_array(i64(0), 's0'), nh.from_array(i64(1), 's1'), nh.from_array(i64(4), 'e'),
         nh.from_array(i64(1), 'ax1'), nh.from_array(i64(2), 'st2'), nh.from_array(i64(2), 'ax2'),
         nh.from_array(np.array(0, np.float32), 'lo'), nh.from_array(np.array(300, np.float32), 'hi'),
         nh.from_array(i64(N, 4), 'shp')]
g = h.make_graph(nodes, 'boxes', [h.make_tensor_value_info('b', TP.FLOAT, [N, 4])],
                 [h.make_tensor_value_info('z', TP.FLOAT, [N, 4])], inits)
onnx.save(h.make_model(g, opset_imports=[h.make_opsetid('', 13)]), d + '/m.onnx')
f = lambda *s: (r.standard_normal(s) * 200 + 150).astype(np.float32)
np.savez(d + '/in.npz', b=f(N, 4))
np.savez(d + '/cal.npz', b=f(4, N, 4))
PYEOF
	deploy_exact "$T"
	run ir-print "$T/o/lowered.tpu"
	assert_output --regexp "= Slice\(%b[^)]*_spread\) \{[^}]*axes=\[2\].*-> [a-z0-9]+\[1,$N,2\]"
	assert_output --regexp "= Concat\([^)]*\) \{axis=3[^}]*\}.*-> [a-z0-9]+\[1,$N,2,2\]"
	assert_output --regexp "cx_refold = Clip\(%[a-z_]*_refold\).*-> [a-z0-9]+\[1,4,1,225\]"
	# the Concat's input Reshape reads the Clip's folded result across
	# the Reshape back and the Unsqueeze, which are gone
	assert_output --regexp "ux_spread = Reshape\(%cx_refold\)"
	refute_output --partial 'Unsqueeze('
	# every chip op costs fewer cycles than one per box
	run tpu-sim "$T/o/model.tmodel" -i "$T/in.npz" -p -o "$T/p.npz"
	assert_success
	printf '%s\n' "$output" | awk -v n=$N '$1 ~ /^[0-9]+$/ && $3 > 0 && $4 >= n / 2 { print; bad = 1 } END { exit bad }'
}
