"""Shared pieces of the end-to-end tests: mounting, the numpy reference, and
the daemon log check (libfuse's harness habit: anything that looks like an
error in the daemon's output fails the test unless the test expected it)."""
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
import unittest

import numpy as np

DSVIEW = os.environ.get("DSVIEW") or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "build", "dsview")


def run(*args, check=False):
    return subprocess.run([DSVIEW, *map(str, args)], capture_output=True, text=True,
                          check=check, timeout=120)


def mounted(mp):
    mp = os.path.realpath(mp)
    with open("/proc/self/mountinfo") as f:
        return any(line.split()[4] == mp for line in f)


def reference(x, scale=1.0, offset=0.0, mean=None, std=None, axis=-1, clip=None, dtype="float32"):
    """The SPEC formula in float64, rounded once to float32, then RNE to the
    output type. Returns the output bits/values as a numpy array."""
    y = x.astype(np.float64) * scale + offset
    if mean is not None:
        shape = [1] * x.ndim
        shape[axis] = -1
        y = (y - np.asarray(mean, np.float64).reshape(shape)) / np.asarray(std, np.float64).reshape(shape)
    if clip is not None:
        y = np.where(np.isnan(y), y, np.clip(y, clip[0], clip[1]))
    with np.errstate(over="ignore", invalid="ignore"):
        f = y.astype(np.float32)
        if dtype == "float32":
            return f
        if dtype == "float16":
            return f.astype(np.float16)
    b = f.view(np.uint32).astype(np.uint64)
    r = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(f)
    r[nan] = ((b[nan] >> 16) | 0x40).astype(np.uint16)
    return r


def same_bits(a, b):
    a = np.ascontiguousarray(a)
    b = np.ascontiguousarray(b)
    if a.shape != b.shape or a.dtype.itemsize != b.dtype.itemsize:
        return False
    return a.tobytes() == b.tobytes()


BAD_LOG = re.compile(r"error|==\d+==|runtime error|Sanitizer", re.I)


class Mount:
    """Mounts SOURCE on a fresh mountpoint; always unmounts; checks the log."""

    def __init__(self, source, *opts, expect_errors=(), tmp=None):
        self.source, self.opts, self.expect = source, opts, [re.compile(e) for e in expect_errors]
        self.tmp = tmp or tempfile.mkdtemp(prefix="dsv-e2e-")
        self.mp = os.path.join(self.tmp, "mnt-%d" % time.monotonic_ns())
        self.log = self.mp + ".log"

    def __enter__(self):
        r = run("mount", "--log", self.log, *self.opts, self.source, self.mp)
        if r.returncode != 0:
            raise AssertionError(f"mount failed ({r.returncode}): {r.stderr}")
        self.pid = self.stats()["pid"]
        return self

    def path(self, name):
        return os.path.join(self.mp, name)

    def stats(self):
        with open(self.path(".stats.json")) as f:
            return json.load(f)

    def log_lines(self):
        try:
            with open(self.log) as f:
                return f.read().splitlines()
        except FileNotFoundError:
            return []

    def unexpected_log(self):
        return [l for l in self.log_lines()
                if BAD_LOG.search(l) and not any(e.search(l) for e in self.expect)]

    def __exit__(self, *exc):
        if mounted(self.mp):
            r = run("umount", self.mp)
            if r.returncode != 0:
                subprocess.run(["umount", "-l", self.mp])
                raise AssertionError(f"umount failed: {r.stderr}")
        for _ in range(200):
            if not os.path.exists(f"/proc/{self.pid}"):
                break
            time.sleep(0.05)
        else:
            raise AssertionError(f"daemon {self.pid} still running after umount")
        bad = self.unexpected_log()
        if bad and not exc[0]:
            raise AssertionError("daemon log has unexpected errors:\n" + "\n".join(bad))
        return False


class E2E(unittest.TestCase):
    """A temp directory per test class, removed at the end."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="dsv-e2e-")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def p(self, name):
        return os.path.join(self.tmp, name)

    def mount(self, source, *opts, **kw):
        return Mount(source, *opts, tmp=self.tmp, **kw)

    def write_ini(self, text, name="m.ini"):
        path = self.p(name)
        with open(path, "w") as f:
            f.write(text)
        return path


def mm_npy(path):
    """np.load(mmap_mode='r') of a mounted .npy, copied out and closed (an
    open memmap keeps the mount busy). Returns (array, dtype, shape)."""
    a = np.load(path, mmap_mode="r")
    out = np.array(a)
    del a
    return out


def mm_dat(path, dtype, shape):
    a = np.memmap(path, dtype=dtype, mode="r", shape=shape)
    out = np.array(a)
    del a
    return out
