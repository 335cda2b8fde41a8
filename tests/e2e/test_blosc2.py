"""HDF5's Blosc2 filter (32026) as hdf5plugin writes it
(tests/e2e/blosc2_writer.py, h5py + hdf5plugin in the project venv):
every codec (blosclz, lz4, lz4hc, zstd, zlib) and filter (shuffle,
bitshuffle, delta, none) hdf5plugin offers, Fletcher32 after it, chunks
that split rows (B2ND blocks in 3-d), ranks past B2ND's 8 and 16
dimensions, HDF5's shuffle in front, decoded by libblosc2 from the venv's blosc2 wheel and compared
byte for byte with what h5py + hdf5plugin read. Then: a damaged chunk fails
its rows; without libblosc2, and for pipelines only the HDF5 library could
run, the datasets are refused with the reason and the rest of the file
mounts."""
import errno
import json
import os
import shutil

import numpy as np

from common import E2E, check_preads, check_whole, forked_batches, run, venv_python

HERE = os.path.dirname(os.path.abspath(__file__))
WRITER = os.path.join(HERE, "blosc2_writer.py")

# dataset: (the view's dtype: the source's own, or float32 for float64)
DATASETS = {
    "blosclz_shuffle": "float32",
    "lz4_bitshuffle": "uint16",
    "lz4hc_none": "int16",
    "zstd_delta": "int32",
    "zlib_shuffle_f8": "float32",
    "fletcher": "float32",
    "grid_3d": "uint8",
    "u1_1d": "uint8",
    "rank9": "int16",
    "rank17": "uint32",
    "behind_shuffle": "float32",
}


class Blosc2(E2E):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        with open(WRITER) as f:
            venv_python(f.read(), cls.tmp)
        cls.lib = venv_python("import importlib.util, os\n"
                              "s = importlib.util.find_spec('blosc2')\n"
                              "print(os.path.join(s.submodule_search_locations[0], 'lib'))").strip()
        cls.saved = os.environ.get("LD_LIBRARY_PATH")
        os.environ["LD_LIBRARY_PATH"] = cls.lib  # the mount daemon's loader path

    @classmethod
    def tearDownClass(cls):
        if cls.saved is None:
            os.environ.pop("LD_LIBRARY_PATH", None)
        else:
            os.environ["LD_LIBRARY_PATH"] = cls.saved
        super().tearDownClass()

    def ref(self, name):
        x = np.load(os.path.join(self.tmp, name + ".npy"))
        return x.astype(np.float32) if x.dtype == np.float64 else x

    def test_every_codec_and_filter(self):
        h5 = os.path.join(self.tmp, "b2.h5")
        text = "".join(f"[{n}]\nsource = {h5}:/{n}\ndtype = {dt}\n\n" for n, dt in DATASETS.items())
        with self.mount(self.write_ini(text)) as m:
            for name, dtype in DATASETS.items():
                with self.subTest(name):
                    ref = self.ref(name)
                    check_whole(self, m, name, ref, dtype)
                    if ref.ndim > 1:
                        check_preads(self, m, name, ref, rows=(1, 7, 16, 33), seed=len(name),
                                     n_random=30)
            # decodes on several daemon threads at once, each its own frame
            forked_batches(self, m, "grid_3d", self.ref("grid_3d"), workers=3, batches=10)
        r = run("verify", h5)
        self.assertEqual(r.returncode, 3, r.stdout + r.stderr)  # big_endian: not checked
        self.assertIn("11 of 12 datasets", r.stdout)
        self.assertIn("1 dataset not checked", r.stdout)
        self.assertNotIn("bad", r.stdout)

    def test_pipelines_the_library_would_need(self):
        # zero config: the file mounts, the one dataset skipped with why
        with self.mount(os.path.join(self.tmp, "b2.h5")) as m:
            with open(m.path(".skipped.json")) as f:
                skipped = json.load(f)
            self.assertEqual([s["path"] for s in skipped], ["/big_endian"])
            self.assertIn("this dataset needs the HDF5 library, which has no Blosc2",
                          skipped[0]["reason"])
            check_whole(self, m, "zstd_delta", self.ref("zstd_delta").astype(np.float32), "float32")

    def test_without_libblosc2(self):
        os.environ.pop("LD_LIBRARY_PATH")
        try:
            h5 = os.path.join(self.tmp, "b2.h5")
            self.refused(self.write_ini(f"[x]\nsource = {h5}:/lz4hc_none\n", "nolib.ini"),
                         want=("lz4hc_none", "filter 32026 (blosc2) needs libblosc2",
                               "LD_LIBRARY_PATH"))
            r = run("info", "--json", h5)
            self.assertEqual(r.returncode, 0, r.stderr)
            info = json.loads(r.stdout)
            self.assertIn("needs libblosc2", json.dumps(info))
        finally:
            os.environ["LD_LIBRARY_PATH"] = self.lib

    def test_damaged_chunk_fails_its_rows(self):
        # chunk 3 of zstd_delta (rows 75-99, 120 bytes a row) with bytes
        # of its frame flipped: EIO for those rows, the rest reads on
        src = os.path.join(self.tmp, "b2.h5")
        h5 = os.path.join(self.tmp, "damaged.h5")
        shutil.copy(src, h5)
        off = venv_python("import sys, h5py\n"
                          "with h5py.File(sys.argv[1]) as f:\n"
                          "    i = f['zstd_delta'].id.get_chunk_info(3)\n"
                          "    print(i.byte_offset, i.size)", h5).split()
        off, size = int(off[0]), int(off[1])
        with open(h5, "r+b") as f:
            f.seek(off + size // 2)
            f.write(bytes(16))
        ref = self.ref("zstd_delta")
        row = ref[0].nbytes
        with self.mount(self.write_ini(f"[d]\nsource = {h5}:/zstd_delta\ndtype = int32\n"),
                        expect_errors=[r"corrupt"]) as m:
            fd = os.open(m.path("d.dat"), os.O_RDONLY)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
            try:
                for r in (0, 40, 60):  # pages of rows 0-67 hold no row of chunk 3
                    self.assertEqual(os.pread(fd, row, row * r), ref[r].tobytes(), f"row {r}")
                for r in (75, 99):
                    with self.assertRaises(OSError) as cm:
                        os.pread(fd, row, row * r)
                    self.assertEqual(cm.exception.errno, errno.EIO)
            finally:
                os.close(fd)
