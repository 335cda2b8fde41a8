"""The index cache: a mount keeps what it learnt of its sources (shapes,
dtypes, offsets) in a checked file in --index-cache DIR (or the
manifest's index_cache, or beside the disk cache), and the next mount of
the same collection reads no header of an unchanged source, nor opens
its file until a read needs it. A source whose file changed (size,
modification time, inode) is read again alone; an index file that is
damaged, cut short or of another version is ignored with one warning and
made again; a directory it cannot be written to is a warning, never a
failed mount. Rows are checked against numpy."""
import errno
import glob
import json
import os
import shutil
import struct
import sys
import tempfile
import time

import h5py
import hdf5plugin
import numpy as np

from common import E2E, PYTHON_DIR, mm_npy, read_all, run, venv_python
import token_writers as tw

sys.path.insert(0, PYTHON_DIR)
import dsview  # noqa: E402

NOFILE = 1024
LIMITED = ("prlimit", f"--nofile={NOFILE}:{NOFILE}", "--")


def write_npys(d, n, seed=0):
    """n small float32 .npy files of 1 to 4 rows of 8; their arrays."""
    os.makedirs(d, exist_ok=True)
    rng = np.random.default_rng(seed)
    arrays = []
    for i in range(n):
        a = (rng.standard_normal((1 + i % 4, 8)) * 100).astype(np.float32)
        np.save(os.path.join(d, f"rec{i:05d}.npy"), a)
        arrays.append(a)
    return arrays


def write_raws(d, n, seed=1):
    """n raw int16 files of 2 to 5 rows of 6 (source_shape -1, 6)."""
    os.makedirs(d, exist_ok=True)
    rng = np.random.default_rng(seed)
    arrays = []
    for i in range(n):
        a = rng.integers(-3000, 3000, (2 + i % 4, 6)).astype("<i2")
        a.tofile(os.path.join(d, f"r{i:03d}.bin"))
        arrays.append(a)
    return arrays


# h5py's pipelines of chunked datasets dsview reads with pread: their
# chunk maps are kept in the index
PIPELINES = [dict(chunks=(2, 8)),
             dict(chunks=(2, 8), compression="gzip", shuffle=True, fletcher32=True),
             dict(chunks=(3, 8), compression="lzf"),
             dict(chunks=(1, 8), **hdf5plugin.LZ4()),
             dict(chunks=(4, 8), **hdf5plugin.Blosc()),
             dict(chunks=(2, 8), compression="gzip", compression_opts=1)]


def write_chunked_h5s(d, n, seed=3):
    """n HDF5 files, each a chunked dataset /x of 5 to 9 rows of 8 (the
    last chunk short), float32 or int16, in each of PIPELINES in turn."""
    os.makedirs(d, exist_ok=True)
    rng = np.random.default_rng(seed)
    for i in range(n):
        a = rng.standard_normal((5 + i % 5, 8)) * 1000
        a = a.astype(np.float32 if i % 2 else np.int16)
        with h5py.File(os.path.join(d, f"c{i:03d}.h5"), "w") as f:
            x = f.create_dataset("x", data=a, **PIPELINES[i % len(PIPELINES)])
            x.attrs["rate"] = 100.0 + i


def read_h5s(d, pattern):
    """The datasets /x of d's files (by pattern) as h5py reads them."""
    out = []
    for p in sorted(glob.glob(os.path.join(d, pattern))):
        with h5py.File(p) as f:
            out.append(f["x"][:].astype(np.float64))
    return out


def crc32c(data):
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ (0x82F63B78 if c & 1 else 0)
        table.append(c)
    crc = 0xFFFFFFFF
    for b in data:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def index_entries(data):
    """The entries of an index file (source/index.h's layout): (key,
    where its saved state starts, its length) each."""
    count, = struct.unpack_from("<Q", data, 16)
    wlen, = struct.unpack_from("<I", data, 24)
    at, out = 28 + wlen, []
    for _ in range(count):
        klen, = struct.unpack_from("<I", data, at)
        key = data[at + 4:at + 4 + klen]
        at += 4 + klen + 32
        at += 1 + data[at]
        blen, = struct.unpack_from("<I", data, at)
        out.append((key, at + 4, blen))
        at += 4 + blen
    return out


