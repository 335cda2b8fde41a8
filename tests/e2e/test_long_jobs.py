"""Long jobs: dsview.torch.loader's state. A loader saved after any batch
and restored in a new process yields exactly the batches the
uninterrupted one would have (threads, worker processes under fork and
spawn; in-process views and a mount); the rest of an epoch saved by two
ranks is read by one and by three ranks, each sample exactly once; bad
states are refused with the reason. The batches carry their own row
numbers (an int64 view of arange), so an epoch is compared as the
concatenation of its batches, in order."""
import json
import os
import pickle
import subprocess
import sys
import textwrap

import numpy as np

from common import E2E, PYTHON_DIR

sys.path.insert(0, PYTHON_DIR)
import dsview  # noqa: E402

try:
    import torch
    import dsview.torch as dtorch
except ImportError:
    torch = None

N = 1003  # not a multiple of any batch or step: every epoch has a short tail

RESUME = textwrap.dedent("""\
    import pickle, sys
    sys.path.insert(0, {python!r})
    import numpy as np, dsview, dsview.torch
    kw = pickle.loads(bytes.fromhex(sys.argv[1]))
    src = kw.pop("source")
    data = dsview.open(src, "idx") if src.endswith(".ini") else src
    loader = dsview.torch.loader(data, **kw)
    with open(sys.argv[2]) as f:
        import json
        loader.load_state_dict(json.load(f))
    print(" ".join(",".join(map(str, b.numpy().tolist())) for b in loader))
""")


