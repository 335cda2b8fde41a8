#!/usr/bin/python3
"""Cold sequential reads of one uint8 array through a mount, per store
codec (the target: a mount of the store reads cold sequential at >= 1.0x
the .npy view): the .npy view and a store per SEQ_CODECS entry (pack
arguments as the blocks experiment's stores: CODEC[:LEVEL][@CHUNK_SIZE]), each
read start to end by one reader in 16 MiB reads of the float32 .dat.
"Cold" without dropping the machine's page cache: before each pass the
source file's pages alone are evicted (posix_fadvise DONTNEED), and each
pass mounts afresh (empty chunk cache). ROUNDS (3) interleaved, medians.
Beside the mounts, "f32" reads the materialised float32 file (the same
x / 255, written by numpy) start to end the same way, its pages evicted
too: the copy users make today ("the sparse set: cold sequential >= 1.2x
the materialised float32 file").

SEQ_DATA: photos (SEQ_ROWS rows, 2048: the python3-skimage photographs in
224x224x3 tiles, repeated) or sparse (SEQ_MB, 64, of codec_survey.py's
MNIST-like 28x28 strokes: 16 MB generated, repeated).

  SEQ_DATA=photos SEQ_ROWS=2048 SEQ_CODECS=lz4,zstd,blosc-zstd-shuffle:4 \\
    DSVIEW=build/dsview /usr/bin/python3 bench/seq_bench.py
"""
import os
import re
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as L  # noqa: E402

DSVIEW = os.environ.get("DSVIEW", "build/dsview")
ROWS = int(os.environ.get("SEQ_ROWS", "2048"))
CODECS = os.environ.get("SEQ_CODECS", "lz4,zstd,blosc-zstd-shuffle:4").split(",")
ROUNDS = int(os.environ.get("ROUNDS", "3"))
DATA = os.environ.get("SEQ_DATA", "photos")
SPARSE_MB = int(os.environ.get("SEQ_MB", "64"))


def read_all(path):
    """GB/s of one reader reading path start to end in 16 MiB read()s."""
    t = time.perf_counter()
    n = 0
    with open(path, "rb", buffering=0) as f:
        while True:
            b = f.read(16 << 20)
            if not b:
                break
            n += len(b)
    return n / (time.perf_counter() - t) / 1e9


def one_pass(work, name, src_file):
    L.evict(src_file)
    if name == "f32":
        return read_all(src_file)
    mnt = os.path.join(work, "mnt")
    os.makedirs(mnt, exist_ok=True)
    subprocess.run([DSVIEW, "mount", "--log", os.path.join(work, "log"),
                    os.path.join(work, name + ".ini"), mnt], check=True)
    try:
        return read_all(os.path.join(mnt, "v.dat"))
    finally:
        subprocess.run([DSVIEW, "umount", mnt], check=True)


def make_data(path):
    """The uint8 rows (SEQ_DATA); @return a line saying what they are."""
    if DATA == "sparse":
        import codec_survey
        x = codec_survey.sparse(np.random.default_rng(7))[0]
        np.save(path, np.concatenate([x] * max(1, round(SPARSE_MB * 1e6 / x.nbytes))))
        return f"sparse 28x28 strokes ({x.shape[0]} rows generated, repeated)"
    return f"{L.photo_rows(path, ROWS)} photograph tiles, repeated to {ROWS} rows"


def main():
    work = L.work_dir("seq")
    try:
        u8 = os.path.join(work, "u8.npy")
        what = make_data(u8)
        print(f"data: {what} ({os.path.getsize(u8) / 1e6:.0f} MB)")
        f32 = os.path.join(work, "f32.npy")
        np.save(f32, np.load(u8, mmap_mode="r") * np.float32(1 / 255))
        files = {"f32": f32, "npy": u8}
        info = {"f32": "materialised float32, read directly", "npy": ""}
        for spec in CODECS:
            out = os.path.join(work, L.safe_name(spec) + ".h5")
            r = subprocess.run([DSVIEW, "pack", "--dataset", "x", *L.store_args(spec), u8, out],
                               check=True, capture_output=True, text=True)
            files[spec] = out
            summary = r.stdout.strip().splitlines()[-1].split(", ", 1)[1]
            info[spec] = re.split(r", [0-9.]+ s \(", summary)[0]
        for name, path in list(files.items())[1:]:
            src = "u8.npy" if name == "npy" else f"{L.safe_name(name)}.h5:/x"
            with open(os.path.join(work, L.safe_name(name) + ".ini"), "w") as f:
                f.write(f"[v]\nsource = {src}\nscale = {1/255!r}\n")
        res = {name: [] for name in files}
        for _ in range(ROUNDS):
            for name, path in files.items():
                res[name].append(one_pass(work, L.safe_name(name), path))
        npy, f32 = (float(np.median(res[k])) for k in ("npy", "f32"))
        print(f"\n{'store':26} {'GB/s out':>9} {'vs npy':>7} {'vs f32':>7}  on disk")
        for name in files:
            g = float(np.median(res[name]))
            print(f"{name:26} {g:9.2f} {g / npy:7.2f} {g / f32:7.2f}  "
                  f"{os.path.getsize(files[name]) / 1e6:.0f} MB  {info[name]}")
        print(f"\n{ROUNDS} rounds, medians; one reader, 16 MiB read()s of the float32 .dat; "
              f"the source file's pages evicted before each pass, fresh mount; "
              f"{os.cpu_count()} cores")
    finally:
        L.remove_work(work, os.path.join(work, "mnt"))


if __name__ == "__main__":
    main()
