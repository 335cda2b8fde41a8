# dsview - build, test, demo.
#   make            build/dsview, build/libdsview.a and build/libdsview.so
#                   (the public API, include/dsview/*.h, alone exported)
#   make test       install what is missing, build, run unit + end-to-end tests
#   make werror     build everything with -Werror (build-werror/)
#   make arrows     print the include graph between src/ rooms; fail on one pointing up
#   make format     apply .clang-format; make format-check fails on a file that differs
#   make demo       install what is missing, build, pack + mount + read a dataset
#   make deps       install the Debian packages the build and tests need
#   make stress-tsan   the concurrent-reader tests against a ThreadSanitizer daemon
#   make bench-read    the read table alone (BENCH_ARGS="--mb 128 --rounds 1": ~4 min)
#   make bench-views   the views benchmark alone (BENCH_ARGS="--mb 96 --rounds 1": ~2 min)
#   make bench-grid    N-d chunk grids and Zarr alone (BENCH_ARGS="--mb 32 --rounds 1": ~1 min)
#   make bench-nifti   NIfTI images against .npy (BENCH_ARGS="--mb 64 --rounds 1": ~1 min)
#   make bench-tokens  Arrow token windows against a raw .bin (BENCH_ARGS="--mb 64 --rounds 1")
#   make bench-xform   the transform kernels against memcpy; daemon CPU s/GB (~2 min)
#   make bench-eeg     random 2 s windows of BDF+ recordings: MNE, pyedflib, .npy, dsview
#   make bench-shuffle where a shuffled pass's time goes (PROF_MB=128 REPS=1: ~2 min)
#   make fuzz       libFuzzer on every tests/fuzz target (FUZZ_SECONDS each)
#   make bench-gpu  the GPU backend against the CPU (one line and exit 0 without a device)
#   make device-pack     what travels to a GPU machine for tests/device/run.sh (build-device/)
#   make device-dry-run  that pack and the device check run here, without a device
# Switches: SANITIZE=address,undefined|thread  DEBUG=1  E2E=tests  CUDA=0|1  JOBS=N

CC       ?= cc
PYTHON   ?= /usr/bin/python3
# Builds run on every core; tests run one at a time, so their output
# reads in order.
JOBS     ?= $(shell nproc)
BUILD    ?= build
PKGS     := fuse3 hdf5 liblz4 libzstd blosc inih jansson zlib libcurl expat libcrypto libdeflate

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
# hdf5_hl (dimension scales, src/formats/h5/h5_dims.c) has no pkg-config file of its own
LDLIBS   := $(PKG_LIBS) -lhdf5_hl $(LDLIBS)

# CUDA: the GPU backend (src/gpu/*.cu) is built when nvcc is found (on PATH
# or in /usr/local/cuda/bin), else src/gpu/gpu_stub.c; CUDA=0 forces the
# CPU-only build, CUDA=1 insists on nvcc. cudart is linked statically: the
# binary needs no CUDA toolkit at run time, only the driver's libcuda.so.1,
# which cudart itself dlopens (docs/gpu.md).
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

LIB_SRCS := $(filter-out src/cli/% src/gpu/gpu_stub.c src/gpu/gpu_host.c,$(wildcard src/*/*.c src/formats/*/*.c))
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

# The shared library: version from include/dsview/dsview.h (its one home),
# soname libdsview.so.MAJOR. It exports what include/dsview/*.h declares
# and nothing else: $(SO_MAP), the linker version script mk/exports.py
# makes from those headers, holds every other symbol local (the library's
# private functions, cudart's).
version_part = $(shell sed -n 's/^\#define DSV_VERSION_$(1) \([0-9]*\)$$/\1/p' include/dsview/dsview.h)
SO_VERSION := $(call version_part,MAJOR).$(call version_part,MINOR).$(call version_part,PATCH)
SO_NAME := libdsview.so.$(call version_part,MAJOR)
SO := $(BUILD)/libdsview.so.$(SO_VERSION)
ifneq ($(words $(subst ., ,$(SO_VERSION))),3)
$(error no DSV_VERSION_MAJOR, _MINOR and _PATCH in include/dsview/dsview.h)
endif
SO_MAP := $(BUILD)/libdsview.map
# Its objects are compiled again, -fPIC, under $(BUILD)/pic, so that the
# archive's objects (the command's, the tests', the benchmarks'), on which
# the kernels' speed was measured, stay the compiler's default -fPIE code:
# built -fPIC, 6 of the library's objects are other code (lz4.o's frame
# parser among them: a call through the global symbol, another frame).
# The cost is compile time alone: the library is built twice (about 20 s
# more on 2 cores). -fno-semantic-interposition: the
# compiler inlines and calls the library's global functions as in the
# archive, not allowing for a program's replacing one of them.
PIC_OBJS := $(LIB_OBJS:$(BUILD)/%=$(BUILD)/pic/%)
PIC_FLAGS := -fPIC -fno-semantic-interposition

