"""EEGLAB datasets written with scipy.io.savemat (Debian's python3-scipy)
in EEGLAB's variable layout, served through real mounts and compared with
what scipy.io.loadmat reads: today's layout (each field of EEG its own
variable, MATLAB -v6, no compression), the older single `EEG` struct, a
.set naming its .fdt, epoched data (trials, channels, time), data stored
in a smaller type than its class (as MATLAB does), windows over a glob of
recordings; and the files refused, with the reason: compressed (-v7),
v7.3 without nbchan, dimensions or a .fdt that disagree with the header."""
import json
import os
import shutil
import struct

import mne
import numpy as np
import scipy.io

from common import E2E, check_preads, check_whole, mm_npy, read_all, run
from refs import F32_HALF_ULP, round_out, windows_ref

RNG = np.random.default_rng(41)


def chanlocs(labels):
    """EEGLAB's chanlocs: a 1 x C struct array (labels, type, X, Y, Z)."""
    cl = np.zeros((1, len(labels)), dtype=[("labels", "O"), ("type", "O"), ("X", "O"),
                                           ("Y", "O"), ("Z", "O")])
    for i, lab in enumerate(labels):
        cl[0, i] = (lab, "EEG", float(i), -float(i), 0.5)
    return cl


def fields(data, srate=500.0, labels=None, fdt=None):
    """The fields EEGLAB's pop_saveset writes (a subset, structs and cells
    among them), data (C, T) or (C, T, K) float32, or a .fdt's name."""
    c, t = data.shape[:2]
    k = data.shape[2] if data.ndim == 3 else 1
    labels = labels or [f"E{i + 1}" for i in range(c)]
    ev = np.zeros((1, 2), dtype=[("type", "O"), ("latency", "O")])
    ev[0, 0] = ("break cnt", 1.0)
    ev[0, 1] = ("stim", 250.5)
    return {"setname": "rec", "filename": "rec.set", "filepath": "", "subject": "NDARAA",
            "nbchan": float(c), "trials": float(k), "pnts": float(t), "srate": srate,
            "xmin": 0.0, "xmax": (t - 1) / srate, "times": np.arange(t) * 1000.0 / srate,
            "data": fdt if fdt else data, "icaact": np.zeros((0, 0)),
            "icawinv": np.zeros((0, 0)), "chanlocs": chanlocs(labels), "event": ev,
            "urevent": ev, "history": "pop_loadset();", "etc": {"eeglabvers": "2024.0"},
            "datfile": fdt or "", "saved": "justloaded"}


def want(data):
    """The view of data (C, T[, K]): (trials, channels, time)."""
    d = np.asarray(data)
    return d[None] if d.ndim == 2 else np.transpose(d, (2, 0, 1))


def mat_el(mi, payload):
    n = len(payload)
    return struct.pack("<II", mi, n) + payload + bytes(-n % 8)


def mat_matrix(name, cls, dims, mi, values):
    """A miMATRIX written by hand: class cls, its real part stored as
    type mi (MATLAB stores whole numbers of a double array in the
    smallest type that holds them)."""
    body = mat_el(6, struct.pack("<II", cls, 0)) + mat_el(5, struct.pack(f"<{len(dims)}i", *dims))
    body += mat_el(1, name.encode()) + mat_el(mi, values)
    return mat_el(14, body)


