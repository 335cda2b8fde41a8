"""HDF5 files compressed with Blosc (filter 32001) the way users write them:
h5py with hdf5plugin.Blosc(cname, clevel, shuffle), which runs Debian's
Blosc HDF5 plugin (hdf5-filter-plugin-blosc-serial) in this test process
only. dsview never loads that plugin: it decodes Blosc itself with
libblosc on the fast path, and registers the same decoder with the HDF5
library for datasets the library must read (rows split across chunks,
HDF5's shuffle in front). Every inner codec, byte/bit/no shuffle, uint8 to
float64 and partial edge chunks, compared bit for bit with numpy; a
damaged chunk fails its own rows with EIO and `dsview verify` names it."""

import h5py
import hdf5plugin
import numpy as np

import test_filters
from common import E2E, read_all, run
from refs import reference

BLOSC = 32001
CNAMES = ("blosclz", "lz4", "lz4hc", "snappy", "zlib", "zstd")
SHUFFLES = {"noshuf": hdf5plugin.Blosc.NOSHUFFLE, "byteshuf": hdf5plugin.Blosc.SHUFFLE,
            "bitshuf": hdf5plugin.Blosc.BITSHUFFLE}


def arrays(rng):
    """uint8, int16, float32 and float64, compressible and random, with row
    counts that leave a partial edge chunk (10-row chunks)."""
    ramp = np.arange(53 * 6 * 5, dtype=np.int64).reshape(53, 6, 5)
    return {
        "u8": (ramp % 7).astype(np.uint8),
        "i16": (ramp // 3 - 700).astype(np.int16),
        "f32": np.repeat(np.linspace(-3, 3, 47, dtype=np.float32), 40).reshape(47, 40),
        "f64": np.cumsum(rng.normal(0, 1, (31, 3, 11)), axis=0),
        "f32_rand": rng.normal(0, 100, (23, 70)).astype(np.float32),
    }


class Blosc(E2E):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.arrays = arrays(np.random.default_rng(32001))

    def test_every_codec_and_shuffle_as_users_write_it(self):
        path = self.p("blosc.h5")
        want = {}
        with h5py.File(path, "w") as f:
            for cname in CNAMES:
                for sname, shuffle in SHUFFLES.items():
                    for n, x in self.arrays.items():
                        name = f"{cname}_{sname}_{n}"
                        f.create_dataset(name, data=x, chunks=(10, *x.shape[1:]),
                                         **hdf5plugin.Blosc(cname=cname, clevel=5, shuffle=shuffle))
                        want[name] = x
            # random bytes do not shrink: the plugin fails, the optional
            # filter is skipped, the chunk stored raw with its mask bit set
            x = np.random.default_rng(1).integers(0, 256, (40, 64), dtype=np.uint8)
            f.create_dataset("stored", data=x, chunks=(10, 64), **hdf5plugin.Blosc(cname="lz4"))
            want["stored"] = x
            x = self.arrays["i16"]
            f.create_dataset("fl32", data=x, chunks=(16, *x.shape[1:]), fletcher32=True,
                             **hdf5plugin.Blosc(cname="zstd", clevel=9))
            want["fl32"] = x
            x = self.arrays["f64"]
            f.create_dataset("clevel0", data=x, chunks=(7, *x.shape[1:]),
                             **hdf5plugin.Blosc(cname="blosclz", clevel=0))
            want["clevel0"] = x
        with h5py.File(path, "r") as f:
            self.assertEqual(f["zstd_bitshuf_f32"]._filters["32001"][6], 5)  # zstd inside
            self.assertEqual(list(f["fl32"]._filters), ["32001", "fletcher32"])
            self.assertIn(1, {f["stored"].id.read_direct_chunk((r, 0))[0] for r in range(0, 40, 10)})
            self.assertLess(f["zstd_noshuf_u8"].id.get_chunk_info(0).size, 10 * 6 * 5)
        test_filters.Filters.check_file(self, path, want)

    def test_corrupt_blosc_chunk_nbytes(self):
        # byte 4 is the low byte of the header's nbytes: the buffer now
        # decodes to a size that is not the chunk's
        x = np.repeat(np.arange(60, dtype=np.uint8), 1024).reshape(60, 1024)
        test_filters.Filters.check_one_bad_chunk(
            self, "badblosc", x,
            lambda f, a: f.create_dataset("x", data=a, chunks=(10, 1024),
                                          **hdf5plugin.Blosc(cname="zstd", shuffle=1)),
            where=4)

    def test_corrupt_blosc_chunk_cbytes(self):
        # byte 12 is cbytes: libblosc would take it as the input's length
        x = np.repeat(np.arange(60, dtype=np.int16), 512).reshape(60, 512)
        test_filters.Filters.check_one_bad_chunk(
            self, "badblosc2", x,
            lambda f, a: f.create_dataset("x", data=a, chunks=(10, 512),
                                          **hdf5plugin.Blosc(cname="lz4", shuffle=2)),
            where=12)

    def test_through_the_library_with_our_decoder(self):
        # big-endian data (the library converts it) takes the library
        # path, which has only dsview's in-process decoder; the same
        # little-endian with chunks that split rows takes the N-d grid;
        # HDF5's shuffle in front of Blosc (little-endian) is dsview's
        x = self.arrays["i16"].reshape(53, 30)
        for dt, grid, summary in ((">i2", False, "1 fast path, 3 library fallback"),
                                  ("<i2", True, "4 fast path, 0 library fallback")):
            with self.subTest(dtype=dt):
                path = self.p(f"lib{dt[0] == '>'}.h5")
                with h5py.File(path, "w") as f:
                    f.create_dataset("split", data=x.astype(dt), chunks=(8, 7),
                                     **hdf5plugin.Blosc(cname="zlib"))
                    f.create_dataset("shuffle", data=x, chunks=(10, 30), shuffle=True,
                                     **hdf5plugin.Blosc(cname="lz4hc", shuffle=0))
                    f.create_dataset("short", data=x.astype(dt), chunks=(9, 7),
                                     **hdf5plugin.Blosc(cname="blosclz"))
                    # a buffer that declares less than a chunk (4 of 9 rows):
                    # the library would copy a whole chunk out of it
                    f.create_dataset("small", data=x[:4, :7].astype(dt), chunks=(4, 7),
                                     **hdf5plugin.Blosc(cname="blosclz"))
                    _, small = f["small"].id.read_direct_chunk((0, 0))
                    f["short"].id.write_direct_chunk((18, 0), small)
                r = run("info", path)
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertIn(summary, r.stdout)
                test_filters.check_short_chunk(self, path, "short", ("split", "shuffle"), x, (45, 8),
                                               grid=grid)
                with self.mount(path) as m:
                    self.assertEqual(read_all(m.path("small.dat")), reference(x[:4, :7]).tobytes())
