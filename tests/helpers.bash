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
