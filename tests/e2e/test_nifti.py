"""NIfTI-1 and NIfTI-2 images written by Debian's python3-nibabel, served
through real mounts and compared with what nibabel reads: every dtype
nibabel writes, 3-D and 4-D, scl_slope/scl_inter set and unset. The view
is nibabel's array with its axes reversed (a 4-D (X, Y, Z, T) image is
(T, Z, Y, X): each volume one row), its values get_fdata()'s rounded once.
Also: directories of images, manifests (scaling of the image and of the
view, per-image scaling across a glob), info, verify, pack (of a .nii and
of a .nii.gz), and the files dsview refuses."""
import json
import os
import shutil

import nibabel as nib
import numpy as np

from common import E2E, check_preads, check_whole, mm_npy, read_all, run
from refs import round_out, same_bits

RNG = np.random.default_rng(29)

DTYPES = ["uint8", "int8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
          "float32", "float64"]


def data_of(dtype, shape):
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return (RNG.standard_normal(shape) * 100).astype(dt)
    info = np.iinfo(dt)
    # within 2^40: float64 holds them exactly, so get_fdata() is exact
    lo, hi = max(info.min, -2**40), min(info.max, 2**40)
    return RNG.integers(lo, hi, shape, dtype=dt, endpoint=True)


def write(path, data, version=1, slope=None, inter=None):
    cls = nib.Nifti1Image if version == 1 else nib.Nifti2Image
    img = cls(data, np.eye(4), dtype=data.dtype)
    if slope is not None:
        img.header.set_slope_inter(slope, inter)
    nib.save(img, path)
    return path


def want_of(path, dtype="float32"):
    """What the view must serve: nibabel's get_fdata() (float64), axes
    reversed, rounded once to the output type."""
    return round_out(np.asarray(nib.load(path).get_fdata()).T, dtype)


