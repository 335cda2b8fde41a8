"""Zarr sources: v2 arrays written by Debian's python3-zarr with
numcodecs compressors, and v3 arrays written here from the specification
(zarr.json and chunk files encoded with numcodecs), served through a real
mount and compared with numpy: every compressor dsview decodes, C and F
order, both key separators, both byte orders, edge chunks, chunks that
split rows, missing chunks (the fill value), groups, attributes, and the
metadata and chunk files dsview must refuse."""
import errno
import json
import os
import shutil

import numpy as np
import numcodecs
import zarr

from common import E2E, check_preads, check_whole, forked_batches, run
from refs import reference

RNG = np.random.default_rng(19)

# name: (data, zarr.open kwargs)
V2 = {
    "u8_blosc_lz4": (RNG.integers(0, 256, (50, 12, 10), dtype=np.uint8),
                     dict(chunks=(7, 5, 4), compressor=numcodecs.Blosc("lz4", 5, numcodecs.Blosc.SHUFFLE))),
    "i2_be_lz4": (RNG.integers(-30000, 30000, (40, 33)).astype(">i2"),
                  dict(chunks=(16, 10), compressor=numcodecs.LZ4())),
    "f4_F_zstd_slash": (RNG.standard_normal((30, 8, 6)).astype("<f4"),
                        dict(chunks=(4, 8, 6), order="F", compressor=numcodecs.Zstd(3),
                             dimension_separator="/")),
    "f8_zlib": (RNG.standard_normal((20, 9)), dict(chunks=(6, 4), compressor=numcodecs.Zlib(1))),
    "u2_gzip_F": (RNG.integers(0, 65536, (25, 4, 4), dtype=np.uint16),
                  dict(chunks=(5, 2, 3), order="F", compressor=numcodecs.GZip(5))),
    "f2_raw": (RNG.standard_normal((17, 6)).astype(np.float16), dict(chunks=(5, 6), compressor=None)),
    "i4_bitshuffle": (RNG.integers(-2**31, 2**31, (33, 7), dtype=np.int64).astype(np.int32),
                      dict(chunks=(10, 3), compressor=numcodecs.Blosc("zstd", 3,
                                                                      numcodecs.Blosc.BITSHUFFLE))),
    "u1_1d": (RNG.integers(0, 256, 1000, dtype=np.uint8), dict(chunks=(64,), compressor=numcodecs.Zstd())),
    ">f8_blosc": (RNG.standard_normal((9, 5)).astype(">f8"),
                  dict(chunks=(2, 2), compressor=numcodecs.Blosc("blosclz", 9, numcodecs.Blosc.SHUFFLE))),
}


def write_v2(root, name, data, kw, fill=0):
    z = zarr.open(os.path.join(root, name + ".zarr"), mode="w", shape=data.shape,
                  dtype=data.dtype, fill_value=fill, **kw)
    z[...] = data
    return os.path.join(root, name + ".zarr")


