"""Logs are never lost: with no --log and no /dev/log the daemon
writes a file under /run/dsview named after the mountpoint; --log-level
drops the lower levels; a bad chunk hit again and again is logged once a
minute, with a count."""
import errno
import os
import re

import h5py
import numpy as np

from common import E2E, mounted, run


class DefaultLog(E2E):
    def test_file_under_run_named_after_the_mountpoint(self):
        if os.path.exists("/dev/log"):
            self.skipTest("/dev/log exists: the daemon logs to syslog")
        np.save(self.p("a.npy"), np.zeros((10, 10), np.uint8))
        mp = self.p("mnt-default-log")
        want = "/run/dsview/" + os.path.realpath(mp).strip("/").replace("/", "-") + ".log"
        if os.path.exists(want):
            os.unlink(want)
        r = run("mount", self.p("a.npy"), mp)
        self.assertEqual(r.returncode, 0, r.stderr)
        try:
            with open(want) as f:
                text = f.read()
            self.assertIn("serving 1 view(s)", text)
        finally:
            run("umount", mp)
            if mounted(mp):
                os.system(f"umount -l '{mp}'")
            if os.path.exists(want):
                os.unlink(want)

    def test_log_level(self):
        np.save(self.p("a.npy"), np.zeros((10, 10), np.uint8))
        with self.mount(self.p("a.npy"), "--log-level", "error") as m:
            os.stat(m.path("a.dat"))
        self.assertEqual(m.log_lines(), [])
        with self.mount(self.p("a.npy"), "--log-level", "info") as m:
            pass
        self.assertTrue(any("serving" in l for l in m.log_lines()), m.log_lines())
        self.refused(self.p("a.npy"), "--log-level", "debug",
                     want="--log-level 'debug' must be error, warning or info")


class Repeats(E2E):
    def test_bad_chunk_logged_once_a_minute(self):
        x = np.arange(40 * 64, dtype=np.uint16).reshape(40, 64)
        path = self.p("bad.h5")
        with h5py.File(path, "w") as f:
            f.create_dataset("x", data=x, chunks=(10, 64), fletcher32=True)
        with h5py.File(path, "r") as f:
            off = f["x"].id.get_chunk_info(2).byte_offset  # rows 20-29
        with open(path, "r+b") as f:
            f.seek(off + 5)
            b = f.read(1)
            f.seek(off + 5)
            f.write(bytes([b[0] ^ 0xFF]))
        row = 64 * 4
        with self.mount(path, "--cache-size", "0", expect_errors=[r"chunk 2 "]) as m:
            fd = os.open(m.path("x.dat"), os.O_RDONLY)
            try:
                for _ in range(20):
                    with self.assertRaises(OSError) as cm:
                        os.pread(fd, row, 25 * row)
                    self.assertEqual(cm.exception.errno, errno.EIO)
                    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)
            errs = [l for l in m.log_lines() if " error: " in l]
            self.assertEqual(len(errs), 1, errs)
            self.assertIn("chunk 2 (rows 20-29,", errs[0])
            self.assertGreaterEqual(m.stats()["read_errors"], 20)
        # at the end the daemon says how many it held back
        errs = [l for l in m.log_lines() if " error: " in l]
        self.assertEqual(len(errs), 2, errs)
        self.assertIn("chunk 2 (rows 20-29,", errs[1])
        held = int(re.search(r"\((\d+) more like it in the last \d+ s\)$", errs[1]).group(1))
        self.assertGreaterEqual(held, 19)