class NiftiTest(E2E):
    def test_every_dtype_both_versions(self):
        d = self.p("imgs")
        os.mkdir(d)
        names = []
        for version in (1, 2):
            for dt in DTYPES:
                shape = (7, 6, 5, 4) if dt != "uint8" else (9, 8, 7)  # 4-D and 3-D
                names.append(f"n{version}_{dt}")
                write(os.path.join(d, names[-1] + ".nii"), data_of(dt, shape), version)
        with self.mount(d) as m:
            for name in names:
                want = want_of(os.path.join(d, name + ".nii"))
                meta = check_whole(self, m, name, want, "float32")
                self.assertEqual(meta["sources"][0]["kind"], "nifti", name)
                self.assertNotIn("scaling", meta["sources"][0], name)
            check_preads(self, m, "n2_int16", want_of(os.path.join(d, "n2_int16.nii")),
                         rows=(1, 2))
            self.assertEqual(mm_npy(m.path("n1_uint8.npy")).shape, (7, 8, 9))
            self.assertEqual(mm_npy(m.path("n1_int16.npy")).shape, (4, 5, 6, 7))

    def test_scaling(self):
        """scl_slope/scl_inter, as nibabel writes them on integer and float
        images of either version; a slope of 0 means none."""
        cases = {
            "i16": (data_of("int16", (10, 9, 8, 6)), 1, 0.0123, -7.5),
            "u8": (data_of("uint8", (6, 7, 8)), 2, 1 / 255, 0.0),
            "i32_n2": (data_of("int32", (5, 5, 5, 3)), 2, 3.25e-4, 100.0),
            "f32": (data_of("float32", (4, 5, 6, 2)), 1, 2.0, -1.0),
        }
        for name, (a, version, slope, inter) in cases.items():
            write(self.p(name + ".nii"), a, version, slope, inter)
        # slope 0 in the header: no scaling (nibabel writes 1/0 or NaN; patch it)
        path = write(self.p("zero.nii"), data_of("int16", (4, 4, 4, 2)), 1, 3.0, 5.0)
        with open(path, "r+b") as f:
            f.seek(112)
            f.write(np.float32(0).tobytes())
        for name in list(cases) + ["zero"]:
            img = nib.load(self.p(name + ".nii"))
            with self.mount(self.p(name + ".nii")) as m:
                meta = check_whole(self, m, name, want_of(self.p(name + ".nii")), "float32")
                if name == "zero":
                    self.assertEqual((img.dataobj.slope, img.dataobj.inter), (1.0, 0.0))
                    self.assertNotIn("scaling", meta["sources"][0])
                    continue
                # nibabel moves the header's pair into its array proxy on load
                self.assertEqual(meta["sources"][0]["scaling"],
                                 {"scale": float(img.dataobj.slope),
                                  "offset": float(img.dataobj.inter)}, name)
            # bfloat16 too: the same float64 values, rounded once
            with self.mount(self.p(name + ".nii"), "--dtype", "bfloat16") as m:
                check_whole(self, m, name, want_of(self.p(name + ".nii"), "bfloat16"),
                            "bfloat16")

    def test_manifest_scale_and_glob(self):
        """A view's scale/offset apply after the image's own; a glob of
        images with different scalings keeps each one's."""
        a = data_of("int16", (6, 5, 4, 3))
        write(self.p("s1.nii"), a, 1, 0.5, 10.0)
        write(self.p("s2.nii"), a, 1, 0.25, -2.0)
        write(self.p("s3.nii"), a, 1)
        ini = self.write_ini(f"[v]\nsource = {self.p('s*.nii')}\nscale = 2\noffset = 1\n")
        want = np.concatenate([
            round_out(np.asarray(nib.load(self.p(f"s{i}.nii")).get_fdata()).T * 2 + 1,
                      "float32") for i in (1, 2, 3)])
        with self.mount(ini) as m:
            meta = check_whole(self, m, "v", want, "float32")
            self.assertEqual([s.get("scaling") for s in meta["sources"]],
                             [{"scale": 0.5, "offset": 10.0}, {"scale": 0.25, "offset": -2.0},
                              None])
        # an integer view of an unscaled image: the stored values exactly
        ini = self.write_ini(f"[raw]\nsource = {self.p('s3.nii')}\ndtype = int16\n", "i.ini")
        with self.mount(ini) as m:
            got = mm_npy(m.path("raw.npy"))
            self.assertTrue(same_bits(got, np.asarray(nib.load(self.p("s3.nii")).dataobj).T))
        # ... and of a scaled one: refused, naming the image and its scaling
        ini = self.write_ini(f"[raw]\nsource = {self.p('s1.nii')}\ndtype = int16\n", "j.ini")
        self.refused(ini, want=["j.ini", "integer output (int16) takes no scaling",
                                "s1.nii", "x * 0.5 + 10"])

    def test_directory_skips_gz(self):
        """A directory mount serves its .nii images and lists a .nii.gz in
        /.skipped.json with the way to convert it."""
        d = self.p("dir")
        os.mkdir(d)
        write(os.path.join(d, "a.nii"), data_of("float32", (5, 4, 3, 2)), 1)
        write(os.path.join(d, "b.nii.gz"), data_of("float32", (5, 4, 3, 2)), 2)
        np.save(os.path.join(d, "c.npy"), np.arange(12, dtype=np.float32).reshape(3, 4))
        with self.mount(d) as m:
            check_whole(self, m, "a", want_of(os.path.join(d, "a.nii")), "float32")
            check_whole(self, m, "c", np.arange(12, dtype=np.float32).reshape(3, 4), "float32")
            self.assertFalse(os.path.exists(m.path("b.npy")))
            got = json.loads(read_all(m.path(".skipped.json")))
            self.assertEqual([e["path"] for e in got], ["b.nii.gz"])
            self.assertIn("dsview pack", got[0]["reason"])

    def test_info_verify(self):
        path = write(self.p("x.nii"), data_of("int16", (8, 7, 6, 5)), 2, 0.5, 1.0)
        r = run("info", "--json", path)
        self.assertEqual(r.returncode, 0, r.stderr)
        info = json.loads(r.stdout)
        self.assertEqual(info["kind"], "nifti")
        src = info["source"]
        self.assertEqual((src["kind"], src["dtype"], src["shape"]), ("nifti", "int16", [5, 6, 7, 8]))
        self.assertEqual((src["scale"], src["offset"]), (0.5, 1.0))
        self.assertEqual(src["data_bytes"], 8 * 7 * 6 * 5 * 2)
        r = run("info", path)
        self.assertIn("x * 0.5 + 1", r.stdout)
        r = run("verify", path)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("OK", r.stdout)

    def test_pack(self):
        """pack of a .nii and of a .nii.gz: the store serves the image's
        values (its scaling recorded in the store), and nothing is left
        beside it."""
        a = data_of("int16", (9, 8, 7, 6))
        write(self.p("img.nii"), a, 1, 0.125, 3.0)
        write(self.p("img.nii.gz"), a, 2, 0.125, 3.0)
        want = want_of(self.p("img.nii"))
        out = self.p("out")
        os.mkdir(out)
        for src, store in ((self.p("img.nii"), "a.h5"), (self.p("img.nii.gz"), "b.h5")):
            r = run("pack", src, os.path.join(out, store))
            self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(sorted(os.listdir(out)), ["a.h5", "b.h5"])
        for store in ("a", "b"):
            with self.mount(os.path.join(out, store + ".h5")) as m:
                check_whole(self, m, "img", want, "float32")
            r = run("info", "--json", os.path.join(out, store + ".h5"))
            ds = json.loads(r.stdout)["datasets"][0]
            self.assertEqual(ds["store"]["source_kind"], "nifti")
            self.assertEqual((ds["store"]["scale"], ds["store"]["offset"]), (0.125, 3.0))
        # a damaged .nii.gz: one line, nothing written
        with open(self.p("img.nii.gz"), "rb") as f:
            gz = f.read()
        with open(self.p("cut.nii.gz"), "wb") as f:
            f.write(gz[:len(gz) // 2])
        r = run("pack", self.p("cut.nii.gz"), os.path.join(out, "c.h5"))
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("cut.nii.gz", r.stderr)
        self.assertEqual(sorted(os.listdir(out)), ["a.h5", "b.h5"])

    def test_refused(self):
        a = data_of("int16", (4, 5, 6, 3))
        path = write(self.p("ok.nii"), a, 1)
        raw = open(path, "rb").read()
        write(self.p("x.nii.gz"), a, 1)
        self.refused(self.p("x.nii.gz"), want=["gzipped NIfTI", "dsview pack"])

        def bad(name, at, value, *want):
            b = bytearray(raw)
            b[at:at + len(value)] = value
            with open(self.p(name), "wb") as f:
                f.write(b)
            self.refused(self.p(name), want=[name, *want])

        bad("magic.nii", 344, b"n+2\0", "bad magic")
        bad("pair.nii", 344, b"ni1\0", "two-file")
        bad("size.nii", 0, np.int32(349).tobytes(), "sizeof_hdr")
        bad("dim0.nii", 40, np.int16(9).tobytes(), "dim[0]")
        bad("dimneg.nii", 42, np.int16(-4).tobytes(), "dim[1]")
        bad("type.nii", 70, np.int16(3).tobytes(), "datatype 3")
        bad("cplx.nii", 70, np.int16(32).tobytes(), "complex64")
        bad("bitpix.nii", 72, np.int16(32).tobytes(), "bitpix 32")
        bad("voxoff.nii", 108, np.float32(100).tobytes(), "vox_offset")
        bad("voxfrac.nii", 108, np.float32(352.5).tobytes(), "vox_offset")
        bad("inter.nii", 112, np.float32(2).tobytes() + np.float32(np.inf).tobytes(),
            "scl_inter")
        with open(self.p("short.nii"), "wb") as f:
            f.write(raw[:-1])
        self.refused(self.p("short.nii"), want=["short.nii", "declares"])
        with open(self.p("hdr.nii"), "wb") as f:
            f.write(raw[:200])
        self.refused(self.p("hdr.nii"), want=["hdr.nii", "truncated NIfTI header"])
        hdr = nib.Nifti1Header(endianness=">")
        nib.save(nib.Nifti1Image(a, np.eye(4), hdr), self.p("be.nii"))
        self.refused(self.p("be.nii"), want=["be.nii", "big-endian"])
        # the good image beside them still mounts, exactly
        with self.mount(path) as m:
            check_whole(self, m, "ok", want_of(path), "float32")
        shutil.rmtree(self.p("mnt-refused"), ignore_errors=True)


if __name__ == "__main__":
    import unittest
    unittest.main()
