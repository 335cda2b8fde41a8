"""Cold sequential reads of one uint8 array per store codec, against the .npy view and a float32 copy.

One uint8 array: --data photos (--rows rows of python3-skimage's
photographs in 224x224x3 tiles, repeated) or sparse (--mb of
datasets.py's MNIST-like 28x28 strokes: up to 16 MB generated, repeated).
Peers, each read start to end by one reader in 16 MiB read()s, cold (page
cache dropped, a fresh mount):
  f32       the materialised float32 file (x / 255, by numpy), read directly
  npy       the .npy view (scale 1/255)
  lz4, zstd, blosc-zstd-shuffle:4   a `dsview pack` store of each codec
Targets: each store's mount at >= 1.0x the .npy view; the copy users make
today (f32) reported against the view."""
import os
import subprocess
import types

import numpy as np

from bench import benchlib as L
from bench import datasets
from bench.harness import Experiment, Metric, Peer, Phase, Setting, Target

CODECS = ["lz4", "zstd", "blosc-zstd-shuffle:4"]


def make(run, point):
    u8 = run.path("u8.npy")
    if run.s.data == "sparse":
        datasets.MB = min(16, run.s.mb)  # generated, then repeated to --mb
        x = datasets.sparse(np.random.default_rng(7))[0]
        np.save(u8, np.concatenate([x] * max(1, round(run.s.mb * 1e6 / x.nbytes))))
    elif run.s.data == "photos":
        L.photo_rows(u8, run.s.rows)
    else:
        raise SystemExit(f"seq: no data '{run.s.data}' (photos or sparse)")
    np.save(run.path("f32.npy"), np.load(u8, mmap_mode="r") * np.float32(1 / 255))
    disk = {"f32": os.path.getsize(run.path("f32.npy")), "npy": os.path.getsize(u8)}
    for spec in CODECS:
        out = run.path(L.safe_name(spec) + ".h5")
        subprocess.run([run.dsview, "pack", "--dataset", "x", *L.store_args(spec), u8, out],
                       check=True, capture_output=True)
        disk[spec] = os.path.getsize(out)
    for name in ["npy"] + CODECS:
        src = "u8.npy" if name == "npy" else f"{L.safe_name(name)}.h5:/x"
        with open(run.path(L.safe_name(name) + ".ini"), "w") as f:
            f.write(f"[v]\nsource = {src}\nscale = {1/255!r}\n")
    return types.SimpleNamespace(disk=disk, info={"data": run.s.data,
                                                  "mb": round(disk["npy"] / 1e6)})


def setup(name):
    def mount(run, data):
        return run.mounts.dsview(run.path(L.safe_name(name) + ".ini"))
    return mount


def teardown(run, m):
    run.mounts.close(m)


def measure(run, data, peer, m, rnd):
    path = run.path("f32.npy") if m is None else m.path("v.dat")
    return {"gbs": L.read_all(path), "on_disk_mb": data.disk[peer] / 1e6}


EXPERIMENT = Experiment(
    name="seq",
    doc=__doc__,
    settings=[Setting("data", "photos", "photos or sparse", quick="sparse"),
              Setting("rows", 2048, "rows of photograph tiles"),
              Setting("mb", 64, "MB of sparse strokes", quick=2)],
    data=make,
    peers=[Peer("f32", "the float32 file, read directly")]
    + [Peer(p, f"a mount of {p}", setup(p), teardown) for p in ["npy"] + CODECS],
    phases=[Phase("pass", measure)],
    metrics=[Metric("gbs", "GB/s", "cold sequential, float32 out"),
             Metric("on_disk_mb", "MB", "bytes on disk", higher_is_better=False)],
    targets=[Target(f"{c} store vs the .npy view", "gbs", c, "npy", 1.0) for c in CODECS]
    + [Target("the float32 copy vs the .npy view", "gbs", "f32", "npy", None)],
)
