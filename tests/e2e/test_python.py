"""The Python package (python/dsview) on real mounts: dsview.open and info,
hint, batches and ArraySource; dsview.torch's loader in real DataLoaders
(0, 2 and 4 workers under fork, spawn and forkserver, persistent workers,
a two-rank torch.distributed run), every batch checked against the numpy
float64 reference rounded once; hinted rows read without FUSE requests;
every bad input with its clear exception. Mount lifecycle, torch-less
import and pip install: test_python_mount.py."""
import os
import pickle
import subprocess
import sys
import textwrap

import numpy as np

from common import E2E, PYTHON_DIR
from refs import reference

sys.path.insert(0, PYTHON_DIR)
import dsview  # noqa: E402

try:
    import torch
    import dsview.torch as dtorch
except ImportError:
    torch = None

MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
N = 600  # rows of 32x32x3: 12 KB as float32, the small-row case


def needs_torch(tc):
    if torch is None:
        tc.skipTest("no torch for this python (Debian: python3-torch)")


class Fixture(E2E):
    """x: uint8 rows; v: float32 normalised; b: the same as bfloat16; idx:
    each row's own index as int64, so a batch says which rows it holds;
    short: a view with other rows."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.x = np.random.default_rng(2700).integers(0, 256, (N, 32, 32, 3), dtype=np.uint8)
        np.save(os.path.join(cls.tmp, "x.npy"), cls.x)
        np.save(os.path.join(cls.tmp, "i.npy"), np.arange(N, dtype=np.int32))
        np.save(os.path.join(cls.tmp, "short.npy"), np.zeros((5, 2), np.uint8))
        cls.ref = reference(cls.x, scale=1 / 255, mean=MEAN, std=STD)
        cls.ref_b = reference(cls.x, scale=1 / 255, mean=MEAN, std=STD, dtype="bfloat16")
        norm = "scale = 0.00392156862745098\nmean = 0.485 0.456 0.406\nstd = 0.229 0.224 0.225\n"
        cls.ini = os.path.join(cls.tmp, "p.ini")
        with open(cls.ini, "w") as f:
            f.write(f"[v]\nsource = x.npy\n{norm}[b]\nsource = x.npy\ndtype = bfloat16\n{norm}"
                    "[idx]\nsource = i.npy\ndtype = int64\n[short]\nsource = short.npy\n")

    def check_batch(self, got, what):
        """A {"v", "idx"} batch: rows ascending, v's bits those of the
        reference rows idx. Returns the rows."""
        rows = got["idx"].numpy() if torch is not None and isinstance(got["idx"], torch.Tensor) \
            else np.asarray(got["idx"])
        v = got["v"].numpy() if torch is not None and isinstance(got["v"], torch.Tensor) else got["v"]
        self.assertTrue((np.diff(rows) > 0).all(), f"{what}: rows not ascending")
        self.assertBits(v, self.ref[rows], what)
        return rows


class Numpy(Fixture):
    def test_open_and_info(self):
        with self.mount(self.ini) as m:
            for name in ("v.npy", "v.dat", "v", "v.json"):
                with self.subTest(name=name):
                    a = dsview.open(m.path(name))
                    self.assertIsInstance(a, np.memmap)
                    self.assertEqual((a.shape, a.dtype, a.dsview_dtype), (self.ref.shape, np.float32,
                                                                           "float32"))
                    self.assertFalse(a.flags.writeable)
                    self.assertBits(np.array(a[[3, 77, N - 1]]), self.ref[[3, 77, N - 1]], name)
                    del a
            b = dsview.open(m.path("b.npy"))
            self.assertEqual((b.dtype, b.dsview_dtype), (np.uint16, "bfloat16"))
            np.testing.assert_array_equal(np.array(b), self.ref_b)
            del b
            meta = dsview.info(m.path("v.npy"))
            self.assertEqual(meta["shape"], list(self.ref.shape))
            for key in ("sources", "transform", "dtype"):
                self.assertIn(key, meta)
            self.assertEqual(meta["transform"]["mean"], MEAN)

    def test_batches_and_source(self):
        with self.mount(self.ini) as m:
            paths = {"v": m.path("v.npy"), "idx": m.path("idx.dat")}
            seen = [self.check_batch(b, "batches")
                    for b in dsview.batches(paths, batch_size=64, seed=3, epochs=2)]
            self.assertEqual(len(seen), 2 * -(-N // 64))
            self.assertEqual(sorted(np.concatenate(seen[:len(seen) // 2]).tolist()), list(range(N)))
            self.assertEqual(m.stats()["hints_queued"], 2 * 2 * N)  # each row to both files
            self.assertEqual(len(list(dsview.batches(m.path("v"), batch_size=64, shuffle=False,
                                                     drop_last=True))), N // 64)
            src = pickle.loads(pickle.dumps(dsview.ArraySource(paths)))  # as grain ships it
            self.assertEqual(len(src), N)
            row = src[N - 1]
            self.assertEqual(int(row["idx"]), N - 1)
            self.assertBits(row["v"], self.ref[N - 1], "ArraySource")
            with self.assertRaisesRegex(IndexError, "row 600 out of range"):
                src[N]
            del src  # its memmaps keep the mount busy

    def test_hinted_rows_read_without_requests(self):
        with self.mount(self.ini) as m:
            rows = np.sort(np.random.default_rng(5).choice(N, 200, replace=False))
            a = dsview.open(m.path("v.npy"))
            dsview.hint(a, rows.tolist())  # the memmap names its file
            st = m.stats_when("hints_stored", 200, timeout=20)
            self.assertEqual(st["hints_stored"], 200, st)
            before = m.stats()["read_requests"]
            got = np.array(a[rows])
            after = m.stats()["read_requests"]
            del a
            self.assertBits(got, self.ref[rows], "hinted rows")
            self.assertLessEqual(after - before, 2, "hinted rows were asked for")

    def test_bad_input(self):
        # a path off a mount is read in-process: a missing one is named
        with self.assertRaisesRegex(FileNotFoundError, r"missing\.npy: No such file"):
            dsview.open(self.p("missing.npy"))
        with self.assertRaisesRegex(ValueError, "not on a dsview mount"):
            dsview.hint(self.p("x.npy"), [0])
        with self.mount(self.ini) as m:
            with self.assertRaisesRegex(FileNotFoundError, r"nope\.npy: no such view"):
                dsview.open(m.path("nope.npy"))
            with self.assertRaisesRegex(FileNotFoundError, "no such view"):
                dsview.info(m.path("nope"))
            with self.assertRaisesRegex(FileNotFoundError, "no such view"):
                dsview.hint(m.path("nope.dat"), [0])
            for rows in ([0, N], [-1], list(range(3000)) + [N]):
                with self.subTest(rows=rows[-2:]), \
                        self.assertRaisesRegex(IndexError, f"v.npy: row {rows[-1]} out of range: "
                                               f"the view has {N} rows \\(nothing was hinted\\)"):
                    dsview.hint(m.path("v.npy"), rows)
            with self.assertRaisesRegex(TypeError, "must be integers"):
                dsview.hint(m.path("v.npy"), [1.5])
            with self.assertRaisesRegex(ValueError, r"v\.json: hints go to a view's \.npy or \.dat"):
                dsview.hint(m.path("v.json"), [0])
            with self.assertRaisesRegex(ValueError, "same rows"):
                dsview.ArraySource({"v": m.path("v"), "x": m.path("v.npy"), "s": m.path("short")})
            with self.assertRaisesRegex(ValueError, "batch_size must be at least 1"):
                next(dsview.batches(m.path("v"), batch_size=0))
            self.assertEqual(m.stats()["hints_queued"], 0)


LOADER_RUNS = [(0, None), (2, "threads"), (4, "threads"), (2, "fork"), (4, "fork"), (2, "spawn"),
               (4, "spawn"), (2, "forkserver"), (4, "forkserver")]


class Torch(Fixture):
    def epoch(self, loader, what):
        seen = [self.check_batch(b, what) for b in loader]
        self.assertEqual(sorted(np.concatenate(seen).tolist()), list(range(N)), f"{what}: rows")
        return seen

    def test_loader_workers_and_start_methods(self):
        needs_torch(self)
        with self.mount(self.ini) as m:
            paths = {"v": m.path("v.npy"), "idx": m.path("idx.dat")}
            for workers, method in LOADER_RUNS:
                what = f"{workers} workers, {method}"
                with self.subTest(what):
                    extra = {}
                    if method not in (None, "threads"):
                        extra = {"workers": "processes", "multiprocessing_context": method}
                    if workers == 4 and extra:
                        extra.update(persistent_workers=True, prefetch_factor=3)
                    loader = dtorch.loader(paths, batch_size=64, num_workers=workers, seed=workers,
                                           **extra)
                    first = self.epoch(loader, what)
                    if workers == 4:  # a second epoch (on the same workers): a new order
                        second = self.epoch(loader, what + ", epoch 2")
                        self.assertNotEqual([b.tolist() for b in first], [b.tolist() for b in second])
                    del loader
            st = m.stats()
            self.assertEqual(st["hints_queued"], 2 * N * (len(LOADER_RUNS) + 4), st)

    def test_hinted_batch_sampler_of_a_batch_sampler(self):
        """A user's own BatchSampler wrapped, in a DataLoader of their own."""
        needs_torch(self)
        with self.mount(self.ini) as m:
            paths = {"v": m.path("v.dat"), "idx": m.path("idx.npy")}
            ds = dtorch.ViewDataset(paths)
            gen = torch.Generator().manual_seed(4)
            batches = torch.utils.data.BatchSampler(torch.utils.data.RandomSampler(ds, generator=gen),
                                                    100, drop_last=True)
            sampler = dtorch.HintedBatchSampler(batches, paths, lookahead=2)
            dl = torch.utils.data.DataLoader(ds, sampler=sampler, batch_size=None, num_workers=2,
                                             prefetch_factor=5)
            seen = [self.check_batch(b, "own BatchSampler") for b in dl]
            self.assertEqual([len(b) for b in seen], [100] * (N // 100))
            self.assertEqual(m.stats()["hints_queued"], 2 * N)
            with self.assertRaisesRegex(ValueError, "lookahead must be 0 or more"):
                dtorch.HintedBatchSampler(batches, paths, lookahead=-1)
            del dl, ds

    def test_bfloat16_and_plain_dataloader(self):
        needs_torch(self)
        with self.mount(self.ini) as m:
            ds = dtorch.ViewDataset(m.path("b"))
            t = ds[[1, 5, 9]]
            self.assertEqual((t.dtype, tuple(t.shape)), (torch.bfloat16, (3, 32, 32, 3)))
            np.testing.assert_array_equal(t.view(torch.int16).numpy().view(np.uint16),
                                          self.ref_b[[1, 5, 9]])
            np.testing.assert_array_equal(ds[7].view(torch.int16).numpy().view(np.uint16),
                                          self.ref_b[7])
            # the plain DataLoader: one row per __getitem__, default collation
            plain = torch.utils.data.DataLoader(dtorch.ViewDataset(m.path("v.npy")), batch_size=100,
                                                shuffle=False, num_workers=2)
            got = torch.cat(list(plain)).numpy()
            self.assertBits(got, self.ref, "plain DataLoader")
            with self.assertRaisesRegex(IndexError, "row 600 out of range"):
                ds[N]
            with self.assertRaisesRegex(TypeError, "1-d sequence of integer rows"):
                ds[[0.5]]
            with self.assertRaisesRegex(ValueError, "batch_size must be at least 1"):
                dtorch.loader(m.path("v"), batch_size=0)
            with self.assertRaisesRegex(TypeError, "persistent_workers apply to worker processes"):
                dtorch.loader(m.path("v"), num_workers=2, persistent_workers=True)
            with self.assertRaisesRegex(ValueError, "workers must be 'threads' or 'processes'"):
                dtorch.loader(m.path("v"), workers="fibers")
            del ds, t, plain

    def test_hinted_loader_makes_fewer_requests(self):
        """One epoch of the hinted loader against the same batches read
        unhinted, each on a cold mount: the hinted one leaves most rows to
        the hint threads (stored, then faulted with no request)."""
        needs_torch(self)
        reads = {}
        for hinted in (False, True):
            with self.mount(self.ini) as m:
                loader = dtorch.loader(m.path("v.npy"), batch_size=32, seed=1, hint=hinted)
                before = m.stats()["read_requests"]
                for _ in loader:
                    pass
                st = m.stats()
                reads[hinted] = st["read_requests"] - before
                self.assertEqual(st["hints_queued"], N if hinted else 0)
                del loader
        self.assertLess(reads[True] * 3, reads[False], reads)

    def test_distributed_two_ranks(self):
        """Two gloo ranks, one reading with threads, one with processes."""
        needs_torch(self)
        script = self.p("ddp.py")
        with open(script, "w") as f:
            f.write(textwrap.dedent(f"""\
                import os, sys
                sys.path.insert(0, {PYTHON_DIR!r})
                import numpy as np, torch, torch.distributed as dist
                import dsview.torch
                rank = int(sys.argv[2])
                dist.init_process_group("gloo", init_method="file://" + sys.argv[3], rank=rank,
                                        world_size=2)
                loader = dsview.torch.loader({{"v": sys.argv[1] + "/v.npy",
                                               "idx": sys.argv[1] + "/idx.dat"}},
                                             batch_size=50, num_workers=2, seed=7,
                                             workers=("threads", "processes")[rank])
                ref = np.load(sys.argv[4], mmap_mode="r")
                rows = []
                for b in loader:
                    r = b["idx"].numpy()
                    assert (np.diff(r) > 0).all()
                    assert np.array_equal(b["v"].numpy().view(np.uint32), ref[r].view(np.uint32))
                    rows += r.tolist()
                n = torch.tensor([len(rows)])
                dist.all_reduce(n)
                np.save(sys.argv[5] + f".{{rank}}.npy", np.array(rows))
                print(rank, len(rows), int(n))
                """))
        np.save(self.p("ref.npy"), self.ref)
        with self.mount(self.ini) as m:
            procs = [subprocess.Popen([sys.executable, script, m.mp, str(r), self.p("rdv"),
                                       self.p("ref.npy"), self.p("rows")],
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                     for r in (0, 1)]
            outs = [p.communicate(timeout=120) for p in procs]
            for p, (out, err) in zip(procs, outs):
                self.assertEqual(p.returncode, 0, err[-3000:])
            self.assertEqual(sorted(o.split()[2] for o, _ in outs), [str(N)] * 2)
            shards = [set(np.load(self.p(f"rows.{r}.npy")).tolist()) for r in (0, 1)]
            self.assertEqual(len(shards[0]), N // 2)
            self.assertFalse(shards[0] & shards[1], "ranks read the same rows")
            self.assertEqual(shards[0] | shards[1], set(range(N)))
            # each rank hints its own rows only, to both files
            self.assertEqual(m.stats()["hints_queued"], 2 * N)
