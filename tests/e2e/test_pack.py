"""dsview pack: round trips (pack -> mount -> read equals the float64
reference; pack -> h5py+hdf5plugin equals the input), the store format, and
every bad input of the issue: a clear one-line error, exit 1, no output
file and no temporary left behind."""
import glob
import json
import os
import pty
import select
import signal
import subprocess
import time

import h5py
import hdf5plugin  # noqa: F401  (registers the LZ4 filter for h5py)
import numpy as np

from common import DSVIEW, E2E, flip_byte, run
from refs import reference

MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]


def image_like(n, h=32, w=48, seed=0):
    """uint8 HWC frames with flat areas and edges, as LZ4 sees photos:
    compressible, but not trivially."""
    rng = np.random.default_rng(seed)
    x = np.empty((n, h, w, 3), np.uint8)
    yy, xx = np.mgrid[0:h, 0:w]
    for i in range(n):
        cx, cy, r = rng.uniform(0, w), rng.uniform(0, h), rng.uniform(4, 20)
        inside = (xx - cx) ** 2 + (yy - cy) ** 2 < r * r
        x[i] = rng.integers(0, 256, 3, dtype=np.uint8)
        x[i][inside] = rng.integers(0, 256, 3, dtype=np.uint8)
        x[i, ::7, ::5] = rng.integers(0, 256, (len(range(0, h, 7)), len(range(0, w, 5)), 3))
    return x


