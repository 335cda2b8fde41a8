#!/bin/bash
# The device check, one command (docs/gpu.md#the-device-check): run from
# the repository root on a GPU machine, with build-device/ made here by
# `make device-pack` carried along. In order, each step bounded in time:
#   the machine and the pack; the device seen (gpu_check probe);
#   the GPU unit tests; the host-vs-device byte comparison over every
#   source x output dtype x chunk size, damaged blocks included
#   (gpu_check compare); bench/gpu_bench (kernel only and end to end
#   against the CPU on every core); the backend without a mount on a
#   packed store (gpu_check backend: chunks from 16 threads, the tier,
#   the readahead's device path); the in-process reader on the device
#   against gpu=off (gpu_check reader); with /dev/fuse, the e2e GPU tests and
#   the mount rows (python3 -m bench run gpu_mount); compute-sanitizer's
#   memcheck and racecheck over the comparison.
# One summary file, $OUT/device-check.txt (OUT unset: build-device/out/),
# every step's whole output beside it in logs/. Exit 0 when nothing
# failed ("no device" is not a failure). DEVICE_BUDGET (500): seconds for
# the whole run, each step cut to what is left. DEVICE_OWN_GLIBC=1: the
# pack's glibc even where the machine's is as new. PYTHON: the python with numpy
# (h5py, hdf5plugin for more rows), default python3. DEVICE_DRY_RUN=1 (make
# device-dry-run, and make test): the same steps on a machine without a
# GPU, shorter, the device rows saying "no device".
set -u
cd "$(dirname "$0")/../.." || exit 2
root=$PWD
pack=$root/${DEVICE_PACK:-build-device}
out=${OUT:-$pack/out}
dry=${DEVICE_DRY_RUN:-0}
py=${PYTHON:-python3} # the machine's: on the GPU machine, not Debian's
budget=${DEVICE_BUDGET:-500} # seconds for all the steps: each is cut to what is left
mkdir -p "$out/logs" || exit 2
out=$(cd "$out" && pwd)
sum=$out/device-check.txt
: >"$sum"
work=$(mktemp -d "${TMPDIR:-/tmp}/dsview-device.XXXXXX")
trap 'rm -rf "$work"' EXIT
t0=$(date +%s)

say() { echo "$*" | tee -a "$sum"; }
# A row's line as the programs print them: ok / FAIL / no device / skipped.
row() { printf '%-9s %s\n' "$1" "$2" | tee -a "$sum"; }

if [ ! -x "$pack/bin/dsview" ]; then
	row FAIL "no pack in $pack: run make device-pack on the build machine and carry it"
	exit 1
fi

chmod u+x "$pack"/bin/* "$pack"/glibc/ld-linux* 2>/dev/null # in case the copy lost them
# Our binaries run with the pack's libraries, and with its glibc through
# its own loader where the machine's is older; nothing else sees them
# (the machine's python keeps its own libraries).
have=$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{ print $2 }')
want=$(awk '/^glibc:/ { print $2 }' "$pack/PACK.txt")
loader=()
if [ "${DEVICE_OWN_GLIBC:-0}" = 1 ] || [ -z "$have" ] || [ "$(printf '%s\n%s\n' "$want" "$have" | sort -V | head -1)" != "$want" ]; then
	loader=("$pack/glibc/ld-linux-x86-64.so.2" --library-path "$pack/lib:$pack/glibc")
fi
# each of the pack's programs as a command of its own in $work/bin, for
# timeout, python and the tests
mkdir -p "$work/bin"
for b in "$pack"/bin/*; do
	{
		echo '#!/bin/sh'
		printf 'LD_LIBRARY_PATH=%q${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} exec' "$pack/lib"
		printf ' %q' "${loader[@]}" "$b"
		echo ' "$@"'
	} >"$work/bin/${b##*/}"
	chmod +x "$work/bin/${b##*/}"
done
bin=$work/bin
export DSVIEW=$work/bin/dsview

