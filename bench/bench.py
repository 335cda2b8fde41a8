#!/usr/bin/python3
"""Read-path benchmark (make bench). One run, one table.

Peers, all producing the same normalised float32 array
((x/255 - mean[c]) / std[c] of uint8 HWC rows):
  f32_mm    the materialised float32 .npy, np.load(mmap_mode="r")
  null      a no-op FUSE filesystem (bench/nullfs.c) serving the same
            size from one buffer, mounted like dsview: the FUSE ceiling
  dsv_npy   dsview view over the uint8 .npy, np.memmap of the .dat
  dsv_lz4   dsview view over the `dsview pack` store of the same data
  u8_numpy  uint8 np.memmap + numpy normalisation per batch (the Python way)
  h5_numpy  h5py uint8 chunked dataset + numpy normalisation per batch
Each: sequential pass cold (page cache dropped, daemon restarted) and warm
(a second pass once the file is wholly in the page cache: mincore-checked,
with untimed passes until it is),
and shuffled batches of 256 rows cold (BENCH_BATCHES, default 8, or 15 s;
with the default 1 GiB that is 30% of the rows); CPU
seconds per GB delivered (reader + daemon, cold sequential), the daemon's
peak RSS, bytes on disk. dsview peers also: read amplification of the
shuffled phase, and 8 forked readers of shuffled batches at once (rows/s,
daemon peak RSS against the cache budget + 64 MiB).

This machine class is noisy (other tenants share the host), so the peers
run in ROUNDS interleaved rounds (default 3) and the table shows medians;
ratios are against f32_mm and null measured in the same run. BENCH_MB
scales the uint8 dataset (default 1024: 4 GiB of float32)."""
import json
import os
import shutil
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402
from benchlib import (BATCH, BATCHES, H, MEAN, SETTLE, SHUF_SECONDS, STD, W,  # noqa: E402,F401
                      drop_caches, proc_cpu, proc_kb, seq, shuffled)

DSVIEW = os.environ.get("DSVIEW", "build/dsview")
NULLFS = os.environ.get("NULLFS", "build/bench/nullfs")
XFORM_BENCH = os.environ.get("XFORM_BENCH", "build/bench/xform_bench")
MB = int(os.environ.get("BENCH_MB", "1024"))
ROUNDS = int(os.environ.get("ROUNDS", "3"))
PAR = 8  # concurrent readers of the RSS check


