"""Security (docs/reliability.md): every write path is EROFS on every kind of
mounted file; the mount is ro, nosuid, nodev, default_permissions and never
direct_io, and no -o can change that; other users get in only with
allow_other (untrusted files and names: test_untrusted.py).

Complements test_faults.py (ReadOnly.test_every_write_is_erofs covers a
.dat in the root; BadInput covers one external link and two bad names)."""
import errno
import hashlib
import json
import mmap
import os
import shutil
import stat
import subprocess
import sys
import tempfile

import h5py
import numpy as np

from common import E2E, mm_dat, mm_npy, mount_entry, read_all, same_bits
from refs import reference

NOBODY = 65534
KEEPS = "read-only, nosuid, nodev"  # the reason every refused -o gives

def printable(line):
    return all(0x20 <= ord(c) < 0x7f for c in line)


def drop_to_nobody():
    os.setgroups([])
    os.setgid(NOBODY)
    os.setuid(NOBODY)


# Run as nobody: one entry per attempt, ["ok", value] or ["err", "EACCES"].
PROBE = r"""
import errno, hashlib, json, os, subprocess, sys
mp, name = sys.argv[1], sys.argv[2]
f = os.path.join(mp, name)
out = {"ids": [os.getuid(), os.geteuid(), os.getgid(), os.getgroups()]}
def t(k, fn):
    try:
        out[k] = ["ok", fn()]
    except OSError as e:
        out[k] = ["err", errno.errorcode.get(e.errno, str(e.errno))]
t("stat_root", lambda: os.stat(mp).st_mode)
t("listdir", lambda: sorted(os.listdir(mp)))
t("stat_file", lambda: os.stat(f).st_mode)
t("read", lambda: hashlib.sha256(open(f, "rb").read()).hexdigest())
t("access_r", lambda: os.access(f, os.R_OK))
t("access_x", lambda: os.access(f, os.X_OK))
t("exec", lambda: subprocess.run([f]).returncode)
t("open_w", lambda: os.open(f, os.O_WRONLY))
print(json.dumps(out))
"""


def as_nobody(mp, name):
    r = subprocess.run([sys.executable, "-c", PROBE, mp, name], preexec_fn=drop_to_nobody,
                       capture_output=True, text=True, timeout=60, cwd="/")
    if r.returncode != 0:
        raise AssertionError(f"probe as nobody failed ({r.returncode}): {r.stderr[-2000:]}")
    return json.loads(r.stdout)