def chunk_boxes(shape, chunks):
    grid = [-(-s // c) for s, c in zip(shape, chunks)]
    for idx in np.ndindex(*grid):
        yield idx, tuple(slice(i * c, min((i + 1) * c, s)) for i, c, s in zip(idx, chunks, shape))


def write_v3(path, data, chunks, codec=None, endian="little", fortran=False, key="default",
             sep="/", fill=0, skip=(), attrs=None, dims=None):
    """A v3 array from the spec: transpose (F) -> bytes -> codec, per chunk
    (edge chunks padded with the fill value to the whole chunk shape)."""
    os.makedirs(path)
    dt = {"u": "uint", "i": "int", "f": "float"}[data.dtype.kind] + str(8 * data.dtype.itemsize)
    codecs = []
    if fortran:
        codecs.append({"name": "transpose", "configuration": {"order": list(range(data.ndim))[::-1]}})
    codecs.append({"name": "bytes", "configuration": {"endian": endian}})
    enc = None
    if codec == "zstd":
        codecs.append({"name": "zstd", "configuration": {"level": 3, "checksum": False}})
        enc = numcodecs.Zstd(3)
    elif codec == "gzip":
        codecs.append({"name": "gzip", "configuration": {"level": 5}})
        enc = numcodecs.GZip(5)
    elif codec == "blosc":
        codecs.append({"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5,
                                                          "shuffle": "shuffle",
                                                          "typesize": data.dtype.itemsize,
                                                          "blocksize": 0}})
        enc = numcodecs.Blosc("lz4", 5, numcodecs.Blosc.SHUFFLE)
    meta = {"zarr_format": 3, "node_type": "array", "shape": list(data.shape), "data_type": dt,
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(chunks)}},
            "chunk_key_encoding": {"name": key, "configuration": {"separator": sep}},
            "codecs": codecs, "fill_value": fill}
    if attrs:
        meta["attributes"] = attrs
    if dims is not None:
        meta["dimension_names"] = dims
    with open(os.path.join(path, "zarr.json"), "w") as f:
        json.dump(meta, f)
    bo = "<" if endian == "little" else ">"
    for idx, box in chunk_boxes(data.shape, chunks):
        if idx in skip:
            continue
        c = np.full(chunks, fill, data.dtype.newbyteorder(bo))
        c[tuple(slice(0, b.stop - b.start) for b in box)] = data[box]
        raw = (np.asfortranarray(c) if fortran else c).tobytes(order="F" if fortran else "C")
        name = (["c"] if key == "default" else []) + [str(i) for i in idx]
        p = os.path.join(path, sep.join(name))
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as f:
            f.write(enc.encode(raw) if enc else raw)
    return path


