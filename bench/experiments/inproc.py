"""The in-process reader against FUSE: cold sequential passes.

A uint8 HWC dataset of 224x224x3
rows served as the normalised float32 view ((x/255 - mean[c]) / std[c]),
one cold sequential pass each (a fresh daemon or reader), 8 MiB of float32
a read:
  null        bench/nullfs.c through a memmap: the FUSE ceiling
  mount       a dsview mount of the view, a memmap of v.dat
  inproc      dsview.open(manifest, "v"): the view read in this process
              (Array.read into one reused buffer), no FUSE
  inproc_lz4  the same over the `dsview pack` LZ4 store of the data
  mount_lz4   the store's view through a mount
CPU s/GB is the reading side's: the daemon's and the reader's together
for mounts."""
import os
import subprocess
import time
import types

import numpy as np

from bench import benchlib as L
from bench.harness import Experiment, Metric, Peer, Phase, Setting, Target
from bench.mounts import dsview_peer, null_peer, nullfs_missing

SIDE = 224
STEP_BYTES = 8 << 20
NORM = "scale = 0.00392156862745098\nmean = 0.485 0.456 0.406\nstd = 0.229 0.224 0.225\n"


def make(run, point):
    n = max(64, (run.s.mb << 20) // (SIDE * SIDE * 3))
    u8, lz4, ini = run.path("u8.npy"), run.path("u8-lz4.h5"), run.path("v.ini")
    L.make_images(u8, n, SIDE, SIDE)
    subprocess.run([run.dsview, "pack", "--codec", "lz4", u8, lz4], check=True,
                   capture_output=True)
    with open(ini, "w") as f:
        f.write(f"[v]\nsource = u8.npy\n{NORM}[lz4]\nsource = u8-lz4.h5\n{NORM}")
    shape = (n, SIDE, SIDE, 3)
    return types.SimpleNamespace(
        ini=ini, shape=shape, f32_bytes=int(np.prod(shape)) * 4,
        info={"rows": n, "mb": round(n * SIDE * SIDE * 3 / 1e6),
              "f32_gb": round(n * SIDE * SIDE * 12 / 1e9, 2)})


def self_cpu():
    t = os.times()
    return t.user + t.system


def pass_memmap(a):
    """One sequential pass, copied out 8 MiB at a time: (bytes, seconds)."""
    step = max(1, STEP_BYTES // (a.strides[0] or 1))
    t = time.perf_counter()
    n = 0
    for i in range(0, a.shape[0], step):
        n += np.array(a[i:i + step]).nbytes
    return n, time.perf_counter() - t


def pass_inproc(ini, name):
    """One sequential pass of an in-process view into one reused buffer."""
    import dsview
    a = dsview.open(ini, name)
    step = max(1, STEP_BYTES // a.row_bytes)
    out = np.empty((step,) + a.shape[1:], np.float32)
    t = time.perf_counter()
    n = 0
    for i in range(0, a.shape[0], step):
        rows = np.arange(i, min(i + step, a.shape[0]))
        a.read(rows, out=out[:len(rows)])
        n += len(rows) * a.row_bytes
    secs = time.perf_counter() - t
    a.reader.close()
    return n, secs


def seq(run, data, peer, m, rnd):
    cpu0 = self_cpu()
    if m is None:
        n, secs = pass_inproc(data.ini, "lz4" if peer == "inproc_lz4" else "v")
        return {"gbs": n / secs / 1e9, "cpu_gb": (self_cpu() - cpu0) / (n / 1e9)}
    d0 = m.cpu()
    name = {"null": "data", "mount": "v", "mount_lz4": "lz4"}[peer]
    a = np.memmap(m.path(name + ".dat"), np.float32, "r", shape=data.shape)
    n, secs = pass_memmap(a)
    del a
    return {"gbs": n / secs / 1e9, "cpu_gb": (self_cpu() - cpu0 + m.cpu() - d0) / (n / 1e9)}


EXPERIMENT = Experiment(
    name="inproc",
    doc=__doc__,
    settings=[Setting("mb", 512, "MiB of uint8 rows", quick=16)],
    data=make,
    peers=[Peer("null", "bench/nullfs, the FUSE ceiling", *null_peer("f32_bytes"),
                missing=nullfs_missing),
           Peer("mount", "a dsview mount of the view", *dsview_peer("ini")),
           Peer("inproc", "dsview.open in this process"),
           Peer("inproc_lz4", "dsview.open of the LZ4 store"),
           Peer("mount_lz4", "a dsview mount of the LZ4 store's view", *dsview_peer("ini"))],
    phases=[Phase("seq", seq)],
    metrics=[Metric("gbs", "GB/s", "cold sequential, float32 out"),
             Metric("cpu_gb", "CPU s/GB", "reader + daemon CPU per GB of float32",
                    higher_is_better=False)],
    targets=[Target("past any FUSE daemon", "gbs", "inproc", "null", 2.0),
             Target("the decode's own cost", "gbs", "inproc_lz4", "inproc", 0.9)],
)
