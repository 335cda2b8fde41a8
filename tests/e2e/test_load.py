"""Load and memory: a soak of 64 forked readers through a mount whose cache is
much smaller than the data, fio's pattern verification over both read paths
and both I/O engines, and a full pass with the daemon in a memory cgroup
whose limit is a little above the cache budget.

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
import shutil
import signal
import subprocess
import threading
import time
import traceback

import numpy as np

from common import E2E, alive, diff_report, npy_header_len, reference, run

SOAK_SECONDS = float(os.environ.get("DSVIEW_SOAK_SECONDS", "30"))
FIO = shutil.which("fio") or "/usr/bin/fio"

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


VIEWS = [View("lz4", 0.0123, -100.5, "float32"),       # store: the decoded chunk cache
         View("npy", -0.37, 1000.25, "float32"),        # .npy: pread on demand
         View("lz4b", 1 / 65535, -0.5, "bfloat16"),     # store again, rounded to bfloat16
         View("seq", 0.0007, -20.0, "float16")]         # store again: only the scanners read it
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


def has_asan(pid):
    # a sanitizer's shadow memory (ASan's quarantine, TSan's history) is
    # not dsview's memory
    try:
        with open(f"/proc/{pid}/maps") as f:
            maps = f.read()
            return "libasan" in maps or "libtsan" in maps
    except OSError:
        return False


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
    """Makes the self-verifying source (x.npy), its LZ4 store (x.h5) and the
    manifest of VIEWS."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        x = np.lib.format.open_memmap(os.path.join(cls.tmp, "x.npy"), "w+", np.uint16, (ROWS,) + ROW_SHAPE)
        for r in range(0, ROWS, 512):
            n = min(512, ROWS - r)
            x[r:r + n] = src_at(np.arange(r * RL, (r + n) * RL, dtype=np.uint64)).reshape((n,) + ROW_SHAPE)
        x.flush()
        del x
        r = run("pack", "--chunk-size", "256K", os.path.join(cls.tmp, "x.npy"),
                os.path.join(cls.tmp, "x.h5"), timeout=300)
        assert r.returncode == 0, r.stderr
        cls.ini = os.path.join(cls.tmp, "load.ini")
        src = {"lz4": "x.h5:/x", "npy": "x.npy", "lz4b": "x.h5:/x", "seq": "x.h5:/x"}
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
            asan = has_asan(pid)
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
                  f"{st['cache_evictions']} evictions, {st['prefetched']} prefetched, errors {st['errors']}",
                  flush=True)
            self.check_children(pids, codes, reps, "soak")
            self.assertGreater(reads, self.READERS, "the readers hardly read anything")
            self.assertEqual(st["errors"], 0, st)
            self.assertGreater(st["cache_evictions"], 0, "the data should not fit in the cache")
            self.assertLessEqual(st["cache_budget"], self.CACHE, st)
            self.assertEqual(fd_end, fd0, f"daemon fd count {fd0} after warm-up, {fd_end} once the readers "
                                          f"closed: {sorted(os.listdir(f'/proc/{pid}/fd'))}")
            if not asan:
                self.assertLessEqual(max(rs[half:]), max(rs[:half] or rs) + (16 << 20),
                                     f"daemon RSS grows: samples (s, bytes) {[(round(t), r) for t, r, _ in samples]}")
                self.assertLessEqual(max(rs), rss0 + self.CACHE + (64 << 20),
                                     f"daemon RSS above idle {mib(rss0)} + budget + 64 MiB")


# ---- fio ----

PERIOD = 16


def pattern_src(n):
    """uint8 values that repeat with period 16 along the flat index."""
    return ((np.arange(n) % PERIOD) * 7 + 1).astype(np.uint8)


