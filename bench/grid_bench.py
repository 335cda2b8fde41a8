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
import gc
import os
import subprocess
import sys
import tempfile
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


class Peer:
    def __init__(self, work, peer, n):
        self.work, self.peer, self.n = work, peer, n
        self.mnt = os.path.join(work, "mnt")

    def __enter__(self):
        if self.peer == "zarr_np":
            import zarr
            z = zarr.open(os.path.join(self.work, "v.zarr"), mode="r")

            class Norm:
                shape = z.shape

                def __getitem__(self, sl):
                    if isinstance(sl, np.ndarray):
                        u8 = z.get_orthogonal_selection((sl,))
                    else:
                        u8 = z[sl]
                    return u8.astype(np.float32) * np.float32(SCALE) + np.float32(OFFSET)
            return Norm()
        os.makedirs(self.mnt, exist_ok=True)
        env = dict(os.environ, DSVIEW_H5_GRID="0") if self.peer == "h5_lib" else None
        subprocess.run([DSVIEW, "mount", "--log", os.path.join(self.work, "log"),
                        os.path.join(self.work, self.peer + ".ini"), self.mnt], check=True, env=env)
        self.a = np.memmap(os.path.join(self.mnt, "v.dat"), np.float32, "r",
                           shape=(self.n, SIDE, SIDE))
        return self.a

    def __exit__(self, *exc):
        if self.peer != "zarr_np":
            del self.a
            gc.collect()
            subprocess.run([DSVIEW, "umount", self.mnt], check=True)


def measure(work, peer, n, fn):
    """fn(array) on a cold start of peer; the array is dropped before the
    unmount (a live memmap keeps the mount busy)."""
    L.drop_caches()
    p = Peer(work, peer, n)
    try:
        return fn(p.__enter__())
    finally:
        gc.collect()
        p.__exit__(None, None, None)


def main():
    work = tempfile.mkdtemp(prefix="dsview-grid-", dir=os.environ.get("BENCH_DIR", "/var/tmp"))
    n = max(2 * L.BATCH, MB * 1000 * 1000 // (SIDE * SIDE))
    L.PREFAULT_GB = min(6.0, max(1.0, 6 * MB / 1024))
    t0 = time.perf_counter()
    runs = {p: [] for p in PEERS}
    try:
        make(work, n)
        print(f"dataset: {n} volumes of {SIDE}x{SIDE} uint8 ({n * SIDE * SIDE / 1e6:.0f} MB; "
              f"{4 * n * SIDE * SIDE / 1e6:.0f} MB float32); made in "
              f"{time.perf_counter() - t0:.0f} s", flush=True)
        for rnd in range(ROUNDS):
            for peer in PEERS:
                gbs = measure(work, peer, n, lambda arr: L.seq(arr, 16) / 1e9)
                rate = measure(work, peer, n, lambda arr: L.shuffled(
                    lambda idx: np.asarray(arr[idx]), n, BATCHES, seed=rnd)[0])
                runs[peer].append((gbs, rate))
                print(f"  round {rnd + 1}/{ROUNDS} {peer:8}: sequential {gbs:.2f} GB/s, "
                      f"shuffled {rate:,.0f} rows/s", flush=True)
    finally:
        L.remove_work(work, os.path.join(work, "mnt"))
    med = {p: np.median(np.array(r), axis=0) for p, r in runs.items()}
    print(f"\n{'peer':10} {'seq cold GB/s':>14} {'shuffled rows/s':>16}")
    for p in PEERS:
        print(f"{p:10} {med[p][0]:14.2f} {med[p][1]:16,.0f}")
    print()
    for a, b, at_least in TARGETS:
        for k, what in ((0, "sequential"), (1, "shuffled")):
            r = med[a][k] / med[b][k]
            print(f"{a} / {b} {what}: {r:.2f}x (target >= {at_least:g}x): "
                  f"{'met' if r >= at_least else 'NOT met'}")
    print(f"\n{ROUNDS} interleaved rounds, medians, {time.perf_counter() - t0:.0f} s; cold = page "
          f"cache dropped, daemon restarted; shuffled = sorted batches of {L.BATCH} random rows.")


if __name__ == "__main__":
    main()