class Security(E2E):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        t = cls.tmp
        cls.x = np.arange(64 * 8, dtype=np.uint8).reshape(64, 8)
        np.save(os.path.join(t, "a.npy"), cls.x)
        with h5py.File(os.path.join(t, "grp.h5"), "w") as f:
            f["top"] = cls.x
            f.create_group("g1")["in"] = cls.x[::-1]
            f.create_group("g1/g2")["deep"] = cls.x[:16]

    # ---- 1: writes ----

    def test_every_write_path_is_erofs_on_every_kind_of_file(self):
        src = self.p("grp.h5")
        before = hashlib.sha256(read_all(src)).digest(), os.stat(src).st_mtime_ns
        with self.mount(src) as m:
            root, g1, g2 = m.mp, m.path("g1"), m.path("g1/g2")
            files = [m.path(n) for n in ("top.dat", "top.npy", "top.json", ".stats.json",
                                        "g1/in.dat", "g1/g2/deep.npy")]
            listing = {d: sorted(os.listdir(d)) for d in (root, g1, g2)}
            E, EISDIR, EBUSY, EEXIST = errno.EROFS, errno.EISDIR, errno.EBUSY, errno.EEXIST

            def per_file(f):
                d = os.path.dirname(f)
                other = m.path("top.json") if not f.endswith("top.json") else m.path("top.dat")
                yield from [
                    ("O_WRONLY", E, lambda: os.open(f, os.O_WRONLY)),
                    ("O_RDWR", E, lambda: os.open(f, os.O_RDWR)),
                    ("O_RDONLY|O_TRUNC", E, lambda: os.open(f, os.O_RDONLY | os.O_TRUNC)),
                    ("O_WRONLY|O_APPEND", E, lambda: os.open(f, os.O_WRONLY | os.O_APPEND)),
                    ("O_RDWR|O_APPEND", E, lambda: os.open(f, os.O_RDWR | os.O_APPEND)),
                    ("O_WRONLY|O_CREAT", E, lambda: os.open(f, os.O_WRONLY | os.O_CREAT, 0o644)),
                    ("O_RDWR|O_CREAT|O_TRUNC", E,
                     lambda: os.open(f, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)),
                    # the name exists: the kernel says so before anything else
                    ("O_CREAT|O_EXCL", EEXIST,
                     lambda: os.open(f, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)),
                    ("memmap r+", E, lambda: np.memmap(f, np.uint8, "r+")),
                    ("memmap w+", E, lambda: np.memmap(f, np.uint8, "w+", shape=(16,))),
                    ("unlink", E, lambda: os.unlink(f)),
                    ("rename", E, lambda: os.rename(f, f + ".moved")),
                    ("rename over", E, lambda: os.rename(f, other)),
                    ("rename to other dir", E,
                     lambda: os.rename(f, os.path.join(g2 if d != g2 else root, "x.dat"))),
                    ("link", E, lambda: os.link(f, os.path.join(d, "hard.dat"))),
                    ("chmod", E, lambda: os.chmod(f, 0o666)),
                    ("chown", E, lambda: os.chown(f, NOBODY, NOBODY)),
                    ("lchown", E, lambda: os.lchown(f, 0, 0)),
                    ("utime now", E, lambda: os.utime(f, None)),
                    ("utime", E, lambda: os.utime(f, (1, 1))),
                    ("truncate", E, lambda: os.truncate(f, 0)),
                    ("truncate grow", E, lambda: os.truncate(f, 1 << 20)),
                    ("setxattr", E, lambda: os.setxattr(f, "user.x", b"1")),
                    ("setxattr trusted", E, lambda: os.setxattr(f, "trusted.x", b"1")),
                    ("removexattr", E, lambda: os.removexattr(f, "user.x")),
                ]

            def per_fd(f, fd):
                # Every open for writing failed above, so the only descriptor
                # there is to try is a read-only one.
                yield from [
                    ("fchmod", E, lambda: os.fchmod(fd, 0o666)),
                    ("fchown", E, lambda: os.fchown(fd, NOBODY, NOBODY)),
                    ("futimens", E, lambda: os.utime(fd, None)),
                    ("fsetxattr", E, lambda: os.setxattr(fd, "user.x", b"1")),
                    ("fremovexattr", E, lambda: os.removexattr(fd, "user.x")),
                    ("posix_fallocate", errno.EBADF, lambda: os.posix_fallocate(fd, 0, 4096)),
                    ("write", errno.EBADF, lambda: os.write(fd, b"x")),
                    ("pwrite", errno.EBADF, lambda: os.pwrite(fd, b"x", 0)),
                    ("ftruncate", errno.EINVAL, lambda: os.ftruncate(fd, 0)),
                ] + ([
                    ("mmap shared writable", errno.EACCES,
                     lambda: mmap.mmap(fd, 0, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)),
                ] if os.fstat(fd).st_size else [])  # .stats.json: size 0, nothing to map

            def per_dir(d):
                yield from [
                    # a directory is never opened for writing, on any filesystem
                    ("dir O_WRONLY", EISDIR, lambda: os.open(d, os.O_WRONLY)),
                    ("dir O_RDWR", EISDIR, lambda: os.open(d, os.O_RDWR)),
                    ("dir truncate", EISDIR, lambda: os.truncate(d, 0)),
                    ("create", E, lambda: os.open(os.path.join(d, "new"), os.O_WRONLY | os.O_CREAT, 0o644)),
                    ("create rdonly", E,
                     lambda: os.open(os.path.join(d, "new"), os.O_RDONLY | os.O_CREAT, 0o644)),
                    ("O_TMPFILE", E, lambda: os.open(d, os.O_TMPFILE | os.O_RDWR, 0o600)),
                    ("memmap w+ new", E,
                     lambda: np.memmap(os.path.join(d, "new.dat"), np.uint8, "w+", shape=(16,))),
                    ("mkdir", E, lambda: os.mkdir(os.path.join(d, "sub"))),
                    ("mknod fifo", E, lambda: os.mknod(os.path.join(d, "fifo"), stat.S_IFIFO | 0o644)),
                    ("mknod reg", E, lambda: os.mknod(os.path.join(d, "reg"), stat.S_IFREG | 0o644)),
                    ("mknod chr", E, lambda: os.mknod(os.path.join(d, "null"), stat.S_IFCHR | 0o666,
                                                      os.makedev(1, 3))),
                    ("symlink", E, lambda: os.symlink("top.dat", os.path.join(d, "ln"))),
                    ("link into", E, lambda: os.link(m.path("top.dat"), os.path.join(d, "hard"))),
                    ("chmod", E, lambda: os.chmod(d, 0o777)),
                    ("chown", E, lambda: os.chown(d, NOBODY, NOBODY)),
                    ("utime", E, lambda: os.utime(d, (1, 1))),
                    ("setxattr", E, lambda: os.setxattr(d, "user.x", b"1")),
                    ("removexattr", E, lambda: os.removexattr(d, "user.x")),
                ] + ([
                    ("rmdir", E, lambda: os.rmdir(d)),
                    ("unlink dir", E, lambda: os.unlink(d)),
                    ("rename dir", E, lambda: os.rename(d, os.path.join(root, "renamed"))),
                ] if d != root else [
                    ("rmdir root", EBUSY, lambda: os.rmdir(d)),  # a mountpoint
                ])

            tried = 0
            for f in files:
                for what, want, act in per_file(f):
                    tried += self._refuses(f, what, want, act)
                fd = os.open(f, os.O_RDONLY)
                try:
                    for what, want, act in per_fd(f, fd):
                        tried += self._refuses(f, what, want, act)
                finally:
                    os.close(fd)
            for d in (root, g1, g2):
                for what, want, act in per_dir(d):
                    tried += self._refuses(d, what, want, act)
            # a dirfd is no way around it either
            dfd = os.open(g1, os.O_RDONLY | os.O_DIRECTORY)
            try:
                tried += self._refuses(g1, "mkdir at dirfd", E, lambda: os.mkdir("x", dir_fd=dfd))
                tried += self._refuses(g1, "fchmod dirfd", E, lambda: os.fchmod(dfd, 0o777))
                tried += self._refuses(g1, "openat create", E,
                                       lambda: os.open("n", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=dfd))
            finally:
                os.close(dfd)
            self.assertGreater(tried, 250)

            # a private (copy-on-write) map may be written; the file stays as it was
            cow = np.memmap(m.path("top.dat"), np.float32, "c", shape=self.x.shape)
            cow[:] = -1
            del cow

            # nothing changed: same names, same bytes, same modes
            for d, names in listing.items():
                self.assertEqual(sorted(os.listdir(d)), names, d)
            self.assertTrue(same_bits(mm_dat(m.path("top.dat"), np.float32, self.x.shape),
                                      reference(self.x)))
            self.assertTrue(same_bits(mm_npy(m.path("top.npy")), reference(self.x)))
            self.assertTrue(same_bits(mm_npy(m.path("g1/in.npy")), reference(self.x[::-1])))
            self.assertEqual(read_all(m.path("g1/g2/deep.dat")), reference(self.x[:16]).tobytes())
            self.assertEqual(json.loads(read_all(m.path("top.json")))["shape"], [64, 8])
            self.assertEqual(m.stats()["errors"], 0)
            for f in files:
                self.assertEqual(stat.S_IMODE(os.stat(f).st_mode), 0o444, f)
        self.assertEqual((hashlib.sha256(read_all(src)).digest(), os.stat(src).st_mtime_ns), before,
                         "the source file changed")

    def test_writes_reach_the_daemon_after_a_remount_rw_and_are_erofs(self):
        # On the ro mount the kernel refuses every write itself. Root can
        # remount it rw (mount(2) MS_REMOUNT, no MS_RDONLY): then the
        # requests reach the daemon, whose refusals (src/fs/ops.c) answer
        # EROFS; without them libfuse would answer ENOSYS. WRITE and
        # FALLOCATE still never come: no file is ever opened for writing.
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        with self.mount(self.p("grp.h5")) as m:
            if libc.mount(b"dsview", m.mp.encode(), b"fuse.dsview", 32, None) != 0:  # MS_REMOUNT
                self.skipTest("remount: " + os.strerror(ctypes.get_errno()))
            self.assertNotIn("ro", mount_entry(m.mp)[0][5].split(","))
            f, g2, E = m.path("top.dat"), m.path("g1/g2"), errno.EROFS
            for what, want, act in [
                ("create", E, lambda: os.open(m.path("new"), os.O_WRONLY | os.O_CREAT, 0o644)),
                ("open O_WRONLY", E, lambda: os.open(f, os.O_WRONLY)),
                ("mkdir", E, lambda: os.mkdir(m.path("sub"))),
                ("mknod", E, lambda: os.mknod(m.path("fifo"), stat.S_IFIFO | 0o644)),
                ("symlink", E, lambda: os.symlink("top.dat", m.path("ln"))),
                ("link", E, lambda: os.link(f, m.path("hard"))),
                ("unlink", E, lambda: os.unlink(f)),
                ("rmdir", E, lambda: os.rmdir(g2)),
                ("rename", E, lambda: os.rename(f, m.path("moved"))),
                ("chmod", E, lambda: os.chmod(f, 0o666)),
                ("chown", E, lambda: os.chown(f, NOBODY, NOBODY)),
                ("utime", E, lambda: os.utime(f, (1, 1))),
                ("truncate", E, lambda: os.truncate(f, 0)),
                ("setxattr", E, lambda: os.setxattr(f, "user.x", b"1")),
                ("removexattr", E, lambda: os.removexattr(f, "user.x")),
            ]:
                self._refuses(f, what, want, act)
            fd = os.open(f, os.O_RDONLY)
            try:
                self._refuses(f, "write", errno.EBADF, lambda: os.write(fd, b"x"))
                self._refuses(f, "posix_fallocate", errno.EBADF,
                              lambda: os.posix_fallocate(fd, 0, 4096))
            finally:
                os.close(fd)
            self.assertTrue(same_bits(mm_dat(f, np.float32, self.x.shape), reference(self.x)))

    def _refuses(self, path, what, want, act):
        with self.subTest(path=os.path.basename(path) or path, op=what):
            with self.assertRaises(OSError) as cm:
                r = act()
                if isinstance(r, int):  # an fd that should never have been opened
                    os.close(r)
            self.assertEqual(cm.exception.errno, want,
                             f"{what} on {path}: {errno.errorcode.get(cm.exception.errno)} "
                             f"({cm.exception}), want {errno.errorcode[want]}")
        return 1

    # ---- 2: mount options ----

    def check_flags(self, mp, *also):
        entry = mount_entry(mp)
        self.assertIsNotNone(entry, f"{mp} not in mountinfo")
        fields, fstype, superopts = entry
        per_mount, sup = set(fields[5].split(",")), set(superopts.split(","))
        self.assertEqual(fstype, "fuse.dsview")
        self.assertLessEqual({"ro", "nosuid", "nodev"}, per_mount, fields[5])
        self.assertNotIn("rw", per_mount)
        self.assertLessEqual({"ro", "default_permissions"}, sup, superopts)
        self.assertNotIn("rw", sup)
        for o in also:
            self.assertTrue(o in per_mount or o in sup, f"{o} missing: {fields[5]} / {superopts}")
        want = os.ST_RDONLY | os.ST_NOSUID | os.ST_NODEV
        self.assertEqual(os.statvfs(mp).f_flag & want, want)

    def test_mount_is_ro_nosuid_nodev_default_permissions_never_direct_io(self):
        with self.mount(self.p("a.npy")) as m:
            self.check_flags(m.mp)
            want = reference(self.x)
            # mmap works (direct_io would refuse or bypass the page cache)
            self.assertTrue(same_bits(mm_dat(m.path("a.dat"), np.float32, self.x.shape), want))
            self.assertTrue(same_bits(mm_npy(m.path("a.npy")), want))
            # served from the page cache the second time: no request reaches
            # the daemon, which direct_io would force
            self.assertEqual(read_all(m.path("a.dat")), want.tobytes())
            served = m.stats()["bytes_served"]  # counts .dat/.npy bytes only
            self.assertGreaterEqual(served, want.nbytes)
            for _ in range(3):
                self.assertEqual(read_all(m.path("a.dat")), want.tobytes())
            self.assertEqual(m.stats()["bytes_served"], served, "repeat reads went to the daemon")

    def test_fuse_options_cannot_weaken_the_mount(self):
        src = self.p("a.npy")
        cases = [
            ("rw", "-o rw", KEEPS), ("suid", "-o suid", KEEPS), ("dev", "-o dev", KEEPS),
            ("direct_io", "-o direct_io", "mmap"),
            ("allow_other,rw", "-o rw", KEEPS), ("ro,nosuid,suid", "-o suid", KEEPS),
            ("noexec,dev,allow_other", "-o dev", KEEPS),
            ("r\\w", "-o rw", KEEPS),      # libfuse unescapes \w to w
            ("\\162w", "-o rw", KEEPS),    # and \162 to r
        ]
        for opt, name, why in cases:
            with self.subTest(opt=opt):
                line = self.refused(src, "-o", opt, want=[name + ": ", why])
                self.assertTrue(printable(line), line)
        with self.subTest(opt="-o allow_other -o rw"):
            self.refused(src, "-o", "allow_other", "-o", "rw", want="-o rw: ")
        # what may be passed still works, and changes none of the above
        for opts, also in [(("-o", "allow_other"), ["allow_other"]), (("-o", "exec,noatime"), ["noatime"]),
                           (("-o", "allow_root"), []), (("-o", "ro,nosuid,nodev"), []),
                           (("-o", "subtype=other,fsname=x"), [])]:
            with self.subTest(opts=opts):
                with self.mount(src, *opts) as m:
                    self.check_flags(m.mp, *also)
                    self.assertTrue(same_bits(mm_npy(m.path("a.npy")), reference(self.x)))

    # ---- 3: who may look ----

    def test_permissions_other_users_and_modes(self):
        pub = tempfile.mkdtemp(prefix="dsv-e2e-pub-")
        try:
            os.chmod(pub, 0o755)  # mkdtemp makes 0700: nobody must reach the mountpoint
            d = pub
            while d != "/":
                d = os.path.dirname(d)
                self.assertTrue(os.stat(d).st_mode & 0o001, f"{d} not traversable by others")
            want = hashlib.sha256(reference(self.x).tobytes()).hexdigest()
            names = sorted([".stats.json", "a.dat", "a.json", "a.npy"])

            with self.mount(self.p("a.npy"), mp=os.path.join(pub, "own")) as m:
                r = as_nobody(m.mp, "a.dat")
                self.assertEqual(r["ids"], [NOBODY, NOBODY, NOBODY, []])
                # without allow_other the kernel lets nobody but the mounter in
                for k in ("stat_root", "listdir", "stat_file", "read", "exec", "open_w"):
                    self.assertEqual(r[k], ["err", "EACCES"], k)
                self.assertEqual(r["access_r"], ["ok", False])
                # root itself is the mounter: in
                self.assertEqual(hashlib.sha256(read_all(m.path("a.dat"))).hexdigest(), want)

            with self.mount(self.p("a.npy"), "-o", "allow_root", mp=os.path.join(pub, "root")) as m:
                r = as_nobody(m.mp, "a.dat")
                for k in ("listdir", "stat_file", "read"):
                    self.assertEqual(r[k], ["err", "EACCES"], k)
                self.assertEqual(hashlib.sha256(read_all(m.path("a.dat"))).hexdigest(), want)

            with self.mount(self.p("a.npy"), "-o", "allow_other", mp=os.path.join(pub, "all")) as m:
                r = as_nobody(m.mp, "a.dat")
                self.assertEqual(r["stat_root"], ["ok", stat.S_IFDIR | 0o555])
                self.assertEqual(r["listdir"], ["ok", names])
                self.assertEqual(r["stat_file"], ["ok", stat.S_IFREG | 0o444])
                self.assertEqual(r["read"], ["ok", want], "nobody read wrong bytes")
                self.assertEqual(r["access_r"], ["ok", True])
                # default_permissions: the kernel checks the mode bits itself
                # (without it, FUSE would ask the daemon, which has no access
                # op, and allow): 0444 has no x, so no exec and access says no
                self.assertEqual(r["access_x"], ["ok", False])
                self.assertEqual(r["exec"], ["err", "EACCES"])
                self.assertEqual(r["open_w"], ["err", "EROFS"])
                r = as_nobody(m.mp, ".stats.json")
                self.assertEqual(r["stat_file"], ["ok", stat.S_IFREG | 0o444])
                self.assertEqual(r["read"][0], "ok")
                # the same holds for root: no x bit, no exec, even for root
                self.assertFalse(os.access(m.path("a.dat"), os.X_OK))
                with self.assertRaises(PermissionError):
                    subprocess.run([m.path("a.dat")])

            # modes of every kind of entry, groups included
            with self.mount(self.p("grp.h5"), mp=os.path.join(pub, "grp")) as m:
                for dirpath, dirs, files in os.walk(m.mp):
                    st = os.stat(dirpath)
                    self.assertEqual(st.st_mode, stat.S_IFDIR | 0o555, dirpath)
                    self.assertEqual((st.st_uid, st.st_gid), (0, 0), dirpath)
                    for n in files:
                        st = os.stat(os.path.join(dirpath, n))
                        self.assertEqual(st.st_mode, stat.S_IFREG | 0o444, n)
                        self.assertEqual((st.st_uid, st.st_gid), (0, 0), n)
                self.assertTrue(os.path.isdir(m.path("g1/g2")))
        finally:
            shutil.rmtree(pub, ignore_errors=True)