def write_sealed(path, data):
    """The index file data written to path with its CRC made again: its
    entries changed, the file itself sound."""
    struct.pack_into("<I", data, len(data) - 4, crc32c(bytes(data[:-4])))
    with open(path, "wb") as fh:
        fh.write(data)


def meta(m, name):
    with open(m.path(name + ".json")) as f:
        return json.load(f)


def index_lines(text):
    return [l for l in text.splitlines() if "index cache" in l]


class IndexCache(E2E):
    def setUp(self):
        super().setUp()
        self.tmp = tempfile.mkdtemp(dir=type(self).tmp)  # a directory of each test's own
        self.idx = self.p("idx")

    def collection(self, n=60, raws=0):
        """A manifest of a view v of n .npy files (and r of raws raw ones,
        when asked); its path, and the views' numpy references."""
        self.npys = write_npys(self.p("npy"), n)
        ini = f"[v]\nsource = {self.p('npy')}/rec*.npy\n"
        refs = {"v": np.concatenate(self.npys)}
        if raws:
            self.raws = write_raws(self.p("raw"), raws)
            ini += (f"[r]\nsource = {self.p('raw')}/r*.bin\nsource_dtype = int16\n"
                    f"source_shape = -1, 6\n")
            refs["r"] = np.concatenate(self.raws).astype(np.float32)
        return self.write_ini(ini), refs

    def check_views(self, m, refs):
        for name, ref in refs.items():
            got = mm_npy(m.path(name + ".npy"))
            # float32 of float32 and of int16: exact
            np.testing.assert_array_equal(got, ref.astype(np.float32), err_msg=name)

    def index_files(self, d=None):
        return sorted(glob.glob(os.path.join(d or self.idx, "index-*.dsvidx")))

    def test_second_mount_reads_no_header_under_the_usual_limit(self):
        n, raws = 2000, 30
        ini, refs = self.collection(n, raws)
        with self.mount(ini, "--index-cache", self.idx, wrap=LIMITED) as m:
            st = m.stats()
            self.assertEqual(st["source_header_opens"], n + raws)
            self.assertEqual(st["index_hits"], 0)
            self.check_views(m, refs)
            opened = {v: meta(m, v) for v in refs}
        self.assertEqual(len(self.index_files()), 1)
        with self.mount(ini, "--index-cache", self.idx, wrap=LIMITED) as m:
            st = m.stats()
            self.assertEqual(st["source_header_opens"], 0)
            self.assertEqual(st["index_hits"], n + raws)
            self.assertEqual(st["index_stale"], 0)
            self.assertEqual(st["source_fds"], 0)  # no file opened before a read
            self.assertEqual({v: meta(m, v) for v in refs}, opened)
            self.check_views(m, refs)
            st = m.stats()
            self.assertEqual(st["source_header_opens"], 0)
            self.assertLessEqual(st["source_fds"], st["source_fd_budget"])
            self.assertLess(len(os.listdir(f"/proc/{m.pid}/fd")), NOFILE)
            self.assertEqual(st["source_replaced"], 0)
        self.assertEqual(len(self.index_files()), 1)

    def test_changed_sources_read_again_alone(self):
        n = 40
        ini, refs = self.collection(n)
        with self.mount(ini, "--index-cache", self.idx) as m:
            self.assertEqual(m.stats()["source_header_opens"], n)
        d = self.p("npy")
        # 3: touched (its mtime alone); 7: rewritten with another shape
        # (size); 9: replaced by another file of the same bytes (inode)
        st3 = os.stat(os.path.join(d, "rec00003.npy"))
        os.utime(os.path.join(d, "rec00003.npy"), ns=(st3.st_atime_ns, st3.st_mtime_ns + 1000))
        self.npys[7] = np.arange(48, dtype=np.float32).reshape(6, 8) - 7.25
        np.save(os.path.join(d, "rec00007.npy"), self.npys[7])
        tmp = self.p("copy.npy")
        np.save(tmp, self.npys[9])
        st9 = os.stat(os.path.join(d, "rec00009.npy"))
        os.utime(tmp, ns=(st9.st_atime_ns, st9.st_mtime_ns))
        os.replace(tmp, os.path.join(d, "rec00009.npy"))
        refs["v"] = np.concatenate(self.npys)
        with self.mount(ini, "--index-cache", self.idx) as m:
            st = m.stats()
            self.assertEqual(st["source_header_opens"], 3)
            self.assertEqual(st["index_stale"], 3)
            self.assertEqual(st["index_hits"], n - 3)
            self.check_views(m, refs)
        with self.mount(ini, "--index-cache", self.idx) as m:
            st = m.stats()  # the file was made again with the new entries
            self.assertEqual(st["source_header_opens"], 0)
            self.assertEqual(st["index_hits"], n)
            self.check_views(m, refs)

    def test_damaged_index_ignored_and_made_again(self):
        n = 50
        ini, refs = self.collection(n)
        with self.mount(ini, "--index-cache", self.idx):
            pass
        [f] = self.index_files()
        with open(f, "rb") as fh:
            good = fh.read()
        flipped = bytearray(good)
        flipped[len(good) // 2] ^= 0x10
        version = bytearray(good)
        version[8] = 99
        cases = {"flipped": (bytes(flipped), "checksum"), "cut": (good[:len(good) // 2], "checksum"),
                 "version": (bytes(version), "version"), "empty": (b"", "no magic")}
        for what, (data, why) in cases.items():
            with self.subTest(what):
                with open(f, "wb") as fh:
                    fh.write(data)
                with self.mount(ini, "--index-cache", self.idx) as m:
                    lines = index_lines(m.stderr)
                    self.assertEqual(len(lines), 1, m.stderr)
                    self.assertIn(f, lines[0])
                    self.assertIn(why, lines[0])
                    self.assertIn("warning", lines[0])
                    st = m.stats()
                    self.assertEqual(st["source_header_opens"], n)
                    self.assertEqual(st["index_hits"], 0)
                    self.assertEqual(st["index_rejected"], 1)
                    self.check_views(m, refs)
                with self.mount(ini, "--index-cache", self.idx) as m:
                    self.assertEqual(index_lines(m.stderr), [])
                    self.assertEqual(m.stats()["source_header_opens"], 0)
                    self.check_views(m, refs)

    def test_unwritable_directory_is_a_warning(self):
        n = 20
        ini, refs = self.collection(n)
        with open(self.p("plain"), "w") as fh:
            fh.write("a file, not a directory\n")
        bad = os.path.join(self.p("plain"), "idx")
        for _ in range(2):  # the first mount left nothing behind to read
            with self.mount(ini, "--index-cache", bad) as m:
                lines = index_lines(m.stderr)
                self.assertEqual(len(lines), 1, m.stderr)
                self.assertIn(bad, lines[0])
                self.assertIn("warning", lines[0])
                self.assertEqual(m.stats()["source_header_opens"], n)
                self.check_views(m, refs)

    def test_manifest_key_and_disk_cache_directory(self):
        n = 30
        _, refs = self.collection(n)
        ini = self.write_ini("[dsview]\nindex_cache = kept\n[v]\nsource = npy/rec*.npy\n",
                             name="keyed.ini")
        for _ in range(2):
            with self.mount(ini) as m:
                first = m.stats()
                self.check_views(m, refs)
        self.assertEqual(first["source_header_opens"], 0)
        self.assertEqual(len(self.index_files(self.p("kept"))), 1)
        # the disk cache's directory when no index cache is named
        plain, _ = self.collection(n)
        dc = self.p("dcache")
        for _ in range(2):
            with self.mount(plain, "--disk-cache", dc) as m:
                st = m.stats()
                self.check_views(m, refs)
        self.assertEqual(st["source_header_opens"], 0)
        self.assertEqual(len(self.index_files(dc)), 1)

    def test_directory_mount(self):
        arrays = write_npys(self.p("dir"), 25, seed=5)
        for k in range(2):
            with self.mount(self.p("dir"), "--index-cache", self.idx) as m:
                self.assertEqual(m.stats()["source_header_opens"], 0 if k else 25)
                for i in (0, 7, 24):
                    np.testing.assert_array_equal(mm_npy(m.path(f"rec{i:05d}.npy")), arrays[i])

    def test_hdf5_kept_and_opened(self):
        """Contiguous datasets and chunked ones of whole-row chunks dsview
        decodes are kept; chunks that split rows (the grid) and a
        big-endian chunked dataset (the library's) are opened each time."""
        d = self.p("h5")
        os.makedirs(d)
        rng = np.random.default_rng(7)
        for i in range(30):
            a = (rng.standard_normal((3, 8)) * 10).astype(np.float32)
            with h5py.File(os.path.join(d, f"s{i:02d}.h5"), "w") as f:
                x = f.create_dataset("x", data=a)
                x.attrs["subject"] = f"sub-{i:02d}"
                x.attrs["rate"] = 250.0
        a = (rng.standard_normal((3, 8)) * 10).astype(np.float32)
        with h5py.File(os.path.join(d, "s30.h5"), "w") as f:  # chunked, deflated: kept
            f.create_dataset("x", data=a, chunks=(1, 8), compression="gzip")
        with h5py.File(os.path.join(d, "s31.h5"), "w") as f:  # chunks split rows: opened
            f.create_dataset("x", data=a * 2, chunks=(2, 4), compression="gzip")
        with h5py.File(os.path.join(d, "s32.h5"), "w") as f:  # big-endian: opened
            f.create_dataset("x", data=(a * 3).astype(">f4"), chunks=(1, 8))
        ini = self.write_ini(f"[h]\nsource = {d}/s*.h5:/x\n")
        ref = np.concatenate(read_h5s(d, "s*.h5")).astype(np.float32)
        with self.mount(ini, "--index-cache", self.idx) as m:
            self.assertEqual(m.stats()["source_header_opens"], 33)
            opened = meta(m, "h")
            np.testing.assert_array_equal(mm_npy(m.path("h.npy")), ref)
        with self.mount(ini, "--index-cache", self.idx) as m:
            st = m.stats()
            self.assertEqual(st["source_header_opens"], 2)  # the grid's and the library's
            self.assertEqual(st["index_hits"], 31)
            self.assertEqual(meta(m, "h"), opened)  # attributes and all
            np.testing.assert_array_equal(mm_npy(m.path("h.npy")), ref)

    def test_hdf5_chunked_second_mount_reads_no_header(self):
        n = 60
        d = self.p("ch")
        write_chunked_h5s(d, n)
        ini = self.write_ini(f"[c]\nsource = {d}/c*.h5:/x\n")
        ref = lambda: np.concatenate(read_h5s(d, "c*.h5")).astype(np.float32)
        want = ref()
        with self.mount(ini, "--index-cache", self.idx) as m:
            st = m.stats()
            self.assertEqual(st["source_header_opens"], n)
            self.assertEqual(st["index_hits"], 0)
            opened = meta(m, "c")
            np.testing.assert_array_equal(mm_npy(m.path("c.npy")), want)
        with self.mount(ini, "--index-cache", self.idx, wrap=LIMITED) as m:
            st = m.stats()
            self.assertEqual(st["source_header_opens"], 0)
            self.assertEqual(st["index_hits"], n)
            self.assertEqual(st["source_fds"], 0)  # no file opened before a read
            self.assertEqual(meta(m, "c"), opened)
            np.testing.assert_array_equal(mm_npy(m.path("c.npy")), want)
            self.assertEqual(m.stats()["source_header_opens"], 0)
        # 3: touched (its mtime alone); 8: rewritten with other rows
        p3 = os.path.join(d, "c003.h5")
        st3 = os.stat(p3)
        os.utime(p3, ns=(st3.st_atime_ns, st3.st_mtime_ns + 1000))
        with h5py.File(os.path.join(d, "c008.h5"), "w") as f:
            f.create_dataset("x", data=np.arange(88, dtype=np.int16).reshape(11, 8) - 40,
                             **PIPELINES[8 % len(PIPELINES)])
        want = ref()
        with self.mount(ini, "--index-cache", self.idx) as m:
            st = m.stats()
            self.assertEqual(st["source_header_opens"], 2)
            self.assertEqual(st["index_stale"], 2)
            self.assertEqual(st["index_hits"], n - 2)
            np.testing.assert_array_equal(mm_npy(m.path("c.npy")), want)
        with self.mount(ini, "--index-cache", self.idx) as m:
            self.assertEqual(m.stats()["source_header_opens"], 0)
            np.testing.assert_array_equal(mm_npy(m.path("c.npy")), want)

    def test_hdf5_packed_stores_with_block_tables(self):
        """Stores `dsview pack` writes (LZ4 chunks with a block table,
        Fletcher32) kept with their tables: rows exact against h5py
        (hdf5plugin decodes the LZ4), none of the files read again."""
        d = self.p("packed")
        os.makedirs(d)
        rng = np.random.default_rng(9)
        for i in range(6):  # each store's dataset named after its input: /a
            os.makedirs(self.p(f"in{i}"))
            np.save(self.p(f"in{i}/a.npy"), rng.integers(0, 255, (40 + i, 1024), dtype=np.uint8))
            r = run("pack", "--chunk-size", "16k", "--block-size", "4K", self.p(f"in{i}/a.npy"),
                    os.path.join(d, f"p{i}.h5"), timeout=120)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        with h5py.File(os.path.join(d, "p0.h5")) as f:
            [name] = [k for k in f if not k.startswith(".")]
        ini = self.write_ini(f"[p]\nsource = {d}/p*.h5:/{name}\n")
        ref = np.concatenate([np.load(self.p(f"in{i}/a.npy")) for i in range(6)])
        got = []
        for p in sorted(glob.glob(os.path.join(d, "p*.h5"))):
            with h5py.File(p) as f:
                got.append(f[name][:])
        np.testing.assert_array_equal(np.concatenate(got), ref)  # h5py reads the stores
        with self.mount(ini, "--index-cache", self.idx) as m:
            self.assertEqual(m.stats()["source_header_opens"], 6)
            opened = meta(m, "p")
            np.testing.assert_array_equal(mm_npy(m.path("p.npy")), ref.astype(np.float32))
        with self.mount(ini, "--index-cache", self.idx) as m:
            st = m.stats()
            self.assertEqual(st["source_header_opens"], 0)
            self.assertEqual(st["index_hits"], 6)
            self.assertEqual(meta(m, "p"), opened)
            np.testing.assert_array_equal(mm_npy(m.path("p.npy")), ref.astype(np.float32))
            fd = os.open(m.path("p.dat"), os.O_RDONLY)  # single rows: through the table
            try:
                for row in (0, 17, 41, 100, len(ref) - 1):
                    b = os.pread(fd, 1024 * 4, row * 1024 * 4)
                    np.testing.assert_array_equal(np.frombuffer(b, np.float32), ref[row])
            finally:
                os.close(fd)

    def test_hdf5_chunked_damaged_entry_opened_and_made_again(self):
        """An entry whose file checks out (its CRC made again) but whose
        chunk map does not is not used: that source alone is opened, its
        entry replaced."""
        n = 12
        d = self.p("ch")
        write_chunked_h5s(d, n, seed=4)
        ini = self.write_ini(f"[c]\nsource = {d}/c*.h5:/x\n")
        want = np.concatenate(read_h5s(d, "c*.h5")).astype(np.float32)
        with self.mount(ini, "--index-cache", self.idx):
            pass
        [f] = self.index_files()
        with open(f, "rb") as fh:
            data = bytearray(fh.read())
        entries = {bytes(k).split(b"\0")[0]: (at, blen) for k, at, blen in index_entries(data)}
        self.assertEqual(len(entries), n)
        damaged = {}  # a chunk's size set to 0, an offset past 2^64, a count off by one
        for i, (field, value) in zip((1, 5, 7), (("size", 0), ("off", 2**64 - 8), ("n", 99))):
            at, _ = entries[os.path.join(d, f"c{i:03d}.h5").encode()]
            with h5py.File(os.path.join(d, f"c{i:03d}.h5")) as h:
                ndim = h["x"].ndim
            head = at + 8 + 8 * (3 + ndim)  # past the layout's length, kind, dtype, ndim, shape
            chunks = head + 8 * 14
            where = {"size": chunks + 8, "off": chunks, "n": head + 8 * 13}[field]
            struct.pack_into("<Q", data, where, value)
            damaged[i] = field
        write_sealed(f, data)
        with self.mount(ini, "--index-cache", self.idx) as m:
            self.assertEqual(index_lines(m.stderr), [])  # the file itself is sound
            st = m.stats()
            self.assertEqual(st["source_header_opens"], len(damaged))
            self.assertEqual((st["index_hits"], st["index_stale"]), (n - len(damaged), len(damaged)))
            np.testing.assert_array_equal(mm_npy(m.path("c.npy")), want)
        with self.mount(ini, "--index-cache", self.idx) as m:
            st = m.stats()
            self.assertEqual(st["source_header_opens"], 0)
            self.assertEqual(st["index_hits"], n)
            np.testing.assert_array_equal(mm_npy(m.path("c.npy")), want)

    def test_reader_option(self):
        n = 30
        ini, refs = self.collection(n)
        counts = []  # the process's counters: what each open added
        for k in range(2):
            r = dsview.Reader(ini, index_cache=self.idx)
            try:
                v = r.view("v")
                st = r.stats()
                counts.append((st["source_header_opens"], st["index_hits"]))
                np.testing.assert_array_equal(np.asarray(v), refs["v"])
            finally:
                r.close()
        self.assertGreaterEqual(counts[0][0], n)
        self.assertEqual(counts[1][0] - counts[0][0], 0)  # the second read no header
        self.assertEqual(counts[1][1] - counts[0][1], n)
        self.assertEqual(len(self.index_files()), 1)

    def test_source_changed_after_a_mount_from_the_index_fails_alone(self):
        n = 12
        d = self.p("pages")
        os.makedirs(d)
        # a row a page: the kernel reads whole pages, so no page holds two sources
        arrays = [np.full((1 + i % 3, 1024), i + 0.5, np.float32) for i in range(n)]
        for i, a in enumerate(arrays):
            np.save(os.path.join(d, f"p{i:02d}.npy"), a)
        starts = np.cumsum([0] + [len(a) for a in arrays])
        ini = self.write_ini(f"[v]\nsource = {d}/p*.npy\n")
        with self.mount(ini, "--index-cache", self.idx):
            pass
        with self.mount(ini, "--index-cache", self.idx,
                        expect_errors=[r"p05\.npy: cannot open it again to read: changed",
                                       r"view v: source \S+/p05\.npy chunk 0"]) as m:
            self.assertEqual(m.stats()["source_header_opens"], 0)
            self.assertEqual(m.stats()["source_fds"], 0)
            # rewritten in place, same size, before its file was ever opened
            time.sleep(0.01)
            with open(os.path.join(d, "p05.npy"), "r+b") as f:
                f.seek(-4, os.SEEK_END)
                f.write(b"\0\0\0\0")
            row = 1024 * 4
            fd = os.open(m.path("v.dat"), os.O_RDONLY)
            try:
                with self.assertRaises(OSError) as e:
                    os.pread(fd, row, int(starts[5]) * row)
                self.assertEqual(e.exception.errno, errno.EIO)
                for i in range(n):
                    if i != 5:
                        got = os.pread(fd, len(arrays[i]) * row, int(starts[i]) * row)
                        self.assertEqual(got, arrays[i].tobytes(), f"source {i}")
            finally:
                os.close(fd)
            self.assertGreaterEqual(m.stats()["source_replaced"], 1)


EDF_WRITER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "edf_writer.py")
RECORDINGS = ("hbn_like.bdf", "hbn_full.bdf", "hbn_b.bdf", "clinic.edf", "plain.edf",
              "plain24.bdf")


class IndexCacheRecordings(E2E):
    """EDF/BDF recordings written by pyedflib (edf_writer.py) in the index
    cache: a zero-config directory of them, one view each, remounted."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        with open(EDF_WRITER) as f:
            venv_python(f.read(), cls.tmp)

    def setUp(self):
        super().setUp()
        self.tmp = tempfile.mkdtemp(dir=type(self).tmp)
        self.idx = os.path.join(self.tmp, "idx")
        self.dir = os.path.join(self.tmp, "eeg")
        os.makedirs(self.dir)
        for name in RECORDINGS:
            shutil.copy2(os.path.join(type(self).tmp, name), self.dir)

    def ref(self, name):
        """The (1, C, T) channels served (those at the most common rate,
        the first on a tie) as pyedflib's readSignal() reads them, rounded
        once to float32."""
        z = np.load(os.path.join(type(self).tmp, name.rsplit(".", 1)[0] + ".ref.npz"))
        rates = list(z["rates"])
        rate = max(rates, key=lambda r: (rates.count(r), -rates.index(r)))
        chans = [i for i in range(len(rates)) if rates[i] == rate]
        return np.array([z[f"physical{i}"] for i in chans])[None].astype(np.float32)

    def check(self, m):
        """Every view's rows against pyedflib's; the views' .json and the
        mount's /.skipped.json."""
        for name in RECORDINGS:
            stem = name.rsplit(".", 1)[0]
            np.testing.assert_array_equal(mm_npy(m.path(stem + ".npy")), self.ref(name),
                                          err_msg=name)
        return ({n: meta(m, n.rsplit(".", 1)[0]) for n in RECORDINGS},
                json.loads(read_all(m.path(".skipped.json"))))

    def test_second_mount_reads_no_header(self):
        n = len(RECORDINGS)
        with self.mount(self.dir, "--index-cache", self.idx) as m:
            st = m.stats()
            self.assertEqual(st["source_header_opens"], n)
            self.assertEqual(st["index_hits"], 0)
            opened = self.check(m)
        self.assertIn("channels", opened[0]["hbn_full.bdf"]["attrs"])
        with self.mount(self.dir, "--index-cache", self.idx, wrap=LIMITED) as m:
            st = m.stats()
            self.assertEqual(st["source_header_opens"], 0)
            self.assertEqual(st["index_hits"], n)
            self.assertEqual(st["source_fds"], 0)  # no file opened before a read
            self.assertEqual(self.check(m), opened)  # labels, units, rate, skipped signals
        p = os.path.join(self.dir, "clinic.edf")
        s = os.stat(p)
        os.utime(p, ns=(s.st_atime_ns, s.st_mtime_ns + 1000))
        with self.mount(self.dir, "--index-cache", self.idx) as m:
            st = m.stats()
            self.assertEqual(st["source_header_opens"], 1)
            self.assertEqual(st["index_stale"], 1)
            self.assertEqual(st["index_hits"], n - 1)
            self.assertEqual(self.check(m), opened)

    def test_damaged_entry_opened_and_made_again(self):
        """Entries whose file checks out (CRC made again) but whose values
        no header could hold: those recordings alone are opened, their
        entries replaced."""
        n = len(RECORDINGS)
        with self.mount(self.dir, "--index-cache", self.idx) as m:
            opened = self.check(m)
        [f] = sorted(glob.glob(os.path.join(self.idx, "index-*.dsvidx")))
        with open(f, "rb") as fh:
            data = bytearray(fh.read())
        entries = {os.path.basename(bytes(k).split(b"\0")[0]).decode(): at
                   for k, at, _ in index_entries(data)}
        # signal 0's digital maximum at its minimum; 5000 signals; 999 records
        at = entries["hbn_like.bdf"]
        data[at + 113:at + 121] = data[at + 105:at + 113]
        struct.pack_into("<Q", data, entries["plain.edf"] + 40, 5000)
        struct.pack_into("<Q", data, entries["plain24.bdf"] + 24, 999)
        write_sealed(f, data)
        with self.mount(self.dir, "--index-cache", self.idx) as m:
            self.assertEqual(index_lines(m.stderr), [])  # the file itself is sound
            st = m.stats()
            self.assertEqual(st["source_header_opens"], 3)
            self.assertEqual((st["index_hits"], st["index_stale"]), (n - 3, 3))
            self.assertEqual(self.check(m), opened)
        with self.mount(self.dir, "--index-cache", self.idx) as m:
            st = m.stats()
            self.assertEqual(st["source_header_opens"], 0)
            self.assertEqual(st["index_hits"], n)
            self.assertEqual(self.check(m), opened)


class IndexCacheTokens(E2E):
    """Token files in the index cache, written after their trainers' own
    writers (token_writers.py): llm.c shards (GPT-2 and Llama 3) and
    Megatron .idx + .bin pairs, each a view of its streams."""

    def setUp(self):
        super().setUp()
        self.tmp = tempfile.mkdtemp(dir=type(self).tmp)
        self.idx = os.path.join(self.tmp, "idx")
        self.d = os.path.join(self.tmp, "tok")
        os.makedirs(self.d)
        rng = np.random.default_rng(11)
        self.shards, self.megs = [], []
        for i in range(24):
            model = "llama-3" if i % 5 == 4 else "gpt-2"
            top = 128256 if model == "llama-3" else 50257
            toks = rng.integers(0, top, 100 + 37 * i)
            tw.llmc(os.path.join(self.d, f"shard_{i:03d}.bin"), toks, model)
            self.shards.append(toks)
        for i in range(8):
            docs = [rng.integers(0, 65000, rng.integers(1, 300)) for _ in range(5 + i)]
            dtype = np.int32 if i % 3 == 2 else np.uint16
            tw.megatron(os.path.join(self.d, f"meg{i}"), docs, dtype=dtype)
            self.megs.append(np.concatenate(docs))
        self.ini = self.write_ini(f"[t]\nsource = {self.d}/shard_*.bin\n"
                                  f"[m]\nsource = {self.d}/meg*.idx\n")

    def opens_of(self, name):
        """The header opens a mount of the file name alone (no index) costs."""
        ini = self.write_ini(f"[x]\nsource = {os.path.join(self.d, name)}\n", "one.ini")
        with self.mount(ini) as m:
            return m.stats()["source_header_opens"]

    def check(self, m):
        np.testing.assert_array_equal(mm_npy(m.path("t.npy")),
                                      np.concatenate(self.shards).astype(np.int64))
        np.testing.assert_array_equal(mm_npy(m.path("m.npy")),
                                      np.concatenate(self.megs).astype(np.int64))
        return meta(m, "t"), meta(m, "m")

    def test_second_mount_reads_no_header(self):
        n = len(self.shards) + len(self.megs)
        with self.mount(self.ini, "--index-cache", self.idx) as m:
            st = m.stats()
            self.assertEqual(st["index_hits"], 0)
            cold = st["source_header_opens"]
            opened = self.check(m)
        per_shard, per_meg = self.opens_of("shard_000.bin"), self.opens_of("meg0.idx")
        self.assertGreaterEqual(per_meg, 2)  # its .idx and its .bin
        self.assertEqual(cold, per_shard * len(self.shards) + per_meg * len(self.megs))
        with self.mount(self.ini, "--index-cache", self.idx, wrap=LIMITED) as m:
            st = m.stats()
            self.assertEqual(st["source_header_opens"], 0)
            self.assertEqual(st["index_hits"], n)
            self.assertEqual(st["source_fds"], 0)  # no file opened before a read
            self.assertEqual(self.check(m), opened)
        # a shard touched, a Megatron .idx touched, another's .bin touched:
        # those three are opened, the rest served from their entries
        for name in ("shard_005.bin", "meg1.idx", "meg6.bin"):
            p = os.path.join(self.d, name)
            s = os.stat(p)
            os.utime(p, ns=(s.st_atime_ns, s.st_mtime_ns + 1000))
        with self.mount(self.ini, "--index-cache", self.idx) as m:
            st = m.stats()
            self.assertEqual(st["source_header_opens"], per_shard + 2 * per_meg)
            # meg6's .idx entry is found and then refused on load (its .bin changed)
            self.assertEqual((st["index_stale"], st["index_hits"]), (3, n - 3))
            self.assertEqual(self.check(m), opened)
        with self.mount(self.ini, "--index-cache", self.idx) as m:
            self.assertEqual(m.stats()["source_header_opens"], 0)
            self.assertEqual(self.check(m), opened)

    def test_damaged_entry_opened_and_made_again(self):
        with self.mount(self.ini, "--index-cache", self.idx) as m:
            opened = self.check(m)
        per_shard, per_meg = self.opens_of("shard_000.bin"), self.opens_of("meg0.idx")
        [f] = sorted(glob.glob(os.path.join(self.idx, "index-*.dsvidx")))
        with open(f, "rb") as fh:
            data = bytearray(fh.read())
        entries = {os.path.basename(bytes(k).split(b"\0")[0]).decode(): at
                   for k, at, _ in index_entries(data)}
        # a token count off by one; an offset past the header; dtype float64
        at = entries["shard_002.bin"]
        struct.pack_into("<Q", data, at + 16, struct.unpack_from("<Q", data, at + 16)[0] + 1)
        struct.pack_into("<Q", data, entries["shard_003.bin"] + 8, 1026)
        struct.pack_into("<Q", data, entries["meg3.idx"], 10)
        write_sealed(f, data)
        with self.mount(self.ini, "--index-cache", self.idx) as m:
            self.assertEqual(index_lines(m.stderr), [])  # the file itself is sound
            self.assertEqual(m.stats()["source_header_opens"], 2 * per_shard + per_meg)
            self.assertEqual(self.check(m), opened)
        with self.mount(self.ini, "--index-cache", self.idx) as m:
            self.assertEqual(m.stats()["source_header_opens"], 0)
            self.assertEqual(self.check(m), opened)
