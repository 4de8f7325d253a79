#!/usr/bin/python3
"""conformance.py - the numpy half of tests/conformance.sh.

usage: conformance.py prepare DATA_DIR WORK_DIR [PATTERNS]
       conformance.py report WORK_DIR

prepare: for every ONNX backend node test under DATA_DIR whose name
matches one of the shell PATTERNS (separated by spaces, default test_*), writes WORK_DIR/<case>/input.npz
and ref.npz from test_data_set_0 (TensorProto .pb files, keyed by the
model's graph input and output names), bind1.npz with every input but the
first (for onnx2top --bind, when a case passes parameters such as Slice's
starts or Conv's weight as graph inputs), and lists the cases in
WORK_DIR/cases.  A case whose data is not plain tensors (sequences,
optionals) gets a file 'refused' with the reason instead.

report: reads WORK_DIR/<case>/status (written by conformance.sh: ok, or
refused/failed with a reason) and out.npz, compares each output with the
reference like ONNX's backend tests (rtol 1e-3, atol 1e-5, NaN equal to NaN,
same shape), and prints failures, the operator types that pass, then
"N passed, N failed, N unsupported".  Exit status 1 when any case failed.
"""
import fnmatch
import os
import sys
import zipfile

import numpy as np
import onnx
from onnx import numpy_helper


def savez(path, arrays):
    """np.savez without keyword arguments (an input may be named 'like')."""
    with zipfile.ZipFile(path, "w") as z:
        for name, a in arrays.items():
            with z.open(name + ".npy", "w", force_zip64=True) as f:
                np.lib.format.write_array(f, np.asanyarray(a), allow_pickle=False)


def to_ir(a, elem):
    """bfloat16 travels as uint16 bits in numpy: give its float32 value."""
    if elem == onnx.TensorProto.BFLOAT16:
        return (a.astype(np.uint32) << 16).view(np.float32)
    return a


def graph_io(model):
    inits = {i.name for i in model.graph.initializer}
    ins = [(i.name, i.type.tensor_type.elem_type, i) for i in model.graph.input
           if i.name not in inits]
    outs = [(o.name, o.type.tensor_type.elem_type, o) for o in model.graph.output]
    return ins, outs


def read_pb(path):
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


def prepare(data, work, pattern):
    os.makedirs(work, exist_ok=True)
    cases = sorted(c for c in os.listdir(data)
                   if any(fnmatch.fnmatch(c, p) for p in pattern.split()) and
                   os.path.isfile(os.path.join(data, c, "model.onnx")))
    with open(os.path.join(work, "cases"), "w") as f:
        f.write("".join(c + "\n" for c in cases))
    for c in cases:
        src, dst = os.path.join(data, c), os.path.join(work, c)
        os.makedirs(dst, exist_ok=True)
        try:
            model = onnx.load(os.path.join(src, "model.onnx"))
            ins, outs = graph_io(model)
            ds = os.path.join(src, "test_data_set_0")
            arrays = {}
            for kind, names, fname in (("input", ins, "input.npz"), ("output", outs, "ref.npz")):
                vals = {}
                for i, (name, elem, info) in enumerate(names):
                    p = os.path.join(ds, "%s_%d.pb" % (kind, i))
                    if not os.path.exists(p):
                        raise ValueError("missing %s_%d.pb" % (kind, i))
                    vals[name] = to_ir(read_pb(p), elem)
                    dims = info.type.tensor_type.shape.dim
                    want = tuple(d.dim_value if d.HasField("dim_value") else None for d in dims)
                    if kind == "input" and None not in want and want != vals[name].shape:
                        raise ValueError("input '%s' has shape %s, the model declares %s" %
                                         (name, vals[name].shape, want))
                arrays[fname] = vals
            for fname, vals in arrays.items():
                savez(os.path.join(dst, fname), vals)
            savez(os.path.join(dst, "bind1.npz"), dict(list(arrays["input.npz"].items())[1:]))
        except Exception as e:  # sequences, optionals, unreadable data
            with open(os.path.join(dst, "refused"), "w") as f:
                f.write("test data: %s\n" % str(e).splitlines()[0] if str(e) else type(e).__name__)


