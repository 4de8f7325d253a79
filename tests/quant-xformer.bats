#!/usr/bin/env bats
# Int8 attention (issue 12): Softmax, LayerNormalization and Div by a
# constant run in int8 where their readers quantise anyway, Transpose
# follows its input, and tpu-sim agrees with ir-run bit for bit; the
# cosine stays that of the float fallback they replace.
load helpers

setup() {
	T=$BATS_TEST_TMPDIR
}

# cos A B: the cosine of output y between two .npz files.
cos() {
	npz-compare "$1" "$2" | awk '$1 == "y" { print $3 }'
}

@test "a pre-LN attention block lowers to int8 throughout, as exact as the float fallback" {
	$PY "$BATS_TEST_DIRNAME/fixtures/make_attn.py" "$T/m"
	onnx2top "$T/m/model.onnx" -o "$T/o.top"
	top-opt "$T/o.top" -o "$T/c.top"
	calibrate "$T/c.top" -d "$T/m/calib.npz" -o "$T/t.table" 2>/dev/null
	top2tpu "$T/c.top" --chip tpu-a --mode int8 --calib "$T/t.table" -o "$T/l.tpu"
	run ir-print "$T/l.tpu"
	# the block's ops read and write i8/u8; the exp table and multiplier are there
	[[ "$output" == *'= LayerNormalization(%e, @g1, @b1)'*'-> i8[1,16,32]'* ]]
	[[ "$output" == *'= Transpose(%k)'*'-> i8[1,32,16]'* ]]
	[[ "$output" == *'= Div(%s, @sqrt_d)'*'-> i8[1,16,16]'* ]]
	[[ "$output" == *'= Softmax(%sd) {axis=2, lut=[32768,'*'out_mult='*'-> u8[1,16,16]'* ]]
	# only the graph input's quantisation and the last LayerNormalization
	# (a graph output: it keeps its float form) take Casts
	[ "$(grep -c 'Cast(' <<<"$output")" -eq 3 ]
	[[ "$output" == *'%y_bf16 = LayerNormalization(%r_bf16'* ]]

	# the float fallback of the same three ops, by qtable
	printf 'LayerNormalization_h bf16\nDiv_sd bf16\nSoftmax_p bf16\n' >"$T/fb.qtable"
	top2tpu "$T/c.top" --chip tpu-a --mode int8 --calib "$T/t.table" --qtable "$T/fb.qtable" \
		-o "$T/fb.tpu"
	ir-run "$T/c.top" -i "$T/m/input.npz" -o "$T/top.npz"
	ir-run "$T/l.tpu" -i "$T/m/input.npz" -o "$T/i8.npz"
	ir-run "$T/fb.tpu" -i "$T/m/input.npz" -o "$T/fb.npz"
	c8=$(cos "$T/top.npz" "$T/i8.npz")
	cf=$(cos "$T/top.npz" "$T/fb.npz")
	# measured 0.999777 and 0.999776 (0.999877 for both with thresholds
	# from all samples pooled)
	awk -v a="$c8" -v b="$cf" 'BEGIN { exit !(a >= 0.9997 && a >= b - 2e-5) }'

	# the simulator runs the same kernels: bit-identical
	weight-reorder "$T/l.tpu" -o "$T/r.tpu"
	layergroup "$T/r.tpu" -o "$T/g.tpu"
	addr-assign "$T/g.tpu" -o "$T/a.tpu" 2>/dev/null
	codegen "$T/a.tpu" -o "$T/m.tmodel"
	tpu-sim -q "$T/m.tmodel" -i "$T/m/input.npz" -o "$T/sim.npz"
	ir-run "$T/a.tpu" -i "$T/m/input.npz" -o "$T/a.npz"
	[ "$(npz_maxdiff "$T/sim.npz" "$T/a.npz")" = 0.0 ]
	[ "$(npz_maxdiff "$T/sim.npz" "$T/i8.npz")" = 0.0 ]
}

@test "an int8 Softmax with a broken exp table is refused by name" {
	$PY "$BATS_TEST_DIRNAME/fixtures/make_attn.py" "$T/m"
	onnx2top "$T/m/model.onnx" -o "$T/o.top"
	top-opt "$T/o.top" -o "$T/c.top"
	calibrate "$T/c.top" -d "$T/m/calib.npz" -o "$T/t.table" 2>/dev/null
	top2tpu "$T/c.top" --chip tpu-a --mode int8 --calib "$T/t.table" -o "$T/l.tpu"
	# the table's first entry, 32768 (msgpack uint16 0xcd 0x80 0x00), made 0
	# (uint16 0, same length)
	$PY - "$T/l.tpu" "$T/bad.tpu" <<'PY'
import sys
d = open(sys.argv[1], "rb").read()
key = b"\xa3lut\xdc\x01\x00\xcd\x80\x00"
assert d.count(key) == 1, "one lut"
open(sys.argv[2], "wb").write(d.replace(key, key[:-2] + b"\x00\x00"))
PY
	run ir-run "$T/bad.tpu" -i "$T/m/input.npz" -o "$T/out.npz"
	[ "$status" -eq 1 ]
	[[ "$output" == *"Softmax_p"*"lut must"* ]]
	[ ! -e "$T/out.npz" ]
}

