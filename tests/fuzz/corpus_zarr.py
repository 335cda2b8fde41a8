"""Seeds of the Zarr fuzz targets: zarray (metadata), zarr_chunk,
zarr_shard. Run by make_corpus.py."""
import json
import os
import subprocess
import tempfile

import numpy as np

from seedlib import VENV_PY, put


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
    for b0 in range(16):
        for b1 in (0, 1, 2) if b0 in (2, 3) else (b0 % 3,):
            with tempfile.TemporaryDirectory() as tmp:
                arr = os.path.join(tmp, "s.zarr")
                subprocess.run([VENV_PY, "-c", ZARR_SHARD_WRITER, arr, str(b0), str(b1)], check=True,
                               capture_output=True)
                with open(os.path.join(arr, "c", "0", "0"), "rb") as f:
                    put("zarr_shard", f"s{b0}_{b1}", bytes([b0, b1]) + f.read())
    put("zarr_shard", "missing", bytes([2, 0]))
    put("zarr_shard", "index_only_ones", bytes([0, 0]) + b"\xff" * 64)
