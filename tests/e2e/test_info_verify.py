"""dsview info and dsview verify.

info: every kind of PATH (.npy, raw, an HDF5 file with contiguous, LZ4 +
Fletcher32, gzip, row-splitting and refused datasets, one dataset of it, a
store, a manifest), in text and as JSON checked exactly against h5py; and
the errors (one stderr line, exit 1).

verify: good stores pass; damaged ones (a flipped byte under Fletcher32, a
broken LZ4 frame, a cut file, several bad chunks in two datasets) report
exactly the bad chunks, sorted, whatever the thread count; gzip goes
through the library; a manifest checks every source once; a dataset dsview
refuses counts as a failure."""
import json
import os
import pty
import re
import select
import shutil
import struct

import h5py
import hdf5plugin
import numpy as np

from common import DSVIEW, E2E, flip_byte, run

ROWS = 50  # rows per chunk of the stores here


def small_values(shape, seed=0, dtype=np.uint8):
    """Compressible but not trivial: LZ4 and gzip both shrink it."""
    return np.random.default_rng(seed).integers(0, 8, shape).astype(dtype)


def write_store(path, x, name="data", fletcher32=True, attr=True):
    """A store as pack writes it, made with h5py: chunks of whole rows,
    LZ4 then Fletcher32, the dsview JSON attribute."""
    meta = {"format": "dsview-store", "format_version": 1, "dsview_version": "0.1.0",
            "source": "x.npy", "source_kind": "npy", "dtype": str(x.dtype), "shape": list(x.shape),
            "codec": "lz4", "level": 1, "chunk_rows": ROWS,
            "chunk_bytes": ROWS * x[0].nbytes, "raw_bytes": x.nbytes, "fletcher32": fletcher32}
    with h5py.File(path, "a") as f:
        d = f.create_dataset(name, data=x, chunks=(ROWS,) + x.shape[1:], fletcher32=fletcher32,
                             **hdf5plugin.LZ4())
        if attr:
            d.attrs["dsview"] = json.dumps(meta)
    return meta


def chunk_at(path, name, k):
    """(file offset, stored size) of chunk k (rows k*chunk_rows ...)."""
    with h5py.File(path, "r") as f:
        d = f[name]
        info = d.id.get_chunk_info_by_coord((k * d.chunks[0],) + (0,) * (d.ndim - 1))
        return info.byte_offset, info.size


def patch(path, off, data):
    with open(path, "r+b") as f:
        f.seek(off)
        f.write(data)


