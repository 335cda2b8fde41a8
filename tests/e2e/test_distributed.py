"""A real torch.distributed job: ranks are processes joined by
init_process_group("gloo") over localhost, each reading its share of a
mount's view with dsview.torch.loader (world size and rank from
torch.distributed). Two ranks read an epoch whole; two ranks read three
steps and save; the rest of the epoch is read by one rank and by three.
The batches, taken in global order (step by step, rank by rank), are
compared byte for byte with the uninterrupted epoch, and every batch with
numpy's rows of the source; a second view, whose epoch ends in a short
step, is read exactly once across the ranks of every resume."""
import json
import os
import socket
import subprocess
import sys
import textwrap

import numpy as np

from common import E2E, PYTHON_DIR

try:
    import torch
    import torch.distributed
    GLOO = torch.distributed.is_available() and torch.distributed.is_gloo_available()
except ImportError:
    torch, GLOO = None, False

HANG_S = 40
N, TAIL_N, B, SAVE_AT = 660, 653, 10, 3  # 660 - 2 * 3 * 10 = 600: whole steps of 1, 2, 3 ranks

RANK = textwrap.dedent("""\
    import faulthandler, json, os, sys
    faulthandler.dump_traceback_later({hang}, exit=True)  # a hung rank says where
    sys.path.insert(0, {python!r})
    import numpy as np, torch.distributed as dist
    import dsview.torch
    mp, view, addr, world, rank, stop, state_in, out = sys.argv[1:]
    world, rank, stop = int(world), int(rank), int(stop)
    dist.init_process_group("gloo", init_method=addr, world_size=world, rank=rank)
    loader = dsview.torch.loader({{"v": f"{{mp}}/{{view}}.npy", "i": f"{{mp}}/{{view}}_i.npy"}},
                                 batch_size={B}, seed=11, num_workers=2,
                                 workers=("threads", "processes")[rank % 2])
    if state_in:
        with open(state_in) as f:
            loader.load_state_dict(json.load(f))
    rows, data = [], []
    for b in loader:
        rows.append(b["i"].numpy().copy())
        data.append(b["v"].numpy().tobytes())
        if len(rows) == stop:
            break
    states = [None] * world
    dist.all_gather_object(states, loader.state_dict())
    assert all(s == states[0] for s in states), states
    if rank == 0:
        with open(out + ".state", "w") as f:
            json.dump(states[0], f)
    np.savez(out + f".{{rank}}.npz", lengths=np.array([len(r) for r in rows], np.int64),
             rows=np.concatenate(rows) if rows else np.zeros(0, np.int64),
             data=np.frombuffer(b"".join(data), np.uint8))
    dist.barrier()
    os._exit(0)  # not destroy_process_group: under gloo it hangs at times (torch 1.13 to 2.5)
""")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Gloo(E2E):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        rng = np.random.default_rng(5)
        cls.x = rng.standard_normal((N, 24)).astype(np.float32)
        np.save(os.path.join(cls.tmp, "x.npy"), cls.x)
        np.save(os.path.join(cls.tmp, "i.npy"), np.arange(N, dtype=np.int64))
        views = ""
        for name, rows in (("v", ""), ("t", f"rows = 0:{TAIL_N}\n")):
            views += f"[{name}]\nsource = x.npy\n{rows}[{name}_i]\nsource = i.npy\n" \
                     f"dtype = int64\n{rows}"
        with open(os.path.join(cls.tmp, "m.ini"), "w") as f:
            f.write(views)
        with open(os.path.join(cls.tmp, "rank.py"), "w") as f:
            f.write(RANK.format(python=PYTHON_DIR, B=B, hang=HANG_S))

    def setUp(self):
        super().setUp()
        if not GLOO:
            self.skipTest("no torch with gloo")

    def job(self, mp, view, world, tag, stop=-1, state=None):
        """Runs `world` ranks; their batches in global order as a list of
        (rows, float32 rows) pairs, and the state every rank saved."""
        addr = f"tcp://127.0.0.1:{free_port()}"
        out = self.p(tag)
        procs = [subprocess.Popen([sys.executable, self.p("rank.py"), mp, view, addr, str(world),
                                   str(r), str(stop), state or "", out],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for r in range(world)]
        for r, p in enumerate(procs):
            _, err = p.communicate(timeout=HANG_S + 30)
            self.assertEqual(p.returncode, 0, f"{tag} rank {r}: {err[-3000:]}")
        per_rank = []
        for r in range(world):
            z = np.load(f"{out}.{r}.npz")
            cut = np.cumsum(z["lengths"])[:-1]
            data = z["data"].view(np.float32).reshape(-1, self.x.shape[1])
            per_rank.append(list(zip(np.split(z["rows"], cut), np.split(data, cut))))
        batches = []
        for step in range(max(map(len, per_rank))):
            batches += [b[step] for b in per_rank if step < len(b)]
        for rows, data in batches:  # every batch byte for byte against numpy's rows
            self.assertTrue((np.diff(rows) > 0).all(), "a batch's rows ascending")
            np.testing.assert_array_equal(data.view(np.uint32), self.x[rows].view(np.uint32))
        with open(out + ".state") as f:
            return batches, json.load(f)

    @staticmethod
    def flat(batches):
        """The batches' data (bytes) and rows (a list), concatenated in order."""
        return (b"".join(d.tobytes() for _, d in batches),
                np.concatenate([r for r, _ in batches]).tolist())

    def test_save_on_two_resume_on_one_and_three(self):
        with self.mount(self.p("m.ini")) as m:
            whole, end = self.job(m.mp, "v", 2, "whole")
            self.assertEqual(sorted(self.flat(whole)[1]), list(range(N)))
            self.assertEqual((end["epoch"], end["cursor"]), (1, 0), "the next epoch, at its start")
            head, state = self.job(m.mp, "v", 2, "head", stop=SAVE_AT)
            self.assertEqual((state["cursor"], state["world_size"]), (SAVE_AT * 2 * B, 2))
            self.assertEqual(self.flat(head), self.flat(whole[:2 * SAVE_AT]))
            path = self.p("saved.json")
            with open(path, "w") as f:
                json.dump(state, f)
            for world in (1, 3):
                with self.subTest(world=world):
                    rest, _ = self.job(m.mp, "v", world, f"rest{world}", state=path)
                    got, want = self.flat(head + rest), self.flat(whole)
                    self.assertEqual(got[1], want[1], "the epoch's rows in order")
                    self.assertTrue(got[0] == want[0], "the epoch byte for byte")

    def test_short_last_step_read_once(self):
        with self.mount(self.p("m.ini")) as m:
            head, state = self.job(m.mp, "t", 2, "thead", stop=SAVE_AT)
            path = self.p("tsaved.json")
            with open(path, "w") as f:
                json.dump(state, f)
            for world in (1, 3):
                with self.subTest(world=world):
                    rest, _ = self.job(m.mp, "t", world, f"trest{world}", state=path)
                    rows = self.flat(head + rest)[1]
                    self.assertEqual(sorted(rows), list(range(TAIL_N)),
                                     "each sample of the epoch exactly once")
