"""dsview pack --codec for every codec it writes: each store is
standard (the filter id and cd_values hdf5plugin writes; h5py reads it back
exactly through Debian's plugins where they exist (LZ4, Blosc), and chunk by
chunk with read_direct_chunk and the format's own library where they do not
(zstd: python3-zstandard; bitshuffle: the filter's encoding re-done in
numpy, test_bitshuffle.py)); a mount of it serves the float32 reference to
forked readers on the fast path; `dsview info` shows codec and level;
`dsview verify` passes. --codec auto prints one line saying what it chose
and why. Bad codec names and levels: one line, exit 1, nothing written."""
import glob
import json
import os
import struct

import h5py
import hdf5plugin
import numpy as np
import lz4.block
import zstandard

from common import E2E, check_whole, forked_batches, run
from refs import reference
from test_bitshuffle import bshuf_encode, default_block
from test_pack import image_like

CODECS = {  # name: (filter id, its default level or None, hdf5plugin's filter or None)
    "lz4": (32004, 1, None),
    "lz4hc": (32004, 9, None),
    "zstd": (32015, 6, None),  # Debian has no zstd plugin: cd checked below
    "blosc-lz4-noshuffle": (32001, 5, lambda lvl: hdf5plugin.Blosc("lz4", lvl, 0)),
    "blosc-lz4-shuffle": (32001, 5, lambda lvl: hdf5plugin.Blosc("lz4", lvl, 1)),
    "blosc-lz4-bitshuffle": (32001, 5, lambda lvl: hdf5plugin.Blosc("lz4", lvl, 2)),
    "blosc-zstd-noshuffle": (32001, 5, lambda lvl: hdf5plugin.Blosc("zstd", lvl, 0)),
    "blosc-zstd-shuffle": (32001, 5, lambda lvl: hdf5plugin.Blosc("zstd", lvl, 1)),
    "blosc-zstd-bitshuffle": (32001, 5, lambda lvl: hdf5plugin.Blosc("zstd", lvl, 2)),
    "bitshuffle-lz4": (32008, None, None),
    "bitshuffle-zstd": (32008, 3, None),
    "none": (None, None, None),
}
FLETCHER = 4  # bytes of Fletcher32 trailer on every stored chunk


