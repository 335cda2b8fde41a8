#!/usr/bin/python3
"""The in-process reader against FUSE (make bench-inproc; its DataLoader
figures are bench-loader's "inproc" peer).

A uint8 HWC dataset of INPROC_MB MiB (default 512) of 224x224x3 rows, served
as the normalised float32 view ((x/255 - mean[c]) / std[c]) by each peer in
one sequential pass, cold (page cache dropped, a fresh daemon or reader),
8 MiB of float32 at a time:
  null        bench/nullfs.c, a no-op FUSE filesystem of the same size read
              through a memmap: the FUSE ceiling, no work behind it
  mount       a dsview mount of the view, read through a memmap of V.dat
  inproc      dsview.open(manifest, "v"): the same view read in this
              process (Array.read into one reused buffer), no FUSE
  inproc_lz4  the same over the `dsview pack` LZ4 store of the data
  mount_lz4   the store's view through a mount, for the decode's cost there
Reported: GB/s of float32 output (median of ROUNDS, default 3, interleaved
rounds), the process CPU seconds per GB of the reading side (the daemon's
and the reader's together for mounts) and the ratios the targets judge:
inproc >= 2x null (past any FUSE daemon), inproc_lz4 >= 0.9x inproc (the
decode's own cost without FUSE).

  DSVIEW=build/dsview NULLFS=build/bench/nullfs INPROC_MB=512 \\
      /usr/bin/python3 bench/inproc_bench.py"""
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "python"))
import benchlib as L  # noqa: E402
import dsview  # noqa: E402

DSVIEW = os.path.abspath(os.environ.get("DSVIEW", "build/dsview"))
NULLFS = os.path.abspath(os.environ.get("NULLFS", "build/bench/nullfs"))
MB = int(os.environ.get("INPROC_MB", "512"))
ROUNDS = int(os.environ.get("ROUNDS", "3"))
SIDE = 224
PEERS = L.chosen_peers(("null", "mount", "inproc", "inproc_lz4", "mount_lz4"), "INPROC_PEERS",
                       NULLFS)
STEP_BYTES = 8 << 20


def self_cpu():
    t = os.times()
    return t.user + t.system


def pass_memmap(a):
    """One sequential pass over a float32 memmap, copied out 8 MiB at a
    time: (bytes, seconds)."""
    step = max(1, STEP_BYTES // (a.strides[0] or 1))
    t = time.perf_counter()
    n = 0
    for i in range(0, a.shape[0], step):
        n += np.array(a[i:i + step]).nbytes
    return n, time.perf_counter() - t


def pass_inproc(ini, view):
    """One sequential pass of an in-process view into one reused buffer."""
    a = dsview.open(ini, view)
    step = max(1, STEP_BYTES // a.row_bytes)
    out = np.empty((step,) + a.shape[1:], np.float32)
    t = time.perf_counter()
    n = 0
    for i in range(0, a.shape[0], step):
        rows = np.arange(i, min(i + step, a.shape[0]))
        a.read(rows, out=out[:len(rows)])
        n += len(rows) * a.row_bytes
    secs = time.perf_counter() - t
    a.reader.close()
    return n, secs


def one(peer, files, shape, work):
    L.drop_caches()
    cpu0 = self_cpu()
    if peer.startswith("inproc"):
        n, secs = pass_inproc(files["ini"], "lz4" if peer == "inproc_lz4" else "v")
        return {"gbs": n / secs / 1e9, "cpu_gb": (self_cpu() - cpu0) / (n / 1e9)}
    mnt = os.path.join(work, "mnt")
    if peer == "null":
        proc = L.mount_null(NULLFS, int(np.prod(shape)) * 4, mnt)
        try:
            a = np.memmap(os.path.join(mnt, "data.dat"), np.float32, "r", shape=shape)
            n, secs = pass_memmap(a)
            del a
            dcpu = L.proc_cpu(proc.pid)
        finally:
            proc.terminate()
            proc.wait()
        return {"gbs": n / secs / 1e9, "cpu_gb": (self_cpu() - cpu0 + dcpu) / (n / 1e9)}
    name = "lz4" if peer == "mount_lz4" else "v"
    subprocess.run([DSVIEW, "mount", "--log", os.path.join(work, "log"), files["ini"], mnt],
                   check=True)
    try:
        pid = L.daemon_pid(mnt)
        d0 = L.proc_cpu(pid)
        a = np.memmap(os.path.join(mnt, name + ".dat"), np.float32, "r", shape=shape)
        n, secs = pass_memmap(a)
        del a
        dcpu = L.proc_cpu(pid) - d0
    finally:
        subprocess.run([DSVIEW, "umount", mnt], check=True)
    return {"gbs": n / secs / 1e9, "cpu_gb": (self_cpu() - cpu0 + dcpu) / (n / 1e9)}


def main():
    t0 = time.perf_counter()
    L.scale_prefault(MB)
    work = L.work_dir("inproc")
    try:
        n = max(64, (MB << 20) // (SIDE * SIDE * 3))
        files = {"u8": os.path.join(work, "u8.npy"), "lz4": os.path.join(work, "u8-lz4.h5"),
                 "ini": os.path.join(work, "v.ini")}
        L.make_images(files["u8"], n, SIDE, SIDE)
        subprocess.run([DSVIEW, "pack", "--codec", "lz4", files["u8"], files["lz4"]],
                       check=True, capture_output=True)
        norm = "scale = 0.00392156862745098\nmean = 0.485 0.456 0.406\nstd = 0.229 0.224 0.225\n"
        with open(files["ini"], "w") as f:
            f.write(f"[v]\nsource = u8.npy\n{norm}[lz4]\nsource = u8-lz4.h5\n{norm}")
        shape = (n, SIDE, SIDE, 3)
        print(f"{n} rows of {SIDE}x{SIDE}x3: {n * SIDE * SIDE * 3 / 2**20:.0f} MiB uint8, "
              f"{n * SIDE * SIDE * 12 / 2**30:.2f} GiB float32", flush=True)
        runs = L.interleaved(PEERS, ROUNDS, lambda p, r: one(p, files, shape, work),
                             lambda r: f"{r['gbs']:.2f} GB/s, {r['cpu_gb']:.2f} CPU s/GB", 10,
                             alternate=True)
        med = L.medians(runs)
        print(f"\n{'peer':10} {'GB/s':>8} {'CPU s/GB':>9}")
        for p in PEERS:
            print(f"{p:10} {med[p]['gbs']:8.2f} {med[p]['cpu_gb']:9.2f}")
        print()
        if "null" in med and "inproc" in med:
            L.target("inproc / null (sequential)", med["inproc"]["gbs"] / med["null"]["gbs"],
                     ">=", 2.0)
        if "inproc" in med and "mount" in med:
            print(f"inproc / mount (sequential): {med['inproc']['gbs'] / med['mount']['gbs']:.2f}x")
        if "inproc_lz4" in med and "inproc" in med:
            L.target("inproc_lz4 / inproc", med["inproc_lz4"]["gbs"] / med["inproc"]["gbs"],
                     ">=", 0.9)
        if "mount_lz4" in med and "mount" in med:
            print(f"mount_lz4 / mount: {med['mount_lz4']['gbs'] / med['mount']['gbs']:.2f}x")
        print("\n" + L.machine("INPROC_MB", MB, ROUNDS, t0))
    finally:
        L.remove_work(work, os.path.join(work, "mnt"))


if __name__ == "__main__":
    main()
