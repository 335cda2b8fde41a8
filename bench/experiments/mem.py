"""One cold pass with and without a memory limit, and what the daemon made for it.

64x64x3 uint8 rows (benchlib's make_images), a float32 view 4x that,
read once a round by each peer:
  unlimited  daemon and reader outside any memory cgroup
  limited    both in a memory cgroup of --limit_mb MiB (tests/e2e/cgroup.py;
             with --outside 1 the daemon stays outside, the readers in)
  old_unlimited, old_limited   the same with --dsview_old, where given
A sequential memmap pass (GB/s of float32, 32 MiB slices), or with
--workers N sorted batches of 256 rows of one permutation by N forked
workers (rows/s; --hints 1: each hints its next batch first). From the
daemon's counters: the bytes served to the reader's requests, made ahead
(readahead and hints), made past what was asked (served + ahead - the
bytes asked: made twice or for nothing), dropped behind, shed."""
import json
import os
import subprocess
import sys
import tempfile
import time
import types

import numpy as np

from bench import benchlib as L
from bench.harness import ROOT, Experiment, Metric, Peer, Phase, Setting, Target

sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
ROW = 64 * 64 * 3


def make(run, point):
    rows = (run.s.mb << 20) // ROW
    L.make_images(run.path("u8.npy"), rows, 64, 64)
    view = rows * ROW * 4
    asked = run.s.batches * run.s.workers * L.BATCH * ROW * 4 if run.s.workers else view
    return types.SimpleNamespace(src=run.path("u8.npy"), rows=rows, asked=asked,
                                 info={"rows": rows, "mb": round(rows * ROW / 1e6),
                                       "view_gb": round(view / 1e9, 2)})


def seq_pass(arr):
    step = (32 << 20) // (ROW * 4)
    t0 = time.perf_counter()
    for i in range(0, arr.shape[0], step):
        np.array(arr[i:i + step])
    return arr.nbytes / (time.perf_counter() - t0) / 1e9


def shuffled_pass(run, arr):
    import dsview
    order = np.random.default_rng(7).permutation(arr.shape[0])
    pids, t0 = [], time.perf_counter()
    workers, batches = run.s.workers, run.s.batches
    for w in range(workers):
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                mine = [np.sort(order[b * L.BATCH:(b + 1) * L.BATCH])
                        for b in range(w, batches * workers, workers)]
                for k, rows in enumerate(mine):
                    if run.s.hints:
                        for ahead in mine[k if k == 0 else k + 1:k + 2]:
                            dsview.hint(arr.filename, ahead)
                    np.array(arr[rows])
                code = 0
            finally:
                os._exit(code)
        pids.append(pid)
    if any(os.waitpid(pid, 0)[1] for pid in pids):
        raise RuntimeError("a shuffled reader failed")
    return batches * workers * L.BATCH / (time.perf_counter() - t0)


def child(run, data, binary, group, out):
    """In a forked child: join group (if any), mount, one pass, umount;
    writes the figures as JSON to the fd out."""
    if group and not run.s.outside:
        group.add()
    mp = tempfile.mkdtemp(dir=run.work)
    subprocess.run([binary, "mount", "--log", run.path("log"), data.src, mp], check=True)
    if group and run.s.outside:
        group.add()
    arr = np.memmap(os.path.join(mp, "u8.dat"), np.float32, "r", shape=(data.rows, ROW))
    rate = shuffled_pass(run, arr) if run.s.workers else seq_pass(arr)
    del arr
    with open(os.path.join(mp, ".stats.json")) as f:
        st = json.load(f)
    subprocess.run([binary, "umount", mp], check=True)
    ahead = L.bytes_ahead(st)
    os.write(out, json.dumps({
        "rows_s" if run.s.workers else "gbs": rate, "served_gb": st["bytes_served"] / 1e9,
        "ahead_gb": ahead / 1e9, "past_asked_gb": (st["bytes_served"] + ahead - data.asked) / 1e9,
        "dropped_gb": st.get("bytes_dropped", 0) / 1e9,
        "shed_gb": st.get("bytes_shed", 0) / 1e9}).encode())


def measure(run, data, peer, m, rnd):
    import cgroup
    binary = os.path.join(ROOT, run.s.dsview_old) if peer.startswith("old_") else run.dsview
    limited = peer in ("limited", "old_limited")
    group = cgroup.Group("dsv-mempass", mem=run.s.limit_mb << 20) if limited else None
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        code = 1
        try:
            child(run, data, binary, group, w)
            code = 0
        finally:
            os._exit(code)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        out = f.read()
    _, status = os.waitpid(pid, 0)
    if group:
        group.remove()
    if status or not out:
        raise RuntimeError(f"mem: the {peer} pass failed")
    return json.loads(out)


def old_missing(run):
    return None if run.s.dsview_old else "no --dsview_old given"


EXPERIMENT = Experiment(
    name="mem",
    doc=__doc__,
    settings=[Setting("mb", 1024, "MiB of uint8 rows", quick=4),
              Setting("limit_mb", 1024, "the memory cgroup's limit, MiB", quick=64),
              Setting("workers", 0, "forked shuffled readers (0: the sequential pass)"),
              Setting("batches", 8, "shuffled batches a worker"),
              Setting("hints", 0, "1: each worker hints its next batch"),
              Setting("outside", 0, "1: the daemon outside the group, the readers in"),
              Setting("dsview_old", "", "another build's dsview for the old_ peers")],
    data=make,
    peers=[Peer("unlimited", "no memory limit"),
           Peer("limited", "daemon and readers in the memory cgroup"),
           Peer("old_unlimited", "--dsview_old, no limit", missing=old_missing),
           Peer("old_limited", "--dsview_old, in the cgroup", missing=old_missing)],
    phases=[Phase("pass", measure)],
    metrics=[Metric("gbs", "GB/s", "cold sequential pass"),
             Metric("rows_s", "rows/s", "cold shuffled batches"),
             Metric("served_gb", "GB", "bytes served to requests", higher_is_better=False),
             Metric("ahead_gb", "GB", "bytes made ahead", higher_is_better=False),
             Metric("past_asked_gb", "GB", "made past what was asked", higher_is_better=False),
             Metric("dropped_gb", "GB", "dropped behind the pass")],
    targets=[Target("limited vs unlimited, sequential", "gbs", "limited", "unlimited", None),
             Target("limited vs unlimited, shuffled", "rows_s", "limited", "unlimited", None)],
)