.PHONY: all deps werror arrows format format-check test unit e2e stress-tsan demo bench bench-gpu bench-read bench-views bench-levers bench-shuffle bench-grid bench-h5gzip bench-nifti bench-eeg bench-tokens bench-xform bench-shard bench-tree bench-scale bench-loader bench-inproc bench-loader-state bench-store bench-s3 bench-report bench-pack bench-mem bench-codecs bench-epoch bench-blocks bench-seq bench-ab bench-readers bench-soak install clean check-deps fuzz fuzz-replay fuzz-deps
all: $(BIN) $(SO)

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

# The transform kernels' loops start on 32-byte boundaries: the 8-bit lookup
# loop ran at 7 or at 13 GB/s on an AMD EPYC depending only on where the
# linker happened to put it (byte-identical code; xform_bench, CPU time).
$(BUILD)/src/xform/xform.o $(BUILD)/pic/src/xform/xform.o: CFLAGS += -falign-loops=32

$(BUILD)/%.o: %.cu
	@mkdir -p $(dir $@)
	$(NVCC) $(CPPFLAGS) $(NVCCFLAGS) -MD -MP -c $< -o $@

$(BUILD)/pic/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(PIC_FLAGS) -c $< -o $@

$(BUILD)/pic/%.o: %.cu
	@mkdir -p $(dir $@)
	$(NVCC) $(CPPFLAGS) $(NVCCFLAGS) $(addprefix -Xcompiler ,$(PIC_FLAGS)) \
	  -MD -MP -c $< -o $@

# The archive is remade when CUDA changes between builds into the same
# BUILD: it holds gpu_stub.o or the .cu objects, never both.
ifeq ($(filter deps clean,$(MAKECMDGOALS)),)
CUDA_STAMP := $(BUILD)/.cuda-$(CUDA)
$(shell mkdir -p $(BUILD); [ -e $(CUDA_STAMP) ] || { rm -f $(BUILD)/.cuda-*; touch $(CUDA_STAMP); })
endif

$(LIB): $(LIB_OBJS) $(CUDA_STAMP)
	@rm -f $@
	$(AR) rcs $@ $(LIB_OBJS)

