"""Raw sources as recordings are written: a header skipped (source_offset,
--source-offset), int24 samples, and one spelling of a raw file's options
in mount, info, verify and pack. Files are written by numpy (`tofile` after
the header's bytes); references are numpy's reads of the same bytes."""

import json
import os

import h5py
import numpy as np

from common import E2E, check_preads, check_whole, mm_npy, refused_at, run
from refs import reference


def write_with_header(path, header, x):
    """header's bytes, then x by numpy's tofile."""
    with open(path, "wb") as f:
        f.write(header)
        x.tofile(f)


def int24_bytes(v):
    """v (int32 in [-2**23, 2**23)) as 3-byte little-endian samples."""
    u = v.astype("<i4").reshape(-1).view(np.uint8).reshape(-1, 4)
    return u[:, :3].tobytes()


def decode_int24(b, shape):
    """numpy's decoding of 3-byte little-endian signed samples: the three
    bytes into a uint32, sign-extended from bit 23."""
    a = np.frombuffer(b, np.uint8).reshape(-1, 3).astype(np.uint32)
    u = a[:, 0] | (a[:, 1] << 8) | (a[:, 2] << 16)
    return (u.astype(np.int64) - ((u & 0x800000).astype(np.int64) << 1)).reshape(shape)


class Offset(E2E):
    """A header of N bytes before the data: numpy's memmap with offset=N
    is the reference."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        rng = np.random.default_rng(39)
        # two channel-major recordings of different lengths behind
        # headers of different sizes (the second not a multiple of the
        # element size)
        cls.recs = [rng.normal(0, 50, (1, 8, t)).astype(np.float32) for t in (700, 451)]
        cls.heads = [b"REC0" * 64, bytes(range(37))]
        for k, (h, r) in enumerate(zip(cls.heads, cls.recs)):
            write_with_header(os.path.join(cls.tmp, f"rec{k}.f32"), h, r)
        cls.img = rng.integers(0, 65536, (33, 5, 7), dtype=np.uint16)
        write_with_header(os.path.join(cls.tmp, "img.u16"), b"\x00" * 512, cls.img)

    def memmap(self, name, dtype, shape, offset):
        return np.memmap(self.p(name), dtype=dtype, mode="r", offset=offset, shape=shape)

    def test_windows_over_recordings_behind_headers(self):
        ini = self.write_ini(
            "[w]\nsource = rec0.f32\nsource_dtype = float32\nsource_shape = 1, 8, -1\n"
            "source_offset = 256\nwindow = 100\nstride = 70\n"
            "[img]\nsource = img.u16\nsource_dtype = uint16\nsource_shape = -1, 5, 7\n"
            "source_offset = 512\ndtype = bfloat16\nscale = 0.5\noffset = -3\n", "off.ini")
        r0 = np.asarray(self.memmap("rec0.f32", "<f4", (1, 8, 700), 256))
        want = np.stack([r0[0, :, i:i + 100] for i in range(0, 601, 70)])
        img = np.asarray(self.memmap("img.u16", "<u2", (33, 5, 7), 512))
        self.assertTrue(np.array_equal(img, self.img))
        with self.mount(ini) as m:
            check_whole(self, m, "w", reference(want), "float32")
            check_whole(self, m, "img", reference(img, 0.5, -3, dtype="bfloat16"), "bfloat16")
            check_preads(self, m, "img", reference(img, 0.5, -3, dtype="bfloat16"), rows=(1, 17))

    def test_one_offset_for_a_list_of_sources(self):
        # source_offset is the view's: both files hold the same header size
        write_with_header(self.p("a.i16"), b"H" * 10, np.arange(60, dtype="<i2"))
        write_with_header(self.p("b.i16"), b"H" * 10, -np.arange(36, dtype="<i2"))
        ini = self.write_ini("[v]\nsource = a.i16\nsource = b.i16\nsource_dtype = int16\n"
                             "source_shape = -1 12\nsource_offset = 10\ndtype = int16\n", "ab.ini")
        want = np.concatenate([self.memmap("a.i16", "<i2", (5, 12), 10),
                               self.memmap("b.i16", "<i2", (3, 12), 10)])
        with self.mount(ini) as m:
            got = mm_npy(m.path("v.npy"))
            self.assertEqual(got.shape, (8, 12))
            self.assertTrue(np.array_equal(got, want))

    def test_bad_offsets_refused_naming_both_sizes(self):
        size = os.path.getsize(self.p("rec1.f32"))  # 37 + 8 * 451 * 4
        head = ("[v]\nsource = rec1.f32\nsource_dtype = float32\n")
        refused_at(self, head + "source_shape = 1, 8, -1\nsource_offset = 36\n", 2,
                   want=[f"size {size - 36} after source_offset is not a whole number of "
                         "steps along source_shape's -1 axis of 32 bytes"])
        refused_at(self, head + "source_shape = 1, 8, 452\nsource_offset = 37\n", 2,
                   want=["rec1.f32", f"source_shape declares {8 * 452 * 4} bytes but the file "
                         f"holds {size - 37} after source_offset"])
        refused_at(self, head + "source_shape = 1, 8, 450\nsource_offset = 37\n", 2,
                   want=[f"source_shape covers {8 * 450 * 4} of the file's {size - 37} bytes "
                         "after source_offset", "rows = a:b"])
        refused_at(self, head + "source_shape = -1\nsource_offset = 99999\n", 2,
                   want=["rec1.f32", f"source_offset 99999 is past the end of the file's "
                         f"{size} bytes"])
        refused_at(self, head + "source_shape = -1\nsource_offset = -4\n", 5,
                   want=["source_offset '-4' must be a whole number of bytes"])
        refused_at(self, head + "source_shape = -1\nsource_offset = 1k\n", 5,
                   want=["source_offset '1k' must be a whole number of bytes"])
        refused_at(self, "[v]\nsource = rec1.f32\nsource_offset = 37\n", 3,
                   want=["source_offset needs source_dtype and source_shape"])
        # nothing else broke: the good file still mounts
        ini = self.write_ini(head + "source_shape = 1, 8, -1\nsource_offset = 37\n", "good.ini")
        with self.mount(ini) as m:
            check_whole(self, m, "v", reference(self.recs[1]), "float32")


class Int24(E2E):
    """Little-endian signed 24-bit samples (as BDF writes them) served
    sign-extended to every output, with the view's transform."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        rng = np.random.default_rng(24)
        v = rng.integers(-2 ** 23, 2 ** 23, (3, 16, 500), dtype=np.int64)
        v[0, 0, :6] = [-2 ** 23, 2 ** 23 - 1, -1, 0, 1, -2]
        cls.bytes = int24_bytes(v.astype(np.int32))
        cls.head = b"BIOSEMI " * 32  # 256 bytes, as BDF's fixed header
        with open(os.path.join(cls.tmp, "eeg.i24"), "wb") as f:
            f.write(cls.head + cls.bytes)
        # the reference decodes the file's bytes, not the values it was made from
        cls.x = decode_int24(cls.bytes, v.shape)
        assert np.array_equal(cls.x, v)

    def test_outputs_and_transform(self):
        src = ("source = eeg.i24\nsource_dtype = int24\nsource_shape = -1, 16, 500\n"
               "source_offset = 256\n")
        ini = self.write_ini(
            f"[f32]\n{src}"
            f"[uv]\n{src}dtype = float32\nscale = 0.03125\noffset = 1.5\n"
            f"[bf]\n{src}dtype = bfloat16\nmean = {' '.join(['100'] * 16)}\n"
            f"std = {' '.join(['2500'] * 16)}\nchannel_axis = 1\n"
            f"[i32]\n{src}dtype = int32\n"
            f"[win]\n{src}window = 128\nstride = 128\n", "i24.ini")
        x = self.x
        with self.mount(ini) as m:
            check_whole(self, m, "f32", reference(x), "float32")
            check_whole(self, m, "uv", reference(x, 0.03125, 1.5), "float32")
            check_whole(self, m, "bf", reference(x, mean=[100] * 16, std=[2500] * 16, axis=1,
                                                 dtype="bfloat16"), "bfloat16")
            got = mm_npy(m.path("i32.npy"))
            self.assertEqual(got.dtype, np.int32)
            self.assertTrue(np.array_equal(got, x))
            want = np.stack([r[:, i:i + 128] for r in x for i in range(0, 373, 128)])
            check_whole(self, m, "win", reference(want), "float32")
            check_preads(self, m, "f32", reference(x), rows=(1, 2))
            with open(m.path("f32.json")) as f:
                self.assertEqual(json.load(f)["sources"][0]["dtype"], "int32")

    def test_not_whole_samples_refused(self):
        with open(self.p("odd.i24"), "wb") as f:
            f.write(self.bytes[:-1])
        refused_at(self, "[v]\nsource = odd.i24\nsource_dtype = int24\nsource_shape = -1, 16, 500\n",
                   2, want=["odd.i24", f"size {len(self.bytes) - 1} is not a whole number of "
                            "rows of 24000 bytes"])
        refused_at(self, "[v]\nsource = eeg.i24\nsource_dtype = int23\nsource_shape = -1\n", 3,
                   want=["source_dtype 'int23' is not a source dtype", "int24"])


