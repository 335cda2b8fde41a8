"""Writes the Blosc2 fixtures of test_blosc2.py with h5py and hdf5plugin's
Blosc2 filter (32026) in the project venv, every codec and filter
hdf5plugin offers, and saves beside the file NAME.npy, each dataset as
h5py + hdf5plugin read it back (the reference). argv[1]: the directory."""
import os
import sys

import h5py
import hdf5plugin
import numpy as np

root = sys.argv[1]
rng = np.random.default_rng(32026)
B = hdf5plugin.Blosc2
smooth = np.cumsum(rng.standard_normal((120, 24)), axis=0).astype("<f4")
cases = {
    # name: (data, chunks, cname, filters, fletcher32)
    "blosclz_shuffle": (smooth, (16, 24), "blosclz", B.SHUFFLE, False),
    "lz4_bitshuffle": (rng.integers(0, 4000, (200, 10), dtype="<u2"), (32, 10), "lz4",
                       B.BITSHUFFLE, False),
    "lz4hc_none": (rng.integers(-100, 100, (77, 9), dtype="<i2"), (20, 9), "lz4hc", B.NOFILTER,
                   False),
    "zstd_delta": (np.arange(3000, dtype="<i4").reshape(100, 30) * 3, (25, 30), "zstd", B.DELTA,
                   False),
    "zlib_shuffle_f8": (rng.standard_normal((50, 8)), (7, 8), "zlib", B.SHUFFLE, False),
    "fletcher": (smooth, (10, 24), "zstd", B.SHUFFLE, True),
    # chunks that split rows: the N-d grid, B2ND blocks in 3-d
    "grid_3d": (rng.integers(0, 255, (30, 20, 16), dtype="u1"), (4, 8, 6), "lz4", B.SHUFFLE,
                False),
    "u1_1d": (rng.integers(0, 255, 5000, dtype="u1"), (700,), "blosclz", B.BITSHUFFLE, False),
    # rank 9: B2ND past its first 8 dimensions; rank 17: past B2ND's 16,
    # a plain Blosc2 chunk
    "rank9": (np.arange(1152, dtype="<i2").reshape(2, 3, 2, 2, 2, 2, 2, 2, 3),
              (1, 3, 2, 2, 2, 2, 2, 2, 3), "zstd", B.SHUFFLE, False),
    "rank17": (np.arange(48, dtype="<u4").reshape((6, 2, 2, 2) + (1,) * 13),
               (2, 2, 2, 2) + (1,) * 13, "lz4", B.SHUFFLE, False),
}
with h5py.File(os.path.join(root, "b2.h5"), "w") as f:
    for name, (data, chunks, cname, filt, fl32) in cases.items():
        f.create_dataset(name, data=data, chunks=chunks, fletcher32=fl32,
                         **B(cname=cname, clevel=5, filters=filt))
    # Blosc2 behind the HDF5 shuffle filter, h5py's order: dsview's too
    f.create_dataset("behind_shuffle", data=smooth, chunks=(16, 24), shuffle=True,
                     **B(cname="lz4", clevel=5, filters=B.NOFILTER))
    # big-endian data: only the library could convert it, and it has no
    # Blosc2
    f.create_dataset("big_endian", data=smooth.astype(">f4"), chunks=(16, 24),
                     **B(cname="lz4", clevel=5, filters=B.NOFILTER))
with h5py.File(os.path.join(root, "b2.h5"), "r") as f:
    for name in list(cases) + ["behind_shuffle"]:
        np.save(os.path.join(root, name + ".npy"), f[name][...])
