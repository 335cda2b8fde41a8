"""The GPU backend seen from a mount (docs/gpu.md), on whatever machine
runs the tests. Where no GPU can be used (a CPU-only build, or a CUDA build
on a machine with no device or no driver), `--gpu auto` serves the same
bytes from the CPU, the log says why, and .stats.json says "cpu" with the
reason; `--gpu 0` fails the mount with exit 1 and one line on stderr. Where
a GPU answers, the same mounts decode the LZ4 chunks on it, with the same
bytes, and .stats.json names the device and counts its chunks."""
import contextlib
import os

import numpy as np

from common import (E2E, check_preads, check_whole, flip_byte, forked_batches, mounted, out_np,
                    read_all, run)
from refs import reference

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
                self.assertEqual((st["gpu_chunks"], st["gpu_busy"]), (0, 0))
                self.assertTrue(any(f"backend: cpu ({st['gpu_off_why']})" in line
                                    for line in m.log_lines()), m.log_lines()[:5])
            else:
                self.assertEqual(st["backend"], "cuda")
                self.assertTrue(st["gpu_device"])
                self.assertGreater(st["gpu_chunks"], 0, "LZ4 chunks decoded on the device")
                self.assertIn("gpu_busy", st)  # chunks left to the CPU, its slots busy
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


