"""A NIfTI image against the .npy of the same array, sequential and shuffled.

One int16 4-D image of 64x64x40 volumes,
written by nibabel as a NIfTI-1 .nii (scl_slope/scl_inter set, as
scanners write them) and as the same C-order array in a .npy. Both are
served as float32 (x * slope + inter), the .npy through a manifest's
scale/offset, so the views hold the same values (checked before the
rounds) and differ only in the source:
  nifti   the .nii, its scaling from its header
  npy     the .npy, scale and offset in the manifest
Each cold: a sequential pass (GB/s of float32, 16 volumes a read) and
sorted shuffled batches of 256 volumes (rows/s)."""
import types

import numpy as np

from bench.harness import Experiment, Metric, Peer, Phase, Setting, Target
from bench.mounts import dsview_peer, view_seq, view_shuffled

VOL = (40, 64, 64)  # (Z, Y, X): one row of the view
SLOPE, INTER = 0.0123, -7.5


def make(run, point):
    import nibabel as nib
    row = int(np.prod(VOL)) * 2
    n = max(2 * run.s.batch, run.s.mb * 1000 * 1000 // row)
    x = np.lib.format.open_memmap(run.path("v.npy"), "w+", np.int16, (n, *VOL))
    rng = np.random.default_rng(0)
    for i in range(0, n, 64):
        k = min(64, n - i)
        x[i:i + k] = rng.integers(-2000, 2000, (k, *VOL), dtype=np.int16)
    x.flush()
    # nibabel's (X, Y, Z, T) is the transpose: the file holds x's C order
    img = nib.Nifti1Image(x.T, np.eye(4), dtype=np.int16)
    img.header.set_slope_inter(SLOPE, INTER)
    nib.save(img, run.path("v.nii"))
    del x
    # the values nibabel scales to, from the header's float32 pair
    hdr = nib.load(run.path("v.nii")).dataobj
    slope, inter = float(hdr.slope), float(hdr.inter)
    with open(run.path("nifti.ini"), "w") as f:
        f.write(f"[v]\nsource = {run.path('v.nii')}\n")
    with open(run.path("npy.ini"), "w") as f:
        f.write(f"[v]\nsource = {run.path('v.npy')}\nscale = {slope!r}\noffset = {inter!r}\n")
    return types.SimpleNamespace(
        n=n, shape=(n, *VOL), nifti=run.path("nifti.ini"), npy=run.path("npy.ini"),
        info={"volumes": n, "mb": round(n * row / 1e6), "f32_mb": round(2 * n * row / 1e6)})


def view(m, data):
    return np.memmap(m.path("v.dat"), np.float32, "r", shape=data.shape)


def check_same(run, data, peers):
    """The two views hold the same bytes (a few rows), so the race is fair."""
    rows = [0, data.n // 2, data.n - 1]
    got = {}
    for peer in peers:
        m = run.mounts.dsview(getattr(data, peer))
        a = view(m, data)
        got[peer] = np.array(a[rows]).tobytes()
        del a
        run.mounts.close(m)
    if len(set(got.values())) > 1:
        raise SystemExit("nifti and npy views differ: not the same values")


EXPERIMENT = Experiment(
    name="nifti",
    doc=__doc__,
    settings=[Setting("mb", 256, "MB of int16 image", quick=8),
              Setting("batches", 8, "shuffled batches (or 15 s)", quick=2),
              Setting("batch", 256, "volumes a shuffled batch", quick=16)],
    data=make,
    check=check_same,
    peers=[Peer("nifti", "the .nii through dsview", *dsview_peer("nifti")),
           Peer("npy", "the .npy with the same scale/offset", *dsview_peer("npy"))],
    phases=[Phase("seq", view_seq()), Phase("shuf", view_shuffled())],
    metrics=[Metric("seq_gbs", "GB/s", "cold sequential, float32 out"),
             Metric("shuf_rows", "rows/s", "cold shuffled sorted batches of `batch` volumes")],
    targets=[Target("sequential", "seq_gbs", "nifti", "npy", 0.95),
             Target("shuffled", "shuf_rows", "nifti", "npy", 0.95)],
)
