"""Seeds of the fuzz targets of NumPy archives and token files: npz
(np.savez, np.savez_compressed and damaged archives), tokens (llm.c,
Megatron, LitData) and arrow (pyarrow's writers, from the project venv).
Run by make_corpus.py; one family alone, from tests/fuzz:
/usr/bin/python3 -c 'import corpus_tokens as c; c.npz_seeds()'."""
import io
import json
import os
import struct
import subprocess

import numpy as np

from seedlib import OUT, VENV_PY, put


def npz_seeds():
    """npz: archives numpy writes (stored, with zip64 local headers, and
    deflated), then damaged end records, offsets and members."""
    rng = np.random.default_rng(5)
    b = io.BytesIO()
    np.savez(b, a=rng.integers(0, 9, (4, 3), dtype=np.int16), t=np.arange(50, dtype=np.uint16))
    raw = b.getvalue()
    put("npz", "stored", raw)
    b = io.BytesIO()
    np.savez_compressed(b, x=np.arange(64, dtype=np.float32))
    put("npz", "deflated", b.getvalue())
    eocd = raw.rindex(b"PK\x05\x06")
    cd = raw.index(b"PK\x01\x02")
    put("npz", "no_eocd", raw[:eocd])
    put("npz", "cd_offset_past_end", raw[:eocd + 16] + struct.pack("<I", 1 << 31) + raw[eocd + 20:])
    put("npz", "cd_count_huge", raw[:eocd + 10] + b"\xfe\xff" + raw[eocd + 12:])
    put("npz", "zip64_saturated", raw[:eocd + 16] + b"\xff\xff\xff\xff" + raw[eocd + 20:])
    put("npz", "name_len_huge", raw[:cd + 28] + b"\xff\xff" + raw[cd + 30:])
    put("npz", "local_off_past_end", raw[:cd + 42] + b"\xff\xff\xff\x7f" + raw[cd + 46:])
    put("npz", "member_cut", raw[:60] + raw[cd:])


def token_seeds():
    """tokens: an llm.c file, a Megatron index with its .bin's length, a
    LitData index and chunk (fuzz_tokens.c's framing), then damaged ones."""
    toks = np.arange(40, dtype=np.uint16)
    h = np.zeros(256, np.int32)
    h[0], h[1], h[2] = 20240520, 1, len(toks)
    put("tokens", "llmc", b"\0" + h.tobytes() + toks.tobytes())
    h[2] = 1 << 30
    put("tokens", "llmc_count_huge", b"\0" + h.tobytes() + toks.tobytes())
    lens = np.array([3, 5, 2], np.int32)
    ptr = np.array([0, 6, 16], np.int64)
    docs = np.arange(4, dtype=np.int64)
    idx = (b"MMIDIDX\0\0" + struct.pack("<QBQQ", 1, 8, 3, 4) + lens.tobytes() + ptr.tobytes()
           + docs.tobytes())
    put("tokens", "megatron", b"\1" + struct.pack("<H", 20) + idx)
    put("tokens", "megatron_bin_short", b"\1" + struct.pack("<H", 18) + idx)
    put("tokens", "megatron_count_huge", b"\1" + struct.pack("<H", 20) + idx[:18]
        + struct.pack("<Q", 1 << 62) + idx[26:])
    items = [np.arange(5, dtype=np.int32), np.arange(7, dtype=np.int32)]
    offs = np.array([0, 20, 48], np.uint32) + 4 + 12
    chunk = np.uint32(2).tobytes() + offs.tobytes() + b"".join(i.tobytes() for i in items)
    index = json.dumps({"chunks": [{"filename": "chunk-0-0.bin", "dim": 12}],
                        "config": {"item_loader": "TokensLoader", "compression": None,
                                   "data_format": ["no_header_tensor:16"]}}).encode()
    put("tokens", "litdata", b"\2" + index + b"\0" + chunk)
    put("tokens", "litdata_offsets_bad", b"\2" + index + b"\0" + chunk[:8] + b"\xff\xff" + chunk[10:])


def arrow_seeds():
    """arrow: files pyarrow writes (the venv's): a stream with a list<int32>
    column of several batches, the file form with zstd and lz4 bodies, then
    cut and damaged ones."""
    code = r'''
import sys, io, numpy as np, pyarrow as pa
t = pa.table({"input_ids": pa.array([np.arange(i % 7 + 1, dtype=np.int32) for i in range(30)],
                                    type=pa.list_(pa.int32())),
              "x": pa.array(np.arange(30, dtype=np.float32)),
              "f": pa.array([np.arange(4, dtype=np.int16)] * 30, type=pa.list_(pa.int16(), 4))})
def w(new, **o):
    b = io.BytesIO()
    with new(b, t.schema, options=pa.ipc.IpcWriteOptions(**o)) as wr:
        for r in t.to_batches(max_chunksize=10):
            wr.write_batch(r)
    return b.getvalue()
out = sys.argv[1]
for name, data in (("stream", w(pa.ipc.new_stream)), ("file_zstd", w(pa.ipc.new_file, compression="zstd")),
                   ("stream_lz4", w(pa.ipc.new_stream, compression="lz4"))):
    open(out + "/" + name, "wb").write(data)
'''
    d = os.path.join(OUT, "arrow")
    os.makedirs(d, exist_ok=True)
    subprocess.run([VENV_PY, "-c", code, d], check=True)
    s = open(os.path.join(d, "stream"), "rb").read()
    put("arrow", "stream_cut", s[:len(s) // 2])
    put("arrow", "stream_metalen", s[:4] + b"\xff\xff\xff\x0f" + s[8:])
    put("arrow", "stream_flipped", s[:40] + bytes(b ^ 0x55 for b in s[40:80]) + s[80:])
    f = open(os.path.join(d, "file_zstd"), "rb").read()
    put("arrow", "file_footer_len", f[:-10] + b"\xff\xff\x00\x00" + f[-6:])
