"""Bad input and faults: every manifest error, hostile .npy headers,
read-only semantics, corrupt chunks, truncated sources, injected I/O errors
(signals and umount are in test_lifecycle.py). Each checks the clear error
and that nothing else broke."""
import errno
import glob
import os
import shutil
import signal
import subprocess
import time
import zlib

import h5py
import hdf5plugin
import numpy as np

from common import E2E, mm_npy, mounted, read_all, run, same_bits
from refs import reference


def write_npy_raw(path, header, data=b""):
    """An .npy with an arbitrary (hostile) header dict."""
    h = header.encode()
    pad = (64 - (10 + len(h) + 1) % 64) % 64
    body = h + b" " * pad + b"\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + len(body).to_bytes(2, "little") + body + data)


class BadInput(E2E):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        np.save(os.path.join(cls.tmp, "a.npy"), np.zeros((10, 4, 3), np.uint8))
        np.save(os.path.join(cls.tmp, "b.npy"), np.zeros((10, 5, 3), np.uint8))
        np.save(os.path.join(cls.tmp, "c.npy"), np.zeros((10, 4, 3), np.int16))
        with open(os.path.join(cls.tmp, "odd.bin"), "wb") as f:
            f.write(b"\0" * 1001)

    def refused(self, source, *opts, want):
        mp = self.p("mnt-bad")
        r = run("mount", *opts, source, mp)
        self.assertEqual(r.returncode, 1, r.stderr)
        lines = r.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, r.stderr)
        self.assertTrue(lines[0].startswith("dsview: "), lines[0])
        self.assertIn(want, lines[0])
        self.assertFalse(mounted(mp), "something was mounted")
        return lines[0]

    def test_manifest_errors_name_line_and_reason(self):
        cases = [
            ("[v]\nsource = a.npy\ncolour = red\n", 3, "unknown key 'colour'"),
            ("[a/b]\nsource = a.npy\n", 1, "invalid view name"),
            ("[..]\nsource = a.npy\n", 1, "invalid view name"),
            ("[v]\nsource = a.npy\nsource = missing.npy\n", 3, "missing.npy"),
            ("[v]\nsource = a.npy\nsource = b.npy\n", 3, "does not match"),
            ("[v]\nsource = a.npy\nsource = c.npy\nwindow = 9\n", 4, "longer than axis 2"),
            ("[v]\nsource = a.npy\nmean = 1 2\nstd = 1 1\n", 3, "mean/std have 2 values"),
            ("[v]\nsource = a.npy\nmean = 1 2 3\nstd = 1 0 1\n", 4, "std contains 0"),
            ("[v]\nsource = odd.bin\nsource_dtype = uint16\nsource_shape = -1 10\n", 2,
             "whole number of rows"),
            ("[v]\nsource = odd.bin\nsource_dtype = uint8\n", 3, "together"),
        ]
        for text, line, want in cases:
            with self.subTest(want=want):
                ini = self.write_ini(text, "bad.ini")
                msg = self.refused(ini, want=want)
                self.assertIn(f"{ini}:{line}: ", msg)

    def test_cli_errors(self):
        self.refused(self.p("nope.ini"), want="nope.ini")
        self.refused(self.p("a.npy"), "--cache-size", "lots", want="--cache-size")
        self.refused(self.p("a.npy"), "--dtype", "int3", want="--dtype")
        self.refused(self.p("a.npy"), "--dtype", "int8", want="--dtype int8: uint8 values may not fit")
        self.refused(self.p("a.npy"), "--readahead", "fast", want="--readahead")
        self.refused(self.p("a.npy"), "--readahead", "1G", want="--readahead")
        r = run("frobnicate")
        self.assertEqual(r.returncode, 1)
        self.assertEqual(run("--version").returncode, 0)
        self.assertIn("usage", run("mount", "--help").stdout)
        for cmd in ("mount", "umount", "pack", "info", "verify"):
            text = run(cmd, "--help").stdout
            self.assertIn("usage", text, cmd)
            self.assertNotIn("%%", text, cmd)  # help is printed as is, not through printf

    def test_hostile_npy_headers(self):
        cases = [
            ("{'descr': '<f4', 'fortran_order': False, 'shape': (1000000000000000000000000000000,), }",
             "too large"),
            ("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", "overflow"),
            ("{'descr': '<f4', 'fortran_order': False, 'shape': (1000, 1000), }", "declares"),
            ("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", "Fortran"),
            ("{'descr': '>f4', 'fortran_order': False, 'shape': (2, 2), }", "big-endian"),
            ("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2)", "malformed"),
            ("\x00\x01garbage", "malformed"),
        ]
        for header, want in cases:
            with self.subTest(want=want):
                write_npy_raw(self.p("evil.npy"), header, b"\0" * 16)
                self.refused(self.p("evil.npy"), want=want)

    def test_h5_that_crashes_the_hdf5_library(self):
        # found by make fuzz: HDF5 1.10's H5Lvisit copies through a NULL it
        # got for a size read from this file; dsview probes in a child
        crash = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fuzz", "corpus",
                             "h5", "crash-h5lvisit-null-copy")
        with open(crash, "rb") as f, open(self.p("damaged.h5"), "wb") as g:
            g.write(f.read())
        self.refused(self.p("damaged.h5"), want="damaged HDF5 file")
        for cmd in ("info", "verify"):
            r = run(cmd, self.p("damaged.h5"))
            self.assertEqual(r.returncode, 1, f"{cmd}: {r.returncode} {r.stderr!r}")
            self.assertIn("damaged HDF5 file", r.stderr)

    def test_h5_external_link_refused(self):
        with h5py.File(self.p("target.h5"), "w") as f:
            f.create_dataset("x", data=np.zeros((4, 4), np.uint8))
        with h5py.File(self.p("linker.h5"), "w") as f:
            f["x"] = h5py.ExternalLink(self.p("target.h5"), "/x")
        self.refused(self.write_ini("[v]\nsource = linker.h5:/x\n", "ext.ini"), want="external")


