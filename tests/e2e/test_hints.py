"""Sampler hints (docs/performance.md, "Sampler hints"): rows hinted through the ioctl
(as the dsview Python package sends it) are stored in the page cache before the
reader asks, so reading them makes no request; bad hints are refused
whole with EINVAL (ENOTTY off the data files) and change nothing; the
queue is bounded; the bytes read are the view's either way."""
import errno
import fcntl
import json
import os
import struct
import sys
import time

import numpy as np

from common import E2E, PYTHON_DIR, run
from pagecache import resident_pages
from refs import reference

sys.path.insert(0, PYTHON_DIR)
from dsview import _hints as ps  # noqa: E402


def raw_hint(fd, rows):
    """The ioctl as is, with none of dsview.hint's checks: the daemon's own
    refusals are what these tests see."""
    ps._send(fd, np.asarray(rows, dtype="<i8").ravel(), "hint")


class Hints(E2E):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.x = np.random.default_rng(1500).integers(0, 256, (3000, 32, 32, 3), dtype=np.uint8)
        np.save(os.path.join(cls.tmp, "x.npy"), cls.x)
        cls.ref = reference(cls.x, scale=1 / 255, mean=[0.5, 0.4, 0.3], std=[0.2, 0.2, 0.25])
        cls.ini = os.path.join(cls.tmp, "h.ini")
        with open(cls.ini, "w") as f:
            f.write("[v]\nsource = x.npy\nscale = 0.00392156862745098\n"
                    "mean = 0.5 0.4 0.3\nstd = 0.2 0.2 0.25\n")

    def wait_idle(self, m, queued):
        """Until every queued hint was stored, dropped or failed (60 s at
        most: 40,000 hints on a loaded 2-core machine took over 10)."""
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            st = m.stats()
            if st["hints_queued"] == queued and \
                    st["hints_stored"] + st["hints_dropped"] + st["hints_failed"] >= queued:
                return st
            time.sleep(0.02)
        self.fail(f"hints not done: {m.stats()}")

    def hinted_read(self, m, name, rows, queued):
        """Hints rows of the file name, waits for them to be stored, reads
        them through a memmap; the read requests that read made."""
        if name == "v.npy":  # np.load reads the header itself
            a = np.load(m.path(name), mmap_mode="r")
        else:
            a = np.memmap(m.path(name), np.float32, "r", shape=self.ref.shape)
        fd = os.open(m.path(name), os.O_RDONLY)
        try:
            raw_hint(fd, rows)
        finally:
            os.close(fd)
        st = self.wait_idle(m, queued)
        before = m.stats()["read_requests"]
        got = np.array(a[rows])
        del a
        after = m.stats()["read_requests"]
        np.testing.assert_array_equal(got, self.ref[rows])
        # the requests of the .stats.json read that took `before` only
        return st, after - before

    def test_hinted_rows_make_no_request(self):
        for name in ("v.npy", "v.dat"):
            with self.subTest(file=name), self.mount(self.ini) as m:
                rows = np.sort(np.random.default_rng(1).choice(len(self.x), 256, replace=False))
                st, asked = self.hinted_read(m, name, rows, 256)
                self.check_hinted_bytes(m, st, name, rows)
                if asked > 2:
                    # The kernel may reclaim stored pages before the reader
                    # faults them in: once, under a loaded ThreadSanitizer
                    # run, 11 of them were asked for. Dropped and hinted
                    # again, they must be found.
                    fd = os.open(m.path(name), os.O_RDONLY)
                    try:
                        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                    finally:
                        os.close(fd)
                    self.assertEqual(resident_pages(m.path(name))[0], 0)
                    st, asked = self.hinted_read(m, name, rows, 512)
                self.assertLessEqual(asked, 2, f"hinted rows were asked for: {st}")

    def check_hinted_bytes(self, m, st, name, rows):
        """The hinted rows' pages are counted as hinted bytes, apart from
        the readahead's and from what was served on request, and status
        shows them."""
        row, page = self.ref[0].nbytes, os.sysconf("SC_PAGE_SIZE")
        hdr = os.path.getsize(m.path(name)) - self.ref.nbytes
        want = sum((hdr + (r + 1) * row + page - 1) // page - (hdr + r * row) // page
                   for r in rows) * page
        self.assertEqual((st["hints_stored"], st["hints_failed"]), (len(rows), 0), st)
        # a row's pages, each stored once for it (two rows may share a page)
        self.assertLessEqual(st["bytes_hinted"], want, st)
        self.assertGreaterEqual(st["bytes_hinted"], len(rows) * row, st)
        self.assertEqual(st["bytes_readahead"], 0, st)
        r = run("status", "--json", m.mp)
        self.assertEqual(r.returncode, 0, r.stderr)
        e = json.loads(r.stdout)[0]
        self.assertEqual(e["bytes_hinted"], st["bytes_hinted"])
        self.assertLess(e["bytes_served"], st["bytes_hinted"])
        r = run("status", m.mp)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r"served [0-9.]+ [kMG]?B on request \(\d+ read requests?\); "
                                   r"made ahead 0 B by readahead, [0-9.]+ [kMG]?B for hints\n")

    def test_bad_hints_refused_whole(self):
        with self.mount(self.ini) as m:
            fd = os.open(m.path("v.npy"), os.O_RDONLY)
            try:
                for rows in ([0, len(self.x)], [-1], [5, 2**40]):
                    with self.subTest(rows=rows), self.assertRaises(OSError) as cm:
                        raw_hint(fd, rows)
                    self.assertEqual(cm.exception.errno, errno.EINVAL)
                buf = bytearray(ps._SIZE)
                for n, flags in ((ps.PREFETCH_MAX + 1, 0), (1, 1)):
                    struct.pack_into("<II", buf, 0, n, flags)
                    with self.subTest(n=n, flags=flags), self.assertRaises(OSError) as cm:
                        fcntl.ioctl(fd, ps.DSV_IOC_PREFETCH, buf, True)
                    self.assertEqual(cm.exception.errno, errno.EINVAL)
                with self.assertRaises(OSError) as cm:  # another request on a data file
                    fcntl.ioctl(fd, ps.DSV_IOC_PREFETCH + 1, bytearray(ps._SIZE), True)
                self.assertEqual(cm.exception.errno, errno.ENOTTY)
            finally:
                os.close(fd)
            fd = os.open(m.path("v.json"), os.O_RDONLY)
            try:
                with self.assertRaises(OSError) as cm:
                    raw_hint(fd, [0])
                self.assertEqual(cm.exception.errno, errno.ENOTTY)
            finally:
                os.close(fd)
            st = m.stats()
            self.assertEqual(st["hints_queued"], 0)
            np.testing.assert_array_equal(np.load(m.path("v.npy"), mmap_mode="r")[7], self.ref[7])

    def test_queue_is_bounded_and_bytes_stay_right(self):
        with self.mount(self.ini) as m:
            fd = os.open(m.path("v.npy"), os.O_RDONLY)
            rows = np.random.default_rng(2).integers(0, len(self.x), 40000)
            try:
                raw_hint(fd, rows)  # more than the queue holds, faster than it drains
            finally:
                os.close(fd)
            st = self.wait_idle(m, len(rows))
            self.assertEqual(st["hints_stored"] + st["hints_dropped"], len(rows))
            self.assertEqual(st["hints_failed"], 0)
            self.assertEqual(st["errors"], 0)
            a = np.load(m.path("v.npy"), mmap_mode="r")
            np.testing.assert_array_equal(np.array(a), self.ref)
            del a

    def test_hinting_batch_sampler(self):
        batches = [np.sort(np.random.default_rng(k).choice(len(self.x), 64, replace=False)).tolist()
                   for k in range(6)]
        with self.mount(self.ini) as m:
            hinter = ps.Hinter([m.path("v.npy")])
            a = np.load(m.path("v.npy"), mmap_mode="r")
            seen = []
            for b in ps.hinted(batches, hinter, lookahead=2):
                seen.append(b)
                np.testing.assert_array_equal(np.array(a[b]), self.ref[b])
            del a
            hinter.close()
            self.assertEqual(seen, batches)
            self.wait_idle(m, 6 * 64)
