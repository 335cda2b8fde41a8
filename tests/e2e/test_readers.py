"""How training jobs read: many forked DataLoader-style workers with their own
memmaps reading shuffled batches, and unaligned preads across chunk
boundaries and the end of file."""
import json
import os
import random
import time

import h5py
import hdf5plugin
import numpy as np

from common import E2E, has_sanitizer, mount_entry, run, same_bits
from refs import reference

MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
SCALE = 1 / 255


def worker(path, shape, ref_path, seed, batches):
    """Runs in a forked child: its own memmap, shuffled batches, compared with
    the reference. Returns the number of mismatching batches."""
    a = np.memmap(path, np.float32, "r", shape=shape)
    ref = np.load(ref_path, mmap_mode="r")
    rng = np.random.default_rng(seed)
    bad = 0
    for _ in range(batches):
        idx = rng.choice(shape[0], size=int(rng.integers(16, 65)), replace=False)
        if not same_bits(a[idx], ref[idx]):
            bad += 1
    return bad


class Workers(E2E):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        rng = np.random.default_rng(4)
        # 2000 rows of 48x48x3 = 6912 B uint8, 27 KB float32: ~14 MB of views
        cls.x = rng.integers(0, 256, (2000, 48, 48, 3), dtype=np.uint8)
        np.save(os.path.join(cls.tmp, "x.npy"), cls.x)
        with h5py.File(os.path.join(cls.tmp, "x.h5"), "w") as f:
            f.create_dataset("x", data=cls.x, chunks=(37, 48, 48, 3), fletcher32=True,
                             **hdf5plugin.LZ4())
        np.save(os.path.join(cls.tmp, "ref.npy"), reference(cls.x, SCALE, 0, MEAN, STD))
        cls.ini = os.path.join(cls.tmp, "w.ini")
        with open(cls.ini, "w") as f:
            for name, src in (("npy", "x.npy"), ("lz4", "x.h5:/x")):
                f.write(f"[{name}]\nsource = {src}\nscale = {SCALE!r}\n"
                        f"mean = 0.485 0.456 0.406\nstd = 0.229 0.224 0.225\n\n")

    def forked_readers(self, m, view, n=8, batches=40):
        pids = []
        for k in range(n):
            pid = os.fork()
            if pid == 0:
                code = 1
                try:
                    code = min(worker(m.path(view + ".dat"), self.x.shape, self.p("ref.npy"), k,
                                      batches), 100)
                finally:
                    os._exit(code)
            pids.append(pid)
        codes = [os.waitstatus_to_exitcode(os.waitpid(p, 0)[1]) for p in pids]
        self.assertEqual(codes, [0] * n, "workers saw mismatching batches (exit = count)")

    def test_8_workers_default_cache(self):
        with self.mount(self.ini) as m:
            self.forked_readers(m, "npy")
            self.forked_readers(m, "lz4")
            st = m.stats()
            self.assertGreater(st["bytes_served"], 0)
            self.assertEqual(st["errors"], 0)

    def test_8_workers_small_cache_evicts(self):
        with self.mount(self.ini, "--cache-size", "1M") as m:
            self.forked_readers(m, "lz4")
            self.forked_readers(m, "npy")
            st = m.stats()
            self.assertLessEqual(st["cache_budget"], 1 << 20)
            self.assertGreater(st["cache_evictions"], 0)
            self.assertLessEqual(st["cache_bytes"], 1 << 20)
            # peak RSS within budget + 64 MiB of fixed overhead (libraries,
            # threads, per-thread decode buffers), with 8 readers at once
            with open(f"/proc/{m.pid}/status") as f:
                hwm = next(int(l.split()[1]) for l in f if l.startswith("VmHWM:")) * 1024
            if not has_sanitizer(m.pid):
                self.assertLess(hwm, (1 << 20) + (64 << 20), f"daemon peak RSS {hwm >> 20} MiB")

    def test_8_workers_no_cache(self):
        with self.mount(self.ini, "--cache-size", "0") as m:
            self.forked_readers(m, "npy", batches=20)
            self.assertEqual(m.stats()["cache_budget"], 0)

    def test_unaligned_preads(self):
        ref = reference(self.x, SCALE, 0, MEAN, STD).tobytes()
        with self.mount(self.ini, "--cache-size", "2M") as m:
            for view in ("npy", "lz4"):
                meta = json.load(open(m.path(view + ".json")))
                chunk_bytes = int(meta["chunk_rows"][0] * meta["row_bytes"])
                for ext, data in ((".dat", ref), (".npy", None)):
                    fd = os.open(m.path(view + ext), os.O_RDONLY)
                    try:
                        if data is None:
                            head = os.pread(fd, 4096, 0)
                            hlen = 10 + head[8] + 256 * head[9]
                            data = head[:hlen] + ref
                        size = len(data)
                        self.assertEqual(os.fstat(fd).st_size, size)
                        offs = [0, 1, size - 1, size - 7, size, size + 100]
                        for k in range(1, 6):  # around chunk boundaries
                            b = k * chunk_bytes + (len(data) - len(ref))
                            offs += [b - 3, b - 1, b, b + 1, b + 5]
                        rnd = random.Random(5)
                        offs += [rnd.randrange(size) for _ in range(60)]
                        for off in offs:
                            for n in (1, 3, 4095, 4097, chunk_bytes + 13, 1 << 20):
                                got = os.pread(fd, n, off)
                                self.assertEqual(got, data[off:off + n],
                                                 f"{view}{ext} pread({n}, {off})")
                    finally:
                        os.close(fd)


