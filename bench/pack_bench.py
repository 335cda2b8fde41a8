#!/usr/bin/python3
"""Pack and verify benchmark (make bench). One run, one table.

Three uint8 datasets of BENCH_PACK_MB each (default 256):
  image   224x224x3 frames: smooth shapes in 32 levels with 5% speckle
  noise   uniform random bytes (LZ4 cannot compress them)
  mnist   28x28 frames, mostly zeros with a few strokes
For each: dsview's LZ4 on one core without any I/O (codec_bench: the
reference), then `dsview pack` with lz4 on 1 thread and on all cores, lz4hc on
all cores, h5py+hdf5plugin writing the same LZ4 store (the way users do it
today), and `dsview verify` of the lz4 store. Inputs are read warm from the
page cache; pack times include writing, closing and fsync of the output.
Ratios: pack MB/s (input bytes) over the one-core LZ4 MB/s of the same data."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

DSVIEW = os.environ.get("DSVIEW", "build/dsview")
CODEC_BENCH = os.environ.get("CODEC_BENCH", "build/bench/codec_bench")
MB = int(os.environ.get("BENCH_PACK_MB", "256"))


def make_image(path, nbytes, rng):
    h = w = 224
    n = max(8, nbytes // (h * w * 3))
    x = np.lib.format.open_memmap(path, "w+", np.uint8, (n, h, w, 3))
    yy, xx = np.mgrid[0:h, 0:w]
    for i in range(n):
        f, p = rng.uniform(0.005, 0.05, 4), rng.uniform(0, 6.3, 4)
        v = np.sin(xx * f[0] + p[0]) * np.cos(yy * f[1] + p[1]) + 0.5 * np.sin((xx + yy) * f[2] + p[2])
        for c in range(3):
            x[i, :, :, c] = np.clip(128 + 80 * v * (0.8 + 0.2 * c), 0, 255) // 8 * 8
        m = rng.random((h, w)) < 0.05
        x[i][m] = rng.integers(0, 256, (int(m.sum()), 3))
    x.flush()


def make_noise(path, nbytes, rng):
    n = max(8, nbytes // (224 * 224 * 3))
    x = np.lib.format.open_memmap(path, "w+", np.uint8, (n, 224, 224, 3))
    for i in range(0, n, 256):
        x[i:i + 256] = rng.integers(0, 256, x[i:i + 256].shape, dtype=np.uint8)
    x.flush()


def make_mnist(path, nbytes, rng):
    n = max(8, nbytes // 784)
    x = np.lib.format.open_memmap(path, "w+", np.uint8, (n, 28, 28))
    block = 8192
    for i in range(0, n, block):
        b = np.zeros((min(block, n - i), 28, 28), np.uint8)
        for _ in range(5):  # five strokes per digit, vectorised over the block
            r = rng.integers(4, 24, len(b))
            c0 = rng.integers(4, 20, len(b))
            ln = rng.integers(2, 8, len(b))
            v = rng.integers(128, 256, len(b))
            for k in range(8):
                on = k < ln
                b[np.flatnonzero(on), r[on], c0[on] + k] = v[on]
                b[np.flatnonzero(on), r[on] + 1, c0[on] + k] = v[on] // 2
        x[i:i + len(b)] = b
    x.flush()


def npy_data_offset(path):
    with open(path, "rb") as f:
        head = f.read(12)
    return 10 + head[8] + 256 * head[9]


def pack(inp, out, *opts):
    if os.path.exists(out):
        os.unlink(out)
    t = time.perf_counter()
    r = subprocess.run([DSVIEW, "pack", *opts, inp, out], capture_output=True, text=True)
    dt = time.perf_counter() - t
    if r.returncode:
        sys.exit(f"pack failed: {r.stderr}")
    m = re.search(r"\((\d+\.\d+)x\).*\((\d+\.\d+) s writing, (\d+\.\d+) s syncing\)", r.stdout)
    return dt, float(m.group(1)), float(m.group(2)), float(m.group(3))


def h5py_pack(inp, out):
    """What users do today: h5py + hdf5plugin.LZ4, the same chunk rows."""
    import h5py
    import hdf5plugin
    x = np.load(inp, mmap_mode="r")
    rows = max(1, round((1 << 20) / (x.nbytes // x.shape[0])))
    t = time.perf_counter()
    with h5py.File(out, "w") as f:
        d = f.create_dataset("x", shape=x.shape, dtype=x.dtype, chunks=(rows,) + x.shape[1:],
                             fletcher32=True, **hdf5plugin.LZ4())
        for i in range(0, x.shape[0], rows * 16):
            d[i:i + rows * 16] = x[i:i + rows * 16]
    fd = os.open(out, os.O_RDONLY)
    os.fsync(fd)
    os.close(fd)
    return time.perf_counter() - t


def verify(path):
    t = time.perf_counter()
    r = subprocess.run([DSVIEW, "verify", path], capture_output=True, text=True)
    dt = time.perf_counter() - t
    return dt if r.returncode == 0 else None


def main():
    work = tempfile.mkdtemp(prefix="dsview-packbench-", dir=os.environ.get("BENCH_DIR", "/var/tmp"))
    rng = np.random.default_rng(0)
    cores = os.cpu_count()
    print(f"pack benchmark: {MB} MB of uint8 per dataset, {cores} cores, in {work}")
    rows = []
    try:
        for name, make in (("image", make_image), ("noise", make_noise), ("mnist", make_mnist)):
            inp = os.path.join(work, name + ".npy")
            make(inp, MB * 1000 * 1000, rng)
            size = os.path.getsize(inp) - npy_data_offset(inp)
            with open(inp, "rb") as f:  # warm the page cache
                while f.read(1 << 24):
                    pass
            ref = json.loads(subprocess.run([CODEC_BENCH, inp, str(1 << 20), str(npy_data_offset(inp))],
                                            capture_output=True, text=True, check=True).stdout)
            one = ref["lz4_MBps"]
            rows.append((name, "lz4 (codec only)", "1", one, ref["lz4_ratio"], 1.0, "", ""))
            rows.append((name, "lz4hc (codec only)", "1", ref["lz4hc_MBps"], ref["lz4hc_ratio"],
                         ref["lz4hc_MBps"] / one, "", ""))
            out = os.path.join(work, name + ".h5")
            for label, opts, thr in (("pack lz4", ["--threads", "1"], "1"),
                                     ("pack lz4", [], str(cores)),
                                     ("pack lz4hc", ["--codec", "lz4hc"], str(cores))):
                dt, ratio, wr, sy = pack(inp, out, *opts)
                mbps = size / dt / 1e6
                rows.append((name, label, thr, mbps, ratio, mbps / one, f"{wr:.2f}", f"{sy:.2f}"))
            dt, ratio, _, _ = pack(inp, out)  # leave the lz4 store for verify
            h5 = os.path.join(work, name + "_h5py.h5")
            hdt = h5py_pack(inp, h5)
            rows.append((name, "h5py+hdf5plugin lz4", "1", size / hdt / 1e6, size / os.path.getsize(h5),
                         size / hdt / 1e6 / one, "", ""))
            os.unlink(h5)
            vdt = verify(out)
            if vdt is not None:
                rows.append((name, "verify lz4 store", str(cores), size / vdt / 1e6, ratio,
                             size / vdt / 1e6 / ref["decode_MBps"], "", ""))
                rows.append((name, "lz4 decode (codec only)", "1", ref["decode_MBps"], ratio, 1.0, "", ""))
            else:
                rows.append((name, "verify lz4 store", "-", 0, 0, 0, "", "unavailable"))
            os.unlink(inp)
            os.unlink(out)
        print()
        print(f"{'data':6} {'what':24} {'thr':>3} {'MB/s':>8} {'ratio':>6} {'vs 1-core':>9} "
              f"{'write s':>7} {'sync s':>6}")
        for r in rows:
            print(f"{r[0]:6} {r[1]:24} {r[2]:>3} {r[3]:8.0f} {r[4]:6.2f} {r[5]:8.2f}x {r[6]:>7} {r[7]:>6}")
        print("\nvs 1-core: pack/h5py rows over one-core LZ4 compression of the same bytes;"
              "\nverify over one-core LZ4 decoding. MB/s counts input (uncompressed) bytes.")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
