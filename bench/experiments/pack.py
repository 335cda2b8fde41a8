"""`dsview pack` and `dsview verify` against one-core LZ4 and h5py.

Per data set (the sweep), a uint8 .npy read warm from the page cache:
  image   224x224x3 frames: smooth shapes in 32 levels with 5% speckle
  noise   uniform random bytes (LZ4 cannot compress them)
  mnist   28x28 frames, mostly zeros with a few strokes
Peers, each MB/s of input (uncompressed) bytes and the ratio it reached:
  codec_lz4, codec_lz4hc, codec_decode   bench/codec_bench.c: dsview's
            LZ4 (fast, HC, decoding) on one core, no I/O: the references
  pack_1t   `dsview pack --threads 1` (lz4)
  pack      `dsview pack` (lz4, every core)
  pack_hc   `dsview pack --codec lz4hc` (every core)
  h5py      h5py + hdf5plugin.LZ4 writing the same chunks (with Fletcher32)
  verify    `dsview verify` of the lz4 store
Pack times include writing, closing and fsync of the output."""
import json
import os
import re
import subprocess
import time
import types

import numpy as np

from bench.harness import Experiment, Metric, Peer, Phase, Setting, Target


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


MAKERS = {"image": make_image, "noise": make_noise, "mnist": make_mnist}


def npy_data_offset(path):
    with open(path, "rb") as f:
        head = f.read(12)
    return 10 + head[8] + 256 * head[9]


def warm(path):
    with open(path, "rb") as f:
        while f.read(1 << 24):
            pass


def make(run, name):
    if name not in MAKERS:
        raise SystemExit(f"pack: no data set '{name}' (data sets: {', '.join(MAKERS)})")
    inp = run.path(name + ".npy")
    MAKERS[name](inp, run.s.mb * 1000 * 1000, np.random.default_rng(0))
    size = os.path.getsize(inp) - npy_data_offset(inp)
    return types.SimpleNamespace(inp=inp, size=size, out=run.path(name + ".h5"),
                                 info={"data": name, "mb": round(size / 1e6)},
                                 cleanup=lambda: [os.unlink(p) for p in (inp, run.path(name + ".h5"))
                                                  if os.path.exists(p)])


def codec(run, data, peer, _, rnd):
    warm(data.inp)
    exe = run.bin("codec_bench")
    ref = json.loads(subprocess.run([exe, data.inp, str(1 << 20), str(npy_data_offset(data.inp))],
                                    capture_output=True, text=True, check=True).stdout)
    key = {"codec_lz4": "lz4", "codec_lz4hc": "lz4hc", "codec_decode": "decode"}[peer]
    ratio = ref["lz4hc_ratio"] if key == "lz4hc" else ref["lz4_ratio"]
    return {"mbps": ref[f"{key}_MBps"], "ratio": ratio}


PACK_OPTS = {"pack_1t": ["--threads", "1"], "pack": [], "pack_hc": ["--codec", "lz4hc"]}


def pack(run, data, opts):
    if os.path.exists(data.out):
        os.unlink(data.out)
    t = time.perf_counter()
    r = subprocess.run([run.dsview, "pack", *opts, data.inp, data.out], capture_output=True,
                       text=True)
    dt = time.perf_counter() - t
    if r.returncode:
        raise RuntimeError(f"pack failed: {r.stderr}")
    m = re.search(r"\((\d+\.\d+)x\).*\((\d+\.\d+) s writing, (\d+\.\d+) s syncing\)", r.stdout)
    return {"mbps": data.size / dt / 1e6, "ratio": float(m.group(1)),
            "write_s": float(m.group(2)), "sync_s": float(m.group(3))}


def h5py_pack(run, data):
    """What users do without dsview: h5py + hdf5plugin.LZ4, 1 MiB chunks."""
    import h5py
    import hdf5plugin
    x = np.load(data.inp, mmap_mode="r")
    rows = max(1, round((1 << 20) / (x.nbytes // x.shape[0])))
    out = run.path("h5py.h5")
    t = time.perf_counter()
    with h5py.File(out, "w") as f:
        d = f.create_dataset("x", shape=x.shape, dtype=x.dtype, chunks=(rows,) + x.shape[1:],
                             fletcher32=True, **hdf5plugin.LZ4())
        for i in range(0, x.shape[0], rows * 16):
            d[i:i + rows * 16] = x[i:i + rows * 16]
    fd = os.open(out, os.O_RDONLY)
    os.fsync(fd)
    os.close(fd)
    dt = time.perf_counter() - t
    r = {"mbps": data.size / dt / 1e6, "ratio": data.size / os.path.getsize(out)}
    os.unlink(out)
    return r


def verify(run, data):
    r = pack(run, data, [])  # the lz4 store verify reads
    t = time.perf_counter()
    subprocess.run([run.dsview, "verify", data.out], capture_output=True, check=True)
    return {"mbps": data.size / (time.perf_counter() - t) / 1e6, "ratio": r["ratio"]}


def measure(run, data, peer, _, rnd):
    warm(data.inp)
    if peer.startswith("codec_"):
        return codec(run, data, peer, _, rnd)
    if peer == "h5py":
        return h5py_pack(run, data)
    if peer == "verify":
        return verify(run, data)
    return pack(run, data, PACK_OPTS[peer])


def codec_missing(run):
    exe = run.bin("codec_bench")
    return None if os.path.exists(exe) else f"{exe} missing (make build/bench/codec_bench)"


EXPERIMENT = Experiment(
    name="pack",
    doc=__doc__,
    settings=[Setting("data", ["image", "noise", "mnist"], "the data sets", quick=["image"]),
              Setting("mb", 256, "MB of uint8 per data set", quick=4)],
    sweep="data",
    data=make,
    peers=[Peer("codec_lz4", "one-core LZ4 compression, no I/O", missing=codec_missing),
           Peer("codec_lz4hc", "one-core LZ4HC compression", missing=codec_missing),
           Peer("codec_decode", "one-core LZ4 decoding", missing=codec_missing),
           Peer("pack_1t", "dsview pack --threads 1"),
           Peer("pack", "dsview pack, every core"),
           Peer("pack_hc", "dsview pack --codec lz4hc, every core"),
           Peer("h5py", "h5py + hdf5plugin.LZ4"),
           Peer("verify", "dsview verify of the lz4 store")],
    phases=[Phase("op", measure, cold=False)],
    metrics=[Metric("mbps", "MB/s", "input bytes a second"),
             Metric("ratio", "x", "input bytes / output bytes")],
    targets=[Target("pack, one thread, vs one-core LZ4", "mbps", "pack_1t", "codec_lz4", None),
             Target("pack vs one-core LZ4", "mbps", "pack", "codec_lz4", None),
             Target("pack lz4hc vs one-core LZ4", "mbps", "pack_hc", "codec_lz4", None),
             Target("h5py vs one-core LZ4", "mbps", "h5py", "codec_lz4", None),
             Target("verify vs one-core LZ4 decoding", "mbps", "verify", "codec_decode", None)],
)
