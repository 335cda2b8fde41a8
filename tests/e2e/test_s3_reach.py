"""Object storage beyond s3:// keys, against a real server (SeaweedFS,
objstore.py): presigned https URLs (made by boto3's
generate_presigned_url, as users make them) mounted from the command line
and from a manifest line of over 1,500 characters, every byte checked; an
expired and a tampered URL each refused at mount with one clear line; the
signature absent from every output."""
import io
import os
from urllib.parse import parse_qs, urlsplit

import numpy as np

from common import E2E, check_preads, check_whole, mounted, run
from objstore import SECRET, start_for, stop_for
from refs import reference

BUCKET = "dsview-reach"
# a key near S3's 1,024-byte limit: with a download name its presigned
# URL passes 1,500 characters
LONG_KEY = "presigned/" + "/".join(f"{i:02d}" + "d" * 48 for i in range(19)) + "/p.npy"
DOWNLOAD_AS = 'attachment; filename="' + "p" * 160 + '.npy"'


def npy_bytes(a):
    b = io.BytesIO()
    np.save(b, a)
    return b.getvalue()


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
        # the one made to last a second has expired by now (the mounts
        # above took longer)
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
