"""Many small files in one view: mount time, daemon RSS and descriptors against numpy's opens.

Per point of the sweep (--sets, KIND:N: N .npy sources, N HDF5 files
of one contiguous dataset each (h5), or of one chunked dataset, gzip
and shuffle, a chunk a row (h5c: the index keeps its chunk map), every
source 4 x 8 float32 of known values, kept between runs under --files),
a view of all of them (a glob) and:
  numpy   numpy opening every file and learning its shape (np.load with
          mmap_mode, h5py.File and the dataset's shape): what a Python
          dataset does before its first item
  dsview  the mount: its seconds, the daemon's RSS and descriptors, the
          source descriptors it holds and its budget, bytes of RSS per
          source over a daemon of one source, and the first shuffled
          batch (256 rows at random through the view's memmap, checked
          against the values the files were written with)
  index   the mount with --index-cache: one mount makes the index (its
          seconds and bytes), then the mount from it (no header read:
          headers counts the daemon's source_header_opens)
Phases: cold (page cache dropped; the index peer makes its index, then
drops the page cache again before its cold mount) and warm (again, the
cache as the cold phase left it). open_*_s is the mount's seconds or
numpy's. Targets: at npy:100000 a cold mount <= 15 s, from the index
<= 2 s, daemon RSS <= 300 MB and <= 1024 B a source; at h5:10000 a
cold mount <= 60 s; ratios dsview / numpy and index / dsview reported."""
import json
import os
import shutil
import subprocess
import time
import types

import numpy as np

from bench import benchlib as L
from bench.harness import Experiment, Metric, Peer, Phase, Setting, Target

ROWS, COLS = 4, 8


def value(i, kind):
    return (np.arange(ROWS * COLS, dtype=np.float32).reshape(ROWS, COLS) + i +
            (0.5 if kind != "npy" else 0)).astype(np.float32)


def ext(kind):
    return "npy" if kind == "npy" else "h5"


def files(base, kind, n):
    """n files of kind in base/kind-n (kept for the next run); their paths."""
    d = os.path.join(base, f"{kind}-{n}")
    paths = [os.path.join(d, f"rec{i:06d}.{ext(kind)}") for i in range(n)]
    if os.path.exists(os.path.join(d, ".done")):
        return d, paths
    os.makedirs(d, exist_ok=True)
    if kind != "npy":
        import h5py
    for i, p in enumerate(paths):
        if kind == "npy":
            np.save(p, value(i, kind))
        else:
            with h5py.File(p, "w") as f:
                if kind == "h5c":
                    f.create_dataset("x", data=value(i, kind), chunks=(1, COLS),
                                     compression="gzip", shuffle=True)
                else:
                    f["x"] = value(i, kind)
    open(os.path.join(d, ".done"), "w").close()
    return d, paths


def numpy_opens(kind, paths):
    """Seconds numpy takes to open every file and learn its shape."""
    t = time.perf_counter()
    if kind == "npy":
        for p in paths:
            np.load(p, mmap_mode="r").shape
    else:
        import h5py
        for p in paths:
            with h5py.File(p, "r") as f:
                f["x"].shape
    return time.perf_counter() - t


