"""Token files of LLM trainers (token_writers.py writes them as llm.c,
Megatron-Core and litdata do), served through real mounts: each file one
1-D token stream, int64 unless the view asks for another type, windows
over it as over any 1-D source, never across files; info, verify, pack;
and every malformed header field, count and size refused naming the file
and the field, while the good files beside them are still served."""
import json
import os
import shutil
import struct

import numpy as np

from common import E2E, check_preads, check_whole, read_all, refused_at, run
from refs import int_reference, round_out
import token_writers as tw

RNG = np.random.default_rng(2024)


def windows(x, w, s):
    n = (len(x) - w) // s + 1 if len(x) >= w else 0
    return np.stack([x[i * s:i * s + w] for i in range(n)]) if n else np.zeros((0, w), x.dtype)


class TokensTest(E2E):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.gpt2 = RNG.integers(0, 50257, 7000).astype(np.uint16)
        cls.llama = RNG.integers(0, 128256, 3001).astype(np.uint32)
        cls.docs = [RNG.integers(0, 65000, RNG.integers(1, 400)) for _ in range(60)]
        cls.chunks = [[RNG.integers(0, 32000, RNG.integers(3, 90)) for _ in range(9)]
                      for _ in range(4)]
        d = os.path.join(cls.tmp, "tok")
        os.mkdir(d)
        tw.llmc(os.path.join(d, "shard_000.bin"), cls.gpt2)
        tw.llmc(os.path.join(d, "shard_001.bin"), cls.llama, "llama-3")
        tw.megatron(os.path.join(d, "meg"), cls.docs)
        tw.litdata(os.path.join(d, "lit"), cls.chunks)
        cls.meg = np.concatenate(cls.docs).astype(np.uint16)
        cls.lit = np.concatenate([np.concatenate(c) for c in cls.chunks]).astype(np.int32)

    def test_llmc_zero_config_int64(self):
        with self.mount(self.p("tok/shard_000.bin")) as m:
            meta = check_whole(self, m, "shard_000.bin", int_reference(self.gpt2, "int64"),
                               "int64")
            src = meta["sources"][0]
            self.assertEqual((src["kind"], src["dtype"]), ("run", "uint16"))
            check_preads(self, m, "shard_000.bin", int_reference(self.gpt2, "int64"),
                         rows=(0, 6999))
        with self.mount(self.p("tok/shard_001.bin"), "--dtype", "float32") as m:
            check_whole(self, m, "shard_001.bin",
                        round_out(self.llama.astype(np.float64), "float32"), "float32")

    def test_windows_per_file_and_integer_outputs(self):
        ini = ("[train]\nsource = tok/shard_*.bin\nwindow = 1025\nstride = 1024\n\n"
               "[meg]\nsource = tok/meg.idx\ndtype = int32\nwindow = 257\nstride = 128\n\n"
               "[lit]\nsource = tok/lit\ndtype = int32\nwindow = 65\nstride = 64\n\n"
               "[lit64]\nsource = tok/lit\n")
        with self.mount(self.write_ini(ini)) as m:
            want = np.concatenate([windows(self.gpt2.astype(np.int64), 1025, 1024),
                                   windows(self.llama.astype(np.int64), 1025, 1024)])
            check_whole(self, m, "train", want, "int64")
            check_whole(self, m, "meg", windows(self.meg.astype(np.int32), 257, 128), "int32")
            # LitData's chunks are one stream: windows cross chunk files
            check_whole(self, m, "lit", windows(self.lit, 65, 64), "int32")
            check_whole(self, m, "lit64", self.lit.astype(np.int64), "int64")
            check_preads(self, m, "lit64", self.lit.astype(np.int64), seed=3)

    def test_directory_of_token_files(self):
        """A directory mount serves the .idx (a Megatron index names
        itself) and the llm.c shards (their magic), and, given as a
        directory, a LitData dataset."""
        with self.mount(self.p("tok")) as m:
            check_whole(self, m, "meg", self.meg.astype(np.int64), "int64")
            check_whole(self, m, "shard_000.bin", self.gpt2.astype(np.int64), "int64")
            check_whole(self, m, "shard_001.bin", self.llama.astype(np.int64), "int64")
            self.assertFalse(os.path.exists(m.path("meg.bin.npy")))  # a Megatron .bin: raw
        with self.mount(self.p("tok/lit")) as m:
            meta = check_whole(self, m, "lit", self.lit.astype(np.int64), "int64")
            self.assertEqual(meta["sources"][0]["kind"], "runs")

    def test_info_verify_pack(self):
        for spec, kind, dtype, n in (("tok/shard_001.bin", "llmc", "uint32", 3001),
                                     ("tok/meg.idx", "megatron", "uint16", len(self.meg)),
                                     ("tok/lit", "litdata", "int32", len(self.lit))):
            r = run("info", "--json", self.p(spec))
            self.assertEqual(r.returncode, 0, r.stderr)
            j = json.loads(r.stdout)
            self.assertEqual(j["kind"], kind)
            self.assertEqual((j["source"]["dtype"], j["source"]["shape"]), (dtype, [n]))
            r = run("verify", self.p(spec))
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertIn("OK", r.stdout)
        out = self.p("packed")
        os.makedirs(out, exist_ok=True)
        for spec, store, want in (("tok/shard_000.bin", "a.h5", self.gpt2),
                                  ("tok/meg.idx", "b.h5", self.meg),
                                  ("tok/lit", "c.h5", self.lit)):
            r = run("pack", self.p(spec), os.path.join(out, store))
            self.assertEqual(r.returncode, 0, r.stderr)
            with self.mount(self.write_ini(f"[v]\nsource = packed/{store}\ndtype = int64\n",
                                           "p.ini")) as m:
                check_whole(self, m, "v", want.astype(np.int64), "int64")

    def test_litdata_chunk_files_under_the_descriptor_budget(self):
        """A LitData dataset of more chunk files than the limit of open
        files: each chunk file's descriptor is the cache's, under its
        budget (48 of 64), closed and opened again as the stream is read."""
        chunks = [[RNG.integers(0, 32000, RNG.integers(1, 40)) for _ in range(3)]
                  for _ in range(200)]
        tw.litdata(self.p("many_lit"), chunks)
        want = np.concatenate([np.concatenate(c) for c in chunks]).astype(np.int64)
        tiny = ("prlimit", "--nofile=64:64", "--")
        with self.mount(self.p("many_lit"), wrap=tiny) as m:
            for _ in range(2):  # the second pass reopens what the first closed
                check_whole(self, m, "many_lit", want, "int64")
            st = m.stats()
            self.assertEqual(st["source_fd_budget"], 48)
            self.assertLessEqual(st["source_fds"], 48)
            self.assertGreater(st["source_reopens"], 0)
            self.assertLess(len(os.listdir(f"/proc/{m.pid}/fd")), 64)
        r = run("verify", self.p("many_lit"), wrap=tiny)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("OK", r.stdout)
        r = run("pack", "--force", self.p("many_lit"), self.p("many_lit.h5"), wrap=tiny)
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_rows_documents_needs_seq_len(self):
        refused_at(self, "[v]\nsource = tok/meg.idx\nrows = documents\n", 3,
                   ["rows = documents needs seq_len = L", "cut or padded"])

    def put(self, name, data):
        with open(self.p(name), "wb") as f:
            f.write(data)
        return name

    def test_llmc_refused(self):
        raw = open(self.p("tok/shard_000.bin"), "rb").read()

        def bad(name, at, value, *want):
            b = bytearray(raw)
            b[at:at + len(value)] = value
            self.put(name, bytes(b))
            refused_at(self, f"[v]\nsource = {name}\n", 2, [name, *want])

        bad("ver.bin", 4, struct.pack("<i", 3), "version 3")
        bad("neg.bin", 8, struct.pack("<i", -5), "token count -5 is negative")
        bad("count.bin", 8, struct.pack("<i", 7001), "token count 7001")
        bad("eval.bin", 0, struct.pack("<i", 20240522), "eval file")
        bad("mismatch.bin", 0, struct.pack("<i", 20240801), "version 1")
        self.put("short.bin", raw[:-2])
        refused_at(self, "[v]\nsource = short.bin\n", 2, ["short.bin", "token count 7000"])
        self.put("head.bin", raw[:1000])
        # too short for any magic to be looked at: a raw file without dtype
        refused_at(self, "[v]\nsource = head.bin\n", 2, ["head.bin"])

    def test_megatron_refused(self):
        d = self.p("megbad")
        shutil.rmtree(d, ignore_errors=True)
        os.mkdir(d)
        idx = open(self.p("tok/meg.idx"), "rb").read()
        binb = open(self.p("tok/meg.bin"), "rb").read()
        S = len(self.docs)

        def bad(name, data, bin_data=binb):
            with open(os.path.join(d, name + ".idx"), "wb") as f:
                f.write(data)
            with open(os.path.join(d, name + ".bin"), "wb") as f:
                f.write(bin_data)

        def patch(at, value):
            b = bytearray(idx)
            b[at:at + len(value)] = value
            return bytes(b)

        cases = {
            "magic": (patch(0, b"MMIDIDY"), "magic"),
            "version": (patch(9, struct.pack("<Q", 2)), "index version 2"),
            "code": (patch(17, b"\x09"), "dtype code 9"),
            "count": (patch(18, struct.pack("<Q", S + 1)), "need more than its"),
            "huge": (patch(18, struct.pack("<Q", 1 << 60)), "sequence count"),
            "length": (patch(34 + 4 * 5, struct.pack("<i", -1)), "sequence_lengths[5] is -1"),
            "pointer": (patch(34 + 4 * S + 8 * 3, struct.pack("<q", 1)),
                        "sequence_pointers[3]"),
            "docs": (patch(34 + 12 * S + 8 * 4, struct.pack("<q", 999)),
                     "document_indices[4] is 999"),
            "cut": (idx[:-8], "need more than its %d bytes" % (len(idx) - 8)),
            "extra": (idx + b"\0" * 3, "is %d bytes, not the %d" % (len(idx) + 3, len(idx))),
        }
        for name, (data, _) in cases.items():
            bad(name, data)
        # the .bin holds int32 tokens where the code says uint16
        bad("wide", idx, self.meg.astype(np.int32).tobytes())
        bad("shortbin", idx, binb[:-2])
        for name, (_, why) in cases.items():
            with self.subTest(name):
                refused_at(self, f"[v]\nsource = megbad/{name}.idx\n", 2, [f"{name}.idx", why])
        refused_at(self, "[v]\nsource = megbad/wide.idx\n", 2,
                   ["wide.bin", "dtype code 8 (uint16)", "its size fits int32 (code 4)"])
        refused_at(self, "[v]\nsource = megbad/shortbin.idx\n", 2, ["shortbin.bin"])
        os.remove(os.path.join(d, "cut.bin"))
        tw.megatron(os.path.join(d, "good"), self.docs)
        # a directory mount: each bad index skipped with its reason, the good one served
        with self.mount(d) as m:
            check_whole(self, m, "good", self.meg.astype(np.int64), "int64")
            skipped = {e["path"]: e["reason"] for e in json.loads(read_all(m.path(".skipped.json")))}
            self.assertEqual(len(skipped), len(cases) + 2, skipped)
            self.assertIn("dtype code 9", skipped["code.idx"])

    def test_litdata_refused(self):
        base = self.p("litbad")
        shutil.rmtree(base, ignore_errors=True)
        os.mkdir(base)

        def make(name, **config):
            return tw.litdata(os.path.join(base, name), self.chunks, **config)

        make("comp", compression="zstd")
        make("loader", item_loader="PyTreeLoader")
        make("fmt", data_format=["no_header_tensor:10"])
        d = make("missing")
        os.remove(os.path.join(d, "chunk-0-2.bin"))
        d = make("offsets")
        with open(os.path.join(d, "chunk-0-1.bin"), "r+b") as f:
            f.seek(4 + 4 * 3)
            f.write(struct.pack("<I", 1))
        d = make("dim")
        j = json.load(open(os.path.join(d, "index.json")))
        j["chunks"][0]["dim"] += 1
        json.dump(j, open(os.path.join(d, "index.json"), "w"))
        d = make("cut")
        c = os.path.join(d, "chunk-0-3.bin")
        data = open(c, "rb").read()
        open(c, "wb").write(data[:-4])
        d = make("json")
        open(os.path.join(d, "index.json"), "a").write("}")
        for name, want in (("comp", "config.compression is zstd"),
                           ("loader", "config.item_loader is PyTreeLoader"),
                           ("fmt", "no_header_tensor:10"),
                           ("missing", "chunk-0-2.bin"), ("offsets", "offsets[3] is 1"),
                           ("dim", "chunks[0].dim"), ("cut", "offsets[9]"),
                           ("json", "not JSON")):
            with self.subTest(name):
                refused_at(self, f"[v]\nsource = litbad/{name}\n", 2, [name, want])
        # beside them the good dataset still mounts
        with self.mount(self.p("tok/lit")) as m:
            check_whole(self, m, "lit", self.lit.astype(np.int64), "int64")


