"""Seeds of fuzz_index: index cache files (source/index.h's layout), a
.npy's saved state, a chunked source's and an HDF5 dataset's entry,
valid and damaged. The first byte picks the part (0: the file, 1: a
flat state, 2: a chunked state, 3: an HDF5 entry, 4: an EDF/BDF
recording's entry, 5: an llm.c token run's, 6: a Megatron index's;
others: the file)."""
import struct

from seedlib import put

WHAT = b"/fuzz/m.ini"


def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def flat_state(kind=0, dtype=3, shape=(3, 4), offset=128, stored=24):
    """A flat source's saved fields (index_flat.c): kind, dtype, ndim,
    shape, data_offset, stored bytes. dtype 3 is int16 in dsview's table."""
    return struct.pack(f"<{3 + len(shape) + 2}Q", kind, dtype, len(shape), *shape, offset, stored)


def chunked_state(chunk_rows=2, codec=0, shape=(5, 4), chunks=((64, 16), (16, 16), (96, 16)),
                  fields=None, nchunks=None):
    """A chunked source's saved fields (index_chunks.c): kind 3 (HDF5
    chunked), dtype 3 (int16), ndim, shape, then chunk_rows, codec,
    fletcher32, the codec's, Fletcher32's and shuffle's filter bits,
    shuffle, bitshuffle's three, the LZ4 block, the table's offset and
    blocks, the chunk count; then each chunk's offset and mask << 32 |
    size. The fuzz target's file is 256 bytes."""
    head = [3, 3, len(shape), *shape]
    f = fields or [chunk_rows, codec, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                   len(chunks) if nchunks is None else nchunks]
    body = struct.pack(f"<{len(head) + len(f)}Q", *head, *f)
    for off, sm in chunks:
        body += struct.pack("<2Q", off, sm)
    return body


def h5_entry(layout, dataset=b"/x", attrs=b'{"rate":250.0}', dims=None):
    """An HDF5 entry (h5_index.c): the layout's length and bytes, then the
    dataset's path, attributes and axis names, each a u64 of length + 1
    (0: none) and the bytes."""
    def text(t):
        return struct.pack("<Q", 0) if t is None else struct.pack("<Q", len(t) + 1) + t
    return struct.pack("<Q", len(layout)) + layout + text(dataset) + text(attrs) + text(dims)


def chunked_seeds():
    put("index", "chunked", b"\2" + chunked_state())
    put("index", "chunked-deflate", b"\2" + chunked_state(codec=7, chunks=((0, 40), (40, 3), (43, 200))))
    put("index", "chunked-lz4", b"\2" + chunked_state(codec=1, chunks=((0, 30), (30, 16 | 1 << 32), (46, 60))))
    put("index", "chunked-count", b"\2" + chunked_state(nchunks=1 << 60))
    put("index", "chunked-short", b"\2" + chunked_state()[:-5])
    put("index", "chunked-past-end", b"\2" + chunked_state(chunks=((64, 16), (16, 16), (250, 16))))
    put("index", "h5-chunked", b"\3" + h5_entry(chunked_state(), dims=b'["time",null]'))
    put("index", "h5-contiguous", b"\3" + h5_entry(flat_state(kind=2, offset=16)))
    put("index", "h5-other-dataset", b"\3" + h5_entry(chunked_state(), dataset=b"/y"))
    put("index", "h5-bad-attrs", b"\3" + h5_entry(chunked_state(), attrs=b"[1,"))


def edf_entry(bdf=0, plus=1, records=18, duration=1.0, signals=None, ns=None):
    """A recording's entry (edf_index.c): bdf, plus, header bytes, records,
    duration's bits, ns, the start; per signal its label and unit
    (NUL-padded), physical minimum and maximum, digital ones, samples a
    record. The fuzz target's file is 512 + 200 * 18 bytes: one EDF signal
    of 100 samples a record."""
    signals = signals or [(b"Fp1", b"uV", -250.5, 300.25, -32768, 32767, 100)]
    n = len(signals) if ns is None else ns
    body = struct.pack("<4Qd Q", bdf, plus, 256 * (n + 1), records, duration, n)
    body += b"06.12.26 04.45.00"
    for label, unit, pmin, pmax, dmin, dmax, spr in signals:
        body += label.ljust(16, b"\0") + unit.ljust(8, b"\0")
        body += struct.pack("<2d2qQ", pmin, pmax, dmin, dmax, spr)
    return body


def edf_seeds():
    put("index", "edf", b"\4" + edf_entry())
    # a header of 768 bytes: 19 records of 88 samples fill the file
    put("index", "edf-two", b"\4" + edf_entry(records=19, signals=[
        (b"Fp1", b"uV", -250.5, 300.25, -32768, 32767, 48),
        (b"EDF Annotations", b"", 0.0, 0.0, -32768, 32767, 40)]))
    put("index", "edf-bdf-size", b"\4" + edf_entry(bdf=1))
    put("index", "edf-no-scale", b"\4" + edf_entry(
        signals=[(b"Fp1", b"uV", 1.0, 1.0, -32768, 32767, 100)]))
    put("index", "edf-ns", b"\4" + edf_entry(ns=4097))
    put("index", "edf-cut", b"\4" + edf_entry()[:-1])


def token_entry(dtype=2, off=1024, count=50, tokens=1, why=b"llm.c GPT-2 tokens, version 1"):
    """A token run's entry (tokens_index.c): dtype (2: uint16), offset,
    count, tokens, the file's stamp (the fuzz target sets it to the real
    file's), the info text. The fuzz target's llm.c file is 1024 + 100
    bytes, its Megatron .bin 100 bytes."""
    return struct.pack("<8Q", dtype, off, count, tokens, 0, 0, 0, 0) + \
        struct.pack("<Q", len(why)) + why


def token_seeds():
    put("index", "llmc", b"\5" + token_entry())
    put("index", "llmc-count", b"\5" + token_entry(count=51))
    put("index", "llmc-why", b"\5" + token_entry(why=b"\x01"))
    put("index", "megatron", b"\6" + token_entry(off=0, why=b"Megatron, 3 sequences, 2 documents"))
    put("index", "megatron-int32", b"\6" + token_entry(dtype=5, off=0, count=25, why=b"Megatron"))
    put("index", "megatron-float", b"\6" + token_entry(dtype=9, off=0, count=25, tokens=0, why=b""))


def index_file(entries, version=1, what=WHAT):
    body = b"DSVIDX\r\n" + struct.pack("<IIQ", version, 0, len(entries))
    body += struct.pack("<I", len(what)) + what
    for key, stamp, fmt, blob in entries:
        body += struct.pack("<I", len(key)) + key + struct.pack("<4Q", *stamp)
        body += bytes([len(fmt)]) + fmt + struct.pack("<I", len(blob)) + blob
    return body + struct.pack("<I", crc32c(body))


def index_seeds():
    st = (152, 1700000000000000000, 7, 2049)
    good = index_file([(b"/fuzz/a.npy", st, b"npy", flat_state()),
                       (b"/fuzz/b.h5\0/x", st, b"hdf5", b"\1\2\3"),
                       (b"/fuzz/c.bin\0raw 3 -1 4", st, b"raw", flat_state(kind=1))])
    put("index", "file", b"\0" + good)
    put("index", "empty", b"\0" + index_file([]))
    put("index", "version2", b"\0" + index_file([], version=2))
    put("index", "foreign", b"\0" + index_file([], what=b"/elsewhere.ini"))
    flipped = bytearray(good)
    flipped[40] ^= 4
    put("index", "flipped", b"\0" + bytes(flipped))
    put("index", "cut", b"\0" + good[:-9])
    put("index", "state", b"\1" + flat_state())
    put("index", "state-past-end", b"\1" + flat_state(offset=4096))
    put("index", "state-huge-shape", b"\1" + flat_state(shape=(1 << 40, 1 << 30)))
    put("index", "state-short", b"\1" + flat_state()[:-3])
    chunked_seeds()
    edf_seeds()
    token_seeds()
