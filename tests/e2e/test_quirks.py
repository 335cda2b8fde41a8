"""Other writers' files: what their reference readers read, dsview reads,
byte for byte through a mount; what they refuse, dsview refuses with a
clear error and the rest of the file still reads.

- z5py's Zarr arrays with Blosc chunks (z5py from the project venv), and
  the same chunks with the 16 bytes z5 before 2.0.10 wrote after every
  Blosc buffer (appended here: the current z5py no longer writes them),
  read as zarr-python reads them.
- zstd frames without a content size (python-zstandard with
  write_content_size=False) in Zarr v2 chunks, read as zarr-python 3's
  numcodecs reads them, and in HDF5 32015 chunks (written with
  H5Dwrite_chunk), decoded into the chunk's size.
- HDF5 chunk indexes holding chunks outside the dataset's extent (written
  there with H5Dwrite_chunk), which the library counts and never reads.
- an HDF5 file whose superblock extension names a metadata cache image
  past its end (h5py's file, its file-space-info message turned into such
  a message, checksum redone): the library fails its first metadata read
  and then reads the file without the image, as h5py does.
- an HDF5 scale-offset chunk whose minbits passes its type: the HDF5
  library (2.0, in the venv's h5py) refuses it, and so does dsview."""
import errno
import os
import struct

import numpy as np
import numcodecs
import zarr

from common import E2E, check_whole, run, venv_python

RNG = np.random.default_rng(29)

Z5_WRITE = """
import sys, numpy as np, z5py
path, data = sys.argv[1], np.load(sys.argv[2])
f = z5py.File(path, mode="a", use_zarr_format=True)
d = f.create_dataset("a", shape=data.shape, chunks=(8, 4), dtype=data.dtype,
                     compression="blosc", codec="lz4")
d[:] = data
"""

ZARR3_READ = """
import sys, numpy as np, zarr
np.save(sys.argv[2], zarr.open_array(sys.argv[1], mode="r")[...])
"""


def lookup3(data):
    """Bob Jenkins' hashlittle with seed 0: HDF5's metadata checksum."""
    m = 0xffffffff

    def rot(x, k):
        return ((x << k) | (x >> (32 - k))) & m

    def word(b, i):
        return int.from_bytes(b[i:i + 4], "little")
    n, i = len(data), 0
    a = b = c = (0xdeadbeef + n) & m
    while n > 12:
        a, b, c = (a + word(data, i)) & m, (b + word(data, i + 4)) & m, (c + word(data, i + 8)) & m
        a = (a - c) & m; a ^= rot(c, 4); c = (c + b) & m  # noqa: E702
        b = (b - a) & m; b ^= rot(a, 6); a = (a + c) & m  # noqa: E702
        c = (c - b) & m; c ^= rot(b, 8); b = (b + a) & m  # noqa: E702
        a = (a - c) & m; a ^= rot(c, 16); c = (c + b) & m  # noqa: E702
        b = (b - a) & m; b ^= rot(a, 19); a = (a + c) & m  # noqa: E702
        c = (c - b) & m; c ^= rot(b, 4); b = (b + a) & m  # noqa: E702
        n, i = n - 12, i + 12
    if n == 0:
        return c
    t = data[i:] + bytes(12 - n)
    a, b, c = (a + word(t, 0)) & m, (b + word(t, 4)) & m, (c + word(t, 8)) & m
    for x, y, k in (("c", "b", 14), ("a", "c", 11), ("b", "a", 25), ("c", "b", 16),
                    ("a", "c", 4), ("b", "a", 14), ("c", "b", 24)):
        v = {"a": a, "b": b, "c": c}
        v[x] = ((v[x] ^ v[y]) - rot(v[y], k)) & m
        a, b, c = v["a"], v["b"], v["c"]
    return c