class Readahead(E2E):
    """Sequential reads make the daemon make the next chunks in the
    background and hand them to the kernel's page cache (docs/performance.md); random
    reads do not; the bytes are the same either way. Plain sources (.npy)
    are pread on demand, piece by piece, and never go through the cache."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        rng = np.random.default_rng(5)
        cls.x = rng.integers(0, 256, (4000, 64, 64, 3), dtype=np.uint8)  # 49 MB
        np.save(os.path.join(cls.tmp, "seq.npy"), cls.x)
        r = run("pack", "--chunk-size", "256K", os.path.join(cls.tmp, "seq.npy"),
                os.path.join(cls.tmp, "seq.h5"))  # ~190 chunks of 21 rows
        assert r.returncode == 0, r.stderr
        cls.ref = reference(cls.x).tobytes()

    def stats(self, m):
        with open(m.path(".stats.json")) as f:
            return json.load(f)

    def read_all(self, path, bs=1 << 20):
        got = bytearray()
        with open(path, "rb", buffering=0) as f:
            while True:
                b = f.read(bs)
                if not b:
                    break
                got += b
        return bytes(got)

    def test_sequential_read_prefetches(self):
        with self.mount(self.p("seq.h5")) as m:
            self.assertEqual(self.read_all(m.path("seq.dat")), self.ref)
            st = self.stats(m)
            self.assertGreater(st["readahead_chunks"], 0, st)
            self.assertEqual(st["errors"], 0)

    def test_sequential_pass_decodes_each_chunk_once(self):
        # a store of many LZ4 blocks per chunk (pack's default): pieces the
        # kernel asks for come from blocks, readahead from whole chunks;
        # either way a pass decodes about what it reads, once
        with self.mount(self.p("seq.h5")) as m:
            self.assertEqual(self.read_all(m.path("seq.dat")), self.ref)
            st = self.stats(m)
            self.assertGreater(st["readahead_chunks"], 0, st)
            # about once: 1.00 here, 1.14 under ThreadSanitizer, whose slow
            # prefetcher lets the reader take more pieces from blocks of
            # chunks it then decodes whole; decoding twice would be 2.0
            self.assertLessEqual(st["bytes_decoded"], 1.25 * len(self.ref), st)
            self.assertEqual(st["errors"], 0)

    def test_sequential_pass_recycles_chunk_buffers(self):
        # the readahead's chunks are read once: past the last 96 held, each
        # takes over an older one's buffer, far under the cache's budget
        # (~800 chunks of 5 rows, so that the readahead takes hundreds)
        r = run("pack", "--chunk-size", "64K", self.p("seq.npy"), self.p("small.h5"))
        self.assertEqual(r.returncode, 0, r.stderr)
        with self.mount(self.p("small.h5")) as m:
            self.assertEqual(self.read_all(m.path("seq.dat")), self.ref)
            st = self.stats(m)
            self.assertGreater(st["readahead_chunks"], 200, st)
            self.assertGreater(st["cache_reuses"], 0, st)
            self.assertLessEqual(st["cache_entries"], 100, st)
            self.assertEqual(st["errors"], 0)

    def test_npy_file_read_ahead_behind_its_header(self):
        # the .npy file's readahead stores sit behind the NPY header
        with self.mount(self.p("seq.h5")) as m:
            a = np.load(m.path("seq.npy"), mmap_mode="r")
            self.assertEqual(a.shape, self.x.shape)
            got = b"".join(np.array(a[i:i + 64]).tobytes() for i in range(0, len(a), 64))
            del a
            self.assertEqual(got, self.ref)
            with open(m.path("seq.npy"), "rb") as f:
                self.assertTrue(f.read().endswith(self.ref))
            st = self.stats(m)
            self.assertGreater(st["bytes_readahead"], 0)
            self.assertEqual(st["bytes_hinted"], 0, "no hints")
            self.assertEqual(st["bytes_dropped"], 0, "no memory limit: the pass's pages stay")

    def test_memmap_scan_prefetches(self):
        # page faults of a memmap: the kernel sends a window's pieces in no
        # particular order, and the run is still seen as sequential
        with self.mount(self.p("seq.h5")) as m:
            a = np.memmap(m.path("seq.dat"), np.float32, "r", shape=self.x.shape)
            got = b"".join(np.array(a[i:i + 64]).tobytes() for i in range(0, len(a), 64))
            del a
            self.assertEqual(got, self.ref)
            self.assertGreater(self.stats(m)["readahead_chunks"], 0)

    def memmap_pass_u8(self, m, name, shape):
        """One pass of a uint8 view in memmap slices of 64 rows, as a
        training epoch reads it, with a step of 10 ms between slices (a
        reader that never pauses catches up with the readahead and decodes
        alongside it, the more so on a loaded machine); the bytes and
        /.stats.json after it."""
        a = np.memmap(m.path(name + ".dat"), np.uint8, "r", shape=shape)
        got = np.empty(shape, np.uint8)
        for i in range(0, len(a), 64):
            got[i:i + 64] = a[i:i + 64]
            time.sleep(0.01)
        del a
        return got, self.stats(m)

    def assert_read_ahead(self, st, made, total):
        # of total, the readahead made most on its own threads, the
        # reader's requests little more than the first 4 MiB's (a readahead
        # that waited for 32 MiB of a pass would make none of a 20 MB file
        # and at most a third of a 49 MB one)
        self.assertEqual(st["errors"], 0, st)
        self.assertGreater(made, total / 2, st)

    def test_gzip_pass_decoded_by_readahead(self):
        # h5py's gzip (level 4, h5py's default) over image-like rows, with
        # and without shuffle, whole-row chunks and h5py's own guess (which
        # splits rows): a 20 MB uint8 view, every byte as h5py reads it
        yy, xx = np.mgrid[0:64, 0:64]
        img = ((xx * 3 + yy * 2)[None, :, :, None] + np.arange(1600)[:, None, None, None]) % 256
        noise = np.random.default_rng(6).integers(0, 4, (1600, 64, 64, 3))
        x = (img + noise).astype(np.uint8)
        path = self.p("gz_pass.h5")
        with h5py.File(path, "w") as f:
            f.create_dataset("rows", data=x, chunks=(16, 64, 64, 3), compression="gzip")
            f.create_dataset("shuf", data=x, chunks=(16, 64, 64, 3), compression="gzip",
                             shuffle=True)
            f.create_dataset("auto", data=x, chunks=True, compression="gzip")
        for name in ("rows", "shuf", "auto"):
            with h5py.File(path, "r") as f:
                want = f[name][...]
            with self.subTest(dataset=name), self.mount(path, "--dtype", "uint8") as m:
                got, st = self.memmap_pass_u8(m, name, x.shape)
                self.assertTrue(np.array_equal(got, want), name)
                self.assert_read_ahead(st, st["readahead_decoded"], st["chunks_decoded"])

    def test_lz4_store_pass_decoded_by_readahead(self):
        # dsview pack's LZ4 store of the 49 MB of rows, as a uint8 view: a
        # request decodes only the LZ4 blocks it reads (never a whole chunk
        # in the cache), so count bytes: those the readahead stored
        with self.mount(self.p("seq.h5"), "--dtype", "uint8") as m:
            got, st = self.memmap_pass_u8(m, "seq", self.x.shape)
            self.assertTrue(np.array_equal(got, self.x))
            self.assert_read_ahead(st, st["bytes_readahead"], self.x.nbytes)

    def test_random_reads_do_not_prefetch(self):
        row = 64 * 64 * 3 * 4
        with self.mount(self.p("seq.h5")) as m:
            fd = os.open(m.path("seq.dat"), os.O_RDONLY)
            try:
                # rows far apart, never in or next to the previous chunk
                for r in (3900, 100, 2900, 1200, 3400, 600, 2000):
                    self.assertEqual(os.pread(fd, row, r * row), self.ref[r * row:(r + 1) * row])
            finally:
                os.close(fd)
            self.assertEqual(self.stats(m)["readahead_chunks"], 0)

    def test_readahead_without_cache(self):
        # readahead hands chunks to the kernel's page cache, not ours: it
        # works with no cache at all
        with self.mount(self.p("seq.h5"), "--cache-size", "0") as m:
            self.assertEqual(self.read_all(m.path("seq.dat")), self.ref)
            st = self.stats(m)
            self.assertGreater(st["readahead_chunks"], 0, st)
            self.assertEqual(st["cache_bytes"], 0, st)

    def test_plain_source_decodes_only_what_is_read(self):
        # .npy elements are pread for each request: nothing cached, and
        # nothing decoded that the kernel did not ask for or was not handed
        # ahead of a sequential pass
        row = 64 * 64 * 3 * 4
        with self.mount(self.p("seq.npy")) as m:
            fd = os.open(m.path("seq.dat"), os.O_RDONLY)
            try:
                for r in (3900, 100, 2900, 1200):
                    self.assertEqual(os.pread(fd, row, r * row), self.ref[r * row:(r + 1) * row])
            finally:
                os.close(fd)
            st = self.stats(m)
            self.assertEqual(st["bytes_decoded"], st["bytes_served"], st)
            self.assertEqual(st["bytes_readahead"], 0, st)
            self.assertEqual(self.read_all(m.path("seq.dat"), bs=3 << 20), self.ref)
            st = self.stats(m)
            self.assertGreater(st["bytes_readahead"], 0, st)
            self.assertLessEqual(st["bytes_decoded"], st["bytes_served"] + st["bytes_readahead"], st)
            self.assertEqual((st["cache_misses"], st["cache_hits"]), (0, 0), st)
            self.assertEqual(st["errors"], 0)

    def test_readahead_window(self):
        # the mount's kernel readahead window: 128 KiB unless --readahead
        def window(mp):
            with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as f:
                dev = next(l.split()[2] for l in f if l.split()[4] == mp)
            with open(f"/sys/class/bdi/{dev}/read_ahead_kb") as f:
                return int(f.read())
        for opts, kb in (((), 128), (("--readahead", "64K"), 64), (("--readahead", "1M"), 1024)):
            with self.mount(self.p("seq.npy"), *opts) as m:
                self.assertEqual(window(m.mp), kb, opts)
                self.assertIn(f"readahead {kb} KiB", "".join(m.log_lines()))

    def test_readahead_window_mountpoint_with_space(self):
        # mountinfo writes a space in a mountpoint as \040: --readahead must
        # still find the mount and apply the window, not skip it silently
        mp = self.p("mnt with space")
        with self.mount(self.p("seq.npy"), "--readahead", "1M", mp=mp) as m:
            dev = mount_entry(m.mp)[0][2]
            with open(f"/sys/class/bdi/{dev}/read_ahead_kb") as f:
                self.assertEqual(int(f.read()), 1024)
            self.assertIn("readahead 1024 KiB", "".join(m.log_lines()))

    def test_max_read_option(self):
        # -o max_read=N caps each read request (libfuse needs it repeated
        # in INIT, or the mount fails); the bytes are the same
        for src, name in (("seq.h5", "seq.dat"), ("seq.npy", "seq.npy")):
            with self.subTest(src=src), self.mount(self.p(src), "-o", "max_read=65536") as m:
                self.assertIn("max_read=65536", mount_entry(m.mp)[2])
                self.assertEqual(self.read_all(m.path(name))[-len(self.ref):], self.ref)
        self.assertEqual(run("mount", "-o", "max_read=lots", self.p("seq.npy"),
                             self.p("mnt-bad")).returncode, 1)
