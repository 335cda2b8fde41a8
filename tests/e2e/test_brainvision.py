"""BrainVision recordings (.vhdr/.vmrk/.eeg) written by pybv (run under the
project venv) and, for what pybv does not write (VECTORIZED, INT_32,
UINT_16), by hand as the format's specification lays them out; served
through real mounts as (1, channels, time): each value the stored number
times its channel's resolution, in float64 (numpy, from the .eeg read
here), rounded once. Also a BIDS tree of them, windows over a glob, info
and verify, and the headers refused with the entry named."""
import json
import os

import mne
import numpy as np

from common import E2E, check_preads, check_whole, mm_npy, read_all, run, venv_python
from refs import F32_HALF_ULP, round_out, windows_ref

RNG = np.random.default_rng(43)

WRITER = """
import sys, numpy as np, pybv
out = sys.argv[1]
rng = np.random.default_rng(43)
def rec(name, c, t, fmt, res):
    uv = rng.standard_normal((c, t)) * 40 + np.linspace(-5, 5, c)[:, None]
    pybv.write_brainvision(data=uv * 1e-6, sfreq=500.0, ch_names=[f"Ch {i}" for i in range(c)],
                           fname_base=name, folder_out=out, fmt=fmt, resolution=res, unit="µV",
                           events=np.array([[10, 1], [250, 2]]))
    np.save(f"{out}/{name}.uv.npy", uv)
rec("mux_i16", 8, 3001, "binary_int16", 0.1)
rec("mux_f32", 5, 1200, "binary_float32", 0.5)
rec("mux_res", 6, 2000, "binary_int16", np.array([0.1, 0.2, 0.05, 1.0, 0.5, 0.25]))
rec("big", 64, 40000, "binary_int16", 0.1)
"""

DTYPE = {"INT_16": "<i2", "UINT_16": "<u2", "INT_32": "<i4", "IEEE_FLOAT_32": "<f4"}


def header_of(path):
    """What the .vhdr says, read here: data file, orientation, format,
    each channel's resolution."""
    info, res, sect = {}, [], None
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if line.startswith("["):
                sect = line
            elif "=" in line and not line.startswith(";"):
                k, v = line.split("=", 1)
                if sect == "[Channel Infos]" and k.startswith("Ch"):
                    r = v.split(",")[2]
                    res.append(float(r) if r else 1.0)
                else:
                    info[k] = v
    return info, np.array(res)


def want_of(vhdr):
    info, res = header_of(vhdr)
    c = int(info["NumberOfChannels"])
    raw = np.fromfile(os.path.join(os.path.dirname(vhdr), info["DataFile"]),
                      DTYPE[info["BinaryFormat"]])
    if info.get("DataOrientation", "MULTIPLEXED") == "VECTORIZED":
        x = raw.reshape(c, -1)
    else:
        x = raw.reshape(-1, c).T
    return (x.astype(np.float64) * res[:, None])[None]


def write_by_hand(d, name, x, fmt, res, orientation="VECTORIZED", extra=""):
    """A .vhdr and .eeg as BrainVision Recorder writes them."""
    c = x.shape[0]
    raw = x.astype(DTYPE[fmt])
    (raw if orientation == "VECTORIZED" else raw.T).tofile(os.path.join(d, name + ".eeg"))
    chans = "".join(f"Ch{i + 1}=E{i + 1},,{res[i]},µV\n" for i in range(c))
    text = ("Brain Vision Data Exchange Header File Version 1.0\n; Data created here\n\n"
            f"[Common Infos]\nCodepage=UTF-8\nDataFile={name}.eeg\nMarkerFile={name}.vmrk\n"
            f"DataFormat=BINARY\nDataOrientation={orientation}\nNumberOfChannels={c}\n"
            f"SamplingInterval=4000\n{extra}\n[Binary Infos]\nBinaryFormat={fmt}\n\n"
            f"[Channel Infos]\n; Each entry: Ch<Channel number>=<Name>,<Reference channel "
            f"name>,\n{chans}\n[Comment]\nfree text here\n  indented = too\n")
    path = os.path.join(d, name + ".vhdr")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return path


