"""Memory cgroups. A full pass with the daemon in a memory cgroup whose
limit is a little above the cache budget: 16 readers, no OOM kill (reads
the self-verifying dataset of test_load.py). A training job in a memory
cgroup: the daemon started inside it and a 4-worker DataLoader inside it
reading a float32 view 3x the limit. The page budget: a daemon in a
group keeps its files' pages in the page cache under half the limit."""
import contextlib
import json
import mmap
import os
import time
import warnings

import numpy as np

from cgroup import Group, hierarchy
from common import E2E, alive, has_sanitizer, run
from pagecache import resident_pages
from refs import reference, same_bits
from test_load import (ROWS, Dataset, drop_page_cache, fork_children, kill_children,
                       mib, pass_reader, reap, reports, rss)


class MemoryCap(Dataset):
    """The daemon in a memory cgroup limited to the cache budget + 96 MiB: 16
    forked readers read every row of the 384 MiB store view once, shuffled.
    No OOM kill, the daemon alive, every byte right."""
    READERS = 16
    CACHE = 64 << 20
    HEADROOM = 96 << 20

    def test_full_pass_under_memory_limit(self):
        version, root = hierarchy("memory")
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
                cg = Group("dsv-e2e", mem=limit)
            except OSError as e:
                self.skipTest(f"cannot make a memory cgroup under {root} ({version}): {e}")
            pids, codes, samples = [], {}, []
            try:
                # the source's page cache, read again by the daemon, is
                # charged to the cgroup: the limit presses from the start
                drop_page_cache([self.p("x.h5")])
                try:
                    cg.add(pid)
                except OSError as e:
                    self.skipTest(f"cannot move the daemon into {cg.name}: {e}")
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
                cg.remove()
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


# ---- a training job in a memory cgroup: the daemon and its readers ----

try:
    import torch  # imported here, outside the cgroup, as a job's launcher would
    from torch.utils.data import BatchSampler, DataLoader, SequentialSampler, SubsetRandomSampler
except ImportError:
    torch = None

JOB_LIMIT = 384 << 20  # the job's memory limit; the view is 3x larger
JOB_SHAPE = (64, 64, 3)  # 12 KB rows of uint8, 48 KB of float32
JOB_BATCH = 64  # rows a batch: 3 MiB of float32, 8 batches in flight in shared memory
JOB_ROWS = (3 * JOB_LIMIT) // (4 * 64 * 64 * 3)
JOB_MEAN, JOB_STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
PAGE = mmap.PAGESIZE


class Rows:
    """A map-style dataset of batches: the float32 view's rows by list of
    indices (a BatchSampler's), as np.memmap fancy indexing reads them."""

    def __init__(self, path):
        self.path, self.a = path, None

    def __getitem__(self, idx):
        if self.a is None:  # opened in each worker, after the fork
            self.a = np.memmap(self.path, np.float32, "r", shape=(JOB_ROWS,) + JOB_SHAPE)
        idx = np.asarray(idx)
        return torch.from_numpy(idx), torch.from_numpy(np.ascontiguousarray(self.a[idx]))


BUDGET_LIMIT = 128 << 20  # the page budget's tests: a group's limit
BUDGET_READ = 288 << 20  # what they read of the view, in shuffled blocks
BLOCK = 16 * 4 * 64 * 64 * 3  # 16 rows of float32


def block_pass(dat, src, order):
    """pread of the view's blocks in order (the first again at the end:
    dropped long ago), each against the float64 reference of its uint8
    rows rounded once. Returns [blocks, mismatching blocks]."""
    x = np.load(src, mmap_mode="r")
    fd = os.open(dat, os.O_RDONLY)
    bad = 0
    try:
        for b in list(order) + [order[0]]:
            got = np.frombuffer(os.pread(fd, BLOCK, int(b) * BLOCK), np.float32)
            want = reference(x[b * 16:(b + 1) * 16], scale=1 / 255, mean=JOB_MEAN, std=JOB_STD)
            bad += int(not same_bits(got, want.reshape(-1)))
    finally:
        os.close(fd)
    return [len(order), bad]


