#!/usr/bin/python3
"""The mount's side of `make bench-gpu`: cold sequential passes
of an LZ4 store through a mount with `--gpu off` (the CPU backend) and
`--gpu GPU_DEVICE` (default 0: the readahead's pages made on the device,
backend/make.c), in GB/s of float32 and the daemon's CPU seconds per GB
served. The data: the python3-skimage photographs in 224x224x3 tiles
(benchlib's synthetic images where skimage is missing), repeated to
GPU_ROWS (2048) rows (308 MB of uint8, 1.2 GB of float32),
packed with `dsview pack`'s defaults. Each pass: the store's pages evicted
(posix_fadvise), a fresh mount, one reader of 16 MiB read()s from start to
end. A third trial adds `--gpu-cache GPU_TIER` (default 1G, the whole
store's decoded bytes) and measures the second epoch: one pass unmeasured
fills the tier, then the store's and the mount's pages are evicted and the
next pass is timed. ROUNDS (3) interleaved, medians. Where no device can be
had, one line saying why, and exit 0.

  DSVIEW=build/dsview /usr/bin/python3 bench/gpu_mount_bench.py
"""
import json
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as L  # noqa: E402

DSVIEW = os.environ.get("DSVIEW", "build/dsview")
ROWS = int(os.environ.get("GPU_ROWS", "2048"))
ROUNDS = int(os.environ.get("ROUNDS", "3"))
DEVICE = os.environ.get("GPU_DEVICE", "0")
TIER = os.environ.get("GPU_TIER", "1G")


def stats(mnt):
    with open(os.path.join(mnt, ".stats.json")) as f:
        return json.load(f)


def one_pass(work, store, gpu, tier=None):
    """(GB/s, daemon CPU s per GB, the device's share of the pages); with a
    tier, of the second pass."""
    mnt = os.path.join(work, "mnt")
    os.makedirs(mnt, exist_ok=True)
    L.evict(store)
    subprocess.run([DSVIEW, "mount", "--gpu", gpu, "--log", os.path.join(work, "log")]
                   + (["--gpu-cache", tier] if tier else []) + [os.path.join(work, "v.ini"), mnt],
                   check=True)
    try:
        if tier:
            L.read_all(os.path.join(mnt, "v.dat"))
            L.evict(store)
            L.evict(os.path.join(mnt, "v.dat"))
        pid = stats(mnt)["pid"]
        c0 = L.proc_cpu(pid)
        gbs = L.read_all(os.path.join(mnt, "v.dat"))
        cpu = L.proc_cpu(pid) - c0
        st = stats(mnt)
        size = os.path.getsize(os.path.join(mnt, "v.dat"))
        return gbs, cpu / (size / 1e9), st.get("gpu_readahead_bytes", 0) / size
    finally:
        subprocess.run([DSVIEW, "umount", mnt], check=True)


def main():
    work = L.work_dir("gpum")
    try:
        mnt = os.path.join(work, "probe")
        os.makedirs(mnt)
        u8 = os.path.join(work, "u8.npy")
        try:
            L.photo_rows(u8, ROWS)
            data = "photographs"
        except ImportError:  # a machine without skimage (the GPU machine's python)
            L.make_images(u8, ROWS, 224, 224)
            data = "synthetic images (no skimage)"
        store = os.path.join(work, "v.h5")
        subprocess.run([DSVIEW, "pack", "--dataset", "x", u8, store], check=True,
                       capture_output=True)
        with open(os.path.join(work, "v.ini"), "w") as f:
            f.write(f"[v]\nsource = v.h5:/x\nscale = {1 / 255!r}\n")
        r = subprocess.run([DSVIEW, "mount", "--gpu", DEVICE, os.path.join(work, "v.ini"), mnt],
                           capture_output=True, text=True)
        if r.returncode != 0:
            print(f"mount rows: no GPU ({r.stderr.strip()})")
            return
        subprocess.run([DSVIEW, "umount", mnt], check=True)
        res = {"off": [], DEVICE: [], f"{DEVICE}+tier": []}
        for _ in range(ROUNDS):
            for gpu in res:
                dev, _, tier = gpu.partition("+")
                res[gpu].append(one_pass(work, store, dev, TIER if tier else None))
        print(f"\n{'--gpu':10} {'GB/s':>6} {'CPU s/GB':>9} {'pages made on the device':>24}"
              f"   (+tier: --gpu-cache {TIER}, the second epoch)")
        med = {g: [float(np.median([p[k] for p in v])) for k in range(3)] for g, v in res.items()}
        for gpu, (gbs, cpu, share) in med.items():
            print(f"{gpu:10} {gbs:6.2f} {cpu:9.3f} {share:24.0%}")
        off, on = med["off"], med[DEVICE]
        tiered = med[f"{DEVICE}+tier"]
        print(f"\n--gpu {DEVICE} / off: {on[0] / off[0]:.2f}x the GB/s, "
              f"{on[1] / off[1]:.2f}x the daemon CPU per GB (target <= 0.3x at the same GB/s); "
              f"with the tier, the second epoch: {tiered[0] / off[0]:.2f}x, {tiered[1] / off[1]:.2f}x; "
              f"{ROUNDS} rounds, medians, {ROWS} rows of {data}, one reader, cold store")
    finally:
        L.remove_work(work, os.path.join(work, "mnt"))


if __name__ == "__main__":
    main()
