#!/usr/bin/env bats
# tpu-sim: INT8 models bit-identical to ir-run on the Tpu IR, F32 models
# within rounding of the reference; statistics, profile and timing-only
# runs; errors (exit 1, one line, no output left behind) and usage (exit 2);
# the real models end to end.
load helpers
load backend

bats_require_minimum_version 1.5.0

setup_file() {
	need_tool onnx2top top-opt calibrate top2tpu weight-reorder layergroup addr-assign codegen tpu-sim ir-run
	export FX="$BATS_FILE_TMPDIR/fx"
	backend_fixtures "$FX"
	backend_stages "$FX" int8
	backend_stages "$FX" f32
	backend_stages "$FX" b.int8
}

setup() {
	need_tool onnx2top top-opt calibrate top2tpu weight-reorder layergroup addr-assign codegen tpu-sim ir-run
	T=$BATS_TEST_TMPDIR
}

# "name:dtype:shape" of each array.
npz_names() {
	$PY -c 'import sys, numpy as np
z = np.load(sys.argv[1]); print(" ".join(f"{k}:{z[k].dtype}:{list(z[k].shape)}" for k in z.files))' "$1"
}

# The cosine similarity of the arrays both files hold, the smallest.
npz_cosine() {
	$PY -c 'import sys, numpy as np
a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
c = [float(np.dot(a[k].ravel().astype(np.float64), b[k].ravel()) /
     (np.linalg.norm(a[k].astype(np.float64)) * np.linalg.norm(b[k].astype(np.float64))))
     for k in a.files if k in b.files]
print("%.7f" % min(c))' "$1" "$2"
}

@test "a group's small weights load as coefficient runs, one DMA command each; tpu-sim as ir-run" {
	# A weight load that starts at a weight moves it alone or a run: weights
	# of the block's dtype and W, each at a whole number of channel slots
	# from its start, all read by ops of one local group; the runs leave
	# fewer weight loads than the weights local groups read, by at least
	# the weights the runs take after their first.
	local m
	for m in int8 b.int8; do
		tmodel_dump "$FX/$m.tmodel" >"$T/dump"
		tpu-sim -q "$FX/$m.tmodel" -i "$TINY/input.npz" -o "$T/sim.npz"
		ir-run "$FX/$m.addressed.tpu" -i "$TINY/input.npz" -o "$T/ref.npz"
		cmp "$T/sim.npz" "$T/ref.npz"
		run $PY - "$FX/$m.addressed.tpu" "$T/dump" <<'PYEOF'
import math, struct, sys, msgpack
b = open(sys.argv[1], "rb").read()
g = msgpack.unpackb(b[64:64 + struct.unpack_from("<Q", b, 16)[0]], strict_map_key=False)
T, O = g["tensors"], g["ops"]
lanes = {"tpu-a": 64, "tpu-b": 32}[g["chip"]]
size = {"f32": 4, "f16": 2, "bf16": 2, "i8": 1, "u8": 1, "i16": 2, "i32": 4, "i64": 8}
def cw(t):   # weight lane shape C, W
    s = t["shape"]
    if len(s) == 1:
        return s[0], 1
    assert s[0] != 1, t["name"]
    return s[0], math.prod(s[1:])
W = {i: t for i, t in enumerate(T) if "data" in t}
readers = {i: {o.get("group") for o in O if i in o["in"]} for i in W}
loads = [l.split() for l in open(sys.argv[2]).read().splitlines() if l.startswith("dma ") and " LOAD " in l]
runs = n_wl = saved = 0
for l in loads:
    ddr = int(l[4][4:])
    if ddr >= g["coeff_bytes"]:
        continue
    n, c, h, w = map(int, l[6].split(","))
    inner = sorted((T[i]["addr"], i) for i in W if ddr <= T[i]["addr"] < ddr + c * w * 8)
    first = [i for a, i in inner if a == ddr]
    if not first:
        continue   # a part of one weight
    es = size[T[first[0]]["dtype"]]
    cov = [i for a, i in inner if a < ddr + c * w * es]
    n_wl += 1
    if len(cov) < 2:
        continue
    runs += 1
    saved += len(cov) - 1
    assert n == 1 and h == 1
    for i in cov:
        C, Wi = cw(T[i])
        off = T[i]["addr"] - ddr
        assert T[i]["dtype"] == T[first[0]]["dtype"] and Wi == w, T[i]["name"]
        assert off % (lanes * w * es) == 0 and off // (w * es) + C <= c, T[i]["name"]
    assert len(set().union(*(readers[i] for i in cov))) == 1, [T[i]["name"] for i in cov]
loaded = sum(1 for i in W if any(i in o["in"] and o.get("place") == "local" for o in O))
# tpu-b's one-slot weights take 32 bytes per lane: no runs there
print(runs > 0 or lanes == 32, saved >= 2 or lanes == 32, n_wl <= loaded - saved, n_wl > 0)
PYEOF
		assert_output 'True True True True'
	done
}

