#!/usr/bin/python3
"""Zarr v3 sharding (make bench-shard, also run by make bench). One uint8
dataset of SHARD_MB MB (default 256) of 256x256 rows, written by
zarr-python 3 (the project venv, make venv) twice, zstd level 0 inner
chunks of (4, 256, 256), 256 KiB, both:
  sharded    shards of (64, 256, 256), 4 MiB: 16 inner chunks a shard, the
             index at the end with its crc32c (zarr-python's defaults)
  unsharded  the same data as a v3 array chunked (4, 256, 256): one file
             an inner chunk
served as float32. Phases, ROUNDS (3) interleaved rounds, medians, each
cold (page cache dropped, daemon restarted): a sequential pass (GB/s of
float32) and sorted shuffled batches of 256 rows (SHARD_BATCHES, default
8, or 15 s; rows/s). Read amplification of the shuffled phase: the
daemon's /proc/PID/io read_bytes over the stored bytes of the distinct
inner chunks the rows read lie in (the sizes of the unsharded array's
chunk files, the same zstd frames). Ratios of medians of this run."""
import gc
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as L  # noqa: E402

DSVIEW = os.environ.get("DSVIEW", "build/dsview")
VENV_PY = os.environ.get("DSVIEW_VENV_PY", "build/venv/bin/python")
MB = int(os.environ.get("SHARD_MB", "256"))
ROUNDS = int(os.environ.get("ROUNDS", "3"))
BATCHES = int(os.environ.get("SHARD_BATCHES", "8"))
SIDE, INNER, SHARD = 256, 4, 64
PEERS = ["sharded", "unsharded"]
TARGETS = [("shuffled rows/s sharded / unsharded", ">=", 0.8), ("read amplification sharded", "<=", 2.0)]

WRITER = """
import os, sys
import numpy as np
import zarr
work, n, side, inner, shard = sys.argv[1], *map(int, sys.argv[2:])
rng = np.random.default_rng(0)
yy, xx = np.mgrid[0:side, 0:side]
grad = xx * 0.5 + yy * 0.3
s = zarr.create_array(os.path.join(work, "sharded.zarr"), shape=(n, side, side), dtype="u1",
                      chunks=(inner, side, side), shards=(shard, side, side), fill_value=0)
u = zarr.create_array(os.path.join(work, "unsharded.zarr"), shape=(n, side, side), dtype="u1",
                      chunks=(inner, side, side), fill_value=0)
for i in range(0, n, shard):
    k = min(shard, n - i)
    blk = ((grad[None] + np.arange(i, i + k)[:, None, None] * 3) % 256).astype(np.uint8)
    blk += rng.integers(0, 4, blk.shape, dtype=np.uint8)
    s[i:i + k] = blk
    u[i:i + k] = blk
"""


def make(work, n):
    subprocess.run([VENV_PY, "-c", WRITER, work, str(n), str(SIDE), str(INNER), str(SHARD)],
                   check=True, stderr=subprocess.DEVNULL)
    for peer in PEERS:
        with open(os.path.join(work, peer + ".ini"), "w") as f:
            f.write(f"[v]\nsource = {os.path.join(work, peer + '.zarr')}\n")


def needed_bytes(work, n, rows):
    """Stored bytes of the inner chunks holding rows."""
    chunks = np.unique(np.asarray(rows) // INNER)
    return sum(os.path.getsize(os.path.join(work, "unsharded.zarr", "c", str(c), "0", "0"))
               for c in chunks)


def measure(work, peer, n, fn):
    """fn(array, daemon pid) on a cold start of peer's mount."""
    L.drop_caches()
    mnt = os.path.join(work, "mnt")
    os.makedirs(mnt, exist_ok=True)
    subprocess.run([DSVIEW, "mount", "--log", os.path.join(work, "log"),
                    os.path.join(work, peer + ".ini"), mnt], check=True)
    try:
        with open(os.path.join(mnt, ".stats.json")) as f:
            import json
            pid = json.load(f)["pid"]
        a = np.memmap(os.path.join(mnt, "v.dat"), np.float32, "r", shape=(n, SIDE, SIDE))
        try:
            return fn(a, pid)
        finally:
            del a
            gc.collect()
    finally:
        subprocess.run([DSVIEW, "umount", mnt], check=True)


def shuffled(work, n, rnd):
    def run(a, pid):
        before = L.proc_read_bytes(pid)
        rate, rows = L.shuffled(lambda idx: np.asarray(a[idx]), n, BATCHES, seed=rnd)
        read = L.proc_read_bytes(pid) - before
        order = np.random.default_rng(rnd).permutation(n)[:rows]
        return rate, read / needed_bytes(work, n, order)
    return run


def main():
    work = tempfile.mkdtemp(prefix="dsview-shard-", dir=os.environ.get("BENCH_DIR", "/var/tmp"))
    n = max(2 * L.BATCH, MB * 1000 * 1000 // (SIDE * SIDE))
    L.PREFAULT_GB = min(6.0, max(1.0, 6 * MB / 1024))
    t0 = time.perf_counter()
    runs = {p: [] for p in PEERS}
    try:
        make(work, n)
        print(f"dataset: {n} rows of {SIDE}x{SIDE} uint8 ({n * SIDE * SIDE / 1e6:.0f} MB), inner "
              f"chunks of {INNER} rows, shards of {SHARD}; made in {time.perf_counter() - t0:.0f} s",
              flush=True)
        for rnd in range(ROUNDS):
            for peer in PEERS:
                gbs = measure(work, peer, n, lambda a, pid: L.seq(a, 16) / 1e9)
                rate, amp = measure(work, peer, n, shuffled(work, n, rnd))
                runs[peer].append((gbs, rate, amp))
                print(f"  round {rnd + 1}/{ROUNDS} {peer:9}: sequential {gbs:.2f} GB/s, shuffled "
                      f"{rate:,.0f} rows/s, read amplification {amp:.2f}", flush=True)
    finally:
        L.remove_work(work, os.path.join(work, "mnt"))
    med = {p: np.median(np.array(r), axis=0) for p, r in runs.items()}
    print(f"\n{'peer':10} {'seq cold GB/s':>14} {'shuffled rows/s':>16} {'read amp':>9}")
    for p in PEERS:
        print(f"{p:10} {med[p][0]:14.2f} {med[p][1]:16,.0f} {med[p][2]:9.2f}")
    print()
    got = {TARGETS[0][0]: med["sharded"][1] / med["unsharded"][1],
           TARGETS[1][0]: med["sharded"][2]}
    print(f"sequential sharded / unsharded: {med['sharded'][0] / med['unsharded'][0]:.2f}x")
    for what, op, bound in TARGETS:
        ok = got[what] >= bound if op == ">=" else got[what] <= bound
        print(f"{what}: {got[what]:.2f} (target {op} {bound:g}): {'met' if ok else 'NOT met'}")
    print(f"\n{ROUNDS} interleaved rounds, medians, {time.perf_counter() - t0:.0f} s; cold = page "
          f"cache dropped, daemon restarted; shuffled = sorted batches of {L.BATCH} random rows.")


if __name__ == "__main__":
    main()
