"""HDF5 gzip as h5py writes it (compression="gzip", the deflate filter,
with shuffle=True and fletcher32=True in h5py's order): dsview inflates
and un-shuffles the chunks itself on the fast path (whole-row chunks and
the N-d grid alike), outside the HDF5 library. Every mount is compared
byte for byte with h5py's own read of the dataset, cast as numpy casts
it; a damaged deflate chunk fails its rows' reads with EIO, naming the
chunk, while the rest of the file is served; chunks stored with a filter
skipped (its bit in the chunk's mask) read as the library reads them;
pipelines dsview does not take (shuffle after the codec) stay with the
library and still read right."""
import errno
import json
import os
import zlib
from unittest import mock

import h5py
import hdf5plugin
import numpy as np

from common import E2E, check_preads, check_whole, read_all, run
from refs import reference


def arrays(rng):
    """uint8 image rows, int16, float32 and float64, compressible and
    random, with row counts that leave a partial edge chunk."""
    yy, xx = np.mgrid[0:24, 0:20]
    img = ((xx * 3 + yy * 2)[None] + np.arange(45)[:, None, None] * 5) % 256
    img = img.astype(np.uint8)[..., None] + rng.integers(0, 3, (45, 24, 20, 3), dtype=np.uint8)
    ramp = np.arange(61 * 33, dtype=np.int64).reshape(61, 33)
    return {
        "u8_img": img,
        "u8_rand": rng.integers(0, 256, (29, 7, 11), dtype=np.uint8),
        "i16_ramp": (ramp // 3 - 700).astype(np.int16),
        "i16_rand": rng.integers(-32768, 32767, (41, 13), dtype=np.int16),
        "f32_smooth": np.repeat(np.linspace(-3, 3, 50, dtype=np.float32), 40).reshape(50, 40),
        "f32_rand": rng.normal(0, 100, (37, 3, 11)).astype(np.float32),
        "f64_smooth": np.sin(np.arange(53 * 17, dtype=np.float64) / 40).reshape(53, 17),
        "f64_rand": rng.normal(0, 1e6, (19, 5, 4)),
    }


def chunks_of(x, split):
    """Chunks of 8 whole rows, or (split) chunks that also cut the row."""
    if not split:
        return (8, *x.shape[1:])
    return (8, *[max(1, (n + 1) // 2) for n in x.shape[1:]])


def h5py_read(path):
    with h5py.File(path, "r") as f:
        return {n: f[n][...] for n in f}


def stored(path, name, index):
    """(file offset, size, filter mask) of a dataset's chunk."""
    with h5py.File(path, "r") as f:
        c = f[name].id.get_chunk_info(index)
        return c.byte_offset, c.size, c.filter_mask


class Gzip(E2E):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.arrays = arrays(np.random.default_rng(39))

    def served(self, path, names, want_fast=True):
        """info says how each dataset is served; every dataset's view is
        h5py's read of it, as float32, through memmap, read() and np.load,
        and by plain preads at odd offsets."""
        r = run("info", "--json", path)
        self.assertEqual(r.returncode, 0, r.stderr)
        ds = {d["name"].lstrip("/"): d for d in json.loads(r.stdout)["datasets"]}
        want = h5py_read(path)
        for n in names:
            self.assertEqual(ds[n]["serve"], "fast-path" if want_fast else "library-fallback",
                             (n, ds[n].get("why")))
        with self.mount(path, "--cache-size", "0") as m:
            for n in names:
                with self.subTest(dataset=n):
                    check_whole(self, m, n, reference(want[n]), "float32")
            self.assertEqual(m.stats()["errors"], 0)
        r = run("verify", path)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        return want

    def test_levels_shuffle_and_dtypes_as_h5py_writes_them(self):
        path = self.p("gz.h5")
        names = []
        with h5py.File(path, "w") as f:
            for n, x in self.arrays.items():
                for level in (1, 4, 9):
                    for shuffle in (False, True):
                        for split in (False, True):
                            name = f"{n}_l{level}{'_shuf' if shuffle else ''}" \
                                   f"{'_split' if split else ''}"
                            f.create_dataset(name, data=x, chunks=chunks_of(x, split),
                                             compression="gzip", compression_opts=level,
                                             shuffle=shuffle)
                            names.append(name)
        with h5py.File(path, "r") as f:
            # the compressible arrays really are compressed
            self.assertLess(f["f32_smooth_l4"].id.get_chunk_info(0).size, 8 * 40 * 4 // 4)
            self.assertEqual(list(f["f32_smooth_l4_shuf"]._filters), ["shuffle", "gzip"])
        want = self.served(path, names)
        for n in names:
            base = n.split("_l")[0]
            np.testing.assert_array_equal(want[n], self.arrays[base], n)

    def test_chunks_one_element_wide(self):
        # h5py's own guess for image rows, (n, 16, 32, 1): each chunk lands
        # in its band one element at a time, for each element size; and a
        # run of 3 elements, edge chunks cut on every axis
        rng = np.random.default_rng(7)
        path = self.p("wide1.h5")
        names = []
        with h5py.File(path, "w") as f:
            for dt in ("u1", "i2", "f4", "f8"):
                x = (rng.normal(0, 1000, (21, 5, 3)) if dt[0] == "f"
                     else rng.integers(0, 200, (21, 5, 3))).astype(dt)
                f.create_dataset(f"{dt}_w1", data=x, chunks=(8, 2, 1), compression="gzip",
                                 shuffle=True)
                f.create_dataset(f"{dt}_w3", data=x, chunks=(8, 2, 3), compression="gzip")
                names += [f"{dt}_w1", f"{dt}_w3"]
        want = self.served(path, names)
        with h5py.File(path, "r") as f:
            self.assertEqual(f["u1_w1"].chunks, (8, 2, 1))
        for dt in ("u1", "i2", "f4", "f8"):
            np.testing.assert_array_equal(want[f"{dt}_w1"], want[f"{dt}_w3"])

    def test_fletcher32_after_gzip(self):
        # h5py's order: shuffle, gzip, fletcher32; with h5py's default
        # chunk shape too (chunks=True, rows split where the guess says)
        path = self.p("fl.h5")
        with h5py.File(path, "w") as f:
            for n in ("u8_img", "i16_ramp", "f64_smooth"):
                x = self.arrays[n]
                f.create_dataset(n, data=x, chunks=chunks_of(x, False), compression="gzip",
                                 shuffle=True, fletcher32=True)
                f.create_dataset(n + "_auto", data=x, compression="gzip", fletcher32=True)
                f.create_dataset(n + "_nogz", data=x, chunks=chunks_of(x, True), shuffle=True,
                                 fletcher32=True)
            self.assertEqual(list(f["u8_img"]._filters), ["shuffle", "gzip", "fletcher32"])
        names = [n + s for n in ("u8_img", "i16_ramp", "f64_smooth") for s in ("", "_auto", "_nogz")]
        self.served(path, names)
        with self.mount(path) as m:
            check_preads(self, m, "i16_ramp", reference(self.arrays["i16_ramp"]), rows=(8, 16, 56))

    def test_chunks_with_a_filter_skipped(self):
        # HDF5 skips an optional filter that fails (deflate on a chunk it
        # cannot shrink) and says so in the chunk's mask: the chunk is then
        # stored shuffled but not deflated (mask 2), or deflated but not
        # shuffled (mask 1), or plain (mask 3); all read as h5py reads them
        x = self.arrays["i16_ramp"][:40]
        path = self.p("mask.h5")

        def shuffled(c):
            b = np.frombuffer(c.tobytes(), np.uint8).reshape(-1, 2)
            return b.T.copy().tobytes()

        with h5py.File(path, "w") as f:
            d = f.create_dataset("x", data=x, chunks=(8, 33), compression="gzip", shuffle=True)
            d.id.write_direct_chunk((8, 0), shuffled(x[8:16]), filter_mask=2)
            d.id.write_direct_chunk((16, 0), zlib.compress(x[16:24].tobytes()), filter_mask=1)
            d.id.write_direct_chunk((24, 0), x[24:32].tobytes(), filter_mask=3)
        self.assertEqual([stored(path, "x", i)[2] for i in range(5)], [0, 2, 1, 3, 0])
        want = self.served(path, ["x"])
        np.testing.assert_array_equal(want["x"], x)

    def test_damaged_deflate_chunk_fails_alone(self):
        # a byte of chunk 3's stream flipped (its Adler-32 no longer
        # matches, or the stream breaks): rows 24-31 fail with EIO, again
        # on a second read, the log names the chunk, the other rows and
        # the other dataset are served; verify names the chunk. Rows of
        # 4 KiB, a page each: a page that fails fails all its rows.
        x = np.repeat(self.arrays["f32_smooth"][:, :1], 1024, axis=1)
        path = self.p("bad.h5")
        with h5py.File(path, "w") as f:
            for n in ("x", "good"):
                f.create_dataset(n, data=x, chunks=(8, 1024), compression="gzip", shuffle=True)
        off, size, _ = stored(path, "x", 3)
        with open(path, "r+b") as fh:
            fh.seek(off + size // 2)
            b = fh.read(1)
            fh.seek(off + size // 2)
            fh.write(bytes([b[0] ^ 0x5A]))
        ref = reference(x)
        row = ref[0].nbytes
        with self.mount(path, "--cache-size", "0",
                        expect_errors=[r"bad.h5:/x chunk 3 \(rows 24-31,.*corrupt chunk"]) as m:
            fd = os.open(m.path("x.dat"), os.O_RDONLY)
            try:
                for r in list(range(x.shape[0])) + [27, 0]:
                    if 24 <= r < 32:
                        with self.assertRaises(OSError) as cm:
                            os.pread(fd, row, r * row)
                        self.assertEqual(cm.exception.errno, errno.EIO)
                    else:
                        self.assertEqual(os.pread(fd, row, r * row), ref[r].tobytes(), f"row {r}")
            finally:
                os.close(fd)
            self.assertEqual(read_all(m.path("good.dat")), ref.tobytes())
            errs = [ln for ln in m.log_lines() if " error: " in ln]
            self.assertTrue(errs and all("bad.h5:/x chunk 3 (rows 24-31," in ln for ln in errs),
                            errs)
        r = run("verify", path)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("bad.h5:/x: chunk 3, rows 24-31", r.stdout)
        self.assertIn("deflate data corrupt or decodes to the wrong size", r.stdout)
        self.assertIn("1 bad chunk", r.stdout)

    @mock.patch.dict(os.environ, {"DSVIEW_GRID_BAND_KB": "0"})  # one chunk-row a band
    def test_short_and_long_streams_refused(self):
        # valid zlib streams of the wrong size (half a chunk, a chunk and a
        # row) in chunk 1 of whole rows, half a chunk in chunk (1, 1) of a
        # grid: EIO for those rows; verify names each
        # (rows of 4 KiB as float32: a page each)
        x = (np.arange(32 * 1024) % 3001 - 1500).astype(np.int16).reshape(32, 1024)
        path = self.p("size.h5")
        with h5py.File(path, "w") as f:
            for name, chunks in (("short", (8, 1024)), ("long", (8, 1024)), ("grid", (8, 512))):
                d = f.create_dataset(name, data=x, chunks=chunks, compression="gzip")
                n = chunks[0] * chunks[1] * 2
                body = np.arange(n + (66 if name == "long" else 0), dtype=np.uint8).tobytes()
                d.id.write_direct_chunk((8, 512 if name == "grid" else 0),
                                        zlib.compress(body if name == "long" else body[:n // 2]))
        r = run("verify", path)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("size.h5:/short: chunk 1, rows 8-15", r.stdout)
        self.assertIn("size.h5:/long: chunk 1, rows 8-15", r.stdout)
        self.assertIn("size.h5:/grid: chunk 1, rows 8-15 (chunk (1, 1), ", r.stdout)
        ref = reference(x)
        row = ref[0].nbytes
        with self.mount(path, "--cache-size", "0", expect_errors=[r"corrupt"]) as m:
            for name in ("short", "long", "grid"):
                fd = os.open(m.path(name + ".dat"), os.O_RDONLY)
                try:
                    with self.assertRaises(OSError) as cm:
                        os.pread(fd, row, 9 * row)
                    self.assertEqual(cm.exception.errno, errno.EIO)
                    self.assertEqual(os.pread(fd, row, 30 * row), ref[30].tobytes(), name)
                finally:
                    os.close(fd)

    def test_shuffle_in_front_of_other_codecs(self):
        # shuffle=True with LZF (h5py's own) and LZ4 (hdf5plugin): dsview
        # decodes the codec and undoes the shuffle, rows whole or split
        path = self.p("shuf.h5")
        names = []
        with h5py.File(path, "w") as f:
            for n in ("i16_ramp", "f32_rand", "f64_smooth"):
                x = self.arrays[n]
                for codec, kw in (("lzf", dict(compression="lzf")), ("lz4", hdf5plugin.LZ4())):
                    for split in (False, True):
                        name = f"{n}_{codec}{'_split' if split else ''}"
                        f.create_dataset(name, data=x, chunks=chunks_of(x, split), shuffle=True,
                                         **kw)
                        names.append(name)
        want = self.served(path, names)
        for n in names:
            np.testing.assert_array_equal(want[n], self.arrays[n.rsplit("_l", 1)[0]], n)

    def test_other_pipelines_stay_with_the_library(self):
        # shuffle after the codec, and gzip of big-endian data (the library
        # converts it): the HDF5 library reads them, as before
        x = self.arrays["i16_rand"]
        path = self.p("lib.h5")
        with h5py.File(path, "w") as f:
            dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
            dcpl.set_chunk((8, 13))
            dcpl.set_deflate(4)
            dcpl.set_shuffle()
            d = h5py.Dataset(h5py.h5d.create(f.id, b"after", h5py.h5t.STD_I16LE,
                                             h5py.h5s.create_simple(x.shape), dcpl=dcpl))
            d[...] = x
            f.create_dataset("be", data=x.astype(">i2"), chunks=(8, 13), compression="gzip",
                             shuffle=True)
        self.assertEqual(list(h5py.File(path, "r")["after"]._filters), ["gzip", "shuffle"])
        want = self.served(path, ["after", "be"], want_fast=False)
        np.testing.assert_array_equal(want["after"], x)
