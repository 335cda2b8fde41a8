"""The numpy side of the end-to-end tests: what a view must serve, computed
independently of dsview (docs/transform.md): the transform in
float64 rounded once, bfloat16 by round-to-nearest-even, integer views,
windows; and how two arrays' bits differ."""
import numpy as np


def reference(x, scale=1.0, offset=0.0, mean=None, std=None, axis=-1, clip=None, dtype="float32"):
    """The transform (docs/transform.md) in float64, rounded once to float32, then RNE to the
    output type. Returns float32 / uint16 (bfloat16 bits) / float16. With no transform (a plain
    cast) it is numpy's astype: -0.0 kept, int64 rounded once, float64 -> float16 rounded once;
    bfloat16 is the RNE of astype(float32)."""
    plain = scale == 1.0 and offset == 0.0 and mean is None and clip is None
    with np.errstate(over="ignore", invalid="ignore"):
        if plain and dtype == "float16":
            return x.astype(np.float16)
        if plain:
            f = x.astype(np.float32)
            if dtype == "float32":
                return f
        else:
            return _formula(x, scale, offset, mean, std, axis, clip, dtype)
    return bf16_bits(f)


def _formula(x, scale, offset, mean, std, axis, clip, dtype):
    with np.errstate(over="ignore", invalid="ignore"):
        y = x.astype(np.float64) * scale + offset
        if mean is not None:
            shape = [1] * x.ndim
            shape[axis] = -1
            y = (y - np.asarray(mean, np.float64).reshape(shape)) / np.asarray(std, np.float64).reshape(shape)
        if clip is not None:
            y = np.where(np.isnan(y), y, np.clip(y, clip[0], clip[1]))
    return round_out(y, dtype)


def round_out(y, dtype):
    """float64 results rounded once to float32, then RNE to the output type (float32, float16,
    or bfloat16 bits)."""
    with np.errstate(over="ignore", invalid="ignore"):
        f = y.astype(np.float32)
        if dtype == "float32":
            return f
        if dtype == "float16":
            return f.astype(np.float16)
    return bf16_bits(f)


def bf16_bits(f):
    """Round-to-nearest-even of float32 f to bfloat16 bits; NaN quiet, top payload bits kept."""
    b = f.view(np.uint32).astype(np.uint64)
    r = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(f)
    r[nan] = ((b[nan] >> 16) | 0x40).astype(np.uint16)
    return r


def same_bits(a, b):
    a = np.ascontiguousarray(a)
    b = np.ascontiguousarray(b)
    if a.shape != b.shape or a.dtype.itemsize != b.dtype.itemsize:
        return False
    return a.tobytes() == b.tobytes()


def _as_float(bits, dtype):
    if dtype == "bfloat16":
        return (np.asarray(bits).astype(np.uint32) << 16).view(np.float32)
    return np.asarray(bits)


def diff_report(got, want, dtype="float32", limit=5):
    """'' when got and want hold identical bits, else a description: how
    many elements differ, the largest distance in ulps of the output type,
    and the first few (index, got, want)."""
    got = np.ascontiguousarray(got)
    want = np.ascontiguousarray(want)
    if got.shape != want.shape:
        return f"shape {got.shape} != {want.shape}"
    if got.dtype.itemsize != want.dtype.itemsize:
        return f"itemsize {got.dtype.itemsize} != {want.dtype.itemsize}"
    ui = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[got.dtype.itemsize]
    g, w = got.view(ui).ravel(), want.view(ui).ravel()
    bad = np.flatnonzero(g != w)
    if bad.size == 0:
        return ""
    gi, wi = g[bad].astype(np.int64), w[bad].astype(np.int64)
    sign = 1 << (8 * got.dtype.itemsize - 1)
    # monotonic integer mapping of float bits, for a distance in ulps
    gm = np.where(gi >= sign, sign - gi, gi)
    wm = np.where(wi >= sign, sign - wi, wi)
    ulps = int(np.abs(gm - wm).max())
    gf, wf = _as_float(got.ravel()[bad[:limit]], dtype), _as_float(want.ravel()[bad[:limit]], dtype)
    first = ", ".join(f"[{np.unravel_index(i, got.shape)}] got {a!r} (0x{int(x):x}) want {b!r} (0x{int(y):x})"
                      for i, a, b, x, y in zip(bad[:limit], gf, wf, g[bad[:limit]], w[bad[:limit]]))
    return f"{bad.size} of {g.size} elements differ (max {ulps} ulp); {first}"


def nan_tolerant(got, want, dtype):
    """For float16 output the reference (numpy) keeps NaN payloads while a
    correct implementation may return any quiet NaN: returns (got, want)
    with every position where want is NaN replaced by 0 in both, after
    checking that got is a quiet NaN there. Raises AssertionError if not."""
    got = np.array(got, copy=True)
    want = np.array(want, copy=True)
    if dtype == "float16":
        nan = np.isnan(want)
        gb = got.view(np.uint16)
        quiet = np.isnan(got[nan]) & ((gb[nan] & 0x0200) != 0)
        if not quiet.all():
            idx = np.flatnonzero(nan.ravel())[np.flatnonzero(~quiet)[:3]]
            raise AssertionError("float16: NaN inputs did not give quiet NaNs at %s: got %s" % (
                idx.tolist(), [hex(int(v)) for v in gb.ravel()[idx]]))
        got[nan] = 0
        want[nan] = 0
    return got, want



# Half a unit in the last place of float32, relative (2**-24, and a
# little over for the float64 arithmetic of another reader): how far a
# value rounded once to float32 lies from the float64 one it came from.
F32_HALF_ULP = 2.0 ** -24 * (1 + 1e-6)

OUT_DESCR = {"float32": "<f4", "bfloat16": "<u2", "float16": "<f2", "int8": "|i1", "uint8": "|u1",
             "int16": "<i2", "uint16": "<u2", "int32": "<i4", "uint32": "<u4", "int64": "<i8",
             "uint64": "<u8"}
FLOAT_OUT = ("float32", "bfloat16", "float16")


def out_np(dtype):
    """The numpy dtype a view of output dtype `dtype` is read as (.npy's descr)."""
    return np.dtype(OUT_DESCR[dtype])


def int_reference(x, dtype, clip=None):
    """An integer view: the source values (clamped to clip when given) as dtype."""
    v = np.asarray(x).astype(np.int64) if np.asarray(x).dtype != np.uint64 else np.asarray(x)
    if clip is not None:
        v = np.clip(v, clip[0], clip[1])
    return v.astype(out_np(dtype))


def windows_ref(x, size, stride, axis=-1):
    """Windows of one source the way docs/manifest.md defines them, in plain numpy:
    n = (T - W) // S + 1 along `axis`; axis 0 gives (n, W, ...), axis k > 0
    gives (R * n, ..., W, ...), all windows of row 0 first."""
    x = np.asarray(x)
    axis = axis % x.ndim
    t = x.shape[axis]
    n = (t - size) // stride + 1 if t >= size else 0
    if axis == 0:
        parts = [x[i * stride:i * stride + size] for i in range(n)]
        shape = (size,) + x.shape[1:]
    else:
        parts = []
        for r in range(x.shape[0]):
            for i in range(n):
                sl = [slice(None)] * (x.ndim - 1)
                sl[axis - 1] = slice(i * stride, i * stride + size)
                parts.append(x[r][tuple(sl)])
        shape = list(x.shape[1:])
        shape[axis - 1] = size
        shape = tuple(shape)
    return np.stack(parts) if parts else np.zeros((0,) + shape, x.dtype)
