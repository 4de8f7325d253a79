#!/usr/bin/python3
"""ir_reader.py - a second reader of the tpuc IR, written from
formats/tpuc-ir.5 alone, to prove the page is enough.

    ir_reader.py FILE.top|FILE.tpu [MODEL.onnx]

Prints the header, the tensors and the ops, and checks the structural rules
of the page.  With MODEL.onnx, also checks that every initializer of the
model is in the IR under its name with equal shape, type and bytes (or was
folded into the attributes of the ops that use it).  Exit 0
when every check holds, 1 otherwise.
"""
import struct
import sys

import msgpack
import numpy as np

MAGIC = b"TPUC-IR\0"
DTYPES = {"f32": "<f4", "f16": "<f2", "bf16": "<u2", "i8": "i1", "u8": "u1",
          "i16": "<i2", "i32": "<i4", "i64": "<i8", "bool": "u1"}
STAGES = {"origin": "top", "canonical": "top", "lowered": "tpu",
          "reordered": "tpu", "grouped": "tpu", "addressed": "tpu"}


class Bad(Exception):
    pass


def read_ir(path):
    """Return (header dict, graph map, {tensor index: numpy array})."""
    with open(path, "rb") as f:
        b = f.read()
    if len(b) < 64 or b[:8] != MAGIC:
        raise Bad("not a tpuc IR file (bad magic)")
    version, flags, glen, doff, dlen = struct.unpack_from("<IIQQQ", b, 8)
    if version != 1:
        raise Bad("IR format version %d, this reader knows 1" % version)
    if 64 + glen > len(b) or doff < 64 + glen or doff % 64 or doff + dlen > len(b):
        raise Bad("truncated IR file (%d bytes)" % len(b))
    # One map that spans all graph_length bytes: unpackb refuses extra data.
    try:
        g = msgpack.unpackb(b[64:64 + glen], raw=False, strict_map_key=False)
    except Exception as e:
        raise Bad("graph does not decode: %s" % e)
    if not isinstance(g, dict):
        raise Bad("graph is not a map")
    for k in ("dialect", "stage", "tensors", "ops", "inputs", "outputs"):
        if k not in g:
            raise Bad("graph lacks '%s'" % k)
    if STAGES.get(g["stage"]) != g["dialect"]:
        raise Bad("stage '%s' in dialect '%s'" % (g["stage"], g["dialect"]))
    data = {}
    for i, t in enumerate(g["tensors"]):
        dt, shape = t["dtype"], t["shape"]
        if dt not in DTYPES or len(shape) > 8 or any(d < 0 for d in shape):
            raise Bad("tensor '%s': bad dtype or shape" % t["name"])
        if "data" in t:
            off, n = t["data"]
            size = np.dtype(DTYPES[dt]).itemsize
            if off % 64 or off + n > dlen or n != int(np.prod(shape, dtype=np.int64)) * size:
                raise Bad("tensor '%s': bad data [%d, %d]" % (t["name"], off, n))
            data[i] = np.frombuffer(b, DTYPES[dt], n // size, doff + off).reshape(shape)
    return {"version": version, "flags": flags, "graph_length": glen,
            "data_offset": doff, "data_length": dlen}, g, data


def check_graph(g, data):
    """The validity rules of the page; raises Bad on the first broken one."""
    nt = len(g["tensors"])
    names = [t["name"] for t in g["tensors"]]
    if len(set(names)) != nt:
        raise Bad("tensor names are not unique")
    made = [False] * nt
    for i in list(data) + list(g["inputs"]):
        if not 0 <= i < nt or made[i]:
            raise Bad("tensor %d: bad index or produced twice" % i)
        made[i] = True
    for op in g["ops"]:
        for i in op["in"]:
            if not -1 <= i < nt or (i >= 0 and not made[i]):
                raise Bad("op '%s': input %d out of range or not yet produced" % (op["name"], i))
        for i in op["out"]:
            if not 0 <= i < nt or made[i]:
                raise Bad("op '%s': output %d out of range or produced twice" % (op["name"], i))
            made[i] = True
    for i in g["outputs"]:
        if not 0 <= i < nt or not made[i]:
            raise Bad("graph output %d is never produced" % i)


def compare_onnx(g, data, model_path):
    """Every initializer of the model, by name, equals the IR tensor's data.
    Returns the number of failures (each printed)."""
    import onnx
    from onnx import numpy_helper
    m = onnx.load(model_path)
    want = {1: "f32", 10: "f16", 16: "bf16", 3: "i8", 2: "u8", 5: "i16",
            6: "i32", 7: "i64", 9: "bool"}
    index = {t["name"]: i for i, t in enumerate(g["tensors"])}
    ops = {op["name"]: op for op in g["ops"]}
    bad = folded = 0
    for init in m.graph.initializer:
        i = index.get(init.name)
        if i is None or i not in data:
            # onnx2top may fold a constant operand into its op's attributes
            # (Clip min and max, Reshape shape): every consumer's op is then
            # in the IR under the node's name, without that input.
            users = [n.name for n in m.graph.node if init.name in n.input]
            if i is None and users and all(u in ops for u in users):
                print("initializer %s: folded into %s" % (init.name, ", ".join(users)))
                folded += 1
            else:
                print("initializer %s: not in the IR with data" % init.name)
                bad += 1
            continue
        t, a = g["tensors"][i], numpy_helper.to_array(init)
        ref = np.ascontiguousarray(a).astype(DTYPES[t["dtype"]]) if want.get(init.data_type) == t["dtype"] else None
        if ref is None or list(a.shape) != t["shape"] or ref.tobytes() != data[i].tobytes():
            print("initializer %s: differs (onnx %s %s, IR %s %s)" %
                  (init.name, a.dtype, list(a.shape), t["dtype"], t["shape"]))
            bad += 1
    print("%d initializers: %d equal, %d folded into attributes, %d differ"
          % (len(m.graph.initializer), len(m.graph.initializer) - folded - bad, folded, bad))
    return bad


def attr_str(v):
    if isinstance(v, list):
        return "[" + ",".join("%g" % x if isinstance(x, float) else str(x) for x in v) + "]"
    return "%g" % v if isinstance(v, float) else str(v)


def main():
    if len(sys.argv) not in (2, 3):
        sys.stderr.write("usage: ir_reader.py FILE.top|FILE.tpu [MODEL.onnx]\n")
        return 2
    path = sys.argv[1]
    try:
        hdr, g, data = read_ir(path)
        check_graph(g, data)
    except (Bad, KeyError, TypeError, ValueError) as e:
        sys.stderr.write("ir_reader.py: '%s': %s\n" % (path, e))
        return 1
    ts = g["tensors"]
    print("%s: %s IR, stage %s, version %d, graph %d bytes, data %d bytes at %d" %
          (path, g["dialect"], g["stage"], hdr["version"], hdr["graph_length"],
           hdr["data_length"], hdr["data_offset"]))
    print("tensors %d (%d with data), ops %d, inputs %s, outputs %s" %
          (len(ts), len(data), len(g["ops"]), [ts[i]["name"] for i in g["inputs"]],
           [ts[i]["name"] for i in g["outputs"]]))
    for k, op in enumerate(g["ops"]):
        ins = ",".join(ts[i]["name"] if i >= 0 else "-" for i in op["in"])
        outs = ",".join(ts[i]["name"] for i in op["out"])
        attrs = " ".join("%s=%s" % (n, attr_str(v)) for n, v in sorted(op["attrs"].items()))
        print("%d %s %s (%s) -> (%s) %s" % (k, op["type"], op["name"], ins, outs, attrs))
    if len(sys.argv) == 3:
        return 1 if compare_onnx(g, data, sys.argv[2]) else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
