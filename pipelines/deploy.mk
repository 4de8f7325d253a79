# deploy.mk - take one ONNX model through every tpuc stage and compare each
# stage with the one before, as TPU-MLIR's model_deploy does.
#
#   make -f pipelines/deploy.mk MODEL=m.onnx INPUT=in.npz CALIB=samples.npz \
#        REF=ref.npz MODE=int8 OUT=build/m [TPUC_BIN=build/bin] compare
#
# MODEL   the .onnx file (required)
# INPUT   test input .npz, keyed by input name (for the *_out.npz files)
# CALIB   calibration samples .npz, samples on the first axis (int8; with
#         f16 the table keeps ops that would overflow f16 in f32).  A model
#         quantised by itself (QDQ or QOperator ONNX, formats/tpuc-quant.5)
#         needs none with MODE=int8: its own scales are used, its float ops
#         stay f32; given CALIB, the table serves the tensors the model
#         leaves float, and the model's scales win where both have one
# REF     the framework's output for INPUT (optional; compared with Top IR)
# MODE    f32 | bf16 | f16 | int8 (default int8)     CHIP  default tpu-a
# SHAPE   input shapes for a model with dynamic dimensions, as onnx2top
#         --shape takes them: SHAPE="x=1,3,224,224 mask=1,128"; by default
#         the dimensions the model leaves open take INPUT's (onnx2top
#         --shapes-from INPUT)
# SHAPES  several static shapes in one model (a bundle of stages,
#         tpuc-tmodel(5)): a list of stages, each the shapes of the inputs
#         it sets, as SHAPE gives them but joined by '+':
#         SHAPES="x=1,3,224,224 x=8,3,224,224", or
#         SHAPES="ids=1,64+mask=1,64 ids=1,128+mask=1,128".  Inputs a
#         stage leaves out take INPUT's shapes.  Each stage goes through
#         the stages below in $(OUT)/shape1, shape2 ... with the one
#         calibration table (CALIB's samples, of SHAPE's or INPUT's
#         shape), and model.tmodel bundles them; tpu-sim runs the stage
#         whose shapes INPUT has.  Every shape runs exactly as if compiled
#         alone (codegen(1)).
# BIND    constants for graph inputs (onnx2top --bind FILE.npz): a sample
#         rate or a flag the model branches on is folded at import
# QTABLE  per-op modes for mixed precision (top2tpu --qtable), or "auto":
#         searched by calibrate --search-qtable --search-mode MODE on the
#         calibration samples so that the outputs reach EXPECTED_COS against
#         F32 (default calibrate's: bf16 0.999, f16 0.9999, int8 0.98 when
#         every output is a CTC text or a map, whose answer the search
#         checks step by step or pixel by pixel, or the outputs are a
#         detector's boxes and scores per anchor, else 0.99); the search writes
#         $(OUT)/auto.qtable with the table, and compare's Top IR vs Tpu IR
#         tolerance (TOL_TPU) is the goal written in it
# SEARCH_N  samples the search ranks ops on (default calibrate's, 4)
# SEARCH_HOLDOUT  samples after those it selects on (default calibrate's,
#         16): the qtable must reach EXPECTED_COS on them and the ranked
#         ones as one set, and on them alone (10th percentiles,
#         calibrate(1)); the samples after them, which no step of the
#         search sees, score the result (their 10th percentile is what the
#         search expects on the test input; when it is below the goal the
#         search chooses again with them held out too, and the held-out
#         score is the one expected)
# STATE   a stateful model run frame by frame (ir-run(1) --frames): its
#         OUT=IN pairs, each output fed to its input at the next frame
#         (STATE="hn=h0,cn=c0").  INPUT then holds FRAMES frames of each
#         other input stacked on a new first axis and the states' initial
#         values; CALIB one utterance of CALIB_FRAMES frames (default
#         FRAMES) the same way, which calibrate runs in sequence (and
#         QTABLE=auto searches so, at 0.9999 in int8: calibrate(1),
#         "Sequences"); every stage runs INPUT's frames with the state fed
#         back.  SHAPE gives one frame's shapes of a model whose inputs are
#         open (INPUT's stacked shapes are not a frame's)
# ASYM    1: int8 activations asymmetric, u8 with zero points (--asymmetric)
# TUNE    1: the search's table tuned per tensor against its readers'
#         error (calibrate --tune), 0: not.  Default 1 for MODE=int8
#         QTABLE=auto without STATE (the search then keeps fewer ops in
#         float), else 0
# EQUALISE  1: for MODE=int8 QTABLE=auto without STATE or SHAPES, the
#         channels between Convs balanced on the calibration samples first
#         (top-opt --equalise: the same function, with channels of about
#         equal peaks for per-tensor int8); the calibration, search and
#         lowering read $(OUT)/equalised.top, and top_out.npz stays
#         canonical.top's.  Default 0: it cost mobilenet_v3_large two
#         float ops and its top-1 (bench/unseen.sh, issue 12)
# OUT     output folder, one per model and mode (required)
# FRONT   folder for the files that depend on neither MODE nor CHIP, QTABLE
#         or ASYM: origin.top, canonical.top, top_out.npz and (unless
#         QTABLE=auto) cali.table (default OUT); give several modes of one
#         model one FRONT to import, calibrate and run Top IR once
# TPUC_BIN  folder holding the tools (default: found on PATH)
# CALIB_METHOD kld | minmax | percentile | mse (default kld)
# CALIB_N  samples to use (default all)
# TOL_REF, TOL_TPU, TOL_SIM  npz-compare tolerances COS,EUC for the three
#         comparisons (defaults below follow ARCHITECTURE.md: Top vs Tpu
#         0.99999 f32, 0.999 bf16, 0.9999 f16, 0.99 int8, QTABLE=auto's
#         goal; tpu-sim
#         bit-identical in int8, within rounding of the slicing otherwise)
#
# Targets: all (every stage file, default), compare, clean.  Every file is
# written by one tool into $(OUT) (or $(FRONT)) and nothing else, and tools
# write through a temporary beside their output, so several models run at
# once under make -j in separate OUT folders.

