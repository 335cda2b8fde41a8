"""Token files as their trainers write them, in numpy, byte for byte after
the writers' own code (the packages themselves need torch, which the
project venv does not carry): llm.c's dev/data/data_common.py
write_datafile, Megatron-Core's indexed_dataset.py _IndexWriter (and its
.bin: the sequences one after the other), and litdata's TokensLoader
chunks (writer.py _create_chunk: u32 count, u32 absolute offsets, the
items) with the index.json its optimize() writes."""
import json
import os
import struct

import numpy as np

LLMC = {"gpt-2": (20240520, 1, np.uint16), "llama-3": (20240801, 7, np.uint32)}
MEGATRON_CODES = {np.uint8: 1, np.int8: 2, np.int16: 3, np.int32: 4, np.int64: 5,
                  np.float64: 6, np.float32: 7, np.uint16: 8}
LITDATA_CODES = {np.int32: 16, np.int64: 17, np.uint16: 20, np.uint8: 11, np.int16: 13}


def llmc(path, toks, model="gpt-2"):
    magic, version, dtype = LLMC[model]
    header = np.zeros(256, dtype=np.int32)
    header[0], header[1], header[2] = magic, version, len(toks)
    with open(path, "wb") as f:
        f.write(header.tobytes())
        f.write(np.asarray(toks, dtype=dtype).tobytes())
    return path


def megatron(prefix, docs, dtype=np.uint16, doc_idx=None):
    """docs: a list of sequences of tokens, each a document of its own
    unless doc_idx (Megatron's document_indices: 0, then the sequence each
    document ends at) groups them."""
    docs = [np.asarray(d, dtype=dtype) for d in docs]
    with open(prefix + ".bin", "wb") as f:
        for d in docs:
            f.write(d.tobytes())
    lengths = np.array([len(d) for d in docs], dtype=np.int32)
    pointers = np.zeros(len(docs), dtype=np.int64)
    if len(docs) > 1:
        pointers[1:] = np.cumsum(lengths[:-1].astype(np.int64)) * np.dtype(dtype).itemsize
    doc_idx = np.asarray(np.arange(len(docs) + 1) if doc_idx is None else doc_idx, np.int64)
    with open(prefix + ".idx", "wb") as f:
        f.write(b"MMIDIDX\x00\x00")
        f.write(struct.pack("<Q", 1))
        f.write(struct.pack("<B", MEGATRON_CODES[dtype]))
        f.write(struct.pack("<Q", len(lengths)))
        f.write(struct.pack("<Q", len(doc_idx)))
        f.write(lengths.tobytes())
        f.write(pointers.tobytes())
        f.write(doc_idx.tobytes())
    return prefix + ".idx"


def litdata_chunk(items):
    n = np.uint32(len(items))
    offsets = np.array([0] + [i.nbytes for i in items]).cumsum().astype(np.uint32)
    offsets += len(n.tobytes()) + len(offsets.tobytes())
    return n.tobytes() + offsets.tobytes() + b"".join(i.tobytes() for i in items)


def litdata(d, chunks, dtype=np.int32, **config):
    """chunks: a list of chunks, each a list of items (token arrays)."""
    os.makedirs(d, exist_ok=True)
    listed = []
    for k, items in enumerate(chunks):
        items = [np.asarray(i, dtype=dtype) for i in items]
        data = litdata_chunk(items)
        name = f"chunk-0-{k}.bin"
        with open(os.path.join(d, name), "wb") as f:
            f.write(data)
        listed.append({"chunk_bytes": len(data), "chunk_size": len(items),
                       "dim": int(sum(len(i) for i in items)), "filename": name})
    cfg = {"chunk_bytes": 1 << 26, "chunk_size": None, "compression": None,
           "data_format": [f"no_header_tensor:{LITDATA_CODES[dtype]}"],
           "data_spec": "[1, {\"type\": null, \"context\": null, \"children_spec\": []}]",
           "encryption": None, "item_loader": "TokensLoader"}
    cfg.update(config)
    with open(os.path.join(d, "index.json"), "w") as f:
        json.dump({"chunks": listed, "config": cfg, "updated_at": "1"}, f)
    return d
