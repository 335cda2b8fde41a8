"""HDF5 files compressed the way users write them with LZF (h5py's own
filter, 32000) and Zstandard (32015): dsview decodes both itself on the fast
path (docs/sources.md), and the HDF5 library decodes them with dsview's
own codecs where it must read a dataset for us (big-endian data, which
it converts). Every mount is compared byte for byte with numpy's
astype(float32), and a damaged chunk fails its reads with EIO, naming the
chunk in the log, while the rest of the file stays readable.

Debian's python3-hdf5plugin ships no zstd filter, so the zstd chunks are
written as the HDF5 plugin writes them (one ZSTD_compress frame, which
declares its content size) with python3-zstandard and write_direct_chunk."""
import errno
import json
import os
from unittest import mock

import h5py
import numpy as np
import zstandard

from common import E2E, check_whole, forked_batches, read_all, run
from refs import reference

ZSTD = 32015


def data(rng):
    """uint8, int16 and float32 arrays, compressible and random, with row
    counts that leave a partial edge chunk."""
    ramp = np.arange(83 * 6 * 5, dtype=np.int64).reshape(83, 6, 5)
    return {
        "u8_flat": (ramp % 7).astype(np.uint8),
        "u8_rand": rng.integers(0, 256, (83, 6, 5), dtype=np.uint8),
        "i16_ramp": (ramp // 3 - 700).astype(np.int16),
        "i16_rand": rng.integers(-32768, 32767, (41, 33), dtype=np.int16),
        "f32_smooth": np.repeat(np.linspace(-3, 3, 50, dtype=np.float32), 40).reshape(50, 40),
        "f32_rand": rng.normal(0, 100, (37, 3, 11)).astype(np.float32),
    }


def write_zstd(f, name, x, rows, level=3, raw_chunks=()):
    """A dataset with the zstd filter whose chunks are what the plugin
    writes; chunks listed in raw_chunks are stored raw with the filter's
    mask bit set (what HDF5 does when an optional filter fails)."""
    d = f.create_dataset(name, shape=x.shape, dtype=x.dtype, chunks=(rows, *x.shape[1:]),
                         compression=ZSTD, compression_opts=(level,), allow_unknown_filter=True)
    cctx = zstandard.ZstdCompressor(level=level)  # writes the content size, as ZSTD_compress
    for i, r in enumerate(range(0, x.shape[0], rows)):
        c = np.zeros((rows, *x.shape[1:]), x.dtype)  # HDF5 edge chunks are whole chunks
        c[:min(rows, x.shape[0] - r)] = x[r:r + rows]
        if i in raw_chunks:
            d.id.write_direct_chunk((r,) + (0,) * (x.ndim - 1), c.tobytes(), filter_mask=1)
        else:
            d.id.write_direct_chunk((r,) + (0,) * (x.ndim - 1), cctx.compress(c.tobytes()))


def check_short_chunk(tc, path, short, whole, x, good, grid=False):
    """The checks of a file whose dataset `short` has one chunk, at rows
    18-26, holding less than a chunk (the library would copy a whole chunk
    out of it; dsview's decoder must refuse it): the datasets in `whole`
    read as x, rows good=(first, n) of `short` read right, row 20 gives
    EIO, the log and verify name rows 18-26 (and with grid, the N-d path,
    the chunk's grid position (2, 0))."""
    # The N-d path groups a small array's chunk-rows into one band, which
    # a damaged chunk would fail whole: here, one chunk-row a band
    # (test_zarr's GridBands checks the grouping itself).
    with mock.patch.dict(os.environ, {"DSVIEW_GRID_BAND_KB": "0"}):
        check_short_chunk_bands(tc, path, short, whole, x, good, grid)


def check_short_chunk_bands(tc, path, short, whole, x, good, grid):
    """check_short_chunk's checks, in the environment it sets."""
    ref = reference(x)
    row = ref[0].nbytes
    log = (rf"{short} rows 18-26: chunk \(2, 0\), " if grid
           else rf"{short} chunk 0 \(rows 18-26,")
    with tc.mount(path, "--cache-size", "0", expect_errors=[log]) as m:
        for n in whole:
            tc.assertEqual(read_all(m.path(n + ".dat")), ref.tobytes(), n)
        fd = os.open(m.path(short + ".dat"), os.O_RDONLY)
        try:
            # rows 18-26 share the first 4 KiB page with the rows before 35
            tc.assertEqual(os.pread(fd, good[1] * row, good[0] * row),
                           ref[good[0]:good[0] + good[1]].tobytes())
            with tc.assertRaises(OSError) as cm:
                os.pread(fd, row, 20 * row)
            tc.assertEqual(cm.exception.errno, errno.EIO)
        finally:
            os.close(fd)
    r = run("verify", path)
    tc.assertEqual(r.returncode, 1, r.stdout + r.stderr)
    tc.assertIn(f"{short}: chunk 2, rows 18-26 (chunk (2, 0), " if grid else
                f"{short}: chunk 0, rows 18-26 (through the HDF5 library)", r.stdout)


class Filters(E2E):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.arrays = data(np.random.default_rng(13))

    def check_file(self, path, want):
        r = run("info", path)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(f"{len(want)} fast path, 0 library fallback, 0 refused", r.stdout)
        with self.mount(path) as m:
            for n, x in want.items():
                with self.subTest(dataset=n):
                    got = read_all(m.path(n + ".dat"))
                    self.assertEqual(got, reference(x).tobytes(), n)

    def test_lzf_as_users_write_it(self):
        path = self.p("lzf.h5")
        with h5py.File(path, "w") as f:
            for n, x in self.arrays.items():
                f.create_dataset(n, data=x, chunks=(10, *x.shape[1:]), compression="lzf")
            x = self.arrays["i16_ramp"]
            f.create_dataset("fl32", data=x, chunks=(16, *x.shape[1:]), compression="lzf",
                             fletcher32=True)
        with h5py.File(path, "r") as f:
            masks = {f["u8_rand"].id.read_direct_chunk((r, 0, 0))[0] for r in range(0, 83, 10)}
            packed = f["u8_flat"].id.get_chunk_info(0).size
        # random data does not shrink: h5py stores it raw, the filter's
        # bit set in the chunk's mask; the flat data is really compressed
        self.assertIn(1, masks)
        self.assertLess(packed, 10 * 6 * 5)
        self.check_file(path, {**self.arrays, "fl32": self.arrays["i16_ramp"]})

    def test_zstd_as_the_plugin_writes_it(self):
        path = self.p("zstd.h5")
        with h5py.File(path, "w") as f:
            for n, x in self.arrays.items():
                write_zstd(f, n, x, 10, raw_chunks=(1,) if n == "i16_rand" else ())
            write_zstd(f, "level19", self.arrays["f32_rand"], 7, level=19)
        self.check_file(path, {**self.arrays, "level19": self.arrays["f32_rand"]})

    def test_unwritten_chunks_are_fill_values(self):
        path = self.p("fill.h5")
        with h5py.File(path, "w") as f:
            d = f.create_dataset("lzf", shape=(60, 4), dtype=np.int16, chunks=(10, 4), fillvalue=7,
                                 compression="lzf")
            d[20:30] = 1
            d = f.create_dataset("zstd", shape=(60, 4), dtype=np.uint8, chunks=(10, 4), fillvalue=9,
                                 compression=ZSTD, allow_unknown_filter=True)
            d.id.write_direct_chunk((10, 0), zstandard.ZstdCompressor().compress(bytes(range(40))))
        want_lzf = np.full((60, 4), 7, np.int16)
        want_lzf[20:30] = 1
        want_zstd = np.full((60, 4), 9, np.uint8)
        want_zstd[10:20] = np.arange(40, dtype=np.uint8).reshape(10, 4)
        with self.mount(path) as m:
            self.assertEqual(read_all(m.path("lzf.dat")), reference(want_lzf).tobytes())
            self.assertEqual(read_all(m.path("zstd.dat")), reference(want_zstd).tobytes())

    def test_split_rows_never_written_read_as_the_fill_value(self):
        # chunks of (4, 16) that split rows, some never written: the N-d
        # grid serves those as the fill value, as h5py reads them (the
        # default, zeros; one the file defines; NaN; an edge chunk of an
        # int16 array), unfiltered and LZF. A dataset whose unwritten chunks
        # HDF5 does not fill (fill time never) stays with the library.
        rng = np.random.default_rng(19)
        path = self.p("holes.h5")
        want = {}
        with h5py.File(path, "w") as f:
            for name, dt, shape, kw in (
                    ("default", "<f4", (64, 64), {}),
                    ("fill", "<f4", (64, 64), dict(fillvalue=-7.5)),
                    ("nan_lzf", "<f4", (64, 64), dict(fillvalue=np.nan, compression="lzf")),
                    ("i16_edges", "<i2", (62, 61), dict(fillvalue=-300, compression="lzf"))):
                x = rng.integers(-1000, 1000, shape).astype(dt)
                d = f.create_dataset(name, shape=shape, dtype=dt, chunks=(4, 16), **kw)
                # never written: chunk-rows 2 and 9 whole, chunk-row 5 but for
                # chunks 1 and 3, and the last chunk (an edge one)
                for r in range(0, shape[0], 4):
                    for c in range(0, shape[1], 16):
                        if r // 4 in (2, 9) or (r // 4 == 5 and c // 16 not in (1, 3)) or \
                                (r + 4 >= shape[0] and c + 16 >= shape[1]):
                            continue
                        d[r:r + 4, c:c + 16] = x[r:r + 4, c:c + 16]
                want[name] = d[...]
            dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
            dcpl.set_chunk((4, 16))
            dcpl.set_fill_time(h5py.h5d.FILL_TIME_NEVER)
            d = h5py.Dataset(h5py.h5d.create(f.id, b"never", h5py.h5t.IEEE_F32LE,
                                             h5py.h5s.create_simple((64, 64)), dcpl=dcpl))
            top = rng.standard_normal((8, 64)).astype(np.float32)
            d[:8] = top
        r = run("info", "--json", path)
        self.assertEqual(r.returncode, 0, r.stderr)
        ds = {d["name"].lstrip("/"): d for d in json.loads(r.stdout)["datasets"]}
        for name in want:
            self.assertEqual(ds[name]["serve"], "fast-path", name)
            self.assertEqual(ds[name]["source"]["kind"], "hdf5-chunked", name)
            self.assertIn("chunks never written (fill value)", ds[name]["why"], name)
        self.assertEqual(ds["never"]["serve"], "library-fallback")
        self.assertIn("HDF5 fills them with no value", ds["never"]["why"])
        with self.mount(path, "--cache-size", "0") as m:
            for name, w in want.items():
                with self.subTest(name):
                    check_whole(self, m, name, reference(w), "float32")
            forked_batches(self, m, "fill", reference(want["fill"]), workers=3, batches=10)
            with open(m.path("never.dat"), "rb") as fh:
                self.assertEqual(fh.read(top.nbytes), reference(top).tobytes())
            self.assertEqual(m.stats()["errors"], 0)
        r = run("verify", path)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def check_one_bad_chunk(self, name, x, write, where):
        """Writes x with 10-row chunks, flips one byte of chunk 3 at
        `where`, and checks that exactly rows 30-39 fail with EIO, again
        on a second read, with the log naming the chunk."""
        path = self.p(name + ".h5")
        with h5py.File(path, "w") as f:
            write(f, x)
        with h5py.File(path, "r") as f:
            info = f["x"].id.get_chunk_info(3)
        with open(path, "r+b") as f:
            f.seek(info.byte_offset + where)
            b = f.read(1)
            f.seek(info.byte_offset + where)
            f.write(bytes([b[0] ^ 0x5A]))
        ref = reference(x)
        row = ref[0].nbytes
        ini = self.write_ini(f"[{name}]\nsource = {name}.h5:/x\n", name + ".ini")
        with self.mount(ini, "--cache-size", "0", expect_errors=[r"chunk 3 .*corrupt chunk"]) as m:
            fd = os.open(m.path(name + ".dat"), os.O_RDONLY)
            try:
                for r in list(range(x.shape[0])) + [35, 0]:
                    if 30 <= r < 40:
                        with self.assertRaises(OSError) as cm:
                            os.pread(fd, row, r * row)
                        self.assertEqual(cm.exception.errno, errno.EIO)
                    else:
                        self.assertEqual(os.pread(fd, row, r * row), ref[r].tobytes(), f"row {r}")
            finally:
                os.close(fd)
            errs = [l for l in m.log_lines() if " error: " in l]
            self.assertTrue(errs and all(f"{name}.h5:/x chunk 3 (rows 30-39," in l for l in errs), errs)
        r = run("verify", ini)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("decodes to the wrong size", r.stdout + r.stderr)

    def test_corrupt_lzf_chunk(self):
        # the first control byte of a literal run becomes a back-reference
        # before the start of the output
        x = np.repeat(np.arange(60, dtype=np.uint8), 1024).reshape(60, 1024)
        self.check_one_bad_chunk(
            "badlzf", x, lambda f, a: f.create_dataset("x", data=a, chunks=(10, 1024), compression="lzf"),
            where=0)

    def test_corrupt_zstd_chunk(self):
        # byte 5 is the frame's content size (single-segment frame): the
        # frame now declares a size that is not the chunk's
        x = np.repeat(np.arange(60, dtype=np.uint8), 1024).reshape(60, 1024)
        self.check_one_bad_chunk("badzstd", x, lambda f, a: write_zstd(f, "x", a, 10), where=5)

    def test_through_the_library_with_our_decoders(self):
        # big-endian data takes the library path (the library converts
        # it, so it reads these chunks, split rows, shuffled or not); it
        # has no zstd or LZF plugin, only dsview's decoders, registered
        # in-process
        x = self.arrays["i16_ramp"].reshape(83, 30)
        path = self.p("lib.h5")
        self.write_split(path, x, ">i2")
        r = run("info", path)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("0 fast path, 4 library fallback, 0 refused", r.stdout)
        check_short_chunk(self, path, "zstd_short", ("lzf_split", "lzf_shuffle", "zstd_split"), x,
                          (72, 9))

    def test_split_rows_on_the_fast_path(self):
        # the same little-endian: chunks that split rows go through the N-d
        # grid (pread and dsview's decoders, no library), shuffle in front
        # of LZF is dsview's too, and the short chunk fails rows 18-26
        # alone, named by its grid position
        x = self.arrays["i16_ramp"].reshape(83, 30)
        path = self.p("grid.h5")
        self.write_split(path, x, "<i2")
        r = run("info", path)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("4 fast path, 0 library fallback, 0 refused", r.stdout)
        check_short_chunk(self, path, "zstd_short", ("lzf_split", "lzf_shuffle", "zstd_split"), x,
                          (72, 9), grid=True)

    def write_split(self, path, x, dt):
        with h5py.File(path, "w") as f:
            f.create_dataset("lzf_split", data=x.astype(dt), chunks=(8, 7), compression="lzf")
            f.create_dataset("lzf_shuffle", data=x.astype(dt), chunks=(10, 30), compression="lzf",
                             shuffle=True)
            cctx = zstandard.ZstdCompressor()
            for name in ("zstd_split", "zstd_short"):
                d = f.create_dataset(name, shape=x.shape, dtype=dt, chunks=(9, 7),
                                     compression=ZSTD, allow_unknown_filter=True)
                for r in range(0, 83, 9):
                    for c in range(0, 30, 7):
                        chunk = np.zeros((9, 7), dt)
                        part = x[r:r + 9, c:c + 7]
                        chunk[:part.shape[0], :part.shape[1]] = part
                        data = chunk.tobytes()
                        if name == "zstd_short" and (r, c) == (18, 0):
                            data = data[:60]  # a frame that declares less than a chunk
                        d.id.write_direct_chunk((r, c), cctx.compress(data))
