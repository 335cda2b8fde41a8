#!/usr/bin/python3
"""The read benchmark (make bench-read; also run by make bench).

For each row size, a uint8 HWC dataset of READ_MB MB (default BENCH_MB or
1024: 4 GiB of float32), read as the same normalised float32 array
((x/255 - mean[c]) / std[c]) by the peers of bench.py:
  f32_mm    the materialised float32 .npy, np.load(mmap_mode="r")
  null      bench/nullfs.c: a no-op FUSE filesystem of the same size,
            mounted like dsview with read_ahead_kb 1024: the FUSE ceiling
  dsv_npy   dsview view over the uint8 .npy, np.memmap of the .dat
  dsv_lz4   dsview view over the `dsview pack` store of the same data
  dsv_hint  dsv_npy with sampler hints (dsview.hint): each
            shuffled reader hints its next HINT_AHEAD (2) batches before
            reading one; shuffled phases only (sequential is dsv_npy's)
  u8_numpy  uint8 np.load(mmap_mode="r") + numpy normalisation per batch
  h5_numpy  h5py uint8 chunked dataset (1 MiB chunks) + numpy normalisation
Row sizes (READ_SIZES, default "64,224"): 64x64x3 (12 KB, 48 KB as float32)
and 224x224x3 (150 KB, 600 KB).

Phases, each peer, in ROUNDS interleaved rounds (default 3), medians:
  seq cold   page cache dropped (benchlib.drop_caches), daemon (re)started,
             one sequential pass, ~9.6 MB of uint8 rows a read
  seq warm   a plain second pass over the file wholly in the page cache:
             after the cold pass, mincore says how much of the file is
             resident; untimed passes run until all of it is ("cached" column)
  shuf 1     cold, one reader process forked after the mount, reading sorted
             batches of 256 rows of one permutation: np.load / np.memmap (or
             h5py.File) opened after the fork, fancy-indexed into a
             contiguous array (plus the numpy maths for u8/h5 peers)
  shuf 4w    cold, a pool of READ_WORKERS (4) forked workers, each opening its
             own array after the fork and reading its own batches (worker k
             takes batches k, k+4, ... of one permutation, as DataLoader does)
Every reader reads READ_BATCHES batches (default 32 for 12 KB rows, 8 for
150 KB rows; READ_BATCHES=n sets both) or stops after 15 s (at least 2).
Reported: rows/s (all workers), read amplification (bytes read from disk,
/proc/PID/io read_bytes of the daemon, or of the readers for Python peers,
over the source bytes of the rows asked for: uint8 rows, float32 for
f32_mm), CPU seconds per GB of float32 delivered, readers and daemon apart.

Other knobs: READ_PEERS=f32_mm,dsv_npy,... a subset; READ_PACK_ARGS extra
`dsview pack` options for dsv_lz4's store (e.g. "--block-size 16K"; the
dsview peers' shuffled passes also report bytes decoded / bytes asked,
from .stats.json); READ_JSON=path writes
the results; BENCH_DIR (default /var/tmp), BENCH_SETTLE, BENCH_PREFAULT_GB
(see benchlib; the prefault defaults to 6 GB scaled by READ_MB/1024, at
least 1). READ_MB=128 ROUNDS=1 is a quick run (~4 min on 2 cores)."""
import json
import os
import shutil
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import benchlib as L  # noqa: E402

DSVIEW = os.environ.get("DSVIEW", "build/dsview")
NULLFS = os.environ.get("NULLFS", "build/bench/nullfs")
MB = int(os.environ.get("READ_MB", os.environ.get("BENCH_MB", "1024")))
ROUNDS = int(os.environ.get("ROUNDS", "3"))
SIZES = [int(s) for s in os.environ.get("READ_SIZES", "64,224").split(",")]
WORKERS = int(os.environ.get("READ_WORKERS", "4"))
OUT_JSON = os.environ.get("READ_JSON")
PACK_ARGS = os.environ.get("READ_PACK_ARGS", "").split()  # e.g. "--block-size 16K"
PEERS = ["f32_mm", "null", "dsv_npy", "dsv_hint", "dsv_lz4", "u8_numpy", "h5_numpy"]
SERVED = ("null", "dsv_npy", "dsv_hint", "dsv_lz4")
HINT_AHEAD = 2
SEQ_READ = 64 * 224 * 224 * 3  # uint8 bytes of one sequential read (bench.py's 64 rows)
# target: (peer measured, metric, baseline peer, at least)
TARGETS = [("shuffled, single reader", "shuf1", "u8_numpy", 1.0),
           ("shuffled, 4 workers", "shufw", "u8_numpy", 1.3),
           ("warm sequential", "warm", "f32_mm", 0.95),
           ("cold sequential", "cold", "null", 0.95)]


