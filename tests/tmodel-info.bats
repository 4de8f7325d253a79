#!/usr/bin/env bats
# tmodel-info: what a .tmodel holds, as text and as JSON, checked against
# the addressed Tpu IR codegen was given and against the file's bytes read
# independently (tests/tmodel_reader.py, zlib's CRC-32).
load helpers

bats_require_minimum_version 1.5.0

EX=$REPO/examples/tiny_cnn

setup_file() {
	need_tool onnx2top top-opt calibrate top2tpu weight-reorder layergroup addr-assign codegen tmodel-info
	export W="$BATS_FILE_TMPDIR/w"
	for m in int8 f32; do
		make --no-print-directory -f "$REPO/pipelines/deploy.mk" TPUC_BIN="$TPUC_BUILD/bin" \
			MODEL="$EX/model.onnx" INPUT="$EX/input.npz" CALIB="$EX/calib.npz" \
			MODE=$m OUT="$W/$m" all >/dev/null
	done
	make --no-print-directory -f "$REPO/pipelines/deploy.mk" TPUC_BIN="$TPUC_BUILD/bin" \
		MODEL="$EX/model.onnx" INPUT="$EX/input.npz" CALIB="$EX/calib.npz" \
		MODE=int8 CHIP=tpu-b OUT="$W/b" all >/dev/null
}

setup() {
	need_tool tmodel-info
	T=$BATS_TEST_TMPDIR
}

# check_json DIR: tmodel-info --json of DIR/model.tmodel against
# DIR/addressed.tpu (what codegen was given) and the file's own bytes.
check_json() {
	tmodel-info --json "$1/model.tmodel" >"$T/info.json"
	$PY - "$1" "$T/info.json" "$(tmodel-info --version)" <<'PY'
import json, struct, sys, zlib
import msgpack
d, info, version = sys.argv[1], json.load(open(sys.argv[2])), sys.argv[3]
b = open(d + "/addressed.tpu", "rb").read()
glen = struct.unpack_from("<Q", b, 16)[0]
g = msgpack.unpackb(b[64:64 + glen], strict_map_key=False)
T, O = g["tensors"], g["ops"]
def fail(msg):
    sys.exit("%s: %s" % (d, msg))
for k in ("chip", "mode", "name", "neuron_bytes", "coeff_bytes"):
    if info[k] != g[k]:
        fail("%s: %r, the IR says %r" % (k, info[k], g[k]))
for k in ("inputs", "outputs"):
    want = [{"name": T[i]["name"], "shape": T[i]["shape"], "dtype": T[i]["dtype"]} for i in g[k]]
    got = [{x: e[x] for x in ("name", "shape", "dtype")} for e in info[k]]
    if got != want:
        fail("%s: %r, the IR says %r" % (k, got, want))
    for e, i in zip(info[k], g[k]):
        if e["scale"] != T[i].get("scale", 0) and abs(e["scale"] - T[i]["scale"]) > 1e-6 * abs(T[i]["scale"]):
            fail("%s scale" % e["name"])
# the MACs of the cube's ops, from the shapes (the network's own, before
# weight-reorder made the op multiply zeros too)
def numel(s):
    n = 1
    for x in s:
        n *= x
    return n
macs = []
for op in O:
    out = T[op["out"][0]]["shape"]
    if "own" in op["attrs"]:
        macs.append(op["attrs"]["own"][0])
    elif op["type"] == "Conv":
        cin = T[op["in"][0]]["shape"][1] // op["attrs"].get("group", 1)
        macs.append(numel(out) * cin * numel(op["attrs"]["kernel_shape"]))
    elif op["type"] == "Gemm":
        a = T[op["in"][0]]["shape"]
        macs.append(numel(out) * (a[0] if op["attrs"].get("transA", 0) else a[1]))
    else:
        macs.append(0)
got = [l["macs"] for l in info["layers"]]
if got != macs or info["macs"] != sum(macs):
    fail("macs %r (total %d), from the shapes %r" % (got, info["macs"], macs))
if [l["name"] for l in info["layers"]] != [op["name"] for op in O]:
    fail("layer names")
# the file itself: commands and the coefficients' CRC-32
f = open(d + "/model.tmodel", "rb").read()
n_dma, n_cmp = struct.unpack_from("<Q", f, 40)[0], struct.unpack_from("<Q", f, 56)[0]
coff, clen = struct.unpack_from("<QQ", f, 64)
if info["commands"] != {"dma": n_dma, "compute": n_cmp}:
    fail("commands %r, the header says %d, %d" % (info["commands"], n_dma, n_cmp))
if sum(l["commands"] for l in info["layers"]) != n_cmp:
    fail("per-layer commands")
if int(info["coeff_crc32"], 16) != zlib.crc32(f[coff:coff + clen]):
    fail("coeff_crc32")
if info["producer"] != "tpuc " + version.split()[-1]:
    fail("producer %r" % info["producer"])
PY
}

