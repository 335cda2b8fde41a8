#!/usr/bin/python3
"""N-d chunk grids and Zarr (make bench-grid, also run by make
bench). One uint8 dataset of GRID_MB MB (default 256) of 256x256 volumes,
served as float32 (x / 255 - 0.5) / 0.25 by every peer:
  h5_grid    HDF5 chunked (1, 64, 64), LZ4: dsview's N-d grid
  h5_lib     the same file with DSVIEW_H5_GRID=0: the HDF5 library fallback
             (what dsview did before the grid)
  h5_rows    the same data chunked in whole rows, (16, 256, 256), LZ4
  zarr       Zarr v2, Blosc-LZ4 with byte shuffle, chunks (16, 256, 256),
             written by python3-zarr
  dsv_lz4    the `dsview pack` store of the same data (LZ4, its defaults)
  zarr_np    the Zarr array read with zarr + numpy normalisation in Python
Phases, ROUNDS (3) interleaved rounds, medians, each cold (page cache
dropped, daemon restarted): a sequential pass (GB/s of float32) and sorted
shuffled batches of 256 rows (GRID_BATCHES, default 8, or 15 s; rows/s).
Ratios against the peers the issue names, of medians of this run."""
import os
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as L  # noqa: E402

DSVIEW = os.environ.get("DSVIEW", "build/dsview")
MB = int(os.environ.get("GRID_MB", "256"))
ROUNDS = int(os.environ.get("ROUNDS", "3"))
BATCHES = int(os.environ.get("GRID_BATCHES", "8"))
SIDE = 256
PEERS = ["h5_grid", "h5_lib", "h5_rows", "zarr", "dsv_lz4", "zarr_np"]
SCALE, OFFSET = 1 / (255 * 0.25), -0.5 / 0.25
TARGETS = [("h5_grid", "h5_lib", 5.0), ("h5_grid", "h5_rows", 0.8), ("zarr", "dsv_lz4", 0.9),
           ("zarr", "zarr_np", 3.0)]


def make(work, n):
    import h5py
    import hdf5plugin
    import numcodecs
    import zarr
    x = np.lib.format.open_memmap(os.path.join(work, "u8.npy"), "w+", np.uint8, (n, SIDE, SIDE))
    rng = np.random.default_rng(0)
    yy, xx = np.mgrid[0:SIDE, 0:SIDE]
    grad = (xx * 0.5 + yy * 0.3)
    for i in range(0, n, 64):
        k = min(64, n - i)
        blk = ((grad[None] + np.arange(i, i + k)[:, None, None] * 3) % 256).astype(np.uint8)
        blk += rng.integers(0, 4, blk.shape, dtype=np.uint8)
        x[i:i + k] = blk
    x.flush()
    with h5py.File(os.path.join(work, "v.h5"), "w") as f:
        f.create_dataset("grid", data=x, chunks=(1, 64, 64), **hdf5plugin.LZ4())
        f.create_dataset("rows", data=x, chunks=(16, SIDE, SIDE), **hdf5plugin.LZ4())
    z = zarr.open(os.path.join(work, "v.zarr"), mode="w", shape=x.shape, chunks=(16, SIDE, SIDE),
                  dtype=np.uint8, compressor=numcodecs.Blosc("lz4", 5, numcodecs.Blosc.SHUFFLE))
    for i in range(0, n, 256):
        z[i:i + 256] = x[i:i + 256]
    subprocess.run([DSVIEW, "pack", "--dataset", "x", os.path.join(work, "u8.npy"),
                    os.path.join(work, "store.h5")], check=True, stdout=subprocess.DEVNULL)
    srcs = {"h5_grid": "v.h5:/grid", "h5_lib": "v.h5:/grid", "h5_rows": "v.h5:/rows",
            "zarr": "v.zarr", "dsv_lz4": "store.h5:/x"}
    for peer, src in srcs.items():
        with open(os.path.join(work, peer + ".ini"), "w") as f:
            f.write(f"[v]\nsource = {os.path.join(work, src)}\nscale = {SCALE!r}\n"
                    f"offset = {OFFSET!r}\n")
    del x


def zarr_norm(work):
    """zarr_np: the Zarr array read with zarr, normalised with numpy."""
    import zarr
    z = zarr.open(os.path.join(work, "v.zarr"), mode="r")

    class Norm:
        shape = z.shape

        def __getitem__(self, sl):
            if isinstance(sl, np.ndarray):
                u8 = z.get_orthogonal_selection((sl,))
            else:
                u8 = z[sl]
            return u8.astype(np.float32) * np.float32(SCALE) + np.float32(OFFSET)
    return Norm()


def measure(work, peer, n, fn):
    """fn(array) on a cold start of peer (benchlib.cold_view for a mount)."""
    if peer == "zarr_np":
        L.drop_caches()
        return fn(zarr_norm(work))
    env = dict(os.environ, DSVIEW_H5_GRID="0") if peer == "h5_lib" else None
    return L.cold_view(DSVIEW, os.path.join(work, peer + ".ini"), os.path.join(work, "mnt"),
                       os.path.join(work, "log"), (n, SIDE, SIDE), fn, env=env)


def main():
    work = L.work_dir("grid")
    n = max(2 * L.BATCH, MB * 1000 * 1000 // (SIDE * SIDE))
    L.scale_prefault(MB)
    t0 = time.perf_counter()
    try:
        make(work, n)
        print(f"dataset: {n} volumes of {SIDE}x{SIDE} uint8 ({n * SIDE * SIDE / 1e6:.0f} MB; "
              f"{4 * n * SIDE * SIDE / 1e6:.0f} MB float32); made in "
              f"{time.perf_counter() - t0:.0f} s", flush=True)
        runs = L.interleaved(
            PEERS, ROUNDS,
            lambda peer, rnd: L.seq_and_shuffled(lambda fn: measure(work, peer, n, fn), BATCHES, rnd),
            lambda r: f"sequential {r[0]:.2f} GB/s, shuffled {r[1]:,.0f} rows/s", 8)
    finally:
        L.remove_work(work, os.path.join(work, "mnt"))
    med = L.medians(runs)
    L.table(PEERS, med, [("seq cold GB/s", 14, ".2f"), ("shuffled rows/s", 16, ",.0f")], 10)
    print()
    for a, b, at_least in TARGETS:
        for k, what in ((0, "sequential"), (1, "shuffled")):
            L.target(f"{a} / {b} {what}", med[a][k] / med[b][k], ">=", at_least)
    L.cold_footer(ROUNDS, t0)


if __name__ == "__main__":
    main()
