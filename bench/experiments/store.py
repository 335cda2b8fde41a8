"""Compressed stores where storage or memory is the bottleneck, against squashfuse images.

--mb MB of uint8 HWC stimulus-like rows of --side (smooth shapes in 32
levels, 5% speckle), read as the same normalised float32 array by:
  null      bench/nullfs.c, the same size: the FUSE ceiling
  f32_mm    the materialised float32 .npy, np.load(mmap_mode="r")
  u8_numpy  the uint8 .npy memmap + numpy normalisation (the Python way)
  dsv_npy   dsview's view of the uint8 .npy
  dsv_lz4   dsview's view of `dsview pack` (LZ4) of it
  dsv_zstd  dsview's view of `dsview pack --codec zstd` of it
  dsv_auto  dsview's view of `dsview pack --codec auto --storage slow`
  sq_lz4    mksquashfs -comp lz4 image of the float32 .npy, mounted with
            squashfuse_ll, np.load(mmap_mode="r") of it
  sq_zstd   the same with -comp zstd (--sq_zstd_level, 0: its own 15)
per regime (the sweep): none (uncapped), N (reads from the work
directory's disk capped at N MB/s: cgroup io.max or blkio), mem (a memory
limit of --mem_mb MiB, page cache included; only the --mem_peers).
Each pass runs in a child that joins the group after the page cache is
dropped and before it mounts, so the daemon and every reader run inside
it. Phases, each cold: seq (32 MiB slices, GB/s), shuf1 (sorted batches
of 256 random rows, one reader), shufw (the same by --workers forked
workers); on_disk_mb the peer's bytes on disk; fail the passes that
failed (oom: OOM kills in the memory group)."""
import os
import shutil
import subprocess
import sys
import time
import types

import numpy as np

from bench import benchlib as L
from bench.harness import ROOT, Experiment, Metric, Peer, Phase, Setting, Target

sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
PEERS = ["null", "f32_mm", "u8_numpy", "dsv_npy", "dsv_lz4", "dsv_zstd", "dsv_auto", "sq_lz4",
         "sq_zstd"]
DSV = {"dsv_npy": "npy", "dsv_lz4": "lz4", "dsv_zstd": "zstd", "dsv_auto": "auto"}
PACK = {"lz4": ["--codec", "lz4"], "zstd": ["--codec", "zstd"],
        "auto": ["--codec", "auto", "--storage", "slow"]}
SQ = {"sq_lz4": "lz4", "sq_zstd": "zstd"}
SEQ_BYTES = 32 << 20


