"""layout = CHW, mean/std as one scalar, a per-channel list, an @array per
element or per channel, per_source = true, and mixed source dtypes, against the float64 reference rounded once
(docs/transform.md); every error
of those keys names its line."""
import glob
import os

import h5py
import hdf5plugin
import numpy as np

from common import E2E, check_preads, check_whole, forked_batches, refused_at, run
from refs import FLOAT_OUT, reference, round_out

MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
S255 = 1 / 255
S300 = 0.0033333333333333335


def ref_arrays(x, scale, offset, mean, std, dtype):
    """(x*scale + offset - mean) / std in float64 with mean/std broadcast
    against each row (any array shape numpy broadcasts), rounded once."""
    y = x.astype(np.float64) * scale + offset
    y = (y - np.asarray(mean, np.float64)) / np.asarray(std, np.float64)
    return round_out(y, dtype)


def chw(a):
    """HWC rows -> CHW rows: the row's last axis to the front of the row."""
    return np.ascontiguousarray(np.moveaxis(a, -1, 1))


class Layout(E2E):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        rng = np.random.default_rng(1420)
        cls.img = rng.integers(0, 256, (31, 7, 9, 3), dtype=np.uint8)  # odd H, W
        cls.img[0].flat[:256] = np.arange(256)
        cls.img[1, 0, 0] = 124
        cls.img5 = rng.integers(0, 256, (13, 5, 3, 5), dtype=np.uint8)  # odd C
        np.save(os.path.join(cls.tmp, "img.npy"), cls.img)
        with h5py.File(os.path.join(cls.tmp, "img.h5"), "w") as f:
            f.create_dataset("img", data=cls.img, chunks=(4, 7, 9, 3), **hdf5plugin.LZ4())
            f.create_dataset("img5", data=cls.img5, chunks=(5, 5, 3, 5), **hdf5plugin.LZ4())

    def test_chw_every_dtype(self):
        norm = f"scale = {S255!r}\nmean = 0.485 0.456 0.406\nstd = 0.229 0.224 0.225\n"
        ini = ""
        for dt in FLOAT_OUT:
            ini += f"[c_{dt}]\nsource = img.npy\nlayout = CHW\ndtype = {dt}\n{norm}\n"
        ini += f"[c_axis1]\nsource = img.h5:/img\nlayout = CHW\nchannel_axis = 1\n{norm}\n"
        ini += f"[c_neg3]\nsource = img.h5:/img\nlayout = CHW\nchannel_axis = -3\ndtype = float16\n{norm}\n"
        ini += ("[c5]\nsource = img.h5:/img5\nlayout = CHW\ndtype = bfloat16\nscale = 0.5\noffset = -3\n"
                "mean = 1 2 3 4 5\nstd = 0.5 1 2 4 8\nclip = -10 60\n\n")
        ini += "[c_plain]\nsource = img.npy\nlayout = CHW\ndtype = float16\n\n"
        ini += f"[hwc]\nsource = img.npy\nlayout = HWC\n{norm}\n[none]\nsource = img.npy\nlayout = none\n"
        with self.mount(self.write_ini(ini, "chw.ini")) as m:
            for dt in FLOAT_OUT:
                with self.subTest(dtype=dt):
                    ref = chw(reference(self.img, S255, 0, MEAN, STD, -1, dtype=dt))
                    self.assertEqual(ref.shape, (31, 3, 7, 9))
                    meta = check_whole(self, m, "c_" + dt, ref, dt)
                    self.assertEqual(meta.get("layout"), "CHW")
                    self.assertEqual(meta["transform"]["mean"], MEAN)
            ref = chw(reference(self.img, S255, 0, MEAN, STD, -1))
            check_whole(self, m, "c_axis1", ref, "float32")
            check_preads(self, m, "c_axis1", ref, rows=(3, 4, 8, 30), seed=5)
            check_whole(self, m, "c_neg3", chw(reference(self.img, S255, 0, MEAN, STD, -1, dtype="float16")),
                        "float16")
            ref = chw(reference(self.img5, 0.5, -3, [1, 2, 3, 4, 5], [0.5, 1, 2, 4, 8], -1, clip=(-10, 60),
                                dtype="bfloat16"))
            self.assertEqual(ref.shape, (13, 5, 5, 3))
            check_whole(self, m, "c5", ref, "bfloat16")
            check_whole(self, m, "c_plain", chw(self.img.astype(np.float16)), "float16")
            meta = check_whole(self, m, "hwc", reference(self.img, S255, 0, MEAN, STD, -1), "float32")
            self.assertIsNone(meta.get("layout"))
            meta = check_whole(self, m, "none", self.img.astype(np.float32), "float32")
            self.assertIsNone(meta.get("layout"))

    def test_chw_2d_rows_with_rows_and_workers(self):
        rng = np.random.default_rng(1421)
        sig = rng.integers(-3000, 3000, (60, 101, 3), dtype=np.int16)  # (N, L, C) -> (N, C, L)
        np.save(self.p("sig.npy"), sig)
        idx = rng.integers(0, 60, 90)
        np.save(self.p("sig_idx.npy"), idx)
        ini = self.write_ini("[s]\nsource = sig.npy\nlayout = CHW\nrows = @sig_idx.npy\ndtype = bfloat16\n"
                             "scale = 0.01\nmean = 1 -2 3\nstd = 10 20 30\n", "sig.ini")
        with self.mount(ini, "--cache-size", "64K") as m:
            ref = chw(reference(sig, 0.01, 0, [1, -2, 3], [10, 20, 30], -1, dtype="bfloat16"))[idx]
            meta = check_whole(self, m, "s", ref, "bfloat16")
            self.assertEqual(meta["shape"], [90, 3, 101])
            forked_batches(self, m, "s", ref)

    def test_errors(self):
        np.save(self.p("flat.npy"), np.zeros((5, 12), np.uint8))
        cases = [
            ("[v]\nsource = img.npy\nlayout = WHC\n", 3, ["layout"]),
            ("[v]\nsource = img.npy\nlayout = \n", 3, ["layout"]),
            ("[v]\nsource = flat.npy\nlayout = CHW\n", 3, ["layout"]),
            ("[v]\nsource = img.h5:/img5\nlayout = CHW\nmean = 1 2 3\nstd = 1 1 1\n", 4, ["3"]),
            # channel_axis -1 of the CHW output is W (9): three values do not fit
            ("[v]\nsource = img.npy\nlayout = CHW\nchannel_axis = -1\nmean = 1 2 3\nstd = 1 1 1\n", {4, 5},
             ["3"]),
        ]
        for text, line, want in cases:
            with self.subTest(ini=text):
                refused_at(self, text, line, want)


