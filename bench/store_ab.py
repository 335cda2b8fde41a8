#!/usr/bin/python3
"""A/B of cold sequential memmap passes over the store experiment's data
(bench/experiments/store.py): several
dsview builds or knob settings, alternated round by round, medians, and what
each daemon saw (its /.stats.json) and spent (its CPU seconds).

    bench/store_ab.py DIR SIDE ROUNDS LABEL=DSVIEW:VIEW[:VAR=V,...] ...

DIR holds (or gets, on the first run) the store experiment's files for rows of
SIDE x SIDE x 3 uint8 (STORE_MB of them, default 512): u8.npy and its
LZ4 and zstd stores, mounted as the views npy, lz4 and zstd. Each LABEL is
one configuration: the dsview binary, the view read, and environment
variables for its daemon (DSVIEW_READAHEAD_KB=32768, say). A pass drops the
page cache (benchlib.drop_caches), mounts, reads the view's .dat through
np.memmap in slices of 32 MiB, as the store experiment's seq phase does, reads
/.stats.json and the daemon's CPU time, and unmounts. Printed per pass:
GB/s, the daemon's CPU seconds, the bytes served to requests and pushed
ahead (readahead), the sums of the requests' make and reply times, cache
buffer reuses and bytes held; at the end each label's median and its ratio
to the first label's. The machine's load average is printed with each
pass: compare only labels measured side by side in one run."""
import json
import os
import statistics
import subprocess
import sys
import types

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from bench import benchlib as L  # noqa: E402
from bench.experiments import store as S  # noqa: E402

SEQ_BYTES = 32 << 20


def parse(arg):
    label, rest = arg.split("=", 1)
    parts = rest.split(":")
    env = dict(kv.split("=", 1) for kv in parts[2].split(",")) if len(parts) > 2 else {}
    return label, parts[0], parts[1], env


def daemon_cpu(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def one_pass(sd, shape, binary, view, env):
    mnt, row = os.path.join(sd, "mnt"), shape[1] * shape[2] * shape[3]
    subprocess.run([binary, "mount", "--log", os.path.join(sd, "log"), os.path.join(sd, "b.ini"),
                    mnt], check=True, env=dict(os.environ, **env))
    try:
        a = np.memmap(os.path.join(mnt, view + ".dat"), np.float32, "r", shape=shape)
        gbs = L.seq(a, max(1, SEQ_BYTES // (row * 4))) / 1e9
        del a
        with open(os.path.join(mnt, ".stats.json")) as f:
            st = json.load(f)
        return gbs, daemon_cpu(st["pid"]), st
    finally:
        subprocess.run([binary, "umount", mnt], check=True)


def main():
    root, side, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    cfgs = [parse(a) for a in sys.argv[4:]]
    sd = os.path.join(root, f"s{side}")
    if not os.path.exists(os.path.join(sd, "zstd.h5")):
        os.makedirs(sd, exist_ok=True)
        S.Dataset(types.SimpleNamespace(
            s=types.SimpleNamespace(side=side, mb=int(os.environ.get("STORE_MB", "512")),
                                    batches=16, sq_zstd_level=3),
            dsview=os.path.abspath(cfgs[0][1]), work=sd, path=lambda *n: os.path.join(sd, *n)))
    row = side * side * 3
    shape = (os.path.getsize(os.path.join(sd, "u8.npy")) // row, side, side, 3)
    res = {c[0]: [] for c in cfgs}
    for r in range(rounds):
        for label, binary, view, env in cfgs:
            L.drop_caches()
            gbs, cpu, st = one_pass(sd, shape, binary, view, env)
            res[label].append(gbs)
            print(f"round {r} {label}: {gbs:.3f} GB/s, daemon cpu {cpu:.2f} s, served "
                  f"{st['bytes_served'] >> 20} MiB, made ahead {L.bytes_ahead(st) >> 20} MiB, make "
                  f"{st['read_make_us_sum'] // 1000} ms, reply {st['read_reply_us_sum'] // 1000} ms, "
                  f"reuses {st['cache_reuses']}, cache {st['cache_bytes'] >> 20} MiB, "
                  f"load {os.getloadavg()[0]:.1f}", flush=True)
    base = statistics.median(res[cfgs[0][0]])
    for label, v in res.items():
        m = statistics.median(v)
        print(f"{label:>12}: median {m:.3f} GB/s ({', '.join(f'{x:.2f}' for x in v)}), "
              f"{m / base:.2f}x {cfgs[0][0]}")


if __name__ == "__main__":
    main()
