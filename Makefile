# dsview - build, test, demo.
#   make            build/dsview and build/libdsview.a
#   make test       install what is missing, build, run unit + end-to-end tests
#   make werror     build everything with -Werror (build-werror/)
#   make arrows     print the include graph between src/ rooms; fail on one pointing up
#   make demo       install what is missing, build, pack + mount + read a dataset
#   make deps       install the Debian packages the build and tests need
#   make stress-tsan   the concurrent-reader tests against a ThreadSanitizer daemon
#   make bench-read    the read table of issue 15 alone (READ_MB=128 ROUNDS=1: ~4 min)
#   make bench-views   the views benchmark alone (VIEWS_MB=96 ROUNDS=1: ~2 min)
#   make bench-grid    N-d chunk grids and Zarr alone (GRID_MB=32 ROUNDS=1: ~1 min)
#   make bench-shuffle where a shuffled pass's time goes (PROF_MB=128 REPS=1: ~2 min)
#   make fuzz       libFuzzer on every tests/fuzz target (FUZZ_SECONDS each)
#   make bench-gpu  the GPU backend against the CPU (one line and exit 0 without a device)
# Switches: SANITIZE=address,undefined|thread  DEBUG=1  E2E=tests  CUDA=0|1

CC       ?= cc
PYTHON   ?= /usr/bin/python3
BUILD    ?= build
PKGS     := fuse3 hdf5 liblz4 libzstd blosc inih jansson zlib
DEB_PKGS := libfuse3-dev fuse3 libhdf5-dev liblz4-dev libzstd-dev libblosc-dev libcmocka-dev libinih-dev \
            libjansson-dev pkg-config python3-numpy python3-h5py python3-hdf5plugin python3-zstandard \
            hdf5-filter-plugin hdf5-filter-plugin-blosc-serial zlib1g-dev fio strace python3-torch \
            python3-zarr man-db python3-skimage python3-lz4 python3-blosc

WARNINGS := -Wall -Wextra -Wshadow -Wcast-align -Wstrict-prototypes \
            -Wpointer-arith -Wwrite-strings -Wformat=2 -Wvla -Wundef \
            -Wmissing-prototypes -Wno-missing-field-initializers
# -ffp-contract=off: no FMA contraction, so every kernel variant gives the
# same bytes as the scalar reference.
OPT      := -O2 -g -ffp-contract=off
CPPFLAGS += -Iinclude -Isrc -D_GNU_SOURCE -D_FILE_OFFSET_BITS=64 -DFUSE_USE_VERSION=314
CFLAGS   += -std=c11 $(OPT) $(WARNINGS) -pthread -MMD -MP $(XCFLAGS)
LDLIBS   += -pthread -lm

ifeq ($(DEBUG),1)
OPT := -O0 -g3 -ffp-contract=off
endif

comma := ,
ifneq ($(SANITIZE),)
ifneq ($(filter-out address undefined thread,$(subst $(comma), ,$(SANITIZE))),)
$(error SANITIZE must be a comma list of address, undefined, thread; got '$(SANITIZE)')
endif
CFLAGS  += -fsanitize=$(SANITIZE) -fno-omit-frame-pointer
LDFLAGS += -fsanitize=$(SANITIZE)
# build-san for address,undefined; build-tsan for thread (they cannot mix)
BUILD   := $(BUILD)-$(if $(findstring thread,$(SANITIZE)),tsan,san)
endif

# pkg-config is only consulted when building, so `make deps` works on a bare machine.
ifeq ($(filter deps clean,$(MAKECMDGOALS)),)
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null)
endif
CPPFLAGS += $(PKG_CFLAGS)
LDLIBS   := $(PKG_LIBS) $(LDLIBS)