def first_batch(mnt, n, kind):
    """Seconds of the first shuffled batch through the view, checked."""
    a = np.load(os.path.join(mnt, "v.npy"), mmap_mode="r")
    rows = np.sort(np.random.default_rng(0).choice(n * ROWS, min(L.BATCH, n * ROWS),
                                                   replace=False))
    t = time.perf_counter()
    batch = np.stack([a[r] for r in rows])
    secs = time.perf_counter() - t
    del a
    want = np.stack([value(r // ROWS, kind)[r % ROWS] for r in rows])
    if not np.array_equal(batch, want):
        raise RuntimeError(f"{kind}:{n}: the first batch is not the files' values")
    return secs


def mounted(run, ini, n, kind, opts=()):
    """Mounts ini (with opts): seconds, the daemon's RSS (kB) and descriptors,
    the source descriptors it holds and its budget, the headers it read
    and the first batch's seconds; unmounts."""
    mnt = run.path("mnt")
    os.makedirs(mnt, exist_ok=True)
    t = time.perf_counter()
    subprocess.run([run.dsview, "mount", "--log", run.path("log"), *opts, ini, mnt], check=True)
    secs = time.perf_counter() - t
    try:
        with open(os.path.join(mnt, ".stats.json")) as f:
            st = json.load(f)
        pid, headers = st["pid"], st["source_header_opens"]
        first = first_batch(mnt, n, kind)
        rss, fds = L.proc_kb(pid, "VmRSS"), len(os.listdir(f"/proc/{pid}/fd"))
        with open(os.path.join(mnt, ".stats.json")) as f:
            st = json.load(f)
        return dict(mount_s=secs, rss_kb=rss, fds=fds, source_fds=st["source_fds"],
                    budget=st["source_fd_budget"], first_s=first, headers=headers)
    finally:
        subprocess.run([run.dsview, "umount", mnt], check=True)


def base_dir(run):
    return run.s.files or run.path("files")


def empty_kb(run):
    """The RSS of a daemon of one small source (once a run)."""
    if not hasattr(run, "scale_empty_kb"):
        d, _ = files(base_dir(run), "npy", 1)
        ini = run.path("one.ini")
        with open(ini, "w") as f:
            f.write(f"[v]\nsource = {d}/rec*.npy\n")
        run.scale_empty_kb = mounted(run, ini, 1, "npy")["rss_kb"]
    return run.scale_empty_kb


def make(run, point):
    kind, _, count = point.partition(":")
    if kind not in ("npy", "h5", "h5c") or not count.isdigit() or int(count) < 1:
        raise SystemExit(f"scale: set '{point}' is not npy:N, h5:N or h5c:N")
    n = int(count)
    d, paths = files(base_dir(run), kind, n)
    ini = run.path(f"{kind}-{n}.ini")
    with open(ini, "w") as f:
        f.write(f"[v]\nsource = {d}/rec*.{ext(kind)}{':/x' if kind != 'npy' else ''}\n")
    return types.SimpleNamespace(kind=kind, n=n, paths=paths, ini=ini, empty_kb=empty_kb(run),
                                 index=run.path("index"),
                                 info={"kind": kind, "sources": n, "mb": n * ROWS * COLS * 4 / 1e6})


def dsview_figures(data, r, when):
    out = {f"open_{when}_s": r["mount_s"], f"first_{when}_ms": r["first_s"] * 1e3}
    if when == "cold":
        out.update({"rss_mb": r["rss_kb"] / 1024, "fds": r["fds"], "source_fds": r["source_fds"],
                    "fd_budget": r["budget"],
                    "bytes_per_source": (r["rss_kb"] - data.empty_kb) * 1024 / data.n})
    return out


def index_cold(run, data):
    """Makes the index, then mounts from it with the page cache dropped."""
    shutil.rmtree(data.index, ignore_errors=True)
    opts = ("--index-cache", data.index)
    made = mounted(run, data.ini, data.n, data.kind, opts)
    size = sum(os.path.getsize(os.path.join(data.index, f)) for f in os.listdir(data.index))
    L.drop_caches()
    r = mounted(run, data.ini, data.n, data.kind, opts)
    return {"index_make_s": made["mount_s"], "index_mb": size / 1e6, "open_cold_s": r["mount_s"],
            "first_cold_ms": r["first_s"] * 1e3, "rss_mb": r["rss_kb"] / 1024,
            "headers": r["headers"]}


def measure(when):
    def m(run, data, peer, handle, rnd):
        if peer == "numpy":
            return {f"open_{when}_s": numpy_opens(data.kind, data.paths)}
        if peer == "dsview":
            return dsview_figures(data, mounted(run, data.ini, data.n, data.kind), when)
        if when == "cold":
            return index_cold(run, data)
        r = mounted(run, data.ini, data.n, data.kind, ("--index-cache", data.index))
        return {"open_warm_s": r["mount_s"], "first_warm_ms": r["first_s"] * 1e3,
                "headers_warm": r["headers"]}
    return m


def h5_missing(run):
    try:
        import h5py  # noqa: F401
    except ImportError:
        return "no h5py in this Python (Debian's python3-h5py)"
    return None


BIG, H5_BIG = "npy:100000", "h5:10000"

EXPERIMENT = Experiment(
    name="scale",
    doc=__doc__,
    settings=[Setting("rounds", 1, "rounds"),
              Setting("sets", ["npy:1000", "npy:10000", BIG, "h5:1000", H5_BIG],
                      "KIND:N, N sources of npy, h5 or h5c (the sweep)",
                      quick=["npy:500", "h5:100", "h5c:100"]),
              Setting("files", "/var/tmp/dsview-scale-files",
                      "where the sources are kept between runs (empty: the run's work "
                      "directory, removed after)", quick="")],
    sweep="sets",
    data=make,
    peers=[Peer("numpy", "numpy's opens", missing=h5_missing), Peer("dsview", "the mount"),
           Peer("index", "the mount with --index-cache")],
    phases=[Phase("cold", measure("cold")), Phase("warm", measure("warm"), cold=False)],
    metrics=[Metric("open_cold_s", "s", "mount or numpy's opens, page cache dropped", False),
             Metric("open_warm_s", "s", "the same, again", False),
             Metric("first_cold_ms", "ms", "the first shuffled batch", False),
             Metric("first_warm_ms", "ms", "the same, again", False),
             Metric("rss_mb", "MB", "daemon RSS after the first batch", False),
             Metric("bytes_per_source", "B", "RSS over a daemon of one source, a source", False),
             Metric("fds", "", "daemon descriptors", False),
             Metric("source_fds", "", "source descriptors held", False),
             Metric("fd_budget", "", "the daemon's source descriptor budget"),
             Metric("index_make_s", "s", "the mount that makes the index", False),
             Metric("index_mb", "MB", "the index's bytes", False),
             Metric("headers", "", "source headers read by the cold mount", False)],
    targets=[Target("dsview cold mount vs numpy's opens", "open_cold_s", "dsview", "numpy", None),
             Target("dsview warm mount vs numpy's opens", "open_warm_s", "dsview", "numpy", None),
             Target("index cold mount vs without", "open_cold_s", "index", "dsview", None),
             Target("cold mount, s", "open_cold_s", "dsview", None, 15, "<=", at=BIG),
             Target("cold mount from the index, s", "open_cold_s", "index", None, 2, "<=", at=BIG),
             Target("daemon RSS, MB", "rss_mb", "dsview", None, 300, "<=", at=BIG),
             Target("daemon bytes a source", "bytes_per_source", "dsview", None, 1024, "<=",
                    at=BIG),
             Target("the index's mount reads no header", "headers", "index", None, 0, "<="),
             Target("HDF5 cold mount, s", "open_cold_s", "dsview", None, 60, "<=", at=H5_BIG)],
)