MODE ?= int8
CHIP ?= tpu-a
CALIB_METHOD ?= kld
CALIB_N ?=
TPUC_BIN ?=
QTABLE ?=
ASYM ?=
EQUALISE ?=
STATE ?=
FRAMES ?=
CALIB_FRAMES ?= $(FRAMES)
EXPECTED_COS ?=
SEARCH_N ?=
SEARCH_HOLDOUT ?=
SHAPE ?=
SHAPES ?=
BIND ?=
BINDFLAG := $(if $(BIND),--bind $(BIND))
SHAPEFLAGS := $(strip $(foreach s,$(SHAPE),--shape $(s)) $(if $(INPUT),--shapes-from $(INPUT)))
# stage K of SHAPES: its --shape options (INPUT's for the inputs it leaves out)
NSHAPES := $(words $(SHAPES))
STAGE_IDS := $(if $(SHAPES),$(shell seq 1 $(NSHAPES)))
stage_flags = $(strip $(foreach s,$(subst +, ,$(word $1,$(SHAPES))),--shape $(s)) $(if $(INPUT),--shapes-from $(INPUT)))
STAGE_FILES := $(foreach k,$(STAGE_IDS),$(foreach f,origin.top canonical.top lowered.tpu reordered.tpu grouped.tpu addressed.tpu,$(OUT)/shape$(k)/$(f)))
STAGE_ADDRESSED := $(foreach k,$(STAGE_IDS),$(OUT)/shape$(k)/addressed.tpu)

ifndef MODEL
$(error deploy.mk: set MODEL=file.onnx)
endif
ifndef OUT
$(error deploy.mk: set OUT=folder)
endif
ifneq ($(STATE),)
ifeq ($(FRAMES),)
$(error deploy.mk: STATE needs FRAMES, the number of frames INPUT holds)
endif
endif
RUNFRAMES := $(if $(STATE),--frames $(FRAMES) --state $(STATE))
CALFRAMES := $(if $(STATE),--frames $(CALIB_FRAMES) --state $(STATE))
FRONT ?= $(OUT)
ifeq ($(filter $(MODE),f32 bf16 f16 int8),)
$(error deploy.mk: MODE must be f32, bf16, f16 or int8, not '$(MODE)')
endif
# switches: empty, 1 or 0
$(foreach v,ASYM EQUALISE TUNE,$(if $(filter-out 1 0,$($v)),\
  $(error deploy.mk: $v must be 1 or 0, not '$($v)')))

# tool NAME: the command; tooldep NAME: the binary as a prerequisite, so a
# rebuilt tool redoes its stage (only when TPUC_BIN is given).
tool = $(if $(TPUC_BIN),$(TPUC_BIN)/$1,$1)
tooldep = $(if $(TPUC_BIN),$(TPUC_BIN)/$1)
need = $(if $($1),,$(error deploy.mk: set $1=... for $@))

