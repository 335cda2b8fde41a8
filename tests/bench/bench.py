#!/usr/bin/python3
"""First read-path benchmark (make bench). One run, one table.

Peers, all producing the same normalised float32 array
((x/255 - mean[c]) / std[c] of uint8 HWC rows):
  dsv_npy   dsview view over the uint8 .npy, np.memmap of the .dat
  dsv_lz4   dsview view over the `dsview pack` store of the same data
  f32_mm    the materialised float32 .npy, np.load(mmap_mode="r")
  u8_numpy  uint8 np.memmap + numpy normalisation per batch (the Python way)
Each: sequential pass cold (page cache dropped, daemon restarted) and warm,
and shuffled batches of 256 rows cold. Ratios are against f32_mm measured in
the same run. BENCH_MB scales the uint8 dataset (default 512)."""
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

DSVIEW = os.environ.get("DSVIEW", "build/dsview")
MB = int(os.environ.get("BENCH_MB", "512"))
H, W = 224, 224  # 150 KB uint8 rows, 600 KB float32 rows
MEAN = np.array([0.485, 0.456, 0.406])
STD = np.array([0.229, 0.224, 0.225])
BATCH = 256


def drop_caches():
    subprocess.run(["sync"])
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return True
    except OSError:
        return False


def seq(arr, step=64):
    t = time.perf_counter()
    n = 0
    for i in range(0, arr.shape[0], step):
        n += np.array(arr[i:i + step]).nbytes
    return n / (time.perf_counter() - t)


def shuffled(get, n, batches):
    rng = np.random.default_rng(7)
    order = rng.permutation(n)
    t = time.perf_counter()
    rows = 0
    for b in range(batches):
        idx = np.sort(order[b * BATCH:(b + 1) * BATCH])
        _ = get(idx)
        rows += len(idx)
    return rows / (time.perf_counter() - t)


def main():
    work = tempfile.mkdtemp(prefix="dsview-bench-", dir=os.environ.get("BENCH_DIR", "/var/tmp"))
    mnt = os.path.join(work, "mnt")
    n = max(BATCH * 2, MB * 1000 * 1000 // (H * W * 3))
    rng = np.random.default_rng(0)
    print(f"dataset: {n} rows of {H}x{W}x3 uint8 ({n * H * W * 3 / 1e6:.0f} MB; float32 "
          f"{n * H * W * 12 / 1e6:.0f} MB) in {work}")
    x = np.lib.format.open_memmap(os.path.join(work, "u8.npy"), "w+", np.uint8, (n, H, W, 3))
    yy, xx = np.mgrid[0:H, 0:W]
    for i in range(n):
        base = (xx * 0.7 + yy * 0.4 + i) % 256
        for c in range(3):
            x[i, :, :, c] = base * (0.6 + 0.2 * c)
        x[i] += rng.integers(0, 3, (H, W, 3), dtype=np.uint8)
    x.flush()
    f32 = np.lib.format.open_memmap(os.path.join(work, "f32.npy"), "w+", np.float32, x.shape)
    for i in range(0, n, 64):
        f32[i:i + 64] = ((x[i:i + 64].astype(np.float64) / 255 - MEAN) / STD).astype(np.float32)
    f32.flush()
    del f32
    del x
    subprocess.run([DSVIEW, "pack", "--dataset", "x", os.path.join(work, "u8.npy"),
                    os.path.join(work, "u8.h5")], check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(work, "b.ini"), "w") as f:
        for name, src in (("npy", "u8.npy"), ("lz4", "u8.h5:/x")):
            f.write(f"[{name}]\nsource = {src}\nscale = {1/255!r}\nmean = 0.485 0.456 0.406\n"
                    f"std = 0.229 0.224 0.225\n\n")
    sizes = {"dsv_npy": os.path.getsize(os.path.join(work, "u8.npy")),
             "dsv_lz4": os.path.getsize(os.path.join(work, "u8.h5")),
             "f32_mm": os.path.getsize(os.path.join(work, "f32.npy")),
             "u8_numpy": os.path.getsize(os.path.join(work, "u8.npy"))}
    can_drop = drop_caches()
    if not can_drop:
        print("warning: cannot drop the page cache (not root): 'cold' numbers are warm")

    def mount():
        subprocess.run([DSVIEW, "mount", "--log", os.path.join(work, "log"),
                        os.path.join(work, "b.ini"), mnt], check=True)

    def umount():
        subprocess.run([DSVIEW, "umount", mnt], check=True)

    results = {}
    batches = min(n // BATCH, 20)
    for peer in ("f32_mm", "dsv_npy", "dsv_lz4", "u8_numpy"):
        r = {}
        for phase in ("cold", "warm", "shuf"):
            if phase != "warm":
                drop_caches()
            if peer.startswith("dsv") and phase != "warm":
                mount()
            if peer == "f32_mm":
                arr = np.load(os.path.join(work, "f32.npy"), mmap_mode="r")
                get = lambda idx, a=arr: np.array(a[idx])
            elif peer.startswith("dsv"):
                arr = np.memmap(os.path.join(mnt, peer[4:] + ".dat"), np.float32, "r",
                                shape=(n, H, W, 3))
                get = lambda idx, a=arr: np.array(a[idx])
            else:
                u8 = np.load(os.path.join(work, "u8.npy"), mmap_mode="r")
                m32, s32 = MEAN.astype(np.float32), STD.astype(np.float32)
                get = lambda idx, a=u8: (a[idx].astype(np.float32) / 255 - m32) / s32

                class Norm:
                    shape = u8.shape

                    def __getitem__(self, s, a=u8):
                        return (a[s].astype(np.float32) / 255 - m32) / s32
                arr = Norm()
            if phase == "shuf":
                r[phase] = shuffled(get, n, batches)
            else:
                r[phase] = seq(arr)
            del arr, get
            if peer.startswith("dsv") and phase != "cold":
                umount()
        results[peer] = r

    base = results["f32_mm"]
    print(f"\n{'peer':10} {'disk MB':>8} {'seq cold GB/s':>14} {'seq warm GB/s':>14} "
          f"{'shuffled rows/s':>16}   ratios to f32_mm (cold, warm, shuffled)")
    for peer, r in results.items():
        print(f"{peer:10} {sizes[peer] / 1e6:8.0f} {r['cold'] / 1e9:14.2f} {r['warm'] / 1e9:14.2f} "
              f"{r['shuf']:16,.0f}   {r['cold'] / base['cold']:.2f}x {r['warm'] / base['warm']:.2f}x "
              f"{r['shuf'] / base['shuf']:.2f}x")
    print(f"\nmachine: {os.cpu_count()} cores; BENCH_MB={MB}; batches of {BATCH} rows; "
          f"cold = page cache dropped{'' if can_drop else ' (FAILED: not root)'} and daemon restarted")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
