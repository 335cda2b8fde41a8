#!/usr/bin/python3
"""Where the time of a shuffled pass goes (make bench-shuffle): cold sorted
batches of 256 random rows of 64x64x3 uint8 (12 KB; PROF_SIDE sets the
side), read as normalised float32 by PROF_WORKERS (1) forked readers, as in
make bench-read, under several configurations, REPS (3) interleaved rounds,
medians. Each configuration is a peer of the read experiment
(bench/experiments/read.py) and its options:

  dsv_npy                         dsview over the uint8 .npy, defaults
  dsv_npy:--readahead=192K        ... with mount options (--opt=value)
  dsv_npy:warm-source             ... with the uint8 source file read into the
                                  page cache first (no disk in the pass)
  dsv_hint:DSVIEW_HINT_THREADS=4  ... with the daemon's environment (knobs for
                                  measuring: DSVIEW_HINT_THREADS, DSVIEW_CLONE_FD,
                                  DSVIEW_MAX_BACKGROUND, DSVIEW_READAHEAD_KB)
  null:ra=128                     the no-op FUSE filesystem, read_ahead_kb 128
  u8_numpy, f32_mm, ...           the Python peers

Reported per configuration: rows/s and microseconds per row; for dsview,
the FUSE read requests per row, the output bytes made per row (bytes
served over the float32 row), and the daemon's mean microseconds per
request making the bytes (pread, decode, transform) and writing the reply
(the kernel copying it into the reader's pages), from .stats.json's
histograms; the rest of a row's time is the crossing (the fault, the
request's queueing and the two wake-ups) and the reader's own work.
Then the disk's own latency: random O_DIRECT reads of 4 KB to 512 KB of the
source file, medians of 300.

  PROF_CONFIGS="u8_numpy dsv_npy ..." (default below), PROF_MB (1024)."""
import mmap
import os
import random
import subprocess
import sys
import time
import types

import numpy as np

sys.path[:0] = [os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python")]
from bench import benchlib as L  # noqa: E402
from bench.experiments import read as R  # noqa: E402
from bench.mounts import Mount, NullMount  # noqa: E402

DSVIEW = os.path.abspath(os.environ.get("DSVIEW", "build/dsview"))
NULLFS = os.path.abspath(os.environ.get("NULLFS", "build/bench/nullfs"))
MB = int(os.environ.get("PROF_MB", "1024"))
SIDE = int(os.environ.get("PROF_SIDE", "64"))
WORKERS = int(os.environ.get("PROF_WORKERS", "1"))
REPS = int(os.environ.get("REPS", "3"))
CONFIGS = os.environ.get(
    "PROF_CONFIGS", "u8_numpy null:ra=128 dsv_npy dsv_npy:warm-source dsv_npy:--readahead=64K "
    "dsv_npy:--readahead=192K dsv_hint:DSVIEW_HINT_THREADS=2 dsv_hint").split()


def parse(config):
    peer, *opts = config.split(":")
    mount, env, warm, ra = [], {}, False, None
    for o in opts:
        if o == "warm-source":
            warm = True
        elif "=" in o and o.split("=", 1)[0].isupper():
            env[o.split("=", 1)[0]] = o.split("=", 1)[1]
        elif o.startswith("ra="):
            ra = int(o.split("=", 1)[1])
        elif o.startswith("--"):
            mount += o.split("=", 1)
        else:
            raise SystemExit(f"unknown option {o!r} in {config!r}")
    return peer, mount, env, warm, ra


def mount(run, ds, peer, opts, env, ra):
    mnt = ds.path("mnt")
    if peer == "null":
        m = NullMount(run, ds.f32_bytes, mnt)
        if ra:
            L.raise_readahead(mnt, ra)
        return m
    return Mount(run, ds.path("b.ini"), mnt, opts, env)


def one(run, ds, config, rep):
    peer, opts, env, warm, ra = parse(config)
    L.drop_caches()
    if warm:
        subprocess.run(["cat", ds.path("u8.npy")], stdout=subprocess.DEVNULL, check=True)
    m = mount(run, ds, peer, opts, env, ra) if peer in R.SERVED else None
    s0 = m.stats() if m and peer != "null" else None
    r = R.shuf_pass(ds, peer, m, WORKERS, seed=rep + 100 * WORKERS)
    key = "shuf1" if WORKERS == 1 else "shufw"
    out = {"rows/s": r[f"{key}_rows"]}
    if s0:
        s1 = m.stats()
        rows = r[f"rows_{key}"]
        reads = s1["read_requests"] - s0["read_requests"]
        out["req/row"] = reads / rows
        out["made/row"] = (s1["bytes_served"] - s0["bytes_served"]) / rows / (ds.row * 4)
        for half in ("make", "reply"):
            n = sum(s1[f"read_{half}_us"]) - sum(s0[f"read_{half}_us"])
            us = s1[f"read_{half}_us_sum"] - s0[f"read_{half}_us_sum"]
            out[f"{half} us"] = us / n if n else 0.0
    if m:
        m.close(run)
    return out


def disk_latency(path):
    fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    size = os.fstat(fd).st_size
    res = []
    for kb in (4, 16, 32, 64, 128, 256, 512):
        buf, rng, ts = mmap.mmap(-1, kb << 10), random.Random(kb), []
        for _ in range(300):
            off = rng.randrange(0, size - (kb << 10)) // 4096 * 4096
            t = time.perf_counter()
            os.preadv(fd, [buf], off)
            ts.append(time.perf_counter() - t)
        res.append((kb, 1e6 * float(np.median(ts))))
    os.close(fd)
    return res


def main():
    work = L.work_dir("prof")
    L.scale_prefault(MB)
    res = {}
    run = types.SimpleNamespace(
        s=types.SimpleNamespace(workers=WORKERS, mb=MB, batch=L.BATCH, batches=0, pack_args=""),
        dsview=DSVIEW, nullfs=NULLFS, path=lambda *names: os.path.join(work, *names))
    try:
        ds = R.Dataset(run, SIDE)
        for rep in range(REPS):
            for c in CONFIGS:
                res.setdefault(c, []).append(one(run, ds, c, rep))
                print(f"  round {rep + 1}/{REPS} {c}: {res[c][-1]['rows/s']:,.0f} rows/s",
                      flush=True)
        lat = disk_latency(ds.path("u8.npy"))
    finally:
        L.remove_work(work, os.path.join(work, f"s{SIDE}", "mnt"))
    cols = ["rows/s", "us/row", "req/row", "made/row", "make us", "reply us"]
    print(f"\n{WORKERS} reader(s), rows of {SIDE}x{SIDE}x3 uint8, {REPS} rounds, medians")
    print(f"{'configuration':30}" + "".join(f"{c:>10}" for c in cols))
    for c, rs in res.items():
        med = {k: float(np.median([r[k] for r in rs])) for k in rs[0]}
        med["us/row"] = 1e6 * WORKERS / med["rows/s"]
        print(f"{c:30}" + "".join(f"{med[k]:10,.1f}" if k in med else f"{'-':>10}"
                                  for k in cols))
    print("\ndisk: random O_DIRECT reads of the source file, median microseconds")
    print("  " + "  ".join(f"{kb} KB {us:.0f}" for kb, us in lat))


if __name__ == "__main__":
    main()
