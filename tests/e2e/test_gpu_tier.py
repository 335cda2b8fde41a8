"""The device-memory tier (`--gpu-cache`, docs/gpu.md) and the device's
buffers sized from the cache budget, on any machine: with
DSVIEW_GPU_EMULATE=1 and no device, the readahead's device path runs the
host build of the device code with the tier in host memory (gpu_emu.c), so
these mounts take every path a GPU takes: chunks admitted on the first
epoch (by the readahead, and by whole-chunk decodes of reads that miss the
page cache), transformed from the tier on the next, held chunks copied out
for reads that miss the page cache (rows picked, shuffled), a tier too
small for the data set keeping what it took, and ranges cut into batches
that fit buffers of a 32nd of --cache-size. Every byte is checked against
numpy."""
import contextlib
import os

import numpy as np

from common import E2E, check_preads, check_whole, forked_batches, read_all, run
from refs import reference

SCALE = 1 / 255


def evict(path):
    """Drops the file's pages from the kernel's page cache, so the next
    pass is read through the mount again (its readahead, its tier)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def read_waiting(m, name, counter, at_least=None):
    """Reads NAME.dat whole, but once past the readahead's start (32 MiB)
    waits (60 s at most) for the stats' counter to grow (to at_least, if
    given): the emulated device is slow, and a reader that ran ahead of the
    readahead would read every chunk itself."""
    want = m.stats()[counter] + 1 if at_least is None else at_least
    with open(m.path(name + ".dat"), "rb", buffering=0) as f:
        head = f.read(34 << 20)
        m.stats_when(counter, want)
        return head + f.read()


class Tier(E2E):
    ROWS, SIDE = 1500, 48  # 6.9 KB rows, 38 a chunk (263 kB, 1.05 MB of float32)

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        yy, xx = np.mgrid[0:cls.SIDE, 0:cls.SIDE]
        x = ((xx[None, ..., None] * 2 + yy[None, ..., None] + np.arange(cls.ROWS)[:, None, None, None]
              + np.arange(3) * 60) % 256).astype(np.uint8)
        x[:, ::6, ::5] = np.random.default_rng(7).integers(0, 256, x[:, ::6, ::5].shape,
                                                              dtype=np.uint8)
        cls.x = x
        np.save(cls.p(cls, "img.npy"), x)
        r = run("pack", "--chunk-size", "256k", "--block-size", "16K", cls.p(cls, "img.npy"),
                cls.p(cls, "img.h5"), timeout=120)
        assert r.returncode == 0, r.stderr
        import h5py
        import hdf5plugin
        with h5py.File(cls.p(cls, "img.h5"), "r") as f:
            cls.chunk = int(np.prod(f["img"].chunks))
        # others' file: LZ4 without a block table, so a read that misses
        # the page cache decodes whole chunks (the store's reads decode
        # only their blocks, on the CPU); the last chunk is an edge chunk
        with h5py.File(cls.p(cls, "theirs.h5"), "w") as f:
            f.create_dataset("img", data=x, chunks=(40, cls.SIDE, cls.SIDE, 3),
                             **hdf5plugin.LZ4(nbytes=8192))
        cls.ini = cls.p(cls, "v.ini")
        with open(cls.ini, "w") as f:
            f.write(f"[v]\nsource = img.h5:/img\nscale = {SCALE!r}\n"
                    f"[odd]\nsource = img.h5:/img\nrows = ::3\nscale = {SCALE!r}\n"
                    f"[t]\nsource = theirs.h5:/img\nscale = {SCALE!r}\n"
                    f"[todd]\nsource = theirs.h5:/img\nrows = ::3\nscale = {SCALE!r}\n"
                    f"[tb]\nsource = theirs.h5:/img\nscale = {SCALE!r}\ndtype = bfloat16\n")

    @contextlib.contextmanager
    def emulated(self, *opts):
        os.environ["DSVIEW_GPU_EMULATE"] = "1"
        try:
            with self.mount(self.ini, "--gpu", "auto", *opts) as m:
                if m.stats()["backend"] != "cpu":
                    self.skipTest("a GPU answers: the tier is on the device")
                yield m
        finally:
            del os.environ["DSVIEW_GPU_EMULATE"]

    def test_epochs(self):
        ref = reference(self.x, SCALE)
        with self.emulated("--gpu-cache", "64M", "--cache-size", "0") as m:
            st = m.stats()
            # no chunk cache (so reads that miss the page cache decode
            # again), buffers of 1 MiB at least; a chunk's float32 needs 2
            # (whole MiB): one chunk a batch
            self.assertEqual((st["gpu_cache_size"], st["gpu_batch_bytes"], st["gpu_pinned_bytes"]),
                             (64 << 20, 2 << 20, 0))
            # epoch 1 of others' file: the readahead and the reads that miss
            # the page cache decode every chunk, and admit it (the edge
            # chunk may be read in part: then the readahead admits it)
            self.assertEqual(read_waiting(m, "t", "gpu_readahead_bytes"), ref.tobytes())
            st = m.stats_when("gpu_cache_chunks", -(-self.ROWS // 40) - 1)
            self.assertGreater(st["gpu_readahead_bytes"], 0)
            self.assertEqual(st["gpu_readahead_fallbacks"], 0)
            self.assertGreaterEqual(st["gpu_cache_chunks"], -(-self.ROWS // 40) - 1)
            self.assertLessEqual(st["gpu_cache_used"], 64 << 20)
            # its rows view misses the page cache and the chunk cache: its
            # chunks come from the tier
            hits = st["gpu_cache_hits"]
            check_whole(self, m, "todd", reference(self.x[::3], SCALE), "float32")
            st = m.stats()
            self.assertGreater(st["gpu_cache_hits"], hits, "rows read from the tier")
            # the store: the readahead admits what it makes
            held = st["gpu_cache_chunks"]
            self.assertEqual(read_waiting(m, "v", "gpu_cache_chunks"), ref.tobytes())
            st = m.stats()
            self.assertGreater(st["gpu_cache_chunks"], held)
            check_whole(self, m, "odd", reference(self.x[::3], SCALE), "float32")
            # epoch 2, and another view of the same source: from the tier
            # epoch 2 (the pages evicted): the store's from the readahead,
            # which is read ahead again and transforms the held chunks;
            # others' file from either path; a bfloat16 view of it, never
            # read before, from chunks its float32 view admitted
            for name, want in (("v", ref), ("t", ref),
                               ("tb", reference(self.x, SCALE, dtype="bfloat16"))):
                with self.subTest(view=name):
                    evict(m.path(name + ".dat"))
                    hits, made = st["gpu_cache_hits"], st["gpu_readahead_bytes"]
                    self.assertEqual(read_waiting(m, name, "gpu_cache_hits"), want.tobytes())
                    st = m.stats()
                    self.assertGreater(st["gpu_cache_hits"], hits)
                    if name == "v":
                        st = m.stats_when("gpu_readahead_bytes", made + 1)
                        self.assertGreater(st["gpu_readahead_bytes"], made)
            evict(m.path("v.dat"))
            forked_batches(self, m, "v", ref, workers=3, batches=6)
            check_preads(self, m, "v", ref, rows=(0, 36, 37, 1499), n_random=30)
            self.assertEqual(m.stats()["gpu_readahead_fallbacks"], 0)
            self.assertTrue(any("--gpu-cache 64 MiB" in line for line in m.log_lines()))

    def test_tier_smaller_than_the_data(self):
        ref = reference(self.x, SCALE)
        with self.emulated("--gpu-cache", "1M", "--cache-size", "256M") as m:
            self.assertEqual(m.stats()["gpu_batch_bytes"], 8 << 20)
            # chunks on 256-byte boundaries, as many as fit, and they stay
            step = -(-self.chunk // 256) * 256
            fit = ((1 << 20) - self.chunk) // step + 1
            self.assertEqual(read_waiting(m, "v", "gpu_cache_chunks", fit), ref.tobytes())
            st = m.stats()
            self.assertEqual((st["gpu_cache_chunks"], st["gpu_cache_used"]),
                             (fit, (fit - 1) * step + self.chunk))
            for _ in range(2):
                evict(m.path("v.dat"))
                self.assertEqual(read_all(m.path("v.dat")), ref.tobytes())
                self.assertEqual(m.stats()["gpu_cache_chunks"], fit)

    def test_buffers_take_half_the_budget_at_most(self):
        # a chunk's float32 needs 2 MiB, but the 4 pinned buffers of a
        # device would then take all of --cache-size 8M: each is held to
        # an 8th of it, and the chunks too large for them stay on the CPU
        ref = reference(self.x, SCALE)
        with self.emulated("--cache-size", "8M") as m:
            self.assertEqual(m.stats()["gpu_batch_bytes"], 1 << 20)
            self.assertEqual(read_all(m.path("v.dat")), ref.tobytes())
            self.assertEqual(m.stats()["gpu_readahead_bytes"], 0)

    def test_without_a_device_the_tier_is_unused(self):
        with self.mount(self.ini, "--gpu", "auto", "--gpu-cache", "64M") as m:
            st = m.stats()
            if st["backend"] != "cpu":
                self.skipTest("a GPU answers")
            self.assertEqual((st["gpu_cache_size"], st["gpu_batch_bytes"]), (0, 0))
            check_whole(self, m, "v", reference(self.x, SCALE), "float32")
            self.assertTrue(any("--gpu-cache unused: no device" in line
                                for line in m.log_lines()), m.log_lines()[:6])

    def test_bad_options(self):
        self.refused(self.ini, "--gpu", "off", "--gpu-cache", "1G",
                     want="--gpu-cache needs a GPU, and --gpu is off")
        self.refused(self.ini, "--gpu-cache", "12Q", want="--gpu-cache '12Q' is not a size")
        bad = self.write_ini("[dsview]\ngpu_cache = lots\n[v]\nsource = img.h5:/img\n",
                             "bad.ini")
        self.refused(bad, want=("bad.ini:2", "gpu_cache 'lots' is not a size"))
        off = self.write_ini("[dsview]\ngpu = off\ngpu_cache = 1G\n[v]\nsource = img.h5:/img\n",
                             "off.ini")
        self.refused(off, want="the manifest's gpu_cache needs a GPU")
        # and the mount still serves afterwards
        with self.mount(self.ini, "--gpu", "off") as m:
            self.assertEqual(m.stats()["gpu_cache_size"], 0)
