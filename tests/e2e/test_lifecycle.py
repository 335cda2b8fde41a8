"""A mount's life: signals unmount cleanly, a killed daemon never hangs its
readers, umount of busy, racing, aborted and dead mounts, and the live
counters of /.stats.json."""
import contextlib
import errno
import json
import os
import random
import signal
import subprocess
import time

import numpy as np

from common import DSVIEW, E2E, alive, mm_npy, mounted, run, same_bits


def kernel_stack(pid):
    """Where a hung process waits in the kernel, for a failure message."""
    try:
        with open(f"/proc/{pid}/stack") as f:
            return f.read().split()[1::2][:8]
    except OSError as e:
        return str(e)


class Lifecycle(E2E):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        np.save(os.path.join(cls.tmp, "l.npy"), np.arange(4096, dtype=np.uint16).reshape(64, 64))

    def wait_gone(self, mp, pid):
        for _ in range(200):
            if not mounted(mp) and not os.path.exists(f"/proc/{pid}"):
                return True
            time.sleep(0.05)
        return False

    def test_sigterm_unmounts_cleanly(self):
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            with self.subTest(sig=sig):
                m = self.mount(self.p("l.npy"), expect_exit=True)
                with m:
                    os.kill(m.pid, sig)
                    self.assertTrue(self.wait_gone(m.mp, m.pid))

    @contextlib.contextmanager
    def foreground(self, source, mp, log, ready):
        """`dsview mount -f` as our child (so its exit status can be
        checked), once mp/ready exists; on the way out it is killed if it
        still runs and its mountpoint detached if still there."""
        p = subprocess.Popen([DSVIEW, "mount", "-f", "--log", log, source, mp],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            deadline = time.time() + 30
            while not os.path.exists(os.path.join(mp, ready)) and time.time() < deadline:
                self.assertIsNone(p.poll(), "the daemon exited early")
                time.sleep(0.02)
            yield p
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
            if mounted(mp):
                subprocess.run(["umount", "-l", mp])

    def test_signals_in_the_foreground_exit_0(self):
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            with self.subTest(sig=sig.name):
                mp, log = self.p("mnt-fg"), self.p(f"fg-{sig.name}.log")
                with self.foreground(self.p("l.npy"), mp, log, "l.dat") as p:
                    a = mm_npy(os.path.join(mp, "l.npy"))
                    self.assertTrue(same_bits(a, np.arange(4096, dtype=np.float32).reshape(64, 64)))
                    p.send_signal(sig)
                    out, err = p.communicate(timeout=30)
                    self.assertEqual(p.returncode, 0, err)
                    self.assertFalse(mounted(mp))
                    with open(log) as f:
                        text = f.read()
                    self.assertIn("unmounted " + mp, text)
                    self.assertNotRegex(text, r"(?i)error")

    def test_umount_racing_readers_is_clean(self):
        # A reader opening, reading and closing in a loop while umount
        # retries: the kernel may be handing a request (an async RELEASE, a
        # readahead read) to a worker as the connection goes. The daemon
        # must still end as a clean unmount: exit 0, no error logged.
        np.save(self.p("r.npy"), np.arange(2048 * 1024, dtype=np.uint16).reshape(2048, 1024))
        for i in range(8):
            with self.subTest(i=i):
                mp, log = self.p("mnt-race"), self.p(f"race-{i}.log")
                with self.foreground(self.p("r.npy"), mp, log, "r.dat") as p:
                    kid = os.fork()
                    if kid == 0:
                        code = 0
                        try:
                            while True:
                                a = np.memmap(os.path.join(mp, "r.dat"), np.float32, "r")
                                float(a[::4096].sum())  # page faults: async readahead
                                del a
                                for name in ("r.npy", ".stats.json"):
                                    with open(os.path.join(mp, name), "rb") as f:
                                        f.read(4096 * (1 + i % 3))
                        except OSError:
                            pass  # the mount went away under us: expected
                        except BaseException:
                            code = 3
                        os._exit(code)
                    try:
                        time.sleep(0.05 * (i % 4))
                        t0 = time.time()
                        while mounted(mp) and time.time() - t0 < 20:
                            run("umount", mp)  # refused while a file is open; retried
                        self.assertFalse(mounted(mp))
                        _, st = os.waitpid(kid, 0)
                        kid = None
                        self.assertEqual(os.WEXITSTATUS(st), 0)
                    finally:
                        if kid:
                            os.kill(kid, signal.SIGKILL)
                            os.waitpid(kid, 0)
                    out, err = p.communicate(timeout=30)
                    self.assertEqual(p.returncode, 0, err)
                    with open(log) as f:
                        self.assertNotRegex(f.read(), r"(?i)error")

    def test_aborted_connection_with_files_open(self):
        # An abort through /sys/fs/fuse/connections while files are open:
        # their RELEASE never comes. The daemon still exits 0 and frees
        # what those handles held (.stats.json snapshots: LeakSanitizer
        # caught one left over at exit in the ASan run), and dsview umount
        # recovers the dead mount.
        ctl = "/sys/fs/fuse/connections"
        if not os.path.ismount(ctl):  # empty also when mounted with no connection
            subprocess.run(["mount", "-t", "fusectl", "none", ctl], check=True)
        mp, log = self.p("mnt-abort"), self.p("abort.log")
        with self.foreground(self.p("l.npy"), mp, log, "l.dat") as p:
            fds = []
            try:
                conn = os.minor(os.stat(mp).st_dev)
                for name in (".stats.json", ".stats.json", "l.dat", "l.npy"):
                    fds.append(os.open(os.path.join(mp, name), os.O_RDONLY))
                    os.read(fds[-1], 100)
                with open(os.path.join(ctl, str(conn), "abort"), "w") as f:
                    f.write("1")
                out, err = p.communicate(timeout=30)
                self.assertEqual(p.returncode, 0, err)
                self.assertNotIn(b"Sanitizer", err)
                with self.assertRaises(OSError) as cm:
                    os.pread(fds[0], 100, 0)  # direct_io: never from the page cache
                self.assertIn(cm.exception.errno, (errno.ENOTCONN, errno.ECONNABORTED, errno.EIO))
            finally:
                for fd in fds:
                    try:
                        os.close(fd)  # the flush fails once aborted: ENOTCONN
                    except OSError:
                        pass
            r = run("umount", mp)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertFalse(mounted(mp))

    def test_sigkill_under_load(self):
        # readers mid-flight when the daemon dies: each ends with an error
        # (ENOTCONN/ECONNABORTED/EIO from read or open, SIGBUS for a memmap)
        # within seconds, never hangs; dsview umount recovers the mountpoint
        x = np.random.default_rng(11).integers(0, 65536, (4000, 4096), dtype=np.uint16)
        np.save(self.p("big.npy"), x)
        m = self.mount(self.p("big.npy"), "--cache-size", "16M", expect_exit=True)
        with m:
            dat = m.path("big.dat")
            kids = {}
            for k in range(6):
                pid = os.fork()
                if pid == 0:
                    code = 0
                    try:
                        if k % 2:
                            while True:  # memmap scans, page by page
                                a = np.memmap(dat, np.float32, "r")
                                for i in range(0, a.size, 1024):
                                    _ = a[i]
                                del a
                        else:
                            fd = os.open(dat, os.O_RDONLY)
                            rng = random.Random(k)
                            size = os.fstat(fd).st_size
                            while True:  # each pread asks the daemon, not the page cache
                                off = rng.randrange(0, size)
                                os.posix_fadvise(fd, off, 65536, os.POSIX_FADV_DONTNEED)
                                os.pread(fd, 65536, off)
                    except OSError as e:
                        code = 10 + e.errno if 0 < e.errno < 240 else 2
                    except BaseException:
                        code = 3
                    os._exit(code)
                kids[pid] = k
            time.sleep(1.5)
            self.assertEqual([p for p in kids if not alive(p)], [], "a reader ended before the kill")
            hold = os.open(dat, os.O_RDONLY)
            os.kill(m.pid, signal.SIGKILL)
            t0 = time.time()
            ends = {}
            while kids and time.time() - t0 < 30:
                # pages already in the page cache still read after the daemon
                # died (rightly): drop those no reader maps, so every reader
                # soon asks the dead daemon
                os.posix_fadvise(hold, 0, 0, os.POSIX_FADV_DONTNEED)
                for pid in list(kids):
                    done, status = os.waitpid(pid, os.WNOHANG)
                    if done:
                        ends[kids.pop(pid)] = (status, time.time() - t0)
                time.sleep(0.02)
            try:
                os.close(hold)  # its flush may fail on the dead mount
            except OSError:
                pass
            stacks = {k: kernel_stack(pid) for pid, k in kids.items()}
            for pid in kids:  # hung readers
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            self.assertEqual(list(kids.values()), [],
                             f"readers hung after the daemon died; kernel stacks: {stacks}")
            for k, (status, t) in sorted(ends.items()):
                code = os.WEXITSTATUS(status)
                how = (signal.Signals(os.WTERMSIG(status)).name if os.WIFSIGNALED(status)
                       else errno.errorcode.get(code - 10, code))
                # ECONNABORTED: a request the kernel ended when /dev/fuse closed
                ok = how in ("SIGBUS", "EIO", "ENOTCONN", "ECONNABORTED")
                self.assertTrue(ok, f"reader {k} ended with {how} after {t:.1f} s")
            with self.assertRaises(OSError) as cm:
                os.open(dat, os.O_RDONLY)
            self.assertEqual(cm.exception.errno, errno.ENOTCONN)
            self.assertEqual(run("umount", m.mp).returncode, 0, "umount of a dead mount")
            self.assertFalse(mounted(m.mp))
        with self.mount(self.p("big.npy"), mp=m.mp) as m2:
            self.assertBits(mm_npy(m2.path("big.npy")), x.astype(np.float32), "remount")

    def test_busy_umount_then_lazy(self):
        with self.mount(self.p("l.npy"), expect_exit=True) as m:
            f = open(m.path("l.dat"), "rb")
            r = run("umount", m.mp)
            self.assertEqual(r.returncode, 1)
            self.assertIn("-z", r.stderr)
            self.assertTrue(mounted(m.mp))
            self.assertEqual(run("umount", "-z", m.mp).returncode, 0)
            self.assertFalse(mounted(m.mp))
            f.close()
            self.assertTrue(self.wait_gone(m.mp, m.pid))

    def test_sigkill_then_umount_and_remount(self):
        m = self.mount(self.p("l.npy"), expect_exit=True)
        with m:
            os.kill(m.pid, signal.SIGKILL)
            time.sleep(0.2)
            with self.assertRaises(OSError) as cm:
                os.listdir(m.mp)
            self.assertEqual(cm.exception.errno, errno.ENOTCONN)
            r = run("mount", self.p("l.npy"), m.mp)
            self.assertEqual(r.returncode, 1)
            self.assertIn("dead mount", r.stderr)
            self.assertEqual(run("umount", m.mp).returncode, 0, "umount of a dead mount")
            self.assertFalse(mounted(m.mp))
        with self.mount(self.p("l.npy")) as m2:
            self.assertTrue(same_bits(mm_npy(m2.path("l.npy")), np.arange(4096, dtype=np.float32).reshape(64, 64)))

    def test_stats_counters(self):
        with self.mount(self.p("l.npy")) as m:
            s0 = m.stats()
            with open(m.path("l.dat"), "rb") as f:
                f.read()
            # the reply histogram counts a read once its reply is sent, which
            # may be after the reader has its bytes: ask until it has
            polls, deadline = 0, time.monotonic() + 10
            while True:
                s1, polls = m.stats(), polls + 1
                if sum(s1["read_reply_us"]) > sum(s0["read_reply_us"]) or \
                        time.monotonic() > deadline:
                    break
                time.sleep(0.01)
            self.assertEqual(s1["backend"], "cpu")
            served = s1["bytes_served"] - s0["bytes_served"]
            self.assertGreaterEqual(served, 64 * 64 * 4)
            # a .npy is plain: pread on demand, exactly what was served
            self.assertEqual(s1["bytes_decoded"] - s0["bytes_decoded"], served)
            self.assertEqual(s1["cache_misses"], s0["cache_misses"])
            self.assertEqual(s1["errors"], 0)
            json.dumps(s1)
            # every data read that made bytes counted once in each latency
            # histogram (16 power-of-two buckets of microseconds); reads at
            # EOF and of .stats.json are not
            data = s1["read_requests"] - s0["read_requests"] - polls
            for half in ("read_make_us", "read_reply_us"):
                self.assertEqual(len(s1[half]), 16, half)
                self.assertIn(sum(s1[half]) - sum(s0[half]), range(1, data + 1), half)
                self.assertGreaterEqual(s1[half + "_sum"], s0[half + "_sum"], half)
            self.check_counter_names(m)

    def check_counter_names(self, m):
        """/.stats.json: the identity, then every counter, each named for
        what it counts, in a fixed order, with the JSON type of its kind,
        and every one listed in docs/performance.md."""
        with open(m.path(".stats.json")) as f:
            text = f.read()
        st = json.loads(text)
        self.assertTrue(text.endswith("}\n"), text[-20:])
        self.assertEqual(list(st)[:7], ["mountpoint", "source", "started", "log", "pid",
                                        "backend", "gpu_device"])
        self.assertEqual(list(st)[-1], "errors")
        self.assertEqual(list(m.stats()), list(st), "the order is the table's, every time")
        for old in ("reads", "read_entries", "prefetched", "bytes_pushed", "gpu_cache_bytes",
                    "disk_cache_bytes"):
            self.assertNotIn(old, st)
        for new in ("read_requests", "tiles_made", "readahead_chunks", "bytes_readahead",
                    "bytes_hinted", "hints_failed", "gpu_cache_size", "disk_cache_hit_bytes"):
            self.assertIsInstance(st[new], int, new)
        for k in ("gpu_failed", "gpu_emulated"):
            self.assertIsInstance(st[k], bool, k)
        for k in ("backend", "gpu_device", "gpu_off_why", "kernel", "source", "log"):
            self.assertIsInstance(st[k], str, k)
        with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs",
                               "performance.md")) as f:
            doc = f.read()
        doc = doc[doc.index("## What the counters say"):]
        for k in st:
            self.assertIn(f"`{k}`", doc, f"{k} is not in docs/performance.md")
