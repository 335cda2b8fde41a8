#!/usr/bin/python3
"""A/B of the readahead lever: the same mount with DSVIEW_READAHEAD_KB
set to each value given (default: 0 and 8192), REPS times each in turn (give
the values twice, e.g. 0 8192 0 8192, to interleave them):
cold shuffled batches (5 x 256 rows) then a cold sequential pass over a
uint8 224x224x3 .npy served as float32 (AB_MB, default 256 MB of uint8).

  DSVIEW=build/dsview /usr/bin/python3 tests/bench/readahead_ab.py 0 8192 0 8192"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

DSVIEW = os.environ.get("DSVIEW", "build/dsview")
MB = int(os.environ.get("AB_MB", "256"))
REPS = int(os.environ.get("REPS", "2"))
H = W = 224


def drop():
    subprocess.run(["sync"])
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def main():
    work = tempfile.mkdtemp(prefix="dsview-ab-", dir=os.environ.get("BENCH_DIR", "/var/tmp"))
    mnt = os.path.join(work, "mnt")
    n = max(512, MB * 1000 * 1000 // (H * W * 3))
    x = np.lib.format.open_memmap(os.path.join(work, "u8.npy"), "w+", np.uint8, (n, H, W, 3))
    rng = np.random.default_rng(0)
    for i in range(0, n, 100):
        x[i:i + 100] = rng.integers(0, 256, x[i:i + 100].shape, dtype=np.uint8)
    del x
    ini = os.path.join(work, "b.ini")
    with open(ini, "w") as f:
        f.write(f"[npy]\nsource = u8.npy\nscale = {1/255!r}\n")

    def mounted(env):
        subprocess.run([DSVIEW, "mount", ini, mnt], check=True, env=env)
        return np.memmap(os.path.join(mnt, "npy.dat"), np.float32, "r", shape=(n, H, W, 3))

    def stats():
        with open(os.path.join(mnt, ".stats.json")) as f:
            return json.load(f)

    try:
        for depth in sys.argv[1:] or ["0", "8192"]:
            env = dict(os.environ, DSVIEW_READAHEAD_KB=depth)
            for rep in range(REPS):
                drop()
                a = mounted(env)
                order = np.random.default_rng(rep).permutation(n)
                t = time.perf_counter()
                for b in range(5):
                    _ = np.array(a[np.sort(order[b * 256:(b + 1) * 256])])
                shuf = 5 * 256 / (time.perf_counter() - t)
                st = stats()
                del a
                subprocess.run([DSVIEW, "umount", mnt], check=True)
                drop()
                a = mounted(env)
                t = time.perf_counter()
                got = sum(np.array(a[i:i + 64]).nbytes for i in range(0, n, 64))
                seq = got / (time.perf_counter() - t) / 1e9
                del a
                subprocess.run([DSVIEW, "umount", mnt], check=True)
                print(f"readahead {depth} KiB: shuffled {shuf:6,.0f} rows/s ({st['chunks_decoded']} chunks "
                      f"decoded, {st['prefetched']} asked by readahead), sequential {seq:.2f} GB/s",
                      flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
