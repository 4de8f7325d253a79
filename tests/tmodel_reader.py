#!/usr/bin/python3
"""tmodel_reader.py - a second reader of .tmodel files, written from
formats/tpuc-tmodel.5 and formats/tpuc-isa.5 alone, to prove the pages are
enough.

    tmodel_reader.py FILE.tmodel

Checks the header, the sections, the description and every command as the
pages say, then prints one line per item:
  model NAME CHIP MODE dma=N cmp=N coeff=BYTES
  input|output NAME DTYPE SHAPE addr=A
  layer INDEX TYPE NAME
  dma ID LOAD|STORE wait=C ddr=A lmem=L n,c,h,w
  cmp ID TYPE wait=D layer=L rows=R0+R in=I0+I sliced=HEX ch=C0+C chsplit=HEX  # LOC
Exit 0 when every check holds, 1 with a message otherwise.
"""
import struct
import sys

import msgpack

DTYPES = ["f32", "f16", "bf16", "i8", "u8", "i16", "i32", "i64", "bool"]


def field(w, at, bits):
    return (w >> at) & ((1 << bits) - 1)


def main():
    b = open(sys.argv[1], "rb").read()
    assert len(b) >= 96 and b[:8] == b"TPUCTMDL", "not a tmodel"
    ver, flags, mo, ml, do, nd, co, nc, fo, fl = struct.unpack_from("<IIQQQQQQQQ", b, 8)
    assert ver == 1 and flags == 0 and b[80:96] == bytes(16), "header"
    assert mo == 96 and do % 64 == 0 and co % 64 == 0 and fo % 64 == 0, "alignment"
    assert mo + ml <= do and do + 32 * nd <= co and co + 96 * nc <= fo, "section order"
    assert len(b) == (fo + fl + 63) // 64 * 64, "file length"
    meta = msgpack.unpackb(b[mo:mo + ml], strict_map_key=False)
    T, L = meta["tensors"], meta["layers"]
    assert meta["version"] == 1 and meta["coeff_bytes"] == fl
    assert len(meta["locs"]) == nc
    print("model", meta["name"], meta["chip"], meta["mode"], "dma=%d" % nd, "cmp=%d" % nc,
          "coeff=%d" % fl)
    for kind in ("inputs", "outputs"):
        for io in meta[kind]:
            t = T[io["tensor"]]
            assert t["name"] == io["name"] and t["addr"] == io["addr"]
            assert t["shape"] == io["shape"] and t["dtype"] == io["dtype"]
            print(kind[:-1], io["name"], io["dtype"], io["shape"], "addr=%d" % io["addr"])
    for t in T:
        if "weight" in t:
            off, n = t["weight"]
            assert off == t["addr"] - meta["coeff_addr"] and off + n <= fl, t["name"]
        else:
            assert t["addr"] >= meta["neuron_addr"] or t["addr"] == -1, t["name"]
    for i, op in enumerate(L):
        print("layer", i, op["type"], op["name"])
    opcode = {}   # layer type -> the opcode its commands carry
    for i in range(nd):
        w = struct.unpack_from("<4Q", b, do + 32 * i)
        op, dt, cid, wait = field(w[0], 0, 4), field(w[0], 4, 4), field(w[0], 8, 24), field(w[0], 32, 32)
        assert op in (1, 2) and dt < len(DTYPES) and cid == i + 1 and wait <= nc
        n, c, h, ww = (field(w[2], k, 16) for k in (0, 16, 32, 48))
        print("dma", cid, "LOAD" if op == 1 else "STORE", "wait=%d" % wait,
              "ddr=%d" % field(w[1], 0, 32), "lmem=%d" % field(w[1], 32, 32),
              "%d,%d,%d,%d" % (n, c, h, ww), DTYPES[dt])
    for i in range(nc):
        w = struct.unpack_from("<12Q", b, co + 96 * i)
        opc, cid, wait = field(w[0], 0, 8), field(w[0], 8, 24), field(w[0], 32, 32)
        layer, n_in, n_out, sl = (field(w[1], 0, 32), field(w[1], 32, 8), field(w[1], 40, 8),
                                  field(w[1], 48, 16))
        r0, rn, i0, i_n = (field(w[2], k, 16) for k in (0, 16, 32, 48))
        lay = L[layer]
        assert cid == i + 1 and wait <= nd and opcode.setdefault(lay["type"], opc) == opc
        assert n_in == len(lay["in"]) and n_out == len(lay["out"])
        addrs = [field(w[3 + k], 0, 32) for k in range(8)]
        held = [(field(w[3 + k], 32, 16), field(w[3 + k], 48, 16)) for k in range(8)]
        ch0, chans, chsplit = field(w[11], 0, 16), field(w[11], 16, 16), field(w[11], 32, 16)
        assert field(w[11], 48, 16) == 0 and (chans or not chsplit)
        for k in range(8):
            assert sl >> k & 1 or held[k] == (0, 0)
        for k in range(8):
            if k >= n_in + n_out or (k < n_in and lay["in"][k] < 0):
                assert addrs[k] == 0xffffffff
        print("cmp", cid, lay["type"], "wait=%d" % wait, "layer=%d" % layer,
              "rows=%d+%d" % (r0, rn), "in=%d+%d" % (i0, i_n), "sliced=%x" % sl,
              "ch=%d+%d" % (ch0, chans), "chsplit=%x" % chsplit, " #", meta["locs"][i])


try:
    main()
except (AssertionError, KeyError, IndexError, struct.error, ValueError) as e:
    print("tmodel_reader: %s: %s" % (sys.argv[1], e or "check failed"), file=sys.stderr)
    sys.exit(1)
