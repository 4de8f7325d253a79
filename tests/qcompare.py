#!/usr/bin/python3
"""qcompare.py - onnxruntime as the peer for pre-quantised models
(tests/qmodels.bats; node and onnxruntime-node, see tests/ort_run.js).

  qcompare.py ort MODEL.onnx INPUT.npz OUT.npz [--ulp] [--also NAME...]
      onnxruntime's outputs for INPUT, keyed by output name; --ulp moves
      the scale of every QuantizeLinear one ulp up first, so that values
      on a rounding boundary round the other way (onnxruntime's own
      rounding noise is how far that moves its outputs); --also adds the
      named tensors of the graph as outputs.
  qcompare.py cut MODEL.onnx A B OUT.onnx
      the part of MODEL from tensor A (a graph input of OUT) to tensor B.
  qcompare.py cos A.npz B.npz
      the smallest cosine over the arrays both files have, printed.
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import helper, mapping, numpy_helper, shape_inference

HERE = os.path.dirname(os.path.abspath(__file__))
# numpy's dtype names and onnxruntime-node's tensor types (tests/ort_run.js)
ORT_TYPES = {'float32': 'float32', 'float64': 'float64', 'int64': 'int64', 'int32': 'int32',
             'int8': 'int8', 'uint8': 'uint8', 'bool': 'bool'}
NP_TYPES = {'float32': np.float32, 'float64': np.float64, 'int64': np.int64, 'int32': np.int32,
            'int8': np.int8, 'uint8': np.uint8, 'bool': np.bool_}


def with_outputs(model, names):
    m = shape_inference.infer_shapes(model)
    vi = {v.name: v for v in list(m.graph.value_info) + list(m.graph.output)}
    have = {o.name for o in model.graph.output}
    for n in names:
        if n not in have:
            model.graph.output.append(vi[n] if n in vi else
                                      helper.make_tensor_value_info(n, onnx.TensorProto.FLOAT, None))
    return model


def ort(model_path, inp, out, ulp=False, also=()):
    m = onnx.load(model_path)
    if also:
        m = with_outputs(m, also)
    if ulp:
        scales = {n.input[1] for n in m.graph.node if n.op_type == 'QuantizeLinear'}
        for t in m.graph.initializer:
            if t.name in scales:
                v = numpy_helper.to_array(t).astype(np.float32)
                t.CopyFrom(numpy_helper.from_array(np.nextafter(v, np.float32(np.inf)), t.name))
    x = np.load(inp)
    with tempfile.TemporaryDirectory() as d:
        mp = os.path.join(d, 'm.onnx')
        onnx.save(m, mp)
        ind, outd = os.path.join(d, 'in'), os.path.join(d, 'out')
        os.mkdir(ind)
        init = {i.name for i in m.graph.initializer}
        names = [i.name for i in m.graph.input if i.name not in init]
        types = {i.name: i.type.tensor_type.elem_type for i in m.graph.input}
        for k, n in enumerate(names):
            dt = mapping.TENSOR_TYPE_TO_NP_TYPE[types[n]] if types.get(n) else np.float32
            a = np.ascontiguousarray(x[n], dtype=dt)
            a.tofile(os.path.join(ind, f'{k}.bin'))
            json.dump({'shape': list(a.shape), 'dtype': ORT_TYPES.get(a.dtype.name, 'float32')},
                      open(os.path.join(ind, f'{k}.json'), 'w'))
        subprocess.run(['node', os.path.join(HERE, 'ort_run.js'), mp, ind, outd], check=True)
        onames = json.load(open(os.path.join(outd, 'names.json')))
        res = {}
        for k, n in enumerate(onames):
            info = json.load(open(os.path.join(outd, f'{k}.json')))
            dt = NP_TYPES.get(info.get('dtype', 'float32'), np.float32)
            res[n] = np.fromfile(os.path.join(outd, f'{k}.bin'), dt).reshape(info['shape'])
    np.savez(out, **res)


def cut(model_path, a, b, out):
    m = shape_inference.infer_shapes(onnx.load(model_path))
    onnx.save(m, out + '.tmp')
    onnx.utils.extract_model(out + '.tmp', out, [a], [b])
    os.unlink(out + '.tmp')


def cos(pa, pb):
    a, b = np.load(pa), np.load(pb)
    worst = 1.0
    for n in a.files:
        if n in b.files:
            x = a[n].astype(np.float64).ravel()
            y = b[n].astype(np.float64).ravel()
            c = float(x @ y / (np.linalg.norm(x) * np.linalg.norm(y) + 1e-30))
            worst = min(worst, c)
    print(f'{worst:.7f}')


def main(argv):
    if len(argv) >= 5 and argv[1] == 'ort':
        also = argv[argv.index('--also') + 1:] if '--also' in argv else []
        ort(argv[2], argv[3], argv[4], '--ulp' in argv, also)
    elif len(argv) == 6 and argv[1] == 'cut':
        cut(*argv[2:])
    elif len(argv) == 4 and argv[1] == 'cos':
        cos(argv[2], argv[3])
    else:
        sys.stderr.write(__doc__)
        return 2
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
