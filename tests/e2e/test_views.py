"""Every view kind users have, read through a real mount and compared bit for
bit with the numpy float64 reference: .dat via np.memmap, .npy via np.load
(mmap_mode='r') and plain read()."""
import json
import os

import h5py
import hdf5plugin
import numpy as np

from common import E2E, mm_dat, mm_npy, reference, same_bits

MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
NP_OUT = {"float32": np.float32, "bfloat16": np.uint16, "float16": np.float16}


class Images(E2E):
    """uint8 HWC image stacks with ImageNet normalisation."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        rng = np.random.default_rng(1)
        cls.x = rng.integers(0, 256, (301, 24, 40, 3), dtype=np.uint8)
        np.save(os.path.join(cls.tmp, "img.npy"), cls.x)
        cls.chw = np.ascontiguousarray(cls.x.transpose(0, 3, 1, 2))
        np.save(os.path.join(cls.tmp, "chw.npy"), cls.chw)

    def check_view(self, m, name, ref, dtype):
        nd = NP_OUT[dtype]
        a = mm_dat(m.path(name + ".dat"), nd, ref.shape)
        self.assertTrue(same_bits(a, ref), f"{name}.dat differs")
        b = mm_npy(m.path(name + ".npy"))
        self.assertEqual(b.shape, ref.shape)
        self.assertEqual(b.dtype, np.dtype(nd).newbyteorder("<") if nd != np.uint16 else np.dtype("<u2"))
        self.assertTrue(same_bits(b, ref), f"{name}.npy differs")
        with open(m.path(name + ".dat"), "rb") as f:
            self.assertEqual(f.read(), np.ascontiguousarray(ref).tobytes())
        st = os.stat(m.path(name + ".dat"))
        self.assertEqual(st.st_size, ref.nbytes)
        self.assertEqual(st.st_blksize % 4096, 0)
        with open(m.path(name + ".npy"), "rb") as f:
            head = f.read(10)
        hlen = 10 + head[8] + 256 * head[9]
        self.assertEqual(hlen % 64, 0)
        self.assertEqual(os.stat(m.path(name + ".npy")).st_size, hlen + ref.nbytes)
        with open(m.path(name + ".json")) as f:
            meta = json.load(f)
        self.assertEqual(meta["shape"], list(ref.shape))
        self.assertEqual(meta["dtype"], dtype)
        self.assertEqual(meta["nbytes"], ref.nbytes)
        self.assertEqual(meta["row_bytes"], ref.nbytes // ref.shape[0])

    def test_hwc_all_dtypes(self):
        ini = ""
        for dt in ("float32", "bfloat16", "float16"):
            ini += (f"[img_{dt}]\nsource = img.npy\ndtype = {dt}\nscale = {1/255!r}\n"
                    f"mean = 0.485 0.456 0.406\nstd = 0.229 0.224 0.225\nchannel_axis = -1\n\n")
        with self.mount(self.write_ini(ini)) as m:
            for dt in ("float32", "bfloat16", "float16"):
                ref = reference(self.x, 1 / 255, 0, MEAN, STD, -1, dtype=dt)
                self.check_view(m, "img_" + dt, ref, dt)

    def test_chw_channel_axis_1_with_clip(self):
        ini = (f"[chw]\nsource = chw.npy\nscale = {1/255!r}\nmean = 0.485 0.456 0.406\n"
               f"std = 0.229 0.224 0.225\nchannel_axis = 1\nclip = -1.5 2\n")
        with self.mount(self.write_ini(ini)) as m:
            ref = reference(self.chw, 1 / 255, 0, MEAN, STD, 1, clip=(-1.5, 2))
            self.check_view(m, "chw", ref, "float32")

    def test_mtime_is_newest_source(self):
        os.utime(self.p("img.npy"), (1_600_000_000, 1_600_000_000))
        os.utime(self.p("chw.npy"), (1_700_000_000, 1_700_000_000))
        ini = "[both]\nsource = img.npy\nsource = img.npy\n[c]\nsource = chw.npy\n"
        with self.mount(self.write_ini(ini)) as m:
            self.assertEqual(int(os.stat(m.path("both.dat")).st_mtime), 1_600_000_000)
            self.assertEqual(int(os.stat(m.path("c.npy")).st_mtime), 1_700_000_000)
            a = mm_npy(m.path("both.npy"))
            self.assertEqual(a.shape[0], 2 * self.x.shape[0])
            self.assertTrue(same_bits(a, reference(np.concatenate([self.x, self.x]))))


class Betas(E2E):
    """int16 betas in several HDF5 session files, scale 1/300, concatenated."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        rng = np.random.default_rng(2)
        cls.parts = [rng.integers(-32768, 32767, (n, 7, 9, 11), dtype=np.int16) for n in (50, 83, 61)]
        with h5py.File(os.path.join(cls.tmp, "s1.h5"), "w") as f:
            f.create_dataset("betas", data=cls.parts[0])  # contiguous
        with h5py.File(os.path.join(cls.tmp, "s2.h5"), "w") as f:
            f.create_dataset("betas", data=cls.parts[1], chunks=(10, 7, 9, 11))  # partial last chunk
        with h5py.File(os.path.join(cls.tmp, "s3.h5"), "w") as f:
            f.create_dataset("betas", data=cls.parts[2], chunks=(8, 7, 9, 11), fletcher32=True,
                             **hdf5plugin.LZ4())
        with h5py.File(os.path.join(cls.tmp, "gz.h5"), "w") as f:
            f.create_dataset("betas", data=cls.parts[0], chunks=(9, 7, 9, 11), compression="gzip",
                             shuffle=True)

    def test_three_sessions_scale(self):
        ini = ("[betas]\nsource = s1.h5:/betas\nsource = s2.h5:/betas\nsource = s3.h5:/betas\n"
               "scale = 0.0033333333333333335\n")
        with self.mount(self.write_ini(ini)) as m:
            ref = reference(np.concatenate(self.parts), 0.0033333333333333335)
            a = mm_npy(m.path("betas.npy"))
            self.assertEqual(a.shape, ref.shape)
            self.assertTrue(same_bits(a, ref))
            meta = json.load(open(m.path("betas.json")))
            kinds = [s["kind"] for s in meta["sources"]]
            self.assertEqual(kinds, ["hdf5-contiguous", "hdf5-chunked", "hdf5-chunked"])
            self.assertEqual(meta["chunk_rows"][1:], [10, 8])

    def test_one_row_chunks(self):
        # chunks of one row: a 1 MiB read spans hundreds of chunks (the
        # reply is gathered into one buffer instead of an iovec)
        with h5py.File(self.p("rows.h5"), "w") as f:
            f.create_dataset("betas", data=self.parts[1], chunks=(1, 7, 9, 11))
        with self.mount(self.write_ini("[r]\nsource = rows.h5:/betas\n", "rows.ini")) as m:
            with open(m.path("r.dat"), "rb") as f:
                self.assertEqual(f.read(), reference(self.parts[1]).tobytes())
            self.assertTrue(same_bits(mm_npy(m.path("r.npy")), reference(self.parts[1])))

    def test_gzip_through_library(self):
        ini = "[gz]\nsource = gz.h5:/betas\ndtype = bfloat16\nscale = 0.0033333333333333335\n"
        with self.mount(self.write_ini(ini)) as m:
            ref = reference(self.parts[0], 0.0033333333333333335, dtype="bfloat16")
            a = mm_dat(m.path("gz.dat"), np.uint16, ref.shape)
            self.assertTrue(same_bits(a, ref))
            self.assertEqual(json.load(open(m.path("gz.json")))["sources"][0]["kind"], "hdf5-library")


