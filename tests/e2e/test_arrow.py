"""Arrow IPC files written by pyarrow (the project venv), in the layouts
Hugging Face datasets writes (its cache is the stream form:
RecordBatchStreamWriter, input_ids list<int32>, batches of 1,000 rows, no
compression) and the others pyarrow writes (the file form, large_list,
LZ4_FRAME and ZSTD bodies, fixed_size_list, primitive columns), served
through real mounts and compared with pyarrow's own reads of the same
files. Token columns are one flat stream per file, int64 unless asked;
windows never cross files. Nulls, indices files and damaged files are
refused naming the file, the column or the batch."""
import json
import os
import re

import numpy as np

from common import E2E, check_preads, check_whole, read_all, refused_at, run, venv_python
from refs import round_out


def windows(x, w, s):
    n = (len(x) - w) // s + 1 if len(x) >= w else 0
    return np.stack([x[i * s:i * s + w] for i in range(n)])


WRITER = r'''
import sys, os
import numpy as np
import pyarrow as pa
d = sys.argv[1]
rng = np.random.default_rng(77)

def rows(n, hi, dt, lo=1, top=300):
    return [rng.integers(0, hi, rng.integers(lo, top)).astype(dt) for _ in range(n)]

def hf_table(n):
    ids = rows(n, 50257, np.int32)
    return pa.table({
        "text": pa.array(["t"] * n),
        "input_ids": pa.array(ids, type=pa.list_(pa.int32())),
        "attention_mask": pa.array([np.ones(len(r), np.int8) for r in ids],
                                   type=pa.list_(pa.int8())),
        "label": pa.array(rng.integers(-3, 9, n).astype(np.int64)),
    })

def stream(path, table, batch=1000, **opt):
    with pa.OSFile(path, "wb") as f:
        with pa.ipc.new_stream(f, table.schema, options=pa.ipc.IpcWriteOptions(**opt)) as w:
            for b in table.to_batches(max_chunksize=batch):
                w.write_batch(b)

def file_form(path, table, batch=1000, **opt):
    with pa.OSFile(path, "wb") as f:
        with pa.ipc.new_file(f, table.schema, options=pa.ipc.IpcWriteOptions(**opt)) as w:
            for b in table.to_batches(max_chunksize=batch):
                w.write_batch(b)

def flat(path, col):
    """pyarrow's own read of the file: the column's values, flattened."""
    try:
        t = pa.ipc.open_file(path).read_all()
    except pa.ArrowInvalid:
        t = pa.ipc.open_stream(path).read_all()
    c = t.column(col).combine_chunks()
    if pa.types.is_fixed_size_list(c.type):
        return c.flatten().to_numpy().reshape(len(c), c.type.list_size)
    if pa.types.is_list(c.type) or pa.types.is_large_list(c.type):
        return c.flatten().to_numpy()
    return c.to_numpy()

os.makedirs(os.path.join(d, "hf"), exist_ok=True)
stream(os.path.join(d, "hf", "cache-00000.arrow"), hf_table(2600))
stream(os.path.join(d, "hf", "cache-00001.arrow"), hf_table(1700))
big = pa.table({
    "input_ids": pa.array(rows(1500, 2**40, np.int64), type=pa.large_list(pa.int64())),
    "emb": pa.array(list(rng.standard_normal((1500, 8)).astype(np.float32)),
                    type=pa.list_(pa.float32(), 8)),
    "score": pa.array(rng.standard_normal(1500)),
})
file_form(os.path.join(d, "zstd.arrow"), big, 400, compression="zstd")
stream(os.path.join(d, "lz4.arrow"), big, 400, compression="lz4")
file_form(os.path.join(d, "plain.arrow"), big, 400)
# a sliced batch and an empty one between others
t = hf_table(900)
with pa.OSFile(os.path.join(d, "sliced.arrow"), "wb") as f:
    with pa.ipc.new_stream(f, t.schema) as w:
        b = t.to_batches()[0]
        w.write_batch(b.slice(0, 300))
        w.write_batch(b.slice(300, 0))
        w.write_batch(b.slice(317, 400))
# one batch: served as one run
stream(os.path.join(d, "one.arrow"), hf_table(50))
for name in ("hf/cache-00000.arrow", "hf/cache-00001.arrow", "sliced.arrow", "one.arrow"):
    for col in ("input_ids", "attention_mask", "label"):
        np.save(os.path.join(d, name.replace("/", "_") + "." + col + ".npy"),
                flat(os.path.join(d, name), col))
for name in ("zstd.arrow", "lz4.arrow", "plain.arrow"):
    for col in ("input_ids", "emb", "score"):
        np.save(os.path.join(d, name + "." + col + ".npy"), flat(os.path.join(d, name), col))
# refused: nulls, an indices file
nt = pa.table({"input_ids": pa.array([[1, 2], None, [3]], type=pa.list_(pa.int32()))})
stream(os.path.join(d, "nulls.arrow"), pa.concat_tables([hf_table(5).select(["input_ids"]), nt]),
       batch=5)
stream(os.path.join(d, "cache-indices.arrow"),
       pa.table({"indices": pa.array(rng.permutation(100).astype(np.uint64))}))
'''


