"""Load: a soak of 64 forked readers through a mount whose cache is much
smaller than the data (fio's pattern verification is in test_fio.py, the
pass under a memory cgroup in test_memory.py, which reads this file's
dataset too).

The soak and the memory pass read a self-verifying dataset: each source
value is a function of its flat index, so every reader computes the bytes it
must see for exactly what it read (float64, rounded once, as common.reference
does), without a reference array in each of 64 processes.

DSVIEW_SOAK_SECONDS (default 30) sets how long the soak reads; a longer soak
can be run by hand, e.g.
  DSVIEW_SOAK_SECONDS=600 DSVIEW=$PWD/build/dsview /usr/bin/python3 \\
      tests/e2e/run.py test_load.py"""
import json
import os
import signal
import threading
import time
import traceback

import numpy as np

from common import E2E, diff_report, has_sanitizer, npy_header_len, run
from refs import reference

SOAK_SECONDS = float(os.environ.get("DSVIEW_SOAK_SECONDS", "30"))

# ---- the self-verifying dataset ----

MULT = 2654435761  # Knuth's multiplicative hash
ROWS, ROW_SHAPE = 6144, (128, 128)  # uint16: 192 MiB of source, 384 MiB of float32
RL = ROW_SHAPE[0] * ROW_SHAPE[1]  # elements per row


def src_at(i):
    """The source value at flat indices i (any integer array): a hash of i//4,
    so that runs of four equal values give LZ4 something to compress."""
    i = np.asarray(i, dtype=np.uint64)
    return ((((i >> np.uint64(2)) * np.uint64(MULT)) >> np.uint64(13)) & np.uint64(0xFFFF)).astype(np.uint16)


class View:
    """One view of the self-verifying source: how to compute its bytes."""

    def __init__(self, name, scale, offset, dtype):
        self.name, self.scale, self.offset, self.dtype = name, scale, offset, dtype
        self.np = {"float32": np.float32, "bfloat16": np.uint16, "float16": np.float16}[dtype]
        self.isz = np.dtype(self.np).itemsize
        self.nbytes = ROWS * RL * self.isz
        self.header = b""  # the .npy header, read from the mount

    def elems_at(self, i):
        return reference(src_at(i), self.scale, self.offset, dtype=self.dtype)

    def rows(self, idx):
        i = (np.asarray(idx, np.uint64)[:, None] * np.uint64(RL) + np.arange(RL, dtype=np.uint64)).ravel()
        return self.elems_at(i).reshape((len(idx),) + ROW_SHAPE)

    def size(self, ext):
        return self.nbytes + (len(self.header) if ext == ".npy" else 0)

    def want(self, ext, off, n):
        """The bytes a read of n at off of V.dat / V.npy must return."""
        base = len(self.header) if ext == ".npy" else 0
        size = base + self.nbytes
        off, end = min(off, size), min(off + n, size)
        out = b""
        if off < base:
            out += self.header[off:min(end, base)]
        d0, d1 = max(off, base) - base, end - base
        if d1 > d0:
            e0, e1 = d0 // self.isz, -(-d1 // self.isz)
            b = self.elems_at(np.arange(e0, e1, dtype=np.uint64)).tobytes()
            out += b[d0 - e0 * self.isz:d1 - e0 * self.isz]
        return out


VIEWS = [View("lz4", 0.0123, -100.5, "float32"),       # store of one block a chunk: the chunk cache
         View("npy", -0.37, 1000.25, "float32"),        # .npy: pread on demand
         View("lz4b", 1 / 65535, -0.5, "bfloat16"),     # store with a block table, to bfloat16
         View("seq", 0.0007, -20.0, "float16")]         # the first store: only the scanners read it
RANDOM_VIEWS = VIEWS[:3]
SCANNERS = 4  # readers that only make long sequential passes over "seq"


def first_diff(got, want):
    """Where two byte strings first differ, with a few bytes of each."""
    if len(got) != len(want):
        return f"length {len(got)} != {len(want)}"
    k = next(j for j in range(len(got)) if got[j] != want[j])
    return f"first differing byte +{k}: got {got[k:k + 8].hex()} want {want[k:k + 8].hex()}"


