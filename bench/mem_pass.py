#!/usr/bin/python3
"""One cold sequential memmap pass over a view, with and without a memory
limit, and what the daemon did for it (docs/benchmarks/store.md, "Run 3"):
GB/s of float32, the bytes it served to the reader's requests
(bytes_served) and pushed ahead into the page cache (bytes_pushed), and
dropped behind the pass (bytes_dropped). Served and pushed past the view's
size is what was made twice: pages pushed that the group reclaimed before
the reader reached them.

    MEM_PASS_MB=1024 MEM_PASS_LIMIT_MB=1024 /usr/bin/python3 bench/mem_pass.py

MEM_PASS_MB (1024) MB of the bench's uint8 64x64x3 rows (benchlib's
make_images), a float32 view 4x that; the daemon and the reader run in a
memory cgroup of MEM_PASS_LIMIT_MB (1024) MiB for the limited pass
(tests/e2e/cgroup.py), outside any for the other; ROUNDS (2) of both,
interleaved. Root only."""
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
import benchlib as L  # noqa: E402
import cgroup  # noqa: E402

DSVIEW = os.environ.get("DSVIEW", "build/dsview")
MB = int(os.environ.get("MEM_PASS_MB", "1024"))
LIMIT_MB = int(os.environ.get("MEM_PASS_LIMIT_MB", "1024"))
ROUNDS = int(os.environ.get("ROUNDS", "2"))
ROW = 64 * 64 * 3


def child(work, src, group, out):
    """In a forked child: join group (if any), mount, one pass, umount;
    writes [GB/s, served, pushed] to the fd out."""
    if group:
        group.add()
    mp = tempfile.mkdtemp(dir=work)
    subprocess.run([DSVIEW, "mount", "--log", os.path.join(work, "log"), src, mp], check=True)
    rows = os.path.getsize(src) // ROW
    arr = np.memmap(os.path.join(mp, "u8.dat"), np.float32, "r", shape=(rows, ROW))
    step = (32 << 20) // (ROW * 4)
    t0 = time.perf_counter()
    for i in range(0, rows, step):
        np.array(arr[i:i + step])
    dt = time.perf_counter() - t0
    del arr
    with open(os.path.join(mp, ".stats.json")) as f:
        st = json.load(f)
    subprocess.run([DSVIEW, "umount", mp], check=True)
    os.write(out, json.dumps([rows * ROW * 4 / dt / 1e9, st["bytes_served"],
                              st["bytes_pushed"], st.get("bytes_dropped", 0)]).encode())


def one(work, src, limited):
    L.drop_caches()
    group = cgroup.Group("dsv-mempass", mem=LIMIT_MB << 20) if limited else None
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        code = 1
        try:
            child(work, src, group, w)
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
              f"limit {LIMIT_MB} MiB; {ROUNDS} rounds")
        for k in range(ROUNDS):
            for limited in (False, True):
                gbs, served, pushed, dropped = one(work, src, limited)
                print(f"  round {k + 1} {'limited  ' if limited else 'unlimited'} {gbs:.2f} GB/s, "
                      f"served {served / 1e9:.2f} GB, pushed {pushed / 1e9:.2f} GB, "
                      f"made twice {(served + pushed - view) / 1e9:.2f} GB, "
                      f"dropped behind {dropped / 1e9:.2f} GB")
        print(f"load average {os.getloadavg()[0]:.1f}")
    finally:
        L.remove_work(work)


if __name__ == "__main__":
    main()
