"""make bench-scale: a view of many small files, at 10^3, 10^4 and 10^5
sources (.npy, 4 x 8 float32 each) and 10^3 and 10^4 HDF5 files (one 4 x 8
float32 dataset each): the mount's time from a cold page cache and from
a warm one, the daemon's RSS and descriptors, its cost per source, and
the first shuffled batch (BATCH rows at random through the view's
memmap, checked). The peer, measured in the same run: numpy opening
every file (np.load with mmap_mode, h5py.File and the dataset's shape),
what a Python dataset does before its first item, cold and warm. Then
the index cache (--index-cache): a mount that makes the index file, and
remounts from it with the page cache dropped and warm (their headers
not read: the daemon's source_header_opens is 0), with their first
shuffled batch (the files are opened then).

Environment: SCALE_COUNTS (npy counts, default 1000,10000,100000),
SCALE_H5_COUNTS (default 1000,10000), BENCH_DIR (where the files are
written, default /var/tmp; kept between runs in dsview-scale-files), BENCH_JSON
(a file for the figures), BENCH_PREFAULT_GB (see benchlib, default 0.5)."""
import json
import os
import shutil
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402

DSVIEW = os.environ.get("DSVIEW", "build/dsview")
COUNTS = [int(x) for x in os.environ.get("SCALE_COUNTS", "1000,10000,100000").split(",") if x]
H5_COUNTS = [int(x) for x in os.environ.get("SCALE_H5_COUNTS", "1000,10000").split(",") if x]
ROWS, COLS = 4, 8
benchlib.PREFAULT_GB = float(os.environ.get("BENCH_PREFAULT_GB", "0.5"))


def value(i, kind):
    return (np.arange(ROWS * COLS, dtype=np.float32).reshape(ROWS, COLS) + i +
            (0.5 if kind == "h5" else 0)).astype(np.float32)


def files(base, kind, n):
    """n files of kind in base/kind-n (kept for the next run); their paths."""
    d = os.path.join(base, f"{kind}-{n}")
    ext = "npy" if kind == "npy" else "h5"
    paths = [os.path.join(d, f"rec{i:06d}.{ext}") for i in range(n)]
    if os.path.exists(os.path.join(d, ".done")):
        return d, paths
    os.makedirs(d, exist_ok=True)
    if kind == "h5":
        import h5py
    for i, p in enumerate(paths):
        if kind == "npy":
            np.save(p, value(i, kind))
        else:
            with h5py.File(p, "w") as f:
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


