"""LZ4 stores of many blocks per chunk (block-level random
access): `dsview pack --block-size` writes them (h5py+hdf5plugin read them
back exactly), a mount serves whole files and shuffled rows from forked
readers byte-equal to a numpy reference while decoding only the blocks the
rows need, reading them through the store's block table (each block
checked against its own checksum there), stores written by others (one
block per chunk, or blocks of any size, no table) still read, a damaged
block fails only the reads that need it (EIO, logged), a damaged or unfit
table costs speed, never bytes, info shows the block size and table and
verify checks every block and the table, and bad --block-size values get a
one-line error."""
import glob
import json
import os
import struct

import h5py
import hdf5plugin
import numpy as np

from common import E2E, check_preads, check_whole, forked_batches, run
from refs import reference

SCALE = 1 / 255


def images(n, h=64, w=64, seed=0):
    """uint8 HWC frames: smooth gradients with noisy dots (compressible,
    not trivially)."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:h, 0:w]
    x = np.empty((n, h, w, 3), np.uint8)
    for i in range(n):
        x[i] = ((xx[..., None] * (i % 7 + 1) + yy[..., None] * 3 + np.arange(3) * 40) % 256)
        x[i, ::3, ::5] = rng.integers(0, 256, (len(range(0, h, 3)), len(range(0, w, 5)), 3))
    return x


class Blocks(E2E):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.img = images(150)  # rows of 12288 bytes
        np.save(cls.p(cls, "img.npy"), cls.img)
        # rows of 10001 float32 (40004 bytes): 16K asks for blocks of a
        # quarter row, 10001 bytes, so elements straddle blocks
        cls.sig = np.random.default_rng(3).standard_normal((40, 10001)).astype(np.float32)
        cls.sig[:, ::2] = 0.5
        np.save(cls.p(cls, "sig.npy"), cls.sig)

    def pack(self, *args):
        r = run("pack", *args, timeout=120)
        self.assertEqual(r.returncode, 0, f"pack {args}: {r.stdout}{r.stderr}")
        return r

    def store_info(self, path, name):
        with h5py.File(path, "r") as f:
            d = f[name]
            meta = json.loads(d.attrs["dsview"])
            return d[...], d._filters["32004"][0], meta, d.chunks[0]

    def mount_view(self, store, name, tag):
        ini = self.write_ini(f"[v]\nsource = {store}:/{name}\nscale = {SCALE!r}\n", f"{tag}.ini")
        return self.mount(ini)

    def test_block_sizes_round_trip(self):
        row = 64 * 64 * 3
        # (--block-size, the block the store gets)
        for arg, want in (("4K", row // 3), ("16K", row), ("32K", 2 * row), ("64K", 5 * row),
                          ("1G", 11 * row)):
            with self.subTest(block=arg):
                out = self.p(f"img_{arg}.h5")
                r = self.pack("--chunk-size", "128k", "--block-size", arg, self.p("img.npy"), out)
                self.assertIn("blocks of", r.stdout)
                back, cd, meta, crows = self.store_info(out, "img")
                self.assertEqual(crows, 11)
                self.assertTrue(np.array_equal(back, self.img), "h5py+hdf5plugin read it back")
                self.assertEqual(cd, want, "the filter's block size parameter")
                self.assertEqual(meta["block_bytes"], want)
                with self.mount_view(f"img_{arg}.h5", "img", f"img_{arg}") as m:
                    ref = reference(self.img, SCALE)
                    check_whole(self, m, "v", ref, "float32")
                    forked_batches(self, m, "v", ref, workers=4, batches=10)
                    check_preads(self, m, "v", ref, rows=(11, 22, 149), n_random=20)

    def test_elements_straddle_blocks(self):
        out = self.p("sig.h5")
        self.pack("--chunk-size", "256k", "--block-size", "16K", self.p("sig.npy"), out)
        back, cd, _, _ = self.store_info(out, "sig")
        self.assertEqual(cd, 10001, "a quarter row: not a whole number of float32")
        self.assertTrue(np.array_equal(back, self.sig))
        with self.mount_view("sig.h5", "sig", "sig") as m:
            ref = reference(self.sig, SCALE)
            check_whole(self, m, "v", ref, "float32")
            forked_batches(self, m, "v", ref, workers=2, batches=10)
            check_preads(self, m, "v", ref, rows=(7, 14, 39), n_random=30)

    def amplification(self, store, seed=5, nrows=40):
        """Bytes decoded / bytes served for shuffled whole-row preads."""
        with self.mount_view(store, "img", store) as m:
            ref = reference(self.img, SCALE)
            rb = ref[0].nbytes
            s0 = m.stats()
            fd = os.open(m.path("v.dat"), os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
                for i in np.random.default_rng(seed).permutation(len(ref))[:nrows]:
                    got = os.pread(fd, rb, int(i) * rb)
                    self.assertEqual(got, ref[i].tobytes(), f"row {i}")
            finally:
                os.close(fd)
            s1 = m.stats()
        served = s1["bytes_served"] - s0["bytes_served"]
        return (s1["bytes_decoded"] - s0["bytes_decoded"]) / served

    def test_shuffled_rows_decode_their_blocks(self):
        for arg in ("4K", "1G"):
            self.pack("--force", "--chunk-size", "128k", "--block-size", arg, self.p("img.npy"),
                      self.p(f"amp_{arg}.h5"))
        blocks, whole = self.amplification("amp_4K.h5"), self.amplification("amp_1G.h5")
        self.assertLessEqual(blocks, 1.3, "rows decode (about) their own blocks")
        self.assertGreater(whole, 2.0, "one block per chunk: the chunk for every row")

    def test_stores_written_by_others(self):
        x = self.img
        path = self.p("others.h5")
        with h5py.File(path, "w") as f:
            f.create_dataset("one", data=x, chunks=(7, 64, 64, 3), fletcher32=True,
                             **hdf5plugin.LZ4())
            f.create_dataset("many", data=x, chunks=(7, 64, 64, 3), **hdf5plugin.LZ4(nbytes=5000))
            f.create_dataset("bigblock", data=x, chunks=(7, 64, 64, 3),
                             **hdf5plugin.LZ4(nbytes=1 << 24))
        for name in ("one", "many", "bigblock"):
            with self.subTest(name=name), self.mount_view("others.h5", name, f"others_{name}") as m:
                ref = reference(x, SCALE)
                check_whole(self, m, "v", ref, "float32")
                forked_batches(self, m, "v", ref, workers=2, batches=10)
                check_preads(self, m, "v", ref, rows=(7, 14), n_random=20)
        r = run("info", "--json", path)
        self.assertEqual(r.returncode, 0, r.stderr)
        got = {d["name"]: d["source"]["lz4_block_bytes"] for d in json.loads(r.stdout)["datasets"]}
        chunk = 7 * 64 * 64 * 3
        self.assertEqual(got, {"/one": chunk, "/many": 5000, "/bigblock": chunk})
        tables = [d["source"]["lz4_block_table"] for d in json.loads(r.stdout)["datasets"]]
        self.assertEqual(tables, [False, False, False], "others write no block table")
        r = run("info", path)
        self.assertIn("LZ4 blocks of 5.00 kB", r.stdout)

    def damaged(self, name, chunk, block, how):
        """A copy of others' many-block store (no checksum) with one block
        of one chunk damaged: its bytes all 0xFF ('data') or its stored
        size 0 ('header')."""
        path = self.p(name)
        with h5py.File(path, "w") as f:
            f.create_dataset("img", data=self.img, chunks=(7, 64, 64, 3),
                             **hdf5plugin.LZ4(nbytes=4096))
        with h5py.File(path, "r") as f:
            info = f["img"].id.get_chunk_info(chunk)
        with open(path, "r+b") as fh:
            fh.seek(info.byte_offset)
            frame = bytearray(fh.read(info.size))
            pos = 12
            for _ in range(block):
                pos += 4 + struct.unpack(">I", frame[pos:pos + 4])[0]
            size = struct.unpack(">I", frame[pos:pos + 4])[0]
            self.assertLess(size, 4096, "a compressed block")
            if how == "data":
                frame[pos + 4:pos + 4 + size] = b"\xff" * size
            else:
                frame[pos:pos + 4] = b"\0\0\0\0"
            fh.seek(info.byte_offset)
            fh.write(frame)
        return path

    def read_rows(self, m, rows):
        """{row: True if it reads back equal, False if it fails}. A row
        fails with EIO, or with a short read of its good pages before the
        damage and EIO from there."""
        ref = reference(self.img, SCALE)
        rb = ref[0].nbytes
        out = {}
        fd = os.open(m.path("v.dat"), os.O_RDONLY)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)  # no readahead into other rows
        try:
            for i in rows:
                want = ref[i].tobytes()
                try:
                    got = os.pread(fd, rb, i * rb)
                except OSError as e:
                    self.assertEqual(e.errno, 5, f"row {i}: {e}")
                    out[i] = False
                    continue
                self.assertEqual(got, want[:len(got)], f"row {i}")
                out[i] = len(got) == rb
                if not out[i]:
                    with self.assertRaises(OSError) as cm:
                        os.pread(fd, rb - len(got), i * rb + len(got))
                    self.assertEqual(cm.exception.errno, 5)
        finally:
            os.close(fd)
        return out

    def test_damaged_block_without_table_fails_its_chunk(self):
        # chunk 2 holds rows 14-20; block 7 of 4096 bytes holds bytes
        # 28672-32767 of the chunk (row 16). Without a block table (others'
        # store) every read decodes the chunk whole: its rows fail.
        self.damaged("bad_data.h5", 2, 7, "data")
        ini = self.write_ini(f"[v]\nsource = bad_data.h5:/img\nscale = {SCALE!r}\n", "bad_data.ini")
        with self.mount(ini, expect_errors=[r"chunk 2 \(rows 14-20.*corrupt chunk"]) as m:
            got = self.read_rows(m, [0, 13, 14, 15, 16, 17, 20, 21, 149])
            self.assertEqual([i for i, ok in got.items() if not ok], [14, 15, 16, 17, 20])
            self.assertTrue(any("chunk 2 (rows 14-20" in ln for ln in m.log_lines()))
            # and again: a failure is not cached
            self.assertEqual(self.read_rows(m, [16, 21]), {16: False, 21: True})
        r = run("verify", self.p("bad_data.h5"))
        self.assertNotEqual(r.returncode, 0, r.stdout)
        self.assertIn("rows 14-20", r.stdout)

    def test_damaged_block_header_fails_its_chunk(self):
        # a stored size of 0 in block 3 of chunk 1: the blocks after it
        # cannot be found, so the chunk's rows fail (7-13), and only those
        self.damaged("bad_head.h5", 1, 3, "header")
        ini = self.write_ini(f"[v]\nsource = bad_head.h5:/img\nscale = {SCALE!r}\n", "bad_head.ini")
        with self.mount(ini, expect_errors=[r"chunk 1 \(rows 7-13.*corrupt chunk"]) as m:
            got = self.read_rows(m, list(range(5, 16)) + [100])
            self.assertEqual([i for i, ok in got.items() if not ok], list(range(7, 14)))
        r = run("verify", self.p("bad_head.h5"))
        self.assertNotEqual(r.returncode, 0, r.stdout)
        self.assertIn("rows 7-13", r.stdout)

    def test_checksum_guards_every_block(self):
        # a dsview store: a flipped byte in the last block of chunk 3
        # (rows 33-43; blocks of a third of a row) fails that block's
        # checksum in the table, so row 43's read goes to the whole chunk,
        # which fails its Fletcher32: EIO. The chunk's other rows are read
        # from their own blocks, each checked, and served.
        out = self.p("flip.h5")
        self.pack("--chunk-size", "128k", "--block-size", "4K", self.p("img.npy"), out)
        with h5py.File(out, "r") as f:
            info = f["img"].id.get_chunk_info(3)
        with open(out, "r+b") as fh:
            fh.seek(info.byte_offset + info.size - 100)
            b = fh.read(1)
            fh.seek(info.byte_offset + info.size - 100)
            fh.write(bytes([b[0] ^ 1]))
        ini = self.write_ini(f"[v]\nsource = flip.h5:/img\nscale = {SCALE!r}\n", "flip.ini")
        with self.mount(ini, expect_errors=[r"chunk 3 \(rows 33-43.*checksum",
                                            r"chunk 3 \(rows 33-43.*in a block or the block table"]) as m:
            got = self.read_rows(m, [32, 33, 38, 43, 44])
            self.assertEqual([i for i, ok in got.items() if not ok], [43])
            log = "\n".join(m.log_lines())
            self.assertIn("reading the chunk whole", log)
            self.assertIn("checksum", log)
            # the whole file: chunk 3 fails wherever a read covers it whole
            with self.assertRaises(OSError):
                with open(m.path("v.dat"), "rb") as fh:
                    fh.read()
        r = run("verify", out)
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn("rows 33-43", r.stdout)
        self.assertIn("Fletcher32", r.stdout)

    def test_damaged_table_costs_speed_not_bytes(self):
        # a wrong size and a wrong checksum in chunk 1's row of the table:
        # rows of chunk 1 are read from the whole chunk (logged), and
        # equal; verify names the chunk's table row
        out = self.p("tab.h5")
        self.pack("--chunk-size", "128k", "--block-size", "4K", self.p("img.npy"), out)
        with h5py.File(out, "r") as f:
            off = f[".dsview/img"].id.get_offset()
            width = f[".dsview/img"].shape[1]
        with open(out, "r+b") as fh:
            for word, delta in ((4, 1), (11, 7)):  # block 2's size, block 5's checksum
                at = off + (1 * width + word) * 4
                fh.seek(at)
                v = struct.unpack("<I", fh.read(4))[0]
                fh.seek(at)
                fh.write(struct.pack("<I", (v + delta) & 0xFFFFFFFF))
        ini = self.write_ini(f"[v]\nsource = tab.h5:/img\nscale = {SCALE!r}\n", "tab.ini")
        with self.mount(ini, expect_errors=[r"chunk 1 \(rows 11-21.*in a block or the block table"]) as m:
            ref = reference(self.img, SCALE)
            got = self.read_rows(m, list(range(9, 24)))
            self.assertTrue(all(got.values()), got)
            forked_batches(self, m, "v", ref, workers=2, batches=5)
            self.assertIn("reading the chunk whole", "\n".join(m.log_lines()))
        r = run("verify", out)
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn("rows 11-21", r.stdout)
        self.assertIn("block table", r.stdout)

    def test_unfit_table_is_not_used(self):
        # a table of the wrong shape, or not a dataset: the store reads as
        # one without a table (chunks whole), and says so
        for how in ("shape", "group", "chunked"):
            with self.subTest(how=how):
                out = self.p(f"unfit_{how}.h5")
                self.pack("--force", "--chunk-size", "128k", "--block-size", "4K",
                          self.p("img.npy"), out)
                with h5py.File(out, "r+") as f:
                    t = f[".dsview/img"][...]
                    del f[".dsview/img"]
                    if how == "shape":
                        f[".dsview/img"] = t[:-1]
                    elif how == "group":
                        f.create_group(".dsview/img")
                    else:
                        f.create_dataset(".dsview/img", data=t, chunks=(1, t.shape[1]))
                r = run("info", "--json", out)
                d = json.loads(r.stdout)["datasets"][0]
                self.assertFalse(d["source"]["lz4_block_table"])
                with self.mount_view(f"unfit_{how}.h5", "img", f"unfit_{how}") as m:
                    ref = reference(self.img, SCALE)
                    check_preads(self, m, "v", ref, rows=(11, 22, 149), n_random=20)
                    forked_batches(self, m, "v", ref, workers=2, batches=5)

    def test_zero_config_mount_hides_the_table(self):
        out = self.p("zc.h5")
        self.pack("--force", "--chunk-size", "128k", "--block-size", "4K", self.p("img.npy"), out)
        with self.mount(out) as m:
            self.assertEqual(sorted(os.listdir(m.mp)),
                             sorted(["img.dat", "img.npy", "img.json", ".stats.json"]))

    def test_info_and_verify(self):
        out = self.p("iv.h5")
        self.pack("--chunk-size", "128k", "--block-size", "4K", self.p("img.npy"), out)
        r = run("info", out)
        self.assertIn("LZ4 blocks of 4.10 kB", r.stdout)
        r = run("info", "--json", out)
        d = json.loads(r.stdout)["datasets"][0]
        self.assertEqual(d["source"]["lz4_block_bytes"], 4096)
        self.assertEqual(d["store"]["block_bytes"], 4096)
        self.assertEqual(d["store"]["block_table"], "/.dsview/img")
        self.assertTrue(d["source"]["lz4_block_table"])
        self.assertIn("block table", run("info", out).stdout)
        r = run("verify", out)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_bad_block_size(self):
        for bad in ("0", "abc", "3", "4095", "2G", "-5", "64Q", ""):
            with self.subTest(bad=bad):
                out = self.p("never.h5")
                r = run("pack", "--block-size", bad, self.p("img.npy"), out)
                self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
                lines = r.stderr.strip().splitlines()
                self.assertEqual(len(lines), 1, r.stderr)
                self.assertTrue(lines[0].startswith("dsview: --block-size"), lines[0])
                self.assertIn("4K to 1024M", lines[0])
                self.assertFalse(os.path.exists(out))
                self.assertEqual(glob.glob(out + ".tmp-*"), [])
