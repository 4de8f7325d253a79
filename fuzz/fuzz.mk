# fuzz.mk - the fuzz harnesses (fuzz/README.md), included by the Makefile.
#
#   make fuzz                   every harness for FUZZ_SECONDS (10) each
#   make fuzz FUZZ_SECONDS=600  a longer run
#
# With clang (FUZZ_CC) the harnesses link with libFuzzer into build-fuzz/
# and run from seed corpora made from examples/ (fuzz/seeds.sh); without
# it, the replay drivers built under SAN=1 replay the seeds and tests/fuzz/.
# Either fails on any crash, leak, timeout or sanitizer report.

FUZZ_SECONDS ?= 10
FUZZ_COMMON := $(B)/fuzz/common.o

$(B)/fuzz/replay-%: $(B)/fuzz/fuzz_%.o $(FUZZ_COMMON) $(B)/fuzz/replay.o $(B)/libtpuc.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $(filter %.o,$^) $(B)/libtpuc.a $(LDLIBS)

# libFuzzer binaries (make FUZZ=1 only).
$(B)/fuzz/fuzz-%: $(B)/fuzz/fuzz_%.o $(FUZZ_COMMON) $(B)/libtpuc.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -fsanitize=fuzzer -o $@ $(filter %.o,$^) $(B)/libtpuc.a $(LDLIBS)

$(B)/fuzz/%.o: | $(B)/gen/onnx.pb-c.h

fuzz-seeds: $(TOOL_BIN)
	sh fuzz/seeds.sh $(B)/bin $(B)/fuzz-seeds

ifneq ($(FUZZ_CC),)
fuzz: fuzz-seeds
	$(MAKE) --no-print-directory FUZZ=1 FUZZ_CC=$(FUZZ_CC) \
		$(FUZZ_READERS:%=build-fuzz/fuzz/fuzz-%)
	bash fuzz/run.sh build-fuzz/fuzz $(B)/fuzz-seeds $(FUZZ_SECONDS) $(FUZZ_READERS)
else
fuzz: fuzz-seeds
	$(MAKE) --no-print-directory SAN=1 $(FUZZ_READERS:%=build-san/fuzz/replay-%)
	bash fuzz/run.sh build-san/fuzz $(B)/fuzz-seeds 0 $(FUZZ_READERS)
endif

.PHONY: fuzz fuzz-seeds
