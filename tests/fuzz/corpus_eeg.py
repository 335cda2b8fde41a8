"""Seeds of the EEG recordings' fuzz targets: fuzz_edf, EDF and BDF files
built field by field as edfplus.info lays them out (a leading byte: 1 for
the .bdf name, 0 for .edf), then their malformations; fuzz_eeglab, .set
files; fuzz_bv, BrainVision headers. Run by make_corpus.py; one family alone, from tests/fuzz:
/usr/bin/python3 -c 'import corpus_eeg as c; c.edf_seeds()'."""
import os
import shutil

import numpy as np

from seedlib import OUT, put


def field(text, width):
    return text.encode("latin-1")[:width].ljust(width, b" ")


def edf(bdf=True, spr=(4, 4, 2, 3), labels=None, records=3, reserved="BDF+C", nrec=None,
        duration="1", rng=None):
    """A recording: the fixed header, the signal fields (arrays over the
    signals), then records of random samples, signal after signal."""
    ns = len(spr)
    labels = labels or [f"E{i}" for i in range(ns - 1)] + ["BDF Annotations" if bdf
                                                          else "EDF Annotations"]
    bits = 24 if bdf else 16
    head = (b"\xffBIOSEMI" if bdf else field("0", 8)) + field("X", 80) + field("X", 80)
    head += field("06.12.26", 8) + field("04.45.00", 8) + field(str(256 * (ns + 1)), 8)
    head += field(reserved, 44) + field(str(records if nrec is None else nrec), 8)
    head += field(duration, 8) + field(str(ns), 4)
    cols = [(16, labels), (80, ["x"] * ns), (8, ["uV"] * ns), (8, ["-300.5"] * ns),
            (8, ["299.25"] * ns), (8, [str(-2 ** (bits - 1))] * ns),
            (8, [str(2 ** (bits - 1) - 1)] * ns), (80, [""] * ns), (8, [str(s) for s in spr]),
            (32, [""] * ns)]
    for width, vals in cols:
        head += b"".join(field(v, width) for v in vals)
    n = sum(spr) * records
    v = rng.integers(-2 ** (bits - 1), 2 ** (bits - 1), n, dtype=np.int64)
    data = b"".join(int(x).to_bytes(bits // 8, "little", signed=True) for x in v)
    return bytes([1 if bdf else 0]) + head + data


def edf_seeds():
    shutil.rmtree(os.path.join(OUT, "edf"), ignore_errors=True)
    rng = np.random.default_rng(39)
    good = {
        "bdf_plus": edf(rng=rng),
        "edf_plus": edf(False, spr=(6, 6, 6, 2), reserved="EDF+C", rng=rng),
        "bdf_plain": edf(spr=(3, 3), labels=["A", "B"], reserved="24BIT", rng=rng),
        "edf_rates": edf(False, spr=(8, 2, 8, 1, 4), reserved="", records=2, rng=rng),
        "unknown_count": edf(nrec="-1", rng=rng),
    }
    for name, b in good.items():
        put("edf", name, b)
    b = good["bdf_plus"]
    put("edf", "plus_d", edf(reserved="BDF+D", rng=rng))
    put("edf", "cut_record", b[:-2])
    put("edf", "cut_header", b[:700])
    put("edf", "count_wrong", edf(nrec="9", rng=rng))
    put("edf", "duration_zero", edf(duration="0", rng=rng))
    put("edf", "ns_huge", b[:253] + b"9999" + b[257:])
    put("edf", "spr_huge", edf(spr=(4, 99999999, 2, 3), records=1, rng=rng)[:1400])
    put("edf", "annotations_only", edf(spr=(5,), labels=["BDF Annotations"], rng=rng))


def mat73(rng, compression=None, epochs=False, fdt=None):
    """An EEGLAB .set as MATLAB -v7.3 saves it (h5py): HDF5 after a 512-byte
    header, each field a variable, arrays transposed, MATLAB_class on each,
    chars as uint16, chanlocs a struct array of references."""
    import io

    import h5py
    a = rng.standard_normal((3, 20, 2) if epochs else (3, 20)).astype(np.float32)
    b = io.BytesIO()
    with h5py.File(b, "w", userblock_size=512) as f:
        def num(name, v):
            f[name] = np.array([[v]])
            f[name].attrs["MATLAB_class"] = np.bytes_("double")

        def text(g, name, v):
            g[name] = np.array([[ord(c)] for c in v], np.uint16)
            g[name].attrs["MATLAB_class"] = np.bytes_("char")

        for name, v in (("nbchan", 3.0), ("pnts", 20.0), ("trials", 2.0 if epochs else 1.0),
                        ("srate", 100.0)):
            num(name, v)
        if fdt:
            text(f, "data", fdt)
        else:
            f.create_dataset("data", data=a.T, chunks=True if compression else None,
                             compression=compression)
            f["data"].attrs["MATLAB_class"] = np.bytes_("single")
        refs = f.create_group("#refs#")
        cl = f.create_group("chanlocs")
        cl.attrs["MATLAB_class"] = np.bytes_("struct")
        for i in range(3):
            text(refs, f"l{i}", f"E{i}")
        cl["labels"] = np.array([[refs[f"l{i}"].ref] for i in range(3)], h5py.ref_dtype)
    out = bytearray(b.getvalue())
    out[:128] = b"MATLAB 7.3 MAT-file, Platform: GLNXA64".ljust(116) + bytes(8) + b"\x00\x02IM"
    return bytes(out)


def eeglab_seeds():
    """EEGLAB .set files (fuzz_eeglab) written by scipy.io.savemat in
    EEGLAB's layout: today's variables, the older EEG struct, epoched data,
    a .fdt's name, -v7 compression; MATLAB -v7.3 files (h5py); then cut and
    patched ones."""
    import io

    import scipy.io
    shutil.rmtree(os.path.join(OUT, "eeglab"), ignore_errors=True)
    rng = np.random.default_rng(41)

    def mat(d, **kw):
        b = io.BytesIO()
        scipy.io.savemat(b, d, **kw)
        return b.getvalue()

    def fields(data, fdt=None):
        c, t = data.shape[:2]
        cl = np.zeros((1, c), dtype=[("labels", "O"), ("X", "O")])
        for i in range(c):
            cl[0, i] = (f"E{i}", float(i))
        return {"setname": "x", "nbchan": float(c), "pnts": float(t),
                "trials": float(data.shape[2] if data.ndim == 3 else 1), "srate": 100.0,
                "data": fdt or data, "chanlocs": cl, "etc": {"v": "1"}}

    a = rng.standard_normal((3, 20)).astype(np.float32)
    good = {
        "today": mat(fields(a)),
        "old_struct": mat({"EEG": fields(a)}),
        "epochs": mat(fields(rng.standard_normal((2, 5, 3)).astype(np.float32))),
        "int16": mat(fields(rng.integers(-99, 99, (2, 9)).astype(np.int16))),
        "fdt_name": mat(fields(a, "x.fdt")),
        "compressed": mat(fields(a), do_compression=True),
    }
    for name, b in good.items():
        put("eeglab", name, b)
    for name, kw in (("v73", {}), ("v73_zip", {"compression": "gzip"}),
                     ("v73_epochs", {"epochs": True}), ("v73_fdt", {"fdt": "x.fdt"})):
        put("eeglab", name, mat73(rng, **kw))
    put("eeglab", "v73_no_hdf5", b"MATLAB 7.3 MAT-file, Platform: GLNXA64".ljust(600))
    b = good["today"]
    put("eeglab", "cut", b[:-40])
    put("eeglab", "cut_header", b[:100])
    put("eeglab", "big_endian", b[:126] + b"MI" + b[128:])
    put("eeglab", "len_huge", b[:132] + b"\xff\xff\xff\x7f" + b[136:])


def bv_seeds():
    """BrainVision headers (fuzz_bv; its x.eeg is 960 bytes): both
    orientations, every binary format, resolutions, a comment section;
    then the entries dsview refuses."""
    shutil.rmtree(os.path.join(OUT, "bv"), ignore_errors=True)

    def vhdr(c=4, fmt="INT_16", orient="MULTIPLEXED", res="0.1", extra="", chans=None):
        ch = chans if chans is not None else "".join(
            f"Ch{i + 1}=E{i + 1},,{res},\u00b5V\n" for i in range(c))
        return ("Brain Vision Data Exchange Header File Version 1.0\n; x\n\n[Common Infos]\n"
                f"Codepage=UTF-8\nDataFile=x.eeg\nMarkerFile=x.vmrk\nDataFormat=BINARY\n"
                f"DataOrientation={orient}\nNumberOfChannels={c}\nSamplingInterval=2000\n{extra}"
                f"\n[Binary Infos]\nBinaryFormat={fmt}\n\n[Channel Infos]\n{ch}\n"
                "[Comment]\nA m p\n  indented\n").encode("utf-8")

    put("bv", "mux_i16", vhdr())
    put("bv", "vec_i32", vhdr(3, "INT_32", "VECTORIZED", "2.5"))
    put("bv", "mux_f32", vhdr(6, "IEEE_FLOAT_32", res=""))
    put("bv", "vec_u16", vhdr(5, "UINT_16", "VECTORIZED"))
    put("bv", "ascii", vhdr(extra="DataFormat=ASCII\n"))
    put("bv", "big_endian", vhdr().replace(b"BinaryFormat=INT_16", b"BinaryFormat=INT_16\n"
                                                                 b"UseBigEndianOrder=YES"))
    put("bv", "missing_channel", vhdr(chans="Ch1=a,,1,uV\n"))
    put("bv", "channel_past", vhdr(chans="Ch9=a,,1,uV\n"))
    put("bv", "bad_resolution", vhdr(res="x"))
    put("bv", "channels_huge", vhdr(c=4096, chans=""))
    put("bv", "latin1_units", vhdr().replace("\u00b5".encode("utf-8"), b"\xb5"))
    put("bv", "not_a_header", b"[Common Infos]\nDataFile=x.eeg\n")
