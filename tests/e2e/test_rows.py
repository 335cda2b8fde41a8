"""rows = a:b:step and rows = @idx.npy : the selected rows
of the concatenated sources, in that order, against numpy's own indexing of
the concatenation and the float64 reference; two views over the same LZ4
source share the chunk cache; every rows error names its line."""
import json
import os

import h5py
import hdf5plugin
import numpy as np

from common import E2E, check_preads, check_whole, forked_batches, refused_at, run
from refs import FLOAT_OUT, reference

SCALE = 0.0033333333333333335
# slice text -> Python slice; every kind the contract names
SLICES = {
    "a": "10:50", "b": "-50:", "c": ":-250", "d": "::3", "e": "5:290:7", "f": "::-1",
    "g": "-1:-300:-4", "h": "250:10:-13", "i": "100:100", "j": "50:10", "k": "400:", "l": ":1000",
    "m": "-1000:7", "n": "299:", "o": "0:1", "p": "::-300", "q": "::1000", "r": "-2::-1",
}


def as_slice(text):
    return slice(*[int(p) if p.strip() else None for p in text.split(":")])


class Rows(E2E):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        rng = np.random.default_rng(140)
        cls.parts = [rng.integers(-32768, 32767, (n, 5, 7), dtype=np.int16, endpoint=True) for n in (100, 120, 80)]
        cls.parts[0][0].flat[:2] = [-32768, 32767]
        np.save(os.path.join(cls.tmp, "p0.npy"), cls.parts[0])
        with h5py.File(os.path.join(cls.tmp, "p1.h5"), "w") as f:
            f.create_dataset("x", data=cls.parts[1], chunks=(16, 5, 7), **hdf5plugin.LZ4())
        cls.parts[2].tofile(os.path.join(cls.tmp, "p2.bin"))
        cls.x = np.concatenate(cls.parts)  # 300 rows
        cls.src = ("source = p0.npy\nsource = p1.h5:/x\nsource = p2.bin\nsource_dtype = int16\n"
                   "source_shape = -1 5 7\n")

    def test_slices(self):
        ini = ""
        for i, (k, s) in enumerate(SLICES.items()):
            ini += f"[s{k}]\n{self.src}rows = {s}\ndtype = {FLOAT_OUT[i % 3]}\nscale = {SCALE!r}\n\n"
        with self.mount(self.write_ini(ini, "slices.ini")) as m:
            for i, (k, s) in enumerate(SLICES.items()):
                dt = FLOAT_OUT[i % 3]
                with self.subTest(rows=s, dtype=dt):
                    sel = self.x[as_slice(s)]
                    meta = check_whole(self, m, "s" + k, reference(sel, SCALE, dtype=dt), dt)
                    r = meta.get("rows")
                    self.assertIsInstance(r, dict, f"V.json rows for {s}: {r!r}")
                    # start/stop as written (None when omitted) or normalised:
                    # either way Python's slice over the 300 rows gives the selection
                    self.assertEqual(r.get("count"), len(sel), f"V.json rows {r}")
                    self.assertEqual(r.get("step"), as_slice(s).step or 1, f"V.json rows {r}")
                    again = range(300)[slice(r.get("start"), r.get("stop"), r.get("step"))]
                    self.assertEqual(list(again), list(range(300)[as_slice(s)]), f"V.json rows {r}")
                    self.assertEqual(len(meta["sources"]), 3)

    def test_index_file_repeats_reverse_negative(self):
        rng = np.random.default_rng(141)
        idx = {
            "rep": np.array([299, 0, 0, 5, -1, 150, 150, 150, 99, 100, 219, 220, -300, 7], np.int64),
            "rev": np.arange(299, -1, -1, dtype=np.int32),
            "half": np.sort(rng.choice(300, 150, replace=False)).astype(np.int64),
            "shuf": rng.integers(0, 300, 500).astype(np.uint16),  # more rows than the sources have
            "one": np.array([219], np.int8),
            "empty": np.array([], np.int64),
        }
        ini = ""
        for i, (k, a) in enumerate(idx.items()):
            np.save(self.p(f"idx_{k}.npy"), a)
            ini += f"[i{k}]\n{self.src}rows = @idx_{k}.npy\ndtype = {FLOAT_OUT[i % 3]}\nscale = {SCALE!r}\n\n"
        with self.mount(self.write_ini(ini, "idx.ini")) as m:
            for i, (k, a) in enumerate(idx.items()):
                dt = FLOAT_OUT[i % 3]
                with self.subTest(index=k, dtype=dt):
                    sel = self.x[a.astype(np.int64)]
                    meta = check_whole(self, m, "i" + k, reference(sel, SCALE, dtype=dt), dt)
                    r = meta.get("rows")
                    self.assertIsInstance(r, dict, f"V.json rows: {r!r}")
                    self.assertEqual(r.get("count"), len(a))
                    self.assertTrue(str(r.get("index", "")).endswith(f"idx_{k}.npy"), r)
                    if k == "rep":
                        # source, chunk and repeated-row boundaries, unaligned
                        check_preads(self, m, "i" + k, reference(sel, SCALE, dtype=dt), rows=range(len(a)))

    def test_workers_read_a_shuffled_subset(self):
        rng = np.random.default_rng(142)
        a = rng.integers(-300, 300, 400)  # repeats and negative indices, any order
        np.save(self.p("w_idx.npy"), a)
        ini = self.write_ini(f"[w]\n{self.src}rows = @w_idx.npy\ndtype = bfloat16\nscale = {SCALE!r}\n"
                             f"[r]\n{self.src}rows = ::-2\ndtype = float32\n", "w.ini")
        with self.mount(ini, "--cache-size", "64K") as m:
            ref = reference(self.x[a], SCALE, dtype="bfloat16")
            forked_batches(self, m, "w", ref)
            check_preads(self, m, "w", ref, rows=(0, 1, 2, 3), seed=3)
            ref = reference(self.x[::-2])
            forked_batches(self, m, "r", ref)
            check_preads(self, m, "r", ref, rows=(40, 50, 60, 110, 149), seed=4)
            self.assertEqual(m.stats()["errors"], 0)

    def test_two_views_share_the_chunk_cache(self):
        # one HDF5 LZ4 source of 300 rows in chunks of 16 (19 chunks)
        with h5py.File(self.p("lz.h5"), "w") as f:
            f.create_dataset("x", data=self.x, chunks=(16, 5, 7), **hdf5plugin.LZ4())
        ini = self.write_ini("[all]\nsource = lz.h5:/x\n"
                             "[a]\nsource = lz.h5:/x\nrows = 0:300\n"
                             "[b]\nsource = lz.h5:/x\nrows = ::-1\ndtype = bfloat16\n"
                             "[train]\nsource = lz.h5:/x\nrows = 0:150\n"
                             "[val]\nsource = lz.h5:/x\nrows = 150:300\n", "share.ini")
        with self.mount(ini) as m:
            check_whole(self, m, "all", reference(self.x), "float32")
            whole = m.stats()["chunks_decoded"]
        self.assertGreaterEqual(whole, 19)
        with self.mount(ini) as m:
            check_whole(self, m, "a", reference(self.x), "float32")
            after_a = m.stats()["chunks_decoded"]
            check_whole(self, m, "b", reference(self.x[::-1], dtype="bfloat16"), "bfloat16")
            after_b = m.stats()["chunks_decoded"]
            self.assertEqual(after_a, whole, "view a decoded a different number of chunks than the plain view")
            self.assertEqual(after_b, after_a, "view b decoded again the chunks view a had decoded")
        with self.mount(ini) as m:
            # chunk 9 (rows 144-159) is in both halves: decoded once
            check_whole(self, m, "train", reference(self.x[:150]), "float32")
            check_whole(self, m, "val", reference(self.x[150:]), "float32")
            self.assertEqual(m.stats()["chunks_decoded"], whole, "train + val decoded a chunk twice")

    def test_rows_with_int_output_and_a_transform(self):
        u = np.random.default_rng(143).integers(0, 65536, (90, 4), dtype=np.uint16)
        np.save(self.p("u.npy"), u)
        np.save(self.p("u_idx.npy"), np.array([89, 0, 45, 45, -1, 3], np.int64))
        ini = self.write_ini("[f]\nsource = u.npy\nrows = 1::2\ndtype = float16\nscale = 0.001\noffset = -3\n"
                             "mean = 1 2 3 4\nstd = 5 6 7 8\n", "uf.ini")
        with self.mount(ini) as m:
            check_whole(self, m, "f", reference(u[1::2], 0.001, -3, [1, 2, 3, 4], [5, 6, 7, 8],
                                                dtype="float16"), "float16")
        ini = self.write_ini("[t]\nsource = u.npy\nrows = @u_idx.npy\ndtype = int64\n"
                             "[s]\nsource = u.npy\nrows = 80:3:-9\ndtype = uint16\n", "ui.ini")
        with self.mount(ini) as m:
            check_whole(self, m, "t", u[[89, 0, 45, 45, -1, 3]].astype(np.int64), "int64")
            check_whole(self, m, "s", u[80:3:-9], "uint16")

    def test_errors(self):
        np.save(self.p("big_idx.npy"), np.concatenate([np.arange(17), [1000], np.arange(5)]).astype(np.int64))
        np.save(self.p("neg_idx.npy"), np.array([0, 1, 2, -301, 4], np.int32))
        np.save(self.p("two_d.npy"), np.zeros((3, 2), np.int64))
        np.save(self.p("float_idx.npy"), np.array([1.0, 2.0]))
        head = f"[dsview]\nthreads = 2\n\n[ok]\nsource = p0.npy\n\n[v]\n{self.src}"  # sources on lines 8-12, rows on 13
        cases = [
            ("rows = @big_idx.npy", ["rows: ", "big_idx.npy[17] = 1000 is out of range for 300 rows"]),
            ("rows = @neg_idx.npy", ["rows: ", "neg_idx.npy[3] = -301 is out of range for 300 rows"]),
            ("rows = 1:2:0", ["rows"]),
            ("rows = abc", ["rows"]),
            ("rows = 1:2:3:4", ["rows"]),
            ("rows = 1.5:3", ["rows"]),
            ("rows = ", ["rows"]),
            ("rows = @missing_idx.npy", ["missing_idx.npy"]),
            ("rows = @two_d.npy", ["two_d.npy"]),
            ("rows = @float_idx.npy", ["float_idx.npy"]),
        ]
        for text, want in cases:
            with self.subTest(rows=text):
                refused_at(self, head + text + "\nscale = 2\n", 13, want)


