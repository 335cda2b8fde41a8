"""EEGLAB datasets saved by MATLAB -v7.3 (HDF5 after a 512-byte user block,
as EEGLAB's pop_saveset(EEG, 'version', '7.3') writes big files), written
here with h5py in MATLAB's layout: each field of EEG a variable, arrays
transposed ([nbchan, pnts, trials] stored (trials, pnts, nbchan)), numbers
(1, 1), char arrays as uint16 codes, MATLAB_class on each, chanlocs a
struct array of object references into /#refs#; the data uncompressed or
gzip-chunked (MATLAB's default), or named .fdt. Served as the v6 files
are: the same shape, values, channel labels and sample rate as scipy's
v6 file of the same fields, and the values h5py reads back, transposed.
Fields that disagree refused with the variable named."""
import json
import os
import time

import h5py
import numpy as np
import scipy.io

from common import E2E, check_preads, check_whole, read_all, run
from refs import windows_ref
from test_eeglab import fields, want

RNG = np.random.default_rng(73)


def mat73_save(path, fl, compress=False):
    """fl (EEGLAB's fields) as MATLAB's save -v7.3 lays them out."""
    with h5py.File(path, "w", userblock_size=512) as f:
        refs = f.create_group("#refs#")

        def ref_to(value):
            name = f"r{len(refs)}"
            put(refs, name, value)
            return refs[name].ref

        def put(g, name, v):
            if isinstance(v, str):
                codes = np.array([ord(c) for c in v], np.uint16).reshape(-1, 1)
                d = g.create_dataset(name, data=codes if v else np.array([0, 0], np.uint64))
                d.attrs["MATLAB_class"] = np.bytes_("char")
                if v:
                    d.attrs["MATLAB_int_decode"] = np.int32(2)
                else:
                    d.attrs["MATLAB_empty"] = np.uint8(1)
            elif isinstance(v, float):
                d = g.create_dataset(name, data=np.array([[v]]))
                d.attrs["MATLAB_class"] = np.bytes_("double")
            elif isinstance(v, dict):
                sg = g.create_group(name)
                sg.attrs["MATLAB_class"] = np.bytes_("struct")
                for k, x in v.items():
                    put(sg, k, x)
            elif isinstance(v, np.ndarray) and v.dtype.names:  # a struct array
                sg = g.create_group(name)
                sg.attrs["MATLAB_class"] = np.bytes_("struct")
                flat = v.reshape(-1)
                for fld in v.dtype.names:
                    r = np.array([ref_to(x[fld]) for x in flat], h5py.ref_dtype).reshape(-1, 1)
                    sg.create_dataset(fld, data=r)
            else:
                a = np.asarray(v)
                a = a.reshape(1, -1) if a.ndim == 1 else a
                kw = {"chunks": True, "compression": "gzip", "compression_opts": 3} \
                    if compress and a.size > 1000 else {}
                d = g.create_dataset(name, data=a.T, **kw)  # MATLAB's dims, reversed
                d.attrs["MATLAB_class"] = np.bytes_({"float32": "single", "float64": "double",
                                                     "int16": "int16"}[a.dtype.name])
        for k, v in fl.items():
            put(f, k, v)
    head = ("MATLAB 7.3 MAT-file, Platform: GLNXA64, Created on: "
            + time.strftime("%a %b %d %H:%M:%S %Y") + " HDF5 schema 1.00 .").ljust(116)
    with open(path, "r+b") as f:
        f.write(head.encode() + bytes(8) + b"\x00\x02IM")


def h5_data(path):
    """/data as h5py reads it, in MATLAB's order [nbchan, pnts, trials]."""
    with h5py.File(path, "r") as f:
        return f["data"][()].T


