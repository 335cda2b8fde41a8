"""HDF5 files with the bitshuffle filter (32008, kiyo-masui/bitshuffle),
plain or with LZ4 or zstd inside: dsview decodes them itself on the fast
path and, registered in-process, for the library's reads (rows split
across chunks). Every mount is compared byte for byte with numpy's
astype(float32); a damaged chunk fails its rows only, with EIO.

Debian ships no bitshuffle plugin, so files come two ways:
- tests/unit/fixtures/h5plugin_bshuf.h5, written by h5py with
  hdf5plugin.Bitshuffle and the real plugin (gen_bshuf.py says how);
- chunks made here by a small encoder written from bitshuffle's source
  (bshuf_h5filter.c, bitshuffle.c, bitshuffle_core.c), with the cd_values
  the plugin's set_local records, written with write_direct_chunk."""
import importlib.util
import os
import shutil
import struct

import h5py
import numpy as np
import zstandard

import test_filters
from common import E2E, read_all, run
from refs import reference

BSHUF = 32008
FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "unit", "fixtures")


def default_block(es):
    b = 8192 // es
    return max(b - b % 8, 128)


def trans(block, es):
    """A block of m elements (m % 8 == 0): 8 * es rows of m bits, row b
    holding bit b % 8 of byte b // 8 of each element, LSB first."""
    m = len(block) // es
    bits = np.unpackbits(np.frombuffer(block, np.uint8).reshape(m, es), axis=1, bitorder="little")
    return np.packbits(bits.T, axis=1, bitorder="little").tobytes()


def bshuf_encode(raw, es, block=0, comp=0, level=3):
    """The filter's output for one chunk: blocks of `block` elements, the
    rest rounded down to 8 as one more, the last n % 8 elements verbatim;
    with comp 3 (zstd) a 12-byte header and each block framed."""
    n = len(raw) // es
    blk = block or default_block(es)
    left = n % 8
    out = [struct.pack(">QI", len(raw), blk * es)] if comp else []
    cctx = zstandard.ZstdCompressor(level=level)
    for s in range(0, n - left, blk):
        m = min(blk, n - left - s)
        t = trans(raw[s * es:(s + m) * es], es)
        if comp:
            z = cctx.compress(t)
            out.append(struct.pack(">I", len(z)) + z)
        else:
            out.append(t)
    out.append(raw[(n - left) * es:])
    return b"".join(out)


def write_bshuf(f, name, x, chunks, block=0, comp=0, level=3):
    """A dataset as the plugin writes it: cd_values (major, minor, element
    size, block, compression[, level])."""
    es = x.dtype.itemsize
    cd = (0, 4, es, block, comp) + ((level,) if comp == 3 else ())
    d = f.create_dataset(name, shape=x.shape, dtype=x.dtype, chunks=chunks, compression=BSHUF,
                         compression_opts=cd, allow_unknown_filter=True)
    grid = [range(0, x.shape[k], chunks[k]) for k in range(x.ndim)]
    for origin in np.array(np.meshgrid(*grid, indexing="ij")).reshape(x.ndim, -1).T:
        c = np.zeros(chunks, x.dtype)  # HDF5 edge chunks are whole chunks
        part = x[tuple(slice(o, o + k) for o, k in zip(origin, chunks))]
        c[tuple(slice(0, s) for s in part.shape)] = part
        d.id.write_direct_chunk(tuple(int(o) for o in origin),
                                bshuf_encode(c.tobytes(), es, block, comp, level))