# A table is needed when the mode, or a line of a given qtable, is int8,
# for a search, and for f16 when samples are given (the range check).
AUTO := $(filter auto,$(QTABLE))
QFILE := $(if $(AUTO),$(OUT)/auto.qtable,$(QTABLE))
NEED_TABLE := $(if $(and $(filter int8,$(MODE)),$(CALIB))$(AUTO)$(and $(filter f16,$(MODE)),$(CALIB)),1,$(if $(QTABLE),$(shell grep -qs '[[:space:]]int8[[:space:]]*$$' $(QTABLE) && echo 1)))
TABLE := $(if $(NEED_TABLE),$(if $(AUTO),$(OUT),$(FRONT))/cali.table)
# --asymmetric concerns int8 ops only: the mode's, or a given qtable's
HAS_INT8 := $(if $(filter int8,$(MODE)),1,$(if $(and $(QTABLE),$(if $(AUTO),,1)),$(shell grep -qs '[[:space:]]int8[[:space:]]*$$' $(QTABLE) && echo 1)))
ASYMFLAG := $(if $(filter 1,$(ASYM)),$(if $(HAS_INT8),--asymmetric))
TUNE_DEFAULT := $(if $(and $(AUTO),$(filter int8,$(MODE)),$(if $(STATE),,1)),1,0)
TUNEFLAG := $(if $(filter 1,$(or $(TUNE),$(TUNE_DEFAULT))),$(if $(AUTO),--tune))
EQ_ON := $(if $(and $(AUTO),$(filter int8,$(MODE)),$(CALIB),$(filter 1,$(EQUALISE))),$(if $(STATE)$(SHAPES),,1))
# the graph calibration, the search and the lowering read
QTOP := $(if $(EQ_ON),$(OUT)/equalised.top,$(FRONT)/canonical.top)
ifneq ($(AUTO),)
ifeq ($(MODE),f32)
$(error deploy.mk: QTABLE=auto searches which ops to keep in f32: MODE must be int8, bf16 or f16)
endif
endif

TOL_TPU_f32 := 0.99999,0.99
TOL_TPU_bf16 := 0.999,0.95
TOL_TPU_f16 := 0.9999,0.99
TOL_TPU_int8 := 0.99,0.85
# QTABLE=auto: the goal the search reached for (its qtable's second line)
# and the euclidean similarity that cosine allows at equal norms
TOL_TPU_auto := $$(awk 'NR == 2 && match($$0, /, goal [-0-9.e+]+/) { g = substr($$0, RSTART + 7, RLENGTH - 7); \
	printf "%s,%.6f", g, 1 - sqrt(2 * (1 - g)) }' $(QFILE))
TOL_TPU ?= $(if $(AUTO),$(TOL_TPU_auto),$(TOL_TPU_$(MODE)))
# int8 alone is bit-exact on the simulator; a float op (float mode, or kept
# float by a qtable) may differ within rounding where the layer groups
# slice it.
SIM_EXACT := 1.0,1.0
SIM_ROUNDING := 0.99999,0.99
TOL_SIM ?= $(if $(and $(filter int8,$(MODE)),$(if $(QTABLE),,1)),$(SIM_EXACT),$(SIM_ROUNDING))
TOL_REF ?= 0.99999,0.99

STAGES := $(FRONT)/origin.top $(FRONT)/canonical.top $(if $(EQ_ON),$(QTOP)) $(TABLE) $(if $(AUTO),$(QFILE)) $(OUT)/lowered.tpu \
	$(OUT)/reordered.tpu $(OUT)/grouped.tpu $(OUT)/addressed.tpu $(STAGE_FILES) $(OUT)/model.tmodel
OUTPUTS := $(FRONT)/top_out.npz $(OUT)/tpu_out.npz $(OUT)/sim_out.npz

all: $(STAGES)

# The settings the files were made with: a change (another MODE, CHIP or
# MODEL in the same OUT) rebuilds everything made from them.  front.cfg
# holds the model's and input's, calib.cfg the calibration's.
CFG := $(MODEL) $(SHAPE) [$(SHAPES)] $(BIND) $(INPUT) $(RUNFRAMES) $(MODE) $(CHIP) $(QTABLE) $(ASYMFLAG) $(TUNEFLAG) $(if $(EQ_ON),eq) $(if $(AUTO),$(EXPECTED_COS) $(SEARCH_N) $(SEARCH_HOLDOUT)) \
	$(if $(TABLE),$(CALIB) $(CALIB_METHOD) $(CALIB_N) $(CALFRAMES))
