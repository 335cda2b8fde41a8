"""Collections: views of thousands of small files, and directories of
them, served under the usual soft limit of 1,024 open files. The daemon
keeps its sources' descriptors under a budget (the least recently read
closed, reopened when read again); a source replaced or changed while
its descriptor was closed fails its reads with EIO and a log line, and
the others are served. Globs reach into nested directories, in natural
order."""
import errno
import json
import os
import time

import h5py
import numpy as np

from common import E2E, dsview_pids_for, mm_npy, run

NOFILE = 1024
LIMITED = ("prlimit", f"--nofile={NOFILE}:{NOFILE}", "--")


def fds_of(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def write_npys(d, n, seed=0, dtype=np.float32, cols=8):
    """n small .npy files rec000000.npy ... of 1 to 4 rows each; returns
    their arrays, in order."""
    os.makedirs(d, exist_ok=True)
    rng = np.random.default_rng(seed)
    arrays = []
    for i in range(n):
        a = (rng.standard_normal((1 + i % 4, cols)) * 100).astype(dtype)
        np.save(os.path.join(d, f"rec{i:06d}.npy"), a)
        arrays.append(a)
    return arrays


class Collections(E2E):
    def check_rows(self, m, name, ref, n=300, seed=1):
        """n random rows of the view, and its first and last, exact."""
        got = mm_npy(m.path(name + ".npy"))
        self.assertEqual(got.shape, ref.shape)
        rows = np.random.default_rng(seed).integers(0, ref.shape[0], n)
        for r in [0, ref.shape[0] - 1, *rows]:
            np.testing.assert_array_equal(got[r], ref[r], err_msg=f"row {r}")

    def check_budget(self, m):
        st = m.stats()
        self.assertLessEqual(st["source_fds"], st["source_fd_budget"])
        self.assertEqual(st["source_fd_budget"], NOFILE // 4 * 3)
        self.assertLess(fds_of(m.pid), NOFILE)
        return st

    def test_view_of_many_sources_under_the_usual_limit(self):
        n = 3000
        arrays = write_npys(self.p("many"), n)
        ref = np.concatenate(arrays).astype(np.float32)
        ini = self.write_ini(f"[v]\nsource = {self.p('many')}/rec*.npy\n")
        with self.mount(ini, wrap=LIMITED) as m:
            self.check_budget(m)
            self.check_rows(m, "v", ref)
            # the whole view once: every source read, so closed ones reopened
            np.testing.assert_array_equal(np.load(m.path("v.npy")), ref)
            st = self.check_budget(m)
            self.assertGreater(st["source_reopens"], 0)
            self.assertEqual(st["source_replaced"], 0)

    def test_source_replaced_or_changed_while_closed_fails_alone(self):
        n = 40
        # a row a page: the kernel reads whole pages, so no page holds two sources
        arrays = write_npys(self.p("few"), n, dtype=np.int16, cols=1024)
        ref = np.concatenate(arrays).astype(np.float32)
        starts = np.cumsum([0] + [len(a) for a in arrays])
        ini = self.write_ini(f"[v]\nsource = {self.p('few')}/rec*.npy\n")
        with self.mount(ini, env={"DSVIEW_OPEN_FILES": "8"},
                        expect_errors=[r"rec000003\.npy: cannot open it again to read: replaced",
                                       r"rec000005\.npy: cannot open it again to read: changed",
                                       r"rec000007\.npy: cannot open it again to read: No such",
                                       r"view v: source \S+/rec00000[357]\.npy chunk 0 \(rows "
                                       r"\d-\d, file offset 128, \d+ bytes\): I/O error"]
                        ) as m:
            st = m.stats()
            self.assertEqual(st["source_fd_budget"], 8)
            self.assertLessEqual(st["source_fds"], 8)
            # opened first, so closed by now: replaced by a new file, rewritten
            # in place (same size), removed
            other = self.p("other.npy")
            np.save(other, np.zeros_like(arrays[3]))
            os.replace(other, os.path.join(self.p("few"), "rec000003.npy"))
            time.sleep(0.01)
            with open(os.path.join(self.p("few"), "rec000005.npy"), "r+b") as f:
                f.seek(-2, os.SEEK_END)
                f.write(b"\0\0")
            os.unlink(os.path.join(self.p("few"), "rec000007.npy"))
            row_bytes = 4 * 1024
            fd = os.open(m.path("v.dat"), os.O_RDONLY)
            try:
                for bad in (3, 5, 7):
                    with self.assertRaises(OSError) as e:
                        os.pread(fd, row_bytes, int(starts[bad]) * row_bytes)
                    self.assertEqual(e.exception.errno, errno.EIO, f"source {bad}")
                for i in range(n):
                    if i in (3, 5, 7):
                        continue
                    got = os.pread(fd, len(arrays[i]) * row_bytes, int(starts[i]) * row_bytes)
                    self.assertEqual(got, ref[starts[i]:starts[i + 1]].tobytes(), f"source {i}")
            finally:
                os.close(fd)
            st = m.stats()
            self.assertGreaterEqual(st["source_replaced"], 3)
            self.assertLessEqual(st["source_fds"], 8)

    def test_directory_of_many_files_under_the_usual_limit(self):
        n = 2500
        arrays = write_npys(self.p("dir"), n, seed=3)
        with self.mount(self.p("dir"), wrap=LIMITED) as m:
            names = sorted(x for x in os.listdir(m.mp) if x.endswith(".npy"))
            self.assertEqual(len(names), n)
            for i in np.random.default_rng(4).integers(0, n, 60):
                got = np.load(m.path(f"rec{i:06d}.npy"))
                np.testing.assert_array_equal(got, arrays[i].astype(np.float32))
            self.check_budget(m)

    def test_hdf5_sources_under_the_usual_limit(self):
        n = 1500
        d = self.p("h5s")
        os.makedirs(d)
        rng = np.random.default_rng(5)
        arrays = []
        for i in range(n):
            a = rng.integers(-1000, 1000, (2 + i % 3, 6)).astype(np.int32)
            with h5py.File(os.path.join(d, f"s{i}.h5"), "w") as f:
                if i % 2:
                    f.create_dataset("x", data=a, chunks=(1, 6))  # chunks read with pread
                else:
                    f["x"] = a  # contiguous
            arrays.append(a)
        ref = np.concatenate(arrays).astype(np.float32)
        ini = self.write_ini(f"[v]\nsource = {d}/s*.h5:/x\n")
        with self.mount(ini, wrap=LIMITED) as m:
            self.check_rows(m, "v", ref)
            np.testing.assert_array_equal(np.load(m.path("v.npy")), ref)
            self.check_budget(m)

    def test_glob_over_nested_directories_in_natural_order(self):
        subs = [1, 2, 10, 11, 3]
        want = []
        for k, s in enumerate(subs):
            eeg = self.p(f"ds/sub-{s}/eeg")
            os.makedirs(eeg)
            os.makedirs(self.p(f"ds/sub-{s}/anat"))
            for task in ("b", "a"):
                a = np.full((2, 3), 10 * s + (task == "b"), np.float32)
                np.save(os.path.join(eeg, f"sub-{s}_task-{task}_eeg.npy"), a)
                # not matched: another directory, another suffix
                np.save(self.p(f"ds/sub-{s}/anat/sub-{s}_task-{task}_eeg.npy"), a + 1000)
                np.save(os.path.join(eeg, f"sub-{s}_task-{task}_events.npy"), a + 2000)
        for s in sorted(subs):
            for task in ("a", "b"):
                want.append(np.full((2, 3), 10 * s + (task == "b"), np.float32))
        ini = self.write_ini(f"[v]\nsource = {self.p('ds')}/sub-*/eeg/*_eeg.npy\n")
        with self.mount(ini) as m:
            np.testing.assert_array_equal(np.load(m.path("v.npy")), np.concatenate(want))

    def test_damaged_hdf5_file_among_many(self):
        # found by make fuzz: the HDF5 library crashes reading this file; the
        # files of a glob or a directory are probed in one child, which dies
        # on it: that file is refused, and the files after it are probed too
        crash = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fuzz", "corpus",
                             "h5", "crash-h5lvisit-null-copy")
        d = self.p("h5bad")
        os.makedirs(d)
        arrays = []
        for i in range(200):
            a = np.full((2, 3), i, np.int16)
            with h5py.File(os.path.join(d, f"s{i}.h5"), "w") as f:
                f["x"] = a
            arrays.append(a)
        with open(crash, "rb") as f, open(os.path.join(d, "s99x.h5"), "wb") as g:
            g.write(f.read())
        ini = self.write_ini(f"[v]\nsource = {d}/s*.h5:/x\n")
        line = self.refused(ini, want=("s99x.h5", "damaged HDF5 file"))
        self.assertIn(ini, line)
        with self.mount(d, expect_errors=[r"1 of 201 datasets skipped"]) as m:
            with open(m.path(".skipped.json")) as f:
                skipped = json.load(f)
            self.assertEqual(len(skipped), 1, skipped)
            self.assertIn("s99x.h5", skipped[0]["path"])
            self.assertIn("damaged HDF5 file", skipped[0]["reason"])
            for i in (0, 99, 100, 199):
                np.testing.assert_array_equal(np.load(m.path(f"s{i}.h5/x.npy")),
                                              arrays[i].astype(np.float32))

    def test_descriptor_limit_named_in_the_error(self):
        # HDF5 datasets read through the library (scaleoffset here: gzip
        # is dsview's own) keep the library's descriptor each, outside the
        # budget: past the limit the mount fails saying so, naming ulimit -n
        # (not --log, not "damaged")
        d = self.p("gz")
        os.makedirs(d)
        for i in range(100):
            with h5py.File(os.path.join(d, f"g{i}.h5"), "w") as f:
                f.create_dataset("x", data=np.full((4, 8), i, np.int32), chunks=(2, 8),
                                 scaleoffset=0)
        tiny = ("prlimit", "--nofile=64:64", "--")
        ini = self.write_ini(f"[v]\nsource = {d}/g*.h5:/x\n")
        cases = [("--log", self.p("gz.log"), ini)]
        if not os.path.exists("/dev/log"):  # no syslog: the default log is a file
            cases.append((d,))
        for args in cases:
            mp = self.p("mnt-gz")
            r = run("mount", *args, mp, wrap=tiny)
            self.assertEqual(r.returncode, 1, r.stderr)
            lines = r.stderr.strip().splitlines()
            # the refusal is the last line; a source the descriptor cache
            # could not open again may have been logged before it
            self.assertTrue(lines[-1].startswith("dsview: "), r.stderr)
            self.assertIn("Too many open files (the limit of open files: raise it with ulimit -n)",
                          lines[-1])
            for line in lines:
                self.assertNotIn("--log", line)
                self.assertNotIn("damaged", line)
                self.assertIn("Too many open files", line)
            self.assertEqual(dsview_pids_for(mp), [])