# CUDA: the GPU backend (src/gpu/*.cu) is built when nvcc is found (on PATH
# or in /usr/local/cuda/bin), else src/gpu/gpu_stub.c; CUDA=0 forces the
# CPU-only build, CUDA=1 insists on nvcc. cudart is linked statically: the
# binary needs no CUDA toolkit at run time, only the driver's libcuda.so.1,
# which cudart itself dlopens (README, "The GPU backend").
NVCC ?= $(or $(shell command -v nvcc 2>/dev/null),$(wildcard /usr/local/cuda/bin/nvcc))
ifeq ($(CUDA),)
CUDA := $(if $(NVCC),1,0)
endif
ifeq ($(CUDA),1)
ifeq ($(NVCC),)
$(error CUDA=1 but no nvcc on PATH or in /usr/local/cuda/bin)
endif
CUDA_HOME ?= $(patsubst %/bin/nvcc,%,$(realpath $(NVCC)))
# sm_80 (A100), sm_90 (H100) as machine code, compute_90 as PTX the driver
# compiles for anything newer. --fmad=false and IEEE division/denormals:
# the device rounds exactly as the CPU kernels (-ffp-contract=off) do. No
# C++ exceptions or thread-safe statics: the host stubs then need nothing
# of libstdc++, and the link stays a C link.
NVCCFLAGS ?= -O2 -g -std=c++17 -gencode arch=compute_80,code=sm_80 \
             -gencode arch=compute_90,code=[sm_90,compute_90] \
             --fmad=false -ftz=false -prec-div=true -prec-sqrt=true \
             -Xcompiler -Wall,-Wextra,-Wshadow,-Wno-missing-field-initializers,-pthread \
             -Xcompiler -fno-exceptions,-fno-threadsafe-statics,-ffp-contract=off
