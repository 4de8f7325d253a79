#!/usr/bin/python3
"""det_compare.py A.npz B.npz SCORES [COS [TIE]] - detections of two runs alike.

Each file holds per-detection arrays (boxes [K, 4], scores [K], labels [K]
...) whose first axis is the detection.  The counts K must be equal; the
rows are then matched in order, a row of A taking the row of B nearest to
it among those whose score (array SCORES) is within TIE (default 1e-4) of
its own and at most 4 places away: detections whose scores tie within
rounding may come in either order (onnxruntime, oneDNN and the chip sum in
different orders; INT8 moves scores further).
Over the matched rows, integer arrays (labels, indices) must be equal and
float arrays reach cosine COS (default 0.99999).  Prints one line per
array and exits 1 on a mismatch.
"""
import sys

import numpy as np


def main(argv):
    if len(argv) not in (4, 5, 6):
        sys.stderr.write(__doc__)
        return 2
    a, b, key = np.load(argv[1]), np.load(argv[2]), argv[3]
    want = float(argv[4]) if len(argv) > 4 else 0.99999
    tie = float(argv[5]) if len(argv) > 5 else 1e-4
    names = [n for n in b.files if n in a.files]
    k = len(a[key])
    for n in names:
        if a[n].shape != b[n].shape:
            print("%s: shape %s, expected %s" % (n, a[n].shape, b[n].shape))
            return 1
    sa, sb = a[key].astype(np.float64), b[key].astype(np.float64)
    taken = np.zeros(k, bool)
    order = []
    for i in range(k):
        best, dist = -1, None
        for j in range(max(0, i - 4), min(k, i + 5)):
            if taken[j] or abs(sa[i] - sb[j]) > tie:
                continue
            d = sum(float(np.abs(a[n][i].astype(np.float64) - b[n][j]).sum()) for n in names)
            if dist is None or d < dist:
                best, dist = j, d
        if best < 0:
            print("%s: detection %d (score %.6g) has no match" % (key, i, sa[i]))
            return 1
        taken[best] = True
        order.append(best)
    bad = 0
    for n in names:
        x, y = a[n].astype(np.float64), b[n][order].astype(np.float64)
        if b[n].dtype.kind in "iub":
            ok = np.array_equal(x, y)
            print("%s %s: %s" % (n, list(b[n].shape), "equal" if ok else "DIFFER"))
        else:
            x, y = x.ravel(), y.ravel()
            c = float(x @ y / (np.linalg.norm(x) * np.linalg.norm(y))) if k else 1.0
            ok = c >= want
            print("%s %s: cosine %.7f%s" % (n, list(b[n].shape), c, "" if ok else " < %g" % want))
        bad += not ok
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
