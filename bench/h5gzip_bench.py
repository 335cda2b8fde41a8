#!/usr/bin/python3
"""HDF5 gzip, h5py's default compression (make bench-h5gzip). One uint8
dataset of H5GZIP_MB MB (default 60) of 128x128x3 image rows (gradients +
noise), written by h5py with compression="gzip" (level 4, h5py's default),
in four layouts:
  rows       chunks of 16 whole rows
  rows_shuf  the same with shuffle=True
  auto       h5py's own chunk shape (chunks=True): chunks that split rows
  rows_fl32  chunks of 16 whole rows, shuffle and fletcher32
Peers, each on a cold page cache (benchlib.drop_caches), ROUNDS (3)
interleaved rounds, medians:
  h5py       h5py.File(...)[name][:] (one read of the whole dataset)
  verify     `dsview verify FILE:/name` (every chunk decoded and checked)
  mmap       a fresh `dsview mount` of the dataset as a float32 view, one
             sequential pass of np.memmap slices of 64 rows
  mmap_npy   the same pass over a mount of the uint8 rows as a .npy (no
             decode): what the mount costs without gzip
  verify_old / mmap_old  the same with DSVIEW_OLD (a dsview binary built
             at another commit), when that is set: before/after in one run
Reported: seconds and MB/s of uint8 source, ratios against h5py's read of
the same dataset, and the target (dsview >= 2x h5py), met or not; and CPU
seconds (user + system: h5py's process, verify's, the mount's daemon and
reader), which a machine shared with other work disturbs less than wall
time.
H5GZIP_LAYOUTS=rows,auto a subset; BENCH_DIR, BENCH_SETTLE,
BENCH_PREFAULT_GB as benchlib says."""
import os
import resource
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as L  # noqa: E402

DSVIEW = os.environ.get("DSVIEW", "build/dsview")
DSVIEW_OLD = os.environ.get("DSVIEW_OLD", "")
MB = int(os.environ.get("H5GZIP_MB", "60"))
ROUNDS = int(os.environ.get("ROUNDS", "3"))
H, W = 128, 128
ROW = H * W * 3
LAYOUTS = {
    "rows": dict(chunks=(16, H, W, 3)),
    "rows_shuf": dict(chunks=(16, H, W, 3), shuffle=True),
    "auto": dict(chunks=True),
    "rows_fl32": dict(chunks=(16, H, W, 3), shuffle=True, fletcher32=True),
}


def make(work, n):
    import h5py
    path = os.path.join(work, "u8.npy")
    L.make_images(path, n, H, W)
    x = np.load(path, mmap_mode="r")
    with h5py.File(os.path.join(work, "g.h5"), "w") as f:
        for name in chosen():
            f.create_dataset(name, data=x, compression="gzip", compression_opts=4,
                             **LAYOUTS[name])
            print(f"  {name}: chunks {f[name].chunks}, filters "
                  f"{list(f[name]._filters.keys())}", flush=True)
    for name in chosen():
        with open(os.path.join(work, name + ".ini"), "w") as f:
            f.write(f"[v]\nsource = {os.path.join(work, 'g.h5')}:/{name}\n")
    with open(os.path.join(work, "npy.ini"), "w") as f:
        f.write(f"[v]\nsource = {path}\n")
    return x


def chosen():
    want = os.environ.get("H5GZIP_LAYOUTS")
    return [k for k in LAYOUTS if not want or k in want.split(",")]


def cpu(who):
    r = resource.getrusage(who)
    return r.ru_utime + r.ru_stime


def h5py_read(work, name, x):
    import h5py
    L.drop_caches()
    t, c = time.perf_counter(), cpu(resource.RUSAGE_SELF)
    with h5py.File(os.path.join(work, "g.h5"), "r") as f:
        a = f[name][:]
    dt, dc = time.perf_counter() - t, cpu(resource.RUSAGE_SELF) - c
    assert np.array_equal(a, x), f"h5py read of {name} differs from the data"
    return dt, dc


def verify(binary, work, name):
    L.drop_caches()
    t, c = time.perf_counter(), cpu(resource.RUSAGE_CHILDREN)
    subprocess.run([binary, "verify", os.path.join(work, "g.h5") + ":/" + name], check=True,
                   stdout=subprocess.DEVNULL)
    return time.perf_counter() - t, cpu(resource.RUSAGE_CHILDREN) - c


def mmap_pass(binary, work, name, x, ini=None):
    n = x.shape[0]

    mnt = os.path.join(work, "mnt")

    def one(a):
        pid = L.daemon_pid(mnt)
        t, c, d = time.perf_counter(), cpu(resource.RUSAGE_SELF), L.proc_cpu(pid)
        for i in range(0, n, 64):
            blk = np.array(a[i:i + 64])
        dt = time.perf_counter() - t
        dc = cpu(resource.RUSAGE_SELF) - c + L.proc_cpu(pid) - d
        # the last block against the source, as float32 of uint8
        assert np.array_equal(blk, x[i:i + 64].astype(np.float32)), "mount differs"
        return dt, dc

    return L.cold_view(binary, ini or os.path.join(work, name + ".ini"), mnt,
                       os.path.join(work, "log"), x.shape, one)


def main():
    t0 = time.time()
    n = max(16, MB * 1_000_000 // ROW)
    L.scale_prefault(MB)
    work = L.work_dir("h5gzip")
    try:
        print(f"h5gzip bench: {n} rows of {H}x{W}x3 uint8 ({n * ROW / 1e6:.0f} MB), "
              f"gzip 4, {ROUNDS} rounds, cold", flush=True)
        x = make(work, n)
        peers = ["h5py", "verify", "mmap", "mmap_npy"]
        if DSVIEW_OLD:
            peers += ["verify_old", "mmap_old"]
        runs = {(lay, p): [] for lay in chosen() for p in peers}
        for r in range(ROUNDS):
            for lay in chosen():
                for p in peers:
                    binary = DSVIEW_OLD if p.endswith("_old") else DSVIEW
                    if p == "h5py":
                        dt = h5py_read(work, lay, x)
                    elif p.startswith("verify"):
                        dt = verify(binary, work, lay)
                    elif p == "mmap_npy":
                        dt = mmap_pass(binary, work, lay, x, os.path.join(work, "npy.ini"))
                    else:
                        dt = mmap_pass(binary, work, lay, x)
                    runs[(lay, p)].append(dt)
                    print(f"  round {r + 1} {lay:9s} {p:10s} {dt[0]:7.3f} s  cpu {dt[1]:7.3f} s",
                          flush=True)
        mb = n * ROW / 1e6
        print(f"\n{'layout':10s} {'peer':10s} {'median s':>9s} {'MB/s':>8s} {'x h5py':>7s} "
              f"{'cpu s':>7s} {'cpu x h5py':>10s}")
        for lay in chosen():
            base = np.median(runs[(lay, "h5py")], axis=0)
            for p in peers:
                med = np.median(runs[(lay, p)], axis=0)
                print(f"{lay:10s} {p:10s} {med[0]:9.3f} {mb / med[0]:8.1f} {base[0] / med[0]:7.2f} "
                      f"{med[1]:7.3f} {base[1] / med[1]:10.2f}")
            for p in ("verify", "mmap"):
                med = np.median(runs[(lay, p)], axis=0)
                L.target(f"{lay} {p} / h5py", base[0] / med[0], ">=", 2.0)
        print(f"\n{ROUNDS} rounds, cold, {time.time() - t0:.0f} s in all")
    finally:
        L.remove_work(work, os.path.join(work, "mnt"))


if __name__ == "__main__":
    main()
