# tgc: a native port of tinygrad 0.11.0's scheduler, with C/OpenCL/CUDA codegen.
#   make              build/tgc and build/libtgc.a (optimised)
#   make debug        -O0 -g with ASan+UBSan into build-debug/
#   make test         every test suite (Criterion unit tests, CLI tests, corpus conformance)
#   make conformance  the scoreboard over ../shared/oracle
#   make randcheck    tgc against tinygrad on seeded random programs (tools/randgraph.py; RAND_SEEDS=A:B)
#   make bench        scheduling speed over the largest corpus graphs
#   make cachestat    one schedule's instructions and cache misses per bench graph (cachegrind: the
#                     same counts on every run, where make bench's times move with the machine)
#   make pgo          a profile-guided build (gcc) in build-pgo/: `make bench BUILD=build-pgo`
#   make opts-sweep   random opt lists (PADTO included) on the numeric corpus against tinygrad's values
#   make upstream     tinygrad 0.11.0's own test suite recorded as graphs and scored (UPSTREAM_TESTS=a,b)
#   make fuzz         libFuzzer on the graph reader and scheduler (FUZZ_SECONDS=N; FUZZ_TARGET=codegen adds codegen)
CC      ?= cc
BUILD   ?= build
ORACLE  ?= ../shared/oracle
# the corpus scores 100% on every column: any regression fails `make test`
CONFORMANCE_BARS ?= --count-bar 1 --ast-bar 1 --order-bar 1 --bufs-bar 1 --meta-bar 1
# -O3 with link-time optimization (gcc): the scheduler's hot paths cross files (interning, the
# rewrite engine, shapes); `make bench` schedules 6-10% faster than with -O2 alone
LTO     := $(if $(findstring Free Software Foundation,$(shell $(CC) --version 2>/dev/null)),-flto=auto,)
OPT     ?= -O3 $(LTO)
WARN    := -Wall -Wextra -Werror -Wshadow -Wno-unused-parameter -Wstrict-prototypes -Wmissing-prototypes
CFLAGS  ?=
ALL_CFLAGS := -std=c11 -D_GNU_SOURCE $(OPT) $(WARN) $(CFLAGS) -Ilib -MMD -MP
LDLIBS  := -lcjson -lm -ldl
LIB_SRC := $(sort $(wildcard lib/*/*.c))
LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/%.o)
TEST_SRC := $(sort $(wildcard tests/test_*.c))
TEST_BIN := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)

.PHONY: all debug test test-asan unit cli-test conformance randcheck upstream pytest bench cachestat pgo bench-kernels opts-sweep scale leak fuzz clean
all: $(BUILD)/tgc $(BUILD)/libtgc.a

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

$(BUILD)/libtgc.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/tgc: $(BUILD)/cli/tgc.o $(BUILD)/libtgc.a
	$(CC) $(OPT) $(CFLAGS) $^ -o $@ $(LDLIBS) $(LDFLAGS)

$(BUILD)/tests/%: tests/%.c $(BUILD)/libtgc.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(TEST_CFLAGS) -Itests $< $(BUILD)/libtgc.a -o $@ -lcriterion $(LDLIBS) $(TEST_LDLIBS) $(LDFLAGS)

# test_driver parses the emitted C with libclang
LLVM_CONFIG ?= llvm-config
LLVM_LIBDIR := $(shell $(LLVM_CONFIG) --libdir 2>/dev/null || echo /usr/lib/llvm-14/lib)
LLVM_INCDIR := $(shell $(LLVM_CONFIG) --includedir 2>/dev/null || echo /usr/lib/llvm-14/include)
$(BUILD)/tests/test_driver: TEST_CFLAGS = -isystem $(LLVM_INCDIR)
$(BUILD)/tests/test_driver: TEST_LDLIBS = -L$(LLVM_LIBDIR) -Wl,-rpath,$(LLVM_LIBDIR) -lclang
# test_gpu_src parses the emitted OpenCL C with libclang (test_gpu, which runs PoCL, must not link it)
$(BUILD)/tests/test_gpu_src: TEST_CFLAGS = -isystem $(LLVM_INCDIR)
$(BUILD)/tests/test_gpu_src: TEST_LDLIBS = -L$(LLVM_LIBDIR) -Wl,-rpath,$(LLVM_LIBDIR) -lclang

$(BUILD)/conformance: tests/conformance.c $(BUILD)/libtgc.a
	$(CC) $(ALL_CFLAGS) $< $(BUILD)/libtgc.a -o $@ $(LDLIBS) $(LDFLAGS)

debug:
	$(MAKE) BUILD=build-debug OPT="-O0 -g -fsanitize=address,undefined -fno-omit-frame-pointer" \
	  LDFLAGS="-fsanitize=address,undefined" all

# the whole test suite on an ASan+UBSan build (build-asan/; any sanitizer report fails it)
SAN_OPT = -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
# (kernels there are compiled by cc: LeakSanitizer's exit-time tracer crashes on the worker
# threads of clang's libomp, which an OpenMP kernel leaves running in the process)
test-asan:
	TGC_CC=cc $(MAKE) BUILD=build-asan OPT="$(SAN_OPT)" LDFLAGS="-fsanitize=address,undefined" test

unit: $(TEST_BIN)
	@set -e; for t in $(TEST_BIN); do echo "== $$t"; TGC_ORACLE=$(ORACLE) LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp $$t --jobs 2; done

cli-test: $(BUILD)/tgc
	TGC=$(BUILD)/tgc ORACLE=$(ORACLE) sh tests/cli.sh
	TGC=$(BUILD)/tgc sh tests/robust.sh
	TGC=$(BUILD)/tgc ORACLE=$(ORACLE) sh tests/leak.sh

# valgrind over the schedule path (also part of cli-test)
leak: $(BUILD)/tgc
	TGC=$(BUILD)/tgc ORACLE=$(ORACLE) sh tests/leak.sh

conformance: $(BUILD)/tgc $(BUILD)/conformance
	BUILD=$(BUILD) TGC=$(BUILD)/tgc sh tests/conformance.sh $(ORACLE) $(CONFORMANCE_BARS)
	@echo "== testdata/numeric: tgc's own numeric cases (recorded by testdata/numeric/make_numeric.py)"
	$(BUILD)/conformance --numeric cpu --numeric-bar 1.0 --bits-bar 1.0 $(CONFORMANCE_BARS) testdata/numeric
	@echo "== testdata/regress: random graphs that once failed (testdata/regress/README.md)"
	$(BUILD)/conformance --numeric cpu --numeric-bar 1.0 --bits-bar 1.0 $(CONFORMANCE_BARS) testdata/regress
	@echo "== testdata/models, testdata/zoo: real models (testdata/models/make_models.py)"
	$(BUILD)/conformance --numeric cpu --numeric-bar 1.0 --bits-bar 1.0 $(CONFORMANCE_BARS) testdata/models testdata/zoo

# randcheck: differential test on graphs the corpus does not hold: tools/randgraph.py writes seeded
# random tinygrad programs with tinygrad's own schedule (and, for the numeric set, its outputs), and
# tgc must match every one exactly; the extended sets add integer/bit ops, bitcasts, assigns,
# Variables, sharding over two CPUs and gradients (randgraph.py --extended), and the options set
# also draws the scheduler switches per seed (FUSE_ARANGE, SPLIT_REDUCEOP and its thresholds, ...)
RAND_SEEDS ?= 0:200
RAND_NUMERIC_SEEDS ?= 0:100
RAND_EXT_SEEDS ?= 0:200
RAND_EXT_NUMERIC_SEEDS ?= 0:60
RAND_OPT_SEEDS ?= 0:150
RAND_DIRS = $(BUILD)/rand/schedule $(BUILD)/rand/numeric $(BUILD)/rand/ext $(BUILD)/rand/ext_numeric $(BUILD)/rand/options
# RAND_FROM=DIR takes the graphs from DIR/rand (another build's randcheck with the same seeds: the
# generator is deterministic) instead of asking tinygrad for them again (CI's ASan pass)
RAND_FROM ?=
randcheck: $(BUILD)/tgc $(BUILD)/conformance
	@rm -rf $(RAND_DIRS)
ifeq ($(RAND_FROM),)
	python3 tools/randgraph.py $(BUILD)/rand/schedule --seeds $(RAND_SEEDS) --ops 14
	python3 tools/randgraph.py $(BUILD)/rand/numeric --seeds $(RAND_NUMERIC_SEEDS) --ops 10 --numeric
	python3 tools/randgraph.py $(BUILD)/rand/ext --seeds $(RAND_EXT_SEEDS) --ops 14 --extended
	python3 tools/randgraph.py $(BUILD)/rand/ext_numeric --seeds $(RAND_EXT_NUMERIC_SEEDS) --ops 10 --extended --numeric
	python3 tools/randgraph.py $(BUILD)/rand/options --seeds $(RAND_OPT_SEEDS) --ops 16 --extended --options
else
	@mkdir -p $(BUILD)/rand
	cp -r $(RAND_FROM)/rand/schedule $(RAND_FROM)/rand/numeric $(RAND_FROM)/rand/ext $(RAND_FROM)/rand/ext_numeric $(RAND_FROM)/rand/options $(BUILD)/rand/
endif
	$(BUILD)/conformance --numeric cpu --numeric-bar 1.0 --bits-bar 1.0 $(CONFORMANCE_BARS) $(RAND_DIRS)

# upstream: tinygrad 0.11.0's own tests as a differential test (tools/upstream_tests.py): fetches its
# source distribution, runs the modules in UPSTREAM_TESTS (default: every one it knows; test_ops and
# a few more need torch) recording every schedule they make with its inputs, asks tinygrad for each
# graph's kernels and values, and scores tgc on all of them; graphs tinygrad refuses must be refused.
# UPSTREAM_DATA=0 records the schedules alone (no values: fast); UPSTREAM_BARS sets the pass bars;
# UPSTREAM_FAST_SUMS=1 runs the kernels with vectorized float sums (tgc run --fast-sums)
UPSTREAM_DIR ?= $(BUILD)/upstream
UPSTREAM_TESTS ?=
UPSTREAM_DATA ?= 1
UPSTREAM_BARS ?=
UPSTREAM_FAST_SUMS ?= 0
upstream: $(BUILD)/tgc $(BUILD)/conformance
	@rm -rf $(UPSTREAM_DIR)
	python3 tools/upstream_tests.py $(UPSTREAM_DIR) $(if $(filter 1,$(UPSTREAM_DATA)),--data) --tgc $(BUILD)/tgc --src $(BUILD)/upstream-src $(if $(UPSTREAM_TESTS),--tests $(UPSTREAM_TESTS))
	$(BUILD)/conformance $(if $(filter 1,$(UPSTREAM_DATA)),--numeric cpu) $(if $(filter 1,$(UPSTREAM_FAST_SUMS)),--fast-sums) $(UPSTREAM_BARS) $(UPSTREAM_DIR)

pytest: $(BUILD)/tgc
	TGC=$(BUILD)/tgc TGC_ORACLE=$(ORACLE) python3 -m pytest -q tests/test_schemas.py tests/test_tools.py

test: unit cli-test conformance randcheck pytest

$(BUILD)/bench: tests/bench.c $(BUILD)/libtgc.a
	$(CC) $(ALL_CFLAGS) $< $(BUILD)/libtgc.a -o $@ $(LDLIBS) $(LDFLAGS)

# BENCH_N runs per graph (median); NO_TINYGRAD=1 skips tinygrad's side
BENCH_N ?= 100
bench: $(BUILD)/tgc $(BUILD)/bench
	N=$(BENCH_N) BUILD=$(BUILD) TGC=$(BUILD)/tgc BENCH=$(BUILD)/bench sh tests/bench.sh $(ORACLE)

cachestat: $(BUILD)/bench
	BUILD=$(BUILD) BENCH=$(BUILD)/bench sh tests/cachestat.sh $(ORACLE)

# profile-guided optimisation (gcc), the way release compilers are built: PGO_BUILD gets a tgc and a
# bench compiled with -fprofile-generate, trained by tests/pgo_train.sh on graphs make bench never
# times, then compiled again, in the same directory (the profile files are named after the objects),
# with -fprofile-use; code the training never ran is optimised as without a profile
PGO_BUILD ?= build-pgo
pgo:
	@test -n "$(LTO)" || { echo "make pgo: needs gcc (CC=$(CC))" >&2; exit 2; }
	rm -rf $(PGO_BUILD)
	$(MAKE) BUILD=$(PGO_BUILD) OPT="$(OPT) -fprofile-generate -fprofile-update=single" $(PGO_BUILD)/tgc $(PGO_BUILD)/bench
	sh tests/pgo_train.sh $(PGO_BUILD) $(ORACLE)
	find $(PGO_BUILD) -name '*.o' -delete
	rm -f $(PGO_BUILD)/tgc $(PGO_BUILD)/bench $(PGO_BUILD)/libtgc.a
	$(MAKE) BUILD=$(PGO_BUILD) OPT="$(OPT) -fprofile-use -fprofile-partial-training -Wno-missing-profile" $(PGO_BUILD)/tgc $(PGO_BUILD)/bench

# kernel speed: tgc run -d cpu vs tinygrad 0.11.0 CPU vs numpy (tools/kbench.py); KBENCH_ARGS e.g.
# "--only matmul_512 --repeat 20 --threads 1"
KBENCH_ARGS ?=
bench-kernels: $(BUILD)/tgc
	env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python3 tools/kbench.py --tgc $(BUILD)/tgc $(KBENCH_ARGS)

# million-uop generated graphs: time, peak RSS, kernel counts (tests/scale.sh)
# random opt lists (UPCAST, UNROLL, PADTO) on the numeric corpus, each checked against tinygrad's values
OPTS_SEEDS ?= 12
opts-sweep: $(BUILD)/tgc
	ORACLE=$(ORACLE) python3 tests/opts_sweep.py $(BUILD)/tgc cpu $(OPTS_SEEDS)

scale: $(BUILD)/tgc $(BUILD)/bench
	BUILD=$(BUILD) TGC=$(BUILD)/tgc BENCH=$(BUILD)/bench sh tests/scale.sh

# FUZZ_TARGET: graph (reader + scheduler) or codegen (also lowering and rendering every kernel)
FUZZ_SECONDS ?= 60
FUZZ_CC ?= clang
FUZZ_TARGET ?= graph
FUZZ_TIMEOUT ?= 10
fuzz:
	@mkdir -p build-fuzz/corpus
	$(FUZZ_CC) -std=c11 -D_GNU_SOURCE -O1 -g -Ilib -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	  tests/fuzz/fuzz_$(FUZZ_TARGET).c $(LIB_SRC) -o build-fuzz/fuzz_$(FUZZ_TARGET) $(LDLIBS)
	@[ -n "$$(ls build-fuzz/corpus)" ] || cp $(ORACLE)/schedule/*.graph.json build-fuzz/corpus/ 2>/dev/null || true
	build-fuzz/fuzz_$(FUZZ_TARGET) -max_total_time=$(FUZZ_SECONDS) -max_len=65536 -timeout=$(FUZZ_TIMEOUT) -rss_limit_mb=4096 \
	  -artifact_prefix=build-fuzz/ build-fuzz/corpus testdata/fuzz

clean:
	rm -rf build build-debug build-asan $(PGO_BUILD)

-include $(LIB_OBJ:.o=.d) $(BUILD)/cli/tgc.d
