"""The PyTorch loaders side by side: one shuffled DataLoader epoch, rows/s, daemon CPU, peak RSS.

--mb MB of uint8 rows of --side (benchlib's make_images; 64: 12 KB
rows, 224: 150 KB), batch 256, served normalised as float32
((x/255 - mean[c]) / std[c]), per number of DataLoader workers (the
sweep, --workers):
  python    the Python way: uint8 np.load(mmap_mode="r") in a map-style
            dataset, normalised in numpy per row in the workers
  f32       the materialised float32 .npy in the same map-style dataset
  dsview    the package's default loader, dsview.torch.loader over the
            view: whole sorted batches, hinted ahead, read with pread
            into the batch tensors by worker threads
  dsv_proc  the same with workers="processes" (DataLoader processes)
  rows      the view in a plain DataLoader(ViewDataset): a row per
            __getitem__, no hints
  inproc    dsview.torch.loader over dsview.open(manifest, "v"): the
            view read in the loader's process by libdsview.so, no mount
Each epoch runs in a fresh process (fork workers), cold (page cache
dropped; the mount peers on a fresh daemon). Reported: rows/s over the
epoch (worker start included), the daemon's CPU seconds per GB of
float32 served, and the peak RSS of the main process (VmHWM) and of the
largest worker process (0 for threads), mapped file pages included.
Targets: dsview >= 2.0x python with 1 worker and >= 1.3x with 4 and 8,
>= 1.0x f32 at every point; inproc >= 4x python with 1 worker; inproc /
dsview reported (the former script's >= 1.5x was for 150 KB rows)."""
import json
import os
import resource
import subprocess
import sys
import time
import types

import numpy as np

from bench import benchlib as L
from bench.harness import ROOT, Experiment, Metric, Peer, Phase, Setting, Target

PEERS = ["python", "f32", "dsview", "dsv_proc", "rows", "inproc"]
MOUNTED = ("dsview", "dsv_proc", "rows")
MEAN32, STD32 = L.MEAN.astype(np.float32), L.STD.astype(np.float32)


class Rows:
    """A map-style dataset as users write it: the memmap opened in each
    worker, one row per __getitem__; uint8 rows normalised in numpy."""

    def __init__(self, path, normalise):
        self.path, self.normalise, self.arr = path, normalise, None
        self.n = np.load(path, mmap_mode="r").shape[0]

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        import torch
        if self.arr is None:
            self.arr = np.load(self.path, mmap_mode="r")
        row = self.arr[i]
        if self.normalise:
            return torch.from_numpy((row * np.float32(1 / 255) - MEAN32) / STD32)
        return torch.from_numpy(np.array(row))


def loader_of(peer, workers, path):
    import torch
    import dsview
    import dsview.torch
    dl = torch.utils.data.DataLoader
    if peer == "dsview":
        return dsview.torch.loader(path, batch_size=L.BATCH, num_workers=workers)
    if peer == "dsv_proc":
        return dsview.torch.loader(path, batch_size=L.BATCH, num_workers=workers,
                                   workers="processes")
    if peer == "inproc":
        return dsview.torch.loader(dsview.open(path, "v"), batch_size=L.BATCH, num_workers=workers)
    if peer == "rows":
        return dl(dsview.torch.ViewDataset(path), batch_size=L.BATCH, shuffle=True,
                  num_workers=workers)
    return dl(Rows(path, peer == "python"), batch_size=L.BATCH, shuffle=True, num_workers=workers)


def child(peer, workers, path):
    """One epoch; prints rows, seconds and peak RSS (kB) as JSON."""
    import torch
    loader = loader_of(peer, workers, path)
    t, rows = time.perf_counter(), 0
    for b in loader:
        if b.dtype != torch.float32:
            raise SystemExit(f"{peer}: a batch of {b.dtype}")
        rows += b.shape[0]
    secs = time.perf_counter() - t
    del loader
    # VmHWM: ru_maxrss would carry the parent's peak across exec
    print(json.dumps({"rows": rows, "secs": secs, "rss_main": L.proc_kb("self", "VmHWM"),
                      "rss_worker": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}))