@test "int8: bit-identical to ir-run on the Tpu IR of every stage" {
	run tpu-sim "$FX/int8.tmodel" -i "$TINY/input.npz" -o "$T/sim.npz"
	assert_success
	run npz_names "$T/sim.npz"
	assert_output 'logits:float32:[1, 10]'
	local s
	for s in lowered reordered grouped addressed; do
		ir-run "$FX/int8.$s.tpu" -i "$TINY/input.npz" -o "$T/ref.$s.npz"
		cmp "$T/sim.npz" "$T/ref.$s.npz"
	done
}

@test "--dump-all: every layer bit-identical to ir-run --dump-all" {
	tpu-sim -q "$FX/int8.tmodel" -i "$TINY/input.npz" -o "$T/sim.npz" --dump-all
	ir-run "$FX/int8.addressed.tpu" -i "$TINY/input.npz" -o "$T/ref.npz" --dump-all
	run $PY -c 'import sys, numpy as np
a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
print(a.files == b.files, len(a.files) > 10, all(np.array_equal(a[k], b[k]) for k in b.files))' "$T/sim.npz" "$T/ref.npz"
	assert_output 'True True True'
	run -2 tpu-sim "$FX/int8.tmodel" -t --dump-all
}

@test "int8 on tpu-b: bit-identical too" {
	tpu-sim -q "$FX/b.int8.tmodel" -i "$TINY/input.npz" -o "$T/sim.npz"
	ir-run "$FX/b.int8.lowered.tpu" -i "$TINY/input.npz" -o "$T/ref.npz"
	cmp "$T/sim.npz" "$T/ref.npz"
}

@test "f32: the reference output within rounding" {
	tpu-sim -q "$FX/f32.tmodel" -i "$TINY/input.npz" -o "$T/sim.npz"
	run npz_cosine "$T/sim.npz" "$TINY/ref.npz"
	assert_success
	$PY -c "import sys; sys.exit(0 if $output >= 0.99999 else 1)" || fail "cosine $output"
	ir-run "$FX/f32.lowered.tpu" -i "$TINY/input.npz" -o "$T/ref.npz"
	run npz_cosine "$T/sim.npz" "$T/ref.npz"
	$PY -c "import sys; sys.exit(0 if $output >= 0.999999 else 1)" || fail "cosine $output"
}

@test "statistics on stderr; -q is quiet; -p profiles every layer" {
	run tpu-sim "$FX/int8.tmodel" -i "$TINY/input.npz" -o /dev/null
	assert_success
	assert_line --index 0 --regexp '^tpu-sim: tpu-a int8: [0-9]+ cycles, [0-9.]+ ms at 1 GHz$'
	assert_line --index 1 --regexp '^tpu-sim: engines busy: dma [0-9]+ cycles, compute [0-9]+ cycles$'
	assert_line --index 2 --regexp '^tpu-sim: DDR [0-9.]+ KiB moved \(minimum [0-9.]+ KiB\), [0-9.e-]+ GMAC, MAC utilisation [0-9.]+%$'
	assert_line --index 3 --regexp '^tpu-sim: roofline bound [0-9]+ cycles \((memory|compute)\), efficiency [0-9.]+%$'
	run tpu-sim -q "$FX/int8.tmodel" -i "$TINY/input.npz" -o /dev/null
	assert_success
	assert_output ''
	run tpu-sim -q -p "$FX/int8.tmodel" -i "$TINY/input.npz" -o /dev/null
	assert_line --index 0 --regexp '^layer +type +slices +cycles +start +end +dma +macs +bound +eff +name$'
	run irq "$FX/int8.addressed.tpu" 'len(O)'
	local n=$output
	run tpu-sim -q -p "$FX/int8.tmodel" -i "$TINY/input.npz" -o /dev/null
	[ "$(grep -c '^[0-9]' <<<"$output")" -eq "$n" ]
}

