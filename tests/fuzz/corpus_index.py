"""Seeds of fuzz_index: index cache files (source/index.h's layout), a
.npy's saved state, a chunked source's and an HDF5 dataset's entry,
valid and damaged. The first byte picks the part (0: the file, 1: a
flat state, 2: a chunked state, 3: an HDF5 entry)."""
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
