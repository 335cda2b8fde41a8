"""Object storage beyond s3:// keys, against a real server (SeaweedFS,
objstore.py): presigned https URLs (made by boto3's
generate_presigned_url, as users make them) mounted from the command line
and from a manifest line of over 1,500 characters, every byte checked; an
expired and a tampered URL each refused at mount with one clear line; the
signature absent from every output. Zarr groups (v2 and v3) mounted by
s3:// URL: their arrays found by listing (ListObjectsV2, paged), described
by info and checked by verify, refused with one line on wrong credentials;
a group at an https URL (Python's file server over TLS) refused with one
line, its array served. Sharded Zarr v3 arrays (zarr-python 3's,
tests/e2e/zarr3_writer.py) mounted by s3:// URL: inner chunks read by
ranged GETs, shards never written as the fill value, a shard object cut
short failing its rows with EIO, a shard object replaced under the mount
failing the reads of its chunks not yet read with EIO and a log line
naming it (If-Match), the other shards unaffected. Endpoint, region, profile and
addressing (virtual-hosted: BUCKET.localhost) from a manifest's [dsview]
keys and from -o, -o winning; keys in a manifest refused."""
import calendar
import errno
import functools
import http.server
import json
import os
import ssl
import threading
import time
from urllib.parse import parse_qs, urlsplit

import numpy as np

from common import E2E, check_preads, check_whole, mounted, run, venv_python
from objstore import KEY_ID, SECRET, npy_bytes, start_for, stop_for, upload_tree
from refs import reference

BUCKET = "dsview-reach"
# a key near S3's 1,024-byte limit: with a download name its presigned
# URL passes 1,500 characters
LONG_KEY = "presigned/" + "/".join(f"{i:02d}" + "d" * 48 for i in range(19)) + "/p.npy"
DOWNLOAD_AS = 'attachment; filename="' + "p" * 160 + '.npy"'


WRITER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "zarr3_writer.py")


class QuietFiles(http.server.SimpleHTTPRequestHandler):
    """Python's file server, without a line per request."""
    def log_message(self, *args):
        pass