class Pack(E2E):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.img = image_like(500)
        np.save(cls.p(cls, "img.npy"), cls.img)
        rng = np.random.default_rng(7)
        cls.betas = rng.integers(-3000, 3000, (60, 7, 9, 11), dtype=np.int16)
        with h5py.File(cls.p(cls, "betas.h5"), "w") as f:
            f.create_dataset("sess/betas", data=cls.betas, chunks=(5, 7, 9, 11),
                             compression="gzip", shuffle=True)
        cls.eeg = rng.standard_normal((40, 16, 50)).astype(np.float32)
        cls.eeg.tofile(cls.p(cls, "eeg.bin"))

    def pack(self, *args, rc=0):
        r = run("pack", *args, timeout=120)
        self.assertEqual(r.returncode, rc, f"pack {args}: {r.stdout}{r.stderr}")
        return r

    def leftovers(self, out):
        return glob.glob(out + ".tmp-*")

    def test_npy_roundtrip_all_codecs(self):
        for codec in ("lz4", "lz4hc", "none"):
            with self.subTest(codec=codec):
                out = self.p(f"img_{codec}.h5")
                r = self.pack("--codec", codec, "--chunk-size", "100k", self.p("img.npy"), out)
                lines = r.stdout.strip().splitlines()
                self.assertEqual(len(lines), 1, "not a terminal: one summary line")
                self.assertIn("500 rows", lines[0])
                self.assertEqual(r.stderr, "")
                self.assertEqual(self.leftovers(out), [])
                row = 32 * 48 * 3
                with h5py.File(out, "r") as f:
                    d = f["img"]
                    self.assertEqual(d.shape, self.img.shape)
                    self.assertEqual(d.dtype, np.uint8)
                    # whole rows, about 100 KiB per chunk
                    self.assertEqual(d.chunks, (round(100 * 1024 / row), 32, 48, 3))
                    self.assertTrue(d.fletcher32)
                    if codec != "none":
                        self.assertIn("32004", d._filters)
                    else:
                        self.assertNotIn("32004", d._filters)
                    # h5py + hdf5plugin decode (and checksum) every chunk
                    self.assertTrue(np.array_equal(d[...], self.img))
                    meta = json.loads(d.attrs["dsview"])
                    self.assertEqual(meta["format"], "dsview-store")
                    self.assertEqual(meta["codec"], codec)
                    self.assertEqual(meta["chunk_rows"], d.chunks[0])
                    self.assertEqual(meta["shape"], list(self.img.shape))
                    self.assertEqual(meta["dtype"], "uint8")
                    self.assertEqual(meta["raw_bytes"], self.img.nbytes)
                    if codec == "lz4":
                        stored = sum(d.id.get_chunk_info(i).size for i in range(d.id.get_num_chunks()))
                        self.assertLess(stored, self.img.nbytes * 0.8, "image-like data compresses")
                ini = self.write_ini(f"[v]\nsource = img_{codec}.h5:/img\ndtype = bfloat16\n"
                                     f"scale = {1/255!r}\nmean = 0.485 0.456 0.406\n"
                                     f"std = 0.229 0.224 0.225\n", f"v_{codec}.ini")
                with self.mount(ini) as m:
                    got = np.load(m.path("v.npy"), mmap_mode="r")
                    self.assertBits(np.array(got), reference(self.img, 1 / 255, 0, MEAN, STD,
                                                             dtype="bfloat16"),
                                    f"{codec} store through the mount", "bfloat16")
                    del got
                    src = json.load(open(m.path("v.json")))["sources"][0]
                    self.assertNotEqual(src["kind"], "hdf5-library", "stores take the fast path")

    def test_h5py_verifies_our_checksums_and_repack(self):
        out = self.p("chk.h5")
        self.pack("--chunk-size", "64k", self.p("img.npy"), out)
        # repack the store itself (fast-path input) with lz4hc
        self.pack("--codec", "lz4hc", "--level", "4", out + ":/img", self.p("chk_hc.h5"))
        with h5py.File(self.p("chk_hc.h5"), "r") as f:
            self.assertTrue(np.array_equal(f["img"][...], self.img))
        with h5py.File(out, "r") as f:
            info = f["img"].id.get_chunk_info(3)
            rows = f["img"].chunks[0]
        flip_byte(out, info.byte_offset + info.size // 2, 0x10)
        with h5py.File(out, "r") as f:
            self.assertTrue(np.array_equal(f["img"][:3 * rows], self.img[:3 * rows]))
            with self.assertRaises(OSError, msg="h5py must reject the damaged chunk"):
                f["img"][3 * rows:4 * rows]

    def test_hdf5_input_through_the_library(self):
        out = self.p("betas_store.h5")
        r = self.pack("--dataset", "b", "--chunk-size", "8k", self.p("betas.h5") + ":/sess/betas", out)
        self.assertIn(":/b", r.stdout)
        with h5py.File(out, "r") as f:
            self.assertTrue(np.array_equal(f["b"][...], self.betas))
            self.assertEqual(f["b"].chunks[0], round(8192 / (7 * 9 * 11 * 2)))
        with self.mount(self.write_ini("[b]\nsource = betas_store.h5:/b\nscale = 0.0033333333333333335\n",
                                       "b.ini")) as m:
            self.assertBits(np.load(m.path("b.npy")), reference(self.betas, 0.0033333333333333335),
                            "int16 store")

    def test_zarr_input(self):
        # a Zarr array whose chunks split rows, Fortran order, Blosc: pack
        # reads it through dsview's grid and names the dataset after it
        import numcodecs
        import zarr
        x = (np.arange(60 * 10 * 7) % 1999).astype(np.int16).reshape(60, 10, 7)
        z = zarr.open(self.p("arr.zarr"), mode="w", shape=x.shape, chunks=(8, 4, 7), dtype="<i2",
                      order="F", compressor=numcodecs.Blosc(cname="lz4", shuffle=1))
        z[:] = x
        for src in ("arr.zarr", "arr.zarr/"):
            out = self.p("zarr_store.h5")
            r = self.pack("--force", "--chunk-size", "2k", self.p(src), out)
            self.assertIn(":/arr", r.stdout)
            with h5py.File(out, "r") as f:
                self.assertTrue(np.array_equal(f["arr"][...], x))
        with self.mount(self.write_ini("[z]\nsource = zarr_store.h5:/arr\nscale = 0.5\n", "z.ini")) as m:
            self.assertBits(np.load(m.path("z.npy")), reference(x, 0.5), "zarr -> store")

    def test_raw_input_rows_inferred(self):
        out = self.p("eeg.h5")
        self.pack("--source-dtype", "float32", "--source-shape", "-1,16,50", self.p("eeg.bin"), out)
        with h5py.File(out, "r") as f:
            self.assertTrue(np.array_equal(f["eeg"][...], self.eeg))
        with self.mount(self.write_ini("[e]\nsource = eeg.h5:/eeg\ndtype = float16\n", "e.ini")) as m:
            self.assertBits(np.load(m.path("e.npy")), reference(self.eeg, dtype="float16"),
                            "float32 raw -> store -> float16", "float16")

    def test_other_dtypes_and_edge_chunk(self):
        rng = np.random.default_rng(3)
        for dt in ("int8", "uint16", "uint32", "int32", "float16", "float64"):
            with self.subTest(dtype=dt):
                if dt.startswith("float"):
                    x = rng.standard_normal((37, 5, 3)).astype(dt)
                else:
                    info = np.iinfo(dt)
                    x = rng.integers(info.min, info.max, (37, 5, 3), dtype=dt, endpoint=True)
                np.save(self.p(f"x_{dt}.npy"), x)
                out = self.p(f"x_{dt}.h5")
                # 37 rows in chunks of 8: the last chunk holds 5
                self.pack("--chunk-size", str(8 * x[0].nbytes), self.p(f"x_{dt}.npy"), out)
                with h5py.File(out, "r") as f:
                    self.assertEqual(f[f"x_{dt}"].chunks[0], 8)
                    self.assertEqual(f[f"x_{dt}"].dtype, np.dtype(dt))
                    self.assertTrue(np.array_equal(f[f"x_{dt}"][...], x))
                with self.mount(out, "--dtype", "float32") as m:
                    self.assertBits(np.load(m.path(f"x_{dt}.npy")), reference(x), dt)

    def test_big_rows_one_per_chunk(self):
        x = image_like(6, 256, 256)  # 196 KB rows, 64 KiB chunks asked: one row each
        np.save(self.p("big.npy"), x)
        self.pack("--chunk-size", "64k", self.p("big.npy"), self.p("big.h5"))
        with h5py.File(self.p("big.h5"), "r") as f:
            self.assertEqual(f["big"].chunks, (1, 256, 256, 3))
            self.assertTrue(np.array_equal(f["big"][...], x))

    def test_existing_output_needs_force(self):
        out = self.p("exists.h5")
        with open(out, "wb") as f:
            f.write(b"precious")
        r = self.pack(self.p("img.npy"), out, rc=1)
        self.assertIn("--force", r.stderr)
        self.assertEqual(open(out, "rb").read(), b"precious")
        self.pack("--force", self.p("img.npy"), out)
        with h5py.File(out, "r") as f:
            self.assertTrue(np.array_equal(f["img"][...], self.img))
        self.assertEqual(self.leftovers(out), [])

    def test_stale_temporary_of_a_killed_pack_is_removed(self):
        out = self.p("stale.h5")
        # a pid that cannot be running (above pid_max)
        dead = out + ".tmp-99999999-abcdef"
        live = out + f".tmp-{os.getpid()}-abcdef"
        for p in (dead, live):
            open(p, "wb").close()
        self.pack(self.p("img.npy"), out)
        self.assertFalse(os.path.exists(dead), "a dead pack's temporary is removed")
        self.assertTrue(os.path.exists(live), "a running pack's temporary is left alone")
        os.unlink(live)

    def test_progress_bar_on_a_terminal(self):
        x = np.zeros((4000, 64, 64, 3), np.uint8)
        np.save(self.p("zeros.npy"), x)
        pid, fd = pty.fork()
        if pid == 0:
            os.execv(DSVIEW, [DSVIEW, "pack", "--codec", "lz4hc", "--level", "12", "--threads", "1",
                              "--chunk-size", "64k", self.p("zeros.npy"), self.p("zeros.h5")])
        out = b""
        while True:
            try:
                r, _, _ = select.select([fd], [], [], 60)
                chunk = os.read(fd, 4096) if r else b""
            except OSError:
                break
            if not chunk:
                break
            out += chunk
        _, status = os.waitpid(pid, 0)
        self.assertEqual(os.waitstatus_to_exitcode(status), 0, out)
        text = out.decode(errors="replace")
        self.assertIn("pack [", text, "a bar is drawn on a terminal")
        self.assertIn("/4000 rows", text)
        self.assertRegex(text, r"\x1b\[Kpacked .*4000 rows", "the bar is erased before the summary")


class PackErrors(E2E):
    """Each bad input: exit 1, one line 'dsview: ...' naming the file and
    the reason, no output and no temporary file."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        np.save(cls.p(cls, "ok.npy"), np.arange(3000 * 512, dtype=np.uint8).reshape(3000, 512))
        np.save(cls.p(cls, "cplx.npy"), np.zeros((4, 3), np.complex64))
        with open(cls.p(cls, "odd.bin"), "wb") as f:
            f.write(b"\0" * 1001)
        with h5py.File(cls.p(cls, "f.h5"), "w") as f:
            f["d"] = np.zeros((4, 3), np.uint8)
        with h5py.File(cls.p(cls, "two.h5"), "w") as f:
            f["a"] = np.zeros((4, 3), np.uint8)
            f["g/b"] = np.ones((4, 3), np.uint8)

    def bad(self, *args, want, out=None):
        out = out or self.p("out.h5")
        r = run("pack", *args, out, timeout=60)
        self.assertEqual(r.returncode, 1, f"{args}: {r.stdout} {r.stderr}")
        lines = r.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, r.stderr)
        self.assertTrue(lines[0].startswith("dsview: "), lines[0])
        for w in [want] if isinstance(want, str) else want:
            self.assertIn(w, lines[0])
        self.assertFalse(os.path.exists(out), "no output file")
        self.assertEqual(glob.glob(out + ".tmp-*"), [], "no temporary file")
        return lines[0]

    def test_bad_inputs(self):
        self.bad(self.p("missing.npy"), want=["missing.npy", "No such file"])
        self.bad(self.p("f.h5") + ":/nope", want=["f.h5", "/nope"])
        # a file of datasets named without one must hold exactly one
        self.bad(self.p("two.h5"), want=["two.h5", "has 2 datasets; name one as "])
        self.bad(self.p("cplx.npy"), want=["cplx.npy", "c8"])
        self.bad("--source-dtype", "complex64", "--source-shape", "-1,3", self.p("odd.bin"),
                 want="complex64")
        self.bad("--source-dtype", "uint16", "--source-shape", "-1,10", self.p("odd.bin"),
                 want=["odd.bin", "whole number of rows"])
        self.bad(self.p("odd.bin"), want=["odd.bin", "--source-dtype and --source-shape"])
        self.bad("--codec", "zstandard", self.p("ok.npy"), want="--codec")
        self.bad("--codec", "lz4hc", "--level", "13", self.p("ok.npy"), want="1 to 12")
        self.bad("--dataset", "a/b", self.p("ok.npy"), want="--dataset")

    def test_only_dataset_of_a_file(self):
        out = self.p("only.h5")
        self.assertIn("4 rows", run("pack", self.p("f.h5"), out, timeout=60).stdout)
        with h5py.File(out) as f:
            np.testing.assert_array_equal(f["f"][()], np.zeros((4, 3), np.uint8))  # named for the file
        os.unlink(out)

    def test_output_directory_missing_or_read_only(self):
        self.bad(self.p("ok.npy"), out=self.p("nodir/out.h5"), want=["nodir", "No such file"])
        ro = self.p("ro")
        os.mkdir(ro)
        subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", ro], check=True)
        try:
            self.bad(self.p("ok.npy"), out=os.path.join(ro, "out.h5"), want="Read-only file system")
        finally:
            subprocess.run(["umount", ro])

    def small_fs(self, size):
        d = self.p(f"small{time.monotonic_ns()}")
        os.mkdir(d)
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", d], check=True)
        self.addCleanup(subprocess.run, ["umount", d])
        return d

    def test_disk_full_known_before_writing(self):
        d = self.small_fs("512k")
        self.bad("--codec", "none", self.p("ok.npy"), out=os.path.join(d, "out.h5"),
                 want=["not enough free space", "needs about"])
        self.assertEqual(os.listdir(d), [])

    def test_disk_full_while_writing(self):
        # The free-space estimate samples 8 chunks spread over the input;
        # make exactly those compress to nothing and the rest incompressible,
        # so the estimate passes and the disk fills up mid-write.
        rows, chunk_rows = 40 * 64, 64
        x = np.random.default_rng(1).integers(0, 256, (rows, 1024), dtype=np.uint8)
        n = 40
        for k in range(8):
            i = k * (n - 1) // 7
            x[i * chunk_rows:(i + 1) * chunk_rows] = 0
        np.save(self.p("tricky.npy"), x)
        d = self.small_fs("1m")
        self.bad("--chunk-size", "64k", self.p("tricky.npy"), out=os.path.join(d, "out.h5"),
                 want=["out.h5", "No space left on device"])
        self.assertEqual(os.listdir(d), [])

    def test_sigint_mid_pack(self):
        # LZ4HC at level 12 on 3-bit noise: seconds of work on one thread
        x = np.random.default_rng(2).integers(0, 8, (20000, 4096), dtype=np.uint8)
        np.save(self.p("slow.npy"), x)
        for sig in (signal.SIGINT, signal.SIGTERM):
            with self.subTest(signal=sig.name):
                out = self.p("sig.h5")
                p = subprocess.Popen([DSVIEW, "pack", "--codec", "lz4hc", "--level", "12",
                                      "--threads", "1", self.p("slow.npy"), out],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                deadline = time.time() + 20
                while not glob.glob(out + ".tmp-*") and time.time() < deadline:
                    time.sleep(0.02)
                time.sleep(0.3)
                self.assertIsNone(p.poll(), "pack finished before the signal")
                p.send_signal(sig)
                o, e = p.communicate(timeout=60)
                self.assertEqual(p.returncode, 1, o + e)
                self.assertEqual(e.strip().splitlines(), [f"dsview: pack interrupted; {out} not written"])
                self.assertFalse(os.path.exists(out))
                self.assertEqual(glob.glob(out + ".tmp-*"), [])

    def test_killed_at_random_points(self):
        # signals at uniformly random moments of a ~1 s pack, from before
        # it opens its input to after its rename: the output is either
        # absent or complete and right; a caught signal leaves no
        # temporary; SIGKILL's temporary is removed by the next pack
        x = np.random.default_rng(3).integers(0, 8, (8000, 4096), dtype=np.uint8)
        np.save(self.p("rand.npy"), x)
        out = self.p("rand.h5")
        cmd = [DSVIEW, "pack", "--codec", "lz4hc", "--level", "4", "--threads", "2",
               self.p("rand.npy"), out]
        t0 = time.time()
        self.assertEqual(subprocess.run(cmd, capture_output=True).returncode, 0)
        full = time.time() - t0
        os.unlink(out)
        rng = np.random.default_rng(int(time.time()))
        sigs = [signal.SIGKILL, signal.SIGTERM, signal.SIGINT, signal.SIGHUP] * 3
        seen = {"killed": 0, "finished": 0}
        for k, sig in enumerate(sigs):
            delay = float(rng.uniform(0, 1.1 * full))
            with self.subTest(k=k, sig=sig.name, delay=round(delay, 3)):
                p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                time.sleep(delay)
                p.send_signal(sig)
                o, e = p.communicate(timeout=60)
                temps = glob.glob(out + ".tmp-*")
                if os.path.exists(out):
                    # it got as far as the rename (SIGKILL may still land
                    # before exit): the file must be whole and right
                    seen["finished"] += 1
                    try:
                        with h5py.File(out, "r") as f:
                            self.assertTrue(np.array_equal(f["rand"][...], x))
                    finally:
                        os.unlink(out)
                    if sig != signal.SIGKILL:
                        self.assertEqual(p.returncode, 0, e)
                else:
                    seen["killed"] += 1
                    if sig != signal.SIGKILL:
                        self.assertIn(p.returncode, (1, -sig), e)
                        self.assertEqual(temps, [], "a caught signal left its temporary")
                self.assertTrue(all(f"tmp-{p.pid}-" in t for t in temps), temps)
                # the next pack removes what a killed one left
                self.assertEqual(subprocess.run(cmd, capture_output=True).returncode, 0)
                self.assertEqual(glob.glob(out + ".tmp-*"), [])
                os.unlink(out)
        self.assertGreater(seen["killed"], 0, seen)

    def test_memory_stays_flat(self):
        # 256 MB of input, 1 MiB chunks: the pack's peak RSS stays far below
        # the input size (it streams row blocks).
        x = np.lib.format.open_memmap(self.p("large.npy"), "w+", np.uint8, (4096, 65536))
        for i in range(0, 4096, 512):
            x[i:i + 512] = (np.arange(65536, dtype=np.uint32) * (i + 1) >> 7).astype(np.uint8)
        del x
        # measured in a fresh process: RUSAGE_CHILDREN keeps the maximum
        # over every child this one ever waited for
        meter = ("import resource, subprocess, sys; r = subprocess.run(sys.argv[1:]); "
                 "print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
        r = subprocess.run(["/usr/bin/python3", "-c", meter, DSVIEW, "pack", self.p("large.npy"),
                            self.p("large.h5")], capture_output=True, text=True, timeout=300)
        rc, peak_kb = map(int, r.stdout.split()[-2:])
        self.assertEqual(rc, 0, r.stdout + r.stderr)
        self.assertLess(peak_kb * 1024, 64 << 20, f"pack peak RSS {peak_kb} kB for 256 MB input")
        os.unlink(self.p("large.h5"))
        os.unlink(self.p("large.npy"))
