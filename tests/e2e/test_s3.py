"""Sources in S3-compatible object storage, against a real server
(SeaweedFS, objstore.py): .npy, raw, HDF5 (contiguous, chunked, a dsview
store) and Zarr v2/v3 mounted by s3:// URL, a .npy by a plain http URL, every byte checked against numpy; info and verify
of a URL; the counters in .stats.json and status; and the faults - wrong
credentials, a missing key or bucket, the endpoint down (each refused at
mount with one line), an object overwritten while mounted (EIO and a log
line naming it, never bytes of two versions), the volume server killed
mid-read and started again (EIO, the daemon alive, then the right bytes
again) - with the secret key absent from every output."""
import contextlib
import errno
import hashlib
import json
import os
import subprocess
import sys
import time

import h5py
import hdf5plugin  # noqa: F401 (the LZ4 filter of the packed stores)
import numpy as np

from common import E2E, PYTHON_DIR, check_preads, check_whole, mounted, run, venv_python
from netns import NetnsUnavailable, Node
from objstore import SECRET, npy_bytes, start_for, stop_for, upload_tree
from refs import reference

BUCKET = "dsview-data"


def save(path, a):
    np.save(path, a)
    return path


class S3(E2E):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        # on every address: the two-node test's namespaces reach it too
        start_for(cls, cls.fill, bind="0.0.0.0")

    @classmethod
    def fill(cls, s3):
        s3.create_bucket(Bucket=BUCKET)
        rng = np.random.default_rng(30)
        # several 1 MiB chunks of the read path; odd row sizes
        cls.a = rng.integers(0, 256, (700, 1531), dtype=np.uint8)
        cls.b = rng.standard_normal((257, 3, 129)).astype(np.float32)
        cls.raw = rng.integers(-30000, 30000, (613, 257), dtype=np.int16)
        cls.g = rng.integers(0, 4096, (90, 64, 48), dtype=np.uint16)
        # several readahead GETs of 512 KiB (ahead_env)
        cls.big = rng.integers(0, 256, (600, 8191), dtype=np.uint8)
        h5 = os.path.join(cls.tmp, "run1.h5")
        with h5py.File(h5, "w") as f:
            f["contig"] = cls.b
            f.create_dataset("deflate", data=cls.g, chunks=(7, 64, 48), compression="gzip")
            f.create_dataset("grid", data=cls.g, chunks=(5, 16, 48), shuffle=True,
                             compression="gzip", fletcher32=True)
            f.create_group("stim")["images"] = cls.a[:50]
        np.save(os.path.join(cls.tmp, "a.npy"), cls.a)
        store = os.path.join(cls.tmp, "a-lz4.h5")
        r = run("pack", "--chunk-size", "256K", os.path.join(cls.tmp, "a.npy"), store)
        if r.returncode:
            raise RuntimeError(r.stderr)
        with open(h5, "rb") as f1, open(store, "rb") as f2:
            h5_bytes, store_bytes = f1.read(), f2.read()
        cls.upload_zarr(s3, rng)
        for key, body in (("u8/a.npy", npy_bytes(cls.a)), ("f32/b.npy", npy_bytes(cls.b)),
                          ("h5/run1.h5", h5_bytes), ("h5/a-lz4.h5", store_bytes),
                          ("raw/c.i16", cls.raw.tobytes()),
                          ("victim/v.npy", npy_bytes(cls.a)),
                          ("big/s.npy", npy_bytes(cls.big)), ("big/t.npy", npy_bytes(cls.big)),
                          ("volume/w.npy", npy_bytes(cls.b))):
            s3.put_object(Bucket=BUCKET, Key=key, Body=body)

    @classmethod
    def upload_zarr(cls, s3, rng):
        """A Zarr v2 array (Debian's zarr 2, Blosc) and a v3 one (zarr 3 in
        the venv, zstd, "c/i/j" keys), each with a chunk never written
        (the fill value), uploaded file by file under zarr/."""
        import zarr
        cls.z2 = rng.integers(-1000, 1000, (75, 33), dtype=np.int32)
        cls.z2[10:20] = 7  # chunk row 1 written as the fill value: zarr skips it
        z = zarr.open(os.path.join(cls.tmp, "v2.zarr"), mode="w", shape=cls.z2.shape,
                      chunks=(10, 16), dtype=np.int32, fill_value=7)
        z[:] = cls.z2
        cls.z3 = rng.standard_normal((61, 5, 7)).astype(np.float32)
        cls.z3[0:8] = -1.5
        venv_python("import sys, numpy as np, zarr\n"
                    "x = np.load(sys.argv[2])\n"
                    "z = zarr.create_array(sys.argv[1], shape=x.shape, chunks=(8, 5, 4),\n"
                    "    dtype=x.dtype, fill_value=-1.5, compressors=zarr.codecs.ZstdCodec())\n"
                    "z[:] = x\n", os.path.join(cls.tmp, "v3.zarr"),
                    save(os.path.join(cls.tmp, "z3.npy"), cls.z3))
        for name in ("v2.zarr", "v3.zarr"):
            upload_tree(s3, BUCKET, os.path.join(cls.tmp, name), f"zarr/{name}")

    @classmethod
    def tearDownClass(cls):
        stop_for(cls)

    def url(self, key):
        return f"s3://{BUCKET}/{key}"

    def mount_s3(self, source, *opts, env=None, **kw):
        return self.mount(source, *opts, env=self.store.env(**(env or {})), **kw)

    def refused_s3(self, source, want, **env):
        """A mount that must fail: exit 1, one stderr line naming the URL
        and every string in want, nothing mounted."""
        mp = self.p("mnt-refused")
        t0 = time.monotonic()
        r = run("mount", "--log", self.p("refused.log"), source, mp, env=self.store.env(**env),
                timeout=60)
        self.assertEqual(r.returncode, 1, r.stderr)
        lines = r.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, r.stderr)
        self.assertTrue(lines[0].startswith(f"dsview: {source}: "), lines[0])
        for w in want:
            self.assertIn(w, lines[0])
        self.assertNotIn(SECRET, r.stdout + r.stderr)
        self.assertFalse(mounted(mp), "something was mounted")
        self.assertLess(time.monotonic() - t0, 30, "the refusal took too long")
        return lines[0]

    def no_secret(self, m, *texts):
        """The secret key is in none of: texts, the daemon's log, its
        .stats.json, dsview status, the mount table."""
        with open("/proc/self/mountinfo") as f:
            texts += (f.read(),)
        with open(m.path(".stats.json")) as f:
            texts += (f.read(),)
        st = run("status", m.mp)
        texts += (st.stdout, st.stderr, "\n".join(m.log_lines()), m.stderr)
        for t in texts:
            self.assertNotIn(SECRET, t)

    # readahead GETs of 512 KiB, 2 MiB ahead: several in flight over the
    # fixtures' few MiB
    ahead_env = {"DSVIEW_NET_GET_KB": "512", "DSVIEW_NET_AHEAD_KB": "2048"}

    def test_readahead_coalesces_gets(self):
        # one sequential pass: a few large GETs in flight, not one GET per
        # chunk read (as with readahead off); every byte right, shuffled
        # rows too
        ref = reference(self.big)
        gets = {}
        for ahead in ("2048", "0"):
            env = dict(self.ahead_env, DSVIEW_NET_AHEAD_KB=ahead)
            with self.subTest(ahead=ahead), self.mount_s3(self.url("big/s.npy"), env=env) as m:
                with open(m.path("s.dat"), "rb") as f:
                    self.assertEqual(f.read(), ref.tobytes())
                st = m.stats()
                gets[ahead] = st["net_gets"]
                self.assertEqual((st["net_failures"], st["net_retries"]), (0, 0))
                check_whole(self, m, "s", ref, "float32")
                check_preads(self, m, "s", ref, rows=(0, 299, 599), n_random=20)
        # the chain's first 512 KiB by the reads' own GETs (32 KiB each),
        # then one GET per 512 KiB block
        size = len(npy_bytes(self.big))
        self.assertLessEqual(gets["2048"], 16 + size // (512 << 10) + 4, gets)
        self.assertLess(gets["2048"] * 4, gets["0"], gets)

    def test_two_nodes_disjoint_shards(self):
        # two "machines": network namespaces with their own addresses,
        # each mounting the same store object through its own link; rank
        # r reads rows [r * 350, r * 350 + 350) on node r, every byte
        # checked
        nodes = [Node(0), Node(1)]
        try:
            for n in nodes:
                n.start()
        except NetnsUnavailable as e:
            for n in nodes:
                n.stop()
            self.skipTest(f"no network namespace here: {e}")
        ref = reference(self.a)
        rows = ref.shape[0] // 2
        try:
            with contextlib.ExitStack() as stack:
                mounts = [stack.enter_context(self.mount_s3(
                    self.url("h5/a-lz4.h5"), wrap=node.wrap,
                    env={"AWS_ENDPOINT_URL": node.url(self.store.ports["s3"])}))
                    for node in nodes]
                for rank, (node, m) in enumerate(zip(nodes, mounts)):
                    # the daemon is in the node's network
                    self.assertEqual(os.stat(f"/proc/{m.pid}/ns/net").st_ino,
                                     os.stat(f"/run/netns/{node.ns}").st_ino)
                    with open(m.path("a.dat"), "rb") as f:
                        f.seek(rank * rows * ref[0].nbytes)
                        got = f.read(rows * ref[0].nbytes)
                    want = ref[rank * rows:(rank + 1) * rows]
                    self.assertBits(np.frombuffer(got, np.float32).reshape(want.shape), want,
                                    f"rank {rank} on {node.ns}", "float32")
                    st = m.stats()
                    self.assertGreater(st["net_gets"], 0)
                    self.assertEqual(st["net_failures"], 0)
        finally:
            for n in nodes:
                n.stop()

    def test_npy_zero_config(self):
        with self.mount_s3(self.url("u8/a.npy")) as m:
            check_whole(self, m, "a", reference(self.a), "float32")
            check_preads(self, m, "a", reference(self.a), rows=(1, 171, 342, 699), n_random=20)
            st = m.stats()
            self.assertEqual(st["net_heads"], 1)
            self.assertGreater(st["net_gets"], 0)
            self.assertGreaterEqual(st["net_bytes"], self.a.nbytes)
            self.assertEqual(st["net_failures"], 0)
            status = run("status", m.mp)
            self.assertIn("object storage: 1 objects", status.stdout)
            self.no_secret(m, status.stdout)

    def test_manifest_npy_and_raw(self):
        ini = self.write_ini(
            f"[b]\nsource = {self.url('f32/b.npy')}\ndtype = bfloat16\nscale = 2\n"
            f"[c]\nsource = {self.url('raw/c.i16')}\nsource_dtype = int16\n"
            f"source_shape = -1, 257\nmean = 10\nstd = 1000\n")
        with self.mount_s3(ini) as m:
            check_whole(self, m, "b", reference(self.b, scale=2, dtype="bfloat16"), "bfloat16")
            c = reference(self.raw, mean=[10.0], std=[1000.0])
            check_whole(self, m, "c", c, "float32")
            check_preads(self, m, "c", c, rows=(0, 300, 612), n_random=10)

    def test_pattern_over_prefixes(self):
        # 3 x 60 objects (so the opens run on threads), wildcards in a
        # directory part and the last, natural order; others not matched
        s3 = self.store.client()
        want = []
        for sub in (1, 2, 10):
            for k in range(60):
                a = np.full((1 + k % 3, 5), 1000 * sub + k, np.int32)
                key = f"coll/sub-{sub}/eeg/sub-{sub}_run{k}_eeg.npy"
                s3.put_object(Bucket=BUCKET, Key=key, Body=npy_bytes(a))
                want.append((sub, k, a))
            s3.put_object(Bucket=BUCKET, Key=f"coll/sub-{sub}/eeg/sub-{sub}_events.npy",
                          Body=npy_bytes(np.zeros((2, 5), np.int32)))
            s3.put_object(Bucket=BUCKET, Key=f"coll/sub-{sub}/anat/sub-{sub}_run0_eeg.npy",
                          Body=npy_bytes(np.zeros((2, 5), np.int32)))
        want.sort(key=lambda w: (w[0], w[1]))
        ref = np.concatenate([w[2] for w in want]).astype(np.float32)
        ini = self.write_ini(f"[v]\nsource = {self.url('coll/sub-*/eeg/*_eeg.npy')}\n")
        with self.mount_s3(ini) as m:
            check_whole(self, m, "v", ref, "float32")
            with open(m.path("v.json")) as f:
                paths = [s["path"] for s in json.load(f)["sources"]]
            self.assertEqual(paths, [self.url(f"coll/sub-{s}/eeg/sub-{s}_run{k}_eeg.npy")
                                     for s, k, _ in want])
        none = self.write_ini(f"[v]\nsource = {self.url('coll/sub-*/eeg/*.nii')}\n", "none.ini")
        r = run("mount", "--log", self.p("none.log"), none, self.p("mnt-none"),
                env=self.store.env())
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertEqual(r.stderr.strip(), f"dsview: {none}:2: "
                         f"{self.url('coll/sub-*/eeg/*.nii')}: the pattern matches no object")

    def test_hdf5_zero_config(self):
        with self.mount_s3(self.url("h5/run1.h5")) as m:
            check_whole(self, m, "contig", reference(self.b), "float32")
            check_whole(self, m, "deflate", reference(self.g), "float32")
            check_preads(self, m, "grid", reference(self.g), rows=(5, 45, 89), n_random=10)
            check_whole(self, m, "stim/images", reference(self.a[:50]), "float32")

    def test_hdf5_dataset_and_store_in_manifest(self):
        ini = self.write_ini(
            f"[g]\nsource = {self.url('h5/run1.h5')}:/grid\ndtype = bfloat16\n"
            f"[store]\nsource = {self.url('h5/a-lz4.h5')}\nscale = 0.5\n", "h5.ini")
        with self.mount_s3(ini) as m:
            check_whole(self, m, "g", reference(self.g, dtype="bfloat16"), "bfloat16")
            ref = reference(self.a, scale=0.5)
            check_whole(self, m, "store", ref, "float32")
            check_preads(self, m, "store", ref, rows=(0, 171, 699), n_random=20)
        r = run("verify", self.url("h5/a-lz4.h5"), env=self.store.env())
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_sorted_sparse_rows_fetch_no_window(self):
        # a shuffled reader's sorted batch reads rows that follow one
        # another but leave most bytes between them unread: no readahead
        # window fetches those gaps
        ref = reference(self.big)
        rows = range(0, len(ref), 4)
        with self.mount_s3(self.url("big/s.npy"), env=self.ahead_env) as m:
            fd = os.open(m.path("s.dat"), os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
                for r in rows:
                    got = os.pread(fd, ref[r].nbytes, r * ref[r].nbytes)
                    self.assertEqual(got, ref[r].tobytes(), f"row {r}")
            finally:
                os.close(fd)
            fetched = m.stats()["net_bytes"]
        # a quarter of the object asked for (pages round each row up a
        # little); a window ahead would fetch nearly all of it
        self.assertLess(fetched, len(npy_bytes(self.big)) // 2, fetched)

    def test_store_row_is_one_get(self):
        # a shuffled row of an LZ4 store in object storage costs one GET
        # (its blocks): the block table was read whole at open
        ref = reference(self.a)
        rows = (80, 250, 420, 590)  # inside four different chunks (171 rows)
        with self.mount_s3(self.url("h5/a-lz4.h5")) as m:
            fd = os.open(m.path("a.dat"), os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)  # no kernel readahead
                before = m.stats()["net_gets"]
                for r in rows:
                    got = os.pread(fd, ref[r].nbytes, r * ref[r].nbytes)
                    self.assertEqual(got, ref[r].tobytes(), f"row {r}")
                gets = m.stats()["net_gets"] - before
            finally:
                os.close(fd)
        self.assertEqual(gets, len(rows))

    def test_zarr_v2_and_v3(self):
        for key, ref in (("zarr/v2.zarr", self.z2), ("zarr/v3.zarr", self.z3)):
            with self.subTest(key=key), self.mount_s3(self.url(key)) as m:
                name = "v2" if "v2" in key else "v3"
                check_whole(self, m, name, reference(ref), "float32")
        ini = self.write_ini(f"[z]\nsource = {self.url('zarr/v3.zarr/')}\ndtype = bfloat16\n",
                             "zarr.ini")
        with self.mount_s3(ini) as m:
            check_whole(self, m, "z", reference(self.z3, dtype="bfloat16"), "bfloat16")
            self.assertEqual(m.stats()["net_failures"], 0)  # the missing chunk: no failure

    def test_in_process_equals_the_mount(self):
        # the library reads the objects itself, in a process with the
        # store's settings, and makes the mount's bytes
        ini = self.write_ini(
            f"[store]\nsource = {self.url('h5/a-lz4.h5')}\nscale = 0.5\n"
            f"[z]\nsource = {self.url('zarr/v3.zarr/')}\n"
            f"[g]\nsource = {self.url('h5/run1.h5')}:/grid\ndtype = bfloat16\n"
            f"[c]\nsource = {self.url('raw/c.i16')}\nsource_dtype = int16\n"
            f"source_shape = -1, 257\nmean = 10\nstd = 1000\n", "inproc.ini")
        code = ("import hashlib, sys\nsys.path.insert(0, sys.argv[2])\nimport dsview\n"
                "r = dsview.Reader(sys.argv[1], threads=2)\n"
                "for v in sorted(r.views):\n"
                "    a = r.view(v)\n"
                "    print(v, hashlib.sha256(a.read_bytes(0, a.nbytes)).hexdigest())\n"
                "print('gets', r.stats()['net_gets'])\n")
        p = subprocess.run([sys.executable, "-c", code, ini, PYTHON_DIR], capture_output=True,
                           text=True, env=self.store.env(), timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = p.stdout.split("\n")
        self.assertGreater(int(lines[4].split()[1]), 0)
        with self.mount_s3(ini) as m:
            for line in lines[:4]:
                name, digest = line.split()
                with open(m.path(name + ".dat"), "rb") as f:
                    self.assertEqual(hashlib.sha256(f.read()).hexdigest(), digest, name)
        self.assertNotIn(SECRET, p.stdout + p.stderr)

    def test_http_url(self):
        # the filer's own HTTP port serves the bucket's files without
        # credentials, as a public https:// server would
        url = f"http://127.0.0.1:{self.store.ports['filer']}/buckets/{BUCKET}/u8/a.npy"
        with self.mount_s3(url, env={"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": ""}) as m:
            check_whole(self, m, "a", reference(self.a), "float32")
            self.assertGreater(m.stats()["net_gets"], 0)

    def test_info_and_verify(self):
        env = self.store.env()
        r = run("info", self.url("u8/a.npy"), env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("(700, 1531) uint8", r.stdout)
        r = run("verify", self.url("f32/b.npy"), env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("OK", r.stdout)
        r = run("info", "--source-dtype", "int16", "--source-shape", "-1,257", self.url("raw/c.i16"),
                env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("(613, 257) int16", r.stdout)
        r = run("info", self.url("zarr/v3.zarr"), env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("(61, 5, 7) float32", r.stdout)
        r = run("verify", self.url("zarr/v2.zarr"), env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        r = run("info", self.url("u8/none.npy"), env=env)
        self.assertEqual(r.returncode, 1)
        self.assertIn("HTTP 404", r.stderr)
        for out in (r.stdout, r.stderr):
            self.assertNotIn(SECRET, out)

    def test_pack_input(self):
        out = self.p("packed-from-s3.h5")
        r = run("pack", "--dataset", "a", self.url("u8/a.npy"), out, env=self.store.env())
        self.assertEqual(r.returncode, 0, r.stderr)
        with h5py.File(out, "r") as f:
            self.assertTrue(np.array_equal(f["a"][:], self.a))
        r = run("pack", "--dataset", "g", self.url("h5/run1.h5") + ":/grid", out + "2",
                env=self.store.env())
        self.assertEqual(r.returncode, 0, r.stderr)
        with h5py.File(out + "2", "r") as f:
            self.assertTrue(np.array_equal(f["g"][:], self.g))

    def test_https_verified(self):
        # TLS checked against AWS_CA_BUNDLE; an HDF5 file, whose probe
        # runs in a forked child, reads without a single retry
        env = {"AWS_ENDPOINT_URL": self.store.tls_endpoint, "AWS_CA_BUNDLE": self.store.ca}
        with self.mount_s3(self.url("h5/run1.h5"), env=env) as m:
            check_whole(self, m, "deflate", reference(self.g), "float32")
            check_whole(self, m, "contig", reference(self.b), "float32")
            st = m.stats()
            self.assertEqual((st["net_retries"], st["net_failures"]), (0, 0))
        # the same store without its certificate trusted: refused
        self.refused_s3(self.url("u8/a.npy"), ("certificate",),
                        AWS_ENDPOINT_URL=self.store.tls_endpoint)

    def test_refused_wrong_credentials(self):
        line = self.refused_s3(self.url("u8/a.npy"), ("access denied", "HTTP 403"),
                               AWS_SECRET_ACCESS_KEY="not-the-key")
        self.assertNotIn("not-the-key", line)

    def test_refused_zarr_wrong_credentials_and_missing(self):
        self.refused_s3(self.url("zarr/v2.zarr"), ("access denied", "HTTP 403"),
                        AWS_SECRET_ACCESS_KEY="not-the-key")
        self.refused_s3(self.url("zarr/none.zarr"), ("expected",))

    def test_refused_missing_key_and_bucket(self):
        self.refused_s3(self.url("u8/missing.npy"), ("HTTP 404",))
        self.refused_s3("s3://no-such-bucket/a.npy", ("HTTP 404",))

    def test_refused_endpoint_down(self):
        with socket_closed() as port:
            self.refused_s3(self.url("u8/a.npy"), (f"http://127.0.0.1:{port}",),
                            AWS_ENDPOINT_URL=f"http://127.0.0.1:{port}")

    def test_object_overwritten_while_mounted(self):
        key, ref = "victim/v.npy", reference(self.a)
        with self.mount_s3(self.url(key), expect_errors=[r"victim/v\.npy: the object changed",
                                                          r"victim/v\.npy chunk .*: I/O error"]) as m:
            fd = os.open(m.path("v.dat"), os.O_RDONLY)
            try:
                first = os.pread(fd, 4096, 0)
                self.assertEqual(first, ref.tobytes()[:4096])
                # same shape, other bytes: a reader must never mix them
                self.store.client().put_object(Bucket=BUCKET, Key=key,
                                               Body=npy_bytes(255 - self.a))
                off = ref.nbytes - 8192  # a chunk not read yet
                with self.assertRaises(OSError) as e:
                    os.pread(fd, 4096, off)
                self.assertEqual(e.exception.errno, errno.EIO)
            finally:
                os.close(fd)
            self.assertTrue(any("s3://dsview-data/victim/v.npy: the object changed" in l
                                for l in m.log_lines()), m.log_lines())
            self.assertGreater(m.stats()["net_failures"], 0)

    def test_volume_server_killed_mid_read(self):
        # the volume server gone mid-read: a read's own GET (w) and a
        # readahead block's (t, a pass reading ahead) fail their reads
        # with EIO after the retries, nothing wrong served before; the
        # daemon lives, and the same bytes read right once it is back
        w, t = reference(self.b), reference(self.big)
        wdata, tdata, step = w.tobytes(), t.tobytes(), 256 << 10
        ini = self.write_ini(f"[w]\nsource = {self.url('volume/w.npy')}\n"
                             f"[t]\nsource = {self.url('big/t.npy')}\n", "volume.ini")
        # a GET the dead server leaves hanging fails after 2 s, not 5
        env = dict(self.ahead_env, DSVIEW_NET_TIMEOUT_S="2")
        with self.mount_s3(ini, env=env,
                           expect_errors=[r"(volume/w|big/t)\.npy: GET of bytes",
                                          r"(volume/w|big/t)\.npy chunk .*: I/O error"]) as m:
            fw, ft = os.open(m.path("w.dat"), os.O_RDONLY), os.open(m.path("t.dat"), os.O_RDONLY)
            try:
                self.assertEqual(os.pread(fw, 65536, 0), wdata[:65536])
                toff = 0
                while toff < 12 * step:  # 768 KiB of t's object: blocks ahead fetched
                    self.assertEqual(os.pread(ft, step, toff), tdata[toff:toff + step])
                    toff += step
                time.sleep(0.3)
                self.store.kill_volume()
                killed_at = toff
                try:
                    woff = len(wdata) - 65536  # not read, not cached
                    with self.assertRaises(OSError) as e:
                        os.pread(fw, 65536, woff)
                    self.assertEqual(e.exception.errno, errno.EIO)
                    with self.assertRaises(OSError) as e:
                        while toff < len(tdata):
                            got = os.pread(ft, step, toff)
                            self.assertEqual(got, tdata[toff:toff + len(got)])
                            toff += len(got)
                    self.assertEqual(e.exception.errno, errno.EIO)
                    self.assertGreater(toff, killed_at, "nothing served from the window")
                    self.assertTrue(mounted(m.mp))
                    self.assertGreater(m.stats()["net_retries"], 0)
                finally:
                    self.store.start_volume()
                self.store.wait_readable(BUCKET, "volume/w.npy")
                self.store.wait_readable(BUCKET, "big/t.npy")
                self.assertEqual(os.pread(fw, 65536, woff), wdata[woff:woff + 65536])
                self.assertEqual(os.pread(ft, step, toff), tdata[toff:toff + step])
            finally:
                os.close(fw)
                os.close(ft)
            check_whole(self, m, "w", w, "float32")
            check_whole(self, m, "t", t, "float32")
            self.assertGreater(m.stats()["net_failures"], 0)


class socket_closed:
    """A loopback port nothing listens on, for as long as the block runs
    (held bound, not listening: a connect is refused)."""

    def __enter__(self):
        import socket
        self.s = socket.socket()
        self.s.bind(("127.0.0.1", 0))
        return self.s.getsockname()[1]

    def __exit__(self, *exc):
        self.s.close()
        return False