@test "-p: each layer's MACs, its own roofline bound and efficiency" {
	run tpu-sim -p "$FX/int8.tmodel" -t
	assert_success
	# The layers' MACs add up to the model's; each layer's bound is
	# max(ceil(MACs / peak), ceil(its own DDR bytes / ddr_bpc)) with the
	# peak taken from the summary (MACs / (cycles * utilisation)), and its
	# efficiency is the bound over its busier engine's cycles.
	run $PY -c 'import sys, re, math
lines = sys.stdin.read().splitlines()
cyc = int(re.search(r"int8: (\d+) cycles", lines[0]).group(1))
m = re.search(r"([0-9.e+-]+) GMAC, MAC utilisation ([0-9.]+)%", lines[2])
rows = [l.split() for l in lines if re.match(r"^\d", l)]
macs = sum(int(r[7]) for r in rows)
peak = 2 ** round(math.log2(macs / (cyc * float(m.group(2)) / 100)))   # a power of two
ok = abs(macs / 1e9 - float(m.group(1))) <= 1e-3 * macs / 1e9 and macs > 0
convs = [r for r in rows if r[1] == "Conv"]
for r in rows:
    cycles, dma, mac, bound, eff = int(r[3]), int(r[6]), int(r[7]), int(r[8]), float(r[9][:-1])
    ok &= bound >= math.ceil(mac / peak) and (mac == 0 or r[1] in ("Conv", "Gemm", "MatMul"))
    busy = max(cycles, dma)
    ok &= abs(eff - (100 * bound / busy if busy else 0)) < 0.01 and eff <= 100
print(ok, len(convs) > 0, all(int(r[7]) > 0 for r in convs))' <<<"$output"
	assert_output 'True True True'
}

