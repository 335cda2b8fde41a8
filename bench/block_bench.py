#!/usr/bin/python3
"""LZ4 block size for shuffled reads: for each --block-size, the
store's ratio, and shuffled batches of BATCH rows read through a mount, in
rows/s against the .npy view of the same uint8 data, with bytes decoded /
bytes asked (.stats.json).

The data: BLOCK_ROWS (2048) rows of 224x224x3 uint8, the read bench's rows
(benchlib.make_images: gradients + noise, LZ4 ratio ~1.06), or with
BLOCK_DATA=photos the photographs of Debian's python3-skimage tiled into
224x224x3 frames (repeated to BLOCK_ROWS). Each pass: a fresh mount (empty
chunk cache), the source files already in the page cache (no disk: this
measures the daemon's CPU per row, which is what the block size changes),
one reader reading BLOCK_BATCHES (2) sorted batches of 256 random rows by
np.memmap of the .dat, as a shuffled loader does. ROUNDS (3) interleaved
rounds, medians.

  BLOCK_SIZES=16K,64K,1G DSVIEW=build/dsview /usr/bin/python3 bench/block_bench.py

An entry of BLOCK_SIZES that is not a size is another codec's store,
CODEC[:LEVEL][@CHUNK_SIZE] (`pack --codec CODEC --level LEVEL --chunk-size
CHUNK_SIZE`), for shuffled reads of stores decoded a chunk at a time:

  BLOCK_DATA=photos BLOCK_SIZES=16K,zstd:9@1M,zstd:9@256K,zstd:9@128K ...
"""
import json
import os
import re
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as L  # noqa: E402

DSVIEW = os.environ.get("DSVIEW", "build/dsview")
ROWS = int(os.environ.get("BLOCK_ROWS", "2048"))
SIZES = os.environ.get("BLOCK_SIZES", "16K,32K,64K,128K,256K,1G").split(",")
ROUNDS = int(os.environ.get("ROUNDS", "3"))
BATCHES = int(os.environ.get("BLOCK_BATCHES", "2"))
DATA = os.environ.get("BLOCK_DATA", "bench")
SIDE = 224
MOUNT_ARGS = os.environ.get("BLOCK_MOUNT_ARGS", "").split()  # e.g. "--cache-size 64M"
# GB of memory touched and freed before each pass: on a VM whose balloon
# takes freed pages back, the daemon's first touch of fresh memory (a cold
# chunk cache fills with new buffers) would cost ~2.5 s/GB (docs/benchmarks/lz4-block-size.md)
PREFAULT_GB = float(os.environ.get("BENCH_PREFAULT_GB", "1"))


def photo_rows(path, n):
    """skimage's colour photographs cut into 224x224x3 tiles, repeated."""
    from skimage import data
    tiles = []
    for name in ("astronaut", "chelsea", "coffee", "hubble_deep_field", "immunohistochemistry",
                 "stereo_motorcycle", "retina", "rocket"):
        im = getattr(data, name)()
        for im in im[:2] if isinstance(im, tuple) else (im,):  # the motorcycle: left, right
            im = im[..., :3]
            for y in range(0, im.shape[0] - SIDE + 1, SIDE):
                for x in range(0, im.shape[1] - SIDE + 1, SIDE):
                    tiles.append(im[y:y + SIDE, x:x + SIDE])
    t = np.stack(tiles)
    np.save(path, t[np.arange(n) % len(t)])
    return len(t)


def safe(spec):
    return re.sub(r"[^A-Za-z0-9]", "_", spec)


def pack_args(spec):
    """pack's arguments for a BLOCK_SIZES entry."""
    if spec[0].isdigit():
        return ["--block-size", spec]
    codec, _, chunk = spec.partition("@")
    codec, _, level = codec.partition(":")
    return (["--codec", codec] + (["--level", level] if level else [])
            + (["--chunk-size", chunk] if chunk else []))