class LongJobs(E2E):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        np.save(os.path.join(cls.tmp, "idx.npy"), np.arange(N, dtype=np.int64))
        with open(os.path.join(cls.tmp, "m.ini"), "w") as f:
            f.write("[idx]\nsource = idx.npy\ndtype = int64\n")

    def setUp(self):
        super().setUp()
        if torch is None:
            self.skipTest("no torch")

    def epoch(self, loader, stop=None):
        out = []
        for b in loader:
            out.append(b.numpy().tolist())
            if stop is not None and len(out) == stop:
                break
        return out

    def resumed(self, source, state, **kw):
        """The batches a new process yields from state."""
        path = self.p("state.json")
        with open(path, "w") as f:
            json.dump(state, f)
        p = subprocess.run([sys.executable, "-c", RESUME.format(python=PYTHON_DIR),
                            pickle.dumps(dict(kw, source=source)).hex(), path],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr[-3000:])
        line = p.stdout.strip()
        return [list(map(int, b.split(","))) for b in line.split(" ")] if line else []

    def check_resume(self, source, data, **kw):
        whole = self.epoch(dtorch.loader(data, **kw))
        self.assertEqual(sorted(sum(whole, [])), list(range(N)))
        for k in (1, len(whole) // 2, len(whole) - 1):
            with self.subTest(saved_after=k, **{a: str(b) for a, b in kw.items()}):
                first = dtorch.loader(data, **kw)
                head = self.epoch(first, stop=k) if k else []
                state = first.state_dict()
                self.assertLess(len(pickle.dumps(state)), 400, "the state holds no rows")
                self.assertEqual(head + self.resumed(source, state, **kw), whole)

    def test_resume_threads_and_processes_in_process(self):
        ini = self.p("m.ini")
        x = dsview.open(ini, "idx")
        self.check_resume(ini, x, batch_size=64, seed=5, num_workers=2)
        self.check_resume(ini, x, batch_size=50, seed=6, num_workers=2, workers="processes",
                          multiprocessing_context="spawn")
        self.check_resume(ini, x, batch_size=33, shuffle=False, num_workers=0)

    def test_resume_on_a_mount(self):
        with self.mount(self.p("m.ini")) as m:
            self.check_resume(m.path("idx.npy"), m.path("idx.npy"), batch_size=64, seed=9,
                              num_workers=2, workers="processes",
                              multiprocessing_context="fork")

    def test_epochs_and_set_epoch(self):
        x = dsview.open(self.p("m.ini"), "idx")
        loader = dtorch.loader(x, batch_size=100, seed=1, num_workers=2)
        e0, e1 = self.epoch(loader), self.epoch(loader)
        self.assertNotEqual(e0, e1, "each epoch its own order")
        self.assertEqual(loader.state_dict()["epoch"], 2)
        loader.set_epoch(0)
        self.assertEqual(self.epoch(loader), e0, "an epoch's order is the seed's and the epoch's")
        loader.sampler.set_epoch(1)  # as DistributedSampler users call it
        self.assertEqual(self.epoch(loader), e1)
        st = loader.stats()
        self.assertEqual((st["batches"], st["rows"], st["bytes"]), (44, 4 * N, 4 * N * 8))
        self.assertGreaterEqual(st["wait_s"], 0)

    def test_reshard_two_ranks_to_one_and_three(self):
        x = dsview.open(self.p("m.ini"), "idx")
        kw = dict(batch_size=40, seed=3, drop_last=False)
        ranks = [dtorch.loader(x, world_size=2, rank=r, **kw) for r in (0, 1)]
        done, states = [], []
        for r in ranks:  # three global steps each, then saved
            done += sum(self.epoch(r, stop=3), [])
            states.append(r.state_dict())
        self.assertEqual(states[0], states[1], "every rank saves the same state")
        for world in (1, 3):
            with self.subTest(world=world):
                rest = []
                for r in range(world):
                    resumed = dtorch.loader(x, world_size=world, rank=r, **kw)
                    resumed.load_state_dict(states[0])
                    rest += sum(self.epoch(resumed), [])
                self.assertEqual(sorted(done + rest), list(range(N)),
                                 "each sample of the epoch exactly once")
        # drop_last: whole batches of every rank, the tail left out
        kept = []
        for r in range(3):
            kept += self.epoch(dtorch.loader(x, world_size=3, rank=r, batch_size=40, seed=3,
                                             drop_last=True))
        self.assertTrue(all(len(b) == 40 for b in kept))
        self.assertEqual(len(set(sum(kept, []))), N // 120 * 120)

    def test_bad_states_refused(self):
        x = dsview.open(self.p("m.ini"), "idx")
        loader = dtorch.loader(x, batch_size=10)
        good = loader.state_dict()
        for change, want in ((dict(version=9), "version 9"),
                             (dict(samples=5), "state is of 5 samples; this loader has 1003"),
                             (dict(cursor=15), "cursor 15 is not at a whole step of 1 x 10")):
            with self.subTest(want=want), self.assertRaisesRegex(ValueError, want):
                loader.load_state_dict(dict(good, **change))
        with self.assertRaisesRegex(TypeError, "not a Subset"):
            dtorch.loader(torch.utils.data.Subset(dtorch.ViewDataset(x), [1, 2]))
        with self.assertRaisesRegex(ValueError, "give world_size and rank together"):
            dtorch.loader(x, world_size=2)
        with self.assertRaisesRegex(ValueError, "rank 2 of a world of 2"):
            dtorch.loader(x, world_size=2, rank=2)


class Mixtures(E2E):
    """dsview.torch.mixture: (dataset index, batch) pairs; every sample of
    every dataset once an epoch without weights, batches shared by weight
    with them; resumable and reshardable as a loader."""

    SIZES = (301, 97, 1000)

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        for d, n in enumerate(cls.SIZES):  # dataset d's samples are d * 10000 + row
            np.save(os.path.join(cls.tmp, f"d{d}.npy"), d * 10000 + np.arange(n, dtype=np.int64))

    def setUp(self):
        super().setUp()
        if torch is None:
            self.skipTest("no torch")
        self.sets = [dsview.open(self.p(f"d{d}.npy"), dtype="int64")
                     for d in range(len(self.SIZES))]

    def epoch(self, loader, stop=None):
        out = []
        for d, b in loader:
            rows = b.numpy().tolist()
            self.assertTrue(all(r // 10000 == d for r in rows), "a batch carries its dataset")
            out.append((d, rows))
            if stop is not None and len(out) == stop:
                break
        return out

    def test_every_sample_once_and_by_weight(self):
        whole = self.epoch(dtorch.mixture(self.sets, batch_size=32, seed=1, num_workers=2))
        want = sorted(d * 10000 + i for d, n in enumerate(self.SIZES) for i in range(n))
        self.assertEqual(sorted(sum((r for _, r in whole), [])), want)
        self.assertNotEqual([d for d, _ in whole], sorted(d for d, _ in whole), "interleaved")
        weighted = self.epoch(dtorch.mixture(self.sets, weights=[2, 1, 1], batch_size=32,
                                             seed=1, drop_last=True))
        counts = np.bincount([d for d, _ in weighted], minlength=3)
        self.assertEqual(counts.sum(), sum(n // 32 for n in self.SIZES))
        np.testing.assert_allclose(counts / counts.sum(), [0.5, 0.25, 0.25], atol=0.05)
        self.assertTrue(all(len(r) == 32 for _, r in weighted))

    def test_resume_and_reshard(self):
        kw = dict(batch_size=25, seed=4)
        whole = self.epoch(dtorch.mixture(self.sets, **kw))
        first = dtorch.mixture(self.sets, **kw)
        head = self.epoch(first, stop=7)
        state = pickle.loads(pickle.dumps(first.state_dict()))
        resumed = dtorch.mixture(self.sets, num_workers=2, workers="processes",
                                 multiprocessing_context="spawn", **kw)
        resumed.load_state_dict(state)
        self.assertEqual(head + self.epoch(resumed), whole)
        # two ranks save after 3 steps; three ranks read the rest, each batch once
        done = []
        for r in (0, 1):
            lo = dtorch.mixture(self.sets, world_size=2, rank=r, **kw)
            done += self.epoch(lo, stop=3)
            state = lo.state_dict()
        for r in range(3):
            lo = dtorch.mixture(self.sets, world_size=3, rank=r, **kw)
            lo.load_state_dict(state)
            done += self.epoch(lo)
        self.assertEqual(sorted(map(tuple, (b for _, b in done))),
                         sorted(map(tuple, (b for _, b in whole))))
        with self.assertRaisesRegex(ValueError, "another mixture"):
            dtorch.mixture(self.sets[:2], **kw).load_state_dict(state)
        with self.assertRaisesRegex(ValueError, "one a dataset"):
            dtorch.mixture(self.sets, weights=[1, 1], **kw)