class ReadOnly(E2E):
    def test_every_write_is_erofs(self):
        np.save(self.p("r.npy"), np.arange(100, dtype=np.uint8).reshape(10, 10))
        with self.mount(self.p("r.npy")) as m:
            f = m.path("r.dat")
            attempts = [
                lambda: os.open(f, os.O_WRONLY),
                lambda: os.open(f, os.O_RDWR),
                lambda: os.open(f, os.O_RDONLY | os.O_TRUNC),
                lambda: os.open(m.path("new.dat"), os.O_CREAT | os.O_WRONLY, 0o644),
                lambda: os.unlink(f),
                lambda: os.rename(f, m.path("moved.dat")),
                lambda: os.mkdir(m.path("d")),
                lambda: os.chmod(f, 0o666),
                lambda: os.truncate(f, 0),
                lambda: os.setxattr(f, "user.x", b"1"),
                lambda: os.symlink("r.dat", m.path("ln")),
                lambda: np.memmap(f, np.float32, "r+"),
            ]
            for k, act in enumerate(attempts):
                with self.subTest(k=k):
                    with self.assertRaises(OSError) as cm:
                        act()
                    self.assertEqual(cm.exception.errno, errno.EROFS, cm.exception)
            self.assertTrue(same_bits(mm_npy(m.path("r.npy")), np.arange(100, dtype=np.float32).reshape(10, 10)))