def main():
    work = benchlib.work_dir("bench")
    t0 = time.perf_counter()
    mnt = os.path.join(work, "mnt")
    n = max(BATCH * 2, MB * 1000 * 1000 // (H * W * 3))
    rng = np.random.default_rng(0)
    print(f"dataset: {n} rows of {H}x{W}x3 uint8 ({n * H * W * 3 / 1e6:.0f} MB; float32 "
          f"{n * H * W * 12 / 1e6:.0f} MB) in {work}")
    x = np.lib.format.open_memmap(os.path.join(work, "u8.npy"), "w+", np.uint8, (n, H, W, 3))
    yy, xx = np.mgrid[0:H, 0:W]
    for i in range(n):
        base = (xx * 0.7 + yy * 0.4 + i) % 256
        for c in range(3):
            x[i, :, :, c] = base * (0.6 + 0.2 * c)
        x[i] += rng.integers(0, 3, (H, W, 3), dtype=np.uint8)
    x.flush()
    f32 = np.lib.format.open_memmap(os.path.join(work, "f32.npy"), "w+", np.float32, x.shape)
    for i in range(0, n, 64):
        f32[i:i + 64] = ((x[i:i + 64].astype(np.float64) / 255 - MEAN) / STD).astype(np.float32)
    f32.flush()
    del f32
    del x
    subprocess.run([DSVIEW, "pack", "--dataset", "x", os.path.join(work, "u8.npy"),
                    os.path.join(work, "u8.h5")], check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(work, "b.ini"), "w") as f:
        for name, src in (("npy", "u8.npy"), ("lz4", "u8.h5:/x")):
            f.write(f"[{name}]\nsource = {src}\nscale = {1/255!r}\nmean = 0.485 0.456 0.406\n"
                    f"std = 0.229 0.224 0.225\n\n")
    import h5py
    rows_per_chunk = max(1, (1 << 20) // (H * W * 3))
    with h5py.File(os.path.join(work, "u8_chunked.h5"), "w") as f:
        src = np.load(os.path.join(work, "u8.npy"), mmap_mode="r")
        d = f.create_dataset("x", shape=src.shape, dtype=np.uint8, chunks=(rows_per_chunk, H, W, 3))
        for i in range(0, n, 256):
            d[i:i + 256] = src[i:i + 256]
        del src
    sizes = {"f32_mm": os.path.getsize(os.path.join(work, "f32.npy")),
             "null": 0,
             "dsv_npy": os.path.getsize(os.path.join(work, "u8.npy")),
             "dsv_lz4": os.path.getsize(os.path.join(work, "u8.h5")),
             "u8_numpy": os.path.getsize(os.path.join(work, "u8.npy")),
             "h5_numpy": os.path.getsize(os.path.join(work, "u8_chunked.h5"))}
    can_drop = drop_caches()
    if not can_drop:
        print("warning: cannot drop the page cache (not root): 'cold' numbers are warm")
    f32_bytes = n * H * W * 3 * 4
    m32, s32 = MEAN.astype(np.float32), STD.astype(np.float32)
    daemon = {"pid": None, "proc": None}

    def mount(peer):
        if peer == "null":
            daemon["proc"] = benchlib.mount_null(NULLFS, f32_bytes, mnt)
            daemon["pid"] = daemon["proc"].pid
        else:
            subprocess.run([DSVIEW, "mount", "--log", os.path.join(work, "log"),
                            os.path.join(work, "b.ini"), mnt], check=True)
            daemon["pid"] = benchlib.daemon_pid(mnt)

    def umount(peer):
        hwm = proc_kb(daemon["pid"], "VmHWM")
        if peer == "null":
            daemon["proc"].terminate()
            daemon["proc"].wait()
        else:
            subprocess.run([DSVIEW, "umount", mnt], check=True)
        daemon["pid"] = None
        return hwm

    def daemon_stats():
        try:
            with open(os.path.join(mnt, ".stats.json")) as f:
                return json.load(f)
        except OSError:
            return {}

    def cpu_now():
        t = os.times()
        own = t.user + t.system
        return own, proc_cpu(daemon["pid"]) if daemon["pid"] else 0.0

    def par_readers(peer):
        """PAR forked processes read shuffled batches of the view at once;
        returns total rows/s and the daemon's peak RSS (kB) sampled meanwhile."""
        name = peer[4:] + ".dat"
        t = time.perf_counter()
        pids = []
        for k in range(PAR):
            pid = os.fork()
            if pid == 0:
                try:
                    a = np.memmap(os.path.join(mnt, name), np.float32, "r", shape=(n, H, W, 3))
                    shuffled(lambda idx: np.array(a[idx]), n, 3, seed=100 + k)
                finally:
                    os._exit(0)
            pids.append(pid)
        peak = 0
        while pids:
            peak = max(peak, proc_kb(daemon["pid"], "VmRSS"))
            pids = [p for p in pids if os.waitpid(p, os.WNOHANG)[0] == 0]
            time.sleep(0.05)
        rate = PAR * 3 * BATCH / (time.perf_counter() - t)
        return rate, max(peak, proc_kb(daemon["pid"], "VmHWM"))

    runs = {}
    batches = min(n // BATCH, BATCHES)
    peers = benchlib.chosen_peers(["f32_mm", "null", "dsv_npy", "dsv_lz4", "u8_numpy", "h5_numpy"],
                                  None, NULLFS)
    for rnd in range(ROUNDS):
        for peer in peers:
            r = {"rss": 0}
            served = peer in ("null", "dsv_npy", "dsv_lz4")
            for phase in ("cold", "warm", "shuf"):
                if phase != "warm":
                    drop_caches()
                if served and phase != "warm":
                    mount(peer)
                h5f = None
                if peer == "f32_mm":
                    arr = np.load(os.path.join(work, "f32.npy"), mmap_mode="r")
                    get = lambda idx, a=arr: np.array(a[idx])
                elif served:
                    name = "data.dat" if peer == "null" else peer[4:] + ".dat"
                    arr = np.memmap(os.path.join(mnt, name), np.float32, "r", shape=(n, H, W, 3))
                    get = lambda idx, a=arr: np.array(a[idx])
                else:
                    if peer == "u8_numpy":
                        u8 = np.load(os.path.join(work, "u8.npy"), mmap_mode="r")
                    else:
                        h5f = h5py.File(os.path.join(work, "u8_chunked.h5"), "r")
                        u8 = h5f["x"]
                    get = lambda idx, a=u8: (a[idx].astype(np.float32) / 255 - m32) / s32

                    class Norm:
                        shape = u8.shape

                        def __getitem__(self, sl, a=u8):
                            return (a[sl].astype(np.float32) / 255 - m32) / s32
                    arr = Norm()
                if phase == "warm":  # a second pass over a wholly cached file
                    path = {"f32_mm": "f32.npy", "u8_numpy": "u8.npy",
                            "h5_numpy": "u8_chunked.h5"}.get(peer)
                    path = os.path.join(work, path) if path else os.path.join(mnt, name)
                    r["cached"] = benchlib.cache_fully(path, lambda a=arr: seq(a))
                c0 = cpu_now()
                if phase == "shuf":
                    d0 = daemon_stats() if served else {}
                    r[phase], rows = shuffled(get, n, batches)
                    if served and peer != "null":
                        d1 = daemon_stats()
                        decoded = d1["bytes_decoded"] - d0["bytes_decoded"]
                        asked = rows * H * W * 3 * 4
                        r["amp"] = decoded / asked
                        handed = (d1["bytes_served"] + benchlib.bytes_ahead(d1)
                                  - d0["bytes_served"] - benchlib.bytes_ahead(d0))
                        r["amp_k"] = decoded / handed
                else:
                    r[phase] = seq(arr)
                c1 = cpu_now()
                if phase == "cold":
                    gb = f32_bytes / 1e9
                    r["cpu_py"] = (c1[0] - c0[0]) / gb
                    r["cpu_daemon"] = (c1[1] - c0[1]) / gb
                del arr, get
                if h5f is not None:
                    h5f.close()
                if served and phase == "shuf" and peer != "null" and rnd == 0:
                    r["rss"] = max(r["rss"], umount(peer))
                    drop_caches()
                    mount(peer)
                    r["par"], r["par_rss"] = par_readers(peer)
                    r["budget"] = daemon_stats()["cache_budget"]
                if served and phase != "cold":
                    r["rss"] = max(r["rss"], umount(peer))
            runs.setdefault(peer, []).append(r)
            print(f"round {rnd + 1}/{ROUNDS} {peer}: cold {r['cold'] / 1e9:.2f} GB/s, warm "
                  f"{r['warm'] / 1e9:.2f} GB/s, shuffled {r['shuf']:,.0f} rows/s", flush=True)

    def med(peer, key):
        vals = [r[key] for r in runs[peer] if key in r]
        return float(np.median(vals)) if vals else None

    results = {}
    for peer in runs:
        results[peer] = {k: med(peer, k) for k in ("cold", "warm", "shuf", "amp", "amp_k",
                                                    "cpu_py", "cpu_daemon", "par", "par_rss",
                                                    "budget")}
        results[peer]["rss"] = max(r["rss"] for r in runs[peer])

    base = results["f32_mm"]
    ceil = results.get("null")
    print(f"\n{'peer':9} {'disk MB':>8} {'seq cold':>9} {'seq warm':>9} {'shuffled':>9} {'shuf amp':>9} "
          f"{'CPU s/GB':>9} {'daemon':>9}  vs f32_mm (cold warm shuf)  vs null (cold warm shuf)")
    print(f"{'':9} {'':>8} {'GB/s':>9} {'GB/s':>9} {'rows/s':>9} {'req  kern':>9} {'py+daemon':>9} "
          f"{'peak RSS':>9}")
    for peer, r in results.items():
        rss = f"{r['rss'] / 1024:.0f} MiB" if r["rss"] else "-"
        amp = f"{r['amp']:.2f} {r['amp_k']:5.2f}" if r["amp"] is not None else "-"
        line = (f"{peer:9} {sizes[peer] / 1e6:8.0f} {r['cold'] / 1e9:9.2f} {r['warm'] / 1e9:9.2f} "
                f"{r['shuf']:9,.0f} {amp:>9} {r['cpu_py']:4.2f}+{r['cpu_daemon']:4.2f} {rss:>9}  "
                f"{r['cold'] / base['cold']:6.2f}x {r['warm'] / base['warm']:5.2f}x "
                f"{r['shuf'] / base['shuf']:5.2f}x")
        if ceil:
            line += (f"   {r['cold'] / ceil['cold']:6.2f}x {r['warm'] / ceil['warm']:5.2f}x "
                     f"{r['shuf'] / ceil['shuf']:5.2f}x")
        print(line)
    print()
    for peer, r in results.items():
        if r["par"] is not None:
            limit = r["budget"] / 1024 + 64 * 1024
            print(f"{peer}: {PAR} forked readers of shuffled batches at once: {r['par']:,.0f} rows/s "
                  f"in all; daemon peak RSS {r['par_rss'] / 1024:.0f} MiB (cache budget "
                  f"{r['budget'] / 2**20:.0f} MiB + 64 MiB = {limit / 1024:.0f} MiB: "
                  f"{'within' if r['par_rss'] <= limit else 'OVER'})")
    print(f"\n{benchlib.machine('BENCH_MB', MB, ROUNDS, t0)} Batches of {BATCH} rows; "
          f"cold = page cache dropped{'' if can_drop else ' (FAILED: not root)'}"
          f" and daemon restarted;\nCPU s/GB: seconds of CPU per GB of float32 delivered in the cold "
          f"sequential pass, reader process + FUSE daemon;\nshuf amp: bytes the daemon decoded / "
          f"bytes the shuffled batches asked for (req) and / bytes the daemon handed the kernel (kern:\n"
          f"replies and readahead stores; the difference is the kernel's readahead around memmap page "
          f"faults);\ncold passes start from a dropped page cache over {benchlib.PREFAULT_GB:g} GB of memory "
          f"touched and freed (BENCH_PREFAULT_GB: this VM's balloon makes\nthe first touch of a page "
          f"freed seconds ago cost ~2.5 s/GB); null is mounted with read_ahead_kb 1024, dsview with "
          f"its default (128)")
    if os.path.exists(XFORM_BENCH):
        print("\nsingle-core transform kernels (xform_bench, in memory, output GB/s):")
        out = subprocess.run([XFORM_BENCH], capture_output=True, text=True, check=True).stdout
        rows = [json.loads(line) for line in out.splitlines()]
        for case in dict.fromkeys(r["case"] for r in rows):
            print(f"  {case:36}" + "".join(f" {r['kernel']} {r['out_GBps']:5.1f}"
                                          for r in rows if r["case"] == case))
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