def bshuf_lz4_decode(b, es):
    """Decodes a bitshuffle LZ4 chunk with python3-lz4 and numpy (the
    filter's format: test_bitshuffle.py), as the plugin would."""
    raw, bb = struct.unpack(">QI", b[:12])
    n, blk, pos, out = raw // es, bb // es, 12, []
    left = n % 8
    for s in range(0, n - left, blk):
        m = min(blk, n - left - s)
        (size,) = struct.unpack(">I", b[pos:pos + 4])
        t = lz4.block.decompress(b[pos + 4:pos + 4 + size], uncompressed_size=m * es)
        pos += 4 + size
        bits = np.unpackbits(np.frombuffer(t, np.uint8).reshape(8 * es, m // 8), axis=1,
                             bitorder="little")
        out.append(np.packbits(bits.T, axis=1, bitorder="little").tobytes())
    out.append(b[pos:])
    return b"".join(out)


def plugin_cd(path, name, x, chunks, filt):
    """The cd_values h5py + hdf5plugin (Debian's plugin: its set_local)
    leave in a file for the same dataset."""
    with h5py.File(path, "w") as f:
        d = f.create_dataset(name, data=x, chunks=chunks, fletcher32=True, **filt)
        return d.id.get_create_plist().get_filter(0)[2]


class PackCodecs(E2E):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        rng = np.random.default_rng(16)
        cls.data = {
            "img": image_like(90),  # uint8 32x48x3
            "vol": np.round(np.cumsum(rng.normal(0, 20, (40, 8, 16, 16)), axis=3)).astype(np.int16),
            "eeg": np.cumsum(rng.normal(0, 1, (30, 16, 100)), axis=2).astype(np.float32),
        }
        for n, x in cls.data.items():
            np.save(cls.p(cls, n + ".npy"), x)

    def pack(self, *args):
        r = run("pack", *args, timeout=120)
        self.assertEqual(r.returncode, 0, f"pack {args}: {r.stdout}{r.stderr}")
        self.assertEqual(r.stderr, "")
        return r.stdout.strip().splitlines()

    def stored_chunks(self, d):
        for i in range(d.id.get_num_chunks()):
            info = d.id.get_chunk_info(i)
            mask, b = d.id.read_direct_chunk(info.chunk_offset)
            self.assertEqual(mask, 0)
            yield info.chunk_offset[0], b[:-FLETCHER]

    def check_standard(self, out, name, codec, level, x):
        """The filter pipeline, the cd_values hdf5plugin writes, and every
        chunk decoding to x by a decoder that is not dsview's."""
        fid, _, filt = CODECS[codec]
        with h5py.File(out, "r") as f:
            d = f[name]
            pl = d.id.get_create_plist()
            self.assertTrue(d.fletcher32)
            meta = json.loads(d.attrs["dsview"])
            self.assertEqual(meta["codec"], codec)
            self.assertEqual(meta["level"], level or 0)
            rows = d.chunks[0]
            if fid is None:
                self.assertEqual(pl.get_nfilters(), 1)
                self.assertTrue(np.array_equal(d[...], x))
                return rows
            self.assertEqual(pl.get_nfilters(), 2)
            self.assertEqual(pl.get_filter(0)[0], fid)
            self.assertEqual(pl.get_filter(1)[0], h5py.h5z.FILTER_FLETCHER32)
            cd = pl.get_filter(0)[2]
            if filt:
                self.assertEqual(cd, plugin_cd(self.p("plugin.h5"), name, x, d.chunks, filt(level)))
            es = x.dtype.itemsize
            if fid == 32015:
                self.assertEqual(cd, (level,))  # hdf5plugin.Zstd(clevel=level)
            if fid == 32008:
                self.assertEqual(cd, (0, 4, es, 0, 2) if codec == "bitshuffle-lz4"
                                 else (0, 4, es, 0, 3, level))
            if fid in (32004, 32001):  # Debian's plugins decode these
                self.assertTrue(np.array_equal(d[...], x), codec)
            else:
                raw = np.zeros((d.id.get_num_chunks() * rows,) + x.shape[1:], x.dtype)
                raw[:len(x)] = x
                for r0, b in self.stored_chunks(d):
                    want = raw[r0:r0 + rows].tobytes()
                    if fid == 32015:
                        self.assertEqual(zstandard.ZstdDecompressor().decompress(b), want)
                    elif codec == "bitshuffle-zstd":
                        self.assertEqual(bshuf_encode(want, es, 0, 3, level), b)
                    else:
                        self.assertEqual(struct.unpack(">I", b[8:12])[0], default_block(es) * es)
                        self.assertEqual(bshuf_lz4_decode(b, es), want)
            return rows

    def test_every_codec(self):
        for codec, (fid, level, _) in CODECS.items():
            for name, x in self.data.items():
                with self.subTest(codec=codec, data=name):
                    out = self.p(f"{name}_{codec}.h5")
                    lines = self.pack("--codec", codec, self.p(name + ".npy"), out)
                    self.assertEqual(len(lines), 1, lines)
                    self.assertIn(f", {codec}" + (f" level {level}" if level else ""), lines[0])
                    self.assertEqual(glob.glob(out + ".tmp-*"), [])
                    rows = self.check_standard(out, name, codec, level, x)
                    # without --chunk-size: 1 MiB for LZ4 and none, 256 KiB for
                    # the codecs decoded a chunk at a time
                    want = (1 << 20) if fid in (None, 32004) else (256 << 10)
                    self.assertEqual(rows, min(len(x), max(1, round(want / x[0].nbytes))))
                    if name != "img":
                        continue
                    # small chunks: many of them, shuffled readers cross them
                    out = self.p(f"small_{codec}.h5")
                    self.pack("--codec", codec, "--chunk-size", "20k", self.p("img.npy"), out)
                    self.check_standard(out, "img", codec, level, x)
                    ini = self.write_ini(f"[v]\nsource = small_{codec}.h5:/img\nscale = {1/255!r}\n",
                                         f"v_{codec}.ini")
                    ref = reference(x, 1 / 255)
                    with self.mount(ini) as m:
                        check_whole(self, m, "v", ref, "float32")
                        forked_batches(self, m, "v", ref, workers=3, batches=8)
                        src = json.load(open(m.path("v.json")))["sources"][0]
                        self.assertNotEqual(src["kind"], "hdf5-library", "stores take the fast path")
                    r = run("info", out)
                    self.assertEqual(r.returncode, 0, r.stderr)
                    self.assertIn(f"store      {codec}" + (f" level {level}" if level else " level 0"),
                                  r.stdout)
                    r = run("verify", out)
                    self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_levels(self):
        out = self.p("lvl.h5")
        for codec, level in (("zstd", 1), ("zstd", 19), ("blosc-zstd-bitshuffle", 9),
                             ("bitshuffle-zstd", 1), ("lz4hc", 12)):
            with self.subTest(codec=codec, level=level):
                self.pack("--force", "--codec", codec, "--level", str(level), self.p("vol.npy"), out)
                self.check_standard(out, "vol", codec, level, self.data["vol"])

    def test_auto(self):
        for name, x in self.data.items():
            with self.subTest(data=name):
                out = self.p(f"auto_{name}.h5")
                lines = self.pack("--codec", "auto", self.p(name + ".npy"), out)
                self.assertEqual(len(lines), 2, lines)
                self.assertTrue(lines[0].startswith("auto: "), lines[0])
                with h5py.File(out, "r") as f:
                    meta = json.loads(f[name].attrs["dsview"])
                codec, level = meta["codec"], meta["level"]
                self.assertIn(codec, CODECS)
                self.assertTrue(lines[0].startswith(f"auto: {codec}"), lines[0])
                self.assertIn(f", {codec}", lines[1])
                self.check_standard(out, name, codec, level, x)
                ini = self.write_ini(f"[v]\nsource = auto_{name}.h5:/{name}\n", f"auto_{name}.ini")
                with self.mount(ini) as m:
                    check_whole(self, m, "v", reference(x), "float32")


    def test_auto_storage(self):
        # the regime forced with --storage: the line says which and why,
        # the store is the codec it names (which one wins hangs on timing)
        x = self.data["img"]
        for arg, regime in (("slow", "storage 250 MB/s: slow (the decode bar is 500 MB/s of "
                                     "raw bytes)"),
                            ("10GB/s", "storage 10000 MB/s: fast (the decode bar is 500 MB/s "
                                       "of raw bytes)"),
                            ("fast", "storage fast")):
            with self.subTest(storage=arg):
                out = self.p("auto_st.h5")
                lines = self.pack("--force", "--codec", "auto", "--storage", arg,
                                  self.p("img.npy"), out)
                self.assertEqual(len(lines), 2, lines)
                self.assertTrue(lines[0].endswith("; " + regime), lines[0])
                with h5py.File(out, "r") as f:
                    meta = json.loads(f["img"].attrs["dsview"])
                self.assertTrue(lines[0].startswith(f"auto: {meta['codec']}"), lines[0])
                if arg == "slow" and meta["codec"] != "none":
                    self.assertIn("GB/s of raw bytes per core (storage x ratio ", lines[0])
                self.check_standard(out, "img", meta["codec"], meta["level"], x)


class PackCodecErrors(E2E):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        np.save(cls.p(cls, "ok.npy"), np.arange(300 * 64, dtype=np.uint16).reshape(300, 64))

    def bad(self, *args, want):
        out = self.p("out.h5")
        r = run("pack", *args, self.p("ok.npy"), out, timeout=60)
        self.assertEqual(r.returncode, 1, f"{args}: {r.stdout} {r.stderr}")
        lines = r.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, r.stderr)
        self.assertEqual(lines[0], "dsview: " + want)
        self.assertEqual(r.stdout, "")
        self.assertFalse(os.path.exists(out), "no output file")
        self.assertEqual(glob.glob(out + ".tmp-*"), [], "no temporary file")

    def test_bad_codec_and_levels(self):
        names = ("auto, lz4, lz4hc, zstd, blosc-lz4-noshuffle, blosc-lz4-shuffle, "
                 "blosc-lz4-bitshuffle, blosc-zstd-noshuffle, blosc-zstd-shuffle, "
                 "blosc-zstd-bitshuffle, bitshuffle-lz4, bitshuffle-zstd, none")
        for c in ("zstandard", "blosc", "ZSTD", "lz4 ", ""):
            self.bad("--codec", c, want=f"--codec '{c}' must be one of: {names}")
        for codec, lo, hi in (("lz4hc", 1, 12), ("zstd", 1, 22), ("bitshuffle-zstd", 1, 22),
                              ("blosc-lz4-shuffle", 1, 9), ("blosc-zstd-bitshuffle", 1, 9)):
            for lvl in (lo - 1, hi + 1):
                self.bad("--codec", codec, "--level", str(lvl),
                         want=f"{codec}: --level must be {lo} to {hi}")
        self.bad("--codec", "lz4", "--level", "0",
                 want="lz4: --level must be 1 to 65537 (the acceleration)")
        for codec in ("none", "bitshuffle-lz4"):
            self.bad("--codec", codec, "--level", "1", want=f"{codec}: takes no --level")
        self.bad("--codec", "auto", "--level", "3",
                 want="auto: takes no --level (it picks the codec and the level)")
        self.bad("--codec", "zstd", "--level", "x",
                 want="--level 'x' must be an integer from 0 to 65537")
        self.bad("--codec", "zstd", "--level", "-3",
                 want="--level '-3' must be an integer from 0 to 65537")
        for v in ("quick", "250 MB/s", "250MiB/s", "0", ""):
            self.bad("--codec", "auto", "--storage", v,
                     want=f"--storage '{v}' must be fast, slow or a rate like 250MB/s")
        self.bad("--storage", "slow",
                 want="--storage is for --codec auto (it says how fast the store will be read)")
        # nothing else broke: the same input packs
        r = run("pack", "--codec", "zstd", self.p("ok.npy"), self.p("fine.h5"))
        self.assertEqual(r.returncode, 0, r.stderr)