@test "--trace: the engines' commands as valid Chrome trace JSON" {
	tpu-sim "$FX/int8.tmodel" -i "$TINY/input.npz" -o "$T/sim.npz" --trace "$T/t.json" 2>"$T/err"
	cmp "$T/sim.npz" <(tpu-sim -q "$FX/int8.tmodel" -i "$TINY/input.npz" -o -)
	run $PY - "$T/t.json" "$T/err" "$FX/int8.tmodel" <<'PYEOF'
import json, re, sys
doc = json.load(open(sys.argv[1]))
err = open(sys.argv[2]).read()
cycles = int(re.search(r"int8: (\d+) cycles", err).group(1))
dma_busy, cmp_busy = map(int, re.search(r"dma (\d+) cycles, compute (\d+) cycles", err).groups())
ev = doc["traceEvents"]
meta = {e["tid"]: e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
x = [e for e in ev if e["ph"] == "X"]
ok = all(set(e) >= {"name", "ph", "ts", "dur", "pid", "tid"} for e in x)
ok &= all(isinstance(e["ts"], (int, float)) and e["dur"] >= 0 for e in x)
ok &= all(": " in e["name"] and not e["name"].startswith("?") for e in x)
by = {t: sorted((e for e in x if e["tid"] == t), key=lambda e: e["ts"]) for t in meta}
# one engine's commands never overlap, and each engine's durations sum
# to its busy cycles (1 GHz: 1 cycle = 0.001 us)
for t, es in by.items():
    ok &= all(a["args"]["start"] + a["args"]["cycles"] <= b["args"]["start"] for a, b in zip(es, es[1:]))
busy = {meta[t]: sum(e["args"]["cycles"] for e in es) for t, es in by.items()}
dur = {meta[t]: sum(e["dur"] for e in es) for t, es in by.items()}
end = max(e["args"]["start"] + e["args"]["cycles"] for e in x)
ok &= abs(max(e["ts"] + e["dur"] for e in x) - cycles / 1000) < 1e-3
ok &= abs(dur["DMA"] - dma_busy / 1000) < 1e-3 and abs(dur["compute"] - cmp_busy / 1000) < 1e-3
kinds = {e["name"].split(": ")[1] for e in x}
print(sorted(meta.values()), ok, busy == {"DMA": dma_busy, "compute": cmp_busy}, end == cycles,
      {"load", "store", "Conv"} <= kinds)
PYEOF
	assert_output "['DMA', 'compute'] True True True True"
	# as many slices as commands; timing only gives the same trace
	local want
	want=$(tmodel_dump "$FX/int8.tmodel" | sed -n '1s/.* dma=\([0-9]*\) cmp=\([0-9]*\) .*/\1 + \2/p')
	want=$((want))
	[ "$want" -gt 2 ]
	run $PY -c 'import json, sys; print(sum(e["ph"] == "X" for e in json.load(open(sys.argv[1]))["traceEvents"]))' "$T/t.json"
	assert_output "$want"
	tpu-sim -q "$FX/int8.tmodel" -t --trace "$T/t2.json"
	cmp "$T/t.json" "$T/t2.json"
}

@test "--trace: a bad path is one line, and no output is left" {
	run -1 tpu-sim "$FX/int8.tmodel" -i "$TINY/input.npz" -o "$T/o.npz" --trace "$T/no/t.json"
	assert_output "tpu-sim: cannot create '$T/no/t.json': No such file or directory"
	[ ! -e "$T/o.npz" ]
	run -1 tpu-sim "$FX/int8.tmodel" -i "$TINY/input.npz" -o "$T/no/o.npz" --trace "$T/t.json"
	[ "${#lines[@]}" -eq 1 ]
	[ ! -e "$T/t.json" ]
	run -1 tpu-sim "$T/nope.tmodel" -t --trace "$T/t.json"
	[ ! -e "$T/t.json" ]
	[ -z "$(ls "$T")" ]
	run -2 tpu-sim "$FX/int8.tmodel" -t --trace -
	assert_output --partial 'the trace needs a file of its own'
	run -2 tpu-sim "$FX/int8.tmodel" -i "$TINY/input.npz" -o "$T/x" --trace "$T/x"
	run -2 tpu-sim "$FX/int8.tmodel" -t --trace
}

@test "timing only gives the cycles of the full run, without an input" {
	run tpu-sim "$FX/int8.tmodel" -i "$TINY/input.npz" -o /dev/null
	local full=${lines[0]}
	run tpu-sim "$FX/int8.tmodel" -t
	assert_success
	assert_line --index 0 "$full"
}

# tmodel_patch IN OUT CODE: OUT is IN after the Python CODE changed the
# description `meta`, the streams `dma` and `cmp` or the coefficients
# `coeff` (bytearrays) as formats/tpuc-tmodel.5 lays them out; the file is
# laid out again, then the header fields in the dict `hdr` (the page's
# names; a name as the value: that field's value) override the ones
# computed.
tmodel_patch() {
	$PY - "$@" <<'PYEOF'
import struct, sys, msgpack
src, dst, code = sys.argv[1:4]
b = open(src, "rb").read()
names = ["meta_offset", "meta_length", "dma_offset", "n_dma", "cmp_offset", "n_cmp",
         "coeff_offset", "coeff_length"]
h = dict(zip(names, struct.unpack_from("<8Q", b, 16)))
meta = msgpack.unpackb(b[h["meta_offset"]:h["meta_offset"] + h["meta_length"]],
                       strict_map_key=False)
dma = bytearray(b[h["dma_offset"]:h["dma_offset"] + 32 * h["n_dma"]])
cmp = bytearray(b[h["cmp_offset"]:h["cmp_offset"] + 96 * h["n_cmp"]])
coeff = bytearray(b[h["coeff_offset"]:h["coeff_offset"] + h["coeff_length"]])
hdr = {}
exec(code)
mb = msgpack.packb(meta)
al = lambda n: (n + 63) // 64 * 64
v = {"meta_offset": 96, "meta_length": len(mb)}
v["dma_offset"] = al(96 + len(mb))
v["cmp_offset"] = al(v["dma_offset"] + len(dma))
v["coeff_offset"] = al(v["cmp_offset"] + len(cmp))
v.update(n_dma=len(dma) // 32, n_cmp=len(cmp) // 96, coeff_length=len(coeff))
f = bytearray(al(v["coeff_offset"] + len(coeff)))
f[:16] = b[:16]
for k, o, d in (("meta", 96, mb), ("dma", v["dma_offset"], dma),
                ("cmp", v["cmp_offset"], cmp), ("coeff", v["coeff_offset"], coeff)):
    f[o:o + len(d)] = d
v.update({k: v[x] if isinstance(x, str) else x for k, x in hdr.items()})
struct.pack_into("<8Q", f, 16, *[v[n] for n in names])
open(dst, "wb").write(f)
PYEOF
}

# sim_refuses MODEL MESSAGE: tpu-sim exits 1 with the one line
# "tpu-sim: 'MODEL': MESSAGE" and writes no output.
sim_refuses() {
	run -1 tpu-sim "$1" -i "$TINY/input.npz" -o "$T/o.npz"
	assert_output "tpu-sim: '$1': $2"
	[ ! -e "$T/o.npz" ]
}

@test "the model from stdin" {
	tpu-sim -q - -i "$TINY/input.npz" -o "$T/a.npz" <"$FX/int8.tmodel"
	tpu-sim -q "$FX/int8.tmodel" -i "$TINY/input.npz" -o "$T/b.npz"
	cmp "$T/a.npz" "$T/b.npz"
}

@test "missing, truncated or foreign model files" {
	run -1 tpu-sim "$T/nope.tmodel" -i "$TINY/input.npz" -o "$T/o.npz"
	assert_output "tpu-sim: cannot open '$T/nope.tmodel': No such file or directory"
	truncate_file "$FX/int8.tmodel" "$T/t.tmodel" 500
	run -1 tpu-sim "$T/t.tmodel" -i "$TINY/input.npz" -o "$T/o.npz"
	assert_output "tpu-sim: '$T/t.tmodel': truncated tmodel (500 bytes)"
	truncate_file "$FX/int8.tmodel" "$T/t.tmodel" 50
	run -1 tpu-sim "$T/t.tmodel" -i "$TINY/input.npz" -o "$T/o.npz"
	assert_output "tpu-sim: '$T/t.tmodel': truncated tmodel (50 bytes)"
	run -1 tpu-sim "$FX/int8.addressed.tpu" -i "$TINY/input.npz" -o "$T/o.npz"
	assert_output "tpu-sim: '$FX/int8.addressed.tpu': not a tmodel file (bad magic) (tpuc IR: run it with ir-run, or build a .tmodel with weight-reorder | layergroup | addr-assign | codegen)"
	: >"$T/empty"
	run -1 tpu-sim "$T/empty" -t
	assert_output "tpu-sim: '$T/empty': empty input, expected a tmodel file"
	[ ! -e "$T/o.npz" ]
}

@test "a corrupt command is refused" {
	# Set a reserved opcode in the first DMA command (formats/tpuc-tmodel.5).
	cp "$FX/int8.tmodel" "$T/c.tmodel"
	local off
	off=$($PY -c 'import struct, sys; print(struct.unpack_from("<Q", open(sys.argv[1], "rb").read(), 32)[0])' "$T/c.tmodel")
	printf '\x0f' | dd of="$T/c.tmodel" bs=1 seek="$off" conv=notrunc 2>/dev/null
	run -1 tpu-sim "$T/c.tmodel" -t
	assert_output "tpu-sim: '$T/c.tmodel': corrupt tmodel: dma command 1: unknown opcode 15"
}

@test "the same model laid out again runs" {
	tmodel_patch "$FX/int8.tmodel" "$T/m.tmodel" 'pass'
	tpu-sim -q "$T/m.tmodel" -i "$TINY/input.npz" -o "$T/a.npz"
	tpu-sim -q "$FX/int8.tmodel" -i "$TINY/input.npz" -o "$T/b.npz"
	cmp "$T/a.npz" "$T/b.npz"
}

@test "sections that overlap are refused" {
	# The coefficients would be read from the DMA stream.
	tmodel_patch "$FX/int8.tmodel" "$T/m.tmodel" 'hdr["coeff_offset"] = "dma_offset"'
	sim_refuses "$T/m.tmodel" "corrupt tmodel: sections overlap or are out of order"
	tmodel_patch "$FX/int8.tmodel" "$T/m.tmodel" 'hdr["meta_offset"] = 0'
	sim_refuses "$T/m.tmodel" "corrupt tmodel: sections overlap or are out of order"
}

@test "huge or inconsistent DDR regions are refused before any allocation" {
	tmodel_patch "$FX/int8.tmodel" "$T/m.tmodel" 'meta["coeff_addr"] = 1 << 40'
	sim_refuses "$T/m.tmodel" "corrupt tmodel: weight 'block/0.conv.weight' at address 0, its data at offset 0 of the coefficients at 1099511627776"
	tmodel_patch "$FX/int8.tmodel" "$T/m.tmodel" 'meta["neuron_bytes"] = (1 << 63) - 1'
	sim_refuses "$T/m.tmodel" "corrupt tmodel: a DDR region lies past 1099511627776 bytes"
	tmodel_patch "$FX/int8.tmodel" "$T/m.tmodel" 'meta["coeff_bytes"] += 64'
	# the coefficients' size, as addr-assign laid them out
	local cb
	cb=$(irq "$FX/int8.addressed.tpu" 'g["coeff_bytes"]')
	sim_refuses "$T/m.tmodel" "corrupt tmodel: coeff_bytes $((cb + 64)) in the description, $cb in the header"
	# Consistent, but 1 TiB up: more than the chip's 4 GiB.
	tmodel_patch "$FX/int8.tmodel" "$T/m.tmodel" '
meta["coeff_addr"] = 1 << 40
for t in meta["tensors"]:
    if "weight" in t:
        t["addr"] += 1 << 40'
	sim_refuses "$T/m.tmodel" "the model's DDR regions end at $(((1 << 40) + cb)) bytes, past the 4294967296 of chip tpu-a"
	run -1 tpu-sim "$T/m.tmodel" -t
	assert_output "tpu-sim: '$T/m.tmodel': the model's DDR regions end at $(((1 << 40) + cb)) bytes, past the 4294967296 of chip tpu-a"
	# An activation outside the activation region.
	tmodel_patch "$FX/int8.tmodel" "$T/m.tmodel" 'meta["tensors"][0]["addr"] = (1 << 63) - 1'
	sim_refuses "$T/m.tmodel" "corrupt tmodel: tensor 'input' (12288 bytes at 9223372036854775807) lies outside the activation region"
}

@test "a requantisation shift or multiplier out of range is refused, naming the layer" {
	# Channel 0 of stem/Conv's coefficients [C,3]: bias, multiplier, shift.
	tmodel_patch "$FX/int8.tmodel" "$T/m.tmodel" '
w = next(t for t in meta["tensors"] if t["name"] == "stem/Conv_coeff")["weight"]
struct.pack_into("<i", coeff, w[0] + 8, 99)'
	sim_refuses "$T/m.tmodel" "corrupt tmodel: layer 'stem/Conv' (Conv): requantisation shift 99 of channel 0 outside [0, 62]"
	tmodel_patch "$FX/int8.tmodel" "$T/m.tmodel" '
w = next(t for t in meta["tensors"] if t["name"] == "head/Gemm_coeff")["weight"]
struct.pack_into("<i", coeff, w[0] + 12 * 9 + 4, -5)'
	sim_refuses "$T/m.tmodel" "corrupt tmodel: layer 'head/Gemm' (Gemm): requantisation multiplier -5 of channel 9 is negative"
}

@test "a command addressing memory outside its tensor or local memory is refused" {
	# The first DMA command that loads i32 coefficients, moved by one
	# element: its block now runs past the tensor's end.
	tmodel_patch "$FX/int8.tmodel" "$T/m.tmodel" '
i = next(i for i in range(len(dma) // 32) if dma[32 * i] >> 4 == 6)
struct.pack_into("<I", dma, 32 * i + 8, struct.unpack_from("<I", dma, 32 * i + 8)[0] + 4)'
	run -1 tpu-sim "$T/m.tmodel" -i "$TINY/input.npz" -o "$T/o.npz"
	assert_output --regexp "^tpu-sim: '$T/m.tmodel': dma command [0-9]+: DDR \[[0-9]+, [0-9]+\) lies in no i32 tensor\$"
	[ ! -e "$T/o.npz" ]
	# DMA 1 from the top of DDR.
	tmodel_patch "$FX/int8.tmodel" "$T/m.tmodel" 'struct.pack_into("<I", dma, 8, 0xfffffff0)'
	# (the activations' 12328 bytes after the coefficients)
	local cb
	cb=$(irq "$FX/int8.addressed.tpu" 'g["coeff_bytes"]')
	sim_refuses "$T/m.tmodel" "dma command 1 addresses DDR past $((cb + 12328)) bytes"
	# Operand 0 of compute command 1 past local memory.
	tmodel_patch "$FX/int8.tmodel" "$T/m.tmodel" 'struct.pack_into("<I", cmp, 24, 0x7ffffff0)'
	sim_refuses "$T/m.tmodel" "compute command 1: operand 0 lies outside local memory"
}

@test "a sliced command whose input rows miss those its result rows need is refused" {
	# The CI fuzzer's tmodel (tests/fuzz/tmodel): a Cast computing rows
	# 0..8 from input rows 0..0 read past its input slice.
	$PY -c 'import numpy as np; np.savez("'"$T"'/z.npz", x=np.zeros((1, 3, 8, 8), np.float32))'
	run -1 tpu-sim "$REPO/tests/fuzz/tmodel/tmodel-crash-702ea122ea40fed4c4571673def17d9d42cb3e15" \
		-i "$T/z.npz" -o "$T/o.npz"
	assert_output --regexp "^tpu-sim: '.*': compute command 1: input rows 0\.\.0 of layer 'x_quant' do not hold rows 0\.\.8 its result rows need\$"
	[ ! -e "$T/o.npz" ]
}

@test "a layer whose stored result shape its inputs do not give is refused" {
	tmodel_patch "$FX/int8.tmodel" "$T/m.tmodel" '
t = next(t for t in meta["tensors"] if t["name"] == "block/Relu_output_0")
t["shape"][3] = 127'
	run -1 tpu-sim "$T/m.tmodel" -i "$TINY/input.npz" -o "$T/o.npz"
	assert_output --regexp "^tpu-sim: '$T/m.tmodel': corrupt tmodel: layer table: op 'block/Add' \(Add\): .*\[1,16,16,127\]"
	[ "${#lines[@]}" -eq 1 ]
	[ ! -e "$T/o.npz" ]
	# A kernel larger than the weight (and the input) it runs over.
	tmodel_patch "$FX/int8.tmodel" "$T/m.tmodel" '
next(l for l in meta["layers"] if l["name"] == "stem/Conv")["attrs"]["kernel_shape"] = [3000, 3000]'
	run -1 tpu-sim "$T/m.tmodel" -i "$TINY/input.npz" -o "$T/o.npz"
	assert_output --regexp "^tpu-sim: '$T/m.tmodel': corrupt tmodel: layer table: op 'stem/Conv' \(Conv\): "
	[ "${#lines[@]}" -eq 1 ]
	[ ! -e "$T/o.npz" ]
}

@test "inputs missing or misshapen leave no output" {
	$PY -c 'import numpy as np; np.savez("'"$T"'/wrong.npz", other=np.zeros((1, 3, 32, 32), np.float32))'
	run -1 tpu-sim "$FX/int8.tmodel" -i "$T/wrong.npz" -o "$T/o.npz"
	assert_output "tpu-sim: '$T/wrong.npz': no array for graph input 'input' (the file holds 'other')"
	$PY -c 'import numpy as np; np.savez("'"$T"'/shape.npz", input=np.zeros((1, 3, 16, 32), np.float32))'
	run -1 tpu-sim "$FX/int8.tmodel" -i "$T/shape.npz" -o "$T/o.npz"
	assert_output "tpu-sim: '$T/shape.npz': array 'input' has shape [1,3,16,32], the graph input [1,3,32,32]"
	run -1 tpu-sim "$FX/int8.tmodel" -i "$T/nope.npz" -o "$T/o.npz"
	assert_output --partial "tpu-sim: cannot open '$T/nope.npz'"
	[ ! -e "$T/o.npz" ]
}

@test "usage errors exit 2" {
	run -2 tpu-sim "$FX/int8.tmodel"
	assert_output --partial 'usage: tpu-sim'
	run -2 tpu-sim "$FX/int8.tmodel" -i "$TINY/input.npz" -x
	assert_line --index 0 "tpu-sim: unknown option '-x'"
	run -2 tpu-sim "$FX/int8.tmodel" -i
	assert_line --index 0 "tpu-sim: option '-i' needs a file name"
	run -2 tpu-sim "$FX/int8.tmodel" -t -o "$T/o.npz"
	[ ! -e "$T/o.npz" ]
	run -2 tpu-sim a b -t
}

# run_model NAME MODE: DIR/sim.npz from the whole pipeline and, for int8,
# DIR/ref.npz from ir-run on the lowered Tpu IR.
run_model() {
	local m=$1 mode=$2 d=$T/$1.$2
	mkdir -p "$d"
	onnx2top "$MODELS/$m/model.onnx" | top-opt -o "$d/c.top"
	if [ "$mode" = int8 ]; then
		calibrate "$d/c.top" -d "$MODELS/$m/calib.npz" -n 4 -o "$d/cali" 2>/dev/null
		top2tpu "$d/c.top" --chip tpu-a --mode int8 --calib "$d/cali" -o "$d/l.tpu"
		ir-run "$d/l.tpu" -i "$MODELS/$m/input.npz" -o "$d/ref.npz"
	else
		top2tpu "$d/c.top" --chip tpu-a --mode f32 -o "$d/l.tpu"
	fi
	weight-reorder "$d/l.tpu" | layergroup | addr-assign -q | codegen -o "$d/m.tmodel"
	tpu-sim "$d/m.tmodel" -i "$MODELS/$m/input.npz" -o "$d/sim.npz" 2>"$d/stats"
}

@test "resnet18 int8: bit-identical to ir-run, in seconds" {
	need_models resnet18
	run_model resnet18 int8
	cmp "$T/resnet18.int8/sim.npz" "$T/resnet18.int8/ref.npz"
	local t0=$SECONDS
	tpu-sim -q "$T/resnet18.int8/m.tmodel" -i "$MODELS/resnet18/input.npz" -o /dev/null
	[ $((SECONDS - t0)) -lt 20 ]
}

@test "resnet18 f32: reference output, cosine >= 0.99999" {
	need_models resnet18
	run_model resnet18 f32
	run npz_cosine "$T/resnet18.f32/sim.npz" "$MODELS/resnet18/ref.npz"
	$PY -c "import sys; sys.exit(0 if $output >= 0.99999 else 1)" || fail "cosine $output"
}

@test "mobilenet_v2 int8: bit-identical to ir-run" {
	need_models mobilenet_v2
	run_model mobilenet_v2 int8
	cmp "$T/mobilenet_v2.int8/sim.npz" "$T/mobilenet_v2.int8/ref.npz"
}

@test "mobilenet_v2 f32: reference output, cosine >= 0.99999" {
	need_models mobilenet_v2
	run_model mobilenet_v2 f32
	run npz_cosine "$T/mobilenet_v2.f32/sim.npz" "$MODELS/mobilenet_v2/ref.npz"
	$PY -c "import sys; sys.exit(0 if $output >= 0.99999 else 1)" || fail "cosine $output"
}