class Faults(E2E):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        rng = np.random.default_rng(6)
        cls.x = rng.integers(0, 256, (120, 16, 16, 3), dtype=np.uint8)
        cls.ref = reference(cls.x)

    def rows_readable(self, path, rows, row_bytes, bad_bytes=None):
        """Reads each row with pread; returns the set of rows that gave EIO.
        Rows sharing a page with bad_bytes=(start, end) may also come back
        short (the page cache fails whole pages): then the bytes that did
        come must be right and end at a page boundary."""
        bad = set()
        fd = os.open(path, os.O_RDONLY)
        try:
            for r in rows:
                want = self.ref[r].tobytes()
                try:
                    got = os.pread(fd, row_bytes, r * row_bytes)
                except OSError as e:
                    self.assertEqual(e.errno, errno.EIO)
                    bad.add(r)
                    continue
                if len(got) < len(want) and bad_bytes:
                    end = r * row_bytes + len(got)
                    self.assertEqual(end % 4096, 0, f"row {r}: short read not at a page boundary")
                    self.assertGreaterEqual(end, bad_bytes[0] // 4096 * 4096)
                    bad.add(r)
                    want = want[:len(got)]
                self.assertEqual(got, want, f"row {r} has wrong bytes")
        finally:
            os.close(fd)
        return bad

    def corrupt_chunk(self, path, index, kw, where):
        """Flips one byte of chunk `index` at `where` (an offset in the
        chunk, or None for its middle)."""
        with h5py.File(path, "w") as f:
            f.create_dataset("x", data=self.x, chunks=(10, 16, 16, 3), **kw)
        with h5py.File(path, "r") as f:
            info = f["x"].id.get_chunk_info(index)
        pos = info.byte_offset + (info.size // 2 if where is None else where)
        with open(path, "r+b") as f:
            f.seek(pos)
            b = f.read(1)
            f.seek(pos)
            f.write(bytes([b[0] ^ 0x5A]))

    def check_one_bad_chunk(self, name, kw, reason, where=None):
        path = self.p(name + ".h5")
        self.corrupt_chunk(path, 3, kw, where)  # rows 30..39
        ini = self.write_ini(f"[{name}]\nsource = {name}.h5:/x\n", name + ".ini")
        row_bytes = self.ref[0].nbytes
        span = (30 * row_bytes, 40 * row_bytes)
        with self.mount(ini, "--cache-size", "0", expect_errors=[r"chunk 3 .*" + reason]) as m:
            bad = self.rows_readable(m.path(name + ".dat"), range(120), row_bytes, span)
            # exactly the chunk's rows, plus rows sharing a page with it
            edge = {r for r in (29, 40) if (r * row_bytes) // 4096 * 4096 < span[1] and
                    ((r + 1) * row_bytes + 4095) // 4096 * 4096 > span[0]}
            self.assertTrue(set(range(30, 40)) <= bad <= set(range(30, 40)) | edge, bad)
            again = self.rows_readable(m.path(name + ".dat"), [35, 0, 119], row_bytes, span)
            self.assertEqual(again, {35})  # still EIO: failures are never cached as data
            errs = [l for l in m.log_lines() if " error: " in l]
            self.assertTrue(errs and all(f"{name}.h5:/x chunk 3 (rows 30-39," in l for l in errs), errs)
            self.assertTrue(os.path.exists(f"/proc/{m.pid}"))
            self.assertGreater(m.stats()["errors"], 0)
        # verify names the same rows the log does, in the same convention
        r = run("verify", path)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn(f"{name}.h5:/x: chunk 3, rows 30-39 ", r.stdout + r.stderr)

    def test_corrupt_lz4_chunk(self):
        # LZ4 has no checksum of its own: break the frame (block size field)
        self.check_one_bad_chunk("lz4", dict(**hdf5plugin.LZ4()), "corrupt chunk", where=13)

    def test_fletcher32_mismatch(self):
        self.check_one_bad_chunk("fl", dict(fletcher32=True), "checksum mismatch")

    def test_gzip_chunk_that_inflates_short(self):
        # a valid gzip stream of half a chunk (found by make fuzz): HDF5
        # 1.10 copied the whole chunk out of the short buffer, so the mount
        # served heap bytes and verify said OK. Now: EIO, and verify fails.
        # Big-endian data, so that the library decodes it (dsview inflates
        # little-endian gzip itself: test_h5gzip.py).
        # The library decodes 1 MiB of source per dsview chunk (64 Ki rows
        # here, 128 of the file's chunks); when that fails, a read retries
        # just its own rows, so only the bad file chunk's pages fail.
        x = (np.arange(196608 * 8) % 30011).astype(np.int16).reshape(196608, 8)
        bad = 100352  # chunk 196 of 512 rows, in the second 1 MiB
        short = zlib.compress(np.full(256 * 8, 7, np.int16).tobytes())
        for kw in (dict(compression="gzip"), dict(compression="gzip", shuffle=True)):
            with self.subTest(**kw):
                path = self.p("short.h5")
                with h5py.File(path, "w") as f:
                    d = f.create_dataset("x", data=x.astype(">i2"), chunks=(512, 8), **kw)
                    d.id.write_direct_chunk((bad, 0), short)
                r = run("verify", path)
                self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
                self.assertIn("1 bad chunk", r.stdout + r.stderr)
                # narrowed to the file's own chunk: the rows a mount fails
                self.assertIn(f"rows {bad}-{bad + 511} (through the HDF5 library)", r.stdout)
                self.assertNotIn("HDF5-DIAG", r.stderr)
                with self.mount(path, "--cache-size", "0",
                                expect_errors=[r"short.h5:/x chunk 1 .*I/O error"]) as m:
                    fd = os.open(m.path("x.dat"), os.O_RDONLY)
                    try:
                        with self.assertRaises(OSError) as cm:
                            os.pread(fd, 4 * 32, bad * 32)
                        self.assertEqual(cm.exception.errno, errno.EIO)
                        ref = x.astype(np.float32)
                        for r0 in (0, 65000, 131072, 196600,  # the other 1 MiB pieces
                                   65536, bad - 8, bad + 512, 131064):  # the bad one's good rows
                            got = os.pread(fd, 8 * 32, r0 * 32)
                            self.assertEqual(got, ref[r0:r0 + 8].tobytes(), f"rows {r0}-{r0 + 7}")
                        # row by row across the bad chunk and its neighbours:
                        # EIO for exactly its 512 rows (whole pages: 16 KiB)
                        failed = []
                        for r in range(bad - 1024, bad + 1536, 8):
                            try:
                                got = os.pread(fd, 8 * 32, r * 32)
                                self.assertEqual(got, ref[r:r + 8].tobytes(), f"rows {r}-{r + 7}")
                            except OSError as e:
                                self.assertEqual(e.errno, errno.EIO)
                                failed.append(r)
                        self.assertEqual(failed, list(range(bad, bad + 512, 8)))
                    finally:
                        os.close(fd)
                    # the log names the rows verify names: the file's chunk
                    errs = [l for l in m.log_lines() if " error: " in l]
                    self.assertTrue(errs and all(f"chunk 1 (rows {bad}-{bad + 511}," in l
                                                 for l in errs), errs)

    def test_library_copied_chunk_of_the_wrong_size(self):
        # A chunk no decoder runs on (no filter, shuffle alone, or every
        # filter skipped by its mask) that is stored in fewer bytes than a
        # chunk: HDF5 1.10 copied a whole chunk out of the short buffer
        # (found by make fuzz as a damaged chunk index); likewise short
        # scaleoffset input, and szip output. Now: EIO for its rows, the
        # rest reads right, verify names the rows.
        # 600 rows of 32 float bytes; the bad chunks hold rows 150-299,
        # pages away from rows 0-2
        x = (np.arange(600 * 8) * 7 % 1000).astype(np.int16).reshape(600, 8)
        ref = x.astype(np.float32)
        path = self.p("wrongsize.h5")
        with h5py.File(path, "w") as f:
            f.create_dataset("plain", data=x, chunks=(150, 4)).id.write_direct_chunk(
                (150, 0), b"12345678")
            f.create_dataset("shuf", data=x, chunks=(150, 4), shuffle=True).id.write_direct_chunk(
                (150, 4), b"1234567")
            # (big-endian: the library's to read; on the fast path a chunk
            # of the wrong size refuses the dataset at open)
            f.create_dataset("gzmask", data=x.astype(">i2"), chunks=(150, 8),
                             compression="gzip").id.write_direct_chunk((150, 0), b"abcdefgh",
                                                                       filter_mask=1)
            f.create_dataset("fine", data=x, chunks=(150, 4), compression="gzip", shuffle=True)
            # scaleoffset reads as many bits as the chunk's header says
            d = f.create_dataset("so", data=x, chunks=(150, 8), scaleoffset=0)
            d.id.write_direct_chunk((150, 0), d.id.read_direct_chunk((0, 0))[1][:30])
            # szip takes its output size from the chunk: a valid stream of
            # half a chunk was copied out as a whole one
            sz = dict(compression="szip", compression_opts=("nn", 8))
            half = f.create_dataset("half", data=x[:150], chunks=(75, 8), **sz)
            f.create_dataset("szip", data=x, chunks=(150, 8), **sz).id.write_direct_chunk(
                (150, 0), half.id.read_direct_chunk((0, 0))[1])
        bad = ("plain", "shuf", "gzmask", "so", "szip")
        r = run("verify", path)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        for name in bad:
            why = ("the HDF5 library could not read or decode it" if name == "szip" else
                   "a chunk of the file has the wrong stored size")
            self.assertIn(f"wrongsize.h5:/{name}: chunk 0, rows 150-299 (through the HDF5 library): "
                          + why, r.stdout)
        self.assertIn("5 bad chunks", r.stdout)
        with self.mount(path, "--cache-size", "0",
                        expect_errors=[r"wrongsize.h5:/(plain|shuf|gzmask|so|szip) chunk 0 "]) as m:
            self.assertEqual(read_all(m.path("fine.dat")), ref.tobytes())
            for name in bad:
                with self.subTest(name=name):
                    fd = os.open(m.path(name + ".dat"), os.O_RDONLY)
                    try:
                        self.assertEqual(os.pread(fd, 3 * 32, 0), ref[:3].tobytes())
                        self.assertEqual(os.pread(fd, 32, 599 * 32), ref[599].tobytes())
                        with self.assertRaises(OSError) as cm:
                            os.pread(fd, 32, 200 * 32)
                        self.assertEqual(cm.exception.errno, errno.EIO)
                    finally:
                        os.close(fd)

    def test_source_truncated_after_mount(self):
        # 3000 rows of 768 B uint8 (3 KB float32 rows): far more than the
        # kernel reads ahead from the first rows
        rng = np.random.default_rng(8)
        x = rng.integers(0, 256, (3000, 16, 16, 3), dtype=np.uint8)
        np.save(self.p("t.npy"), x)
        row_bytes = x[0].nbytes * 4
        with self.mount(self.p("t.npy"), "--cache-size", "0",
                        expect_errors=[r"data past end of file"]) as m:
            fd = os.open(m.path("t.dat"), os.O_RDONLY)
            try:
                self.assertEqual(os.pread(fd, row_bytes, 0), reference(x[:1]).tobytes())
                os.truncate(self.p("t.npy"), 128 + 1000 * x[0].nbytes)  # 1000 rows left
                for r in (2999, 2500, 1500):
                    with self.assertRaises(OSError) as cm:
                        os.pread(fd, row_bytes, r * row_bytes)
                    self.assertEqual(cm.exception.errno, errno.EIO, f"row {r}")
            finally:
                os.close(fd)

    def test_source_replaced_by_rename_serves_the_old_bytes(self):
        # the mount holds its sources open: a file renamed over one is a new
        # inode, and every read keeps giving the bytes of the old one,
        # whether it was cached, pushed ahead, or never read before
        rng = np.random.default_rng(9)
        x = rng.integers(0, 256, (3000, 16, 16, 3), dtype=np.uint8)
        y = 255 - x
        ref = reference(x)
        np.save(self.p("old.npy"), x)
        self.assertEqual(run("pack", "--chunk-size", "64K", "--dataset", "d", self.p("old.npy"),
                             self.p("old.h5")).returncode, 0)
        ini = self.write_ini("[n]\nsource = n.npy\n[h]\nsource = h.h5:/d\n", "ren.ini")
        for opts in ((), ("--cache-size", "0")):
            with self.subTest(opts=opts):
                shutil.copy(self.p("old.npy"), self.p("n.npy"))
                shutil.copy(self.p("old.h5"), self.p("h.h5"))
                with self.mount(ini, *opts) as m:
                    for v in ("n", "h"):
                        with open(m.path(v + ".dat"), "rb") as f:
                            self.assertEqual(f.read(ref[:100].nbytes), ref[:100].tobytes())
                    # new content, renamed over both sources
                    np.save(self.p("new.npy"), y)
                    self.assertEqual(run("pack", "--chunk-size", "64K", "--dataset", "d",
                                         self.p("new.npy"), self.p("new.h5")).returncode, 0)
                    os.rename(self.p("new.npy"), self.p("n.npy"))
                    os.rename(self.p("new.h5"), self.p("h.h5"))
                    for v in ("n", "h"):
                        got = np.fromfile(m.path(v + ".dat"), np.float32).reshape(ref.shape)
                        self.assertBits(got, ref, f"{v}.dat after rename")
                        self.assertBits(mm_npy(m.path(v + ".npy")), ref, f"{v}.npy after rename")
                # a fresh mount sees the new files
                with self.mount(ini, *opts) as m:
                    got = np.fromfile(m.path("h.dat"), np.float32).reshape(ref.shape)
                    self.assertBits(got, reference(y), "h.dat in a new mount")


def traced_by(pid):
    """The set of TracerPid values over pid's threads."""
    out = set()
    for st in glob.glob(f"/proc/{pid}/task/*/status"):
        try:
            with open(st) as f:
                out |= {int(l.split()[1]) for l in f if l.startswith("TracerPid:")}
        except OSError:
            pass
    return out


class Injected(E2E):
    """Backing-file read errors, injected with strace into the live daemon
    (only preads of the source file fail): the read gets EIO, a memmap
    reader SIGBUS, and the same read succeeds once the fault clears."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        rng = np.random.default_rng(10)
        cls.x = rng.integers(0, 256, (4000, 16, 16, 3), dtype=np.uint8)
        cls.ref = reference(cls.x, 0.5, -3)
        np.save(os.path.join(cls.tmp, "e.npy"), cls.x)
        r = run("pack", "--chunk-size", "64K", os.path.join(cls.tmp, "e.npy"),
                os.path.join(cls.tmp, "e.h5"))
        assert r.returncode == 0, r.stderr
        with open(os.path.join(cls.tmp, "e.ini"), "w") as f:
            f.write("[npy]\nsource = e.npy\nscale = 0.5\noffset = -3\n"
                    "[lz4]\nsource = e.h5:/e\nscale = 0.5\noffset = -3\n")

    def inject(self, pid, path):
        """Starts strace failing every pread64 of path in pid's threads;
        returns once all of them are traced."""
        st = subprocess.Popen(["strace", "-f", "-qq", "-p", str(pid), "-P", path,
                               "-e", "trace=pread64", "-e", "inject=pread64:error=EIO",
                               "-o", self.p("strace.log")],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.time() + 20
        while time.time() < deadline:
            if st.poll() is not None:
                self.fail("strace exited: " + st.stderr.read().decode())
            if traced_by(pid) == {st.pid}:
                return st
            time.sleep(0.05)
        st.kill()
        self.fail("strace did not attach to every thread")

    def clear(self, pid, st):
        st.send_signal(signal.SIGINT)  # strace detaches
        st.wait(timeout=20)
        deadline = time.time() + 20
        while traced_by(pid) != {0} and time.time() < deadline:
            time.sleep(0.05)
        self.assertEqual(traced_by(pid), {0}, "strace did not detach")

    def memmap_touch(self, path, off):
        """Touches one float of a fresh memmap in a child; returns how it
        ended: 'ok' with the value right, else the signal name."""
        pid = os.fork()
        if pid == 0:
            code = 3
            try:
                a = np.memmap(path, np.float32, "r")
                code = 0 if a[off // 4] == self.ref.reshape(-1)[off // 4] else 2
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        if os.WIFSIGNALED(status):
            return signal.Signals(os.WTERMSIG(status)).name
        return {0: "ok", 2: "wrong value"}.get(os.WEXITSTATUS(status), f"exit {os.WEXITSTATUS(status)}")

    def check_view(self, view, src, cache_opts):
        row = self.ref[0].nbytes
        flat = self.ref.tobytes()
        with self.mount(self.p("e.ini"), *cache_opts, expect_errors=[r"I/O error"]) as m:
            dat = m.path(view + ".dat")
            st = self.inject(m.pid, self.p(src))
            try:
                fd = os.open(dat, os.O_RDONLY)
                try:
                    for r in (1000, 2500, 3999):
                        with self.assertRaises(OSError, msg=f"row {r} read despite the fault") as cm:
                            os.pread(fd, row, r * row)
                        self.assertEqual(cm.exception.errno, errno.EIO)
                finally:
                    os.close(fd)
                # a memmap reader of a failed page gets SIGBUS (docs/reliability.md)
                self.assertEqual(self.memmap_touch(dat, 3000 * row + 8), "SIGBUS")
                # strace saw the failed preads (the injection did the work)
                with open(self.p("strace.log")) as f:
                    self.assertIn("INJECTED", f.read())
            finally:
                self.clear(m.pid, st)
            # the fault is gone: the very same reads succeed, right
            fd = os.open(dat, os.O_RDONLY)
            try:
                for r in (1000, 2500, 3999):
                    self.assertEqual(os.pread(fd, row, r * row), flat[r * row:(r + 1) * row], f"row {r}")
            finally:
                os.close(fd)
            self.assertEqual(self.memmap_touch(dat, 3000 * row + 8), "ok")
            got = np.fromfile(dat, np.float32).reshape(self.ref.shape)
            self.assertBits(got, self.ref, view + " after the fault cleared")
            self.assertGreater(m.stats()["errors"], 0)

    def test_eio_plain_source(self):
        self.check_view("npy", "e.npy", ())

    def test_eio_lz4_store_with_cache(self):
        # a failed decode is never cached: the retry decodes again
        self.check_view("lz4", "e.h5", ())

    def test_eio_lz4_store_without_cache(self):
        self.check_view("lz4", "e.h5", ("--cache-size", "0"))
