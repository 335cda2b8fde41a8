"""Integer views: dtype = int8 ... uint64 for integer
sources, no arithmetic; values at the limits of each source type; a source
range that does not fit is refused at the dtype line unless clip is given,
and with clip the values are clamped; float sources and transforms with an
integer output are refused at the dtype line."""
import os

import h5py
import hdf5plugin
import numpy as np

from common import E2E, check_preads, check_whole, forked_batches, refused_at
from refs import int_reference

INTS = ("uint8", "int8", "uint16", "int16", "uint32", "int32", "uint64", "int64")
# (source, output) pairs whose whole source range fits the output
FITS = [("uint8", o) for o in ("uint8", "int16", "uint16", "int32", "int64", "uint64")] + \
       [("int8", o) for o in ("int8", "int16", "int32", "int64")] + \
       [("uint16", o) for o in ("uint16", "int32", "uint32", "int64", "uint64")] + \
       [("int16", o) for o in ("int16", "int32", "int64")] + \
       [("uint32", o) for o in ("uint32", "int64", "uint64")] + \
       [("int32", o) for o in ("int32", "int64")] + \
       [("uint64", "uint64"), ("int64", "int64")]
# ... and pairs whose range does not: refused without clip
NO_FIT = [("uint32", "int16"), ("int16", "uint8"), ("int8", "uint8"), ("uint16", "int16"),
          ("int64", "int32"), ("uint64", "int64"), ("int8", "uint64"), ("int32", "uint32"),
          ("uint8", "int8"), ("int16", "uint16"), ("uint16", "uint8")]


