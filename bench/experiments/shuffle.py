"""Where a shuffled pass's time goes: requests, bytes made and daemon time per row.

The read experiment's data (bench/experiments/read.py: --mb MB of
uint8 rows of --side) read as normalised float32 in cold sorted batches
of 256 random rows by --workers forked readers (read's shuffled phase),
under several configurations, each a peer:
  u8_numpy                        numpy over the uint8 .npy (the Python way)
  null:ra=128                     bench/nullfs, read_ahead_kb 128
  dsv_npy                         dsview over the uint8 .npy, defaults
  dsv_npy:warm-source             ... with the source file read into the
                                  page cache first (no disk in the pass)
  dsv_npy:--readahead=64K, 192K   ... with that mount option
  dsv_hint                        ... with sampler hints (2 batches ahead)
  dsv_hint:DSVIEW_HINT_THREADS=2  ... with 2 hint threads in the daemon
  disk                            the disk itself: random O_DIRECT reads
                                  of 4 KB to 512 KB of the source file
Per dsview configuration, from its /.stats.json: FUSE read requests per
row, output bytes made per row (bytes served over the float32 row), and
the daemon's mean microseconds per request making the bytes (pread,
decode, transform) and writing the reply (the kernel copying it into
the reader's pages); the rest of a row's time is the crossing (the
fault, the queueing, two wake-ups) and the reader's own work. The disk
peer's metrics are median microseconds of 300 reads per size."""
import mmap
import os
import random
import subprocess
import time

import numpy as np

from bench import benchlib as L
from bench.experiments import read as R
from bench.harness import Experiment, Metric, Peer, Phase, Setting, Target
from bench.mounts import nullfs_missing

CONFIGS = ["u8_numpy", "null:ra=128", "dsv_npy", "dsv_npy:warm-source",
           "dsv_npy:--readahead=64K", "dsv_npy:--readahead=192K",
           "dsv_hint:DSVIEW_HINT_THREADS=2", "dsv_hint"]
SIZES_KB = (4, 16, 32, 64, 128, 256, 512)


def parse(config):
    """(reader peer of read.py, mount options, daemon environment, warm
    source, read_ahead_kb or None)"""
    peer, *opts = config.split(":")
    mount, env, warm, ra = [], {}, False, None
    for o in opts:
        if o == "warm-source":
            warm = True
        elif o.startswith("ra="):
            ra = int(o[3:])
        elif o.startswith("--"):
            mount += o.split("=", 1)
        else:
            k, v = o.split("=", 1)
            env[k] = v
    return peer, mount, env, warm, ra


def make(run, point):
    return R.Dataset(run, run.s.side)


def setup(config):
    def s(run, ds):
        peer, opts, env, warm, ra = parse(config)
        if warm:
            subprocess.run(["cat", ds.path("u8.npy")], stdout=subprocess.DEVNULL, check=True)
        if peer == "null":
            m = run.mounts.null(ds.f32_bytes, name=f"s{ds.side}/mnt")
            L.raise_readahead(m.mnt, ra or 1024)
            return m
        if peer in R.SERVED:
            return run.mounts.dsview(ds.path("b.ini"), name=f"s{ds.side}/mnt", opts=opts, env=env)
        return None
    return s


def teardown(run, m):
    if m is not None:
        run.mounts.close(m)


def shuffled(run, ds, config, m, rnd):
    peer = parse(config)[0]
    s0 = m.stats() if m is not None and peer != "null" else None
    r = R.shuf_pass(ds, peer, m, run.s.workers, seed=rnd + 100 * run.s.workers)
    key = "shuf1" if run.s.workers == 1 else "shufw"
    rows = r[f"rows_{key}"]
    out = {"rows_s": r[f"{key}_rows"], "us_row": 1e6 * run.s.workers / r[f"{key}_rows"]}
    if s0:
        s1 = m.stats()
        out["req_row"] = (s1["read_requests"] - s0["read_requests"]) / rows
        out["made_row"] = (s1["bytes_served"] - s0["bytes_served"]) / rows / (ds.row * 4)
        for half in ("make", "reply"):
            n = sum(s1[f"read_{half}_us"]) - sum(s0[f"read_{half}_us"])
            us = s1[f"read_{half}_us_sum"] - s0[f"read_{half}_us_sum"]
            out[f"{half}_us"] = us / n if n else 0.0
    return out


def disk_latency(run, ds, peer, m, rnd):
    fd = os.open(ds.path("u8.npy"), os.O_RDONLY | os.O_DIRECT)
    size = os.fstat(fd).st_size
    out = {}
    try:
        for kb in SIZES_KB:
            if size < kb << 10:
                continue
            buf, rng, ts = mmap.mmap(-1, kb << 10), random.Random(kb + 1000 * rnd), []
            for _ in range(run.s.disk_reads):
                off = rng.randrange(0, size - (kb << 10) + 1) // 4096 * 4096
                t = time.perf_counter()
                os.preadv(fd, [buf], off)
                ts.append(time.perf_counter() - t)
            out[f"disk_us_{kb}k"] = 1e6 * float(np.median(ts))
    finally:
        os.close(fd)
    return out


def direct_missing(run):
    probe = os.path.join(run.work, ".direct")
    open(probe, "w").close()
    try:
        os.close(os.open(probe, os.O_RDONLY | os.O_DIRECT))
        return None
    except OSError as e:
        return f"O_DIRECT does not run on {run.work}'s filesystem ({e.strerror})"
    finally:
        os.unlink(probe)


def peer(config):
    missing = nullfs_missing if config.startswith("null") else None
    return Peer(config, config, setup(config), teardown, missing)


EXPERIMENT = Experiment(
    name="shuffle",
    doc=__doc__,
    settings=[Setting("mb", 1024, "MB of uint8 rows", quick=4),
              Setting("side", 64, "rows of side x side x 3", quick=16),
              Setting("workers", 1, "forked readers"),
              Setting("batch", 256, "rows a batch"),
              Setting("batches", 0, "batches a reader (0: read's, 32 or 8)", quick=2),
              Setting("pack_args", "", "`dsview pack` arguments of the store"),
              Setting("disk_reads", 300, "O_DIRECT reads per size", quick=20)],
    data=make,
    peers=[peer(c) for c in CONFIGS] + [Peer("disk", "O_DIRECT reads", missing=direct_missing)],
    phases=[Phase("shuffled", shuffled, peers=tuple(CONFIGS)),
            Phase("disk", disk_latency, peers=("disk",))],
    metrics=[Metric("rows_s", "rows/s"), Metric("us_row", "us", "per row and reader", False),
             Metric("req_row", "", "FUSE read requests per row", False),
             Metric("made_row", "x", "output bytes made per row's bytes", False),
             Metric("make_us", "us", "daemon: making a request's bytes", False),
             Metric("reply_us", "us", "daemon: writing the reply", False)]
    + [Metric(f"disk_us_{kb}k", "us", f"O_DIRECT {kb} KB read, median", False) for kb in SIZES_KB],
    targets=[Target("dsv_npy vs the Python way", "rows_s", "dsv_npy", "u8_numpy", None),
             Target("dsv_npy vs the FUSE ceiling", "rows_s", "dsv_npy", "null:ra=128", None),
             Target("hints vs none", "rows_s", "dsv_hint", "dsv_npy", None)],
)
