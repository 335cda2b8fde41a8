#!/usr/bin/python3
"""The disk cache's second epoch against the same store on local disk
(docs/benchmarks/s3.md): a sequential np.memmap pass over the float32
view of a dsview LZ4 store,
  local   the store file on local disk (in the page cache), a fresh mount
  dcache  the store as an object on SeaweedFS (tests/e2e/objstore.py),
          a fresh mount with --disk-cache DIR that a first mount filled
          (DIR's files in the page cache), the server's bytes not read
  cold    the first pass of that object through an empty DIR (for scale)
Each mount is fresh, so neither the chunk cache nor the mount's page cache
holds anything; ROUNDS interleaved rounds (default 5), medians.

    BENCH_MB=256 ROUNDS=5 /usr/bin/python3 bench/s3_cache_bench.py
"""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
os.environ.setdefault("DSVIEW", os.path.join(ROOT, "build", "dsview"))
os.environ.setdefault("DSVIEW_VENV_PY", os.path.join(ROOT, "build", "venv", "bin", "python"))
from objstore import ObjectStore  # noqa: E402

DSV = os.environ["DSVIEW"]
MB, ROUNDS = int(os.environ.get("BENCH_MB", "256")), int(os.environ.get("ROUNDS", "5"))
ROW = 4096


def dsview(*args, env=None):
    r = subprocess.run([DSV, *args], capture_output=True, text=True, env=env)
    if r.returncode:
        raise RuntimeError(f"dsview {' '.join(args)}: {r.stderr}")


def seq_pass(dat, rows):
    """GB/s of float32 output, a memmap read 256 rows at a time."""
    m = np.memmap(dat, dtype=np.float32, mode="r", shape=(rows, ROW))
    t0, s = time.perf_counter(), 0.0
    for i in range(0, rows, 256):
        s += float(m[i:i + 256, ::512].sum())  # touch every page
        np.asarray(m[i:i + 256]).copy()
    dt = time.perf_counter() - t0
    del m
    return rows * ROW * 4 / dt / 1e9


def timed_mount(source, tmp, env, *opts):
    mp = tempfile.mkdtemp(dir=tmp)
    dsview("mount", "--log", os.path.join(tmp, "log"), *opts, source, mp, env=env)
    try:
        return seq_pass(os.path.join(mp, "x.dat"), MB * (1 << 20) // ROW)
    finally:
        dsview("umount", mp)


def main():
    tmp = tempfile.mkdtemp(prefix="dsv-s3cache-")
    try:
        rng = np.random.default_rng(1)
        rows = MB * (1 << 20) // ROW
        # smooth-ish uint8 rows: LZ4 keeps about half
        x = (rng.integers(0, 16, (rows, ROW), dtype=np.uint8) + np.arange(ROW) // 64).astype(np.uint8)
        np.save(os.path.join(tmp, "x.npy"), x)
        store = os.path.join(tmp, "x.h5")
        dsview("pack", os.path.join(tmp, "x.npy"), store)
        os.remove(os.path.join(tmp, "x.npy"))
        for k in [k for k in os.environ if k.startswith("AWS_")]:
            del os.environ[k]
        obj = ObjectStore(tmp)
        obj.start()
        try:
            s3 = obj.client()
            s3.create_bucket(Bucket="bench")
            s3.upload_file(store, "bench", "x.h5")
            env = obj.env()
            res = {"local": [], "dcache": [], "cold": []}
            for r in range(ROUNDS):
                cache = os.path.join(tmp, f"cache{r}")
                res["cold"].append(timed_mount("s3://bench/x.h5", tmp, env, "--disk-cache", cache))
                res["local"].append(timed_mount(store, tmp, None))
                res["dcache"].append(timed_mount("s3://bench/x.h5", tmp, env, "--disk-cache", cache))
                shutil.rmtree(cache)
        finally:
            obj.stop()
        med = {k: statistics.median(v) for k, v in res.items()}
        print(f"store {os.path.getsize(store) / 2**20:.0f} MiB on disk, {MB * 4} MiB of float32; "
              f"{ROUNDS} rounds; load {os.getloadavg()[0]:.1f}")
        for k, v in res.items():
            print(f"  {k:7s} median {med[k]:.2f} GB/s  ({', '.join(f'{g:.2f}' for g in v)})")
        print(f"  dcache / local = {med['dcache'] / med['local']:.2f} "
              f"(per round: {', '.join(f'{d / l:.2f}' for d, l in zip(res['dcache'], res['local']))})")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
