"""Every view kind users have, read through a real mount and compared bit for
bit with the numpy float64 reference: .dat via np.memmap, .npy via np.load
(mmap_mode='r') and plain read(); stat and .json checked on the way."""
import json
import os

import h5py
import hdf5plugin
import numpy as np

from common import E2E, mm_dat, mm_npy, npy_header_len, read_all, run
from refs import reference

MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
NP_OUT = {"float32": np.float32, "bfloat16": np.uint16, "float16": np.float16}
NPY_DESCR = {"float32": "<f4", "bfloat16": "<u2", "float16": "<f2"}
DTYPES = ("float32", "bfloat16", "float16")
JSON_KEYS = {"shape", "dtype", "order", "nbytes", "row_bytes", "sources", "transform", "chunk_rows"}


class ViewCheck(E2E):
    def check_view(self, m, name, ref, dtype, sources=None):
        """The whole contract of one view against its reference array."""
        nd = NP_OUT[dtype]
        dat, npy = m.path(name + ".dat"), m.path(name + ".npy")
        # .dat through np.memmap
        self.assertBits(mm_dat(dat, nd, ref.shape), ref, f"{name}.dat memmap", dtype)
        # .npy through np.load(mmap_mode='r'): shape and dtype right
        b = mm_npy(npy)
        self.assertEqual(b.shape, ref.shape, f"{name}.npy shape")
        self.assertEqual(b.dtype.str, NPY_DESCR[dtype], f"{name}.npy dtype")
        self.assertBits(b, ref, f"{name}.npy np.load", dtype)
        # plain read() of both files
        raw = np.ascontiguousarray(ref).tobytes()
        got = read_all(dat)
        self.assertEqual(len(got), len(raw), f"{name}.dat read() length")
        if got != raw:
            self.assertBits(np.frombuffer(got, nd).reshape(ref.shape), ref, f"{name}.dat read()", dtype)
        hlen = npy_header_len(npy)
        self.assertEqual(hlen % 64, 0, "data must start at a multiple of 64")
        whole = read_all(npy)
        self.assertEqual(whole[:6], b"\x93NUMPY")
        self.assertEqual(whole[6:8], b"\x01\x00", "NPY 1.0")
        header = whole[10:hlen].decode("latin1")
        self.assertIn(repr(NPY_DESCR[dtype]), header)
        self.assertIn("'fortran_order': False", header)
        self.assertTrue(header.endswith("\n"))
        if whole[hlen:] != raw:
            self.assertBits(np.frombuffer(whole[hlen:], nd).reshape(ref.shape), ref, f"{name}.npy read()", dtype)
        # stat
        st = os.stat(dat)
        self.assertEqual(st.st_size, ref.nbytes)
        self.assertEqual(st.st_blksize % 4096, 0)
        self.assertGreater(st.st_blksize, 0)
        self.assertEqual(os.stat(npy).st_size, hlen + ref.nbytes)
        # .json
        with open(m.path(name + ".json")) as f:
            meta = json.load(f)
        self.assertLessEqual(JSON_KEYS, set(meta), "missing .json keys")
        self.assertEqual(meta["shape"], list(ref.shape))
        self.assertEqual(meta["dtype"], dtype)
        self.assertEqual(meta["order"], "C")
        self.assertEqual(meta["nbytes"], ref.nbytes)
        self.assertEqual(meta["row_bytes"], ref.nbytes // ref.shape[0] if ref.shape[0] else meta["row_bytes"])
        if sources is not None:
            self.assertEqual(len(meta["sources"]), sources)
            self.assertEqual(len(meta["chunk_rows"]), sources)
        return meta


class Images(ViewCheck):
    """uint8 image stacks (HWC and CHW) with ImageNet normalisation."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        rng = np.random.default_rng(1)
        cls.x = rng.integers(0, 256, (200, 32, 48, 3), dtype=np.uint8)
        cls.x[0].flat[:256] = np.arange(256)  # every pixel value in every channel
        cls.x[2].flat[:256] = np.arange(256)[::-1]
        cls.x[1, 0, 0] = 124  # the cancelling case of the transform
        np.save(os.path.join(cls.tmp, "img.npy"), cls.x)
        cls.chw = np.ascontiguousarray(cls.x.transpose(0, 3, 1, 2))
        np.save(os.path.join(cls.tmp, "chw.npy"), cls.chw)

    def test_hwc_float32_bfloat16_float16(self):
        ini = ""
        for dt in DTYPES:
            ini += (f"[img_{dt}]\nsource = img.npy\ndtype = {dt}\nscale = {1/255!r}\n"
                    f"mean = 0.485 0.456 0.406\nstd = 0.229 0.224 0.225\nchannel_axis = -1\n\n")
        with self.mount(self.write_ini(ini)) as m:
            for dt in DTYPES:
                with self.subTest(dtype=dt):
                    ref = reference(self.x, 1 / 255, 0, MEAN, STD, -1, dtype=dt)
                    meta = self.check_view(m, "img_" + dt, ref, dt, sources=1)
                    tr = meta["transform"]
                    self.assertAlmostEqual(tr["scale"], 1 / 255)
                    self.assertEqual(tr["mean"], MEAN)
                    self.assertEqual(tr["std"], STD)

    def test_chw_channel_axis_1_all_dtypes(self):
        ini = ""
        for dt in DTYPES:
            ini += (f"[chw_{dt}]\nsource = chw.npy\ndtype = {dt}\nscale = {1/255!r}\n"
                    f"mean = 0.485 0.456 0.406\nstd = 0.229 0.224 0.225\nchannel_axis = 1\n\n")
        # the same axis counted from the end, and a clip
        ini += (f"[chw_neg]\nsource = chw.npy\nscale = {1/255!r}\nmean = 0.485 0.456 0.406\n"
                f"std = 0.229 0.224 0.225\nchannel_axis = -3\nclip = -1.5 2\n")
        with self.mount(self.write_ini(ini)) as m:
            for dt in DTYPES:
                with self.subTest(dtype=dt):
                    ref = reference(self.chw, 1 / 255, 0, MEAN, STD, 1, dtype=dt)
                    self.check_view(m, "chw_" + dt, ref, dt)
            ref = reference(self.chw, 1 / 255, 0, MEAN, STD, 1, clip=(-1.5, 2))
            self.check_view(m, "chw_neg", ref, "float32")

    def test_offset_and_clip_bfloat16(self):
        ini = ("[v]\nsource = img.npy\ndtype = bfloat16\nscale = 0.5\noffset = -64\n"
               "clip = -20.25 50\n")
        with self.mount(self.write_ini(ini, "oc.ini")) as m:
            self.check_view(m, "v", reference(self.x, 0.5, -64, clip=(-20.25, 50), dtype="bfloat16"),
                            "bfloat16")

    def test_same_bytes_across_remounts(self):
        ini = self.write_ini(f"[v]\nsource = img.npy\nscale = {1/255!r}\nmean = 1 2 3\nstd = 4 5 6\n", "re.ini")
        got = []
        for _ in range(2):
            with self.mount(ini) as m:
                got.append(read_all(m.path("v.npy")))
        self.assertEqual(got[0], got[1])


class SourceDtypes(ViewCheck):
    """Every source dtype (extremes included) into every output."""

    SRC = ("uint8", "int8", "uint16", "int16", "uint32", "int32", "uint64", "int64", "float16", "float32",
           "float64")

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        rng = np.random.default_rng(11)
        cls.arrays = {}
        for name in cls.SRC:
            dt = np.dtype(name)
            if dt.kind in "iu":
                info = np.iinfo(dt)
                a = rng.integers(info.min, info.max, (64, 5, 7), dtype=dt, endpoint=True)
                a.flat[:4] = [info.min, info.max, 0, 1]
            else:
                a = rng.normal(0, 100, (64, 5, 7)).astype(dt)
                fi = np.finfo(dt)
                special = [np.nan, np.inf, -np.inf, fi.max, -fi.max, fi.tiny, fi.tiny / 4, -0.0, 1e-3, 65519.9]
                if dt == np.float64:
                    special += [1e300, -1e300, 1e-300, 3.4028235677973366e38]
                a.flat[:len(special)] = np.array(special, dtype=np.float64).astype(dt)
            np.save(os.path.join(cls.tmp, name + ".npy"), a)
            cls.arrays[name] = a

    def test_every_source_dtype_to_every_output(self):
        ini = ""
        for s in self.SRC:
            for dt in DTYPES:
                ini += f"[{s}_{dt}]\nsource = {s}.npy\ndtype = {dt}\nscale = 0.75\noffset = -3.5\n\n"
                ini += f"[{s}_{dt}_plain]\nsource = {s}.npy\ndtype = {dt}\n\n"
        with self.mount(self.write_ini(ini, "dt.ini")) as m:
            for s in self.SRC:
                for dt in DTYPES:
                    with self.subTest(source=s, dtype=dt):
                        x = self.arrays[s]
                        self.check_view(m, f"{s}_{dt}", reference(x, 0.75, -3.5, dtype=dt), dt)
                        self.check_view(m, f"{s}_{dt}_plain", reference(x, dtype=dt), dt)

    def test_mean_std_on_a_middle_axis(self):
        # spectra: (N, C, L) int16 with per-channel normalisation on axis 1,
        # and float32 (N, L, C) on the last axis (no lookup table there)
        rng = np.random.default_rng(12)
        sp = rng.integers(-2000, 2000, (150, 4, 300), dtype=np.int16)
        np.save(self.p("spectra.npy"), sp)
        fl = rng.normal(5, 3, (150, 300, 4)).astype(np.float32)
        np.save(self.p("fl.npy"), fl)
        mean, std = [1.5, -2, 0.25, 100], [0.5, 2, 3, 1e-3]
        ini = ("[sp]\nsource = spectra.npy\ndtype = bfloat16\nscale = 0.01\noffset = 1\n"
               "mean = 1.5 -2 0.25 100\nstd = 0.5, 2, 3, 1e-3\nchannel_axis = 1\nclip = -1e4 1e4\n"
               "[fl]\nsource = fl.npy\ndtype = float16\nmean = 1.5 -2 0.25 100\nstd = 0.5 2 3 1e-3\n"
               "channel_axis = -1\n")
        with self.mount(self.write_ini(ini, "sp.ini")) as m:
            self.check_view(m, "sp", reference(sp, 0.01, 1, mean, std, 1, clip=(-1e4, 1e4), dtype="bfloat16"),
                            "bfloat16")
            self.check_view(m, "fl", reference(fl, 1, 0, mean, std, -1, dtype="float16"), "float16")


class Betas(ViewCheck):
    """int16 betas in several HDF5 session files, scale 1/300, concatenated."""

    SCALE = 0.0033333333333333335

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        rng = np.random.default_rng(2)
        cls.parts = [rng.integers(-32768, 32767, (n, 7, 9, 11), dtype=np.int16, endpoint=True)
                     for n in (50, 83, 61, 40)]
        with h5py.File(os.path.join(cls.tmp, "s1.h5"), "w") as f:
            f.create_dataset("betas", data=cls.parts[0])  # contiguous
        with h5py.File(os.path.join(cls.tmp, "s2.h5"), "w") as f:
            f.create_dataset("betas", data=cls.parts[1], chunks=(10, 7, 9, 11))  # partial last chunk
        with h5py.File(os.path.join(cls.tmp, "s3.h5"), "w") as f:
            f.create_dataset("betas", data=cls.parts[2], chunks=(8, 7, 9, 11), **hdf5plugin.LZ4())
        with h5py.File(os.path.join(cls.tmp, "s4.h5"), "w") as f:
            f.create_dataset("betas", data=cls.parts[3], chunks=(6, 7, 9, 11), fletcher32=True,
                             **hdf5plugin.LZ4())
        cls.all = np.concatenate(cls.parts)

    def test_four_sessions_scale(self):
        ini = ("[betas]\nsource = s1.h5:/betas\nsource = s2.h5:/betas\nsource = s3.h5:/betas\n"
               f"source = {self.tmp}/s4.h5:/betas\nscale = {self.SCALE!r}\n")
        with self.mount(self.write_ini(ini)) as m:
            for dt in ("float32",):
                ref = reference(self.all, self.SCALE)
                meta = self.check_view(m, "betas", ref, dt, sources=4)
            kinds = [s["kind"] for s in meta["sources"]]
            self.assertEqual(kinds[1:], ["hdf5-chunked"] * 3)
            self.assertEqual(meta["chunk_rows"][1:], [10, 8, 6])

    def test_preads_across_source_boundaries(self):
        ini = ("[b]\nsource = s1.h5:/betas\nsource = s2.h5:/betas\nsource = s3.h5:/betas\n"
               f"source = s4.h5:/betas\nscale = {self.SCALE!r}\ndtype = float16\n")
        ref = reference(self.all, self.SCALE, dtype="float16").tobytes()
        rb = len(ref) // self.all.shape[0]
        with self.mount(self.write_ini(ini, "pb.ini"), "--cache-size", "0") as m:
            fd = os.open(m.path("b.dat"), os.O_RDONLY)
            try:
                rng = np.random.default_rng(3)
                for row in (50, 133, 194, 60, 140, 200):  # source and chunk starts
                    for d in (-rb - 1, -3, -1, 0, 1, 5):
                        off = row * rb + d
                        for n in (1, 2, 7, rb, 3 * rb + 1, 20 * rb):
                            self.assertEqual(os.pread(fd, n, off), ref[off:off + n], f"pread({n}, {off})")
                for _ in range(150):
                    off = int(rng.integers(0, len(ref)))
                    n = int(rng.integers(1, 4 * rb))
                    self.assertEqual(os.pread(fd, n, off), ref[off:off + n], f"pread({n}, {off})")
            finally:
                os.close(fd)

    def test_one_row_chunks(self):
        # chunks of one row: a 1 MiB read spans hundreds of chunks
        with h5py.File(self.p("rows.h5"), "w") as f:
            f.create_dataset("betas", data=self.parts[1], chunks=(1, 7, 9, 11))
        with self.mount(self.write_ini("[r]\nsource = rows.h5:/betas\n", "rows.ini")) as m:
            self.check_view(m, "r", reference(self.parts[1]), "float32")

    def test_gzip_shuffle_row_splitting_and_big_endian_chunks(self):
        # gzip with shuffle is dsview's to inflate; big-endian data the
        # library's (it converts it)
        x = self.parts[0]
        with h5py.File(self.p("lib.h5"), "w") as f:
            f.create_dataset("gz", data=x, chunks=(9, 7, 9, 11), compression="gzip", shuffle=True)
            f.create_dataset("auto", data=x, chunks=True)  # h5py's choice: splits rows
            f.create_dataset("split", data=x, chunks=(7, 4, 5, 11))
            f.create_dataset("splitfl", data=x, chunks=(7, 7, 9, 5), fletcher32=True)
            f.create_dataset("bigend", data=x.astype(">i2"), chunks=(7, 7, 9, 11))
        ini = "".join(f"[{n}]\nsource = lib.h5:/{n}\ndtype = bfloat16\nscale = {self.SCALE!r}\n"
                      for n in ("gz", "auto", "split", "splitfl", "bigend"))
        with self.mount(self.write_ini(ini, "lib.ini")) as m:
            ref = reference(x, self.SCALE, dtype="bfloat16")
            for n in ("gz", "auto", "split", "splitfl", "bigend"):
                with self.subTest(dataset=n):
                    self.check_view(m, n, ref, "bfloat16")
            self.assertEqual(json.load(open(m.path("gz.json")))["sources"][0]["kind"], "hdf5-chunked")
            self.assertEqual(json.load(open(m.path("bigend.json")))["sources"][0]["kind"],
                             "hdf5-library")

    def test_lz4_as_users_write_it(self):
        # h5py + hdf5plugin.LZ4() with h5py's automatic chunk shape (which
        # splits rows) and with the shuffle filter in front: both are
        # "chunked with the LZ4 filter 32004" (docs/sources.md), which dsview decodes
        x = self.parts[2]
        with h5py.File(self.p("ulz4.h5"), "w") as f:
            f.create_dataset("auto", data=x, chunks=True, **hdf5plugin.LZ4())
            f.create_dataset("shuffle", data=x, chunks=(8, 7, 9, 11), shuffle=True, **hdf5plugin.LZ4())
        for n in ("auto", "shuffle"):
            with self.subTest(dataset=n):
                ini = self.write_ini(f"[{n}]\nsource = ulz4.h5:/{n}\nscale = {self.SCALE!r}\n", f"ulz4{n}.ini")
                with self.mount(ini) as m:
                    self.check_view(m, n, reference(x, self.SCALE), "float32")

    def test_fill_values_of_unwritten_chunks(self):
        with h5py.File(self.p("fv.h5"), "w") as f:
            d = f.create_dataset("chunked", shape=(100, 4), dtype=np.int16, chunks=(10, 4), fillvalue=7)
            d[20:30] = 1
            d[95:] = -5
            f.create_dataset("contig", shape=(50, 4), dtype=np.int16, fillvalue=-3)
            d = f.create_dataset("lz4", shape=(100, 4), dtype=np.uint8, chunks=(10, 4), fillvalue=9,
                                 **hdf5plugin.LZ4())
            d[0:10] = 1
            want = {n: f[n][...] for n in ("chunked", "contig", "lz4")}
        ini = "".join(f"[{n}]\nsource = fv.h5:/{n}\nscale = 2\n" for n in want)
        with self.mount(self.write_ini(ini, "fv.ini")) as m:
            for n, a in want.items():
                with self.subTest(dataset=n):
                    self.check_view(m, n, reference(a, 2), "float32")


class EEG(ViewCheck):
    """Raw float32 windows split over two release files, served as float16
    (overflow to inf, NaN stays a quiet NaN) and bfloat16."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        rng = np.random.default_rng(3)
        cls.parts = [rng.normal(0, 2000, (n, 129, 200)).astype(np.float32) for n in (37, 45)]
        special = np.array([0x7FC00000, 0x7F800001, 0xFFA00001, 0x7FE00000,  # NaNs: quiet, signalling, payloads
                            0x7F800000, 0xFF800000, 0x49742400, 0xC9742400,  # +-inf, +-1e6 (float16 overflow)
                            0x477FE000, 0x477FEFFF, 0x477FF000, 0x477FF001,  # 65504, just below/at/above 65520
                            0x33800000, 0x33000000, 0x33000001, 0x387FC000,  # float16 subnormal edges
                            0x3F7FFFFF, 0x3F808000, 0x3F818000, 0x80000000,  # bf16 carry and ties, -0
                            0x7F7FFFFF, 0x00000001], np.uint32).view(np.float32)
        cls.parts[0][0, 0, :special.size] = special
        cls.parts[1][-1, -1, -special.size:] = special
        for i, p in enumerate(cls.parts):
            p.tofile(os.path.join(cls.tmp, f"R{i + 1}.bin"))

    def test_raw_float32_to_float16_and_bfloat16(self):
        ini = ""
        for dt in ("float16", "bfloat16"):
            ini += (f"[eeg_{dt}]\nsource = R1.bin\nsource = R2.bin\nsource_dtype = float32\n"
                    f"source_shape = -1 129 200\ndtype = {dt}\n")
        ini += ("[eeg_scaled]\nsource = R1.bin\nsource = R2.bin\nsource_dtype = float32\n"
                "source_shape = -1, 129, 200\ndtype = float16\nscale = 0.001\noffset = 0.5\n")
        x = np.concatenate(self.parts)
        with self.mount(self.write_ini(ini)) as m:
            for dt in ("float16", "bfloat16"):
                with self.subTest(dtype=dt):
                    self.check_view(m, "eeg_" + dt, reference(x, dtype=dt), dt, sources=2)
            a = mm_npy(m.path("eeg_float16.npy"))
            self.assertEqual(a.shape, (82, 129, 200))
            row = a[0, 0, :12]
            self.assertTrue(np.isnan(row[:4]).all(), row)
            self.assertEqual(list(row[4:8]), [np.inf, -np.inf, np.inf, -np.inf])
            self.assertEqual(list(row[8:12].view(np.uint16)), [0x7BFF, 0x7BFF, 0x7C00, 0x7C00])
            self.check_view(m, "eeg_scaled", reference(x, 0.001, 0.5, dtype="float16"), "float16")

    def test_raw_time_axis_from_the_file_and_short_shapes_refused(self):
        # channel-major recordings of different lengths: (1, channels, -1)
        # takes each one's time from its size, and windows run along it
        recs = [np.random.default_rng(k).normal(0, 1, (1, 6, t)).astype(np.float32)
                for k, t in enumerate((500, 333))]
        for k, r in enumerate(recs):
            r.tofile(self.p(f"rec{k}.f32"))
        ini = self.write_ini("[w]\nsource = rec0.f32\nsource = rec1.f32\nsource_dtype = float32\n"
                             "source_shape = 1, 6, -1\nwindow = 100\nstride = 50\n", "rec.ini")
        want = np.concatenate([np.stack([r[0, :, i:i + 100]
                                         for i in range(0, r.shape[2] - 99, 50)])
                               for r in recs])
        with self.mount(ini) as m:
            self.check_view(m, "w", reference(want), "float32")
        # a shape that covers part of the file is refused, naming both sizes
        self.refused(self.write_ini("[v]\nsource = rec0.f32\nsource_dtype = float32\n"
                                    "source_shape = 1, 6, 400\n", "short.ini"),
                     want=["source_shape covers 9600 of the file's 12000 bytes", "rows = a:b"])
        self.refused(self.write_ini("[v]\nsource = rec1.f32\nsource_dtype = float32\n"
                                    "source_shape = 7, -1\n", "odd.ini"),
                     want=["size 7992 is not a whole number of steps along source_shape's "
                           "-1 axis of 28 bytes"])


class ZeroConfig(ViewCheck):
    def test_npy_file(self):
        x = np.arange(1000, dtype=np.int16).reshape(100, 10)
        np.save(self.p("x.npy"), x)
        with self.mount(self.p("x.npy")) as m:
            self.assertEqual(sorted(os.listdir(m.mp)), [".stats.json", "x.dat", "x.json", "x.npy"])
            self.check_view(m, "x", x.astype(np.float32), "float32")

    def upper_npy(self):
        """X.NPY: np.save would append .npy, so write through a file."""
        x = (np.arange(600, dtype=np.int64) % 251).astype(np.uint8).reshape(60, 10)
        with open(self.p("X.NPY"), "wb") as f:
            np.save(f, x)
        return self.p("X.NPY"), x

    def test_npy_file_upper_case(self):
        # Extensions match in any case, in the CLI's checks as in the
        # library's: the CLI takes what the library opens.
        path, x = self.upper_npy()
        with self.mount(path) as m:
            self.check_view(m, "X", x.astype(np.float32), "float32")

    def test_npy_upper_case_in_manifest(self):
        path, x = self.upper_npy()
        with self.mount(self.write_ini(f"[up]\nsource = {path}\n", "upper.ini")) as m:
            self.check_view(m, "up", x.astype(np.float32), "float32")

    def test_info_and_pack_upper_case_npy(self):
        path, x = self.upper_npy()
        r = run("info", "--json", path)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(json.loads(r.stdout)["kind"], "npy")
        out = self.p("upper_packed.h5")
        r = run("pack", path, out)
        self.assertEqual(r.returncode, 0, r.stderr)
        with h5py.File(out, "r") as f:
            self.assertTrue((f["X"][:] == x).all())

    def test_npy_file_relative_path_and_dtype(self):
        x = np.arange(-500, 500, dtype=np.int16).reshape(100, 10)
        np.save(self.p("rel.npy"), x)
        cwd = os.getcwd()
        os.chdir(self.tmp)
        try:
            with self.mount("rel.npy", "--dtype", "float16") as m:
                os.chdir(cwd)
                self.check_view(m, "rel", x.astype(np.float16), "float16")
        finally:
            os.chdir(cwd)

    def test_h5_groups_become_directories(self):
        a = (np.arange(600, dtype=np.int64).reshape(60, 10) % 251).astype(np.uint8)
        b = np.linspace(-5, 5, 300).astype(np.float64).reshape(30, 10)
        c = np.arange(5000, dtype=np.float32) * 0.37
        with h5py.File(self.p("zc.h5"), "w") as f:
            f.create_dataset("a", data=a)
            g = f.create_group("grp")
            g.create_dataset("b", data=b, chunks=(7, 10), compression="gzip")
            g.create_group("sub").create_dataset("c", data=c, chunks=(512,), **hdf5plugin.LZ4())
            f.create_dataset("empty", data=np.zeros((0, 5), np.float32))
        with self.mount(self.p("zc.h5"), "--dtype", "bfloat16") as m:
            self.assertEqual(sorted(os.listdir(m.mp)),
                             [".stats.json", "a.dat", "a.json", "a.npy", "empty.dat", "empty.json",
                              "empty.npy", "grp"])
            self.assertEqual(sorted(os.listdir(m.path("grp"))), ["b.dat", "b.json", "b.npy", "sub"])
            self.assertTrue(os.path.isdir(m.path("grp/sub")))
            self.check_view(m, "a", reference(a, dtype="bfloat16"), "bfloat16")
            self.check_view(m, "grp/b", reference(b, dtype="bfloat16"), "bfloat16")
            self.check_view(m, "grp/sub/c", reference(c, dtype="bfloat16"), "bfloat16")
            self.assertEqual(os.stat(m.path("empty.dat")).st_size, 0)
            self.assertEqual(mm_npy(m.path("empty.npy")).shape, (0, 5))
            self.assertEqual(read_all(m.path("empty.dat")), b"")


class Stat(E2E):
    def test_mtime_is_newest_source(self):
        np.save(self.p("a.npy"), np.zeros((10, 4), np.uint8))
        with h5py.File(self.p("b.h5"), "w") as f:
            f.create_dataset("x", data=np.zeros((10, 4), np.uint8), chunks=(3, 4))
        np.zeros((10, 4), np.uint8).tofile(self.p("c.bin"))
        t = {"a.npy": 1_600_000_000_250_000_000, "b.h5": 1_700_000_000_500_000_000,
             "c.bin": 1_650_000_000_000_000_000}
        for name, ns in t.items():
            os.utime(self.p(name), ns=(ns, ns))
        ini = ("[abc]\nsource = a.npy\nsource = b.h5:/x\nsource = c.bin\nsource_dtype = uint8\nsource_shape = -1 4\n"
               "[cba]\nsource = c.bin\nsource = b.h5:/x\nsource = a.npy\nsource_dtype = uint8\nsource_shape = -1 4\n"
               "[ca]\nsource = c.bin\nsource = a.npy\nsource_dtype = uint8\nsource_shape = -1 4\n"
               "[a]\nsource = a.npy\n")
        want = {"abc": t["b.h5"], "cba": t["b.h5"], "ca": t["c.bin"], "a": t["a.npy"]}
        ini = self.write_ini(ini)
        old = 1_500_000_000_000_000_000  # the manifest's mtime counts too (test_files.Mtime)
        os.utime(ini, ns=(old, old))
        with self.mount(ini) as m:
            for v, ns in want.items():
                for ext in (".dat", ".npy"):
                    st = os.stat(m.path(v + ext))
                    self.assertEqual(int(st.st_mtime), ns // 10**9, v + ext)
                    self.assertEqual(st.st_mtime_ns, ns, v + ext + " (nanoseconds)")

    def test_sizes_and_blksize(self):
        x = np.zeros((33, 7, 5), np.uint8)
        np.save(self.p("s.npy"), x)
        ini = "".join(f"[s_{dt}]\nsource = s.npy\ndtype = {dt}\n" for dt in DTYPES)
        with self.mount(self.write_ini(ini, "s.ini")) as m:
            for dt, size in (("float32", 4), ("bfloat16", 2), ("float16", 2)):
                st = os.stat(m.path(f"s_{dt}.dat"))
                self.assertEqual(st.st_size, x.size * size)
                self.assertEqual(st.st_blksize % 4096, 0)
                self.assertEqual(os.stat(m.path(f"s_{dt}.npy")).st_size,
                                 npy_header_len(m.path(f"s_{dt}.npy")) + x.size * size)
                self.assertEqual(os.stat(m.path(f"s_{dt}.json")).st_size,
                                 len(read_all(m.path(f"s_{dt}.json"))))


class BigOffsets(E2E):
    """A sparse 5 GiB raw uint8 source served as a 20 GiB float32 view: file
    offsets and view offsets past 2^32 (no 32-bit truncation anywhere)."""

    N = 5 << 30

    def test_offsets_past_4_gib(self):
        marks = {1: 1, (1 << 30) - 3: 2, (1 << 32) - 3: 3, (1 << 32) + 12345: 4, self.N - 7: 5}
        with open(self.p("big.bin"), "wb") as f:
            f.truncate(self.N)
            for pos, k in marks.items():
                f.seek(pos)
                f.write(bytes([k * 10 + i for i in range(7)]))
        ini = self.write_ini("[big]\nsource = big.bin\nsource_dtype = uint8\nsource_shape = -1 1024\n"
                             "scale = 0.5\noffset = 1\n", "big.ini")

        def ref(pos, n):  # view bytes of source elements [pos, pos + n)
            x = np.zeros(n, np.uint8)
            for p_, k in marks.items():
                for i in range(7):
                    if pos <= p_ + i < pos + n:
                        x[p_ + i - pos] = k * 10 + i
            return reference(x, 0.5, 1).tobytes()

        with self.mount(ini, "--cache-size", "8M") as m:
            self.assertEqual(os.stat(m.path("big.dat")).st_size, 4 * self.N)
            hlen = npy_header_len(m.path("big.npy"))
            self.assertEqual(os.stat(m.path("big.npy")).st_size, hlen + 4 * self.N)
            fd = os.open(m.path("big.dat"), os.O_RDONLY)
            fn = os.open(m.path("big.npy"), os.O_RDONLY)
            try:
                for pos in list(marks) + [(1 << 32) // 4, (1 << 33) // 4 - 1]:
                    start = max(pos - 5, 0)
                    want = ref(start, 20)
                    self.assertEqual(os.pread(fd, 80, 4 * start), want[:4 * (self.N - start)], f"dat @{4 * start}")
                    self.assertEqual(os.pread(fn, 80, hlen + 4 * start), want[:4 * (self.N - start)], f"npy @{start}")
                self.assertEqual(os.pread(fd, 100, 4 * self.N - 8), ref(self.N - 2, 2))
                self.assertEqual(os.pread(fd, 100, 4 * self.N), b"")
            finally:
                os.close(fd)
                os.close(fn)
            a = np.load(m.path("big.npy"), mmap_mode="r")
            try:
                self.assertEqual(a.shape, (self.N // 1024, 1024))
                r = ((1 << 32) + 12345) // 1024
                got = np.array(a[r])
                self.assertEqual(got.tobytes(), ref(r * 1024, 1024))
                self.assertEqual(np.array(a[-1]).tobytes(), ref(self.N - 1024, 1024))
            finally:
                del a
