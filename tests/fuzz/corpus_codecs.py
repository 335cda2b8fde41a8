"""Seeds of the decoders' fuzz targets: lz4 (HDF5 32004 frames),
lz4block, bshuf, blosc, blosc2, zlib, devlz4 (the GPU's LZ4 decoder) and
other writers' quirks (blosc, zstd, lz4). Run by make_corpus.py; one family
alone, from tests/fuzz:
/usr/bin/python3 -c 'import corpus_codecs as c; c.devlz4_seeds()'."""
import os
import shutil
import struct
import subprocess
import tempfile

import h5py
import hdf5plugin
import numpy as np

from seedlib import HERE, OUT, VENV_PY, put


def lz4_seeds(rng):
    """lz4 and lz4block: frames hdf5plugin wrote, read back raw, and
    damaged ones (one file of hdf5plugin's for both)."""
    tmp = tempfile.mkdtemp()
    try:
        p = os.path.join(tmp, "l.h5")
        img = (np.arange(4096) % 251).astype(np.uint8)
        with h5py.File(p, "w") as f:
            f.create_dataset("a", data=img, chunks=(4096,), **hdf5plugin.LZ4())
            f.create_dataset("b", data=rng.integers(0, 256, 3000, dtype=np.uint8), chunks=(3000,),
                             **hdf5plugin.LZ4(nbytes=1024))
        with h5py.File(p, "r") as f:
            for name in ("a", "b"):
                _, frame = f[name].id.read_direct_chunk((0,))
                put("lz4", f"frame_{name}", frame)
                put("lz4", f"frame_{name}_cut", frame[:len(frame) // 2])
                bad = bytearray(frame)
                bad[3] ^= 0x40  # raw size grows
                put("lz4", f"frame_{name}_rawsize", bytes(bad))
        put("lz4", "header_only", struct.pack(">QI", 100, 100))
        put("lz4", "huge_raw", struct.pack(">QI", 2**62, 2**30) + struct.pack(">I", 5) + b"\x50abcd")
        put("lz4", "zero_block", struct.pack(">QI", 10, 0))
        # lz4block: frames of many blocks (compressible, noise stored raw,
        # mixed), and damaged ones: a block size 0, a stored size 0 or past
        # the end, block counts whose headers cannot fit, cut and trailing
        with h5py.File(p, "w") as f:
            mixed = np.concatenate([img, rng.integers(0, 256, 2000, dtype=np.uint8), img[:999]])
            for name, data, nbytes in (("img", img, 512), ("noise", rng.integers(0, 256, 3000, dtype=np.uint8), 1000),
                                       ("mixed", mixed, 700), ("one", img, 0)):
                f.create_dataset(name, data=data, chunks=(len(data),), **hdf5plugin.LZ4(nbytes=nbytes))
        with h5py.File(p, "r") as f:
            for name in ("img", "noise", "mixed", "one"):
                _, frame = f[name].id.read_direct_chunk((0,))
                put("lz4block", f"frame_{name}", frame)
                put("lz4block", f"frame_{name}_cut", frame[:len(frame) * 2 // 3])
                put("lz4block", f"frame_{name}_trailing", frame + b"\0")
                second = 12 + 4 + struct.unpack(">I", frame[12:16])[0]
                for label, v in (("zero", 0), ("past", len(frame)), ("huge", 0xFFFFFFF0)):
                    bad = bytearray(frame)
                    bad[second:second + 4] = struct.pack(">I", v)
                    put("lz4block", f"frame_{name}_size_{label}", bytes(bad))
        put("lz4block", "block_size_zero", struct.pack(">QI", 10, 0) + struct.pack(">I", 10) + bytes(10))
        put("lz4block", "block_over_chunk", struct.pack(">QII", 4, 2**32 - 1, 4) + b"abcd")
        put("lz4block", "count_overflow", struct.pack(">QI", 2**63 - 1, 1) + bytes(64))
        # a hostile table's row (k = 4 blocks of 8 bytes) and stored blocks
        blocks = b"".join(struct.pack(">I", 8) + bytes([65 + i]) * 8 for i in range(4))
        for label, sizes in (("good", (8, 8, 8, 8)), ("zero", (8, 0, 8, 8)),
                             ("huge", (8, 0xFFFFFFF0, 8, 8)), ("long", (8, 8, 40, 8))):
            row = b"".join(struct.pack("<II", n, 0) for n in sizes)
            put("lz4block", f"table_{label}", bytes([3, 7, 0]) + row + blocks)
    finally:
        shutil.rmtree(tmp)


def bshuf_seeds():
    """bitshuffle: chunks the real plugin wrote (tests/unit/fixtures), behind
    fuzz_bshuf's 5-byte prefix (element size, compression, count, block)."""
    fx = os.path.join(HERE, "..", "unit", "fixtures")
    for name, es, comp, n, block in (("lz4_i16", 2, 1, 105, 0), ("zstd_f32", 4, 2, 210, 8),
                                     ("none_u8", 1, 0, 900, 0), ("lz4_f64", 8, 1, 20, 2)):
        with open(os.path.join(fx, "bshuf_%s.bin" % name), "rb") as f:
            chunk = f.read()
        pre = bytes([es - 1, comp]) + struct.pack(">H", n) + bytes([block])
        put("bshuf", name, pre + chunk)
        put("bshuf", name + "_cut", pre + chunk[:len(chunk) * 2 // 3])
    put("bshuf", "garbage", bytes([3, 1, 0, 64, 0]) + bytes(range(200)))


def blosc_seeds():
    """fuzz_blosc: buffers from libblosc's compressor (every inner codec,
    shuffles, a stored one, a multi-block one) and broken headers."""
    import ctypes
    lib = ctypes.CDLL("libblosc.so.1")
    data = (np.arange(3000, dtype=np.int32) // 5).tobytes()

    def comp(cname, shuffle, typesize, src, clevel=5, blocksize=0):
        dst = ctypes.create_string_buffer(len(src) + 16)
        n = lib.blosc_compress_ctx(clevel, shuffle, ctypes.c_size_t(typesize), ctypes.c_size_t(len(src)),
                                   src, dst, ctypes.c_size_t(len(src) + 16), cname.encode(),
                                   ctypes.c_size_t(blocksize), 1)
        assert n >= 16, (cname, n)
        return dst.raw[:n]
    for i, cname in enumerate(("blosclz", "lz4", "lz4hc", "snappy", "zlib", "zstd")):
        put("blosc", f"{cname}_shuf{i % 3}", comp(cname, i % 3, 4, data[:1200]))
    put("blosc", "stored", comp("lz4", 0, 1, np.random.default_rng(5).bytes(300)))
    multi = comp("blosclz", 1, 4, data, blocksize=1024)
    put("blosc", "multiblock", multi)
    bad = bytearray(multi)
    bad[4] ^= 1
    put("blosc", "wrong_nbytes", bytes(bad))
    put("blosc", "cut", multi[:len(multi) // 2])
    bad = bytearray(multi)
    bad[20:24] = struct.pack("<I", len(multi) + 100)
    put("blosc", "bstart_past_end", bytes(bad))
    put("blosc", "header_only", multi[:16])
    # round-trip half: codec, shuffle/typesize, level, then the bytes
    put("blosc", "roundtrip", bytes([5, 7, 9]) + data[:500])


BLOSC2_CHUNKS = """
import sys
import h5py
import hdf5plugin
import numpy as np
out = sys.argv[1]
B = hdf5plugin.Blosc2
x2 = np.cumsum(np.arange(16 * 24, dtype="<f4").reshape(16, 24) % 7, axis=0)
x3 = (np.arange(4 * 8 * 6) % 251).astype("u1").reshape(4, 8, 6)
x1 = (np.arange(700) % 13).astype("u1")
x9 = np.arange(576, dtype="<i2").reshape(1, 3, 2, 2, 2, 2, 2, 2, 3)
with h5py.File(out, "w") as f:
    k = 0
    for pick, x in enumerate((x2, x3, x1, x9)):
        for cname, filt in (("blosclz", B.SHUFFLE), ("lz4", B.BITSHUFFLE), ("zstd", B.DELTA),
                            ("zlib", B.NOFILTER), ("lz4hc", B.SHUFFLE)):
            d = f.create_dataset(f"d{k}", data=x, chunks=x.shape,
                                 **B(cname=cname, clevel=5, filters=filt))
            sys.stdout.buffer.write(bytes([pick]) + len(d.id.read_direct_chunk((0,) * x.ndim)[1]).to_bytes(4, "little") + d.id.read_direct_chunk((0,) * x.ndim)[1])
            k += 1
"""


def blosc2_seeds():
    """HDF5 Blosc2 chunks (fuzz_blosc2.c) as hdf5plugin writes them, from
    h5py in the project venv (make venv): byte 0 picks the chunk's shape,
    every codec and filter hdf5plugin offers."""
    with tempfile.TemporaryDirectory() as tmp:
        raw = subprocess.run([VENV_PY, "-c", BLOSC2_CHUNKS, os.path.join(tmp, "b2.h5")], check=True,
                             capture_output=True).stdout
    at, k = 0, 0
    while at < len(raw):
        pick, n = raw[at], int.from_bytes(raw[at + 1:at + 5], "little")
        frame = raw[at + 5:at + 5 + n]
        put("blosc2", f"chunk{k}", bytes([pick]) + frame)
        if k == 0:
            put("blosc2", "truncated", bytes([pick]) + frame[:len(frame) // 2])
            put("blosc2", "wrong_shape", bytes([2]) + frame)
        at += 5 + n
        k += 1
    put("blosc2", "empty", bytes([0]))


def zlib_seeds():
    """zlib/gzip chunks: byte 0 bit 0 = gzip, bytes 1-2 = decoded size;
    zlib streams are also HDF5 deflate chunks, shuffled as byte 0 says."""
    import gzip
    import zlib
    data = bytes(range(256)) * 8 + b"dsview" * 100

    def seed(name, gz, size, stream):
        put("zlib", name, bytes([gz]) + struct.pack("<H", size) + stream)
    seed("zlib", 0, len(data), zlib.compress(data, 6))
    seed("gzip_two_members", 1, len(data),
         gzip.compress(data[:1000], mtime=0) + gzip.compress(data[1000:], mtime=0))
    seed("zlib_short", 0, len(data) - 1, zlib.compress(data, 1))
    seed("gzip_cut", 1, len(data), gzip.compress(data, mtime=0)[:-9])
    seed("zlib_stored", 0, 100, zlib.compress(data[:100], 0))
    seed("garbage", 1, 4096, bytes(range(255, 0, -1)))
    # HDF5's deflate filter: byte 0 bits 4-7 the shuffle's element size
    # less 1, bits 1-3 how many bytes short of the chunk a read keeps; a
    # chunk h5py writes with shuffle=True (float32, with a leftover byte),
    # and one with bytes after its stream (the filter does not read them)
    f = np.sin(np.arange(301, dtype=np.float32) / 9).tobytes() + b"x"
    planes = b"".join(f[k:1204:4] for k in range(4)) + f[1204:]
    seed("deflate_shuffled_f32", 3 << 4 | 2 << 1, len(f), zlib.compress(planes, 4))
    seed("deflate_trailing", 7 << 4, len(data), zlib.compress(data, 4) + b"\0" * 8)


def devlz4_seeds():
    """The GPU's LZ4 block decoder (fuzz_devlz4): bare LZ4 blocks (fast and
    HC, of noise, runs and text, decoding to sizes on both sides of the
    64-byte end of liblz4's fast phase), the same cut and damaged, blocks
    at the format's edges (offset 0, offset past the output, a match in the
    last bytes, long length runs), and a 32004 frame."""
    import lz4.block
    shutil.rmtree(os.path.join(OUT, "devlz4"), ignore_errors=True)
    rng = np.random.default_rng(18)
    datas = {"runs": bytes(np.repeat(np.arange(40, dtype=np.uint8), 37)),
             "text": b"the GPU decodes blocks; the CPU checks them. " * 30,
             "noise": rng.integers(0, 256, 700, dtype=np.uint8).tobytes(),
             "short": b"abcabcabcabcabcabcabcabcabcabcabcabcabcabcabcabcabcabcabcabcab",
             "tiny": b"abcdefghijklmnop"}
    for name, data in datas.items():
        for mode in ("fast", "high_compression"):
            blk = lz4.block.compress(data, mode=mode, store_size=False)
            put("devlz4", f"{name}_{mode}", blk)
            put("devlz4", f"{name}_{mode}_cut", blk[:len(blk) * 3 // 4])
            bad = bytearray(blk)
            bad[len(bad) // 2] ^= 0x5a
            put("devlz4", f"{name}_{mode}_flip", bytes(bad))
    put("devlz4", "empty", b"\x00")
    put("devlz4", "offset_zero", b"\x8f" + b"abcdefgh" + b"\x00\x00\x14" + b"\x50vwxyz")
    put("devlz4", "offset_past", b"\x4f" + b"abcd" + b"\x40\x00\x14" + b"\x50vwxyz")
    put("devlz4", "match_at_end", b"\xf0\x11" + bytes(range(65, 97)) + b"\xee" + b"abcdefghijklmn"
        + b"\x09\x00\x00")
    put("devlz4", "long_literal", b"\xff\xff\xff\x02" + bytes(527))
    put("devlz4", "long_match", b"\x1f" + b"a" + b"\x01\x00\xff\xff\x10" + b"\x50abcde")
    frame = struct.pack(">QI", 1500, 512)
    data = datas["runs"][:1500]
    for k in range(0, 1500, 512):
        blk = lz4.block.compress(data[k:k + 512], store_size=False)
        frame += struct.pack(">I", len(blk)) + blk
    put("devlz4", "frame", frame)


def quirk_seeds():
    """Other writers' chunks the references read: a Blosc buffer with the
    16 bytes z5 (before 2.0.10) wrote after it, one whose cbytes passes its
    input; zstd frames without a content size (python-zstandard's
    write_content_size=False, as streaming writers make them), two of them,
    a sized frame with a skippable frame after it; an LZ4 32004 frame with
    bytes after its last block (after lz4_seeds: it reads frame_a)."""
    import ctypes
    import zstandard
    lib = ctypes.CDLL("libblosc.so.1")
    src = (np.arange(2000, dtype=np.int32) // 7).tobytes()
    dst = ctypes.create_string_buffer(len(src) + 16)
    n = lib.blosc_compress_ctx(5, 1, ctypes.c_size_t(4), ctypes.c_size_t(len(src)), src, dst,
                               ctypes.c_size_t(len(src) + 16), b"lz4", ctypes.c_size_t(0), 1)
    buf = dst.raw[:n]
    put("blosc", "z5_trailing16", buf + bytes(16))
    bad = bytearray(buf + bytes(16))
    bad[12:16] = struct.pack("<I", len(bad) + 1)
    put("blosc", "cbytes_past_input", bytes(bad))
    unsized = zstandard.ZstdCompressor(level=3, write_content_size=False).compress(src)
    put("zstd", "unsized", unsized)
    put("zstd", "unsized_two_frames", unsized + unsized)
    sized = zstandard.ZstdCompressor(level=3).compress(src[:1000])
    put("zstd", "sized_then_skippable", sized + struct.pack("<II", 0x184D2A50, 3) + b"abc")
    with open(os.path.join(OUT, "lz4", "frame_a"), "rb") as f:
        put("lz4", "frame_a_bytes_after", f.read() + bytes([0xA5] * 7))
