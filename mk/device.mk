# dsview - the device check (tests/device/run.sh; docs/gpu.md, "The device
# check"), included by the Makefile.
#   make device-pack     the CUDA build's dsview, gpu_check, gpu_bench and
#                        the GPU unit tests, with the Debian libraries they
#                        link, into build-device/: the one folder that
#                        travels to a GPU machine (64 MiB at most)
#   make device-dry-run  device-pack, then run.sh here: "no device" for
#                        the device rows, the host and emulated rows run
# `make test` runs the dry run (device-test) in a CUDA build (nvcc found).

DEVICE_DIR := build-device
DEVICE_UNITS := test_devlz4 test_devxform test_gpu_tier test_gpu_emu
DEVICE_BINS := $(BIN) $(BUILD)/tests/gpu_check $(BUILD)/bench/gpu_bench \
	       $(DEVICE_UNITS:%=$(BUILD)/tests/%)

$(BUILD)/tests/gpu_check: tests/device/gpu_check.c $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $< $(LIB) $(LDFLAGS) $(LDLIBS) -o $@

$(DEVICE_DIR)/PACK.txt: $(DEVICE_BINS) tests/device/pack.sh
	tests/device/pack.sh $(DEVICE_DIR) $(DEVICE_BINS)

.PHONY: device-pack device-dry-run device-test
# the everyday CUDA build, whatever SANITIZE or DEBUG this make was given
device-pack:
	$(MAKE) -j$(JOBS) CUDA=1 SANITIZE= DEBUG= $(DEVICE_DIR)/PACK.txt

device-dry-run: device-pack
	DEVICE_DRY_RUN=1 PYTHON=$(PYTHON) tests/device/run.sh

device-test:
ifeq ($(CUDA),1)
	$(MAKE) device-dry-run
else
	@echo "device dry run: skipped (a build without CUDA: the pack is the CUDA build)"
endif
