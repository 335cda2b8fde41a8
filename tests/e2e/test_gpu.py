"""The GPU backend seen from a mount (SPEC 8, issue 18), on whatever machine
runs the tests. Where no GPU can be used (a CPU-only build, or a CUDA build
on a machine with no device or no driver), `--gpu auto` serves the same
bytes from the CPU, the log says why, and .stats.json says "cpu" with the
reason; `--gpu 0` fails the mount with exit 1 and one line on stderr. Where
a GPU answers, the same mounts decode the LZ4 chunks on it, with the same
bytes, and .stats.json names the device and counts its chunks."""
import os

import numpy as np

from common import E2E, check_preads, check_whole, forked_batches, mounted, reference, run

SCALE = 1 / 255


class Gpu(E2E):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        rng = np.random.default_rng(18)
        yy, xx = np.mgrid[0:32, 0:32]
        x = np.empty((300, 32, 32, 3), np.uint8)
        for i in range(len(x)):
            x[i] = (xx[..., None] * (i % 5 + 1) + yy[..., None] + np.arange(3) * 50) % 256
            x[i, ::4, ::3] = rng.integers(0, 256, (8, 11, 3))
        cls.x = x
        np.save(cls.p(cls, "img.npy"), x)
        r = run("pack", "--chunk-size", "256k", "--block-size", "16K", cls.p(cls, "img.npy"),
                cls.p(cls, "img.h5"), timeout=120)
        assert r.returncode == 0, r.stderr
        cls.ini = cls.p(cls, "v.ini")
        with open(cls.ini, "w") as f:
            f.write(f"[v]\nsource = img.h5:/img\nscale = {SCALE!r}\n"
                    f"[b]\nsource = img.h5:/img\nscale = {SCALE!r}\ndtype = bfloat16\n")

    def serve_and_check(self, m):
        check_whole(self, m, "v", reference(self.x, SCALE), "float32")
        check_whole(self, m, "b", reference(self.x, SCALE, dtype="bfloat16"), "bfloat16")
        forked_batches(self, m, "v", reference(self.x, SCALE), workers=3, batches=8)
        check_preads(self, m, "v", reference(self.x, SCALE), rows=(0, 7, 299), n_random=20)

    def test_auto(self):
        with self.mount(self.ini, "--gpu", "auto") as m:
            self.serve_and_check(m)
            st = m.stats()
            if st["backend"] == "cpu":
                # no device here: the reason is logged and in the stats
                self.assertTrue(st["gpu_off_why"])
                self.assertEqual(st["gpu_device"], "")
                self.assertEqual(st["gpu_chunks"], 0)
                self.assertTrue(any(f"backend: cpu ({st['gpu_off_why']})" in line
                                    for line in m.log_lines()), m.log_lines()[:5])
            else:
                self.assertEqual(st["backend"], "cuda")
                self.assertTrue(st["gpu_device"])
                self.assertGreater(st["gpu_chunks"], 0, "LZ4 chunks decoded on the device")
                self.assertEqual(st["gpu_fallbacks"], 0)
                self.assertFalse(st["gpu_failed"])

    def test_off(self):
        with self.mount(self.ini, "--gpu", "off") as m:
            check_whole(self, m, "v", reference(self.x, SCALE), "float32")
            st = m.stats()
            self.assertEqual((st["backend"], st["gpu_off_why"], st["gpu_chunks"]),
                             ("cpu", "--gpu off", 0))

    def test_device_zero(self):
        mp = self.p("mnt-gpu0")
        r = run("mount", "--gpu", "0", self.ini, mp, timeout=60)
        if r.returncode == 0:
            # a GPU machine: device 0 serves
            try:
                with open(os.path.join(mp, ".stats.json")) as f:
                    self.assertIn('"backend": "cuda"', f.read())
            finally:
                run("umount", mp)
            return
        self.assertEqual(r.returncode, 1, r.stderr)
        lines = r.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, r.stderr)
        self.assertIn("--gpu 0: ", lines[0])
        self.assertFalse(mounted(mp))
