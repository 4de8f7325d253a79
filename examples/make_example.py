#!/usr/bin/python3
"""make_example.py - build examples/tiny_cnn: a small CNN in ONNX (opset 13)
with its test input, calibration samples and reference output.

    /usr/bin/python3 examples/make_example.py [OUTDIR]

The network (input "input" f32 [1,3,32,32], output "logits" f32 [1,10]):

    Conv 3x3 3->16 (+bias) - BatchNormalization - Relu          stem
    MaxPool 2x2/2                                                16x16
    Conv 3x3 - BN - Relu - Conv 3x3 - BN - Add(skip) - Relu     residual block
    Conv 3x3/2 16->32 - BN - Clip(0, 6)                          ReLU6, 8x8
    GlobalAveragePool - Flatten - Gemm 32->10 (transB)           classifier

Weights are random with a fixed seed; BatchNormalization statistics are
measured on sample inputs, as when a trained network is re-estimated, so the
activations have the ranges INT8 quantisation expects.  The reference output
comes from onnx.reference.ReferenceEvaluator when this onnx has it, else from
the plain numpy implementation below.  Every file written is byte-identical
from run to run.
"""
import io
import os
import sys
import zipfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SEED = 20261121
N_CALIB = 16
EPS = 1e-5


# ---- numpy reference kernels (NCHW, computed in float64) ----

def conv(x, w, b=None, stride=1, pad=0):
    n, c, h, wd = x.shape
    m, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh = (h + 2 * pad - kh) // stride + 1
    ow = (wd + 2 * pad - kw) // stride + 1
    cols = np.empty((n, c, kh, kw, oh, ow), dtype=np.float64)
    for i in range(kh):
        for j in range(kw):
            cols[:, :, i, j] = xp[:, :, i:i + stride * oh:stride, j:j + stride * ow:stride]
    y = np.einsum("nckhij,mckh->nmij", cols, w.astype(np.float64), optimize=True)
    if b is not None:
        y += b.reshape(1, m, 1, 1)
    return y


def batchnorm(x, gamma, beta, mean, var):
    s = (gamma / np.sqrt(var.astype(np.float64) + EPS)).reshape(1, -1, 1, 1)
    return (x - mean.reshape(1, -1, 1, 1)) * s + beta.reshape(1, -1, 1, 1)