def files(run):
    """The data, made once for every point."""
    if getattr(run, "loader_files", None):
        return run.loader_files
    side = run.s.side
    n = max(L.BATCH, (run.s.mb << 20) // (side * side * 3))
    f = types.SimpleNamespace(u8=run.path("u8.npy"), f32=run.path("f32.npy"),
                              ini=run.path("v.ini"), n=n, side=side)
    L.make_images(f.u8, n, side, side)
    L.normalise_file(f.u8, f.f32)
    with open(f.ini, "w") as out:
        out.write(f"[v]\nsource = u8.npy\nscale = {1/255!r}\n"
                  "mean = 0.485 0.456 0.406\nstd = 0.229 0.224 0.225\n")
    run.loader_files = f
    return f


def make(run, workers):
    f = files(run)
    return types.SimpleNamespace(f=f, workers=workers, info={
        "side": f.side, "rows": f.n, "mb": round(f.n * f.side ** 2 * 3 / 1e6), "workers": workers})


def setup(run, data):
    return run.mounts.dsview(data.f.ini)


def teardown(run, m):
    run.mounts.close(m)


def measure(run, data, peer, m, rnd):
    path = {"inproc": data.f.ini, "python": data.f.u8, "f32": data.f.f32}.get(peer)
    path = path or m.path("v.npy")
    cpu = m.cpu() if m else 0.0
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, os.path.join(ROOT, "python")]))
    r = subprocess.run([sys.executable, "-m", "bench.experiments.loader", "--child", peer,
                        str(data.workers), path], capture_output=True, text=True, cwd=ROOT,
                       env=env, timeout=3600)
    if r.returncode:
        raise RuntimeError(f"loader {peer} {data.workers} workers: {r.stderr[-2000:]}")
    res = json.loads(r.stdout.strip().splitlines()[-1])
    out = {"rows_s": res["rows"] / res["secs"], "rss_main_mb": res["rss_main"] / 1024,
           "rss_worker_mb": res["rss_worker"] / 1024}
    if m:
        out["daemon_cpu_s_gb"] = (m.cpu() - cpu) / (res["rows"] * data.f.side ** 2 * 3 * 4 / 1e9)
    return out


def torch_missing(run):
    try:
        import torch  # noqa: F401
    except ImportError:
        return "no torch in this Python (Debian's python3-torch)"
    return None


def peer(name):
    if name in MOUNTED:
        return Peer(name, name, setup, teardown, torch_missing)
    return Peer(name, name, missing=torch_missing)


EXPERIMENT = Experiment(
    name="loader",
    doc=__doc__,
    settings=[Setting("rounds", 1, "interleaved rounds, medians"),
              Setting("mb", 1024, "MiB of uint8 rows", quick=2),
              Setting("side", 64, "rows of side x side x 3 (224: 150 KB rows)", quick=16),
              Setting("workers", [0, 1, 4, 8], "DataLoader workers (the sweep)", quick=[0])],
    sweep="workers",
    data=make,
    peers=[peer(p) for p in PEERS],
    phases=[Phase("epoch", measure)],
    metrics=[Metric("rows_s", "rows/s", "one epoch, worker start included"),
             Metric("daemon_cpu_s_gb", "s/GB", "the daemon's CPU per GB of float32", False),
             Metric("rss_main_mb", "MB", "main process peak RSS", False),
             Metric("rss_worker_mb", "MB", "largest worker's peak RSS", False)],
    targets=[Target("dsview vs python, 1 worker", "rows_s", "dsview", "python", 2.0, at=1),
             Target("dsview vs python, 4 workers", "rows_s", "dsview", "python", 1.3, at=4),
             Target("dsview vs python, 8 workers", "rows_s", "dsview", "python", 1.3, at=8),
             Target("dsview vs f32", "rows_s", "dsview", "f32", 1.0),
             Target("inproc vs python, 1 worker", "rows_s", "inproc", "python", 4.0, at=1),
             Target("inproc vs dsview", "rows_s", "inproc", "dsview", None)],
)

if __name__ == "__main__" and sys.argv[1:2] == ["--child"]:
    child(sys.argv[2], int(sys.argv[3]), sys.argv[4])