$(OUT)/deploy.cfg: FORCE
	@mkdir -p $(OUT)
	@echo '$(CFG)' | cmp -s - $@ || echo '$(CFG)' > $@
FRONT_CFG := $(MODEL) $(SHAPE) $(BIND) $(INPUT) $(RUNFRAMES)
$(FRONT)/front.cfg: FORCE
	@mkdir -p $(FRONT)
	@echo '$(FRONT_CFG)' | cmp -s - $@ || echo '$(FRONT_CFG)' > $@
CALIB_CFG := $(CALIB) $(CALIB_METHOD) $(CALIB_N) $(CALFRAMES)
$(FRONT)/calib.cfg: $(FRONT)/front.cfg FORCE
	@echo '$(CALIB_CFG)' | cmp -s - $@ || echo '$(CALIB_CFG)' > $@

$(FRONT)/origin.top: $(MODEL) $(FRONT)/front.cfg $(call tooldep,onnx2top)
	$(call tool,onnx2top) $(MODEL) $(strip $(BINDFLAG) $(SHAPEFLAGS)) -o $@

$(FRONT)/canonical.top: $(FRONT)/origin.top $(call tooldep,top-opt)
	$(call tool,top-opt) $< -o $@

$(OUT)/equalised.top: $(FRONT)/canonical.top $(CALIB) $(OUT)/deploy.cfg $(call tooldep,top-opt)
	$(call tool,top-opt) $< --passes=dce --equalise $(CALIB) -o $@

ifeq ($(AUTO),)
$(FRONT)/cali.table: $(FRONT)/canonical.top $(CALIB) $(FRONT)/calib.cfg $(call tooldep,calibrate)
	$(call need,CALIB)$(call tool,calibrate) $< -d $(CALIB) --method $(CALIB_METHOD) \
		$(if $(CALIB_N),-n $(CALIB_N)) $(CALFRAMES) -o $@
else
# One calibrate run writes the table, then the searched qtable: the qtable
# is the target that runs it, so a failed search is redone next time.
$(OUT)/cali.table: $(OUT)/auto.qtable
$(OUT)/auto.qtable: $(QTOP) $(CALIB) $(OUT)/deploy.cfg $(call tooldep,calibrate)
	$(call need,CALIB)$(call tool,calibrate) $< -d $(CALIB) --method $(CALIB_METHOD) \
		$(if $(CALIB_N),-n $(CALIB_N)) $(CALFRAMES) -o $(OUT)/cali.table \
		--search-qtable $@ --search-mode $(MODE) $(if $(EXPECTED_COS),--expected-cos $(EXPECTED_COS)) \
		--chip $(CHIP) $(ASYMFLAG) $(TUNEFLAG) \
		$(if $(SEARCH_N),--search-samples $(SEARCH_N)) \
		$(if $(SEARCH_HOLDOUT),--search-holdout $(SEARCH_HOLDOUT))
endif

$(OUT)/lowered.tpu: $(QTOP) $(TABLE) $(QFILE) $(OUT)/deploy.cfg $(call tooldep,top2tpu)
	$(call tool,top2tpu) $< --chip $(CHIP) --mode $(MODE) $(if $(TABLE),--calib $(TABLE)) \
		$(if $(QFILE),--qtable $(QFILE)) $(ASYMFLAG) -o $@

$(OUT)/reordered.tpu: $(OUT)/lowered.tpu $(call tooldep,weight-reorder)
	$(call tool,weight-reorder) $< -o $@

$(OUT)/grouped.tpu: $(OUT)/reordered.tpu $(call tooldep,layergroup)
	$(call tool,layergroup) $< -o $@

$(OUT)/addressed.tpu: $(OUT)/grouped.tpu $(call tooldep,addr-assign)
	$(call tool,addr-assign) $< -o $@

ifeq ($(SHAPES),)
$(OUT)/model.tmodel: $(OUT)/addressed.tpu $(call tooldep,codegen)
	$(call tool,codegen) $< -o $@
else
$(OUT)/model.tmodel: $(STAGE_ADDRESSED) $(call tooldep,codegen)
	$(call tool,codegen) $(STAGE_ADDRESSED) -o $@
endif