class EeglabTest(E2E):
    def setUp(self):
        super().setUp()
        self.d = self.p(self._testMethodName)
        os.makedirs(self.d, exist_ok=True)

    def save(self, name, fl, **kw):
        path = os.path.join(self.d, name)
        scipy.io.savemat(path, fl, **kw)
        return path

    def loaded(self, path, struct_name=None):
        m = scipy.io.loadmat(path)
        return m[struct_name]["data"][0, 0] if struct_name else m["data"]

    def test_today_and_old_layouts(self):
        a = (RNG.standard_normal((9, 1234)) * 30).astype(np.float32)
        b = (RNG.standard_normal((5, 300, 4)) * 30).astype(np.float32)  # epoched
        p1 = self.save("now.set", fields(a, labels=[f"Ch{i}" for i in range(9)]))
        p2 = self.save("epochs.set", fields(b))
        p3 = self.save("old.set", {"EEG": fields(a)})
        with self.mount(self.d) as m:
            meta = check_whole(self, m, "now", round_out(want(self.loaded(p1)), "float32"),
                               "float32")
            self.assertEqual(meta["attrs"]["channels"], [f"Ch{i}" for i in range(9)])
            self.assertEqual(meta["attrs"]["sample_rate"], 500.0)
            self.assertEqual(meta["attrs"]["data"], "embedded")
            check_preads(self, m, "now", round_out(want(a), "float32"))
            check_whole(self, m, "epochs", round_out(want(self.loaded(p2)), "float32"),
                        "float32")
            check_preads(self, m, "epochs", round_out(want(b), "float32"), rows=(1, 2, 3))
            check_whole(self, m, "old", round_out(want(self.loaded(p3, "EEG")), "float32"),
                        "float32")
        self.assertTrue(np.array_equal(want(self.loaded(p1)), want(a)))

    def test_large_recording_chunks(self):
        """129 channels, 70,000 samples (36 MB): several chunks, each
        gathered from the time rows."""
        a = (RNG.standard_normal((129, 70000)) * 30).astype(np.float32)
        p = self.save("big.set", fields(a))
        with self.mount(p) as m:
            check_whole(self, m, "big", want(a), "float32")
            check_preads(self, m, "big", want(a), n_random=40)
        r = run("verify", p)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        r = run("pack", p, os.path.join(self.d, "big.h5"))
        self.assertEqual(r.returncode, 0, r.stderr)
        with self.mount(os.path.join(self.d, "big.h5")) as m:
            check_whole(self, m, "big", want(a), "float32")

    def test_fdt(self):
        a = (RNG.standard_normal((6, 500, 3)) * 30).astype(np.float32)
        c, t, k = a.shape
        p = self.save("withfdt.set", fields(a, fdt="withfdt.fdt"))
        # floatwrite(single(reshape(data, nbchan, pnts*trials)), 'ieee-le'): column-major
        a.reshape(c, t * k, order="F").T.astype("<f4").tofile(os.path.join(self.d, "withfdt.fdt"))
        with self.mount(p) as m:
            meta = check_whole(self, m, "withfdt", want(a), "float32")
            self.assertEqual(meta["attrs"]["data"], "withfdt.fdt")
        os.truncate(os.path.join(self.d, "withfdt.fdt"), t * c * k * 4 - 4)
        self.refused(p, want=["withfdt.set:data", "not nbchan * pnts * trials * 4"])
        os.unlink(os.path.join(self.d, "withfdt.fdt"))
        self.refused(p, want=["withfdt.set:data", "cannot be opened"])

    def test_mne_reads_the_same(self):
        """MNE's read_raw_eeglab (preload=False, get_data()) as a second
        reference, data embedded and in a .fdt, and read_epochs_eeglab for
        an epoched file: MNE gives volts (EEGLAB's
        microvolts times 1e-6), dsview the stored float32 values: equal to
        within float32's rounding of MNE's."""
        a = (RNG.standard_normal((9, 1234)) * 30).astype(np.float32)
        b = (RNG.standard_normal((6, 777)) * 30).astype(np.float32)
        self.save("emb.set", fields(a, labels=[f"Ch{i}" for i in range(9)]))
        self.save("fdt.set", fields(b, fdt="fdt.fdt"))
        b.T.astype("<f4").tofile(os.path.join(self.d, "fdt.fdt"))
        for name, x in (("emb", a), ("fdt", b)):
            with self.subTest(name):
                path = os.path.join(self.d, name + ".set")
                raw = mne.io.read_raw_eeglab(path, preload=False, verbose="error")
                ini = self.write_ini(f"[v]\nsource = {path}\n",
                                     f"{name}.ini")
                with self.mount(ini) as m:
                    got = mm_npy(m.path("v.npy"))
                    attrs = json.loads(read_all(m.path("v.json")))["attrs"]
                self.assertEqual(attrs["channels"], raw.ch_names)
                self.assertEqual(attrs["sample_rate"], raw.info["sfreq"])
                theirs = raw.get_data() / 1e-6
                self.assertEqual(got.shape, (1,) + theirs.shape)
                np.testing.assert_allclose(got[0], theirs, rtol=F32_HALF_ULP,
                                           atol=np.abs(theirs).max() * 1e-12)
                self.assertTrue(np.array_equal(got[0], x))
        # epoched: read_epochs_eeglab, which needs EEG.epoch and the events
        c = (RNG.standard_normal((4, 250, 5)) * 30).astype(np.float32)
        fl = fields(c)
        ev = np.zeros((1, 5), dtype=[("type", "O"), ("latency", "O"), ("epoch", "O")])
        ep = np.zeros((1, 5), dtype=[("event", "O"), ("eventlatency", "O"), ("eventtype", "O")])
        for i in range(5):
            ev[0, i] = ("stim", float(i * 250 + 100), float(i + 1))
            ep[0, i] = (float(i + 1), 0.0, "stim")
        fl["event"], fl["urevent"], fl["epoch"] = ev, ev, ep
        path = self.save("ep.set", fl)
        epochs = mne.read_epochs_eeglab(path, verbose="error")
        with self.mount(path) as m:
            got = mm_npy(m.path("ep.npy"))
        want_uv = epochs.get_data() / 1e-6
        self.assertEqual(got.shape, want_uv.shape)
        np.testing.assert_allclose(got, want_uv, rtol=F32_HALF_ULP,
                                   atol=np.abs(want_uv).max() * 1e-12)
        self.assertTrue(np.array_equal(got, want(c)))

    def test_smaller_storage_type(self):
        """A double matrix of whole numbers stored as int16 (as MATLAB
        saves one): served as those numbers."""
        a = RNG.integers(-3000, 3000, (4, 250)).astype(np.int16)
        fl = fields(a.astype(np.float32))
        del fl["data"]
        p = self.save("small.set", fl)
        with open(p, "ab") as f:  # mxDOUBLE_CLASS (6), stored as miINT16 (3)
            f.write(mat_matrix("data", 6, (4, 250), 3, a.tobytes(order="F")))
        loaded = scipy.io.loadmat(p, mat_dtype=True)["data"]  # the class's type
        self.assertEqual(loaded.dtype, np.float64)
        with self.mount(p) as m:
            check_whole(self, m, "small", round_out(want(loaded), "float32"), "float32")
        r = run("info", "--json", p)
        src = json.loads(r.stdout)["source"]
        self.assertEqual((src["kind"], src["dtype"], src["shape"]), ("eeglab", "int16",
                                                                      [1, 4, 250]))

    def test_windows_over_a_glob(self):
        parts = [(RNG.standard_normal((7, n)) * 10).astype(np.float32) for n in (700, 333, 1000)]
        for i, x in enumerate(parts):
            self.save(f"w{i}.set", fields(x))
        ini = self.write_ini(f"[w]\nsource = {self.d}/w*.set\nwindow = 200\nstride = 150\n",
                             "w.ini")
        wins = np.concatenate([windows_ref(want(x), 200, 150, -1) for x in parts])
        with self.mount(ini) as m:
            check_whole(self, m, "w", wins, "float32")

    def test_refused(self):
        a = (RNG.standard_normal((3, 100)) * 30).astype(np.float32)
        p = self.save("zip.set", fields(a), do_compression=True)
        line = self.refused(p, want=["zip.set", "compressed", "save it uncompressed",
                                     "'version', '6'"])
        self.assertIn("dsview pack cannot convert it", line)
        fl = fields(a)
        fl["pnts"] = 99.0
        self.refused(self.save("dims.set", fl), want=["dims.set:data", "is 3 x 100 x 1",
                                                       "100", "99"])
        fl = fields(a)
        fl["nbchan"] = 2.5
        self.refused(self.save("frac.set", fl), want=["frac.set", "'nbchan' is 2.5"])
        fl = fields(a)
        del fl["srate"], fl["pnts"]
        self.refused(self.save("nopnts.set", fl), want=["nopnts.set", "no variable 'pnts'"])
        # v7.3: HDF5 after a 512-byte header
        import h5py
        v73 = os.path.join(self.d, "v73.set")
        with h5py.File(v73, "w", userblock_size=512) as f:
            f["data"] = a.T
        with open(v73, "r+b") as f:
            f.write(b"MATLAB 7.3 MAT-file, Platform: GLNXA64".ljust(116))
        # (served now: test_eeglab73.py; this one has no nbchan)
        self.refused(v73, want=["v73.set:nbchan", "missing"])
        # a damaged element: its length past the end of the file
        raw = bytearray(open(self.save("ok.set", fields(a)), "rb").read())
        raw[132:136] = struct.pack("<I", 10 ** 8)
        with open(os.path.join(self.d, "cut.set"), "wb") as f:
            f.write(raw)
        self.refused(os.path.join(self.d, "cut.set"), want=["cut.set:element at byte 128",
                                                            "past the end"])
        with open(os.path.join(self.d, "text.set"), "wb") as f:
            f.write(b"not a MAT-file".ljust(200))
        self.refused(os.path.join(self.d, "text.set"), want=["text.set:header",
                                                             "not a MATLAB 5.0 MAT-file"])
        # a directory: ok.set served, each bad one listed with its reason
        with self.mount(self.d) as m:
            check_whole(self, m, "ok", want(a), "float32")
            got = {e["path"]: e["reason"] for e in json.loads(read_all(m.path(".skipped.json")))}
        self.assertIn("compressed", got["zip.set"])
        self.assertIn("missing", got["v73.set"])
        shutil.rmtree(self.p("mnt-refused"), ignore_errors=True)


if __name__ == "__main__":
    import unittest
    unittest.main()
