# dsview - fuzzing (included by the Makefile). `make test` replays each
# target's committed corpus through a plain driver (fuzz-replay, in the
# Makefile); `make fuzz` runs libFuzzer.

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

fuzz: deps fuzz-deps venv
	$(MAKE) CC=$(FUZZ_CC) CUDA=0 BUILD=build-fuzz XCFLAGS="-fsanitize=fuzzer-no-link $(FUZZ_SAN)" \
	  build-fuzz/libdsview.a
	@fail=0; for t in $(FUZZ_TARGETS); do \
	  $(FUZZ_CC) $(CPPFLAGS) -Itests/fuzz -std=c11 -O1 -g -fsanitize=fuzzer $(FUZZ_SAN) \
	    tests/fuzz/fuzz_$$t.c tests/fuzz/common.c build-fuzz/libdsview.a $(LDLIBS) \
	    -o build-fuzz/fuzz_$$t || exit 1; \
	  mkdir -p build-fuzz/corpus/$$t; \
	  echo "== fuzz_$$t for $(FUZZ_SECONDS) s"; \
	  LD_LIBRARY_PATH=$(VENV_BLOSC2_LIB) \
	  ASAN_OPTIONS=allocator_may_return_null=1:halt_on_error=1:detect_leaks=1 \
	  LSAN_OPTIONS=suppressions=$(abspath tests/fuzz/lsan.supp) \
	  build-fuzz/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=4096 \
	    -malloc_limit_mb=2048 -print_final_stats=1 -artifact_prefix=build-fuzz/crash-$$t- \
	    build-fuzz/corpus/$$t tests/fuzz/corpus/$$t > build-fuzz/fuzz_$$t.log 2>&1 || fail=1; \
	  grep -E 'stat::number_of_executed_units|stat::average_exec_per_sec|ERROR|SUMMARY|Test unit written|DONE|ALARM' \
	    build-fuzz/fuzz_$$t.log; \
	done; exit $$fail
