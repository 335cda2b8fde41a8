"""Writes the Zarr v3 fixtures of test_zarr_v3.py with zarr-python 3 (run
under the project venv, common.venv_python): sharded arrays of every
index placement and inner codec dsview reads, unsharded v3 arrays with
crc32c, and a group; beside each array, NAME.ref.npy, the whole array as
zarr-python reads it back (the reference every read is compared with).
argv[1]: the directory to write into."""
import os
import sys

import numpy as np
import zarr
from zarr.codecs import (BloscCodec, BytesCodec, Crc32cCodec, GzipCodec, ShardingCodec,
                         TransposeCodec, ZstdCodec)

root = sys.argv[1]
rng = np.random.default_rng(29)


def sharded(name, data, shard, fill, codecs, index_codecs=None, index_location="end",
            store=None, region=None):
    kw = {} if index_codecs is None else {"index_codecs": index_codecs}
    z = zarr.create(shape=data.shape, dtype=data.dtype, chunks=shard, fill_value=fill,
                    zarr_format=3, store=store or os.path.join(root, name + ".zarr"),
                    path=name if store is not None else None,
                    codecs=[ShardingCodec(chunk_shape=codecs[0], codecs=codecs[1],
                                          index_location=index_location, **kw)])
    if region is None:
        z[...] = data
    else:
        z[region] = data[region]
    np.save(os.path.join(root, name + ".ref.npy"), z[...])
    return z


# zarr-python's defaults (create_array with shards): index at the end with
# its crc32c, inner chunks bytes + zstd; the array's edge inside a shard
a = rng.standard_normal((203, 10, 6)).astype("<f4")
z = zarr.create_array(os.path.join(root, "end_zstd.zarr"), shape=a.shape, dtype=a.dtype,
                      chunks=(4, 5, 6), shards=(16, 10, 6), fill_value=0)
z[...] = a
np.save(os.path.join(root, "end_zstd.ref.npy"), z[...])

# the index first, blosc inner chunks, a fill value; rows 0-19 written
# alone (shards 2 and 3 never, shard 1 in part), and an inner chunk that
# is all fill value (zarr-python leaves it out: an all-ones entry)
b = rng.integers(0, 60000, (64, 30), dtype="<u2")
b[4:8] = 7
sharded("start_blosc", b, (16, 30), 7,
        ((4, 10), [BytesCodec(), BloscCodec(cname="lz4", clevel=5, shuffle="shuffle")]),
        index_location="start", region=np.s_[0:20])

# Fortran-order, big-endian inner chunks, gzip then crc32c; an index
# without its crc32c; 3-d shards that split rows
c = rng.integers(-30000, 30000, (150, 8, 6), dtype="<i2")
sharded("gzip_crc_F_be", c, (10, 8, 6), -1,
        ((5, 4, 3), [TransposeCodec(order=(2, 1, 0)), BytesCodec(endian="big"), GzipCodec(level=5),
                     Crc32cCodec()]),
        index_codecs=[BytesCodec()])

# unsharded v3 with crc32c after zstd, and before gzip
d = rng.standard_normal((45, 9)).astype("<f4")
z = zarr.create_array(os.path.join(root, "plain_zstd_crc.zarr"), shape=d.shape, dtype=d.dtype,
                      chunks=(7, 5), compressors=[ZstdCodec(level=3), Crc32cCodec()],
                      fill_value=0)
z[...] = d
np.save(os.path.join(root, "plain_zstd_crc.ref.npy"), z[...])
e = rng.integers(0, 256, (33, 4), dtype="u1")
z = zarr.create_array(os.path.join(root, "plain_crc_gzip.zarr"), shape=e.shape, dtype=e.dtype,
                      chunks=(8, 4), compressors=[Crc32cCodec(), GzipCodec(level=1)],
                      fill_value=0)
z[...] = e
np.save(os.path.join(root, "plain_crc_gzip.ref.npy"), z[...])

# a group of sharded arrays, one in a subgroup, for a zero-config mount
g = zarr.open_group(os.path.join(root, "grp.zarr"), mode="w", zarr_format=3)
f = rng.standard_normal((40, 16)).astype("<f4")
s = g.create_array("sig", shape=f.shape, dtype=f.dtype, chunks=(5, 8), shards=(10, 16),
                   fill_value=0)
s[...] = f
np.save(os.path.join(root, "grp_sig.ref.npy"), s[...])
h = np.arange(500, dtype="<u4")
t = g.create_group("sub").create_array("t", shape=h.shape, dtype=h.dtype, chunks=(25,),
                                       shards=(100,), fill_value=0)
t[...] = h
np.save(os.path.join(root, "grp_sub_t.ref.npy"), t[...])