def maxpool2(x):
    n, c, h, w = x.shape
    return x.reshape(n, c, h // 2, 2, w // 2, 2).max(axis=(3, 5))


def relu(x):
    return np.maximum(x, 0)


# ---- the model ----

class Builder:
    """Collects initializers and nodes while computing the float64 forward
    pass on a batch, so BN statistics can be measured as layers are added."""

    def __init__(self, rng):
        self.rng = rng
        self.inits = []
        self.nodes = []

    def init(self, name, arr):
        self.inits.append(numpy_helper.from_array(np.ascontiguousarray(arr), name))
        return name

    def node(self, op, ins, out, name, **attrs):
        self.nodes.append(helper.make_node(op, ins, [out], name=name, **attrs))
        return out

    def conv_bn(self, x, xname, prefix, cin, cout, stride=1, bias=False,
                gamma=(0.8, 1.2)):
        """Conv 3x3 pad 1 and BatchNormalization with measured statistics."""
        r = self.rng
        w = (r.standard_normal((cout, cin, 3, 3)) * np.sqrt(2.0 / (cin * 9))).astype(np.float32)
        b = (r.standard_normal(cout) * 0.1).astype(np.float32) if bias else None
        ins = [xname, self.init(prefix + ".conv.weight", w)]
        if bias:
            ins.append(self.init(prefix + ".conv.bias", b))
        cname = self.node("Conv", ins, prefix + "/Conv_output_0", prefix + "/Conv",
                          kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[stride, stride],
                          dilations=[1, 1], group=1)
        y = conv(x, w, b, stride, 1)
        mean = y.mean(axis=(0, 2, 3)).astype(np.float32)
        var = y.var(axis=(0, 2, 3)).astype(np.float32)
        g = r.uniform(gamma[0], gamma[1], cout).astype(np.float32)
        be = r.uniform(-0.1, 0.3, cout).astype(np.float32)
        bnname = self.node("BatchNormalization",
                           [cname, self.init(prefix + ".bn.weight", g), self.init(prefix + ".bn.bias", be),
                            self.init(prefix + ".bn.running_mean", mean),
                            self.init(prefix + ".bn.running_var", var)],
                           prefix + "/BatchNormalization_output_0", prefix + "/BatchNormalization",
                           epsilon=EPS, momentum=0.9)
        return batchnorm(y, g, be, mean, var), bnname


def build(x):
    """Build the graph while running x (float64, [N,3,32,32]) through it.
    Returns the ModelProto and the output for x."""
    b = Builder(np.random.default_rng(SEED))
    t, n = b.conv_bn(x, "input", "stem", 3, 16, bias=True)
    t, n = relu(t), b.node("Relu", [n], "stem/Relu_output_0", "stem/Relu")
    t, n = maxpool2(t), b.node("MaxPool", [n], "pool/MaxPool_output_0", "pool/MaxPool",
                                kernel_shape=[2, 2], strides=[2, 2], pads=[0, 0, 0, 0])
    skip, skipname = t, n
    t, n = b.conv_bn(t, n, "block/0", 16, 16)
    t, n = relu(t), b.node("Relu", [n], "block/0/Relu_output_0", "block/0/Relu")
    t, n = b.conv_bn(t, n, "block/1", 16, 16, gamma=(0.4, 0.7))
    t, n = t + skip, b.node("Add", [n, skipname], "block/Add_output_0", "block/Add")
    t, n = relu(t), b.node("Relu", [n], "block/Relu_output_0", "block/Relu")
    t, n = b.conv_bn(t, n, "down", 16, 32, stride=2)
    lo, hi = b.init("down.clip.min", np.array(0, np.float32)), b.init("down.clip.max", np.array(6, np.float32))
    t, n = np.clip(t, 0, 6), b.node("Clip", [n, lo, hi], "down/Clip_output_0", "down/Clip")
    t, n = t.mean(axis=(2, 3), keepdims=True), b.node(
        "GlobalAveragePool", [n], "head/GlobalAveragePool_output_0", "head/GlobalAveragePool")
    t, n = t.reshape(t.shape[0], -1), b.node("Flatten", [n], "head/Flatten_output_0", "head/Flatten", axis=1)
    w = (b.rng.standard_normal((10, 32)) * np.sqrt(1.0 / 32)).astype(np.float32)
    bias = (b.rng.standard_normal(10) * 0.1).astype(np.float32)
    t = t @ w.T.astype(np.float64) + bias
    b.node("Gemm", [n, b.init("head.fc.weight", w), b.init("head.fc.bias", bias)], "logits", "head/Gemm",
           alpha=1.0, beta=1.0, transB=1)

    graph = helper.make_graph(
        b.nodes, "tiny_cnn",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 32, 32])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 10])],
        b.inits)
    model = helper.make_model(graph, producer_name="tpuc examples/make_example.py",
                              opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 7
    onnx.checker.check_model(model)
    return model, t


def images(rng, n):
    """Smooth, image-like samples: coarse noise upsampled, plus fine noise,
    roughly zero mean and unit variance per channel like normalised photos."""
    coarse = rng.standard_normal((n, 3, 8, 8))
    x = np.kron(coarse, np.ones((1, 1, 4, 4))) + 0.3 * rng.standard_normal((n, 3, 32, 32))
    return (x / 1.05).astype(np.float32)


def save_npz(path, arrays, compress=False):
    """np.savez with fixed timestamps, so the file is byte-identical per run."""
    method = zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED
    with zipfile.ZipFile(path + ".tmp", "w", method) as z:
        for k, v in arrays.items():
            buf = io.BytesIO()
            np.lib.format.write_array(buf, np.ascontiguousarray(v), allow_pickle=False)
            info = zipfile.ZipInfo(k + ".npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = method
            info.external_attr = 0o644 << 16
            z.writestr(info, buf.getvalue())
    os.replace(path + ".tmp", path)


def reference(model, x):
    try:
        from onnx.reference import ReferenceEvaluator
    except ImportError:
        return None
    return ReferenceEvaluator(model).run(None, {"input": x})[0]


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "tiny_cnn")
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(SEED + 1)
    stats = images(rng, 64)          # BN statistics are measured on these
    calib = images(rng, N_CALIB)     # calibration samples
    test = images(rng, 1)            # the test input, in neither set

    model, _ = build(stats.astype(np.float64))
    # The same weights (same seed, same statistics) run on the test input.
    _, ref = build_forward(model, test)
    ref = ref.astype(np.float32)
    via = "numpy"
    r = reference(model, test)
    if r is not None:
        ref, via = r.astype(np.float32), "onnx.reference"

    tmp = os.path.join(out, "model.onnx.tmp")
    with open(tmp, "wb") as f:
        f.write(model.SerializeToString())
    os.replace(tmp, os.path.join(out, "model.onnx"))
    save_npz(os.path.join(out, "input.npz"), {"input": test})
    save_npz(os.path.join(out, "calib.npz"), {"input": calib}, compress=True)
    save_npz(os.path.join(out, "ref.npz"), {"logits": ref})
    print("%s: model.onnx input.npz calib.npz ref.npz (reference by %s) logits %s"
          % (out, via, np.array2string(ref[0], precision=3)))


def build_forward(model, x):
    """Run the finished model on x with the numpy kernels, reading the
    weights back from the ModelProto (so the reference follows the file)."""
    w = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    v = {"input": x.astype(np.float64)}
    for nd in model.graph.node:
        a = {at.name: helper.get_attribute_value(at) for at in nd.attribute}
        ins = [v[i] if i in v else w[i] for i in nd.input]
        op = nd.op_type
        if op == "Conv":
            y = conv(ins[0], ins[1], ins[2] if len(ins) > 2 else None, a["strides"][0], a["pads"][0])
        elif op == "BatchNormalization":
            y = batchnorm(ins[0], *ins[1:5])
        elif op == "Relu":
            y = relu(ins[0])
        elif op == "MaxPool":
            y = maxpool2(ins[0])
        elif op == "Add":
            y = ins[0] + ins[1]
        elif op == "Clip":
            y = np.clip(ins[0], ins[1], ins[2])
        elif op == "GlobalAveragePool":
            y = ins[0].mean(axis=(2, 3), keepdims=True)
        elif op == "Flatten":
            y = ins[0].reshape(ins[0].shape[0], -1)
        elif op == "Gemm":
            y = ins[0] @ ins[1].T.astype(np.float64) + ins[2]
        else:
            raise SystemExit("make_example.py: no numpy kernel for %s" % op)
        v[nd.output[0]] = y
    return model, v[model.graph.output[0].name]


if __name__ == "__main__":
    main()
