#!/usr/bin/python3
"""Interleaved A/B of levers of a dsview mount, on a uint8 SxSx3 .npy
(S = AB_SIDE, default 224; 64 gives the 12 KB rows of make bench-read)
served as normalised float32 (AB_MB of uint8, default 2048: shuffled
batches then read a small part of it, as in training).

  window  the kernel's readahead window of the mount (--readahead):
          cold shuffled batches (AB_BATCHES x 256 rows) in rows/s and read
          amplification (bytes dsview made / bytes the batches asked for),
          and a cold sequential memmap pass over the first AB_SEQ_MB of output
  push    dsview's own readahead into the page cache on (default) and off
          (DSVIEW_READAHEAD_KB=0): the cold sequential pass read back to
          back, and paced like training (a 10 ms step after every 16 rows;
          GB/s counts reading time only)
  hints   the threads that store sampler-hinted rows (DSVIEW_HINT_THREADS,
          AB_HINT_THREADS): cold shuffled batches by one reader that hints
          its next 2 batches (dsview.hint), rows/s

Every configuration runs REPS times, interleaved; medians are printed.
Page cache handling as in bench.py (dropped, SETTLE, PREFAULT_GB).

  DSVIEW=build/dsview /usr/bin/python3 bench/levers.py"""
import json
import os
import shutil
import subprocess
import tempfile
import time

import sys

import numpy as np

from benchlib import drop_caches

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from dsview import hint  # noqa: E402

DSVIEW = os.environ.get("DSVIEW", "build/dsview")
MB = int(os.environ.get("AB_MB", "2048"))
SEQ_MB = int(os.environ.get("AB_SEQ_MB", "2048"))
BATCHES = int(os.environ.get("AB_BATCHES", "8"))
REPS = int(os.environ.get("REPS", "3"))
WINDOWS = os.environ.get("AB_WINDOWS", "64K 128K 256K 512K 1M").split()
HINT_THREADS = os.environ.get("AB_HINT_THREADS", "2 4 8 16 32").split()
H = W = int(os.environ.get("AB_SIDE", "224"))
ROW = H * W * 3


def main():
    work = tempfile.mkdtemp(prefix="dsview-ab-", dir=os.environ.get("BENCH_DIR", "/var/tmp"))
    mnt = os.path.join(work, "mnt")
    n = max(2048, MB * 1000 * 1000 // ROW)
    x = np.lib.format.open_memmap(os.path.join(work, "u8.npy"), "w+", np.uint8, (n, H, W, 3))
    base = np.random.default_rng(0).integers(0, 256, (64, H, W, 3), dtype=np.uint8)
    for i in range(0, n, 64):
        x[i:i + 64] = base[:min(64, n - i)]
    del x
    ini = os.path.join(work, "b.ini")
    with open(ini, "w") as f:
        f.write(f"[v]\nsource = u8.npy\nscale = {1/255!r}\nmean = 0.485 0.456 0.406\n"
                f"std = 0.229 0.224 0.225\n")
    seq_rows = min(n, SEQ_MB * 1000 * 1000 // (ROW * 4))
    print(f"dataset: {n} rows ({n * ROW / 1e6:.0f} MB uint8); sequential passes over {seq_rows} "
          f"rows ({seq_rows * ROW * 4 / 1e6:.0f} MB float32); {REPS} interleaved reps, medians")

    def mounted(*opts, env=None):
        drop_caches()
        subprocess.run([DSVIEW, "mount", *opts, ini, mnt], check=True, env=env)
        return np.memmap(os.path.join(mnt, "v.dat"), np.float32, "r", shape=(n, H, W, 3))

    def stats():
        with open(os.path.join(mnt, ".stats.json")) as f:
            return json.load(f)

    def umount():
        subprocess.run([DSVIEW, "umount", mnt], check=True)

    def seq(a, pace=0.0):
        got, spent, step = 0, 0.0, 16 if pace else 64
        for i in range(0, seq_rows, step):
            t = time.perf_counter()
            got += np.array(a[i:min(i + step, seq_rows)]).nbytes
            spent += time.perf_counter() - t
            time.sleep(pace)
        return got / spent / 1e9

    res = {}
    try:
        for rep in range(REPS):
            for win in WINDOWS:
                a = mounted("--readahead", win)
                order = np.random.default_rng(rep).permutation(n)
                s0, t = stats(), time.perf_counter()
                for b in range(BATCHES):
                    _ = np.array(a[np.sort(order[b * 256:(b + 1) * 256])])
                rate = BATCHES * 256 / (time.perf_counter() - t)
                amp = (stats()["bytes_decoded"] - s0["bytes_decoded"]) / (BATCHES * 256 * ROW * 4)
                del a
                umount()
                a = mounted("--readahead", win)
                gbs = seq(a)
                del a
                umount()
                res.setdefault(("window", win), []).append((rate, amp, gbs))
            for push in ("on", "off"):
                env = dict(os.environ, DSVIEW_READAHEAD_KB="0") if push == "off" else None
                row = []
                for pace in (0.0, 0.01):
                    a = mounted(env=env)
                    row.append(seq(a, pace))
                    del a
                    umount()
                res.setdefault(("push", push), []).append(tuple(row))
            for threads in HINT_THREADS:
                a = mounted(env=dict(os.environ, DSVIEW_HINT_THREADS=threads))
                fd = os.open(os.path.join(mnt, "v.dat"), os.O_RDONLY)
                order = np.random.default_rng(100 + rep).permutation(n)
                batches = [np.sort(order[b * 256:(b + 1) * 256]) for b in range(BATCHES)]
                t = time.perf_counter()
                for b in batches[:2]:
                    hint(fd, b)
                for b in range(BATCHES):
                    if b + 2 < BATCHES:
                        hint(fd, batches[b + 2])
                    _ = np.array(a[batches[b]])
                res.setdefault(("hints", threads), []).append(
                    (BATCHES * 256 / (time.perf_counter() - t),))
                os.close(fd)
                del a
                umount()
            print(f"rep {rep + 1}/{REPS} done", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    print(f"\n{'--readahead':12} {'shuffled rows/s':>16} {'amplification':>14} {'sequential GB/s':>16}")
    for win in WINDOWS:
        m = np.median(np.array(res[("window", win)]), axis=0)
        print(f"{win:12} {m[0]:16,.0f} {m[1]:14.2f} {m[2]:16.2f}")
    print(f"\n{'readahead push':14} {'sequential GB/s':>16} {'paced GB/s':>11}")
    for push in ("on", "off"):
        m = np.median(np.array(res[("push", push)]), axis=0)
        print(f"{push:14} {m[0]:16.2f} {m[1]:11.2f}")
    print(f"\n{'hint threads':14} {'hinted shuffled rows/s':>23}")
    for threads in HINT_THREADS:
        m = np.median(np.array(res[("hints", threads)]), axis=0)
        print(f"{threads:14} {m[0]:23,.0f}")


if __name__ == "__main__":
    main()