class BrainVisionTest(E2E):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.d = os.path.join(cls.tmp, "bv")
        os.makedirs(cls.d)
        venv_python(WRITER, cls.d)
        x = RNG.integers(-2 ** 31, 2 ** 31 - 1, (4, 777), dtype=np.int64)
        write_by_hand(cls.d, "vec_i32", x, "INT_32", [0.5, 1.0, 0.001, 2.0])
        x = RNG.integers(0, 65535, (3, 500), dtype=np.int64)
        write_by_hand(cls.d, "vec_u16", x, "UINT_16", [0.1, 0.2, 0.3])
        x = RNG.standard_normal((5, 640)).astype(np.float32)
        write_by_hand(cls.d, "mux_hand", x, "IEEE_FLOAT_32", [1, 1, 1, 1, 1],
                      orientation="MULTIPLEXED")

    def test_each_recording(self):
        names = ["mux_i16", "mux_f32", "mux_res", "big", "vec_i32", "vec_u16", "mux_hand"]
        with self.mount(self.d) as m:
            for n in names:
                with self.subTest(n):
                    w = want_of(os.path.join(self.d, n + ".vhdr"))
                    meta = check_whole(self, m, n, round_out(w, "float32"), "float32")
                    self.assertEqual(meta["attrs"]["sample_rate"],
                                     500.0 if not n.startswith(("vec", "mux_hand")) else 250.0)
                    self.assertEqual(len(meta["attrs"]["channels"]), w.shape[1])
            check_preads(self, m, "big", round_out(want_of(os.path.join(self.d, "big.vhdr")),
                                                   "float32"), n_random=30)
            meta = json.loads(read_all(m.path("mux_res.json")))
            self.assertEqual(meta["attrs"]["resolutions"], [0.1, 0.2, 0.05, 1.0, 0.5, 0.25])
            self.assertEqual(meta["attrs"]["channels"][2], "Ch 2")
            self.assertEqual(meta["attrs"]["units"][0], "µV")
        # pybv's own input, to within its resolution (its int16 cast truncates)
        uv = np.load(os.path.join(self.d, "mux_i16.uv.npy"))
        self.assertLessEqual(np.abs(want_of(os.path.join(self.d, "mux_i16.vhdr"))[0] - uv).max(),
                             0.1 + 1e-9)
        r = run("info", "--json", os.path.join(self.d, "mux_i16.vhdr"))
        src = json.loads(r.stdout)["source"]
        self.assertEqual((src["kind"], src["dtype"], src["shape"]), ("brainvision", "float64",
                                                                      [1, 8, 3001]))
        r = run("verify", os.path.join(self.d, "big.vhdr"))
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        store = self.p("mux_res.h5")
        r = run("pack", os.path.join(self.d, "mux_res.vhdr"), store)
        self.assertEqual(r.returncode, 0, r.stderr)
        with self.mount(store) as m:
            check_whole(self, m, "mux_res",
                        round_out(want_of(os.path.join(self.d, "mux_res.vhdr")), "float32"),
                        "float32")

    def test_mne_reads_the_same(self):
        """MNE's read_raw_brainvision (preload=False, get_data()) as a
        second reference for the recordings pybv wrote: MNE gives volts
        (the stored number times the resolution, in microvolts, times
        1e-6), dsview microvolts; dsview's float32 view within float32's rounding of
        MNE's values."""
        for n in ["mux_i16", "mux_f32", "mux_res", "big"]:
            with self.subTest(n):
                vhdr = os.path.join(self.d, n + ".vhdr")
                raw = mne.io.read_raw_brainvision(vhdr, preload=False, verbose="error")
                ini = self.write_ini(f"[v]\nsource = {vhdr}\n", f"{n}.ini")
                with self.mount(ini) as m:
                    got = mm_npy(m.path("v.npy"))
                    attrs = json.loads(read_all(m.path("v.json")))["attrs"]
                self.assertEqual(attrs["units"][0], "\u00b5V")
                want = raw.get_data(picks=attrs["channels"]) / 1e-6
                self.assertEqual(got.shape, (1,) + want.shape)
                np.testing.assert_allclose(got[0], want, rtol=F32_HALF_ULP,
                                           atol=np.abs(want).max() * 1e-12)

    def test_windows_over_a_glob(self):
        ini = self.write_ini(f"[w]\nsource = {self.d}/vec_*.vhdr\nwindow = 100\nstride = 64\n"
                             "dtype = float16\n", "w.ini")
        # vec_i32 has 4 channels and vec_u16 3: one view needs one row shape
        self.refused(ini, want=["w.ini"])
        ini = self.write_ini(f"[w]\nsource = {self.d}/mux_i*.vhdr\nwindow = 100\nstride = 64\n",
                             "w2.ini")
        parts = [want_of(os.path.join(self.d, n + ".vhdr")) for n in ("mux_i16",)]
        with self.mount(ini) as m:
            check_whole(self, m, "w", round_out(np.concatenate(
                [windows_ref(p, 100, 64, -1) for p in parts]), "float32"), "float32")

    def test_refused(self):
        d = self.p("badbv")
        os.makedirs(d, exist_ok=True)
        x = RNG.integers(-99, 99, (2, 50))
        cases = [
            ("ascii", dict(extra="DataFormat=ASCII\n"), "[Common Infos] DataFormat: not BINARY"),
            ("endian", None, "UseBigEndianOrder: big-endian"),
            ("orient", dict(orientation="SIDEWAYS"), "DataOrientation"),
            ("fmt", None, "BinaryFormat: not INT_16"),
            ("short", None, "not a whole number of samples of 2 channels"),
            ("nochan", None, "no Ch2 of 2 channels"),
            ("res", None, "Ch1: a resolution that is not a number"),
            ("magic", None, "its first line is not"),
            ("nodata", None, "'nodata.eeg' cannot be opened"),
        ]
        for name, kw, words in cases:
            p = write_by_hand(d, name, x, "INT_16", [0.1, 0.2], **(kw or {}))
            text = open(p, encoding="utf-8").read()
            if name == "endian":
                text = text.replace("BinaryFormat=INT_16", "BinaryFormat=INT_16\nUseBigEndianOrder=YES")
            if name == "fmt":
                text = text.replace("INT_16", "IEEE_FLOAT_64")
            if name == "nochan":
                text = text.replace("Ch2=E2,,0.2,µV\n", "")
            if name == "res":
                text = text.replace("Ch1=E1,,0.1", "Ch1=E1,,zero")
            if name == "magic":
                text = text.replace("Brain Vision", "Brian Vision")
            if name == "short":
                with open(os.path.join(d, "short.eeg"), "ab") as f:
                    f.write(b"\0")
            if name == "nodata":
                os.unlink(os.path.join(d, "nodata.eeg"))
            with open(p, "w", encoding="utf-8") as f:
                f.write(text)
            with self.subTest(name):
                line = self.refused(p, want=[f"{name}.vhdr", words])
                self.assertIn(p, line)
        ok = write_by_hand(d, "good", x, "INT_16", [0.1, 0.2])
        with self.mount(d) as m:
            check_whole(self, m, "good", round_out(want_of(ok), "float32"), "float32")
            got = {e["path"] for e in json.loads(read_all(m.path(".skipped.json")))}
        self.assertEqual(got, {f"{n}.vhdr" for n, _, _ in cases})


if __name__ == "__main__":
    import unittest
    unittest.main()
