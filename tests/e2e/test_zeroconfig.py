"""Zero-config mounts of the HDF5 files users already have: every dataset
that can be served is, the rest are listed in /.skipped.json with the
reason, names that are not view names are mapped (view_name), --strict
keeps all-or-nothing."""
import json
import os
import re

import h5py
import numpy as np

from common import E2E, mm_npy, read_all, run, same_bits, view_name
from refs import reference

SERVED_TYPES = ("dsview serves integers of 1 to 8 bytes, enum and bitfield as their integer, "
                "float16, float32, float64")


class ZeroConfigPartial(E2E):
    def mixed(self, name="mixed.h5"):
        """A file of servable, unservable and oddly named datasets; returns
        its path, {hdf5 path: array} of the servable ones and {hdf5 path:
        (kind, reason)} of the rest."""
        served = {
            "/u8": (np.arange(600, dtype=np.int64) % 251).astype(np.uint8).reshape(60, 10),
            "/grp/f32": np.linspace(-3, 3, 400, dtype=np.float32).reshape(40, 10),
            "/grp/sub/i16": np.arange(-50, 50, dtype=np.int16),
            "/my data": np.arange(30, dtype=np.float32).reshape(10, 3),
            "/.hidden": np.ones((4, 4), np.float64),
            "/a/b c": np.arange(12, dtype=np.uint16).reshape(3, 4),
            "/\u00e9": np.arange(5, dtype=np.float32),
            "/x_y_xz": np.arange(6, dtype=np.uint8),
        }
        skipped = {
            "/str": ("string", "unsupported element type string (" + SERVED_TYPES + ")"),
            "/grp/table": ("compound", "unsupported element type compound (" + SERVED_TYPES + ")"),
            "/vlen": ("variable-length",
                      "unsupported element type variable-length (" + SERVED_TYPES + ")"),
            "/scalar": ("scalar", "scalar datasets are not supported"),
        }
        path = self.p(name)
        with h5py.File(path, "w") as f:
            for k, v in served.items():
                f[k] = v
            f["str"] = np.array([b"abc", b"de"])
            f["grp"].create_dataset("table", data=np.zeros(5, dtype=[("a", "<i4"), ("b", "<f8")]))
            f.create_dataset("vlen", (3,), dtype=h5py.vlen_dtype(np.int32))
            f["scalar"] = 3.5
            f["grp"].attrs["note"] = "attributes are not datasets"
            # a dataset's attributes go into its V.json as they are
            f["u8"].attrs["units"] = "counts"
            f["u8"].attrs["rate_hz"] = np.float32(250.0)
            f["u8"].attrs["subjects"] = np.array([1, 2, 7], np.int64)
            f["u8"].attrs["huge"] = np.uint64(2**64 - 1)
            f["u8"].attrs["nan"] = np.nan
            f["u8"].attrs["table"] = np.zeros(2, dtype=[("a", "<i4")])  # passed over
        return path, served, skipped

    def test_serves_what_it_can_and_lists_the_rest(self):
        path, served, skipped = self.mixed()
        with self.mount(path) as m:
            lines = m.stderr.strip().splitlines()
            self.assertEqual(lines, [f"dsview: served {len(served)} of {len(served) + len(skipped)} "
                                     f"datasets of {path}; 4 skipped: 1 compound, 1 scalar, 1 string, "
                                     f"1 variable-length (see {m.mp}/.skipped.json)"])
            for h5path, x in served.items():
                name = "/".join(view_name(p) for p in h5path[1:].split("/"))
                with self.subTest(name=name):
                    self.assertTrue(re.fullmatch(r"[A-Za-z0-9_/][A-Za-z0-9_./-]*", name), name)
                    self.assertTrue(same_bits(mm_npy(m.path(name + ".npy")), reference(x)))
                    meta = json.loads(read_all(m.path(name + ".json")))
                    self.assertEqual(meta["hdf5_path"], h5path)
                    self.assertEqual(meta["shape"], list(x.shape))
            # the names of the rule in docs/manifest.md, spelled out
            for want in ("my_x20data.npy", "_x2Ehidden.npy", "a/b_x20c.npy", "_xC3_xA9.npy",
                         "x_y_x5Fxz.npy"):
                self.assertTrue(os.path.exists(m.path(want)), want)
            meta = json.loads(read_all(m.path("u8.json")))
            self.assertEqual(meta["attrs"], {"huge": float(2**64 - 1), "nan": None,
                                             "rate_hz": 250.0, "subjects": [1, 2, 7],
                                             "units": "counts"})
            self.assertEqual(meta["sources"][0]["attrs"], meta["attrs"])
            self.assertNotIn("attrs", json.loads(read_all(m.path("grp/f32.json"))))
            got = json.loads(read_all(m.path(".skipped.json")))
            self.assertEqual({e["path"]: (e["kind"], e["reason"]) for e in got}, skipped)
            # a scalar dataset is metadata: its value is given
            self.assertEqual([e.get("value") for e in got if e["path"] == "/scalar"], [3.5])
            self.assertEqual(len(got), len(skipped))
            self.assertEqual(os.stat(m.path(".skipped.json")).st_size,
                             len(read_all(m.path(".skipped.json"))))
            self.assertEqual(m.stats()["views"], len(served))
            log = "\n".join(m.log_lines())
            self.assertIn("4 of 12 datasets skipped: 1 compound, 1 scalar, 1 string, "
                          "1 variable-length", log)

    def test_strict_refuses_the_file(self):
        path, _, _ = self.mixed()
        self.refused(path, "--strict", want=[f"{path}:/grp/table: unsupported element type compound"])

    def test_strict_with_a_manifest_is_a_usage_error(self):
        np.save(self.p("a.npy"), np.zeros((4, 4), np.uint8))
        ini = self.write_ini(f"[a]\nsource = {self.p('a.npy')}\n")
        self.refused(ini, "--strict", want="--strict applies to a .npy/.h5 SOURCE")

    def test_nothing_servable_fails_with_the_reasons(self):
        path = self.p("none.h5")
        with h5py.File(path, "w") as f:
            f["str"] = np.array([b"abc"])
            f["scalar"] = np.float32(1)
        line = self.refused(path, want=[f"{path}: no dataset can be served (2 skipped: 1 scalar, "
                                        "1 string): /scalar: scalar datasets are not supported; "
                                        "/str: unsupported element type string"])
        self.assertNotIn("\n", line)
        # one dataset: its own message, as before
        with h5py.File(path, "w") as f:
            f["str"] = np.array([b"abc"])
        self.refused(path, want=[f"{path}:/str: unsupported element type string"])

    def test_no_skipped_file_when_nothing_is_skipped(self):
        path = self.p("clean.h5")
        with h5py.File(path, "w") as f:
            f["x"] = np.zeros((4, 4), np.float32)
        with self.mount(path) as m:
            self.assertEqual(sorted(os.listdir(m.mp)), [".stats.json", "x.dat", "x.json", "x.npy"])
            self.assertEqual(m.stderr, "")
            self.assertEqual(json.loads(read_all(m.path("x.json")))["hdf5_path"], "/x")

    def test_info_and_skipped_agree(self):
        path, served, skipped = self.mixed()
        r = run("info", "--json", path)
        self.assertEqual(r.returncode, 0, r.stderr)
        refused = {d["name"] for d in json.loads(r.stdout)["datasets"] if d["serve"] == "refused"}
        with self.mount(path) as m:
            listed = {e["path"] for e in json.loads(read_all(m.path(".skipped.json")))}
        self.assertEqual(refused, listed)
        self.assertEqual(listed, set(skipped))

    def test_damaged_object_is_skipped_with_the_library_reason(self):
        path = self.p("damaged.h5")
        a = np.arange(20, dtype=np.uint8).reshape(2, 10)
        with h5py.File(path, "w") as f:
            f["a"] = a
            f["b"] = np.ones((2, 10), np.float32)
            f.create_group("g")["c"] = a
            f.create_group("h")["d"] = a
        with h5py.File(path, "r") as f:
            b_at = h5py.h5o.get_info(f["b"].id).addr
            h_at = h5py.h5o.get_info(f["h"].id).addr
        with open(path, "r+b") as f:  # object header versions nobody knows
            for at in (b_at, h_at):
                f.seek(at)
                f.write(b"\xff\xff\xff\xff")
        with self.mount(path) as m:
            self.assertTrue(same_bits(mm_npy(m.path("a.npy")), reference(a)))
            self.assertTrue(same_bits(mm_npy(m.path("g/c.npy")), reference(a)))
            got = json.loads(read_all(m.path(".skipped.json")))
            self.assertEqual([(e["path"], e["kind"]) for e in got],
                             [("/b", "unreadable"), ("/h", "unreadable")])
            for e in got:
                self.assertEqual(e["reason"], "cannot open object (bad object header version number)")
            self.assertIn("2 skipped: 2 unreadable", m.stderr)
        r = run("info", "--json", path)
        refused = {d["name"]: d["why"] for d in json.loads(r.stdout)["datasets"]
                   if d["serve"] == "refused"}
        self.assertEqual(refused, {e["path"]: e["reason"] for e in got})
        self.refused(path, "--strict", want=[f"{path}:/b: cannot open object (bad object header "
                                             "version number)"])


