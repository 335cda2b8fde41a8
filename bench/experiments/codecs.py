"""Every `dsview pack` codec on five data sets: ratio, one-core encode and decode, pack.

Per data set (the sweep; bench/datasets.py makes them, the same
seeds): photos (skimage's photographs in 224x224x3 uint8 tiles), sparse
(MNIST-like strokes), volume (smooth int16 64^3), eeg (float32 64 x 1000),
tokens (uint16 Zipf ids). Each codec (a peer) through dsview's own C
encoders and decoders (bench/codec_speed.c: the decoders the read path
runs), chunks of about 1 MiB of whole rows (photographs: 7 tiles), every
chunk encoded once and decoded 3 times (best pass) and checked: the ratio
(raw / (encoded + the 4-byte Fletcher32 trailer)), encode MB/s, decode
GB/s of raw bytes and the float32 output that makes (raw x 4 / element
size: the bar `pack --codec auto` holds a codec to, >= 2 GB/s); with
--pack 1 also `dsview pack --codec C --threads 2` MB/s (warm cache,
fsync included). Beside them, as peers py:NAME, the Python libraries
behind the HDF5 filters h5py + hdf5plugin read (Debian's python3-lz4,
python3-zstandard, python3-blosc: LZ4 blocks, one zstd frame a chunk,
Blosc-1 buffers on one thread at clevel 5) on the same chunks, in
this process: ratio (no trailer), encode MB/s and decode GB/s (best of
--repeat), every chunk's round trip checked; the targets report
dsview's decoders against them."""
import json
import os
import re
import subprocess
import time
import types

import numpy as np

from bench import datasets as S
from bench.harness import Experiment, Metric, Peer, Phase, Setting, Target

CODECS = ["none:0", "lz4:1", "lz4hc:9", "zstd:1", "zstd:3", "zstd:6", "zstd:9", "zstd:12",
          "zstd:15", "zstd:19", "blosc-lz4-noshuffle:5", "blosc-lz4-shuffle:5",
          "blosc-lz4-bitshuffle:5", "blosc-zstd-noshuffle:5", "blosc-zstd-shuffle:3",
          "blosc-zstd-shuffle:4", "blosc-zstd-shuffle:5", "blosc-zstd-bitshuffle:5",
          "bitshuffle-lz4:0", "bitshuffle-zstd:3"]
PY = ["py:lz4", "py:lz4hc-9", "py:zstd-1", "py:zstd-3", "py:zstd-9", "py:zstd-19",
      "py:blosc-lz4-noshuf", "py:blosc-lz4-shuf", "py:blosc-lz4-bitshuf", "py:blosc-zstd-noshuf",
      "py:blosc-zstd-shuf", "py:blosc-zstd-bitshuf"]
SETS = {"photos": lambda rng: S.photos(), "sparse": S.sparse, "volume": S.volume, "eeg": S.eeg,
        "tokens": S.tokens}


def make(run, name):
    if name not in SETS:
        raise SystemExit(f"codecs: no data set '{name}' (sets: {', '.join(SETS)})")
    S.MB = run.s.mb
    x, rows = SETS[name](np.random.default_rng(0))
    rows = rows or max(1, round(run.s.chunk / x[0].nbytes))
    npy, raw = run.path(name + ".npy"), run.path(name + ".bin")
    np.save(npy, x)
    x.tofile(raw)
    return types.SimpleNamespace(
        npy=npy, raw=raw, itemsize=x.dtype.itemsize, chunk=rows * x[0].nbytes,
        cleanup=lambda: [os.unlink(p) for p in (npy, raw)],
        info={"data": name, "dtype": str(x.dtype), "row": str(x.shape[1:]),
              "mb": round(x.nbytes / 1e6, 1), "chunk_rows": rows})


def pack_mbps(run, data, codec, level):
    out = run.path("store.h5")
    args = [run.dsview, "pack", "--force", "--threads", "2", "--codec", codec, "--chunk-size",
            str(data.chunk)] + (["--level", str(level)] if level else []) + [data.npy, out]
    t0 = time.perf_counter()
    r = subprocess.run(args, capture_output=True, text=True)
    dt = time.perf_counter() - t0
    if r.returncode:
        raise RuntimeError(f"{' '.join(args)}: {r.stderr}")
    if not re.search(r"\(([0-9.]+)x\)", r.stdout):
        raise RuntimeError(f"pack printed no ratio: {r.stdout}")
    os.unlink(out)
    return os.path.getsize(data.npy) / dt / 1e6


