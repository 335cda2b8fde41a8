"""Around the mount: start-up failures of the daemon reach the
terminal, one command-line grammar for every subcommand, sizes that are
refused instead of rounded, a non-empty mountpoint refused."""
import json
import os
import re
import subprocess
import time

import numpy as np

from common import DSVIEW, E2E, mount_entry, mounted, run, dsview_pids_for


class StartUp(E2E):
    """A failure after the fork, before the loop serves, is the daemon's:
    the parent waits for its word over a pipe and prints it."""

    def setUp(self):
        super().setUp()
        np.save(self.p("a.npy"), np.arange(600, dtype=np.uint8).reshape(60, 10))

    def test_gpu_that_cannot_be_had(self):
        # this build has no CUDA (or the machine no GPU): --gpu 0 must fail
        # with the reason, not "the mount did not answer"
        line = self.refused(self.p("a.npy"), "--gpu", "0", want="--gpu 0")
        self.assertNotIn("did not answer", line)

    def test_gpu_in_the_foreground(self):
        mp = self.p("mnt-fg")
        r = run("mount", "-f", "--gpu", "0", self.p("a.npy"), mp, timeout=30)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("--gpu 0", r.stderr)
        self.assertFalse(mounted(mp))

    def test_mount_the_kernel_refuses(self):
        # blksize is for fuseblk only: the kernel's mount(2) says EINVAL
        line = self.refused(self.p("a.npy"), "-o", "blksize=4096",
                            want=["mount failed: Invalid argument"])
        self.assertNotIn("fuse:", line)

    def test_unknown_fuse_option(self):
        self.refused(self.p("a.npy"), "-o", "frobnicate", want=["bad FUSE options", "frobnicate"])

    def test_a_good_mount_after_a_failed_one(self):
        self.refused(self.p("a.npy"), "--gpu", "0")
        with self.mount(self.p("a.npy"), "--gpu", "off") as m:
            self.assertEqual(os.path.getsize(m.path("a.dat")), 600 * 4)


