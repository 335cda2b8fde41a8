#!/usr/bin/python3
"""Compressed stores where storage or memory is the bottleneck (make
bench-store; also run by make bench).

For each row size, STORE_MB MB (default 512) of uint8 HWC stimulus-like
rows (smooth shapes in 32 levels, 5% speckle), read as the same normalised
float32 array ((x/255 - mean[c]) / std[c]) by:
  null      bench/nullfs.c, the same size: the FUSE ceiling
  f32_mm    the materialised float32 .npy, np.load(mmap_mode="r")
  u8_numpy  the uint8 .npy memmap + numpy normalisation (the Python way)
  dsv_npy   dsview's view of the uint8 .npy
  dsv_lz4   dsview's view of `dsview pack` (LZ4, the default) of it
  dsv_zstd  dsview's view of `dsview pack --codec zstd` of it
  dsv_auto  dsview's view of `dsview pack --codec auto --storage slow` of
            it: the store auto picks for storage of 250 MB/s
  sq_lz4    mksquashfs -comp lz4 image of the float32 .npy, mounted with
            squashfuse_ll, np.load(mmap_mode="r") of it
  sq_zstd   the same with -comp zstd
Regimes (STORE_REGIMES, default "none,1000,250,mem"):
  none      uncapped
  N         reads from the disk under BENCH_DIR capped at N MB/s (cgroup v1
            blkio.throttle.read_bps_device, v2 io.max)
  mem       a memory limit of STORE_MEM_MB (default 1024) MiB, page cache
            included (v1 memory.limit_in_bytes, v2 memory.max), no cap on
            the disk; only the peers of STORE_MEM_PEERS
Each pass runs in a child that joins the group after the page cache is
dropped and before it mounts, so the daemon (dsview, squashfuse_ll, nullfs)
and every reader run inside it, and the bench's own memory stays outside.
Phases, each cold (page cache dropped, daemon restarted), in ROUNDS
interleaved rounds (default 2), medians:
  seq       one pass of np.array(a[i:i+k]) slices of 32 MiB of float32
  shuf 1    sorted batches of 256 random rows of one permutation, one reader
  shuf 4w   the same by STORE_WORKERS (4) forked workers (batch k to worker
            k mod 4, as a DataLoader deals them), each opening its array
            after the fork
Every reader reads STORE_BATCHES batches (default 16) or stops after 15 s.
Reported: GB/s, rows/s, ratios against dsv_npy and the squashfuse images in
the same regime, bytes on disk, and, capped by memory, OOM kills in the
group and the ratio to the same peer uncapped.
Knobs: STORE_SIZES ("64,224": 12 KB and 150 KB rows), STORE_PEERS (a
subset), STORE_SQ_ZSTD_LEVEL (mksquashfs' zstd level, default its own 15,
which packs about 3 MB/s of float32 on this machine; 3 is 100x faster and
its image 1.6x larger), STORE_JSON=path writes the results. STORE_MB=128
ROUNDS=1 STORE_REGIMES=none,250 STORE_SQ_ZSTD_LEVEL=3 is a quick run."""
import os
import shutil
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..", "tests", "e2e")]
import benchlib as L  # noqa: E402
import cgroup  # noqa: E402

DSVIEW = os.environ.get("DSVIEW", "build/dsview")
NULLFS = os.environ.get("NULLFS", "build/bench/nullfs")
MB = int(os.environ.get("STORE_MB", "512"))
ROUNDS = int(os.environ.get("ROUNDS", "2"))
SIZES = [int(s) for s in os.environ.get("STORE_SIZES", "64,224").split(",")]
REGIMES = os.environ.get("STORE_REGIMES", "none,1000,250,mem").split(",")
MEM_MB = int(os.environ.get("STORE_MEM_MB", "1024"))
WORKERS = int(os.environ.get("STORE_WORKERS", "4"))
BATCHES = int(os.environ.get("STORE_BATCHES", "16"))
OUT_JSON = os.environ.get("STORE_JSON")
SQ_ZSTD_LEVEL = os.environ.get("STORE_SQ_ZSTD_LEVEL", "")  # "": mksquashfs' default, 15
PEERS = ["null", "f32_mm", "u8_numpy", "dsv_npy", "dsv_lz4", "dsv_zstd", "dsv_auto", "sq_lz4",
         "sq_zstd"]