class Fio(E2E):
    """fio reads the views with pattern verification (rw=read/randread of a
    file fio assumes was written with verify_pattern): 16 jobs per run,
    psync and mmap, sequential and random, 4k and 128k blocks, over a store
    and an .npy. The float32 output of the period-16 source repeats a
    64-byte pattern, which divides every block size."""
    SCALE, OFFSET = 0.1, -3.3  # rounding is not exact: the pattern is the rounded value
    SHAPE = (4096, 4096)  # 16 MiB of uint8, 64 MiB of float32
    BAD_ELEM = (5 * 131072 + 4100) // 4  # planted fault: in block 5 of 128k, in the middle of a 4k block

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        if not os.access(FIO, os.X_OK):
            return
        x = pattern_src(cls.SHAPE[0] * cls.SHAPE[1]).reshape(cls.SHAPE)
        np.save(os.path.join(cls.tmp, "pat.npy"), x)
        x.ravel()[cls.BAD_ELEM] += 1  # one element off the pattern
        np.save(os.path.join(cls.tmp, "bad.npy"), x)
        r = run("pack", "--chunk-size", "256K", os.path.join(cls.tmp, "pat.npy"), os.path.join(cls.tmp, "pat.h5"))
        assert r.returncode == 0, r.stderr
        cls.ini = os.path.join(cls.tmp, "fio.ini")
        with open(cls.ini, "w") as f:
            for name, src in (("store", "pat.h5:/pat"), ("plain", "pat.npy"), ("bad", "bad.npy")):
                f.write(f"[{name}]\nsource = {src}\nscale = {cls.SCALE!r}\noffset = {cls.OFFSET!r}\n\n")
        pat = reference(pattern_src(PERIOD), cls.SCALE, cls.OFFSET).tobytes()
        assert len(pat) == 4 * PERIOD and len(set(pat)) > 8
        cls.pattern = "0x" + pat.hex()

    def setUp(self):
        super().setUp()
        if not os.access(FIO, os.X_OK):
            self.skipTest(f"fio not installed ({FIO})")

    def fio(self, path, engine, rw, bs, pattern, jobs=16, io=16 << 20):
        """Runs fio; returns (rc, json or None, stderr). Sequential jobs read
        io bytes each from staggered offsets, random jobs io bytes from
        anywhere in the file."""
        out = self.p(f"fio-{time.monotonic_ns()}.json")
        size = os.stat(path).st_size
        args = [FIO, "--name=v", f"--filename={path}", "--readonly", f"--rw={rw}", f"--bs={bs}",
                f"--ioengine={engine}", f"--numjobs={jobs}", "--verify=pattern",
                f"--verify_pattern={pattern}", "--output-format=json", f"--output={out}"]
        if rw == "read":
            args += [f"--size={io}", f"--offset_increment={(size - io) // max(jobs - 1, 1) // (1 << 20) << 20}"]
        else:
            args += [f"--io_size={io}"]
        try:
            r = subprocess.run(args, capture_output=True, text=True, timeout=120)
        except subprocess.TimeoutExpired as e:
            self.fail(f"fio timed out: {' '.join(args)}\n{e.stderr}")
        try:
            with open(out) as f:
                data = json.load(f)
        except (OSError, ValueError):
            data = None
        return r.returncode, data, r.stderr

    def test_fio_pattern_verify(self):
        runs = [("store", "psync", "read", "4k"), ("store", "psync", "randread", "128k"),
                ("store", "mmap", "read", "128k"), ("store", "mmap", "randread", "4k"),
                ("plain", "psync", "read", "128k"), ("plain", "psync", "randread", "4k"),
                ("plain", "mmap", "read", "4k"), ("plain", "mmap", "randread", "128k")]
        with self.mount(self.ini, "--cache-size", "4M") as m:
            figures = []
            for view, engine, rw, bs in runs:
                with self.subTest(view=view, engine=engine, rw=rw, bs=bs):
                    rc, data, err = self.fio(m.path(view + ".dat"), engine, rw, bs, self.pattern)
                    what = f"fio {view}.dat {engine} {rw} bs={bs}"
                    self.assertIsNotNone(data, f"{what}: exit {rc}, no JSON; stderr:\n{err[-3000:]}")
                    jobs = data["jobs"]
                    self.assertEqual(len(jobs), 16, what)
                    errs = [j["error"] for j in jobs]
                    io = [j["read"]["io_bytes"] for j in jobs]
                    bw = sum(j["read"]["bw_bytes"] for j in jobs)
                    figures.append(f"{view} {engine} {rw} {bs}: {bw / 1e6:.0f} MB/s, "
                                   f"{sum(io) >> 20} MiB, err {max(errs)}")
                    self.assertEqual((rc, errs), (0, [0] * 16), f"{what}: stderr:\n{err[-3000:]}")
                    self.assertEqual(io, [16 << 20] * 16, f"{what}: bytes read per job")
            print("\nfio (16 jobs each, verify=pattern): " + "; ".join(figures), flush=True)
            st = m.stats()
            self.assertEqual(st["errors"], 0, st)
            self.assertGreater(st["cache_evictions"], 0, st)

    def test_fio_verify_can_fail(self):
        # the check is real: a wrong pattern fails, and so does one element
        # off the pattern in the middle of the file, at the block holding it
        pat = bytearray(bytes.fromhex(self.pattern[2:]))
        pat[37] ^= 0x01
        wrong = "0x" + pat.hex()
        with self.mount(self.ini) as m:
            for engine, rw in (("psync", "randread"), ("mmap", "read")):
                with self.subTest("wrong pattern", engine=engine, rw=rw):
                    rc, data, err = self.fio(m.path("store.dat"), engine, rw, "4k", wrong, jobs=2, io=1 << 20)
                    self.assertNotEqual(rc, 0, f"fio passed a wrong pattern: {err[-2000:]}")
                    self.assertIn("verify failed", err)
                    self.assertTrue(data and all(j["error"] != 0 for j in data["jobs"]), data and data["jobs"])
            boff = self.BAD_ELEM * 4
            for engine, bs in (("psync", 4096), ("mmap", 131072)):
                with self.subTest("planted fault", engine=engine, bs=bs):
                    rc, data, err = self.fio(m.path("bad.dat"), engine, "read", str(bs), self.pattern,
                                             jobs=1, io=os.stat(m.path("bad.dat")).st_size)
                    self.assertNotEqual(rc, 0, f"fio missed the planted fault: {err[-2000:]}")
                    self.assertIn(f"verify failed at file {m.path('bad.dat')} offset {boff // bs * bs},", err)
                    self.assertIn(f"bad pattern block offset {boff % bs}", err)
            # and the bad view holds the pattern everywhere but at the planted element
            start = boff // 64 * 64 - 64
            with open(m.path("bad.dat"), "rb") as f:
                f.seek(start)
                got = f.read(192)
            want = bytes.fromhex(self.pattern[2:]) * 3
            diffs = [start + k for k in range(192) if got[k] != want[k]]
            self.assertTrue(diffs and all(boff <= d < boff + 4 for d in diffs),
                            f"bytes {diffs} differ around {boff}: {got.hex()} vs {want.hex()}")
            self.assertEqual(m.stats()["errors"], 0)


