"""The mount with the GPU backend against the CPU backend: cold sequential GB/s and daemon CPU s/GB.

The python3-skimage photographs in 224x224x3 tiles (benchlib's synthetic
images where skimage is missing), repeated to --rows rows, packed with
`dsview pack`'s defaults, served as float32 (x / 255). Peers, each a
fresh mount read by one reader in 16 MiB read()s from start to end,
cold (page cache dropped):
  off       --gpu off: the CPU backend
  gpu       --gpu --device: the readahead's pages made on the device
  gpu_tier  --gpu --device --gpu-cache --tier: the second epoch (one
            pass unmeasured fills the tier, then the store's and the
            mount's pages are evicted and the next pass is timed)
Per pass: GB/s of float32, the daemon's CPU seconds per GB served and
the share of the bytes the device made (gpu_readahead_bytes). Where no
mount with --gpu --device starts here (a build without CUDA, no device)
the gpu peers are skipped with the mount's reason. Target: gpu / off
daemon CPU per GB <= 0.3; the GB/s ratios reported."""
import os
import subprocess
import types

import numpy as np

from bench import benchlib as L
from bench.harness import Experiment, Metric, Peer, Phase, Setting, Target


def make(run, point):
    u8 = run.path("u8.npy")
    try:
        L.photo_rows(u8, run.s.rows)
        kind = "photographs"
    except ImportError:  # a machine without skimage (a GPU machine's python)
        L.make_images(u8, run.s.rows, 224, 224)
        kind = "synthetic images (no skimage)"
    store = run.path("v.h5")
    subprocess.run([run.dsview, "pack", "--dataset", "x", u8, store], check=True,
                   capture_output=True)
    os.unlink(u8)
    ini = run.path("v.ini")
    with open(ini, "w") as f:
        f.write(f"[v]\nsource = v.h5:/x\nscale = {1 / 255!r}\n")
    return types.SimpleNamespace(store=store, ini=ini, info={
        "rows": run.s.rows, "data": kind, "mb": round(run.s.rows * 224 * 224 * 3 / 1e6)})


def gpu_why(run):
    """Why a mount with --gpu --device does not start here (None: it does);
    tried once a run on a one-row store."""
    if not hasattr(run, "gpu_mount_why"):
        d = run.path("probe")
        os.makedirs(d)
        np.save(os.path.join(d, "x.npy"), np.zeros((1, 8), np.uint8))
        with open(os.path.join(d, "p.ini"), "w") as f:
            f.write("[p]\nsource = x.npy\n")
        mnt = os.path.join(d, "mnt")
        os.makedirs(mnt)
        r = subprocess.run([run.dsview, "mount", "--gpu", run.s.device, os.path.join(d, "p.ini"),
                            mnt], capture_output=True, text=True)
        run.gpu_mount_why = None
        if r.returncode:
            run.gpu_mount_why = f"no GPU usable here: {r.stderr.strip().splitlines()[-1]}"
        else:
            subprocess.run([run.dsview, "umount", mnt], check=True)
    return run.gpu_mount_why


def opts(run, peer):
    if peer == "off":
        return ["--gpu", "off"]
    return ["--gpu", run.s.device] + (["--gpu-cache", run.s.tier] if peer == "gpu_tier" else [])


def peer(name):
    def setup(run, data):
        return run.mounts.dsview(data.ini, opts=opts(run, name))

    def teardown(run, m):
        run.mounts.close(m)
    return Peer(name, " ".join(["dsview mount", name]), setup, teardown,
                None if name == "off" else gpu_why)


def measure(run, data, peer, m, rnd):
    dat = m.path("v.dat")
    if peer == "gpu_tier":  # the first epoch fills the tier
        L.read_all(dat)
        L.evict(data.store)
        L.evict(dat)
    c0 = m.cpu()
    gbs = L.read_all(dat)
    cpu = m.cpu() - c0
    size = os.path.getsize(dat)
    return {"gbs": gbs, "cpu_s_gb": cpu / (size / 1e9),
            "device_share": m.stats().get("gpu_readahead_bytes", 0) / size}


EXPERIMENT = Experiment(
    name="gpu_mount",
    doc=__doc__,
    settings=[Setting("rows", 2048, "224x224x3 rows", quick=64),
              Setting("device", "0", "--gpu's device"),
              Setting("tier", "1G", "--gpu-cache of the gpu_tier peer")],
    data=make,
    peers=[peer("off"), peer("gpu"), peer("gpu_tier")],
    phases=[Phase("seq", measure)],
    metrics=[Metric("gbs", "GB/s", "cold sequential, float32"),
             Metric("cpu_s_gb", "s/GB", "the daemon's CPU per GB served", False),
             Metric("device_share", "x", "bytes made on the device / bytes served")],
    targets=[Target("gpu vs off, daemon CPU per GB", "cpu_s_gb", "gpu", "off", 0.3, "<="),
             Target("gpu vs off, GB/s", "gbs", "gpu", "off", None),
             Target("the second epoch from the tier vs off, GB/s", "gbs", "gpu_tier", "off", None)],
)