MEM_PEERS = os.environ.get("STORE_MEM_PEERS", "f32_mm,dsv_npy,dsv_lz4").split(",")
DSV = {"dsv_npy": "npy", "dsv_lz4": "lz4", "dsv_zstd": "zstd", "dsv_auto": "auto"}
PACK = {"lz4": ["--codec", "lz4"], "zstd": ["--codec", "zstd"],
        "auto": ["--codec", "auto", "--storage", "slow"]}  # each store's pack arguments
SQ = {"sq_lz4": "lz4", "sq_zstd": "zstd"}
SEQ_BYTES = 32 << 20


def make_stimuli(path, n, side, seed=0, block=512):
    """uint8 HWC rows of smooth shapes in 32 levels with 5% speckle (the
    pack bench's image data, a block of rows at a time)."""
    x = np.lib.format.open_memmap(path, "w+", np.uint8, (n, side, side, 3))
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:side, 0:side].astype(np.float32) * (224 / side)
    for i in range(0, n, block):
        k = min(block, n - i)
        f = rng.uniform(0.005, 0.05, (4, k, 1, 1)).astype(np.float32)
        p = rng.uniform(0, 6.3, (4, k, 1, 1)).astype(np.float32)
        v = np.sin(xx * f[0] + p[0]) * np.cos(yy * f[1] + p[1]) + 0.5 * np.sin((xx + yy) * f[2] + p[2])
        b = np.stack([np.clip(128 + 80 * v * (0.8 + 0.2 * c), 0, 255) for c in range(3)], -1)
        b = (b.astype(np.uint8) // 8 * 8)
        m = rng.random((k, side, side)) < 0.05
        b[m] = rng.integers(0, 256, (int(m.sum()), 3), dtype=np.uint8)
        x[i:i + k] = b
    x.flush()
    del x


def du(path):
    return os.stat(path).st_blocks * 512


class Dataset:
    """One row size's files, and how each peer mounts and opens them."""

    def __init__(self, root, side, peers):
        self.side, self.row = side, side * side * 3
        self.dir = os.path.join(root, f"s{side}")
        self.mnt = os.path.join(self.dir, "mnt")
        os.makedirs(self.mnt)
        self.n = max(L.BATCH * BATCHES, MB * 1000 * 1000 // self.row)
        self.shape = (self.n, side, side, 3)
        self.f32_bytes = self.n * self.row * 4
        t = time.perf_counter()
        make_stimuli(self.path("u8.npy"), self.n, side)
        L.normalise_file(self.path("u8.npy"), self.path("f32.npy"))
        self.disk = {"f32_mm": du(self.path("f32.npy")), "u8_numpy": du(self.path("u8.npy")),
                     "dsv_npy": du(self.path("u8.npy")), "null": 0}
        for name, args in PACK.items():
            if "dsv_" + name in peers:
                out = self.path(f"{name}.h5")
                r = subprocess.run([DSVIEW, "pack", "--dataset", "x", *args, self.path("u8.npy"),
                                    out], check=True, stdout=subprocess.PIPE, text=True)
                self.disk["dsv_" + name] = du(out)
                if name == "auto":
                    print(r.stdout.splitlines()[0], flush=True)  # what it chose and why
        for codec in ("lz4", "zstd"):
            if "sq_" + codec in peers:
                img = self.path(f"f32_{codec}.sqfs")
                level = ["-Xcompression-level", SQ_ZSTD_LEVEL] if codec == "zstd" and SQ_ZSTD_LEVEL else []
                subprocess.run(["mksquashfs", self.path("f32.npy"), img, "-comp", codec, *level,
                                "-noappend", "-quiet", "-no-progress"], check=True,
                               stdout=subprocess.DEVNULL)
                self.disk["sq_" + codec] = du(img)
        with open(self.path("b.ini"), "w") as f:
            # the views of the stores packed for this run's peers only: a
            # source that was not made would fail every mount
            for name in ["npy"] + [n for n in PACK if "dsv_" + n in peers]:
                src = "u8.npy" if name == "npy" else f"{name}.h5:/x"
                f.write(f"[{name}]\nsource = {src}\nscale = {1/255!r}\n"
                        f"mean = 0.485 0.456 0.406\nstd = 0.229 0.224 0.225\n\n")
        print(f"\n== rows of {side}x{side}x3 uint8 ({self.row / 1e3:.1f} KB), {self.n} rows, "
              f"{self.n * self.row / 1e6:.0f} MB uint8, {self.f32_bytes / 1e6:.0f} MB float32; "
              f"made in {time.perf_counter() - t:.0f} s", flush=True)
        self.proc = None

    def path(self, name):
        return os.path.join(self.dir, name)

    def wait_for(self, name):
        for _ in range(500):
            if os.path.exists(os.path.join(self.mnt, name)):
                return
            time.sleep(0.02)
        raise RuntimeError(f"{name} did not appear under {self.mnt}")

    def mount(self, peer):
        if peer == "null":
            self.proc = L.mount_null(NULLFS, self.f32_bytes, self.mnt)
        elif peer in SQ:
            subprocess.run(["squashfuse_ll", self.path(f"f32_{SQ[peer]}.sqfs"), self.mnt], check=True)
            self.wait_for("f32.npy")
        elif peer in DSV:
            subprocess.run([DSVIEW, "mount", "--log", self.path("log"), self.path("b.ini"),
                            self.mnt], check=True)

    def umount(self, peer):
        if peer == "null":
            self.proc.terminate()
            self.proc.wait()
        elif peer in SQ:
            subprocess.run(["fusermount3", "-u", self.mnt], check=True)
        elif peer in DSV:
            subprocess.run([DSVIEW, "umount", self.mnt], check=True)

    def open(self, peer):
        """(array of float32 rows whose slices are read, get(sorted idx))"""
        if peer == "null":
            a = np.memmap(os.path.join(self.mnt, "data.dat"), np.float32, "r", shape=self.shape)
        elif peer in DSV:
            a = np.memmap(os.path.join(self.mnt, DSV[peer] + ".dat"), np.float32, "r", shape=self.shape)
        elif peer in SQ:
            a = np.load(os.path.join(self.mnt, "f32.npy"), mmap_mode="r")
        elif peer == "f32_mm":
            a = np.load(self.path("f32.npy"), mmap_mode="r")
        else:
            u8 = np.load(self.path("u8.npy"), mmap_mode="r")
            m32, s32 = L.MEAN.astype(np.float32), L.STD.astype(np.float32)

            class Norm:
                shape = self.shape

                def __getitem__(self, sl):
                    return (u8[sl].astype(np.float32) / 255 - m32) / s32
            return Norm(), Norm().__getitem__
        return a, lambda idx: np.asarray(a[idx])


def seq_pass(ds, peer):
    arr, _ = ds.open(peer)
    return L.seq(arr, max(1, SEQ_BYTES // (ds.row * 4)))


def worker(ds, peer, order, mine, wfd):
    """A forked reader: its batches of the permutation, rows and seconds on wfd."""
    _, get = ds.open(peer)
    t, rows = time.perf_counter(), 0
    for k, b in enumerate(mine):
        out = get(np.sort(order[b * L.BATCH:(b + 1) * L.BATCH]))
        rows += out.shape[0]
        if k >= 1 and time.perf_counter() - t > L.SHUF_SECONDS:
            break
    os.write(wfd, f"{rows}\n".encode())


def shuf_pass(ds, peer, workers, seed):
    """Rows/s of `workers` forked readers of sorted shuffled batches."""
    order = np.random.default_rng(seed).permutation(ds.n)
    nb = min(ds.n // L.BATCH, BATCHES * workers)
    rfd, wfd = os.pipe()
    t = time.perf_counter()
    pids = []
    for w in range(workers):
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                os.close(rfd)
                worker(ds, peer, order, range(w, nb, workers), wfd)
                code = 0
            finally:
                os._exit(code)
        pids.append(pid)
    os.close(wfd)
    bad = [pid for pid in pids if os.waitpid(pid, 0)[1] != 0]
    wall = time.perf_counter() - t
    with os.fdopen(rfd) as f:
        rows = sum(int(line) for line in f)
    if bad:
        raise RuntimeError(f"{peer}: {len(bad)} shuffled reader(s) failed")
    return rows / wall


def regime_group(regime, disk):
    if regime == "none":
        return None
    if regime == "mem":
        return cgroup.Group("dsview-bench", mem=MEM_MB << 20)
    return cgroup.Group("dsview-bench", disk=disk, read_bps=int(regime) * 1000 * 1000)


def in_group(g, fn):
    """fn() in a forked child that joins g first (None: no group), so that
    the daemons it mounts and the readers it forks run there and this
    process's own memory does not count; its float result, or None when the
    child failed (killed by the OOM killer, a reader's error)."""
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.close(rfd)
            if g:
                g.add()
            os.write(wfd, f"{fn()!r}\n".encode())
            code = 0
        except BaseException as e:  # reported by the parent, as a failed pass
            print(f"  pass failed: {e!r}", file=sys.stderr, flush=True)
        finally:
            os._exit(code)
    os.close(wfd)
    with os.fdopen(rfd) as f:
        out = f.read().strip()
    status = os.waitpid(pid, 0)[1]
    return float(out) if status == 0 and out else None


def run_peer(ds, peer, regime, disk, rnd):
    """One peer's cold passes in one regime: {phase: figure}; a failed
    pass counts in "fail" (and, capped by memory, OOM kills in "oom")."""
    r = {"fail": 0}
    for key, workers in zip(PHASES, (None, 1, WORKERS)):
        L.drop_caches()
        g = regime_group(regime, disk)

        def one():
            ds.mount(peer)
            try:
                return seq_pass(ds, peer) if workers is None else \
                    shuf_pass(ds, peer, workers, 1000 * rnd + workers)
            finally:
                ds.umount(peer)
        try:
            v = in_group(g, one)
        finally:
            if os.path.ismount(ds.mnt):
                subprocess.run(["fusermount3", "-u", ds.mnt])
            if g:
                if regime == "mem":
                    r["oom"] = r.get("oom", 0) + (g.oom_kills() or 0)
                g.remove()
        r[key] = v if v is not None else float("nan")
        r["fail"] += v is None
    return r


def label(regime):
    return {"none": "uncapped", "mem": f"memory {MEM_MB} MiB"}.get(regime, f"disk {regime} MB/s")


PHASES = ("seq", "shuf1", "shufw")


def ratios(a, b):
    """'seq/shuf1/shufw' of peer results a over b ('-' where one is missing)."""
    if not a or not b:
        return "-/-/-"
    return "/".join(f"{a[k] / b[k]:.2f}" if b.get(k) else "-" for k in PHASES)


def report(ds, res, peers):
    """One table per regime: figures, ratios against dsv_npy and the
    squashfuse images of that regime and, capped by memory, against the
    same peer uncapped."""
    print(f"\nrows {ds.side}x{ds.side}x3 uint8 ({ds.row / 1e3:.1f} KB; float32 "
          f"{ds.row * 4 / 1e3:.1f} KB), {ds.n} rows, {ds.f32_bytes / 1e9:.2f} GB float32")
    for reg, rs in res.items():
        bases = [("vs dsv_npy", rs.get("dsv_npy")), ("vs sq_lz4", rs.get("sq_lz4")),
                 ("vs sq_zstd", rs.get("sq_zstd"))]
        mem = reg == "mem"
        print(f"\n  {label(reg)}")
        print(f"  {'peer':9} {'on disk':>9} {'seq':>6} {'shuf 1':>7} {'shuf ' + str(WORKERS) + 'w':>7}  "
              + " ".join(f"{t:>16}" for t, _ in bases) + (f" {'vs uncapped':>16} {'OOM':>4}" if mem else ""))
        print(f"  {'':9} {'MiB':>9} {'GB/s':>6} {'rows/s':>7} {'rows/s':>7}  "
              + " ".join(f"{'seq/1/' + str(WORKERS) + 'w':>16}" for _ in range(len(bases) + mem)))
        for p in peers:
            r = rs.get(p)
            if r is None:
                continue
            cells = [ratios(r, b) for _, b in bases]
            if mem:
                cells.append(ratios(r, res.get("none", {}).get(p)))
            print(f"  {p:9} {ds.disk.get(p, 0) / 2**20:9.0f} {r['seq'] / 1e9:6.2f} {r['shuf1']:7,.0f} "
                  f"{r['shufw']:7,.0f}  " + " ".join(f"{c:>16}" for c in cells)
                  + (f" {r.get('oom', 0):4.0f}" if mem else ""))


def main():
    work = L.work_dir("store")
    peers = L.chosen_peers(PEERS, "STORE_PEERS", NULLFS)
    if not shutil.which("squashfuse_ll") or not shutil.which("mksquashfs"):
        print("warning: squashfuse_ll or mksquashfs missing (make deps): no squashfuse peers")
        peers = [p for p in peers if p not in SQ]
    disk = cgroup.disk_of(work)
    regimes = REGIMES
    if disk is None and any(r not in ("none", "mem") for r in regimes):
        print(f"warning: {work} is on no block device: no capped-disk regimes "
              "(BENCH_DIR on a disk's filesystem has them)")
        regimes = [r for r in regimes if r in ("none", "mem")]
    if os.geteuid() != 0:
        print("warning: not root: no page-cache drops and no control groups, uncapped only")
        regimes = ["none"]
    L.scale_prefault(MB, 512)
    t0 = time.perf_counter()
    out = {}
    try:
        for side in SIZES:
            ds = Dataset(work, side, peers)
            runs = {}
            for rnd in range(ROUNDS):
                for reg in regimes:
                    for p in (peers if reg != "mem" else [q for q in peers if q in MEM_PEERS]):
                        r = run_peer(ds, p, reg, disk, rnd)
                        runs.setdefault(reg, {}).setdefault(p, []).append(r)
                        print(f"  round {rnd + 1}/{ROUNDS} {label(reg):18} {p:8}: seq "
                              f"{r['seq'] / 1e9:.2f} GB/s, shuffled {r['shuf1']:,.0f} / {WORKERS}w "
                              f"{r['shufw']:,.0f} rows/s" + (f", OOM kills {r['oom']}" if "oom" in r else "")
                              + (f", {r['fail']} pass(es) FAILED" if r["fail"] else ""),
                              flush=True)
            res = {reg: L.medians(pr) for reg, pr in runs.items()}
            report(ds, res, peers)
            out[f"{side}x{side}x3"] = {"rows": ds.n, "row_bytes": ds.row, "disk": ds.disk, "regimes": res}
            shutil.rmtree(ds.dir, ignore_errors=True)
    finally:
        L.remove_work(work, *(os.path.join(work, f"s{side}", "mnt") for side in SIZES))
    caps = {"v2": "cgroup v2 io.max", "v1": "cgroup v1 blkio.throttle.read_bps_device"}.get(
        cgroup.hierarchy("io")[0], "no io controller")
    print(f"\n{L.machine('STORE_MB', MB, ROUNDS, t0)} Every pass cold (page "
          f"cache dropped, {L.PREFAULT_GB:g} GB touched and freed, daemon restarted);\nseq = "
          f"32 MiB memmap slices; shuf = sorted batches of {L.BATCH} random rows; ratios are of "
          f"medians in the same regime (seq / shuf 1 / shuf {WORKERS}w). Disk caps: {disk or '-'} "
          f"({caps}).")
    L.save_json(OUT_JSON, out)


if __name__ == "__main__":
    sys.exit(main())
