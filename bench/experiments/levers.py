"""The mount's levers: the kernel's readahead window, dsview's own readahead, the hint threads.

A uint8 SxSx3 .npy (--side, 224; 64 gives the read table's 12 KB rows)
served as normalised float32; shuffled batches read a small part of it,
as in training. A peer is one setting of one lever, every phase cold (a
fresh daemon with that setting):
  ra_64K .. ra_1M   --readahead (the kernel's window of the mount): cold
                    shuffled batches (--batches x 256 rows) in rows/s and
                    amplification (bytes dsview decoded / bytes asked),
                    and a cold sequential pass over --seq_mb of output
  push_on, push_off dsview's own readahead into the page cache (off:
                    DSVIEW_READAHEAD_KB=0): the sequential pass back to
                    back, and paced like training (10 ms after every 16
                    rows; GB/s counts reading time only)
  hint_2 .. hint_32 the threads storing hinted rows (DSVIEW_HINT_THREADS):
                    shuffled batches by one reader hinting its next 2"""
import time
import types

import numpy as np

from bench.harness import Experiment, Metric, Peer, Phase, Setting, Target

WINDOWS = ["64K", "128K", "256K", "512K", "1M"]
THREADS = ["2", "4", "8", "16", "32"]


def make(run, point):
    side = run.s.side
    row = side * side * 3
    n = max(2048, run.s.mb * 1000 * 1000 // row)
    x = np.lib.format.open_memmap(run.path("u8.npy"), "w+", np.uint8, (n, side, side, 3))
    base = np.random.default_rng(0).integers(0, 256, (64, side, side, 3), dtype=np.uint8)
    for i in range(0, n, 64):
        x[i:i + 64] = base[:min(64, n - i)]
    del x
    ini = run.path("b.ini")
    with open(ini, "w") as f:
        f.write(f"[v]\nsource = u8.npy\nscale = {1/255!r}\nmean = 0.485 0.456 0.406\n"
                f"std = 0.229 0.224 0.225\n")
    seq_rows = min(n, run.s.seq_mb * 1000 * 1000 // (row * 4))
    return types.SimpleNamespace(ini=ini, n=n, row=row, shape=(n, side, side, 3),
                                 seq_rows=seq_rows,
                                 info={"rows": n, "mb": round(n * row / 1e6), "seq_rows": seq_rows})


def setup(peer):
    lever, value = peer.split("_", 1)
    opts = ["--readahead", value] if lever == "ra" else []
    env = ({"DSVIEW_READAHEAD_KB": "0"} if peer == "push_off" else
           {"DSVIEW_HINT_THREADS": value} if lever == "hint" else None)

    def mount(run, data):
        return run.mounts.dsview(data.ini, opts=opts, env=env)
    return mount


def teardown(run, m):
    run.mounts.close(m)


def view(m, data):
    return np.memmap(m.path("v.dat"), np.float32, "r", shape=data.shape)


def seq(a, rows, pace=0.0):
    got, spent, step = 0, 0.0, 16 if pace else 64
    for i in range(0, rows, step):
        t = time.perf_counter()
        got += np.array(a[i:min(i + step, rows)]).nbytes
        spent += time.perf_counter() - t
        time.sleep(pace)
    return got / spent / 1e9


def shuffled(run, data, peer, m, rnd):
    a = view(m, data)
    order = np.random.default_rng(rnd).permutation(data.n)
    s0, t = m.stats(), time.perf_counter()
    for b in range(run.s.batches):
        np.array(a[np.sort(order[b * 256:(b + 1) * 256])])
    rate = run.s.batches * 256 / (time.perf_counter() - t)
    amp = (m.stats()["bytes_decoded"] - s0["bytes_decoded"]) / (run.s.batches * 256 * data.row * 4)
    del a
    return {"shuf_rows": rate, "amp": amp}


def sequential(run, data, peer, m, rnd):
    a = view(m, data)
    r = {"seq_gbs": seq(a, data.seq_rows)}
    del a
    return r


def paced(run, data, peer, m, rnd):
    a = view(m, data)
    r = {"paced_gbs": seq(a, data.seq_rows, 0.01)}
    del a
    return r


def hinted(run, data, peer, m, rnd):
    import os

    from dsview import hint
    a = view(m, data)
    fd = os.open(m.path("v.dat"), os.O_RDONLY)
    order = np.random.default_rng(100 + rnd).permutation(data.n)
    nb = run.s.batches
    batches = [np.sort(order[b * 256:(b + 1) * 256]) for b in range(nb)]
    t = time.perf_counter()
    for b in batches[:2]:
        hint(fd, b)
    for b in range(nb):
        if b + 2 < nb:
            hint(fd, batches[b + 2])
        np.array(a[batches[b]])
    rate = nb * 256 / (time.perf_counter() - t)
    os.close(fd)
    del a
    return {"hint_rows": rate}


RA = tuple(f"ra_{w}" for w in WINDOWS)
PUSH = ("push_on", "push_off")
HINT = tuple(f"hint_{t}" for t in THREADS)

EXPERIMENT = Experiment(
    name="levers",
    doc=__doc__,
    settings=[Setting("side", 224, "row side", quick=64),
              Setting("mb", 2048, "MB of uint8 rows", quick=4),
              Setting("seq_mb", 2048, "MB of float32 a sequential pass reads", quick=4),
              Setting("batches", 8, "shuffled batches of 256 rows", quick=2)],
    data=make,
    peers=[Peer(p, p, setup(p), teardown) for p in RA + PUSH + HINT],
    phases=[Phase("shuffled", shuffled, peers=RA), Phase("seq", sequential, peers=RA + PUSH),
            Phase("paced", paced, peers=PUSH), Phase("hinted", hinted, peers=HINT)],
    metrics=[Metric("shuf_rows", "rows/s", "cold shuffled batches"),
             Metric("amp", "x", "bytes decoded / bytes asked", higher_is_better=False),
             Metric("seq_gbs", "GB/s", "cold sequential pass"),
             Metric("paced_gbs", "GB/s", "cold sequential, paced like training"),
             Metric("hint_rows", "rows/s", "cold shuffled, hinted 2 batches ahead")],
    targets=[Target("own readahead, paced", "paced_gbs", "push_on", "push_off", None),
             Target("own readahead, back to back", "seq_gbs", "push_on", "push_off", None)],
    alternate=False,
)
