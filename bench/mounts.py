"""The mounts a run makes, and the peers most experiments share: a dsview
mount of a manifest (a fresh daemon each time), bench/nullfs (the FUSE
ceiling) and a plain file. Every mount made is unmounted at the end of
the run, also after a failure."""
import json
import os
import subprocess

import numpy as np

from bench import benchlib as L


def environ(env):
    """This process's environment with env's variables set (None: unset),
    or None where env is empty."""
    if not env:
        return None
    out = dict(os.environ)
    for k, v in env.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = v
    return out


class Mount:
    """A dsview daemon serving ini at mnt: .pid, .path(name), .stats()."""

    def __init__(self, run, ini, mnt, opts=(), env=None, binary=None):
        self.mnt = mnt
        self.binary = binary or run.dsview
        os.makedirs(mnt, exist_ok=True)
        subprocess.run([self.binary, "mount", "--log", run.path("log"), *opts, ini, mnt],
                       check=True, env=environ(env))
        self.pid = L.daemon_pid(mnt)
        self.proc = None

    def path(self, name):
        return os.path.join(self.mnt, name)

    def stats(self):
        with open(os.path.join(self.mnt, ".stats.json")) as f:
            return json.load(f)

    def cpu(self):
        return L.proc_cpu(self.pid)

    def read_bytes(self):
        return L.proc_read_bytes(self.pid)

    def rss_kb(self, key="VmHWM"):
        return L.proc_kb(self.pid, key)

    def close(self, run):
        subprocess.run([self.binary, "umount", self.mnt], check=True)


class NullMount(Mount):
    """bench/nullfs serving data.dat of size bytes (read_ahead_kb 1024)."""

    def __init__(self, run, size, mnt):  # pylint: disable=super-init-not-called
        self.mnt = mnt
        self.proc = L.mount_null(run.nullfs, size, mnt)
        self.pid = self.proc.pid

    def stats(self):
        return {}

    def close(self, run):
        self.proc.terminate()
        self.proc.wait()


class Mounts:
    """The run's live mounts, so that close_all() can end them."""

    def __init__(self, run):
        self.run = run
        self.live = []

    def dsview(self, ini, name="mnt", opts=(), env=None, binary=None):
        m = Mount(self.run, ini, self.run.path(name), opts, env, binary)
        self.live.append(m)
        return m

    def null(self, size, name="mnt"):
        m = NullMount(self.run, size, self.run.path(name))
        self.live.append(m)
        return m

    def close(self, m):
        self.live.remove(m)
        m.close(self.run)

    def close_all(self):
        for m in self.live[::-1]:
            try:
                m.close(self.run)
            except Exception:  # noqa: BLE001 (a failed run: unmount what is left)
                subprocess.run(["fusermount3", "-u", m.mnt])
        self.live = []


def dsview_peer(ini, opts=(), env=None):
    """setup/teardown of a peer served by a fresh dsview daemon of the
    manifest data.<ini> (an attribute of the run's data: its path), with
    env added to the daemon's environment."""
    def setup(run, data):
        return run.mounts.dsview(getattr(data, ini), opts=opts, env=env)

    def teardown(run, m):
        run.mounts.close(m)
    return setup, teardown


def null_peer(size_attr):
    """setup/teardown of bench/nullfs serving data.<size_attr> bytes."""
    def setup(run, data):
        return run.mounts.null(getattr(data, size_attr))

    def teardown(run, m):
        run.mounts.close(m)
    return setup, teardown


def nullfs_missing(run):
    if not os.path.exists(run.nullfs):
        return f"{run.nullfs} missing (make build/bench/nullfs)"
    return None


def view_seq(step=16, name="v"):
    """A phase's measure: GB/s of a sequential pass of step-row slices of
    the mount's view `name` (a float32 memmap of data.shape)."""
    def measure(run, data, peer, m, rnd):
        a = np.memmap(m.path(name + ".dat"), np.float32, "r", shape=data.shape)
        try:
            return {"seq_gbs": L.seq(a, step) / 1e9}
        finally:
            del a
    return measure


def view_shuffled(name="v"):
    """A phase's measure: rows/s of sorted shuffled batches of the mount's
    view (run.s.batches of run.s.batch rows, or 15 s), seeded by the round."""
    def measure(run, data, peer, m, rnd):
        a = np.memmap(m.path(name + ".dat"), np.float32, "r", shape=data.shape)
        try:
            return {"shuf_rows": L.shuffled_rows(a, run.s.batches, rnd, run.s.batch)[0]}
        finally:
            del a
    return measure
