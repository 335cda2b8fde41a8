#!/usr/bin/python3
"""The codec table (docs/benchmarks/): for every codec `dsview pack`
writes, on the survey's five data sets (codec_survey.py makes them; the
same seeds), the ratio, single-core encode MB/s and single-core decode
GB/s through dsview's own C encoders and decoders (build/bench/codec_speed:
the decoders the read path runs, not a Python binding's), and with
TABLE_PACK=1 also `dsview pack --codec C --threads 2` on the set's .npy
(wall time of the whole pack, fsync included, page cache warm).

Decode GB/s is of raw bytes; "f32 GB/s" is the float32 output that makes
(raw x 4 / element size): the bar `pack --codec auto` holds a codec to
(>= 2 GB/s). Chunks as pack writes them by default: about 1 MiB of whole
rows (photographs: 7 tiles), LZ4 in 16 KiB blocks.

  make build/bench/codec_speed
  SURVEY_MB=16 TABLE_PACK=1 /usr/bin/python3 bench/codec_table.py
  (TABLE_SETS=photos,sparse  TABLE_CODECS=zstd:3,zstd:9  TABLE_CHUNK=262144)
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import codec_survey as S  # noqa: E402

SPEED = os.environ.get("CODEC_SPEED", "build/bench/codec_speed")
DSVIEW = os.environ.get("DSVIEW", "build/dsview")
PACK = os.environ.get("TABLE_PACK", "0") == "1"
CHUNK = int(os.environ.get("TABLE_CHUNK", str(1 << 20)))
CODECS = [c for c in os.environ.get("TABLE_CODECS", "").split(",") if c]


def pack_rate(npy, codec, level, chunk, tmp):
    out = os.path.join(tmp, "store.h5")
    args = [DSVIEW, "pack", "--force", "--threads", "2", "--codec", codec,
            "--chunk-size", str(chunk)] + (["--level", str(level)] if level else []) + [npy, out]
    t0 = time.perf_counter()
    r = subprocess.run(args, capture_output=True, text=True)
    dt = time.perf_counter() - t0
    if r.returncode:
        raise SystemExit(f"{args}: {r.stderr}")
    ratio = float(re.search(r"\(([0-9.]+)x\)", r.stdout).group(1))
    os.unlink(out)
    return os.path.getsize(npy) / dt / 1e6, ratio


def main():
    rng = np.random.default_rng(0)
    sets = [("photos", S.photos), ("sparse", lambda: S.sparse(rng)), ("volume", lambda: S.volume(rng)),
            ("eeg", lambda: S.eeg(rng)), ("tokens", lambda: S.tokens(rng))]
    only = os.environ.get("TABLE_SETS")
    print(f"one core, dsview's codecs (codec_speed), best of 3 decodes; MB = 1e6 bytes of input"
          f"{'; pack: 2 threads, warm cache, with fsync' if PACK else ''}")
    with tempfile.TemporaryDirectory() as tmp:
        for name, make in sets:
            if only and name not in only.split(","):
                continue
            x, rows = make()
            rows = rows or max(1, round(CHUNK / x[0].nbytes))
            chunk = rows * x[0].nbytes
            npy = os.path.join(tmp, name + ".npy")
            np.save(npy, x)
            raw = os.path.join(tmp, name + ".bin")
            x.tofile(raw)
            print(f"\n{name}: {x.dtype} rows {x.shape[1:]}, {x.nbytes / 1e6:.1f} MB, chunks of "
                  f"{rows} rows ({chunk / 1e6:.2f} MB)\n")
            print("| codec | level | ratio | encode MB/s (1 core) | decode GB/s (1 core) | f32 GB/s |"
                  + (" pack MB/s (2 threads) |" if PACK else ""))
            print("|---|---:|---:|---:|---:|---:|" + ("---:|" if PACK else ""))
            r = subprocess.run([SPEED, raw, str(x.dtype.itemsize), str(chunk), "3"] + CODECS,
                               capture_output=True, text=True)
            if r.returncode:
                raise SystemExit(f"codec_speed {name}: {r.stderr}")
            for line in r.stdout.splitlines():
                j = json.loads(line)
                cells = [j["codec"], str(j["level"]), f"{j['ratio']:.2f}", f"{j['encode_MBps']:.0f}",
                         f"{j['decode_GBps']:.2f}", f"{j['float32_out_GBps']:.2f}"]
                if PACK:
                    mbps, _ = pack_rate(npy, j["codec"], j["level"], chunk, tmp)
                    cells.append(f"{mbps:.0f}")
                print("| " + " | ".join(cells) + " |", flush=True)
            os.unlink(raw)
            os.unlink(npy)


if __name__ == "__main__":
    main()
