"""Two dsview builds or daemon settings, A and B, on cold sequential passes of the store data.

The store experiment's data (bench/experiments/store.py: --mb MB of
uint8 stimulus rows of --side, its .npy and its LZ4, zstd and auto
stores, views npy, lz4, zstd and auto). Peer a is --a_dsview serving
view --a_view with --a_env in its daemon's environment
(VAR=VALUE;VAR=VALUE, e.g. DSVIEW_READAHEAD_KB=32768), peer b the same
with --b_*; each pass cold (page cache dropped, a fresh daemon), a
np.memmap of the view's .dat read in slices of 32 MiB, as store's seq
phase does. Per pass: GB/s, the daemon's CPU seconds, and from its
/.stats.json the MiB served to requests and made ahead (readahead),
the summed ms of making and of replying, cache buffer reuses and MiB
held. The target reports b / a GB/s: compare builds or knobs only
side by side in one run."""
import os

import numpy as np

from bench import benchlib as L
from bench.experiments import store as S
from bench.harness import ROOT, Experiment, Metric, Peer, Phase, Setting, Target


def env_of(text):
    """{VAR: VALUE} of 'VAR=VALUE;VAR=VALUE' ('' none); a part without '='
    is an error naming it."""
    out = {}
    for part in filter(None, text.split(";")):
        if "=" not in part:
            raise SystemExit(f"ab: environment '{part}' is not VAR=VALUE")
        k, v = part.split("=", 1)
        out[k] = v
    return out


def make(run, point):
    for p in ("a", "b"):
        view = getattr(run.s, p + "_view")
        if view not in ("npy",) + tuple(S.PACK):
            raise SystemExit(f"ab: --{p}_view '{view}' is none of npy, {', '.join(S.PACK)}")
        env_of(getattr(run.s, p + "_env"))
    return S.Dataset(run)


def binary(run, p):
    return os.path.abspath(os.path.join(ROOT, getattr(run.s, p + "_dsview")))


def peer(p):
    def setup(run, data):
        return run.mounts.dsview(data.path("b.ini"), env=env_of(getattr(run.s, p + "_env")),
                                 binary=binary(run, p))

    def teardown(run, m):
        run.mounts.close(m)

    def missing(run):
        exe = binary(run, p)
        return None if os.access(exe, os.X_OK) else f"--{p}_dsview {exe} missing"
    return Peer(p, f"--{p}_dsview serving --{p}_view with --{p}_env", setup, teardown, missing)


def measure(run, data, name, m, rnd):
    view = getattr(run.s, name + "_view")
    c0 = m.cpu()
    a = np.memmap(m.path(view + ".dat"), np.float32, "r", shape=data.shape)
    try:
        gbs = L.seq(a, max(1, S.SEQ_BYTES // (data.row * 4))) / 1e9
    finally:
        del a
    st = m.stats()
    return {"gbs": gbs, "daemon_cpu_s": m.cpu() - c0, "served_mib": st["bytes_served"] / 2**20,
            "ahead_mib": L.bytes_ahead(st) / 2**20, "make_ms": st["read_make_us_sum"] / 1000,
            "reply_ms": st["read_reply_us_sum"] / 1000, "reuses": st["cache_reuses"],
            "cache_mib": st["cache_bytes"] / 2**20}


EXPERIMENT = Experiment(
    name="ab",
    doc=__doc__,
    settings=[Setting("rounds", 5, "interleaved rounds, medians", quick=1),
              Setting("mb", 512, "MB of uint8 rows", quick=4),
              Setting("side", 64, "rows of side x side x 3 (224: 150 KB rows)", quick=16),
              Setting("batches", 16, "the store data's least rows, in batches of 256", quick=1),
              Setting("sq_zstd_level", 3, "the store data's squashfs zstd level"),
              Setting("a_dsview", "build/dsview", "peer a's dsview"),
              Setting("a_view", "lz4", "peer a's view: npy, lz4, zstd or auto"),
              Setting("a_env", "", "peer a's daemon environment, VAR=VALUE;VAR=VALUE"),
              Setting("b_dsview", "build/dsview", "peer b's dsview"),
              Setting("b_view", "npy", "peer b's view"),
              Setting("b_env", "", "peer b's daemon environment")],
    data=make,
    peers=[peer("a"), peer("b")],
    phases=[Phase("seq", measure)],
    metrics=[Metric("gbs", "GB/s", "cold sequential, float32"),
             Metric("daemon_cpu_s", "s", "the daemon's CPU seconds in the pass", False),
             Metric("served_mib", "MiB", "bytes served to read requests"),
             Metric("ahead_mib", "MiB", "bytes made ahead (readahead)"),
             Metric("make_ms", "ms", "requests' make time, summed", False),
             Metric("reply_ms", "ms", "requests' reply time, summed", False),
             Metric("reuses", "", "cache buffer reuses"),
             Metric("cache_mib", "MiB", "cache bytes held at the end")],
    targets=[Target("b vs a, cold sequential", "gbs", "b", "a", None)],
)
