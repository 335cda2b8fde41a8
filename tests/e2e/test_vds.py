"""HDF5 virtual datasets (h5py's VirtualLayout, Debian's h5py): served as
the concatenation of their source datasets, each opened as a source of its
own (its own fast path), rows no mapping covers and missing sources as the
fill value, every byte as h5py reads the virtual dataset; every other
mapping form refused with the dataset and the form named, the file's other
datasets still served."""
import json
import os

import h5py
import numpy as np

from common import E2E, check_preads, check_whole, mm_npy, read_all, run
from refs import reference

RNG = np.random.default_rng(29)
ROW = (3, 4)


def rows(n, seed):
    return np.random.default_rng(seed).standard_normal((n, *ROW)).astype(np.float32)


def vsource(path, name, n, dtype=np.float32):
    return h5py.VirtualSource(path, name, shape=(n, *ROW), dtype=dtype)


class VirtualDatasets(E2E):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        d = cls.tmp
        os.makedirs(os.path.join(d, "data", "parts"))
        cls.a, cls.b, cls.c = rows(40, 1), rows(70, 2), rows(25, 3)
        with h5py.File(os.path.join(d, "data", "parts", "a.h5"), "w") as f:
            f["x"] = cls.a  # contiguous
        with h5py.File(os.path.join(d, "data", "parts", "b.h5"), "w") as f:
            # gzip, then shuffle after it: a pipeline only the library
            # decodes (h5py's own order is dsview's: test_h5gzip.py)
            dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
            dcpl.set_chunk((8, *ROW))
            dcpl.set_deflate(4)
            dcpl.set_shuffle()
            h5py.Dataset(h5py.h5d.create(f.id, b"x", h5py.h5t.IEEE_F32LE,
                                         h5py.h5s.create_simple(cls.b.shape), dcpl=dcpl))[...] = cls.b
            f["short"] = cls.b[:10].astype(np.int16)
        # a decoy where a name resolved against the working directory would land
        os.makedirs(os.path.join(d, "parts"))
        with h5py.File(os.path.join(d, "parts", "a.h5"), "w") as f:
            f["x"] = -cls.a
        cls.vds = os.path.join(d, "data", "v.h5")
        lay = h5py.VirtualLayout(shape=(150, *ROW), dtype=np.float32)
        lay[0:40] = vsource("parts/a.h5", "x", 40)      # relative: beside v.h5
        lay[50:120] = vsource("parts/b.h5", "x", 70)    # after a gap of 10 rows
        lay[120:145] = vsource(".", "c", 25)            # this file; 5 fill rows end it
        miss = h5py.VirtualLayout(shape=(30, *ROW), dtype=np.float32)
        miss[0:10] = vsource(".", "c10", 10)
        miss[10:30] = vsource("parts/gone.h5", "x", 20)
        with h5py.File(cls.vds, "w") as f:
            f.create_dataset("c", data=cls.c, chunks=(5, *ROW))  # chunked: the fast path
            f["c10"] = cls.c[:10]
            f.create_virtual_dataset("vds", lay, fillvalue=-1.5)
            f.create_virtual_dataset("missing", miss, fillvalue=7)
            cls.write_refused(f)
        only = h5py.VirtualLayout(shape=(40, *ROW), dtype=np.float32)
        only[0:40] = vsource("parts/a.h5", "x", 40)
        with h5py.File(os.path.join(d, "data", "only.h5"), "w") as f:  # one dataset: a VDS
            f.create_virtual_dataset("v", only)
        with h5py.File(cls.vds, "r") as f:
            cls.want = {n: f[n][()] for n in ("vds", "missing")}

    @classmethod
    def write_refused(cls, f):
        """One virtual dataset of each form dsview refuses, and what its
        line must say."""
        cls.refusals = {}

        def add(name, shape, maps, why, dtype=np.float32):
            lay = h5py.VirtualLayout(shape=shape, dtype=dtype)
            for sel, src in maps:
                lay[sel] = src
            f.create_virtual_dataset(name, lay)
            cls.refusals[name] = why

        a = lambda n=40: vsource("parts/a.h5", "x", n)
        add("strided", (80, *ROW), [(np.s_[0:80:2], a())], "a strided selection")
        add("axis1", (40, 6, 4), [(np.s_[:, 0:3], a())], "part of axis 1")
        add("part_of_source", (10, *ROW), [(np.s_[0:10], a()[5:15])], "rows [5, 15)")
        add("overlap", (60, *ROW), [(np.s_[0:40], a()), (np.s_[20:60], a())],
            "overlap mapping 0")
        add("other_dtype", (10, *ROW), [(np.s_[0:10], vsource("parts/b.h5", "short", 10,
                                                               np.int16))],
            "another element type")
        unl = h5py.VirtualLayout(shape=(40, *ROW), dtype=np.float32, maxshape=(None, *ROW))
        src = h5py.VirtualSource("parts/a.h5", "x", shape=(40, *ROW), maxshape=(None, *ROW))
        unl[0:h5py.h5s.UNLIMITED] = src[0:h5py.h5s.UNLIMITED]
        f.create_virtual_dataset("unlimited", unl)
        cls.refusals["unlimited"] = "an unlimited selection"
        add("object_storage", (10, *ROW), [(np.s_[0:10], vsource("s3://b/a.h5", "x", 10))],
            "a source in object storage")
        add("nested", (150, *ROW), [(np.s_[0:150], vsource(".", "vds", 150))],
            "itself a virtual dataset")

    def test_concatenated_sources_as_h5py_reads(self):
        cwd = os.getcwd()
        os.chdir(self.tmp)  # the decoy parts/a.h5 is here
        try:
            with self.mount(os.path.join("data", "v.h5")) as m:
                meta = check_whole(self, m, "vds", self.want["vds"], "float32")
                check_preads(self, m, "vds", self.want["vds"], rows=(40, 50, 120, 145))
                srcs = meta["sources"]
                self.assertEqual([s["kind"] for s in srcs],
                                 ["hdf5-contiguous", "fill", "hdf5-library", "hdf5-chunked",
                                  "fill"])
                self.assertEqual([s["rows"] for s in srcs],
                                 [[0, 40], [40, 50], [50, 120], [120, 145], [145, 150]])
                self.assertTrue(srcs[0]["path"].endswith("data/parts/a.h5"), srcs[0]["path"])
                check_whole(self, m, "missing", self.want["missing"], "float32")
                skipped = json.loads(read_all(m.path(".skipped.json")))
        finally:
            os.chdir(cwd)
        self.assertTrue((self.want["missing"][10:] == 7).all())
        self.assertTrue((self.want["vds"][40:50] == -1.5).all())
        # every refused form: skipped with its reason, the rest served
        got = {s["path"].lstrip("/"): s["reason"] for s in skipped}
        self.assertEqual(set(got), set(self.refusals))
        for name, why in self.refusals.items():
            self.assertIn(why, got[name], name)
            self.assertIn("virtual mapping", got[name], name)

    def test_manifest_transform_and_same_as_listed_sources(self):
        d = os.path.join(self.tmp, "data")
        ini = self.write_ini(
            f"[v]\nsource = {self.vds}:/vds\nscale = 0.5\noffset = 1\ndtype = bfloat16\n"
            f"[listed]\nsource = {d}/parts/a.h5:/x\nsource = {d}/parts/b.h5:/x\n"
            f"source = {self.vds}:/c\n[only]\nsource = {d}/only.h5\n", "vds.ini")
        want = self.want["vds"]
        with self.mount(ini) as m:
            check_whole(self, m, "v", reference(want, 0.5, 1.0, dtype="bfloat16"), "bfloat16")
            listed = np.concatenate([self.a, self.b, self.c])
            got = mm_npy(m.path("v.npy"))
            ref = reference(listed, 0.5, 1.0, dtype="bfloat16")
            self.assertTrue(np.array_equal(got[0:40], ref[0:40]))
            self.assertTrue(np.array_equal(got[50:145], ref[40:]))
            check_whole(self, m, "listed", reference(listed, dtype="float32"), "float32")
            check_whole(self, m, "only", self.a, "float32")  # the file's one dataset

    def test_refused_in_a_manifest_names_dataset_and_form(self):
        line = self.refused(self.write_ini(f"[s]\nsource = {self.vds}:/strided\n", "s.ini"),
                            want=("/strided", "virtual mapping 0", "a strided selection"))
        self.assertIn(self.vds, line)

    def test_info_lists_the_parts(self):
        r = run("info", "--json", self.vds + ":/vds")
        self.assertEqual(r.returncode, 0, r.stderr)
        ds = json.loads(r.stdout)["datasets"][0]
        self.assertEqual((ds["layout"], ds["serve"]), ("virtual", "virtual"))
        self.assertEqual([(p["kind"], p["rows"]) for p in ds["parts"]],
                         [("hdf5-contiguous", [0, 40]), ("fill", [40, 50]),
                          ("hdf5-library", [50, 120]), ("hdf5-chunked", [120, 145]),
                          ("fill", [145, 150])])
        r = run("info", self.vds)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("virtual: 5 parts, concatenated along axis 0", r.stdout)
        self.assertRegex(r.stdout, r"rows 50-120 +\S*data/parts/b.h5:/x \(hdf5-library")
        self.assertIn("refused: virtual mapping 0: a strided selection", r.stdout)