def batches_for(side):
    if "READ_BATCHES" in os.environ:
        return int(os.environ["READ_BATCHES"])
    return 32 if side * side * 3 < 64 << 10 else 8


class Dataset:
    """One row size's files in its own directory, and how each peer opens it."""

    def __init__(self, root, side):
        self.side = side
        self.dir = os.path.join(root, f"s{side}")
        self.mnt = os.path.join(self.dir, "mnt")
        os.makedirs(self.dir)
        self.row = side * side * 3
        self.n = max(L.BATCH * 2 * WORKERS, MB * 1000 * 1000 // self.row)
        self.shape = (self.n, side, side, 3)
        self.f32_bytes = self.n * self.row * 4
        t = time.perf_counter()
        u8 = self.path("u8.npy")
        L.make_images(u8, self.n, side, side)
        L.normalise_file(u8, self.path("f32.npy"))
        subprocess.run([DSVIEW, "pack", "--dataset", "x", *PACK_ARGS, u8, self.path("u8.h5")], check=True,
                       stdout=subprocess.DEVNULL)
        with open(self.path("b.ini"), "w") as f:
            for name, src in (("npy", "u8.npy"), ("lz4", "u8.h5:/x")):
                f.write(f"[{name}]\nsource = {src}\nscale = {1/255!r}\n"
                        f"mean = 0.485 0.456 0.406\nstd = 0.229 0.224 0.225\n\n")
        import h5py
        rows_per_chunk = max(1, (1 << 20) // self.row)
        src = np.load(u8, mmap_mode="r")
        with h5py.File(self.path("u8_chunked.h5"), "w") as f:
            d = f.create_dataset("x", shape=self.shape, dtype=np.uint8,
                                 chunks=(rows_per_chunk, side, side, 3))
            step = max(1, (64 << 20) // self.row)
            for i in range(0, self.n, step):
                d[i:i + step] = src[i:i + step]
        del src
        print(f"\n== rows of {side}x{side}x3 uint8 ({self.row / 1e3:.1f} KB; float32 "
              f"{self.row * 4 / 1e3:.1f} KB): {self.n} rows, {self.n * self.row / 1e6:.0f} MB "
              f"uint8, {self.f32_bytes / 1e6:.0f} MB float32; made in "
              f"{time.perf_counter() - t:.0f} s", flush=True)
        self.pid = None
        self.proc = None

    def path(self, name):
        return os.path.join(self.dir, name)

    def mount(self, peer):
        if peer == "null":
            self.proc = L.mount_null(NULLFS, self.f32_bytes, self.mnt)
            self.pid = self.proc.pid
        else:
            subprocess.run([DSVIEW, "mount", "--log", self.path("log"), self.path("b.ini"),
                            self.mnt], check=True)
            self.pid = L.daemon_pid(self.mnt)

    def umount(self, peer):
        if peer == "null":
            self.proc.terminate()
            self.proc.wait()
        else:
            subprocess.run([DSVIEW, "umount", self.mnt], check=True)
        self.pid = None

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


def daemon_now(ds):
    if ds.pid is None:
        return 0.0, 0
    return L.proc_cpu(ds.pid), L.proc_read_bytes(ds.pid)


def decoded_now(ds, peer):
    """The daemon's bytes_decoded (.stats.json), dsview peers only."""
    if ds.pid is None or not peer.startswith("dsv_"):
        return 0
    with open(os.path.join(ds.mnt, ".stats.json")) as f:
        return json.load(f)["bytes_decoded"]


def seq_pass(ds, peer, r, phase):
    """Timed sequential pass (cold, or warm after cache_fully) into r."""
    arr, _, close = ds.open(peer)
    step = max(1, SEQ_READ // ds.row)
    if phase == "warm":
        r["cached"] = L.cache_fully(ds.file(peer), lambda: L.seq(arr, step))
    t0, d0 = os.times(), daemon_now(ds)
    r[phase] = L.seq(arr, step)
    t1, d1 = os.times(), daemon_now(ds)
    gb = ds.f32_bytes / 1e9
    r[f"cpu_r_{phase}"] = (t1.user + t1.system - t0.user - t0.system) / gb
    r[f"cpu_d_{phase}"] = (d1[0] - d0[0]) / gb
    arr = None  # unmap before the next pass
    close()


def reader(ds, peer, order, mine, batches, wfd, go):
    """A forked worker: open after the fork, wait for go, read its batches,
    report rows, CPU and own read_bytes on wfd."""
    _, get, close = ds.open(peer)
    mine = mine[:batches]

    def idx(k):
        return np.sort(order[mine[k] * L.BATCH:(mine[k] + 1) * L.BATCH])
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


def shuf_pass(ds, peer, r, workers, seed):
    """Cold shuffled batches by `workers` forked readers into r."""
    order = np.random.default_rng(seed).permutation(ds.n)
    nb = ds.n // L.BATCH
    batches = batches_for(ds.side)
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
                reader(ds, peer, order, list(range(k, nb, workers)), batches, wfd, gr)
                code = 0
            except BaseException:
                import traceback
                traceback.print_exc()
            finally:
                os._exit(code)
        pids.append(pid)
    os.close(wfd)
    os.close(gr)
    time.sleep(0.2)  # let the workers open their arrays
    d0, dec0 = daemon_now(ds), decoded_now(ds, peer)
    t = time.perf_counter()
    os.write(gw, b"g" * workers)
    for pid in pids:
        _, status = os.waitpid(pid, 0)
        if status != 0:
            raise RuntimeError(f"{peer}: a shuffled reader failed (status {status})")
    wall = time.perf_counter() - t
    d1, dec1 = daemon_now(ds), decoded_now(ds, peer)
    with os.fdopen(rfd) as f:
        rep = [json.loads(line) for line in f]
    os.close(gw)
    rows = sum(x["rows"] for x in rep)
    key = "shuf1" if workers == 1 else "shufw"
    gb = rows * ds.row * 4 / 1e9
    r[key] = rows / wall
    r[f"rows_{key}"] = rows
    r[f"cpu_r_{key}"] = sum(x["cpu"] for x in rep) / gb
    r[f"cpu_d_{key}"] = (d1[0] - d0[0]) / gb
    r[f"wall_{key}"] = wall / gb
    if peer.startswith("dsv_"):  # bytes decoded (float32 out) / bytes asked
        r[f"dec_{key}"] = (dec1 - dec0) / (rows * ds.row * 4)
    if peer != "null":
        disk = (d1[1] - d0[1]) if peer in SERVED else sum(x["io"] for x in rep)
        r[f"amp_{key}"] = disk / (rows * ds.row * (4 if peer == "f32_mm" else 1))


def run_peer(ds, peer, rnd):
    r = {}
    served = peer in SERVED
    if peer != "dsv_hint":
        L.drop_caches()
        if served:
            ds.mount(peer)
        seq_pass(ds, peer, r, "cold")
        seq_pass(ds, peer, r, "warm")
        if served:
            ds.umount(peer)
    for workers in (1, WORKERS):
        L.drop_caches()
        if served:
            ds.mount(peer)
        shuf_pass(ds, peer, r, workers, seed=1000 * rnd + workers)
        if served:
            ds.umount(peer)
    return r


def fmt(v, spec, none="-"):
    return none if v is None else format(v, spec)


def report(ds, res, peers):
    """The table of one row size, and its targets."""
    def ratio(peer, key, base):
        a, b = res.get(peer, {}).get(key), res.get(base, {}).get(key)
        return a / b if a is not None and b else None

    print(f"\nrows {ds.side}x{ds.side}x3 uint8 ({ds.row / 1e3:.1f} KB; float32 "
          f"{ds.row * 4 / 1e3:.1f} KB), {ds.n} rows, {ds.f32_bytes / 1e9:.2f} GB float32, "
          f"batches of {L.BATCH}, {batches_for(ds.side)} a reader")
    print(f"{'peer':9} {'seq cold':>8} {'seq warm':>8} {'cached':>6} {'shuf 1':>7} "
          f"{'shuf ' + str(WORKERS) + 'w':>7} {'amp 1':>6} {'amp ' + str(WORKERS) + 'w':>6} "
          f"{'CPU s/GB reader+daemon':>28}  {'vs u8_numpy':>11} {'vs f32':>6} {'vs null':>7}")
    print(f"{'':9} {'GB/s':>8} {'GB/s':>8} {'%':>6} {'rows/s':>7} {'rows/s':>7} {'':>6} {'':>6} "
          f"{'cold':>9} {'shuf 1':>9} {'shuf ' + str(WORKERS) + 'w':>9}  {'shuf 1 / ' + str(WORKERS) + 'w':>11} "
          f"{'warm':>6} {'cold':>7}")
    for peer in peers:
        r = res[peer]

        def cpu(key):
            if "cpu_r_" + key not in r:
                return "-"
            return f"{r['cpu_r_' + key]:.2f}+{r['cpu_d_' + key]:.2f}"
        gbs = {k: r[k] / 1e9 if k in r else None for k in ("cold", "warm")}
        cached = 100 * r["cached"] if "cached" in r else None
        print(f"{peer:9} {fmt(gbs['cold'], '8.2f'):>8} {fmt(gbs['warm'], '8.2f'):>8} "
              f"{fmt(cached, '6.1f'):>6} {r['shuf1']:7,.0f} {r['shufw']:7,.0f} "
              f"{fmt(r.get('amp_shuf1'), '6.2f'):>6} {fmt(r.get('amp_shufw'), '6.2f'):>6} "
              f"{cpu('cold'):>9} {cpu('shuf1'):>9} {cpu('shufw'):>9}  "
              f"{fmt(ratio(peer, 'shuf1', 'u8_numpy'), '.2f')}/{fmt(ratio(peer, 'shufw', 'u8_numpy'), '.2f'):>4} "
              f"{fmt(ratio(peer, 'warm', 'f32_mm'), '6.2f'):>6} "
              f"{fmt(ratio(peer, 'cold', 'null'), '7.2f'):>7}")
    met = []
    for name, key, base, want in TARGETS:
        v = ratio("dsv_npy", key, base)
        ok = None if v is None else v >= want
        met.append({"target": name, "ratio": v, "want": want, "base": base, "met": ok})
        print(f"  target {name:24} dsv_npy / {base:8} {fmt(v, '.2f')}x (>= {want:.2f}x): "
              f"{'-' if ok is None else 'met' if ok else 'NOT met'}")
    for key in ("shuf1", "shufw"):
        if key in res.get("dsv_hint", {}):
            print(f"  with hints ({key}): dsv_hint / u8_numpy {fmt(ratio('dsv_hint', key, 'u8_numpy'), '.2f')}x, "
                  f"dsv_hint / dsv_npy {fmt(ratio('dsv_hint', key, 'dsv_npy'), '.2f')}x")
    return met


def main():
    work = L.work_dir("read")
    peers = L.chosen_peers(PEERS, "READ_PEERS", NULLFS)
    L.scale_prefault(MB)
    if ROUNDS > 0 and not L.drop_caches():
        print("warning: cannot drop the page cache (not root): 'cold' numbers are warm")
    t0 = time.perf_counter()
    out = {}
    try:
        for side in SIZES:
            ds = Dataset(work, side)
            runs = {}
            for rnd in range(ROUNDS):
                for peer in peers:
                    r = run_peer(ds, peer, rnd)
                    runs.setdefault(peer, []).append(r)
                    seq = (f"cold {r['cold'] / 1e9:.2f} warm {r['warm'] / 1e9:.2f} GB/s "
                           f"({100 * r['cached']:.1f}% cached), " if "cold" in r else "")
                    print(f"  round {rnd + 1}/{ROUNDS} {peer:8}: {seq}"
                          f"shuffled {r['shuf1']:,.0f} / {WORKERS}w {r['shufw']:,.0f} rows/s"
                          + (f", decoded/asked {r['dec_shuf1']:.2f} / {r['dec_shufw']:.2f}, "
                             f"disk/asked {r['amp_shuf1']:.2f} / {r['amp_shufw']:.2f}"
                             if "dec_shuf1" in r else ""),
                          flush=True)
            res = L.medians(runs)
            met = report(ds, res, peers)
            out[f"{ds.side}x{ds.side}x3"] = {"rows": ds.n, "row_bytes": ds.row,
                                             "peers": res, "targets": met}
            shutil.rmtree(ds.dir, ignore_errors=True)
    finally:
        L.remove_work(work, *(os.path.join(work, f"s{side}", "mnt") for side in SIZES))
    print(f"\n{L.machine('READ_MB', MB, ROUNDS, t0)}\ncold = page cache dropped, daemon "
          f"restarted, {L.PREFAULT_GB:g} GB touched and freed; warm = a second pass over a file "
          f"wholly in the page cache (cached: % resident before it, mincore);\nshuf = cold sorted "
          f"batches of {L.BATCH} random rows, 1 reader or {WORKERS} forked workers, each opening "
          f"its own array after the fork; amp = bytes read from disk (daemon's or readers' "
          f"/proc/PID/io)\n/ source bytes of the rows asked for; CPU s/GB = CPU seconds per GB "
          f"of float32 delivered, reader processes + daemon; vs u8_numpy (shuffled 1 / "
          f"{WORKERS} workers),\nvs f32 (warm), vs null (cold): ratios of medians of this run. "
          f"null: read_ahead_kb 1024; dsview: its default (128).")
    L.save_json(OUT_JSON, out)


if __name__ == "__main__":
    sys.exit(main())
