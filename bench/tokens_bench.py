#!/usr/bin/python3
"""Arrow token windows against the same tokens as a raw .bin (make
bench-tokens). TOKENS_MB (default 256) MB of int32 token ids, written
twice: as a Hugging Face datasets cache writes them (the Arrow IPC stream
form, input_ids list<int32>, rows of 1 to 400 tokens, batches of 1,000
rows: one values buffer per batch; pyarrow from the project venv) and as
one headerless int32 .bin (a raw source). Both served as (n, 1025) int64
windows at stride 1024:
  arrow   cache.arrow, input_ids: one run per record batch
  raw     tokens.bin, source_dtype int32, source_shape -1
Phases, ROUNDS (3) interleaved rounds (order alternating), medians, each
cold (the files' pages evicted, daemon restarted): a sequential pass of
the windows (GB/s of int64) and random batches of 64 windows (windows/s,
TOKENS_BATCHES batches, default 200). The ratio arrow / raw of this run's
medians; target >= 0.9."""
import os
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as L  # noqa: E402

DSVIEW = os.environ.get("DSVIEW", "build/dsview")
VENV_PY = os.environ.get("DSVIEW_VENV_PY", "build/venv/bin/python")
MB = int(os.environ.get("TOKENS_MB", "256"))
ROUNDS = int(os.environ.get("ROUNDS", "3"))
BATCHES = int(os.environ.get("TOKENS_BATCHES", "200"))
WIN, STRIDE, BATCH = 1025, 1024, 64
PEERS = ["arrow", "raw"]
TARGET = 0.9

WRITER = r'''
import sys
import numpy as np
import pyarrow as pa
path, raw, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
rng = np.random.default_rng(0)
schema = pa.schema([("input_ids", pa.list_(pa.int32()))])
done = 0
with pa.OSFile(path, "wb") as f, open(raw, "wb") as r:
    with pa.ipc.new_stream(f, schema) as w:
        while done < n:
            lens = rng.integers(1, 401, 1000)
            lens[np.cumsum(lens) > n - done] = 0
            if lens.sum() == 0:
                lens[0] = n - done
            vals = rng.integers(0, 50257, int(lens.sum())).astype(np.int32)
            offs = np.concatenate([[0], np.cumsum(lens)]).astype(np.int32)
            arr = pa.ListArray.from_arrays(pa.array(offs), pa.array(vals))
            w.write_batch(pa.record_batch([arr], schema=schema))
            r.write(vals.tobytes())
            done += len(vals)
'''


def make(work, n):
    subprocess.run([VENV_PY, "-c", WRITER, os.path.join(work, "cache.arrow"),
                    os.path.join(work, "tokens.bin"), str(n)], check=True)
    common = f"window = {WIN}\nstride = {STRIDE}\ndtype = int64\n"
    with open(os.path.join(work, "arrow.ini"), "w") as f:
        f.write(f"[v]\nsource = {os.path.join(work, 'cache.arrow')}\n{common}")
    with open(os.path.join(work, "raw.ini"), "w") as f:
        f.write(f"[v]\nsource = {os.path.join(work, 'tokens.bin')}\nsource_dtype = int32\n"
                f"source_shape = -1\n{common}")


def cold(work, peer, fn):
    """fn(view) on a cold start: the source files' pages evicted (this
    bench's files alone: the machine is shared), a fresh daemon."""
    for name in ("cache.arrow", "tokens.bin"):
        L.evict(os.path.join(work, name))
    mnt = os.path.join(work, "mnt")
    os.makedirs(mnt, exist_ok=True)
    subprocess.run([DSVIEW, "mount", "--log", os.path.join(work, "log"),
                    os.path.join(work, peer + ".ini"), mnt], check=True)
    a = np.load(os.path.join(mnt, "v.npy"), mmap_mode="r")
    try:
        return fn(a)
    finally:
        del a
        subprocess.run([DSVIEW, "umount", mnt], check=True)


def seq(a):
    t = time.perf_counter()
    n = 0
    for i in range(0, a.shape[0], 256):
        n += np.array(a[i:i + 256]).nbytes
    return n / (time.perf_counter() - t) / 1e9


def random_windows(a, seed):
    rng = np.random.default_rng(seed)
    t = time.perf_counter()
    for _ in range(BATCHES):
        idx = np.sort(rng.integers(0, a.shape[0], BATCH))
        np.asarray(a[idx])
    return BATCHES * BATCH / (time.perf_counter() - t)


def main():
    work = L.work_dir("tokens")
    n = MB * 1000 * 1000 // 4
    t0 = time.perf_counter()
    try:
        make(work, n)
        print(f"dataset: {n:,} int32 tokens ({MB} MB), {os.path.getsize(os.path.join(work, 'cache.arrow')) / 1e6:.0f} MB "
              f"as Arrow; made in {time.perf_counter() - t0:.0f} s", flush=True)
        first = {p: cold(work, p, lambda a: (a.shape, np.array(a[[0, a.shape[0] // 2, -1]]).tobytes()))
                 for p in PEERS}
        if first["arrow"] != first["raw"]:
            sys.exit("arrow and raw views differ: not the same tokens")
        runs = L.interleaved(
            PEERS, ROUNDS,
            lambda peer, rnd: (cold(work, peer, seq), cold(work, peer, lambda a: random_windows(a, rnd))),
            lambda r: f"sequential {r[0]:.2f} GB/s, random {r[1]:,.0f} windows/s", 6, alternate=True)
    finally:
        L.remove_work(work, os.path.join(work, "mnt"))
    med = L.medians(runs)
    L.table(PEERS, med, [("seq cold GB/s", 14, ".2f"), ("windows/s", 12, ",.0f")], 6)
    print()
    for k, what in ((0, "sequential"), (1, "random windows")):
        L.target(f"arrow / raw {what}", med["arrow"][k] / med["raw"][k], ">=", TARGET)
    print(L.machine("TOKENS_MB", MB, ROUNDS, t0))


if __name__ == "__main__":
    main()
