"""The loader's order and state: first batch, peak RSS and state_dict() of a 50 M-window view.

A stride-1 window view of a uint16 token stream (50 M tokens: 49,998,976
windows of 1,025 tokens) read in-process by dsview.torch.loader,
shuffled, in a fresh Python process: the time to the first batch, the
process's peak RSS (the order is a keyed bijection: no permutation of the
windows is held) and the cost of one state_dict() (mean of 10,000)."""
import json
import os
import subprocess
import sys
import types

import numpy as np

from bench.harness import ROOT, Experiment, Metric, Peer, Phase, Setting, Target

MEASURE = r'''
import json, resource, sys, time, timeit
sys.path.insert(0, sys.argv[2])
import dsview
import dsview.torch as dtorch
x = dsview.open(sys.argv[1], "t")
t = time.perf_counter()
loader = dtorch.loader(x, batch_size=8, seed=0)
next(iter(loader))
first = time.perf_counter() - t
cost = timeit.timeit(loader.state_dict, number=10000) / 10000
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"first_ms": first * 1e3, "rss_mb": rss, "state_us": cost * 1e6,
                  "windows": x.shape[0]}))
'''


def make(run, point):
    np.lib.format.open_memmap(run.path("tokens.npy"), "w+", np.uint16, (run.s.tokens,)).flush()
    ini = run.path("m.ini")
    with open(ini, "w") as f:
        f.write("[t]\nsource = tokens.npy\ndtype = int64\nwindow = 1025\nstride = 1\n"
                "window_axis = 0\n")
    return types.SimpleNamespace(ini=ini, info={"tokens": run.s.tokens,
                                                "windows": run.s.tokens - 1024,
                                                "mb": round(run.s.tokens * 2 / 1e6)})


def measure(run, data, peer, m, rnd):
    out = subprocess.run([sys.executable, "-c", MEASURE, data.ini, os.path.join(ROOT, "python")],
                         capture_output=True, text=True, check=True).stdout
    r = json.loads(out)
    if r.pop("windows") != data.info["windows"]:
        raise RuntimeError("the loader's view has not the windows the data makes")
    return r


EXPERIMENT = Experiment(
    name="loader_state",
    doc=__doc__,
    settings=[Setting("tokens", 50_000_000, "uint16 tokens of the stream", quick=1_000_000)],
    data=make,
    peers=[Peer("loader", "dsview.torch.loader, shuffled, in-process")],
    phases=[Phase("first", measure, cold=False)],
    metrics=[Metric("first_ms", "ms", "time to the first batch", higher_is_better=False),
             Metric("rss_mb", "MB", "peak RSS of the process", higher_is_better=False),
             Metric("state_us", "us", "one state_dict()", higher_is_better=False)],
    targets=[Target("state_dict() under 1 ms", "state_us", "loader", None, 1000.0, "<=")],
)