def op_types(data_model):
    """The model's operator types, and a relative tolerance per output:
    bfloat16 results may differ by one unit in the last place (8 bits)
    between truncating and rounding conversions."""
    try:
        m = onnx.load(data_model)
        rt = {o.name: 2.0 ** -7 for o in m.graph.output
              if o.type.tensor_type.elem_type == onnx.TensorProto.BFLOAT16}
        return sorted({n.op_type for n in m.graph.node}), rt
    except Exception:
        return [], {}


def compare(ref, out, rtols):
    """None if every reference array matches, else a reason."""
    for name in ref.files:
        if name not in out.files:
            return "no output '%s'" % name
        r, o = ref[name], out[name]
        if r.shape != o.shape:
            return "'%s': shape %s, expected %s" % (name, o.shape, r.shape)
        if r.dtype.kind in "OSU":
            return "'%s': non-numeric reference" % name
        r64 = r.astype(np.float64)
        o64 = o.astype(np.float64)
        rtol = rtols.get(name, 1e-3)
        if not np.allclose(o64, r64, rtol=rtol, atol=1e-5, equal_nan=True):
            bad = np.abs(o64 - r64) - rtol * np.abs(r64)
            bad[np.isnan(o64) != np.isnan(r64)] = np.inf
            bad[np.isnan(o64) & np.isnan(r64)] = 0
            i = np.unravel_index(np.argmax(bad), bad.shape) if bad.size else ()
            return "'%s': max |diff| %.3g at %s (got %.6g, expected %.6g)" % (
                name, float(bad[i]), tuple(int(x) for x in i), float(o64[i]), float(r64[i]))
    return None


# Every refused case falls in one of these classes (the first whose pattern
# matches its one-line reason).  EXCLUDED classes are ONNX operators with
# no place in inference on the chip; the others are limits of tpuc, each
# with what it would take.  `report` with CHECK_CLASSES=1 fails when a
# refusal is in no class, or, on the whole suite, when a class is empty.
CLASSES = [
    # (name, excluded, pattern, reason)
    ("test data", False, r"^refused: test data: input '[^']*' has shape",
     "the suite's data disagrees with the model's declared input shape (CastLike 'like' "
     "in libonnx-testdata 1.12)"),
    ("string", True,
     r"data type string|cast to string|Object arrays cannot be saved|\((StringNormalizer|TfIdfVectorizer|RegexFullMatch|StringConcat|StringSplit)\)",
     "text operators and string tensors: no numeric meaning on the chip"),
    ("sequence", True,
     r"is not a tensor|^refused: test data|\((Sequence\w*|SplitToSequence|ConcatFromSequence|Optional\w*)\)",
     "sequence and optional values: not tensors"),
    ("training", True,
     r"training_mode|imports no ai\.onnx opset|\(BatchNormalization\): (optional output|the opset)|"
     r"\(Dropout\): the opset",
     "training: Dropout and BatchNormalization in training mode, ai.onnx.preview.training optimisers"),
    ("random", True, r"\((RandomUniform|RandomNormal|RandomUniformLike|RandomNormalLike|Bernoulli|Multinomial)\)",
     "random numbers: no reference output to match"),
]


def classify(reason):
    import re
    for name, _, pat, _ in CLASSES:
        if re.search(pat, reason):
            return name
    return None


