# conformance.mk - the ONNX backend node tests (Debian's libonnx-testdata)
# through onnx2top, top-opt and ir-run, then every case ir-run gets right
# through the back end (top2tpu --mode f32 ... tpu-sim on tpu-a); prints
# failures, back-end refusals, the operator types that pass, "back end: N
# passed, N failed, N refused" and "N passed, N failed, N unsupported"
# (tests/conformance.sh -b).
#
#   make -f pipelines/conformance.mk [TPUC_BIN=build/bin] [PATTERN='test_*']
#        [JOBS=2] [ONNX_TESTDATA=/usr/share/libonnx-testdata/data/node] [V=1]
#
# V=1 also prints one line per refused case with its class and reason, and
# every class with its count (the classes: CLASSES in tests/conformance.py).
#
# Exit status 1 when an accepted case comes out wrong in either half.  From the top-level
# Makefile: include pipelines/conformance.mk (the target is `conformance`,
# after `all`).

CONFORMANCE_DIR := $(dir $(lastword $(MAKEFILE_LIST)))
TPUC_BIN ?= $(abspath $(CONFORMANCE_DIR)../build/bin)
PATTERN ?= test_*
JOBS ?= 2
ONNX_TESTDATA ?= /usr/share/libonnx-testdata/data/node

conformance:
	TPUC_BIN=$(abspath $(TPUC_BIN)) ONNX_TESTDATA=$(ONNX_TESTDATA) \
		$(CONFORMANCE_DIR)../tests/conformance.sh -b -j $(JOBS) $(if $(filter 1,$(V)),-v) '$(PATTERN)'

.PHONY: conformance
