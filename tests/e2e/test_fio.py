"""fio's pattern verification over both read paths (a store and an .npy)
and both I/O engines (psync and mmap), sequential and random."""
import json
import os
import shutil
import subprocess
import time

import numpy as np

from common import E2E, run
from refs import reference

FIO = shutil.which("fio") or "/usr/bin/fio"

PERIOD = 16


def pattern_src(n):
    """uint8 values that repeat with period 16 along the flat index."""
    return ((np.arange(n) % PERIOD) * 7 + 1).astype(np.uint8)


class Fio(E2E):
    """fio reads the views with pattern verification (rw=read/randread of a
    file fio assumes was written with verify_pattern): 16 jobs per run,
    psync and mmap, sequential and random, 4k and 128k blocks, over a store
    and an .npy. The float32 output of the period-16 source repeats a
    64-byte pattern, which divides every block size."""
    SCALE, OFFSET = 0.1, -3.3  # rounding is not exact: the pattern is the rounded value
    SHAPE = (4096, 4096)  # 16 MiB of uint8, 64 MiB of float32
    BAD_ELEM = (5 * 131072 + 4100) // 4  # planted fault: in block 5 of 128k, in the middle of a 4k block

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        if not os.access(FIO, os.X_OK):
            return
        x = pattern_src(cls.SHAPE[0] * cls.SHAPE[1]).reshape(cls.SHAPE)
        np.save(os.path.join(cls.tmp, "pat.npy"), x)
        x.ravel()[cls.BAD_ELEM] += 1  # one element off the pattern
        np.save(os.path.join(cls.tmp, "bad.npy"), x)
        # store: one block a chunk, every read through the chunk cache;
        # blocks: pack's default, parts of chunks from their blocks
        for out, block in (("pat.h5", "1G"), ("patb.h5", "16K")):
            r = run("pack", "--chunk-size", "256K", "--block-size", block, "--dataset", "pat",
                    os.path.join(cls.tmp, "pat.npy"), os.path.join(cls.tmp, out))
            assert r.returncode == 0, r.stderr
        cls.ini = os.path.join(cls.tmp, "fio.ini")
        with open(cls.ini, "w") as f:
            for name, src in (("store", "pat.h5:/pat"), ("blocks", "patb.h5:/pat"),
                              ("plain", "pat.npy"), ("bad", "bad.npy")):
                f.write(f"[{name}]\nsource = {src}\nscale = {cls.SCALE!r}\noffset = {cls.OFFSET!r}\n\n")
        pat = reference(pattern_src(PERIOD), cls.SCALE, cls.OFFSET).tobytes()
        assert len(pat) == 4 * PERIOD and len(set(pat)) > 8
        cls.pattern = "0x" + pat.hex()

    def setUp(self):
        super().setUp()
        if not os.access(FIO, os.X_OK):
            self.skipTest(f"fio not installed ({FIO})")

    def fio(self, path, engine, rw, bs, pattern, jobs=16, io=16 << 20):
        """Runs fio; returns (rc, json or None, stderr). Sequential jobs read
        io bytes each from staggered offsets, random jobs io bytes from
        anywhere in the file."""
        out = self.p(f"fio-{time.monotonic_ns()}.json")
        size = os.stat(path).st_size
        args = [FIO, "--name=v", f"--filename={path}", "--readonly", f"--rw={rw}", f"--bs={bs}",
                f"--ioengine={engine}", f"--numjobs={jobs}", "--verify=pattern",
                f"--verify_pattern={pattern}", "--output-format=json", f"--output={out}"]
        if rw == "read":
            args += [f"--size={io}", f"--offset_increment={(size - io) // max(jobs - 1, 1) // (1 << 20) << 20}"]
        else:
            args += [f"--io_size={io}"]
        try:
            r = subprocess.run(args, capture_output=True, text=True, timeout=120)
        except subprocess.TimeoutExpired as e:
            self.fail(f"fio timed out: {' '.join(args)}\n{e.stderr}")
        try:
            with open(out) as f:
                data = json.load(f)
        except (OSError, ValueError):
            data = None
        return r.returncode, data, r.stderr

    def test_fio_pattern_verify(self):
        runs = [("store", "psync", "read", "4k"), ("store", "psync", "randread", "128k"),
                ("store", "mmap", "read", "128k"), ("store", "mmap", "randread", "4k"),
                ("blocks", "psync", "randread", "4k"), ("blocks", "mmap", "read", "128k"),
                ("plain", "psync", "read", "128k"), ("plain", "psync", "randread", "4k"),
                ("plain", "mmap", "read", "4k"), ("plain", "mmap", "randread", "128k")]
        with self.mount(self.ini, "--cache-size", "4M") as m:
            figures = []
            for view, engine, rw, bs in runs:
                with self.subTest(view=view, engine=engine, rw=rw, bs=bs):
                    rc, data, err = self.fio(m.path(view + ".dat"), engine, rw, bs, self.pattern)
                    what = f"fio {view}.dat {engine} {rw} bs={bs}"
                    self.assertIsNotNone(data, f"{what}: exit {rc}, no JSON; stderr:\n{err[-3000:]}")
                    jobs = data["jobs"]
                    self.assertEqual(len(jobs), 16, what)
                    errs = [j["error"] for j in jobs]
                    io = [j["read"]["io_bytes"] for j in jobs]
                    bw = sum(j["read"]["bw_bytes"] for j in jobs)
                    figures.append(f"{view} {engine} {rw} {bs}: {bw / 1e6:.0f} MB/s, "
                                   f"{sum(io) >> 20} MiB, err {max(errs)}")
                    self.assertEqual((rc, errs), (0, [0] * 16), f"{what}: stderr:\n{err[-3000:]}")
                    self.assertEqual(io, [16 << 20] * 16, f"{what}: bytes read per job")
            print("\nfio (16 jobs each, verify=pattern): " + "; ".join(figures), flush=True)
            st = m.stats()
            self.assertEqual(st["errors"], 0, st)
            self.assertGreater(st["cache_evictions"], 0, st)

    def test_fio_verify_can_fail(self):
        # the check is real: a wrong pattern fails, and so does one element
        # off the pattern in the middle of the file, at the block holding it
        pat = bytearray(bytes.fromhex(self.pattern[2:]))
        pat[37] ^= 0x01
        wrong = "0x" + pat.hex()
        with self.mount(self.ini) as m:
            for engine, rw in (("psync", "randread"), ("mmap", "read")):
                with self.subTest("wrong pattern", engine=engine, rw=rw):
                    rc, data, err = self.fio(m.path("store.dat"), engine, rw, "4k", wrong, jobs=2, io=1 << 20)
                    self.assertNotEqual(rc, 0, f"fio passed a wrong pattern: {err[-2000:]}")
                    self.assertIn("verify failed", err)
                    self.assertTrue(data and all(j["error"] != 0 for j in data["jobs"]), data and data["jobs"])
            boff = self.BAD_ELEM * 4
            for engine, bs in (("psync", 4096), ("mmap", 131072)):
                with self.subTest("planted fault", engine=engine, bs=bs):
                    rc, data, err = self.fio(m.path("bad.dat"), engine, "read", str(bs), self.pattern,
                                             jobs=1, io=os.stat(m.path("bad.dat")).st_size)
                    self.assertNotEqual(rc, 0, f"fio missed the planted fault: {err[-2000:]}")
                    self.assertIn(f"verify failed at file {m.path('bad.dat')} offset {boff // bs * bs},", err)
                    self.assertIn(f"bad pattern block offset {boff % bs}", err)
            # and the bad view holds the pattern everywhere but at the planted element
            start = boff // 64 * 64 - 64
            with open(m.path("bad.dat"), "rb") as f:
                f.seek(start)
                got = f.read(192)
            want = bytes.fromhex(self.pattern[2:]) * 3
            diffs = [start + k for k in range(192) if got[k] != want[k]]
            self.assertTrue(diffs and all(boff <= d < boff + 4 for d in diffs),
                            f"bytes {diffs} differ around {boff}: {got.hex()} vs {want.hex()}")
            self.assertEqual(m.stats()["errors"], 0)