# Each stage of SHAPES, $(OUT)/shapeK/, through the same tools as above.
$(OUT)/shape%/origin.top: $(MODEL) $(OUT)/deploy.cfg $(call tooldep,onnx2top)
	@mkdir -p $(@D)
	$(call tool,onnx2top) $(MODEL) $(strip $(BINDFLAG) $(call stage_flags,$*)) -o $@

$(OUT)/shape%/canonical.top: $(OUT)/shape%/origin.top $(call tooldep,top-opt)
	$(call tool,top-opt) $< -o $@

$(OUT)/shape%/lowered.tpu: $(OUT)/shape%/canonical.top $(TABLE) $(QFILE) $(OUT)/deploy.cfg $(call tooldep,top2tpu)
	$(call tool,top2tpu) $< --chip $(CHIP) --mode $(MODE) $(if $(TABLE),--calib $(TABLE)) \
		$(if $(QFILE),--qtable $(QFILE)) $(ASYMFLAG) -o $@

$(OUT)/shape%/reordered.tpu: $(OUT)/shape%/lowered.tpu $(call tooldep,weight-reorder)
	$(call tool,weight-reorder) $< -o $@

$(OUT)/shape%/grouped.tpu: $(OUT)/shape%/reordered.tpu $(call tooldep,layergroup)
	$(call tool,layergroup) $< -o $@

$(OUT)/shape%/addressed.tpu: $(OUT)/shape%/grouped.tpu $(call tooldep,addr-assign)
	$(call tool,addr-assign) $< -o $@

# Each stage run on the test input.
$(FRONT)/top_out.npz: $(FRONT)/canonical.top $(INPUT) $(call tooldep,ir-run)
	$(call need,INPUT)$(call tool,ir-run) $< -i $(INPUT) $(RUNFRAMES) -o $@

$(OUT)/tpu_out.npz: $(OUT)/lowered.tpu $(INPUT) $(call tooldep,ir-run)
	$(call need,INPUT)$(call tool,ir-run) $< -i $(INPUT) $(RUNFRAMES) -o $@

$(OUT)/sim_out.npz: $(OUT)/model.tmodel $(INPUT) $(call tooldep,tpu-sim)
	$(call need,INPUT)$(call tool,tpu-sim) $< -i $(INPUT) $(RUNFRAMES) -o $@

# Every comparison runs and prints its table; the target fails if any did.
compare: $(OUTPUTS)
	@fail=0; \
	if [ -n "$(REF)" ]; then \
		echo "== reference vs Top IR, f32 ($(REF) vs $(FRONT)/top_out.npz, tolerance $(TOL_REF))"; \
		$(call tool,npz-compare) $(REF) $(FRONT)/top_out.npz --tolerance $(TOL_REF) || fail=1; \
	fi; \
	echo "== Top IR vs Tpu IR, $(MODE) ($(FRONT)/top_out.npz vs $(OUT)/tpu_out.npz, tolerance $(TOL_TPU))"; \
	$(call tool,npz-compare) $(FRONT)/top_out.npz $(OUT)/tpu_out.npz --tolerance $(TOL_TPU) || fail=1; \
	echo "== Tpu IR vs tpu-sim, $(MODE) ($(OUT)/tpu_out.npz vs $(OUT)/sim_out.npz, tolerance $(TOL_SIM))"; \
	$(call tool,npz-compare) $(OUT)/tpu_out.npz $(OUT)/sim_out.npz --tolerance $(TOL_SIM) || fail=1; \
	if [ -n "$(REF)" ] && [ "$(MODE)" = f32 ] && [ -z "$(QTABLE)" ]; then \
		echo "== reference vs tpu-sim, f32 ($(REF) vs $(OUT)/sim_out.npz, tolerance $(TOL_REF))"; \
		$(call tool,npz-compare) $(REF) $(OUT)/sim_out.npz --tolerance $(TOL_REF) || fail=1; \
	fi; \
	exit $$fail

clean:
	rm -f $(STAGES) $(OUT)/cali.table $(OUT)/auto.qtable $(OUTPUTS) $(OUT)/deploy.cfg \
		$(FRONT)/front.cfg $(FRONT)/calib.cfg
	$(if $(STAGE_IDS),rmdir $(foreach k,$(STAGE_IDS),$(OUT)/shape$(k)) 2>/dev/null || true)

FORCE:
.PHONY: all compare clean FORCE
.DELETE_ON_ERROR:
