#!/usr/bin/python3
"""The PyTorch loaders side by side: one shuffled DataLoader epoch (batch
256, cold) over LOADER_MB (default 1024) MiB of uint8 rows of 64x64x3
(12 KB) and of 224x224x3 (150 KB), with LOADER_WORKERS workers (default
"0,1,4,8"), served normalised as float32 ((x/255 - mean[c]) / std[c]):

  python   the Python way: uint8 np.load(mmap_mode="r") in a map-style
           dataset, normalised to float32 in numpy per row in the workers
  f32      the materialised float32 .npy in the same map-style dataset
  dsview   the package's default loader, dsview.torch.loader over the view:
           whole sorted batches, hinted 4 batches ahead, read with pread
           into the batch tensors by the workers as threads of the main
           process
  dsv_proc the same with workers="processes": DataLoader worker processes
  rows     the view in a plain DataLoader(ViewDataset): one row per
           __getitem__, no hints
  inproc   dsview.torch.loader over dsview.open(manifest, "v"): the same
           view read in the loader's process by libdsview.so, no mount

Each epoch runs in a fresh process (fork workers) after the source files'
pages are evicted; dsview's on a fresh mount. Reported: rows/s over the
epoch (worker start included), the daemon's CPU seconds per GB of float32
served, and the peak RSS of the main process (VmHWM) and of the largest
worker process (0 for threads), memmapped file pages included.
ROUNDS (default 1) interleaved rounds, medians; LOADER_SIZES="150 KB" runs
one size; LOADER_JSON=FILE writes the results. Targets (against python, then f32, same workers): dsview >= 2.0x
python with 1 worker, >= 1.3x with 4 and 8, >= 1.0x f32 everywhere;
inproc >= 4x python with 1 worker and >= 1.5x dsview (the mount) with
150 KB rows.

  DSVIEW=build/dsview LOADER_MB=256 /usr/bin/python3 bench/loader_bench.py"""
import json
import os
import resource
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "python"))
import benchlib as L  # noqa: E402

DSVIEW = os.path.abspath(os.environ.get("DSVIEW", "build/dsview"))
MB = int(os.environ.get("LOADER_MB", "1024"))
WORKERS = [int(w) for w in os.environ.get("LOADER_WORKERS", "0,1,4,8").split(",")]
ROUNDS = int(os.environ.get("ROUNDS", "1"))
SIZES = {k: v for k, v in {"12 KB": 64, "150 KB": 224}.items()
         if k in os.environ.get("LOADER_SIZES", "12 KB,150 KB").split(",")}
PEERS = tuple(p for p in ("python", "f32", "dsview", "dsv_proc", "rows", "inproc")
              if p in os.environ.get("LOADER_PEERS", "python,f32,dsview,dsv_proc,rows,inproc"))
MEAN32, STD32 = L.MEAN.astype(np.float32), L.STD.astype(np.float32)


class Rows:
    """A map-style dataset as users write it: the memmap opened in each
    worker, one row per __getitem__; u8 rows normalised in numpy."""

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


def child(peer, workers, path):
    """One epoch; prints rows, seconds and peak RSS (kB) as JSON."""
    import torch
    import dsview
    import dsview.torch
    dl = torch.utils.data.DataLoader
    if peer == "dsview":
        loader = dsview.torch.loader(path, batch_size=L.BATCH, num_workers=workers)
    elif peer == "dsv_proc":
        loader = dsview.torch.loader(path, batch_size=L.BATCH, num_workers=workers,
                                     workers="processes")
    elif peer == "inproc":
        loader = dsview.torch.loader(dsview.open(path, "v"), batch_size=L.BATCH,
                                     num_workers=workers)
    elif peer == "rows":
        loader = dl(dsview.torch.ViewDataset(path), batch_size=L.BATCH, shuffle=True,
                    num_workers=workers)
    else:
        loader = dl(Rows(path, peer == "python"), batch_size=L.BATCH, shuffle=True,
                    num_workers=workers)
    t, rows = time.perf_counter(), 0
    for b in loader:
        assert b.dtype == torch.float32
        rows += b.shape[0]
    secs = time.perf_counter() - t
    del loader
    # VmHWM: ru_maxrss would carry the bench's own peak across exec
    print(json.dumps({"rows": rows, "secs": secs, "rss_main": L.proc_kb("self", "VmHWM"),
                      "rss_worker": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}))


