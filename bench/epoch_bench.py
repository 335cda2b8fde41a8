#!/usr/bin/python3
"""Two epochs through one mount: the photographs (python3-skimage, in
224x224x3 tiles, EPOCH_ROWS rows, default 2048: 308 MB of uint8, 1.2 GB of
float32) packed with `dsview pack`'s defaults, mounted once with --gpu off;
one reader of 16 MiB read()s from start to end, then the store's and the
mount's pages evicted (posix_fadvise) and the same pass again: the next
epoch of a data set larger than the page cache. GB/s of float32 of each
epoch and the chunks the readahead made in each, ROUNDS (3) interleaved,
medians. DSVIEW may name several builds, comma-separated, to compare them
in the same run (e.g. a commit before a change against one after).

  DSVIEW=build/dsview,/tmp/old/build/dsview /usr/bin/python3 bench/epoch_bench.py
"""
import json
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as L  # noqa: E402
import block_bench as B  # noqa: E402
import seq_bench as S  # noqa: E402

BINS = os.environ.get("DSVIEW", "build/dsview").split(",")
ROWS = int(os.environ.get("EPOCH_ROWS", "2048"))
ROUNDS = int(os.environ.get("ROUNDS", "3"))


def readahead_chunks(mnt):
    with open(os.path.join(mnt, ".stats.json")) as f:
        return json.load(f)["readahead_chunks"]


def two_epochs(dsview, work, store, mnt):
    L.evict(store)
    subprocess.run([dsview, "mount", "--gpu", "off", "--log", os.path.join(work, "log"),
                    os.path.join(work, "v.ini"), mnt], check=True)
    try:
        f = os.path.join(mnt, "v.dat")
        e1 = S.read_all(f)
        p1 = readahead_chunks(mnt)
        L.evict(store)
        L.evict(f)
        e2 = S.read_all(f)
        return e1, e2, p1, readahead_chunks(mnt) - p1
    finally:
        subprocess.run([dsview, "umount", mnt], check=True)


def main():
    work = L.work_dir("epoch")
    mnt = os.path.join(work, "mnt")
    try:
        os.makedirs(mnt)
        u8 = os.path.join(work, "u8.npy")
        B.photo_rows(u8, ROWS)
        store = os.path.join(work, "v.h5")
        subprocess.run([BINS[0], "pack", "--dataset", "x", u8, store], check=True,
                       capture_output=True)
        with open(os.path.join(work, "v.ini"), "w") as f:
            f.write(f"[v]\nsource = v.h5:/x\nscale = {1 / 255!r}\n")
        res = {b: [] for b in BINS}
        for _ in range(ROUNDS):
            for b in BINS:
                res[b].append(two_epochs(b, work, store, mnt))
        print(f"\n{'dsview':40} {'epoch 1 GB/s':>12} {'epoch 2 GB/s':>12} "
              f"{'chunks read ahead (1, 2)':>26}")
        for b, v in res.items():
            med = [float(np.median([r[k] for r in v])) for k in range(4)]
            print(f"{b:40} {med[0]:12.2f} {med[1]:12.2f} {med[2]:12.0f} {med[3]:12.0f}")
        print(f"\n{ROUNDS} rounds, medians, {ROWS} rows of photographs, one reader, --gpu off")
    finally:
        L.remove_work(work, mnt)


if __name__ == "__main__":
    main()
