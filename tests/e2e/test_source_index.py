"""Which source file a row came from: dsview.sources(view).source_of(rows)
on a mount and in-process, and the loader's source_index, over a glob of
.npy files of known lengths (plain, with a rows slice, a rows index, and
windows). Every row's value says where it came from (file f's row r holds
f * 10000 + r), so the expected source is read back from the data, and
the table from the lengths the fixture wrote."""
import os
import sys

import numpy as np

from common import E2E, PYTHON_DIR

sys.path.insert(0, PYTHON_DIR)
import dsview  # noqa: E402

try:
    import torch
    import dsview.torch as dtorch
except ImportError:
    torch = None

LENGTHS = (37, 5, 120, 1, 64)  # files part_0.npy ... part_4.npy
WIN, STRIDE = 4, 3


def concatenated():
    """(source, row in source) of every row of the concatenation."""
    src = np.repeat(np.arange(len(LENGTHS)), LENGTHS)
    row = np.concatenate([np.arange(n) for n in LENGTHS])
    return src, row


class SourceIndex(E2E):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        for f, n in enumerate(LENGTHS):
            np.save(os.path.join(cls.tmp, f"part_{f}.npy"),
                    f * 10000 + np.arange(n, dtype=np.int64))
        idx = np.array([5, -1, 0, 41, 41, 100, 3], dtype=np.int64)
        np.save(os.path.join(cls.tmp, "pick.npy"), idx)
        with open(os.path.join(cls.tmp, "m.ini"), "w") as f:
            f.write("[all]\nsource = part_*.npy\ndtype = int64\n"
                    "[sliced]\nsource = part_*.npy\ndtype = int64\nrows = 200:3:-7\n"
                    "[picked]\nsource = part_*.npy\ndtype = int64\nrows = @pick.npy\n"
                    f"[win]\nsource = part_*.npy\ndtype = int64\nwindow = {WIN}\n"
                    f"stride = {STRIDE}\n")

    def p_parts(self):
        return [self.p(f"part_{f}.npy") for f in range(len(LENGTHS))]

    def check_table(self, s):
        self.assertEqual(len(s), len(LENGTHS))
        self.assertEqual([os.path.realpath(t["path"]) for t in s],
                         [os.path.realpath(p) for p in self.p_parts()])
        stops = np.cumsum(LENGTHS)
        self.assertEqual([t["rows"] for t in s], list(zip(stops - LENGTHS, stops)))

    def check_rows(self, s, data):
        """source_of every row of view data, against the data's own values."""
        got_src, got_row = s.source_of(np.arange(len(data)))
        vals = np.asarray(data[:])
        np.testing.assert_array_equal(got_src, vals // 10000)
        np.testing.assert_array_equal(got_row, vals % 10000)
        neg = s.source_of([-1, -len(data)])
        np.testing.assert_array_equal(neg[0], [vals[-1] // 10000, vals[0] // 10000])

    def test_table_and_rows_on_a_mount(self):
        with self.mount(self.p("m.ini")) as m:
            s = dsview.sources(m.path("all.npy"))
            self.check_table(s)
            src, row = s.source_of(np.arange(sum(LENGTHS)))
            want_src, want_row = concatenated()
            np.testing.assert_array_equal(src, want_src)
            np.testing.assert_array_equal(row, want_row)
            for name in ("all", "sliced", "picked"):
                with self.subTest(view=name):
                    self.check_rows(dsview.sources(m.path(name)), dsview.open(m.path(name)))
            sl = dsview.open(m.path("sliced.npy"))
            self.assertEqual(len(sl), len(range(sum(LENGTHS))[200:3:-7]))
            del sl  # the mount unmounts with no file open
            with self.assertRaisesRegex(IndexError, "row 7 out of range: the view has 7 rows"):
                dsview.sources(m.path("picked")).source_of([7])
            with self.assertRaisesRegex(TypeError, "integer"):
                s.source_of([0.5])

    def test_windows(self):
        with self.mount(self.p("m.ini")) as m:
            s = dsview.sources(m.path("win"))
            per = [(n - WIN) // STRIDE + 1 if n >= WIN else 0 for n in LENGTHS]
            stops = np.cumsum(per)
            self.assertEqual([t["rows"] for t in s], list(zip(stops - per, stops)))
            w = dsview.open(m.path("win.npy"))
            src, row = s.source_of(np.arange(len(w)))
            first = np.array(w[:, 0])  # a window's first sample says where it starts
            np.testing.assert_array_equal(src, first // 10000)
            np.testing.assert_array_equal(row * STRIDE, first % 10000)
            del w

    def test_in_process(self):
        for name in ("all", "sliced", "picked"):
            with self.subTest(view=name):
                a = dsview.open(self.p("m.ini"), name)
                self.check_rows(a.sources, a)
                self.assertEqual([x.tolist() for x in a.source_of([2, 0])],
                                 [x.tolist() for x in a.sources.source_of([2, 0])])
        self.check_table(dsview.open(self.p("m.ini"), "all").sources)

    def test_index_changed_after_the_mount(self):
        np.save(self.p("pick2.npy"), np.array([4, 2], dtype=np.int64))
        with open(self.p("m2.ini"), "w") as f:
            f.write("[p]\nsource = part_*.npy\ndtype = int64\nrows = @pick2.npy\n")
        with self.mount(self.p("m2.ini")) as m:
            got = dsview.sources(m.path("p")).source_of([0, 1])
            np.testing.assert_array_equal(got[1], [4, 2])
            np.save(self.p("pick2.npy"), np.arange(3, dtype=np.int64))  # another length
            with self.assertRaisesRegex(ValueError, r"p: its rows index .*pick2.npy has changed"):
                dsview.sources(m.path("p"))
            self.assertEqual(dsview.open(m.path("p.npy"))[:].tolist(), [4, 2], "the mount serves on")

    def test_not_a_view(self):
        with self.assertRaisesRegex(ValueError, "part_0.npy: not on a dsview mount"):
            dsview.sources(self.p("part_0.npy"))
        with self.assertRaisesRegex(ValueError, "lists no sources"):
            dsview.Sources({"shape": [3], "sources": []})

    def loader_rows(self, batches):
        """(rows' values, source index) of every batch, the index checked
        against the values."""
        seen = []
        for b, index in batches:
            self.assertEqual(index.dtype, torch.int64)
            np.testing.assert_array_equal(index.numpy(), b.numpy() // 10000)
            seen += b.numpy().tolist()
        return seen

    def test_loader_source_index(self):
        if torch is None:
            self.skipTest("no torch")
        everything = sorted(f * 10000 + r for f, n in enumerate(LENGTHS) for r in range(n))
        a = dsview.open(self.p("m.ini"), "all")
        for kw in (dict(num_workers=2), dict(num_workers=2, workers="processes"),
                   dict(num_workers=0)):
            with self.subTest(**{k: str(v) for k, v in kw.items()}):
                lo = dtorch.loader(a, batch_size=16, seed=2, source_index=True, **kw)
                self.assertEqual(sorted(self.loader_rows(lo)), everything)
        with self.mount(self.p("m.ini")) as m:
            pair = {"x": m.path("picked.npy"), "y": m.path("picked.dat")}
            lo = dtorch.loader(pair, batch_size=3, source_index="y", num_workers=2)
            got = [(b["x"], i) for b, i in lo]
            values = np.concatenate([f * 10000 + np.arange(n) for f, n in enumerate(LENGTHS)])
            self.assertEqual(sorted(self.loader_rows(got)),
                             sorted(values[np.load(self.p("pick.npy"))].tolist()))
            del lo
            with self.assertRaisesRegex(KeyError, "no view 'z' among x, y"):
                dtorch.loader(pair, source_index="z")
        # a mixture: (dataset, batch, source index)
        mix = dtorch.mixture([a, dsview.open(self.p("m.ini"), "sliced")], batch_size=8,
                             seed=1, source_index=True)
        seen = {0: [], 1: []}
        for d, b, index in mix:
            np.testing.assert_array_equal(index.numpy(), b.numpy() // 10000)
            seen[d] += b.numpy().tolist()
        self.assertEqual(sorted(seen[0]), everything)
        self.assertEqual(len(seen[1]), len(range(sum(LENGTHS))[200:3:-7]))
