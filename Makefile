# stackpulse: hand-written top-level Makefile (make, make check, make install).
# configure (optional) writes config.mk with prefix and feature switches.
-include config.mk

prefix ?= /usr/local
bindir ?= $(prefix)/bin
libdir ?= $(prefix)/lib
includedir ?= $(prefix)/include
datadir ?= $(prefix)/share
mandir ?= $(datadir)/man
bashcompdir ?= $(datadir)/bash-completion/completions
DESTDIR ?=

CC ?= cc
PKG_CONFIG ?= pkg-config
AR ?= ar
OPT ?= -O2
CFLAGS ?= $(OPT) -g
# SANITIZE=1 builds everything with AddressSanitizer and UBSan, and with the recorder's
# check of its process table and module files after every drain (SP_DEBUG_FILES,
# lib/record/images.c), which aborts at the first inconsistency.
ifeq ($(SANITIZE),1)
CFLAGS += -fsanitize=address,undefined -fno-omit-frame-pointer -DSP_DEBUG_FILES
LDFLAGS += -fsanitize=address,undefined
endif
WARN = -Wall -Wextra -Wno-unused-parameter -Wshadow -Wstrict-prototypes -Wformat=2
# capstone (libcapstone-dev): stackpulse annotate's disassembler.
DEP_PKGS = libdw libelf liblzma capstone
DEP_CFLAGS := $(shell $(PKG_CONFIG) --cflags $(DEP_PKGS) 2>/dev/null)
# capstone gives annotate's disassembler its header; its library is loaded when annotate
# first disassembles (lib/report/annotate_disasm.c), so no other command carries it.
# libdw, libelf and the compression libraries they read sections with are linked from their
# archives when those exist (Debian's -dev packages ship them), the rest (libc, libm) as shared
# libraries: a warm report takes a few milliseconds, and the dynamic loader mapping and
# relocating five more shared libraries was a large part of them (docs/DESIGN.md, decision 10).
# libdebuginfod is not linked: libdw loads it itself when DEBUGINFOD_URLS is set.
# DYNAMIC_DEPS=1 (or configure --disable-static-deps) links all of them as shared libraries.
STATIC_DEP_NAMES = dw elf bz2 lzma z zstd
ifneq ($(DYNAMIC_DEPS),1)
# What the archives need, in link order, and which of those archives are here.
DEP_STATIC_LIBS := $(shell $(PKG_CONFIG) --static --libs $(filter-out capstone,$(DEP_PKGS)) 2>/dev/null)
DEP_STATIC_NEED := $(sort dw elf z $(patsubst -l%,%,$(filter $(addprefix -l,$(STATIC_DEP_NAMES)),$(DEP_STATIC_LIBS))))
DEP_STATIC_FOUND := $(foreach n,$(DEP_STATIC_NEED),$(if $(filter /%,$(shell $(CC) -print-file-name=lib$(n).a 2>/dev/null)),$(n)))
endif
ifeq ($(DYNAMIC_DEPS)$(if $(DEP_STATIC_LIBS),,none)$(DEP_STATIC_FOUND),$(DEP_STATIC_NEED))
DEP_LINK := static
DEP_LIBS := $(foreach f,$(DEP_STATIC_LIBS),$(if $(filter $(addprefix -l,$(DEP_STATIC_NEED)),$(f)),-l:lib$(patsubst -l%,%,$(f)).a,$(f)))
ZLIB := -l:libz.a
else
DEP_LINK := dynamic
DEP_LIBS := $(shell $(PKG_CONFIG) --libs $(filter-out capstone,$(DEP_PKGS)) 2>/dev/null)
ZLIB := -lz
endif
UNWIND_LIBS := $(shell $(PKG_CONFIG) --libs libunwind-generic 2>/dev/null)
CRITERION_LIBS := $(shell $(PKG_CONFIG) --libs criterion 2>/dev/null)
ALL_CFLAGS = -std=gnu11 $(WARN) -D_GNU_SOURCE -Ilib $(DEP_CFLAGS) $(FEATURE_CFLAGS) $(CFLAGS)
# libiberty (Debian libiberty-dev) has no pkg-config file: the demangler of binutils.
LIBS = $(DEP_LIBS) -liberty $(ZLIB) -lm