# ---- a memory cgroup ----

def _cgroup_mounts():
    out = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            fields, r = left.split(), right.split()
            if len(fields) > 4 and len(r) > 2:
                out.append((fields[4], r[0], r[2].split(",")))
    return out


def memory_controller():
    """('v2', root) or ('v1', root) of a hierarchy with the memory
    controller, preferring v2; or (None, reason)."""
    v1 = None
    for mp, fstype, opts in _cgroup_mounts():
        if fstype == "cgroup2":
            try:
                with open(os.path.join(mp, "cgroup.controllers")) as f:
                    if "memory" in f.read().split():
                        return "v2", mp
            except OSError:
                pass
        elif fstype == "cgroup" and "memory" in opts and v1 is None:
            v1 = mp
    if v1:
        return "v1", v1
    return None, "no cgroup hierarchy with the memory controller is mounted"


class MemCgroup:
    """A child memory cgroup at the root of the hierarchy, with a hard limit
    and no swap."""

    def __init__(self, version, root, limit):
        self.v, self.root, self.limit = version, root, limit
        self.path = os.path.join(root, f"dsv-e2e-{os.getpid()}-{time.monotonic_ns()}")
        self.enabled_memory = False
        if version == "v2":
            with open(os.path.join(root, "cgroup.subtree_control")) as f:
                if "memory" not in f.read().split():
                    self._write(os.path.join(root, "cgroup.subtree_control"), "+memory")
                    self.enabled_memory = True
        os.mkdir(self.path)
        try:
            if version == "v2":
                self._write(self.file("memory.max"), str(limit))
                if os.path.exists(self.file("memory.swap.max")):
                    self._write(self.file("memory.swap.max"), "0")
            else:
                self._write(self.file("memory.limit_in_bytes"), str(limit))
                try:
                    self._write(self.file("memory.swappiness"), "0")
                    self._write(self.file("memory.memsw.limit_in_bytes"), str(limit))
                except OSError:
                    pass  # no swap accounting: no swap to worry about, or just less strict
        except BaseException:
            self.remove(None)
            raise

    @staticmethod
    def _write(path, text):
        with open(path, "w") as f:
            f.write(text)

    def file(self, name):
        return os.path.join(self.path, name)

    def read(self, name):
        try:
            with open(self.file(name)) as f:
                return f.read()
        except OSError:
            return None

    def keyed(self, name, key):
        text = self.read(name) or ""
        for line in text.splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[0] == key:
                return int(parts[1])
        return None

    def home_of(self, pid):
        """The directory of pid's current cgroup in this hierarchy."""
        with open(f"/proc/{pid}/cgroup") as f:
            for line in f:
                num, ctl, rel = line.rstrip("\n").split(":", 2)
                if (self.v == "v2" and num == "0" and ctl == "") or \
                   (self.v == "v1" and "memory" in ctl.split(",")):
                    d = os.path.join(self.root, rel.lstrip("/"))
                    return d if os.path.isdir(d) else self.root
        return self.root

    def add(self, pid):
        self._write(self.file("cgroup.procs"), str(pid))  # the whole process, every thread

    def members(self):
        return [int(x) for x in (self.read("cgroup.procs") or "").split()]

    def oom_kills(self):
        if self.v == "v2":
            return self.keyed("memory.events", "oom_kill")
        return self.keyed("memory.oom_control", "oom_kill")

    def peak(self):
        name = "memory.peak" if self.v == "v2" else "memory.max_usage_in_bytes"
        text = self.read(name)
        return int(text) if text else None

    def usage(self):
        text = self.read("memory.current" if self.v == "v2" else "memory.usage_in_bytes")
        return int(text) if text else None

    def anon_file(self):
        """(anonymous, page cache) bytes charged to it."""
        if self.v == "v2":
            return self.keyed("memory.stat", "anon"), self.keyed("memory.stat", "file")
        return self.keyed("memory.stat", "rss"), self.keyed("memory.stat", "cache")

    def remove(self, home):
        """Moves what is left in it to home, then removes it."""
        for pid in self.members():
            if home:
                try:
                    self._write(os.path.join(home, "cgroup.procs"), str(pid))
                except OSError:
                    self._write(os.path.join(self.root, "cgroup.procs"), str(pid))
        for _ in range(50):
            try:
                os.rmdir(self.path)
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.1)
        else:
            os.rmdir(self.path)  # raise with the reason
        if self.enabled_memory:
            try:
                self._write(os.path.join(self.root, "cgroup.subtree_control"), "-memory")
            except OSError:
                pass


