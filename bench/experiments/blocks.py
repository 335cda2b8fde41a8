"""LZ4 block size against shuffled-row speed: each --block-size's store against the .npy view.

--rows rows of 224x224x3 uint8: the read table's images (benchlib's
make_images, LZ4 ratio ~1.06) or with --data photos the photographs of
python3-skimage tiled into 224x224x3 frames (repeated). Each store (a
peer, `dsview pack --block-size SIZE`; npy the .npy itself) served as
normalised float32. Each pass: a fresh mount (an empty chunk cache), the
source files in the page cache (no disk: this measures the daemon's CPU a
row, which the block size changes), --prefault_gb touched and freed
first, one reader reading --batches sorted batches of --batch random rows by
np.memmap of the .dat. Reported: rows/s, bytes decoded / bytes asked
(.stats.json), CPU ms a row of the daemon and of the reader, and the
store's ratio."""
import os
import re
import subprocess
import time
import types

import numpy as np

from bench import benchlib as L
from bench.harness import Experiment, Metric, Peer, Phase, Setting, Target

SIZES = ["16K", "32K", "64K", "128K", "256K", "1G"]
SIDE = 224


def make(run, point):
    u8 = run.path("u8.npy")
    if run.s.data == "photos":
        L.photo_rows(u8, run.s.rows)
    elif run.s.data == "bench":
        L.make_images(u8, run.s.rows, SIDE, SIDE)
    else:
        raise SystemExit(f"blocks: no data '{run.s.data}' (bench or photos)")
    ratios = {}
    for bs in SIZES:
        out = run.path(f"s{L.safe_name(bs)}.h5")
        r = subprocess.run([run.dsview, "pack", "--dataset", "x", *L.store_args(bs), u8, out],
                           check=True, capture_output=True, text=True)
        ratios[bs] = float(re.search(r"\(([0-9.]+)x\)", r.stdout).group(1))
    for name in ["npy"] + SIZES:
        src = "u8.npy" if name == "npy" else f"s{L.safe_name(name)}.h5:/x"
        with open(run.path(L.safe_name(name) + ".ini"), "w") as f:
            f.write(f"[v]\nsource = {src}\nscale = {1/255!r}\n"
                    f"mean = 0.485 0.456 0.406\nstd = 0.229 0.224 0.225\n")
    return types.SimpleNamespace(ratios=ratios, shape=(run.s.rows, SIDE, SIDE, 3),
                                 info={"rows": run.s.rows, "data": run.s.data,
                                       "mb": round(run.s.rows * SIDE * SIDE * 3 / 1e6)})


def setup(name):
    def mount(run, data):
        for fn in os.listdir(run.work):  # warm the page cache: no disk in the passes
            if fn.endswith((".h5", ".npy")):
                with open(run.path(fn), "rb") as f:
                    while f.read(1 << 24):
                        pass
        if run.s.prefault_gb > 0:  # written, then freed at once
            np.ones(int(run.s.prefault_gb * 2**30), np.uint8)
        return run.mounts.dsview(run.path(L.safe_name(name) + ".ini"))
    return mount


def teardown(run, m):
    run.mounts.close(m)


def shuffled(run, data, peer, m, rnd):
    a = np.memmap(m.path("v.dat"), np.float32, "r", shape=data.shape)
    order = np.random.default_rng(rnd).permutation(data.shape[0])
    d0 = m.stats()["bytes_decoded"]
    c0, r0 = m.cpu(), os.times()
    t = time.perf_counter()
    for b in range(run.s.batches):
        np.asarray(a[np.sort(order[b * run.s.batch:(b + 1) * run.s.batch])]).sum()
    wall = time.perf_counter() - t
    c1, r1 = m.cpu(), os.times()
    d1 = m.stats()["bytes_decoded"]
    del a
    rows = run.s.batches * run.s.batch
    out = {"rows_s": rows / wall, "decoded_asked": (d1 - d0) / (rows * SIDE * SIDE * 3 * 4),
           "cpu_d_ms": (c1 - c0) * 1e3 / rows,
           "cpu_r_ms": (r1.user + r1.system - r0.user - r0.system) * 1e3 / rows}
    if peer in data.ratios:
        out["ratio"] = data.ratios[peer]
    return out


EXPERIMENT = Experiment(
    name="blocks",
    doc=__doc__,
    settings=[Setting("rows", 2048, "rows of 224x224x3 uint8", quick=48),
              Setting("data", "bench", "bench (the read table's images) or photos"),
              Setting("batches", 2, "sorted batches of random rows"),
              Setting("batch", 256, "rows a batch", quick=16),
              Setting("prefault_gb", 1.0, "memory touched and freed before each pass (no page-cache "
                      "drops here)", quick=0.0)],
    data=make,
    peers=[Peer("npy", "the .npy view", setup("npy"), teardown)]
    + [Peer(s, f"pack --block-size {s}", setup(s), teardown) for s in SIZES],
    phases=[Phase("shuffled", shuffled, cold=False)],
    metrics=[Metric("rows_s", "rows/s", "warm source, cold chunk cache"),
             Metric("decoded_asked", "x", "bytes decoded / bytes asked", higher_is_better=False),
             Metric("cpu_d_ms", "ms/row", "daemon CPU a row", higher_is_better=False),
             Metric("cpu_r_ms", "ms/row", "reader CPU a row", higher_is_better=False),
             Metric("ratio", "x", "the store's compression ratio")],
    targets=[Target(f"{s} vs npy", "rows_s", s, "npy", None) for s in ("16K", "64K", "1G")],
)