NVCCFLAGS += $(if $(findstring -Werror,$(XCFLAGS)),-Werror all-warnings -Xcompiler -Werror)
LDLIBS += -L$(CUDA_HOME)/lib64 -lcudart_static -ldl -lrt
GPU_SRCS := src/gpu/gpu_host.c $(wildcard src/gpu/*.cu)
else ifeq ($(CUDA),0)
GPU_SRCS := src/gpu/gpu_stub.c
else
$(error CUDA must be 0 or 1; got '$(CUDA)')
endif

LIB_SRCS := $(filter-out src/cli/% src/gpu/gpu_stub.c src/gpu/gpu_host.c,$(wildcard src/*/*.c))
CLI_SRCS := $(wildcard src/cli/*.c)
LIB_OBJS := $(LIB_SRCS:%.c=$(BUILD)/%.o) $(patsubst %,$(BUILD)/%.o,$(basename $(GPU_SRCS)))
CLI_OBJS := $(CLI_SRCS:%.c=$(BUILD)/%.o)
UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/tests/%)
FUZZ_NAMES := $(patsubst tests/fuzz/fuzz_%.c,%,$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_REPLAY := $(FUZZ_NAMES:%=$(BUILD)/tests/fuzz_%)
FUZZ_COMMON := tests/fuzz/common.c tests/fuzz/fuzz.h

LIB := $(BUILD)/libdsview.a
BIN := $(BUILD)/dsview

.PHONY: all deps werror arrows test unit e2e stress-tsan demo bench bench-gpu bench-read bench-views bench-levers bench-shuffle bench-grid bench-tree install clean check-deps fuzz fuzz-replay fuzz-deps
all: $(BIN)

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

# The transform kernels' loops start on 32-byte boundaries: the 8-bit lookup
# loop ran at 7 or at 13 GB/s on an AMD EPYC depending only on where the
# linker happened to put it (byte-identical code; xform_bench, CPU time).
$(BUILD)/src/xform/xform.o: CFLAGS += -falign-loops=32

$(BUILD)/%.o: %.cu
	@mkdir -p $(dir $@)
	$(NVCC) $(CPPFLAGS) $(NVCCFLAGS) -MD -MP -c $< -o $@

# The archive is remade when CUDA changes between builds into the same
# BUILD: it holds gpu_stub.o or the .cu objects, never both.
ifeq ($(filter deps clean,$(MAKECMDGOALS)),)
CUDA_STAMP := $(BUILD)/.cuda-$(CUDA)
$(shell mkdir -p $(BUILD); [ -e $(CUDA_STAMP) ] || { rm -f $(BUILD)/.cuda-*; touch $(CUDA_STAMP); })
endif

$(LIB): $(LIB_OBJS) $(CUDA_STAMP)
	@rm -f $@
	$(AR) rcs $@ $(LIB_OBJS)

$(BIN): $(CLI_OBJS) $(LIB)
	$(CC) $(LDFLAGS) $(CLI_OBJS) $(LIB) $(LDLIBS) -o $@

# Fault injection: this test's __wrap_strdup fails one copy in the library.
$(BUILD)/tests/test_manifest_oom: LDFLAGS += -Wl,--wrap=strdup

$(BUILD)/tests/%: tests/unit/%.c $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $< $(LIB) $(LDFLAGS) $(LDLIBS) -lcmocka -o $@

# test_cli also links the subcommands: every CLI object but main.o.
$(BUILD)/tests/test_cli: tests/unit/test_cli.c $(filter-out $(BUILD)/src/cli/main.o,$(CLI_OBJS)) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $< $(filter-out $(BUILD)/src/cli/main.o,$(CLI_OBJS)) $(LIB) \
	  $(LDFLAGS) $(LDLIBS) -lcmocka -o $@

# test_fs makes the FUSE loop's configuration fail (tests/unit/test_fs.c).
$(BUILD)/tests/test_fs: LDFLAGS += -Wl,--wrap=fuse_loop_cfg_create

# Fuzz targets linked with a replay driver (gcc): `make test` runs each on
# its committed corpus. `make fuzz` builds them with libFuzzer instead.
$(BUILD)/tests/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/replay.c $(FUZZ_COMMON) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -Itests/fuzz $(filter-out -MMD -MP,$(CFLAGS)) $< tests/fuzz/common.c \
	  tests/fuzz/replay.c $(LIB) $(LDFLAGS) $(LDLIBS) -o $@

# As in `make fuzz` (below): the HDF5 library's own huge mallocs on damaged
# files get NULL, as they do in production, and its leaks on them are not ours.
fuzz-replay: $(FUZZ_REPLAY)
	@for t in $(FUZZ_NAMES); do printf 'fuzz %-9s ' $$t; \
	  ASAN_OPTIONS=$(ASAN_OPTIONS):allocator_may_return_null=1 \
	  LSAN_OPTIONS=suppressions=$(abspath tests/fuzz/lsan.supp) \
	  $(BUILD)/tests/fuzz_$$t tests/fuzz/corpus/$$t || exit 1; done

# Installs only what is missing; apt-get update first, as a fresh machine needs.
deps:
	@missing=""; for p in $(DEB_PKGS); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "dsview: installing$$missing"; \
	  SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -q && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q --no-install-recommends $$missing; \
	fi

# Sanitizer reports fail the run instead of scrolling past.
export ASAN_OPTIONS ?= halt_on_error=1:detect_leaks=1
export UBSAN_OPTIONS ?= halt_on_error=1:print_stacktrace=1

unit: $(UNIT_BINS)
	@fail=0; for t in $(UNIT_BINS); do echo "== $$t"; $$t || fail=1; done; exit $$fail

# E2E: which e2e tests (files or unittest names; default all of them)
e2e: $(BIN)
	DSVIEW=$(abspath $(BIN)) $(PYTHON) tests/e2e/run.py $(E2E)

# Every source, test and fuzz replay driver built with -Werror (in its own
# build directory, so the everyday build keeps its objects).
werror:
	$(MAKE) BUILD=build-werror XCFLAGS=-Werror all \
	  $(UNIT_BINS:$(BUILD)/%=build-werror/%) $(FUZZ_REPLAY:$(BUILD)/%=build-werror/%)

# The include graph between src/ rooms: every arrow points down.
arrows:
	@$(PYTHON) tests/tools/arrows.py

test: deps
	$(MAKE) arrows all unit fuzz-replay
	$(MAKE) e2e

# The ThreadSanitizer run: the daemon built with -fsanitize=thread under
# the concurrent-reader tests (8 forked workers, readahead, the 64-process
# soak). TSan slows the daemon ~5-15x, so the rest of the suite, which is
# not about concurrency, runs under ASan+UBSan instead (see .ci/run).
TSAN_E2E ?= test_readers.py test_load.Soak test_windows.py test_rows.py test_hints.py \
	    test_gpu.DevicePath test_gpu_tier.Tier.test_epochs
stress-tsan: deps
	$(MAKE) SANITIZE=thread all
	DSVIEW_SOAK_SECONDS=$${DSVIEW_SOAK_SECONDS:-15} $(MAKE) SANITIZE=thread e2e E2E="$(TSAN_E2E)"

demo: deps
	$(MAKE) all
	DSVIEW=$(abspath $(BIN)) $(PYTHON) examples/demo.py

$(BUILD)/tests/codec_bench $(BUILD)/tests/codec_speed $(BUILD)/tests/xform_bench $(BUILD)/tests/gpu_bench: $(BUILD)/tests/%: tests/bench/%.c $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $< $(LIB) $(LDFLAGS) $(LDLIBS) -o $@

$(BUILD)/tests/nullfs: tests/bench/nullfs.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $< $(LDFLAGS) $(LDLIBS) -o $@

bench: deps
	$(MAKE) all $(BUILD)/tests/codec_bench $(BUILD)/tests/xform_bench $(BUILD)/tests/nullfs
	DSVIEW=$(abspath $(BIN)) NULLFS=$(abspath $(BUILD)/tests/nullfs) \
	  XFORM_BENCH=$(abspath $(BUILD)/tests/xform_bench) $(PYTHON) tests/bench/bench.py
	DSVIEW=$(abspath $(BIN)) NULLFS=$(abspath $(BUILD)/tests/nullfs) \
	  $(PYTHON) tests/bench/read_bench.py
	DSVIEW=$(abspath $(BIN)) $(PYTHON) tests/bench/views_bench.py
	DSVIEW=$(abspath $(BIN)) CODEC_BENCH=$(abspath $(BUILD)/tests/codec_bench) \
	  $(PYTHON) tests/bench/pack_bench.py
	DSVIEW=$(abspath $(BIN)) $(PYTHON) tests/bench/grid_bench.py

# The GPU backend (tests/bench/gpu_bench.c): LZ4 chunks of uint8, 256 KiB to
# 4 MiB, to float32 and bfloat16, GB/s on the GPU (kernel only, end to end)
# against the CPU on every core; then the mount (gpu_mount_bench.py): cold
# sequential GB/s and daemon CPU s/GB with --gpu 0 against --gpu off. Each
# says so in one line and exits 0 where no GPU is usable. GPU_BENCH_MB
# (default 256) sets each kernel configuration's output.
bench-gpu: deps
	$(MAKE) all $(BUILD)/tests/gpu_bench
	$(BUILD)/tests/gpu_bench
	DSVIEW=$(abspath $(BIN)) $(PYTHON) tests/bench/gpu_mount_bench.py

# The read table of issue 15 (tests/bench/read_bench.py): 12 KB and 150 KB
# rows, cold and warm sequential passes, shuffled batches by one reader and
# by READ_WORKERS (4) forked workers; rows/s, read amplification, CPU s/GB of
# reader and daemon; the issue's targets, met or not. READ_MB (default
# BENCH_MB or 1024) scales each size; READ_MB=128 ROUNDS=1 is a quick run;
# READ_JSON=FILE also writes the results as JSON.
bench-read: deps
	$(MAKE) all $(BUILD)/tests/nullfs
	DSVIEW=$(abspath $(BIN)) NULLFS=$(abspath $(BUILD)/tests/nullfs) \
	  $(PYTHON) tests/bench/read_bench.py

# The views of SPEC 12 against their baselines (tests/bench/views_bench.py):
# rows subset, CHW, windows (GB/s, disk bytes), int64 token windows.
# VIEWS_MB (default 768) scales the data; VIEWS_MB=96 ROUNDS=1 is a quick run;
# VIEWS_JSON=FILE also writes the table as JSON.
bench-views: deps
	$(MAKE) all
	DSVIEW=$(abspath $(BIN)) $(PYTHON) tests/bench/views_bench.py

# The levers A/B (tests/bench/levers.py): the kernel window, dsview's own
# readahead and the hint threads, interleaved, medians.
bench-levers: deps
	$(MAKE) all
	DSVIEW=$(abspath $(BIN)) $(PYTHON) tests/bench/levers.py

# N-d chunk grids and Zarr (tests/bench/grid_bench.py): HDF5 chunks that
# split rows through the grid against the library fallback and whole-row
# chunks; a Zarr array against the LZ4 store and zarr + numpy.
bench-grid: deps
	$(MAKE) all
	DSVIEW=$(abspath $(BIN)) $(PYTHON) tests/bench/grid_bench.py

# Where a shuffled pass's time goes (tests/bench/shuffle_profile.py): per
# configuration, requests and bytes made per row, the daemon's time per
# request (.stats.json histograms), and the disk's own latency.
bench-shuffle: deps
	$(MAKE) all $(BUILD)/tests/nullfs
	DSVIEW=$(abspath $(BIN)) NULLFS=$(abspath $(BUILD)/tests/nullfs) \
	  $(PYTHON) tests/bench/shuffle_profile.py

# The tree at scale (tests/bench/tree_bench.py): mount time, ls -R and a
# walk with lstat of a zero-config mount of TREE_DATASETS (100,000) tiny
# HDF5 datasets.
bench-tree: deps
	$(MAKE) all
	DSVIEW=$(abspath $(BIN)) $(PYTHON) tests/bench/tree_bench.py

# libFuzzer with ASan + UBSan (clang 14, from Debian): every target for
# FUZZ_SECONDS each, starting from the committed corpus; new inputs go to
# build-fuzz/corpus/<target>, crashes, hangs (over 10 s) and allocations
# over 2 GiB to build-fuzz/crash-<target>-*; the run fails if any target
# found one. allocator_may_return_null: the HDF5 library (not instrumented)
# mallocs sizes read from a corrupt file and copes with NULL, as it gets
# in production; our own code is held to the 2 GiB malloc limit.
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?= $(FUZZ_NAMES)
FUZZ_CC ?= clang-14
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=undefined
fuzz-deps:
	@$(MAKE) --no-print-directory deps DEB_PKGS="clang-14 libclang-rt-14-dev"

fuzz: deps fuzz-deps
	$(MAKE) CC=$(FUZZ_CC) CUDA=0 BUILD=build-fuzz XCFLAGS="-fsanitize=fuzzer-no-link $(FUZZ_SAN)" \
	  build-fuzz/libdsview.a
	@fail=0; for t in $(FUZZ_TARGETS); do \
	  $(FUZZ_CC) $(CPPFLAGS) -Itests/fuzz -std=c11 -O1 -g -fsanitize=fuzzer $(FUZZ_SAN) \
	    tests/fuzz/fuzz_$$t.c tests/fuzz/common.c build-fuzz/libdsview.a $(LDLIBS) \
	    -o build-fuzz/fuzz_$$t || exit 1; \
	  mkdir -p build-fuzz/corpus/$$t; \
	  echo "== fuzz_$$t for $(FUZZ_SECONDS) s"; \
	  ASAN_OPTIONS=allocator_may_return_null=1:halt_on_error=1:detect_leaks=1 \
	  LSAN_OPTIONS=suppressions=$(abspath tests/fuzz/lsan.supp) \
	  build-fuzz/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=4096 \
	    -malloc_limit_mb=2048 -print_final_stats=1 -artifact_prefix=build-fuzz/crash-$$t- \
	    build-fuzz/corpus/$$t tests/fuzz/corpus/$$t > build-fuzz/fuzz_$$t.log 2>&1 || fail=1; \
	  grep -E 'stat::number_of_executed_units|stat::average_exec_per_sec|ERROR|SUMMARY|Test unit written|DONE|ALARM' \
	    build-fuzz/fuzz_$$t.log; \
	done; exit $$fail

# The command, its mount helper (SBINDIR/mount.fuse.dsview, a link to it:
# mount(8) runs it for mount -t fuse.dsview and fstab lines), man page,
# bash completion, and the library with its public API (include/dsview:
# what the command, the tests and other programs build against;
# src/*/*.h are the library's own). PREFIX=/usr/local, SBINDIR=/sbin
# (where mount(8) looks), DESTDIR for a staged install.
PREFIX ?= /usr/local
SBINDIR ?= /sbin
install: $(BIN) $(LIB)
	install -D -m 0755 $(BIN) $(DESTDIR)$(PREFIX)/bin/dsview
	install -d $(DESTDIR)$(SBINDIR)
	ln -sf $(PREFIX)/bin/dsview $(DESTDIR)$(SBINDIR)/mount.fuse.dsview
	install -D -m 0644 doc/dsview.1 $(DESTDIR)$(PREFIX)/share/man/man1/dsview.1
	install -D -m 0644 doc/dsview.bash-completion \
	  $(DESTDIR)$(PREFIX)/share/bash-completion/completions/dsview
	install -D -m 0644 $(LIB) $(DESTDIR)$(PREFIX)/lib/libdsview.a
	install -d $(DESTDIR)$(PREFIX)/include/dsview
	install -m 0644 include/dsview/*.h $(DESTDIR)$(PREFIX)/include/dsview/

clean:
	rm -rf build build-san build-tsan build-fuzz build-werror build-cpu

-include $(LIB_OBJS:.o=.d) $(CLI_OBJS:.o=.d) $(UNIT_BINS:=.d)
