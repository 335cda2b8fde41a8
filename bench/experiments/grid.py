"""N-d chunk grids and Zarr against whole-row chunks and the library.

One uint8 dataset of 256x256 volumes, served as float32
(x / 255 - 0.5) / 0.25 by every peer:
  h5_grid    HDF5 chunked (1, 64, 64), LZ4: dsview's N-d grid
  h5_lib     the same file with DSVIEW_H5_GRID=0: the HDF5 library fallback
  h5_rows    the same data chunked in whole rows, (16, 256, 256), LZ4
  zarr       Zarr v2, Blosc-LZ4 with byte shuffle, chunks (16, 256, 256),
             written by python3-zarr
  dsv_lz4    the `dsview pack` store of the same data (LZ4, its defaults)
  zarr_np    the Zarr array read with zarr + numpy normalisation in Python
Each cold: a sequential pass (GB/s of float32, 16 rows a read) and
sorted shuffled batches of 256 rows (rows/s)."""
import subprocess
import types

import numpy as np

from bench import benchlib as L
from bench.harness import Experiment, Metric, Peer, Phase, Setting, Target
from bench.mounts import dsview_peer, view_seq, view_shuffled

SIDE = 256
SCALE, OFFSET = 1 / (255 * 0.25), -0.5 / 0.25
SOURCES = {"h5_grid": "v.h5:/grid", "h5_lib": "v.h5:/grid", "h5_rows": "v.h5:/rows",
           "zarr": "v.zarr", "dsv_lz4": "store.h5:/x"}


def write_u8(run, n):
    x = np.lib.format.open_memmap(run.path("u8.npy"), "w+", np.uint8, (n, SIDE, SIDE))
    rng = np.random.default_rng(0)
    yy, xx = np.mgrid[0:SIDE, 0:SIDE]
    grad = (xx * 0.5 + yy * 0.3)
    for i in range(0, n, 64):
        k = min(64, n - i)
        blk = ((grad[None] + np.arange(i, i + k)[:, None, None] * 3) % 256).astype(np.uint8)
        blk += rng.integers(0, 4, blk.shape, dtype=np.uint8)
        x[i:i + k] = blk
    x.flush()
    return x


def make(run, point):
    import h5py
    import hdf5plugin
    import numcodecs
    import zarr
    n = max(2 * run.s.batch, run.s.mb * 1000 * 1000 // (SIDE * SIDE))
    x = write_u8(run, n)
    with h5py.File(run.path("v.h5"), "w") as f:
        f.create_dataset("grid", data=x, chunks=(1, 64, 64), **hdf5plugin.LZ4())
        f.create_dataset("rows", data=x, chunks=(16, SIDE, SIDE), **hdf5plugin.LZ4())
    z = zarr.open(run.path("v.zarr"), mode="w", shape=x.shape, chunks=(16, SIDE, SIDE),
                  dtype=np.uint8, compressor=numcodecs.Blosc("lz4", 5, numcodecs.Blosc.SHUFFLE))
    for i in range(0, n, 256):
        z[i:i + 256] = x[i:i + 256]
    del x
    subprocess.run([run.dsview, "pack", "--dataset", "x", run.path("u8.npy"),
                    run.path("store.h5")], check=True, stdout=subprocess.DEVNULL)
    data = types.SimpleNamespace(shape=(n, SIDE, SIDE), info={
        "volumes": n, "mb": round(n * SIDE * SIDE / 1e6), "f32_mb": round(4 * n * SIDE * SIDE / 1e6)})
    for peer, src in SOURCES.items():
        ini = run.path(peer + ".ini")
        with open(ini, "w") as f:
            f.write(f"[v]\nsource = {run.path(src)}\nscale = {SCALE!r}\noffset = {OFFSET!r}\n")
        setattr(data, peer, ini)
    return data


class ZarrNorm:
    """zarr_np: the Zarr array read with zarr, normalised with numpy."""

    def __init__(self, path):
        import zarr
        self.z = zarr.open(path, mode="r")
        self.shape = self.z.shape

    def __getitem__(self, sl):
        if isinstance(sl, np.ndarray):
            u8 = self.z.get_orthogonal_selection((sl,))
        else:
            u8 = self.z[sl]
        return u8.astype(np.float32) * np.float32(SCALE) + np.float32(OFFSET)


def seq(run, data, peer, m, rnd):
    if peer != "zarr_np":
        return view_seq()(run, data, peer, m, rnd)
    return {"seq_gbs": L.seq(ZarrNorm(run.path("v.zarr")), 16) / 1e9}


def shuf(run, data, peer, m, rnd):
    if peer != "zarr_np":
        return view_shuffled()(run, data, peer, m, rnd)
    return {"shuf_rows": L.shuffled_rows(ZarrNorm(run.path("v.zarr")), run.s.batches, rnd,
                                                run.s.batch)[0]}


def targets():
    out = []
    for a, b, bound in (("h5_grid", "h5_lib", 5.0), ("h5_grid", "h5_rows", 0.8),
                        ("zarr", "dsv_lz4", 0.9), ("zarr", "zarr_np", 3.0)):
        out += [Target("sequential", "seq_gbs", a, b, bound),
                Target("shuffled", "shuf_rows", a, b, bound)]
    return out


EXPERIMENT = Experiment(
    name="grid",
    doc=__doc__,
    settings=[Setting("mb", 256, "MB of uint8 volumes", quick=8),
              Setting("batches", 8, "shuffled batches (or 15 s)", quick=2),
              Setting("batch", 256, "rows a shuffled batch", quick=16)],
    data=make,
    peers=[Peer("h5_grid", "HDF5 (1, 64, 64) LZ4 chunks, the N-d grid", *dsview_peer("h5_grid")),
           Peer("h5_lib", "the same through the HDF5 library",
                *dsview_peer("h5_lib", env={"DSVIEW_H5_GRID": "0"})),
           Peer("h5_rows", "whole-row (16, 256, 256) LZ4 chunks", *dsview_peer("h5_rows")),
           Peer("zarr", "Zarr v2 Blosc-LZ4 through dsview", *dsview_peer("zarr")),
           Peer("dsv_lz4", "the `dsview pack` store", *dsview_peer("dsv_lz4")),
           Peer("zarr_np", "zarr + numpy in Python")],
    phases=[Phase("seq", seq), Phase("shuf", shuf)],
    metrics=[Metric("seq_gbs", "GB/s", "cold sequential, float32 out"),
             Metric("shuf_rows", "rows/s", "cold shuffled sorted batches of `batch` rows")],
    targets=targets(),
    alternate=False,
)
