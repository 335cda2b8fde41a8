"""Files behave like files: /.stats.json has a true size, a view's
mtime moves with its manifest, st_blocks are bytes on disk, df is sized
like a read-only image."""
import json
import os
import subprocess
import tarfile

import numpy as np

from common import E2E, run


class StatsFile(E2E):
    def test_size_is_the_snapshot(self):
        np.save(self.p("a.npy"), np.zeros((10, 10), np.uint8))
        with self.mount(self.p("a.npy")) as m:
            path = m.path(".stats.json")
            with open(m.path("a.dat"), "rb") as f:
                f.read()
            size = os.stat(path).st_size
            self.assertGreater(size, 100)
            # a plain read to EOF gets one whole snapshot (fstat is not
            # compared: the kernel sends FUSE no handle for it, so it sees a
            # newer snapshot whose counters may have grown a digit)
            with open(path, "rb") as f:
                text = f.read()
            json.loads(text)
            # cp (stat, then read) copies it whole
            r = subprocess.run(["cp", path, self.p("copy.json")], capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(self.p("copy.json")) as f:
                self.assertGreater(json.load(f)["read_requests"], 0)
            # tar reads exactly st_size bytes and checks the size after
            r = subprocess.run(["tar", "cf", self.p("s.tar"), "-C", m.mp, ".stats.json"],
                               capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertNotIn("changed", r.stderr)
            with tarfile.open(self.p("s.tar")) as t:
                json.loads(t.extractfile(".stats.json").read())


class Mtime(E2E):
    def test_manifest_mtime_moves_the_views(self):
        np.save(self.p("a.npy"), np.zeros((10, 10), np.uint8))
        src = os.stat(self.p("a.npy")).st_mtime
        ini = self.write_ini("[v]\nsource = a.npy\nscale = 2\n")
        os.utime(ini, (src - 100, src - 100))  # older than the source: the source's counts
        with self.mount(ini) as m:
            for name in ("v.dat", "v.npy", "v.json"):
                self.assertAlmostEqual(os.stat(m.path(name)).st_mtime, src, delta=0.01)
        later = src + 1000
        self.write_ini("[v]\nsource = a.npy\nscale = 3\n")
        os.utime(ini, (later, later))
        with self.mount(ini) as m:
            for name in ("v.dat", "v.npy", "v.json", ""):
                self.assertAlmostEqual(os.stat(m.path(name)).st_mtime, later, delta=0.01, msg=name)


class Blocks(E2E):
    def test_blocks_are_bytes_on_disk(self):
        x = np.zeros((4000, 256), np.uint8)  # compresses well
        np.save(self.p("z.npy"), x)
        r = run("pack", self.p("z.npy"), self.p("z.h5"))
        self.assertEqual(r.returncode, 0, r.stderr)
        with self.mount(self.p("z.h5")) as m:
            info = json.loads(run("info", "--json", self.p("z.h5")).stdout)
            stored = sum(d["stored_bytes"] for d in info["datasets"])
            st = os.stat(m.path("z.dat"))
            self.assertEqual(st.st_size, x.size * 4)
            self.assertEqual(st.st_blocks, (stored + 511) // 512)
            self.assertEqual(os.stat(m.path("z.npy")).st_blocks, 0)  # counted once, in z.dat
            du = int(subprocess.run(["du", "-s", "-B1", m.mp], capture_output=True,
                                    text=True).stdout.split()[0])
            self.assertLess(du, x.size)
            sv = os.statvfs(m.mp)
            self.assertGreaterEqual(sv.f_blocks * sv.f_frsize, stored)
            self.assertLess(sv.f_blocks * sv.f_frsize, x.size)
            self.assertEqual(sv.f_bavail, 0)
            self.assertEqual(sv.f_bfree, 0)