class Spelling(E2E):
    """One spelling of a raw file in mount, info, verify and pack:
    --source-dtype, --source-shape, --source-offset; --dtype the output's;
    the old spellings refused naming the new."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        rng = np.random.default_rng(5)
        cls.v = rng.integers(-2 ** 23, 2 ** 23, (40, 6), dtype=np.int64)
        cls.b = int24_bytes(cls.v.astype(np.int32))
        with open(os.path.join(cls.tmp, "s.raw"), "wb") as f:
            f.write(b"#" * 100 + cls.b)
        cls.raw = ("--source-dtype", "int24", "--source-shape", "-1,6", "--source-offset", "100")

    def x(self):
        return decode_int24(self.b, (40, 6))

    def test_mount(self):
        with self.mount(self.p("s.raw"), *self.raw, "--dtype", "float16") as m:
            self.assertEqual(sorted(os.listdir(m.mp)),
                             [".stats.json", "s.raw.dat", "s.raw.json", "s.raw.npy"])
            check_whole(self, m, "s.raw", reference(self.x(), dtype="float16"), "float16")
        with self.mount(self.p("s.raw"), *self.raw) as m:  # float32 by default
            check_whole(self, m, "s.raw", reference(self.x()), "float32")

    def test_info(self):
        r = run("info", "--json", *self.raw, self.p("s.raw"))
        self.assertEqual(r.returncode, 0, r.stderr)
        src = json.loads(r.stdout)["source"]
        self.assertEqual((src["shape"], src["dtype"]), ([40, 6], "int32"))
        # the raw layout as given: the header skipped, the stored type
        self.assertEqual((src["source_offset"], src["source_dtype"]), (100, "int24"))
        self.assertEqual((src["data_bytes"], src["stored_bytes"]), (40 * 6 * 4, 40 * 6 * 3))
        r = run("info", *self.raw, self.p("s.raw"))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("(40, 6) int32", r.stdout)
        self.assertIn("int24 elements from byte 100 (source_offset)", r.stdout)
        # a plain dtype with no header: offset 0, its own type
        r = run("info", "--json", "--source-dtype", "uint8", "--source-shape", "-1",
                self.p("s.raw"))
        self.assertEqual(r.returncode, 0, r.stderr)
        src = json.loads(r.stdout)["source"]
        self.assertEqual((src["source_offset"], src["source_dtype"], src["shape"]),
                         (0, "uint8", [100 + len(self.b)]))
        # a manifest's view: each raw source's layout, in JSON and text
        ini = self.write_ini("[v]\nsource = s.raw\nsource_dtype = int24\nsource_shape = -1 6\n"
                             "source_offset = 100\n", "info.ini")
        r = run("info", "--json", ini)
        self.assertEqual(r.returncode, 0, r.stderr)
        src = json.loads(r.stdout)["views"][0]["sources"][0]
        self.assertEqual((src["source_offset"], src["source_dtype"]), (100, "int24"))
        r = run("info", ini)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("int24 from byte 100", r.stdout)
        # other kinds have none
        np.save(self.p("plain.npy"), np.zeros((3, 2), np.float32))
        r = run("info", "--json", self.p("plain.npy"))
        self.assertEqual(r.returncode, 0, r.stderr)
        src = json.loads(r.stdout)["source"]
        self.assertEqual((src["source_offset"], src["source_dtype"]), (None, None))

    def test_verify(self):
        r = run("verify", *self.raw, self.p("s.raw"))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("1 source", r.stdout)
        self.assertIn("OK", r.stdout)
        # a raw file named without its layout: the way to give it
        r = run("verify", self.p("s.raw"))
        self.assertEqual(r.returncode, 1)
        self.assertIn("--source-dtype and --source-shape", r.stderr)

    def test_pack(self):
        out = self.p("s.h5")
        r = run("pack", "--force", *self.raw, self.p("s.raw"), out)
        self.assertEqual(r.returncode, 0, r.stderr)
        with h5py.File(out, "r") as f:
            got = f["s"][...]
        self.assertEqual(got.dtype, np.int32)
        self.assertTrue(np.array_equal(got, self.x()))

    def one_line(self, r, *want):
        self.assertEqual(r.returncode, 1, f"{r.args}: {r.stderr!r}")
        lines = r.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, r.stderr)
        for w in want:
            self.assertIn(w, lines[0])

    def test_old_spellings_refused_naming_the_new(self):
        f, out = self.p("s.raw"), self.p("never.h5")
        for cmd in (("info",), ("verify",), ("pack", "--force")):
            ops = (f, out) if cmd[0] == "pack" else (f,)
            with self.subTest(cmd=cmd[0]):
                # --dtype used to be the source's element type in info and pack
                self.one_line(run(*cmd, "--dtype", "int16", "--shape", "-1,6", *ops),
                              "--shape is now --source-shape", "--source-dtype")
                self.one_line(run(*cmd, "--dtype", "int16", "--source-shape", "-1,6", *ops),
                              f"{cmd[0]} takes no --dtype", "--source-dtype")
                self.one_line(run(*cmd, "--source-dtype", "int16", *ops),
                              "needs both --source-dtype and --source-shape")
                self.one_line(run(*cmd, *self.raw[:4], "--source-offset", "x", *ops),
                              "--source-offset 'x' must be a whole number of bytes")
        self.assertFalse(os.path.exists(out))
        self.refused(f, "--dtype", "int16", "--shape", "-1,6", want="--shape is now --source-shape")
        self.refused(f, "--source-shape", "-1,6", want="needs both --source-dtype")
        self.refused(f, *self.raw[:2], "--source-shape", "-1,7",
                     want=["s.raw", "not a whole number of rows of 21 bytes"])
        ini = self.write_ini("[v]\nsource = s.raw\nsource_dtype = int24\nsource_shape = -1 6\n"
                             "source_offset = 100\n", "v.ini")
        self.refused(ini, *self.raw, want="set source_dtype and source_shape per view")
        # nothing else broke: the same options still mount it
        with self.mount(f, *self.raw, "--dtype", "int32") as m:
            self.assertTrue(np.array_equal(mm_npy(m.path("s.raw.npy")), self.x()))
