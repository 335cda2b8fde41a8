#!/usr/bin/python3
"""Codec survey: ratio, compression MB/s and decompression GB/s,
one core, of the codecs behind the standard HDF5 filters h5py+hdf5plugin
read, on five kinds of data, chunk by chunk in memory (no HDF5, no disk:
the codec's own cost).

Codecs (the libraries Debian ships, as the filters call them):
  lz4 / lz4hc-9   32004's LZ4 block (python3-lz4), one block per chunk
  zstd-1..19      32015: one frame per chunk (python3-zstandard)
  blosc-*         32001: Blosc-1 buffers (python3-blosc), one thread,
                  shuffle none/byte/bit, lz4 or zstd inside (clevel 5)
Bitshuffle's own filter (32008) is not in Debian's Python; blosc's
bit-shuffle + lz4 is the same transform with another framing.

Data (SURVEY_MB, default 16, of each; photographs: all 74 tiles):
  photos   python3-skimage's photographs cut into 224x224x3 uint8 tiles
           (astronaut, chelsea, coffee, hubble, ihc, motorcycle L+R,
           retina, rocket), chunks of 7 tiles
  sparse   MNIST-like 28x28 uint8 strokes on black
  volume   smooth int16 volumes 64^3 (smoothed noise plus structure, x300)
  eeg      float32 64 channels x 1000 samples (rhythms + 1/f noise)
  tokens   uint16 token ids (Zipf over 50,257)
Chunks hold whole rows, about 1 MiB (SURVEY_CHUNK).

  /usr/bin/python3 bench/codec_survey.py
"""
import os
import time

import numpy as np

MB = int(os.environ.get("SURVEY_MB", "16"))
CHUNK = int(os.environ.get("SURVEY_CHUNK", str(1 << 20)))
REPEAT = int(os.environ.get("SURVEY_REPEAT", "3"))


def photos():
    from skimage import data
    tiles = []
    for name in ("astronaut", "chelsea", "coffee", "hubble_deep_field", "immunohistochemistry",
                 "stereo_motorcycle", "retina", "rocket"):
        im = getattr(data, name)()
        for im in im[:2] if isinstance(im, tuple) else (im,):
            im = im[..., :3]
            for y in range(0, im.shape[0] - 223, 224):
                for x in range(0, im.shape[1] - 223, 224):
                    tiles.append(im[y:y + 224, x:x + 224])
    return np.stack(tiles), 7


def sparse(rng):
    n = MB * 1000 * 1000 // 784
    x = np.zeros((n, 28, 28), np.uint8)
    for i in range(n):
        for _ in range(rng.integers(2, 5)):  # a few thick strokes
            r0, c0 = rng.integers(4, 24, 2)
            dr, dc = rng.uniform(-1, 1, 2)
            for t in range(rng.integers(6, 14)):
                r, c = int(r0 + dr * t), int(c0 + dc * t)
                if 1 <= r < 27 and 1 <= c < 27:
                    x[i, r - 1:r + 2, c - 1:c + 1] = rng.integers(180, 256)
    return x, None


