# helpers.bash - shared setup for every bats file (`load helpers`): bats
# assertions, the freshly built tools first on PATH, Debian's python3, and
# the real models.
bats_load_library bats-support
bats_load_library bats-assert

REPO=$(cd "$BATS_TEST_DIRNAME/.." && pwd)
case ${B:-build} in
/*) TPUC_BUILD=$B ;;
*) TPUC_BUILD=$REPO/${B:-build} ;;
esac
export PATH="$TPUC_BUILD/bin:$PATH"
# Debian's python3 has numpy, onnx and msgpack; the first on PATH may not.
PY=/usr/bin/python3

# The real models live in shared/, cloned beside the repo; TPUC_MODELS
# overrides.  Empty when not found.
if [ -n "${TPUC_MODELS:-}" ]; then
	MODELS=$TPUC_MODELS
elif [ -d "$REPO/../shared/models" ]; then
	MODELS=$(cd "$REPO/../shared/models" && pwd)
else
	MODELS=
fi

# need_models [NAME...]: skip the test when the real models are absent (or
# the named ones are), or when the quick suite runs (TPUC_QUICK=1).
need_models() {
	[ "${TPUC_QUICK:-0}" != 1 ] || skip "real-model test (TPUC_QUICK=1)"
	[ -n "$MODELS" ] && [ -d "$MODELS" ] || skip "no models (set TPUC_MODELS)"
	local m
	for m in "$@"; do
		[ -f "$MODELS/$m/model.onnx" ] || skip "model $m not in $MODELS"
	done
}

# need_tool NAME...: skip when a tool is not built yet.
need_tool() {
	local t
	for t in "$@"; do
		[ -x "$TPUC_BUILD/bin/$t" ] || skip "$t not built"
	done
}

# deploy_mk VAR=VALUE...: pipelines/deploy.mk's compare with the tools
# under test, under bats' run (the caller asserts).
deploy_mk() {
	run make --no-print-directory -f "$REPO/pipelines/deploy.mk" TPUC_BIN="$TPUC_BUILD/bin" "$@" compare
}

# npz_maxdiff A B: the largest |a - b| over the arrays of B (the expected
# file) and their namesakes in A; fails when A lacks one or its shape
# differs (a difference would otherwise broadcast away).
npz_maxdiff() {
	$PY -c 'import sys, numpy as np
a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
bad = [k for k in b.files if k not in a.files or a[k].shape != b[k].shape]
if bad:
    sys.exit("%s: missing or of another shape: %s" % (sys.argv[1], " ".join(bad)))
print(max(float(np.abs(a[k].astype(np.float64) - b[k]).max(initial=0)) for k in b.files))' "$@"
}

# assert_close A B: fail unless the arrays of expected file B are within
# 1e-5 of A's.
assert_close() {
	run npz_maxdiff "$1" "$2"
	assert_success
	$PY -c "import sys; sys.exit(0 if float('$output') < 1e-5 else 1)" ||
		fail "$1: largest difference $output"
}

# frames_agree OUT.npz EXPECT.npz KEY TOL [all]: per-frame outputs of a
# stateful run (ir-run/tpu-sim --frames) against the reference: output KEY
# (every output with "all") within TOL, and the same decision (KEY > 0.5)
# on every frame, some frames speech and some not in the reference.
frames_agree() {
	run $PY - "$@" <<'EOF'
import sys, numpy as np
a, b, key, tol = np.load(sys.argv[1]), np.load(sys.argv[2]), sys.argv[3], float(sys.argv[4])
for k in b.files:
    assert a[k].shape == b[k].shape, (k, a[k].shape, b[k].shape)
for k in (b.files if sys.argv[5:] == ["all"] else [key]):
    d = float(np.abs(a[k] - b[k]).max())
    print("%s max abs error %.3g" % (k, d))
    assert d <= tol, (k, d)
assert ((a[key] > 0.5) == (b[key] > 0.5)).all(), "a decision differs"
assert 0 < (b[key] > 0.5).sum() < b[key].size
EOF
	assert_success
}

# ort_outputs MODEL IN OUT: onnxruntime's outputs for IN into OUT
# (tests/qcompare.py ort), or skip without node and onnxruntime-node
# ($ORT_NODE_MODULES, tests/node_modules, bench/node_modules).
ort_outputs() {
	command -v node >/dev/null || skip "node is not installed"
	local d ok=
	for d in "${ORT_NODE_MODULES:-}" "$REPO/tests/node_modules" "$REPO/bench/node_modules"; do
		[ -n "$d" ] && [ -d "$d/onnxruntime-node" ] && ok=1
	done
	[ -n "$ok" ] || skip "onnxruntime-node is not installed"
	$PY "$REPO/tests/qcompare.py" ort "$@"
}

# cases_match_numpy DIR: each case C listed in DIR/cases (DIR/C.onnx with
# DIR/C.in.npz) through onnx2top | top-opt | ir-run to $T/C.npz matches
# numpy's DIR/C.ref.npz (npz-compare 0.999999,0.99999); fails naming the
# cases that do not, their logs on fd 3.
cases_match_numpy() {
	local d=$1 c bad=
	for c in $(cat "$d/cases"); do
		if ! onnx2top "$d/$c.onnx" | top-opt | ir-run - -i "$d/$c.in.npz" -o "$T/$c.npz" \
			>"$T/log" 2>&1 ||
		   ! npz-compare "$d/$c.ref.npz" "$T/$c.npz" --tolerance 0.999999,0.99999 >>"$T/log" 2>&1; then
			bad="$bad $c"
			cat "$T/log" >&3
		fi
	done
	[ -z "$bad" ] || { echo "failed:$bad"; false; }
}
