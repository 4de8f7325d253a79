# models.mk - run pipelines/deploy.mk over the real models that tpuc
# supports, in every mode, each into its own folder (make -j runs them at once).
#
#   make -f pipelines/models.mk [-j2] [NAMES="resnet18"] [MODES="int8"] \
#        [TPUC_BIN=build/bin] [MODELS=../shared/models] [OUTROOT=build/models]
#
# Each model folder holds model.onnx, input.npz, calib.npz and ref.npz
# (../shared/models/README.md).  Target NAME-MODE runs one of them.

HERE := $(dir $(lastword $(MAKEFILE_LIST)))
MODELS ?= $(or $(TPUC_MODELS),$(HERE)../../shared/models)
NAMES ?= resnet18 mobilenet_v2
MODES ?= int8 f32
OUTROOT ?= build/models
TPUC_BIN ?=

all:

# Each model's output together, when it is done, under make -j.
MAKEFLAGS += --output-sync=recurse

# run NAME MODE: the target NAME-MODE.
define run
$(1)-$(2):
	@echo "== $(1) $(2)"
	+$$(MAKE) --no-print-directory -f $(HERE)deploy.mk TPUC_BIN=$(TPUC_BIN) \
		MODEL=$(MODELS)/$(1)/model.onnx INPUT=$(MODELS)/$(1)/input.npz \
		CALIB=$(MODELS)/$(1)/calib.npz REF=$(MODELS)/$(1)/ref.npz \
		MODE=$(2) OUT=$(OUTROOT)/$(1)-$(2) compare
RUNS += $(1)-$(2)
endef
RUNS :=
$(foreach n,$(NAMES),$(foreach m,$(MODES),$(eval $(call run,$(n),$(m)))))

all: $(RUNS)

.PHONY: all $(RUNS)