class Arrays(E2E):
    """mean/std as scalars and @arrays; per_source; mixed source dtypes."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        rng = np.random.default_rng(1422)
        cls.row = (4, 5, 6)
        cls.sess = [rng.integers(-32768, 32767, (n,) + cls.row, dtype=np.int16, endpoint=True)
                    for n in (20, 30, 25)]
        cls.sess[0][0].flat[:2] = [-32768, 32767]
        np.save(os.path.join(cls.tmp, "sess01.npy"), cls.sess[0])
        with h5py.File(os.path.join(cls.tmp, "sess02.h5"), "w") as f:
            f.create_dataset("betas", data=cls.sess[1], chunks=(7,) + cls.row, **hdf5plugin.LZ4())
        cls.sess[2].tofile(os.path.join(cls.tmp, "sess03.bin"))
        for i, s in enumerate(cls.sess):
            np.save(os.path.join(cls.tmp, f"g_{i + 1:02d}.npy"), s)
        # per-session per-voxel statistics: clearly different per session
        cls.m3 = np.stack([(s * S300).mean(0) + 10 * i for i, s in enumerate(cls.sess)])
        cls.s3 = np.stack([(s * S300).std(0) + 0.5 + i for i, s in enumerate(cls.sess)]).astype(np.float32)
        np.save(os.path.join(cls.tmp, "m3.npy"), cls.m3)
        np.save(os.path.join(cls.tmp, "s3.npy"), cls.s3)
        cls.src3 = ("source = sess01.npy\nsource = sess02.h5:/betas\nsource = sess03.bin\n"
                    "source_dtype = int16\nsource_shape = -1 4 5 6\n")

    def per_source_ref(self, dtype, parts=None):
        parts = parts or self.sess
        return np.concatenate([ref_arrays(s, S300, 0, self.m3[i], self.s3[i], dtype) for i, s in enumerate(parts)])

    def test_scalar_mean_std(self):
        rng = np.random.default_rng(1423)
        f = rng.normal(3, 2, (40, 4, 6)).astype(np.float32)
        np.save(self.p("f.npy"), f)
        ini = ""
        for dt in FLOAT_OUT:
            ini += f"[f_{dt}]\nsource = f.npy\ndtype = {dt}\nscale = 0.5\noffset = 1\nmean = 0.485\nstd = 0.229\n\n"
        ini += f"[i]\nsource = sess01.npy\nscale = {S300!r}\nmean = -3\nstd = 7\ndtype = bfloat16\nchannel_axis = 1\n"
        with self.mount(self.write_ini(ini, "scalar.ini")) as m:
            for dt in FLOAT_OUT:
                with self.subTest(dtype=dt):
                    check_whole(self, m, "f_" + dt, ref_arrays(f, 0.5, 1, 0.485, 0.229, dt), dt)
            check_whole(self, m, "i", ref_arrays(self.sess[0], S300, 0, -3, 7, "bfloat16"), "bfloat16")

    def test_per_element_and_per_channel_files(self):
        rng = np.random.default_rng(1424)
        mean = rng.normal(0, 20, self.row)
        std = rng.uniform(0.5, 30, self.row).astype(np.float32)
        imean = rng.integers(-50, 50, self.row, dtype=np.int16)
        np.save(self.p("mean_el.npy"), mean)
        np.save(self.p("std_el.npy"), std)
        np.save(self.p("imean_el.npy"), imean)
        np.save(self.p("mean_c.npy"), np.array(MEAN))
        np.save(self.p("std_c.npy"), np.array(STD, np.float32))
        img = rng.integers(0, 256, (17, 5, 7, 3), dtype=np.uint8)
        np.save(self.p("im.npy"), img)
        img_mean = rng.uniform(0, 1, (5, 7, 3))
        np.save(self.p("im_mean.npy"), img_mean)
        ini = ""
        for dt in FLOAT_OUT:
            ini += f"[el_{dt}]\n{self.src3}scale = {S300!r}\nmean = @mean_el.npy\nstd = @std_el.npy\ndtype = {dt}\n\n"
        np.save(self.p("two_el.npy"), np.full(self.row, 2, np.int8))
        ini += f"[iel]\nsource = sess01.npy\nscale = {S300!r}\nmean = @imean_el.npy\nstd = @two_el.npy\n\n"
        ini += f"[ch]\nsource = im.npy\nscale = {S255!r}\nmean = @mean_c.npy\nstd = @std_c.npy\ndtype = bfloat16\n\n"
        # per element with CHW: the array has the row shape before the layout (H, W, C)
        np.save(self.p("im_std.npy"), np.full((5, 7, 3), 0.25))
        ini += f"[elchw]\nsource = im.npy\nlayout = CHW\nscale = {S255!r}\nmean = @im_mean.npy\nstd = @im_std.npy\n"
        allx = np.concatenate(self.sess)
        with self.mount(self.write_ini(ini, "el.ini")) as m:
            for dt in FLOAT_OUT:
                with self.subTest(dtype=dt):
                    meta = check_whole(self, m, "el_" + dt, ref_arrays(allx, S300, 0, mean, std, dt), dt)
                    tm = meta["transform"]["mean"]
                    self.assertIsInstance(tm, dict, f"V.json transform.mean: {tm!r}")
                    self.assertTrue(tm["file"].endswith("mean_el.npy"), tm)
                    self.assertEqual(tm["shape"], list(self.row))
                    self.assertFalse(meta["transform"]["per_source"])
            check_whole(self, m, "iel", ref_arrays(self.sess[0], S300, 0, imean, 2, "float32"), "float32")
            std32 = np.array(STD, np.float32).astype(np.float64)  # the values the file holds
            check_whole(self, m, "ch", reference(img, S255, 0, MEAN, std32, -1, dtype="bfloat16"), "bfloat16")
            ref = chw(ref_arrays(img, S255, 0, img_mean, 0.25, "float32"))
            check_whole(self, m, "elchw", ref, "float32")
            ref = ref_arrays(allx, S300, 0, mean, std, "float16")
            check_preads(self, m, "el_float16", ref, rows=(19, 20, 49, 50, 74), seed=6)

    def test_per_source(self):
        idx = np.array([74, 0, 20, 19, 50, 49, 49, -1, 30], np.int64)
        np.save(self.p("ps_idx.npy"), idx)
        ps = "mean = @m3.npy\nstd = @s3.npy\nper_source = true\n"
        ini = ""
        for dt in FLOAT_OUT:
            ini += f"[ps_{dt}]\n{self.src3}scale = {S300!r}\n{ps}dtype = {dt}\n\n"
        ini += f"[rev]\n{self.src3}scale = {S300!r}\n{ps}rows = ::-1\n\n"
        ini += f"[idx]\n{self.src3}scale = {S300!r}\n{ps}rows = @ps_idx.npy\ndtype = bfloat16\n\n"
        ini += f"[glob]\nsource = g_*.npy\nscale = {S300!r}\n{ps}dtype = float16\n"
        with self.mount(self.write_ini(ini, "ps.ini")) as m:
            for dt in FLOAT_OUT:
                with self.subTest(dtype=dt):
                    meta = check_whole(self, m, "ps_" + dt, self.per_source_ref(dt), dt)
                    self.assertTrue(meta["transform"]["per_source"])
                    self.assertEqual(meta["transform"]["mean"]["shape"], [3] + list(self.row))
            check_whole(self, m, "rev", self.per_source_ref("float32")[::-1], "float32")
            ref = self.per_source_ref("bfloat16")[idx]
            check_whole(self, m, "idx", ref, "bfloat16")
            forked_batches(self, m, "idx", ref)
            check_whole(self, m, "glob", self.per_source_ref("float16"), "float16")
            check_preads(self, m, "ps_float32", self.per_source_ref("float32"), rows=(19, 20, 21, 49, 50), seed=8)

    def test_mixed_source_dtypes(self):
        rng = np.random.default_rng(1425)
        parts = [rng.integers(-32768, 32767, (30, 4, 5), dtype=np.int16, endpoint=True),
                 rng.normal(0, 1000, (20, 4, 5)).astype(np.float32),
                 rng.integers(0, 256, (10, 4, 5), dtype=np.uint8),
                 rng.normal(0, 1e5, (7, 4, 5))]
        parts[1].flat[:4] = [np.nan, np.inf, -np.inf, 1e30]
        np.save(self.p("mx0.npy"), parts[0])
        with h5py.File(self.p("mx1.h5"), "w") as f:
            f.create_dataset("x", data=parts[1], chunks=(6, 4, 5), **hdf5plugin.LZ4())
        parts[2].tofile(self.p("mx2.bin"))
        np.save(self.p("mx3.npy"), parts[3])
        src = "source = mx0.npy\nsource = mx1.h5:/x\nsource = mx2.bin\nsource = mx3.npy\nsource_dtype = uint8\n" \
              "source_shape = -1 4 5\n"
        mean, std = [1, 2, 3, 4, 5], [0.5, 2, 4, 8, 16]
        ini = ""
        for dt in FLOAT_OUT:
            ini += f"[t_{dt}]\n{src}dtype = {dt}\nscale = 0.5\noffset = 1\nmean = 1 2 3 4 5\nstd = 0.5 2 4 8 16\n\n"
            ini += f"[p_{dt}]\n{src}dtype = {dt}\n\n"
        with self.mount(self.write_ini(ini, "mixed.ini")) as m:
            for dt in FLOAT_OUT:
                with self.subTest(dtype=dt):
                    ref = np.concatenate([reference(p, 0.5, 1, mean, std, -1, dtype=dt) for p in parts])
                    meta = check_whole(self, m, "t_" + dt, ref, dt)
                    self.assertEqual([s["dtype"] for s in meta["sources"]], ["int16", "float32", "uint8", "float64"])
                    check_whole(self, m, "p_" + dt, np.concatenate([reference(p, dtype=dt) for p in parts]), dt)
            ref = np.concatenate([reference(p, 0.5, 1, mean, std, -1, dtype="bfloat16") for p in parts])
            check_preads(self, m, "t_bfloat16", ref, rows=(29, 30, 49, 50, 59, 60), seed=10)

    def test_info_describes_arrays(self):
        ini = self.write_ini(f"[ps]\n{self.src3}scale = {S300!r}\nmean = @m3.npy\nstd = @s3.npy\nper_source = true\n",
                             "info.ini")
        r = run("info", ini)
        self.assertEqual(r.returncode, 0, r.stderr)
        # the issue: "dsview info MANIFEST prints them" (the per-source transform):
        # the file, or at least that it is per source, not a flat list of numbers
        out = r.stdout
        self.assertTrue("m3.npy" in out or "per_source" in out or "per-source" in out,
                        "info does not say the mean is per source: " + out[:600])
        self.assertLess(max(len(l) for l in out.splitlines()), 1000, "a 360-value mean printed on one line")

    def test_errors(self):
        rng = np.random.default_rng(1426)
        np.save(self.p("bad_shape.npy"), np.ones((4, 5)))
        np.save(self.p("zero_std.npy"), np.where(rng.random(self.row) < 0.1, 0, 1.0))
        np.save(self.p("two_src.npy"), np.ones((2,) + self.row))
        np.save(self.p("row_only.npy"), np.ones(self.row))
        head = f"[v]\n{self.src3}scale = {S300!r}\n"  # keys from line 8
        cases = [
            ("mean = @bad_shape.npy\nstd = @bad_shape.npy\n", 8, ["mean", "(4, 5)"]),
            ("mean = @row_only.npy\nstd = @zero_std.npy\n", 9, ["std"]),
            ("mean = @missing.npy\nstd = @row_only.npy\n", 8, ["missing.npy"]),
            ("mean = @two_src.npy\nstd = @two_src.npy\n", 8, ["mean", "(2, 4, 5, 6)"]),  # per-source shape, no per_source
            ("mean = @two_src.npy\nstd = @two_src.npy\nper_source = true\n", {8, 10}, []),  # 2 != 3 sources
            ("mean = @row_only.npy\nstd = @row_only.npy\nper_source = true\n", {8, 10}, []),
            ("mean = 1\nstd = 2\nper_source = true\n", {8, 10}, ["per_source"]),
            ("mean = @m3.npy\nstd = @s3.npy\nper_source = maybe\n", 10, ["per_source"]),
            ("mean = 1 2\nstd = 1 1\n", 8, ["2"]),
            ("mean = @\nstd = 1\n", 8, ["mean"]),
        ]
        for text, line, want in cases:
            with self.subTest(keys=text):
                refused_at(self, head + text, line, want)
        for p in glob.glob(self.p("bad_shape*")):
            os.unlink(p)