if __name__ == "__main__":
    import unittest
    unittest.main()


def idx_documents(prefix):
    """A Megatron index's documents, decoded in numpy from its documented
    layout (megatron/core/datasets/indexed_dataset.py): the header, then
    sequence_lengths, sequence_pointers and document_indices, each
    document the .bin's tokens of its sequences."""
    raw = open(prefix + ".idx", "rb").read()
    assert raw[:9] == b"MMIDIDX\x00\x00" and struct.unpack("<Q", raw[9:17])[0] == 1
    dt = {1: np.uint8, 2: np.int8, 3: np.int16, 4: np.int32, 5: np.int64, 8: np.uint16}[raw[17]]
    S, D = struct.unpack("<QQ", raw[18:34])
    lengths = np.frombuffer(raw, np.int32, S, 34)
    pointers = np.frombuffer(raw, np.int64, S, 34 + 4 * S)
    doc_idx = np.frombuffer(raw, np.int64, D, 34 + 12 * S)
    tokens = np.fromfile(prefix + ".bin", dt)
    size = np.dtype(dt).itemsize
    seqs = [tokens[p // size:p // size + n] for p, n in zip(pointers, lengths)]
    return [np.concatenate([np.zeros(0, dt)] + seqs[a:b]) for a, b in zip(doc_idx[:-1], doc_idx[1:])]


def cut_or_pad(documents, seq_len, pad):
    out = np.full((len(documents), seq_len), pad, np.int64)
    for i, d in enumerate(documents):
        out[i, :min(len(d), seq_len)] = d[:seq_len]
    return out


class MegatronDocuments(E2E):
    """rows = documents: a Megatron index's documents (document_indices
    grouping its sequences) as rows of seq_len tokens, cut or padded."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        rng = np.random.default_rng(77)
        # 40 sequences in 17 documents of 1 to 4 sequences, some empty
        seqs = [rng.integers(0, 65535, rng.integers(0, 90)) for _ in range(40)]
        seqs[7] = seqs[8] = seqs[10] = np.zeros(0, np.int64)  # document 4: empty
        ends = np.cumsum([1, 4, 2, 3, 1, 2, 4, 1, 3, 2, 1, 4, 2, 3, 3, 3, 1])
        assert ends[-1] == 40
        cls.prefix = os.path.join(cls.tmp, "docs")
        tw.megatron(cls.prefix, seqs, doc_idx=[0, *ends])
        tw.megatron(os.path.join(cls.tmp, "other"), seqs[:5], np.int32)
        tw.megatron(os.path.join(cls.tmp, "flt"), seqs[:3], np.float32)
        cls.docs = idx_documents(cls.prefix)
        assert len(cls.docs) == 17 and any(len(d) == 0 for d in cls.docs)

    def test_cut_and_padded(self):
        ini = self.write_ini(
            "[d64]\nsource = docs.idx\nrows = documents\nseq_len = 64\n"
            "[d300]\nsource = docs.idx\nrows = documents\nseq_len = 300\npad_token = 50256\n"
            "dtype = int32\n"
            "[both]\nsource = docs.idx\nsource = other.idx\nrows = documents\nseq_len = 9\n"
            "pad_token = 0\n"
            "[win]\nsource = docs.idx\nrows = documents\nseq_len = 64\nwindow = 16\nstride = 16\n"
            "[f32]\nsource = docs.idx\nrows = documents\nseq_len = 5\ndtype = float32\n", "d.ini")
        d64 = cut_or_pad(self.docs, 64, -1)
        with self.mount(ini) as m:
            meta = check_whole(self, m, "d64", d64, "int64")
            src = meta["sources"][0]
            self.assertEqual((src["kind"], src["dtype"]), ("documents", "int32"))
            check_preads(self, m, "d64", d64, rows=(1, 7, 16))
            check_whole(self, m, "d300", cut_or_pad(self.docs, 300, 50256).astype(np.int32),
                        "int32")
            other = idx_documents(os.path.join(self.tmp, "other"))
            check_whole(self, m, "both", np.concatenate([cut_or_pad(self.docs, 9, 0),
                                                         cut_or_pad(other, 9, 0)]), "int64")
            check_whole(self, m, "win", d64.reshape(17, 4, 16).reshape(68, 16), "int64")
            check_whole(self, m, "f32", round_out(cut_or_pad(self.docs, 5, -1).astype(np.float64),
                                                  "float32"), "float32")

    def test_refused(self):
        refused_at(self, "[v]\nsource = docs.idx\nseq_len = 8\n", 3,
                   ["seq_len needs rows = documents"])
        refused_at(self, "[v]\nsource = docs.idx\npad_token = 8\n", 3,
                   ["pad_token needs rows = documents"])
        refused_at(self, "[v]\nsource = docs.idx\nrows = documents\nseq_len = 0\n", 4,
                   ["seq_len '0' must be an integer from 1 to"])
        refused_at(self, "[v]\nsource = docs.idx\nrows = documents\nseq_len = 8\n"
                   "pad_token = x\n", 5, ["pad_token 'x' must be an integer"])
        refused_at(self, "[v]\nsource = docs.bin\nsource_dtype = uint16\nsource_shape = -1\n"
                   "rows = documents\nseq_len = 8\n", 5, ["not a raw source's rows"])
        refused_at(self, "[v]\nsource = flt.idx\nrows = documents\nseq_len = 8\n", 2,
                   ["flt.idx", "dtype code 7 is float32"])
        with open(self.p("tok.bin"), "wb") as f:  # an llm.c file: no documents
            f.write(struct.pack("<256i", 20240520, 1, 3, *([0] * 253)) + b"\1\0\2\0\3\0")
        refused_at(self, "[v]\nsource = tok.bin\nrows = documents\nseq_len = 8\n", 2,
                   ["tok.bin", "not a Megatron index"])
        # the default pad (-1) makes uint16 tokens int32 rows: a uint16
        # output is refused as any narrowing is
        refused_at(self, "[v]\nsource = docs.idx\nrows = documents\nseq_len = 8\n"
                   "dtype = uint16\n", 5, ["int32 values may not fit uint16"])
        # nothing else broke: the same index with a pad that fits
        ini = self.write_ini("[v]\nsource = docs.idx\nrows = documents\nseq_len = 8\n"
                             "dtype = uint16\npad_token = 65535\n", "ok.ini")
        with self.mount(ini) as m:
            check_whole(self, m, "v", cut_or_pad(self.docs, 8, 65535).astype(np.uint16), "uint16")