class Eeglab73Test(E2E):
    def setUp(self):
        super().setUp()
        self.d = self.p(self._testMethodName)
        os.makedirs(self.d, exist_ok=True)

    def both(self, name, fl, compress=False):
        """fl saved as -v7.3 (NAME73.set) and as -v6 by scipy (NAME6.set)."""
        mat73_save(os.path.join(self.d, name + "73.set"), fl, compress)
        scipy.io.savemat(os.path.join(self.d, name + "6.set"), fl)

    def test_served_as_v6(self):
        a = (RNG.standard_normal((9, 1234)) * 30).astype(np.float32)
        b = (RNG.standard_normal((5, 300, 4)) * 30).astype(np.float32)  # epoched
        c = (RNG.standard_normal((129, 2500)) * 30).astype(np.float32)
        self.both("cont", fields(a, labels=[f"Ch{i}" for i in range(9)]))
        self.both("epo", fields(b, srate=250.0))
        self.both("zip", fields(c), compress=True)
        with h5py.File(os.path.join(self.d, "zip73.set"), "r") as f:
            self.assertEqual(f["data"].compression, "gzip")
            self.assertEqual(f["data"].shape, (2500, 129))
        with self.mount(self.d) as m:
            for name, x in (("cont", a), ("epo", b), ("zip", c)):
                with self.subTest(name):
                    ref = want(h5_data(os.path.join(self.d, name + "73.set")))
                    self.assertTrue(np.array_equal(ref, want(x)))
                    meta = check_whole(self, m, name + "73", ref, "float32")
                    six = json.loads(read_all(m.path(name + "6.json")))
                    for k in ("channels", "sample_rate", "trials", "data", "format"):
                        self.assertEqual(meta["attrs"][k], six["attrs"][k], k)
                    self.assertEqual(meta["shape"], six["shape"])
                    self.assertEqual(meta["attrs"]["mat"], "7.3")
            check_preads(self, m, "zip73", want(c), n_random=30)
            check_preads(self, m, "epo73", want(b), rows=(1, 2, 3))
        r = run("info", "--json", os.path.join(self.d, "cont73.set"))
        src = json.loads(r.stdout)["source"]
        self.assertEqual((src["kind"], src["dtype"], src["shape"]),
                         ("eeglab", "float32", [1, 9, 1234]))
        r = run("verify", os.path.join(self.d, "zip73.set"))
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        # windows over v7.3 recordings (one compressed), never across two
        e = (RNG.standard_normal((9, 3000)) * 30).astype(np.float32)
        mat73_save(os.path.join(self.d, "more.set"), fields(e), compress=True)
        ini = self.write_ini(f"[w]\nsource = {self.d}/cont73.set\nsource = {self.d}/more.set\n"
                             "window = 200\nstride = 150\n", "w.ini")
        wins = np.concatenate([windows_ref(want(x), 200, 150, -1) for x in (a, e)])
        with self.mount(ini) as m:
            check_whole(self, m, "w", wins, "float32")

    def test_fdt(self):
        a = (RNG.standard_normal((6, 500, 3)) * 30).astype(np.float32)
        c, t, k = a.shape
        p = os.path.join(self.d, "f.set")
        mat73_save(p, fields(a, fdt="f.fdt"))
        a.reshape(c, t * k, order="F").T.astype("<f4").tofile(os.path.join(self.d, "f.fdt"))
        with self.mount(p) as m:
            meta = check_whole(self, m, "f", want(a), "float32")
            self.assertEqual(meta["attrs"]["data"], "f.fdt")
        os.truncate(os.path.join(self.d, "f.fdt"), t * c * k * 4 - 4)
        self.refused(p, want=["f.set:data", "not nbchan * pnts * trials * 4"])

    def test_refused(self):
        a = (RNG.standard_normal((3, 100)) * 30).astype(np.float32)
        fl = fields(a)
        fl["pnts"] = 99.0
        mat73_save(os.path.join(self.d, "dims.set"), fl)
        self.refused(os.path.join(self.d, "dims.set"),
                     want=["dims.set:data", "(trials, pnts, nbchan) = (1, 99, 3)"])
        fl = fields(a)
        fl["nbchan"] = 2.5
        mat73_save(os.path.join(self.d, "frac.set"), fl)
        self.refused(os.path.join(self.d, "frac.set"), want=["frac.set:nbchan", "2.5, not a count"])
        fl = fields(a)
        del fl["trials"]
        mat73_save(os.path.join(self.d, "none.set"), fl)
        self.refused(os.path.join(self.d, "none.set"), want=["none.set:trials", "missing"])
        # the header says v7.3, but no HDF5 file follows it
        with open(os.path.join(self.d, "fake.set"), "wb") as f:
            f.write(b"MATLAB 7.3 MAT-file, Platform: GLNXA64".ljust(600))
        self.refused(os.path.join(self.d, "fake.set"), want=["fake.set", "no HDF5 file follows"])
        mat73_save(os.path.join(self.d, "ok.set"), fields(a))
        with self.mount(self.d) as m:  # the good one served, each bad one listed
            check_whole(self, m, "ok", want(a), "float32")
            got = {e["path"]: e["reason"] for e in json.loads(read_all(m.path(".skipped.json")))}
        self.assertEqual(sorted(got), ["dims.set", "fake.set", "frac.set", "none.set"])
        self.assertIn("2.5", got["frac.set"])


if __name__ == "__main__":
    import unittest
    unittest.main()