# step NAME SECONDS COMMAND...: its output into logs/NAME.log, its rows
# (lines starting ok / FAIL / no device) into the summary; a step that
# exits non-zero without a FAIL row gets one. quiet=1 step ...: neither,
# the caller says the row. @return the command's status.
step() {
	local name=$1 secs=$2 q=${quiet:-0} log s
	shift 2
	log=$out/logs/$name.log
	s=$(date +%s)
	local left=$((budget - (s - t0) - 15))
	if [ $left -lt 20 ]; then
		row skipped "$name: out of time (DEVICE_BUDGET=$budget s)"
		return 1
	fi
	[ "$secs" -gt $left ] && secs=$left
	timeout -k 5 "$secs" "$@" >"$log" 2>&1
	local rc=$?
	[ "$q" = 1 ] || grep -E '^(ok|FAIL|no device|skipped) ' "$log" | tee -a "$sum"
	if [ "$q" != 1 ] && [ $rc -ne 0 ] && ! grep -q '^FAIL ' "$log"; then
		row FAIL "$name: exit $rc$([ $rc -eq 124 ] && echo " (over ${secs} s)"); see logs/$name.log"
	fi
	say "          ($name: $(($(date +%s) - s)) s)"
	return $rc
}

say "dsview device check, $(date -u +%FT%TZ)$([ "$dry" = 1 ] && echo ', dry run')"
say "machine: $(uname -n), $(uname -m), $(nproc) cores, glibc ${have:-?}$([ ${#loader[@]} -gt 0 ] && echo "; the pack's glibc $want is used, through its own loader")"
say "pack: $(head -1 "$pack/PACK.txt"); $(awk '/^size:/ { print $2, $3 }' "$pack/PACK.txt")"
if command -v nvidia-smi >/dev/null; then
	say "nvidia-smi: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -4 | tr '\n' ';')"
else
	say "nvidia-smi: not found"
fi
say "python: $py $($py -c 'import sys; print(sys.version.split()[0])' 2>&1); modules: $(for m in numpy h5py hdf5plugin skimage torch; do $py -c "import $m" 2>/dev/null && printf '%s ' $m; done)"
say "/dev/fuse: $([ -e /dev/fuse ] && echo yes || echo no); uid $(id -u)"
say ""

# the device
step probe 60 "$bin/gpu_check" probe
device=0
grep -q '^ok .*probe' "$out/logs/probe.log" && device=1

# the GPU unit tests (host builds of the device code; no device needed)
for t in test_devlz4 test_devxform test_gpu_tier test_gpu_emu; do
	if "$bin/$t" >"$out/logs/$t.log" 2>&1; then row ok "unit $t"; else row FAIL "unit $t: see logs/$t.log"; fi
done

# host vs device, byte for byte (the emulation's rows without a device)
step compare 300 "$bin/gpu_check" compare

# kernel-only and end to end against the CPU on every core
if [ $device = 1 ]; then
	step bench 240 "$bin/gpu_bench"
	sed -n '/^device:/,$p' "$out/logs/bench.log" | grep -v '^{' | sed 's/^/          /' >>"$sum"
else
	"$bin/gpu_bench" >"$out/logs/bench.log" 2>&1
	row "no device" "bench: $(grep -m1 -v '^{' "$out/logs/bench.log")"
fi

# a packed store: 256 KiB chunks of 16 KiB blocks, 1 MiB chunks of 64 KiB,
# and others' file (one LZ4 block a chunk: left to the CPU) where h5py
# and hdf5plugin are here
rows=$([ "$dry" = 1 ] && echo 300 || echo 3000)
$py - "$work" "$rows" <<'PY' >"$out/logs/data.log" 2>&1
import sys
import numpy as np
work, n = sys.argv[1], int(sys.argv[2])
yy, xx = np.mgrid[0:64, 0:64]
x = ((xx[None, ..., None] * 3 + yy[None, ..., None] + np.arange(n)[:, None, None, None]
      + np.arange(3) * 40) % 256).astype(np.uint8)
x[:, ::5, ::7] = np.random.default_rng(1).integers(0, 256, x[:, ::5, ::7].shape, dtype=np.uint8)
np.save(f"{work}/img.npy", x)
try:
    import h5py
    import hdf5plugin
    with h5py.File(f"{work}/theirs.h5", "w") as f:
        f.create_dataset("img", data=x, chunks=(40, 64, 64, 3), **hdf5plugin.LZ4())
    print("theirs.h5 made")
except ImportError as e:
    print(f"no theirs.h5: {e}")