class ArrowTest(E2E):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        venv_python(WRITER, cls.tmp)

    def ref(self, name, col):
        return np.load(self.p(name.replace("/", "_") + "." + col + ".npy"))

    def test_hf_cache_zero_config(self):
        with self.mount(self.p("hf/cache-00000.arrow")) as m:
            ids = self.ref("hf/cache-00000.arrow", "input_ids")
            meta = check_whole(self, m, "input_ids", ids.astype(np.int64), "int64")
            src = meta["sources"][0]
            self.assertEqual((src["kind"], src["dtype"]), ("runs", "int32"))
            check_whole(self, m, "attention_mask",
                        self.ref("hf/cache-00000.arrow", "attention_mask").astype(np.int64),
                        "int64")
            check_whole(self, m, "label",
                        round_out(self.ref("hf/cache-00000.arrow", "label").astype(np.float64),
                                  "float32"), "float32")
            check_preads(self, m, "input_ids", ids.astype(np.int64), seed=5)
            skipped = json.loads(read_all(m.path(".skipped.json")))
            self.assertEqual([e["path"] for e in skipped], ["/text"])

    def test_token_windows_across_files(self):
        ini = ("[train]\nsource = hf/cache-*.arrow\nwindow = 1025\nstride = 1024\n\n"
               "[mask]\nsource = hf/cache-*.arrow:attention_mask\ndtype = int8\n\n"
               "[i32]\nsource = hf/cache-00001.arrow:input_ids\ndtype = int32\n")
        with self.mount(self.write_ini(ini)) as m:
            a = self.ref("hf/cache-00000.arrow", "input_ids").astype(np.int64)
            b = self.ref("hf/cache-00001.arrow", "input_ids").astype(np.int64)
            check_whole(self, m, "train", np.concatenate([windows(a, 1025, 1024),
                                                          windows(b, 1025, 1024)]), "int64")
            mask = np.concatenate([self.ref("hf/cache-00000.arrow", "attention_mask"),
                                   self.ref("hf/cache-00001.arrow", "attention_mask")])
            check_whole(self, m, "mask", mask.astype(np.int8), "int8")
            check_whole(self, m, "i32", b.astype(np.int32), "int32")

    def test_many_files_past_the_descriptor_budget(self):
        """Multi-batch files closed by the budget and opened again to read
        are checked against the file's own size, not the stream's."""
        ini = "[ids]\nsource = hf/cache-*.arrow\n\n[big]\nsource = plain.arrow\n"
        ini += "".join(f"\n[s{k}]\nsource = {n}\n"
                       for k, n in enumerate(("sliced.arrow", "lz4.arrow", "zstd.arrow")))
        with self.mount(self.write_ini(ini), env={"DSVIEW_OPEN_FILES": "4"}) as m:
            for _ in range(2):  # every file closed and opened again between passes
                ids = np.concatenate([self.ref(f"hf/cache-0000{k}.arrow", "input_ids")
                                      for k in (0, 1)]).astype(np.int64)
                check_whole(self, m, "ids", ids, "int64")
                check_whole(self, m, "big", self.ref("plain.arrow", "input_ids")
                            .astype(np.int64), "int64")
                check_whole(self, m, "s0", self.ref("sliced.arrow", "input_ids")
                            .astype(np.int64), "int64")
                check_whole(self, m, "s1", self.ref("lz4.arrow", "input_ids")
                            .astype(np.int64), "int64")
            st = m.stats()
            self.assertEqual(st["source_fd_budget"], 4)
            self.assertLessEqual(st["source_fds"], 4)

    def test_file_form_compression_and_column_types(self):
        for name in ("plain.arrow", "zstd.arrow", "lz4.arrow"):
            with self.subTest(name), self.mount(self.p(name)) as m:
                ids = self.ref(name, "input_ids")
                check_whole(self, m, "input_ids", ids.astype(np.int64), "int64")
                check_preads(self, m, "input_ids", ids.astype(np.int64), seed=1)
                emb = self.ref(name, "emb")
                self.assertEqual(emb.shape, (1500, 8))
                check_whole(self, m, "emb", emb.astype(np.float32), "float32")
                check_whole(self, m, "score",
                            round_out(self.ref(name, "score"), "float32"), "float32")

    def test_sliced_empty_and_single_batches(self):
        for name, kind in (("sliced.arrow", "runs"), ("one.arrow", "run")):
            with self.subTest(name), self.mount(self.p(name)) as m:
                meta = check_whole(self, m, "input_ids",
                                   self.ref(name, "input_ids").astype(np.int64), "int64")
                self.assertEqual(meta["sources"][0]["kind"], kind)

    def test_info_verify_pack(self):
        r = run("info", "--json", self.p("hf/cache-00000.arrow") + ":input_ids")
        self.assertEqual(r.returncode, 0, r.stderr)
        src = json.loads(r.stdout)["source"]
        n = len(self.ref("hf/cache-00000.arrow", "input_ids"))
        self.assertEqual((src["dtype"], src["shape"]), ("int32", [n]))
        r = run("info", self.p("zstd.arrow"))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("Arrow IPC file, 3 arrays", r.stdout)
        r = run("verify", self.p("zstd.arrow"))
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        out = self.p("packed")
        os.makedirs(out, exist_ok=True)
        for spec, store, want in (
                ("hf/cache-00001.arrow", "a.h5", self.ref("hf/cache-00001.arrow", "input_ids")),
                ("lz4.arrow:emb", "b.h5", self.ref("lz4.arrow", "emb"))):
            r = run("pack", self.p(spec), os.path.join(out, store))
            self.assertEqual(r.returncode, 0, r.stderr)
            dt = "int64" if want.dtype.kind == "i" else "float32"
            ini = self.write_ini(f"[v]\nsource = packed/{store}\ndtype = {dt}\n", "p.ini")
            with self.mount(ini) as m:
                check_whole(self, m, "v", want.astype(dt), dt)

    def test_refused(self):
        refused_at(self, "[v]\nsource = nulls.arrow\n", 2,
                   ["nulls.arrow", "record batch 1", "1 null entries"])
        refused_at(self, "[v]\nsource = cache-indices.arrow\n", 2,
                   ["cache-indices.arrow", "indices file", "flatten_indices"])
        refused_at(self, "[v]\nsource = cache-indices.arrow:indices\n", 2,
                   ["cache-indices.arrow", "indices file"])
        refused_at(self, "[v]\nsource = hf/cache-00000.arrow:text\n", 2,
                   ["cache-00000.arrow", "column text"])
        refused_at(self, "[v]\nsource = hf/cache-00000.arrow:nope\n", 2, ["no column nope"])
        raw = open(self.p("hf/cache-00000.arrow"), "rb").read()
        plain = open(self.p("plain.arrow"), "rb").read()

        def put(name, data):
            with open(self.p(name), "wb") as f:
                f.write(data)

        put("cut.arrow", raw[:len(raw) // 2])
        refused_at(self, "[v]\nsource = cut.arrow\n", 2, ["cut.arrow", "runs past the end"])
        bad = bytearray(raw)
        bad[4:8] = (1 << 30).to_bytes(4, "little")
        put("metalen.arrow", bytes(bad))
        refused_at(self, "[v]\nsource = metalen.arrow\n", 2,
                   ["metalen.arrow", "metadata length"])
        put("nofoot.arrow", plain[:-3])
        refused_at(self, "[v]\nsource = nofoot.arrow\n", 2, ["nofoot.arrow", "ARROW1"])
        bad = bytearray(plain)
        flen = int.from_bytes(plain[-10:-6], "little")
        bad[-10 - flen:-10] = b"\xff" * flen
        put("foot.arrow", bytes(bad))
        refused_at(self, "[v]\nsource = foot.arrow\n", 2, ["foot.arrow", "footer"])
        # a damaged zstd frame of input_ids' values: verify names the run,
        # a read of it fails, the other columns are served
        z = bytearray(open(self.p("zstd.arrow"), "rb").read())
        frames = [m.start() for m in re.finditer(re.escape(b"\x28\xb5\x2f\xfd"), bytes(z))]
        at = frames[1] + 30  # a batch's offsets frame, then its values frame
        z[at:at + 40] = bytes(x ^ 0xFF for x in z[at:at + 40])
        put("zbad.arrow", bytes(z))
        r = run("verify", self.p("zbad.arrow") + ":input_ids")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("its frame does not decode", r.stdout + r.stderr)
        with self.mount(self.p("zbad.arrow"), expect_errors=[r"its frame does not decode"]) as m:
            with self.assertRaises(OSError):
                read_all(m.path("input_ids.dat"))
            check_whole(self, m, "score", round_out(self.ref("zstd.arrow", "score"), "float32"),
                        "float32")
        # the good file beside them is still served
        with self.mount(self.p("one.arrow")) as m:
            check_whole(self, m, "input_ids", self.ref("one.arrow", "input_ids").astype(np.int64),
                        "int64")


if __name__ == "__main__":
    import unittest
    unittest.main()
