#!/usr/bin/python3
"""irdump.py - print a tpuc IR file one line per item, for the bats tests.

usage: irdump.py FILE [values]

Reads the file with msgpack and numpy only, as formats/tpuc-ir.5 describes:
  graph DIALECT STAGE
  input NAME DTYPE SHAPE
  weight NAME DTYPE SHAPE [VALUES]      (values with the "values" argument)
  op TYPE NAME in=A,B out=C attr=value ...
  output NAME
"""
import json
import struct
import sys

import msgpack
import numpy as np

DTYPES = {'f32': '<f4', 'f16': '<f2', 'i8': 'i1', 'u8': 'u1', 'i16': '<i2',
          'i32': '<i4', 'i64': '<i8', 'bool': '?'}


def j(v):
    return json.dumps(v, separators=(',', ':'))


def main():
    b = open(sys.argv[1], 'rb').read()
    values = sys.argv[2:] == ['values']
    assert b[:8] == b'TPUC-IR\0', 'bad magic'
    glen, doff = struct.unpack_from('<QQ', b, 16)
    g = msgpack.unpackb(b[64:64 + glen], strict_map_key=False)
    T = g['tensors']
    print('graph', g['dialect'], g['stage'])
    for i in g['inputs']:
        print('input', T[i]['name'], T[i]['dtype'], j(T[i]['shape']))
    for t in T:
        if 'data' in t:
            v = ''
            if values:
                off, n = t['data']
                a = np.frombuffer(b[doff + off:doff + off + n], DTYPES[t['dtype']])
                v = ' ' + j(a.tolist())
            print('weight', t['name'], t['dtype'], j(t['shape']) + v)
    for op in g['ops']:
        ins = ','.join(T[i]['name'] if i >= 0 else '-' for i in op['in'])
        outs = ','.join(T[i]['name'] for i in op['out'])
        attrs = ' '.join('%s=%s' % (k, j(v)) for k, v in op['attrs'].items())
        print(' '.join(['op', op['type'], op['name'], 'in=' + ins, 'out=' + outs, attrs]).rstrip())
    for i in g['outputs']:
        print('output', T[i]['name'])


main()