def cache_image_past_the_end(path):
    """Turns the file-space-info message of path's superblock extension (a
    version 2 object header) into a metadata cache image message naming
    1 MiB at 64 KiB, past the file's end, and redoes the header's checksum."""
    d = bytearray(open(path, "rb").read())
    ext = struct.unpack_from("<Q", d, 20)[0]  # superblock v2/v3: extension address
    assert d[ext:ext + 4] == b"OHDR", "no superblock extension"
    flags = d[ext + 5]
    p = ext + 6 + (16 if flags & 0x20 else 0) + (4 if flags & 0x10 else 0)
    width = 1 << (flags & 3)
    end = p + width + int.from_bytes(d[p:p + width], "little")
    assert struct.unpack_from("<I", d, end)[0] == lookup3(bytes(d[ext:end]))
    p += width
    while p < end - 4:
        kind, size = d[p], struct.unpack_from("<H", d, p + 1)[0]
        head = 4 + (2 if flags & 0x04 else 0)
        if kind == 0x17:  # file space info -> metadata cache image
            d[p] = 0x18
            struct.pack_into("<BQQ", d, p + head, 0, 0x10000, 0x100000)
            break
        p += head + size
    else:
        raise AssertionError("no file space info message")
    struct.pack_into("<I", d, end, lookup3(bytes(d[ext:end])))
    open(path, "wb").write(d)


def chunk_files(path):
    return sorted(os.path.join(path, k) for k in os.listdir(path) if not k.startswith("."))