class ZarrV2(E2E):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.src = {}
        for name, (data, kw) in V2.items():
            cls.src[name] = write_v2(cls.tmp, name.replace(">", "be_"), data, kw)

    def manifest(self, names, extra=""):
        text = ""
        for n in names:
            text += f"[{n.replace('>', 'be_')}]\nsource = {self.src[n]}\n{extra}\n"
        return self.write_ini(text)

    def test_every_compressor_order_and_byte_order(self):
        with self.mount(self.manifest(V2)) as m:
            for name, (data, _) in V2.items():
                with self.subTest(name):
                    ref = reference(data.astype(data.dtype.newbyteorder("=")))
                    check_whole(self, m, name.replace(">", "be_"), ref, "float32")
            check_preads(self, m, "u8_blosc_lz4", reference(V2["u8_blosc_lz4"][0]), rows=(7, 14, 49))
            self.assertEqual(m.stats()["errors"], 0)

    def test_forked_readers_and_transform(self):
        x = V2["u8_blosc_lz4"][0]
        ini = self.manifest(["u8_blosc_lz4"], "scale = 0.00392156862745098\nmean = 0.5\nstd = 0.25\n")
        with self.mount(ini, "--cache-size", "0") as m:
            ref = reference(x, scale=1 / 255, mean=[0.5], std=[0.25], axis=-1)
            check_whole(self, m, "u8_blosc_lz4", ref, "float32")
            forked_batches(self, m, "u8_blosc_lz4", ref, workers=4, batches=20)

    def test_integer_view_and_rows(self):
        x = V2["i2_be_lz4"][0].astype(np.int16)
        with self.mount(self.manifest(["i2_be_lz4"], "dtype = int32\nrows = 3:37:5\n")) as m:
            check_whole(self, m, "i2_be_lz4", x[3:37:5].astype(np.int32), "int32")

    def test_missing_chunks_are_the_fill_value(self):
        x = RNG.integers(1, 100, (30, 10), dtype=np.int32)
        for fill, want in ((7, 7), ("NaN", np.nan), (None, 0)):
            with self.subTest(fill=fill):
                dt = np.float32 if fill == "NaN" else np.int32
                name = f"miss_{fill}"
                p = os.path.join(self.tmp, name + ".zarr")
                z = zarr.open(p, mode="w", shape=x.shape, chunks=(8, 4), dtype=dt,
                              fill_value=np.nan if fill == "NaN" else fill,
                              compressor=numcodecs.Zstd())
                z[8:16, :] = x[8:16]
                z[24:, 4:] = x[24:, 4:]
                ref = np.full(x.shape, want, np.float32)
                ref[8:16] = x[8:16]
                ref[24:, 4:] = x[24:, 4:]
                with self.mount(p) as m:
                    check_whole(self, m, name, ref, "float32")

    def test_bands_of_many_chunk_rows(self):
        # small chunk-rows are grouped into bands of about 256 KB: f4 rows
        # of 160 bytes in chunks of (7, 16) make bands of 234 chunk-rows
        # (1638 rows), the second short and ending in a short chunk-row,
        # with chunks missing (the fill value) in both, one an edge chunk;
        # u2 chunks of whole rows (5, 33) are decoded in place into bands
        # of 3970 rows, but the last, one row of a 5-row chunk
        x = RNG.standard_normal((3000, 40)).astype(np.float32)
        p = write_v2(self.tmp, "bands_f4", x, dict(chunks=(7, 16), compressor=numcodecs.Zstd()),
                     fill=7.5)
        ref = x.copy()
        for key, box in (("3.1", np.s_[21:28, 16:32]), ("300.2", np.s_[2100:2107, 32:40]),
                         ("428.0", np.s_[2996:3000, 0:16])):
            os.remove(os.path.join(p, key))
            ref[box] = 7.5
        y = RNG.integers(0, 65536, (9001, 33), dtype=np.uint16)
        q = write_v2(self.tmp, "bands_u2", y, dict(chunks=(5, 33), compressor=numcodecs.LZ4()),
                     fill=3)
        yref = y.astype(np.float32)
        os.remove(os.path.join(q, "1000.0"))
        yref[5000:5005] = 3
        ini = self.write_ini(f"[bands_f4]\nsource = {p}\n[bands_u2]\nsource = {q}\n")
        with self.mount(ini, "--cache-size", "0") as m:
            check_whole(self, m, "bands_f4", ref, "float32")
            check_whole(self, m, "bands_u2", yref, "float32")
            check_preads(self, m, "bands_f4", ref, rows=(1637, 1638, 2996, 2999))
            check_preads(self, m, "bands_u2", yref, rows=(3969, 3970, 5000, 9000))
            forked_batches(self, m, "bands_f4", ref, workers=4, batches=10)
            self.assertEqual(m.stats()["errors"], 0)
        r = run("info", "--json", p)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(json.loads(r.stdout)["source"]["chunk_rows"], 1638)

    def test_zero_config_group_attrs_and_skipped(self):
        p = os.path.join(self.tmp, "grp.zarr")
        g = zarr.open_group(p, mode="w")
        a = RNG.standard_normal((12, 5)).astype(np.float32)
        d = g.create_dataset("eeg", data=a, chunks=(5, 2), compressor=numcodecs.Zstd())
        d.attrs["sfreq"] = 100.0
        d.attrs["ch_names"] = ["Fz", "Cz"]
        sub = g.create_group("sub 1")
        sub.create_dataset("y", data=np.arange(20, dtype=np.uint16).reshape(4, 5), chunks=(3, 5))
        sub.create_dataset("names", data=np.array(["a", "b"]), dtype=str)
        with self.mount(p) as m:
            check_whole(self, m, "eeg", a, "float32")
            meta = check_whole(self, m, "sub_x201/y", np.arange(20, dtype=np.float32).reshape(4, 5),
                               "float32")
            with open(m.path("eeg.json")) as f:
                self.assertEqual(json.load(f)["sources"][0]["attrs"],
                                 {"ch_names": ["Fz", "Cz"], "sfreq": 100.0})
            self.assertIsNotNone(meta)
            with open(m.path(".skipped.json")) as f:
                skipped = json.load(f)
            self.assertEqual([s["path"] for s in skipped], ["sub 1/names"])
            self.assertIn("numeric types only", skipped[0]["reason"])
        # info and verify of the group: its arrays as the mount serves them,
        # the one it cannot serve named with the reason
        r = run("info", "--json", p)
        self.assertEqual(r.returncode, 0, r.stderr)
        info = json.loads(r.stdout)
        self.assertEqual(info["kind"], "zarr-group")
        self.assertEqual([(v["name"], v["shape"], v["dtype"]) for v in info["views"]],
                         [("eeg", [12, 5], "float32"), ("sub_x201/y", [4, 5], "float32")])
        self.assertEqual(info["views"][1]["sources"][0]["dtype"], "uint16")
        self.assertEqual([s["name"] for s in info["skipped"]], ["sub 1/names"])
        r = run("info", p)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("grp.zarr: Zarr group, 2 arrays\n", r.stdout)
        self.assertRegex(r.stdout, r"\[sub 1/names\] not served: .*numeric types only")
        r = run("verify", p)
        self.assertEqual(r.returncode, 3, r.stdout + r.stderr)  # checked, one not checked
        self.assertIn("grp.zarr/sub 1/names: not checked: ", r.stdout)
        self.assertIn("grp.zarr: 2 of 3 sources, ", r.stdout)
        # an array alone is one view named for its directory
        with self.mount(self.src["f8_zlib"]) as m:
            check_whole(self, m, "f8_zlib", reference(V2["f8_zlib"][0]), "float32")

    def test_damaged_chunk_file_fails_only_its_rows(self):
        # chunk-rows of 1000 rows of 64 bytes, grouped four a band (256
        # KB): the damaged chunk 5.1 fails its band, rows 4000-7999, as a
        # whole; a read of part of it is then made chunk-row by chunk-row,
        # so only chunk-row 5, rows 5000-5999, fails
        x = RNG.integers(0, 256, (16000, 64), dtype=np.uint8)
        p = write_v2(self.tmp, "damaged", x, dict(chunks=(1000, 32), compressor=numcodecs.Zstd()))
        with open(os.path.join(p, "5.1"), "r+b") as f:
            f.truncate(5)
        with self.mount(p, expect_errors=[r"chunk file .*damaged\.zarr/5\.1: corrupt"]) as m:
            fd = os.open(m.path("damaged.dat"), os.O_RDONLY)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)  # no readahead into other rows
            try:
                row = 64 * 4
                # (pages of 16 rows: 4980-4989 lie in a page of chunk-row 4 alone)
                for r in (0, 4100, 4980, 6000, 7990, 10500):  # its band's other chunk-rows too
                    self.assertEqual(os.pread(fd, row * 10, row * r),
                                     reference(x[r:r + 10]).tobytes(), f"row {r}")
                for r in (5000, 5200, 5999):
                    with self.assertRaises(OSError) as cm:
                        os.pread(fd, row, row * r)
                    self.assertEqual(cm.exception.errno, errno.EIO)
            finally:
                os.close(fd)
            self.assertGreater(m.stats()["read_errors"], 0)
            self.assertTrue(any("damaged.zarr/5.1" in line for line in m.log_lines()))
        r = run("verify", p)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("rows 5000-5999 (chunk file " + os.path.join(os.path.realpath(p), "5.1"),
                      r.stdout)
        self.assertIn("1 bad chunk", r.stdout)
        r = run("verify", self.src["u8_blosc_lz4"])
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        r = run("info", "--json", self.src["i2_be_lz4"])
        self.assertEqual(r.returncode, 0, r.stderr)
        info = json.loads(r.stdout)
        self.assertEqual(info["kind"], "zarr")
        self.assertEqual(info["source"]["shape"], [40, 33])

    def test_stored_bytes_are_the_chunk_files(self):
        # info's stored_bytes and a mounted V.dat's st_blocks: the sizes of
        # the chunk files there are (a missing one counts 0), keys nested
        # by '/' too; not the metadata, nor files whose names are not keys
        # of the grid (out of it, a leading zero, a stray file or folder)
        x = RNG.integers(0, 1000, (40, 30), dtype=np.int32)
        ini = ""
        for name, sep in (("sb_dot", "."), ("sb_slash", "/")):
            p = write_v2(self.tmp, name, x, dict(chunks=(7, 8), compressor=numcodecs.Zstd(),
                                                 dimension_separator=sep))
            os.remove(os.path.join(p, f"2{sep}1"))
            for junk in ("notes.txt", f"6{sep}0", f"01{sep}1", f"0{sep}4", f"9{sep}9{sep}9",
                         os.path.join("extra", "0.0")):
                os.makedirs(os.path.dirname(os.path.join(p, junk)), exist_ok=True)
                with open(os.path.join(p, junk), "wb") as f:
                    f.write(b"x" * 1000)
            with self.subTest(name):
                self.assertEqual(self.stored_bytes(p), self.chunk_file_bytes(p, x.shape, (7, 8), sep))
            ini += f"[{name}]\nsource = {p}\n[{name}_again]\nsource = {p}\nscale = 2\n"
        q = write_v3(os.path.join(self.tmp, "sb_v3"), x, (7, 8), codec="gzip", skip={(0, 0)})
        self.assertEqual(self.stored_bytes(q), self.chunk_file_bytes(q, x.shape, (7, 8), "/", "c/"))
        with self.mount(self.write_ini(ini + f"[sb_v3]\nsource = {q}\n")) as m:
            for name in ("sb_dot", "sb_slash", "sb_dot_again", "sb_v3"):
                with self.subTest(name):
                    st = os.stat(m.path(name + ".dat"))
                    p = os.path.join(self.tmp, name.replace("_again", "") + ".zarr")
                    want = self.stored_bytes(q if name == "sb_v3" else p)
                    self.assertEqual(st.st_blocks, (want + 511) // 512)
                    self.assertEqual(os.stat(m.path(name + ".npy")).st_blocks, 0)
            ref = x.astype(np.float32)
            ref[14:21, 8:16] = 0  # chunk 2/1, missing
            check_whole(self, m, "sb_slash", ref, "float32")
        # a manifest's totals count the array shared by two views once
        r = run("info", "--json", self.write_ini(ini))
        self.assertEqual(r.returncode, 0, r.stderr)
        views = json.loads(r.stdout)
        dot, slash = (self.stored_bytes(os.path.join(self.tmp, n + ".zarr")) for n in ("sb_dot", "sb_slash"))
        self.assertEqual([v["stored_bytes"] for v in views["views"]], [dot, dot, slash, slash])
        self.assertEqual(views["totals"]["stored_bytes"], dot + slash)
        r = run("info", os.path.join(self.tmp, "sb_dot.zarr"))
        self.assertRegex(r.stdout, rf"data +4\.80 kB in {dot / 1000:.2f} kB of chunk files "
                                   rf"\(ratio {4800 / dot:.2f}\)")

    @staticmethod
    def stored_bytes(path):
        r = run("info", "--json", path)
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout)["source"]["stored_bytes"]

    @staticmethod
    def chunk_file_bytes(path, shape, chunks, sep, prefix=""):
        grid = [-(-s // c) for s, c in zip(shape, chunks)]
        keys = (os.path.join(path, prefix + sep.join(map(str, idx))) for idx in np.ndindex(*grid))
        return sum(os.path.getsize(k) for k in keys if os.path.exists(k))

    def test_xarray_dimension_names(self):
        # v2: the _ARRAY_DIMENSIONS attribute xarray writes names the axes in
        # V.json (each source's, and the view's where its sources agree; a
        # window along axis 0 adds an unnamed axis in front); one that is not
        # one string an axis is passed over, and stays among the attrs
        x = RNG.standard_normal((20, 3)).astype(np.float32)
        paths = {}
        for name, dims in (("xr_a", ["time", "channel"]), ("xr_b", ["time", "channel"]),
                           ("xr_c", ["t", "ch"]), ("xr_short", ["time"]), ("xr_num", ["time", 1])):
            paths[name] = write_v2(self.tmp, name, x, dict(chunks=(8, 3), compressor=numcodecs.Zstd()))
            zarr.open(paths[name], mode="r+").attrs["_ARRAY_DIMENSIONS"] = dims
        ini = self.write_ini(
            f"[one]\nsource = {paths['xr_a']}\n"
            f"[two]\nsource = {paths['xr_a']}\nsource = {paths['xr_b']}\n"
            f"[win]\nsource = {paths['xr_a']}\nwindow = 4\nwindow_axis = 0\n"
            f"[mixed]\nsource = {paths['xr_a']}\nsource = {paths['xr_c']}\n"
            f"[short]\nsource = {paths['xr_short']}\n[num]\nsource = {paths['xr_num']}\n")
        with self.mount(ini) as m:
            check_whole(self, m, "two", np.concatenate([x, x]), "float32")
            meta = {}
            for name in ("one", "two", "win", "mixed", "short", "num"):
                with open(m.path(name + ".json")) as f:
                    meta[name] = json.load(f)
        self.assertEqual(meta["one"]["dimension_names"], ["time", "channel"])
        self.assertEqual(meta["one"]["attrs"]["_ARRAY_DIMENSIONS"], ["time", "channel"])
        self.assertEqual(meta["two"]["dimension_names"], ["time", "channel"])
        self.assertEqual(meta["win"]["dimension_names"], [None, "time", "channel"])
        self.assertNotIn("dimension_names", meta["mixed"])
        self.assertEqual([s["dimension_names"] for s in meta["mixed"]["sources"]],
                         [["time", "channel"], ["t", "ch"]])
        for name, dims in (("short", ["time"]), ("num", ["time", 1])):
            self.assertNotIn("dimension_names", meta[name])
            self.assertNotIn("dimension_names", meta[name]["sources"][0])
            self.assertEqual(meta[name]["attrs"]["_ARRAY_DIMENSIONS"], dims)

    def test_refused_metadata(self):
        x = np.arange(24, dtype=np.int32).reshape(6, 4)
        p = os.path.join(self.tmp, "delta.zarr")
        zarr.open(p, mode="w", shape=x.shape, chunks=(2, 4), dtype=np.int32,
                  filters=[numcodecs.Delta(np.int32)])[...] = x
        self.refused(p, want=("delta.zarr", "filter 'delta' is not supported"))
        p = os.path.join(self.tmp, "bz2.zarr")
        zarr.open(p, mode="w", shape=x.shape, chunks=(2, 4), dtype=np.int32,
                  compressor=numcodecs.BZ2())[...] = x
        self.refused(p, want=("compressor 'bz2' is not supported",))
        p = os.path.join(self.tmp, "broken.zarr")
        os.makedirs(p)
        with open(os.path.join(p, ".zarray"), "w") as f:
            f.write('{"zarr_format": 2, "shape": [4], "chunks": [0]')
        self.refused(p, want=(".zarray", "not JSON"))
        with open(os.path.join(p, ".zarray"), "w") as f:
            json.dump({"zarr_format": 2, "shape": [2**40, 2**40], "chunks": [1, 1], "dtype": "<f8",
                       "order": "C", "compressor": None, "fill_value": 0, "filters": None}, f)
        self.refused(p, want=("too large",))


class ZarrV3(E2E):
    def test_spec_arrays(self):
        a = RNG.standard_normal((11, 7, 3)).astype(np.float32)
        b = RNG.integers(0, 65536, (9, 10), dtype=np.uint16)
        c = RNG.integers(-100, 100, (13, 4), dtype=np.int16)
        cases = {
            "a_zstd_be": (a, dict(chunks=(4, 3, 3), codec="zstd", endian="big")),
            "a_gzip_F": (a, dict(chunks=(5, 7, 2), codec="gzip", fortran=True)),
            "b_blosc_v2key": (b, dict(chunks=(4, 4), codec="blosc", key="v2", sep=".")),
            "c_raw_missing": (c, dict(chunks=(5, 4), fill=-1, skip={(1, 0)})),
        }
        text = ""
        refs = {}
        for name, (data, kw) in cases.items():
            write_v3(os.path.join(self.tmp, name), data, **kw)
            text += f"[{name}]\nsource = {name}\n\n"
            ref = data.astype(np.float32)
            if kw.get("skip"):
                ref[5:10] = -1
            refs[name] = ref
        ini = self.write_ini(text)
        with self.mount(ini) as m:
            for name, ref in refs.items():
                with self.subTest(name):
                    check_whole(self, m, name, ref, "float32")
            forked_batches(self, m, "a_zstd_be", refs["a_zstd_be"], workers=3, batches=10)

    def test_attributes_and_refusals(self):
        a = np.arange(12, dtype=np.float64).reshape(3, 4)
        p = write_v3(os.path.join(self.tmp, "attrs"), a, (2, 4), codec="zstd",
                     attrs={"units": "mV", "scale": [1, 2]})
        with self.mount(p) as m:
            check_whole(self, m, "attrs", a.astype(np.float32), "float32")
            with open(m.path("attrs.json")) as f:
                self.assertEqual(json.load(f)["sources"][0]["attrs"], {"scale": [1, 2], "units": "mV"})
        # v3 dimension_names: into V.json (the view's too, moved as CHW
        # moves the axes); a list that is not one string or null an axis
        # is refused, as the specification allows no other
        v = RNG.integers(0, 256, (6, 5, 3), dtype=np.uint8)
        q = write_v3(os.path.join(self.tmp, "named"), v, (2, 5, 3), codec="zstd",
                     dims=["y", None, "c"])
        ini = self.write_ini(f"[named]\nsource = {q}\n[named_chw]\nsource = {q}\nlayout = CHW\n")
        with self.mount(ini) as m:
            check_whole(self, m, "named_chw", v.transpose(0, 2, 1).astype(np.float32), "float32")
            for name, want in (("named", ["y", None, "c"]), ("named_chw", ["y", "c", None])):
                with open(m.path(name + ".json")) as f:
                    meta = json.load(f)
                self.assertEqual(meta["dimension_names"], want, name)
                self.assertEqual(meta["sources"][0]["dimension_names"], ["y", None, "c"], name)
        r = run("info", "--json", q)
        self.assertEqual(json.loads(r.stdout)["source"]["dimension_names"], ["y", None, "c"])
        for i, (dims, why) in enumerate(((["y", "x"], "dimension_names has 2 names for 3 dimensions"),
                                         (["y", 3, "c"], "dimension_names[1] is not a string or null"),
                                         ("y", "dimension_names is not an array"))):
            bad = write_v3(os.path.join(self.tmp, f"badnames{i}"), v, (2, 5, 3), dims=dims)
            self.refused(bad, want=(f"badnames{i}", "zarr.json", why))
        meta_path = os.path.join(p, "zarr.json")
        with open(meta_path) as f:
            meta = json.load(f)
        meta["codecs"] = [{"name": "sharding_indexed", "configuration": {}}]
        shard = os.path.join(self.tmp, "sharded")
        shutil.copytree(p, shard)
        with open(os.path.join(shard, "zarr.json"), "w") as f:
            json.dump(meta, f)
        self.refused(shard, want=("zarr.json", "sharding chunk_shape is missing"))
