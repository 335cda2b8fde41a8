"""The read table: seven peers, 12 KB and 150 KB rows, sequential and shuffled.

Per row size (the sweep, 64x64x3 = 12 KB and
224x224x3 = 150 KB uint8 rows), a uint8 HWC dataset read as the same
normalised float32 array ((x/255 - mean[c]) / std[c]) by:
  f32_mm    the materialised float32 .npy, np.load(mmap_mode="r")
  null      bench/nullfs.c: a no-op FUSE filesystem of the same size,
            read_ahead_kb 1024: the FUSE ceiling
  dsv_npy   dsview view over the uint8 .npy, np.memmap of the .dat
  dsv_hint  dsv_npy with sampler hints (dsview.hint): each shuffled reader
            hints its next 2 batches before reading one; shuffled only
  dsv_lz4   dsview view over the `dsview pack` store of the same data
  u8_numpy  uint8 np.load(mmap_mode="r") + numpy normalisation per batch
  h5_numpy  h5py uint8 chunked dataset (1 MiB chunks) + numpy normalisation
Phases: seq (cold: one sequential pass of ~9.6 MB of uint8 rows a read;
then warm: a second pass once mincore says the file is wholly cached),
shuf1 (cold, one forked reader, sorted batches of 256 rows of one
permutation) and shufw (cold, `workers` forked readers, worker k taking
batches k, k+workers, ... as DataLoader does). amp = bytes read from
disk (the daemon's or the readers' /proc/PID/io) over the source bytes of
the rows asked for; CPU s/GB of float32 delivered, readers and daemon
apart; dec = bytes decoded over bytes asked and rss_mb the daemon's peak
RSS over the sequential passes (dsview peers)."""
import json
import os
import subprocess
import time

import numpy as np

from bench import benchlib as L
from bench.harness import Experiment, Metric, Peer, Phase, Setting, Target
from bench.mounts import nullfs_missing

SERVED = ("null", "dsv_npy", "dsv_hint", "dsv_lz4")
HINT_AHEAD = 2
SEQ_READ = 64 * 224 * 224 * 3  # uint8 bytes of one sequential read


