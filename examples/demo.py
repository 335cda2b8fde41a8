#!/usr/bin/python3
"""dsview demo: make a small uint8 image dataset, store it raw (.npy) and
LZ4-compressed with `dsview pack` (HDF5 filter 32004), mount both as normalised views, read them
with numpy, check the bytes against a numpy float64 reference, print timings,
unmount.

Run with `make demo` (it builds dsview first and sets DSVIEW)."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

DSVIEW = os.environ.get("DSVIEW", os.path.join(os.path.dirname(__file__), "..", "build", "dsview"))
MEAN = np.array([0.485, 0.456, 0.406])
STD = np.array([0.229, 0.224, 0.225])


def reference(x):
    """(x/255 - mean)/std in float64, rounded once to float32."""
    return ((x.astype(np.float64) * (1 / 255) - MEAN) / STD).astype(np.float32)


def images(n, h=64, w=64):
    """Smooth image-like uint8 data (gradients + noise), compressible like photos."""
    rng = np.random.default_rng(0)
    yy, xx = np.mgrid[0:h, 0:w]
    out = np.empty((n, h, w, 3), np.uint8)
    for i in range(n):
        base = (xx * rng.uniform(0.2, 1.5) + yy * rng.uniform(0.2, 1.5) + rng.uniform(0, 255)) % 256
        for c in range(3):
            noise = rng.integers(-1, 2, (h, w)) * (rng.random((h, w)) < 0.3)
            out[i, :, :, c] = np.clip(np.round(base * (0.6 + 0.2 * c)) + noise, 0, 255)
    return out


def main():
    work = tempfile.mkdtemp(prefix="dsview-demo-")
    mnt = os.path.join(work, "mnt")
    log = os.path.join(work, "dsview.log")
    n = int(os.environ.get("DEMO_ROWS", "4000"))
    print(f"dsview demo in {work}")
    x = images(n)
    np.save(os.path.join(work, "stim.npy"), x)
    size_mb = x.nbytes / 1e6

    # dsview pack: LZ4 + Fletcher32, written through a temporary file
    r = subprocess.run([DSVIEW, "pack", os.path.join(work, "stim.npy"), os.path.join(work, "stim.h5")],
                       capture_output=True, text=True, check=True)
    print(r.stdout.strip())
    h5_mb = os.path.getsize(os.path.join(work, "stim.h5")) / 1e6
    print(f"dataset: {n} images 64x64x3 uint8 = {size_mb:.1f} MB raw, {h5_mb:.1f} MB LZ4 store")

    with open(os.path.join(work, "demo.ini"), "w") as f:
        f.write(f"""[stim]
source = stim.npy
scale  = {1/255!r}
mean   = 0.485 0.456 0.406
std    = 0.229 0.224 0.225
channel_axis = -1

[stim_lz4]
source = stim.h5:/stim
dtype  = bfloat16
scale  = {1/255!r}
mean   = 0.485 0.456 0.406
std    = 0.229 0.224 0.225
""")
    subprocess.run([DSVIEW, "mount", "--log", log, os.path.join(work, "demo.ini"), mnt], check=True)
    ok = False
    try:
        print(f"mounted: {sorted(os.listdir(mnt))}")
        ref = reference(x)

        t = time.perf_counter()
        a = np.load(os.path.join(mnt, "stim.npy"), mmap_mode="r")
        got = np.array(a)
        dt = time.perf_counter() - t
        exact = np.array_equal(got.view(np.uint32), ref.view(np.uint32))
        print(f"stim.npy: shape {a.shape} {a.dtype}, {got.nbytes / 1e6:.0f} MB in {dt:.3f} s "
              f"= {got.nbytes / dt / 1e9:.2f} GB/s sequential; bytes equal to numpy float64 "
              f"reference: {exact}")

        b = np.memmap(os.path.join(mnt, "stim_lz4.dat"), dtype=np.uint16, mode="r",
                      shape=x.shape)
        t = time.perf_counter()
        gotb = np.array(b)
        dt = time.perf_counter() - t
        bits = ref.view(np.uint32).astype(np.uint64)
        refb = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
        print(f"stim_lz4.dat (bfloat16 from LZ4): {gotb.nbytes / 1e6:.0f} MB in {dt:.3f} s = "
              f"{gotb.nbytes / dt / 1e9:.2f} GB/s; bytes equal to reference: "
              f"{np.array_equal(gotb, refb)}")

        rng = np.random.default_rng(1)
        order = rng.permutation(n)
        batch = 64
        t = time.perf_counter()
        for i in range(0, n, batch):
            idx = np.sort(order[i:i + batch])
            _ = np.array(a[idx])
        dt_dsv = time.perf_counter() - t
        u8 = np.load(os.path.join(work, "stim.npy"), mmap_mode="r")
        t = time.perf_counter()
        for i in range(0, n, batch):
            idx = np.sort(order[i:i + batch])
            _ = ((u8[idx].astype(np.float32) / 255 - MEAN.astype(np.float32)) / STD.astype(np.float32))
        dt_np = time.perf_counter() - t
        print(f"shuffled batches of {batch}: dsview {n / dt_dsv:,.0f} rows/s, "
              f"numpy uint8 + normalise in Python {n / dt_np:,.0f} rows/s (both warm)")
        with open(os.path.join(mnt, ".stats.json")) as f:
            st = json.load(f)
        print(f"daemon: backend {st['backend']}, kernel {st['kernel']}, "
              f"{st['bytes_served'] / 1e6:.0f} MB served on request, {st['bytes_readahead'] / 1e6:.0f} MB "
              f"read ahead, {st['chunks_decoded']} LZ4 chunks decoded (cache hits {st['cache_hits']}), "
              f"errors {st['errors']}")
        ok = exact and np.array_equal(gotb, refb)
        del a, b, u8  # close the memmaps: a mount with open files is busy
    finally:
        rc = subprocess.run([DSVIEW, "umount", mnt]).returncode
        print("unmounted" if rc == 0 else "umount FAILED")
        ok = ok and rc == 0
    if rc == 0:
        shutil.rmtree(work, ignore_errors=True)
    if not ok:
        print("demo: MISMATCH against the reference", file=sys.stderr)
        return 1
    print("demo: OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
