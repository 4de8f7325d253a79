# backend.bash - fixtures shared by the back-end bats files (`load backend`
# after `load helpers`): examples/tiny_cnn through the front half of the
# pipeline, and small readers for what the back end writes.

TINY="$BATS_TEST_DIRNAME/../examples/tiny_cnn"

# backend_fixtures DIR: DIR/{f32,int8}.lowered.tpu (tpu-a), and DIR/b.int8.lowered.tpu
# (tpu-b), from tiny_cnn; made once per bats file.
backend_fixtures() {
	local d=$1
	mkdir -p "$d"
	[ -f "$d/int8.lowered.tpu" ] && return 0
	onnx2top "$TINY/model.onnx" -o "$d/o.top" &&
	top-opt "$d/o.top" -o "$d/c.top" &&
	calibrate "$d/c.top" -d "$TINY/calib.npz" -o "$d/cali" 2>/dev/null &&
	top2tpu "$d/c.top" --chip tpu-a --mode f32 -o "$d/f32.lowered.tpu" &&
	top2tpu "$d/c.top" --chip tpu-a --mode int8 --calib "$d/cali" -o "$d/int8.lowered.tpu" &&
	top2tpu "$d/c.top" --chip tpu-b --mode int8 --calib "$d/cali" -o "$d/b.int8.lowered.tpu"
}

# backend_stages DIR MODE: DIR/MODE.{reordered,grouped,addressed}.tpu and
# DIR/MODE.tmodel from DIR/MODE.lowered.tpu.
backend_stages() {
	local d=$1 m=$2
	[ -f "$d/$m.tmodel" ] && return 0
	weight-reorder "$d/$m.lowered.tpu" -o "$d/$m.reordered.tpu" &&
	layergroup "$d/$m.reordered.tpu" -o "$d/$m.grouped.tpu" &&
	addr-assign -q "$d/$m.grouped.tpu" -o "$d/$m.addressed.tpu" &&
	codegen "$d/$m.addressed.tpu" -o "$d/$m.tmodel"
}

# irq FILE EXPR: evaluate a Python expression over the IR's msgpack graph
# `g` (formats/tpuc-ir.5), tensors `T`, ops `O`; prints the result.
irq() {
	$PY -c 'import struct, sys, msgpack
b = open(sys.argv[1], "rb").read()
glen = struct.unpack_from("<Q", b, 16)[0]
g = msgpack.unpackb(b[64:64 + glen], strict_map_key=False)
T, O = g["tensors"], g["ops"]
print(eval(sys.argv[2]))' "$@"
}

# tmodel_dump FILE: the model as text (tests/tmodel_reader.py).
tmodel_dump() {
	$PY "$BATS_TEST_DIRNAME/tmodel_reader.py" "$@"
}

# truncate_file IN OUT BYTES: the first BYTES bytes of IN.
truncate_file() {
	head -c "$3" "$1" >"$2"
}
