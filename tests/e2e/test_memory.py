"""A full pass with the daemon in a memory cgroup whose limit is a little
above the cache budget: 16 readers, no OOM kill. Reads the self-verifying
dataset of test_load.py."""
import os
import time

import numpy as np

from common import alive, has_sanitizer
from test_load import (ROWS, Dataset, drop_page_cache, fork_children, kill_children,
                       mib, pass_reader, reap, reports, rss)


# ---- a memory cgroup ----

def _cgroup_mounts():
    out = []
    with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as f:
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
            san = has_sanitizer(pid)
            limit = self.CACHE + self.HEADROOM + ((1 << 30) if san else 0)
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
            if not san:
                self.assertLessEqual(max(rs), rss0 + self.CACHE + (64 << 20),
                                     f"daemon RSS above idle {mib(rss0)} + budget + 64 MiB: {rs}")
