#!/usr/bin/python3
"""qmodels.py - pre-quantised fixtures from a float ONNX model, written the
way onnxruntime's quantiser writes them (no quantiser can be installed
here), for the tests of formats/tpuc-quant.5 "Pre-quantised models".

  qmodels.py qdq FLOAT.onnx TABLE OUT.onnx [--u8] [--scale-factor F]
  qmodels.py qop FLOAT.onnx TABLE OUT.onnx [--scale-factor F]

qdq: every activation named in TABLE (a tpuc calibration table,
formats/tpuc-calib.5) gets a QuantizeLinear -> DequantizeLinear pair after
the node that writes it (or the graph input), with scale threshold / 127
and zero point 0 in int8 (--u8: uint8 over [min, max] clipped to the
threshold, with a zero point, as onnxruntime's default QUInt8).  A tensor
the table lacks (a Conv output a Relu reads: tpuc fuses them, as the
quantiser does) stays float.  Conv and Gemm weights become int8 initializers,
symmetric per output channel (scale max|w| / 127), behind a
DequantizeLinear on axis 0; biases int32 with scale x_scale * w_scale.
The outputs of MaxPool, Flatten, Reshape and the like take their input's
scale and zero point, as onnxruntime's quantiser gives them.
--scale-factor multiplies every activation scale: a model whose scales are
far from what calibration would choose.

qop: the QOperator form of the same quantisation with u8 activations
(see qop() below).
"""
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto


MOVE_OPS = ('MaxPool', 'Flatten', 'Reshape', 'Transpose', 'Squeeze', 'Unsqueeze', 'Identity')


def read_table(path):
    t = {}
    for line in open(path):
        f = line.split()
        if not f or f[0].startswith('#'):
            continue
        t[f[0]] = (float(f[1]), float(f[2]), float(f[3]))
    return t


def act_params(entry, u8, factor):
    th, lo, hi = entry
    th = max(th, 1e-8)
    if not u8:
        return np.float32(th / 127 * factor), np.int8(0)
    lo, hi = max(lo, -th), min(hi, th)
    lo, hi = min(lo, 0.0), max(hi, 0.0)
    if hi - lo < 1e-8:
        hi = lo + 1e-8
    s = np.float32((hi - lo) / 255 * factor)
    z = int(np.clip(np.round(-lo / s), 0, 255))
    return s, np.uint8(z)


