#!/usr/bin/python3
"""Writes the seed corpus of the fuzz targets (tests/fuzz/corpus/<target>/):
small valid inputs of every kind each target reads, and the malformed cases
docs/reliability.md names. Run once when the seeds change; the
files are committed, and crashers found by `make fuzz` are added beside
them by hand (crash-*).

  /usr/bin/python3 tests/fuzz/make_corpus.py"""
import io
import json
import os
import shutil
import struct
import tempfile

import h5py
import hdf5plugin
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus")


def put(target, name, data):
    d = os.path.join(OUT, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def npy_bytes(a):
    b = io.BytesIO()
    np.save(b, a)
    return b.getvalue()


def npy_header(descr, shape, fortran=False, version=1, pad_to=64):
    h = f"{{'descr': '{descr}', 'fortran_order': {fortran}, 'shape': {shape}, }}"
    hl = 4 if version >= 2 else 2
    total = 8 + hl + len(h) + 1
    h += " " * ((pad_to - total % pad_to) % pad_to) + "\n"
    return b"\x93NUMPY" + bytes([version, 0]) + struct.pack("<I" if hl == 4 else "<H", len(h)) + h.encode()


def main():
    shutil.rmtree(OUT, ignore_errors=True)
    rng = np.random.default_rng(1)
    # npy: valid files of several dtypes and shapes, then hostile headers
    put("npy", "u8_2d", npy_bytes(rng.integers(0, 256, (7, 5), dtype=np.uint8)))
    put("npy", "i16_3d", npy_bytes(rng.integers(-999, 999, (3, 4, 5), dtype=np.int16)))
    put("npy", "f32_1d", npy_bytes(rng.standard_normal(33).astype(np.float32)))
    put("npy", "f64_0d", npy_bytes(np.array(3.5)))
    put("npy", "v2_header", npy_header("<u2", (2, 2), version=2) + bytes(8))
    put("npy", "shape_huge", npy_header("|u1", (2**62, 2**62)) + bytes(16))
    put("npy", "shape_negative", npy_header("|u1", (-1, 4)) + bytes(16))
    put("npy", "data_short", npy_header("<f4", (100, 100)) + bytes(40))
    put("npy", "fortran", npy_header("<f4", (2, 3), fortran=True) + bytes(24))
    put("npy", "big_endian", npy_header(">i4", (2, 3)) + bytes(24))
    put("npy", "complex", npy_header("<c8", (2,)) + bytes(16))
    put("npy", "header_len_past_eof", b"\x93NUMPY\x01\x00\xff\xff{'descr'")
    put("npy", "not_a_dict", b"\x93NUMPY\x01\x00\x10\x00" + b"[1, 2, 3]      \n")
    put("npy", "bad_magic", b"\x93NUMPX\x01\x00" + bytes(56))
    # raw: dtype byte, ndim byte, 4 shape bytes, data
    for i, (t, nd, shp, n) in enumerate([(0, 2, (0, 16, 1, 1), 64), (3, 3, (0, 2, 3, 1), 48),
                                         (7, 1, (0, 1, 1, 1), 40), (9, 2, (0, 5, 1, 1), 30),
                                         (0, 2, (0, 7, 1, 1), 20), (2, 4, (3, 255, 255, 255), 10)]):
        put("raw", f"seed{i}", bytes([t, nd, *shp]) + rng.integers(0, 256, n, dtype=np.uint8).tobytes())
    # lz4: frames written by hdf5plugin (read back raw), one and several blocks
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
        # h5: the layouts and filters dsview reads, and broken files
        def h5(name, fill):
            q = os.path.join(tmp, name + ".h5")
            with h5py.File(q, "w", libver="latest" if "latest" in name else "earliest") as f:
                fill(f)
            with open(q, "rb") as f:
                data = f.read()
            put("h5", name, data)
            return data
        x = rng.integers(0, 256, (6, 8), dtype=np.uint8)
        h5("contiguous", lambda f: f.create_dataset("x", data=x))
        h5("chunked_none", lambda f: f.create_dataset("x", data=x, chunks=(2, 8)))
        h5("chunked_lz4_f32", lambda f: f.create_dataset("g/x", data=x, chunks=(4, 8), fletcher32=True,
                                                          **hdf5plugin.LZ4()))
        h5("chunked_gzip", lambda f: f.create_dataset("x", data=x.astype(np.int16), chunks=(3, 4),
                                                      compression="gzip"))
        d = h5("chunked_latest", lambda f: f.create_dataset("x", data=x, chunks=(2, 8), maxshape=(None, 8)))
        put("h5", "truncated", d[:len(d) * 2 // 3])
        bad = bytearray(d)
        bad[len(bad) // 2] ^= 0xff
        put("h5", "flipped_byte", bytes(bad))
        h5("external_link", lambda f: f.__setitem__("x", h5py.ExternalLink("/etc/passwd", "/y")))
        h5("external_storage", lambda f: f.create_dataset("x", shape=(4,), dtype="u1",
                                                          external=[("/etc/hostname", 0, 4)]))
        def virtual(f):  # this file's rows, a missing file's, a gap
            f["x"] = x
            lay = h5py.VirtualLayout(shape=(20, 8), dtype=np.uint8)
            lay[0:6] = h5py.VirtualSource(".", "x", shape=(6, 8))
            lay[10:16] = h5py.VirtualSource("gone.h5", "x", shape=(6, 8))
            f.create_virtual_dataset("v", lay, fillvalue=3)
        h5("virtual", virtual)
        for plugin in ("Bitshuffle", "Blosc", "Zstd"):  # whichever Debian's hdf5plugin has
            try:
                h5("plugin_filter", lambda f: f.create_dataset(
                    "x", data=x, chunks=(2, 8), **getattr(hdf5plugin, plugin)()))
                break
            except (ValueError, AttributeError):
                continue
    finally:
        shutil.rmtree(tmp)
    # bitshuffle: chunks the real plugin wrote (tests/unit/fixtures), behind
    # fuzz_bshuf's 5-byte prefix (element size, compression, count, block)
    fx = os.path.join(HERE, "..", "unit", "fixtures")
    for name, es, comp, n, block in (("lz4_i16", 2, 1, 105, 0), ("zstd_f32", 4, 2, 210, 8),
                                     ("none_u8", 1, 0, 900, 0), ("lz4_f64", 8, 1, 20, 2)):
        with open(os.path.join(fx, "bshuf_%s.bin" % name), "rb") as f:
            chunk = f.read()
        pre = bytes([es - 1, comp]) + struct.pack(">H", n) + bytes([block])
        put("bshuf", name, pre + chunk)
        put("bshuf", name + "_cut", pre + chunk[:len(chunk) * 2 // 3])
    put("bshuf", "garbage", bytes([3, 1, 0, 64, 0]) + bytes(range(200)))
    # manifests naming the fuzz target's a.npy and r.bin
    put("manifest", "basic", b"[v]\nsource = a.npy\nscale = 0.00392156862745098\n")
    put("manifest", "full", b"[defaults]\ndtype = bfloat16\n\n[v]\nsource = a.npy\nscale = 2\noffset = -1\n"
        b"mean = 0.5\nstd = 0.25\nchannel_axis = 1\nclip = -3 3\n\n[w]\nsource = r.bin\ndtype = float16\n"
        b"source_dtype = uint8\nshape = -1, 6\n")
    put("manifest", "errors", b"[bad/name]\nsource = a.npy\n[v]\nsource = nothere.npy\nmean = 1 2 3\n"
        b"std = 0\n[v]\nsource = a.npy\nunknown = 1\n")
    put("manifest", "long_line", b"[v]\nsource = " + b"a" * 5000 + b"\n")
    put("manifest", "binary", bytes(range(256)))
    views_manifest_seeds()
    # pack: header bytes then data (see fuzz_pack.c)
    for i in range(4):
        put("pack", f"seed{i}", bytes([i, 7 * i + 3, 5 + i, i, i * 70]) +
            rng.integers(0, 256, 200 + 300 * i, dtype=np.uint8).tobytes())
    put("pack", "zeros", bytes([0, 15, 0, 0, 0]) + bytes(4096))


def views_manifest_seeds():
    """Manifests with the keys of the views (rows, window,
    stride, window_axis, integer dtype and clip, layout, mean/std as a scalar
    or @file, per_source), valid and invalid, over the fuzz target's a.npy
    ((4, 6) uint8) and r.bin (24 bytes). Written by main(); alone with
    /usr/bin/python3 -c 'import make_corpus; make_corpus.views_manifest_seeds()'."""
    seeds = {
        # valid
        "views_rows_slices": b"[v]\nsource = a.npy\nrows = 1:3\n[w]\nsource = a.npy\nrows = ::-1\ndtype = int64\n"
                             b"[x]\nsource = a.npy\nsource = a.npy\nrows = -3::2\n[e]\nsource = a.npy\nrows = 3:1\n",
        "views_window": b"[v]\nsource = a.npy\nwindow = 3\nstride = 2\nwindow_axis = 1\ndtype = int16\n"
                        b"[t]\nsource = r.bin\nsource_dtype = uint8\nsource_shape = -1\nwindow = 5\nstride = 4\n"
                        b"window_axis = 0\ndtype = int64\nrows = ::-1\n",
        "views_layout": b"[v]\nsource = r.bin\nsource_dtype = uint8\nsource_shape = -1 4 3\nlayout = CHW\n"
                        b"mean = 1 2 3\nstd = 4 5 6\ndtype = bfloat16\n[h]\nsource = a.npy\nlayout = HWC\n",
        "views_int_clip": b"[v]\nsource = a.npy\ndtype = int8\nclip = -5 100\n[u]\nsource = a.npy\ndtype = uint64\n",
        "views_scalar_mean": b"[v]\nsource = a.npy\nmean = 0.5\nstd = 2\ndtype = float16\n",
        "views_mixed_dtypes": b"[v]\nsource = a.npy\nsource = r.bin\nsource_dtype = int16\nsource_shape = -1 6\n"
                              b"dtype = bfloat16\nscale = 0.5\n",
        "views_per_source": b"[v]\nsource = a.npy\nsource = a.npy\nsource = a.npy\nsource = a.npy\n"
                            b"mean = @a.npy\nstd = 3\nper_source = true\n",
        "views_everything": b"[v]\nsource = r.bin\nsource_dtype = uint8\nsource_shape = -1 2 3\nwindow = 2\n"
                            b"stride = 1\nwindow_axis = 1\nrows = 1::-1\nlayout = CHW\nscale = 0.1\nmean = 1 2 3\n"
                            b"std = 1 2 3\nclip = -1 1\ndtype = float16\n",
        # invalid: each new key wrong in the ways the contract names
        "views_rows_bad": b"[v]\nsource = a.npy\nrows = 1:2:0\n[w]\nsource = a.npy\nrows = @nothere.npy\n"
                          b"[x]\nsource = a.npy\nrows = @a.npy\n[y]\nsource = a.npy\nrows = 1:2:3:4\n",
        "views_rows_overflow": b"[v]\nsource = a.npy\nrows = -9223372036854775808:9223372036854775807:"
                               b"-9223372036854775808\n[w]\nsource = a.npy\nrows = 99999999999999999999:\n",
        "views_window_bad": b"[v]\nsource = a.npy\nwindow = 0\n[w]\nsource = a.npy\nwindow = 100\n"
                            b"[x]\nsource = a.npy\nstride = 3\n[y]\nsource = a.npy\nwindow = 2\nwindow_axis = 7\n",
        "views_window_overflow": b"[v]\nsource = a.npy\nwindow = 18446744073709551617\n"
                                 b"[w]\nsource = a.npy\nwindow = 1\nstride = -9223372036854775808\n"
                                 b"window_axis = -9223372036854775808\n",
        "views_int_bad": b"[v]\nsource = a.npy\ndtype = int8\n[w]\nsource = a.npy\ndtype = int32\nscale = 2\n"
                         b"[x]\nsource = a.npy\ndtype = int64\nclip = 0 1e40\n[y]\nsource = a.npy\ndtype = int7\n",
        "views_layout_bad": b"[v]\nsource = a.npy\nlayout = CHW\n[w]\nsource = a.npy\nlayout = XYZ\n",
        "views_norm_bad": b"[v]\nsource = a.npy\nmean = @a.npy\nstd = 1\n[w]\nsource = a.npy\nper_source = true\n"
                          b"mean = 1\nstd = 2\n[x]\nsource = a.npy\nper_source = perhaps\n"
                          b"[y]\nsource = a.npy\nmean = @\nstd = @r.bin\n",
    }
    for name, text in seeds.items():
        put("manifest", name, text)


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


def zarray_seeds():
    """Zarr metadata: byte 0 even = v2 .zarray, odd = v3 zarr.json."""
    v2 = {"chunks": [4, 3], "compressor": {"id": "blosc", "cname": "lz4", "clevel": 5,
                                            "shuffle": 1, "blocksize": 0},
          "dtype": "<f4", "fill_value": "NaN", "filters": None, "order": "C",
          "shape": [10, 7], "zarr_format": 2, "dimension_separator": "/"}
    v3 = {"zarr_format": 3, "node_type": "array", "shape": [10, 7], "data_type": "int16",
          "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4, 3]}},
          "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
          "codecs": [{"name": "transpose", "configuration": {"order": [1, 0]}},
                     {"name": "bytes", "configuration": {"endian": "big"}},
                     {"name": "zstd", "configuration": {"level": 3}}],
          "fill_value": -1, "attributes": {"units": "uV", "rate": 100}}
    put("zarray", "v2_blosc", b"\x00" + json.dumps(v2).encode())
    put("zarray", "v2_lz4_be", b"\x00" + json.dumps(dict(v2, dtype=">i2", fill_value=None,
                                                          compressor={"id": "lz4"})).encode())
    put("zarray", "v2_0d", b"\x00" + json.dumps(dict(v2, shape=[], chunks=[])).encode())
    put("zarray", "v2_filters", b"\x00" + json.dumps(dict(v2, filters=[{"id": "delta"}])).encode())
    put("zarray", "v2_huge", b"\x00" + json.dumps(dict(v2, shape=[2**62, 2**62],
                                                         chunks=[1, 1])).encode())
    put("zarray", "v3_zstd", b"\x01" + json.dumps(v3).encode())
    put("zarray", "v3_sharded", b"\x01" + json.dumps(dict(v3, codecs=[
        {"name": "sharding_indexed", "configuration": {}}])).encode())
    put("zarray", "v3_fill_bits", b"\x01" + json.dumps(dict(v3, data_type="float32",
                                                             fill_value="0x7fc00000")).encode())
    put("zarray", "truncated", b"\x01" + json.dumps(v3).encode()[:90])
    # bits 1-3 of byte 0: the axes the attributes' names are for (2 here)
    put("zarray", "v3_dim_names", b"\x05" + json.dumps(dict(v3, dimension_names=["t", None]))
        .encode())
    put("zarray", "v2_xarray_zattrs", b"\x04" + json.dumps({"_ARRAY_DIMENSIONS": ["t", "ch"],
                                                            "units": "mV"}).encode())


def zlib_seeds():
    """zlib/gzip chunks: byte 0 bit 0 = gzip, bytes 1-2 = decoded size."""
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


def zarr_chunk_seeds():
    """Four chunk files of a (6, 5) array in (4, 3) chunks (fuzz_zarr_chunk.c):
    bytes 0-2 pick compressor, dtype, order; the rest is split in four."""
    import numcodecs
    x = np.arange(30, dtype=np.float32).reshape(6, 5)
    comps = [None, numcodecs.Blosc("lz4", 5, 1), numcodecs.Zstd(3), numcodecs.LZ4(),
             numcodecs.Zlib(1), numcodecs.GZip(1)]
    for ci, comp in enumerate(comps):
        parts = []
        for r in range(2):
            for c in range(2):
                chunk = np.full((4, 3), 3, np.float32)
                part = x[4 * r:4 * r + 4, 3 * c:3 * c + 3]
                chunk[:part.shape[0], :part.shape[1]] = part
                raw = chunk.tobytes()
                parts.append(comp.encode(raw) if comp else raw)
        # equal parts: pad each to the longest (trailing bytes: corrupt
        # chunks the decoders must refuse), and one seed with the exact sizes
        n = max(len(p) for p in parts)
        put("zarr_chunk", f"c{ci}_f4", bytes([ci, 3, 0]) + b"".join(p.ljust(n, b"\0") for p in parts))
        if all(len(p) == n for p in parts):
            put("zarr_chunk", f"c{ci}_f4_exact", bytes([ci, 3, 0]) + b"".join(parts))
    put("zarr_chunk", "raw_u1_F", bytes([0, 0, 1]) + bytes(range(48)))
    put("zarr_chunk", "missing_some", bytes([0, 1, 0]) + bytes(3))


ZARR_SHARD_WRITER = """
import sys
import numpy as np
import zarr
from zarr.codecs import BloscCodec, BytesCodec, Crc32cCodec, GzipCodec, ShardingCodec, ZstdCodec
out, b0, b1 = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
dtype, endian = [("u1", "little"), ("<i2", "little"), ("<f4", "big")][b1 % 3]
inner = [[], [ZstdCodec(level=0)], [GzipCodec(level=1), Crc32cCodec()],
         [BloscCodec(cname="lz4", clevel=5, shuffle="shuffle", typesize=2)]][(b0 >> 2) & 3]
index = [BytesCodec()] + ([Crc32cCodec()] if b0 & 2 else [])
z = zarr.create(shape=(6, 5), chunks=(4, 4), dtype=dtype, fill_value=3, zarr_format=3, store=out,
                codecs=[ShardingCodec(chunk_shape=(2, 2), codecs=[BytesCodec(endian=endian)] + inner,
                                      index_codecs=index,
                                      index_location="start" if b0 & 1 else "end")])
x = np.arange(30).reshape(6, 5).astype(dtype)
x[0:2, 2:4] = 3  # an inner chunk of the fill value: never written
z[...] = x
"""


def zarr_shard_seeds():
    """Shard c/0/0 of a (6, 5) array in (4, 4) shards of (2, 2) inner chunks
    (fuzz_zarr_shard.c), written by zarr-python 3 in the project venv
    (make venv): bytes 0-1 pick the index's place and checksum, the inner
    codecs and the dtype."""
    import subprocess
    venv = os.path.join(HERE, "..", "..", "build", "venv", "bin", "python")
    for b0 in range(16):
        for b1 in (0, 1, 2) if b0 in (2, 3) else (b0 % 3,):
            with tempfile.TemporaryDirectory() as tmp:
                arr = os.path.join(tmp, "s.zarr")
                subprocess.run([venv, "-c", ZARR_SHARD_WRITER, arr, str(b0), str(b1)], check=True,
                               capture_output=True)
                with open(os.path.join(arr, "c", "0", "0"), "rb") as f:
                    put("zarr_shard", f"s{b0}_{b1}", bytes([b0, b1]) + f.read())
    put("zarr_shard", "missing", bytes([2, 0]))
    put("zarr_shard", "index_only_ones", bytes([0, 0]) + b"\xff" * 64)


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
    import subprocess
    venv = os.path.join(HERE, "..", "..", "build", "venv", "bin", "python")
    with tempfile.TemporaryDirectory() as tmp:
        raw = subprocess.run([venv, "-c", BLOSC2_CHUNKS, os.path.join(tmp, "b2.h5")], check=True,
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


def devlz4_seeds():
    """The GPU's LZ4 block decoder (fuzz_devlz4): bare LZ4 blocks (fast and
    HC, of noise, runs and text, decoding to sizes on both sides of the
    64-byte end of liblz4's fast phase), the same cut and damaged, blocks
    at the format's edges (offset 0, offset past the output, a match in the
    last bytes, long length runs), and a 32004 frame. Alone with
    /usr/bin/python3 -c 'import make_corpus; make_corpus.devlz4_seeds()'."""
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
    bytes after its last block. Adds only these:
    /usr/bin/python3 -c 'import make_corpus; make_corpus.quirk_seeds()'."""
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


def nifti_seeds():
    """NIfTI images (fuzz_nifti) written by nibabel: both versions, several
    dtypes, 3-D and 4-D, scaled, big-endian; then the header's malformations
    (magic, sizeof_hdr, dim, datatype against bitpix, vox_offset, scaling,
    truncation). Alone with
    /usr/bin/python3 -c 'import make_corpus; make_corpus.nifti_seeds()'."""
    import nibabel as nib
    shutil.rmtree(os.path.join(OUT, "nifti"), ignore_errors=True)
    rng = np.random.default_rng(29)

    def nii(a, version=1, slope=None, hdr=None):
        cls = nib.Nifti1Image if version == 1 else nib.Nifti2Image
        img = cls(a, np.eye(4), hdr, dtype=a.dtype)
        if slope is not None:
            img.header.set_slope_inter(slope, 1.5)
        return img.to_bytes()

    good = {
        "n1_i16_4d": nii(rng.integers(-999, 999, (4, 3, 2, 5), dtype=np.int16), 1, 0.5),
        "n2_f32_3d": nii(rng.standard_normal((5, 4, 3)).astype(np.float32), 2),
        "n1_u8_1d": nii(rng.integers(0, 256, 17, dtype=np.uint8), 1),
        "n2_f64_4d": nii(rng.standard_normal((2, 2, 2, 3)), 2, 2.0),
        "n1_be_i16": nii(np.arange(24, dtype=np.int16).reshape(2, 3, 4), 1, None,
                         nib.Nifti1Header(endianness=">")),
    }
    for name, b in good.items():
        put("nifti", name, b)
    n1 = good["n1_i16_4d"]

    def patched(name, at, value):
        b = bytearray(n1)
        b[at:at + len(value)] = value
        put("nifti", name, bytes(b))

    patched("magic_pair", 344, b"ni1\0")
    patched("magic_bad", 344, b"n+2\0")
    patched("sizeof_349", 0, struct.pack("<i", 349))
    patched("dim0_8", 40, struct.pack("<h", 8))
    patched("dim_negative", 42, struct.pack("<h", -2))
    patched("dim_huge", 40, struct.pack("<8h", 7, *([32767] * 7)))
    patched("type_complex", 70, struct.pack("<h", 32))
    patched("type_unknown", 70, struct.pack("<h", 3))
    patched("bitpix_wrong", 72, struct.pack("<h", 8))
    patched("voxoff_small", 108, struct.pack("<f", 100.0))
    patched("voxoff_frac", 108, struct.pack("<f", 352.5))
    patched("voxoff_past", 108, struct.pack("<f", 1e9))
    patched("voxoff_nan", 108, struct.pack("<f", float("nan")))
    patched("inter_inf", 112, struct.pack("<ff", 2.0, float("inf")))
    put("nifti", "cut_data", n1[:-3])
    put("nifti", "cut_header", n1[:300])
    n2 = bytearray(good["n2_f32_3d"])
    n2[168:176] = struct.pack("<q", -1)
    put("nifti", "n2_voxoff_negative", bytes(n2))


def dcache_seeds():
    """Disk cache entries (fuzz_dcache.c's object: SIZE bytes of its
    pattern, block 0): a whole one, as disk_cache.c writes it, and the
    damage a disk or a person does to one."""
    import hashlib
    import zlib
    page, size = 64 << 10, 3 * (64 << 10) + 1000
    data = bytes((i * 7 + (i >> 9)) & 0xFF for i in range(size))
    h = bytearray(512)
    h[0:8] = b"dsvdc\0\0\1"
    h[8:40] = hashlib.sha256(b"https://fuzz.example/bucket/x.h5").digest()
    etag = b'"fuzz-etag"'
    h[40:40 + len(etag)] = etag
    h[200:220] = struct.pack(">QQI", size, 0, size)
    for p in range(0, size, page):
        h[220 + 4 * (p // page):224 + 4 * (p // page)] = struct.pack(">I", zlib.crc32(data[p:p + page]))
    h[284:288] = struct.pack(">I", zlib.crc32(bytes(h[:284])))
    good = bytes(h) + data
    put("dcache", "whole", good)
    put("dcache", "empty", b"")
    put("dcache", "header_only", good[:512])
    put("dcache", "cut_data", good[:-1])
    put("dcache", "one_more_byte", good + b"\0")
    put("dcache", "data_bit", good[:600] + bytes([good[600] ^ 1]) + good[601:])
    put("dcache", "header_bit", good[:210] + bytes([good[210] ^ 1]) + good[211:])
    other = bytearray(good)
    other[40:40 + len(etag)] = b'"other-tag"'
    other[284:288] = struct.pack(">I", zlib.crc32(bytes(other[:284])))
    put("dcache", "other_version", bytes(other))
def s3list_seeds():
    """Bucket listings (ListObjectsV2 replies, as SeaweedFS and AWS send
    them): a page with prefixes and a token, the last page, and the
    broken ones: not XML, another root, a value over its bound, an
    entity that expands."""
    ns = 'xmlns="http://s3.amazonaws.com/doc/2006-03-01/"'
    page = (f'<?xml version="1.0" encoding="UTF-8"?>\n<ListBucketResult {ns}>'
            "<Name>b</Name><Prefix>g.zarr/</Prefix><KeyCount>3</KeyCount><MaxKeys>2</MaxKeys>"
            "<Delimiter>/</Delimiter><IsTruncated>true</IsTruncated>"
            "<Contents><Key>g.zarr/.zgroup</Key><Size>24</Size></Contents>"
            "<CommonPrefixes><Prefix>g.zarr/a/</Prefix></CommonPrefixes>"
            "<CommonPrefixes><Prefix>g.zarr/sub &amp; more/</Prefix></CommonPrefixes>"
            "<NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=</NextContinuationToken>"
            "</ListBucketResult>")
    put("s3list", "page", page.encode())
    put("s3list", "last", (f"<ListBucketResult {ns}><IsTruncated>false</IsTruncated>"
                           "<CommonPrefixes><Prefix>g.zarr/z/</Prefix></CommonPrefixes>"
                           "</ListBucketResult>").encode())
    put("s3list", "cut", page.encode()[:300])
    put("s3list", "error_reply", b"<Error><Code>AccessDenied</Code></Error>")
    put("s3list", "long_value", (f"<ListBucketResult><CommonPrefixes><Prefix>{'p' * 5000}"
                                 "</Prefix></CommonPrefixes></ListBucketResult>").encode())
    put("s3list", "entities", (b'<?xml version="1.0"?><!DOCTYPE l [<!ENTITY a "aaaaaaaaaa">'
                               b'<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">'
                               b'<!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">]>'
                               b"<ListBucketResult><NextContinuationToken>&c;&c;"
                               b"</NextContinuationToken></ListBucketResult>"))


if __name__ == "__main__":
    main()
    dcache_seeds()
    nifti_seeds()
    zarray_seeds()
    zlib_seeds()
    zarr_chunk_seeds()
    zarr_shard_seeds()
    blosc2_seeds()
    devlz4_seeds()
    quirk_seeds()
    s3list_seeds()
