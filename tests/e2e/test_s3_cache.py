"""The disk cache of objects' stored bytes (--disk-cache DIR), against a
real server (SeaweedFS, objstore.py): a second mount reads what the first
fetched from DIR, with the volume server stopped (the cached bytes still
served, the rest EIO); --disk-cache-size bounds DIR (the least recently
used evicted); two mounts sharing DIR read at once, every byte right; a
damaged entry (a flipped byte, a cut file) is dropped and fetched again;
an object overwritten while mounted gives EIO, and the next mount reads the
new version, never the cached old one; no secret in DIR. verify, info and
pack take --disk-cache as mount does: what verify read, a mount then reads
from DIR."""
import errno
import os
import threading

import h5py
import numpy as np

from common import E2E, check_preads, check_whole, run
from objstore import KEY_ID, SECRET, ObjectStore, npy_bytes
from refs import reference

BUCKET = "dsview-cache"
MIB = 1 << 20


class S3DiskCache(E2E):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.saved_aws = {k: os.environ.pop(k) for k in list(os.environ) if k.startswith("AWS_")}
        cls.store = ObjectStore(cls.tmp)
        try:
            cls.store.start()
            s3 = cls.store.client()
            s3.create_bucket(Bucket=BUCKET)
            rng = np.random.default_rng(34)
            # 4 blocks of the cache and a short one; odd rows
            cls.a = rng.integers(0, 256, (2801, 1531), dtype=np.uint8)
            cls.b = rng.integers(0, 256, (900, 1531), dtype=np.uint8)
            for key, body in (("a.npy", npy_bytes(cls.a)), ("b.npy", npy_bytes(cls.b)),
                              ("v.npy", npy_bytes(cls.b))):
                s3.put_object(Bucket=BUCKET, Key=key, Body=body)
        except Exception:
            cls.store.stop()
            os.environ.update(cls.saved_aws)
            super().tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.store.stop()
        os.environ.update(cls.saved_aws)
        super().tearDownClass()

    def mount_cached(self, key, cache, *opts, env=None, **kw):
        # no readahead of dsview's own: what is cached is what was read
        env = dict(DSVIEW_READAHEAD_KB="0", **(env or {}))
        return self.mount(f"s3://{BUCKET}/{key}", "--disk-cache", cache, *opts,
                          env=self.store.env(**env), **kw)

    def entries(self, cache):
        return [os.path.join(cache, n) for n in os.listdir(cache) if len(n) > 32 and n[32] == "-"]

    def test_remount_reads_the_cache_with_the_server_stopped(self):
        cache, ref = self.p("c-remount"), reference(self.a)
        data = ref.tobytes()
        half = len(data) // 2
        with self.mount_cached("a.npy", cache) as m:
            with open(m.path("a.dat"), "rb") as f:
                self.assertEqual(f.read(half), data[:half])
            st = m.stats()
            self.assertGreater(st["disk_cache_misses"], 0)
            self.assertEqual(st["disk_cache_corrupt"], 0)
        self.assertTrue(self.entries(cache))
        for p in self.entries(cache):  # nothing secret in the entries
            with open(p, "rb") as f:
                body = f.read()
            self.assertNotIn(SECRET.encode(), body)
            self.assertNotIn(KEY_ID.encode(), body)
        with self.mount_cached("a.npy", cache,
                               expect_errors=[r"a\.npy: GET of bytes",
                                              r"a\.npy chunk .*: I/O error"]) as m:
            self.store.kill_volume()
            try:
                with open(m.path("a.dat"), "rb") as f:
                    self.assertEqual(f.read(half), data[:half])
                st = m.stats()
                self.assertEqual(st["net_gets"], 0)  # all of it from DIR
                self.assertGreater(st["disk_cache_hits"], 0)
                self.assertGreaterEqual(st["disk_cache_hit_bytes"], half // 4)
                fd = os.open(m.path("a.dat"), os.O_RDONLY)
                try:
                    with self.assertRaises(OSError) as e:
                        os.pread(fd, 4096, len(data) - 4096)  # never fetched
                    self.assertEqual(e.exception.errno, errno.EIO)
                finally:
                    os.close(fd)
                status = run("status", m.mp)
                self.assertIn("disk cache: ", status.stdout)
                self.assertNotIn(SECRET, status.stdout)
            finally:
                self.store.start_volume()
            self.store.wait_readable(BUCKET, "a.npy")

    def test_size_bounds_the_directory(self):
        cache, ref = self.p("c-size"), reference(self.a)
        with self.mount_cached("a.npy", cache, "--disk-cache-size", "2M") as m:
            check_whole(self, m, "a", ref, "float32")
            st = m.stats()
            self.assertGreater(st["disk_cache_evictions"], 0)
            self.assertLessEqual(st["disk_cache_used"], 2 * MIB)
            self.assertLessEqual(sum(os.path.getsize(p) for p in self.entries(cache)), 2 * MIB)
            self.assertEqual(st["disk_cache_size"], 2 * MIB)

    def test_two_mounts_share_the_directory(self):
        cache, ref = self.p("c-shared"), reference(self.a)
        errors = []

        def read(m, seed):
            try:
                check_preads(self, m, "a", ref, rows=(0, 1400, 2800), seed=seed, n_random=30)
                check_whole(self, m, "a", ref, "float32")
            except Exception as e:  # noqa: BLE001 (reported below)
                errors.append(e)

        with self.mount_cached("a.npy", cache) as m1, self.mount_cached("a.npy", cache) as m2:
            ts = [threading.Thread(target=read, args=(m, s)) for s, m in enumerate((m1, m2))]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            self.assertEqual(errors, [])
            for m in (m1, m2):
                self.assertEqual(m.stats()["disk_cache_corrupt"], 0)
        self.assertFalse([n for n in os.listdir(cache) if n.startswith("tmp-")])

    def test_damaged_entries_are_fetched_again(self):
        cache, ref = self.p("c-damaged"), reference(self.b)
        with self.mount_cached("b.npy", cache) as m:
            check_whole(self, m, "b", ref, "float32")
        ents = sorted(self.entries(cache))
        self.assertEqual(len(ents), 2)  # 1.3 MiB of .npy: two blocks
        with open(ents[0], "r+b") as f:  # one byte of data flipped
            f.seek(4000)
            c = f.read(1)
            f.seek(4000)
            f.write(bytes([c[0] ^ 0x40]))
        os.truncate(ents[1], os.path.getsize(ents[1]) - 100)
        with self.mount_cached("b.npy", cache) as m:
            check_whole(self, m, "b", ref, "float32")
            st = m.stats()
            # both found damaged (two readers of one block at once may
            # each find it so), fetched again
            self.assertGreaterEqual(st["disk_cache_corrupt"], 2)
            self.assertGreaterEqual(st["disk_cache_misses"], 2)
            # in the log, or on mount's stderr when a source's opening read
            # found it (before the daemon's log is open)
            lines = m.log_lines() + m.stderr.splitlines()
            self.assertTrue(any("disk cache entry" in l and "dropped" in l for l in lines), lines)
        with self.mount_cached("b.npy", cache) as m:  # written again whole
            check_whole(self, m, "b", ref, "float32")
            self.assertEqual(m.stats()["disk_cache_corrupt"], 0)
            self.assertEqual(m.stats()["net_gets"], 0)

    def test_object_overwritten_while_mounted(self):
        cache, data = self.p("c-victim"), reference(self.b).tobytes()
        with self.mount_cached("v.npy", cache,
                               expect_errors=[r"v\.npy: the object changed",
                                              r"v\.npy chunk .*: I/O error"]) as m:
            fd = os.open(m.path("v.dat"), os.O_RDONLY)
            try:
                self.assertEqual(os.pread(fd, 4096, 0), data[:4096])
                self.store.client().put_object(Bucket=BUCKET, Key="v.npy",
                                               Body=npy_bytes(255 - self.b))
                with self.assertRaises(OSError) as e:
                    os.pread(fd, 4096, len(data) - 8192)  # its block not cached
                self.assertEqual(e.exception.errno, errno.EIO)
            finally:
                os.close(fd)
        # the next mount sees the new version: nothing of the old one served
        with self.mount_cached("v.npy", cache) as m:
            check_whole(self, m, "v", reference(255 - self.b), "float32")
            self.assertGreaterEqual(m.stats()["disk_cache_misses"], 2)

    def test_manifest_keys(self):
        ini = self.write_ini(f"[dsview]\ndisk_cache = c-manifest\ndisk_cache_size = 64M\n"
                             f"[b]\nsource = s3://{BUCKET}/b.npy\n", "dc.ini")
        with self.mount(ini, env=self.store.env()) as m:
            check_whole(self, m, "b", reference(self.b), "float32")
            self.assertEqual(m.stats()["disk_cache_size"], 64 * MIB)
        self.assertEqual(len(self.entries(self.p("c-manifest"))), 2)  # beside the manifest
        # verify of a manifest reads through its disk_cache too
        ini = self.write_ini(f"[dsview]\ndisk_cache = c-verified\n"
                             f"[b]\nsource = s3://{BUCKET}/b.npy\n", "dcv.ini")
        r = run("verify", ini, env=self.store.env())
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(len(self.entries(self.p("c-verified"))), 2)

    def test_verify_info_pack_fill_it(self):
        # verify reads every block through DIR: a mount after it fetches
        # nothing; info reads the header's block; pack its input's blocks
        cache, ref = self.p("c-verify"), reference(self.b)
        r = run("verify", "--disk-cache", cache, f"s3://{BUCKET}/b.npy", env=self.store.env())
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(len(self.entries(cache)), 2)  # b.npy's two 1 MiB blocks
        with self.mount_cached("b.npy", cache) as m:
            check_whole(self, m, "b", ref, "float32")
            st = m.stats()
            self.assertEqual((st["net_gets"], st["disk_cache_misses"]), (0, 0))
            self.assertGreater(st["disk_cache_hits"], 0)
        r = run("info", "--disk-cache", self.p("c-info"), f"s3://{BUCKET}/a.npy",
                env=self.store.env())
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("(2801, 1531) uint8", r.stdout)
        self.assertEqual(len(self.entries(self.p("c-info"))), 1)
        out = self.p("b-packed.h5")
        r = run("pack", "--codec", "none", "--dataset", "b", "--disk-cache", self.p("c-pack"),
                f"s3://{BUCKET}/b.npy", out, env=self.store.env())
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(len(self.entries(self.p("c-pack"))), 2)
        with h5py.File(out, "r") as f:
            self.assertTrue(np.array_equal(f["b"][:], self.b))

    def test_refused_bad_values(self):
        src, env = f"s3://{BUCKET}/b.npy", self.store.env()
        for args, want in (
                (("--disk-cache", "/proc/nope/cache"), "/proc/nope/cache: cannot make"),
                (("--disk-cache-size", "1G"), "--disk-cache-size needs a directory"),
                (("--disk-cache", self.p("c-0"), "--disk-cache-size", "0"), "must be above 0"),
                (("--disk-cache", self.p("c-x"), "--disk-cache-size", "lots"), "is not a size")):
            r = run("mount", *args, src, self.p("mnt-refused"), env=env)
            self.assertEqual(r.returncode, 1, args)
            self.assertIn(want, r.stderr)
        for text, want in (("disk_cache_size = 0\n", "is not a size above 0"),
                           ("disk_cache_size = 1G\n", "disk_cache_size needs disk_cache")):
            ini = self.write_ini(f"[dsview]\n{text}[b]\nsource = {src}\n", "bad.ini")
            r = run("mount", ini, self.p("mnt-refused"), env=env)
            self.assertEqual(r.returncode, 1, text)
            self.assertIn(want, r.stderr)
        self.assertFalse(os.path.exists(self.p("c-0")))  # nothing made
        for cmd in (("info", src), ("verify", src), ("pack", src, self.p("never.h5"))):
            r = run(cmd[0], "--disk-cache-size", "1G", *cmd[1:], env=env)
            self.assertEqual(r.returncode, 1, cmd)
            self.assertEqual(r.stderr.strip().splitlines(),
                             ["dsview: --disk-cache-size needs a directory (--disk-cache DIR)"])
        self.assertFalse(os.path.exists(self.p("never.h5")))
