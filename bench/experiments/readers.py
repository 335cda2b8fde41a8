"""Many readers at once: shuffled rows/s and the daemon's peak RSS against its cache budget.

--mb MB of uint8 HWC rows of --side (benchlib's make_images; 224: the
150 KB rows of the former bench.py), served as normalised float32 by
dsview over the .npy (dsv_npy) and over its `dsview pack` LZ4 store
(dsv_lz4). Each round, cold (page cache dropped, a fresh daemon):
--readers forked processes read sorted shuffled batches of 256 rows at
once (--batches each or 15 s, reader k seeded 100 + k) from a np.memmap
of the view, while the daemon's VmRSS is sampled every 50 ms. Reported:
the rows/s of all of them together, the daemon's peak RSS (the samples'
and its VmHWM's greater), its cache budget (/.stats.json) and the peak
over the budget + 64 MiB (rss_to_limit); the target holds that to <= 1."""
import os
import subprocess
import time
import types

import numpy as np

from bench import benchlib as L
from bench.harness import Experiment, Metric, Peer, Phase, Setting, Target
from bench.mounts import dsview_peer

VIEWS = {"dsv_npy": "npy", "dsv_lz4": "lz4"}
SLACK_MIB = 64


def make(run, point):
    side = run.s.side
    row = side * side * 3
    n = max(L.BATCH * run.s.batches * 2, run.s.mb * 1000 * 1000 // row)
    u8 = run.path("u8.npy")
    L.make_images(u8, n, side, side)
    subprocess.run([run.dsview, "pack", "--dataset", "x", u8, run.path("u8.h5")], check=True,
                   stdout=subprocess.DEVNULL)
    ini = run.path("b.ini")
    with open(ini, "w") as f:
        for name, src in (("npy", "u8.npy"), ("lz4", "u8.h5:/x")):
            f.write(f"[{name}]\nsource = {src}\nscale = {1/255!r}\n"
                    f"mean = 0.485 0.456 0.406\nstd = 0.229 0.224 0.225\n\n")
    return types.SimpleNamespace(ini=ini, shape=(n, side, side, 3),
                                 info={"side": side, "rows": n, "mb": round(n * row / 1e6),
                                       "readers": run.s.readers})


def reader(path, shape, batches, seed, wfd):
    """A forked reader's pass (it stops after 15 s, as benchlib's shuffled
    passes do): its rows on wfd; never returns."""
    code = 1
    try:
        a = np.memmap(path, np.float32, "r", shape=shape)
        rows = L.shuffled(lambda idx: np.array(a[idx]), shape[0], batches, seed=seed)[1]
        os.write(wfd, f"{rows}\n".encode())
        code = 0
    finally:
        os._exit(code)


def measure(run, data, peer, m, rnd):
    path = m.path(VIEWS[peer] + ".dat")
    t = time.perf_counter()
    pids = []
    rfd, wfd = os.pipe()
    for k in range(run.s.readers):
        pid = os.fork()
        if pid == 0:
            os.close(rfd)
            reader(path, data.shape, run.s.batches, 100 + k, wfd)
        pids.append(pid)
    os.close(wfd)
    peak, failed = 0, 0
    while pids:
        peak = max(peak, m.rss_kb("VmRSS"))
        for p in list(pids):
            done, status = os.waitpid(p, os.WNOHANG)
            if done:
                pids.remove(p)
                failed += status != 0
        time.sleep(0.05)
    dt = time.perf_counter() - t
    with os.fdopen(rfd) as f:
        rows = sum(int(line) for line in f)
    if failed:
        raise RuntimeError(f"{peer}: {failed} of {run.s.readers} readers failed")
    peak = max(peak, m.rss_kb("VmHWM")) / 1024
    budget = m.stats()["cache_budget"] / 2**20
    return {"rows_s": rows / dt, "peak_rss_mib": peak, "budget_mib": budget,
            "rss_to_limit": peak / (budget + SLACK_MIB)}


def peer(name):
    setup, teardown = dsview_peer("ini")
    return Peer(name, f"dsview's {VIEWS[name]} view", setup, teardown)


EXPERIMENT = Experiment(
    name="readers",
    doc=__doc__,
    settings=[Setting("mb", 1024, "MB of uint8 rows", quick=4),
              Setting("side", 224, "rows of side x side x 3", quick=16),
              Setting("readers", 8, "forked readers at once", quick=2),
              Setting("batches", 3, "batches of 256 rows each reader reads", quick=1)],
    data=make,
    peers=[peer(p) for p in VIEWS],
    phases=[Phase("readers", measure)],
    metrics=[Metric("rows_s", "rows/s", "all readers together"),
             Metric("peak_rss_mib", "MiB", "the daemon's peak RSS", False),
             Metric("budget_mib", "MiB", "the daemon's cache budget", False),
             Metric("rss_to_limit", "x", "peak RSS / (cache budget + 64 MiB)", False)],
    targets=[Target(f"{p} peak RSS / (cache budget + 64 MiB)", "rss_to_limit", p, None, 1.0,
                    "<=") for p in VIEWS]
    + [Target("dsv_lz4 vs dsv_npy, readers at once", "rows_s", "dsv_lz4", "dsv_npy", None)],
)
