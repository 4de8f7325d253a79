# tpuc - one non-recursive Makefile for the library, the tools, the tests
# and the man pages.  `make deps` installs the Debian packages it needs.
#
#   make                build every tool into build/bin
#   make check          unit tests, bats tests and real-model tests
#   make SAN=1 check    the same under ASan + UBSan (objects in build-san/)
#   make WERROR=1       warnings are errors (CI)
#   make install PREFIX=/usr/local DESTDIR=
#   make uninstall PREFIX=/usr/local DESTDIR=   removes what install put there

PREFIX ?= /usr/local
BINDIR = $(PREFIX)/bin
MANDIR = $(PREFIX)/share/man
LIBDIR = $(PREFIX)/lib
INCLUDEDIR = $(PREFIX)/include
PKGCONFIGDIR = $(LIBDIR)/pkgconfig
COMPLETIONDIR = $(PREFIX)/share/bash-completion/completions
DOCDIR = $(PREFIX)/share/doc/tpuc
VERSION := $(shell sed -n 's/^\#define TPUC_VERSION "\(.*\)"/\1/p' lib/ir/version.h)
CC ?= gcc

ifeq ($(FUZZ),1)
# libFuzzer build (fuzz/fuzz.mk): clang, ASan + UBSan, coverage for the
# fuzzer; OpenMP pragmas left out (omp_* calls still link, from libgomp).
B := build-fuzz
CC := $(FUZZ_CC)
SANFLAGS := -fsanitize=address,undefined,fuzzer-no-link -fno-omit-frame-pointer \
	-fno-sanitize-recover=undefined
else ifeq ($(SAN),1)
B := build-san
SANFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
else
B := build
SANFLAGS :=
endif

CFLAGS ?= -O2 -g
WARNFLAGS := -Wall -Wextra -Wno-unused-parameter -Wshadow -Wstrict-prototypes
ifeq ($(WERROR),1)
WARNFLAGS += -Werror
endif
ifeq ($(FUZZ),1)
OMPFLAGS := -Wno-unknown-pragmas -Wno-unused-variable
OMPLIBS := -lgomp
else
OMPFLAGS := -fopenmp
OMPLIBS :=
endif
ALL_CFLAGS := -std=c11 -D_GNU_SOURCE $(WARNFLAGS) $(CFLAGS) $(SANFLAGS) $(OMPFLAGS)
ALL_CPPFLAGS := -Ilib -I$(B)/gen -MMD -MP $(CPPFLAGS)
LDLIBS := -lprotobuf-c -lmsgpackc -ldnnl -lzstd -lzip -lm -lpthread $(OMPLIBS)
ALL_LDFLAGS := $(SANFLAGS) $(OMPFLAGS) $(LDFLAGS)

TOOLS := onnx2top top-opt calibrate top2tpu weight-reorder layergroup \
	addr-assign codegen tpu-sim npz-compare ir-run ir-print tmodel-info ir-cut