# ---- sampling the daemon ----

def rss(pid):
    """VmRSS of pid in bytes, or None once it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            return next(int(l.split()[1]) for l in f if l.startswith("VmRSS:")) * 1024
    except (OSError, StopIteration):
        return None


def nfds(pid):
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return None


def mib(n):
    return "?" if n is None else f"{n / (1 << 20):.1f} MiB"


# ---- forked readers ----

def fork_children(n, body, outdir, tag):
    """Forks n children, each running body(k) -> dict (its report, written to
    outdir/tag-k.json) and exiting 0, or 1 when report['mismatches'] > 0, or
    2 when body raised (the traceback goes in the report). Returns the pids."""
    pids = []
    try:
        for k in range(n):
            pid = os.fork()
            if pid == 0:
                code = 2
                rep = {"k": k}
                try:
                    rep.update(body(k))
                    code = 1 if rep.get("mismatches") else 0
                except BaseException:
                    rep["exception"] = traceback.format_exc()[-3000:]
                finally:
                    try:
                        with open(os.path.join(outdir, f"{tag}-{k}.json"), "w") as f:
                            json.dump(rep, f)
                    finally:
                        os._exit(code)
            pids.append(pid)
    except BaseException:
        kill_children(pids)
        raise
    return pids


def kill_children(pids):
    for p in pids:
        try:
            os.kill(p, signal.SIGKILL)
        except ProcessLookupError:
            pass
    for p in pids:
        try:
            os.waitpid(p, 0)
        except ChildProcessError:
            pass


def reap(pids, codes):
    """Collects the exit codes of children that have ended (no waiting)."""
    for p in pids:
        if p in codes:
            continue
        try:
            got, status = os.waitpid(p, os.WNOHANG)
        except ChildProcessError:
            codes[p] = None
            continue
        if got:
            codes[p] = os.waitstatus_to_exitcode(status)


def reports(outdir, tag, n):
    out = []
    for k in range(n):
        try:
            with open(os.path.join(outdir, f"{tag}-{k}.json")) as f:
                out.append(json.load(f))
        except (OSError, ValueError):
            out.append({"k": k, "exception": "no report (killed, or died before writing it)"})
    return out


def soak_reader(k, mp, deadline):
    """One DataLoader-like worker: until deadline, a random mix of shuffled
    row batches through np.memmap(V.dat) and np.load(V.npy, mmap_mode='r'),
    sequential scans with read(), and preads of random unaligned ranges, all
    checked against the bytes the view must hold."""
    rng = np.random.default_rng(1000 + k)
    rep = {"reads": 0, "bytes": 0, "mismatches": 0, "first": [], "ops": {}}

    def check(ok, what):
        rep["reads"] += 1
        if not ok():
            rep["mismatches"] += 1
            if len(rep["first"]) < 4:
                rep["first"].append(what())

    if k < SCANNERS:
        return scanner(k, mp, deadline, rng, rep)
    while time.monotonic() < deadline:
        v = RANDOM_VIEWS[int(rng.integers(len(RANDOM_VIEWS)))]
        op = ("memmap", "npyload", "scan", "pread")[int(rng.integers(4))]
        rep["ops"][op] = rep["ops"].get(op, 0) + 1
        if op in ("memmap", "npyload"):
            if op == "memmap":
                a = np.memmap(os.path.join(mp, v.name + ".dat"), v.np, "r", shape=(ROWS,) + ROW_SHAPE)
            else:
                a = np.load(os.path.join(mp, v.name + ".npy"), mmap_mode="r")
                if a.shape != (ROWS,) + ROW_SHAPE or a.dtype != np.dtype(v.np):
                    rep["mismatches"] += 1
                    rep["first"].append(f"{v.name}.npy: np.load gave {a.shape} {a.dtype}")
                    del a
                    continue
            idx = rng.choice(ROWS, size=int(rng.integers(4, 33)), replace=False)
            got = np.array(a[idx])
            del a
            want = v.rows(idx)
            rep["bytes"] += got.nbytes
            check(lambda: got.tobytes() == want.tobytes(),
                  lambda: f"{op} {v.name} rows {idx[:8].tolist()}...: {diff_report(got, want, v.dtype)}")
        elif op == "scan":
            ext = (".dat", ".npy")[int(rng.integers(2))]
            bs = (4096, 65536, 131072, 1 << 20)[int(rng.integers(4))]
            size = v.size(ext)
            off = int(rng.integers(0, size))
            total = int(rng.integers(1, 9)) << 20
            fd = os.open(os.path.join(mp, v.name + ext), os.O_RDONLY)
            try:
                os.lseek(fd, off, os.SEEK_SET)
                while total > 0:
                    got = os.read(fd, bs)
                    want = v.want(ext, off, bs)
                    rep["bytes"] += len(got)
                    check(lambda: got == want,
                          lambda: f"scan {v.name}{ext} read({bs}) at {off}: {first_diff(got, want)}")
                    if not got:
                        break
                    off += len(got)
                    total -= len(got)
            finally:
                os.close(fd)
        else:
            ext = (".dat", ".npy")[int(rng.integers(2))]
            size = v.size(ext)
            fd = os.open(os.path.join(mp, v.name + ext), os.O_RDONLY)
            try:
                for _ in range(8):
                    off = int(rng.integers(0, size + 100))
                    n = int(rng.integers(1, 300_000))
                    got = os.pread(fd, n, off)
                    want = v.want(ext, off, n)
                    rep["bytes"] += len(got)
                    check(lambda: got == want,
                          lambda: f"pread {v.name}{ext} ({n}, {off}): {first_diff(got, want)}")
            finally:
                os.close(fd)
    return rep


def scanner(k, mp, deadline, rng, rep):
    """A sequential epoch reader: passes of 48 MiB with 1 MiB or 128 KiB
    reads from a random place in "seq" (long enough for the daemon's
    readahead to start: it waits for 32 MiB of a stream), wrapping at the
    end of the file."""
    v = next(x for x in VIEWS if x.name == "seq")
    while time.monotonic() < deadline:
        ext = (".dat", ".npy")[int(rng.integers(2))]
        bs = (131072, 1 << 20)[int(rng.integers(2))]
        size = v.size(ext)
        off = int(rng.integers(0, size)) // bs * bs
        left = 48 << 20
        rep["ops"]["pass"] = rep["ops"].get("pass", 0) + 1
        with open(os.path.join(mp, v.name + ext), "rb", buffering=0) as f:
            f.seek(off)
            while left > 0 and time.monotonic() < deadline:
                got = f.read(bs)
                if not got:
                    off = 0
                    f.seek(0)
                    continue
                want = v.want(ext, off, bs)
                rep["reads"] += 1
                rep["bytes"] += len(got)
                if got != want:
                    rep["mismatches"] += 1
                    if len(rep["first"]) < 4:
                        rep["first"].append(f"pass {v.name}{ext} read({bs}) at {off}: {first_diff(got, want)}")
                off += len(got)
                left -= len(got)
    return rep


def pass_reader(k, mp, view, rows, batch=32):
    """Reads each of its rows once, in shuffled batches, through one memmap."""
    v = next(x for x in VIEWS if x.name == view)
    rep = {"rows": 0, "bytes": 0, "mismatches": 0, "first": []}
    a = np.memmap(os.path.join(mp, view + ".dat"), v.np, "r", shape=(ROWS,) + ROW_SHAPE)
    try:
        for s in range(0, len(rows), batch):
            idx = rows[s:s + batch]
            got = np.array(a[idx])
            want = v.rows(idx)
            rep["rows"] += len(idx)
            rep["bytes"] += got.nbytes
            if got.tobytes() != want.tobytes():
                rep["mismatches"] += 1
                if len(rep["first"]) < 4:
                    rep["first"].append(f"rows {idx[:8].tolist()}...: {diff_report(got, want, v.dtype)}")
    finally:
        del a
    return rep


def drop_page_cache(paths):
    """Drops the kernel's cached pages of these files: of mounted files,
    which keep_cache would otherwise serve again without asking the daemon
    (pages a reader has mapped stay), or of a source, so that the daemon's
    reads of it are charged anew."""
    for p in paths:
        try:
            fd = os.open(p, os.O_RDONLY)
        except OSError:
            continue
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


class Dataset(E2E):
    """Makes the self-verifying source (x.npy), its LZ4 stores (x.h5, one
    block a chunk: every read of it goes through the chunk cache; xb.h5,
    pack's default blocks and block table: parts of chunks from their
    blocks) and the manifest of VIEWS."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        x = np.lib.format.open_memmap(os.path.join(cls.tmp, "x.npy"), "w+", np.uint16, (ROWS,) + ROW_SHAPE)
        for r in range(0, ROWS, 512):
            n = min(512, ROWS - r)
            x[r:r + n] = src_at(np.arange(r * RL, (r + n) * RL, dtype=np.uint64)).reshape((n,) + ROW_SHAPE)
        x.flush()
        del x
        for out, block in (("x.h5", "1G"), ("xb.h5", "16K")):
            r = run("pack", "--chunk-size", "256K", "--block-size", block, "--dataset", "x",
                    os.path.join(cls.tmp, "x.npy"), os.path.join(cls.tmp, out), timeout=300)
            assert r.returncode == 0, r.stderr
        cls.ini = os.path.join(cls.tmp, "load.ini")
        src = {"lz4": "x.h5:/x", "npy": "x.npy", "lz4b": "xb.h5:/x", "seq": "x.h5:/x"}
        with open(cls.ini, "w") as f:
            for v in VIEWS:
                f.write(f"[{v.name}]\nsource = {src[v.name]}\nscale = {v.scale!r}\n"
                        f"offset = {v.offset!r}\ndtype = {v.dtype}\n\n")

    def headers(self, m):
        """Reads each view's .npy header from the mount into VIEWS (the
        forked readers inherit them) and checks it describes the view."""
        for v in VIEWS:
            hlen = npy_header_len(m.path(v.name + ".npy"))
            with open(m.path(v.name + ".npy"), "rb") as f:
                v.header = f.read(hlen)
            a = np.load(m.path(v.name + ".npy"), mmap_mode="r")
            self.assertEqual((a.shape, a.dtype), ((ROWS,) + ROW_SHAPE, np.dtype(v.np)), v.name)
            del a
            self.assertEqual(os.stat(m.path(v.name + ".dat")).st_size, v.nbytes)
            self.assertEqual(os.stat(m.path(v.name + ".npy")).st_size, v.size(".npy"))

    def check_children(self, pids, codes, reps, what):
        bad = [r for r in reps if r.get("exception") or r.get("mismatches")]
        lines = []
        for r in bad[:5]:
            if r.get("exception"):
                lines.append(f"child {r['k']}: {r['exception'].strip()}")
            else:
                lines.append(f"child {r['k']}: {r['mismatches']} mismatches: " + "; ".join(r["first"]))
        mism = sum(r.get("mismatches", 0) for r in reps)
        self.assertEqual(mism, 0, f"{what}: {mism} mismatching reads:\n  " + "\n  ".join(lines))
        self.assertEqual([codes.get(p) for p in pids], [0] * len(pids),
                         f"{what}: children did not all exit 0:\n  " + "\n  ".join(lines))