class EEG(E2E):
    """Raw float32 windows split over two release files, served as float16."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        rng = np.random.default_rng(3)
        cls.parts = [rng.normal(0, 2000, (n, 129, 20)).astype(np.float32) for n in (33, 45)]
        cls.parts[0][0, 0, :4] = [np.nan, np.inf, -np.inf, 1e6]  # NaN, inf, float16 overflow
        for i, p in enumerate(cls.parts):
            p.tofile(os.path.join(cls.tmp, f"R{i + 1}.bin"))

    def test_raw_to_float16(self):
        ini = ("[eeg]\nsource = R1.bin\nsource = R2.bin\nsource_dtype = float32\n"
               "source_shape = -1 129 20\ndtype = float16\n")
        with self.mount(self.write_ini(ini)) as m:
            ref = reference(np.concatenate(self.parts), dtype="float16")
            a = mm_npy(m.path("eeg.npy"))
            self.assertEqual(a.dtype, np.float16)
            self.assertEqual(a.shape, (78, 129, 20))
            self.assertTrue(same_bits(a, ref))
            self.assertTrue(np.isnan(a[0, 0, 0]) and a[0, 0, 1] == np.inf and a[0, 0, 3] == np.inf)


class ZeroConfig(E2E):
    def test_npy_file(self):
        x = np.arange(1000, dtype=np.int16).reshape(100, 10)
        np.save(self.p("plain.npy"), x)
        with self.mount(self.p("plain.npy")) as m:
            self.assertEqual(sorted(os.listdir(m.mp)),
                             [".stats.json", "plain.dat", "plain.json", "plain.npy"])
            self.assertTrue(same_bits(mm_npy(m.path("plain.npy")), x.astype(np.float32)))

    def test_h5_groups_become_directories(self):
        a = np.arange(600, dtype=np.uint8).reshape(60, 10) % 251
        b = np.linspace(-5, 5, 300).astype(np.float64).reshape(30, 10)
        with h5py.File(self.p("zc.h5"), "w") as f:
            f.create_dataset("a", data=a)
            f.create_group("grp").create_dataset("b", data=b, chunks=(7, 10), compression="gzip")
        with self.mount(self.p("zc.h5"), "--dtype", "bfloat16") as m:
            self.assertIn("grp", os.listdir(m.mp))
            self.assertTrue(same_bits(mm_npy(m.path("a.npy")), reference(a, dtype="bfloat16")))
            self.assertTrue(same_bits(mm_npy(m.path("grp/b.npy")), reference(b, dtype="bfloat16")))