def one_pass(work, store, seed):
    """(rows/s, decoded/asked, daemon CPU ms per row, reader CPU ms per
    row) of one reader on a fresh mount of store."""
    mnt = os.path.join(work, "mnt")
    os.makedirs(mnt, exist_ok=True)
    if PREFAULT_GB > 0:
        a = np.ones(int(PREFAULT_GB * 2**30), np.uint8)
        del a
    subprocess.run([DSVIEW, "mount", "--log", os.path.join(work, "log"), *MOUNT_ARGS,
                    os.path.join(work, safe(store) + ".ini"), mnt], check=True)
    try:
        a = np.memmap(os.path.join(mnt, "v.dat"), np.float32, "r", shape=(ROWS, SIDE, SIDE, 3))
        order = np.random.default_rng(seed).permutation(ROWS)
        with open(os.path.join(mnt, ".stats.json")) as f:
            st = json.load(f)
        d0, pid = st["bytes_decoded"], st["pid"]
        c0, r0 = L.proc_cpu(pid), os.times()
        t = time.perf_counter()
        for b in range(BATCHES):
            idx = np.sort(order[b * L.BATCH:(b + 1) * L.BATCH])
            np.asarray(a[idx]).sum()
        wall = time.perf_counter() - t
        c1, r1 = L.proc_cpu(pid), os.times()
        with open(os.path.join(mnt, ".stats.json")) as f:
            d1 = json.load(f)["bytes_decoded"]
        del a
    finally:
        subprocess.run([DSVIEW, "umount", mnt], check=True)
    rows = BATCHES * L.BATCH
    return (rows / wall, (d1 - d0) / (rows * SIDE * SIDE * 3 * 4), (c1 - c0) * 1e3 / rows,
            (r1.user + r1.system - r0.user - r0.system) * 1e3 / rows)


def main():
    work = L.work_dir("block")
    try:
        u8 = os.path.join(work, "u8.npy")
        if DATA == "photos":
            print(f"data: {photo_rows(u8, ROWS)} photograph tiles, repeated to {ROWS} rows")
        else:
            L.make_images(u8, ROWS, SIDE, SIDE)
            print(f"data: {ROWS} rows of the read bench's images")
        stores = {"npy": None}
        for bs in SIZES:
            out = os.path.join(work, f"s{safe(bs)}.h5")
            t = time.perf_counter()
            r = subprocess.run([DSVIEW, "pack", "--dataset", "x", *pack_args(bs), u8, out],
                               check=True, capture_output=True, text=True)
            stores[bs] = (time.perf_counter() - t, r.stdout.strip())
        for name in stores:
            src = "u8.npy" if name == "npy" else f"s{safe(name)}.h5:/x"
            with open(os.path.join(work, safe(name) + ".ini"), "w") as f:
                f.write(f"[v]\nsource = {src}\nscale = {1/255!r}\n"
                        f"mean = 0.485 0.456 0.406\nstd = 0.229 0.224 0.225\n")
            for fn in os.listdir(work):  # warm the page cache: no disk in the passes
                if fn.endswith((".h5", ".npy")):
                    with open(os.path.join(work, fn), "rb") as f:
                        while f.read(1 << 24):
                            pass
        res = {name: [] for name in stores}
        for rnd in range(ROUNDS):
            for name in stores:
                res[name].append(one_pass(work, name, seed=rnd))
        npy = float(np.median([r[0] for r in res["npy"]]))
        print(f"\n{'store':22} {'ratio':>6} {'rows/s':>8} {'vs npy':>7} {'decoded/asked':>14} "
              f"{'CPU ms/row daemon+reader':>25}  pack")
        for name in stores:
            rps = float(np.median([r[0] for r in res[name]]))
            amp = float(np.median([r[1] for r in res[name]]))
            cd = float(np.median([r[2] for r in res[name]]))
            cr = float(np.median([r[3] for r in res[name]]))
            ratio = "-"
            if stores[name]:
                ratio = stores[name][1].split("(")[1].split("x")[0]
            print(f"{name:22} {ratio:>6} {rps:8,.0f} {rps / npy:7.2f} {amp:14.2f} "
                  f"{f'{cd:.3f}+{cr:.3f}':>25}  "
                  + (stores[name][1].split(", ", 1)[1] if stores[name] else ""))
        print(f"\n{ROUNDS} rounds, medians; {BATCHES} sorted batches of {L.BATCH} of {ROWS} rows, "
              f"one reader, np.memmap of the float32 .dat; page cache warm, chunk cache cold; "
              f"{PREFAULT_GB:g} GB touched and freed before each pass; mount options "
              f"{' '.join(MOUNT_ARGS) or '(defaults)'}; {os.cpu_count()} cores")
    finally:
        L.remove_work(work, os.path.join(work, "mnt"))


if __name__ == "__main__":
    main()