class Directory(E2E):
    def test_mount_a_directory(self):
        # every .npy and HDF5 file of a directory (not its subdirectories),
        # each HDF5 file a directory of its datasets; what cannot be served
        # is skipped, whole files included
        d = self.p("data")
        os.makedirs(os.path.join(d, "sub"))
        a = np.arange(40, dtype=np.int16).reshape(10, 4)
        b = (np.arange(60, dtype=np.int64) % 200).astype(np.uint8).reshape(20, 3)
        np.save(os.path.join(d, "a.npy"), a)
        np.save(os.path.join(d, "sub", "deeper.npy"), a)
        with h5py.File(os.path.join(d, "run 2.h5"), "w") as f:
            f.create_group("g")["b"] = b
            f["s"] = "text"
        with h5py.File(os.path.join(d, "run10.h5"), "w") as f:
            f["b"] = b[::-1].copy()
        with open(os.path.join(d, "broken.h5"), "wb") as f:
            f.write(b"not an hdf5 file at all" * 10)
        with open(os.path.join(d, "notes.txt"), "w") as f:
            f.write("ignored")
        long = "x" * 201 + ".npy"  # too long once mapped: skipped by name
        np.save(os.path.join(d, long), a)
        with self.mount(d) as m:
            names = []
            for root, _, files in os.walk(m.mp):
                names += [os.path.relpath(os.path.join(root, n), m.mp) for n in files]
            self.assertEqual(sorted(n for n in names if n.endswith(".npy")),
                             ["a.npy", "run10.h5/b.npy", "run_x202.h5/g/b.npy"])
            self.assertTrue(same_bits(mm_npy(m.path("a.npy")), reference(a)))
            self.assertTrue(same_bits(mm_npy(m.path("run_x202.h5/g/b.npy")), reference(b)))
            self.assertTrue(same_bits(mm_npy(m.path("run10.h5/b.npy")), reference(b[::-1])))
            with open(m.path(".skipped.json")) as f:
                skipped = {k["path"]: k for k in json.load(f)}
            self.assertEqual(sorted(skipped), ["broken.h5", "run 2.h5:/s", long])
            self.assertEqual(skipped[long]["reason"],
                             "file name is not a valid view name (201 bytes once mapped; at most 200)")
            self.assertIn("not an HDF5 file", skipped["broken.h5"]["reason"])
            self.assertEqual((skipped["run 2.h5:/s"]["kind"], skipped["run 2.h5:/s"]["value"]),
                             ("scalar", "text"))
        # nothing servable: refused with the reasons
        e = self.p("empty")
        os.makedirs(e)
        self.refused(e, want=[e, "no file in it is one dsview reads (a .npy, a NIfTI image (.nii), an HDF5 file (.h5), a .npz, an Arrow IPC file (.arrow), an EDF or BDF recording (.edf, .bdf), an EEGLAB dataset (.set), a BrainVision header (.vhdr), an llm.c .bin, or a Megatron .idx)"])
        with open(os.path.join(e, "bad.h5"), "wb") as f:
            f.write(b"junk" * 100)
        self.refused(e, want=[e, "no dataset can be served", "bad.h5: "])
        self.refused(d, "--strict", want=["broken.h5"])


class Deep(E2E):
    def test_groups_nested_past_the_limit_are_skipped(self):
        # the walk recurses once a level: past 256 levels a group is
        # skipped with the reason, and the rest of the file is served
        path = self.p("deep.h5")
        x = np.arange(12, dtype=np.uint8).reshape(3, 4)
        with h5py.File(path, "w") as f:
            f["top"] = x
            f["/".join(["g"] * 255) + "/ok"] = x  # a dataset at depth 255: served
            f["/".join(["h"] * 300) + "/lost"] = x
        with self.mount(path) as m:
            self.assertTrue(same_bits(mm_npy(m.path("top.npy")), reference(x)))
            self.assertTrue(same_bits(mm_npy(m.path("/".join(["g"] * 255) + "/ok.npy")),
                                      reference(x)))
            got = json.loads(read_all(m.path(".skipped.json")))
            self.assertEqual([(e["path"], e["reason"]) for e in got],
                             [("/" + "/".join(["h"] * 257),
                               "group nested too deep (at most 256 levels)")])
