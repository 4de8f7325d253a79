# accuracy.mk - where a lowered model loses accuracy: run the Top and the
# Tpu graph on one input with every tensor dumped, compare them layer by
# layer in graph order, and name the first layer below tolerance.
#
#   make -f pipelines/accuracy.mk MODEL=m.onnx INPUT=in.npz CALIB=samples.npz \
#        MODE=int8 OUT=build/m-acc [TPUC_BIN=build/bin] [QTABLE=m.qtable]
#
# MODEL   the .onnx file (required)
# INPUT   the input .npz, keyed by input name (required)
# CALIB   calibration samples .npz, samples on the first axis (int8 and qtables
#         with int8; with f16 the table keeps ops that would overflow f16 in f32)
# MODE    f32 | bf16 | f16 | int8 (default int8)      CHIP  default tpu-a
# SHAPE   input shapes for dynamic dimensions (onnx2top --shape), e.g.
#         SHAPE="x=1,3,224,224"; by default INPUT's (onnx2top --shapes-from)
# QTABLE  per-op modes for mixed precision (optional; top2tpu --qtable)
# OUT     output folder (required)
# TPUC_BIN  folder holding the tools (default: found on PATH)
# CALIB_METHOD kld | minmax | percentile | mse (default kld)
# TOL     npz-compare tolerance COS,EUC per layer (default by MODE: int8
#         0.99,0.9; bf16 0.999,0.95; f16 0.9999,0.99; f32 0.99999,0.999)
#
# Targets:
#   layers (default)  $(OUT)/layers.txt: the per-layer table (cosine,
#                     euclidean similarity, SQNR) in graph order, then the
#                     first layer below TOL; printed too; succeeds either way
#   check             the same, but fails when a layer is below TOL
#   task              $(OUT)/task.txt: the graph outputs of Top and Tpu on
#                     INPUT compared by cosine and by a task-level check
#                     (npz-compare --task TASK): top-1/top-5 for a
#                     classifier, CTC text for a text recogniser, binary or
#                     argmax map agreement, error and decision for one
#                     number; printed too; fails when an output fails
#   bisect            $(OUT)/bisect.txt: the first layer whose tpu-sim output
#                     differs from ir-run's, or whose output falls below
#                     cosine BISECT_COS against F32, found by cutting the
#                     Tpu IR there (ir-cut), rebuilding it and running it on
#                     tpu-sim, bisecting over the layers in graph order
#                     (pipelines/bisect-layers.sh); printed too
#   clean
#
# BISECT_COS  cosine against F32 a layer must keep (default: TOL's cosine)
# TASK    the task check of each output, as npz-compare --task takes it
#         (default auto: chosen by the output's shape and values)

ACC_DIR := $(dir $(lastword $(MAKEFILE_LIST)))
MODE ?= int8
CHIP ?= tpu-a
CALIB_METHOD ?= kld
TPUC_BIN ?=
QTABLE ?=
SHAPE ?=
TASK ?= auto
SHAPEFLAGS := $(strip $(foreach s,$(SHAPE),--shape $(s)) $(if $(INPUT),--shapes-from $(INPUT)))

ifndef MODEL
$(error accuracy.mk: set MODEL=file.onnx)
endif
ifndef INPUT
$(error accuracy.mk: set INPUT=input.npz)
endif
ifndef OUT
$(error accuracy.mk: set OUT=folder)
endif
ifeq ($(filter $(MODE),f32 bf16 f16 int8),)
$(error accuracy.mk: MODE must be f32, bf16, f16 or int8, not '$(MODE)')
endif

tool = $(if $(TPUC_BIN),$(TPUC_BIN)/$1,$1)
tooldep = $(if $(TPUC_BIN),$(TPUC_BIN)/$1)

TOL_int8 := 0.99,0.9
TOL_bf16 := 0.999,0.95
TOL_f16 := 0.9999,0.99
TOL_f32 := 0.99999,0.999
TOL ?= $(TOL_$(MODE))

# A table is needed when the mode or any qtable line is int8, and for f16
# when samples are given (the range check).
NEED_TABLE := $(if $(filter int8,$(MODE))$(and $(filter f16,$(MODE)),$(CALIB)),1,$(if $(QTABLE),$(shell grep -qs '[[:space:]]int8[[:space:]]*$$' $(QTABLE) && echo 1)))
TABLE := $(if $(NEED_TABLE),$(OUT)/cali.table)

BISECT_COS ?= $(firstword $(subst $(comma), ,$(TOL)))
comma := ,

.PHONY: layers check task bisect clean FORCE
layers: $(OUT)/layers.txt
	@cat $<

check: $(OUT)/layers.txt
	@cat $<
	@! grep -q '^first layer below tolerance:' $<