class Dataset:
    """One row size's files in its own directory, and how each peer opens it."""

    def __init__(self, run, side):
        self.side = side
        self.dir = run.path(f"s{side}")
        os.makedirs(self.dir)
        self.row = side * side * 3
        self.batch = run.s.batch
        self.n = max(self.batch * 2 * run.s.workers, run.s.mb * 1000 * 1000 // self.row)
        self.shape = (self.n, side, side, 3)
        self.f32_bytes = self.n * self.row * 4
        self.batches = run.s.batches or (32 if self.row < 64 << 10 else 8)
        self.workers = run.s.workers
        self.mnt = None
        u8 = self.path("u8.npy")
        L.make_images(u8, self.n, side, side)
        L.normalise_file(u8, self.path("f32.npy"))
        subprocess.run([run.dsview, "pack", "--dataset", "x", *run.s.pack_args.split(), u8,
                        self.path("u8.h5")], check=True, stdout=subprocess.DEVNULL)
        with open(self.path("b.ini"), "w") as f:
            for name, src in (("npy", "u8.npy"), ("lz4", "u8.h5:/x")):
                f.write(f"[{name}]\nsource = {src}\nscale = {1/255!r}\n"
                        f"mean = 0.485 0.456 0.406\nstd = 0.229 0.224 0.225\n\n")
        self.write_h5(u8)
        self.info = {"side": side, "row_kb": round(self.row / 1e3, 1), "rows": self.n,
                     "mb": round(self.n * self.row / 1e6), "f32_mb": round(self.f32_bytes / 1e6),
                     "batches": self.batches}

    def write_h5(self, u8):
        import h5py
        rows_per_chunk = max(1, (1 << 20) // self.row)
        src = np.load(u8, mmap_mode="r")
        with h5py.File(self.path("u8_chunked.h5"), "w") as f:
            d = f.create_dataset("x", shape=self.shape, dtype=np.uint8,
                                 chunks=(rows_per_chunk, self.side, self.side, 3))
            step = max(1, (64 << 20) // self.row)
            for i in range(0, self.n, step):
                d[i:i + step] = src[i:i + step]

    def path(self, name):
        return os.path.join(self.dir, name)

    def file(self, peer):
        """The file whose pages a warm pass reads."""
        if peer in SERVED:
            name = {"null": "data", "dsv_hint": "npy"}.get(peer, peer[4:])
            return os.path.join(self.mnt, name + ".dat")
        return self.path({"f32_mm": "f32.npy", "u8_numpy": "u8.npy",
                          "h5_numpy": "u8_chunked.h5"}[peer])

    def open(self, peer):
        """(seq-indexable array of float32 rows, get(sorted idx) -> float32
        batch, closer)."""
        m32, s32 = L.MEAN.astype(np.float32), L.STD.astype(np.float32)
        if peer == "f32_mm":
            a = np.load(self.path("f32.npy"), mmap_mode="r")
        elif peer in SERVED:
            a = np.memmap(self.file(peer), np.float32, "r", shape=self.shape)
        if peer == "f32_mm" or peer in SERVED:
            return a, lambda idx: np.asarray(a[idx]), lambda: None
        h5f = None
        if peer == "u8_numpy":
            u8 = np.load(self.path("u8.npy"), mmap_mode="r")
        else:
            import h5py
            h5f = h5py.File(self.path("u8_chunked.h5"), "r")
            u8 = h5f["x"]

        class Norm:
            shape = self.shape

            def __getitem__(self, sl):
                return (u8[sl].astype(np.float32) / 255 - m32) / s32
        return Norm(), Norm().__getitem__, (h5f.close if h5f else lambda: None)

    def cleanup(self):
        import shutil
        shutil.rmtree(self.dir, ignore_errors=True)


def make(run, side):
    return Dataset(run, side)


def setup(run, ds):
    """The peer's mount where it is served (ds.mnt set), else None."""
    return None


def daemon_now(m):
    if m is None:
        return 0.0, 0
    return m.cpu(), m.read_bytes()


def decoded_now(m, peer):
    if m is None or not peer.startswith("dsv_"):
        return 0
    return m.stats()["bytes_decoded"]


def seq_pass(ds, peer, m, r, phase):
    """Timed sequential pass (cold, or warm after cache_fully) into r."""
    arr, _, close = ds.open(peer)
    step = max(1, SEQ_READ // ds.row)
    if phase == "warm":
        r["cached"] = L.cache_fully(ds.file(peer), lambda: L.seq(arr, step))
    t0, d0 = os.times(), daemon_now(m)
    r[f"{phase}_gbs"] = L.seq(arr, step) / 1e9
    t1, d1 = os.times(), daemon_now(m)
    gb = ds.f32_bytes / 1e9
    r[f"cpu_r_{phase}"] = (t1.user + t1.system - t0.user - t0.system) / gb
    r[f"cpu_d_{phase}"] = (d1[0] - d0[0]) / gb
    arr = None  # unmap before the next pass
    close()


def seq(run, ds, peer, m, rnd):
    r = {}
    ds.mnt = m.mnt if m else None
    seq_pass(ds, peer, m, r, "cold")
    seq_pass(ds, peer, m, r, "warm")
    if peer.startswith("dsv_"):
        r["rss_mb"] = m.rss_kb() / 1024  # the daemon's peak over both passes
    return r


def reader(ds, peer, order, mine, wfd, go):
    """A forked worker: open after the fork, wait for go, read its batches,
    report rows, CPU and own read_bytes on wfd."""
    _, get, close = ds.open(peer)
    mine = mine[:ds.batches]

    def idx(k):
        return np.sort(order[mine[k] * ds.batch:(mine[k] + 1) * ds.batch])
    hint = None
    if peer == "dsv_hint":
        import dsview
        fd = os.open(ds.file(peer), os.O_RDONLY)

        def hint(k):
            if k < len(mine):
                dsview.hint(fd, idx(k))
    os.read(go, 1)
    c0, io0 = os.times(), L.proc_read_bytes()
    t, rows = time.perf_counter(), 0
    for k in range(HINT_AHEAD if hint else 0):
        hint(k)
    for k in range(len(mine)):
        if hint:
            hint(k + HINT_AHEAD)
        out = get(idx(k))
        assert out.dtype == np.float32 and out.flags.c_contiguous
        rows += out.shape[0]
        if k >= 1 and time.perf_counter() - t > L.SHUF_SECONDS:
            break
    c1, io1 = os.times(), L.proc_read_bytes()
    close()
    os.write(wfd, (json.dumps({"rows": rows, "cpu": c1.user + c1.system - c0.user - c0.system,
                               "io": io1 - io0}) + "\n").encode())


def fork_readers(ds, peer, order, workers):
    """Forks the readers; returns (pids, report pipe, go pipe)."""
    nb = ds.n // ds.batch
    rfd, wfd = os.pipe()
    gr, gw = os.pipe()
    pids = []
    for k in range(workers):
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                os.close(rfd)
                os.close(gw)
                reader(ds, peer, order, list(range(k, nb, workers)), wfd, gr)
                code = 0
            except BaseException:
                import traceback
                traceback.print_exc()
            finally:
                os._exit(code)
        pids.append(pid)
    os.close(wfd)
    os.close(gr)
    return pids, rfd, gw


def shuf_pass(ds, peer, m, workers, seed):
    """Cold shuffled batches by `workers` forked readers."""
    ds.mnt = m.mnt if m else None
    order = np.random.default_rng(seed).permutation(ds.n)
    pids, rfd, gw = fork_readers(ds, peer, order, workers)
    time.sleep(0.2)  # let the workers open their arrays
    d0, dec0 = daemon_now(m), decoded_now(m, peer)
    t = time.perf_counter()
    os.write(gw, b"g" * workers)
    for pid in pids:
        _, status = os.waitpid(pid, 0)
        if status != 0:
            raise RuntimeError(f"{peer}: a shuffled reader failed (status {status})")
    wall = time.perf_counter() - t
    d1, dec1 = daemon_now(m), decoded_now(m, peer)
    with os.fdopen(rfd) as f:
        rep = [json.loads(line) for line in f]
    os.close(gw)
    rows = sum(x["rows"] for x in rep)
    key = "shuf1" if workers == 1 else "shufw"
    gb = rows * ds.row * 4 / 1e9
    r = {f"{key}_rows": rows / wall, f"rows_{key}": rows, f"cpu_r_{key}": sum(x["cpu"] for x in rep) / gb,
         f"cpu_d_{key}": (d1[0] - d0[0]) / gb}
    if peer.startswith("dsv_"):  # bytes decoded (float32 out) / bytes asked
        r[f"dec_{key}"] = (dec1 - dec0) / (rows * ds.row * 4)
    if peer != "null":
        disk = (d1[1] - d0[1]) if peer in SERVED else sum(x["io"] for x in rep)
        r[f"amp_{key}"] = disk / (rows * ds.row * (4 if peer == "f32_mm" else 1))
    return r


def shuf1(run, ds, peer, m, rnd):
    return shuf_pass(ds, peer, m, 1, 1000 * rnd + 1)


def shufw(run, ds, peer, m, rnd):
    return shuf_pass(ds, peer, m, ds.workers, 1000 * rnd + ds.workers)


def dsv_setup(run, ds):
    return run.mounts.dsview(ds.path("b.ini"), name=f"s{ds.side}/mnt")


def null_setup(run, ds):
    return run.mounts.null(ds.f32_bytes, name=f"s{ds.side}/mnt")


def teardown(run, m):
    run.mounts.close(m)


def served(name, doc, missing=None):
    return Peer(name, doc, null_setup if name == "null" else dsv_setup, teardown, missing)


EXPERIMENT = Experiment(
    name="read",
    doc=__doc__,
    settings=[Setting("sizes", [64, 224], "row sides (rows of side x side x 3 uint8)",
                      quick=[64]),
              Setting("mb", 1024, "MB of uint8 rows per size", quick=8),
              Setting("workers", 4, "forked readers of the shufw phase", quick=2),
              Setting("batches", 0, "batches a reader (0: 32 for 12 KB rows, 8 for 150 KB)",
                      quick=2),
              Setting("batch", 256, "rows a shuffled batch", quick=32),
              Setting("pack_args", "", "extra `dsview pack` options of dsv_lz4's store")],
    sweep="sizes",
    data=make,
    peers=[Peer("f32_mm", "the float32 .npy, np.load(mmap_mode='r')"),
           served("null", "bench/nullfs, the FUSE ceiling", nullfs_missing),
           served("dsv_npy", "dsview over the uint8 .npy"),
           served("dsv_hint", "dsv_npy with sampler hints (shuffled only)"),
           served("dsv_lz4", "dsview over the LZ4 store"),
           Peer("u8_numpy", "uint8 memmap + numpy normalisation"),
           Peer("h5_numpy", "h5py 1 MiB chunks + numpy normalisation")],
    phases=[Phase("seq", seq, peers=("f32_mm", "null", "dsv_npy", "dsv_lz4", "u8_numpy",
                                     "h5_numpy")),
            Phase("shuf1", shuf1), Phase("shufw", shufw)],
    metrics=[Metric("cold_gbs", "GB/s", "cold sequential"),
             Metric("warm_gbs", "GB/s", "warm sequential"),
             Metric("shuf1_rows", "rows/s", "cold shuffled, 1 reader"),
             Metric("shufw_rows", "rows/s", "cold shuffled, `workers` forked readers"),
             Metric("amp_shuf1", "x", "disk bytes / source bytes asked, 1 reader",
                    higher_is_better=False),
             Metric("cpu_d_cold", "CPU s/GB", "daemon CPU, cold sequential",
                    higher_is_better=False),
             Metric("rss_mb", "MB", "the daemon's peak RSS, sequential passes",
                    higher_is_better=False)],
    targets=[Target("shuffled, single reader", "shuf1_rows", "dsv_npy", "u8_numpy", 1.0),
             Target("shuffled, workers", "shufw_rows", "dsv_npy", "u8_numpy", 1.3),
             Target("warm sequential", "warm_gbs", "dsv_npy", "f32_mm", 0.95),
             Target("cold sequential", "cold_gbs", "dsv_npy", "null", 0.95)],
)