def report(work):
    data = open(os.path.join(work, "data")).read().strip()
    cases = open(os.path.join(work, "cases")).read().split()
    passed, failed, refused, bound = [], [], [], 0
    back = os.environ.get("BACK", "0") != "0"
    bpassed, bfailed, brefused = [], [], []
    breasons = {}
    ok_ops, seen_ops = set(), set()
    reasons = {}
    for c in cases:
        d = os.path.join(work, c)
        st = open(os.path.join(d, "status")).read().strip() if os.path.exists(
            os.path.join(d, "status")) else "failed: not run"
        ops, rtols = op_types(os.path.join(data, c, "model.onnx"))
        bound += os.path.exists(os.path.join(d, "bound"))
        seen_ops.update(ops)
        if st.startswith("refused"):
            refused.append(c)
            reasons[c] = st
            continue
        if st == "ok":
            try:
                why = compare(np.load(os.path.join(d, "ref.npz")), np.load(os.path.join(d, "out.npz")),
                              rtols)
            except Exception as e:
                why = "cannot compare: %s" % e
            if why is None:
                passed.append(c)
                ok_ops.update(ops)
                if back:
                    bst = open(os.path.join(d, "bstatus")).read().strip() if os.path.exists(
                        os.path.join(d, "bstatus")) else "failed: not run"
                    if bst == "ok":
                        try:
                            bwhy = compare(np.load(os.path.join(d, "ref.npz")),
                                           np.load(os.path.join(d, "sim_out.npz")), rtols)
                        except Exception as e:
                            bwhy = "cannot compare: %s" % e
                        bst = "ok" if bwhy is None else "failed: " + bwhy
                    (bpassed if bst == "ok" else brefused if bst.startswith("refused")
                     else bfailed).append(c)
                    breasons[c] = bst
                continue
            st = "failed: " + why
        failed.append(c)
        reasons[c] = st
    verbose = os.environ.get("VERBOSE", "0") != "0"
    for c in failed:
        print("FAIL %s: %s" % (c, reasons[c]))
    by_class = {name: [] for name, _, _, _ in CLASSES}
    unclassified = []
    for c in refused:
        k = classify(reasons[c])
        (by_class[k] if k else unclassified).append(c)
        if verbose:
            print("UNSUPPORTED %s [%s]: %s" % (c, k or "unclassified", reasons[c]))
    for c in unclassified:
        print("UNCLASSIFIED %s: %s" % (c, reasons[c]))
    outside = len(unclassified)
    for name, excluded, _, why in CLASSES:
        if not excluded:
            outside += len(by_class[name])
        if verbose or by_class[name]:
            print("refused, %s%s: %d (%s)" % (name, " (excluded)" if excluded else "",
                                             len(by_class[name]), why))
    print("refused outside the excluded classes: %d" % outside)
    bad_classes = False
    if os.environ.get("CHECK_CLASSES", "0") != "0":
        whole = len(cases) == len([c for c in os.listdir(data)
                                   if os.path.isfile(os.path.join(data, c, "model.onnx"))])
        empty = [name for name, cs in by_class.items() if not cs] if whole else []
        for name in empty:
            print("EMPTY CLASS %s: no refused case is in it any more; drop it from CLASSES" % name)
        bad_classes = bool(unclassified or empty)
    for c in bfailed:
        print("BACK FAIL %s: %s" % (c, breasons[c]))
    if verbose or back:
        for c in brefused:
            print("BACK REFUSED %s: %s" % (c, breasons[c]))
    print("operator types passing a case (%d): %s" % (len(ok_ops), " ".join(sorted(ok_ops))))
    print("cases run with parameter inputs bound as constants: %d" % bound)
    if back:
        print("back end: %d passed, %d failed, %d refused" % (len(bpassed), len(bfailed),
                                                               len(brefused)))
    print("%d passed, %d failed, %d unsupported" % (len(passed), len(failed), len(refused)))
    return 1 if failed or bfailed or bad_classes else 0


def main():
    if len(sys.argv) >= 4 and sys.argv[1] == "prepare":
        prepare(sys.argv[2], sys.argv[3], sys.argv[4] if len(sys.argv) > 4 else "test_*")
        with open(os.path.join(sys.argv[3], "data"), "w") as f:
            f.write(sys.argv[2] + "\n")
        return 0
    if len(sys.argv) == 3 and sys.argv[1] == "report":
        return report(sys.argv[2])
    sys.stderr.write(__doc__.split("\n\n")[1] + "\n")
    return 2


if __name__ == "__main__":
    sys.exit(main())