def measure(run, data, peer, m, rnd):
    if peer in PY:
        return py_measure(run, data, peer)
    r = subprocess.run([run.bin("codec_speed"), data.raw, str(data.itemsize), str(data.chunk),
                        "3", peer], capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(f"codec_speed {peer}: {r.stderr}")
    j = json.loads(r.stdout.splitlines()[0])
    out = {"ratio": j["ratio"], "encode_mbps": j["encode_MBps"], "decode_gbps": j["decode_GBps"],
           "f32_gbps": j["float32_out_GBps"]}
    if run.s.pack:
        out["pack_mbps"] = pack_mbps(run, data, j["codec"], j["level"])
    return out


def py_codec(name, itemsize):
    """(encode(bytes), decode(bytes, n)) of a py: peer."""
    import blosc
    import lz4.block
    import zstandard
    kind = name[3:]
    if kind.startswith("lz4"):
        hc = {"mode": "high_compression", "compression": 9} if kind == "lz4hc-9" else {}
        return (lambda b: lz4.block.compress(b, store_size=False, **hc),
                lambda c, n: lz4.block.decompress(c, uncompressed_size=n))
    if kind.startswith("zstd"):
        cz, dz = zstandard.ZstdCompressor(level=int(kind[5:])), zstandard.ZstdDecompressor()
        return cz.compress, lambda c, n: dz.decompress(c)
    blosc.set_nthreads(1)
    _, cname, sh = kind.split("-")
    shuffle = {"noshuf": blosc.NOSHUFFLE, "shuf": blosc.SHUFFLE, "bitshuf": blosc.BITSHUFFLE}[sh]
    return (lambda b: blosc.compress(b, typesize=itemsize, clevel=5, shuffle=shuffle, cname=cname),
            lambda c, n: blosc.decompress(c))


def best(fn, repeat):
    """(the least seconds of repeat calls, the last call's result)"""
    least = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        dt = time.perf_counter() - t0
        least = dt if least is None else min(least, dt)
    return least, out


def py_measure(run, data, peer):
    with open(data.raw, "rb") as f:
        raw = f.read()
    chunks = [raw[i:i + data.chunk] for i in range(0, len(raw), data.chunk)]
    enc, dec = py_codec(peer, data.itemsize)
    te, packed = best(lambda: [enc(c) for c in chunks], run.s.repeat)
    td, back = best(lambda: [dec(e, len(c)) for e, c in zip(packed, chunks)], run.s.repeat)
    if back != chunks:
        raise RuntimeError(f"{peer}: a chunk's round trip differs")
    gbps = len(raw) / td / 1e9
    return {"ratio": len(raw) / sum(len(e) for e in packed), "encode_mbps": len(raw) / te / 1e6,
            "decode_gbps": gbps, "f32_gbps": gbps * 4 / data.itemsize}


def speed_missing(run):
    exe = run.bin("codec_speed")
    return None if os.path.exists(exe) else f"{exe} missing (make build/bench/codec_speed)"


EXPERIMENT = Experiment(
    name="codecs",
    doc=__doc__,
    settings=[Setting("rounds", 1, "rounds (codec_speed takes the best of 3 decodes itself)"),
              Setting("sets", list(SETS), "the data sets", quick=["sparse"]),
              Setting("mb", 16, "MB of each data set (photographs: all 74 tiles)", quick=1),
              Setting("chunk", 1 << 20, "bytes of whole rows a chunk (about)", quick=1 << 16),
              Setting("pack", 0, "1: also `dsview pack --codec C --threads 2`", quick=1),
              Setting("repeat", 3, "the py: peers' passes, best of", quick=1)],
    sweep="sets",
    data=make,
    peers=[Peer(c, f"codec {c}", missing=speed_missing) for c in CODECS]
    + [Peer(c, f"the Python library's {c[3:]}") for c in PY],
    phases=[Phase("speed", measure, cold=False)],
    metrics=[Metric("ratio", "x", "raw / stored bytes"),
             Metric("encode_mbps", "MB/s", "one core"),
             Metric("decode_gbps", "GB/s", "one core, raw bytes"),
             Metric("f32_gbps", "GB/s", "one core, as float32 output"),
             Metric("pack_mbps", "MB/s", "dsview pack, 2 threads")],
    targets=[Target("zstd:3 ratio vs lz4", "ratio", "zstd:3", "lz4:1", None),
             Target("zstd:3 float32 decode vs lz4", "f32_gbps", "zstd:3", "lz4:1", None),
             Target("lz4 decode, dsview vs python3-lz4", "decode_gbps", "lz4:1", "py:lz4", None),
             Target("zstd:3 decode, dsview vs python3-zstandard", "decode_gbps", "zstd:3",
                    "py:zstd-3", None),
             Target("blosc-lz4-shuffle decode, dsview vs python3-blosc", "decode_gbps",
                    "blosc-lz4-shuffle:5", "py:blosc-lz4-shuf", None)],
)