def plugin_datasets():
    spec = importlib.util.spec_from_file_location("gen_bshuf", os.path.join(FIXTURES, "gen_bshuf.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return {n: v[0] for n, v in mod.datasets().items()}


class Bitshuffle(E2E):
    check_one_bad_chunk = test_filters.Filters.check_one_bad_chunk

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.arrays = test_filters.data(np.random.default_rng(17))

    def test_encoder_matches_the_plugin(self):
        # our Python encoder makes the very bytes the real plugin stored
        want = plugin_datasets()
        for name, comp in (("zstd_f32", 3), ("none_u8", 0)):
            with h5py.File(os.path.join(FIXTURES, "h5plugin_bshuf.h5"), "r") as f:
                d = f[name]
                cd = d._filters[str(BSHUF)]
                stored = d.id.read_direct_chunk((0,) * d.ndim)[1]
                rows = d.chunks[0]
            x = want[name][:rows]
            self.assertEqual(bshuf_encode(x.tobytes(), x.dtype.itemsize, cd[3], comp, 3), stored, name)

    def test_files_the_plugin_wrote(self):
        path = self.p("plugin.h5")
        shutil.copy(os.path.join(FIXTURES, "h5plugin_bshuf.h5"), path)
        r = run("info", path)
        self.assertEqual(r.returncode, 0, r.stderr)
        # "split" (chunks that split rows) is read through the N-d grid
        self.assertIn("6 fast path, 0 library fallback, 0 refused", r.stdout)
        want = plugin_datasets()
        with self.mount(path) as m:
            for n, x in want.items():
                with self.subTest(dataset=n):
                    self.assertEqual(read_all(m.path(n + ".dat")), reference(x).tobytes(), n)
        r = run("verify", path)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_as_the_plugin_writes_it(self):
        path = self.p("bshuf.h5")
        want = {}
        with h5py.File(path, "w") as f:
            for n, x in self.arrays.items():
                for comp, block in ((0, 0), (3, 0), (3, 16), (0, 24)):
                    name = f"{n}_c{comp}_b{block}"
                    write_bshuf(f, name, x, (10, *x.shape[1:]), block, comp)
                    want[name] = x
        r = run("info", path)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(f"{len(want)} fast path, 0 library fallback, 0 refused", r.stdout)
        with self.mount(path) as m:
            for n, x in want.items():
                with self.subTest(dataset=n):
                    self.assertEqual(read_all(m.path(n + ".dat")), reference(x).tobytes(), n)

    def test_split_rows(self):
        # big-endian, the library reads them (with dsview's decoder,
        # registered in-process); little-endian, the N-d grid does
        x = self.arrays["i16_ramp"].reshape(83, 30)
        for dt, grid, summary in ((">i2", False, "0 fast path, 3 library fallback"),
                                  ("<i2", True, "3 fast path, 0 library fallback")):
            with self.subTest(dtype=dt):
                path = self.p(f"split{dt[0] == '>'}.h5")
                with h5py.File(path, "w") as f:
                    write_bshuf(f, "zstd_split", x.astype(dt), (9, 7), 0, 3)
                    write_bshuf(f, "none_split", x.astype(dt), (9, 7), 8, 0)
                    # a chunk whose header says (and holds) less than a
                    # chunk: the library would copy a whole chunk out of
                    # it; ours must refuse
                    write_bshuf(f, "zstd_short", x.astype(dt), (9, 7), 0, 3)
                    d = f["zstd_short"]
                    chunk = np.zeros((9, 7), dt)
                    chunk[:] = x[18:27, 0:7]
                    d.id.write_direct_chunk((18, 0), bshuf_encode(chunk.tobytes()[:60], 2, 0, 3))
                r = run("info", path)
                self.assertIn(summary, r.stdout)
                test_filters.check_short_chunk(self, path, "zstd_short", ("zstd_split", "none_split"),
                                               x, (72, 9), grid=grid)

    def test_corrupt_chunk(self):
        # byte 13 is in the first block's compressed size: now past the chunk
        x = np.repeat(np.arange(60, dtype=np.uint8), 1024).reshape(60, 1024)
        self.check_one_bad_chunk("badbshuf", x, lambda f, a: write_bshuf(f, "x", a, (10, 1024), 0, 3),
                                 where=13)

    def test_unsupported_parameters_refused(self):
        x = self.arrays["u8_flat"]
        for cd, why in (((0, 4, 2, 0, 3, 3), "element size is not the dataset's"),
                        ((0, 4, 1, 12, 0), "block size not a multiple of 8 elements"),
                        ((0, 4, 1, 0, 1), "unknown compression"),
                        ((), "no element size")):
            with self.subTest(cd=cd):
                path = self.p("bad.h5")
                with h5py.File(path, "w") as f:
                    f.create_dataset("x", data=x, chunks=(10, *x.shape[1:]), compression=BSHUF,
                                     compression_opts=cd, allow_unknown_filter=True)
                self.refused(path, want=[f"bitshuffle parameters not supported: {why}"])