class MemoryCap(Dataset):
    """The daemon in a memory cgroup limited to the cache budget + 96 MiB: 16
    forked readers read every row of the 384 MiB store view once, shuffled.
    No OOM kill, the daemon alive, every byte right."""
    READERS = 16
    CACHE = 64 << 20
    HEADROOM = 96 << 20

    def test_full_pass_under_memory_limit(self):
        version, root = memory_controller()
        if version is None:
            self.skipTest(root)
        view = "lz4"
        with self.mount(self.ini, "--cache-size", "64M") as m:
            self.headers(m)
            pid = m.pid
            asan = has_asan(pid)
            limit = self.CACHE + self.HEADROOM + ((1 << 30) if asan else 0)
            rss0 = rss(pid)
            try:
                cg = MemCgroup(version, root, limit)
            except OSError as e:
                self.skipTest(f"cannot make a memory cgroup under {root} ({version}): {e}")
            home = cg.home_of(pid)
            pids, codes, samples = [], {}, []
            try:
                # the source's page cache, read again by the daemon, is
                # charged to the cgroup: the limit presses from the start
                drop_page_cache([self.p("x.h5")])
                try:
                    cg.add(pid)
                except OSError as e:
                    self.skipTest(f"cannot move the daemon into {cg.path}: {e}")
                self.assertIn(pid, cg.members())
                rows = np.random.default_rng(11).permutation(ROWS)
                t0 = time.monotonic()
                pids = fork_children(self.READERS, lambda k: pass_reader(k, m.mp, view, rows[k::self.READERS]),
                                     self.tmp, "pass")
                hard = t0 + 120
                while len(codes) < len(pids) and time.monotonic() < hard:
                    samples.append((rss(pid), cg.anon_file()[0]))
                    if not alive(pid):
                        break
                    reap(pids, codes)
                    time.sleep(0.3)
                reap(pids, codes)
                wall = time.monotonic() - t0
                hung = [p for p in pids if p not in codes]
                kill_children(hung)
                oom, peak, usage, (anon, cached) = cg.oom_kills(), cg.peak(), cg.usage(), cg.anon_file()
                up = alive(pid)
            finally:
                kill_children([p for p in pids if p not in codes])
                cg.remove(home if alive(pid) else None)
            reps = reports(self.tmp, "pass", self.READERS)
            rs = [s[0] for s in samples if s[0] is not None]
            anons = [s[1] for s in samples if s[1] is not None]
            st = m.stats() if up else {}
            nrows = sum(r.get("rows", 0) for r in reps)
            print(f"\nmemory cap ({version}): limit {mib(limit)} (cache {mib(self.CACHE)} + {mib(self.HEADROOM)}), "
                  f"peak {mib(peak)}, oom_kill {oom}; at the end usage {mib(usage)} (anon {mib(anon)}, "
                  f"page cache {mib(cached)}), anon max {mib(max(anons) if anons else None)}; "
                  f"{self.READERS} readers, {nrows} rows ({sum(r.get('bytes', 0) for r in reps) / 1e6:.0f} MB) "
                  f"in {wall:.1f} s; daemon RSS idle {mib(rss0)}, max {mib(max(rs) if rs else None)}; "
                  f"{st.get('chunks_decoded')} chunks decoded, {st.get('cache_evictions')} evictions",
                  flush=True)
            self.assertTrue(up, f"the daemon died in the cgroup (oom_kill {oom}, peak {mib(peak)})")
            self.assertEqual(oom, 0, "memory.events/oom_control oom_kill")
            self.assertEqual(hung, [], f"{len(hung)} readers still running after 120 s")
            self.check_children(pids, codes, reps, "full pass")
            self.assertEqual(nrows, ROWS)
            if peak is not None:  # v2 before Linux 5.19 has no memory.peak
                self.assertLessEqual(peak, limit)
            self.assertEqual(st["errors"], 0, st)
            self.assertGreater(st["cache_evictions"], 0, st)
            if not asan:
                self.assertLessEqual(max(rs), rss0 + self.CACHE + (64 << 20),
                                     f"daemon RSS above idle {mib(rss0)} + budget + 64 MiB: {rs}")