class DevicePath(E2E):
    """The readahead's device path (backend/make.c) on any machine: with
    DSVIEW_GPU_EMULATE=1 and no device, the sequential readahead stages the
    stored chunks and runs the host build of the device code on them
    (gpu_emu.c), the path a GPU runs, from the pread to the pages stored.
    Views of every kind it makes (float32, bfloat16, per-channel
    normalisation, two sources, HDF5 edge chunks, the .npy header), views it
    leaves to the CPU (rows, layout), and a damaged chunk, which goes back
    to the CPU and fails only its own rows."""
    ROWS, SIDE = 3000, 48  # 6.9 KB rows: 83 MB of float32, well past the readahead's start

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        import h5py
        import hdf5plugin
        rng = np.random.default_rng(81)
        yy, xx = np.mgrid[0:cls.SIDE, 0:cls.SIDE]
        x = ((xx[None, ..., None] + yy[None, ..., None] * 3 + np.arange(cls.ROWS)[:, None, None, None]
              + np.arange(3) * 40) % 256).astype(np.uint8)
        x[:, ::5, ::7] = rng.integers(0, 256, x[:, ::5, ::7].shape, dtype=np.uint8)
        cls.x = x
        np.save(cls.p(cls, "img.npy"), x)
        r = run("pack", "--chunk-size", "256k", "--block-size", "16K", cls.p(cls, "img.npy"),
                cls.p(cls, "img.h5"), timeout=120)
        assert r.returncode == 0, r.stderr
        r = run("pack", "--codec", "zstd", cls.p(cls, "img.npy"), cls.p(cls, "z.h5"), timeout=120)
        assert r.returncode == 0, r.stderr
        # others' file: no checksum, chunks of 45 rows (the last one padded)
        with h5py.File(cls.p(cls, "theirs.h5"), "w") as f:
            f.create_dataset("img", data=x[:1000], chunks=(45, cls.SIDE, cls.SIDE, 3),
                             **hdf5plugin.LZ4(nbytes=8192))
        cls.ini = cls.p(cls, "v.ini")
        with open(cls.ini, "w") as f:
            f.write(f"[v]\nsource = img.h5:/img\nscale = {SCALE!r}\n"
                    f"[b]\nsource = img.h5:/img\nscale = {SCALE!r}\ndtype = bfloat16\n"
                    f"[n]\nsource = img.h5:/img\nscale = {SCALE!r}\n"
                    "mean = 0.485 0.456 0.406\nstd = 0.229 0.224 0.225\nchannel_axis = -1\n"
                    f"[two]\nsource = theirs.h5:/img\nsource = img.h5:/img\nscale = {SCALE!r}\n"
                    "offset = -0.5\n"
                    f"[odd]\nsource = img.h5:/img\nrows = ::3\nscale = {SCALE!r}\n"
                    f"[z]\nsource = z.h5:/img\nscale = {SCALE!r}\n")

    @contextlib.contextmanager
    def emulated(self, ini, **kw):
        os.environ["DSVIEW_GPU_EMULATE"] = "1"
        try:
            with self.mount(ini, "--gpu", "auto", **kw) as m:
                yield m
        finally:
            del os.environ["DSVIEW_GPU_EMULATE"]

    def test_views_it_makes(self):
        x = self.x
        norm = (x / 255.0 - np.array([0.485, 0.456, 0.406])) / np.array([0.229, 0.224, 0.225])
        with self.emulated(self.ini) as m:
            if m.stats()["backend"] != "cpu":
                self.skipTest("a GPU answers: test_auto covers the device")
            made = 0
            for name, ref, dtype in (
                    ("v", reference(x, SCALE), "float32"),
                    ("b", reference(x, SCALE, dtype="bfloat16"), "bfloat16"),
                    ("n", norm.astype(np.float32), "float32"),
                    ("two", reference(np.concatenate([x[:1000], x]), SCALE, -0.5), "float32")):
                with self.subTest(view=name):
                    # an epoch's sequential pass first: the readahead's
                    got = read_all(m.path(name + ".dat"))
                    if got != ref.tobytes():
                        self.assertBits(np.frombuffer(got, out_np(dtype)).reshape(ref.shape), ref,
                                        f"{name}.dat read()", dtype)
                    check_whole(self, m, name, ref, dtype)
                    st = m.stats_settled()
                    self.assertTrue(st["gpu_emulated"])
                    self.assertGreater(st["gpu_readahead_bytes"], made,
                                       f"{name}: the readahead made pages on the device path")
                    made = st["gpu_readahead_bytes"]
            # rows picked, or a zstd store: not what the device path makes
            check_whole(self, m, "odd", reference(x[::3], SCALE), "float32")
            self.assertEqual(read_all(m.path("z.dat")), reference(x, SCALE).tobytes())
            st = m.stats_settled()
            self.assertEqual(st["gpu_readahead_bytes"], made)
            self.assertEqual(st["gpu_readahead_fallbacks"], 0)
            forked_batches(self, m, "v", reference(x, SCALE), workers=2, batches=4)

    def test_damaged_chunk_goes_back_to_the_cpu(self):
        import shutil
        import h5py
        bad = self.p("bad.h5")
        shutil.copy(self.p("img.h5"), bad)
        with h5py.File(bad, "r") as f:
            info = f["img"].id.get_chunk_info(60)  # the readahead reaches it
            rows = f["img"].chunks[0]
        flip_byte(bad, info.byte_offset + info.size // 2)
        ini = self.p("bad.ini")
        with open(ini, "w") as f:
            f.write(f"[v]\nsource = bad.h5:/img\nscale = {SCALE!r}\n")
        lo, hi = 60 * rows, min(61 * rows, self.ROWS)
        with self.emulated(ini, expect_errors=[rf"chunk 60 \(rows {lo}-{hi - 1}"]) as m:
            rb = self.SIDE * self.SIDE * 3 * 4
            ref = reference(self.x, SCALE)
            with open(m.path("v.dat"), "rb", buffering=0) as f:
                got = f.read(lo * rb)  # sequential up to the damaged chunk
                self.assertEqual(got, ref[:lo].tobytes())
                # the readahead, queued chunks ahead of the reader, reaches it
                # (slowly under a sanitizer: wait for it)
                m.stats_when("gpu_readahead_fallbacks", 1)
                failed = []
                for i in range(lo, hi):  # right bytes up to an EIO, never wrong ones
                    try:
                        got = os.pread(f.fileno(), rb, i * rb)
                        self.assertEqual(got, ref[i].tobytes()[:len(got)])
                        if len(got) < rb:  # a short read: the rest fails
                            os.pread(f.fileno(), rb - len(got), i * rb + len(got))
                            self.fail(f"row {i}: a short read, then the rest read")
                    except OSError as e:
                        self.assertEqual(e.errno, 5)
                        failed.append(i)
                self.assertTrue(failed, "the damaged chunk's rows")
                f.seek(hi * rb)
                self.assertEqual(f.read(), ref[hi:].tobytes())
            st = m.stats()
            self.assertGreater(st["gpu_readahead_bytes"], 0)
            self.assertGreater(st["gpu_readahead_fallbacks"], 0, "the damaged chunk went back")