class IntViews(E2E):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        rng = np.random.default_rng(1410)
        cls.x = {}
        for name in INTS:
            info = np.iinfo(name)
            a = rng.integers(info.min, info.max, (40, 3, 5), dtype=name, endpoint=True)
            a.flat[:8] = [info.min, info.max, 0, 1, info.min + 1, info.max - 1, info.max // 2, info.min // 2]
            a[-1].flat[-2:] = [info.max, info.min]
            np.save(os.path.join(cls.tmp, name + ".npy"), a)
            cls.x[name] = a

    def test_every_fitting_pair_at_its_limits(self):
        ini = "".join(f"[{s}_{o}]\nsource = {s}.npy\ndtype = {o}\n\n" for s, o in FITS)
        with self.mount(self.write_ini(ini, "fit.ini")) as m:
            for s, o in FITS:
                with self.subTest(source=s, output=o):
                    meta = check_whole(self, m, f"{s}_{o}", int_reference(self.x[s], o), o)
                    self.assertEqual(meta["sources"][0]["dtype"], s)
            ref = int_reference(self.x["int16"], "int64")
            check_preads(self, m, "int16_int64", ref, rows=(1, 20, 39), seed=1)
            forked_batches(self, m, "uint16_int64", int_reference(self.x["uint16"], "int64"))

    def test_not_fitting_refused_without_clip(self):
        for s, o in NO_FIT:
            with self.subTest(source=s, output=o):
                refused_at(self, f"[v]\nsource = {s}.npy\n\ndtype = {o}\n", 4, [])
        with self.subTest("dtype first, source after"):
            refused_at(self, "[v]\ndtype = int16\nsource = uint32.npy\n", 2, [])

    def test_clip_clamps(self):
        self.clip_cases([("uint32", "int16", (-100, 30000)), ("int16", "uint8", (0, 255)),
                         ("int8", "uint8", (3, 200)), ("uint16", "int16", (-5, 32767)),
                         ("uint8", "int64", (10, 20)), ("int16", "int16", (-7, 7)),
                         ("int32", "uint32", (0, 4294967295))], "clip.ini")

    def test_clip_at_the_64_bit_limits(self):
        # bounds a double cannot hold exactly (2^63 - 1): still integral and in range
        self.clip_cases([("int64", "int32", (-2147483648, 2147483647)),
                         ("uint64", "int64", (0, 9223372036854775807)),
                         ("int64", "int64", (-9223372036854775808, 9223372036854775807))], "clip64.ini")

    def clip_cases(self, cases, name):
        ini = "".join(f"[c{i}]\nsource = {s}.npy\ndtype = {o}\nclip = {lo} {hi}\n\n"
                      for i, (s, o, (lo, hi)) in enumerate(cases))
        with self.mount(self.write_ini(ini, name)) as m:
            for i, (s, o, c) in enumerate(cases):
                with self.subTest(source=s, output=o, clip=c):
                    x = self.x[s]
                    if s == "uint64":
                        want = np.minimum(x, np.uint64(c[1])).astype(np.int64)
                    else:
                        want = int_reference(x, o, clip=c)
                    meta = check_whole(self, m, f"c{i}", want, o)
                    self.assertEqual([int(v) for v in meta["transform"]["clip"]], list(c))

    def test_other_sources(self):
        # an HDF5 big-endian int32 (LZ4, chunks), a raw little-endian uint16,
        # the two int16 parts of one view from a .npy and an HDF5 file
        rng = np.random.default_rng(1411)
        be = rng.integers(-2**31, 2**31, (70, 6), dtype=np.int64).astype(">i4")
        be[0, :2] = [-2**31, 2**31 - 1]
        tok = rng.integers(0, 65536, (33, 17), dtype=np.uint16)
        p1 = rng.integers(-32768, 32768, (25, 4), dtype=np.int64).astype(np.int16)
        p2 = rng.integers(-32768, 32768, (31, 4), dtype=np.int64).astype(np.int16)
        with h5py.File(self.p("o.h5"), "w") as f:
            f.create_dataset("be", data=be, chunks=(8, 6), **hdf5plugin.LZ4())
            f.create_dataset("p2", data=p2, chunks=(10, 4), **hdf5plugin.LZ4())
        tok.tofile(self.p("tok.bin"))
        np.save(self.p("p1.npy"), p1)
        ini = ("[be]\nsource = o.h5:/be\ndtype = int64\n"
               "[tok]\nsource = tok.bin\nsource_dtype = uint16\nsource_shape = -1 17\ndtype = int32\n"
               "[cat]\nsource = p1.npy\nsource = o.h5:/p2\ndtype = int32\nrows = ::-1\n")
        with self.mount(self.write_ini(ini, "o.ini")) as m:
            check_whole(self, m, "be", be.astype(np.int64), "int64")
            check_whole(self, m, "tok", tok.astype(np.int32), "int32")
            ref = np.concatenate([p1, p2])[::-1].astype(np.int32)
            check_whole(self, m, "cat", ref, "int32")
            check_preads(self, m, "cat", ref, rows=(30, 31, 32), seed=2)

    def test_float_source_or_transform_refused(self):
        np.save(self.p("f32.npy"), np.zeros((4, 3), np.float32))
        np.save(self.p("f16.npy"), np.zeros((4, 3), np.float16))
        np.save(self.p("f64.npy"), np.zeros((4, 3), np.float64))
        np.save(self.p("m.npy"), np.zeros((3, 5), np.float64))
        for src, out in (("f32", "int32"), ("f16", "int64"), ("f64", "int16"), ("f32", "uint8")):
            with self.subTest(source=src, output=out):
                refused_at(self, f"[v]\nsource = {src}.npy\ndtype = {out}\n", 3, [])
        transforms = ["scale = 2", "offset = 1", "mean = 1 2 3 4 5\nstd = 1 1 1 1 1", "mean = 3\nstd = 2",
                      "mean = @m.npy\nstd = @m.npy", "std = 2"]
        for t in transforms:
            with self.subTest(transform=t, where="after dtype"):
                refused_at(self, f"[v]\nsource = int16.npy\ndtype = int32\n{t}\n", 3, [])
            with self.subTest(transform=t, where="before dtype"):
                refused_at(self, f"[v]\nsource = int16.npy\n{t}\ndtype = int32\n", 3 + t.count("\n") + 1, [])

    def test_bad_clip_for_an_integer_output(self):
        cases = [("0 70000", "int16"), ("-1 10", "uint8"), ("0.5 10", "int32"),
                 ("-40000 0", "int16")]
        for clip, out in cases:
            with self.subTest(clip=clip, output=out):
                # the contract names the dtype line for range errors; the bad
                # bound itself is on the clip line: either is accepted
                refused_at(self, f"[v]\nsource = int32.npy\ndtype = {out}\nclip = {clip}\n", {3, 4}, ["clip"])
