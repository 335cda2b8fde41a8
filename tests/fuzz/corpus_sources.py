"""Seeds of the source parsers' fuzz targets: npy, raw, h5, nifti,
manifest, pack. Run by make_corpus.py; one family alone, from tests/fuzz:
/usr/bin/python3 -c 'import corpus_sources as c; c.nifti_seeds()'."""
import os
import shutil
import struct
import tempfile

import h5py
import hdf5plugin
import numpy as np

from seedlib import OUT, put, npy_bytes, npy_header


def npy_seeds(rng):
    """npy: valid files of several dtypes and shapes, then hostile headers."""
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


def raw_seeds(rng):
    """raw: dtype byte, ndim byte, 4 shape bytes, data."""
    for i, (t, nd, shp, n) in enumerate([(0, 2, (0, 16, 1, 1), 64), (3, 3, (0, 2, 3, 1), 48),
                                         (7, 1, (0, 1, 1, 1), 40), (9, 2, (0, 5, 1, 1), 30),
                                         (0, 2, (0, 7, 1, 1), 20), (2, 4, (3, 255, 255, 255), 10)]):
        put("raw", f"seed{i}", bytes([t, nd, *shp]) + rng.integers(0, 256, n, dtype=np.uint8).tobytes())


def h5_seeds(rng):
    """h5: the layouts and filters dsview reads, and broken files."""
    tmp = tempfile.mkdtemp()
    try:
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


def manifest_seeds():
    """Manifests naming the fuzz target's a.npy and r.bin, then the views'."""
    put("manifest", "basic", b"[v]\nsource = a.npy\nscale = 0.00392156862745098\n")
    put("manifest", "full", b"[defaults]\ndtype = bfloat16\n\n[v]\nsource = a.npy\nscale = 2\noffset = -1\n"
        b"mean = 0.5\nstd = 0.25\nchannel_axis = 1\nclip = -3 3\n\n[w]\nsource = r.bin\ndtype = float16\n"
        b"source_dtype = uint8\nshape = -1, 6\n")
    put("manifest", "errors", b"[bad/name]\nsource = a.npy\n[v]\nsource = nothere.npy\nmean = 1 2 3\n"
        b"std = 0\n[v]\nsource = a.npy\nunknown = 1\n")
    put("manifest", "long_line", b"[v]\nsource = " + b"a" * 5000 + b"\n")
    put("manifest", "binary", bytes(range(256)))
    views_manifest_seeds()


def views_manifest_seeds():
    """Manifests with the keys of the views (rows, window,
    stride, window_axis, integer dtype and clip, layout, mean/std as a scalar
    or @file, per_source), valid and invalid, over the fuzz target's a.npy
    ((4, 6) uint8) and r.bin (24 bytes). Written by manifest_seeds()."""
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


def pack_seeds(rng):
    """pack: header bytes then data (see fuzz_pack.c)."""
    for i in range(4):
        put("pack", f"seed{i}", bytes([i, 7 * i + 3, 5 + i, i, i * 70]) +
            rng.integers(0, 256, 200 + 300 * i, dtype=np.uint8).tobytes())
    put("pack", "zeros", bytes([0, 15, 0, 0, 0]) + bytes(4096))


def nifti_seeds():
    """NIfTI images (fuzz_nifti) written by nibabel: both versions, several
    dtypes, 3-D and 4-D, scaled, big-endian; then the header's malformations
    (magic, sizeof_hdr, dim, datatype against bitpix, vox_offset, scaling,
    truncation)."""
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
