"""EDF/EDF+ and BDF/BDF+ recordings written by pyedflib (edf_writer.py, run
under the project venv), served through real mounts: one recording is one
row (channels, time) in physical units: pyedflib's readSignal() (float64,
EDFlib's gain * (d + pmax / gain - dmax), written out again here in
numpy from its digital read and header) rounded once. The channels at the most common sample rate are served, the others
and the annotation signals are listed (V.json, /.skipped.json). Also:
directories, a collection windowed over time (never across recordings)
with a transform, info, verify, pack, and every malformed header field
and truncation refused with the file and the field named."""
import errno
import json
import os
import shutil

import mne
import numpy as np

from common import E2E, check_preads, check_whole, mm_npy, read_all, run, venv_python
from refs import F32_HALF_ULP, reference, round_out, windows_ref

WRITER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "edf_writer.py")

# name: (file, the rate served, channels served, signals left out)
FILES = {
    "hbn_like": ("hbn_like.bdf", 100.0, 10, ["BDF Annotations"]),
    "hbn_full": ("hbn_full.bdf", 100.0, 129, ["BDF Annotations"]),
    "hbn_b": ("hbn_b.bdf", 100.0, 10, ["BDF Annotations"]),
    "clinic": ("clinic.edf", 256.0, 6, ["RESP1", "RESP2", "EDF Annotations"]),
    "plain_edf": ("plain.edf", 128.0, 3, []),
    "plain24": ("plain24.bdf", 50.0, 4, []),
}


# MNE's scale of a channel's values by its unit (values in volts)
MNE_SCALE = {"uV": 1e-6, "\u00b5V": 1e-6, "\u03bcV": 1e-6, "mV": 1e-3}


def header_ns(raw):
    return int(raw[252:256].decode().strip())


