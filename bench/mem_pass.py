#!/usr/bin/python3
"""One cold pass over a view, with and without a memory limit, and what
the daemon did for it (docs/benchmarks/store.md, "Run 3"): a sequential
memmap pass in GB/s of float32, or shuffled batches by forked workers in
rows/s; the bytes it served to the reader's requests
(bytes_served) and made ahead into the page cache (bytes_readahead and
bytes_hinted: benchlib.bytes_ahead), and
dropped behind the pass (bytes_dropped). Served and pushed past the view's
size (past the rows asked, shuffled) is what was made twice or for
nothing: pages pushed that the group reclaimed before the reader reached
them, or the kernel's window around a shuffled row.

    MEM_PASS_MB=1024 MEM_PASS_LIMIT_MB=1024 /usr/bin/python3 bench/mem_pass.py

MEM_PASS_MB (1024) MB of the bench's uint8 64x64x3 rows (benchlib's
make_images), a float32 view 4x that; the daemon and the reader run in a
memory cgroup of MEM_PASS_LIMIT_MB (1024) MiB for the limited pass
(tests/e2e/cgroup.py), outside any for the other; ROUNDS (2) of both,
interleaved. MEM_PASS_WORKERS=N (0: the sequential pass) reads sorted
batches of 256 rows of one permutation instead, MEM_PASS_BATCHES (8) a
worker, by N forked workers, as store_bench's shuffled passes;
MEM_PASS_HINTS=1 has each worker hint its next batch first (dsview.hint);
MEM_PASS_OUTSIDE=1 leaves the daemon outside the group, the readers in it.
DSVIEW may name several builds, separated by ':', to compare: each round
runs each build's two passes in turn, and the medians close the run.
Root only."""
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "tests", "e2e"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import benchlib as L  # noqa: E402
import cgroup  # noqa: E402
import dsview  # noqa: E402

BUILDS = os.environ.get("DSVIEW", "build/dsview").split(":")
MB = int(os.environ.get("MEM_PASS_MB", "1024"))
LIMIT_MB = int(os.environ.get("MEM_PASS_LIMIT_MB", "1024"))
ROUNDS = int(os.environ.get("ROUNDS", "2"))
WORKERS = int(os.environ.get("MEM_PASS_WORKERS", "0"))
HINTS = os.environ.get("MEM_PASS_HINTS", "0") == "1"
OUTSIDE = os.environ.get("MEM_PASS_OUTSIDE", "0") == "1"
BATCHES = int(os.environ.get("MEM_PASS_BATCHES", "8"))
ROW = 64 * 64 * 3


def seq_pass(arr):
    """GB/s of one pass of 32 MiB slices."""
    step = (32 << 20) // (ROW * 4)
    t0 = time.perf_counter()
    for i in range(0, arr.shape[0], step):
        np.array(arr[i:i + step])
    return arr.nbytes / (time.perf_counter() - t0) / 1e9


def shuffled_pass(arr):
    """Rows/s of WORKERS forked readers, each of its sorted batches (with
    MEM_PASS_HINTS=1 hinting its next batch before it reads one, as the
    package's loader does)."""
    order = np.random.default_rng(7).permutation(arr.shape[0])
    pids, t0 = [], time.perf_counter()
    for w in range(WORKERS):
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                mine = [np.sort(order[b * L.BATCH:(b + 1) * L.BATCH])
                        for b in range(w, BATCHES * WORKERS, WORKERS)]
                for k, rows in enumerate(mine):
                    if HINTS:
                        for ahead in mine[k if k == 0 else k + 1:k + 2]:
                            dsview.hint(arr.filename, ahead)
                    np.array(arr[rows])
                code = 0
            finally:
                os._exit(code)
        pids.append(pid)
    if any(os.waitpid(pid, 0)[1] for pid in pids):
        raise RuntimeError("a shuffled reader failed")
    return BATCHES * WORKERS * L.BATCH / (time.perf_counter() - t0)


def child(dsview, work, src, group, out):
    """In a forked child: join group (if any), mount, one pass, umount
    (with MEM_PASS_OUTSIDE=1 the mount comes first: the daemon stays
    outside the group, as an fstab mount's); writes [GB/s or rows/s,
    served, pushed, dropped, shed] to the fd out."""
    if group and not OUTSIDE:
        group.add()
    mp = tempfile.mkdtemp(dir=work)
    subprocess.run([dsview, "mount", "--log", os.path.join(work, "log"), src, mp], check=True)
    if group and OUTSIDE:
        group.add()
    rows = os.path.getsize(src) // ROW
    arr = np.memmap(os.path.join(mp, "u8.dat"), np.float32, "r", shape=(rows, ROW))
    rate = shuffled_pass(arr) if WORKERS else seq_pass(arr)
    del arr
    with open(os.path.join(mp, ".stats.json")) as f:
        st = json.load(f)
    subprocess.run([dsview, "umount", mp], check=True)
    os.write(out, json.dumps([rate, st["bytes_served"], L.bytes_ahead(st),
                              st.get("bytes_dropped", 0), st.get("bytes_shed", 0)]).encode())


def one(dsview, work, src, limited):
    L.drop_caches()
    group = cgroup.Group("dsv-mempass", mem=LIMIT_MB << 20) if limited else None
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        code = 1
        try:
            child(dsview, work, src, group, w)
            code = 0
        finally:
            os._exit(code)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        data = f.read()
    _, status = os.waitpid(pid, 0)
    if group:
        group.remove()
    if status or not data:
        raise RuntimeError(f"the {'limited' if limited else 'unlimited'} pass failed")
    return json.loads(data)


def main():
    work = L.work_dir("mempass")
    try:
        src = os.path.join(work, "u8.npy")
        rows = (MB << 20) // ROW
        L.make_images(src, rows, 64, 64)
        view = rows * ROW * 4
        print(f"{rows} rows of 64x64x3 uint8, a {view / 1e9:.2f} GB float32 view; "
              f"limit {LIMIT_MB} MiB; {ROUNDS} rounds; "
              + (f"shuffled, {WORKERS} workers" if WORKERS else "sequential"))
        asked = BATCHES * WORKERS * L.BATCH * ROW * 4 if WORKERS else view
        unit = "rows/s" if WORKERS else "GB/s"
        rates = {}
        for k in range(ROUNDS):
            for limited in (False, True):
                for b in BUILDS:
                    rate, served, pushed, dropped, shed = one(b, work, src, limited)
                    rates.setdefault((b, limited), []).append(rate)
                    print(f"  round {k + 1} {'limited  ' if limited else 'unlimited'} "
                          f"{b}: {rate:.2f} {unit}, served {served / 1e9:.2f} GB, "
                          f"pushed {pushed / 1e9:.2f} GB, made past what was asked "
                          f"{(served + pushed - asked) / 1e9:.2f} GB, dropped behind "
                          f"{dropped / 1e9:.2f} GB, shed {shed / 1e9:.2f} GB")
        for b in BUILDS:
            free, capped = (float(np.median(rates[b, lim])) for lim in (False, True))
            print(f"{b}: median unlimited {free:.2f}, limited {capped:.2f} {unit}: "
                  f"{capped / free:.2f}x")
        print(f"load average {os.getloadavg()[0]:.1f}")
    finally:
        L.remove_work(work)


if __name__ == "__main__":
    main()