def qdq(model, table, u8=False, factor=1.0):
    g = model.graph
    inits = {i.name: i for i in g.initializer}
    nodes, new_inits = [], []
    scales = {}

    params = {}

    def quantise_act(name, like=None):
        """Q -> DQ of NAME (with the parameters of tensor LIKE when
        given); returns the name the consumers read."""
        s, z = params[like] if like in params else act_params(table[name], u8, factor)
        scales[name] = s
        params[name] = (s, z)
        sn, zn = name + '_qscale', name + '_qzp'
        new_inits.append(numpy_helper.from_array(np.array(s, np.float32), sn))
        new_inits.append(numpy_helper.from_array(np.array(z), zn))
        nodes.append(helper.make_node('QuantizeLinear', [name, sn, zn], [name + '_q'],
                                      name=name + '_Q'))
        nodes.append(helper.make_node('DequantizeLinear', [name + '_q', sn, zn], [name + '_dq'],
                                      name=name + '_DQ'))
        return name + '_dq'

    rename = {}
    for i in g.input:
        if i.name in table and i.name not in inits:
            rename[i.name] = quantise_act(i.name)
    for n in g.node:
        ins = [rename.get(x, x) for x in n.input]
        if n.op_type in ('Conv', 'Gemm') and len(ins) > 1 and n.input[1] in inits:
            w = numpy_helper.to_array(inits[n.input[1]]).astype(np.float32)
            trans_b = any(a.name == 'transB' and a.i for a in n.attribute)
            wc = w if n.op_type == 'Conv' or trans_b else w.T
            mx = np.abs(wc.reshape(wc.shape[0], -1)).max(axis=1)
            ws = np.where(mx > 0, mx / 127, 1.0).astype(np.float32)
            shape = (-1,) + (1,) * (wc.ndim - 1)
            wq = np.clip(np.round(wc / ws.reshape(shape)), -127, 127).astype(np.int8)
            if wc is not w:
                wq = np.ascontiguousarray(wq.T)
            axis = 0 if wc is w else 1
            wn = n.input[1] + '_quantized'
            new_inits += [numpy_helper.from_array(wq, wn),
                          numpy_helper.from_array(ws, wn + '_scale'),
                          numpy_helper.from_array(np.zeros(ws.shape, np.int8), wn + '_zp')]
            nodes.append(helper.make_node('DequantizeLinear', [wn, wn + '_scale', wn + '_zp'],
                                          [wn + '_dq'], name=wn + '_DQ', axis=axis))
            ins[1] = wn + '_dq'
            xin = n.input[0]
            if len(ins) > 2 and ins[2] in inits and xin in scales:
                b = numpy_helper.to_array(inits[n.input[2]]).astype(np.float64)
                bs = (np.float32(scales[xin]) * ws).astype(np.float32)
                bq = np.round(b / bs.astype(np.float64)).astype(np.int32)
                bn = n.input[2] + '_quantized'
                new_inits += [numpy_helper.from_array(bq, bn),
                              numpy_helper.from_array(bs, bn + '_scale'),
                              numpy_helper.from_array(np.zeros(bs.shape, np.int32), bn + '_zp')]
                nodes.append(helper.make_node('DequantizeLinear', [bn, bn + '_scale', bn + '_zp'],
                                              [bn + '_dq'], name=bn + '_DQ', axis=0))
                ins[2] = bn + '_dq'
        m = helper.make_node(n.op_type, ins, list(n.output), name=n.name, domain=n.domain)
        m.attribute.extend(n.attribute)
        nodes.append(m)
        # ops that move values keep their input's grid, as the quantiser
        # writes them (onnxruntime then runs them on the integers)
        like = n.input[0] if n.op_type in MOVE_OPS and n.input else None
        for o in n.output:
            if o in table:
                rename[o] = quantise_act(o, like)
    outs = {o.name for o in g.output}
    # graph outputs stay the float names: the last DQ writes them
    for nd in nodes:
        for k, x in enumerate(nd.input):
            if x in rename and rename[x] != x and nd.op_type != 'QuantizeLinear':
                nd.input[k] = rename[x]
    for nd in nodes:
        if nd.op_type == 'DequantizeLinear' and nd.output[0].endswith('_dq'):
            base = nd.output[0][:-3]
            if base in outs:
                # the producer writes BASE_f, Q reads it, DQ writes BASE
                for p in nodes:
                    for k, o in enumerate(p.output):
                        if o == base:
                            p.output[k] = base + '_f'
                    if p.op_type == 'QuantizeLinear' and p.input[0] == base:
                        p.input[0] = base + '_f'
                nd.output[0] = base
    used = {x for nd in nodes for x in nd.input}
    keep = [i for i in g.initializer if i.name in used]
    graph = helper.make_graph(nodes, g.name, list(g.input), list(g.output),
                              keep + [i for i in new_inits if i.name in used])
    out = helper.make_model(graph, opset_imports=[helper.make_opsetid('', 13)],
                            producer_name='tpuc qmodels.py')
    out.ir_version = 8
    onnx.checker.check_model(out)
    return out


