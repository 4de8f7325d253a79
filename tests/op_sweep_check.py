#!/usr/bin/python3
"""op_sweep_check.py WORK MODE:CHIP... - the verdicts of tests/op-sweep.sh:
per case and MODE:CHIP, tpu-sim's outputs bit for bit those of ir-run on
the Tpu IR, and the Tpu IR's close to the Top F32 IR's (cosine at least
0.99999 in f32, 0.999 in bf16 and f16, 0.99 in int8; outputs that are
constant or nearly so compare by the largest difference instead; outside
f32, the ops whose result is discrete (an index, a one-hot of the largest
input, a comparison, a rounding), which rounding the input to the mode
can flip, are checked against ir-run only).  Prints
each failure and "N passed, N failed"; exit 1 if any failed."""
import os
import sys

import numpy as np

COS = {"f32": 0.99999, "bf16": 0.999, "f16": 0.999, "int8": 0.99}
DISCRETE = {"Hardmax", "ArgMax", "ArgMin", "Floor", "Ceil", "Round", "Sign", "Equal", "Greater",
            "GreaterOrEqual", "Less", "LessOrEqual", "And", "Or", "Xor", "Not"}


def close(a, b, mode):
    a = a.astype(np.float64).ravel()
    b = b.astype(np.float64).ravel()
    if a.shape != b.shape:
        return "shape %s, expected %s" % (b.shape, a.shape)
    fin = np.isfinite(a) & np.isfinite(b)
    if not np.array_equal(np.isfinite(a), np.isfinite(b)):
        return "non-finite values differ"
    a, b = a[fin], b[fin]
    if a.size == 0:
        return None
    na, nb = np.linalg.norm(a), np.linalg.norm(b)
    span = max(np.abs(a).max(), 1e-6)
    if na < 1e-6 * np.sqrt(a.size) or np.ptp(a) < 1e-3 * span:
        tol = {"f32": 1e-5, "int8": 0.05}.get(mode, 1e-2)
        d = np.abs(a - b).max() / span
        return None if d <= tol else "max relative difference %.3g" % d
    cos = float(a @ b / (na * nb)) if na and nb else 0.0
    return None if cos >= COS[mode] else "cosine %.6f < %g" % (cos, COS[mode])


def main():
    work, mcs = sys.argv[1], sys.argv[2:]
    cases = [l.split() for l in open(os.path.join(work, "cases"))]
    passed, failed = 0, []
    for c, op in cases:
        d = os.path.join(work, c)
        if os.path.exists(os.path.join(d, "status")):
            failed.append("%s: %s" % (c, open(os.path.join(d, "status")).read().strip()))
            continue
        top = np.load(os.path.join(d, "top.npz"))
        for mc in mcs:
            mode = mc.split(":")[0]
            o = os.path.join(d, mc.replace(":", "-"))
            st = open(os.path.join(o, "status")).read().strip() if os.path.exists(
                os.path.join(o, "status")) else "failed: not run"
            why = None if st == "ok" else st
            if why is None:
                tpu, sim = np.load(os.path.join(o, "tpu.npz")), np.load(os.path.join(o, "sim.npz"))
                for k in top.files:
                    if k not in tpu.files or k not in sim.files:
                        why = "no output '%s'" % k
                        break
                    t, s = tpu[k], sim[k]
                    if t.shape != s.shape or not np.array_equal(t.view(np.uint8) if t.dtype == s.dtype else t, s.view(np.uint8) if t.dtype == s.dtype else s):
                        diff = np.abs(t.astype(np.float64) - s.astype(np.float64))
                        why = "'%s': tpu-sim differs from ir-run on the Tpu IR (max %.3g)" % (
                            k, np.nanmax(diff) if diff.size else 0)
                        break
                    r = None if mode != "f32" and op in DISCRETE else close(top[k], t, mode)
                    if r:
                        why = "'%s': Tpu IR vs Top IR: %s" % (k, r)
                        break
            if why:
                failed.append("%s %s: %s" % (c, mc, why))
            else:
                passed += 1
    for f in failed:
        print("FAIL " + f)
    print("%d passed, %d failed" % (passed, len(failed)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