# lib/ holds one folder per pipeline stage (README "Source layout"); lib/stackpulse.h is
# the public header, each stage has its private ones.
LIB_SRC := $(sort $(wildcard lib/*/*.c))
LIB_OBJ := $(LIB_SRC:.c=.o)
LIB_HDR := $(wildcard lib/*.h lib/*/*.h)
# The public header and the parts it includes (lib/stackpulse/*.h).
PUBLIC_HDR := lib/stackpulse.h $(wildcard lib/stackpulse/*.h)
CMD_SRC := $(sort $(wildcard cmd/*.c))
CMD_OBJ := $(CMD_SRC:.c=.o)
UNIT_SRC := $(sort $(wildcard tests/unit/*.c))
UNIT_BIN := $(UNIT_SRC:.c=)
WORKLOAD_SRC := $(sort $(wildcard tests/workloads/*.c))
WORKLOAD_BIN := $(WORKLOAD_SRC:.c=)

all: stackpulse workloads

check-deps:
	@$(PKG_CONFIG) --exists $(DEP_PKGS) || { \
	  echo "stackpulse: missing libdw/libelf, liblzma or capstone development files: apt-get install libdw-dev libelf-dev liblzma-dev libcapstone-dev (or run scripts/install-deps)" >&2; exit 1; }
	@echo '#include <libiberty/demangle.h>' | $(CC) -E -x c - >/dev/null 2>&1 || { \
	  echo "stackpulse: missing libiberty (the C++ and Rust demangler): apt-get install libiberty-dev (or run scripts/install-deps)" >&2; exit 1; }

libstackpulse.a: $(LIB_OBJ)
	rm -f $@ && $(AR) rcs $@ $^

lib/%.o: lib/%.c $(LIB_HDR) | check-deps
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

cmd/%.o: cmd/%.c cmd/cli.h $(PUBLIC_HDR)
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

stackpulse: $(CMD_OBJ) libstackpulse.a
	$(CC) $(LDFLAGS) -o $@ $(CMD_OBJ) libstackpulse.a $(LIBS)

# Workloads are built -O2 without frame pointers on purpose: only DWARF CFI can unwind them.
tests/workloads/%: tests/workloads/%.c $(wildcard tests/workloads/*.h)
	$(CC) -O2 -g -fomit-frame-pointer -Wall -o $@ $< -lpthread -lm
# fp_chain is the exception: frame pointers and no unwind tables (no .eh_frame, no
# .debug_frame: no -g), so only a frame-pointer walk finds its callers.
tests/workloads/fp_chain: tests/workloads/fp_chain.c
	$(CC) -O2 -fno-omit-frame-pointer -fno-asynchronous-unwind-tables -fno-unwind-tables \
	  -Wall -o $@ $<
workloads: $(WORKLOAD_BIN)

tests/unit/%: tests/unit/%.c libstackpulse.a $(LIB_HDR) $(wildcard tests/unit/*.h)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $< libstackpulse.a $(LIBS) $(UNWIND_LIBS) $(CRITERION_LIBS)

unit: $(UNIT_BIN)

# make check: unit tests (Criterion), then end-to-end shell tests on real programs.
# Unit tests keep their debug-file copies and symbol cache in a scratch directory, not the user's.
check: all unit
	@fail=0; STACKPULSE_CACHE_DIR=$$(mktemp -d) && export STACKPULSE_CACHE_DIR; \
	for t in $(UNIT_BIN); do echo "== $$t"; ./$$t --jobs 1 || fail=1; done; \
	rm -rf "$$STACKPULSE_CACHE_DIR"; \
	STACKPULSE=$(CURDIR)/stackpulse sh tests/e2e/run || fail=1; exit $$fail

check-unit: unit
	@fail=0; STACKPULSE_CACHE_DIR=$$(mktemp -d) && export STACKPULSE_CACHE_DIR; \
	for t in $(UNIT_BIN); do ./$$t --jobs 1 || fail=1; done; rm -rf "$$STACKPULSE_CACHE_DIR"; exit $$fail

check-e2e: all
	STACKPULSE=$(CURDIR)/stackpulse sh tests/e2e/run

# The README's quick start: record a bundled workload and print its report.
demo: stackpulse tests/workloads/chain4
	./stackpulse record -F 999 -o demo.spool -- tests/workloads/chain4 -t 2
	./stackpulse report demo.spool

# The library's version, for stackpulse.pc: SP_VERSION in the public header.
VERSION := $(shell sed -n 's/^\#define SP_VERSION "\(.*\)"/\1/p' lib/stackpulse.h)

# stackpulse.pc names the installed paths (prefix, not DESTDIR: that is only a staging root).
install: stackpulse libstackpulse.a
	install -d $(DESTDIR)$(bindir) $(DESTDIR)$(libdir) $(DESTDIR)$(includedir) \
	  $(DESTDIR)$(libdir)/pkgconfig $(DESTDIR)$(mandir)/man1 $(DESTDIR)$(mandir)/man5 \
	  $(DESTDIR)$(bashcompdir)
	install -m 755 stackpulse $(DESTDIR)$(bindir)/stackpulse
	install -m 644 libstackpulse.a $(DESTDIR)$(libdir)/libstackpulse.a
	install -m 644 lib/stackpulse.h $(DESTDIR)$(includedir)/stackpulse.h
	install -d $(DESTDIR)$(includedir)/stackpulse
	install -m 644 lib/stackpulse/*.h $(DESTDIR)$(includedir)/stackpulse/
	sed -e 's|@prefix@|$(prefix)|g' -e 's|@libdir@|$(libdir)|g' \
	  -e 's|@includedir@|$(includedir)|g' -e 's|@version@|$(VERSION)|g' \
	  stackpulse.pc.in >$(DESTDIR)$(libdir)/pkgconfig/stackpulse.pc
	chmod 644 $(DESTDIR)$(libdir)/pkgconfig/stackpulse.pc
	for m in man/*.1; do [ -f "$$m" ] && install -m 644 $$m $(DESTDIR)$(mandir)/man1/; done; true
	for m in man/*.5; do [ -f "$$m" ] && install -m 644 $$m $(DESTDIR)$(mandir)/man5/; done; true
	install -m 644 completion/stackpulse.bash $(DESTDIR)$(bashcompdir)/stackpulse

# scripts/bench-report's tools: a large realistic spool, and a command's time and peak memory.
scripts/gen-spool: scripts/gen-spool.c libstackpulse.a $(LIB_HDR)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $< libstackpulse.a $(LIBS)
scripts/rusage-run: scripts/rusage-run.c
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $<
bench-tools: scripts/gen-spool scripts/rusage-run

# The README's embedding example, built against this tree's library.
examples/embed: examples/embed.c libstackpulse.a $(PUBLIC_HDR)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $< libstackpulse.a $(LIBS)
# The Tail example: a profile processed while it is recorded.
examples/tail: examples/tail.c libstackpulse.a $(PUBLIC_HDR)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $< libstackpulse.a $(LIBS)
embed-example: examples/embed examples/tail

# make check under ASan + UBSan in a copy of the tree (build-sanitize/), so that this tree's
# objects stay a normal build whatever happens; a leak or any UB report fails the run.
# ASan's and LSan's reports also go to files (named after the program), because some tests
# discard stderr or an exit status; files without an error in them hold LSan's warnings only.
# GCC's UBSan runtime writes to stderr whatever log_path says: it stops the program instead.
SANITIZE_REPORTS = $(CURDIR)/build-sanitize/reports
# Under the sanitizers the CLI corruption sweep (e2e 32) takes every 7th byte; the
# in-process sweep (tests/unit/corruption) still takes every one.
SANITIZE_ENV = ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:log_exe_name=1:log_path=$(SANITIZE_REPORTS)/asan \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	SPOOL_SWEEP_STEP=7
check-sanitize:
	rm -rf build-sanitize && mkdir build-sanitize
	tar -cf - --exclude=./build-sanitize --exclude=./build-fuzz --exclude=./.git . | \
	  tar -C build-sanitize -xf -
	$(MAKE) -C build-sanitize clean
	mkdir $(SANITIZE_REPORTS)
	@status=0; $(SANITIZE_ENV) $(MAKE) -C build-sanitize SANITIZE=1 check || status=1; \
	reports=$$(grep -lE 'ERROR: |runtime error:|SUMMARY: ' $(SANITIZE_REPORTS)/* 2>/dev/null); \
	if [ -n "$$reports" ]; then cat $$reports; \
	  echo "check-sanitize: sanitizer reports above (build-sanitize/reports/)" >&2; status=1; \
	fi; exit $$status

# Fuzzing with clang's libFuzzer (tests/fuzz/): the library is rebuilt with the harnesses'
# instrumentation and sanitizers in build-fuzz/, apart from the normal objects.
FUZZ_CC ?= clang
FUZZ_CFLAGS = -std=gnu11 $(WARN) -D_GNU_SOURCE -Ilib $(DEP_CFLAGS) -g -O1 \
	-fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined
FUZZ_SRC := $(filter-out tests/fuzz/make_seeds.c,$(sort $(wildcard tests/fuzz/*.c)))
FUZZ_BIN := $(patsubst tests/fuzz/%.c,build-fuzz/%,$(FUZZ_SRC))
FUZZ_LIB_OBJ := $(patsubst lib/%.c,build-fuzz/lib/%.o,$(LIB_SRC))

build-fuzz/lib/%.o: lib/%.c $(LIB_HDR) | check-deps
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c -o $@ $<
build-fuzz/libstackpulse.a: $(FUZZ_LIB_OBJ)
	rm -f $@ && $(AR) rcs $@ $^
build-fuzz/%: tests/fuzz/%.c build-fuzz/libstackpulse.a $(LIB_HDR)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $< build-fuzz/libstackpulse.a $(LIBS)
# The small ELF the report harness symbolizes against (tests/fuzz/report.c).
build-fuzz/report-target: tests/workloads/chain4.c
	@mkdir -p build-fuzz
	$(CC) -O2 -g -o $@ $< -lpthread -lm
# The seed generator uses the normal library: it only writes files.
build-fuzz/make_seeds: tests/fuzz/make_seeds.c libstackpulse.a
	@mkdir -p build-fuzz
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $< libstackpulse.a $(LIBS)

fuzz: $(FUZZ_BIN) build-fuzz/report-target
# Replay each harness's corpus, then fuzz each briefly (FUZZ_TIME seconds, default 20).
fuzz-replay: fuzz
	sh tests/fuzz/run $(FUZZ_BIN)
# Rewrite the committed seeds (tests/fuzz/corpus/*) after a format change.
fuzz-seeds: build-fuzz/make_seeds
	build-fuzz/make_seeds tests/fuzz/corpus

clean: clean-build-dirs
clean-build-dirs:
	rm -rf build-fuzz build-sanitize

clean:
	rm -f stackpulse libstackpulse.a lib/*/*.o cmd/*.o $(UNIT_BIN) $(WORKLOAD_BIN) examples/embed examples/tail \
	  scripts/gen-spool scripts/rusage-run

# dependency check, demo
.PHONY: demo all check check-unit check-e2e check-deps unit workloads install clean \
	embed-example bench-tools
.PHONY: check-sanitize fuzz fuzz-replay fuzz-seeds clean-build-dirs
.SECONDARY:
