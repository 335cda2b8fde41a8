"""Other loaders' checkpoints over dsview: torchdata's StatefulDataLoader
driving dsview.torch.stateful_sampler (no worker processes or two, a
snapshot every step or every few, views read in-process and on a mount),
and grain's DataLoader and MapDataset over dsview.ArraySource. Each saves
its state after k batches, a new process resumes from it, and the batches
before and after, in order, are byte for byte the uninterrupted epoch's;
every batch's rows are checked against the arrays numpy wrote (the views
are read together with an int64 view of each row's number). torchdata
needs torch >= 2 and grain numpy 2 and Python >= 3.11: `make test-torch2`
runs them; elsewhere they are skipped saying why."""
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

HERE = os.path.dirname(os.path.abspath(__file__))

try:
    import torch
    import torch.utils.data as tud
    import dsview.torch as dtorch
except ImportError:
    torch = None
try:
    from torchdata.stateful_dataloader import StatefulDataLoader
    NO_TORCHDATA = None
except Exception as e:
    NO_TORCHDATA = (f"torchdata's StatefulDataLoader does not import here ({type(e).__name__}: "
                    f"{e}); torchdata 0.11 needs torch >= 2: `make test-torch2` runs this")
try:
    import grain
    NO_GRAIN = None
except Exception as e:
    NO_GRAIN = (f"grain does not import here ({type(e).__name__}: {e}); grain 0.2 needs "
                f"protobuf >= 5.28.3 (Debian's is 3.21): `make test-torch2` runs this")

N = 1003  # no multiple of a batch: every epoch ends with a short batch

# a new process: the loader cfg describes, restored from the state saved
# in argv[2]; the batches of its next `epochs` iterations go to argv[3]
RESUME = textwrap.dedent("""\
    import json, pickle, sys
    sys.path.insert(0, {here!r})
    import test_stateful as t
    cfg = json.loads(sys.argv[1])
    out = t.resume(cfg, sys.argv[2])
    with open(sys.argv[3], "wb") as f:
        pickle.dump(out, f)
""")


def views(cfg):
    """The views cfg names: read in-process from its manifest, or paths on
    its mount."""
    if "ini" in cfg:
        return {k: dsview.open(cfg["ini"], k) for k in ("x", "idx")}
    return dict(cfg["paths"])


def make_torchdata(cfg):
    """torchdata's StatefulDataLoader over dsview's stateful sampler."""
    ds = dtorch.ViewDataset(views(cfg))
    sampler = dtorch.stateful_sampler(ds, **cfg["sampler"])
    return StatefulDataLoader(ds, sampler=sampler, batch_size=None, **cfg["loader"])


def make_grain(cfg):
    """A grain iterator over dsview.ArraySource: its DataLoader (an
    IndexSampler's shuffle, worker processes or none) or a MapDataset's."""
    src = dsview.ArraySource(views(cfg))
    if cfg["grain"] == "map":
        return iter(grain.MapDataset.source(src).shuffle(seed=cfg["seed"]).batch(cfg["batch"]))
    sampler = grain.samplers.IndexSampler(len(src), shuffle=True, num_epochs=1,
                                          seed=cfg["seed"])
    return iter(grain.DataLoader(data_source=src, sampler=sampler,
                                 operations=[grain.transforms.Batch(cfg["batch"])],
                                 worker_count=cfg["workers"]))


def as_bytes(batch):
    """A batch (a dict of tensors or arrays) as (x's bytes, idx's bytes)."""
    got = {k: (v.numpy() if hasattr(v, "numpy") else np.asarray(v)) for k, v in batch.items()}
    return got["x"].tobytes(), got["idx"].tobytes()


def take(it, k=None):
    """The next k batches of it (all of them without k), as bytes."""
    out = []
    for b in it:
        out.append(as_bytes(b))
        if k is not None and len(out) == k:
            break
    return out


def resume(cfg, path):
    """What a new process reads from the state saved at path: the rest of
    the epoch (and, for torchdata, cfg's further epochs)."""
    if "grain" in cfg:
        it = make_grain(cfg)
        with open(path, "rb") as f:
            state = f.read()
        it.set_state(json.loads(state) if cfg["grain"] == "map" else state)
        return [take(it)]
    dl = make_torchdata(cfg)
    dl.load_state_dict(torch.load(path, weights_only=True))
    return [take(dl) for _ in range(cfg.get("epochs", 1))]


class Checkpoints(E2E):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.x = np.random.default_rng(0).standard_normal((N, 3)).astype(np.float32)
        np.save(os.path.join(cls.tmp, "x.npy"), cls.x)
        np.save(os.path.join(cls.tmp, "idx.npy"), np.arange(N, dtype=np.int64))
        with open(os.path.join(cls.tmp, "m.ini"), "w") as f:
            f.write("[x]\nsource = x.npy\n\n[idx]\nsource = idx.npy\ndtype = int64\n")

    def check_rows(self, epoch):
        """Each row of the epoch once, each batch's x the rows numpy wrote."""
        idx = np.concatenate([np.frombuffer(i, np.int64) for _, i in epoch])
        self.assertEqual(sorted(idx.tolist()), list(range(N)))
        got = np.concatenate([np.frombuffer(x, np.float32) for x, _ in epoch]).reshape(-1, 3)
        self.assertEqual(got.tobytes(), self.x[idx].tobytes())

    def resumed(self, cfg, state):
        """The batches a new process reads from state (bytes, or a dict
        torch.save writes)."""
        path, out = self.p("state"), self.p("resumed.pkl")
        if isinstance(state, bytes):
            with open(path, "wb") as f:
                f.write(state)
        else:
            torch.save(state, path)
        p = subprocess.run([sys.executable, "-c", RESUME.format(here=HERE), json.dumps(cfg),
                            path, out], capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr[-3000:])
        with open(out, "rb") as f:
            return pickle.load(f)


class TorchData(Checkpoints):
    """StatefulDataLoader(ViewDataset, sampler=stateful_sampler(...),
    batch_size=None): state_dict() after k batches, resumed elsewhere."""

    def setUp(self):
        super().setUp()
        if torch is None or NO_TORCHDATA:
            self.skipTest(NO_TORCHDATA or "no torch")

    def cfg(self, **loader):
        return {"ini": self.p("m.ini"), "sampler": {"batch_size": 64, "seed": 3},
                "loader": loader}

    def check(self, cfg, ks):
        whole = take(make_torchdata(cfg))
        self.check_rows(whole)
        for k in ks:
            with self.subTest(saved_after=k, **cfg["loader"]):
                dl = make_torchdata(cfg)
                head = take(dl, k)
                state = dl.state_dict()
                del dl  # its workers end
                self.assertEqual(head + self.resumed(cfg, state)[0], whole)

    def test_no_worker_processes(self):
        self.check(self.cfg(num_workers=0), (1, 8, 15))

    def test_two_worker_processes(self):
        """The workers read batches ahead; the state is the loop's."""
        self.check(self.cfg(num_workers=2, prefetch_factor=4), (1, 9))

    def test_snapshot_every_n_steps(self):
        """Saved between snapshots, the resumed loader reads again from the
        last one and passes over the steps since."""
        self.check(self.cfg(num_workers=2, snapshot_every_n_steps=4), (6, 8))

    def test_on_a_mount(self):
        with self.mount(self.p("m.ini")) as m:
            cfg = {"paths": {k: m.path(f"{k}.npy") for k in ("x", "idx")},
                   "sampler": {"batch_size": 100, "seed": 8},
                   "loader": {"num_workers": 2, "snapshot_every_n_steps": 3}}
            self.check(cfg, (5,))

    def test_epochs(self):
        """Saved after an epoch's last batch, the new process's first loop
        has nothing left and its second reads the next epoch; saved after
        the loop ended, its first loop reads the next epoch; saved part way
        into the second epoch, the rest of that one."""
        cfg = dict(self.cfg(num_workers=2), epochs=2)
        dl = make_torchdata(cfg)
        e0, e1 = take(dl), take(dl)
        self.assertNotEqual(e0, e1, "each epoch its own order")
        self.check_rows(e1)
        dl = make_torchdata(cfg)
        self.assertEqual(take(dl, len(e0)), e0)
        self.assertEqual(self.resumed(cfg, dl.state_dict()), [[], e1])
        dl = make_torchdata(cfg)
        self.assertEqual(take(dl), e0)
        self.assertEqual(self.resumed(cfg, dl.state_dict())[0], e1)
        head = take(dl, 3)
        self.assertEqual(head + self.resumed(cfg, dl.state_dict())[0], e1)

    def test_state_of_other_data_refused(self):
        dl = make_torchdata(self.cfg())
        take(dl, 2)
        state = dl.state_dict()
        np.save(self.p("small.npy"), self.x[:500])
        np.save(self.p("small_idx.npy"), np.arange(500, dtype=np.int64))
        small = dtorch.ViewDataset({"x": dsview.open(self.p("small.npy")),
                                    "idx": dsview.open(self.p("small_idx.npy"), dtype="int64")})
        other = StatefulDataLoader(small, sampler=dtorch.stateful_sampler(small, batch_size=64),
                                   batch_size=None)
        other.load_state_dict(state)
        with self.assertRaisesRegex(ValueError, "the state is of 1003 samples; this loader "
                                    "has 500"):
            next(iter(other))
        again = StatefulDataLoader(small, sampler=other.sampler, batch_size=None)
        self.assertEqual(len(take(again)), 8, "the sampler refused the state whole")


class Sampler(Checkpoints):
    """stateful_sampler under a plain DataLoader (every torch): the
    batches of loader(), and a state either of them restores."""

    def setUp(self):
        super().setUp()
        if torch is None:
            self.skipTest("no torch")

    def test_same_batches_and_state_as_loader(self):
        data = views({"ini": self.p("m.ini")})
        ds = dtorch.ViewDataset(data)
        kw = dict(batch_size=50, seed=4)
        whole = take(dtorch.loader(data, **kw))
        self.check_rows(whole)
        s = dtorch.stateful_sampler(ds, **kw)
        self.assertEqual(len(s), 21)
        self.assertEqual(take(tud.DataLoader(ds, sampler=s, batch_size=None)), whole)
        s = dtorch.stateful_sampler(ds, **kw)
        head = take(tud.DataLoader(ds, sampler=s, batch_size=None), 7)
        lo = dtorch.loader(data, **kw)
        lo.load_state_dict(s.state_dict())
        self.assertEqual(head + take(lo), whole, "a sampler's state resumes a loader")
        lo = dtorch.loader(data, **kw)
        head = take(lo, 12)
        s = dtorch.stateful_sampler(ds, **kw)
        s.load_state_dict(lo.state_dict())
        s.set_epoch(0)  # a trainer's call for the epoch under way: it goes on
        self.assertEqual(head + take(tud.DataLoader(ds, sampler=s, batch_size=None)), whole)
        s.set_epoch(0)  # the epoch read: set_epoch(0) reads it again
        self.assertEqual(take(tud.DataLoader(ds, sampler=s, batch_size=None)), whole)

    def test_reshard(self):
        """Two ranks save after three steps; one and three ranks read the
        rest, each row of the epoch exactly once."""
        ds = dtorch.ViewDataset(views({"ini": self.p("m.ini")}))
        done, states = [], []
        for r in (0, 1):
            s = dtorch.stateful_sampler(ds, batch_size=40, seed=3, world_size=2, rank=r)
            done += take(tud.DataLoader(ds, sampler=s, batch_size=None), 3)
            states.append(s.state_dict())
        self.assertEqual(states[0], states[1], "every rank saves the same state")
        for world in (1, 3):
            with self.subTest(world=world):
                rest = []
                for r in range(world):
                    s = dtorch.stateful_sampler(ds, batch_size=40, seed=3, world_size=world,
                                                rank=r)
                    s.load_state_dict(states[0])
                    rest += take(tud.DataLoader(ds, sampler=s, batch_size=None))
                self.check_rows(done + rest)

    def test_bad_arguments_refused(self):
        ds = dtorch.ViewDataset(views({"ini": self.p("m.ini")}))
        for kw, want in ((dict(start_step=99), "start_step 99: an epoch has 4 steps"),
                         (dict(lookahead=-1), "lookahead must be 0 or more"),
                         (dict(sampler=[1], seed=2), "seed cannot go with it")):
            with self.subTest(want=want), self.assertRaisesRegex(ValueError, want):
                dtorch.stateful_sampler(ds, batch_size=256, **kw)
        s = dtorch.stateful_sampler(ds, batch_size=256)
        with self.assertRaisesRegex(ValueError, "version 7"):
            s.load_state_dict(dict(s.state_dict(), version=7))
        self.assertEqual(len(take(tud.DataLoader(ds, sampler=s, batch_size=None))), 4)


class Grain(Checkpoints):
    """grain's iterators over dsview.ArraySource: get_state() after k
    batches, set_state() in a new process."""

    def setUp(self):
        super().setUp()
        if NO_GRAIN:
            self.skipTest(NO_GRAIN)

    def check(self, cfg, ks):
        whole = take(make_grain(cfg))
        self.check_rows(whole)
        for k in ks:
            with self.subTest(saved_after=k, grain=cfg["grain"]):
                it = make_grain(cfg)
                head = take(it, k)
                state = it.get_state()
                state = state if isinstance(state, bytes) else json.dumps(state).encode()
                del it
                self.assertEqual(head + self.resumed(cfg, state)[0], whole)

    def test_data_loader(self):
        self.check({"ini": self.p("m.ini"), "grain": "loader", "workers": 0, "seed": 1,
                    "batch": 64}, (1, 10))

    def test_data_loader_worker_processes_on_a_mount(self):
        with self.mount(self.p("m.ini")) as m:
            self.check({"paths": {k: m.path(f"{k}.npy") for k in ("x", "idx")},
                        "grain": "loader", "workers": 2, "seed": 2, "batch": 100}, (4,))

    def test_map_dataset(self):
        self.check({"ini": self.p("m.ini"), "grain": "map", "seed": 5, "batch": 64}, (3, 15))
