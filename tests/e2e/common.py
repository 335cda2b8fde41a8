"""Shared pieces of the end-to-end tests: mounting, reading and checking a
view against its numpy reference (refs.py computes it), and the daemon log
check (libfuse's harness habit: anything that looks like an
error in the daemon's output fails the test unless the test expected it).

Mount(...) always unmounts (dsview umount, then umount -l as a fallback),
then requires that the daemon was alive until then (unless the test stops
it itself: expect_exit), that it is gone afterwards, and that its log (and
any sanitizer report, captured through ASAN_OPTIONS/UBSAN_OPTIONS
log_path) holds no line the test did not declare. A per-test watchdog SIGKILLs the daemons of a
hung test, which aborts their FUSE connections, so a hang becomes a failure
instead of a stuck suite."""
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import unittest

import numpy as np

from refs import OUT_DESCR, diff_report, nan_tolerant, out_np, same_bits

# the Python package in this tree (tests put it first on sys.path)
PYTHON_DIR = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                          "python"))
DSVIEW = os.environ.get("DSVIEW") or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "build", "dsview")

TEST_TIMEOUT = float(os.environ.get("DSVIEW_E2E_TEST_TIMEOUT", "150"))


def _san_env(prefix=None):
    """The environment for dsview: sanitizer reports (a sanitizer build, e.g.
    make SANITIZE=address,undefined or thread) go to prefix.PID files we can read,
    since the daemon's stderr is /dev/null."""
    env = dict(os.environ)
    if prefix:
        for var, base in (("ASAN_OPTIONS", "halt_on_error=1:detect_leaks=1"),
                          ("UBSAN_OPTIONS", "halt_on_error=1:print_stacktrace=1"),
                          ("TSAN_OPTIONS", "halt_on_error=1:second_deadlock_stack=1")):
            opts = env.get(var, base)
            opts = ":".join(o for o in opts.split(":") if o and not o.startswith("log_path="))
            env[var] = (opts + ":" if opts else "") + "log_path=" + prefix
    return env


def run(*args, timeout=60, env=None, wrap=()):
    """Runs dsview (under the command wrap, if given: nsenter ...); returns
    the CompletedProcess (text). A run that does not finish in `timeout`
    seconds is killed and reported as rc -9 with a note."""
    try:
        return subprocess.run([*wrap, DSVIEW, *map(str, args)], capture_output=True, text=True,
                              timeout=timeout, env=env)
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        err = e.stderr.decode() if isinstance(e.stderr, bytes) else (e.stderr or "")
        return subprocess.CompletedProcess(e.cmd, -9, out, err + f"\n[killed after {timeout} s]")


def _unescape(s):
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), s)


def mount_entry(mp):
    """The last /proc/self/mountinfo entry at mp as (fields, fstype, superopts), or None."""
    mp = os.path.join(os.path.realpath(os.path.dirname(os.path.abspath(mp))),
                      os.path.basename(os.path.abspath(mp)))
    found = None
    # other mounts on the machine may name files in any bytes (not UTF-8)
    with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            fields = left.split()
            if len(fields) > 4 and _unescape(fields[4]) == mp:
                r = right.split()
                found = (fields, r[0] if r else "", r[2] if len(r) > 2 else "")
    return found


def mounted(mp):
    return mount_entry(mp) is not None


def alive(pid):
    """True while pid runs (a zombie waiting to be reaped counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False


def has_sanitizer(pid):
    """Whether process pid runs under ASan or TSan: their shadow memory
    (ASan's quarantine, TSan's history) is not dsview's memory."""
    try:
        with open(f"/proc/{pid}/maps") as f:
            maps = f.read()
            return "libasan" in maps or "libtsan" in maps
    except OSError:
        return False