def volume(rng):
    from scipy.ndimage import gaussian_filter
    n = max(1, MB * 1000 * 1000 // (64 ** 3 * 2))
    zz, yy, xx = np.mgrid[0:64, 0:64, 0:64] - 32
    brain = (zz ** 2 + yy ** 2 * 1.3 + xx ** 2 * 0.8 < 28 ** 2) * 1.0
    out = np.empty((n, 64, 64, 64), np.int16)
    for i in range(n):
        v = gaussian_filter(rng.standard_normal((64, 64, 64)), 2) * 8 + brain * 20
        out[i] = np.round(v * 300 / 8).astype(np.int16)
    return out, None


def eeg(rng):
    n = max(1, MB * 1000 * 1000 // (64 * 1000 * 4))
    t = np.arange(1000) / 250.0
    out = np.empty((n, 64, 1000), np.float32)
    for i in range(n):
        f = rng.uniform(1, 30, (64, 3))
        sig = sum(np.sin(2 * np.pi * f[:, k:k + 1] * t) * rng.uniform(5, 40, (64, 1)) for k in range(3))
        pink = np.cumsum(rng.standard_normal((64, 1000)), axis=1) * 0.5
        out[i] = (sig + pink + rng.standard_normal((64, 1000)) * 2).astype(np.float32)
    return out, None


def tokens(rng):
    n = MB * 1000 * 1000 // 2 // 2048
    ids = np.minimum(rng.zipf(1.2, n * 2048), 50257) - 1
    return ids.astype(np.uint16).reshape(n, 2048), None


def chunks_of(x, rows):
    if rows is None:
        rows = max(1, CHUNK // x[0].nbytes)
    return [np.ascontiguousarray(x[i:i + rows]).tobytes() for i in range(0, len(x), rows)]


def codecs(itemsize):
    import blosc
    import lz4.block
    import zstandard
    blosc.set_nthreads(1)
    out = [("lz4", lambda b: lz4.block.compress(b, store_size=False),
            lambda c, n: lz4.block.decompress(c, uncompressed_size=n)),
           ("lz4hc-9", lambda b: lz4.block.compress(b, mode="high_compression", compression=9,
                                                    store_size=False),
            lambda c, n: lz4.block.decompress(c, uncompressed_size=n))]
    for lvl in (1, 3, 9, 19):
        cz, dz = zstandard.ZstdCompressor(level=lvl), zstandard.ZstdDecompressor()
        out.append((f"zstd-{lvl}", cz.compress, lambda c, n, dz=dz: dz.decompress(c)))
    for sh, sname in ((blosc.NOSHUFFLE, "noshuf"), (blosc.SHUFFLE, "shuf"),
                      (blosc.BITSHUFFLE, "bitshuf")):
        for cname in ("lz4", "zstd"):
            out.append((f"blosc-{cname}-{sname}",
                        lambda b, sh=sh, cname=cname: blosc.compress(b, typesize=itemsize, clevel=5,
                                                                     shuffle=sh, cname=cname),
                        lambda c, n: blosc.decompress(c)))
    return out


def best(fn, repeat):
    t = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        r = fn()
        t.append(time.perf_counter() - t0)
    return min(t), r


def main():
    rng = np.random.default_rng(0)
    sets = [("photos", photos), ("sparse", lambda: sparse(rng)), ("volume", lambda: volume(rng)),
            ("eeg", lambda: eeg(rng)), ("tokens", lambda: tokens(rng))]
    only = os.environ.get("SURVEY_SETS")
    print(f"one core, chunk by chunk in memory; best of {REPEAT}; MB = 1e6 bytes of input")
    for name, make in sets:
        if only and name not in only.split(","):
            continue
        x, rows = make()
        ch = chunks_of(x, rows)
        raw = sum(len(c) for c in ch)
        print(f"\n{name}: {x.dtype} rows {x.shape[1:]}, {raw / 1e6:.1f} MB in {len(ch)} chunks of "
              f"{len(ch[0]) / 1e6:.2f} MB")
        print(f"  {'codec':22} {'ratio':>6} {'pack MB/s':>10} {'decode GB/s':>12}")
        for cname, comp, dec in codecs(x.dtype.itemsize):
            tc, enc = best(lambda: [comp(c) for c in ch], REPEAT)
            td, back = best(lambda: [dec(e, len(c)) for e, c in zip(enc, ch)], REPEAT)
            if any(b != c for b, c in zip(back, ch)):
                raise SystemExit(f"{name} {cname}: round trip differs")
            stored = sum(len(e) for e in enc)
            print(f"  {cname:22} {raw / stored:6.2f} {raw / tc / 1e6:10.0f} {raw / td / 1e9:12.2f}",
                  flush=True)


if __name__ == "__main__":
    main()