ONNX_PROTO := /usr/include/onnx/onnx.proto
GEN_C := $(B)/gen/onnx.pb-c.c
LIB_SRC := $(sort $(wildcard lib/*/*.c))
LIB_OBJ := $(LIB_SRC:%.c=$(B)/%.o) $(B)/gen/onnx.pb-c.o
TOOL_BIN := $(TOOLS:%=$(B)/bin/%)
UNIT_SRC := $(sort $(wildcard tests/unit/*.c))
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(B)/unit/%)
# One fuzz harness per reader (fuzz/fuzz.mk); the replay drivers, built
# with the tools, replay tests/fuzz/ in the test suite.
FUZZ_READERS := onnx ir npz tmodel calib qtable
FUZZ_REPLAY := $(FUZZ_READERS:%=$(B)/fuzz/replay-%)
FUZZ_CC ?= $(firstword $(shell command -v clang-14 clang 2>/dev/null))
MAN1 := $(TOOLS:%=man/man1/%.1)
MAN5 := $(sort $(wildcard formats/*.5))
MAN3 := $(sort $(wildcard man/man3/*.3))
# What a program embedding libtpuc.a links besides it (tpuc.pc's Libs); a
# sanitizer build's library also needs the sanitizers' runtimes.
PC_LIBS := $(SANFLAGS) -lprotobuf-c -lmsgpackc -ldnnl -lzstd -lzip -lgomp -lm -lpthread

all: $(TOOL_BIN)

$(B)/gen/onnx.pb-c.c $(B)/gen/onnx.pb-c.h: $(ONNX_PROTO)
	@mkdir -p $(B)/gen
	protoc-c --c_out=$(B)/gen -I$(dir $(ONNX_PROTO)) $(ONNX_PROTO)

# Every library object may include the generated header.
$(LIB_SRC:%.c=$(B)/%.o): | $(B)/gen/onnx.pb-c.h

$(B)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CPPFLAGS) $(ALL_CFLAGS) -c -o $@ $<

$(B)/gen/onnx.pb-c.o: $(B)/gen/onnx.pb-c.c
	$(CC) $(ALL_CPPFLAGS) $(filter-out -Wshadow -Wstrict-prototypes,$(ALL_CFLAGS)) -c -o $@ $<

$(B)/libtpuc.a: $(LIB_OBJ)
	rm -f $@
	ar rcs $@ $^

$(B)/bin/%: $(B)/tools/%.o $(B)/libtpuc.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $< $(B)/libtpuc.a $(LDLIBS)

$(B)/unit/%: $(B)/tests/unit/%.o $(B)/libtpuc.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $< $(B)/libtpuc.a $(LDLIBS)

$(B)/tests/unit/%.o: | $(B)/gen/onnx.pb-c.h
$(B)/tools/%.o: | $(B)/gen/onnx.pb-c.h

# The test suite: C unit tests, then bats (tool behaviour and errors, and the
# real-model checks).  tests/run prints the closing "N passed, N failed".
check: $(TOOL_BIN) $(UNIT_BIN) $(FUZZ_REPLAY)
	B=$(B) bash tests/run

# Only the fast tests (no real models).
check-quick: $(TOOL_BIN) $(UNIT_BIN) $(FUZZ_REPLAY)
	B=$(B) QUICK=1 bash tests/run

# The quick tier without the long table-driven sweeps (the zoo, the op
# sweep, the ONNX conformance suite: make check runs them) nor the tests
# that do not run tpuc's C code: what CI runs under ASan + UBSan.
SAN_SKIP := zoo op-sweep conformance valgrind deps
check-san: $(TOOL_BIN) $(UNIT_BIN) $(FUZZ_REPLAY)
	B=$(B) QUICK=1 SKIP="$(SAN_SKIP)" bash tests/run

lint-man:
	mandoc -Tlint -W warning $(MAN1) $(MAN5) $(MAN3)

deps:
	sh scripts/deps.sh

example: $(TOOL_BIN)
	$(MAKE) --no-print-directory -f pipelines/deploy.mk TPUC_BIN=$(CURDIR)/$(B)/bin \
		MODEL=examples/tiny_cnn/model.onnx INPUT=examples/tiny_cnn/input.npz \
		CALIB=examples/tiny_cnn/calib.npz REF=examples/tiny_cnn/ref.npz \
		MODE=int8 OUT=$(B)/example compare

# Every supported real model through the pipeline, in both modes.
models: $(TOOL_BIN)
	$(MAKE) --no-print-directory -f pipelines/models.mk TPUC_BIN=$(CURDIR)/$(B)/bin OUTROOT=$(B)/models

# The pkg-config file for the installed library and header.
$(B)/tpuc.pc: lib/ir/version.h Makefile
	@mkdir -p $(B)
	printf '%s\n' 'prefix=$(PREFIX)' 'libdir=$${prefix}/lib' 'includedir=$${prefix}/include' '' \
		'Name: tpuc' 'Description: run tpuc .tmodel files on the simulated TPU (tpuc(3))' \
		'Version: $(VERSION)' 'Cflags: -I$${includedir}' \
		'Libs: -L$${libdir} -ltpuc $(PC_LIBS)' 'Libs.private: $(PC_LIBS)' > $@.tmp
	mv $@.tmp $@

# Every file install writes, relative to DESTDIR, for uninstall.
INSTALLED = $(TOOLS:%=$(BINDIR)/%) $(MAN1:man/man1/%=$(MANDIR)/man1/%) \
	$(MAN5:formats/%=$(MANDIR)/man5/%) $(MAN3:man/man3/%=$(MANDIR)/man3/%) \
	$(LIBDIR)/libtpuc.a $(INCLUDEDIR)/tpuc.h $(PKGCONFIGDIR)/tpuc.pc \
	$(TOOLS:%=$(COMPLETIONDIR)/%) $(DOCDIR)/LICENSE
# Its folders, deepest first: uninstall removes those left empty.
INSTALL_DIRS = $(BINDIR) $(MANDIR)/man1 $(MANDIR)/man3 $(MANDIR)/man5 $(MANDIR) \
	$(PKGCONFIGDIR) $(LIBDIR) $(INCLUDEDIR) $(COMPLETIONDIR) $(PREFIX)/share/bash-completion \
	$(DOCDIR) $(PREFIX)/share/doc $(PREFIX)/share

install: $(TOOL_BIN) $(B)/libtpuc.a $(B)/tpuc.pc
	mkdir -p $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man5 \
		$(DESTDIR)$(MANDIR)/man3 $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCLUDEDIR) \
		$(DESTDIR)$(PKGCONFIGDIR) $(DESTDIR)$(COMPLETIONDIR) $(DESTDIR)$(DOCDIR)
	cp $(TOOL_BIN) $(DESTDIR)$(BINDIR)/
	cp $(MAN1) $(DESTDIR)$(MANDIR)/man1/
	$(if $(MAN5),cp $(MAN5) $(DESTDIR)$(MANDIR)/man5/)
	$(if $(MAN3),cp $(MAN3) $(DESTDIR)$(MANDIR)/man3/)
	cp $(B)/libtpuc.a $(DESTDIR)$(LIBDIR)/
	cp lib/api/tpuc.h $(DESTDIR)$(INCLUDEDIR)/
	sed 's|^prefix=.*|prefix=$(PREFIX)|' $(B)/tpuc.pc > $(DESTDIR)$(PKGCONFIGDIR)/tpuc.pc
	for t in $(TOOLS); do cp completions/tpuc.bash $(DESTDIR)$(COMPLETIONDIR)/$$t || exit 1; done
	cp LICENSE $(DESTDIR)$(DOCDIR)/

uninstall:
	rm -f $(addprefix $(DESTDIR),$(INSTALLED))
	for d in $(addprefix $(DESTDIR),$(INSTALL_DIRS)); do \
		if [ -d "$$d" ]; then rmdir "$$d" 2>/dev/null || true; fi; done

clean:
	rm -rf build build-san build-fuzz

.PHONY: all check check-quick check-san lint-man deps example models install uninstall clean
.SECONDARY:

include pipelines/conformance.mk
include fuzz/fuzz.mk

-include $(shell find $(B) -name '*.d' 2>/dev/null)