def dsview_pids_for(path):
    """PIDs of running dsview processes whose command line names path."""
    out = []
    for d in glob.glob("/proc/[0-9]*/cmdline"):
        try:
            with open(d, "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if argv and argv[0].endswith(b"dsview") and path.encode() in argv:
            pid = int(d.split("/")[2])
            if alive(pid):
                out.append(pid)
    return out


# ---- mounting ----

BAD_LOG = re.compile(r"error|==\d+==|runtime error|Sanitizer|LeakSanitizer", re.I)
_LIVE = {}  # id(Mount) -> Mount, for the watchdog


class Mount:
    """Mounts SOURCE on a fresh mountpoint; always unmounts; checks the log.
    expect_errors: regexes for log lines the test declares as expected."""

    def __init__(self, source, *opts, expect_errors=(), expect_exit=False, tmp=None, mp=None,
                 log=True, env=None, wrap=()):
        self.wrap = wrap  # the mount runs under it: a network namespace's nsenter
        self.source, self.opts, self.expect = source, opts, [re.compile(e) for e in expect_errors]
        self.env = env  # variables set for the daemon on top of ours
        self.expect_exit = expect_exit  # the test itself stops the daemon
        self.tmp = tmp or tempfile.mkdtemp(prefix="dsv-e2e-")
        self.mp = mp or os.path.join(self.tmp, "mnt-%d" % time.monotonic_ns())
        # no spaces: the sanitizers' option parser splits log_path at one
        name = re.sub(r"[^A-Za-z0-9_.-]", "_", os.path.basename(self.mp))
        base = os.path.join(self.tmp, name + "-%d" % time.monotonic_ns())
        self.log = base + ".log"
        self.san = base + ".san"
        self.pid = None

    def __enter__(self):
        env = _san_env(self.san)
        env.update(self.env or {})
        r = run("mount", "--log", self.log, *self.opts, self.source, self.mp, env=env,
                wrap=self.wrap)
        self.stderr = r.stderr  # the mount command's: the summary of what it skipped
        if r.returncode != 0:
            if mounted(self.mp):
                subprocess.run(["umount", "-l", self.mp])
            raise AssertionError(f"mount {self.source} failed ({r.returncode}): {r.stderr.strip()}"
                                 + self._san_text())
        try:
            self.pid = self.stats()["pid"]
        except Exception:
            self._teardown()
            raise
        _LIVE[id(self)] = self
        return self

    def path(self, name):
        return os.path.join(self.mp, name)

    def stats(self):
        with open(self.path(".stats.json")) as f:
            return json.load(f)

    def stats_when(self, counter, at_least, timeout=60):
        """The stats once counter reaches at_least, or when timeout
        seconds have passed (the caller's assertions then fail): work in
        the background (the readahead) is counted when it ends."""
        deadline = time.monotonic() + timeout
        while (st := self.stats())[counter] < at_least and time.monotonic() < deadline:
            time.sleep(0.05)
        return st

    def stats_settled(self, counters=("readahead_chunks", "gpu_readahead_bytes"), quiet=1.0,
                      timeout=60):
        """The stats once the background work has stopped: counters
        unchanged for quiet seconds (or timeout seconds have passed). The
        readahead runs on after the read that started it, and counts its
        work when each batch ends."""
        deadline = time.monotonic() + timeout
        last = self.stats()
        while time.monotonic() < deadline:
            time.sleep(quiet)
            st = self.stats()
            if all(st[c] == last[c] for c in counters):
                return st
            last = st
        return last

    def log_lines(self):
        try:
            with open(self.log) as f:
                return f.read().splitlines()
        except FileNotFoundError:
            return []

    def _san_text(self):
        text = ""
        for p in sorted(glob.glob(self.san + ".*")):
            with open(p, errors="replace") as f:
                text += f"\n--- {os.path.basename(p)}:\n" + f.read()[-6000:]
        return text

    def unexpected_log(self):
        return [l for l in self.log_lines()
                if BAD_LOG.search(l) and not any(e.search(l) for e in self.expect)]

    def _teardown(self):
        """Unmounts; returns a list of problems (empty when all is well)."""
        problems = []
        _LIVE.pop(id(self), None)
        if self.pid and not alive(self.pid) and not self.expect_exit:
            # a daemon that is gone before we unmount crashed (or was
            # killed by the watchdog): a failure even if every read passed
            problems.append(f"daemon {self.pid} died during the test (crash?); log tail:\n  "
                            + "\n  ".join(self.log_lines()[-10:]))
        if mounted(self.mp):
            r = run("umount", self.mp)
            if r.returncode != 0:
                problems.append(f"dsview umount {self.mp} failed ({r.returncode}): {r.stderr.strip()}")
                subprocess.run(["umount", "-l", self.mp], capture_output=True)
        if mounted(self.mp):
            problems.append(f"{self.mp} still mounted after umount")
            subprocess.run(["umount", "-l", self.mp], capture_output=True)
        if self.pid and alive(self.pid):
            # dsview umount waits for the daemon; a little grace for the
            # reaper, then it is a failure (and we kill it)
            for _ in range(20):
                time.sleep(0.05)
                if not alive(self.pid):
                    break
            else:
                problems.append(f"daemon {self.pid} still running after umount")
                os.kill(self.pid, signal.SIGKILL)
        return problems

    def __exit__(self, etype, exc, tb):
        problems = self._teardown()
        bad = self.unexpected_log()
        if bad:
            problems.append("daemon log has unexpected errors:\n  " + "\n  ".join(bad[:20]))
        san = self._san_text()
        if san:
            problems.append("sanitizer report:" + san)
        if problems and etype is None:
            raise AssertionError("\n".join(problems))
        if problems and exc is not None:
            # keep the test's own failure, with the teardown problems added
            exc.args = (*exc.args, "[teardown] " + "\n".join(problems))
        return False


class E2E(unittest.TestCase):
    """A temp directory per test class, removed at the end; a watchdog per
    test that kills the daemons of a hung test."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="dsv-e2e-")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def setUp(self):
        self._hung = False
        self._dog = threading.Timer(TEST_TIMEOUT, self._watchdog)
        self._dog.daemon = True
        self._dog.start()

    def _watchdog(self):
        self._hung = True
        for m in list(_LIVE.values()):
            if m.pid and alive(m.pid):
                os.kill(m.pid, signal.SIGKILL)  # aborts the connection: blocked reads fail

    def tearDown(self):
        self._dog.cancel()
        if self._hung:
            self.fail(f"test ran over {TEST_TIMEOUT:.0f} s: the watchdog killed its daemons")

    def p(self, name):
        return os.path.join(self.tmp, name)

    def mount(self, source, *opts, **kw):
        return Mount(source, *opts, tmp=self.tmp, **kw)

    def write_ini(self, text, name="m.ini"):
        path = self.p(name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def assertBits(self, got, want, what="", dtype="float32"):
        got, want = nan_tolerant(got, want, dtype)
        msg = diff_report(got, want, dtype)
        if msg:
            self.fail(f"{what}: {msg}")

    def refused(self, source, *opts, want=(), rc=1):
        """Runs a mount that must fail: exit rc, exactly one stderr line
        starting 'dsview: ' and containing every string in want, nothing
        mounted, no daemon left. Returns the line."""
        mp = self.p("mnt-refused")
        r = run("mount", "--log", self.p("refused.log"), *opts, source, mp, timeout=30)
        try:
            self.assertEqual(r.returncode, rc, f"mount {source} {opts}: exit {r.returncode}, "
                             f"stderr {r.stderr.strip()!r}")
            lines = r.stderr.strip().splitlines()
            self.assertEqual(len(lines), 1, f"want one stderr line, got {r.stderr!r}")
            self.assertTrue(lines[0].startswith("dsview: "), lines[0])
            for w in ([want] if isinstance(want, str) else want):
                self.assertIn(w, lines[0])
            self.assertFalse(mounted(mp), "something was mounted")
            self.assertEqual(dsview_pids_for(mp), [], "a dsview process was left running")
        finally:
            if mounted(mp):
                subprocess.run(["umount", "-l", mp], capture_output=True)
        return lines[0]


def view_name(name):
    """The view name dsview serves an HDF5 name (str or bytes) under: the
    rule of dsv_name_escape (src/common/str.h), written again here so the
    tests check the C code against the docs' words."""
    b = os.fsencode(name) if isinstance(name, str) else name
    ok = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-."
    out = ""
    for i, c in enumerate(b):
        keep = (c in ok and not (c == ord(".") and i == 0)
                and not (c == ord("_") and b[i + 1:i + 2] == b"x"))
        out += chr(c) if keep else "_x%02X" % c
    return out


def mm_npy(path):
    """np.load(mmap_mode='r') of a mounted .npy, copied out and closed (an
    open memmap keeps the mount busy)."""
    a = np.load(path, mmap_mode="r")
    out = np.array(a)
    del a
    return out


def mm_dat(path, dtype, shape):
    a = np.memmap(path, dtype=dtype, mode="r", shape=shape)
    out = np.array(a)
    del a
    return out


def flip_byte(path, off, mask=0x5A):
    """Damages a file in place: the byte at off xor mask."""
    with open(path, "r+b") as f:
        f.seek(off)
        b = f.read(1)
        f.seek(off)
        f.write(bytes([b[0] ^ mask]))


def read_all(path):
    with open(path, "rb") as f:
        return f.read()


def npy_header_len(path):
    with open(path, "rb") as f:
        head = f.read(12)
    return 10 + head[8] + 256 * head[9]


# ---- views beyond concatenation: integer outputs, windows, checks ----

def check_whole(tc, m, name, ref, dtype):
    """One view against its reference: .dat by np.memmap and read(), .npy by
    np.load(mmap_mode='r') (shape and descr), st_size, and .json's shape,
    dtype and nbytes. Returns the parsed .json."""
    nd = out_np(dtype)
    ref = np.ascontiguousarray(ref)
    dat, npy = m.path(name + ".dat"), m.path(name + ".npy")
    tc.assertEqual(os.stat(dat).st_size, ref.nbytes, f"{name}.dat st_size")
    if ref.size:
        tc.assertBits(mm_dat(dat, nd, ref.shape), ref, f"{name}.dat memmap", dtype)
    got = read_all(dat)
    tc.assertEqual(len(got), ref.nbytes, f"{name}.dat read() length")
    if got != ref.tobytes():
        tc.assertBits(np.frombuffer(got, nd).reshape(ref.shape), ref, f"{name}.dat read()", dtype)
    b = mm_npy(npy)
    tc.assertEqual(b.shape, ref.shape, f"{name}.npy shape")
    tc.assertEqual(b.dtype.str, OUT_DESCR[dtype], f"{name}.npy descr")
    tc.assertBits(b, ref, f"{name}.npy np.load", dtype)
    with open(m.path(name + ".json")) as f:
        meta = json.load(f)
    tc.assertEqual(meta["shape"], list(ref.shape), f"{name}.json shape")
    tc.assertEqual(meta["dtype"], dtype, f"{name}.json dtype")
    tc.assertEqual(meta["nbytes"], ref.nbytes, f"{name}.json nbytes")
    if ref.shape[0]:
        tc.assertEqual(meta["row_bytes"], ref.nbytes // ref.shape[0], f"{name}.json row_bytes")
    return meta


def check_preads(tc, m, name, ref, rows=(), seed=0, n_random=80):
    """Plain os.pread of .dat and .npy at unaligned offsets: around the
    starts of `rows` (source and window boundaries) and at random."""
    data = np.ascontiguousarray(ref).tobytes()
    nrows = ref.shape[0] if ref.ndim else 0
    rb = len(data) // nrows if nrows else 1
    rng = np.random.default_rng(seed)
    for ext in (".dat", ".npy"):
        fd = os.open(m.path(name + ext), os.O_RDONLY)
        try:
            full = data
            if ext == ".npy":
                head = os.pread(fd, 4096, 0)
                full = head[:10 + head[8] + 256 * head[9]] + data
            base = len(full) - len(data)
            size = len(full)
            offs = [0, 1, max(size - 1, 0), max(size - 5, 0), size, size + 3]
            for r in rows:
                b = base + r * rb
                offs += [b - rb - 1, b - 3, b - 1, b, b + 1, b + rb // 2 + 1]
            offs += [int(rng.integers(0, max(size, 1))) for _ in range(n_random)]
            for off in offs:
                if off < 0:
                    continue
                for n in (1, 3, rb + 5, 3 * rb + 1, 65537):
                    got = os.pread(fd, n, off)
                    if got != full[off:off + n]:
                        tc.fail(f"{name}{ext} pread({n}, {off}): {len(got)} bytes, "
                                f"want {len(full[off:off + n])}, first difference at "
                                f"{next((i for i, (a, b) in enumerate(zip(got, full[off:off + n])) if a != b), min(len(got), len(full[off:off + n])))}")
        finally:
            os.close(fd)


def _batch_worker(path, ref_path, seed, batches, use_npy):
    ref = np.load(ref_path, mmap_mode="r")
    a = np.load(path, mmap_mode="r") if use_npy else np.memmap(path, ref.dtype, "r", shape=ref.shape)
    rng = np.random.default_rng(seed)
    bad = 0
    for _ in range(batches):
        idx = rng.choice(ref.shape[0], size=min(int(rng.integers(4, 33)), ref.shape[0]), replace=False)
        if not same_bits(a[idx], ref[idx]):
            bad += 1
    return bad


def forked_batches(tc, m, name, ref, workers=4, batches=15):
    """`workers` forked processes, each with its own np.memmap (.dat; half
    of them np.load(mmap_mode='r') of .npy), read shuffled batches and
    compare them with ref. Fails with the mismatch count per worker."""
    if ref.shape[0] == 0:
        return
    ref_path = os.path.join(m.tmp, "fork-ref-%d.npy" % time.monotonic_ns())
    np.save(ref_path, np.ascontiguousarray(ref))
    pids = []
    for k in range(workers):
        pid = os.fork()
        if pid == 0:
            code = 101
            try:
                ext = ".npy" if k % 2 else ".dat"
                code = min(_batch_worker(m.path(name + ext), ref_path, k, batches, k % 2 == 1), 100)
            finally:
                os._exit(code)
        pids.append(pid)
    codes = [os.waitstatus_to_exitcode(os.waitpid(p, 0)[1]) for p in pids]
    os.unlink(ref_path)
    tc.assertEqual(codes, [0] * workers, f"{name}: workers saw mismatching batches (exit = count)")


def refused_at(tc, ini_text, line, want=(), name="bad.ini"):
    """A manifest that must not mount: `manifest:line: ` plus every want
    string in the one stderr line (E2E.refused). line may be a set of
    acceptable lines where the contract leaves it open."""
    ini = tc.write_ini(ini_text, name)
    msg = tc.refused(ini, want=want)
    lines = line if isinstance(line, (set, tuple, list)) else (line,)
    tc.assertTrue(any(f"{ini}:{n}: " in msg for n in lines), f"want {ini}:{line}: in {msg!r}")
    return msg


VENV_PY = os.environ.get("DSVIEW_VENV_PY") or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "build", "venv", "bin", "python")


def venv_python(code, *args, timeout=120):
    """Runs `code` under the project-local venv's Python (make venv; the
    writers Debian lacks, tests/venv/requirements.txt) with args in
    sys.argv[1:]; returns its stdout. The fixture writers run there; the
    test itself stays on Debian's Python. A failure raises with the
    writer's stderr."""
    if not os.access(VENV_PY, os.X_OK):
        raise RuntimeError(f"{VENV_PY}: no project venv (make venv)")
    p = subprocess.run([VENV_PY, "-c", code, *map(str, args)], capture_output=True,
                       text=True, timeout=timeout)
    if p.returncode:
        raise RuntimeError(f"venv writer failed ({p.returncode}):\n{p.stderr}")
    return p.stdout