PY
ini=$work/v.ini
if "$DSVIEW" pack --chunk-size 256k --block-size 16K "$work/img.npy" "$work/s256.h5" >>"$out/logs/data.log" 2>&1 &&
	"$DSVIEW" pack --chunk-size 1M --block-size 64K "$work/img.npy" "$work/s1m.h5" >>"$out/logs/data.log" 2>&1; then
	{
		printf '[f32]\nsource = s256.h5:/img\nscale = 0.00392156862745098\n'
		printf '[bf16]\nsource = s1m.h5:/img\nscale = 0.00392156862745098\ndtype = bfloat16\n'
		printf '[norm]\nsource = s256.h5:/img\nscale = 0.00392156862745098\n'
		printf 'mean = 0.485 0.456 0.406\nstd = 0.229 0.224 0.225\nchannel_axis = -1\n'
		[ -e "$work/theirs.h5" ] && printf '[theirs]\nsource = theirs.h5:/img\nscale = 0.5\n'
	} >"$ini"
	row ok "data: $rows rows of 64x64x3 uint8 packed ($(du -sh "$work" | cut -f1))$([ -e "$work/theirs.h5" ] || echo ', no hdf5plugin: no others file')"
else
	row FAIL "data: dsview pack failed; see logs/data.log"
fi

# the backend without a mount: device 0, with a tier; or the emulation
# (its device readahead path and the tier in host memory)
if [ $device = 1 ]; then
	step backend 240 "$bin/gpu_check" backend "$ini" 0
	step backend-tier 240 "$bin/gpu_check" backend "$ini" 0 268435456
else
	export DSVIEW_GPU_EMULATE=1
	step backend 120 "$bin/gpu_check" backend "$ini" auto 67108864
	unset DSVIEW_GPU_EMULATE
fi

# the in-process reader on the device backend against gpu=off
if [ $device = 1 ]; then
	step reader 120 "$bin/gpu_check" reader "$ini" 0
else
	export DSVIEW_GPU_EMULATE=1
	step reader 60 "$bin/gpu_check" reader "$ini" auto
	unset DSVIEW_GPU_EMULATE
fi

# a mount: the e2e GPU tests (test_gpu's --gpu 0 and auto, the tier) and
# the mount rows (cold sequential GB/s, daemon CPU s/GB, the second epoch
# with --gpu-cache), with the machine's python
if [ $device = 0 ]; then
	row "no device" "e2e and mount rows: no device (make test runs the e2e GPU tests emulated)"
elif [ ! -e /dev/fuse ] || [ "$(id -u)" != 0 ]; then
	row skipped "e2e and mount rows: no /dev/fuse or not root (the backend rows above ran the same paths without a mount)"
else
	quiet=1 step e2e 240 "$py" tests/e2e/run.py test_gpu.py test_gpu_tier.py
	row "$([ $? = 0 ] && echo ok || echo FAIL)" "e2e test_gpu.py test_gpu_tier.py: $(tail -1 "$out/logs/e2e.log") (logs/e2e.log)"
	step mount-bench 240 "$py" -m bench run gpu_mount --rows "${GPU_ROWS:-2048}" \
		--rounds "${ROUNDS:-2}" --dsview "$DSVIEW" --out "$out/bench"
	sed -n '/^warning: peer/p; /^peer /,/^gpu_mount: /p' "$out/logs/mount-bench.log" |
		sed 's/^/          /' >>"$sum"
fi

# compute-sanitizer over the comparison (256 KiB chunks)
cs=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
if [ $device = 0 ]; then
	row "no device" "compute-sanitizer: no device${cs:+ ($cs found)}"
elif [ -z "$cs" ]; then
	row skipped "compute-sanitizer: not found"
else
	for tool in memcheck racecheck; do
		# the wrapper sets the pack's libraries for gpu_check alone, not
		# for the sanitizer's own process
		quiet=1 step "sanitizer-$tool" 150 "$cs" --tool "$tool" --error-exitcode 9 \
			"$bin/gpu_check" compare --quick
		row "$([ $? = 0 ] && echo ok || echo FAIL)" "compute-sanitizer $tool: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/logs/sanitizer-$tool.log" | tail -1)"
	done
fi

say ""
nfail=$(grep -c '^FAIL ' "$sum")
say "$(grep -c '^ok ' "$sum") ok, $nfail failed, $(grep -c '^no device ' "$sum") no device, $(grep -c '^skipped ' "$sum") skipped; $(($(date +%s) - t0)) s; $sum"
[ "$nfail" = 0 ]