class Soak(Dataset):
    """64 forked readers for DSVIEW_SOAK_SECONDS through a 32M cache over
    views of 384 MiB (two of the store, one of the .npy) and 192 MiB (the
    store as bfloat16): 60 read at random, 4 make long sequential passes over
    a fourth view (float16) so that readahead runs under the load too. The
    parent drops the files' page cache every second, so that repeat reads
    reach the daemon. Right bytes, no growth of memory or descriptors."""
    READERS = 64
    CACHE = 32 << 20

    def setUp(self):
        super().setUp()
        # a soak longer than the per-test watchdog gets a watchdog of its own
        need = SOAK_SECONDS + 120
        if need > self._dog.interval:
            self._dog.cancel()
            self._dog = threading.Timer(need, self._watchdog)
            self._dog.daemon = True
            self._dog.start()

    def test_soak_64_readers_small_cache(self):
        with self.mount(self.ini, "--cache-size", "32M") as m:
            self.headers(m)
            pid = m.pid
            san = has_sanitizer(pid)
            files = [m.path(v.name + e) for v in VIEWS for e in (".dat", ".npy")]
            # warm-up: every file opened, read, closed, by one process
            for p in files:
                with open(p, "rb") as f:
                    f.read(1 << 20)
            time.sleep(0.3)
            rss0, fd0 = rss(pid), nfds(pid)
            deadline = time.monotonic() + SOAK_SECONDS
            samples = []  # (t, rss, fds)
            codes = {}
            t0 = time.monotonic()
            pids = fork_children(self.READERS, lambda k: soak_reader(k, m.mp, deadline), self.tmp, "soak")
            try:
                last_drop = 0
                hard = deadline + 90
                while len(codes) < len(pids) and time.monotonic() < hard:
                    now = time.monotonic()
                    r, n = rss(pid), nfds(pid)
                    self.assertIsNotNone(r, "the daemon died during the soak")
                    samples.append((now - t0, r, n))
                    if now - last_drop >= 1.0:
                        drop_page_cache(files)
                        last_drop = now
                    reap(pids, codes)
                    time.sleep(0.5)
                reap(pids, codes)
                hung = [p for p in pids if p not in codes]
            finally:
                kill_children([p for p in pids if p not in codes])
            wall = time.monotonic() - t0
            self.assertEqual(hung, [], f"{len(hung)} readers still running 90 s after the deadline")
            reps = reports(self.tmp, "soak", self.READERS)
            # readers are gone: their opens are released (FUSE RELEASE is
            # asynchronous, so allow it a moment)
            for _ in range(50):
                fd_end = nfds(pid)
                if fd_end == fd0:
                    break
                time.sleep(0.1)
            st = m.stats()
            reads = sum(r.get("reads", 0) for r in reps)
            nbytes = sum(r.get("bytes", 0) for r in reps)
            mism = sum(r.get("mismatches", 0) for r in reps)
            ops = {}
            for r in reps:
                for k, c in r.get("ops", {}).items():
                    ops[k] = ops.get(k, 0) + c
            rs = [s[1] for s in samples]
            fds = [s[2] for s in samples if s[2] is not None]
            half = len(rs) // 2
            print(f"\nsoak: {self.READERS} readers x {SOAK_SECONDS:.0f} s ({wall:.1f} s wall): {reads} checked reads "
                  f"({', '.join(f'{k} {c}' for k, c in sorted(ops.items()))}), {nbytes / 1e6:.0f} MB, "
                  f"{mism} mismatches; daemon RSS idle {mib(rss0)}, min {mib(min(rs))}, max {mib(max(rs))} "
                  f"(first half max {mib(max(rs[:half] or rs))}, second half max {mib(max(rs[half:]))}); "
                  f"fds {fd0} after warm-up, max {max(fds)}, {fd_end} at the end; "
                  f"daemon served {st['bytes_served'] / 1e6:.0f} MB, {st['chunks_decoded']} chunks decoded, "
                  f"{st['cache_evictions']} evictions, {st['readahead_chunks']} chunks read ahead, errors {st['errors']}",
                  flush=True)
            self.check_children(pids, codes, reps, "soak")
            self.assertGreater(reads, self.READERS, "the readers hardly read anything")
            self.assertEqual(st["errors"], 0, st)
            self.assertGreater(st["cache_evictions"], 0, "the data should not fit in the cache")
            self.assertLessEqual(st["cache_budget"], self.CACHE, st)
            self.assertEqual(fd_end, fd0, f"daemon fd count {fd0} after warm-up, {fd_end} once the readers "
                                          f"closed: {sorted(os.listdir(f'/proc/{pid}/fd'))}")
            if not san:
                self.assertLessEqual(max(rs[half:]), max(rs[:half] or rs) + (16 << 20),
                                     f"daemon RSS grows: samples (s, bytes) {[(round(t), r) for t, r, _ in samples]}")
                self.assertLessEqual(max(rs), rss0 + self.CACHE + (64 << 20),
                                     f"daemon RSS above idle {mib(rss0)} + budget + 64 MiB")


# ---- fio ----