def mounted(ini, mnt, log, n, kind, opts=()):
    """Mounts ini (with opts); the mount's seconds, the daemon's RSS (kB) and
    descriptors, the source descriptors it holds and its budget, the headers
    it read, and the first shuffled batch's seconds (checked); unmounts."""
    t = time.perf_counter()
    subprocess.run([DSVIEW, "mount", "--log", log, *opts, ini, mnt], check=True)
    secs = time.perf_counter() - t
    a = None
    try:
        with open(os.path.join(mnt, ".stats.json")) as f:
            st = json.load(f)
        pid = st["pid"]
        headers = st["source_header_opens"]
        a = np.load(os.path.join(mnt, "v.npy"), mmap_mode="r")
        rows = np.sort(np.random.default_rng(0).choice(n * ROWS, min(benchlib.BATCH, n * ROWS),
                                                       replace=False))
        t = time.perf_counter()
        batch = np.stack([a[r] for r in rows])
        first = time.perf_counter() - t
        want = np.stack([value(r // ROWS, kind)[r % ROWS] for r in rows])
        assert np.array_equal(batch, want), "the batch is wrong"
        rss = benchlib.proc_kb(pid, "VmRSS")
        fds = len(os.listdir(f"/proc/{pid}/fd"))
        with open(os.path.join(mnt, ".stats.json")) as f:
            st = json.load(f)
        return dict(mount_s=secs, rss_kb=rss, fds=fds, source_fds=st["source_fds"],
                    budget=st["source_fd_budget"], first_batch_s=first, headers=headers)
    finally:
        del a
        subprocess.run([DSVIEW, "umount", mnt], check=True)


def one(base, work, kind, n, empty_kb):
    d, paths = files(base, kind, n)
    ini = os.path.join(work, f"{kind}-{n}.ini")
    spec = f"{d}/rec*.npy" if kind == "npy" else f"{d}/rec*.h5:/x"
    with open(ini, "w") as f:
        f.write(f"[v]\nsource = {spec}\n")
    mnt, log = os.path.join(work, "mnt"), os.path.join(work, "log")
    os.makedirs(mnt, exist_ok=True)
    r = {"kind": kind, "n": n}
    benchlib.drop_caches()
    r["numpy_cold_s"] = numpy_opens(kind, paths)
    benchlib.drop_caches()
    cold = mounted(ini, mnt, log, n, kind)
    r.update({k + "_cold" if k.endswith("_s") else k: v for k, v in cold.items()})
    r["numpy_warm_s"] = numpy_opens(kind, paths)
    warm = mounted(ini, mnt, log, n, kind)
    r["mount_s_warm"], r["first_batch_s_warm"] = warm["mount_s"], warm["first_batch_s"]
    r["bytes_per_source"] = (r["rss_kb"] - empty_kb) * 1024 / n
    # the index cache: made by one mount, then used cold and warm
    idx = os.path.join(work, "index")
    shutil.rmtree(idx, ignore_errors=True)
    opts = ("--index-cache", idx)
    made = mounted(ini, mnt, log, n, kind, opts)
    r["index_make_s"] = made["mount_s"]
    r["index_bytes"] = sum(os.path.getsize(os.path.join(idx, f)) for f in os.listdir(idx))
    benchlib.drop_caches()
    cold = mounted(ini, mnt, log, n, kind, opts)
    warm = mounted(ini, mnt, log, n, kind, opts)
    r["index_cold_s"], r["index_warm_s"] = cold["mount_s"], warm["mount_s"]
    r["index_headers"] = cold["headers"] + warm["headers"]
    r["index_rss_kb"] = cold["rss_kb"]
    r["index_first_batch_s_cold"] = cold["first_batch_s"]
    r["index_first_batch_s_warm"] = warm["first_batch_s"]
    print(f"{kind:4} {n:>7} {r['mount_s_cold']:8.2f} {r['numpy_cold_s']:8.2f} "
          f"{r['mount_s_warm']:8.2f} {r['numpy_warm_s']:8.2f} {r['rss_kb'] / 1024:8.1f} "
          f"{r['bytes_per_source']:9.0f} {r['fds']:6} {r['budget']:6} "
          f"{r['first_batch_s_cold'] * 1e3:8.1f} | {r['index_make_s']:8.2f} "
          f"{r['index_cold_s']:8.2f} {r['index_warm_s']:8.2f} {r['index_bytes'] / 1e6:8.2f} "
          f"{r['index_headers']:7} {r['index_first_batch_s_cold'] * 1e3:8.1f}", flush=True)
    return r


def main():
    t0 = time.perf_counter()
    base = os.path.join(os.environ.get("BENCH_DIR", "/var/tmp"), "dsview-scale-files")
    work = benchlib.work_dir("scale")
    results = []
    try:
        # the daemon of one small source: what the per-source cost is counted above
        d, _ = files(base, "npy", 1)
        ini = os.path.join(work, "one.ini")
        with open(ini, "w") as f:
            f.write(f"[v]\nsource = {d}/rec*.npy\n")
        os.makedirs(os.path.join(work, "mnt"), exist_ok=True)
        empty_kb = mounted(ini, os.path.join(work, "mnt"), os.path.join(work, "log"), 1,
                           "npy")["rss_kb"]
        print(f"a daemon of one source: {empty_kb / 1024:.1f} MB\n")
        print(f"{'kind':4} {'sources':>7} {'cold s':>8} {'np cold':>8} {'warm s':>8} "
              f"{'np warm':>8} {'RSS MB':>8} {'B/source':>9} {'fds':>6} {'budget':>6} "
              f"{'batch ms':>8} | {'ix make':>8} {'ix cold':>8} {'ix warm':>8} {'ix MB':>8} "
              f"{'headers':>7} {'batch ms':>8}")
        for n in COUNTS:
            results.append(one(base, work, "npy", n, empty_kb))
        for n in H5_COUNTS:
            results.append(one(base, work, "h5", n, empty_kb))
    finally:
        benchlib.remove_work(work, os.path.join(work, "mnt"))
    print()
    for r in results:
        print(f"{r['kind']} {r['n']}: mount cold {r['mount_s_cold'] / r['numpy_cold_s']:.2f}x "
              f"numpy's opens, warm {r['mount_s_warm'] / r['numpy_warm_s']:.2f}x; with the "
              f"index cold {r['index_cold_s'] / r['mount_s_cold']:.2f}x the mount without, "
              f"warm {r['index_warm_s'] / r['mount_s_warm']:.2f}x")
    big = [r for r in results if r["kind"] == "npy" and r["n"] >= 100000]
    for r in big:
        benchlib.target(f"npy {r['n']}: cold mount", r["mount_s_cold"], "<=", 15, " s")
        benchlib.target(f"npy {r['n']}: mount with the index (cold)", r["index_cold_s"], "<=", 2,
                        " s")
        benchlib.target(f"npy {r['n']}: daemon RSS", r["rss_kb"] / 1024, "<=", 300, " MB")
        benchlib.target(f"npy {r['n']}: daemon memory per source", r["bytes_per_source"], "<=",
                        1024, " B")
    for r in results:
        if r["kind"] == "h5" and r["n"] >= 10000:
            benchlib.target(f"h5 {r['n']}: cold mount", r["mount_s_cold"], "<=", 60, " s")
    npy = [r for r in results if r["kind"] == "npy"]
    if len(npy) > 1:
        per = [r["mount_s_cold"] / r["n"] * 1e6 for r in npy]
        print("cold mount per source (us): " + ", ".join(
            f"{r['n']}: {p:.0f}" for r, p in zip(npy, per)))
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"\nmachine: {os.cpu_count()} cores, load average {load}; one round each; "
          f"cold = page cache dropped, daemon started; {time.perf_counter() - t0:.0f} s.")
    benchlib.save_json(os.environ.get("BENCH_JSON"), results)


if __name__ == "__main__":
    main()
