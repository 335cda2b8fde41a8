"""Zarr v3 as zarr-python 3 writes it (tests/e2e/zarr3_writer.py, run in
the project venv): sharded arrays with the index at the end and at the
start, with and without its crc32c, inner chunks bytes (both byte
orders, C and F order) + zstd / blosc / gzip + crc32c, inner chunks and
whole shards never written (the fill value), the array's edge inside a
shard; unsharded arrays with crc32c before and after the compressor; a
group mounted with zero configuration. Every view is the source's own
dtype, compared byte for byte with what zarr-python reads. Then damaged
shards (a wrong index checksum, a truncated file, an entry past the end)
fail only their rows, and sharding dsview does not read is refused with
its reason."""
import errno
import json
import os
import re
import shutil
import struct

import numpy as np

from common import E2E, check_preads, check_whole, forked_batches, run, venv_python

WRITER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "zarr3_writer.py")

# name: (the view's dtype: the source's own, rows where shards meet)
ARRAYS = {
    "end_zstd": ("float32", (15, 16, 17, 191, 192, 202)),
    "start_blosc": ("uint16", (15, 16, 19, 20, 32, 48, 63)),
    "gzip_crc_F_be": ("int16", (9, 10, 30, 149)),
    "plain_zstd_crc": ("float32", (6, 7, 42)),
    "plain_crc_gzip": ("uint8", (7, 8, 32)),
}