class Quirks(E2E):
    def int_view(self, name, source):
        return self.write_ini(f"[{name}]\nsource = {source}\ndtype = int32\n", name + ".ini")

    def zarr3_read(self, path):
        out = os.path.join(self.tmp, "ref.npy")
        venv_python(ZARR3_READ, path, out)
        return np.load(out)

    def test_z5py_blosc_and_bytes_after_the_buffer(self):
        x = RNG.integers(-2**31, 2**31, (30, 7), dtype=np.int64).astype(np.int32)
        np.save(self.p("x.npy"), x)
        root = self.p("z5.zarr")
        venv_python(Z5_WRITE, root, self.p("x.npy"))
        arr = os.path.join(root, "a")
        for old_z5 in (False, True):
            with self.subTest(old_z5=old_z5):
                if old_z5:
                    # what z5 before 2.0.10 left in each chunk file: the
                    # buffer, then 16 bytes of its output vector past cbytes
                    for p in chunk_files(arr):
                        with open(p, "ab") as f:
                            f.write(bytes(16))
                ref = zarr.open(arr, mode="r")[...]  # zarr-python (numcodecs)
                np.testing.assert_array_equal(ref, x)
                with self.mount(self.int_view("z5", arr)) as m:
                    check_whole(self, m, "z5", ref, "int32")
                    self.assertEqual(m.stats()["errors"], 0)
                self.assertEqual(run("verify", arr).returncode, 0)

    def test_blosc_buffer_past_its_file_is_refused(self):
        # a chunk file cut inside its Blosc buffer: cbytes passes the file;
        # zarr-python's libblosc would read past it, dsview refuses it and
        # verify names it alone
        x = RNG.integers(0, 1000, (32, 8), dtype=np.int32)
        p = self.p("cut.zarr")
        z = zarr.open(p, mode="w", shape=x.shape, chunks=(8, 8), dtype=np.int32,
                      compressor=numcodecs.Blosc("lz4", 5, numcodecs.Blosc.SHUFFLE))
        z[...] = x
        with open(os.path.join(p, "2.0"), "r+b") as f:
            f.truncate(os.path.getsize(os.path.join(p, "2.0")) - 1)
        with self.mount(self.int_view("cut", p), "--cache-size", "0",
                        expect_errors=[r"cut\.zarr/2\.0: corrupt"]) as m:
            fd = os.open(m.path("cut.dat"), os.O_RDONLY)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
            try:
                row = 8 * 4
                with self.assertRaises(OSError) as cm:
                    os.pread(fd, row, 17 * row)
                self.assertEqual(cm.exception.errno, errno.EIO)
            finally:
                os.close(fd)
        r = run("verify", p)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("rows 16-23 (chunk file " + os.path.join(os.path.realpath(p), "2.0"), r.stdout)
        self.assertIn("1 bad chunk", r.stdout)

    def test_zarr_zstd_without_content_size(self):
        import zstandard
        x = RNG.integers(-5000, 5000, (40, 6), dtype=np.int32)
        p = self.p("zs.zarr")
        z = zarr.open(p, mode="w", shape=x.shape, chunks=(16, 6), dtype=np.int32,
                      compressor=numcodecs.Zstd(3))
        z[...] = x
        unsized = zstandard.ZstdCompressor(level=3, write_content_size=False)
        for f in chunk_files(p):
            raw = numcodecs.Zstd().decode(open(f, "rb").read())
            enc = unsized.compress(raw)
            self.assertEqual(zstandard.get_frame_parameters(enc).content_size,
                             zstandard.CONTENTSIZE_UNKNOWN)
            with open(f, "wb") as out:
                out.write(enc)
        ref = self.zarr3_read(p)  # numcodecs 0.16 reads them (Debian's 0.11 does not)
        np.testing.assert_array_equal(ref, x)
        with self.mount(self.int_view("zs", p)) as m:
            check_whole(self, m, "zs", ref, "int32")
            self.assertEqual(m.stats()["errors"], 0)

    def test_zarr_zstd_without_content_size_wrong_length(self):
        # frames that make fewer or more bytes than the chunk: refused,
        # and verify names those two chunk files alone
        import zstandard
        x = RNG.integers(0, 100, (32, 8), dtype=np.int32)
        p = self.p("zbad.zarr")
        z = zarr.open(p, mode="w", shape=x.shape, chunks=(8, 8), dtype=np.int32,
                      compressor=numcodecs.Zstd(3))
        z[...] = x
        unsized = zstandard.ZstdCompressor(write_content_size=False)
        chunk = x[8:16].tobytes()
        with open(os.path.join(p, "1.0"), "wb") as f:
            f.write(unsized.compress(chunk[:-4]))  # short
        with open(os.path.join(p, "2.0"), "wb") as f:
            f.write(unsized.compress(chunk + bytes(4)))  # long
        with self.mount(self.int_view("zbad", p), "--cache-size", "0",
                        expect_errors=[r"zbad\.zarr/[12]\.0: corrupt"]) as m:
            fd = os.open(m.path("zbad.dat"), os.O_RDONLY)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
            try:
                row = 8 * 4
                for r in (9, 17):
                    with self.assertRaises(OSError) as cm:
                        os.pread(fd, row, r * row)
                    self.assertEqual(cm.exception.errno, errno.EIO)
            finally:
                os.close(fd)
        r = run("verify", p)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        for k, rows in (("1.0", "8-15"), ("2.0", "16-23")):
            self.assertIn(f"rows {rows} (chunk file " + os.path.join(os.path.realpath(p), k),
                          r.stdout)
        self.assertIn("2 bad chunks", r.stdout)

    def test_hdf5_zstd_without_content_size(self):
        # hdf5plugin 6's filter reads these chunks as wrong bytes without an
        # error; the frames hold exactly a chunk each, and dsview decodes
        # them into it, as zstd's reference decoder does
        import h5py
        import zstandard
        x = RNG.integers(-9999, 9999, (12, 5), dtype=np.int32)
        np.save(self.p("zh.npy"), x)
        p = self.p("zs.h5")
        # the real 32015 filter (hdf5plugin) on the dataset; chunks written raw
        venv_python("import sys, numpy as np, h5py, hdf5plugin, zstandard\n"
                    "x = np.load(sys.argv[2])\n"
                    "with h5py.File(sys.argv[1], 'w') as f:\n"
                    "    d = f.create_dataset('x', shape=x.shape, chunks=(4, 5), dtype='<i4',\n"
                    "                         **hdf5plugin.Zstd())\n"
                    "    for r in range(0, 12, 4):\n"
                    "        c = zstandard.ZstdCompressor(write_content_size=False)\n"
                    "        d.id.write_direct_chunk((r, 0), c.compress(x[r:r + 4].tobytes()))\n",
                    p, self.p("zh.npy"))
        with h5py.File(p, "r") as f:
            self.assertEqual(f["x"].id.get_create_plist().get_filter(0)[0], 32015)
            stored = b"".join(zstandard.ZstdDecompressor().decompressobj().decompress(
                f["x"].id.read_direct_chunk((r, 0))[1]) for r in range(0, 12, 4))
        self.assertEqual(stored, x.tobytes())
        with self.mount(self.int_view("zh", p + ":/x")) as m:
            check_whole(self, m, "zh", x, "int32")

    def test_hdf5_chunks_outside_the_extent(self):
        # the library counts chunks its index holds outside the extent and
        # never reads them; dsview leaves such a dataset to the library,
        # which reads it as h5py does (the extensible-array index of
        # HDF5's h5fc_ext*.h5 files is the same case)
        import h5py
        p = self.p("ext.h5")
        x = RNG.integers(-100, 100, (4, 6), dtype=np.int32)
        with h5py.File(p, "w", libver="latest") as f:
            for name, chunks, outside in (("grid", (2, 3), (0, 6)), ("rows", (2, 6), (4, 0))):
                d = f.create_dataset(name, shape=(4, 6), maxshape=(10, None), chunks=chunks,
                                     dtype="<i4")
                d[0:2] = x[0:2]
                d.id.write_direct_chunk(outside, np.full(chunks, 77, "<i4").tobytes())
                self.assertEqual(d.id.get_num_chunks(), 3 if name == "grid" else 2)
        with h5py.File(p, "r") as f:
            refs = {n: f[n][...] for n in ("grid", "rows")}
        want = np.zeros_like(x)
        want[0:2] = x[0:2]
        r = run("info", p)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("indexed chunks outside the extent", r.stdout)
        self.assertNotIn("refused:", r.stdout)
        for name, ref in refs.items():
            with self.subTest(name):
                np.testing.assert_array_equal(ref, want)
                with self.mount(self.int_view(name, f"{p}:/{name}")) as m:
                    check_whole(self, m, name, ref, "int32")
                    self.assertEqual(m.stats()["errors"], 0)

    def test_hdf5_unreadable_cache_image(self):
        # HDF5's cve_2020_10812.h5 is such a file: its datasets were "not
        # found", since the first lookup after open is the one that fails
        import h5py
        p = self.p("mdci.h5")
        x = np.arange(100, dtype="<i4")
        with h5py.File(p, "w", libver="latest", fs_strategy="fsm", fs_persist=True) as f:
            f.create_dataset("dset", data=x)
            f.create_group("g").create_dataset("d2", data=x[:10] * 3)
        cache_image_past_the_end(p)
        with h5py.File(p, "r") as f:
            with self.assertRaisesRegex(RuntimeError, "addr overflow"):  # the first read
                f.id.links.get_info(b"dset")
            refs = {"dset": f["dset"][...], "d2": f["g/d2"][...]}
        np.testing.assert_array_equal(refs["dset"], x)
        r = run("info", p)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("2 datasets (2 fast path, 0 library fallback, 0 refused)", r.stdout)
        ini = self.write_ini(f"[dset]\nsource = {p}:/dset\ndtype = int32\n"
                             f"[d2]\nsource = {p}:/g/d2\ndtype = int32\n", "mdci.ini")
        with self.mount(ini) as m:
            for name, ref in refs.items():
                check_whole(self, m, name, ref.astype(np.int32), "int32")

    def test_hdf5_scaleoffset_minbits_past_its_type(self):
        import h5py
        p = self.p("so.h5")
        x = np.arange(7 * 6, dtype=np.int16).reshape(7, 6) % 11
        with h5py.File(p, "w") as f:
            f.create_dataset("s", data=x, chunks=(4, 6), scaleoffset=0)
            off = f["s"].id.get_chunk_info(0).byte_offset
        with open(p, "r+b") as f:  # the first chunk's minbits: 127 bits of a 16-bit type
            f.seek(off)
            f.write((127).to_bytes(4, "little"))
        # HDF5 2.0 (the venv's h5py) refuses that chunk and reads the other
        out = venv_python("import sys, h5py\nf = h5py.File(sys.argv[1], 'r')\n"
                          "print(f['s'][4:].tolist())\ntry:\n    f['s'][:4]\n"
                          "except OSError as e:\n    print('refused', e)\n", p)
        self.assertIn("refused", out)
        self.assertIn(str(x[4:].tolist()), out)
        # dsview refuses it too: a read of its rows fails (the whole view
        # is smaller than a page, so every read needs that chunk), and
        # verify names the chunk
        with self.mount(self.int_view("so", p + ":/s"), "--cache-size", "0",
                        expect_errors=[r"so\.h5.*(corrupt|I/O)"]) as m:
            with self.assertRaises(OSError) as cm:
                with open(m.path("so.dat"), "rb") as f:
                    f.read()
            self.assertEqual(cm.exception.errno, errno.EIO)
        r = run("verify", p)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("chunk 0, rows 0-3", r.stdout)
        self.assertIn("1 bad chunk", r.stdout)