class EdfTest(E2E):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        with open(WRITER) as f:
            venv_python(f.read(), cls.tmp)

    def ref(self, stem):
        """(1, C, T) float64 physical values of the channels served (those
        at the most common rate, the first such rate on a tie): pyedflib's
        readSignal(); the same computed here in numpy from its digital
        read and the header (EDFlib's arithmetic); the saved header; the
        channels' indices."""
        z = np.load(self.p(stem + ".ref.npz"))
        rates = list(z["rates"])
        rate = max(rates, key=lambda r: (rates.count(r), -rates.index(r)))
        chans = [i for i in range(len(rates)) if rates[i] == rate]
        theirs, ours = [], []
        for i in chans:
            d = z[f"digital{i}"].astype(np.float64)
            gain = (z["pmax"][i] - z["pmin"][i]) / float(z["dmax"][i] - z["dmin"][i])
            ours.append(gain * ((z["pmax"][i] / gain - float(z["dmax"][i])) + d))
            theirs.append(z[f"physical{i}"])
        return np.array(theirs)[None], np.array(ours)[None], z, chans

    def test_each_recording(self):
        for view, (fname, rate, nchan, skipped) in FILES.items():
            stem = fname.rsplit(".", 1)[0]
            with self.subTest(fname):
                want, ours, z, chans = self.ref(stem)
                self.assertEqual(want.shape[1], nchan)
                # the arithmetic written out in numpy gives pyedflib's bits
                self.assertTrue(np.array_equal(want.view(np.uint64), ours.view(np.uint64)))
                with self.mount(self.p(fname)) as m:
                    meta = check_whole(self, m, stem, round_out(want, "float32"), "float32")
                    check_preads(self, m, stem, round_out(want, "float32"), seed=nchan)
                    attrs = meta["attrs"]
                    self.assertEqual(attrs["sample_rate"], rate)
                    self.assertEqual(attrs["channels"], [str(z["labels"][i]) for i in chans])
                    self.assertEqual(attrs["units"], [str(z["units"][i]) for i in chans])
                    self.assertEqual([s["label"] for s in attrs["skipped_signals"]], skipped)
                    if skipped:
                        got = json.loads(read_all(m.path(".skipped.json")))
                        self.assertEqual([e["path"] for e in got], skipped)
                        self.assertTrue(all(e["kind"] == "signal" for e in got))
                    else:
                        self.assertFalse(os.path.exists(m.path(".skipped.json")))

    def test_mne_reads_the_same(self):
        """MNE (read_raw_edf / read_raw_bdf, preload=False, get_data()), the
        reader EEG users read these files with, as a second reference: its
        values are in volts where a channel's unit is uV or mV (MNE's
        scaling), dsview's in the file's physical units; dsview's float32 view
        is compared with MNE's values, its scale taken off, to within float32's
        rounding."""
        for view, (fname, rate, nchan, skipped) in FILES.items():
            stem = fname.rsplit(".", 1)[0]
            with self.subTest(fname):
                reader = mne.io.read_raw_bdf if fname.endswith(".bdf") else mne.io.read_raw_edf
                raw = reader(self.p(fname), preload=False, verbose="error")
                self.assertEqual(raw.info["sfreq"], rate)
                ini = self.write_ini(f"[v]\nsource = {self.p(fname)}\n",
                                     f"{stem}.ini")
                with self.mount(ini) as m:
                    got = mm_npy(m.path("v.npy"))
                    attrs = json.loads(read_all(m.path("v.json")))["attrs"]
                self.assertEqual(got.shape, (1, nchan, raw.n_times))
                data = raw.get_data(picks=attrs["channels"])
                scale = np.array([MNE_SCALE.get(u, 1.0) for u in attrs["units"]])[:, None]
                want = data / scale
                tol = np.abs(want).max() * 1e-12
                np.testing.assert_allclose(got[0], want, rtol=F32_HALF_ULP, atol=tol)
                # and a stretch of time, as a window reader asks for it
                a, b = raw.n_times // 3, raw.n_times // 3 + min(200, raw.n_times // 3)
                np.testing.assert_allclose(got[0, :, a:b],
                                           raw.get_data(picks=attrs["channels"], start=a,
                                                        stop=b) / scale, rtol=F32_HALF_ULP, atol=tol)

    def test_skipped_reasons(self):
        path = self.p("clinic.edf")
        with self.mount(path) as m:
            got = {e["path"]: e["reason"] for e in json.loads(read_all(m.path(".skipped.json")))}
            # the signals left out are parts of the one dataset served, not datasets
            said = f"served 1 of 1 datasets of {path}; left out: 3 signal (see "
            self.assertIn(said, m.stderr)
            self.assertIn(f"{path}: 1 of 1 datasets served; left out: 3 signal (see ",
                          "\n".join(m.log_lines()))
        self.assertEqual(got["RESP1"], "sampled at 64 Hz, not the recording's 256 Hz")
        self.assertIn("annotation", got["EDF Annotations"])

    def test_directory_and_windows(self):
        """A directory of recordings: one view each, the annotation
        signals listed per file; a glob of them windowed over time, with
        a transform: windows never cross two recordings."""
        d = self.p("rel")
        os.makedirs(d, exist_ok=True)
        for f in ("hbn_like.bdf", "hbn_b.bdf", "hbn_c.bdf", "clinic.edf"):
            shutil.copy(self.p(f), d)
        with self.mount(d) as m:
            for stem in ("hbn_like", "hbn_b", "hbn_c", "clinic"):
                check_whole(self, m, stem, round_out(self.ref(stem)[0], "float32"), "float32")
            got = [e["path"] for e in json.loads(read_all(m.path(".skipped.json")))]
            self.assertEqual(sorted(got), sorted(["clinic.edf:EDF Annotations", "clinic.edf:RESP1",
                                                  "clinic.edf:RESP2",
                                                  "hbn_like.bdf:BDF Annotations",
                                                  "hbn_b.bdf:BDF Annotations",
                                                  "hbn_c.bdf:BDF Annotations"]))
        parts = [self.ref(s)[0] for s in ("hbn_b", "hbn_c", "hbn_like")]  # natural order
        W, S = 200, 70
        wins = np.concatenate([windows_ref(p, W, S, -1) for p in parts])
        ini = self.write_ini(f"[w]\nsource = {d}/hbn*.bdf\nwindow = {W}\nstride = {S}\n\n"
                             f"[t]\nsource = {d}/hbn*.bdf\nwindow = {W}\nstride = {S}\n"
                             "scale = 0.001\noffset = 2.5\ndtype = bfloat16\n\n"
                             f"[s]\nsource = {d}/hbn*.bdf\nwindow = {W}\nstride = {S}\n"
                             "scale = 0.001\noffset = 2.5\n\n"
                             f"[b]\nsource = {d}/hbn*.bdf\nwindow = {W}\nstride = {S}\n"
                             "dtype = bfloat16\n\n"
                             f"[h]\nsource = {d}/hbn*.bdf\nwindow = {W}\nstride = {S}\n"
                             "dtype = float16\n", "w.ini")
        # float32 and bfloat16 outputs of a linear map are written by the
        # recording's decode itself, float16 through the transform: the
        # same rounding once of the float64 value, whole and at any offset
        outs = {"w": (round_out(wins, "float32"), "float32"),
                "t": (reference(wins, 0.001, 2.5, dtype="bfloat16"), "bfloat16"),
                "s": (reference(wins, 0.001, 2.5), "float32"),
                "b": (reference(wins, dtype="bfloat16"), "bfloat16"),
                "h": (reference(wins, dtype="float16"), "float16")}
        with self.mount(ini) as m:
            self.assertEqual(wins.shape[1:], (10, W))
            for name, (want, dtype) in outs.items():
                check_whole(self, m, name, want, dtype)
                check_preads(self, m, name, want, rows=(0, 1, 31, 32, 33), n_random=20)

    def test_bids_tree(self):
        """A BIDS dataset (sub-*/eeg/*_eeg.bdf, as eegdash caches the
        challenge's copy): one view per recording, named for its path; the
        other files of the tree, and arrays below the top level, are not
        served."""
        d = self.p("ds005505-bdf")
        layout = {"sub-01/eeg/sub-01_task-RestingState_eeg.bdf": "hbn_like",
                  "sub-01/eeg/sub-01_task-DespicableMe_eeg.bdf": "hbn_c",
                  "sub-02/eeg/sub-02_task-RestingState_eeg.bdf": "hbn_b"}
        for rel, stem in layout.items():
            os.makedirs(os.path.dirname(os.path.join(d, rel)), exist_ok=True)
            shutil.copy(self.p(stem + ".bdf"), os.path.join(d, rel))
        with open(os.path.join(d, "participants.tsv"), "w") as f:
            f.write("participant_id\nsub-01\nsub-02\n")
        with open(os.path.join(d, "sub-01/eeg/sub-01_task-RestingState_events.tsv"), "w") as f:
            f.write("onset\tduration\n")
        np.save(os.path.join(d, "sub-02/scores.npy"), np.arange(3.0))
        with self.mount(d) as m:
            for rel, stem in layout.items():
                check_whole(self, m, rel[:-4], round_out(self.ref(stem)[0], "float32"),
                            "float32")
            self.assertEqual(sorted(os.listdir(m.path("sub-02"))), ["eeg"])
            got = [e["path"] for e in json.loads(read_all(m.path(".skipped.json")))]
            self.assertEqual(got, [rel + ":BDF Annotations" for rel in sorted(layout)])

    def test_info_verify_pack(self):
        path = self.p("hbn_like.bdf")
        r = run("info", "--json", path)
        self.assertEqual(r.returncode, 0, r.stderr)
        src = json.loads(r.stdout)["source"]
        self.assertEqual((src["kind"], src["dtype"], src["shape"]), ("edf", "float64",
                                                                      [1, 10, 3700]))
        self.assertEqual(src["why"], "24-bit samples gathered from 37 records")
        r = run("info", path)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("(1, 10, 3700) float64", r.stdout)
        r = run("verify", path)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("OK", r.stdout)
        out = self.p("packed.h5")
        r = run("pack", path, out)
        self.assertEqual(r.returncode, 0, r.stderr)
        with self.mount(out) as m:
            check_whole(self, m, "hbn_like", round_out(self.ref("hbn_like")[0], "float32"),
                        "float32")

    def bad(self, src, name, mutate):
        raw = bytearray(open(self.p(src), "rb").read())
        raw = mutate(raw)
        path = self.p(name)
        with open(path, "wb") as f:
            f.write(raw)
        return path

    def field(self, src, name, off, text):
        """A copy of src with the header field at off set to text
        (space-padded to the field's own width)."""
        def put(raw):
            width = len(text)
            raw[off:off + width] = text.encode("latin-1")
            return raw
        return self.bad(src, name, put)

    def test_refused(self):
        raw = open(self.p("hbn_like.bdf"), "rb").read()
        ns = header_ns(raw)
        rec = (len(raw) - 256 * (ns + 1)) // 37  # bytes a data record
        cases = [
            # (name, mutate, the words the one error line holds)
            ("version.bdf", lambda r: self.field("hbn_like.bdf", "version.bdf", 1, "BIOSEMX"),
             ["version", "is not an EDF or BDF version"]),
            ("plusd.bdf", lambda r: self.field("hbn_like.bdf", "plusd.bdf", 192, "BDF+D"),
             ["reserved", "discontinuous"]),
            ("mixed.bdf", lambda r: self.field("hbn_like.bdf", "mixed.bdf", 192, "EDF+C"),
             ["reserved", "EDF+C in a BDF header"]),
            ("hbytes.bdf", lambda r: self.field("hbn_like.bdf", "hbytes.bdf", 184, "3328    "),
             ["number of bytes in header", "3328"]),
            ("nrec.bdf", lambda r: self.field("hbn_like.bdf", "nrec.bdf", 236, "38      "),
             ["number of data records", "38 records"]),
            ("nrecx.bdf", lambda r: self.field("hbn_like.bdf", "nrecx.bdf", 236, "3x      "),
             ["number of data records", "'3x'"]),
            ("dur.bdf", lambda r: self.field("hbn_like.bdf", "dur.bdf", 244, "one     "),
             ["duration of a data record", "'one'"]),
            ("dur0.bdf", lambda r: self.field("hbn_like.bdf", "dur0.bdf", 244, "0       "),
             ["duration of a data record", "0 seconds"]),
            ("ns.bdf", lambda r: self.field("hbn_like.bdf", "ns.bdf", 252, "0   "),
             ["number of signals", "'0'"]),
            ("dmax.bdf", lambda r: self.field("hbn_like.bdf", "dmax.bdf",
                                             256 + ns * 128 + 8 * 2, "9999999 "),
             ["signal 2 (E3): digital maximum", "24-bit"]),
            ("dmin.bdf", lambda r: self.field("hbn_like.bdf", "dmin.bdf",
                                             256 + ns * 120 + 8 * 0, "8388607 "),
             ["signal 0 (E1): digital maximum", "not above the digital minimum"]),
            ("pmin.bdf", lambda r: self.field("hbn_like.bdf", "pmin.bdf",
                                             256 + ns * 104 + 8 * 4, "nan     "),
             ["signal 4 (E5): physical minimum", "'nan'"]),
            ("spr.bdf", lambda r: self.field("hbn_like.bdf", "spr.bdf",
                                            256 + ns * 216 + 8 * 1, "-5      "),
             ["signal 1 (E2): number of samples in each data record", "'-5'"]),
            ("short.bdf", lambda r: self.bad("hbn_like.bdf", "short.bdf", lambda b: b[:-7]),
             ["number of data records", "short last record"]),
            ("extra.bdf", lambda r: self.bad("hbn_like.bdf", "extra.bdf",
                                            lambda b: b + bytes(rec)),
             ["number of data records", "38 records"]),
            ("head.bdf", lambda r: self.bad("hbn_like.bdf", "head.bdf", lambda b: b[:1000]),
             ["number of bytes in header", "the file is 1000 bytes"]),
            ("tiny.bdf", lambda r: self.bad("hbn_like.bdf", "tiny.bdf", lambda b: b[:100]),
             ["header", "shorter than the 256-byte fixed header"]),
            ("unknown.bdf", lambda r: self.bad(
                "hbn_like.bdf", "unknown.bdf",
                lambda b: bytearray(b[:236]) + b"-1      " + b[244:-5]),
             ["number of data records", "-1 (unknown)", "short last record"]),
        ]
        d = self.p("bad")
        os.makedirs(d, exist_ok=True)
        for name, make, words in cases:
            with self.subTest(name):
                path = make(raw)
                line = self.refused(path, want=[name, *words])
                self.assertIn(f"{path}:", line)
                shutil.copy(path, d)
        shutil.copy(self.p("hbn_c.bdf"), d)
        # in a directory the good recording is served, each bad one listed
        with self.mount(d) as m:
            check_whole(self, m, "hbn_c", round_out(self.ref("hbn_c")[0], "float32"), "float32")
            got = {e["path"]: e for e in json.loads(read_all(m.path(".skipped.json")))}
            for name, _, words in cases:
                self.assertEqual(got[name]["kind"], "unreadable")
                self.assertIn(words[-1], got[name]["reason"])
        shutil.rmtree(self.p("mnt-refused"), ignore_errors=True)

    def test_truncated_while_mounted(self):
        """A recording cut short after the mount: reads of its lost records
        fail with EIO and the log names the file; the recording beside it
        is still served."""
        d = self.p("cut_later")
        os.makedirs(d, exist_ok=True)
        for f in ("hbn_full.bdf", "hbn_c.bdf"):
            shutil.copy(self.p(f), d)
        with self.mount(d, expect_errors=[r"hbn_full\.bdf"]) as m:
            os.truncate(os.path.join(d, "hbn_full.bdf"), 40000)
            with self.assertRaises(OSError) as e:
                read_all(m.path("hbn_full.dat"))
            self.assertEqual(e.exception.errno, errno.EIO)
            check_whole(self, m, "hbn_c", round_out(self.ref("hbn_c")[0], "float32"), "float32")
            self.assertTrue(any("hbn_full.bdf" in line for line in m.log_lines()))

    def test_unknown_record_count(self):
        """number of data records = -1 (a recording still being written):
        the count is the file's size over a record's, served as ever."""
        path = self.field("hbn_like.bdf", "minus1.bdf", 236, "-1      ")
        with self.mount(path) as m:
            check_whole(self, m, "minus1", round_out(self.ref("hbn_like")[0], "float32"),
                        "float32")


if __name__ == "__main__":
    import unittest
    unittest.main()
