"""Zarr v3 sharded against unsharded: shuffled rows, read amplification, sequential.

One uint8 dataset of 256x256 rows, written by zarr-python 3 (the project
venv) twice, zstd level 0 inner chunks of (4, 256, 256), 256 KiB, both:
  sharded    shards of (64, 256, 256), 4 MiB: 16 inner chunks a shard, the
             index at the end with its crc32c (zarr-python's defaults)
  unsharded  the same data as a v3 array chunked (4, 256, 256): one file
             an inner chunk
served as float32. Each cold: a sequential pass (GB/s of float32, 16 rows
a read) and sorted shuffled batches (rows/s), with its read
amplification: the daemon's /proc/PID/io read_bytes over the stored
bytes of the distinct inner chunks the rows read lie in (the sizes of the
unsharded array's chunk files, the same zstd frames)."""
import os
import subprocess
import types

import numpy as np

from bench import benchlib as L
from bench.harness import ROOT, Experiment, Metric, Peer, Phase, Setting, Target
from bench.mounts import dsview_peer, view_seq

SIDE, INNER, SHARD = 256, 4, 64

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


def make(run, point):
    n = max(2 * run.s.batch, run.s.mb * 1000 * 1000 // (SIDE * SIDE))
    subprocess.run([os.path.join(ROOT, run.s.venv_py), "-c", WRITER, run.work, str(n), str(SIDE),
                    str(INNER), str(SHARD)], check=True, stderr=subprocess.DEVNULL)
    data = types.SimpleNamespace(shape=(n, SIDE, SIDE), info={
        "rows": n, "mb": round(n * SIDE * SIDE / 1e6), "inner_rows": INNER, "shard_rows": SHARD})
    for peer in ("sharded", "unsharded"):
        ini = run.path(peer + ".ini")
        with open(ini, "w") as f:
            f.write(f"[v]\nsource = {run.path(peer + '.zarr')}\n")
        setattr(data, peer, ini)
    return data


def needed_bytes(run, rows):
    """Stored bytes of the inner chunks holding rows."""
    chunks = np.unique(np.asarray(rows) // INNER)
    return sum(os.path.getsize(run.path("unsharded.zarr", "c", str(c), "0", "0")) for c in chunks)


def shuffled(run, data, peer, m, rnd):
    a = np.memmap(m.path("v.dat"), np.float32, "r", shape=data.shape)
    before = m.read_bytes()
    rate, rows = L.shuffled_rows(a, run.s.batches, rnd, run.s.batch)
    read = m.read_bytes() - before
    del a
    order = np.random.default_rng(rnd).permutation(data.shape[0])[:rows]
    return {"shuf_rows": rate, "amp": read / needed_bytes(run, order)}


EXPERIMENT = Experiment(
    name="shard",
    doc=__doc__,
    settings=[Setting("mb", 256, "MB of uint8 rows", quick=4),
              Setting("batches", 8, "shuffled batches (or 15 s)", quick=2),
              Setting("batch", 256, "rows a shuffled batch", quick=16),
              Setting("venv_py", "build/venv/bin/python", "the project venv's Python (zarr 3)")],
    data=make,
    peers=[Peer("sharded", "Zarr v3 shards of 64 rows", *dsview_peer("sharded")),
           Peer("unsharded", "Zarr v3 chunks of 4 rows", *dsview_peer("unsharded"))],
    phases=[Phase("seq", view_seq()), Phase("shuf", shuffled)],
    metrics=[Metric("seq_gbs", "GB/s", "cold sequential, float32 out"),
             Metric("shuf_rows", "rows/s", "cold shuffled sorted batches"),
             Metric("amp", "x", "disk bytes / stored bytes of the chunks read",
                    higher_is_better=False)],
    targets=[Target("shuffled", "shuf_rows", "sharded", "unsharded", 0.8),
             Target("read amplification", "amp", "sharded", None, 2.0, "<="),
             Target("sequential", "seq_gbs", "sharded", "unsharded", None)],
)
