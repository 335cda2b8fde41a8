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
import os
import subprocess
import sys
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
    """fn(array, daemon pid) on a cold start of peer's mount
    (benchlib.cold_view)."""
    mnt = os.path.join(work, "mnt")
    return L.cold_view(DSVIEW, os.path.join(work, peer + ".ini"), mnt, os.path.join(work, "log"),
                       (n, SIDE, SIDE), lambda a: fn(a, L.daemon_pid(mnt)))


def shuffled(work, n, rnd):
    def run(a, pid):
        before = L.proc_read_bytes(pid)
        rate, rows = L.shuffled_rows(a, BATCHES, rnd)
        read = L.proc_read_bytes(pid) - before
        order = np.random.default_rng(rnd).permutation(n)[:rows]
        return rate, read / needed_bytes(work, n, order)
    return run


def one(work, peer, n, rnd):
    """(sequential GB/s, shuffled rows/s, read amplification), each cold."""
    gbs = measure(work, peer, n, lambda a, pid: L.seq(a, 16) / 1e9)
    return (gbs, *measure(work, peer, n, shuffled(work, n, rnd)))


def main():
    work = L.work_dir("shard")
    n = max(2 * L.BATCH, MB * 1000 * 1000 // (SIDE * SIDE))
    L.scale_prefault(MB)
    t0 = time.perf_counter()
    try:
        make(work, n)
        print(f"dataset: {n} rows of {SIDE}x{SIDE} uint8 ({n * SIDE * SIDE / 1e6:.0f} MB), inner "
              f"chunks of {INNER} rows, shards of {SHARD}; made in {time.perf_counter() - t0:.0f} s",
              flush=True)
        runs = L.interleaved(
            PEERS, ROUNDS, lambda peer, rnd: one(work, peer, n, rnd),
            lambda r: f"sequential {r[0]:.2f} GB/s, shuffled {r[1]:,.0f} rows/s, read amplification "
                      f"{r[2]:.2f}", 9)
    finally:
        L.remove_work(work, os.path.join(work, "mnt"))
    med = L.medians(runs)
    L.table(PEERS, med, [("seq cold GB/s", 14, ".2f"), ("shuffled rows/s", 16, ",.0f"),
                         ("read amp", 9, ".2f")], 10)
    print()
    got = {TARGETS[0][0]: med["sharded"][1] / med["unsharded"][1],
           TARGETS[1][0]: med["sharded"][2]}
    print(f"sequential sharded / unsharded: {med['sharded'][0] / med['unsharded'][0]:.2f}x")
    for what, op, bound in TARGETS:
        L.target(what, got[what], op, bound, unit="")
    L.cold_footer(ROUNDS, t0)


if __name__ == "__main__":
    main()
