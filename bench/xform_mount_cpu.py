#!/usr/bin/python3
"""The mount daemon's CPU seconds per GB served, per transform kernel: one
uint8 array of 224x224x3 images (XMOUNT_MB of uint8, default 256) served
as float32 and as bfloat16 with scale 1/255 and 3-channel mean/std (HWC),
read start to end by one reader in 16 MiB reads from a fresh mount, the
source's pages in the page cache (the daemon's CPU is the point, not the
disk). The daemon's utime + stime (/proc/PID/stat) before and after the
pass, over the GB of output served. Each kernel variant is forced with
DSVIEW_KERNEL; "avx512" runs the uint8 tables as before the VBMI
variants (one table load per element), the widest the processor has is
the default. ROUNDS (3) interleaved, medians.

  DSVIEW=build/dsview /usr/bin/python3 bench/xform_mount_cpu.py
"""
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as B  # noqa: E402

DSVIEW = os.environ.get("DSVIEW", "build/dsview")
MB = int(os.environ.get("XMOUNT_MB", "256"))
ROUNDS = int(os.environ.get("ROUNDS", "3"))
KERNELS = os.environ.get("XMOUNT_KERNELS", "avx512,default").split(",")
XFORM = f"scale = {1/255!r}\nmean = 0.485 0.456 0.406\nstd = 0.229 0.224 0.225\n"
READ = 16 << 20


def one_pass(ini, mnt, log, view, kernel):
    """(daemon CPU s per GB, reader GB/s, kernel name) of one pass."""
    env = dict(os.environ)
    env.pop("DSVIEW_KERNEL", None)
    if kernel != "default":
        env["DSVIEW_KERNEL"] = kernel
    subprocess.run([DSVIEW, "mount", "--log", log, ini, mnt], check=True, env=env)
    try:
        with open(os.path.join(mnt, ".stats.json")) as f:
            st = json.load(f)
        pid = st["pid"]
        cpu0, t0, got = B.proc_cpu(pid), time.perf_counter(), 0
        with open(os.path.join(mnt, view + ".dat"), "rb", buffering=0) as f:
            while True:
                b = f.read(READ)
                if not b:
                    break
                got += len(b)
        dt, cpu = time.perf_counter() - t0, B.proc_cpu(pid) - cpu0
        return cpu / (got / 1e9), got / dt / 1e9, st.get("kernel", "?")
    finally:
        subprocess.run([DSVIEW, "umount", mnt], check=True)


def main():
    work = B.work_dir("xmount")
    mnt = os.path.join(work, "mnt")
    rows = max(1, MB * 10**6 // (224 * 224 * 3))
    rng = np.random.default_rng(0)
    a = np.lib.format.open_memmap(os.path.join(work, "u8.npy"), "w+", np.uint8,
                                  (rows, 224, 224, 3))
    for i in range(0, rows, 256):
        a[i:i + 256] = rng.integers(0, 256, a[i:i + 256].shape, np.uint8)
    a.flush()
    del a
    ini = os.path.join(work, "m.ini")
    with open(ini, "w") as f:
        f.write(f"[f32]\nsource = {work}/u8.npy\n{XFORM}\n"
                f"[bf16]\nsource = {work}/u8.npy\ndtype = bfloat16\n{XFORM}")
    with open(os.path.join(work, "u8.npy"), "rb") as f:  # into the page cache
        while f.read(64 << 20):
            pass
    res = {}
    try:
        for _ in range(ROUNDS):
            for view in ("f32", "bf16"):
                for k in KERNELS:
                    r = one_pass(ini, mnt, os.path.join(work, "log"), view, k)
                    res.setdefault((view, k), []).append(r)
    finally:
        B.remove_work(work, mnt)
    print(f"daemon CPU s per GB served, {rows} rows of 224x224x3 uint8, scale + 3-channel "
          f"mean/std (HWC), sequential 16 MiB reads, {ROUNDS} rounds, medians")
    print(f"{'view':6} {'kernel':12} {'(ran)':12} {'CPU s/GB':>9} {'reader GB/s':>12}")
    for (view, k), rs in res.items():
        print(f"{view:6} {k:12} {rs[0][2]:12} {statistics.median(r[0] for r in rs):9.3f} "
              f"{statistics.median(r[1] for r in rs):12.2f}")


if __name__ == "__main__":
    sys.exit(main())