def job_reader(dat, src, sampler):
    """In a forked child inside the cgroup: one epoch of a 4-worker
    DataLoader over the view, every batch against the float64 reference of
    its uint8 rows rounded once. Returns (rows, mismatching batches)."""
    warnings.filterwarnings("ignore", "This DataLoader will create")  # 4 workers on 2 cores
    x = np.load(src, mmap_mode="r")
    loader = DataLoader(Rows(dat), batch_size=None, sampler=BatchSampler(sampler, JOB_BATCH, False),
                        num_workers=4, multiprocessing_context="fork")
    rows = bad = 0
    for idx, got in loader:
        idx = idx.numpy()
        want = reference(x[idx], scale=1 / 255, mean=JOB_MEAN, std=JOB_STD)
        bad += int(not same_bits(got.numpy(), want))
        rows += len(idx)
    return [rows, bad]


class JobInCgroup(E2E):
    """A job in a memory cgroup (JOB_LIMIT, page cache counted, no swap):
    the daemon started inside it with the default cache (which then follows
    the limit, not the machine's memory) and a 4-worker DataLoader inside it
    reading a float32 view of an LZ4 store 3x the limit, sequentially, then
    shuffled. No OOM kill, no SIGBUS, no error, every batch right."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        src = os.path.join(cls.tmp, "u8.npy")
        x = np.lib.format.open_memmap(src, "w+", np.uint8, (JOB_ROWS,) + JOB_SHAPE)
        rng = np.random.default_rng(5)
        for r in range(0, JOB_ROWS, 4096):
            n = min(4096, JOB_ROWS - r)
            smooth = (np.arange(r, r + n)[:, None, None, None] + np.arange(64)[:, None, None]) % 200
            x[r:r + n] = smooth + rng.integers(0, 8, (n,) + JOB_SHAPE)
        x.flush()
        del x
        r = run("pack", "--dataset", "x", src, os.path.join(cls.tmp, "u8.h5"), timeout=300)
        assert r.returncode == 0, r.stderr
        cls.ini = os.path.join(cls.tmp, "job.ini")
        with open(cls.ini, "w") as f:
            f.write(f"[x]\nsource = u8.h5:/x\nscale = {1 / 255!r}\nmean = {' '.join(map(str, JOB_MEAN))}\n"
                    f"std = {' '.join(map(str, JOB_STD))}\n")

    def in_cgroup(self, cg, fn):
        """fn() in a forked child that joins cg: its result (a list), or a
        string saying how the child failed (an exception, or a signal: the
        OOM killer, SIGBUS)."""
        rfd, wfd = os.pipe()
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                os.close(rfd)
                cg.add(os.getpid())
                os.write(wfd, json.dumps(fn()).encode())
                code = 0
            except BaseException as e:
                os.write(wfd, json.dumps(f"{type(e).__name__}: {e}").encode())
            finally:
                os._exit(code)
        os.close(wfd)
        with os.fdopen(rfd) as f:
            out = f.read()
        status = os.waitpid(pid, 0)[1]
        if os.WIFSIGNALED(status):
            return f"child killed by signal {os.WTERMSIG(status)}: {out}"
        return json.loads(out) if out else f"child exit status {os.WEXITSTATUS(status)}"

    def mount_in_group(self, stack, limit):
        """A memory cgroup of limit bytes (removed when stack closes) and the
        view mounted by a daemon started inside it, as under SLURM: (group,
        mount, cgroup version). Skips where there is no memory controller
        or the sanitizers' shadow memory would not fit."""
        version, root = hierarchy("memory")
        if version is None:
            self.skipTest(root)
        try:
            cg = Group("dsv-e2e", mem=limit)
        except OSError as e:
            self.skipTest(f"cannot make a memory cgroup under {root} ({version}): {e}")
        stack.callback(cg.remove)
        cg.add(os.getpid())
        try:
            m = stack.enter_context(self.mount(self.ini))
        finally:
            cg.leave()
        self.assertIn(m.pid, cg.members())
        if has_sanitizer(m.pid):
            self.skipTest("the sanitizers' shadow memory does not fit the limit")
        return cg, m, version

    def test_job_under_memory_limit(self):
        if torch is None:
            self.skipTest("no torch for this python (Debian: python3-torch)")
        drop_page_cache([self.p("u8.h5"), self.p("u8.npy")])
        with contextlib.ExitStack() as stack:
            cg, m, version = self.mount_in_group(stack, JOB_LIMIT)
            budget = m.stats()["cache_budget"]
            self.assertLessEqual(budget, JOB_LIMIT // 10, "default cache from the cgroup's limit")
            dat, src = m.path("x.dat"), self.p("u8.npy")
            seq = self.in_cgroup(cg, lambda: job_reader(dat, src, SequentialSampler(range(JOB_ROWS))))
            some = np.random.default_rng(3).permutation(JOB_ROWS)[:JOB_ROWS // 16].tolist()
            shuf = self.in_cgroup(cg, lambda: job_reader(dat, src, SubsetRandomSampler(some)))
            oom, peak, st = cg.oom_kills(), cg.peak(), m.stats()
            print(f"\njob in a memory cgroup ({version}): limit {mib(JOB_LIMIT)}, peak {mib(peak)}, "
                  f"oom_kill {oom}; cache budget {mib(budget)}; [rows, bad batches] sequential {seq}, "
                  f"shuffled {shuf}; view {mib(JOB_ROWS * 4 * 64 * 64 * 3)}", flush=True)
            self.assertEqual(seq, [JOB_ROWS, 0], "sequential epoch: [rows, mismatching batches]")
            self.assertEqual(shuf, [len(some), 0], "shuffled epoch: [rows, mismatching batches]")
            self.assertEqual(oom, 0, "memory.events/oom_control oom_kill")
            self.assertTrue(alive(m.pid), "the daemon died in the cgroup")
            self.assertEqual(st["errors"], 0, st)
            # the view is larger than half the limit: the sequential epoch's
            # readahead dropped the pages it had passed
            self.assertGreater(st["bytes_dropped"], 0, st)

    def check_budget(self, m, limit, version, who):
        """A pass of BUDGET_READ bytes of shuffled blocks by who(fn) (fn in
        this process or in a reader's group), every byte right, then: the
        page budget is half the limit, it shed, and what is left of the
        view in the page cache is no more than the budget."""
        dat, src = m.path("x.dat"), self.p("u8.npy")
        order = np.random.default_rng(4).permutation(JOB_ROWS // 16)[:BUDGET_READ // BLOCK]
        self.assertEqual(who(lambda: block_pass(dat, src, order)), [len(order), 0],
                         "[blocks, mismatching blocks]")
        st = m.stats()
        bound = st["page_budget"] + (4 << 20)
        for _ in range(50):  # the drops run on a thread of their own
            held = resident_pages(dat)[0] * PAGE
            if held <= bound:
                break
            time.sleep(0.1)
        print(f"\npage budget ({version}): limit {mib(limit)}, budget {mib(st['page_budget'])}, "
              f"read {mib(BUDGET_READ)}, left in the page cache {mib(held)}, "
              f"shed {mib(st['bytes_shed'])}", flush=True)
        self.assertEqual(st["page_budget"], limit // 2, st)
        self.assertLessEqual(st["page_budget_held"], st["page_budget"], st)
        self.assertGreater(st["bytes_shed"], 0, st)
        self.assertLessEqual(held, bound, "pages of the view left in the page cache")
        self.assertEqual(st["errors"], 0, st)

    def test_pages_held_to_half_the_limit(self):
        # A daemon started in a group limited to 128 MiB keeps its files'
        # pages in the page cache under half that (the page budget). The
        # reader is outside the group: without the budget all it read stays.
        with contextlib.ExitStack() as stack:
            _, m, version = self.mount_in_group(stack, BUDGET_LIMIT)
            self.check_budget(m, BUDGET_LIMIT, version, lambda fn: fn())

    def test_budget_follows_a_reader_in_a_group(self):
        # The daemon outside any limit (an fstab mount), the reader in a
        # group limited to 128 MiB: its open sets the page budget to half
        # that limit.
        version, root = hierarchy("memory")
        if version is None:
            self.skipTest(root)
        with contextlib.ExitStack() as stack:
            m = stack.enter_context(self.mount(self.ini))
            self.assertEqual(m.stats()["page_budget"], 0, "no limit, no budget")
            try:
                cg = Group("dsv-e2e", mem=BUDGET_LIMIT)
            except OSError as e:
                self.skipTest(f"cannot make a memory cgroup under {root} ({version}): {e}")
            stack.callback(cg.remove)
            self.check_budget(m, BUDGET_LIMIT, version, lambda fn: self.in_cgroup(cg, fn))