def make_stimuli(path, n, side, seed=0, block=512):
    """uint8 HWC rows of smooth shapes in 32 levels with 5% speckle."""
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
    """The files, made once for every regime, and how each peer opens them."""

    def __init__(self, run):
        side = run.s.side
        self.side, self.row = side, side * side * 3
        self.dir, self.mnt = run.work, run.path("mnt")
        os.makedirs(self.mnt)
        self.n = max(L.BATCH * run.s.batches, run.s.mb * 1000 * 1000 // self.row)
        self.shape = (self.n, side, side, 3)
        self.f32_bytes = self.n * self.row * 4
        u8 = self.path("u8.npy")
        make_stimuli(u8, self.n, side)
        L.normalise_file(u8, self.path("f32.npy"))
        self.disk = {"f32_mm": du(self.path("f32.npy")), "u8_numpy": du(u8), "dsv_npy": du(u8),
                     "null": 0}
        for name, args in PACK.items():
            out = self.path(f"{name}.h5")
            subprocess.run([run.dsview, "pack", "--dataset", "x", *args, u8, out], check=True,
                           stdout=subprocess.DEVNULL)
            self.disk["dsv_" + name] = du(out)
        if shutil.which("mksquashfs"):
            for codec in ("lz4", "zstd"):
                img = self.path(f"f32_{codec}.sqfs")
                level = (["-Xcompression-level", str(run.s.sq_zstd_level)]
                         if codec == "zstd" and run.s.sq_zstd_level else [])
                subprocess.run(["mksquashfs", self.path("f32.npy"), img, "-comp", codec, *level,
                                "-noappend", "-quiet", "-no-progress"], check=True,
                               stdout=subprocess.DEVNULL)
                self.disk["sq_" + codec] = du(img)
        with open(self.path("b.ini"), "w") as f:
            for name in ["npy"] + list(PACK):
                src = "u8.npy" if name == "npy" else f"{name}.h5:/x"
                f.write(f"[{name}]\nsource = {src}\nscale = {1/255!r}\n"
                        f"mean = 0.485 0.456 0.406\nstd = 0.229 0.224 0.225\n\n")
        self.info = {"side": side, "rows": self.n, "mb": round(self.n * self.row / 1e6),
                     "f32_mb": round(self.f32_bytes / 1e6)}

    def path(self, name):
        return os.path.join(self.dir, name)

    def mount(self, run, peer):
        if peer == "null":
            self.proc = L.mount_null(run.nullfs, self.f32_bytes, self.mnt)
        elif peer in SQ:
            subprocess.run(["squashfuse_ll", self.path(f"f32_{SQ[peer]}.sqfs"), self.mnt], check=True)
            for _ in range(500):
                if os.path.exists(os.path.join(self.mnt, "f32.npy")):
                    return
                time.sleep(0.02)
            raise RuntimeError(f"f32.npy did not appear under {self.mnt}")
        elif peer in DSV:
            subprocess.run([run.dsview, "mount", "--log", self.path("log"), self.path("b.ini"),
                            self.mnt], check=True)

    def umount(self, run, peer):
        if peer == "null":
            self.proc.terminate()
            self.proc.wait()
        elif peer in SQ:
            subprocess.run(["fusermount3", "-u", self.mnt], check=True)
        elif peer in DSV:
            subprocess.run([run.dsview, "umount", self.mnt], check=True)

    def open(self, peer):
        """(array of float32 rows whose slices are read, get(sorted idx))"""
        if peer == "null":
            a = np.memmap(os.path.join(self.mnt, "data.dat"), np.float32, "r", shape=self.shape)
        elif peer in DSV:
            a = np.memmap(os.path.join(self.mnt, DSV[peer] + ".dat"), np.float32, "r",
                          shape=self.shape)
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


def make(run, regime):
    import cgroup
    if regime not in ("none", "mem") and not regime.isdigit():
        raise SystemExit(f"store: regime '{regime}' is none, mem or a cap in MB/s")
    ds = getattr(run, "store_ds", None)
    if ds is None:
        ds = run.store_ds = Dataset(run)
    disk = cgroup.disk_of(run.work)
    if regime.isdigit() and disk is None:
        raise SystemExit(f"store: {run.work} is on no block device: no capped-disk regime "
                         "(--workdir on a disk's filesystem has them)")
    return types.SimpleNamespace(ds=ds, regime=regime, disk=disk,
                                 info=dict(ds.info, regime=regime, disk=disk or "-"))


def seq_pass(ds, peer):
    """GB/s of one pass of 32 MiB slices; the array unmapped on return (a
    live memmap keeps the mount busy)."""
    arr, _ = ds.open(peer)
    return L.seq(arr, max(1, SEQ_BYTES // (ds.row * 4))) / 1e9


def worker(ds, peer, order, mine, wfd):
    """A forked reader: its batches of the permutation, rows on wfd."""
    _, get = ds.open(peer)
    t, rows = time.perf_counter(), 0
    for k, b in enumerate(mine):
        out = get(np.sort(order[b * L.BATCH:(b + 1) * L.BATCH]))
        rows += out.shape[0]
        if k >= 1 and time.perf_counter() - t > L.SHUF_SECONDS:
            break
    os.write(wfd, f"{rows}\n".encode())


def shuf_pass(ds, peer, workers, batches, seed):
    """Rows/s of `workers` forked readers of sorted shuffled batches."""
    order = np.random.default_rng(seed).permutation(ds.n)
    nb = min(ds.n // L.BATCH, batches * workers)
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


def in_group(g, fn):
    """fn() in a forked child that joins g first (None: no group), so that
    the daemons it mounts and the readers it forks run there and this
    process's memory does not count; its float result, or None when the
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


def group_of(run, data):
    import cgroup
    if data.regime == "none":
        return None
    if data.regime == "mem":
        return cgroup.Group("dsview-bench", mem=run.s.mem_mb << 20)
    return cgroup.Group("dsview-bench", disk=data.disk, read_bps=int(data.regime) * 1000 * 1000)


def phase(key):
    """A phase's measure: one cold pass of key in the regime's group."""
    def measure(run, data, peer, m, rnd):
        ds = data.ds
        if data.regime == "mem" and peer not in run.s.mem_peers:
            return {}
        g = group_of(run, data)

        def one():
            ds.mount(run, peer)
            try:
                if key == "seq_gbs":
                    return seq_pass(ds, peer)
                workers = 1 if key == "shuf1_rows" else run.s.workers
                return shuf_pass(ds, peer, workers, run.s.batches, 1000 * rnd + workers)
            finally:
                ds.umount(run, peer)
        oom = 0
        try:
            v = in_group(g, one)
        finally:
            if os.path.ismount(ds.mnt):
                subprocess.run(["fusermount3", "-u", ds.mnt])
            if g:
                oom = (g.oom_kills() or 0) if data.regime == "mem" else 0
                g.remove()
        r = {"on_disk_mb": ds.disk.get(peer, 0) / 2**20, f"fail_{key}": float(v is None)}
        if v is not None:
            r[key] = v
        if data.regime == "mem":
            r[f"oom_{key}"] = float(oom)
        return r
    return measure


def sq_missing(run):
    if not shutil.which("squashfuse_ll") or not shutil.which("mksquashfs"):
        return "squashfuse_ll or mksquashfs missing (make deps)"
    return None


def nullfs_missing(run):
    return None if os.path.exists(run.nullfs) else f"{run.nullfs} missing (make build/bench/nullfs)"


def targets():
    out = []
    for peer in ("dsv_lz4", "dsv_zstd"):
        for key, what in (("seq_gbs", "sequential"), ("shufw_rows", "shuffled, workers")):
            out += [Target(f"{peer} vs sq_lz4, {what}", key, peer, "sq_lz4", None),
                    Target(f"{peer} vs dsv_npy, {what}", key, peer, "dsv_npy", None)]
    return out


EXPERIMENT = Experiment(
    name="store",
    doc=__doc__,
    settings=[Setting("rounds", 2, "interleaved rounds, medians", quick=1),
              Setting("regimes", ["none", "1000", "250", "mem"], "none, mem or a disk cap in MB/s",
                      quick=["mem"]),
              Setting("side", 64, "row side (64: 12 KB rows; 224: 150 KB)"),
              Setting("mb", 512, "MB of uint8 rows", quick=4),
              Setting("mem_mb", 1024, "the mem regime's limit, MiB", quick=256),
              Setting("mem_peers", ["f32_mm", "dsv_npy", "dsv_lz4"], "the peers of the mem regime",
                      quick=PEERS),
              Setting("workers", 4, "forked readers of shufw", quick=2),
              Setting("batches", 16, "batches a reader (or 15 s)", quick=2),
              Setting("sq_zstd_level", 0, "mksquashfs' zstd level (0: its own, 15)", quick=3)],
    sweep="regimes",
    data=make,
    peers=[Peer(p, p, missing=sq_missing if p in SQ else nullfs_missing if p == "null" else None)
           for p in PEERS],
    phases=[Phase("seq", phase("seq_gbs")), Phase("shuf1", phase("shuf1_rows")),
            Phase("shufw", phase("shufw_rows"))],
    metrics=[Metric("seq_gbs", "GB/s", "cold sequential, 32 MiB slices"),
             Metric("shuf1_rows", "rows/s", "cold shuffled, 1 reader"),
             Metric("shufw_rows", "rows/s", "cold shuffled, workers"),
             Metric("on_disk_mb", "MiB", "bytes on disk", higher_is_better=False)],
    targets=targets(),
    alternate=False,
)
