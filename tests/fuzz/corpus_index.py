"""Seeds of fuzz_index: index cache files (source/index.h's layout) and a
.npy's saved state, valid and damaged. The first byte picks the part
(even: the file, odd: the state)."""
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
