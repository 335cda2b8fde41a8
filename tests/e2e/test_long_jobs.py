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

    def test_resume_threads_in_process(self):
        ini = self.p("m.ini")
        x = dsview.open(ini, "idx")
        self.check_resume(ini, x, batch_size=64, seed=5, num_workers=2)
        self.check_resume(ini, x, batch_size=33, shuffle=False, num_workers=0)

    def test_resume_spawned_processes_in_process(self):
        ini = self.p("m.ini")
        x = dsview.open(ini, "idx")
        self.check_resume(ini, x, batch_size=50, seed=6, num_workers=2, workers="processes",
                          multiprocessing_context="spawn")

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


class Sampling(LongJobs):
    """loader()'s other orders: draws with replacement (uniform, by
    weight), num_samples, a sampler of the user's own and start_step,
    each resumed in a new process as a shuffle is; bad arguments refused
    with the reason."""

    def draws(self, x, **kw):
        return sum(self.epoch(dtorch.loader(x, **kw)), [])

    def check_resumed(self, x, kw, ks):
        whole = self.epoch(dtorch.loader(x, **kw))
        for k in ks:
            with self.subTest(saved_after=k):
                first = dtorch.loader(x, **kw)
                head = self.epoch(first, stop=k)
                state = first.state_dict()
                self.assertLess(len(pickle.dumps(state)), 600, "the state holds no rows")
                self.assertEqual(head + self.resumed(self.p("m.ini"), state, **kw), whole)
        return whole

    def test_replacement_uniform(self):
        x = dsview.open(self.p("m.ini"), "idx")
        kw = dict(batch_size=64, seed=2, replacement=True, num_samples=3 * N, num_workers=2)
        whole = self.check_resumed(x, kw, (1, 20, 46))
        drawn = sum(whole, [])
        self.assertEqual(len(drawn), 3 * N)
        self.assertTrue(all(0 <= r < N for r in drawn))
        self.assertLess(len(set(drawn)), N, "drawn with replacement: some rows never")
        self.assertGreater(len(set(drawn)), N // 2)
        self.assertEqual(drawn, self.draws(x, **kw), "the seed's and the epoch's draws")
        self.assertNotEqual(drawn, self.draws(x, **dict(kw, seed=3)))
        lo = dtorch.loader(x, **kw)
        e0, e1 = sum(self.epoch(lo), []), sum(self.epoch(lo), [])
        self.assertNotEqual(e0, e1, "each epoch its own draws")
        # the draws of an epoch are the positions', whatever the ranks
        ranks = sum((self.draws(x, world_size=3, rank=r, **kw) for r in range(3)), [])
        self.assertEqual(sorted(ranks), sorted(drawn))
        # two ranks save after 5 steps; one rank draws the rest
        done = []
        for r in (0, 1):
            lo = dtorch.loader(x, world_size=2, rank=r, **kw)
            done += sum(self.epoch(lo, stop=5), [])
            state = lo.state_dict()
        rest = dtorch.loader(x, **kw)
        rest.load_state_dict(state)
        self.assertEqual(sorted(done + sum(self.epoch(rest), [])), sorted(drawn))

    def test_replacement_by_weight(self):
        x = dsview.open(self.p("m.ini"), "idx")
        w = np.where(np.arange(N) % 2 == 0, 1.0, 0.0)  # odd rows weigh nothing
        w[:200] *= 4
        kw = dict(batch_size=100, seed=7, replacement=True, weights=w.tolist(),
                  num_samples=20000)
        drawn = np.array(sum(self.check_resumed(x, kw, (3, 150)), []))
        self.assertEqual(int((drawn % 2).sum()), 0, "a sample of weight 0 is never drawn")
        share = (drawn < 200).mean()
        np.testing.assert_allclose(share, w[:200].sum() / w.sum(), atol=0.02)
        other = dtorch.loader(x, **dict(kw, weights=(w + (np.arange(N) == 2)).tolist()))
        with self.assertRaisesRegex(ValueError, r"other weights"):
            other.load_state_dict(dtorch.loader(x, **kw).state_dict())

    def test_num_samples_without_replacement(self):
        x = dsview.open(self.p("m.ini"), "idx")
        part = self.epoch(dtorch.loader(x, batch_size=64, seed=1, num_samples=500))
        drawn = sum(part, [])
        self.assertEqual(len(drawn), 500)
        self.assertEqual(len(set(drawn)), 500, "each at most once")
        whole = self.epoch(dtorch.loader(x, batch_size=64, seed=1))
        self.assertEqual(part[:7], whole[:7], "the first positions of the epoch's order")
        self.assertLess(set(part[7]), set(whole[7]))

    def test_own_sampler(self):
        x = dsview.open(self.p("m.ini"), "idx")
        order = [(i * 7) % N for i in range(N)][::-1]
        kw = dict(batch_size=50, sampler=order, num_workers=2)
        whole = self.check_resumed(x, kw, (1, 10, 20))
        self.assertEqual(whole, [sorted(order[i:i + 50]) for i in range(0, N, 50)],
                         "the sampler's order, batch by batch (rows ascending in a batch)")

        def seeded():
            g = torch.Generator().manual_seed(11)
            return torch.utils.data.WeightedRandomSampler([1.0] * N, 2 * N, generator=g)
        lo = dtorch.loader(x, batch_size=100, sampler=seeded())
        head = self.epoch(lo, stop=4)
        again = dtorch.loader(x, batch_size=100, sampler=seeded())
        again.load_state_dict(lo.state_dict())
        self.assertEqual(head + self.epoch(again),
                         self.epoch(dtorch.loader(x, batch_size=100, sampler=seeded())))
        with self.assertRaisesRegex(ValueError, "another sampling"):
            dtorch.loader(x, batch_size=100).load_state_dict(lo.state_dict())
        with self.assertRaisesRegex(IndexError, "gave sample 5000; the data has 1003"):
            self.epoch(dtorch.loader(x, batch_size=10, sampler=[1, 5000]))

    def test_start_step(self):
        x = dsview.open(self.p("m.ini"), "idx")
        whole = self.epoch(dtorch.loader(x, batch_size=100, seed=4))
        self.assertEqual(self.epoch(dtorch.loader(x, batch_size=100, seed=4, start_step=3)),
                         whole[3:])
        ranks = [dtorch.loader(x, batch_size=100, seed=4, world_size=2, rank=r, start_step=2)
                 for r in (0, 1)]
        self.assertEqual(sorted(sum(sum((self.epoch(lo) for lo in ranks), []), [])),
                         sorted(sum(whole, [])[400:]), "two global steps of 2 x 100 taken")
        lo = dtorch.loader(x, batch_size=100, seed=4, start_step=len(whole))
        self.assertEqual(len(self.epoch(lo)), len(whole), "the next epoch, whole")

    def test_bad_arguments_refused(self):
        x = dsview.open(self.p("m.ini"), "idx")
        for kw, err, want in (
                (dict(num_samples=2000), ValueError, "num_samples 2000 > the 1003 samples"),
                (dict(weights=[1.0] * N), ValueError, "give replacement=True"),
                (dict(replacement=True, weights=[1.0] * 5), ValueError,
                 r"one a sample \(1003; got 5\)"),
                (dict(replacement=True, weights=[-1.0] * N), ValueError, "none negative"),
                (dict(replacement=True, weights=[0.0] * N), ValueError, "not all 0"),
                (dict(sampler=[1, 2], shuffle=True), ValueError, "shuffle cannot go with it"),
                (dict(sampler=[1, 2], world_size=2, rank=0), ValueError,
                 "world_size, rank cannot go with it"),
                (dict(sampler=iter([1, 2])), TypeError, "with a length"),
                (dict(batch_size=100, start_step=12), ValueError,
                 r"start_step 12: an epoch has 11 steps"),
                (dict(start_step=-1), ValueError, "start_step -1")):
            with self.subTest(want=want), self.assertRaisesRegex(err, want):
                dtorch.loader(x, **kw)
        with self.assertRaisesRegex(ValueError, "1003 samples an epoch without replacement; "
                                    "this loader's of 1003 samples an epoch drawn"):
            dtorch.loader(x, replacement=True).load_state_dict(dtorch.loader(x).state_dict())


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