class Info(E2E):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        p = lambda n: os.path.join(cls.tmp, n)  # noqa: E731
        cls.x = small_values((1000, 64, 32))
        np.save(p("x.npy"), cls.x)
        cls.x.tofile(p("x.bin"))
        cls.inner = small_values((10, 5), 1, np.int16)
        with open(p("ext.bin"), "wb") as f:
            f.write(bytes(100))
        with h5py.File(p("f.h5"), "w") as f:
            f.create_dataset("contig", data=cls.x)
            f.create_dataset("lz4", data=cls.x, chunks=(ROWS, 64, 32), fletcher32=True,
                             **hdf5plugin.LZ4())
            # scaleoffset before gzip: the library's to decode (gzip alone
            # is dsview's own: test_h5gzip.py)
            f.create_dataset("gz", data=cls.x, chunks=(100, 64, 32), compression="gzip",
                             scaleoffset=0)
            f.create_dataset("split", data=cls.x, chunks=(100, 32, 32))
            f.create_dataset("grp/inner", data=cls.inner)
            f.create_dataset("ext", shape=(100,), dtype="u1", external=[(p("ext.bin"), 0, 100)])
            f.create_dataset("words", data=np.array([b"ab", b"cd"]))
        cls.meta = write_store(p("store.h5"), cls.x[:300])
        cls.a = small_values((400, 16, 3), 2)
        np.save(p("a.npy"), cls.a)
        write_store(p("b.h5"), small_values((150, 16, 3), 3))
        with open(p("m.ini"), "w") as f:
            f.write("[train]\nsource = a.npy\nsource = b.h5:/data\nscale = 0.25\n"
                    "mean = 0.5 0.4 0.3\nstd = 0.2 0.2 0.25\n"
                    "[val]\nsource = f.h5:/gz\ndtype = bfloat16\nclip = -1 1\n")

    def info(self, *args, rc=0):
        r = run("info", *args)
        self.assertEqual(r.returncode, rc, f"info {args}: {r.stdout}{r.stderr}")
        if rc == 0:
            self.assertEqual(r.stderr, "")
        return r

    def info_json(self, *args):
        return json.loads(self.info("--json", *args).stdout)

    def check_source(self, s, kind, shape, dtype, data_bytes):
        self.assertEqual(s["kind"], kind)
        self.assertEqual(s["shape"], list(shape))
        self.assertEqual(s["dtype"], dtype)
        self.assertEqual(s["data_bytes"], data_bytes)
        # a file that holds its elements as one run has no chunks of its own:
        # nchunks and chunk_* are dsview's readahead units (about 1 MiB)
        self.assertEqual(s["flat"], kind in ("npy", "raw", "nifti", "hdf5-contiguous"), kind)
        self.assertEqual(s["nchunks"], -(-int(np.prod(shape)) // s["chunk_elems"]))
        if s["chunk_rows"] is not None:
            self.assertEqual(s["chunk_rows"] * int(np.prod(shape[1:])), s["chunk_elems"])

    def test_npy(self):
        out = self.info(self.p("x.npy")).stdout
        for want in ("npy", "(1000, 64, 32) uint8", "2.05 MB in a"):
            self.assertIn(want, out)
        # its chunks are dsview's readahead units, not the file's: not shown
        self.assertNotIn("chunk", out)
        j = self.info_json(self.p("x.npy"))
        self.assertEqual(j["kind"], "npy")
        self.assertEqual(j["path"], self.p("x.npy"))
        self.assertEqual(j["file_bytes"], os.path.getsize(self.p("x.npy")))
        self.check_source(j["source"], "npy", self.x.shape, "uint8", self.x.nbytes)
        self.assertIsNone(j["source"]["dataset"])

    def test_formats_by_their_bytes(self):
        # a name no format claims: the file's first bytes say its format
        with open(self.p("x.data"), "wb") as f:
            np.save(f, self.x)
        j = self.info_json(self.p("x.data"))
        self.assertEqual(j["kind"], "npy")
        self.check_source(j["source"], "npy", self.x.shape, "uint8", self.x.nbytes)
        shutil.copyfile(self.p("f.h5"), self.p("f.data"))
        j = self.info_json(self.p("f.data") + ":/gz")
        self.assertEqual(j["kind"], "hdf5")
        r = self.info(self.p("x.bin"), rc=1)
        self.assertIn("not a manifest (.ini), a .npy, a NIfTI image (.nii), an HDF5 file (.h5), "
                      "a .npz, an Arrow IPC file (.arrow), a Zarr array or group, an EDF or BDF "
                      "recording (.edf, .bdf), an EEGLAB dataset (.set), a BrainVision header "
                      "(.vhdr), an llm.c .bin, a Megatron .idx, or a LitData directory (index.json); a raw file "
                      "needs --source-dtype and --source-shape", r.stderr)

    def test_raw(self):
        for shape in ("-1,64,32", "1000,64,32"):
            j = self.info_json("--source-dtype", "uint8", "--source-shape", shape, self.p("x.bin"))
            self.assertEqual(j["kind"], "raw")
            self.check_source(j["source"], "raw", self.x.shape, "uint8", self.x.nbytes)
        # int16 view of the same bytes: half the rows
        j = self.info_json("--source-dtype", "int16", "--source-shape", "-1,32,32", self.p("x.bin"))
        self.check_source(j["source"], "raw", (1000, 32, 32), "int16", self.x.nbytes)
        out = self.info(self.p("x.bin"), "--source-dtype", "uint8", "--source-shape", "-1,64,32").stdout
        self.assertIn("raw", out)
        self.assertIn("(1000, 64, 32) uint8", out)
        self.assertNotIn("chunk", out)

    def test_hdf5_file(self):
        r = self.info(self.p("f.h5"))
        out = r.stdout
        blocks = {b.split("\n")[0].split()[0]: b for b in re.split(r"\n(?=/)", out)[1:]}
        self.assertNotIn("  chunks ", blocks["/contig"])  # contiguous: flat in the file
        self.assertIn("  chunks     20 chunks of 50 rows", blocks["/lz4"])
        for want in ("7 datasets", "/contig", "/lz4", "/gz", "/split", "/grp/inner", "/ext",
                     "/words", "contiguous", "chunks of (50, 64, 32)", "lz4 + fletcher32",
                     "deflate", "fast path", "library fallback", "chunks split rows",
                     "refused: external storage refused", "unsupported element type string",
                     "(10, 5) int16"):
            self.assertIn(want, out)
        j = self.info_json(self.p("f.h5"))
        self.assertEqual(j["kind"], "hdf5")
        self.assertEqual(j["file_bytes"], os.path.getsize(self.p("f.h5")))
        ds = {d["name"]: d for d in j["datasets"]}
        self.assertEqual(sorted(ds), ["/contig", "/ext", "/grp/inner", "/gz", "/lz4", "/split",
                                      "/words"])
        with h5py.File(self.p("f.h5"), "r") as f:
            for name, d in ds.items():
                h = f[name]
                with self.subTest(name=name):
                    self.assertEqual(d["shape"], list(h.shape))
                    self.assertEqual(d["element_bytes"], h.dtype.itemsize)
                    self.assertEqual(d["raw_bytes"], h.size * h.dtype.itemsize)
                    self.assertEqual(d["stored_bytes"], h.id.get_storage_size())
                    self.assertEqual(d["chunk_shape"], list(h.chunks) if h.chunks else None)
                    if h.chunks:
                        self.assertEqual(d["chunks_written"], h.id.get_num_chunks())
                    if d["stored_bytes"]:
                        self.assertAlmostEqual(d["ratio"], d["raw_bytes"] / d["stored_bytes"])
                    self.assertIsNone(d["store"])
        c, l, g, s = ds["/contig"], ds["/lz4"], ds["/gz"], ds["/split"]
        self.assertEqual((c["layout"], c["filters"], c["serve"], c["type"]),
                         ("contiguous", [], "fast-path", "uint8"))
        self.check_source(c["source"], "hdf5-contiguous", self.x.shape, "uint8", self.x.nbytes)
        self.assertEqual(l["layout"], "chunked")
        self.assertEqual([(f["id"], f["name"]) for f in l["filters"]], [(32004, "lz4"), (3, "fletcher32")])
        self.assertEqual(l["serve"], "fast-path")
        self.check_source(l["source"], "hdf5-chunked", self.x.shape, "uint8", self.x.nbytes)
        self.assertEqual((l["source"]["nchunks"], l["source"]["chunk_rows"]), (20, ROWS))
        self.assertEqual(l["source"]["stored_bytes"], l["stored_bytes"])
        self.assertLess(l["stored_bytes"], l["raw_bytes"])
        self.assertEqual([f["name"] for f in g["filters"]], ["scaleoffset", "deflate"])
        self.assertEqual(g["filters"][1]["cd"][0], 4)  # h5py's default gzip level
        self.assertEqual(g["serve"], "library-fallback")
        self.assertIn("deflate", g["why"])
        self.assertEqual(g["source"]["kind"], "hdf5-library")
        # chunks that split rows are read through the N-d grid
        self.assertEqual((s["serve"], s["why"]), ("fast-path", "chunks split rows: bands of 100 rows"))
        self.check_source(s["source"], "hdf5-chunked", self.x.shape, "uint8", self.x.nbytes)
        self.assertEqual(ds["/grp/inner"]["type"], "int16")
        self.check_source(ds["/grp/inner"]["source"], "hdf5-contiguous", (10, 5), "int16",
                          self.inner.nbytes)
        e = ds["/ext"]
        self.assertEqual((e["serve"], e["source"], e["external_files"]), ("refused", None, 1))
        self.assertIn("external storage refused", e["why"])
        self.assertEqual(ds["/words"]["serve"], "refused")
        self.assertIn("string", ds["/words"]["type"])
        t = j["totals"]
        self.assertEqual((t["datasets"], t["fast_path"], t["library_fallback"], t["refused"]),
                         (7, 4, 1, 2))
        self.assertEqual(t["raw_bytes"], sum(d["raw_bytes"] for d in ds.values()))
        self.assertEqual(t["stored_bytes"], sum(d["stored_bytes"] for d in ds.values()))

    def test_one_dataset(self):
        j = self.info_json(self.p("f.h5") + ":/grp/inner")
        self.assertEqual([d["name"] for d in j["datasets"]], ["/grp/inner"])
        self.assertEqual(j["path"], self.p("f.h5"))
        out = self.info(self.p("f.h5") + ":/lz4").stdout
        self.assertIn("/lz4", out)
        self.assertNotIn("/contig", out)
        # a refused dataset named alone is still described, exit 0
        j = self.info_json(self.p("f.h5") + ":/ext")
        self.assertEqual(j["datasets"][0]["serve"], "refused")

    def test_store(self):
        out = self.info(self.p("store.h5")).stdout
        for want in ("dsview store", "lz4 level 1", "50 rows per chunk", "packed from x.npy",
                     "fletcher32", "dsview 0.1.0", "ratio"):
            self.assertIn(want, out)
        j = self.info_json(self.p("store.h5"))
        (d,) = j["datasets"]
        self.assertEqual(d["store"], self.meta)
        with h5py.File(self.p("store.h5"), "r") as f:
            stored = f["data"].id.get_storage_size()
        self.assertEqual(d["stored_bytes"], stored)
        self.assertEqual(d["raw_bytes"], 300 * 64 * 32)
        self.assertAlmostEqual(d["ratio"], 300 * 64 * 32 / stored)
        self.assertEqual(d["serve"], "fast-path")
        self.assertEqual(d["source"]["nchunks"], 6)

    def test_manifest(self):
        out = self.info(self.p("m.ini")).stdout
        for want in ("2 views", "[train]", "[val]", "(550, 16, 3) float32", "(1000, 64, 32) bfloat16",
                     "mean [0.5, 0.4, 0.3]", "clip [-1, 1]", "scale 0.25", "rows 400-549",
                     "hdf5-library", "total:"):
            self.assertIn(want, out)
        j = self.info_json(self.p("m.ini"))
        self.assertEqual(j["kind"], "manifest")
        train, val = j["views"]
        self.assertEqual((train["name"], train["shape"], train["dtype"], train["nbytes"]),
                         ("train", [550, 16, 3], "float32", 550 * 48 * 4))
        self.assertEqual((val["name"], val["shape"], val["dtype"], val["nbytes"]),
                         ("val", [1000, 64, 32], "bfloat16", self.x.size * 2))
        self.assertEqual([s["rows"] for s in train["sources"]], [[0, 400], [400, 550]])
        self.assertEqual([s["kind"] for s in train["sources"]], ["npy", "hdf5-chunked"])
        self.assertEqual(train["sources"][1]["dataset"], "/data")
        self.assertEqual(train["transform"], {"scale": 0.25, "offset": 0.0, "mean": [0.5, 0.4, 0.3],
                                              "std": [0.2, 0.2, 0.25], "channel_axis": -1,
                                              "clip": None, "per_source": False})
        self.assertEqual(val["transform"]["clip"], [-1.0, 1.0])
        self.assertIsNone(val["transform"]["mean"])
        with h5py.File(self.p("b.h5"), "r") as f:
            b_stored = f["data"].id.get_storage_size()
        with h5py.File(self.p("f.h5"), "r") as f:
            gz_stored = f["gz"].id.get_storage_size()
        self.assertEqual(train["stored_bytes"], self.a.nbytes + b_stored)
        self.assertEqual(val["stored_bytes"], gz_stored)
        self.assertEqual(j["totals"], {"views": 2, "virtual_bytes": train["nbytes"] + val["nbytes"],
                                       "stored_bytes": self.a.nbytes + b_stored + gz_stored})

    def test_errors(self):
        cases = [
            ((self.p("nope.h5"),), "nope.h5", "No such file"),
            ((self.p("nope.npy"),), "nope.npy", "No such file"),
            ((self.p("x.bin"),), "x.bin", "--source-dtype and --source-shape"),
            (("--source-dtype", "uint8", self.p("x.bin")), "x.bin", "--source-shape"),
            (("--source-dtype", "uint8", "--source-shape", "-1,7,7", self.p("x.bin")), "x.bin",
             "whole number"),
            (("--source-dtype", "uint8", "--source-shape", "7,0", self.p("x.bin")),
             "--source-shape '7,0'", "must be positive integers like"),
            ((self.p("f.h5") + ":/nope",), "f.h5", "no such dataset"),
            ((self.p("f.h5") + ":/grp",), "f.h5", "not a dataset"),
            ((self.p("x.npy") + ":/x",), "x.npy", "not an HDF5 file"),
        ]
        with open(self.p("bad.ini"), "w") as f:
            f.write("[v]\nsource = a.npy\ncolour = red\n")
        cases.append(((self.p("bad.ini"),), "bad.ini:3", "unknown key"))
        with open(self.p("bad_shape.ini"), "w") as f:  # one grammar, one wording, as --shape
            f.write("[v]\nsource = x.bin\nsource_dtype = uint8\nsource_shape = 7,0\n")
        cases.append(((self.p("bad_shape.ini"),), "bad_shape.ini:4",
                      "source_shape '7,0' must be positive integers like"))
        with open(self.p("missing.ini"), "w") as f:
            f.write("[v]\nsource = gone.npy\n")
        cases.append(((self.p("missing.ini"),), "gone.npy", "No such file"))
        for args, name, reason in cases:
            for js in ((), ("--json",)):
                with self.subTest(args=args, json=bool(js)):
                    r = self.info(*js, *args, rc=1)
                    self.assertEqual(r.stdout, "")
                    lines = r.stderr.strip().splitlines()
                    self.assertEqual(len(lines), 1, r.stderr)
                    self.assertTrue(lines[0].startswith("dsview: "), lines[0])
                    self.assertIn(name, lines[0])
                    self.assertIn(reason, lines[0])
        self.assertEqual(run("info", "--help").returncode, 0)
        self.assertIn("JSON schema", run("info", "--help").stdout)

    def test_external_link_refused(self):
        with h5py.File(self.p("linker.h5"), "w") as f:
            f["x"] = h5py.ExternalLink(self.p("f.h5"), "/contig")
            f.create_dataset("own", data=np.zeros(3, np.uint8))
        r = self.info(self.p("linker.h5") + ":/x", rc=1)
        self.assertIn("external link refused", r.stderr)
        # the whole file lists only what is in it
        j = self.info_json(self.p("linker.h5"))
        self.assertEqual([d["name"] for d in j["datasets"]], ["/own"])


class Verify(E2E):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.x = small_values((1000, 64, 32), 5)

    def verify(self, *args, rc=0):
        r = run("verify", *args)
        self.assertEqual(r.returncode, rc, f"verify {args}: {r.stdout}{r.stderr}")
        return r

    def store(self, name, **kw):
        path = self.p(name)
        if os.path.exists(path):
            os.unlink(path)
        write_store(path, self.x, **kw)
        return path

    def bad_lines(self, r):
        """The report without the summary line (the last)."""
        lines = r.stdout.strip().splitlines()
        return lines[:-1], lines[-1]

    def test_good_store(self):
        path = self.store("good.h5")
        r = self.verify(path)
        bad, summary = self.bad_lines(r)
        self.assertEqual(bad, [])
        self.assertEqual(r.stderr, "")
        self.assertTrue(summary.endswith(": OK"), summary)
        for want in ("1 dataset,", "20 chunks", "2.05 MB decoded", "GB/s"):
            self.assertIn(want, summary)
        self.assertIn("1 thread)", self.verify("--threads", "1", path).stdout)
        r = self.verify(path + ":/data", "--threads", "3")
        self.assertIn("3 threads", r.stdout)

    def test_checksum_mismatch(self):
        path = self.store("flip.h5")
        off, size = chunk_at(path, "data", 3)
        flip_byte(path, off + size // 2)
        r = self.verify(path, rc=1)
        bad, summary = self.bad_lines(r)
        self.assertEqual(len(bad), 1, r.stdout)
        self.assertTrue(bad[0].startswith(f"{path}:/data: chunk 3, rows 150-199 ({size} bytes "
                                          f"at offset {off})"), bad[0])
        self.assertIn("Fletcher32 checksum mismatch", bad[0])
        self.assertTrue(summary.endswith(": 1 bad chunk"), summary)

    def test_lz4_corrupt_without_fletcher32(self):
        path = self.store("nofl.h5", fletcher32=False)
        off2, _ = chunk_at(path, "data", 2)
        off5, size5 = chunk_at(path, "data", 5)
        patch(path, off2 + 8, struct.pack(">I", 16))  # block size: 16 bytes
        patch(path, off5 + 12, struct.pack(">I", 4 * size5))  # a block longer than the chunk
        r = self.verify(path, rc=1)
        bad, summary = self.bad_lines(r)
        self.assertEqual(len(bad), 2, r.stdout)
        self.assertIn(":/data: chunk 2, rows 100-149", bad[0])
        self.assertIn(":/data: chunk 5, rows 250-299", bad[1])
        for line in bad:
            self.assertIn("LZ4 data corrupt or decodes to the wrong size", line)
        self.assertIn("2 bad chunks", summary)

    def test_cut_file(self):
        """HDF5 will not open a file shorter than its superblock records,
        so a cut store fails as a whole: exit 1, one line that says so."""
        path = self.store("cut.h5")
        off, size = chunk_at(path, "data", 19)
        self.assertEqual(off + size, os.path.getsize(path), "the last chunk ends the file")
        os.truncate(path, off + size // 2)
        r = self.verify(path, rc=1)
        self.assertEqual(r.stdout, "")
        lines = r.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, r.stderr)
        self.assertTrue(lines[0].startswith(f"dsview: {path}: truncated"), lines[0])
        # every opener says the same: one dataset, info, a mount
        for args in (("verify", path + ":/data"), ("info", path)):
            r = run(*args)
            self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
            self.assertTrue(r.stderr.startswith(f"dsview: {path}: truncated"), r.stderr)
        self.refused(path, want=[f"{path}: truncated"])
        # a cut .npy: its header declares more than the file holds
        np.save(self.p("cut.npy"), self.x)
        os.truncate(self.p("cut.npy"), os.path.getsize(self.p("cut.npy")) - 1000)
        r = self.verify(self.p("cut.npy"), rc=1)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        self.assertIn("cut.npy", r.stderr)

    def test_many_bad_chunks_sorted(self):
        path = self.store("many.h5")
        write_store(path, self.x[:500], name="b_other")
        damage = [("data", 17), ("b_other", 4), ("data", 2), ("data", 9), ("b_other", 0)]
        for name, k in damage:
            off, size = chunk_at(path, name, k)
            flip_byte(path, off + size - 10)
        want = [f"{path}:/b_other: chunk 0,", f"{path}:/b_other: chunk 4,",
                f"{path}:/data: chunk 2,", f"{path}:/data: chunk 9,", f"{path}:/data: chunk 17,"]
        outs = []
        for threads in ("1", "2", "7"):
            r = self.verify("--threads", threads, path, rc=1)
            bad, summary = self.bad_lines(r)
            self.assertEqual([l[:len(w)] for l, w in zip(bad, want)], want, r.stdout)
            self.assertEqual(len(bad), 5)
            self.assertIn("2 datasets, 30 chunks", summary)
            self.assertTrue(summary.endswith(": 5 bad chunks"), summary)
            outs.append(bad)
        self.assertEqual(outs[0], outs[1])
        self.assertEqual(outs[0], outs[2])

    def test_gzip_through_library(self):
        path = self.p("gz.h5")
        with h5py.File(path, "w") as f:
            # gzip, shuffle after it, Fletcher32: the library's pipeline
            # (h5py's order is dsview's own: test_h5gzip.py)
            dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
            dcpl.set_chunk((100, 64, 32))
            dcpl.set_deflate(4)
            dcpl.set_shuffle()
            dcpl.set_fletcher32()
            h5py.Dataset(h5py.h5d.create(f.id, b"gz", h5py.h5t.STD_U8LE,
                                         h5py.h5s.create_simple(self.x.shape), dcpl=dcpl))[...] = self.x
            f.create_dataset("split", data=self.x[:200], chunks=(20, 32, 32))
        r = self.verify(path)
        self.assertTrue(r.stdout.strip().endswith(": OK"), r.stdout)
        self.assertIn("2 datasets", r.stdout)
        # a damaged gzip chunk: the library fails it, and verify says where
        off, size = chunk_at(path, "gz", 6)
        flip_byte(path, off + size // 2)
        r = self.verify(path, rc=1)
        bad, summary = self.bad_lines(r)
        self.assertEqual(len(bad), 1, r.stdout)
        self.assertIn(f"{path}:/gz: chunk", bad[0])
        self.assertIn("HDF5 library", bad[0])

    def test_manifest(self):
        a = small_values((300, 16, 3), 8)
        np.save(self.p("ma.npy"), a)
        write_store(self.p("mb.h5"), small_values((120, 16, 3), 9))
        with h5py.File(self.p("mc.h5"), "w") as f:
            f.create_dataset("gz", data=a, chunks=(30, 16, 3), compression="gzip")
        ini = self.p("mv.ini")
        with open(ini, "w") as f:
            # ma.npy in both views: checked once
            f.write("[one]\nsource = ma.npy\nsource = mb.h5:/data\n"
                    "[two]\nsource = mc.h5:/gz\nsource = ma.npy\n")
        r = self.verify(ini)
        self.assertTrue(r.stdout.strip().endswith(": OK"), r.stdout)
        # 1 + 3 (mb: 50 rows each) + 10 (mc: its own gzip chunks)
        self.assertIn("3 sources, 14 chunks", r.stdout)
        off, size = chunk_at(self.p("mb.h5"), "data", 1)
        flip_byte(self.p("mb.h5"), off + 7)
        r = self.verify(ini, rc=1)
        bad, _ = self.bad_lines(r)
        self.assertEqual(len(bad), 1, r.stdout)
        self.assertTrue(bad[0].startswith(self.p("mb.h5") + ":/data: chunk 1, rows 50-99"), bad[0])

    def test_refused_dataset_is_not_checked(self):
        """exit 3: nothing damaged, but a dataset could not be checked; 1
        as soon as a chunk is bad as well."""
        path = self.p("refused.h5")
        with open(self.p("ext.bin"), "wb") as f:
            f.write(bytes(64))
        with h5py.File(path, "w") as f:
            f.create_dataset("ext", shape=(64,), dtype="u1", external=[(self.p("ext.bin"), 0, 64)])
            f.create_dataset("ok", data=self.x[:10])
        r = self.verify(path, rc=3)
        bad, summary = self.bad_lines(r)
        self.assertEqual(len(bad), 1, r.stdout)
        self.assertTrue(bad[0].startswith(f"{path}:/ext: not checked: external storage refused"),
                        bad[0])
        self.assertIn(": 1 of 2 datasets, 1 chunk,", summary)
        self.assertTrue(summary.endswith(": 1 dataset not checked"), summary)
        with h5py.File(path, "a") as f:
            f.create_dataset("sum", data=self.x[:10], chunks=(5,) + self.x.shape[1:],
                             fletcher32=True)
        off, _ = chunk_at(path, "sum", 1)
        flip_byte(path, off + 3)
        r = self.verify(path, rc=1)
        _, summary = self.bad_lines(r)
        self.assertTrue(summary.endswith(": 1 bad chunk, 1 dataset not checked"), summary)

    def test_npy(self):
        np.save(self.p("v.npy"), self.x)
        r = self.verify(self.p("v.npy"))
        self.assertTrue(r.stdout.strip().endswith(": OK"), r.stdout)
        self.assertIn("1 source,", r.stdout)

    def test_errors(self):
        np.save(self.p("e.npy"), self.x[:2])
        with open(self.p("e.bin"), "wb") as f:
            f.write(bytes(10))
        cases = [((self.p("nope.h5"),), "nope.h5"), ((self.p("e.bin"),), "e.bin"),
                 ((self.p("nope.h5") + ":/x",), "nope.h5"),
                 (("--threads", "0", self.p("e.npy")), "--threads")]
        for args, name in cases:
            with self.subTest(args=args):
                r = self.verify(*args, rc=1)
                lines = r.stderr.strip().splitlines()
                self.assertEqual(len(lines), 1, r.stderr)
                self.assertTrue(lines[0].startswith("dsview: "), lines[0])
                self.assertIn(name, lines[0])
        path = self.store("named.h5")
        r = self.verify(path + ":/missing", rc=1)
        self.assertIn("no such dataset", r.stderr)
        self.assertEqual(run("verify", "--help").returncode, 0)

    def test_progress_bar_on_a_terminal(self):
        path = self.store("tty.h5")
        pid, fd = pty.fork()
        if pid == 0:
            os.execv(DSVIEW, [DSVIEW, "verify", path])
        out = b""
        while True:
            try:
                ready, _, _ = select.select([fd], [], [], 30)
                data = os.read(fd, 4096) if ready else b""
            except OSError:
                data = b""
            if not data:
                break
            out += data
        _, status = os.waitpid(pid, 0)
        os.close(fd)
        self.assertEqual(os.waitstatus_to_exitcode(status), 0, out)
        text = out.decode()
        self.assertIn("verify [", text)
        self.assertIn("chunks", text)
        # the bar is erased before the summary, which is the last line
        self.assertIn("\r\033[K", text)
        self.assertTrue(text.rstrip().split("\r\033[K")[-1].strip().endswith(": OK"), text)

    def test_pack_made_store(self):
        if run("pack", "--help").returncode != 0:
            self.skipTest("dsview pack is not built yet")
        np.save(self.p("pk.npy"), self.x)
        out = self.p("pk.h5")
        r = run("pack", "--force", "--chunk-size", "64k", self.p("pk.npy"), out)
        self.assertEqual(r.returncode, 0, r.stderr)
        r = self.verify(out)
        self.assertTrue(r.stdout.strip().endswith(": OK"), r.stdout)
        j = json.loads(run("info", "--json", out).stdout)
        (d,) = j["datasets"]
        self.assertEqual(d["store"]["format"], "dsview-store")
        self.assertEqual(d["serve"], "fast-path")
        off, size = chunk_at(out, d["name"], 5)
        flip_byte(out, off + size // 3)
        r = self.verify(out, rc=1)
        bad, _ = self.bad_lines(r)
        self.assertEqual(len(bad), 1, r.stdout)
        self.assertIn(f":{d['name']}: chunk 5,", bad[0])
        self.assertIn("checksum", bad[0])
