# conformance.mk - the ONNX backend node tests (Debian's libonnx-testdata)
# through onnx2top, top-opt and ir-run; prints failures, the operator types
# that pass, and "N passed, N failed, N unsupported" (tests/conformance.sh).
#
#   make -f pipelines/conformance.mk [TPUC_BIN=build/bin] [PATTERN='test_*']
#        [JOBS=2] [ONNX_TESTDATA=/usr/share/libonnx-testdata/data/node] [V=1]
#
# V=1 also prints one line per refused case with its class and reason, and
# every class with its count (the classes: CLASSES in tests/conformance.py).
#
# Exit status 1 when an accepted case comes out wrong.  From the top-level
# Makefile: include pipelines/conformance.mk (the target is `conformance`,
# after `all`).

CONFORMANCE_DIR := $(dir $(lastword $(MAKEFILE_LIST)))
TPUC_BIN ?= $(abspath $(CONFORMANCE_DIR)../build/bin)
PATTERN ?= test_*
JOBS ?= 2
ONNX_TESTDATA ?= /usr/share/libonnx-testdata/data/node

conformance:
	TPUC_BIN=$(abspath $(TPUC_BIN)) ONNX_TESTDATA=$(ONNX_TESTDATA) \
		$(CONFORMANCE_DIR)../tests/conformance.sh -j $(JOBS) $(if $(filter 1,$(V)),-v) '$(PATTERN)'

.PHONY: conformance