@test "bert_tiny in int8: attention in int8, last_hidden_state as before" {
	need_models bert_tiny
	M=$MODELS/bert_tiny
	onnx2top "$M/model.onnx" -o "$T/o.top"
	top-opt "$T/o.top" -o "$T/c.top"
	calibrate "$T/c.top" -d "$M/calib.npz" -o "$T/t.table" 2>/dev/null
	top2tpu "$T/c.top" --chip tpu-a --mode int8 --calib "$T/t.table" -o "$T/l.tpu"
	run ir-print "$T/l.tpu"
	[ "$(grep -cE '= (Softmax|Div)\(.*-> [iu]8\[' <<<"$output")" -eq 8 ]
	ir-run "$T/c.top" -i "$M/input.npz" -o "$T/top.npz"
	ir-run "$T/l.tpu" -i "$M/input.npz" -o "$T/i8.npz"
	# measured 0.999375 (0.999378 with the float fallback)
	run npz-compare "$T/top.npz" "$T/i8.npz"
	awk '$1 == "last_hidden_state" { exit !($3 >= 0.9992) }' <<<"$output"
}

@test "a ViT in int8: q, k, v slices, bias Adds and the LayerNormalizations in int8, the class token's start in float" {
	[ "${TPUC_QUICK:-0}" != 1 ] || skip "full suite only (TPUC_QUICK=1)"
	# make_zoo_big's vit256: torchvision's VisionTransformer layout, d=256,
	# 197 tokens, a zero class token and a position embedding
	$PY "$BATS_TEST_DIRNAME/fixtures/make_zoo_big.py" "$T" vit256 >/dev/null
	M=$T/vit256
	onnx2top "$M/model.onnx" -o "$T/o.top"
	top-opt "$T/o.top" -o "$T/c.top"
	calibrate "$T/c.top" -d "$M/calib.npz" -o "$T/t.table"
	top2tpu "$T/c.top" --chip tpu-a --mode int8 --calib "$T/t.table" -o "$T/l.tpu"
	run ir-print "$T/l.tpu"
	# float: only the class token's Concat with a zero constant, the
	# position embedding Add of the output's size (all the class token row
	# holds) and the first LayerNormalization reading them; the q/k/v
	# Split, the bias Adds, the last LayerNormalization and the Gather of
	# the class token (top-opt's Slice and Reshape) are int8 (all of them
	# were bf16 before)
	grep -E '^  %' <<<"$output" | grep -vE -- '-> \(?[iu]8\[|= Cast\(' >"$T/float" || true
	cat "$T/float" >&3
	[ "$(wc -l <"$T/float")" -eq 3 ]
	grep -q '= Concat(' "$T/float"
	grep -q '= Add(' "$T/float"
	grep -q '= LayerNormalization(' "$T/float"
	[ "$(grep -cE '= LayerNormalization\(.*-> i8\[' <<<"$output")" -eq 8 ]
	grep -qE '= Slice\(.*-> i8\[1,1,256\]' <<<"$output"
	grep -qE '= Reshape\(.*-> i8\[1,256\]' <<<"$output"
	ir-run "$T/c.top" -i "$M/input.npz" -o "$T/top.npz"
	ir-run "$T/l.tpu" -i "$M/input.npz" -o "$T/i8.npz"
	# measured 0.992009 (0.991931 with those ops in bf16)
	run npz-compare "$T/top.npz" "$T/i8.npz" --tolerance 0.99,0 --task auto
	echo "$output" >&3
	assert_success
	weight-reorder "$T/l.tpu" -o "$T/r.tpu"
	layergroup "$T/r.tpu" -o "$T/g.tpu"
	addr-assign "$T/g.tpu" -o "$T/a.tpu" 2>/dev/null
	codegen "$T/a.tpu" -o "$T/m.tmodel"
	tpu-sim -q "$T/m.tmodel" -i "$M/input.npz" -o "$T/sim.npz"
	[ "$(npz_maxdiff "$T/sim.npz" "$T/i8.npz")" = 0.0 ]
}