class Info(E2E):
    def test_info_and_json_describe_rows(self):
        x = np.arange(60, dtype=np.uint8).reshape(20, 3)
        np.save(self.p("x.npy"), x)
        np.save(self.p("ix.npy"), np.array([3, 1, 4, 1, 5], np.int64))
        ini = self.write_ini("[s]\nsource = x.npy\nrows = 2:18:4\n[i]\nsource = x.npy\nrows = @ix.npy\n", "i.ini")
        with self.mount(ini) as m:
            with open(m.path("s.json")) as f:
                s = json.load(f)
            with open(m.path("i.json")) as f:
                i = json.load(f)
        self.assertEqual(s["rows"], {"start": 2, "stop": 18, "step": 4, "count": 4})
        self.assertEqual(i["rows"]["count"], 5)
        self.assertTrue(os.path.isabs(i["rows"]["index"]) or i["rows"]["index"].endswith("ix.npy"), i["rows"])
        self.assertIsNone(s.get("window"))
        self.assertIsNone(s.get("layout"))
        self.assertEqual(s["sources"][0]["rows"], [0, 20])
        r = run("info", ini)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("rows", r.stdout)
        self.assertIn("ix.npy", r.stdout)
        self.assertIn("(4, 3)", r.stdout)
        self.assertIn("(5, 3)", r.stdout)
