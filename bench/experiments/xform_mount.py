"""The mount daemon's CPU seconds per GB served, per transform kernel variant.

One uint8 array of 224x224x3 images served as float32 and as bfloat16
with scale 1/255 and 3-channel mean/std (HWC), read start to end by one
reader in 16 MiB reads from a fresh mount, the source's pages in the page
cache (the daemon's CPU is the point, not the disk: warm, no drop). The
daemon's utime + stime before and after the pass over the GB of output.
A peer is a view and a kernel: "avx512" forced with DSVIEW_KERNEL (the
uint8 tables as before the VBMI variants), "default" the widest the
processor has."""
import time
import types

import numpy as np

from bench.harness import Experiment, Metric, Peer, Phase, Setting, Target

XFORM = f"scale = {1/255!r}\nmean = 0.485 0.456 0.406\nstd = 0.229 0.224 0.225\n"
READ = 16 << 20
PEERS = [(view, kernel) for view in ("f32", "bf16") for kernel in ("avx512", "default")]


def make(run, point):
    rows = max(1, run.s.mb * 10**6 // (224 * 224 * 3))
    rng = np.random.default_rng(0)
    u8 = run.path("u8.npy")
    a = np.lib.format.open_memmap(u8, "w+", np.uint8, (rows, 224, 224, 3))
    for i in range(0, rows, 256):
        a[i:i + 256] = rng.integers(0, 256, a[i:i + 256].shape, np.uint8)
    a.flush()
    del a
    ini = run.path("m.ini")
    with open(ini, "w") as f:
        f.write(f"[f32]\nsource = {u8}\n{XFORM}\n[bf16]\nsource = {u8}\ndtype = bfloat16\n{XFORM}")
    with open(u8, "rb") as f:  # into the page cache
        while f.read(64 << 20):
            pass
    return types.SimpleNamespace(ini=ini, info={"rows": rows, "mb": round(rows * 224 * 224 * 3 / 1e6)})


def setup(kernel):
    def mount(run, data):
        return run.mounts.dsview(data.ini, env={"DSVIEW_KERNEL": None if kernel == "default"
                                                 else kernel})
    return mount


def teardown(run, m):
    run.mounts.close(m)


def measure(run, data, peer, m, rnd):
    view = peer.split("_")[0]
    cpu0, t0, got = m.cpu(), time.perf_counter(), 0
    with open(m.path(view + ".dat"), "rb", buffering=0) as f:
        while True:
            b = f.read(READ)
            if not b:
                break
            got += len(b)
    dt, cpu = time.perf_counter() - t0, m.cpu() - cpu0
    return {"cpu_gb": cpu / (got / 1e9), "gbs": got / dt / 1e9}


def avx512_missing(run):
    with open("/proc/cpuinfo") as f:
        return None if " avx512bw" in f.read() else "avx512 does not run on this processor"


EXPERIMENT = Experiment(
    name="xform_mount",
    doc=__doc__,
    settings=[Setting("mb", 256, "MB of uint8 images", quick=8)],
    data=make,
    peers=[Peer(f"{v}_{k}", f"the {v} view, kernel {k}", setup(k), teardown,
                avx512_missing if k == "avx512" else None) for v, k in PEERS],
    phases=[Phase("pass", measure, cold=False)],
    metrics=[Metric("cpu_gb", "CPU s/GB", "daemon CPU per GB served", higher_is_better=False),
             Metric("gbs", "GB/s", "the reader's pass")],
    targets=[Target("float32, default vs avx512 daemon CPU", "cpu_gb", "f32_default", "f32_avx512",
                    None),
             Target("bfloat16, default vs avx512 daemon CPU", "cpu_gb", "bf16_default",
                    "bf16_avx512", None)],
)