class ZarrV3Sharded(E2E):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        with open(WRITER) as f:
            venv_python(f.read(), cls.tmp)

    def ref(self, name):
        return np.load(os.path.join(self.tmp, name + ".ref.npy"))

    def src(self, name):
        return os.path.join(self.tmp, name + ".zarr")

    def test_every_index_and_codec(self):
        text = "".join(f"[{n}]\nsource = {self.src(n)}\ndtype = {dt}\n\n"
                       for n, (dt, _) in ARRAYS.items())
        with self.mount(self.write_ini(text)) as m:
            for name, (dtype, rows) in ARRAYS.items():
                with self.subTest(name):
                    check_whole(self, m, name, self.ref(name), dtype)
                    check_preads(self, m, name, self.ref(name), rows=rows, seed=len(name))
            forked_batches(self, m, "end_zstd", self.ref("end_zstd"), workers=3, batches=10)
        r = run("info", "--json", self.src("end_zstd"))
        self.assertEqual(json.loads(r.stdout)["source"]["why"], "zarr v3, sharded, zstd")

    def test_fill_value_where_nothing_was_written(self):
        # the fixture holds what the test is about: shard 0's inner chunk
        # of rows 4-7 (all fill value) has an all-ones entry, shards 2 and
        # 3 have no file
        p = self.src("start_blosc")
        with open(os.path.join(p, "c", "0", "0"), "rb") as f:
            index = f.read(4 * 3 * 16)
        self.assertEqual(index[16 * 3:16 * 4], b"\xff" * 16)  # inner (1, 0)
        self.assertFalse(os.path.exists(os.path.join(p, "c", "2", "0")))
        ref = self.ref("start_blosc")
        self.assertTrue((ref[20:] == 7).all() and (ref[4:8] == 7).all())
        with self.mount(self.write_ini(f"[s]\nsource = {p}\ndtype = uint16\n")) as m:
            check_whole(self, m, "s", ref, "uint16")

    def test_zero_config_group(self):
        with self.mount(self.src("grp")) as m:
            check_whole(self, m, "sig", self.ref("grp_sig"), "float32")
            check_whole(self, m, "sub/t", self.ref("grp_sub_t").astype(np.float32), "float32")
            self.assertFalse(os.path.exists(m.path(".skipped.json")))

    def damaged(self, name, damage, want_log, bad_rows, good_rows):
        """A copy of array name with damage(copy) done to it: the rows of
        bad_rows fail with EIO, those of good_rows read right, and the log
        names the shard and want_log. The mount reads whole pages: a good
        row's page must hold no bad row."""
        p = os.path.join(self.tmp, "damaged_" + name + ".zarr")
        shutil.rmtree(p, ignore_errors=True)
        shutil.copytree(self.src(name), p)
        damage(p)
        ref = self.ref(name)
        dtype = ARRAYS[name][0]
        row = ref[0].nbytes
        with self.mount(self.write_ini(f"[d]\nsource = {p}\ndtype = {dtype}\n"),
                        expect_errors=[want_log]) as m:
            fd = os.open(m.path("d.dat"), os.O_RDONLY)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
            try:
                for r in good_rows:
                    self.assertEqual(os.pread(fd, row, row * r), ref[r].tobytes(), f"row {r}")
                for r in bad_rows:
                    with self.assertRaises(OSError, msg=f"row {r}") as cm:
                        os.pread(fd, row, row * r)
                    self.assertEqual(cm.exception.errno, errno.EIO)
            finally:
                os.close(fd)
            self.assertTrue(any(re.search(want_log, line) for line in m.log_lines()),
                            m.log_lines())

    def test_damaged_index_fails_only_its_shard(self):
        # rows of 240 bytes, shards of 16 rows: shard 3 is rows 48-63,
        # pages 2 and 3 (rows 34-68)
        def flip_index(p):  # a byte of shard 3's index (at its end)
            path = os.path.join(p, "c", "3", "0", "0")
            with open(path, "r+b") as f:
                f.seek(-10, os.SEEK_END)
                b = f.read(1)
                f.seek(-10, os.SEEK_END)
                f.write(bytes([b[0] ^ 0x40]))
        self.damaged("end_zstd", flip_index, r"shard .*c/3/0/0: shard index checksum \(crc32c\) differs",
                     bad_rows=(48, 63), good_rows=(0, 30, 70, 202))

    def test_truncated_shard_fails_only_its_rows(self):
        def truncate(p):  # shard 6 (rows 96-111, pages 5 and 6) shorter than its index
            with open(os.path.join(p, "c", "6", "0", "0"), "r+b") as f:
                f.truncate(20)
        self.damaged("end_zstd", truncate, r"shard .*c/6/0/0: shard is 20 bytes, shorter than",
                     bad_rows=(96, 111), good_rows=(0, 80, 120))

    # gzip_crc_F_be: rows of 96 bytes, shards of 10 rows: shard 10 is rows
    # 100-109, page 2 (rows 86-127)
    def test_entry_past_the_end(self):
        def entry_past(p):  # the index has no checksum here: point an entry past the file
            path = os.path.join(p, "c", "10", "0", "0")
            size = os.path.getsize(path)
            with open(path, "r+b") as f:
                f.seek(size - 16 * 8)  # inner chunk (0, 0, 0), index at the end
                f.write(struct.pack("<QQ", size, 1))
        self.damaged("gzip_crc_F_be", entry_past, r"shard .*c/10/0/0: shard index entry 0",
                     bad_rows=(100, 109), good_rows=(0, 50, 140))

    def test_inner_checksum_fails_its_rows(self):
        def flip_chunk(p):  # the first byte of shard 10's first inner chunk (gzip + crc32c)
            path = os.path.join(p, "c", "10", "0", "0")
            with open(path, "r+b") as f:
                b = f.read(1)
                f.seek(0)
                f.write(bytes([b[0] ^ 0x01]))
        self.damaged("gzip_crc_F_be", flip_chunk, r"chunk file .*c/10/0/0: corrupt",
                     bad_rows=(100, 104), good_rows=(0, 50, 140))

    def test_refused_sharding(self):
        base = self.src("end_zstd")
        with open(os.path.join(base, "zarr.json")) as f:
            meta = json.load(f)
        shard = meta["codecs"][0]["configuration"]
        cases = {
            "nested": ({**shard, "codecs": [{"name": "sharding_indexed", "configuration": shard}]},
                       "sharding inside a shard is not supported"),
            "ragged": ({**shard, "chunk_shape": [3, 5, 6]},
                       "shard shape[0] 16 is not a multiple of the inner chunk's 3"),
            "index_zstd": ({**shard, "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
                                                      {"name": "zstd"}]},
                           "index_codecs other than bytes"),
        }
        for name, (cfg, why) in cases.items():
            p = os.path.join(self.tmp, "refused_" + name)
            os.makedirs(p, exist_ok=True)
            with open(os.path.join(p, "zarr.json"), "w") as f:
                json.dump({**meta, "codecs": [{"name": "sharding_indexed", "configuration": cfg}]}, f)
            with self.subTest(name):
                self.refused(p, want=("zarr.json", why))