class Grammar(E2E):
    """Options before or after operands for every subcommand; '--' ends
    them; a bad option is one line naming it."""

    def setUp(self):
        super().setUp()
        self.x = np.arange(4000, dtype=np.uint8).reshape(400, 10)
        np.save(self.p("a.npy"), self.x)

    def one_line(self, r, rc, *want):
        self.assertEqual(r.returncode, rc, f"{r.args}: {r.stderr!r}")
        lines = r.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, f"{r.args}: want one line, got {r.stderr!r}")
        self.assertTrue(lines[0].startswith("dsview: "), lines[0])
        for w in want:
            self.assertIn(w, lines[0])
        self.assertNotIn("usage", r.stderr)
        return lines[0]

    def test_mount_options_after_operands(self):
        mp = self.p("mnt-perm")
        r = run("mount", self.p("a.npy"), mp, "--dtype", "bfloat16", "--cache-size", "0",
                "--log", self.p("perm.log"))
        self.assertEqual(r.returncode, 0, r.stderr)
        try:
            with open(os.path.join(mp, "a.json")) as f:
                self.assertEqual(json.load(f)["dtype"], "bfloat16")
            self.assertEqual(os.path.getsize(os.path.join(mp, "a.dat")), 4000 * 2)
            r = run("umount", mp, "-z")  # umount: option after the operand
            self.assertEqual(r.returncode, 0, r.stderr)
        finally:
            if mounted(mp):
                subprocess.run(["umount", "-l", mp])
        self.assertFalse(mounted(mp))

    def test_info_verify_pack_permuted(self):
        out = self.p("s.h5")
        r = run("pack", self.p("a.npy"), out, "--chunk-size", "4K", "--codec", "lz4", "--force")
        self.assertEqual(r.returncode, 0, r.stderr)
        r = run("pack", "--force", self.p("a.npy"), "--chunk-size", "4K", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        r = run("info", out, "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        json.loads(r.stdout)
        r = run("verify", out, "--threads", "1")
        self.assertEqual(r.returncode, 0, r.stderr)
        r = run("verify", "--threads", "1", out)
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_double_dash_ends_options(self):
        d = self.p("dd")
        os.makedirs(d, exist_ok=True)
        np.save(os.path.join(d, "-x.npy"), self.x)
        r = subprocess.run([DSVIEW, "info", "--json", "--", "-x.npy"], cwd=d,
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(json.loads(r.stdout)["source"]["shape"], [400, 10])
        r = subprocess.run([DSVIEW, "info", "-x.npy"], cwd=d,
                           capture_output=True, text=True)
        self.one_line(r, 1, "unknown option '-x'", "try 'dsview info --help'")

    def test_bad_options_are_one_line(self):
        a = self.p("a.npy")
        cases = [
            (("mount", a, self.p("m"), "--bogus"), "unknown option '--bogus'", "dsview mount --help"),
            (("mount", a, "--dtype"), "option '--dtype' needs a value", "dsview mount --help"),
            (("mount", a, self.p("m"), "extra"), "unexpected argument 'extra'", "mount --help"),
            (("mount",), "missing SOURCE", "dsview mount --help"),
            (("umount", self.p("m"), "-q"), "unknown option '-q'", "dsview umount --help"),
            (("umount", "--lazy=1"), "option '--lazy' takes no value", "umount --help"),
            (("pack", a, self.p("o.h5"), "--chunk-size"), "'--chunk-size' needs a value",
             "dsview pack --help"),
            (("pack", a), "missing INPUT OUTPUT.h5", "dsview pack --help"),
            (("info", a, "--jason"), "unknown option '--jason'", "dsview info --help"),
            (("info", a, a), "unexpected argument", "dsview info --help"),
            (("verify", a, "--threads"), "'--threads' needs a value", "dsview verify --help"),
            (("verify", "-z", a), "unknown option '-z'", "dsview verify --help"),
            (("status", "--wacth"), "unknown option '--wacth'", "dsview status --help"),
            (("status", "a", "b"), "unexpected argument 'b'", "dsview status --help"),
        ]
        for args, *want in cases:
            with self.subTest(args=args):
                self.one_line(run(*args), 1, *want)
        self.assertFalse(mounted(self.p("m")))

    def test_umount_defaults_to_mnt_dsview(self):
        if mounted("/mnt/dsview"):
            self.skipTest("/mnt/dsview is in use on this machine")
        self.one_line(run("umount"), 1, "/mnt/dsview: not mounted")

    def test_help_still_prints_usage(self):
        for cmd in ("mount", "umount", "pack", "info", "verify", "status"):
            r = run(cmd, "--help")
            self.assertEqual(r.returncode, 0)
            self.assertIn("usage: dsview " + cmd, r.stdout)


class Sizes(E2E):
    def setUp(self):
        super().setUp()
        np.save(self.p("a.npy"), np.zeros((10, 10), np.uint8))

    def test_readahead_not_whole_pages(self):
        self.refused(self.p("a.npy"), "--readahead", "3K", want=["--readahead '3K'", "multiple of 4K"])

    def test_readahead_limit(self):
        self.refused(self.p("a.npy"), "--readahead", "128M", want=["--readahead '128M'", "64M"])

    def test_cache_beyond_ram(self):
        ram = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        big = "%dG" % (ram // (1 << 30) + 1)
        self.refused(self.p("a.npy"), "--cache-size", big,
                     want=[f"--cache-size '{big}'", "exceeds this machine's memory", "GiB"])
        ini = self.write_ini(f"[dsview]\ncache_size = {big}\n[a]\nsource = a.npy\n")
        self.refused(ini, want=["cache_size", "exceeds this machine's memory"])

    def test_good_sizes_still_mount(self):
        with self.mount(self.p("a.npy"), "--readahead", "1M", "--cache-size", "64M") as m:
            self.assertEqual(os.path.getsize(m.path("a.dat")), 400)


class NonEmpty(E2E):
    def test_refused_unless_nonempty(self):
        np.save(self.p("a.npy"), np.zeros((10, 10), np.uint8))
        mp = self.p("mnt-refused")  # the directory refused() mounts on
        os.makedirs(mp, exist_ok=True)
        with open(os.path.join(mp, "keep.txt"), "w") as f:
            f.write("mine")
        self.refused(self.p("a.npy"), want=["not empty", "-o nonempty"])
        with self.mount(self.p("a.npy"), "-o", "nonempty", mp=mp) as m:
            self.assertEqual(sorted(os.listdir(m.mp)), [".stats.json", "a.dat", "a.json", "a.npy"])
            fields, _, superopts = mount_entry(m.mp)
            self.assertNotIn("nonempty", fields[5] + superopts)
        with open(os.path.join(mp, "keep.txt")) as f:
            self.assertEqual(f.read(), "mine")
        self.assertEqual(dsview_pids_for(mp), [])


class Status(E2E):
    """dsview status lists dsview mounts; the mount's fsname is its source."""

    def test_two_mounts(self):
        np.save(self.p("a.npy"), np.arange(4000, dtype=np.uint8).reshape(400, 10))
        ini = self.write_ini("[v]\nsource = a.npy\n[w]\nsource = a.npy\nscale = 2\n")
        with self.mount(ini) as m1, self.mount(self.p("a.npy"), "--cache-size", "0") as m2:
            with open(m1.path("v.dat"), "rb") as f:
                f.read()
            r = run("status", "--json")
            self.assertEqual(r.returncode, 0, r.stderr)
            got = {e["mountpoint"]: e for e in json.loads(r.stdout)}
            a, b = got[os.path.realpath(m1.mp)], got[os.path.realpath(m2.mp)]
            self.assertEqual(a["source"], os.path.realpath(ini))
            self.assertEqual(b["source"], os.path.realpath(self.p("a.npy")))
            self.assertEqual((a["pid"], b["pid"]), (m1.pid, m2.pid))
            self.assertEqual((a["views"], b["views"]), (2, 1))
            self.assertTrue(a["alive"] and b["alive"])
            self.assertGreaterEqual(a["bytes_served"], 4000 * 4)
            self.assertEqual(a["log"], m1.log)
            self.assertEqual(a["backend"], "cpu")
            self.assertGreaterEqual(a["uptime_s"], 0)
            for k in ("read_requests", "cache_hit_rate", "cache_bytes", "cache_budget", "read_errors",
                      "mb_per_s", "bytes_readahead", "bytes_hinted"):
                self.assertIn(k, a)
            self.assertEqual(a["started"], m1.stats()["started"])
            self.assertLessEqual(abs(a["started"] + a["uptime_s"] - time.time()), 2)
            # one mount, as text, options after the operand
            r = run("status", m1.mp)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertTrue(r.stdout.startswith(f"{os.path.realpath(m1.mp)}  {os.path.realpath(ini)}\n"),
                            r.stdout)
            self.assertIn(f"pid {m1.pid}, started "
                          f"{time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(a['started']))} (up ",
                          r.stdout)
            self.assertRegex(r.stdout, r"\n  served [0-9.]+ [kMG]?B on request \(\d+ read requests\); "
                                       r"made ahead [0-9.]+ [kMG]?B by readahead, 0 B for hints\n")
            self.assertIn(f"log {m1.log}", r.stdout)
            self.assertNotIn(m2.mp, r.stdout)
            r = run("status", m2.mp, "--json")
            self.assertEqual([e["mountpoint"] for e in json.loads(r.stdout)],
                             [os.path.realpath(m2.mp)])
            # findmnt and df say which source is mounted where
            r = subprocess.run(["findmnt", "-n", "-o", "SOURCE", m1.mp], capture_output=True,
                               text=True)
            self.assertEqual(r.stdout.strip(), os.path.realpath(ini))
            r = subprocess.run(["df", "--output=source", m2.mp], capture_output=True, text=True)
            self.assertEqual(r.stdout.splitlines()[-1].strip(), os.path.realpath(self.p("a.npy")))

    def test_source_path_not_utf8(self):
        # the mount table is text to its readers: fsname, .stats.json and
        # status write such bytes \xNN
        d = os.path.join(os.fsencode(self.tmp), b"d\xff \xc3\xa9,x")
        os.makedirs(d, exist_ok=True)
        src = os.fsdecode(os.path.join(d, b"a.npy"))
        np.save(src, np.zeros((10, 10), np.uint8))
        with self.mount(src) as m:
            with open("/proc/self/mountinfo", "rb") as f:
                raw = f.read()
            self.assertNotIn(b"\xff", raw)
            raw.decode("utf-8")
            shown = self.tmp + "/d\\xff \\xc3\\xa9,x/a.npy"
            line = [l for l in raw.decode().splitlines() if f" {m.mp} " in l][-1]
            source = line.partition(" - ")[2].split()[1]  # the kernel writes \ as \134
            self.assertEqual(re.sub(r"\\([0-7]{3})", lambda g: chr(int(g.group(1), 8)), source),
                             shown)
            st = m.stats()
            self.assertEqual(st["source"], shown)
            r = run("status", "--json", m.mp)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(json.loads(r.stdout)[0]["pid"], m.pid)

    def test_watch(self):
        np.save(self.p("w.npy"), np.zeros((1000, 1000), np.uint8))
        with self.mount(self.p("w.npy"), "--cache-size", "0") as m:
            p = subprocess.Popen([DSVIEW, "status", "--json", "--watch=1", m.mp],
                                 stdout=subprocess.PIPE, text=True)
            try:
                first = json.loads(p.stdout.readline())[0]
                self.assertNotIn("mb_per_s_now", first)
                with open(m.path("w.dat"), "rb") as f:
                    f.read()
                second = json.loads(p.stdout.readline())[0]
            finally:
                p.kill()
                p.wait()
            self.assertGreaterEqual(second["bytes_served"] - first["bytes_served"], 4_000_000)
            self.assertGreater(second["mb_per_s_now"], 0)

    def test_watch_text_heads_each_pass_with_the_time(self):
        np.save(self.p("w.npy"), np.zeros((10, 10), np.uint8))
        with self.mount(self.p("w.npy")) as m:
            p = subprocess.Popen([DSVIEW, "status", "--watch=1", m.mp], stdout=subprocess.PIPE,
                                 text=True)
            try:
                heads = []
                while len(heads) < 2:
                    line = p.stdout.readline()
                    self.assertTrue(line, "status --watch ended")
                    if line.startswith("---"):
                        heads.append((line, time.time()))
            finally:
                p.kill()
                p.wait()
            for line, t in heads:  # the local time of day, as a clock shows it
                self.assertRegex(line, r"^--- \d\d:\d\d:\d\d\n$")
                shown = time.strptime(line[4:12], "%H:%M:%S")
                now = time.localtime(t)
                secs = lambda x: x.tm_hour * 3600 + x.tm_min * 60 + x.tm_sec  # noqa: E731
                self.assertLessEqual((secs(now) - secs(shown)) % 86400, 2, line)

    def test_dead_and_not_mounted(self):
        np.save(self.p("a.npy"), np.zeros((10, 10), np.uint8))
        with self.mount(self.p("a.npy"), expect_exit=True) as m:
            os.kill(m.pid, 9)
            for _ in range(100):
                if not os.path.exists(f"/proc/{m.pid}"):
                    break
                time.sleep(0.02)
            r = run("status", "--json", m.mp)
            self.assertEqual(r.returncode, 0, r.stderr)
            e = json.loads(r.stdout)[0]
            self.assertFalse(e["alive"])
            self.assertIn("dsview umount", e["why"])
        r = run("status", self.tmp)
        self.assertEqual(r.returncode, 1)
        self.assertIn("not a dsview mount", r.stderr)


class Progress(E2E):
    def test_bar_fits_a_narrow_terminal(self):
        # pack on a 40-column pty: every redraw fits in 39 columns (no wrap)
        import fcntl
        import pty
        import struct
        import termios
        np.save(self.p("big.npy"), np.random.default_rng(0).integers(0, 255, (6000, 10000), np.uint8))
        pid, fd = pty.fork()
        if pid == 0:  # the size set before exec: the first draw already sees it
            fcntl.ioctl(1, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 40, 0, 0))
            os.execv(DSVIEW, [DSVIEW, "pack", "--threads", "1", "--codec", "lz4hc",
                              self.p("big.npy"), self.p("big.h5")])
        out = b""
        while True:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
        _, status = os.waitpid(pid, 0)
        os.close(fd)
        self.assertEqual(os.waitstatus_to_exitcode(status), 0, out[-500:])
        text = out.decode()
        draws = [re.sub(r"\x1b\[K", "", s) for s in re.split(r"[\r\n]", text)]
        bars = [d for d in draws if "%" in d and "/s" in d]
        self.assertTrue(bars, text[-500:])
        for d in bars:
            self.assertLessEqual(len(d), 39, repr(d))
