"""window = W, stride = S, window_axis = k : windows of
each source (never across two), against windows cut in plain numpy
(common.windows_ref) and the float64 reference; strides smaller than, equal
to and larger than W; sources of different lengths, one shorter than W;
axis 0 (token streams, int64 out), the last axis (EEG) and a middle one;
rows applied after the windows; every window error names its line."""
import os

import h5py
import hdf5plugin
import numpy as np

from common import E2E, check_preads, check_whole, forked_batches, refused_at, run
from refs import FLOAT_OUT, reference, windows_ref

W = 200
MEAN, STD = [0.5, -1, 2, 0, 3], [2, 0.5, 1, 4, 0.25]
EEG_SRC = "source = e1.npy\nsource = e2.h5:/eeg\nsource = e3.npy\nsource = e4.h5:/eeg\n"


class EEG(E2E):
    """(R, 5, T) float32 recordings of four lengths; T = 150 gives no window."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        rng = np.random.default_rng(1400)
        shapes = [(3, 5, 1000), (2, 5, 730), (4, 5, 150), (2, 5, 451)]
        cls.parts = [rng.normal(0, 3000, s).astype(np.float32) for s in shapes]
        special = np.array([np.nan, np.inf, -np.inf, 1e6, -1e6, 65520, 65519, -0.0, 1e-8], np.float32)
        cls.parts[0][0, 0, 195:195 + special.size] = special  # across the first window's end
        cls.parts[3][1, 4, -special.size:] = special
        np.save(os.path.join(cls.tmp, "e1.npy"), cls.parts[0])
        with h5py.File(os.path.join(cls.tmp, "e2.h5"), "w") as f:
            f.create_dataset("eeg", data=cls.parts[1], chunks=(1, 5, 730), **hdf5plugin.LZ4())
        np.save(os.path.join(cls.tmp, "e3.npy"), cls.parts[2])
        with h5py.File(os.path.join(cls.tmp, "e4.h5"), "w") as f:
            f.create_dataset("eeg", data=cls.parts[3])

    def ref(self, stride, axis=-1):
        return np.concatenate([windows_ref(p, W, stride, axis) for p in self.parts])

    def test_tiles_decode_each_chunk_once(self):
        """Windows along the last axis are read in tiles: every LZ4 chunk of
        e2.h5 (one recording row each) is decoded once for all its windows,
        read forward and then backward."""
        ini = self.write_ini("[w]\nsource = e2.h5:/eeg\nwindow = 200\nstride = 100\n", "tiles.ini")
        ref = windows_ref(self.parts[1], W, 100, -1)
        with self.mount(ini) as m:
            rows = np.load(m.path("w.npy"), mmap_mode="r")
            got = np.stack([np.array(rows[i]) for i in list(range(len(ref))) + list(range(len(ref)))[::-1]])
            del rows
            st = m.stats()
        np.testing.assert_array_equal(got[:len(ref)], ref)
        np.testing.assert_array_equal(got[len(ref):], ref[::-1])
        self.assertEqual(st["chunks_decoded"], 2)
        self.assertGreater(st["tiles_made"], 0)

    def test_every_stride(self):
        strides = (37, 100, 200, 250, 1000)
        ini = ""
        for i, s in enumerate(strides):
            ini += f"[s{s}]\n{EEG_SRC}window = {W}\nstride = {s}\ndtype = {FLOAT_OUT[i % 3]}\n\n"
        ini += f"[dflt]\n{EEG_SRC}window = {W}\ndtype = float16\n\n"  # stride defaults to W
        ini += (f"[norm]\n{EEG_SRC}window = {W}\nstride = 100\nwindow_axis = -1\ndtype = bfloat16\n"
                f"scale = 0.5\noffset = 1\nmean = 0.5 -1 2 0 3\nstd = 2 0.5 1 4 0.25\nchannel_axis = 1\n")
        with self.mount(self.write_ini(ini, "strides.ini")) as m:
            for i, s in enumerate(strides):
                dt = FLOAT_OUT[i % 3]
                with self.subTest(stride=s, dtype=dt):
                    ref = self.ref(s)
                    meta = check_whole(self, m, f"s{s}", reference(ref, dtype=dt), dt)
                    self.assertEqual(meta.get("window"), {"size": W, "stride": s, "axis": 2})
                    n = [(t - W) // s + 1 if t >= W else 0 for t in (1000, 730, 150, 451)]
                    self.assertEqual([src.get("windows") for src in meta["sources"]], n)
                    ends = np.cumsum([r * k for r, k in zip((3, 2, 4, 2), n)]).tolist()
                    self.assertEqual([src["rows"] for src in meta["sources"]],
                                     [[a, b] for a, b in zip([0] + ends[:-1], ends)])
            meta = check_whole(self, m, "dflt", reference(self.ref(W), dtype="float16"), "float16")
            self.assertEqual(meta["window"], {"size": W, "stride": W, "axis": 2})
            check_whole(self, m, "norm", reference(self.ref(100), 0.5, 1, MEAN, STD, 1, dtype="bfloat16"),
                        "bfloat16")

    def test_rows_after_windows(self):
        n = len(self.ref(100))  # 3*9 + 2*6 + 0 + 2*3 = 45 windows
        idx = np.array([n - 1, 0, 0, 26, 27, 38, 39, -1, 5, 5, 44, 30], np.int64)
        np.save(self.p("widx.npy"), idx)
        ini = (f"[ri]\n{EEG_SRC}window = {W}\nstride = 100\nrows = @widx.npy\ndtype = float16\n"
               f"[rs]\n{EEG_SRC}window = {W}\nstride = 100\nrows = ::-3\ndtype = float32\n"
               f"[re]\n{EEG_SRC}window = {W}\nstride = 100\nrows = 45:\n")
        with self.mount(self.write_ini(ini, "rw.ini")) as m:
            ref = self.ref(100)
            self.assertEqual(len(ref), 45)
            meta = check_whole(self, m, "ri", reference(ref[idx], dtype="float16"), "float16")
            self.assertEqual(meta["rows"]["count"], len(idx))
            self.assertEqual(meta["window"]["stride"], 100)
            check_whole(self, m, "rs", reference(ref[::-3]), "float32")
            check_whole(self, m, "re", np.zeros((0, 5, W), np.float32), "float32")

    def test_preads_and_workers(self):
        ini = self.write_ini(f"[w]\n{EEG_SRC}window = {W}\nstride = 100\ndtype = float16\n", "pw.ini")
        ref = reference(self.ref(100), dtype="float16")
        with self.mount(ini, "--cache-size", "128K") as m:
            # every window of the first row, and the source boundaries 27, 39, 39 (no windows), 45
            check_preads(self, m, "w", ref, rows=list(range(10)) + [26, 27, 38, 39, 44], seed=7)
            forked_batches(self, m, "w", ref)

    def test_middle_axis(self):
        rng = np.random.default_rng(1401)
        a = rng.integers(0, 256, (4, 300, 3), dtype=np.uint8)
        b = rng.integers(0, 256, (2, 77, 3), dtype=np.uint8)
        np.save(self.p("m1.npy"), a)
        np.save(self.p("m2.npy"), b)
        ini = ("[m]\nsource = m1.npy\nsource = m2.npy\nwindow = 50\nstride = 25\nwindow_axis = 1\n"
               "scale = 0.00392156862745098\nmean = 0.485 0.456 0.406\nstd = 0.229 0.224 0.225\n"
               "[mneg]\nsource = m1.npy\nsource = m2.npy\nwindow = 50\nstride = 25\nwindow_axis = -2\n"
               "dtype = float16\n")
        with self.mount(self.write_ini(ini, "mid.ini")) as m:
            win = np.concatenate([windows_ref(a, 50, 25, 1), windows_ref(b, 50, 25, 1)])
            self.assertEqual(win.shape, (4 * 11 + 2 * 2, 50, 3))
            meta = check_whole(self, m, "m", reference(win, 1 / 255, 0, [0.485, 0.456, 0.406],
                                                       [0.229, 0.224, 0.225], -1), "float32")
            self.assertEqual(meta["window"], {"size": 50, "stride": 25, "axis": 1})
            meta = check_whole(self, m, "mneg", win.astype(np.float16), "float16")
            self.assertEqual(meta["window"]["axis"], 1)
        ini = self.write_ini("[i]\nsource = m1.npy\nsource = m2.npy\nwindow = 50\nstride = 25\nwindow_axis = 1\n"
                             "dtype = int16\n", "midint.ini")
        with self.mount(ini) as m:
            check_whole(self, m, "i", win.astype(np.int16), "int16")

    def test_info_says_which_source_has_no_window(self):
        ini = self.write_ini(f"[w]\n{EEG_SRC}window = {W}\nstride = 100\ndtype = float16\n"
                             "[plain]\nsource = e1.npy\n", "info.ini")
        r = run("info", ini)
        self.assertEqual(r.returncode, 0, r.stderr)
        out = r.stdout
        self.assertIn("window", out)
        self.assertIn("contributes no window", out)
        self.assertIn("(45, 5, 200) float16", out)
        lines = out.splitlines()
        k = next(i for i, l in enumerate(lines) if "contributes no window" in l)
        self.assertIn("150", lines[k], "the note gives the source's length")
        self.assertIn("e3.npy", lines[k - 1] + lines[k], "the note is on e3.npy's line or the next")
        self.assertEqual(sum("contributes no window" in l for l in lines), 1, out)

    def test_errors(self):
        np.save(self.p("six.npy"), np.zeros((3, 6, 1000), np.float32))
        head = "[v]\nsource = e1.npy\nsource = e3.npy\n"  # keys from line 4
        cases = [
            ("window = 0\n", 4, ["window"]),
            ("window = -5\n", 4, ["window"]),
            ("window = abc\n", 4, ["window"]),
            ("window = 1001\n", 4, ["window"]),  # larger than every source (1000, 150)
            ("window = 100\nstride = 0\n", 5, ["stride"]),
            ("window = 100\nstride = -1\n", 5, ["stride"]),
            ("window = 100\nstride = 2x\n", 5, ["stride"]),
            ("stride = 10\n", 4, ["stride"]),
            ("window_axis = 1\n", 4, ["window_axis"]),
            ("window = 100\nwindow_axis = 3\n", 5, ["window_axis"]),
            ("window = 100\nwindow_axis = -4\n", 5, ["window_axis"]),
            ("window = 100\nwindow_axis = x\n", 5, ["window_axis"]),
        ]
        for text, line, want in cases:
            with self.subTest(keys=text):
                refused_at(self, head + text, line, want)
        with self.subTest("windowed rows differ in another axis"):
            refused_at(self, "[v]\nsource = e1.npy\nsource = six.npy\nwindow = 100\n", {3, 4}, [])


class Tokens(E2E):
    """1-D uint16 token streams: window_axis 0, int64 out."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        rng = np.random.default_rng(1402)
        cls.t = [rng.integers(0, 65536, n, dtype=np.uint16) for n in (20000, 3000, 500, 5000)]
        cls.t[0][:4] = [0, 65535, 1, 65534]
        cls.t[0].tofile(os.path.join(cls.tmp, "t1.bin"))
        np.save(os.path.join(cls.tmp, "t2.npy"), cls.t[1])
        np.save(os.path.join(cls.tmp, "t3.npy"), cls.t[2])
        with h5py.File(os.path.join(cls.tmp, "t4.h5"), "w") as f:
            f.create_dataset("tok", data=cls.t[3], chunks=(1024,), **hdf5plugin.LZ4())
        cls.src = ("source = t1.bin\nsource = t2.npy\nsource = t3.npy\nsource = t4.h5:/tok\n"
                   "source_dtype = uint16\nsource_shape = -1\n")

    def test_axis0_every_stride(self):
        # int64 (token ids for an embedding) and float32 (exact for these
        # values): separate mounts, so one output kind failing leaves the other checked
        strides = (1024, 1025, 1100, 300)
        for out, nd in (("float32", np.float32), ("int64", np.int64)):
            with self.subTest(dtype=out):
                ini = "".join(f"[t{s}]\n{self.src}window = 1025\nstride = {s}\nwindow_axis = 0\ndtype = {out}\n\n"
                              for s in strides)
                ini += f"[d]\n{self.src}window = 1025\nstride = 1024\ndtype = {out}\n"  # axis -1 = 0 here
                with self.mount(self.write_ini(ini, f"tok_{out}.ini")) as m:
                    for s in strides:
                        with self.subTest(stride=s, dtype=out):
                            ref = np.concatenate([windows_ref(t, 1025, s, 0) for t in self.t]).astype(nd)
                            meta = check_whole(self, m, f"t{s}", ref, out)
                            self.assertEqual(meta["window"], {"size": 1025, "stride": s, "axis": 0})
                            n = [(len(t) - 1025) // s + 1 if len(t) >= 1025 else 0 for t in self.t]
                            self.assertEqual([src.get("windows") for src in meta["sources"]], n)
                    ref = np.concatenate([windows_ref(t, 1025, 1024, 0) for t in self.t]).astype(nd)
                    meta = check_whole(self, m, "d", ref, out)
                    self.assertEqual(meta["window"]["axis"], 0)
                    starts = np.cumsum([0] + [(len(t) - 1025) // 1024 + 1 if len(t) >= 1025 else 0 for t in self.t])
                    check_preads(self, m, "t1024", ref, rows=[1, 2] + starts.tolist(), seed=9)
                    forked_batches(self, m, "t1024", ref)

    def test_2d_source_axis0(self):
        x = np.random.default_rng(1403).integers(0, 256, (700, 3), dtype=np.uint8)
        np.save(self.p("x2.npy"), x)
        for out, nd in (("float16", np.float16), ("int16", np.int16)):
            with self.subTest(dtype=out):
                ini = self.write_ini(f"[x]\nsource = x2.npy\nwindow = 64\nstride = 32\nwindow_axis = 0\n"
                                     f"dtype = {out}\n[y]\nsource = x2.npy\nwindow = 2\nwindow_axis = -1\n"
                                     f"dtype = {out}\n", f"x2_{out}.ini")
                with self.mount(ini) as m:
                    check_whole(self, m, "x", windows_ref(x, 64, 32, 0).astype(nd), out)
                    ref = windows_ref(x, 2, 2, 1)  # (700, 2): one window of 2 of each 3-long row
                    self.assertEqual(ref.shape, (700, 2))
                    check_whole(self, m, "y", ref.astype(nd), out)

    def test_overlapping_windows_decode_each_chunk_once(self):
        t = np.random.default_rng(1404).integers(0, 50000, 40960, dtype=np.uint16)
        with h5py.File(self.p("ov.h5"), "w") as f:
            f.create_dataset("tok", data=t, chunks=(2048,), **hdf5plugin.LZ4())
        ini = self.write_ini("[plain]\nsource = ov.h5:/tok\n"
                             "[win]\nsource = ov.h5:/tok\nwindow = 1025\nstride = 512\n", "ov.ini")
        with self.mount(ini) as m:
            check_whole(self, m, "plain", t.astype(np.float32), "float32")
            plain = m.stats()["chunks_decoded"]
        self.assertGreaterEqual(plain, 20)
        with self.mount(ini) as m:
            with open(m.path("win.dat"), "rb") as f:
                got = f.read()
            st = m.stats()
            self.assertEqual(got, windows_ref(t, 1025, 512, 0).astype(np.float32).tobytes())
            self.assertEqual(st["chunks_decoded"], plain, "a 50%-overlap window view decoded chunks more than once")