def run_child(peer, workers, path):
    r = subprocess.run([sys.executable, __file__, "--child", peer, str(workers), path],
                       capture_output=True, text=True, timeout=3600)
    if r.returncode != 0:
        raise RuntimeError(f"{peer} {workers}: {r.stderr[-2000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def one_run(work, files, peer, workers):
    for f in files.values():
        L.evict(f)
    if peer == "inproc":
        return run_child(peer, workers, files["ini"])
    if peer not in ("dsview", "dsv_proc", "rows"):
        return run_child(peer, workers, files["u8" if peer == "python" else "f32"])
    mnt = os.path.join(work, "mnt")
    subprocess.run([DSVIEW, "mount", "--log", os.path.join(work, "log"), files["ini"], mnt],
                   check=True)
    try:
        with open(os.path.join(mnt, ".stats.json")) as f:
            pid = json.load(f)["pid"]
        cpu = L.proc_cpu(pid)
        res = run_child(peer, workers, os.path.join(mnt, "v.npy"))
        res["daemon_cpu"] = L.proc_cpu(pid) - cpu
        return res
    finally:
        subprocess.run([DSVIEW, "umount", mnt], check=True)


def make_size(work, label, side):
    n = max(L.BATCH, (MB << 20) // (side * side * 3))
    d = os.path.join(work, str(side))
    os.makedirs(d)
    files = {"u8": os.path.join(d, "u8.npy"), "f32": os.path.join(d, "f32.npy"),
             "ini": os.path.join(d, "v.ini")}
    L.make_images(files["u8"], n, side, side)
    L.normalise_file(files["u8"], files["f32"])
    with open(files["ini"], "w") as f:
        f.write("[v]\nsource = u8.npy\nscale = 0.00392156862745098\n"
                "mean = 0.485 0.456 0.406\nstd = 0.229 0.224 0.225\n")
    return n, files


def report(results, sizes):
    print(f"\n{'rows':>7} {'workers':>7} " + " ".join(f"{p + ' rows/s':>14}" for p in PEERS)
          + f" {'vs python':>9} {'vs f32':>7} {'daemon s/GB':>11} {'RSS MB main/worker':>19}")
    print("(vs python, vs f32, daemon CPU and RSS: the dsview peer)")
    for label in sizes:
        for w in WORKERS:
            med = {p: float(np.median([r["rows"] / r["secs"] for r in results[(label, w, p)]]))
                   for p in PEERS}
            d = results[(label, w, "dsview")]
            gb = d[0]["rows"] * SIZES[label] ** 2 * 3 * 4 / 1e9
            cpu = float(np.median([r["daemon_cpu"] for r in d])) / gb
            rss = (max(r["rss_main"] for r in d) / 1024, max(r["rss_worker"] for r in d) / 1024)
            print(f"{label:>7} {w:>7} " + " ".join(f"{med[p]:14,.0f}" for p in PEERS)
                  + f" {med['dsview'] / med['python']:8.2f}x {med['dsview'] / med['f32']:6.2f}x"
                  f" {cpu:11.2f} {rss[0]:9.0f}/{rss[1]:<9.0f}"
                  + (f" {med['inproc'] / med['python']:12.2f}x {med['inproc'] / med['dsview']:12.2f}x"
                     if "inproc" in med else ""))
    print("\npeak RSS main/worker of each peer (MB):")
    for label in sizes:
        for w in WORKERS:
            print(f"  {label:>7} {w} workers: " + ", ".join(
                f"{p} {max(r['rss_main'] for r in results[(label, w, p)]) / 1024:.0f}/"
                f"{max(r['rss_worker'] for r in results[(label, w, p)]) / 1024:.0f}" for p in PEERS))


def main():
    work = L.work_dir("loader")
    results = {}
    try:
        for label, side in SIZES.items():
            n, files = make_size(work, label, side)
            print(f"{label}: {n} rows of {side}x{side}x3, {n * side * side * 3 / 2**20:.0f} MiB "
                  "uint8", flush=True)
            for _ in range(ROUNDS):
                for w in WORKERS:
                    for p in PEERS:
                        r = one_run(os.path.dirname(files["u8"]), files, p, w)
                        results.setdefault((label, w, p), []).append(r)
                        print(f"  {p:7} {w} workers: {r['rows'] / r['secs']:9,.0f} rows/s",
                              flush=True)
            for f in ("u8", "f32"):
                os.unlink(files[f])
        report(results, SIZES)
        print(f"\n{ROUNDS} round(s), medians; batch {L.BATCH}, shuffled, cold (pages evicted, "
              f"fresh mount), fork workers; LOADER_MB={MB}")
        L.save_json(os.environ.get("LOADER_JSON"), {f"{k[0]}|{k[1]}|{k[2]}": v for k, v in results.items()})
    finally:
        L.remove_work(work, *(os.path.join(work, str(s), "mnt") for s in SIZES.values()))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2], int(sys.argv[3]), sys.argv[4])
    else:
        main()