class S3Reach(E2E):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        start_for(cls, cls.fill)

    @classmethod
    def fill(cls, s3):
        s3.create_bucket(Bucket=BUCKET)
        rng = np.random.default_rng(34)
        cls.arr = rng.standard_normal((389, 3, 67)).astype(np.float32)
        s3.put_object(Bucket=BUCKET, Key=LONG_KEY, Body=npy_bytes(cls.arr))
        root = os.path.join(cls.tmp, "z3")
        venv_python(open(WRITER).read(), root)
        for name in ("end_zstd", "start_blosc", "grp"):
            upload_tree(s3, BUCKET, os.path.join(root, name + ".zarr"), f"z3/{name}.zarr")
        cls.upload_v2_group(s3, rng)
        # a shard object cut short of its index: the rows it holds fail
        with open(os.path.join(root, "end_zstd.zarr", "zarr.json"), "rb") as f:
            s3.put_object(Bucket=BUCKET, Key="z3/short.zarr/zarr.json", Body=f.read())
        s3.put_object(Bucket=BUCKET, Key="z3/short.zarr/c/1/0/0", Body=b"0123456789")

    @classmethod
    def upload_v2_group(cls, s3, rng):
        """A Zarr v2 group (Debian's zarr 2): two arrays, one in a
        subgroup, and a folder that is no Zarr node."""
        import zarr
        g = zarr.open_group(os.path.join(cls.tmp, "g2.zarr"), mode="w")
        cls.g2a = rng.integers(0, 255, (30, 7), dtype=np.uint8)
        cls.g2b = rng.standard_normal((12, 5)).astype(np.float32)
        g.create_dataset("a", data=cls.g2a, chunks=(8, 7))
        g.create_group("sub").create_dataset("b", data=cls.g2b, chunks=(5, 5))
        upload_tree(s3, BUCKET, os.path.join(cls.tmp, "g2.zarr"), "g2/g2.zarr")
        s3.put_object(Bucket=BUCKET, Key="g2/g2.zarr/notes/readme.txt", Body=b"not zarr")

    @classmethod
    def tearDownClass(cls):
        stop_for(cls)

    def presign(self, key, expires=600):
        s3 = self.store.client(signature_version="s3v4")
        return s3.generate_presigned_url(
            "get_object", ExpiresIn=expires,
            Params={"Bucket": BUCKET, "Key": key, "ResponseContentDisposition": DOWNLOAD_AS})

    def env(self):
        """No credentials: a presigned URL carries its own."""
        return self.store.env(AWS_ACCESS_KEY_ID="", AWS_SECRET_ACCESS_KEY="")

    def assert_hidden(self, texts, *secrets):
        for t in texts:
            for s in secrets:
                self.assertNotIn(s, t)

    def shown_everywhere(self, m):
        """What a mount shows: its log, .stats.json, status, the mount table."""
        with open("/proc/self/mountinfo") as f:
            table = f.read()
        with open(m.path(".stats.json")) as f:
            stats = f.read()
        st = run("status", m.mp)
        return (table, stats, st.stdout, st.stderr, "\n".join(m.log_lines()), m.stderr)

    def refused(self, source, want):
        mp = self.p("mnt-refused")
        r = run("mount", "--log", self.p("refused.log"), source, mp, env=self.env(), timeout=60)
        self.assertEqual(r.returncode, 1, r.stderr)
        lines = r.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, r.stderr)
        self.assertIn(want, lines[0])
        self.assertFalse(mounted(mp), "something was mounted")
        return lines[0]

    def test_presigned_url(self):
        expiring = self.presign(LONG_KEY, expires=1)
        url = self.presign(LONG_KEY)
        self.assertGreater(len(url), 1500)
        sig = parse_qs(urlsplit(url).query)["X-Amz-Signature"][0]
        shown = url.split("?")[0]
        ref = reference(self.arr)
        with self.mount(url, env=self.env()) as m:
            check_whole(self, m, "p", ref, "float32")
            check_preads(self, m, "p", ref, rows=(0, 200, 388), n_random=10)
            st = m.stats()
            self.assertEqual((st["net_heads"], st["net_failures"]), (1, 0))
            texts = self.shown_everywhere(m)
            self.assertTrue(any(shown in t for t in texts), "the URL is named nowhere")
            self.assert_hidden(texts, sig, SECRET)
        # the same URL as a manifest's source, on one line of its own
        ini = self.write_ini(f"; {'a comment as long as the URL ' * 60}\n"
                             f"[p16]\nsource = {url}   ; presigned\ndtype = bfloat16\n")
        with self.mount(ini, env=self.env()) as m:
            check_whole(self, m, "p16", reference(self.arr, dtype="bfloat16"), "bfloat16")
            self.assert_hidden(self.shown_everywhere(m), sig)
        r = run("info", url, env=self.env())
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("(389, 3, 67) float32", r.stdout)
        self.assert_hidden((r.stdout, r.stderr), sig)
        # the one made to last a second has expired: waited for, as the
        # mounts above may take under a second on a quiet machine
        q = parse_qs(urlsplit(expiring).query)
        signed = calendar.timegm(time.strptime(q["X-Amz-Date"][0], "%Y%m%dT%H%M%SZ"))
        time.sleep(max(0.0, signed + int(q["X-Amz-Expires"][0]) + 1.5 - time.time()))
        line = self.refused(expiring, "the presigned URL expired at")
        self.assertIn("HTTP 403", line)
        self.assert_hidden((line,), parse_qs(urlsplit(expiring).query)["X-Amz-Signature"][0])
        bad = url[:-4] + ("0000" if not url.endswith("0000") else "1111")
        line = self.refused(bad, "signature was refused")
        self.assertTrue(line.startswith(f"dsview: {shown}: "), line)
        self.assertNotIn("X-Amz", line)

    def test_manifest_long_line_not_a_key(self):
        ini = self.write_ini("[x]\n" + "s" * 300 + "\n")
        r = run("mount", ini, self.p("mnt-long"), env=self.env(), timeout=60)
        self.assertEqual(r.returncode, 1)
        self.assertIn(":2: line too long", r.stderr)

    def test_sharded_zarr(self):
        root = os.path.join(self.tmp, "z3")
        for name in ("end_zstd", "start_blosc"):
            ref = reference(np.load(os.path.join(root, name + ".ref.npy")))
            with self.subTest(name=name), self.mount(f"s3://{BUCKET}/z3/{name}.zarr",
                                                     env=self.store.env()) as m:
                check_preads(self, m, name, ref, rows=(0, 17, len(ref) - 1), n_random=10)
                check_whole(self, m, name, ref, "float32")
                st = m.stats()
                self.assertEqual(st["net_failures"], 0)
                self.assertGreater(st["net_gets"], 0)

    def test_sharded_zarr_short_shard(self):
        ref = reference(np.load(os.path.join(self.tmp, "z3", "end_zstd.ref.npy")))
        row = ref[0].nbytes
        with self.mount(f"s3://{BUCKET}/z3/short.zarr", env=self.store.env(),
                        expect_errors=[r"short\.zarr/c/1/0/0.*shorter than its index"]) as m:
            fd = os.open(m.path("short.dat"), os.O_RDONLY)
            try:
                with self.assertRaises(OSError) as e:
                    os.pread(fd, row, 16 * row)  # in shard 1
                self.assertEqual(e.exception.errno, errno.EIO)
            finally:
                os.close(fd)
            self.assertTrue(mounted(m.mp))
            self.assertTrue(any("shorter than its index" in line for line in m.log_lines()),
                            m.log_lines())

    def test_zarr_groups(self):
        root = os.path.join(self.tmp, "z3")
        with self.mount(f"s3://{BUCKET}/z3/grp.zarr", env=self.store.env()) as m:
            check_whole(self, m, "sig", reference(np.load(os.path.join(root, "grp_sig.ref.npy"))),
                        "float32")
            t = np.load(os.path.join(root, "grp_sub_t.ref.npy"))
            check_whole(self, m, "sub/t", reference(t), "float32")
        # one name a listing page: the group's .zgroup and three children
        # in four pages, each after the last by its continuation token (the
        # store does cut a page at one)
        page = self.store.client().list_objects_v2(Bucket=BUCKET, Prefix="g2/g2.zarr/",
                                                   Delimiter="/", MaxKeys=1)
        self.assertTrue(page["IsTruncated"])  # .zgroup fills the first page
        with self.mount(f"s3://{BUCKET}/g2/g2.zarr/",
                        env=self.store.env(DSVIEW_NET_LIST_PAGE="1")) as m:
            check_whole(self, m, "a", reference(self.g2a), "float32")
            check_whole(self, m, "sub/b", reference(self.g2b), "float32")
            self.assertEqual(sorted(os.listdir(m.mp)),
                             [".stats.json", "a.dat", "a.json", "a.npy", "sub"])

    def test_zarr_group_info_and_verify(self):
        root = os.path.join(self.tmp, "z3")
        for url, want in ((f"s3://{BUCKET}/g2/g2.zarr", {"a": self.g2a, "sub/b": self.g2b}),
                          (f"s3://{BUCKET}/z3/grp.zarr/",
                           {n: np.load(os.path.join(root, f"grp_{f}.ref.npy"))
                            for n, f in (("sig", "sig"), ("sub/t", "sub_t"))})):
            with self.subTest(url=url):
                r = run("info", "--json", url, env=self.store.env())
                self.assertEqual(r.returncode, 0, r.stderr)
                info = json.loads(r.stdout)
                self.assertEqual(info["kind"], "zarr-group")
                self.assertEqual({v["name"]: (tuple(v["shape"]), v["sources"][0]["dtype"])
                                  for v in info["views"]},
                                 {n: (a.shape, str(a.dtype)) for n, a in want.items()})
                self.assertEqual({v["name"]: v["nbytes"] for v in info["views"]},
                                 {n: a.size * 4 for n, a in want.items()})
                r = run("info", url, env=self.store.env())
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertIn(f"{url}: Zarr group, 2 arrays\n", r.stdout)
                r = run("verify", url, env=self.store.env())
                self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
                self.assertIn("2 sources", r.stdout)
                self.assertNotIn(SECRET, r.stdout + r.stderr)

    def sharded_1024(self, prefix):
        """A sharded array (zarr-python 3) of 1024 rows of 1 KiB at
        s3://BUCKET/PREFIX/r.zarr: 4 shards of 8 inner chunks of 32 rows;
        its float32 reference."""
        root = os.path.join(self.tmp, prefix)
        venv_python("import sys, numpy as np, zarr\n"
                    "a = np.random.default_rng(7).standard_normal((1024, 256)).astype('<f4')\n"
                    "z = zarr.create_array(sys.argv[1] + '/r.zarr', shape=a.shape, dtype=a.dtype,"
                    " chunks=(32, 256), shards=(256, 256), fill_value=0)\n"
                    "z[...] = a\n"
                    "np.save(sys.argv[1] + '/r.npy', z[...])\n", root)
        upload_tree(self.store.client(), BUCKET, os.path.join(root, "r.zarr"), f"{prefix}/r.zarr")
        return reference(np.load(os.path.join(root, "r.npy")))

    def test_sharded_zarr_runs_of_inner_chunks(self):
        # a band's inner chunks that lie back to back in their shard come
        # by one GET: bands of 256 KiB (a shard's 8 chunks) against bands
        # of one chunk (32 KiB), the same bytes
        ref = self.sharded_1024("runs")
        gets = {}
        for band_kb in ("256", "32"):
            with self.mount(f"s3://{BUCKET}/runs/r.zarr",
                            env=self.store.env(DSVIEW_GRID_BAND_KB=band_kb)) as m:
                check_whole(self, m, "r", ref, "float32")
                check_preads(self, m, "r", ref, rows=(0, 255, 256, 1023), n_random=5)
                st = m.stats()
                self.assertEqual(st["net_failures"], 0)
                gets[band_kb] = st["net_gets"]
        # the same metadata and 4 shard indexes; 4 runs against 32 chunks
        # (28 fewer GETs, give or take a chunk two readers fetched at once)
        self.assertGreaterEqual(gets["32"] - gets["256"], 20, gets)

    def test_sharded_zarr_shard_replaced(self):
        # shards of 8 inner chunks of 32 rows of 1 KiB, each chunk a band
        # of its own (DSVIEW_GRID_BAND_KB): a read of one page fetches one
        # inner chunk, under the ETag its shard's index was read with
        # (If-Match)
        ref, row = self.sharded_1024("rep"), 1024
        env = self.store.env(DSVIEW_GRID_BAND_KB="32")
        with self.mount(f"s3://{BUCKET}/rep/r.zarr", env=env, expect_errors=[
                r"rep/r\.zarr/c/0/0.*the object changed since it was first read"]) as m:
            fd = os.open(m.path("r.dat"), os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
                self.assertEqual(os.pread(fd, row, 0), ref[0].tobytes())  # shard 0's index
                # shard 0 replaced by other bytes of the same layout (shard 1's)
                s3 = self.store.client()
                other = s3.get_object(Bucket=BUCKET, Key="rep/r.zarr/c/1/0")["Body"].read()
                s3.put_object(Bucket=BUCKET, Key="rep/r.zarr/c/0/0", Body=other)
                for r in (100, 255):  # inner chunks of shard 0 not read yet
                    with self.assertRaises(OSError) as e:
                        os.pread(fd, row, r * row)
                    self.assertEqual(e.exception.errno, errno.EIO)
                for r in (256, 700, 1023):  # the other shards as they were
                    self.assertEqual(os.pread(fd, row, r * row), ref[r].tobytes(), f"row {r}")
            finally:
                os.close(fd)
            self.assertTrue(mounted(m.mp))
            self.assertTrue(any("rep/r.zarr/c/0/0" in line and "changed since" in line
                                for line in m.log_lines()), m.log_lines())
            self.assertGreater(m.stats()["net_failures"], 0)

    def test_zarr_group_over_https_refused(self):
        # a group needs a listing, which an https server has none of: one
        # line at mount and info; an array of the same group at the same
        # server mounts
        server = http.server.ThreadingHTTPServer(
            ("127.0.0.1", 0), functools.partial(QuietFiles, directory=self.tmp))
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(self.store.ca, self.store.key)
        server.socket = ctx.wrap_socket(server.socket, server_side=True)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            url = f"https://127.0.0.1:{server.server_address[1]}/g2.zarr"
            env = self.store.env(AWS_CA_BUNDLE=self.store.ca)
            want = "only s3:// prefixes can be listed"
            r = run("mount", url, self.p("mnt-https-g"), env=env, timeout=60)
            self.assertEqual(r.returncode, 1, r.stderr)
            self.assertEqual(r.stderr.strip().splitlines(), [f"dsview: {url}: {want} "
                                                             "(a group needs a listing)"])
            self.assertFalse(mounted(self.p("mnt-https-g")))
            r = run("info", url, env=env)
            self.assertEqual(r.returncode, 1, r.stderr)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
            self.assertIn(want, r.stderr)
            with self.mount(url + "/a", env=env) as m:
                check_whole(self, m, "a", reference(self.g2a), "float32")
        finally:
            server.shutdown()
            server.server_close()

    def test_zarr_group_refused(self):
        # wrong credentials: the listing (or the probe before it) refused
        r = run("mount", f"s3://{BUCKET}/g2/g2.zarr", self.p("mnt-g"),
                env=self.store.env(AWS_SECRET_ACCESS_KEY="not-the-key"), timeout=60)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("HTTP 403", r.stderr)
        self.assertNotIn("not-the-key", r.stderr)

    def test_settings_from_manifest_and_options(self):
        s3 = f"http://127.0.0.1:{self.store.ports['s3']}"
        virtual = f"http://localhost:{self.store.ports['s3']}"
        creds = self.p("credentials")
        with open(creds, "w") as f:
            f.write(f"[tester]\naws_access_key_id = {KEY_ID}\n"
                    f"aws_secret_access_key = {SECRET}\n")
        # nothing usable in the environment: a dead endpoint, no keys
        env = self.store.env(AWS_ENDPOINT_URL="http://127.0.0.1:9", AWS_ACCESS_KEY_ID="",
                             AWS_SECRET_ACCESS_KEY="", AWS_SHARED_CREDENTIALS_FILE=creds)
        ref = reference(self.arr)
        ini = self.write_ini(f"[dsview]\ns3_endpoint = {virtual}\ns3_region = us-east-1\n"
                             f"s3_profile = tester\ns3_addressing = virtual\n"
                             f"[p]\nsource = s3://{BUCKET}/{LONG_KEY}\n", "settings.ini")
        with self.mount(ini, env=env) as m:
            check_whole(self, m, "p", ref, "float32")
        # -o wins: the manifest's endpoint is dead
        ini2 = self.write_ini(f"[dsview]\ns3_endpoint = http://127.0.0.1:9\n"
                              f"s3_profile = tester\n"
                              f"[p]\nsource = s3://{BUCKET}/{LONG_KEY}\n", "settings2.ini")
        with self.mount(ini2, "-o", f"s3_endpoint={s3},s3_addressing=path", env=env) as m:
            check_whole(self, m, "p", ref, "float32")
            with open("/proc/self/mountinfo") as f:
                self.assertNotIn("s3_endpoint", f.read())  # never a FUSE option
        # zero-config, the profile named on the command line
        with self.mount(f"s3://{BUCKET}/{LONG_KEY}", "-o",
                        f"s3_endpoint={virtual},s3_profile=tester", env=env) as m:
            check_whole(self, m, "p", ref, "float32")

    def test_settings_refused(self):
        bad = self.write_ini(f"[dsview]\naws_secret_access_key = {SECRET}\n"
                             f"[p]\nsource = s3://{BUCKET}/x.npy\n", "secret.ini")
        for args, want in (([bad], "credentials are never read from a manifest"),
                           ([f"s3://{BUCKET}/x.npy", "-o", "s3_addressing=sideways"],
                            "s3_addressing must be path, virtual or auto"),
                           ([f"s3://{BUCKET}/x.npy", "-o", "s3_colour=red"],
                            "unknown object-storage setting 's3_colour'")):
            with self.subTest(args=args):
                r = run("mount", *args, self.p("mnt-set"), env=self.store.env(), timeout=60)
                self.assertEqual(r.returncode, 1, r.stderr)
                self.assertIn(want, r.stderr)
                self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
                self.assertNotIn(SECRET, r.stderr)
