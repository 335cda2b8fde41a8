"""NumPy .npz archives written by numpy's own np.savez (stored members,
zip64 local headers) and np.savez_compressed (deflated members), served
through real mounts: each stored member a view of a zero-config mount,
`x.npz:member` as a manifest source, info, verify, pack of deflated
members, and every damaged archive refused naming the file and the field
while the good archive beside it still mounts."""
import json
import os
import struct

import numpy as np

from common import E2E, check_preads, check_whole, read_all, refused_at, run
from refs import int_reference, round_out

RNG = np.random.default_rng(4242)


def members():
    return {
        "tokens": RNG.integers(0, 50257, 3000, dtype=np.int32),
        "img": RNG.integers(0, 255, (6, 7, 3), dtype=np.uint8),
        "feat": RNG.standard_normal((40, 9)),  # float64
        "lab": RNG.integers(-5, 5, (40,), dtype=np.int16),
    }


class NpzTest(E2E):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.m = members()
        np.savez(os.path.join(cls.tmp, "a.npz"), **cls.m)
        np.savez_compressed(os.path.join(cls.tmp, "c.npz"), **cls.m)
        with open(os.path.join(cls.tmp, "a.npz"), "rb") as f:
            cls.raw = f.read()

    def test_zero_config_every_member(self):
        with self.mount(self.p("a.npz")) as m:
            for name, a in self.m.items():
                with self.subTest(member=name):
                    meta = check_whole(self, m, name, round_out(a.astype(np.float64), "float32"),
                                       "float32")
                    src = meta["sources"][0]
                    self.assertEqual((src["kind"], src["dtype"]), ("npy", a.dtype.name))
            check_preads(self, m, "feat", round_out(self.m["feat"], "float32"), rows=(0, 39))

    def test_directory_with_a_deflated_archive(self):
        """In a directory mount the stored archive's members are served
        under a.npz's directory; the deflated archive's are skipped,
        naming dsview pack."""
        with self.mount(self.tmp) as m:
            check_whole(self, m, "a.npz/lab", round_out(self.m["lab"].astype(np.float64), "float32"),
                        "float32")
            skipped = json.loads(read_all(m.path(".skipped.json")))
            got = {e["path"]: e["reason"] for e in skipped if e["path"].startswith("c.npz")}
            self.assertEqual(len(got), 4, skipped)
            for reason in got.values():
                self.assertIn("dsview pack", reason)
                self.assertIn("deflated", reason)

    def test_manifest_member_spec_integer_output_and_windows(self):
        ini = ("[tok]\nsource = a.npz:tokens\ndtype = int32\nwindow = 129\nstride = 128\n\n"
               "[lab]\nsource = a.npz:/lab\ndtype = int16\n")
        with self.mount(self.write_ini(ini)) as m:
            t = self.m["tokens"]
            n = (len(t) - 129) // 128 + 1
            want = np.stack([t[i * 128:i * 128 + 129] for i in range(n)])
            check_whole(self, m, "tok", want, "int32")
            check_whole(self, m, "lab", int_reference(self.m["lab"], "int16"), "int16")

    def test_info_verify(self):
        r = run("info", "--json", self.p("a.npz") + ":img")
        self.assertEqual(r.returncode, 0, r.stderr)
        src = json.loads(r.stdout)["source"]
        self.assertEqual((src["dtype"], src["shape"]), ("uint8", [6, 7, 3]))
        r = run("info", self.p("a.npz"))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(".npz, 4 arrays", r.stdout)
        r = run("verify", self.p("a.npz"))
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("4 datasets", r.stdout)
        r = run("verify", self.p("c.npz"))
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("dsview pack", r.stdout + r.stderr)

    def test_pack_deflated_and_stored(self):
        out = self.p("packed")
        os.makedirs(out, exist_ok=True)
        for spec, store in (("c.npz:feat", "cf.h5"), ("a.npz:tokens", "at.h5"),
                            ("c.npz:img", "ci.h5")):
            r = run("pack", self.p(spec), os.path.join(out, store))
            self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(sorted(os.listdir(out)), ["at.h5", "cf.h5", "ci.h5"])  # no temporaries
        with self.mount(os.path.join(out, "cf.h5")) as m:
            check_whole(self, m, "c", round_out(self.m["feat"], "float32"), "float32")
        with self.mount(os.path.join(out, "ci.h5")) as m:
            check_whole(self, m, "c", round_out(self.m["img"].astype(np.float64), "float32"),
                        "float32")
        # a deflated member whose stream is damaged: one line, nothing left
        c = bytearray(open(self.p("c.npz"), "rb").read())
        at = c.index(b"feat.npy") + len(b"feat.npy") + 20 + 40  # inside its deflate stream
        c[at:at + 16] = b"\xff" * 16
        with open(self.p("bad_c.npz"), "wb") as f:
            f.write(c)
        r = run("pack", self.p("bad_c.npz") + ":feat", os.path.join(out, "x.h5"))
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("bad_c.npz", r.stderr)
        self.assertEqual(sorted(os.listdir(out)), ["at.h5", "cf.h5", "ci.h5"])

    def put(self, name, data):
        with open(self.p(name), "wb") as f:
            f.write(data)
        return self.p(name)

    def test_refused(self):
        raw = self.raw
        eocd = raw.rindex(b"PK\x05\x06")
        loc = raw.index(b"PK\x03\x04")
        refused_at(self, "[v]\nsource = c.npz:feat\n", 2,
                   ["c.npz", "feat", "deflated", "c.npz:feat OUT.h5"])
        refused_at(self, "[v]\nsource = a.npz:nope\n", 2, ["a.npz", "no member nope.npy"])
        self.refused(self.put("noeocd.npz", raw[:eocd]), want=["noeocd.npz",
                                                               "end of central directory"])
        cut = bytearray(raw)
        cut[eocd + 16:eocd + 20] = struct.pack("<I", len(raw) - 10)  # central directory offset
        self.refused(self.put("cdoff.npz", bytes(cut)), want=["cdoff.npz", "central directory"])
        cd = raw.index(b"PK\x01\x02")
        self.refused(self.put("short.npz", raw[:cd - 100] + raw[cd:]),
                     want=["short.npz", "central directory lies past the end"])
        # a damaged member (its local header, its .npy header) is skipped
        # with the reason; the archive's other members are served
        first = next(iter(self.m))
        for name, at, value, why in (("local.npz", loc, b"PK\x09\x09", "local header"),
                                     ("npy.npz", raw.index(b"\x93NUMPY"), b"NOTNPY",
                                      "bad magic")):
            bad = bytearray(raw)
            bad[at:at + len(value)] = value
            with self.mount(self.put(name, bytes(bad))) as m:
                skipped = json.loads(read_all(m.path(".skipped.json")))
                self.assertEqual([e["path"] for e in skipped], [f"/{first}"])
                self.assertIn(why, skipped[0]["reason"])
                check_whole(self, m, "lab",
                            round_out(self.m["lab"].astype(np.float64), "float32"), "float32")
            # named in a manifest, the damaged member fails the mount
            refused_at(self, f"[v]\nsource = {name}:{first}\n", 2, [name, why])
        # the good archive beside them still mounts, exactly
        with self.mount(self.p("a.npz")) as m:
            check_whole(self, m, "lab", round_out(self.m["lab"].astype(np.float64), "float32"),
                        "float32")


if __name__ == "__main__":
    import unittest
    unittest.main()