# The settings the files were made with: any change rebuilds.
CFG := $(MODEL) $(SHAPE) $(INPUT) $(MODE) $(CHIP) $(QTABLE) $(TOL) $(if $(TABLE),$(CALIB) $(CALIB_METHOD))
$(OUT)/accuracy.cfg: FORCE
	@mkdir -p $(OUT)
	@echo '$(CFG)' | cmp -s - $@ || echo '$(CFG)' > $@

$(OUT)/canonical.top: $(MODEL) $(OUT)/accuracy.cfg $(call tooldep,onnx2top) $(call tooldep,top-opt)
	$(call tool,onnx2top) $(MODEL) $(SHAPEFLAGS) -o $@.origin
	$(call tool,top-opt) $@.origin -o $@
	rm -f $@.origin

$(OUT)/cali.table: $(OUT)/canonical.top $(CALIB) $(call tooldep,calibrate)
	$(if $(CALIB),,$(error accuracy.mk: set CALIB=samples.npz for int8))$(call tool,calibrate) $< -d $(CALIB) --method $(CALIB_METHOD) -o $@

$(OUT)/lowered.tpu: $(OUT)/canonical.top $(TABLE) $(QTABLE) $(call tooldep,top2tpu)
	$(call tool,top2tpu) $< --chip $(CHIP) --mode $(MODE) $(if $(TABLE),--calib $(TABLE)) \
		$(if $(QTABLE),--qtable $(QTABLE)) -o $@

$(OUT)/top_all.npz: $(OUT)/canonical.top $(INPUT) $(call tooldep,ir-run)
	$(call tool,ir-run) $< -i $(INPUT) --dump-all -o $@

$(OUT)/tpu_all.npz: $(OUT)/lowered.tpu $(INPUT) $(call tooldep,ir-run)
	$(call tool,ir-run) $< -i $(INPUT) --dump-all -o $@

# npz-compare lists the tensors of the Top dump in graph order; its exit
# status only says whether one fell below TOL, which the summary line names.
$(OUT)/layers.txt: $(OUT)/top_all.npz $(OUT)/tpu_all.npz $(call tooldep,npz-compare)
	{ $(call tool,npz-compare) $(OUT)/top_all.npz $(OUT)/tpu_all.npz --tolerance $(TOL) 2>&1; \
	  true; } > $@.tmp
	awk 'NR > 1 && $$NF != "PASS" && $$0 ~ / FAIL / { print "first layer below tolerance: " $$1; exit }' \
		$@.tmp > $@.first
	if [ -s $@.first ]; then cat $@.first >> $@.tmp; \
	else echo "every layer within tolerance $(TOL)" >> $@.tmp; fi
	rm -f $@.first
	mv $@.tmp $@

task: $(OUT)/task.txt
	@cat $<
	@grep -q '^task: every output passes' $<

$(OUT)/top_out.npz: $(OUT)/canonical.top $(INPUT) $(call tooldep,ir-run)
	$(call tool,ir-run) $< -i $(INPUT) -o $@

$(OUT)/tpu_out.npz: $(OUT)/lowered.tpu $(INPUT) $(call tooldep,ir-run)
	$(call tool,ir-run) $< -i $(INPUT) -o $@

# Remade every time: TASK is not among the settings in accuracy.cfg.
$(OUT)/task.txt: $(OUT)/top_out.npz $(OUT)/tpu_out.npz FORCE $(call tooldep,npz-compare)
	if $(call tool,npz-compare) $(OUT)/top_out.npz $(OUT)/tpu_out.npz --tolerance $(TOL) \
		--task $(TASK) > $@.tmp 2>&1; then echo "task: every output passes" >> $@.tmp; \
	else echo "task: an output fails" >> $@.tmp; fi
	mv $@.tmp $@

bisect: $(OUT)/bisect.txt
	@cat $<

# Remade every time: BISECT_COS is not among the settings in accuracy.cfg.
$(OUT)/bisect.txt: $(OUT)/lowered.tpu $(OUT)/top_all.npz $(OUT)/tpu_all.npz $(INPUT) FORCE \
		$(call tooldep,ir-cut) $(call tooldep,tpu-sim) $(call tooldep,codegen)
	rm -rf $(OUT)/bisect
	TPUC_BIN=$(TPUC_BIN) sh $(ACC_DIR)bisect-layers.sh $(OUT)/lowered.tpu \
		$(INPUT) $(OUT)/tpu_all.npz $(OUT)/top_all.npz $(BISECT_COS) $(OUT)/bisect > $@.tmp
	mv $@.tmp $@

clean:
	rm -rf $(OUT)/accuracy.cfg $(OUT)/canonical.top $(OUT)/cali.table $(OUT)/lowered.tpu \
		$(OUT)/top_all.npz $(OUT)/tpu_all.npz $(OUT)/layers.txt $(OUT)/bisect.txt $(OUT)/bisect \
		$(OUT)/top_out.npz $(OUT)/tpu_out.npz $(OUT)/task.txt

FORCE:
