"""Arrow token windows (a Hugging Face cache) against a raw .bin of the same tokens.

int32 token ids written twice: as a Hugging Face datasets cache writes
them (the Arrow IPC stream form, input_ids list<int32>, rows of 1 to 400
tokens, batches of 1,000 rows: one values buffer per batch; pyarrow from
the project venv) and as one headerless int32 .bin. Both served as
(n, 1025) int64 windows at stride 1024 (checked equal before the rounds):
  arrow   cache.arrow, input_ids: one run per record batch
  raw     tokens.bin, source_dtype int32, source_shape -1
Each cold: a sequential pass of the windows (GB/s of int64, 256 windows
a read) and random sorted batches of 64 windows (windows/s)."""
import os
import subprocess
import time
import types

import numpy as np

from bench.harness import ROOT, Experiment, Metric, Peer, Phase, Setting, Target
from bench.mounts import dsview_peer

WIN, STRIDE = 1025, 1024

WRITER = r'''
import sys
import numpy as np
import pyarrow as pa
path, raw, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
rng = np.random.default_rng(0)
schema = pa.schema([("input_ids", pa.list_(pa.int32()))])
done = 0
with pa.OSFile(path, "wb") as f, open(raw, "wb") as r:
    with pa.ipc.new_stream(f, schema) as w:
        while done < n:
            lens = rng.integers(1, 401, 1000)
            lens[np.cumsum(lens) > n - done] = 0
            if lens.sum() == 0:
                lens[0] = n - done
            vals = rng.integers(0, 50257, int(lens.sum())).astype(np.int32)
            offs = np.concatenate([[0], np.cumsum(lens)]).astype(np.int32)
            arr = pa.ListArray.from_arrays(pa.array(offs), pa.array(vals))
            w.write_batch(pa.record_batch([arr], schema=schema))
            r.write(vals.tobytes())
            done += len(vals)
'''


def make(run, point):
    n = run.s.mb * 1000 * 1000 // 4
    subprocess.run([os.path.join(ROOT, run.s.venv_py), "-c", WRITER, run.path("cache.arrow"), run.path("tokens.bin"),
                    str(n)], check=True)
    common = f"window = {WIN}\nstride = {STRIDE}\ndtype = int64\n"
    with open(run.path("arrow.ini"), "w") as f:
        f.write(f"[v]\nsource = {run.path('cache.arrow')}\n{common}")
    with open(run.path("raw.ini"), "w") as f:
        f.write(f"[v]\nsource = {run.path('tokens.bin')}\nsource_dtype = int32\n"
                f"source_shape = -1\n{common}")
    return types.SimpleNamespace(arrow=run.path("arrow.ini"), raw=run.path("raw.ini"),
                                 info={"tokens": n, "mb": run.s.mb,
                                       "windows": (n - WIN) // STRIDE + 1})


def check_same(run, data, peers):
    """Both views hold the same windows (three of them), so the race is fair."""
    got = set()
    for peer in peers:
        m = run.mounts.dsview(getattr(data, peer))
        a = np.load(m.path("v.npy"), mmap_mode="r")
        got.add((a.shape, np.array(a[[0, a.shape[0] // 2, -1]]).tobytes()))
        del a
        run.mounts.close(m)
    if len(got) > 1:
        raise SystemExit("tokens: arrow and raw views differ: not the same tokens")


def seq(run, data, peer, m, rnd):
    a = np.load(m.path("v.npy"), mmap_mode="r")
    t = time.perf_counter()
    n = 0
    for i in range(0, a.shape[0], 256):
        n += np.array(a[i:i + 256]).nbytes
    del a
    return {"seq_gbs": n / (time.perf_counter() - t) / 1e9}


def random_windows(run, data, peer, m, rnd):
    a = np.load(m.path("v.npy"), mmap_mode="r")
    rng = np.random.default_rng(rnd)
    t = time.perf_counter()
    for _ in range(run.s.batches):
        idx = np.sort(rng.integers(0, a.shape[0], run.s.batch))
        np.asarray(a[idx])
    rate = run.s.batches * run.s.batch / (time.perf_counter() - t)
    del a
    return {"windows_s": rate}


EXPERIMENT = Experiment(
    name="tokens",
    doc=__doc__,
    settings=[Setting("mb", 256, "MB of int32 token ids", quick=4),
              Setting("batches", 200, "random batches", quick=4),
              Setting("batch", 64, "windows a batch"),
              Setting("venv_py", "build/venv/bin/python", "the project venv's Python (pyarrow)")],
    data=make,
    check=check_same,
    peers=[Peer("arrow", "the Arrow cache through dsview", *dsview_peer("arrow")),
           Peer("raw", "the raw int32 .bin through dsview", *dsview_peer("raw"))],
    phases=[Phase("seq", seq), Phase("random", random_windows)],
    metrics=[Metric("seq_gbs", "GB/s", "cold sequential, int64 out"),
             Metric("windows_s", "windows/s", "cold random sorted batches")],
    targets=[Target("sequential", "seq_gbs", "arrow", "raw", 0.9),
             Target("random windows", "windows_s", "arrow", "raw", 0.9)],
)