@test "--json matches what codegen was given: int8, f32, tpu-b" {
	for d in int8 f32 b; do
		check_json "$W/$d"
	done
}

@test "the text form shows the same facts" {
	run --separate-stderr tmodel-info "$W/int8/model.tmodel"
	assert_success
	assert_line "chip     tpu-a"
	assert_line "mode     int8"
	assert_line --regexp "^producer tpuc [0-9]+\\.[0-9]+\\.[0-9]+\$"
	assert_line --regexp "^input   0  input f32 \\[1,3,32,32\\]  \\(12288 bytes at 0x[0-9a-f]+\\)\$"
	assert_line --regexp "^output  0  logits f32 \\[1,10\\]  \\(40 bytes at 0x[0-9a-f]+\\)\$"
	local crc macs
	crc=$($PY -c 'import json,sys; print(json.load(sys.stdin)["coeff_crc32"])' < <(tmodel-info --json "$W/int8/model.tmodel"))
	macs=$($PY -c 'import json,sys; print(json.load(sys.stdin)["macs"])' < <(tmodel-info --json "$W/int8/model.tmodel"))
	assert_line --regexp "^coeff    [0-9]+ bytes at 0x0, crc32 $crc\$"
	assert_line --regexp "^macs     $macs \\("
	assert_line --regexp "^1 +Conv +1 +442368  stem/Conv\$"
	# tpu-sim counts the same MACs
	tpu-sim "$W/int8/model.tmodel" -t 2>"$T/st"
	grep -q "$($PY -c "print('%.4g GMAC' % ($macs / 1e9))")" "$T/st"
	run tmodel-info - <"$W/int8/model.tmodel"
	assert_success
	run tmodel-info "$W/int8/model.tmodel" -o "$T/info.txt"
	assert_success
	assert_output ''
	grep -q '^chip     tpu-a$' "$T/info.txt"
}

@test "an older .tmodel without a producer reads, shown as unknown" {
	# rewrite the description without "producer" (formats/tpuc-tmodel.5: optional)
	$PY - "$W/int8/model.tmodel" "$T/old.tmodel" <<'PY'
import struct, sys, msgpack
f = bytearray(open(sys.argv[1], "rb").read())
off, n = struct.unpack_from("<QQ", f, 16)
meta = msgpack.unpackb(bytes(f[off:off + n]), strict_map_key=False)
del meta["producer"]
new = msgpack.packb(meta, use_single_float=True)
assert len(new) <= n
f[off:off + n] = new + b"\0" * (n - len(new))
struct.pack_into("<Q", f, 24, len(new))
open(sys.argv[2], "wb").write(f)
PY
	run tmodel-info "$T/old.tmodel"
	assert_success
	assert_line "producer unknown (before tpuc 0.9.0)"
	run tmodel-info --json "$T/old.tmodel"
	assert_line '  "producer": null,'
	tpu-sim -q "$T/old.tmodel" -i "$EX/input.npz" -o "$T/a.npz"
	tpu-sim -q "$W/int8/model.tmodel" -i "$EX/input.npz" -o "$T/b.npz"
	cmp "$T/a.npz" "$T/b.npz"
}

@test "errors: one line naming the file, hints for IR and ONNX; usage exit 2" {
	run -1 tmodel-info "$T/nope.tmodel"
	assert_output "tmodel-info: cannot open '$T/nope.tmodel': No such file or directory"
	run -1 tmodel-info "$W/int8/addressed.tpu"
	assert_output --partial "not a tmodel file (bad magic) (tpuc IR: run it with ir-run, or build a .tmodel with"
	run -1 tmodel-info "$EX/model.onnx"
	assert_output --partial "not a tmodel file (bad magic) (an ONNX model"
	head -c 50 "$W/int8/model.tmodel" >"$T/t.tmodel"
	run -1 tmodel-info "$T/t.tmodel" -o "$T/out"
	assert_output "tmodel-info: '$T/t.tmodel': truncated tmodel (50 bytes)"
	[ ! -e "$T/out" ]
	run -2 tmodel-info a b
	assert_line --index 0 "tmodel-info: too many operands (2 given, at most 1 wanted)"
	run -2 tmodel-info --bogus
	assert_line --index 0 "tmodel-info: unknown option '--bogus'"
}
