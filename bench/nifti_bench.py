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
import sys
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
    work = L.work_dir("nifti")
    row = int(np.prod(VOL)) * 2
    n = max(2 * L.BATCH, MB * 1000 * 1000 // row)
    L.scale_prefault(MB)
    t0 = time.perf_counter()
    try:
        make(work, n)
        print(f"dataset: {n} int16 volumes of {VOL[2]}x{VOL[1]}x{VOL[0]} ({n * row / 1e6:.0f} MB; "
              f"{2 * n * row / 1e6:.0f} MB float32); made in {time.perf_counter() - t0:.0f} s",
              flush=True)
        check_same(work, n)
        runs = L.interleaved(
            PEERS, ROUNDS,
            lambda peer, rnd: L.seq_and_shuffled(lambda fn: measure(work, peer, n, fn), BATCHES, rnd),
            lambda r: f"sequential {r[0]:.2f} GB/s, shuffled {r[1]:,.0f} rows/s", 6, alternate=True)
    finally:
        L.remove_work(work, os.path.join(work, "mnt"))
    med = L.medians(runs)
    L.table(PEERS, med, [("seq cold GB/s", 14, ".2f"), ("shuffled rows/s", 16, ",.0f")], 8)
    print()
    for k, what in ((0, "sequential"), (1, "shuffled")):
        L.target(f"nifti / npy {what}", med["nifti"][k] / med["npy"][k], ">=", TARGET)
    L.cold_footer(ROUNDS, t0, alternate=True, rows="volumes")


if __name__ == "__main__":
    main()
