#!/usr/bin/python3
"""NIfTI images against .npy (make bench-nifti, also run by make bench).
One int16 4-D image of NIFTI_MB MB (default 256) of 64x64x40 volumes,
written twice: as a NIfTI-1 .nii by nibabel (scl_slope/scl_inter set, as
scanners write them) and as the same C-order array in a .npy. Both are
served as float32 (x * slope + inter), the .npy through a manifest's
scale/offset, so the views hold the same values and differ only in the
source:
  nifti   the .nii, its scaling from its header
  npy     the .npy, scale and offset in the manifest
Phases, ROUNDS (3) interleaved rounds, medians, each cold (page cache
dropped, daemon restarted): a sequential pass (GB/s of float32) and sorted
shuffled batches of 256 volumes (NIFTI_BATCHES, default 8, or 15 s;
rows/s). The ratio nifti / npy of medians of this run."""
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as L  # noqa: E402

DSVIEW = os.environ.get("DSVIEW", "build/dsview")
MB = int(os.environ.get("NIFTI_MB", "256"))
ROUNDS = int(os.environ.get("ROUNDS", "3"))
BATCHES = int(os.environ.get("NIFTI_BATCHES", "8"))
VOL = (40, 64, 64)  # (Z, Y, X): one row of the view
SLOPE, INTER = 0.0123, -7.5
PEERS = ["nifti", "npy"]
TARGET = 0.95


def make(work, n):
    import nibabel as nib
    x = np.lib.format.open_memmap(os.path.join(work, "v.npy"), "w+", np.int16, (n, *VOL))
    rng = np.random.default_rng(0)
    for i in range(0, n, 64):
        k = min(64, n - i)
        x[i:i + k] = rng.integers(-2000, 2000, (k, *VOL), dtype=np.int16)
    x.flush()
    # nibabel's (X, Y, Z, T) is the transpose: the file holds x's C order
    img = nib.Nifti1Image(x.T, np.eye(4), dtype=np.int16)
    img.header.set_slope_inter(SLOPE, INTER)
    nib.save(img, os.path.join(work, "v.nii"))
    # the values nibabel scales to, from the header's float32 pair
    hdr = nib.load(os.path.join(work, "v.nii")).dataobj
    slope, inter = float(hdr.slope), float(hdr.inter)
    with open(os.path.join(work, "nifti.ini"), "w") as f:
        f.write(f"[v]\nsource = {os.path.join(work, 'v.nii')}\n")
    with open(os.path.join(work, "npy.ini"), "w") as f:
        f.write(f"[v]\nsource = {os.path.join(work, 'v.npy')}\nscale = {slope!r}\n"
                f"offset = {inter!r}\n")
    del x


def measure(work, peer, n, fn):
    """fn(array) on a cold start of peer (benchlib.cold_view)."""
    return L.cold_view(DSVIEW, os.path.join(work, peer + ".ini"), os.path.join(work, "mnt"),
                       os.path.join(work, "log"), (n, *VOL), fn)


def check_same(work, n):
    """The two views hold the same bytes (a few rows), so the race is fair."""
    rows = [0, n // 2, n - 1]
    got = {}
    for peer in PEERS:
        got[peer] = measure(work, peer, n, lambda arr: np.array(arr[rows]).tobytes())
    if got["nifti"] != got["npy"]:
        sys.exit("nifti and npy views differ: not the same values")


def main():
    work = tempfile.mkdtemp(prefix="dsview-nifti-", dir=os.environ.get("BENCH_DIR", "/var/tmp"))
    row = int(np.prod(VOL)) * 2
    n = max(2 * L.BATCH, MB * 1000 * 1000 // row)
    L.PREFAULT_GB = min(6.0, max(1.0, 6 * MB / 1024))
    t0 = time.perf_counter()
    runs = {p: [] for p in PEERS}
    try:
        make(work, n)
        print(f"dataset: {n} int16 volumes of {VOL[2]}x{VOL[1]}x{VOL[0]} ({n * row / 1e6:.0f} MB; "
              f"{2 * n * row / 1e6:.0f} MB float32); made in {time.perf_counter() - t0:.0f} s",
              flush=True)
        check_same(work, n)
        for rnd in range(ROUNDS):
            for peer in PEERS if rnd % 2 == 0 else PEERS[::-1]:
                gbs = measure(work, peer, n, lambda arr: L.seq(arr, 16) / 1e9)
                rate = measure(work, peer, n, lambda arr: L.shuffled(
                    lambda idx: np.asarray(arr[idx]), n, BATCHES, seed=rnd)[0])
                runs[peer].append((gbs, rate))
                print(f"  round {rnd + 1}/{ROUNDS} {peer:6}: sequential {gbs:.2f} GB/s, "
                      f"shuffled {rate:,.0f} rows/s", flush=True)
    finally:
        L.remove_work(work, os.path.join(work, "mnt"))
    med = {p: np.median(np.array(r), axis=0) for p, r in runs.items()}
    print(f"\n{'peer':8} {'seq cold GB/s':>14} {'shuffled rows/s':>16}")
    for p in PEERS:
        print(f"{p:8} {med[p][0]:14.2f} {med[p][1]:16,.0f}")
    print()
    for k, what in ((0, "sequential"), (1, "shuffled")):
        r = med["nifti"][k] / med["npy"][k]
        print(f"nifti / npy {what}: {r:.2f}x (target >= {TARGET:g}x): "
              f"{'met' if r >= TARGET else 'NOT met'}")
    print(f"\n{ROUNDS} interleaved rounds (order alternating), medians, "
          f"{time.perf_counter() - t0:.0f} s; cold = page cache dropped, daemon restarted; "
          f"shuffled = sorted batches of {L.BATCH} random volumes.")


if __name__ == "__main__":
    main()