def qop(model, table, factor=1.0):
    """The QOperator form, u8 activations with zero points (a Relu after
    an op is its output's zero-point clamp, as the quantiser fuses it):
    QLinearConv, QLinearAdd, QLinearAveragePool, QLinearGlobalAveragePool,
    QLinearConcat; MaxPool and Flatten on the codes; anything else (Gemm,
    BatchNormalization) in float between DequantizeLinear and
    QuantizeLinear."""
    g = model.graph
    inits = {i.name: i for i in g.initializer}
    consumers = {}
    for n in g.node:
        for x in n.input:
            consumers.setdefault(x, []).append(n)
    nodes, new_inits, params = [], [], {}
    ms = 'com.microsoft'

    made = set()

    def const(name, v):
        if name not in made:
            made.add(name)
            new_inits.append(numpy_helper.from_array(v, name))
        return name

    def qparams(name, like=None):
        if like is not None:
            params[name] = params[like]
        elif name not in params:
            s_, z_ = act_params(table[name], True, factor)
            params[name] = (s_, z_)
        s_, z_ = params[name]
        return [const(name + '_s', np.array(s_, np.float32)),
                const(name + '_z', np.array(z_, np.uint8))]

    qname = {}      # float name -> its u8 tensor

    def q_of(name):
        if name not in qname:
            sz = qparams(name)
            nodes.append(helper.make_node('QuantizeLinear', [name] + sz, [name + '_u8'],
                                          name=name + '_Q'))
            qname[name] = name + '_u8'
        return qname[name]

    def f_of(name):
        """the float value of NAME for a float op"""
        if name in qname and name not in fl:
            sz = qparams(name)
            nodes.append(helper.make_node('DequantizeLinear', [qname[name]] + sz, [name],
                                          name=name + '_DQ'))
            fl.add(name)
        return name

    fl = {i.name for i in g.input}
    skip = set()
    for n in g.node:
        if n.name in skip:
            continue
        out = n.output[0]
        cs = consumers.get(out, [])
        relu = cs[0] if len(cs) == 1 and cs[0].op_type == 'Relu' else None
        final = relu.output[0] if relu is not None else out
        if final not in table:
            relu, final = None, out
        attrs = list(n.attribute)
        t = n.op_type
        if t == 'Conv' and n.input[1] in inits and final in table:
            x = q_of(n.input[0])
            xs = params[n.input[0]][0]
            w = numpy_helper.to_array(inits[n.input[1]]).astype(np.float32)
            mx = np.abs(w.reshape(w.shape[0], -1)).max(axis=1)
            ws = np.where(mx > 0, mx / 127, 1.0).astype(np.float32)
            wq = np.clip(np.round(w / ws.reshape(-1, 1, 1, 1)), -127, 127).astype(np.int8)
            ins = [x] + qparams(n.input[0]) + [const(n.input[1] + '_q', wq),
                                               const(n.input[1] + '_qs', ws),
                                               const(n.input[1] + '_qz', np.zeros(ws.shape, np.int8))]
            ins += qparams(final)
            if len(n.input) > 2 and n.input[2] in inits:
                b = numpy_helper.to_array(inits[n.input[2]]).astype(np.float64)
                bq = np.round(b / (np.float32(xs) * ws).astype(np.float64)).astype(np.int32)
                ins.append(const(n.input[2] + '_q', bq))
            nodes.append(helper.make_node('QLinearConv', ins, [final + '_u8'], name=n.name,
                                          **{a.name: helper.get_attribute_value(a) for a in attrs}))
        elif t in ('Add', 'Mul') and final in table and all(x in table for x in n.input):
            ins = []
            for x in n.input:
                ins += [q_of(x)] + qparams(x)
            nodes.append(helper.make_node('QLinear' + t, ins + qparams(final), [final + '_u8'],
                                          name=n.name, domain=ms))
        elif t in ('AveragePool', 'GlobalAveragePool') and final in table and n.input[0] in table:
            ins = [q_of(n.input[0])] + qparams(n.input[0]) + qparams(final)
            nodes.append(helper.make_node('QLinear' + t, ins, [final + '_u8'], name=n.name,
                                          domain=ms,
                                          **{a.name: helper.get_attribute_value(a) for a in attrs}))
        elif t == 'Concat' and final in table and all(x in table for x in n.input):
            ins = qparams(final)
            for x in n.input:
                ins += [q_of(x)] + qparams(x)
            nodes.append(helper.make_node('QLinearConcat', ins, [final + '_u8'], name=n.name,
                                          domain=ms,
                                          **{a.name: helper.get_attribute_value(a) for a in attrs}))
        elif t in MOVE_OPS and n.input[0] in table and relu is None:
            qparams(out, like=n.input[0])
            m = helper.make_node(t, [q_of(n.input[0])] + list(n.input[1:]), [out + '_u8'],
                                 name=n.name)
            m.attribute.extend(attrs)
            nodes.append(m)
            final = out
        else:
            m = helper.make_node(t, [f_of(x) for x in n.input], list(n.output), name=n.name,
                                 domain=n.domain)
            m.attribute.extend(attrs)
            nodes.append(m)
            fl.update(n.output)
            continue
        qname[final] = final + '_u8'
        if relu is not None:
            skip.add(relu.name)
    for o in g.output:
        f_of(o.name)
    used = {x for nd in nodes for x in nd.input}
    keep = [i for i in g.initializer if i.name in used]
    graph = helper.make_graph(nodes, g.name, list(g.input), list(g.output),
                              keep + [i for i in new_inits if i.name in used])
    out = helper.make_model(graph, opset_imports=[helper.make_opsetid('', 13),
                                                  helper.make_opsetid(ms, 1)],
                            producer_name='tpuc qmodels.py')
    out.ir_version = 8
    return out


def main(argv):
    if len(argv) >= 5 and argv[1] == 'qop':
        factor = float(argv[argv.index('--scale-factor') + 1]) if '--scale-factor' in argv else 1.0
        onnx.save(qop(onnx.load(argv[2]), read_table(argv[3]), factor), argv[4])
        return 0
    if len(argv) < 5 or argv[1] != 'qdq':
        sys.stderr.write(__doc__)
        return 2
    u8 = '--u8' in argv
    factor = 1.0
    if '--scale-factor' in argv:
        factor = float(argv[argv.index('--scale-factor') + 1])
    m = onnx.load(argv[2])
    t = read_table(argv[3])
    onnx.save(qdq(m, t, u8, factor), argv[4])
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