$(SO_MAP): mk/exports.py $(wildcard include/dsview/*.h)
	@mkdir -p $(dir $@)
	$(PYTHON) mk/exports.py $(wildcard include/dsview/*.h) > $@.tmp && mv $@.tmp $@

# -z defs: every symbol the library uses is its own or a library it names.
$(SO): $(PIC_OBJS) $(SO_MAP) $(CUDA_STAMP)
	$(CC) -shared -Wl,-soname,$(SO_NAME) -Wl,--version-script=$(SO_MAP) -Wl,-z,defs \
	  $(LDFLAGS) $(PIC_OBJS) $(LDLIBS) -o $@
	ln -sf $(notdir $@) $(BUILD)/$(SO_NAME)
	ln -sf $(SO_NAME) $(BUILD)/libdsview.so

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
fuzz-replay: $(FUZZ_REPLAY) venv
	@for t in $(FUZZ_NAMES); do printf 'fuzz %-9s ' $$t; \
	  LD_LIBRARY_PATH=$(VENV_BLOSC2_LIB) \
	  ASAN_OPTIONS=$(ASAN_OPTIONS):allocator_may_return_null=1 \
	  LSAN_OPTIONS=suppressions=$(abspath tests/fuzz/lsan.supp) \
	  $(BUILD)/tests/fuzz_$$t tests/fuzz/corpus/$$t || exit 1; done

# Sanitizer reports fail the run instead of scrolling past.
export ASAN_OPTIONS ?= halt_on_error=1:detect_leaks=1
export LSAN_OPTIONS ?= suppressions=$(abspath tests/e2e/lsan.supp)
export UBSAN_OPTIONS ?= halt_on_error=1:print_stacktrace=1

unit: $(UNIT_BINS)
	@fail=0; for t in $(UNIT_BINS); do echo "== $$t"; $$t || fail=1; done; exit $$fail

# E2E: which e2e tests (files or unittest names; default all of them)
e2e: $(BIN) $(SO) $(addprefix $(BUILD)/bench/,nullfs codec_bench codec_speed xform_bench gpu_bench) venv
	DSVIEW=$(abspath $(BIN)) DSVIEW_VENV_PY=$(VENV_PY) $(PYTHON) tests/e2e/run.py $(E2E)

# Every source, test and fuzz replay driver built with -Werror (in its own
# build directory, so the everyday build keeps its objects); all is the
# command, the archive and the shared library with its -fPIC objects.
werror:
	$(MAKE) -j$(JOBS) BUILD=build-werror XCFLAGS=-Werror all \
	  $(UNIT_BINS:$(BUILD)/%=build-werror/%) $(FUZZ_REPLAY:$(BUILD)/%=build-werror/%) \
	  build-werror/tests/gpu_check build-werror/bench/gpu_bench

# The C style (.clang-format, clang-format 14 from Debian): format rewrites
# every C, header and CUDA file of src/, include/, tests/ and bench/ in
# place; format-check lists those that differ and fails (.ci/run).
FORMAT_FILES = $(shell git ls-files 'src/*.[ch]' 'src/*.cu' 'include/*.h' 'tests/*.[ch]' 'bench/*.[ch]' 2>/dev/null)
format:
	clang-format -i $(FORMAT_FILES)

format-check:
	@bad=$$(for f in $(FORMAT_FILES); do clang-format $$f | cmp -s - $$f || echo $$f; done); \
	if [ -n "$$bad" ]; then echo "format-check: not as .clang-format says (make format):"; \
	  echo "$$bad"; exit 1; fi

# The include graph between src/ rooms: every arrow points down.
arrows:
	@$(PYTHON) tests/tools/arrows.py

test: deps
	$(MAKE) -j$(JOBS) all $(UNIT_BINS) $(FUZZ_REPLAY)
	$(MAKE) arrows unit fuzz-replay
	$(MAKE) e2e
	$(MAKE) device-test

# The ThreadSanitizer run: the daemon built with -fsanitize=thread under
# the concurrent-reader tests (8 forked workers, readahead, the 64-process
# soak). TSan slows the daemon ~5-15x, so the rest of the suite, which is
# not about concurrency, runs under ASan+UBSan instead (see .ci/run).
TSAN_E2E ?= test_readers.py test_load.Soak test_windows.py test_rows.py test_hints.py \
	    test_gpu.DevicePath test_gpu_tier.Tier.test_epochs
stress-tsan: deps
	$(MAKE) -j$(JOBS) SANITIZE=thread all
	DSVIEW_SOAK_SECONDS=$${DSVIEW_SOAK_SECONDS:-15} $(MAKE) SANITIZE=thread e2e E2E="$(TSAN_E2E)"

demo: deps
	$(MAKE) -j$(JOBS) all
	DSVIEW=$(abspath $(BIN)) $(PYTHON) examples/demo.py

# The command, its mount helper (SBINDIR/mount.fuse.dsview, a link to it:
# mount(8) runs it for mount -t fuse.dsview and fstab lines), man page,
# bash completion, the library, static and shared (libdsview.so.X.Y.Z with
# its soname link libdsview.so.X and libdsview.so, the link -ldsview finds),
# with its public API (include/dsview: what the command, the tests and
# other programs build against; src/*/*.h are the library's own), and the
# Python package (python/dsview, into PYTHONDIR: this Python's directory
# for PREFIX, python/sitedir.py). PREFIX=/usr/local, LIBDIR=PREFIX/lib,
# SBINDIR=/sbin (where mount(8) looks), DESTDIR for a staged install.
PREFIX ?= /usr/local
SBINDIR ?= /sbin
PYTHONDIR ?= $(shell $(PYTHON) python/sitedir.py $(PREFIX))
LIBDIR ?= $(PREFIX)/lib
install: $(BIN) $(LIB) $(SO)
	install -D -m 0755 $(BIN) $(DESTDIR)$(PREFIX)/bin/dsview
	install -d $(DESTDIR)$(SBINDIR)
	ln -sf $(PREFIX)/bin/dsview $(DESTDIR)$(SBINDIR)/mount.fuse.dsview
	install -D -m 0644 doc/dsview.1 $(DESTDIR)$(PREFIX)/share/man/man1/dsview.1
	install -D -m 0644 doc/dsview.bash-completion \
	  $(DESTDIR)$(PREFIX)/share/bash-completion/completions/dsview
	install -D -m 0644 $(LIB) $(DESTDIR)$(LIBDIR)/libdsview.a
	install -m 0755 $(SO) $(DESTDIR)$(LIBDIR)/
	ln -sf $(notdir $(SO)) $(DESTDIR)$(LIBDIR)/$(SO_NAME)
	ln -sf $(SO_NAME) $(DESTDIR)$(LIBDIR)/libdsview.so
	install -d $(DESTDIR)$(PREFIX)/include/dsview
	install -m 0644 include/dsview/*.h $(DESTDIR)$(PREFIX)/include/dsview/
	install -d $(DESTDIR)$(PYTHONDIR)/dsview
	install -m 0644 python/dsview/*.py python/dsview/py.typed $(DESTDIR)$(PYTHONDIR)/dsview/

include mk/deps.mk mk/venv.mk mk/bench.mk mk/fuzz.mk mk/device.mk

clean:
	rm -rf build build-san build-tsan build-fuzz build-werror build-cpu build-device

-include $(LIB_OBJS:.o=.d) $(PIC_OBJS:.o=.d) $(CLI_OBJS:.o=.d) $(UNIT_BINS:=.d)
